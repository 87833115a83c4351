"""The real-world corpus tier: `ldscope scan` on venvs of real PyPI wheels, against the truth of
really importing every native file (tests/realworld/).

The slow tests build each corpus environment once per machine, compute its truth once, scan it
(`python3 -m ldscope scan ENV --format json -j 1`) and require zero false positives and zero
false negatives, and that each deliberate breakage is reported, its root cause first.  The
fast tests check the comparison, the module naming and the ELF classification the truth rests
on, and the premise that `ctypes.CDLL` binds every symbol at load.
"""

from __future__ import annotations

import _ctypes
import _json
import ctypes.util
import functools
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.realworld.build import BuiltEnv, Unavailable, build, env_key
from tests.realworld.compare import (
    Comparison,
    breakage_failures,
    compare,
    grouped,
    markdown_table,
    run_scan,
    scan_command,
)
from tests.realworld.corpus import ENVIRONMENTS, HEAVY_ENVIRONMENTS, TORCH_WHEEL, Breakage, environment
from tests.realworld.nearmiss import check, precision
from tests.realworld.truth import (
    elf_kind,
    import_snippet,
    library_snippet,
    module_name,
    run_snippet,
    truth,
)

Doc = dict[str, object]
SUFFIXES_311 = [".cpython-311-x86_64-linux-gnu.so", ".abi3.so", ".so"]


# ----------------------------------------------------------------------- the corpus, slow


@functools.cache
def _judged(name: str) -> tuple[BuiltEnv, Doc, Doc, Comparison]:
    try:
        built = build(environment(name))
    except Unavailable as e:
        pytest.skip(str(e))
    doc_truth = truth(built)
    scan = run_scan(built.path)
    return built, doc_truth, scan, compare(scan, doc_truth)


# Disagreements the model does not fix yet (issue 10), each with its measured count. strict:
# the day one is fixed, its xfail fails and must be removed, so the tier only ever tightens.
# None today. A disagreement found later goes here with its measured count, as a strict xfail
# naming its issue, until it is fixed: the day it is, its xfail fails and must be removed.
_KNOWN_ENV_DISAGREEMENTS: dict[str, str] = {}
_KNOWN_BREAKAGE_MISSES: dict[str, str] = {}


# CI's environments, and the heavy ones too with LDSCOPE_TEST_HEAVY=1 (5.5 GB of CUDA wheels).
_JUDGED = (*ENVIRONMENTS, *(HEAVY_ENVIRONMENTS if os.environ.get("LDSCOPE_TEST_HEAVY") == "1" else ()))


def _known(name: str, reasons: dict[str, str]) -> list[pytest.MarkDecorator]:
    return [pytest.mark.xfail(strict=True, reason=reasons[name])] if name in reasons else []


@pytest.mark.slow
@pytest.mark.parametrize("name", [pytest.param(e.name, marks=_known(e.name, _KNOWN_ENV_DISAGREEMENTS))
                                  for e in _JUDGED])
def test_scan_agrees_with_the_real_import(name: str) -> None:
    """Every native file with a truth: ldscope's `loads` is what importing (or dlopen) did."""
    built, _, _, c = _judged(name)
    assert c.with_truth > 0, f"{name}: the truth judged no file"
    command = " ".join(scan_command(built.path))
    assert c.not_in_scan == [], f"{name}: files with a truth missing from `{command}`: {c.not_in_scan}"
    assert c.compared == c.with_truth
    summary = f"{len(c.false_positives)} false positives, {len(c.false_negatives)} false negatives"
    assert (len(c.false_positives), len(c.false_negatives)) == (0, 0), (
        f"{name}: {summary} against the real import, for `{command}`:\n{grouped([c])}")


@pytest.mark.slow
@pytest.mark.parametrize("name", [e.name for e in _JUDGED])
def test_every_near_miss_shown_is_confirmed_by_its_rule(name: str) -> None:
    """Near-miss precision on the corpus: each one shown is checked against the files by a rule
    of its kind (pyelftools, c++filt); none may be refuted, and none may go unchecked."""
    _, doc_truth, scan, _ = _judged(name)
    result = precision(scan, str(doc_truth.get("python")))
    assert result.wrong == [] and result.unchecked == [], result


