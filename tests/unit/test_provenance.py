"""ibrobust.provenance: the code hash follows a script's imports, and an edit made while the
process runs (the parse cache is keyed on the file's version) is seen."""

import os

from ibrobust.provenance import _package_dir, code_hash, data_of, fragment_of, module_closure


def test_closure_follows_local_helpers_and_library_modules(tmp_path):
    (tmp_path / "helper.py").write_text("import ibrobust.norms\n")
    script = tmp_path / "job.py"
    script.write_text("import helper\nfrom ibrobust.attacks import losses\n")
    files = {str(p) for p in module_closure(script)}
    pkg = _package_dir()
    assert str(tmp_path / "helper.py") in files
    assert {str(pkg / "norms.py"), str(pkg / "attacks" / "losses.py")} <= files
    assert str(pkg / "attacks" / "__init__.py") in files  # importing a.b runs a/__init__
    assert not any(f.endswith("ledger/table.py") for f in files)


def test_an_edit_in_the_same_process_changes_closure_and_hash(tmp_path):
    helper, script = tmp_path / "helper.py", tmp_path / "job.py"
    helper.write_text("X = 1\n")
    script.write_text("import helper\n")
    before_files, before_hash = module_closure(script), code_hash(script)
    helper.write_text("import ibrobust.norms\nX = 1\n")
    st = os.stat(helper)  # same-second edits: force a new mtime as an editor would
    os.utime(helper, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))
    after_files = module_closure(script)
    assert len(after_files) > len(before_files)
    assert str(_package_dir() / "norms.py") in {str(p) for p in after_files}
    assert code_hash(script) != before_hash


def test_a_module_brings_its_schema_fragment(tmp_path):
    """A kind's fragment (``c.schema.yaml`` beside a module, ``schema.yaml`` in a package) is
    hashed with it: its capabilities steer the code (e.g. which training path runs)."""
    (tmp_path / "kind.py").write_text("X = 1\n")
    (tmp_path / "kind.schema.yaml").write_text("x-kind: {}\n")
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "schema.yaml").write_text("x-kind: {}\n")
    assert fragment_of(tmp_path / "pkg" / "__init__.py") == tmp_path / "pkg" / "schema.yaml"
    assert fragment_of(tmp_path / "pkg" / "other.py") is None
    script = tmp_path / "job.py"
    script.write_text("import kind\n")
    assert tmp_path / "kind.schema.yaml" in module_closure(script)
    before = code_hash(script)
    (tmp_path / "kind.schema.yaml").write_text("x-kind: {label: other}\n")
    assert code_hash(script) != before


def test_a_module_brings_its_data_file(tmp_path):
    """A module's data file (``x.yaml`` beside ``x.py``) is hashed with it: the ledger reruns
    when the quotes' restorations change (ibrobust/claims/restorations.yaml)."""
    (tmp_path / "reader.py").write_text("X = 1\n")
    script = tmp_path / "job.py"
    script.write_text("import reader\n")
    before = code_hash(script)
    (tmp_path / "reader.yaml").write_text("a: 1\n")
    assert data_of(tmp_path / "reader.py") == tmp_path / "reader.yaml"
    assert tmp_path / "reader.yaml" in module_closure(script) and code_hash(script) != before
    assert data_of(tmp_path / "reader.yaml") is None and data_of(tmp_path / "job.py") is None
    ledger = module_closure(_package_dir().parent.parent / "workflow_scripts" / "claims_ledger.py")
    assert _package_dir() / "claims" / "restorations.yaml" in ledger
