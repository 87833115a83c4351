"""Symbol-version checks against the four real linkers (issue 11, item 1).

- A library's versioned reference (`libw.so` needs `v_baz@V2`) met by a library that only has
  V1: bfd, gold and lld fail (lld: "[--no-allow-shlib-undefined]"), mold 1.10 links.
- `--no-undefined-version` with a version script naming a symbol nothing defines: bfd, gold
  and lld fail; mold only warns; without the option all four link.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from ldscope.linker.inputs import version_script_names
from tests.real_link import agree_with_real_linker

LINKERS = [name for name, program in (("bfd", "ld.bfd"), ("gold", "ld.gold"), ("lld", "ld.lld"),
                                      ("mold", "mold")) if shutil.which(program)]
pytestmark = pytest.mark.skipif(shutil.which("gcc") is None or not LINKERS, reason="gcc and linkers needed")

CASES = {
    "shlib-version-missing": ["main.o", "./libw.so", "old/libv.so", "-o", "m"],
    "shlib-version-present": ["main.o", "./libw.so", "full/libv.so", "-o", "m"],
    "no-undefined-version": ["-shared", "v.o", "-Wl,--version-script=bad.map", "-Wl,--no-undefined-version",
                             "-o", "libx.so"],
    "undefined-version-default": ["-shared", "v.o", "-Wl,--version-script=bad.map", "-o", "libx.so"],
    "no-undefined-version-all-defined": ["-shared", "v.o", "-Wl,--version-script=v1.map",
                                         "-Wl,--no-undefined-version", "-o", "libx.so"],
}


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("versions")
    (d / "full").mkdir()
    (d / "old").mkdir()
    (d / "v2.map").write_text("V1 { global: v_foo; local: *; };\nV2 { global: v_baz; } V1;\n")
    (d / "v1.map").write_text("V1 { global: v_foo; v_baz; local: *; };\n")
    (d / "bad.map").write_text("/* a symbol nothing defines */\nV1 { global: v_foo; nothere; local: *; };\n")
    (d / "v.c").write_text("int v_foo(void) { return 1; }\nint v_baz(void) { return 2; }\n")
    (d / "w.c").write_text("int v_baz(void);\nint w(void) { return v_baz(); }\n")
    (d / "main.c").write_text("int w(void);\nint main(void) { return w(); }\n")
    run = [["gcc", "-c", "-fPIC", "v.c", "main.c"],
           ["gcc", "-shared", "-o", "full/libv.so", "v.o", "-Wl,--version-script=v2.map", "-Wl,-soname,libv.so"],
           ["gcc", "-shared", "-o", "old/libv.so", "v.o", "-Wl,--version-script=v1.map", "-Wl,-soname,libv.so"],
           ["gcc", "-shared", "-fPIC", "-o", "libw.so", "w.c", "-Lfull", "-lv"]]
    for words in run:
        subprocess.run(words, cwd=d, check=True)
    return d


def test_version_script_names_skip_patterns_and_extern_blocks(tmp_path: Path) -> None:
    script = tmp_path / "v.map"
    script.write_text('# c\nV1 { global: a; "b"; pat*; extern "C++" { "ns::f()"; }; local: *; };\n'
                      "V2 { c; } V1;\n{ global: d; local: hidden; };\n")
    assert version_script_names(str(script)) == [("V1", "a"), ("V1", "b"), ("V2", "c"), ("", "d")]


@pytest.mark.parametrize("linker", LINKERS)
@pytest.mark.parametrize("case", sorted(CASES))
def test_version_checks_agree_with_the_real_linker(project: Path, linker: str, case: str) -> None:
    words = ["gcc", f"-fuse-ld={linker}", *CASES[case]]
    agree_with_real_linker(words, project)


EXPLICIT_CASES = {
    "explicit-v1-against-default-v1": ["m.o", "./libone.so", "-o", "m"],
    "explicit-v1-against-hidden-v1": ["m.o", "./libsv.so", "-o", "m"],
}


@pytest.fixture(scope="module")
def explicit(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("explicit")
    (d / "one.map").write_text("V1 { global: foo; local: *; };\n")
    (d / "two.map").write_text("V1 { global: foo; local: *; };\nV2 { global: foo; } V1;\n")
    (d / "one.c").write_text("int foo(void) { return 1; }\n")
    (d / "two.c").write_text('int foo_v1(void) { return 1; }\nint foo_v2(void) { return 2; }\n'
                             '__asm__(".symver foo_v1, foo@V1");\n__asm__(".symver foo_v2, foo@@V2");\n')
    (d / "m.c").write_text('int foo_old(void);\n__asm__(".symver foo_old, foo@V1");\n'
                           "int main(void) { return foo_old(); }\n")
    for words in (["gcc", "-shared", "-fPIC", "-o", "libone.so", "one.c", "-Wl,--version-script=one.map"],
                  ["gcc", "-shared", "-fPIC", "-o", "libsv.so", "two.c", "-Wl,--version-script=two.map"],
                  ["gcc", "-c", "m.c"]):
        subprocess.run(words, cwd=d, check=True)
    return d


@pytest.mark.parametrize("linker", LINKERS)
@pytest.mark.parametrize("case", sorted(EXPLICIT_CASES))
def test_explicit_version_references_agree_with_the_real_linker(explicit: Path, linker: str, case: str) -> None:
    words = ["gcc", f"-fuse-ld={linker}", *EXPLICIT_CASES[case]]
    agree_with_real_linker(words, explicit)
