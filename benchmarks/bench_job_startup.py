"""Benchmark: start-up and exit cost of each workflow script's job, this checkout vs a baseline.

A job's fixed cost is a fresh interpreter importing what its script imports (the snakemake
object, the job wrapper, the library modules) and then exiting the way a job that ended
cleanly exits (``_job.end_process_now`` where the checkout has it: no interpreter teardown;
else the normal exit, whose teardown costs ~0.4 s once torch is loaded). For each script
this starts ``--repeats``
interpreters per checkout, alternating baseline and this checkout so both see the same
machine load, and prints the median CPU-seconds (user + system of the child) and wall
seconds, whether torch got imported, and the ratio this / baseline. Never asserts.

    python benchmarks/bench_job_startup.py [--baseline OTHER_CHECKOUT] [--repeats 3]
        [--scripts dataset.py fa_robust_figure.py ...]

Without ``--baseline`` only this checkout is measured. ``python -X importtime`` on the same
imports shows where the time goes; torch alone is ~2 CPU-seconds here.

``--warm`` measures issue 28's lead 3 (start-up paid once for many jobs) before it is built:
the same probe forked from one long-lived parent that has already imported torch, numpy and
the library's heavy modules (``WARM``), against a fresh interpreter, alternating. A job on
that path would still pay a thin client (a fresh interpreter importing only what Snakemake's
script preamble imports, ``snakemake.script``, plus a socket): the warm column is the forked
child's CPU (its ``wait4`` rusage) plus the client's, measured the same way.

    python benchmarks/bench_job_startup.py --warm [--repeats 5] [--scripts train.py ...]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

from ibrobust.provenance import imported_modules

ROOT = Path(__file__).resolve().parents[1]
DEFAULT = [
    "dataset.py",
    "train.py",
    "attack.py",
    "analyze.py",
    "price_train.py",
    "fa_robust_figure.py",
    "fa_summary_table.py",
    "prelu_robust_figure.py",
    "prelu_summary_table.py",
    "price_gap_figure.py",
    "claims_ledger.py",
]
PROBE = (
    "import sys\n{imports}\nprint('torch' in sys.modules)\n"
    "import _job\ngetattr(_job, 'end_process_now', lambda: None)()"  # how a clean job ends
)


def start_once(checkout: Path, script: str) -> tuple[float, float, bool]:
    """(CPU-s, wall-s, torch imported) of one fresh interpreter importing the script's modules."""
    scripts = checkout / "workflow_scripts"
    imports = "\n".join(f"import {m}" for m in imported_modules(scripts / script))
    return run_probe(checkout, PROBE.format(imports=imports))


def checkout_env(checkout: Path) -> dict[str, str]:
    """This environment with the checkout's library and workflow scripts on the path."""
    paths = [str(checkout / "src"), str(checkout / "workflow_scripts")]
    return {**os.environ, "PYTHONPATH": os.pathsep.join(paths)}


def run_probe(checkout: Path, code: str) -> tuple[float, float, bool]:
    """(CPU-s, wall-s, torch imported) of a fresh interpreter running ``code`` on the
    checkout's library and scripts."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    out = subprocess.run(
        [sys.executable, "-c", code],
        env=checkout_env(checkout),
        capture_output=True,
        text=True,
        check=True,
    )
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return cpu, wall, out.stdout.strip() == "True"


WARM = ("torch", "numpy", "ibrobust.experiments.networks", "ibrobust.experiments.robustness")
CLIENT = "import snakemake.script, socket, sys\nprint('torch' in sys.modules)"  # a thin client
SERVER = """
import os, sys, time
for m in sys.argv[1:]:
    __import__(m)
out = os.fdopen(os.dup(1), "w")  # the protocol's channel: what a probe prints goes to stderr
os.dup2(2, 1)
for line in sys.stdin:  # one probe per line: modules to import in a forked child
    t0 = time.perf_counter()
    pid = os.fork()  # the fork's own cost is the parent's: not in the child's rusage
    if pid == 0:
        try:
            for m in line.split():
                __import__(m)
        except BaseException:
            os._exit(1)
        os._exit(0)
    _, status, ru = os.wait4(pid, 0)
    wall = time.perf_counter() - t0
    print(ru.ru_utime + ru.ru_stime, wall, os.waitstatus_to_exitcode(status), file=out, flush=True)