@pytest.mark.slow
@pytest.mark.parametrize(("name", "breakage"), [
    pytest.param(e.name, b.name, marks=_known(b.name, _KNOWN_BREAKAGE_MISSES))
    for e in ENVIRONMENTS for b in e.breakages])
def test_breakage_is_reported_with_its_cause(name: str, breakage: str) -> None:
    """The broken file really fails, ldscope says it does not load, and the first finding
    naming it is about the breakage (the deleted library, GLIBC_2.39, the cp312 tag, ...)."""
    built, doc_truth, scan, _ = _judged(name)
    b = next(b for b in built.env.breakages if b.name == breakage)
    assert breakage_failures(b, built.site, scan, doc_truth) == []


# -------------------------------------------------------------------- the comparison, fast


def test_near_miss_rules_confirm_and_refute() -> None:
    libc = next((p for p in ("/lib/x86_64-linux-gnu/libc.so.6", "/usr/lib/x86_64-linux-gnu/libc.so.6")
                 if os.path.exists(p)), None)
    if libc is None:
        pytest.skip("no x86_64 glibc")
    glibc = os.confstr("CS_GNU_LIBC_VERSION").split()[1]  # type: ignore[union-attr]
    problem = {"kind": "missing-version", "version": "GLIBC_2.99", "file": "x"}
    right = {"kind": "version-family", "file": libc,
             "explanation": f"{libc} offers up to GLIBC_{glibc}; GLIBC_2.99 needs a newer libc.so.6"}
    wrong = {**right, "explanation": f"{libc} offers up to GLIBC_2.2.5; GLIBC_2.99 needs a newer libc.so.6"}
    assert check(right, problem, None) is True
    assert check(wrong, problem, None) is False
    assert check({"kind": "similar-name"}, problem, None) is None
    # A missing library "found elsewhere": the file must exist, be that library, and not be
    # where the loader looked.
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        there = os.path.join(d, "libcublas.so.13")
        open(there, "wb").close()
        missing = {"kind": "missing-library", "library": "libcublas.so.13", "tried": [{"path": "/usr/lib/libcublas.so.13"}]}
        assert check({"kind": "found-elsewhere", "file": there}, missing, None) is True
        assert check({"kind": "found-elsewhere", "file": there + ".gone"}, missing, None) is False
        looked = {**missing, "tried": [{"path": there}]}
        assert check({"kind": "found-elsewhere", "file": there}, looked, None) is False
    scan = {"findings": [{"problems": [{**problem, "near_misses": [right, wrong]}]}]}
    result = precision(scan, None)
    assert (result.right, len(result.wrong), result.describe()) == (1, 1, "1/2 (50%)")

SITE = "/e/lib/python3.11/site-packages"


def _truth_entry(rel: str, kind: str, ok: bool | None, **extra: object) -> dict[str, object]:
    return {"path": f"{SITE}/{rel}", "rel": rel, "kind": kind, "ok": ok, "dist": "demo",
            "status": extra.pop("status", "ok" if ok else ("not-covered" if ok is None else "fail")),
            "stage": extra.pop("stage", "module"), "test": f"import {rel}", **extra}


def _scan_entry(rel: str, kind: str, loads: bool, problems: list[dict[str, object]] | None = None,
                ) -> dict[str, object]:
    host = "shared library dlopen'ed by a minimal host (RTLD_LAZY)" if kind == "library" else "python extension"
    return {"path": f"{SITE}/{rel}", "kind": kind, "loads": loads, "host": host, "problems": problems or []}


