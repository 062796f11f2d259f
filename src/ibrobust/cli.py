"""``ibrobust``: the project's helper commands (the ``[project.scripts]`` entry point).

    ibrobust claims diff BEFORE.csv AFTER.csv [--format md|csv] [--all]
    ibrobust claims excerpt LEDGER.csv [--rows 8] [--readme README.md]
    ibrobust claims render LEDGER.csv [--md OUT.md] [--html OUT.html]
    ibrobust claims prereg [--check] [--repo .]
    ibrobust claims docs [--check] [--repo .]
    ibrobust claims sweep BASE.csv [SWEEP.csv ...] --overlay configs/sweep_*.yaml ...
    ibrobust config docs [--check]
    ibrobust config check FILE...
    ibrobust sync [--tracking-uri URI] [--experiment NAME] ...

A thin adapter: each command is one small function that imports the library code it calls
(so a module that moves changes one line) and returns the exit status. ``sync`` imports
MLflow, which the library never does: it runs ``workflow_scripts/_tracking/sync.py`` of
the checkout this package was installed from. Also ``python -m ibrobust.cli``.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

SYNC = Path("workflow_scripts") / "_tracking" / "sync.py"  # in the package's checkout
CONFIG_DOC = Path("docs") / "config.md"


def claims_diff(a: argparse.Namespace) -> int:
    from ibrobust.ledger.diff import diff_csv, diff_ledgers, diff_markdown
    from ibrobust.ledger.render import read_ledger

    names = (str(a.before), str(a.after))
    table = diff_ledgers(read_ledger(a.before), read_ledger(a.after), names)
    if a.format == "csv":
        sys.stdout.write(diff_csv(table, show_unchanged=a.all))
    else:
        sys.stdout.write(diff_markdown(table, names, show_unchanged=a.all))
    return 0


def claims_excerpt(a: argparse.Namespace) -> int:
    from ibrobust.ledger.render import full_table_name, read_ledger, readme_excerpt, splice_excerpt

    excerpt = readme_excerpt(read_ledger(a.ledger), max_rows=a.rows, full=full_table_name(a.ledger))
    if a.readme is None:
        sys.stdout.write(excerpt)
        return 0
    a.readme.write_text(splice_excerpt(a.readme.read_text(), excerpt, str(a.readme)))
    print(f"{a.readme}: claims excerpt regenerated from {a.ledger}")
    return 0


def claims_render(a: argparse.Namespace) -> int:
    from ibrobust.ledger.render import ledger_html, ledger_markdown, read_ledger
    from ibrobust.ledger.table import with_restored_quotes

    df = with_restored_quotes(read_ledger(a.ledger))
    md, html = a.md or a.ledger.with_suffix(".md"), a.html or a.ledger.with_suffix(".html")
    md.write_text(ledger_markdown(df))
    html.write_text(ledger_html(df))
    print(f"{md}, {html}: rendered from {a.ledger}")
    return 0


def claims_carry(a: argparse.Namespace) -> int:
    from ibrobust.io import save_csv
    from ibrobust.ledger.carry import carry
    from ibrobust.ledger.render import ledger_html, ledger_markdown, read_ledger

    out, log = carry(read_ledger(a.ledger), read_ledger(a.earlier), a.name or str(a.earlier))
    target = a.output or a.ledger
    save_csv(target, out)
    target.with_suffix(".md").write_text(ledger_markdown(out))
    target.with_suffix(".html").write_text(ledger_html(out))
    for line in log:
        print(line, file=sys.stderr)
    print(
        f"{target} (.md, .html): {sum('carried,' in x for x in log)} rows carried", file=sys.stderr
    )
    return 0


def checkout_config(repo: Path) -> dict:
    """The checkout's config.yaml validated (defaults filled), as the workflow plans from it."""
    import yaml

    from ibrobust.config import load_schema, validate_config

    cfg = yaml.safe_load((repo / "config.yaml").read_text())
    return validate_config(cfg, load_schema(repo / "schemas" / "config.schema.yaml"))


def claims_prereg(a: argparse.Namespace) -> int:
    from ibrobust.ledger.prereg import RECORD, preregistration

    table = preregistration(checkout_config(a.repo), a.repo)
    text = table.to_csv(index=False)
    out = a.repo / RECORD
    if a.check:
        if out.is_file() and out.read_text() == text:
            return 0
        print(f"{out} is not what `ibrobust claims prereg` computes from git: regenerate it")
        return 1
    out.write_text(text)
    n = int((table["revised_after_result"] == "yes").sum())
    print(f"{out}: {len(table)} claims, {n} revised after the result")
    return 0


def claims_docs(a: argparse.Namespace) -> int:
    from ibrobust.ledger.claim_docs import written

    pages = written(checkout_config(a.repo), a.repo)
    stale = [p for p, text in pages.items() if p.read_text(encoding="utf-8") != text]
    if a.check:
        for p in stale:
            print(f"{p}: its claims table is not what `ibrobust claims docs` generates")
        return 1 if stale else 0
    for p in stale:
        p.write_text(pages[p], encoding="utf-8")
    print(f"{len(pages)} study pages, {len(stale)} rewritten")
    return 0


