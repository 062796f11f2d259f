"""Cross-checks the study kinds share (each raises ConfigError naming the key path).

They ask the kinds' capabilities (:mod:`ibrobust.kinds`), never their names: a study needs
datasets of a layout, models that take that layout and are trained (or, as its reference,
constructed), optimizers that train networks, attacks whose needs its data offers.
"""

from __future__ import annotations

from collections.abc import Iterable

from ibrobust.attacks.policy import (
    aims_fine,
    attack_applies,
    attack_norm,
    binary_task_problem,
    grid_attacks,
    needs,
    radius_grids,
)
from ibrobust.errors import ConfigError
from ibrobust.kinds import DATASETS, MODELS, OPTIMIZERS

# how messages name what a dataset offers (a dataset kind's ``offers``)
OFFERS = {"box": "inputs in a box [0, 1] (images)", "cluster_means": "cluster means"}


def check_registry_names(cfg: dict, st: dict, where: str, fields: tuple[str, ...]) -> None:
    for field in fields:
        for i, item in enumerate(st[field]):
            if item not in cfg[field]:
                raise ConfigError(
                    f"config key {where}.{field}[{i}]: {item!r} is not defined under "
                    f"{field} (defined: {sorted(cfg[field])})"
                )


def _kinds_with(reg, test) -> str:
    return ", ".join(k for k in reg.kinds() if test(reg.capabilities(k))) or "none"


def offers(cfg: dict, datasets: Iterable[str]) -> frozenset[str]:
    """What every one of ``datasets`` offers (their kinds' ``offers``, intersected)."""
    sets = [set(DATASETS.of(cfg["datasets"][d])["offers"]) for d in datasets]
    return frozenset(set.intersection(*sets)) if sets else frozenset()


def _offered(missing: Iterable[str]) -> str:
    return " and ".join(OFFERS.get(m, m) for m in sorted(missing))


def check_dataset(
    cfg: dict,
    name: str,
    where: str,
    study: str,
    layouts: tuple[str, ...],
    wants: frozenset[str] = frozenset(),
) -> None:
    """The dataset ``name`` (at key ``where``) is of one of ``layouts`` and offers ``wants``."""
    caps = DATASETS.of(cfg["datasets"][name])
    kind = cfg["datasets"][name]["kind"]
    if caps["layout"] not in layouts:
        raise ConfigError(
            f"config key {where}: {name!r} (kind {kind!r}) has layout {caps['layout']!r}; a "
            f"{study} study needs {' or '.join(layouts)} data (kinds: "
            f"{_kinds_with(DATASETS, lambda c: c['layout'] in layouts)})"
        )
    missing = set(wants) - set(caps["offers"])
    if missing:
        raise ConfigError(
            f"config key {where}: {name!r} (kind {kind!r}) has no {_offered(missing)}; a "
            f"{study} study needs them (kinds: "
            f"{_kinds_with(DATASETS, lambda c: set(wants) <= set(c['offers']))})"
        )


def check_datasets(
    cfg: dict,
    st: dict,
    where: str,
    layouts: tuple[str, ...],
    wants: frozenset[str] = frozenset(),
) -> None:
    """Every dataset of the study is of one of ``layouts`` and offers ``wants``."""
    for i, name in enumerate(st["datasets"]):
        check_dataset(cfg, name, f"{where}.datasets[{i}]", st["kind"], layouts, wants)


def _layouts(cfg: dict, datasets: Iterable[str]) -> set[str]:
    return {DATASETS.of(cfg["datasets"][d])["layout"] for d in datasets}


