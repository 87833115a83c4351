"""Shared fixtures: small real ELF files built with gcc/g++/ar once per test session."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

# ldscope scan keeps a cache of Python files' imports under $XDG_CACHE_HOME/ldscope: the
# suite (and every `ldscope` it runs in a subprocess) uses one of its own, not the user's.
os.environ["XDG_CACHE_HOME"] = tempfile.mkdtemp(prefix="ldscope-test-cache-")


def batches(count: int) -> list[object]:
    """Parameters 0..count-1 of a seeded batch test: the first runs in the fast lane
    (`pytest -m "not slow"`), the others only in the full suite."""
    return [pytest.param(i, marks=() if i == 0 else pytest.mark.slow) for i in range(count)]


def run(cmd: list[str], cwd: Path | None = None) -> str:
    """Run a build command; fail the test with its output if it fails."""
    proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise AssertionError(f"{' '.join(cmd)} failed:\n{proc.stdout}\n{proc.stderr}")
    return proc.stdout


@pytest.fixture(scope="session")
def built(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A versioned shared library, a C++ library, an executable, an archive, a stripped copy."""
    if shutil.which("gcc") is None:
        pytest.skip("gcc is not installed")
    d = tmp_path_factory.mktemp("built")
    (d / "foo.c").write_text(
        "int foo_data = 42;\n"
        "int foo_new(int x) { return x + 1; }\n"
        "int foo_old(int x) { return x; }\n"
        "__asm__(\".symver foo_old,foo@FOO_1.0\");\n"
        "__asm__(\".symver foo_new,foo@@FOO_2.0\");\n"
        "extern int bar_missing(void) __attribute__((weak));\n"
        "int call_bar(void) { return bar_missing ? bar_missing() : 0; }\n"
    )
    (d / "foo.map").write_text("FOO_1.0 { global: foo_data; call_bar; foo; local: *; };\nFOO_2.0 { global: foo; } FOO_1.0;\n")
    run(
        [
            "gcc", "-shared", "-fPIC", "-o", "libfoo.so.1", "foo.c",
            "-Wl,-soname,libfoo.so.1", "-Wl,--version-script=foo.map",
            "-Wl,-rpath,/opt/foo/lib:$ORIGIN", "-Wl,--disable-new-dtags",
        ],
        cwd=d,
    )
    (d / "widget.cpp").write_text(
        "#include <string>\n"
        "namespace ui { struct Widget { int resize(int w, unsigned h) const; };\n"
        "int Widget::resize(int w, unsigned h) const { return w + (int)h; }\n"
        "std::string label(const std::string& s) { return s + \"!\"; } }\n"
    )
    run(["g++", "-shared", "-fPIC", "-o", "libwidget.so", "widget.cpp", "-Wl,-z,now",
         "-Wl,-rpath,/opt/w", "-Wl,--enable-new-dtags"], cwd=d)
    (d / "main.c").write_text(
        "#include <stdio.h>\nextern int foo(int);\nint main(void) { printf(\"%d\\n\", foo(1)); return 0; }\n"
    )
    (d / "a.c").write_text("int a_func(void) { return 1; }\nint a_common;\n")
    (d / "b_with_a_long_member_name.c").write_text(
        "extern int a_func(void);\nint b_func(void) { return a_func() + 1; }\n"
    )
    run(["gcc", "-c", "-fPIC", "-fcommon", "a.c", "b_with_a_long_member_name.c"], cwd=d)
    run(["ar", "rcs", "libab.a", "a.o", "b_with_a_long_member_name.o"], cwd=d)
    run(["gcc", "-o", "main", "main.c", "-L.", "-l:libfoo.so.1"], cwd=d)
    shutil.copy(d / "libfoo.so.1", d / "libfoo-stripped.so")
    run(["strip", "--strip-all", "libfoo-stripped.so"], cwd=d)
    (d / "garbage.so").write_bytes(b"\x7fELF\x02\x01\x01" + b"\xff" * 40)
    (d / "notelf.txt").write_text("hello\n")
    return {
        "dir": d,
        "libfoo": d / "libfoo.so.1",
        "libwidget": d / "libwidget.so",
        "main": d / "main",
        "archive": d / "libab.a",
        "object": d / "a.o",
        "stripped": d / "libfoo-stripped.so",
        "garbage": d / "garbage.so",
        "notelf": d / "notelf.txt",
    }