def sweep_config(base: Path, overlays: Sequence[Path]) -> tuple[dict, dict[str, str]]:
    """The validated config of ``base`` with the sweep ``overlays`` merged as Snakemake
    merges --configfile (nested mappings key by key, later files win), and each overlay
    study -> the overlay declaring it."""
    from ibrobust.config import load_schema, validate_config
    from ibrobust.config.docs import SCHEMA
    from ibrobust.config.overlay import load_file

    def merged(a: dict, b: dict) -> dict:
        out = dict(a)
        for k, v in b.items():
            out[k] = (
                merged(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
            )
        return out

    cfg = load_file(base)
    where: dict[str, str] = {}
    for f in overlays:
        doc = load_file(f) or {}
        where.update({s: str(f) for s in doc.get("studies", {})})
        cfg = merged(cfg, doc)
    return validate_config(cfg, load_schema(SCHEMA)), where


def claims_sensitivity(a: argparse.Namespace) -> int:
    import pandas as pd

    from ibrobust.claims.verdicts import JUDGED
    from ibrobust.io import save_csv
    from ibrobust.ledger import sensitivity as sv
    from ibrobust.ledger.render import ledger_html, ledger_markdown, read_ledger

    cfg, where = sweep_config(a.config, a.overlay)
    sibs = sv.siblings(cfg, list(where))
    base = read_ledger(a.base)
    sweep = pd.concat([read_ledger(f) for f in a.sweep]) if a.sweep else base.iloc[:0]
    ran = set(sweep[sweep["verdict"].isin(JUDGED)]["study"]) & set(sibs)
    profile = sv.profile_cpu_s(pd.read_csv(a.profile)) if a.profile else {}
    costs = sv.cost_table(sibs, profile, ran, where)
    level = float(base["level"].iloc[0]) if len(base) else 0.95
    recorded, notes = {}, []
    for f in a.recorded:
        rows, rsibs, why = sv.recorded_rows(pd.read_csv(f), base, level)
        sweep = pd.concat([sweep, rows]) if len(sweep) else rows
        recorded.update(rsibs)
        notes += [f"{f}: {w}" for w in why]
    judged = {s: sibs[s] for s in ran} | recorded
    table = sv.sensitivity(base, sweep, judged)
    why_not = sv.pending_reasons(costs)
    for study in {s.base for s in judged.values()}:  # siblings ran, none judges the row
        cuts = sorted({c.key for s in judged.values() if s.base == study for c in s.cuts})
        text = "no sibling that ran judges it" + (
            f" (their cuts: {', '.join(cuts)})" if cuts else ""
        )
        why_not[study] = f"{text}; {why_not[study]}" if study in why_not else text
    annotated = sv.annotate(base, table, why_not)
    text = sv.sensitivity_markdown(annotated, table, costs, recorded=sorted(a.recorded))
    if a.md is None:
        sys.stdout.write(text)
    else:
        a.md.write_text(text)
    if a.csv is not None:
        save_csv(a.csv, table)
    if a.ledger is not None:
        save_csv(a.ledger.with_suffix(".csv"), annotated)
        a.ledger.with_suffix(".md").write_text(ledger_markdown(annotated))
        a.ledger.with_suffix(".html").write_text(ledger_html(annotated))
    for n in notes:
        print(n, file=sys.stderr)
    flagged = annotated["setting_dependent"].astype(str)
    print(
        f"{len(sibs)} siblings ({len(ran)} ran); setting-dependent: "
        f"{(flagged == 'True').sum()} yes, {(flagged == 'False').sum()} no",
        file=sys.stderr,
    )
    return 0


def config_docs(a: argparse.Namespace) -> int:
    from ibrobust.config import load_schema
    from ibrobust.config.docs import SCHEMA, render

    text = render(load_schema(SCHEMA))
    if not a.check:
        sys.stdout.write(text)
        return 0
    if CONFIG_DOC.is_file() and CONFIG_DOC.read_text() == text:
        print(f"{CONFIG_DOC}: up to date")
        return 0
    state = "is stale" if CONFIG_DOC.is_file() else f"is missing (in {Path.cwd()})"
    print(f"{CONFIG_DOC} {state}: ibrobust config docs > {CONFIG_DOC}", file=sys.stderr)
    return 1


def config_check(a: argparse.Namespace) -> int:
    from ibrobust.config.overlay import main as check_overlays

    return check_overlays([str(f) for f in a.files])


def sync(argv: Sequence[str]) -> int:
    """Run the checkout's sync script (run records -> MLflow) with this interpreter."""
    import ibrobust

    package = Path(ibrobust.__file__).resolve().parent
    script = package.parents[1] / SYNC
    if not script.is_file():
        print(
            f"ibrobust sync: no {SYNC} beside this ibrobust ({package}; looked for "
            f"{script}): the sync imports MLflow, so it lives in the workflow checkout, and "
            "this package was installed without one. Install it from a checkout "
            "(pip install -e CHECKOUT) or run python workflow_scripts/_tracking/sync.py "
            "in the checkout.",
            file=sys.stderr,
        )
        return 1
    return subprocess.run([sys.executable, str(script), *argv], check=False).returncode


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="ibrobust", description="Helper commands of the ibrobust workflow."
    )
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")
    claims = _group(
        sub, "claims", "compare ledgers; render one; the README's ledger excerpt; sweeps"
    )
    d = _command(claims, "diff", claims_diff, "what changed between two ledger CSVs")
    d.add_argument("before", type=Path, help="the earlier ledger (claims.csv)")
    d.add_argument("after", type=Path, help="the later ledger")
    d.add_argument("--format", choices=("md", "csv"), default="md", help="default: md")
    d.add_argument("--all", action="store_true", help="list the unchanged rows too")
    r = _command(claims, "prereg", claims_prereg, "the pre-registration record, from git")
    r.add_argument("--repo", type=Path, default=Path("."), help="the checkout (default .)")
    r.add_argument("--check", action="store_true", help="exit 1 if the committed record drifts")
    g = _command(claims, "docs", claims_docs, "the claim tables of docs/studies/, from claims.yaml")
    g.add_argument("--repo", type=Path, default=Path("."), help="the checkout (default .)")
    g.add_argument("--check", action="store_true", help="exit 1 if a committed table differs")
    e = _command(claims, "excerpt", claims_excerpt, "the README's short ledger table")
    e.add_argument("ledger", type=Path, help="claims.csv written by `snakemake claims`")
    e.add_argument("--rows", type=int, default=8, help="claims shown (default 8)")
    e.add_argument("--readme", type=Path, help="splice between its claims-excerpt markers")
    r = _command(claims, "render", claims_render, "a ledger CSV's markdown and HTML pages again")
    r.add_argument("ledger", type=Path, help="claims.csv written by `snakemake claims`")
    r.add_argument("--md", type=Path, help="default: the CSV's path with .md")
    r.add_argument("--html", type=Path, help="default: the CSV's path with .html")
    s = _command(claims, "sweep", claims_sensitivity,
                 "is each verdict the same across the settings a sweep varies?")  # fmt: skip
    s.add_argument("base", type=Path, help="the base ledger (e.g. docs/ledger/current.csv)")
    s.add_argument("sweep", type=Path, nargs="*", help="the siblings' ledgers (claims_sweep)")
    s.add_argument("--overlay", type=Path, nargs="+", required=True,
                   help="the sweep overlays (configs/sweep_*.yaml), run or not")  # fmt: skip
    s.add_argument("--config", type=Path, default=Path("config.yaml"), help="default: config.yaml")
    s.add_argument("--profile", type=Path, help="a job profile (benchmarks/profiles/*.csv)")
    s.add_argument("--recorded", type=Path, nargs="*", default=[],
                   help="siblings measured earlier, as numbers (configs/sweep_*.csv)")  # fmt: skip
    s.add_argument("--md", type=Path, help="write the table here (default: stdout)")
    s.add_argument("--csv", type=Path, help="write the per-sibling comparison here")
    s.add_argument("--ledger", type=Path, help="write the flagged ledger as PREFIX.csv/.md/.html")
    k = _command(claims, "carry", claims_carry,
                 "measure a ledger's output-absent rows from an earlier ledger")  # fmt: skip
    k.add_argument("ledger", type=Path, help="the new ledger (claims.csv)")
    k.add_argument("earlier", type=Path, help="the ledger whose measurements it keeps")
    k.add_argument("--name", help="how the rows' notes name the earlier ledger")
    k.add_argument("-o", "--output", type=Path, help="default: overwrite LEDGER (.csv/.md/.html)")
    config = _group(sub, "config", "the configuration reference; checking config files")
    c = _command(config, "docs", config_docs, "print docs/config.md, generated from the schema")
    c.add_argument("--check", action="store_true", help="exit 1 if ./docs/config.md differs")
    c = _command(config, "check", config_check, "check overlay files strictly (YAML, keys)")
    c.add_argument("files", nargs="+", type=Path, metavar="FILE")
    sub.add_parser(
        "sync",
        add_help=False,
        help="sync the run records under results/logs to MLflow (`ibrobust sync --help`)",
    )
    return p


def _group(sub: argparse._SubParsersAction, name: str, help: str) -> argparse._SubParsersAction:
    g = sub.add_parser(name, help=help, description=help)
    return g.add_subparsers(dest="subcommand", required=True, metavar="COMMAND")


def _command(
    sub: argparse._SubParsersAction,
    name: str,
    run: Callable[[argparse.Namespace], int],
    help: str,
) -> argparse.ArgumentParser:
    c = sub.add_parser(name, help=help, description=help)
    c.set_defaults(run=run)
    return c


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["sync"]:  # every later argument is the sync script's own
        return sync(argv[1:])
    a = parser().parse_args(argv)
    try:
        return a.run(a)
    except (OSError, ValueError) as e:  # a file that cannot be read, a malformed ledger
        print(f"ibrobust {a.command} {a.subcommand}: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