def check_trained_models(cfg: dict, st: dict, where: str, datasets: Iterable[str]) -> None:
    """Every model of the study is trained by the generic train rule (a constructed one goes
    under ``reference``), takes the layout of the study's ``datasets`` and finds what it
    needs in them."""
    layouts, offered = _layouts(cfg, datasets), offers(cfg, datasets)

    def fits(c: dict) -> bool:
        return c["network"] and not c["constructed"] and layouts <= set(c["inputs"])

    for i, m in enumerate(st["models"]):
        kind = cfg["models"][m]["kind"]
        caps = MODELS.of(cfg["models"][m])
        if caps["constructed"]:
            raise ConfigError(
                f"config key {where}.models[{i}]: {m!r} (kind {kind!r}) is built from the "
                "data, not trained; put it under reference"
            )
        if not fits(caps):
            why = (
                f"takes {caps['inputs']} inputs, not the {' and '.join(sorted(layouts))} data"
                if caps["network"]
                else "is not trained by the generic train rule"
            )
            raise ConfigError(
                f"config key {where}.models[{i}]: {m!r} (kind {kind!r}) {why} of this "
                f"{st['kind']} study (kinds that fit: {_kinds_with(MODELS, fits)})"
            )
        missing = set(caps["needs"]) - offered
        if missing:
            raise ConfigError(
                f"config key {where}.models[{i}]: {m!r} (kind {kind!r}) needs "
                f"{_offered(missing)}; the study's data has none"
            )
    check_matmul(cfg, st, where)


def check_reference(
    cfg: dict, st: dict, where: str, datasets: Iterable[str], exact: bool = False
) -> None:
    """The study's ``reference`` names a constructed model (with exact radii when ``exact``)
    that finds what it needs in ``datasets``."""
    ref = st.get("reference")
    if ref is None:
        return

    def fits(c: dict) -> bool:
        return c["constructed"] and (c["exact_radii"] or not exact)

    if ref not in cfg["models"] or not fits(MODELS.of(cfg["models"][ref])):
        what = "built from the data" + (" with exact radii" if exact else "")
        raise ConfigError(
            f"config key {where}.reference: {ref!r} must name a model {what} (kinds: "
            f"{_kinds_with(MODELS, fits)})"
        )
    wants = set(MODELS.of(cfg["models"][ref])["needs"])
    for i, name in enumerate(datasets):
        missing = wants - set(DATASETS.of(cfg["datasets"][name])["offers"])
        if missing:
            raise ConfigError(
                f"config key {where}.datasets[{i}]: {name!r} (kind "
                f"{cfg['datasets'][name]['kind']!r}) has no {_offered(missing)}, which the "
                f"reference {ref!r} is built from (dataset kinds that have them: "
                f"{_kinds_with(DATASETS, lambda c, m=missing: m <= set(c['offers']))})"
            )


def check_optimizers(
    cfg: dict, st: dict, where: str, trains: str, full_batch: bool | None = None
) -> None:
    """Every optimizer of the study trains ``trains`` (network / linear) models, full batch
    when ``full_batch``."""

    def fits(c: dict) -> bool:
        return c["trains"] == trains and (full_batch is None or c["full_batch"] == full_batch)

    for i, o in enumerate(st["optimizers"]):
        if not fits(OPTIMIZERS.of(cfg["optimizers"][o])):
            kind = cfg["optimizers"][o]["kind"]
            what = f"{'full-batch ' if full_batch else ''}optimizers of {trains} models"
            raise ConfigError(
                f"config key {where}.optimizers[{i}]: {o!r} (kind {kind!r}) is not one of the "
                f"{what} a {st['kind']} study trains with (kinds: {_kinds_with(OPTIMIZERS, fits)})"
            )


def check_matmul(cfg: dict, st: dict, where: str) -> None:
    """``matmul: bf16`` only where the fast pReLU loop trains (ibrobust.kinds.trainer):
    elsewhere it would be silently ignored."""
    from ibrobust.kinds import trainer

    for o in st.get("optimizers", []):
        opt = cfg["optimizers"][o]
        if opt.get("matmul", "fp32") == "fp32":
            continue
        for m in st["models"]:
            if trainer(cfg["models"][m], opt) != "prelu":
                raise ConfigError(
                    f"config key optimizers.{o}.matmul: {opt['matmul']!r} products exist only "
                    f"in the pReLU loop (prelu models under sgd/adam without momentum, "
                    f"weight_decay, stop_loss or n_checkpoints), but {where} trains {m!r} "
                    f"(kind {cfg['models'][m]['kind']!r}) with {o!r} another way; use fp32 there"
                )


