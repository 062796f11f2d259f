"""benchmarks/profile_workflow.py on a hand-made run directory: sums, span, save/baseline."""

import importlib.util
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location(
    "profile_workflow", REPO / "benchmarks" / "profile_workflow.py"
)
pw = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(pw)


def _log(path: Path, rule: str, study: str, t0: str, t1: str, cpu: float, startup: float):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        f"2026-11-25 {t0} INFO ibrobust.{rule}: start {rule} seed0/d @{study} threads=1 x\n"
        f"2026-11-25 {t0} INFO ibrobust.{rule}: working\n"
        f"2026-11-25 {t1} INFO ibrobust.{rule}: phases wall=3.000 cpu={cpu} startup={startup} "
        f"startup_cpu=0.500 data=0.100 compute=2.000 tracking=0.200 write=0.100\n"
    )


@pytest.fixture
def run(tmp_path):
    logs = tmp_path / "results" / "logs"
    _log(logs / "train" / "a.log", "train", "fa", "10:00:00", "10:00:03", 2.0, 0.4)
    _log(logs / "train" / "b.log", "train", "fa", "10:00:01", "10:00:04", 4.0, 0.6)
    _log(logs / "fa_figure" / "c.log", "fa_figure", "fa", "10:00:05", "10:00:10", 1.0, 0.2)
    (logs / "attack").mkdir()
    (logs / "attack" / "running.log").write_text("2026-11-25 10:00:00 INFO x: start attack\n")
    bench = tmp_path / "results" / "benchmarks" / "train"
    bench.mkdir(parents=True)
    (bench / "b.tsv").write_text("s\tcpu_time\n7.5\t6.25\n")  # its wall wins, not its CPU
    return tmp_path


def test_sums_medians_and_span(run):
    jobs, unprofiled = pw.read_jobs(run)
    assert unprofiled == 1  # the log without a phases line
    by = {j["rule"]: [] for j in jobs}
    for j in jobs:
        by[j["rule"]].append(j)
    assert sorted(j["cpu"] for j in by["train"]) == [2.0, 4.0]  # the logs' CPU
    assert sorted(j["wall"] for j in by["train"]) == [3.0, 7.5]  # b: the benchmark's wall
    assert pw.span(jobs) == 10.0  # 10:00:00 -> 10:00:10
    text = pw.report(jobs, unprofiled)
    assert "3 jobs profiled (1 without a phases line), 7 CPU-s" in text
    assert "run span (first job start to last job end) 10 s" in text
    assert "| train | 2 | 6 | 10 | 3.00 | 5.25 |" in text  # wall 3.0 (log) + 7.5 (benchmark)


def test_packing_by_hand(run):
    """Jobs at [0, 3], [1, 4], [5, 10] s with 7 CPU-s on 2 cores: span 10 s against
    7 / 2 = 3.5 s; occupied 1 + 2x2 + 1 + 0 + 5 = 11 of 2 x 10 core-seconds; two jobs
    ran at once last at 3 s, so the tail is 7 s."""
    jobs, _ = pw.read_jobs(run)
    p = pw.packing(jobs, cores=2)
    assert p["ratio"] == pytest.approx(10 / 3.5)
    assert p["occupied"] == pytest.approx(0.55)
    assert p["tail"] == 7.0
    one = pw.packing(jobs, cores=1)  # on one core the overlap counts once: 9 of 10 s
    assert one["occupied"] == pytest.approx(0.9) and one["tail"] == 0.0
    text = pw.report(jobs, 0, cores=2)
    assert "packing on 2 cores: span = 2.86 x (job CPU-s / 2), jobs occupied 55 %" in text
    assert "the last 7 s ran fewer than 2 jobs" in text


def test_saved_jobs_serve_as_baseline(run, tmp_path):
    jobs, _ = pw.read_jobs(run)
    saved = tmp_path / "jobs.csv"
    pw.save_jobs(saved, jobs)
    again = pw.load_jobs(saved)
    assert [(j["rule"], j["cpu"], j["start"]) for j in again] == [
        (j["rule"], j["cpu"], j["start"]) for j in jobs
    ]
    text = pw.report(jobs, 0, again)
    assert "Baseline: 3 jobs, 7 CPU-s, span 10 s; packing on 2 cores" in text
    assert (
        "| fa_figure | 1 | 1 | 3 | 1.00 | 3.00 | 0.20 (0.50) | 1 | 1 | 1.00 | 3.00 | 0.20 (0.50) |"
        in text
    )
    assert "| fa | 3 | 7 | 14 | 2 | 3 | 7 | 2 |" in text  # per study: this run, then baseline


def test_a_rule_or_study_of_one_run_only_keeps_its_row(run):
    """A rule the baseline had and this run lost (renamed, merged) still shows, with zeros on
    this run's side; a rule only this run has shows "-" on the baseline's."""
    jobs, _ = pw.read_jobs(run)
    gone = {**jobs[0], "rule": "attack_readout", "study": "old", "cpu": 9.0, "wall": 9.5}
    text = pw.report([j for j in jobs if j["rule"] != "fa_figure"], 0, [*jobs, gone])
    assert "| attack_readout | 0 | 0 | 0 | - | - | - (-) | 1 | 9 | 9.00 | 9.50 |" in text
    assert "| fa_figure | 0 | 0 | 0 | - | - | - (-) | 1 | 1 | 1.00 | 3.00 |" in text
    assert "| old | 0 | 0 | 0 | 0 | 1 | 9 |" in text
    text = pw.report([*jobs, gone], 0, jobs)
    assert "| attack_readout | 1 | 9 | 10 | 9.00 | 9.50 |" in text
    assert text.count("| attack_readout |") == 1


@pytest.mark.parametrize(
    "tsv", ["", "s\tcpu_time\n", "s\tcpu_time\nNA\t1.0\n", "s\tcpu_time\n\t1.0\n", "x\n1\n"]
)
def test_a_benchmark_file_without_a_wall_leaves_the_log_wall(run, tsv):
    (run / "results" / "benchmarks" / "train" / "b.tsv").write_text(tsv)
    jobs, _ = pw.read_jobs(run)
    b = next(j for j in jobs if j["rule"] == "train" and j["cpu"] == 4.0)
    assert b["wall"] == 3.0 and b["source"] == "log"


def test_readme_block_is_replaced_between_markers(tmp_path):
    readme = tmp_path / "README.md"
    readme.write_text("intro\n<!-- profile:start -->\nold\n<!-- profile:end -->\nrest\n")
    pw.rewrite_readme(readme, "new\n")
    assert readme.read_text() == "intro\n<!-- profile:start -->\nnew\n<!-- profile:end -->\nrest\n"
    # a named block: only its markers are touched
    readme.write_text(
        "a\n<!-- overhead:start -->\nx\n<!-- overhead:end -->\n<!-- profile:start -->\n"
    )
    pw.rewrite_readme(readme, "tiny\n", "overhead")
    assert readme.read_text() == (
        "a\n<!-- overhead:start -->\ntiny\n<!-- overhead:end -->\n<!-- profile:start -->\n"
    )
    (tmp_path / "NO.md").write_text("nothing")
    with pytest.raises(SystemExit, match="markers"):
        pw.rewrite_readme(tmp_path / "NO.md", "x")