def _hand_made() -> tuple[Doc, Doc]:
    missing = {"kind": "missing-library", "severity": "error", "library": "libfoo.so.1",
               "message": f"libfoo.so.1: cannot open shared object file (needed by {SITE}/demo/libbar.so)"}
    truth_doc: Doc = {"env": "demo", "path": "/e", "site": SITE, "files": [
        _truth_entry("demo/_ok.cpython-311-x86_64-linux-gnu.so", "extension", True),
        _truth_entry("demo/_pkg.cpython-311-x86_64-linux-gnu.so", "extension", False, stage="package",
                     root_error="ImportError: libgone.so.2: cannot open shared object file: No such file"),
        _truth_entry("demo/libbar.so", "library", True),
        _truth_entry("demo/_old.cpython-312-x86_64-linux-gnu.so", "extension", False, status="not-importable",
                     stage="suffix", reason="suffix", error="never imported"),
        _truth_entry("demo/_slow.cpython-311-x86_64-linux-gnu.so", "extension", None, status="timeout"),
        _truth_entry("demo/bin/tool", "executable", None),
        _truth_entry("demo/_absent.cpython-311-x86_64-linux-gnu.so", "extension", True),
        _truth_entry("demo.libs/libg.so.5", "library", False, stage="library", already_loaded=False,
                     root_error="OSError: libq.so.0: cannot open shared object file: No such file or directory"),
        _truth_entry("demo.libs/libq.so.0", "library", True),
        _truth_entry("demo/_circ.cpython-311-x86_64-linux-gnu.so", "extension", False, mapped=True,
                     root_error="ImportError: cannot import name 'x' from partially initialized module"),
    ]}
    scan_doc: Doc = {"files": [
        _scan_entry("demo/_ok.cpython-311-x86_64-linux-gnu.so", "extension", True),
        _scan_entry("demo/_pkg.cpython-311-x86_64-linux-gnu.so", "extension", True),
        _scan_entry("demo/libbar.so", "library", False, [missing]),
        _scan_entry("demo/_old.cpython-312-x86_64-linux-gnu.so", "extension", True),
        _scan_entry("demo/_slow.cpython-311-x86_64-linux-gnu.so", "extension", False),
        _scan_entry("demo/bin/tool", "executable", False),
        _scan_entry("demo/libonly_scanned.so", "library", True),
        _scan_entry("demo.libs/libg.so.5", "library", True),
        _scan_entry("demo.libs/libq.so.0", "library", True),
        _scan_entry("demo/_circ.cpython-311-x86_64-linux-gnu.so", "extension", True),
    ], "findings": [{"kind": "missing-library", "title": f"libfoo.so.1 is missing (needed by {SITE}/demo/libbar.so)",
                     "files": [f"{SITE}/demo/libbar.so"], "problems": [missing]}]}
    return scan_doc, truth_doc


def test_compare_counts_false_positives_and_negatives() -> None:
    scan_doc, truth_doc = _hand_made()
    c = compare(scan_doc, truth_doc)
    assert (c.env, c.native_files, c.with_truth, c.compared, c.agree) == ("demo", 10, 8, 7, 2)
    # dlopen succeeded, then Python code failed (a circular import): not a loader false negative.
    assert [d.rel for d in c.python_level] == ["demo/_circ.cpython-311-x86_64-linux-gnu.so"]
    assert [d.rel for d in c.false_positives] == ["demo/libbar.so"]
    fp = c.false_positives[0]
    assert fp.verdict == "false-positive"
    assert fp.ldscope_findings == ("libfoo.so.1 is missing (needed by $SITE/demo/libbar.so)",)
    assert fp.cause == ("ldscope: missing-library: libfoo.so.1 is missing (needed by FILE) "
                        "[shared library dlopen'ed by a minimal host (RTLD_LAZY)]")
    assert [d.rel for d in c.false_negatives] == ["demo.libs/libg.so.5", "demo/_old.cpython-312-x86_64-linux-gnu.so",
                                                  "demo/_pkg.cpython-311-x86_64-linux-gnu.so"]
    by_path, wrong_tag, package = c.false_negatives
    assert by_path.cause == ("library fails when dlopen'ed by path (RTLD_NOW|RTLD_LOCAL) after importing its "
                             "package: it needs libq.so.0, which is in the environment, but only on its loaders' "
                             "RPATH, not its own search path")
    assert wrong_tag.cause.startswith("wrong tag:")
    assert package.cause == ("its package fails to import: ImportError: libgone.so.2: cannot open shared "
                             "object file: No such file")
    assert package.ldscope_problems == () and package.ldscope_findings == ()
    # The timeout and the executable have no verdict; the scan-only library has no truth.
    assert c.not_in_scan == [f"{SITE}/demo/_absent.cpython-311-x86_64-linux-gnu.so"]
    assert c.not_in_truth == [f"{SITE}/demo/libonly_scanned.so"]
    table = markdown_table([c], {"demo": {"scan s": "0.5"}})
    assert table.splitlines()[0].startswith("| env | native files (ldscope) |")
    assert table.splitlines()[-1] == "| demo | 10 | 8 | 7 | 2 | 1 | 3 | 1 | 1 | 1 | 0.5 |"
    text = grouped([c])
    assert "## demo: 1 false positives, 3 false negatives" in text
    assert "1 × false-negative: its package fails to import" in text
    assert "## demo: 1 Python-level import failures (not loader failures; not counted)" in text


