"""No shared code compares a kind read against a kind's name: kinds declare capabilities.

The scanner looks for comparisons (``==``, ``!=``, ``in``, ``not in``; against a string, or a
tuple / list / set of strings, or a module constant holding them) between a *kind read* and
the name of a registered kind (:mod:`ibrobust.kinds`: studies, attacks, models, datasets,
optimizers), anywhere outside that kind's own files (its module or package, its schema
fragment, and for a study kind its rules file). A kind read is an expression that reads a
kind: ``x["kind"]``, ``x.get("kind")``, ``x.kind``, a name ``kind`` / ``*_kind``, or an item
of a mapping whose name mentions kinds (``model_kinds[m]``). It also finds the indirect form:
a kind name passed to a function that compares that parameter with a kind read
(``check_kinds(..., ("image",))``, ``studies_of("margin")``).

Not kind comparisons, and so not reported: ``loss == "margin"``, a study's own config keys
(PRICE-NN's halves ``fc`` / ``cnn``), a seed stream named after a kind, or a trainer path.

Python files (src/, workflow_scripts/) are parsed; rules/*.smk and the Snakefile are not
Python, so a text scan covers them (the same forms, one line at a time).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SECTIONS = ("studies", "attacks", "models", "datasets", "optimizers")
# a kind read names its registry when one of its words is one of these (else: any registry)
SECTION_HINTS = {
    "studies": {"studies", "study", "st"},
    "attacks": {"attacks", "attack"},
    "models": {"models", "model"},
    "datasets": {"datasets", "dataset", "ds"},
    "optimizers": {"optimizers", "optimizer", "opt"},
}
COMPARE_OPS = (ast.Eq, ast.NotEq, ast.In, ast.NotIn)


@dataclass(frozen=True)
class Finding:
    path: str  # relative to the scanned root
    line: int
    kind: str
    text: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.kind!r} in {self.text.strip()}"


# ---- what a kind read is -----------------------------------------------------------------
def _is_kind_key(value) -> bool:
    return isinstance(value, str) and (value == "kind" or value.endswith("_kind"))


def is_kind_read(node: ast.AST) -> bool:
    """``x["kind"]``, ``x.get("kind")``, ``x.kind``, ``kind`` / ``model_kind``, ``kinds[m]``."""
    if isinstance(node, ast.Subscript):
        key = node.slice
        if isinstance(key, ast.Constant) and _is_kind_key(key.value):
            return True
        base = node.value
        name = base.id if isinstance(base, ast.Name) else getattr(base, "attr", "")
        return "kind" in name
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        if node.func.attr == "get" and node.args:
            arg = node.args[0]
            return isinstance(arg, ast.Constant) and _is_kind_key(arg.value)
        return False
    if isinstance(node, ast.Attribute):
        return _is_kind_key(node.attr)
    if isinstance(node, ast.Name):
        return _is_kind_key(node.id)
    return False


def _strings(node: ast.AST, constants: Mapping[str, tuple[str, ...]]) -> tuple[str, ...]:
    """The string literals of a constant, a tuple / list / set of them, or a module constant."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return (node.value,)
    if isinstance(node, ast.Tuple | ast.List | ast.Set):
        out: list[str] = []
        for elt in node.elts:
            out += _strings(elt, constants)
        return tuple(out)
    if isinstance(node, ast.Name):
        return constants.get(node.id, ())
    if isinstance(node, ast.Attribute):
        return constants.get(node.attr, ())
    if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name):
        return constants.get(node.value.id, ())  # an item of a constant mapping (any)
    return ()


def _section_of(text: str) -> str | None:
    """The registry a kind read reads, when its text says so (``cfg["models"][m]["kind"]``)."""
    words = set(re.findall(r"[a-z]+", text.lower()))
    hits = [s for s, hints in SECTION_HINTS.items() if words & hints]
    return hits[0] if len(hits) == 1 else None


