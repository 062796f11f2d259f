"""The MLflow UI in a real browser (Debian's headless Chromium, driven by Playwright with
the system browser): a tracking server on the tiny run's store opens the README's URL on
the runs table (the experiment is tagged for MLflow 3's "Model training" view), shows the
runs of every rule, a training run's params and metrics, and a figure artifact; and the
command and URL a two-study invocation prints at its end open its parent run, named
after both studies, with its jobs listed. Screenshots go to $IBROBUST_TEST_ARTIFACTS/ui
(default tests/artifacts/ui)."""

from __future__ import annotations

import os
import re
import shlex
import signal
import subprocess
from collections import Counter
from pathlib import Path

import pytest
from ops_helpers import (
    CHROMIUM_FLAGS,
    artifacts_dir,
    free_port,
    record,
    require_chromium,
    tracking_server,
    wait_until,
)
from smk_helpers import EXPECTED_JOBS, TINY, base_env, finished_rules, snakemake

pytestmark = pytest.mark.workflow

TIMEOUT_MS = 90_000  # a cold single-page app on a busy 2-core machine
SLOW_MS = 600_000  # ... on one loaded far beyond its cores (a load of 25-35 was seen)


def test_mlflow_ui_shows_study_runs_params_metrics_and_figures(state_copy, tmp_path):
    chromium = require_chromium()
    from mlflow.tracking import MlflowClient
    from playwright.sync_api import sync_playwright

    results = state_copy / "results"
    store = f"sqlite:///{results / 'mlflow' / 'mlflow.db'}"
    client = MlflowClient(tracking_uri=store)
    exp = client.get_experiment_by_name("ibrobust")
    # the README's direct URL of the runs table is /#/experiments/1/runs (screenshot 1)
    assert exp.experiment_id == "1", f"ibrobust is experiment {exp.experiment_id}: fix the README"
    runs = client.search_runs([exp.experiment_id], max_results=1000)
    (parent,) = [r for r in runs if r.data.tags["ibrobust.kind"] == "workflow"]
    children = [r for r in runs if r.data.tags["ibrobust.kind"] == "job"]
    train = next(
        r
        for r in children
        if r.data.tags["ibrobust.rule"] == "train"
        and r.data.tags["wildcard.model"] != "robust_reference"
    )
    figure = next(r for r in children if r.data.tags["ibrobust.rule"] == "fa_figures")
    shots = artifacts_dir("ui")
    base_url = None

    with tracking_server(store, results / "mlflow" / "artifacts", tmp_path / "server.log") as uri:
        base_url = f"{uri}/#/experiments/{exp.experiment_id}"
        with sync_playwright() as pw:
            browser = pw.chromium.launch(
                executable_path=chromium,
                headless=True,
                args=CHROMIUM_FLAGS,  # Playwright gives it a fresh, empty user-data dir
            )
            page = browser.new_page(viewport={"width": 1600, "height": 1400})
            page.set_default_timeout(TIMEOUT_MS)

            # 0. the README's URL (the runs table), as a fresh browser first shows it: the
            # training runs - the parent run and its jobs - not the GenAI overview
            page.goto(f"{base_url}/runs")
            page.get_by_text(parent.info.run_name).first.wait_for()
            page.wait_for_timeout(1500)
            page.screenshot(path=shots / "0_readme_url.png")
            text = page.inner_text("body")
            assert "No data" not in text and "Model training" in text
            assert "Run Name" in text  # the runs table's header

            # 1. the experiment's runs: the workflow's parent run, expanded to its jobs
            _close_assistant(page)
            page.locator('button[data-component-id*="runnamecellrenderer"]').first.click()
            page.get_by_text(" @fa").first.wait_for()
            _widen_run_names(page, 420)
            page.wait_for_timeout(1500)
            page.screenshot(path=shots / "1_study_runs.png", full_page=True)
            text = page.inner_text("body")
            assert "ibrobust" in text  # the experiment
            shown = {line.strip() for line in text.splitlines()}
            for rule in EXPECTED_JOBS:
                if rule == "all":
                    continue
                # rules of no single study (datasets, the claims ledger) are "@shared"
                study = "shared" if rule in ("dataset", "claims") else "fa"
                assert any(s.startswith(f"{rule} ") and s.endswith(f" @{study}") for s in shown), (
                    rule,
                    sorted(shown),
                )
            names = {r.info.run_name for r in children}
            assert len(names & shown) == len(children), sorted(names - shown)

            # 2. one training run: its params and metrics
            page.goto(f"{base_url}/runs/{train.info.run_id}")
            page.get_by_text("train.loss").first.wait_for()
            page.get_by_text("optimizer.lr").first.wait_for()
            page.wait_for_timeout(1000)
            page.screenshot(path=shots / "2_train_run.png")
            text = page.inner_text("body")
            assert train.info.run_name in text
            assert f"{train.data.metrics['train.loss']}" in text.replace("\n", " ")
            assert train.data.params["optimizer.lr"] in text
            # ... and its training curve (Model metrics tab)
            page.get_by_text("Model metrics", exact=True).first.click()
            page.locator("canvas, svg.main-svg").first.wait_for()
            page.wait_for_timeout(2500)
            page.screenshot(path=shots / "2b_train_curves.png")

            # 3. a figure artifact, rendered
            page.goto(f"{base_url}/runs/{figure.info.run_id}/artifacts")
            page.get_by_text("figures", exact=True).first.click()
            page.get_by_text("cosine_heatmaps.png").first.click()
            page.get_by_text("figures/cosine_heatmaps.png").first.wait_for()
            page.wait_for_function(
                "() => [...document.images].some(i => i.src.startsWith('blob:')"
                " && i.complete && i.naturalWidth > 200)"
            )
            page.wait_for_timeout(1000)
            page.screenshot(path=shots / "3_figure_artifact.png")
            browser.close()
    print(f"MLflow UI screenshots: {shots}")
    for name in (
        "0_readme_url.png",
        "1_study_runs.png",
        "2_train_run.png",
        "2b_train_curves.png",
        "3_figure_artifact.png",
    ):
        png = (shots / name).read_bytes()
        assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 10_000, name


