"""Shared by every test: the signal disposition the tests' processes start with."""

import signal

# A test run started in the background of a non-interactive shell (`pytest &`, a CI script
# that backgrounds it) inherits SIGINT ignored, and exec keeps an ignored signal ignored in
# every process the tests start; the signal tests need SIGINT's default there. A handler
# installed here is reset to the default by exec.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)
