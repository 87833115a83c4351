"""Static links against the four real linkers (issue 11, item 1).

A shared library on a `-static` line, or by path after `-Bstatic`: bfd and lld refuse it
("attempted static link of dynamic object"), gold only in a `-static` link ("cannot mix
-static with dynamic object"), mold links it. gold refuses `-static-pie` outright (gcc passes
`--no-dynamic-linker`, which gold does not know). Each case is run through the real linker
(`gcc -fuse-ld=X`) and through ldscope with the same line; verdicts and the first message
line must agree.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from tests.real_link import agree_with_real_linker

LINKERS = [name for name, program in (("bfd", "ld.bfd"), ("gold", "ld.gold"), ("lld", "ld.lld"),
                                      ("mold", "mold")) if shutil.which(program)]
pytestmark = pytest.mark.skipif(shutil.which("gcc") is None or not LINKERS, reason="gcc and linkers needed")

CASES = {
    "static-with-so": ["-static", "main.o", "./libfoo.so", "-o", "m"],
    "bstatic-so-by-path": ["main.o", "-Wl,-Bstatic", "./libfoo.so", "-Wl,-Bdynamic", "-o", "m"],
    "static-pie": ["-static-pie", "main.o", "foo.o", "-o", "m"],
    "static-archive": ["-static", "main.o", "libfoo.a", "-o", "m"],
    # g++ -static: libstdc++.a(eh_globals.o) calls __tls_get_addr in general-dynamic TLS
    # sequences, which every linker relaxes away in an executable.
    "gxx-static": ["-static", "cxx.o", "-o", "m"],
    "gxx-static-libstdcxx": ["-static-libstdc++", "-static-libgcc", "cxx.o", "-o", "m"],
    "gxx-static-pie": ["-static-pie", "cxx.o", "-o", "m"],
}


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("static")
    (d / "foo.c").write_text("int foo(void) { return 1; }\n")
    (d / "main.c").write_text("int foo(void);\nint main(void) { return foo(); }\n")
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", "libfoo.so", "foo.c"], cwd=d, check=True)
    subprocess.run(["gcc", "-c", "-fPIE", "main.c", "foo.c"], cwd=d, check=True)
    subprocess.run(["ar", "rcs", "libfoo.a", "foo.o"], cwd=d, check=True)
    (d / "cxx.cc").write_text("#include <iostream>\n#include <stdexcept>\nthread_local int n = 1;\n"
                              "int main() { try { throw std::runtime_error(\"x\"); } catch (std::exception &e) "
                              "{ std::cout << e.what() << n << std::endl; } }\n")
    subprocess.run(["g++", "-c", "-fPIE", "cxx.cc"], cwd=d, check=True)
    return d


@pytest.mark.parametrize("linker", LINKERS)
@pytest.mark.parametrize("case", sorted(CASES))
def test_static_links_agree_with_the_real_linker(project: Path, linker: str, case: str) -> None:
    words = ["g++" if case.startswith("gxx") else "gcc", f"-fuse-ld={linker}", *CASES[case]]
    agree_with_real_linker(words, project)
    (project / "m").unlink(missing_ok=True)


PIC_CASES = {
    "shared-from-non-pic-object": ["-shared", "a.o", "-o", "liba.so"],
    "shared-from-non-pic-archive-member": ["-shared", "t.o", "-L.", "-lnp", "-o", "libt.so"],
    "pie-from-non-pic-object": ["-pie", "m.o", "np.o", "-o", "m"],
    "exec-from-non-pic-object": ["-no-pie", "m.o", "np.o", "-o", "m"],
    "shared-from-pic-objects": ["-shared", "t.o", "pic.o", "-o", "libt.so"],
}


@pytest.fixture(scope="module")
def pic_project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("pic")
    (d / "a.c").write_text("int g = 1;\nstatic int l = 2;\nlong addr_g(void) { return (long)&g; }\n"
                           "long addr_l(void) { return (long)&l; }\n")
    (d / "np.c").write_text('int g2 = 1;\nconst char *s(void) { return "hello"; }\nint get(void) { return g2; }\n')
    (d / "m.c").write_text("int get(void);\nint main(void) { return get(); }\n")
    (d / "t.c").write_text("const char *s(void);\nconst char *t(void) { return s(); }\n")
    subprocess.run(["gcc", "-c", "-O1", "-fno-pic", "a.c", "np.c", "m.c"], cwd=d, check=True)
    subprocess.run(["gcc", "-c", "-O1", "-fPIC", "t.c"], cwd=d, check=True)
    subprocess.run(["gcc", "-c", "-O1", "-fPIC", "np.c", "-o", "pic.o"], cwd=d, check=True)
    subprocess.run(["ar", "rcs", "libnp.a", "np.o"], cwd=d, check=True)
    return d


@pytest.mark.parametrize("linker", LINKERS)
@pytest.mark.parametrize("case", sorted(PIC_CASES))
def test_non_pic_objects_agree_with_the_real_linker(pic_project: Path, linker: str, case: str) -> None:
    words = ["gcc", f"-fuse-ld={linker}", *PIC_CASES[case]]
    report, real = agree_with_real_linker(words, pic_project)
    if real.returncode != 0:
        assert "recompile" in report.errors[0].explanation


VISIBILITY_CASES = {
    "shared-hidden-undefined": ["-shared", "h.o", "-o", "libh.so"],
    "shared-default-undefined": ["-shared", "u.o", "-o", "libu.so"],
    "shared-default-undefined-z-defs": ["-shared", "u.o", "-Wl,-z,defs", "-o", "libu.so"],
    "shared-default-undefined-no-undefined": ["-shared", "u.o", "-Wl,--no-undefined", "-o", "libu.so"],
    "shared-hidden-defined": ["-shared", "h.o", "hdef.o", "-o", "libh.so"],
}


@pytest.fixture(scope="module")
def visibility_project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("visibility")
    (d / "h.c").write_text('__attribute__((visibility("hidden"))) extern int hx;\nint f(void) { return hx; }\n')
    (d / "hdef.c").write_text('__attribute__((visibility("hidden"))) int hx = 3;\n')
    (d / "u.c").write_text("extern int ux;\nint g(void) { return ux; }\n")
    subprocess.run(["gcc", "-c", "-fPIC", "h.c", "hdef.c", "u.c"], cwd=d, check=True)
    return d


@pytest.mark.parametrize("linker", LINKERS)
@pytest.mark.parametrize("case", sorted(VISIBILITY_CASES))
def test_undefined_symbols_of_a_shared_link_agree_with_the_real_linker(
        visibility_project: Path, linker: str, case: str) -> None:
    words = ["gcc", f"-fuse-ld={linker}", *VISIBILITY_CASES[case]]
    agree_with_real_linker(words, visibility_project, first_line=linker in ("gold", "lld") and "hidden" in case)


def test_no_static_libc_is_offered_to_a_dynamic_link(tmp_path: Path) -> None:
    """`-Wl,-Bstatic -lm` in a dynamic link: libm.a's members need `_dl_x86_cpu_features`,
    which only glibc's libc.a defines (for static programs). The real link fails; ldscope
    predicts it, and neither offers `-lc` (gold and mold refuse libc.a in a dynamic link) nor
    tells the user to add it (found by zstd's paramgrill in the real-project corpus)."""
    from ldscope.analysis import build_report
    from ldscope.linker.frontend import resolve_link_line

    if not Path("/usr/lib/x86_64-linux-gnu/libc.a").exists():
        pytest.skip("no static glibc")
    (tmp_path / "m.c").write_text("#include <math.h>\nint main(int c, char **v) { return (int)(log(c) + exp(c)); }\n")
    subprocess.run(["gcc", "-c", "m.c"], cwd=tmp_path, check=True)
    words = ["gcc", "m.o", "-Wl,-Bstatic", "-lm", "-Wl,-Bdynamic", "-o", "m"]
    real = subprocess.run(words, cwd=tmp_path, capture_output=True, text=True)
    if "_dl_x86_cpu_features" not in real.stderr:
        pytest.skip("this glibc's libm.a does not refer to _dl_x86_cpu_features")
    assert real.returncode != 0
    report = build_report(resolve_link_line(words, cwd=str(tmp_path), linker="bfd"), fix=True)
    assert not report.links
    assert {e.symbol for e in report.errors} == {"_dl_x86_cpu_features"}
    assert not any("-lc" in f.argv for f in report.fixes)
    assert all("for static programs only" in e.explanation and "(add -lc)" not in e.explanation
               for e in report.errors)