def test_breakage_failures_say_what_is_wrong(tmp_path: Path) -> None:
    site = tmp_path
    (site / "demo").mkdir()
    broken = site / "demo" / "_cms.cpython-311-x86_64-linux-gnu.so"
    broken.write_bytes(b"")
    b = Breakage("demo-deleted", "deleted-library", "liblcms2 deleted", files=("demo/_cms.*.so",), subject="liblcms2")
    truth_doc: Doc = {"files": [{"path": str(broken), "ok": False, "error": "liblcms2.so.2: cannot open"}]}
    problem = {"kind": "missing-library", "severity": "error", "library": "liblcms2.so.2", "message": "m"}
    other = {"title": "libzzz.so is missing", "files": [str(broken)], "problems": []}
    right = {"title": "liblcms2.so.2 is missing", "files": [str(broken)], "problems": [problem]}
    scan_loads: Doc = {"files": [{"path": str(broken), "loads": True, "problems": []}], "findings": []}
    scan_right: Doc = {"files": [{"path": str(broken), "loads": False}], "findings": [right, other]}
    scan_other_first: Doc = {"files": [{"path": str(broken), "loads": False}], "findings": [other, right]}
    rel = "demo/_cms.cpython-311-x86_64-linux-gnu.so"
    assert breakage_failures(b, site, scan_right, truth_doc) == []
    assert breakage_failures(b, site, scan_loads, truth_doc) == [
        f"{rel}: ldscope says it loads; the truth: liblcms2.so.2: cannot open"]
    assert breakage_failures(b, site, scan_other_first, truth_doc) == [
        f"{rel}: its first finding does not concern 'liblcms2': libzzz.so is missing"]
    loads_for_real: Doc = {"files": [{"path": str(broken), "ok": True, "status": "ok"}]}
    assert breakage_failures(b, site, scan_right, loads_for_real) == [
        f"{rel}: the truth does not fail (ok): the breakage broke nothing"]


@pytest.mark.parametrize(("rel", "expected"), [
    ("numpy/_core/_multiarray_umath.cpython-311-x86_64-linux-gnu.so", ("numpy._core._multiarray_umath", None)),
    ("cryptography/hazmat/bindings/_rust.abi3.so", ("cryptography.hazmat.bindings._rust", None)),
    ("torchvision/_C.so", ("torchvision._C", None)),
    ("_cffi_backend.cpython-311-x86_64-linux-gnu.so", ("_cffi_backend", None)),
    ("PIL/_imaging.cpython-312-x86_64-linux-gnu.so", (None, "suffix")),
    ("demo/libfoo.so.1", (None, "suffix")),
    ("numpy.libs/_x.cpython-311-x86_64-linux-gnu.so", (None, "path")),
])
def test_module_name_is_what_python_would_import(rel: str, expected: tuple[str | None, str | None]) -> None:
    assert module_name(Path(rel), SUFFIXES_311) == expected


