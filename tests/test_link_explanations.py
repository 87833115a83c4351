"""Explanations a person acts on (issue 11, item 4): no fix that cannot help, the C++ key
function for an undefined vtable, the `-l` that really finds a library."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from ldscope.analysis import build_report
from ldscope.linker.frontend import resolve_link_line

pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="g++ is needed")


def _report(words: list[str], cwd: Path, fix: bool = True):  # type: ignore[no-untyped-def]
    return build_report(resolve_link_line(words, cwd=str(cwd)), fix=fix)


def test_missing_main_is_explained_and_no_library_defining_main_is_offered(tmp_path: Path) -> None:
    (tmp_path / "lib.c").write_text("int helper(void) { return 1; }\n")
    subprocess.run(["gcc", "-c", "lib.c"], cwd=tmp_path, check=True)
    report = _report(["gcc", "lib.o", "-o", "app"], tmp_path)
    error = next(e for e in report.errors if e.symbol == "main")
    assert "the program has no `main'" in error.explanation and "-shared" in error.explanation
    assert "ncurses" not in error.explanation
    assert not any("ncurses" in f.description for f in report.fixes)
    assert not [d for d in error.defined_in if d.where.endswith(".a") or ".so" in d.where]


def test_undefined_vtable_names_the_key_function_not_a_near_miss(tmp_path: Path) -> None:
    (tmp_path / "s.cc").write_text(
        "struct Shape { Shape(); virtual ~Shape(); virtual double area() const; };\n"
        "Shape::Shape() {}\ndouble Shape::area() const { return 0; }\n"
        "int main() { Shape s; return (int)s.area(); }\n")
    subprocess.run(["g++", "-c", "s.cc"], cwd=tmp_path, check=True)
    real = subprocess.run(["g++", "s.o", "-o", "s"], cwd=tmp_path, capture_output=True, text=True)
    assert real.returncode != 0 and "vtable for Shape" in real.stderr
    report = _report(["g++", "s.o", "-o", "s"], tmp_path, fix=False)
    vtable = next(e for e in report.errors if e.symbol == "_ZTV5Shape")
    assert vtable.near_misses == ()
    assert "key function" in vtable.explanation and "Shape::~Shape()" in vtable.explanation
    # Defining the destructor (the key function) is what makes the link work.
    (tmp_path / "dtor.cc").write_text(
        "struct Shape { Shape(); virtual ~Shape(); virtual double area() const; };\nShape::~Shape() {}\n")
    subprocess.run(["g++", "-c", "dtor.cc"], cwd=tmp_path, check=True)
    assert subprocess.run(["g++", "s.o", "dtor.o", "-o", "s"], cwd=tmp_path).returncode == 0
    assert _report(["g++", "s.o", "dtor.o", "-o", "s"], tmp_path, fix=False).links


def test_a_library_found_by_its_flag_is_named_as_the_flag_finds_it(tmp_path: Path) -> None:
    """-lfoo picks libfoo.so over libfoo.a in the same directory: the fix names the .so."""
    (tmp_path / "foo.c").write_text("int foo(void) { return 1; }\n")
    (tmp_path / "main.c").write_text("int foo(void);\nint main(void) { return foo(); }\n")
    subprocess.run(["gcc", "-c", "-fPIC", "foo.c", "main.c"], cwd=tmp_path, check=True)
    subprocess.run(["gcc", "-shared", "-o", "libfoo.so", "foo.o"], cwd=tmp_path, check=True)
    subprocess.run(["ar", "rcs", "libfoo.a", "foo.o"], cwd=tmp_path, check=True)
    report = _report(["gcc", "main.o", "-L.", "-o", "app"], tmp_path)
    error = next(e for e in report.errors if e.symbol == "foo")
    flags = [d for d in error.defined_in if "libfoo" in d.where]
    assert len(flags) == 1 and flags[0].where.endswith("libfoo.so")
    fix = next(f for f in report.fixes if "-lfoo" in f.description)
    assert fix.fixes_alone and "libfoo.so" in fix.description


def test_fixes_are_given_on_the_user_s_own_command_and_really_link(tmp_path: Path) -> None:
    """An archive before its user, a missing -l: every fix that links is also written on the
    gcc command the user typed (-Wl,… and -l… at that command's positions), and that very
    command links with the real toolchain."""
    (tmp_path / "foo.c").write_text("int foo(void) { return 1; }\n")
    (tmp_path / "main.c").write_text("double sqrt(double);\nint foo(void);\n"
                                     "int main(int c, char **v) { (void)v; return foo() + (int)sqrt(c); }\n")
    subprocess.run(["gcc", "-c", "-fPIC", "foo.c", "main.c"], cwd=tmp_path, check=True)
    subprocess.run(["ar", "rcs", "libf.a", "foo.o"], cwd=tmp_path, check=True)
    words = ["gcc", "libf.a", "main.o", "-o", "app", "-lm"]
    report = _report(words, tmp_path)
    fixing = [f for f in report.fixes if f.fixes_alone]
    assert len(fixing) >= 3
    for f in fixing:
        assert f.user_argv and f.user_argv[0] == "gcc" and f.user_links is True, f
        assert "argument" not in (f.user_description or "")  # words of the user's command, not collect2's
        real = subprocess.run(list(f.user_argv), cwd=tmp_path, capture_output=True, text=True)
        assert real.returncode == 0, (f.user_description, real.stderr)
    grouped = next(f for f in fixing if "--start-group" in f.description)
    assert "-Wl,--start-group" in grouped.user_argv and "-Wl,--end-group" in grouped.user_argv
    missing_m = _report(["gcc", "libf.a", "main.o", "libf.a", "-o", "app"], tmp_path)
    add_m = next(f for f in missing_m.fixes if f.fixes_alone and "-lm" in f.description)
    assert add_m.user_argv[-1] == "-lm" or "-lm" in add_m.user_argv
    assert subprocess.run(list(add_m.user_argv), cwd=tmp_path).returncode == 0


def test_cxx_names_in_messages_are_demangled_as_the_linkers_print_them(tmp_path: Path) -> None:
    """The linkers demangle without c++filt's verbose mode: `std::istream`, not
    `std::basic_istream<char, std::char_traits<char> >` (found on yaml-cpp's real link lines)."""
    (tmp_path / "m.cc").write_text("#include <iosfwd>\n#include <string>\nvoid parse(std::istream &);\n"
                                   "void name(const std::string &);\nint main() { parse(*(std::istream *)0); "
                                   "name(std::string()); }\n")
    subprocess.run(["g++", "-c", "-D_GLIBCXX_USE_CXX11_ABI=1", "m.cc"], cwd=tmp_path, check=True)
    real = subprocess.run(["g++", "-fuse-ld=bfd", "m.o", "-o", "m"], cwd=tmp_path, capture_output=True, text=True)
    assert "undefined reference to `parse(std::istream&)'" in real.stderr
    report = _report(["g++", "-fuse-ld=bfd", "m.o", "-o", "m"], tmp_path, fix=False)
    messages = [e.message for e in report.errors]
    assert any("undefined reference to `parse(std::istream&)'" in m for m in messages), messages
    wanted = next(x for x in real.stderr.splitlines() if "name(" in x).split("undefined reference to ")[1]
    assert any(wanted in m for m in messages), (wanted, messages)