# ---- the scan ----------------------------------------------------------------------------
@dataclass
class Scanner:
    """``owners``: kind name -> {(section, file or directory that belongs to that kind)}."""

    root: Path
    owners: Mapping[str, set[tuple[str, Path]]]

    def allowed(self, path: Path, kind: str, section: str | None) -> bool:
        for sec, own in self.owners.get(kind, ()):
            if section is not None and sec != section:
                continue
            if path == own or own in path.parents:
                return True
        return False

    # -- python ---------------------------------------------------------------------------
    def module_constants(self, trees: Iterable[ast.Module]) -> dict[str, tuple[str, ...]]:
        """Module-level NAME = (string, ...) of every scanned file (by name: the checks import
        them across modules, e.g. ``FLAT_MODELS``), and NAME = {key: (string, ...)} (the
        union of its values)."""
        out: dict[str, tuple[str, ...]] = {}
        for tree in trees:
            for node in tree.body:
                value = getattr(node, "value", None)
                if isinstance(node, ast.Assign) and isinstance(value, ast.Dict):
                    items = [_strings(v, {}) for v in value.values]
                    if items and all(items):
                        for t in node.targets:
                            if isinstance(t, ast.Name):
                                out[t.id] = tuple(v for vs in items for v in vs)
                if isinstance(node, ast.Assign | ast.AnnAssign) and isinstance(
                    getattr(node, "value", None), ast.Tuple | ast.List | ast.Set
                ):
                    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                    values = _strings(node.value, {})
                    if values and len(values) == len(node.value.elts):
                        for t in targets:
                            if isinstance(t, ast.Name):
                                out[t.id] = values
        return out

    @staticmethod
    def comparing_functions(trees: Iterable[ast.Module]) -> dict[str, list[int]]:
        """Functions that compare a parameter with a kind read -> that parameter's positions
        (``def check_kinds(cfg, st, where, field, kinds): ... if kind not in kinds``)."""
        out: dict[str, list[int]] = {}
        for tree in trees:
            for fn in ast.walk(tree):
                if not isinstance(fn, ast.FunctionDef):
                    continue
                params = [a.arg for a in fn.args.args]
                for node in ast.walk(fn):
                    if not isinstance(node, ast.Compare):
                        continue
                    sides = [node.left, *node.comparators]
                    named = [s for s in sides if isinstance(s, ast.Name) and s.id in params]
                    # a parameter (even one named kind) against another side that reads a kind
                    if named and any(is_kind_read(s) for s in sides if s not in named):
                        out.setdefault(fn.name, []).extend(params.index(s.id) for s in named)
        return out

    def scan_python(self, files: list[Path]) -> list[Finding]:
        trees = {f: ast.parse(f.read_text(), filename=str(f)) for f in files}
        constants = self.module_constants(trees.values())
        functions = self.comparing_functions(trees.values())
        found = []
        for f, tree in trees.items():
            lines = f.read_text().splitlines()
            for node in ast.walk(tree):
                hits: list[tuple[str, str | None]] = []
                if isinstance(node, ast.Compare) and any(
                    isinstance(op, COMPARE_OPS) for op in node.ops
                ):
                    sides = [node.left, *node.comparators]
                    reads = [s for s in sides if is_kind_read(s)]
                    if reads:
                        section = _section_of(ast.unparse(reads[0]))
                        for s in sides:
                            if not is_kind_read(s):
                                hits += [(v, section) for v in _strings(s, constants)]
                elif isinstance(node, ast.Call):
                    name = getattr(node.func, "id", getattr(node.func, "attr", None))
                    for pos in functions.get(name, ()):
                        # positional, or shifted by one for a bound method / a wrapper
                        for arg in node.args[max(pos - 1, 0) : pos + 1]:
                            hits += [(v, None) for v in _strings(arg, constants)]
                for value, section in hits:
                    if value in self.owners and not self.allowed(f, value, section):
                        text = lines[node.lineno - 1] if node.lineno <= len(lines) else ""
                        found.append(Finding(self.rel(f), node.lineno, value, text))
        return sorted(set(found), key=lambda x: (x.path, x.line, x.kind))

    # -- rules files (text) ---------------------------------------------------------------
    KIND_READ = r"""(?:\[\s*["'](?:\w+_)?kind["']\s*\]|\.get\(\s*["'](?:\w+_)?kind["'][^)]*\)|\.(?:\w+_)?kind\b|\b(?:\w+_)?kind\b|\b\w*kinds\[[^\]]*\])"""
    LITERALS = r"""(?:["']\w+["']|[(\[{]\s*["']\w+["'](?:\s*,\s*["']\w+["'])*\s*,?\s*[)\]}])"""

    def scan_text(self, files: list[Path], functions: Iterable[str]) -> list[Finding]:
        op = r"\s*(?:==|!=|\bnot\s+in\b|\bin\b)\s*"
        forms = [
            re.compile(self.KIND_READ + op + f"(?P<lit>{self.LITERALS})"),
            re.compile(f"(?P<lit>{self.LITERALS})" + op + self.KIND_READ),
        ]
        if functions:
            names = "|".join(map(re.escape, sorted(functions)))
            forms.append(re.compile(rf"\b(?:{names})\(\s*(?P<lit>{self.LITERALS})"))
        found = []
        for f in files:
            for i, line in enumerate(f.read_text().splitlines(), 1):
                code = line.split("#", 1)[0]
                for form in forms:
                    for m in form.finditer(code):
                        for value in re.findall(r"""["'](\w+)["']""", m.group("lit")):
                            section = _section_of(m.group(0))
                            if value in self.owners and not self.allowed(f, value, section):
                                found.append(Finding(self.rel(f), i, value, line))
        return sorted(set(found), key=lambda x: (x.path, x.line, x.kind))

    def rel(self, f: Path) -> str:
        try:
            return str(f.relative_to(self.root))
        except ValueError:
            return str(f)

    def scan(self) -> list[Finding]:
        py = sorted((self.root / "src").rglob("*.py")) + sorted(
            (self.root / "workflow_scripts").rglob("*.py")
        )
        trees = [ast.parse(f.read_text()) for f in py]
        functions = self.comparing_functions(trees)
        smk = sorted((self.root / "rules").glob("*.smk")) + [self.root / "Snakefile"]
        return self.scan_python(py) + self.scan_text(smk, functions)


