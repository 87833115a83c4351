"""`link --why SYMBOL` (issue 11, item 5), checked against ld's own `-y SYMBOL`
(--trace-symbol) and against the DT_NEEDED entries of the binary the real linker writes."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ldscope.analysis import build_report
from ldscope.linker.frontend import resolve_link_line

LINKERS = [name for name, program in (("bfd", "ld.bfd"), ("gold", "ld.gold"), ("lld", "ld.lld"),
                                      ("mold", "mold")) if shutil.which(program)]
pytestmark = pytest.mark.skipif(shutil.which("gcc") is None, reason="gcc is needed")


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("why")
    (d / "foo.c").write_text("int foo(void) { return 1; }\n")
    (d / "foo2.c").write_text("int foo(void) { return 2; }\nint other(void) { return 3; }\n")
    (d / "weak.c").write_text("__attribute__((weak)) int foo(void) { return 0; }\n")
    (d / "main.c").write_text("int foo(void);\nint main(void) { return foo(); }\n")
    subprocess.run(["gcc", "-c", "-fPIC", "foo.c", "foo2.c", "weak.c", "main.c"], cwd=d, check=True)
    subprocess.run(["ar", "rcs", "libfoo.a", "foo.o"], cwd=d, check=True)
    subprocess.run(["ar", "rcs", "libfoo2.a", "foo2.o"], cwd=d, check=True)
    subprocess.run(["gcc", "-shared", "-o", "libfooso.so", "foo.o"], cwd=d, check=True)
    return d


def _ld_trace(words: list[str], cwd: Path, symbol: str) -> set[str]:
    """Files GNU ld's -y names for the symbol (definitions and references)."""
    run = subprocess.run([*words, f"-Wl,-y,{symbol}"], cwd=cwd, capture_output=True, text=True)
    # "/usr/bin/ld.bfd: main.o: reference to foo", "...: libfoo.a(foo.o): definition of foo"
    found = re.findall(r"^\S+: (\S+): (?:definition|reference) (?:of|to) ", run.stderr, re.M)
    return {os.path.basename(m.split("(")[-1].rstrip(")")) for m in found}


CASES = {
    "archive-member": ["main.o", "libfoo.a", "libfoo2.a"],
    "weak-and-archive": ["main.o", "weak.o", "libfoo.a"],
    "shared-library": ["main.o", "./libfooso.so"],
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_why_names_what_ld_trace_symbol_names(project: Path, case: str) -> None:
    words = ["gcc", "-fuse-ld=bfd", *CASES[case], "-o", "app"]
    report = build_report(resolve_link_line(words, cwd=str(project)), why=("foo",))
    (trace,) = report.why
    ours = {os.path.basename(i.file.split("(")[-1].rstrip(")")) for i in trace.inputs if i.in_link}
    theirs = _ld_trace(words, project, "foo")
    assert ours == theirs, (ours, theirs)
    # Not extracted: the second archive's definition, said as such and never "in the link".
    if case == "archive-member":
        assert trace.winner is not None and trace.winner.endswith("libfoo.a(foo.o)")
        assert any(i.file.endswith("libfoo2.a(foo2.o)") and not i.in_link for i in trace.inputs)
    if case == "weak-and-archive":
        assert trace.winner == "weak.o" and "weak definition" in trace.why


@pytest.mark.parametrize("linker", LINKERS)
def test_why_in_every_model_and_in_json(project: Path, linker: str) -> None:
    result = subprocess.run([sys.executable, "-m", "ldscope", "link", "--linker", linker, "--why", "foo",
                             "--format", "json", "--", "gcc", "main.o", "libfoo.a", "-o", "app"],
                            cwd=project, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    (trace,) = json.loads(result.stdout)["why"]
    assert trace["symbol"] == "foo" and trace["winner"].endswith("libfoo.a(foo.o)")
    extracted = next(i for i in trace["inputs"] if i["role"] == "defines")
    assert "extracted from" in extracted["how_in_link"] and "referenced by main.o" in extracted["how_in_link"]


def test_why_answers_what_made_the_loader_an_explicit_dt_needed(tmp_path: Path) -> None:
    """The incident's open question: the binaries that linked carried ld-linux-aarch64.so.1 as
    a DT_NEEDED entry. --why says what pulled it in: a stack-protected object's reference to
    __stack_chk_guard, met by the AS_NEEDED(...) entry of the libc.so linker script."""
    cc = "aarch64-linux-gnu-gcc"
    if shutil.which(cc) is None:
        pytest.skip("needs gcc-aarch64-linux-gnu")
    (tmp_path / "m.c").write_text("char buf[64];\nint main(int c, char **v) { char b[32]; "
                                  "__builtin_strcpy(b, v[0]); buf[0] = b[0]; return c; }\n")
    subprocess.run([cc, "-c", "-fstack-protector-all", "m.c"], cwd=tmp_path, check=True)
    words = [cc, "m.o", "-o", "app"]
    subprocess.run(words, cwd=tmp_path, check=True)
    dynamic = subprocess.run(["readelf", "-d", "app"], cwd=tmp_path, capture_output=True, text=True).stdout
    assert "Shared library: [ld-linux-aarch64.so.1]" in dynamic
    report = build_report(resolve_link_line(words, cwd=str(tmp_path)), why=("__stack_chk_guard",))
    (trace,) = report.why
    assert trace.winner is not None and trace.winner.endswith("ld-linux-aarch64.so.1")
    provider = next(i for i in trace.inputs if i.role == "defines")
    assert "AS_NEEDED" in provider.how_in_link and "DT_NEEDED entry" in provider.how_in_link
    assert any(i.file == "m.o" and i.role == "references" for i in trace.inputs)
