"""Shared toy models for the attack tests: tiny MLPs on separable 8x8 'images' in [0, 1]
(the data and the training: tests/unit/toy_models.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from torch import nn
from toy_models import ToyImages, toy_images, train_toy


@pytest.fixture(scope="session")
def toy_binary_net() -> nn.Module:
    return train_toy("binary")


@pytest.fixture(scope="session")
def toy_fine_net() -> nn.Module:
    return train_toy("fine")


@pytest.fixture(scope="session")
def toy_test() -> ToyImages:
    return toy_images(40, "test")


@pytest.fixture(scope="session")
def empty_store(tmp_path_factory) -> Path:
    """A migrated, empty SQLite MLflow store, made once (creating one takes seconds); tests
    copy it (many processes creating one fresh store at once fail)."""
    from mlflow.tracking import MlflowClient

    db = tmp_path_factory.mktemp("store") / "mlflow.db"
    MlflowClient(tracking_uri=f"sqlite:///{db}").search_experiments()
    return db
