"""The library's errors about what the user wrote: a bad configuration, a bad setting.

* :class:`SettingError` - a value check of the library (a typed config's ``__post_init__``,
  a kind's ``check``) found a bad value of one setting: ``.key`` names the setting (``k``,
  ``eps``), the message says what is wrong. It is a ``ValueError``: code that calls the
  library directly sees the message alone.
* :class:`ConfigError` - the configuration is invalid; the message starts with the
  offending key path (``config key datasets.x.k: ...``). :func:`config_error` turns a
  library ``ValueError`` about the entry at a key path into one; inside ``with
  reported_at(where):`` every ValueError is turned so.

A foundation module: it imports nothing of the library, so every layer may raise these.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager


class ConfigError(ValueError):
    """Invalid configuration; the message starts with the offending key path."""


class SettingError(ValueError):
    """A bad value of the setting ``key`` (relative to the entry or block it is checked in);
    ``str(err)`` is the message alone (``k must satisfy 2 <= k <= d=40, got 50``)."""

    def __init__(self, key: str, message: str) -> None:
        super().__init__(message)
        self.key = key

    def __reduce__(self):  # pickles with both arguments (a ValueError pickles args only)
        return (type(self), (self.key, str(self)))


def config_error(where: str, err: ValueError) -> ConfigError:
    """A ConfigError for a library ValueError about the entry at key path ``where``:
    ``config key <where>.<key>: <message>`` for a :class:`SettingError`, else ``config key
    <where>: <message>``; a ConfigError (it names its own key path) as it is."""
    if isinstance(err, ConfigError):
        return err
    at = f"{where}.{err.key}" if isinstance(err, SettingError) else where
    return ConfigError(f"config key {at}: {err}")


@contextmanager
def reported_at(where: str) -> Iterator[None]:
    """Inside, a ValueError about the entry or block at key path ``where`` is raised as its
    :func:`config_error`."""
    try:
        yield
    except ValueError as err:
        raise config_error(where, err) from None