def registry_owners(root: Path = REPO) -> dict[str, set[tuple[str, Path]]]:
    """Every registered kind of :mod:`ibrobust.kinds` -> its own files: the module (or the
    package directory), the schema fragment beside it, and a study kind's rules file."""
    from ibrobust import kinds

    src = root / "src"
    owners: dict[str, set[tuple[str, Path]]] = {}
    for section, reg in kinds.REGISTRIES.items():
        for kind in reg.kinds():
            base = src.joinpath(*reg.module_name(kind).split("."))
            own = {(section, base) if base.is_dir() else (section, base.with_suffix(".py"))}
            own.add((section, base.with_suffix(".schema.yaml")))
            rules = reg.capabilities(kind).get("rules")
            if rules:
                own.add((section, root / "rules" / rules))
            owners.setdefault(kind, set()).update(own)
    return owners


# ---- the tests ---------------------------------------------------------------------------
def test_no_kind_name_is_compared_outside_its_kind():
    found = Scanner(REPO, registry_owners()).scan()
    assert not found, "kind names compared in shared code (declare a capability instead):\n" + (
        "\n".join(map(str, found))
    )


PLANTED = """
FLAT = ("two_layer", "mlp")
HALVES = ("fc", "cnn")

def check_kinds(cfg, st, field, kinds):
    for item in st[field]:
        if cfg[field][item]["kind"] not in kinds:
            raise ValueError(item)

def f(cfg, m, opt, row, model_kinds, spec, run):
    a = cfg["models"][m]["kind"] == "robust_reference"          # 1: subscript read
    b = opt.get("kind") in ("sgd", "adam")                       # 2, 3: .get read, tuple
    c = spec.kind != "cnn"                                       # 4: attribute read
    d = "image" == row["kind"]                                   # 5: reversed
    e = model_kinds[run[1]] == "robust_reference"                # 6: item of a kinds map
    kind = cfg["models"][m]["kind"]
    g = kind in FLAT                                             # 7, 8: a module constant
    check_kinds(cfg, {}, "datasets", ("image",))                 # 9: indirect, by the call
    # not kind comparisons:
    h = spec.get("loss", "margin") == "margin"
    i = [h for h in HALVES if h == "fc"]
    j = opt.get("norm") == "linf"
    return a, b, c, d, e, g, h, i, j
"""
PLANTED_SMK = """
rule x:
    params:
        ref=lambda w: config["models"][w.model]["kind"] == "robust_reference",  # 1
        path=lambda w: DATASETS[w.dataset]["kind"] in ("image", "clusters"),   # 2, 3
        studies=studies_of("margin"),                                          # 4
        loss=lambda w: config["attacks"]["pgd_margin"]["loss"] == "margin",
"""
PLANTED_KINDS = {
    "robust_reference": "models",
    "two_layer": "models",
    "mlp": "models",
    "cnn": "models",
    "fc": "models",
    "image": "datasets",
    "clusters": "datasets",
    "sgd": "optimizers",
    "adam": "optimizers",
    "margin": "studies",
    "pgd": "attacks",
}


