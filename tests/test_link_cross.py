"""Cross toolchains end to end (issue 11, item 3), with Debian's gcc-aarch64-linux-gnu (and
gcc-riscv64-linux-gnu when installed): the driver's own linker (`-print-prog-name=ld`), its
own default search directories (that ld's `--verbose` SEARCH_DIRs), incompatible libraries
skipped, messages naming the real linker path, and `--confirm` running that linker."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from ldscope.analysis import build_report
from ldscope.linker.frontend import resolve_link_line

TARGETS = [t for t in ("aarch64-linux-gnu", "riscv64-linux-gnu") if shutil.which(f"{t}-gcc")]
pytestmark = pytest.mark.skipif(not TARGETS, reason="install gcc-aarch64-linux-gnu (.ci/run does)")


@pytest.fixture(scope="module", params=TARGETS)
def cross(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Path]:
    target = str(request.param)
    d = tmp_path_factory.mktemp(target)
    cc = f"{target}-gcc"
    (d / "l.c").write_text("double sqrt(double);\nint lib(double x) { return (int)sqrt(x); }\n")
    (d / "m.c").write_text("int lib(double);\nint main(void) { return lib(2.0); }\n")
    (d / "z.c").write_text("int zz(void) { return 1; }\n")
    (d / "mz.c").write_text("int zz(void);\nint main(void) { return zz(); }\n")
    (d / "x86").mkdir()
    (d / "own").mkdir()
    for words in ([cc, "-c", "m.c", "mz.c"], [cc, "-shared", "-fPIC", "-o", "libl.so", "l.c", "-lm"],
                  ["gcc", "-shared", "-fPIC", "-o", "x86/libzz.so", "z.c"],
                  [cc, "-shared", "-fPIC", "-o", "own/libzz.so", "z.c"]):
        subprocess.run(words, cwd=d, check=True)
    return target, d


CASES = {
    # libl.so needs libm.so.6: found in the target's directories, never the host's x86-64 libm.
    "needed-through-own-dirs": ["m.o", "-L.", "-ll", "-o", "m"],
    "missing-library": ["m.o", "-L.", "-ll", "-lmissing", "-o", "m"],
    "missing-library-fuse-ld-bfd": ["-fuse-ld=bfd", "m.o", "-L.", "-ll", "-lmissing", "-o", "m"],
    "incompatible-skipped": ["mz.o", "-Lx86", "-Lown", "-lzz", "-o", "mz"],
    "incompatible-only": ["mz.o", "-Lx86", "-lzz", "-o", "mz"],
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_cross_links_agree_with_the_cross_linker(cross: tuple[str, Path], case: str) -> None:
    target, d = cross
    words = [f"{target}-gcc", *CASES[case]]
    real = subprocess.run(words, cwd=d, capture_output=True, text=True, timeout=120)
    line = resolve_link_line(words, cwd=str(d))
    assert line.linker_path is not None and target in line.linker_path
    report = build_report(line)
    assert report.links == (real.returncode == 0), (case, real.stderr, [e.message for e in report.errors])
    assert "x86_64-linux-gnu" not in " ".join(i.path or "" for i in report.inputs)
    if real.returncode != 0:
        real_errors = [x for x in real.stderr.splitlines() if "skipping incompatible" not in x]
        # The same first line, program path included.
        assert report.errors[0].message.splitlines()[0] == real_errors[0]


def test_a_raw_cross_ld_line_searches_its_own_directories(cross: tuple[str, Path]) -> None:
    target, d = cross
    report = build_report(resolve_link_line([f"{target}-ld", "-o", "x", "m.o", "-lc"], cwd=str(d)))
    libc = [i.path for i in report.inputs if i.path and "libc.so.6" in i.path]
    assert libc and all(f"/usr/{target}/" in p for p in libc), libc


def test_confirm_runs_the_line_s_own_linker(cross: tuple[str, Path]) -> None:
    target, d = cross
    line = resolve_link_line([f"{target}-gcc", "m.o", "-L.", "-ll", "-lmissing", "-o", "m"], cwd=str(d))
    report = build_report(line, fix=True, confirm=True)
    assert report.confirmation is not None
    assert target in report.confirmation.program and report.confirmation.agrees is True
    removal = [f for f in report.fixes if f.fixes_alone]
    assert not removal or all(f.confirmed for f in removal)


def test_the_stack_protector_incident_is_predicted_exactly(tmp_path: Path) -> None:
    """An aarch64 archive built with the stack protector after the last -lc: glibc's
    __stack_chk_guard is in ld-linux-aarch64.so.1, reached only through libc.so.6's DT_NEEDED."""
    if "aarch64-linux-gnu" not in TARGETS:
        pytest.skip("needs gcc-aarch64-linux-gnu")
    cc = "aarch64-linux-gnu-gcc"
    (tmp_path / "stack.c").write_text("char buf[64];\nvoid f(const char *s) { char b[32]; "
                                      "__builtin_strcpy(b, s); buf[0] = b[0]; }\n")
    (tmp_path / "m2.c").write_text('void f(const char *);\nint main(void) { f("x"); return 0; }\n')
    subprocess.run([cc, "-c", "-fstack-protector-all", "stack.c"], cwd=tmp_path, check=True)
    subprocess.run([cc, "-c", "-fno-stack-protector", "m2.c"], cwd=tmp_path, check=True)
    subprocess.run(["aarch64-linux-gnu-ar", "rcs", "libstack.a", "stack.o"], cwd=tmp_path, check=True)
    words = [cc, "-nodefaultlibs", "m2.o", "-lc", "libstack.a", "-lgcc", "-o", "m3"]
    real = subprocess.run(words, cwd=tmp_path, capture_output=True, text=True)
    report = build_report(resolve_link_line(words, cwd=str(tmp_path)), fix=True)
    assert real.returncode != 0 and not report.links
    assert report.errors[0].message.splitlines() == real.stderr.splitlines()[:2]
    assert any(f.fixes_alone for f in report.fixes)


