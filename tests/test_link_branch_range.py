"""AArch64 branch range against the whole output (issue 11 item 7): the output-layout estimate
checked against the real output's section sizes, and each predicted branch-range failure (or
success) checked against bfd, gold, lld and mold run through the cross driver
(`aarch64-linux-gnu-gcc -fuse-ld=L`; lld and mold through a PATH directory of
`aarch64-linux-gnu-ld.lld`/`.mold` symlinks, as collect2 looks for them). The big inputs are
`.skip`s in assembly, copied sparse."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from ldscope.analysis import build_report
from ldscope.elf import ElfFile
from ldscope.linker import estimate_layout, simulate_argv
from ldscope.linker.frontend import resolve_link_line
from ldscope.linker.inputs import output_section_of
from ldscope.vocab import LinkErrorKind

CC = "aarch64-linux-gnu-gcc"
pytestmark = pytest.mark.skipif(shutil.which(CC) is None or shutil.which("aarch64-linux-gnu-as") is None,
                                reason="install gcc-aarch64-linux-gnu (.ci/run does)")
LINKERS = ("bfd", "gold", "lld", "mold")
START = "\t.text\n\t.globl _start\n_start:\n"


def _assemble(d: Path, name: str, text: str) -> str:
    """Assemble `name`.s into a sparse `name`.o (gas writes a .skip's zeros out)."""
    (d / f"{name}.s").write_text(text)
    subprocess.run(["aarch64-linux-gnu-as", f"{name}.s", "-o", f"{name}.full.o"], cwd=d, check=True)
    subprocess.run(["cp", "--sparse=always", f"{name}.full.o", f"{name}.o"], cwd=d, check=True)
    (d / f"{name}.full.o").unlink()
    return f"{name}.o"


@pytest.fixture(scope="module")
def shim(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, frozenset[str]]:
    """A PATH with aarch64-linux-gnu-ld.lld/.mold, and the linkers installed."""
    d = tmp_path_factory.mktemp("shim")
    have = {"bfd", "gold"} if shutil.which("aarch64-linux-gnu-ld.gold") else {"bfd"}
    for name, real in (("ld.lld", "ld.lld"), ("ld.mold", "mold")):
        found = shutil.which(real)
        if found:
            (d / f"aarch64-linux-gnu-{name}").symlink_to(found)
            have.add("lld" if real == "ld.lld" else "mold")
    return f"{d}{os.pathsep}{os.environ.get('PATH', '')}", frozenset(have)


def _compare(d: Path, args: list[str], expect: dict[str, bool], shim: tuple[str, frozenset[str]],
             monkeypatch: pytest.MonkeyPatch) -> dict[str, tuple[list[str], list[str]]]:
    """Link with each installed linker and predict; the verdicts must be `expect`'s and
    ldscope's; returns linker -> (real stderr lines, predicted messages)."""
    path, have = shim
    monkeypatch.setenv("PATH", path)
    seen: dict[str, tuple[list[str], list[str]]] = {}
    for linker in LINKERS:
        if linker not in have:
            continue
        words = [CC, f"-fuse-ld={linker}", *args]
        real = subprocess.run(words, cwd=d, capture_output=True, text=True, timeout=300)
        for out in ("out", "out.so"):
            (d / out).unlink(missing_ok=True)
        report = build_report(resolve_link_line(words, cwd=str(d)))
        assert (real.returncode == 0) == expect[linker], (linker, real.stderr[:400])
        assert report.links == expect[linker], (linker, [e.message for e in report.errors])
        seen[linker] = (real.stderr.splitlines(), [e.message for e in report.errors])
    return seen


def _after_program(line: str) -> str:
    """A message line without the program's name (collect2 runs the linker by path)."""
    return line.split(": ", 1)[1] if line.startswith(("/", "aarch64", "ld.", "mold")) else line


# --------------------------------------------------------------------------- the estimate

def _section_sizes(path: Path) -> dict[str, int]:
    with ElfFile.open(path) as elf:
        return {s.name: s.size for s in elf.sections}


def test_output_section_names_follow_the_default_script() -> None:
    assert output_section_of(".text.unlikely.f") == (".text", 0)
    assert output_section_of(".text.hot") == (".text", 3)
    assert output_section_of(".text.f") == (".text", 5)
    assert output_section_of(".textual") == (".textual", 0)  # an orphan, not .text
    assert output_section_of(".rodata.str1.1") == (".rodata", 0)
    assert output_section_of(".rodata1") == (".rodata1", 0)
    assert output_section_of(".data.rel.ro.local") == (".data.rel.ro", 0)
    assert output_section_of(".bss.x") == (".bss", 0)
    assert output_section_of(".mysec") == (".mysec", 0)


def test_the_estimate_matches_the_real_output_s_section_sizes(tmp_path: Path) -> None:
    """Input sections with alignments, spread over .text (three ranks), .rodata, .data and
    .bss in two objects: the estimate against bfd's output (-nostdlib: nothing added)."""
    _assemble(tmp_path, "e1", START + "\tret\n\t.section .text.hot.h,\"ax\"\n\t.balign 64\n\tnop\n\tret\n"
              "\t.section .rodata\n\t.byte 1\n\t.section .data.d,\"aw\"\n\t.balign 32\n\t.skip 100\n"
              "\t.section .bss\n\t.balign 16\n\t.skip 3000\n")
    _assemble(tmp_path, "e2", "\t.text\n\t.balign 128\n\t.skip 1000\n\t.section .text.unlikely,\"ax\"\n\t.skip 12\n"
              "\t.section .rodata.x,\"a\"\n\t.balign 8\n\t.skip 20\n\t.data\n\t.skip 7\n\t.section .bss.b,\"aw\",@nobits\n"
              "\t.balign 64\n\t.skip 64\n")
    words = [CC, "-fuse-ld=bfd", "-nostdlib", "-static", "e1.o", "e2.o", "-o", "out"]
    subprocess.run(words, cwd=tmp_path, check=True)
    real = _section_sizes(tmp_path / "out")
    sim = simulate_argv(resolve_link_line(words, cwd=str(tmp_path)))
    layout = estimate_layout(sim.outcome.units)
    for name in (".text", ".rodata", ".data", ".bss"):
        estimate = layout.section(name)
        assert estimate is not None and estimate.size == real[name], (name, estimate, real[name])
    text = layout.section(".text")
    assert text is not None and text.inputs == 4 and text.align == 128 and text.min_size == 4 + 8 + 1000 + 12


def test_the_estimate_of_a_driver_link_counts_the_crt_objects(tmp_path: Path) -> None:
    """With the driver's crt files, .text's inputs are all counted (the estimate is never
    more than the real section, which adds no code here but may add veneers)."""
    (tmp_path / "m.c").write_text("int f(int x) { return x * 3; }\nint main(void) { return f(2); }\n")
    subprocess.run([CC, "-c", "m.c"], cwd=tmp_path, check=True)
    words = [CC, "-fuse-ld=bfd", "m.o", "-o", "out"]
    subprocess.run(words, cwd=tmp_path, check=True)
    real = _section_sizes(tmp_path / "out")
    line = resolve_link_line(words, cwd=str(tmp_path))
    sim = simulate_argv(line)
    text = estimate_layout(sim.outcome.units).section(".text")
    assert text is not None and text.inputs >= 4  # crt1.o, crti.o, crtbegin.o, m.o, ...
    assert text.min_size <= text.size == real[".text"]


# --------------------------------------------------------------------------- short branches

def test_condbr19_and_tstbr14_get_no_veneer(tmp_path: Path, shim: tuple[str, frozenset[str]],
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """B.cond (±1 MiB) and TBZ (±32 KiB) out of reach, inside one section (exact) and between
    two objects (estimated): every linker fails, each with its own words; mold 1.10 does not
    know TSTBR14 at all."""
    _assemble(tmp_path, "c1", START + "\tb.eq cfar\n\tret\n\t.skip 2*1024*1024\n")
    _assemble(tmp_path, "c2", "\t.text\n\t.globl cfar\ncfar:\n\tret\n")
    _assemble(tmp_path, "ci", START + "\tb.eq cin\n\tret\n\t.skip 2*1024*1024\n\t.globl cin\ncin:\n\tret\n")
    _assemble(tmp_path, "t1", START + "\ttbz x0, #3, tfar\n\tret\n\t.skip 64*1024\n")
    _assemble(tmp_path, "t2", "\t.text\n\t.globl tfar\ntfar:\n\tret\n")
    fails = dict.fromkeys(LINKERS, False)
    for objects in (["c1.o", "c2.o"], ["ci.o"], ["t1.o", "t2.o"]):
        seen = _compare(tmp_path, ["-nostdlib", "-static", *objects, "-o", "out"], fails, shim, monkeypatch)
        for linker, (real, predicted) in seen.items():
            wanted = [x for x in real if "collect2" not in x and "in function" not in x]
            assert len(predicted) == len(wanted) or linker == "lld", (linker, real, predicted)
            got = predicted[0].splitlines()
            if linker == "bfd":
                assert got[0].endswith(wanted[0]), (got, wanted)
            else:
                assert [_after_program(x) for x in got] == [_after_program(x) for x in wanted[:len(got)]]


def test_an_in_reach_condbr19_across_objects_links(tmp_path: Path) -> None:
    _assemble(tmp_path, "n1", START + "\tb.eq nfar\n\tret\n\t.skip 512*1024\n")
    _assemble(tmp_path, "n2", "\t.text\n\t.globl nfar\nnfar:\n\tret\n")
    report = build_report(resolve_link_line([CC, "-fuse-ld=bfd", "-nostdlib", "-static", "n1.o", "n2.o", "-o", "out"],
                                            cwd=str(tmp_path)))
    assert report.links


def test_a_layout_changing_option_keeps_the_estimate_silent(tmp_path: Path) -> None:
    """--gc-sections may drop what lies between caller and target: no estimate is trusted."""
    _assemble(tmp_path, "g1", START + "\tb.eq gfar\n\tret\n\t.section .text.pad,\"ax\"\n\t.skip 2*1024*1024\n")
    _assemble(tmp_path, "g2", "\t.text\n\t.globl gfar\ngfar:\n\tret\n")
    base = [CC, "-fuse-ld=bfd", "-nostdlib", "-static", "g1.o", "g2.o", "-o", "out"]
    assert not build_report(resolve_link_line(base, cwd=str(tmp_path))).links
    quiet = build_report(resolve_link_line([*base, "-Wl,--gc-sections"], cwd=str(tmp_path)))
    assert quiet.links
    real = subprocess.run([*base, "-Wl,--gc-sections"], cwd=tmp_path, capture_output=True, text=True)
    assert real.returncode == 0  # the padding was collected: the branch reaches


# --------------------------------------------------------------------------- 128 MiB cases

@pytest.fixture(scope="module")
def huge(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("huge")
    skip = "\t.skip 140*1024*1024\n"
    _assemble(d, "hmulti", START + "\tbl nfn\n\tbl nfn2\n\tb nfn\n" + skip + "\tret\n")
    _assemble(d, "nxt", "\t.text\n\t.globl nfn\nnfn:\n\tret\n\t.globl nfn2\nnfn2:\n\tret\n")
    _assemble(d, "hfini", START + "\tbl ffn\n" + skip + "\tret\n\t.section .fini,\"ax\"\n\t.globl ffn\nffn:\n\tret\n")
    _assemble(d, "init", START + skip + "\tbl initfn\n\tret\n\t.section .init,\"ax\"\n\t.globl initfn\ninitfn:\n\tret\n")
    _assemble(d, "weak", START + "\t.weak wf\n" + skip + "\tbl wf\n\tb wf\n\tret\n")
    _assemble(d, "filler", "\t.text\n\t.globl filler\nfiller:\n\tret\n\t.skip 130*1024*1024\n")
    _assemble(d, "plt", "\t.text\n\t.globl main\nmain:\n\tbl puts\n" + skip + "\tret\n")
    _assemble(d, "plt0", "\t.text\n\t.globl main\nmain:\n\tbl puts\n" + skip + "\tbl puts\n\tb puts\n")
    return d


STATIC = ["-nostdlib", "-static"]


@pytest.mark.slow  # 140-270 MiB of (sparse) objects, each linked four times
@pytest.mark.parametrize(("case", "args", "fails"), [
    # Calls from the start of a 140 MiB section to the next object: bfd and gold cannot place
    # the veneer (after the section), lld and mold put a thunk before it.
    ("to-next-object", [*STATIC, "hmulti.o", "nxt.o"], {"bfd", "gold"}),
    # The same to .fini; the section alone in .text also crashes mold 1.10.
    ("to-fini", [*STATIC, "hfini.o"], {"bfd", "gold", "mold"}),
    # From the end of the section back to .init: the veneer after the section reaches.
    ("back-to-init", [*STATIC, "init.o"], {"mold"}),
    # An undefined weak in a static executable: gold branches to 0.
    ("undefined-weak", [*STATIC, "weak.o"], {"gold", "mold"}),
    # A libc call 130 MiB after the PLT, 140 MiB before the section's end (PIE and -shared).
    ("plt-far", ["filler.o", "plt.o"], {"bfd", "gold"}),
    ("plt-far-shared", ["-shared", "filler.o", "plt.o"], {"bfd", "gold"}),
    # Calls to libc from both ends of a 140 MiB main: the PLT or the veneer is near.
    ("plt-near", ["plt0.o"], set()),
])
def test_branches_across_sections_of_a_huge_output(huge: Path, case: str, args: list[str], fails: set[str],
                                                   shim: tuple[str, frozenset[str]],
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    out = "out.so" if "-shared" in args else "out"
    seen = _compare(huge, [*args, "-o", out], {k: k not in fails for k in LINKERS}, shim, monkeypatch)
    for linker, (real, predicted) in seen.items():
        if linker == "bfd" and real:
            wanted = [x for x in real if "relocation truncated to fit" in x]
            assert len(predicted) == len(wanted)
            assert all(p.endswith(w) for p, w in zip(predicted, wanted)), (predicted, wanted)
        if linker == "gold" and predicted:
            wanted = [x for x in real if "collect2" not in x]
            assert [_after_program(p) for p in predicted] == [_after_program(w) for w in wanted]
    if "bfd" in fails and "bfd" in seen:
        report = build_report(resolve_link_line([CC, "-fuse-ld=bfd", *args, "-o", out], cwd=str(huge)))
        error = report.errors[0]
        assert error.kind == LinkErrorKind.BRANCH_OUT_OF_RANGE
        assert "estimated" in error.explanation and "MiB" in error.explanation and "lld" in error.explanation