def _planted(tmp_path: Path) -> Scanner:
    (tmp_path / "src").mkdir()
    (tmp_path / "workflow_scripts").mkdir()
    (tmp_path / "rules").mkdir()
    (tmp_path / "src" / "shared.py").write_text(PLANTED)
    (tmp_path / "rules" / "x.smk").write_text(PLANTED_SMK)
    (tmp_path / "Snakefile").write_text("include: 'rules/x.smk'\n")
    (tmp_path / "src" / "own.py").write_text('def ok(m):\n    return m["kind"] == "cnn"\n')
    (tmp_path / "workflow_scripts" / "s.py").write_text(
        "def studies_of(cfg, kind):\n    return [s for s in cfg if cfg[s]['kind'] == kind]\n"
    )
    owners = {k: {(s, tmp_path / "elsewhere")} for k, s in PLANTED_KINDS.items()}
    owners["cnn"].add(("models", tmp_path / "src" / "own.py"))  # the cnn kind's own module
    return Scanner(tmp_path, owners)


def test_the_scanner_finds_planted_comparisons(tmp_path):
    found = _planted(tmp_path).scan()
    py = [(f.line, f.kind) for f in found if f.path == "src/shared.py"]
    assert py == [
        (11, "robust_reference"),
        (12, "adam"),
        (12, "sgd"),
        (13, "cnn"),
        (14, "image"),
        (15, "robust_reference"),
        (17, "mlp"),
        (17, "two_layer"),
        (18, "image"),
    ], found
    smk = [(f.line, f.kind) for f in found if f.path == "rules/x.smk"]
    assert smk == [(4, "robust_reference"), (5, "clusters"), (5, "image"), (6, "margin")], found
    # a kind's own module may compare its own name
    assert not [f for f in found if f.path == "src/own.py"]


def test_the_scanner_knows_whose_file_it_is(tmp_path):
    scanner = _planted(tmp_path)
    own = tmp_path / "src" / "shared.py"
    # a dataset kind's file may not compare a model kind's name (prelu: a study and a model)
    scanner.owners["robust_reference"] = {("datasets", own)}
    found = [f for f in scanner.scan() if f.path == "src/shared.py"]
    assert [f.line for f in found if f.kind == "robust_reference"] == [11, 15]
    scanner.owners["robust_reference"] = {("models", own)}
    found = [f for f in scanner.scan() if f.path == "src/shared.py"]
    assert "robust_reference" not in {f.kind for f in found}


def test_kind_reads():
    read = lambda s: is_kind_read(ast.parse(s, mode="eval").body)  # noqa: E731
    assert all(
        map(read, ['c["kind"]', 'c.get("kind")', "s.kind", "kind", "model_kind", "kinds[m]"])
    )
    assert not any(map(read, ['c["loss"]', 'c.get("norm")', "s.kinds_of", "halves"]))
