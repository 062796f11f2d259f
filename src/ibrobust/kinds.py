"""The plug-in mechanism: five registries of kinds (study, attack, model, dataset, optimizer).

A *kind* is one module (or package), its schema fragment beside it (``c.schema.yaml``
beside module ``a.b.c``, ``c/schema.yaml`` in package ``a.b.c``) and one line in its
registry's table below. The fragment is the JSON schema of one config entry of the kind
(settings, defaults, required ones, descriptions, enums, ranges; ``additionalProperties:
false``); its ``x-kind`` block declares the kind's *capabilities*, the answers shared code
would otherwise get by comparing kind names ("built, not trained?", "reads data_root?",
"which training path?"), from its registry's vocabulary (name -> default; an unknown name
is an error naming the fragment). Every entry registry knows ``check``: the module's
``check(entry, where)`` validates values beyond the schema (importing without torch).

Fragments are read without importing the module: the Snakefile validates, plans and reads
capabilities while parsing (this module imports nothing heavy); :meth:`Registry.load`
imports a module where a job runs it, and the job's code hash covers exactly that.
"""

from __future__ import annotations

import copy
import importlib
import importlib.util
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any, Protocol

import yaml

from ibrobust.errors import reported_at

if TYPE_CHECKING:  # the Snakefile reads this module: no torch at run time
    import numpy as np
    import torch

CAPABILITIES = "x-kind"  # the fragment's block of capabilities (not a JSON-schema keyword)


@dataclass(frozen=True)
class Registry:
    """One registry: its kinds (``table``: kind -> dotted module, the one line per kind) and
    the capabilities its kinds may declare (``vocabulary``: name -> default)."""

    what: str  # "model": how messages name one kind
    section: str  # "models": the config section whose entries are of these kinds
    table: Mapping[str, str]
    vocabulary: Mapping[str, Any]
    # capability -> what is wrong with a declared value (None: fine), beyond its type
    checks: Mapping[str, Callable[[Any], str | None]] = field(default_factory=dict)

    def kinds(self) -> list[str]:
        return list(self.table)

    def module_name(self, kind: str) -> str:
        """The dotted module of ``kind`` (ValueError naming it and the known kinds)."""
        try:
            return self.table[kind]
        except (KeyError, TypeError):
            raise ValueError(self.unknown(kind)) from None

    def unknown(self, kind: Any) -> str:
        """What is wrong with ``kind`` when it is not registered."""
        return f"{kind!r} is not {_a(self.what)} kind (known: {sorted(self.table)})"

    def load(self, kind: str) -> ModuleType:
        """Import the module of ``kind`` (only where a job runs it)."""
        return importlib.import_module(self.module_name(kind))

    def fragment(self, kind: str) -> dict:
        """The schema fragment of ``kind``, ``x-kind`` included (a fresh copy)."""
        return copy.deepcopy(_read_fragment(self.module_name(kind)))

    def schema(self, kind: str) -> dict:
        """The JSON schema of one entry of ``kind`` (the fragment without ``x-kind``)."""
        frag = self.fragment(kind)
        frag.pop(CAPABILITIES, None)
        return frag

    def capabilities(self, kind: str) -> dict[str, Any]:
        """The kind's ``x-kind`` block over the vocabulary's defaults."""
        declared = _read_fragment(self.module_name(kind)).get(CAPABILITIES) or {}
        for name, value in declared.items():
            if name not in self.vocabulary:
                problem = f"unknown capability of {_a(self.what)} kind ({sorted(self.vocabulary)})"
            else:
                problem = _type_problem(self.vocabulary[name], value)
            if problem is None and name in self.checks:
                problem = self.checks[name](value)
            if problem is not None:
                path = fragment_path(self.module_name(kind))
                raise ValueError(f"{path}: {CAPABILITIES}.{name}: {problem}, got {value!r}")
        return {**copy.deepcopy(dict(self.vocabulary)), **copy.deepcopy(declared)}

    def capability(self, kind: str, name: str) -> Any:
        if name not in self.vocabulary:
            raise ValueError(f"{name!r} is not a capability of {self.what} kinds")
        return self.capabilities(kind)[name]

    def of(self, entry: Mapping) -> dict[str, Any]:
        """The capabilities of a config entry's kind."""
        return self.capabilities(entry.get("kind"))

    def setting(self, entry: Mapping, key: str) -> Any:
        """``entry[key]``, else its kind's default of it (None when neither)."""
        if key in entry:
            return entry[key]
        prop = _read_fragment(self.module_name(entry.get("kind"))).get("properties", {})
        return copy.deepcopy(prop.get(key, {}).get("default"))

    def check_entry(self, entry: Mapping, where: str) -> None:
        """The kind's own value checks of a (default-filled) entry at key path ``where``, when
        it declares them (``x-kind: {check: true}``): ``module.check(entry, where)``, its
        SettingError or ValueError raised as a ConfigError (``ibrobust.errors.reported_at``)."""
        if self.capabilities(entry["kind"]).get("check"):
            with reported_at(where):
                self.load(entry["kind"]).check(entry, where)