@pytest.mark.slow  # writes two 70 MiB and one 140 MiB object
def test_aarch64_branch_range_inside_and_between_sections(tmp_path: Path) -> None:
    """A B/BL reaches ±128 MiB. Out of reach inside one input section (a 140 MiB .skip):
    bfd and gold fail, lld links, mold 1.10 crashes. Between two input sections all four
    insert veneers or thunks and link. Each against the real linker."""
    if shutil.which("aarch64-linux-gnu-as") is None:
        pytest.skip("needs binutils-aarch64-linux-gnu")
    one = "\t.text\n\t.globl _start\n_start:\n\tbl far_func\n\tb far_func\n\tret\n\t.skip 140*1024*1024\n" \
          "\t.globl far_func\nfar_func:\n\tret\n"
    (tmp_path / "a.s").write_text(one)
    (tmp_path / "b1.s").write_text("\t.text\n\t.globl _start\n_start:\n\tbl far_func\n\tret\n\t.skip 70*1024*1024\n")
    (tmp_path / "b2.s").write_text("\t.text\n\t.skip 70*1024*1024\n\t.globl far_func\nfar_func:\n\tret\n")
    for name in ("a", "b1", "b2"):
        subprocess.run(["aarch64-linux-gnu-as", f"{name}.s", "-o", f"{name}.o"], cwd=tmp_path, check=True)
    real_programs = {"bfd": ["aarch64-linux-gnu-ld"], "gold": ["aarch64-linux-gnu-ld.gold"],
                     "lld": ["ld.lld", "-m", "aarch64linux"], "mold": ["mold", "-m", "aarch64linux"]}
    for linker, program in real_programs.items():
        if shutil.which(program[0]) is None:
            continue
        for inputs, expect_links in ((["a.o"], linker == "lld"), (["b1.o", "b2.o"], True)):
            real = subprocess.run([*program, *inputs, "-o", "out"], cwd=tmp_path, capture_output=True, text=True)
            assert (real.returncode == 0) == expect_links, (linker, inputs, real.returncode, real.stderr[:300])
            report = build_report(resolve_link_line(["aarch64-linux-gnu-ld", *inputs, "-o", "out"],
                                                    cwd=str(tmp_path), linker=linker))
            assert report.links == expect_links, (linker, inputs, [e.message for e in report.errors])
            if linker == "bfd" and not expect_links:
                wanted = next(x for x in real.stderr.splitlines() if "relocation truncated to fit" in x)
                assert report.errors[0].message.endswith(wanted)
            (tmp_path / "out").unlink(missing_ok=True)


def test_lld_names_itself_as_the_cross_driver_runs_it() -> None:
    from ldscope.linker import program_label

    assert program_label("lld", "/opt/shim/aarch64-linux-gnu-ld.lld", {}) == "aarch64-linux-gnu-ld.lld"
    assert program_label("lld", "/usr/bin/ld.lld", {}) == "ld.lld"
    assert program_label("lld", "/usr/lib/gcc/x86_64-linux-gnu/12/collect2", {}) == "ld.lld"