# --------------------------------------------------------------- the truth's premises, fast


def test_elf_kind_classifies_real_files(tmp_path: Path) -> None:
    libc = ctypes.util.find_library("c")
    libc_path = next(p for p in ("/lib/x86_64-linux-gnu/libc.so.6", "/usr/lib/x86_64-linux-gnu/libc.so.6")
                     if os.path.exists(p))
    assert libc is not None
    assert elf_kind(Path(os.path.realpath(sys.executable))) == "executable"
    assert elf_kind(Path(_ctypes.__file__)) == "extension"
    assert elf_kind(Path(libc_path)) == "library"  # PT_INTERP (runnable), but a SONAME
    (tmp_path / "notes.so").write_text("not ELF\n")
    assert elf_kind(tmp_path / "notes.so") is None


def test_truth_snippets_import_and_dlopen_for_real(tmp_path: Path) -> None:
    """The snippets run as documented: an extension imported by name (already loaded is found),
    a library dlopen'ed, and `ctypes.CDLL` binding every symbol at load (RTLD_NOW), so a
    library whose only unresolved reference is a lazily bound call does not load."""
    python = Path(sys.executable)
    ext = run_snippet(python, import_snippet(Path(_ctypes.__file__), "_ctypes"))
    assert (ext["ok"], ext["stage"], ext.get("loaded_as")) == (True, "module", None)
    json_accelerator = getattr(_json, "__file__", None)  # a built-in module where Python is so built
    if json_accelerator:  # the harness imports json, which imports _json: found already loaded
        ext = run_snippet(python, import_snippet(Path(json_accelerator), "_json"))
        assert (ext["ok"], ext["stage"], ext["loaded_as"]) == (True, "find_spec", "_json")
    libc_path = next(p for p in ("/lib/x86_64-linux-gnu/libc.so.6", "/usr/lib/x86_64-linux-gnu/libc.so.6")
                     if os.path.exists(p))
    lib = run_snippet(python, library_snippet(Path(libc_path), None))
    assert (lib["ok"], lib["already_loaded"]) == (True, True)
    if shutil.which("gcc") is None:
        pytest.skip("gcc is not installed")
    (tmp_path / "lazy.c").write_text("extern int nowhere(void);\nint f(void) { return nowhere(); }\n")
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", "liblazy.so", "lazy.c"], cwd=tmp_path, check=True)
    lazy = run_snippet(python, library_snippet(tmp_path / "liblazy.so", None))
    assert lazy["ok"] is False
    assert re.search(r"OSError: .*liblazy\.so: undefined symbol: nowhere", str(lazy["error"])), lazy
    script = f"import ctypes, os; ctypes.CDLL({str(tmp_path / 'liblazy.so')!r}, mode=os.RTLD_LAZY); print('lazy ok')"
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert proc.stdout.strip() == "lazy ok", proc.stderr


def test_corpus_is_pinned_and_keyed() -> None:
    names = [e.name for e in (*ENVIRONMENTS, *HEAVY_ENVIRONMENTS)]
    assert len(names) == len(set(names))
    for env in (*ENVIRONMENTS, *HEAVY_ENVIRONMENTS):
        for install in env.installs:
            assert "--only-binary=:all:" in install.pip_args
            for req in install.requirements:
                assert re.fullmatch(r"[A-Za-z0-9_.-]+==[0-9][0-9A-Za-z.+]*", req) or Path(req) in install.local_files, req
        for b in env.breakages:
            assert b.files and b.subject and b.kind in ("wrong-tag", "deleted-library", "other-torch", "newer-glibc")
    kinds = {b.kind for e in ENVIRONMENTS for b in e.breakages}
    assert kinds == {"wrong-tag", "deleted-library", "other-torch", "newer-glibc"}
    keys = {env_key(e) for e in ENVIRONMENTS}
    assert len(keys) == len(ENVIRONMENTS) and env_key(ENVIRONMENTS[0]) == env_key(ENVIRONMENTS[0])
    assert str(TORCH_WHEEL) in environment("torch-cpu").requirements()