def _a(word: str) -> str:
    return f"{'an' if word[0] in 'aeiou' else 'a'} {word}"


def _type_problem(default: Any, value: Any) -> str | None:
    """A declared capability takes its default's type (any type where the default is null)."""
    if (
        default is None
        or (isinstance(value, type(default)) and type(value) is not bool)
        or (type(default) is bool and type(value) is bool)
    ):
        return None
    return f"{_a(type(default).__name__)} like its default {default!r}"


def _trainers_problem(value: list) -> str | None:
    """Each fast training path: {path: a key of TRAINERS, optimizer: {key: [values]}, unset:
    [keys]} (a YAML ``off:`` key would read as false: the key is ``unset``)."""
    for item in value:
        if not isinstance(item, dict) or set(item) - {"path", "optimizer", "unset"}:
            return "a list of {path, optimizer, unset}"
        if item.get("path") not in TRAINERS:
            return f"path must be one of {sorted(TRAINERS)}"
        wanted = item.get("optimizer", {})
        if not isinstance(wanted, dict) or not all(isinstance(v, list) for v in wanted.values()):
            return "optimizer maps a setting to its allowed values (a list)"
        if not isinstance(item.get("unset", []), list):
            return "unset lists settings"
    return None


def fragment_path(module: str) -> Path:
    """The schema fragment beside a module (``c.schema.yaml``) or in a package
    (``c/schema.yaml``), located without importing the module itself."""
    spec = importlib.util.find_spec(module)
    if spec is None or spec.origin is None:
        raise ValueError(f"cannot locate module {module!r}")
    origin = Path(spec.origin)
    if spec.submodule_search_locations is not None:  # a package: its __init__.py
        return origin.parent / "schema.yaml"
    return origin.with_suffix(".schema.yaml")


@cache
def _read_fragment(module: str) -> dict:
    path = fragment_path(module)
    if not path.is_file():
        raise ValueError(f"kind module {module!r} has no schema fragment {path}")
    frag = yaml.safe_load(path.read_text()) or {}
    if not isinstance(frag, dict) or not isinstance(frag.get(CAPABILITIES) or {}, dict):
        raise ValueError(f"{path}: a fragment is a mapping, its {CAPABILITIES} too")
    return frag


# ---- the five registries ---------------------------------------------------------------------
# Every entry registry (not studies: their check(cfg, st, where) is part of the protocol)
# knows ``check``: value checks beyond the schema in the module's check(entry, where).
_CHECK = {"check": False}