def check_attacks(
    cfg: dict, st: dict, where: str, datasets: Iterable[str], binary_task: bool = True
) -> None:
    """Every attack finds what it needs in the study's ``datasets``, aims at labels the study
    trains, and can run on the binary task where that is judged."""
    datasets = list(datasets)
    check_attack_points(cfg, st, where, datasets)
    data = offers(cfg, datasets)
    for i, a in enumerate(st["attacks"]):
        spec = cfg["attacks"][a]
        missing = sorted(needs(spec) - data)
        if missing:
            raise ConfigError(
                f"config key {where}.attacks[{i}]: {a!r} (kind {spec['kind']}) needs "
                f"{_offered(missing)}; the study's data has none"
            )
        if aims_fine(spec) and "multiclass" not in st["supervisions"]:
            raise ConfigError(
                f"config key {where}.attacks[{i}]: {a!r} attacks a fine-label loss "
                f"({spec['loss']}) but the study trains no multiclass model"
            )
        problem = binary_task_problem(spec) if binary_task else None
        if problem:
            raise ConfigError(f"config key {where}.attacks[{i}]: {a!r} {problem}")


def check_attack_points(cfg: dict, st: dict, where: str, datasets: Iterable[str]) -> None:
    """A study attacks at most the test points its datasets have: ``attack_points`` (the
    first N test points; null = all) larger than a dataset's ``n_test`` would attack fewer
    points than the ledger reads it as (it reports the measured count, but the config would
    promise more)."""
    want = st.get("attack_points")
    if want is None:
        return
    for name in datasets:
        have = cfg["datasets"].get(name, {}).get("n_test")
        if have is not None and int(want) > int(have):
            raise ConfigError(
                f"config key {where}.attack_points: {want} is more than the {have} test points "
                f"of dataset {name!r} (config key datasets.{name}.n_test); attack at most "
                f"{have} or draw more test points"
            )


def check_part_attacks(cfg: dict, part: dict, where: str, task) -> None:
    """Every attack has a grid of its norm, and every (supervision, grid) has an attack;
    ``task(supervision)`` is what the study judges a model of that supervision on."""
    grids = radius_grids(part["radii"])
    if "main" not in grids:
        for i, a in enumerate(part["attacks"]):
            norm = attack_norm(cfg["attacks"][a])
            if norm not in grids:
                raise ConfigError(
                    f"config key {where}.attacks[{i}]: {a!r} is an {norm} attack but radii has "
                    f"no {norm} grid (grids: {sorted(grids)})"
                )
    for grid in grids:
        names = grid_attacks(cfg, part["attacks"], grid)
        for sup in part["supervisions"]:
            t = task(sup)
            if not any(attack_applies(cfg["attacks"][a], sup, t) for a in names):
                at = "" if grid == "main" else f".{grid}"
                raise ConfigError(
                    f"config key {where}.radii{at}: no attack of {names or part['attacks']} "
                    f"applies to {sup} models (task {t!r}: the binary task takes "
                    "margin/universal/autoattack, the fine task ce/fine_margin/autoattack)"
                )


def check_optimizer_losses(cfg: dict, part: dict, where: str) -> None:
    """The exponential loss is binary only."""
    if "multiclass" not in part["supervisions"]:
        return
    for i, o in enumerate(part["optimizers"]):
        if cfg["optimizers"][o].get("loss") == "exponential":
            raise ConfigError(
                f"config key {where}.optimizers[{i}]: {o!r} trains with the exponential loss "
                "(binary only) but the half has multiclass supervision"
            )
