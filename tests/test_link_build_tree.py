"""A library named by its build-tree path (CMake's `../libcjson.so.1.7.15`, `lib/libgtest.a`)
dropped from a line: the fix search finds it in the link's own build tree, offers it by the
path the user would write, after its users, and the real linker links with that fix."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from ldscope.analysis import LinkReport, build_report
from ldscope.explain import DefinitionStatus
from ldscope.fixes import Fix
from ldscope.linker.frontend import resolve_link_line

pytestmark = pytest.mark.skipif(shutil.which("gcc") is None or shutil.which("ar") is None,
                                reason="gcc and ar are needed")


def _cc(cwd: Path, name: str, text: str, *flags: str) -> None:
    cwd.mkdir(parents=True, exist_ok=True)
    (cwd / name).write_text(text)
    subprocess.run(["gcc", "-c", "-fPIC", *flags, name], cwd=cwd, check=True)


def _archive(d: Path, lib: str, *objects: str) -> None:
    subprocess.run(["ar", "rcs", lib, *objects], cwd=d, check=True)


def _report(words: list[str], cwd: Path) -> LinkReport:
    return build_report(resolve_link_line(words, cwd=str(cwd)), fix=True)


def _fixing(report: LinkReport) -> list[Fix]:
    return [f for f in report.fixes if f.fixes_alone]


def _really_links(fix: Fix, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(list(fix.user_argv), cwd=cwd, capture_output=True, text=True, timeout=120)


def _tree_definitions(report: LinkReport, symbol: str) -> list[str]:
    error = next(e for e in report.errors if e.symbol == symbol)
    return [d.where for d in error.defined_in if d.status == DefinitionStatus.BUILD_TREE]


def test_a_dropped_sibling_archive_is_found_by_its_path_and_the_fix_links(tmp_path: Path) -> None:
    """build/tests/t.o needs foo from build/lib/libfoo.a (no marker of a build root: the
    parent's lib directory is looked in)."""
    lib, tests = tmp_path / "build" / "lib", tmp_path / "build" / "tests"
    _cc(lib, "foo.c", "int foo(void) { return 41; }\n")
    _archive(lib, "libfoo.a", "foo.o")
    _cc(tests, "t.c", "int foo(void);\nint main(void) { return foo() - 41; }\n")
    words = ["gcc", "t.o", "-o", "t", "-lm"]
    assert subprocess.run(words, cwd=tests, capture_output=True).returncode != 0
    report = _report(words, tests)
    assert not report.links
    assert _tree_definitions(report, "foo") == ["../lib/libfoo.a"]
    error = next(e for e in report.errors if e.symbol == "foo")
    assert "../lib/libfoo.a in the build tree defines foo" in error.explanation
    fix = _fixing(report)[0]
    assert fix.description.startswith("add ../lib/libfoo.a after t.o (argument ")
    assert "build tree" in fix.description
    # After its user on the linker line, and on the user's own command before -lm.
    linker_at = fix.argv.index("../lib/libfoo.a")
    assert fix.argv.index("t.o") < linker_at
    assert fix.user_argv == ("gcc", "t.o", "-o", "t", "../lib/libfoo.a", "-lm")
    assert fix.user_links is True
    real = _really_links(fix, tests)
    assert real.returncode == 0, real.stderr


def test_in_a_marked_build_root_the_shared_library_is_offered_before_the_archive(tmp_path: Path) -> None:
    """CMakeCache.txt marks the root; the library is two levels away from the test's directory;
    the shared library and the archive of one name are both there: the .so first, by its
    shortest name (the development symlink, as `-l` would find it)."""
    build = tmp_path / "build"
    src, unit = build / "src", build / "test" / "unit"
    build.mkdir()
    (build / "CMakeCache.txt").write_text("# CMake cache\n")
    _cc(src, "bar.c", "int bar(int x) { return x + 1; }\n")
    subprocess.run(["gcc", "-shared", "-Wl,-soname,libbar.so.1", "-o", "libbar.so.1.2.3", "bar.o"],
                   cwd=src, check=True)
    (src / "libbar.so.1").symlink_to("libbar.so.1.2.3")
    (src / "libbar.so").symlink_to("libbar.so.1")
    _archive(src, "libbar.a", "bar.o")
    _cc(unit, "t.c", "int bar(int);\nint main(void) { return bar(-1); }\n")
    report = _report(["gcc", "t.o", "-o", "t"], unit)
    assert _tree_definitions(report, "bar") == ["../../src/libbar.so", "../../src/libbar.a"]
    fix = _fixing(report)[0]
    assert "../../src/libbar.so" in fix.user_argv
    real = _really_links(fix, unit)
    assert real.returncode == 0, real.stderr


def test_a_provider_that_would_add_a_duplicate_definition_is_not_a_fix(tmp_path: Path) -> None:
    """Right or silent: libdup.a's member defines the missing symbol and also one the program
    already defines, so adding it fails (the real linker agrees): no fix is offered."""
    lib, app = tmp_path / "lib", tmp_path / "app"
    _cc(lib, "dup.c", "int need(void) { return 1; }\nint mine(void) { return 2; }\n")
    _archive(lib, "libdup.a", "dup.o")
    _cc(app, "m.c", "int need(void);\nint mine(void) { return 3; }\nint main(void) { return need() + mine(); }\n")
    report = _report(["gcc", "m.o", "-o", "m"], app)
    assert _tree_definitions(report, "need") == ["../lib/libdup.a"]
    assert _fixing(report) == []
    tried = next(f for f in report.fixes if "../lib/libdup.a" in f.description)
    assert tried.remaining_errors >= 1
    assert subprocess.run(["gcc", "m.o", "-o", "m", "../lib/libdup.a"], cwd=app, capture_output=True).returncode != 0


def test_a_sibling_project_is_not_searched(tmp_path: Path) -> None:
    """With no build root marked, only the command's own tree and the parent's lib directory
    are looked in: another project beside this one is not this link's."""
    other, app = tmp_path / "other", tmp_path / "app"
    _cc(other, "foo.c", "int foo(void) { return 0; }\n")
    _archive(other, "libfoo.a", "foo.o")
    _cc(app, "t.c", "int foo(void);\nint main(void) { return foo(); }\n")
    report = _report(["gcc", "t.o", "-o", "t"], app)
    assert _tree_definitions(report, "foo") == []
    assert _fixing(report) == []


def test_main_from_the_tree_only_beside_a_library_the_line_links(tmp_path: Path) -> None:
    """A `main` library (gtest_main's kind) is offered when it sits beside a library the line
    already links (lib/libgt.a) and the line has objects of its own; not to a line that links
    nothing from there, nor to one left with no object."""
    build = tmp_path / "build"
    lib = build / "lib"
    build.mkdir()
    (build / "CMakeCache.txt").write_text("")
    _cc(lib, "gt.c", "int run_all(void) { return 0; }\n")
    _cc(lib, "gt_main.c", "int run_all(void);\nint main(void) { return run_all(); }\n")
    _archive(lib, "libgt.a", "gt.o")
    _archive(lib, "libgt_main.a", "gt_main.o")
    _cc(build / "t", "case.c", "int case_one(void) { return 0; }\n")
    with_lib = _report(["gcc", "case.o", "-o", "case", "../lib/libgt.a"], build / "t")
    assert _tree_definitions(with_lib, "main") == ["../lib/libgt_main.a"]
    fix = _fixing(with_lib)[0]
    # main's user is the start file, but the library goes after the line's own objects (where
    # a build writes it), and before the ../lib/libgt.a that gt_main.o needs.
    assert fix.argv.index("case.o") < fix.argv.index("../lib/libgt_main.a") < fix.argv.index("../lib/libgt.a")
    assert fix.user_argv == ("gcc", "case.o", "-o", "case", "../lib/libgt_main.a", "../lib/libgt.a")
    assert fix.description.startswith("add ../lib/libgt_main.a after case.o (argument ")
    real = _really_links(fix, build / "t")
    assert real.returncode == 0, real.stderr
    alone = _report(["gcc", "case.o", "-o", "case"], build / "t")
    assert _tree_definitions(alone, "main") == []
    assert _fixing(alone) == []
    # No object of its own left (the program's main object dropped, googletest's sample9):
    # what is missing is that object, not a main library.
    no_objects = _report(["gcc", "-o", "case", "../lib/libgt.a"], build / "t")
    assert _tree_definitions(no_objects, "main") == []
    assert _fixing(no_objects) == []
