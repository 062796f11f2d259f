"""Issue 11: the binary readouts as an evaluated dimension of the FA studies, and the FA
scaling sweeps (critical radius vs k and vs d) with their fitted log-log slopes."""

from __future__ import annotations

import copy
import math

import numpy as np
import pandas as pd
import pytest
from claims_fixtures import ROOT, default_config

from ibrobust.config import ConfigError, load_schema, validate_config
from ibrobust.stages.tables import per_readout
from ibrobust.studies import feature_averaging as fa
from ibrobust.studies import plan
from ibrobust.studies.feature_averaging.scaling import scaling_slopes, scaling_table


def _validate(cfg: dict) -> dict:
    return validate_config(cfg, load_schema(ROOT / "schemas" / "config.schema.yaml"))


def _raw() -> dict:
    import yaml

    return yaml.safe_load((ROOT / "config.yaml").read_text())


# ---- readouts: which attack jobs, which paths ---------------------------------------------------
def test_k_class_runs_multiply_by_readout_two_class_runs_never():
    cfg = default_config()
    runs = [
        dict(dataset="c", model="m", optimizer="gd", supervision=s, seed=0)
        for s in ("binary", "multiclass")
    ]
    out = plan.with_readouts(cfg, "fa", runs)
    assert [(r["supervision"], r["readout"]) for r in out] == [
        ("binary", None),
        ("multiclass", "sum"),
        ("multiclass", "argmax"),
        ("multiclass", "log_odds"),
    ]
    paths = plan.attack_files("fa", out, "main", "summary.json")
    assert paths[0] == "results/fa/c/m/gd/binary/seed0/attack/main/summary.json"
    assert paths[2] == "results/fa/c/m/gd/multiclass/seed0/attack/main/argmax/summary.json"
    # a shorter list drops k-class jobs only; the 2-class path does not change
    cfg["studies"]["fa"]["readouts"] = ["argmax"]
    short = plan.attack_files("fa", plan.with_readouts(cfg, "fa", runs), "main", "summary.json")
    assert short == [paths[0], paths[2]]


def test_studies_without_readouts_attack_each_model_once():
    cfg = default_config()
    runs = [dict(dataset="c", model="m", optimizer="o", supervision="multiclass", seed=1)]
    assert plan.with_readouts(cfg, "prelu", runs) == [dict(runs[0], readout=None)]


def test_readouts_default_and_bad_name_rejected_with_key_path():
    raw = _raw()
    del raw["studies"]["fa"]["readouts"]
    assert _validate(raw)["studies"]["fa"]["readouts"] == ["sum", "argmax", "log_odds"]
    raw["studies"]["fa"]["readouts"] = ["sum", "max"]
    with pytest.raises(ConfigError, match=r"studies\.fa\.readouts"):
        _validate(raw)


def test_per_readout_repeats_one_score_rows_under_each_readout():
    df = pd.DataFrame(
        {
            "supervision": ["binary", "multiclass", "multiclass"],
            "readout": [None, "sum", "argmax"],
            "v": [1.0, 2.0, 3.0],
        }
    )
    out = per_readout(df, ["argmax", "sum"])
    assert list(zip(out.readout, out.supervision, out.v, strict=True)) == [
        ("argmax", "multiclass", 3.0),
        ("argmax", "binary", 1.0),
        ("sum", "multiclass", 2.0),
        ("sum", "binary", 1.0),
    ]
    # a readout no longer in the list is dropped
    assert set(per_readout(df, ["sum"]).readout) == {"sum"}


# ---- scaling sweeps ------------------------------------------------------------------------
def test_scaling_sweeps_derive_k_and_d_variants_sharing_the_base():
    cfg = default_config()
    st = cfg["studies"]["fa"]
    st["scaling"]["sweeps"] = {"k": [2, 10], "d": [500, 1000]}
    dss = fa.sweep_datasets(cfg, st)
    assert dss == {
        "k": ["clusters_d1000@k=2", "clusters_d1000"],
        "d": ["clusters_d1000@d=500", "clusters_d1000"],
    }
    part = [p for p in fa.parts(cfg, st) if p["part"] == "scaling"][0]
    assert part["datasets"] == ["clusters_d1000@k=2", "clusters_d1000", "clusters_d1000@d=500"]
    frac = st["scaling"]["radius_fractions"]
    assert part["radii"]["clusters_d1000@d=500"][-1] == pytest.approx(frac[-1] * math.sqrt(500))


def test_scaling_sweep_bad_value_named_by_its_key_path():
    raw = _raw()
    raw["studies"]["fa"]["scaling"]["sweeps"]["d"] = [250, 500.5]
    with pytest.raises(ConfigError, match=r"studies\.fa\.scaling\.sweeps\.d\[1\]"):
        _validate(raw)
    raw = _raw()
    raw["studies"]["fa"]["scaling"]["sweeps"] = {"m": [1, 2]}
    with pytest.raises(ConfigError, match=r"studies\.fa\.scaling"):
        _validate(raw)


def test_sweep_decomposed_runs_are_the_sweeps_nets_where_n_train_at_most_d():
    """config.yaml's sweep (n_train = 1000): the lambda decomposition is defined at d = 1000
    (the base's own runs) and 2000 and at every k (d = 1000), not at d = 250, 500."""
    cfg = default_config()
    runs = fa.sweep_decomposed_runs(cfg, "fa")
    got = {(r["dataset"], r["supervision"], r["seed"]) for r in runs}
    dss = ["clusters_d1000", "clusters_d1000@d=2000", "clusters_d1000@k=2",
           "clusters_d1000@k=4", "clusters_d1000@k=20"]  # fmt: skip
    assert got == {(ds, sup, s) for ds in dss for sup in ("binary", "multiclass") for s in (0, 1)}
    assert {r["model"] for r in runs} == {"two_layer_m5"}  # never the hand-built reference
    cfg["studies"]["fa"]["scaling"]["decompose"] = False
    assert fa.sweep_decomposed_runs(cfg, "fa") == []