TINY_PRICE = Path(__file__).resolve().parent / "configs" / "tiny_price.yaml"
# a reproduce-like invocation over two studies: one result of each (5 jobs); the config's
# only_studies (tiny_price.yaml: price_linear) is not what runs
TWO_STUDIES = [
    "results/fa/tiny_clusters/two_layer_m2/gd_tiny/binary/seed0/model.pt",
    "results/price_linear/tiny_w2_x16/n8/metrics.csv",  # one price_train job per (regime, n)
]
COMMAND = re.compile(r"^ibrobust: MLflow: open the store with: (.+)$", re.M)
RUN_URL = re.compile(r"^ibrobust: MLflow: this invocation's parent run: (\S+)$", re.M)


def test_the_printed_url_opens_the_parent_run_named_after_both_studies(tmp_path):
    chromium = require_chromium()
    from mlflow.tracking import MlflowClient
    from playwright.sync_api import sync_playwright

    work = tmp_path / "work"
    work.mkdir()
    configs = (TINY, TINY_PRICE)
    run = snakemake(work, "--cores", "2", *TWO_STUDIES, configfiles=configs, timeout=1200).check()
    jobs = Counter(dataset=1, train=1, price_test_data=1, price_train=1)
    assert finished_rules(run) == jobs, run.describe()
    (command,), (url,) = COMMAND.findall(run.stderr), RUN_URL.findall(run.stderr)
    db = work / "results/mlflow/mlflow.db"
    assert command == f"mlflow ui --backend-store-uri sqlite:///{db} --workers 1"
    client = MlflowClient(tracking_uri=f"sqlite:///{db}")
    exp = client.get_experiment_by_name("ibrobust")
    assert exp.tags["mlflow.experimentKind"] == "custom_model_development"  # not GenAI
    runs = client.search_runs([exp.experiment_id])
    (parent,) = [r for r in runs if r.data.tags["ibrobust.kind"] == "workflow"]
    children = [r for r in runs if r.data.tags["ibrobust.kind"] == "job"]
    run_page = f"#/experiments/{exp.experiment_id}/runs/{parent.info.run_id}"
    assert url == f"http://127.0.0.1:5000/{run_page}?workflowType=machine_learning"
    name = parent.info.run_name
    assert re.fullmatch(r"workflow fa\+price_linear \(2 files\) \S+ \S+", name), name
    assert (
        parent.data.params["studies"] == parent.data.tags["ibrobust.studies"] == "fa,price_linear"
    )
    assert parent.data.params["targets"] == ",".join(sorted(TWO_STUDIES))
    assert {c.data.tags["mlflow.parentRunId"] for c in children} == {parent.info.run_id}

    # the printed command, as printed, on a free port instead of 5000 (a later --port wins)
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    env = base_env(MLFLOW_SERVER_ENABLE_JOB_EXECUTION="false")  # no GenAI job runner
    with (tmp_path / "mlflow_ui.log").open("w") as log:
        proc = subprocess.Popen(
            [*shlex.split(command), "--port", str(port)],
            cwd=tmp_path,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    shots = artifacts_dir("ui")
    try:
        wait_until(lambda: _healthy(base) or proc.poll() is not None, 600, "mlflow ui")
        assert proc.poll() is None, (tmp_path / "mlflow_ui.log").read_text()[-3000:]
        with sync_playwright() as pw:
            browser = pw.chromium.launch(
                executable_path=chromium, headless=True, args=CHROMIUM_FLAGS
            )
            page = browser.new_page(viewport={"width": 1600, "height": 1100})
            page.set_default_timeout(SLOW_MS)
            page.set_default_navigation_timeout(SLOW_MS)
            page.goto(url.replace("http://127.0.0.1:5000", base))
            page.get_by_text(name).first.wait_for()
            page.get_by_text("Child runs").first.wait_for()
            more = page.locator(
                '[data-component-id="mlflow.run_details.overview.child_runs.load_more_button"]'
            )
            while more.count():  # 10 children a page
                more.first.click()
                page.wait_for_timeout(1000)
            for child in children:  # each job a link to its own run
                link = page.get_by_role("link", name=child.info.run_name, exact=True).first
                link.wait_for()
                assert link.get_attribute("href").endswith(f"/runs/{child.info.run_id}")
            _close_assistant(page)
            page.wait_for_timeout(1500)
            page.screenshot(path=shots / "4_parent_run_from_printed_url.png", full_page=True)
            text = page.inner_text("body")
            assert name in text and "fa+price_linear" in text
            # the Model training view (its sidebar), not GenAI's (Evaluation runs, ...)
            assert "Model registry" in text and "Evaluation runs" not in text
            # the experiment's runs table from there: the parent run with its jobs
            page.goto(
                f"{base}/#/experiments/{exp.experiment_id}/runs?workflowType=machine_learning"
            )
            page.get_by_text(name).first.wait_for()
            _close_assistant(page)
            page.locator('button[data-component-id*="runnamecellrenderer"]').first.click()
            page.get_by_text(" @price_linear").first.wait_for()
            _widen_run_names(page, 420)
            page.wait_for_timeout(1500)
            page.screenshot(path=shots / "5_two_study_runs_table.png")
            browser.close()
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=30)
    for png in ("4_parent_run_from_printed_url.png", "5_two_study_runs_table.png"):
        assert (shots / png).stat().st_size > 10_000, png
    record(f"printed URL {url} -> parent run {name!r} with {len(children)} child runs")


def _healthy(base: str) -> bool:
    import urllib.request

    try:
        with urllib.request.urlopen(f"{base}/health", timeout=2) as resp:
            return resp.status == 200
    except OSError:
        return False


def _close_assistant(page) -> None:
    """Close the MLflow Assistant side panel if it is open (cosmetic: more room for runs)."""
    close = page.locator('button[data-component-id="mlflow.assistant.chat_panel.close"]')
    if close.count():
        close.first.click()


def _widen_run_names(page, pixels: int) -> None:
    """Drag the Run Name column's edge so full run names show in the screenshot."""
    header = page.locator('.ag-header-cell[col-id="attributes.`Run Name`"]').first
    box = header.bounding_box()
    if not box:
        return
    x, y = box["x"] + box["width"] - 2, box["y"] + box["height"] / 2
    page.mouse.move(x, y)
    page.mouse.down()
    page.mouse.move(x + pixels, y, steps=10)
    page.mouse.up()
