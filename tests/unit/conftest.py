"""Shared toy models for the attack tests: tiny MLPs on separable 8x8 'images' in [0, 1]
(the data and the training: tests/unit/toy_models.py)."""

from __future__ import annotations

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