"""


def warm_server(checkout: Path) -> subprocess.Popen:
    """The long-lived parent: imports ``WARM`` once, then forks one child per probe line."""
    return subprocess.Popen(
        [sys.executable, "-c", SERVER, *WARM], env=checkout_env(checkout), stdin=subprocess.PIPE,
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip


def warm_once(server: subprocess.Popen, checkout: Path, script: str) -> tuple[float, float]:
    """(CPU-s, wall-s) of one probe on the warm path: the forked child plus a thin client."""
    modules = imported_modules(checkout / "workflow_scripts" / script)
    server.stdin.write(" ".join(modules) + "\n")
    server.stdin.flush()
    reply = server.stdout.readline().split()
    if len(reply) != 3:
        raise RuntimeError(f"the warm parent ended (exit code {server.wait()}) on {script}")
    cpu, wall, code = reply
    if int(code) != 0:
        raise RuntimeError(f"warm probe of {script} failed in the child (exit code {code})")
    client_cpu, client_wall, _ = run_probe(checkout, CLIENT)
    return float(cpu) + client_cpu, float(wall) + client_wall


def warm_main(args) -> None:
    server = warm_server(ROOT)
    print(f"load {' '.join(f'{v:.1f}' for v in os.getloadavg())}; medians of {args.repeats}; "
          f"warm parent imported {', '.join(WARM)}")  # fmt: skip
    print("| script | cold CPU-s | warm CPU-s (child + client) | cold wall-s | warm wall-s "
          "| CPU warm/cold | CPU saved per job |")  # fmt: skip
    print("|---|---:|---:|---:|---:|---:|---:|")
    try:
        for script in args.scripts:
            cold, warm = [], []
            for i in range(args.repeats):  # alternate which path goes first
                if i % 2 == 0:
                    cold.append(start_once(ROOT, script))
                    warm.append(warm_once(server, ROOT, script))
                else:
                    warm.append(warm_once(server, ROOT, script))
                    cold.append(start_once(ROOT, script))
            cc, wc = (statistics.median(r[0] for r in rs) for rs in (cold, warm))
            cw, ww = (statistics.median(r[1] for r in rs) for rs in (cold, warm))
            print(f"| {script} | {cc:.2f} | {wc:.2f} | {cw:.2f} | {ww:.2f} | {wc / cc:.2f} "
                  f"| {cc - wc:.2f} |")  # fmt: skip
    finally:
        with contextlib.suppress(BrokenPipeError):
            server.stdin.close()
        if server.poll() is None and sys.exc_info()[0] is not None:
            server.kill()
        server.wait()


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--baseline", type=Path, help="another checkout to compare with")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--scripts", nargs="+", default=DEFAULT)
    ap.add_argument("--warm", action="store_true", help="lead 3: forked from a warm parent")
    args = ap.parse_args()
    if args.warm:
        if args.baseline:
            ap.error("--warm measures this checkout only; drop --baseline")
        return warm_main(args)
    trees = {"this": ROOT} | ({"baseline": args.baseline} if args.baseline else {})
    print(f"load {' '.join(f'{v:.1f}' for v in os.getloadavg())}; medians of {args.repeats}")
    print("| script | checkout | torch | CPU-s | wall-s | CPU this/baseline |")
    print("|---|---|---|---:|---:|---:|")
    for script in args.scripts:
        runs = {name: [] for name in trees}
        for _ in range(args.repeats):
            for name, tree in reversed(trees.items()):  # baseline first, then this
                runs[name].append(start_once(tree, script))
        cpu = {n: statistics.median(r[0] for r in rs) for n, rs in runs.items()}
        for name, rs in runs.items():
            wall = statistics.median(r[1] for r in rs)
            ratio = f"{cpu['this'] / cpu['baseline']:.2f}" if "baseline" in cpu else "-"
            ratio = ratio if name == "this" else ""
            print(f"| {script} | {name} | {rs[0][2]} | {cpu[name]:.2f} | {wall:.2f} | {ratio} |")


if __name__ == "__main__":
    main()
