"""Config validation: command-line coercion and the decomposition's n_train <= d rule."""

from pathlib import Path

import pytest
import yaml

from ibrobust.config import ConfigError, load_schema, validate_config

REPO = Path(__file__).resolve().parents[2]
SCHEMA = load_schema(REPO / "schemas" / "config.schema.yaml")


def default_config() -> dict:
    return yaml.safe_load((REPO / "config.yaml").read_text())


def test_command_line_strings_are_parsed_where_the_schema_wants_another_type():
    cfg = default_config()
    cfg["mlflow"] = "{enabled: false}"  # what `--config mlflow='{enabled: false}'` delivers
    cfg["threads"] = "2"
    out = validate_config(cfg, SCHEMA)
    assert out["mlflow"]["enabled"] is False and out["threads"] == 2
    assert out["mlflow"]["experiment"] == "ibrobust"  # defaults still filled


def test_nested_command_line_strings_are_parsed():
    cfg = default_config()
    cfg["mlflow"] = {"enabled": "false"}  # what `--config 'mlflow={enabled: false}'` delivers
    assert validate_config(cfg, SCHEMA)["mlflow"]["enabled"] is False


def test_unparsable_command_line_value_names_the_key():
    cfg = default_config()
    cfg["threads"] = "two"
    with pytest.raises(ConfigError, match=r"config key threads"):
        validate_config(cfg, SCHEMA)


def test_n_train_above_d_is_rejected_for_feature_averaging():
    cfg = default_config()
    cfg["datasets"]["clusters_d1000"]["n_train"] = 1001
    with pytest.raises(ConfigError, match=r"datasets\.clusters_d1000\.n_train"):
        validate_config(cfg, SCHEMA)


def test_scaling_sweep_may_go_below_n_train():
    """The sweeps' nets are attacked, never lambda-decomposed: d < n_train is fine there."""
    cfg = default_config()
    cfg["studies"]["fa"]["scaling"] = {"dataset": "clusters_d1000", "sweeps": {"d": [500, 1000]}}
    assert validate_config(cfg, SCHEMA)["studies"]["fa"]["scaling"]["sweeps"] == {"d": [500, 1000]}
