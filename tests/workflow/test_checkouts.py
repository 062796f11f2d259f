"""One library per checkout (issue 39 item 3): two checkouts share one venv, whose editable
install points at the first (this repository). The second checkout's Snakefile validates,
plans and hashes with the second's own src/ - also through the default workflow profile,
which checks config overlays before Snakemake reads them - and its jobs import it too:

* a model kind that exists only in the second checkout plans and trains there;
* an edit to the second checkout's ``src/ibrobust/attacks/suite.py`` reruns the attack jobs
  that import it (their code hash), and not the training job (which imports ``pgd.py`` for
  robust ERM, but not the suite).

Without PYTHONPATH (a user's shell), as a newcomer with two worktrees runs it."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from smk_helpers import (
    PYTHON,
    REPO,
    TINY,
    Run,
    base_env,
    copy_repo,
    parse_dry_run,
    write_yaml,
)

pytestmark = pytest.mark.workflow

KIND, MODEL = "tanh_mlp", "mlp_tanh"
RUN = f"results/fa/tiny_clusters/{MODEL}/gd_tiny/binary/seed0"
TARGET = f"{RUN}/attack/main/summary.json"


def second_checkout(root: Path) -> Path:
    """A copy of the workflow and its library with one more model kind (a copy of ``mlp``
    registered as ``tanh_mlp``), as CONTRIBUTING.md's steps add one."""
    copy_repo(root, with_src=True)
    models = root / "src" / "ibrobust" / "models"
    shutil.copy2(models / "mlp.py", models / f"{KIND}.py")
    schema = (models / "mlp.schema.yaml").read_text().replace("enum: [mlp]", f"enum: [{KIND}]")
    (models / f"{KIND}.schema.yaml").write_text(schema)
    kinds = root / "src" / "ibrobust" / "kinds.py"
    text = kinds.read_text()
    line = '        "mlp": "ibrobust.models.mlp",\n'
    assert line in text, "the model registry's table changed: update this test"
    kinds.write_text(text.replace(line, line + f'        "{KIND}": "ibrobust.models.{KIND}",\n'))
    return root


def user_env() -> dict[str, str]:
    """The test's environment without PYTHONPATH: the venv's editable install (this
    repository's src/) is what a bare ``import ibrobust`` finds."""
    env = base_env()
    env.pop("PYTHONPATH", None)
    return env


def smk(checkout: Path, work: Path, *args: str, extra: tuple[Path, ...] = ()) -> Run:
    """snakemake of ``checkout`` (its default profile included) in ``work``, on the tiny
    config with the second checkout's model kind (and ``extra`` config files)."""
    import subprocess
    import time

    overlay = write_yaml(
        work / "kind.yaml",
        {"models": {MODEL: {"kind": KIND, "hidden": [8]}}, "studies": {"fa": {"models": [MODEL]}}},
    )
    files = [str(TINY), str(overlay), *map(str, extra)]
    cmd = [PYTHON, "-m", "snakemake", "-s", str(checkout / "Snakefile"), "-d", str(work),
           "--nocolor", "--cores", "1", *args, "--configfile", *files]  # fmt: skip
    t0 = time.monotonic()
    proc = subprocess.run(cmd, cwd=work, env=user_env(), capture_output=True, text=True,
                          timeout=600)  # fmt: skip
    return Run(cmd, work, proc.returncode, proc.stdout, proc.stderr, time.monotonic() - t0)


def test_the_venv_points_at_the_first_checkout():
    """The premise: a bare import finds this repository's library, not the copy's."""
    import subprocess

    out = subprocess.run(
        [PYTHON, "-c", "import ibrobust, os; print(os.path.realpath(ibrobust.__file__))"],
        env=user_env(), cwd="/", capture_output=True, text=True, check=True,
    )  # fmt: skip
    assert Path(out.stdout.strip()).is_relative_to(REPO.resolve() / "src"), out.stdout


def test_a_second_checkout_plans_runs_and_hashes_its_own_library(tmp_path):
    second = second_checkout(tmp_path / "second")
    work = tmp_path / "work"
    work.mkdir()
    plan = parse_dry_run(smk(second, work, "-n", TARGET))
    trains = plan.of("train")
    assert [j.wildcards["model"] for j in trains] == [MODEL], plan.rules()

    smk(second, work, TARGET).check()  # dataset, training and the attack of the new kind
    assert (work / TARGET).exists()
    assert "Nothing to be done" in smk(second, work, "-n", TARGET).output

    suite = second / "src" / "ibrobust" / "attacks" / "suite.py"
    suite.write_text(suite.read_text() + "\n_EDITED_IN_THE_SECOND_CHECKOUT = True\n")
    plan = parse_dry_run(smk(second, work, "-n", TARGET))
    assert plan.rules() == {"attack": 1}, plan.rules()
    # the code hash is a params value (rules/common.smk, code()): Snakemake names params
    assert "params have changed" in plan.of("attack")[0].reason.lower(), plan.of("attack")[0].reason


def test_the_workflow_checks_overlays_with_the_checkouts_own_library(tmp_path):
    """A config file with a key written twice stops the run with the file and the line (the
    Snakefile's check, from the second checkout's src/)."""
    second = second_checkout(tmp_path / "second")
    work = tmp_path / "work"
    work.mkdir()
    bad = work / "twice.yaml"
    bad.write_text("threads: 1\nthreads: 2\n")
    run = smk(second, work, "-n", extra=(bad,))
    assert run.returncode != 0
    assert "twice.yaml, line 2: key 'threads' is written twice" in run.output, run.describe()