def test_sweep_decompose_is_where_it_is_defined_and_a_sweep_without_such_a_variant_is_valid():
    # the default (true) decomposes where the decomposition is defined; a sweep with no
    # such variant, or a model without one, is valid and decomposes nothing (the d-trend
    # lambda claims then read not run, saying so), never a config error by default
    raw = _raw()
    raw["studies"]["fa"]["scaling"]["sweeps"] = {"d": [250, 500]}
    cfg = _validate(raw)
    assert cfg["studies"]["fa"]["scaling"]["decompose"] is True  # the default
    assert fa.sweep_decomposed_runs(cfg, "fa") == []


def _curves(radius_of) -> pd.DataFrame:
    """Worst-case curves whose robust accuracy falls from 1 to 0 between r - 1 and r + 1 (the
    50 % point is r) on an eps grid of step 0.5."""
    rows = []
    eps = np.arange(0, 100.5, 0.5)
    for (ds, sup, ro, seed), r in radius_of.items():
        acc = np.clip((r + 1 - eps) / 2, 0, 1)
        for e, a in zip(eps, acc, strict=True):
            rows.append(
                dict(
                    dataset=ds,
                    model="m",
                    optimizer="gd",
                    supervision=sup,
                    seed=seed,
                    readout=ro,
                    attack="worst",
                    eps=e,
                    robust_acc=a,
                )  # fmt: skip
            )
    return pd.DataFrame(rows)


def test_scaling_table_and_slopes_by_hand():
    # binary radius = 2 sqrt(d) (slope 1/2 in d), k-class argmax radius = 4 d^(1/4) (slope 1/4)
    datasets = {f"b@d={d}": {"d": d, "k": 10} for d in (16, 256)}
    runs = {}
    for seed in (0, 1):
        for d in (16, 256):
            runs[(f"b@d={d}", "binary", "argmax", seed)] = 2 * math.sqrt(d)
            runs[(f"b@d={d}", "multiclass", "argmax", seed)] = 4 * d**0.25
    table = scaling_table(_curves(runs), datasets, {"d": list(datasets)}, {"m": None})
    row = table[(table.label == "binary") & (table.d == 256)].iloc[0]
    assert row.critical_radius == pytest.approx(32.0)
    assert row.half_sqrt_d == 8.0 and row.sqrt_half_d == pytest.approx(math.sqrt(128))
    assert row.sqrt_d_over_k == pytest.approx(math.sqrt(25.6))
    slopes = scaling_slopes(table).set_index("label")
    assert slopes.loc["binary", "slope"] == pytest.approx(0.5)
    assert slopes.loc["multiclass", "slope"] == pytest.approx(0.25)
    assert slopes.loc["multiclass", "slope.seed_std"] == pytest.approx(0.0)
    assert slopes.loc["binary", "values"] == 2


def test_scaling_table_joins_each_nets_final_lambdas_by_run_not_readout():
    """The decomposed nets' summaries join every readout row of their run; a run without a
    summary (d = 16: n_train > d, not decomposed) and a missing or null key give NaN."""
    from ibrobust.studies.feature_averaging.measures import SWEEP_LAMBDA_COLUMNS
    from ibrobust.studies.feature_averaging.scaling import LAMBDA_COLUMNS

    assert tuple(LAMBDA_COLUMNS) == SWEEP_LAMBDA_COLUMNS  # what the d-trend claims read
    datasets = {f"b@d={d}": {"d": d, "k": 10} for d in (16, 256)}
    runs = {(f"b@d={d}", sup, ro, 0): 2.0 for d in (16, 256) for sup in ("binary", "multiclass")
            for ro in ("sum", "argmax")}  # fmt: skip
    tag = {"dataset": "b@d=256", "model": "m", "optimizer": "gd", "seed": 0}
    decs = [
        {**tag, "supervision": "binary", "fa_index_final": 0.8, "other_class_ratio_final": 0.1,
         "decoupling_ratio_final": None},
        {**tag, "supervision": "multiclass", "fa_index_final": 0.0,
         "other_class_ratio_final": 0.9, "decoupling_ratio_final": 0.3},
    ]  # fmt: skip
    table = scaling_table(
        _curves(runs), datasets, {"d": list(datasets)}, {"m": None}, decompositions=decs
    )
    big = table[table.d == 256].set_index(["supervision", "readout"])
    assert len(big) == 4
    for ro in ("sum", "argmax"):
        assert big.loc[("binary", ro), "fa_index"] == 0.8
        assert big.loc[("binary", ro), "other_class_ratio"] == 0.1
        assert math.isnan(big.loc[("binary", ro), "decoupling_ratio"])
        assert big.loc[("multiclass", ro), "decoupling_ratio"] == 0.3
    assert table[table.d == 16][list(LAMBDA_COLUMNS)].isna().all().all()
    bare = scaling_table(_curves(runs), datasets, {"d": list(datasets)}, {"m": None})
    assert not set(LAMBDA_COLUMNS) & set(bare.columns)  # no decompositions: no columns


def test_only_studies_reason_says_so():
    from ibrobust.ledger.table import build_ledger, study_outputs

    cfg = copy.deepcopy(default_config())
    cfg["only_studies"] = ["price_linear"]
    rows = build_ledger(study_outputs(cfg, results="/nonexistent"))
    fa_rows = rows[rows.study == "fa"]
    assert set(fa_rows.reason) == {
        "not in only_studies ['price_linear'] (this invocation builds only those)"
    }
