"""The same input named twice, against the four real linkers (issue 11, items 1 and 4).

An object file given twice is two objects whose definitions clash, for every linker (mold
included: it reads an archive or a shared library once however often it is named, not an
object). The fix offered is removing the second copy, and the real linker agrees with it.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from ldscope.analysis import build_report
from ldscope.linker.frontend import resolve_link_line

LINKERS = [name for name, program in (("bfd", "ld.bfd"), ("gold", "ld.gold"), ("lld", "ld.lld"),
                                      ("mold", "mold")) if shutil.which(program)]
pytestmark = pytest.mark.skipif(shutil.which("gcc") is None or not LINKERS, reason="gcc and linkers needed")

CASES = {
    "object-twice": ["main.o", "foo.o", "foo.o"],
    "object-twice-other-path": ["main.o", "foo.o", "./foo.o"],
    "archive-twice": ["main.o", "libf.a", "libf.a"],
    "shared-twice": ["main.o", "./libfoo.so", "./libfoo.so"],
}


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("dups")
    (d / "foo.c").write_text("int foo(void) { return 1; }\n")
    (d / "main.c").write_text("int foo(void);\nint main(void) { return foo(); }\n")
    subprocess.run(["gcc", "-c", "-fPIC", "main.c", "foo.c"], cwd=d, check=True)
    subprocess.run(["gcc", "-shared", "-o", "libfoo.so", "foo.o"], cwd=d, check=True)
    subprocess.run(["ar", "rcs", "libf.a", "foo.o"], cwd=d, check=True)
    return d


@pytest.mark.parametrize("linker", LINKERS)
@pytest.mark.parametrize("case", sorted(CASES))
def test_inputs_named_twice_agree_with_the_real_linker(project: Path, linker: str, case: str) -> None:
    words = ["gcc", f"-fuse-ld={linker}", *CASES[case], "-o", "m"]
    real = subprocess.run(words, cwd=project, capture_output=True, text=True, timeout=120)
    report = build_report(resolve_link_line(words, cwd=str(project)), fix=True)
    assert report.links == (real.returncode == 0), (case, linker, real.stderr)
    if report.links:
        return
    removal = next(f for f in report.fixes if f.description.startswith("remove the second copy of"))
    assert removal.fixes_alone
    fixed = list(words)
    del fixed[len(words) - 3]  # the second copy: last input before -o m
    again = subprocess.run(fixed, cwd=project, capture_output=True, text=True, timeout=120)
    assert again.returncode == 0, again.stderr


@pytest.mark.skipif("lld" not in LINKERS, reason="ld.lld needed")
def test_lld_stops_after_its_error_limit(tmp_path: Path) -> None:
    """lld prints 20 errors, then "too many errors emitted, stopping now" (--error-limit);
    the same 20 are the ones shown, the rest are found but not shown (found on real lines)."""
    (tmp_path / "many.c").write_text("".join(f"int f{k}(void) {{ return {k}; }}\n" for k in range(25)))
    (tmp_path / "main.c").write_text("int f0(void);\nint main(void) { return f0(); }\n")
    subprocess.run(["gcc", "-c", "-fPIC", "many.c", "main.c"], cwd=tmp_path, check=True)
    words = ["gcc", "-fuse-ld=lld", "main.o", "many.o", "many.o", "-o", "m"]
    real = subprocess.run(words, cwd=tmp_path, capture_output=True, text=True)
    reported = [line.split("duplicate symbol: ")[1] for line in real.stderr.splitlines() if "duplicate symbol: " in line]
    assert len(reported) == 20 and "too many errors emitted" in real.stderr
    report = build_report(resolve_link_line(words, cwd=str(tmp_path)))
    shown = [e.symbol for e in report.errors if e.shown]
    assert sorted(shown) == sorted(reported)
    assert sum(1 for e in report.errors if not e.shown) == 5
    unlimited = build_report(resolve_link_line([*words[:-2], "-Wl,--error-limit=0", "-o", "m"], cwd=str(tmp_path)))
    assert sum(1 for e in unlimited.errors if e.shown) == 25


@pytest.mark.skipif("lld" not in LINKERS, reason="ld.lld needed")
def test_lld_error_limit_counts_an_undefined_symbol_once(tmp_path: Path) -> None:
    """lld reports an undefined symbol once, listing every object referring to it, so the
    limit counts symbols, not (symbol, object) pairs: 25 functions left undefined by two
    objects are 20 errors naming 20 symbols (found by the zstd, xz-utils and pcre2 corpus
    projects with their library dropped)."""
    calls = "".join(f"int g{k}(void);\n" for k in range(25))
    body = " + ".join(f"g{k}()" for k in range(25))
    (tmp_path / "a.c").write_text(f"{calls}int main(void) {{ return {body}; }}\n")
    (tmp_path / "b.c").write_text(f"{calls}int b(void) {{ return {body}; }}\n")
    subprocess.run(["gcc", "-c", "-fPIC", "a.c", "b.c"], cwd=tmp_path, check=True)
    words = ["gcc", "-fuse-ld=lld", "a.o", "b.o", "-o", "m"]
    real = subprocess.run(words, cwd=tmp_path, capture_output=True, text=True)
    reported = [line.split("undefined symbol: ")[1] for line in real.stderr.splitlines() if "undefined symbol: " in line]
    assert len(reported) == 20 and "too many errors emitted" in real.stderr
    report = build_report(resolve_link_line(words, cwd=str(tmp_path)))
    shown = {e.symbol for e in report.errors if e.shown}
    assert shown == set(reported)
    assert {e.symbol for e in report.errors if not e.shown} == {f"g{k}" for k in range(25)} - set(reported)
