"""Compare two MLflow stores run by run: params, metrics (keys, steps, history length),
tags, artifacts and dataset inputs of every active run, matched by run name (the parent
runs, named after their time, by their kind).

    python benchmarks/tracking_store_diff.py STORE_A STORE_B [--dump]

A STORE is a tracking URI or a workflow directory (its results/mlflow/mlflow.db).
Values that differ between any two runs of one config (ids, times, hosts, durations,
CPU and memory) are compared by presence only. Exit status 1 if the stores differ.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

VOLATILE_TAGS = ("mlflow.parentRunId", "ibrobust.record_id", "ibrobust.record_lines",
                 "ibrobust.host", "mlflow.user", "mlflow.runName", "mlflow.log-model.history",
                 "ibrobust.invocation.",
                 # differ when the code, the config (its schema's defaults) or the commit does
                 "ibrobust.code_hash", "ibrobust.config_hash", "ibrobust.run_key",
                 "mlflow.source.git.commit")  # fmt: skip
VOLATILE_PARAMS = ("config_hash",)
VOLATILE_METRICS = ("job.", "train.seconds", "train.cpu_seconds", "seconds")


def store_uri(store: str) -> str:
    if "://" in store:
        return store
    return f"sqlite:///{(Path(store) / 'results' / 'mlflow' / 'mlflow.db').resolve()}"


def _artifacts(client, run_id: str, path: str | None = None) -> list[str]:
    out = []
    for info in client.list_artifacts(run_id, path):
        out += _artifacts(client, run_id, info.path) if info.is_dir else [info.path]
    return out


def dump(uri: str) -> dict[str, dict]:
    """run name (parent runs: ``workflow``) -> what the run holds."""
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=uri)
    exp = client.get_experiment_by_name("ibrobust")
    out = {}
    for run in client.search_runs([exp.experiment_id], max_results=5000):
        tags = run.data.tags
        name = "workflow" if tags.get("ibrobust.kind") == "workflow" else run.info.run_name
        metrics = {}
        for key in run.data.metrics:
            hist = client.get_metric_history(run.info.run_id, key)
            volatile = key.startswith(VOLATILE_METRICS)
            steps = sorted({m.step for m in hist})
            metrics[key] = (
                "present" if volatile else [len(hist), steps, round(run.data.metrics[key], 6)]
            )
        out[name] = {
            "status": run.info.status,
            "parent": "mlflow.parentRunId" in tags,
            "params": {
                k: ("present" if k in VOLATILE_PARAMS else v)
                for k, v in sorted(run.data.params.items())
            },  # fmt: skip
            "metrics": dict(sorted(metrics.items())),
            "tags": {
                k: ("present" if k.startswith(VOLATILE_TAGS) else v)
                for k, v in sorted(tags.items())
            },  # fmt: skip
            "artifacts": sorted(_artifacts(client, run.info.run_id)),
            "inputs": sorted((d.dataset.name, d.dataset.digest) for d in run.inputs.dataset_inputs),
        }
    return out


def diff(a: dict, b: dict) -> list[str]:
    lines = [f"only in A: {n}" for n in sorted(set(a) - set(b))]
    lines += [f"only in B: {n}" for n in sorted(set(b) - set(a))]
    for name in sorted(set(a) & set(b)):
        for part in a[name]:
            x, y = a[name][part], b[name].get(part)
            if isinstance(x, dict):
                for k in sorted(set(x) | set(y or {})):
                    if x.get(k) != (y or {}).get(k):
                        lines.append(f"{name}: {part}[{k}]: {x.get(k)!r} != {(y or {}).get(k)!r}")
            elif x != y:
                lines.append(f"{name}: {part}: {x!r} != {y!r}")
    return lines


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("a")
    ap.add_argument("b", nargs="?")
    ap.add_argument("--dump", action="store_true", help="print A as JSON")
    args = ap.parse_args()
    a = dump(store_uri(args.a))
    if args.dump or not args.b:
        print(json.dumps(a, indent=1, sort_keys=True))
        return
    b = dump(store_uri(args.b))
    print(f"A: {len(a)} runs, B: {len(b)} runs")
    lines = diff(a, b)
    print("\n".join(lines) or "no difference")
    sys.exit(1 if lines else 0)


if __name__ == "__main__":
    main()
