"""Pre-registration the ledger shows: for every claim, whether its rule changed after a
committed ledger already held its number (*revised after the result*).

The record is computed from git, never typed: the committed ledgers (``docs/ledger/*.csv``
in every commit that touched them; ``current.csv`` and ``before-*.csv`` are the default
config's ledgers and give the rule history through their columns ``strong_lo``,
``strong_hi``, ``weak_lo``, ``weak_hi``; every committed ledger, also a reproduce or scale
one, counts as holding a claim's number when it gives it a verdict on a measurement) and the
claims as the working tree declares them (:func:`current_rules`, the default config's
studies). A claim's rule *changed after* the last committed default ledger whose rule for it
differs from today's; the change lies in the commits after that ledger that touched the
claim's study package (``changed_in``: its claim file ``claims.yaml``, whose commit is the
rule's pre-registration, the measures it names and the paper's numbers they read), up to the first committed ledger with today's rule
(or HEAD). It is *revised after the result* when that ledger, or an earlier committed one,
held its number. ``ibrobust claims prereg`` writes the record (docs/ledger/preregistration.csv);
the ledger rule reads it (:func:`revised_notes`) and marks the rows in the CSV, md and HTML
ledgers; tests/unit/test_claims_prereg.py recomputes it and fails if it drifts.
"""

from __future__ import annotations

import io
import math
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import yaml

from ibrobust.claims.verdicts import JUDGED
from ibrobust.kinds import STUDIES
from ibrobust.ledger.table import CLAIMS, study_outputs

LEDGERS = "docs/ledger"
RECORD = f"{LEDGERS}/preregistration.csv"
BOUNDS = ("strong_lo", "strong_hi", "weak_lo", "weak_hi")
RECORD_COLUMNS = [
    "id",
    "form",
    "rule",
    "rule_changed_after",
    "previous_rule",
    "changed_in",
    "measure_changed",
    "known_then",
    "revised_after_result",
]

Rule = tuple  # (strong_lo, strong_hi, weak_lo, weak_hi, measure): the rule and what it reads


@dataclass(frozen=True)
class Seen:
    """One committed ledger: its commit (short hash), file, whether it is the default
    config's (its rules are the rule history), and per claim id its rules and, if judged,
    the first judged row's verdict and value."""

    commit: str
    file: str
    default: bool
    rules: Mapping[str, frozenset[Rule]]
    numbers: Mapping[str, str]


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=repo, check=True, capture_output=True, text=True
    ).stdout


def _rule(values, measure: str) -> Rule:
    return (*(float(f"{float(v):.6g}") for v in values), " ".join(str(measure).split()))


def _seen(commit: str, file: str, text: str) -> Seen:
    df = pd.read_csv(io.StringIO(text), keep_default_na=False)
    name = Path(file).name
    default = name == "current.csv" or name.startswith("before-")
    rules: dict[str, set[Rule]] = {}
    if all(c in df for c in (*BOUNDS, "measure")):
        for cid, g in df.groupby("id", sort=False):
            rules[str(cid)] = {
                _rule(r[:4], r[4]) for r in g[[*BOUNDS, "measure"]].itertuples(index=False)
            }
    numbers: dict[str, str] = {}
    judged = df[df["verdict"].isin(JUDGED)] if "verdict" in df else df.iloc[0:0]
    for _, r in judged.iterrows():
        mean = pd.to_numeric(r.get("ours_mean", ""), errors="coerce")
        if str(r["id"]) not in numbers and not (isinstance(mean, float) and math.isnan(mean)):
            numbers[str(r["id"])] = f"{r['verdict']} {float(mean):.4g} ({r['study']})"
    return Seen(commit, file, default, {k: frozenset(v) for k, v in rules.items()}, numbers)


def history(repo: Path) -> list[Seen]:
    """Every committed ledger, oldest commit first; within a commit the ``before-*`` ledgers
    (snapshots of an earlier state) first. A default ledger that repeats an earlier one's
    rules and numbers (a ``before-*`` snapshot committed later) is that earlier state, not a
    new one: it is left out, so the earlier commit is the one that held the numbers."""
    out: list[Seen] = []
    states: list[tuple] = []
    log = _git(repo, "log", "--reverse", "--format=%h", "--", f"{LEDGERS}/*.csv")
    for commit in log.split():
        files = _git(repo, "show", "--name-only", "--format=", commit, "--", f"{LEDGERS}/*.csv")
        names = sorted(files.split(), key=lambda f: (not Path(f).name.startswith("before-"), f))
        for f in names:
            try:
                text = _git(repo, "show", f"{commit}:{f}")
            except subprocess.CalledProcessError:  # deleted in that commit
                continue
            seen = _seen(commit, f, text)
            state = (dict(seen.rules), dict(seen.numbers))
            if Path(f).name.startswith("before-") and state in states:
                continue
            if seen.default:
                states.append(state)
            out.append(seen)
    return out


def current_rules(config: Mapping) -> tuple[dict[str, frozenset[Rule]], dict, dict]:
    """Per claim id of the config's studies (scale rungs aside): its rules, form and study
    package, as the working tree declares them."""
    rules: dict[str, set[Rule]] = {}
    idle: dict[str, set[Rule]] = {}  # declarations in studies not designed to judge the claim
    forms: dict[str, str] = {}
    package: dict[str, str] = {}
    for so in study_outputs(config):
        if "@" in so.ctx.name:
            continue
        for c in CLAIMS[so.kind].claims(so.ctx):
            judged = c.not_applicable is None or not c.not_applicable(so.ctx)
            into = rules if judged else idle
            into.setdefault(c.id, set()).add(_rule((*c.rule.strong, *c.rule.weak), c.measure))
            forms[c.id] = c.form
            package[c.id] = STUDIES.module_name(so.kind).replace(".", "/")
    # a claim's rule is the one of the studies that judge it (one verdict per claim; e.g. the
    # limit claims' weak bound follows each study's eps grid), else of those that declare it
    rules = {k: rules.get(k) or idle[k] for k in forms}
    return {k: frozenset(v) for k, v in rules.items()}, forms, package