STUDIES = Registry(
    "study",
    "studies",
    {
        "feature_averaging": "ibrobust.studies.feature_averaging",
        "feature_averaging_images": "ibrobust.studies.feature_averaging_images",
        "price_linear": "ibrobust.studies.price_linear",
        "prelu": "ibrobust.studies.prelu",
        "attack_audit": "ibrobust.studies.attack_audit",
        "price_nn": "ibrobust.studies.price_nn",
        "margin": "ibrobust.studies.margin",
    },
    {
        "rules": None,  # its rules file under rules/ (the Snakefile includes it)
        "network": False,  # trains through the generic dataset -> train -> analyze/attack rules
    },
)
ATTACKS = Registry(
    "attack",
    "attacks",
    {
        "pgd": "ibrobust.attacks.pgd",
        "universal": "ibrobust.attacks.universal",
        "autoattack": "ibrobust.attacks.autoattack",
        "noise": "ibrobust.attacks.noise",
    },
    {
        **_CHECK,
        "norm": None,  # a fixed threat model; null = the entry's norm (default l2)
        "aims": "task",  # binary (the binary readout's margin) or task (the evaluated task)
        "fine_losses": [],  # the entry's loss values that aim at the fine labels (k-class)
        "needs": [],  # what it needs from the data (a dataset's offers): box, cluster_means
        "binary_task": None,  # on the binary task: {key, default, allowed, hint}
    },
)
MODELS = Registry(
    "model",
    "models",
    {
        "two_layer": "ibrobust.models.two_layer",
        "robust_reference": "ibrobust.models.robust_reference",
        "mlp": "ibrobust.models.mlp",
        "cnn": "ibrobust.models.cnn",
        "fc": "ibrobust.models.fc",
        "resnet18": "ibrobust.models.resnet18",
        "prelu": "ibrobust.models.prelu",
        "homogeneous_cnn": "ibrobust.models.homogeneous_cnn",
    },
    {
        **_CHECK,
        "label": None,  # how figures and tables name it (null: by its supervision)
        "constructed": False,  # built from the data (module.construct), not trained
        "network": True,  # the generic train rule trains it (false: only a study's own loop)
        "inputs": ["flat"],  # the data layouts it takes: flat (n, d), image (n, C, H, W)
        "needs": [],  # what it needs from the data (a dataset's offers): cluster_means
        "homogeneity_degree": None,  # L with f(c theta) = c^L f(theta) (null: not homogeneous)
        "decomposition": False,  # Study FA's lambda decomposition applies (two-layer nets)
        "alignment": False,  # Study PRELU's neuron alignment applies (pReLU weights, p)
        "exact_radii": False,  # module.exact_radius(net, x, y): exact minimal l2 distances
        "trainers": [],  # fast training paths, in order: {path, optimizer: {key: [values]}, unset: [keys]}
    },
    {"trainers": _trainers_problem},
)
DATASETS = Registry(
    "dataset",
    "datasets",
    {
        "clusters": "ibrobust.data.clusters",
        "image": "ibrobust.data.images",
        "teacher": "ibrobust.data.teacher",
    },
    {
        **_CHECK,
        "reads_data_root": False,  # reads files under the config's data_root
        "layout": "flat",  # flat / image: a dataset file of the generic dataset rule; draws:
        # no dataset file, the study draws its training sets itself (Study PRICE-LIN)
        "offers": [],  # what attacks and models may need: box ([0, 1] inputs), cluster_means
    },
)
OPTIMIZERS = Registry(
    "optimizer",
    "optimizers",
    {
        "gd": "ibrobust.optimizers.gd",
        "sgd": "ibrobust.optimizers.sgd",
        "adam": "ibrobust.optimizers.adam",
        "steepest": "ibrobust.optimizers.steepest",
        "diag_gd": "ibrobust.optimizers.diag_gd",
    },
    {
        **_CHECK,
        "trains": "network",  # network (module.train_fields, torch_optimizer) or linear
        # (module.algorithm, erm_fields: Study PRICE-LIN's robust ERM on linear models)
        "full_batch": False,  # every step sees the whole training set
    },
)
# config section -> its registry
REGISTRIES: dict[str, Registry] = {
    r.section: r for r in (STUDIES, ATTACKS, MODELS, DATASETS, OPTIMIZERS)
}

# training path -> module exposing fit_path, a training.protocol.Trainer. A models entry
# names the fast paths it has (capability ``trainers``); any other pair trains by ``network``.
TRAINERS = {
    "gram_gd": "ibrobust.training.full_batch",  # exact fast GD of two-layer nets
    "network": "ibrobust.training.network",  # any net: steepest descent, SGD, Adam
    "prelu": "ibrobust.training.prelu",  # pReLU nets under plain SGD / Adam: manual backward
}
NETWORK = "network"  # the generic path: any net, any network optimizer, robust ERM, curves
CONSTRUCT = "construct"  # a constructed model (capability ``constructed``): not trained


def trainer(model: Mapping, optimizer: Mapping) -> str:
    """The training path of a (models entry, optimizers entry) pair: ``construct`` for a
    constructed model; ``network`` for robust ERM or curves (only the generic loop has them);
    else the first of the model kind's ``trainers`` whose optimizer settings hold (a setting
    the entry leaves out takes its optimizer kind's default); else ``network``."""
    caps = MODELS.of(model)
    if caps["constructed"]:
        return CONSTRUCT
    if robust_or_curves(optimizer):
        return NETWORK
    for path in caps["trainers"]:
        if _holds(path, optimizer):
            return path["path"]
    return NETWORK


