"""Text relocations and AArch64 non-PIC relocations against the four real linkers (issue 11,
item 1).

Each case is linked by the real linker (`gcc -fuse-ld=X`, or `aarch64-linux-gnu-gcc` with a
PATH directory holding `aarch64-linux-gnu-ld.lld`/`-ld.mold`) and predicted by ldscope with
the same command and environment. They must agree on the verdict, on the relocation errors
the linker prints (first line of each, as a multiset: mold prints from several threads) and
on its text-relocation warnings. The matrix they come from is in docs/fidelity.md.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections import Counter
from pathlib import Path

import pytest

from ldscope.analysis import LinkReport, build_report
from ldscope.linker.frontend import resolve_link_line
from ldscope.vocab import LinkErrorKind

LINKERS = [name for name, program in (("bfd", "ld.bfd"), ("gold", "ld.gold"), ("lld", "ld.lld"),
                                      ("mold", "mold")) if shutil.which(program)]
pytestmark = pytest.mark.skipif(shutil.which("gcc") is None or not LINKERS, reason="gcc and linkers needed")

_STACK = '\t.section .note.GNU-stack,"",%progbits\n'
_PIC_KINDS = (LinkErrorKind.TEXT_RELOCATION, LinkErrorKind.NON_PIC_CODE, LinkErrorKind.NON_PIC_RELOCATION)
# The lines of a real linker's output that these checks are about.
_ERROR_LINE = re.compile(r"recompile with -fPIC|read-only segment has dynamic|unsupported reloc [0-9]|unknown relocation"
                         r"|can not be used when making")
_WARNING_LINE = re.compile(r"DT_TEXTREL|in read-only section|text segment is not shareable")

X86_SOURCES = {
    # An absolute pointer in .text against a local label (a section symbol) and a global.
    "tl.s": "\t.text\n\t.globl f\n\t.type f,@function\nf:\tret\nlab:\t.quad lab\n",
    "tg.s": "\t.text\n\t.globl g\n\t.type g,@function\ng:\tret\n\t.quad g\n",
    # ... in .rodata: against a local, a global object, an untyped global, a library's symbol.
    "rl.s": "\t.text\n\t.globl f\n\t.type f,@function\nf:\tret\n\t.section .rodata,\"a\"\n\t.quad f2\nf2:\t.quad 0\n",
    "rg.s": "\t.data\n\t.globl gv\n\t.type gv,@object\ngv:\t.quad 1\n\t.section .rodata,\"a\"\n\t.quad gv\n",
    "rn.s": "\t.data\n\t.globl n2\nn2:\t.quad 0\n\t.section .rodata,\"a\"\n\t.quad n2\n",
    "ru.s": "\t.section .rodata,\"a\"\n\t.quad extv\n",
    "dg.s": "\t.data\n\t.globl gv\ngv:\t.quad 1\n\t.quad gv\n",  # writable: no text relocation
}
C_SOURCES = {
    "crod.c": "int g = 1;\nint *const p = &g;\n",  # gcc -fno-pic puts p in .rodata
    "clarge.c": "int g = 1;\nint *addr(void) { return &g; }\n",  # -mcmodel=large: movabs in .text
    "ext.c": "int extv = 3;\n",
    "main.c": "int main(void) { return 0; }\n",
}
A64_SOURCES = {
    "tl.s": "\t.text\n\t.globl f\n\t.type f,%function\nf:\tret\nlab:\t.xword lab\n",
    "rg.s": "\t.data\n\t.globl gv\n\t.type gv,%object\ngv:\t.xword 1\n\t.section .rodata,\"a\"\n\t.xword gv\n",
    "ru.s": "\t.section .rodata,\"a\"\n\t.xword extv\n",
    "a32.s": "\t.data\n\t.globl gv\ngv:\t.xword 1\n\t.word gv\n",
    "a32l.s": "\t.data\nlv:\t.xword 1\n\t.word lv\n",
    "movw.s": "\t.data\n\t.globl gv\ngv:\t.xword 1\n\t.text\n\t.globl f\n\t.type f,%function\nf:\tmovz x0, #:abs_g3:gv\n"
              "\tmovk x0, #:abs_g2_nc:gv\n\tmovk x0, #:abs_g1_nc:gv\n\tmovk x0, #:abs_g0_nc:gv\n\tret\n",
    "movwl.s": "\t.data\nlv:\t.xword 1\n\t.text\n\t.globl f\n\t.type f,%function\nf:\tmovz x0, #:abs_g3:lv\n"
               "\tmovk x0, #:abs_g2_nc:lv\n\tmovk x0, #:abs_g1_nc:lv\n\tmovk x0, #:abs_g0_nc:lv\n\tret\n",
}
A64_C_SOURCES = {
    "crod.c": C_SOURCES["crod.c"], "ext.c": C_SOURCES["ext.c"], "main.c": C_SOURCES["main.c"],
    "adrp.c": "int g = 1;\nint *addr(void) { return &g; }\nint get(void) { return g; }\n",  # -O0: ADRP+ADD twice
    "adrpu.c": "extern int extv;\nint *addr(void) { return &extv; }\n",  # a library's symbol
    "adrpl.c": "static int l = 1;\nint *addr(void) { return &l; }\n",  # binds locally: fine
    "adrph.c": '__attribute__((visibility("hidden"))) int h = 1;\nint *addr(void) { return &h; }\n',
    "ldst.c": "extern int g;\nint get(void) { return g; }\n",  # ADRP + LDR :lo12:
    "gdef.c": "int g = 1;\n",
}

OUTPUTS = {"shared": ["-shared"], "pie": ["-pie", "main.o"], "exec": ["-no-pie", "main.o"]}
OPTIONS = {"default": [], "ztext": ["-Wl,-z,text"], "znotext": ["-Wl,-z,notext"],
           "warn": ["-Wl,--warn-shared-textrel"], "ztext-then-notext": ["-Wl,-z,text", "-Wl,-z,notext"]}
X86_OBJECTS = {"tl": ["tl.o"], "tg": ["tg.o"], "rl": ["rl.o"], "rg": ["rg.o"], "rn": ["rn.o"],
               "ru": ["ru.o", "-L.", "-lext"], "dg": ["dg.o"], "crod": ["crod.o"], "clarge": ["clarge.o"],
               "two-objects": ["tl.o", "rn.o"]}
A64_OBJECTS = {"tl": ["tl.o"], "rg": ["rg.o"], "ru": ["ru.o", "-L.", "-lext"], "crod": ["crod.o"],
               "a32": ["a32.o"], "a32l": ["a32l.o"], "movw": ["movw.o"], "movwl": ["movwl.o"],
               "adrp": ["adrp.o"], "adrpu": ["adrpu.o", "-L.", "-lext"], "adrpl": ["adrpl.o"],
               "adrph": ["adrph.o"], "ldst": ["ldst.o", "gdef.o"]}
# The fast lane: one case of each kind of outcome; the whole matrix is slow.
X86_FAST = [("tl", "shared", "default"), ("tg", "pie", "default"), ("rn", "pie", "default"),
            ("crod", "shared", "ztext"), ("crod", "pie", "warn"), ("ru", "shared", "warn"),
            ("two-objects", "shared", "ztext"), ("clarge", "shared", "ztext-then-notext"),
            ("crod", "exec", "ztext"), ("dg", "shared", "ztext")]
A64_FAST = [("tl", "shared", "ztext"), ("rg", "pie", "warn"), ("adrp", "shared", "default"),
            ("adrpu", "pie", "default"), ("movw", "shared", "default"), ("a32l", "pie", "default"),
            ("a32", "exec", "default"), ("ldst", "shared", "znotext"), ("adrph", "shared", "default")]


def _write_and_build(d: Path, cc: str, asm: str, asm_sources: dict[str, str], c_sources: dict[str, str]) -> None:
    for name, text in {**asm_sources, **c_sources}.items():
        (d / name).write_text(text + (_STACK if name.endswith(".s") else ""))
    for name in asm_sources:
        subprocess.run([asm, name, "-o", name[:-2] + ".o"], cwd=d, check=True)
    plain = [n for n in c_sources if n not in ("clarge.c", "main.c", "ext.c")]
    subprocess.run([cc, "-c", "-O0", "-fno-pic", *plain], cwd=d, check=True)
    if "clarge.c" in c_sources:
        subprocess.run([cc, "-c", "-fno-pic", "-mcmodel=large", "clarge.c"], cwd=d, check=True)
    subprocess.run([cc, "-c", "-fPIC", "main.c"], cwd=d, check=True)
    subprocess.run([cc, "-shared", "-fPIC", "ext.c", "-o", "libext.so"], cwd=d, check=True)


@pytest.fixture(scope="module")
def x86(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("textrel-x86")
    _write_and_build(d, "gcc", "as", X86_SOURCES, C_SOURCES)
    return d


@pytest.fixture(scope="module")
def aarch64(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    if shutil.which("aarch64-linux-gnu-gcc") is None or shutil.which("aarch64-linux-gnu-as") is None:
        pytest.skip("needs gcc-aarch64-linux-gnu")
    d = tmp_path_factory.mktemp("textrel-aarch64")
    shim = d / "shim"
    shim.mkdir()
    # collect2 of a cross driver runs TARGET-ld.lld / TARGET-ld.mold from PATH.
    for name, real in (("ld.lld", "ld.lld"), ("ld.mold", "mold")):
        found = shutil.which(real)
        if found:
            (shim / f"aarch64-linux-gnu-{name}").symlink_to(found)
    _write_and_build(d, "aarch64-linux-gnu-gcc", "aarch64-linux-gnu-as", A64_SOURCES, A64_C_SOURCES)
    return d, {**os.environ, "PATH": f"{shim}:{os.environ.get('PATH', '')}"}


def _body(line: str) -> str:
    """A message line without the program that starts it (collect2 runs the linker by path)."""
    if line.startswith(">>>"):
        return line
    return line.split(": ", 1)[1] if ": " in line else line


def _agree(words: list[str], cwd: Path, env: dict[str, str] | None = None) -> LinkReport:
    real = subprocess.run(words, cwd=cwd, capture_output=True, text=True, timeout=120, env=env)
    report = build_report(resolve_link_line(words, cwd=str(cwd), env=env), env=env)
    (cwd / "out").unlink(missing_ok=True)
    lines = real.stderr.splitlines()
    predicted = [e.message for e in report.errors if e.shown and e.kind in _PIC_KINDS]
    assert report.links == (real.returncode == 0), (words, real.stderr, [e.message for e in report.errors])
    real_errors = Counter(_body(x) for x in lines if _ERROR_LINE.search(x) and "warning" not in x)
    assert Counter(_body(m.splitlines()[0]) for m in predicted) == real_errors, (words, real.stderr, predicted)
    real_warnings = Counter(_body(x) for x in lines if _WARNING_LINE.search(x))
    textrel_warnings = [w for w in report.warnings if _WARNING_LINE.search(w)]
    assert Counter(_body(w) for w in textrel_warnings) == real_warnings, (words, real.stderr, report.warnings)
    return report


def _x86_case(d: Path, linker: str, objects: str, out: str, opt: str) -> None:
    words = ["gcc", f"-fuse-ld={linker}", *OUTPUTS[out], *X86_OBJECTS[objects], *OPTIONS[opt], "-o", "out"]
    report = _agree(words, d)
    if not report.links:
        assert "-fPIC" in report.errors[0].explanation


def _a64_case(project: tuple[Path, dict[str, str]], linker: str, objects: str, out: str, opt: str) -> None:
    d, env = project
    if linker in ("lld", "mold") and not any((d / "shim").iterdir()):
        pytest.skip("no lld/mold to link aarch64 with")
    words = ["aarch64-linux-gnu-gcc", f"-fuse-ld={linker}", *OUTPUTS[out], *A64_OBJECTS[objects],
             *OPTIONS[opt], "-o", "out"]
    report = _agree(words, d, env)
    if not report.links:
        assert "-fPIC" in report.errors[0].explanation


@pytest.mark.parametrize("linker", LINKERS)
@pytest.mark.parametrize("case", X86_FAST, ids="-".join)
def test_x86_64_text_relocations_agree_with_the_real_linker(x86: Path, linker: str, case: tuple[str, str, str]) -> None:
    _x86_case(x86, linker, *case)


@pytest.mark.parametrize("linker", LINKERS)
@pytest.mark.parametrize("case", A64_FAST, ids="-".join)
def test_aarch64_non_pic_relocations_agree_with_the_real_linker(
        aarch64: tuple[Path, dict[str, str]], linker: str, case: tuple[str, str, str]) -> None:
    _a64_case(aarch64, linker, *case)


@pytest.mark.slow
@pytest.mark.parametrize("linker", LINKERS)
def test_the_whole_x86_64_matrix_agrees(x86: Path, linker: str) -> None:
    for objects in X86_OBJECTS:
        for out in OUTPUTS:
            for opt in OPTIONS:
                _x86_case(x86, linker, objects, out, opt)


@pytest.mark.slow
@pytest.mark.parametrize("linker", LINKERS)
def test_the_whole_aarch64_matrix_agrees(aarch64: tuple[Path, dict[str, str]], linker: str) -> None:
    for objects in A64_OBJECTS:
        for out in OUTPUTS:
            for opt in OPTIONS:
                _a64_case(aarch64, linker, objects, out, opt)


def test_z_notext_is_offered_where_it_links_and_only_there(x86: Path) -> None:
    """A refused text relocation gets `-Wl,-z,notext` as a simulated workaround; a
    relocation -z notext cannot help (R_X86_64_32 of non-PIC code) gets none that links."""
    words = ["gcc", "-fuse-ld=lld" if "lld" in LINKERS else f"-fuse-ld={LINKERS[0]}", "-shared", "crod.o",
             "-Wl,-z,text", "-o", "out"]
    report = build_report(resolve_link_line(words, cwd=str(x86)), fix=True)
    assert not report.links and report.errors[0].kind == LinkErrorKind.TEXT_RELOCATION
    notext = [f for f in report.fixes if "notext" in f.description]
    assert len(notext) == 1 and notext[0].fixes_alone and notext[0].reason.startswith("a workaround")
    assert notext[0].user_argv[-1] == "-Wl,-z,notext" and notext[0].user_links is True
    subprocess.run(["gcc", "-c", "-fno-pic", "-O1", "-o", "abs32.o", "-x", "c", "-"], cwd=x86, check=True,
                   input="int g2 = 1;\nint *a(void) { return &g2; }\n", text=True)
    report = build_report(resolve_link_line(["gcc", f"-fuse-ld={LINKERS[0]}", "-shared", "abs32.o", "-o", "out"],
                                            cwd=str(x86)), fix=True)
    assert not report.links and not any(f.fixes_alone for f in report.fixes)


def test_the_facts_name_each_relocation_family(x86: Path) -> None:
    from ldscope.elf import ElfFile
    from ldscope.linker.inputs import PicFamily, object_facts

    def facts(name: str) -> list[tuple[str, str, str, bool]]:
        elf = ElfFile((x86 / name).read_bytes(), name)
        return [(r.family.value, r.type, r.target, r.local) for r in object_facts(elf, name).pic_relocs]

    assert facts("tl.o") == [(PicFamily.ABSOLUTE_WORD.value, "R_X86_64_64", ".text", True)]
    assert facts("crod.o") == [(PicFamily.ABSOLUTE_WORD.value, "R_X86_64_64", "g", False)]
    assert facts("dg.o") == []  # writable data takes an ordinary dynamic relocation
