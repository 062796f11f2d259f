"""Benchmark: how fast a bad input stops the workflow, and with what message (printed as a
Markdown table, never asserted). Issue 15's table, redone.

Each row runs ``snakemake`` in a fresh working directory and times it from start to the
first line of its error message (config errors: the default target; data errors: the
``fa_images`` target, whose MNIST and CIFAR-10 npz datasets the preflight checks in
``onstart``). With ``--data DIR`` (a folder holding ``MNIST/raw`` and
``cifar10/cifar10-exact-subset.npz``, e.g. ../shared/data) it builds broken copies of it
(truncated IDX, bad magic, garbage npz, ...) and also times the preflight on the full,
sound copies: to its "look fine" line, after which the run is stopped. ``--jpeg DIR`` (an
unpacked CIFAR-10 ImageFolder) adds the JPEG folder of configs/fa_images_jpeg.yaml.

  python benchmarks/bench_bad_inputs.py                      # config rows only
  python benchmarks/bench_bad_inputs.py --data ../shared/data --jpeg DIR
  python benchmarks/bench_bad_inputs.py --no-config --jpeg DIR   # the JPEG folder only
"""

from __future__ import annotations

import argparse
import math
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
SNAKEMAKE = [sys.executable, "-m", "snakemake", "-s", str(REPO / "Snakefile"), "--nocolor"]
NAN, INF = math.nan, math.inf

# (row, overlay) on the default target: each must stop before any job
CONFIG_ROWS = [
    ("`radii: [0, .nan, 2]`", {"studies": {"fa": {"radii": [0.0, NAN, 2.0]}}}),
    ("`radii: [0, .inf]`", {"studies": {"fa": {"radii": [0.0, INF]}}}),
    ("`lr: .inf`", {"optimizers": {"gd": {"lr": INF}}}),
    ("`lr: .nan`", {"optimizers": {"gd": {"lr": NAN}}}),
    ("`sigma: .nan`", {"datasets": {"clusters_d1000": {"sigma": NAN}}}),
    ("`stop_loss: .nan`", {"optimizers": {"gd": {"stop_loss": NAN}}}),
    (
        "PRICE-LIN `eps_fractions` with NaN",
        {"studies": {"price_linear": {"eps_fractions": [0.0, 0.5, NAN]}}},
    ),
    ("`seeds: [0, 1.0]`", {"studies": {"fa": {"seeds": [0, 1.0]}}}),
]
SYNTAX_ERROR = "studies:\n  fa:\n    seeds: [0, 1\n  x: y\n"
DUPLICATE_KEY = "studies:\n  fa:\n    seeds: [0]\n    radii: [0, 1]\n    seeds: [2]\n"
MESSAGE_START = ("WorkflowError", "Error", "invalid", "data preflight", "config key")


def timed(
    workdir: Path, args: list[str], until: str | None = None, timeout: float = 300
) -> tuple[float, str, int]:
    """(seconds to the message, the message, exit code) of one snakemake run. With ``until``,
    the run is stopped at the first output line containing it (its time is the figure);
    after ``timeout`` seconds it is killed (exit -9: the input was not caught)."""
    workdir.mkdir(parents=True, exist_ok=True)
    env = {k: v for k, v in os.environ.items() if k != "MLFLOW_TRACKING_URI"}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO / "src"), env.get("PYTHONPATH")]))
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        [*SNAKEMAKE, *args, "-d", str(workdir)],
        cwd=workdir,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    # a bad input that is not caught would start the whole workflow: stop it
    timer = threading.Timer(timeout, os.killpg, (proc.pid, signal.SIGKILL))
    timer.start()
    lines, seconds = [], None
    for line in proc.stdout:
        lines.append(line.rstrip())
        if until is not None and until in line:
            seconds = time.perf_counter() - t0
            os.killpg(proc.pid, signal.SIGTERM)
            break
    rc = proc.wait()
    timer.cancel()
    seconds = seconds if seconds is not None else time.perf_counter() - t0
    return seconds, message(lines, until), rc


def message(lines: list[str], until: str | None) -> str:
    if until is not None:
        return next((ln for ln in lines if until in ln), "(no such line)")
    start = next((i for i, ln in enumerate(lines) if ln.startswith(MESSAGE_START)), None)
    if start is None:
        return " / ".join(lines[-3:])
    body = [ln.strip() for ln in lines[start:] if ln.strip()]
    return " ".join(body)[:600]


def write(path: Path, obj) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(obj if isinstance(obj, str) else yaml.safe_dump(obj))
    return path


