"""Optimizer kinds: one module per kind of the config's ``optimizers`` registry
(:data:`ibrobust.kinds.OPTIMIZERS`), its schema fragment beside it.

A kind that trains networks (capability ``trains: network``: ``gd``, ``sgd``, ``adam``)
maps an entry to the fields of :class:`ibrobust.training.network.NetTrainConfig`
(``train_fields``) and builds its torch optimizer (``torch_optimizer``); one that trains
Study PRICE-LIN's linear models (``trains: linear``: ``steepest``, ``diag_gd``) names its
robust-ERM algorithm (``algorithm``) and its :class:`~ibrobust.training.robust_erm.
RobustERMConfig` fields (``erm_fields``). The network kinds' robust-ERM block
(``adversarial``) is :mod:`ibrobust.optimizers.adversarial`, their ``check``. The math lives
in :mod:`ibrobust.updates` and :mod:`ibrobust.training`; these modules only translate
settings, and import without torch (the config validation, the claims ledger and the figure
jobs read them).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

# the settings every network-training kind passes to NetTrainConfig under the same name
NETWORK_KEYS = {
    key: key
    for key in ("stop_loss", "log_every", "n_checkpoints", "loss", "adversarial", "eval_every")
}


def renamed(entry: Mapping[str, Any], keys: Mapping[str, str]) -> dict[str, Any]:
    """The entry's settings named in ``keys`` (entry key -> field), under their field names."""
    return {field: entry[key] for key, field in keys.items() if key in entry}