def _text(rules: frozenset[Rule]) -> str:
    def iv(lo: float, hi: float) -> str:
        return f"[{lo:g}, {hi:g}]"

    bounds = dict.fromkeys(f"strong {iv(a, b)}, weak {iv(c, d)}" for a, b, c, d, _ in
                           sorted(rules, key=str))  # fmt: skip
    return " | ".join(bounds)


# claims declared after their number was visible (git shows no earlier rule for them)
SEEN_BEFORE_DECLARED: dict[str, str] = yaml.safe_load(
    (Path(__file__).with_name("seen_before_declared.yaml")).read_text()
)


# commits that rewrote claim definitions, rules unchanged, after a ledger held their numbers
REWRITTEN_AFTER_RESULT: dict[str, dict] = yaml.safe_load(
    (Path(__file__).with_name("rewritten_after_result.yaml")).read_text()
)


def _rewritten(row: dict, cid: str, before: Mapping[str, list[Seen]]) -> dict:
    """``row`` with the rewrites of :data:`REWRITTEN_AFTER_RESULT` that touched ``cid``: each
    commit joins ``changed_in``; a row not yet revised becomes so where a ledger committed
    before the rewrite (``before``: rewrite commit -> those ledgers) held the claim's number."""
    commits = [c for c, e in REWRITTEN_AFTER_RESULT.items() if cid in e["claims"]]
    known = [f"{s.numbers[cid]} in {s.file} at {s.commit}"
             for c in commits for s in before[c] if cid in s.numbers]  # fmt: skip
    if not commits or not known:
        return row
    changed = row["changed_in"].split()
    row = row | dict(changed_in=" ".join(changed + [c for c in commits if c not in changed]))
    if row["revised_after_result"] == "no":
        what = "; ".join(REWRITTEN_AFTER_RESULT[c]["what"] for c in commits)
        row |= dict(rule_changed_after=f"its definition's rewrite ({what})",
                    previous_rule=row["rule"], known_then=known[-1],
                    revised_after_result="yes")  # fmt: skip
    return row


def preregistration(config: Mapping, repo: Path) -> pd.DataFrame:
    """The record (:data:`RECORD_COLUMNS`), one row per claim id, in the config's order."""
    seen = history(repo)
    rules, forms, package = current_rules(config)
    before = {}  # rewrite commit -> the committed ledgers that precede it
    for c in REWRITTEN_AFTER_RESULT:
        ancestors = {h[:7] for h in _git(repo, "rev-list", c).split()}
        before[c] = [s for s in seen if s.commit[:7] in ancestors]
    rows = []
    for cid, now in rules.items():
        ruled = [(i, s) for i, s in enumerate(seen) if s.default and cid in s.rules]
        differ = [(i, s) for i, s in ruled if s.rules[cid] != now]
        row = dict.fromkeys(RECORD_COLUMNS, "") | dict(
            id=cid, form=forms[cid], rule=_text(now), revised_after_result="no"
        )
        if differ:
            i, last = differ[-1]
            after = [s for j, s in ruled if j > i and s.rules[cid] == now]
            end = after[0].commit if after else "HEAD"
            window = _git(repo, "log", "--reverse", "--format=%h", f"{last.commit}..{end}",
                          "--", f"src/{package[cid]}")  # fmt: skip
            known = [f"{s.numbers[cid]} in {s.file} at {s.commit}"
                     for s in seen[: i + 1] if cid in s.numbers]  # fmt: skip
            if last.rules[cid] != now and _text(last.rules[cid]) == _text(now):
                note = "the measure changed"
            else:
                note = ""
            row |= dict(
                measure_changed=note,
                rule_changed_after=f"{last.file} at {last.commit}",
                previous_rule=_text(last.rules[cid]),
                changed_in=" ".join(window.split()),
                known_then=known[-1] if known else "",
                revised_after_result="yes" if known else "no",
            )
        elif cid in SEEN_BEFORE_DECLARED:  # a new claim whose number was already visible
            row |= dict(
                rule_changed_after="its declaration",
                previous_rule="none (a new claim)",
                known_then=SEEN_BEFORE_DECLARED[cid],
                revised_after_result="yes",
            )
        rows.append(_rewritten(row, cid, before))
    return pd.DataFrame(rows, columns=RECORD_COLUMNS)


def revised_notes(path: str | Path = RECORD) -> dict[str, str]:
    """Claim id -> the ledger's *revised after the result* note, from the committed record
    (empty where the file is absent: a checkout without it marks nothing)."""
    p = Path(path)
    if not p.exists():
        return {}
    df = pd.read_csv(p, keep_default_na=False)
    out = {}
    for _, r in df[df["revised_after_result"] == "yes"].iterrows():
        out[r["id"]] = (
            f"revised after the result: the rule ({r['previous_rule']} -> {r['rule']}) changed "
            f"after {r['rule_changed_after']}, which held {r['known_then']}; changed in "
            f"{r['changed_in'] or 'the working tree'}"
        )
    return out