def _holds(path: Mapping, optimizer: Mapping) -> bool:
    """Whether an optimizer entry has every setting ``path`` asks for: each key of
    ``optimizer`` among its values, each key of ``unset`` unset (absent, null, 0 or false)."""
    if optimizer.get("kind") not in OPTIMIZERS.table:
        return False

    def value(key: str) -> Any:
        return OPTIMIZERS.setting(optimizer, key)

    wanted = path.get("optimizer", {})
    return all(value(k) in allowed for k, allowed in wanted.items()) and not any(
        value(k) for k in path.get("unset", ())
    )


def load_trainer(path: str) -> ModuleType:
    """The module of a training path of :data:`TRAINERS` (ValueError naming it if unknown)."""
    if path not in TRAINERS:
        raise ValueError(f"{path!r} is not a training path (known: {sorted(TRAINERS)})")
    return importlib.import_module(TRAINERS[path])


def train_modules(model: Mapping, optimizer: Mapping) -> list[str]:
    """The kind and path modules a ``train`` job loads (its code hash covers them): the
    model kind's; the training path's; and the optimizer kind's on the generic path (its
    ``train_fields`` and ``torch_optimizer``)."""
    path = trainer(model, optimizer)
    out = [MODELS.module_name(model["kind"])]
    if path != CONSTRUCT:
        out.append(TRAINERS[path])
    if path == NETWORK:
        out.append(OPTIMIZERS.module_name(optimizer["kind"]))
    return out


def robust_or_curves(optimizer: Mapping) -> bool:
    """True when an optimizer entry asks for robust ERM (``adversarial.eps`` > 0) or for
    curves during training (``eval_every``)."""
    adv = optimizer.get("adversarial") or {}
    return float(adv.get("eps", 0.0)) > 0 or optimizer.get("eval_every") is not None


# ---- what a kind's module exposes (CONTRIBUTING.md: one section per registry) ---------------
class StudyKind(Protocol):
    """A package of :data:`STUDIES` (capabilities ``rules``, ``network``): ``check`` (the
    entry's cross-checks, ConfigError naming the key path) and ``outputs`` (the files
    ``snakemake <name>`` builds; ``default``: the default target's). Optional, with defaults
    from :func:`ibrobust.studies.hook`: ``task(supervision)`` (what counts as correct:
    binary), ``sweeps(st)`` / ``optimizer_sweeps(st)`` ((base, key, values) of the derived
    datasets / optimizers: none), ``parts(cfg, st)`` (the cross products a network study
    trains: the study itself as part "main")."""

    def check(self, cfg: dict, st: dict, where: str) -> None: ...
    def outputs(self, cfg: dict, name: str, default: bool) -> list[str]: ...


class AttackKind(Protocol):
    """A module of :data:`ATTACKS` (capabilities: its policy, :mod:`ibrobust.attacks.policy`):
    ``parse_spec`` (an entry -> settings, ValueError naming a key), ``describe`` (what runs,
    flat), ``run_spec`` ((n,) bool: still correct under ``ctx.task`` at radius ``eps``)."""

    def parse_spec(self, spec: dict) -> Any: ...
    def describe(self, settings: Any) -> dict: ...
    def run_spec(
        self, model: Any, x: Any, y: Any, fine: Any, eps: float, settings: Any, ctx: Any, gen: Any
    ) -> torch.Tensor: ...


class ModelKind(Protocol):
    """A module of :data:`MODELS`: ``build(spec, ctx)`` (a freshly initialised net; a
    constructed kind has ``construct(spec, data)`` instead). Optional hooks:
    ``readout_for(spec, supervision, sign)`` (its heads), ``to_state`` / ``from_state`` (a
    saved format of its own), ``checkpoint_fields(init, checkpoints, last)`` (how its
    iterates are saved), ``exact_radius(net, x, y)`` (capability ``exact_radii``)."""

    def build(self, spec: dict, ctx: Any) -> torch.nn.Module: ...


class DatasetKind(Protocol):
    """A module of :data:`DATASETS`: ``make_dataset`` (layouts flat / image: the arrays and
    meta of the dataset file); ``preflight(entries, data_root)`` (capability
    ``reads_data_root``: problems of its files, one line each); ``check(entry, where)``."""

    def make_dataset(
        self, spec: dict, seed: int, data_root: Any
    ) -> tuple[dict[str, np.ndarray], dict]: ...


class OptimizerKind(Protocol):
    """A module of :data:`OPTIMIZERS`. ``trains: network`` kinds expose
    ``train_fields(entry)`` (``NetTrainConfig`` fields) and ``torch_optimizer(params, cfg)``;
    ``trains: linear`` kinds expose ``algorithm(entry)`` and ``erm_fields(entry)``
    (``RobustERMConfig``)."""