def broken_copies(data: Path, base: Path) -> list[tuple[str, Path]]:
    """(row, data_root) of each broken copy of ``data``."""
    mnist, npz = data / "MNIST" / "raw", data / "cifar10" / "cifar10-exact-subset.npz"

    def copy(name: str) -> Path:
        root = base / name
        shutil.copytree(mnist, root / "MNIST" / "raw")
        (root / "cifar10").mkdir()
        shutil.copy(npz, root / "cifar10" / npz.name)
        for p in root.rglob("*"):
            p.chmod(0o755 if p.is_dir() else 0o644)
        return root

    rows = [("missing `data_root`", base / "does-not-exist")]
    (base / "empty").mkdir(parents=True)
    rows.append(("empty `data_root`", base / "empty"))
    root = copy("truncated")
    f = root / "MNIST" / "raw" / "train-images-idx3-ubyte"
    f.write_bytes(f.read_bytes()[:-1000])
    rows.append(("truncated IDX file", root))
    root = copy("magic")
    f = root / "MNIST" / "raw" / "t10k-images-idx3-ubyte"
    b = bytearray(f.read_bytes())
    b[2] = 0x0D  # float items
    f.write_bytes(bytes(b))
    rows.append(("bad IDX magic number", root))
    root = copy("no-npz")
    (root / "cifar10" / npz.name).unlink()
    rows.append(("missing `.npz`", root))
    root = copy("garbage-npz")
    (root / "cifar10" / npz.name).write_bytes(os.urandom(4096))
    rows.append(("garbage `.npz`", root))
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--data", type=Path, help="a data_root with MNIST/raw and the CIFAR-10 npz")
    ap.add_argument("--jpeg", type=Path, help="an unpacked CIFAR-10 ImageFolder (train/, test/)")
    ap.add_argument("--no-config", action="store_true", help="skip the config rows")
    args = ap.parse_args()
    table = Table()
    print("| bad input | time to the message | exit | message |\n|---|---|---|---|", flush=True)
    with tempfile.TemporaryDirectory(prefix="bench_bad_inputs_") as tmp:
        tmp = Path(tmp)
        if not args.no_config:
            for i, (row, overlay) in enumerate(CONFIG_ROWS):
                f = write(tmp / f"overlay{i}.yaml", overlay)
                table.append((row, *timed(tmp / f"c{i}", ["--cores", "2", "--configfile", str(f)])))
            for row, text in (
                ("YAML syntax error in an overlay", SYNTAX_ERROR),
                ("a key written twice in an overlay", DUPLICATE_KEY),
            ):
                f = write(tmp / f"{row.split()[0]}.yaml", text)
                table.append(
                    (row, *timed(tmp / f"o{len(table)}", ["--cores", "2", "--configfile", str(f)]))
                )
            table.append(
                (
                    "(the same syntax error) `python -m ibrobust.config.overlay FILE`",
                    *_overlay_check(tmp / "YAML.yaml"),
                )
            )
        if args.data is not None:
            data = args.data.resolve()
            for row, root in broken_copies(data, tmp / "broken"):
                run = ["fa_images", "--cores", "2", "--config", f"data_root={root}"]
                table.append((f"{row} (`fa_images`)", *timed(tmp / f"d{len(table)}", run)))
            run = ["fa_images", "--cores", "2", "--config", f"data_root={data}"]
            row = "sound MNIST + CIFAR-10 npz (`fa_images`): to the preflight's line"
            table.append((row, *timed(tmp / "ok", run, until="data preflight:")))
        if args.jpeg is not None:
            root = tmp / "jpeg_root"
            root.mkdir()
            (root / "cifar10-jpeg").symlink_to(args.jpeg.resolve())
            jpeg = REPO / "configs" / "fa_images_jpeg.yaml"
            run = ["fa_images_jpeg", "--cores", "2", "--configfile", str(jpeg)]
            run += ["--config", f"data_root={root}"]
            row = "sound CIFAR-10 JPEG folder (60k files): to the preflight's line"
            table.append((row, *timed(tmp / "jpeg", run, until="data preflight:")))


class Table(list):
    """Rows printed as they are added (a long run shows its figures as it goes)."""

    def append(self, row: tuple[str, float, str, int]) -> None:
        super().append(row)
        name, seconds, msg, rc = row
        print(f"| {name} | {seconds:.1f} s | {rc} | {msg.replace('|', '/')} |", flush=True)


def _overlay_check(path: Path) -> tuple[float, str, int]:
    env = dict(os.environ, PYTHONPATH=str(REPO / "src"))
    t0 = time.perf_counter()
    p = subprocess.run(
        [sys.executable, "-m", "ibrobust.config.overlay", str(path)],
        env=env,
        capture_output=True,
        text=True,
    )
    return time.perf_counter() - t0, (p.stdout + p.stderr).strip(), p.returncode


if __name__ == "__main__":
    main()
