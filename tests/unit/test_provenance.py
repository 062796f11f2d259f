"""ibrobust.provenance: the code hash follows a script's imports, and an edit made while the
process runs (the parse cache is keyed on the file's version) is seen."""

import os

from ibrobust.provenance import _package_dir, code_hash, module_closure


def test_closure_follows_local_helpers_and_library_modules(tmp_path):
    (tmp_path / "helper.py").write_text("import ibrobust.norms\n")
    script = tmp_path / "job.py"
    script.write_text("import helper\nfrom ibrobust.attacks import losses\n")
    files = {str(p) for p in module_closure(script)}
    pkg = _package_dir()
    assert str(tmp_path / "helper.py") in files
    assert {str(pkg / "norms.py"), str(pkg / "attacks" / "losses.py")} <= files
    assert str(pkg / "attacks" / "__init__.py") in files  # importing a.b runs a/__init__
    assert not any(f.endswith("claims/ledger.py") for f in files)


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
