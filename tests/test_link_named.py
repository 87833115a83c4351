"""The named real cases of issue 5, each checked against the real linkers."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from ldscope.analysis._link import build_report, predict_link_facts
from ldscope.fixes._confirm import run_linker
from ldscope.linker.frontend._cmdline import resolve_link_line
from tests.link_cases import (
    as_needed_case,
    cxx11_abi_case,
    cycle_case,
    dso_missing_case,
    order_case,
    raw_line,
    sh,
)
from tests.link_oracle import available_linkers, parse, predicted_facts, run_real

pytestmark = pytest.mark.skipif(shutil.which("gcc") is None or not available_linkers(),
                                reason="needs gcc and the linkers")


def agree(linker: str, argv: list[str], cwd: Path, demangled: bool = False) -> tuple[int, set[tuple[str, str, str]]]:
    """Run the real linker and ldscope; assert the same verdict and facts."""
    rc, err = run_real(argv, str(cwd))
    links, errors = predict_link_facts(argv, str(cwd), linker)
    real = parse(linker, err).facts
    assert links == (rc == 0), err
    assert predicted_facts(errors, demangled) == real, err
    return rc, real


def test_dso_missing_libc_stack_end(tmp_path: Path) -> None:
    dso_missing_case(tmp_path)
    argv = raw_line("bfd", ["main.o"], after_lc=["libse.a"])
    rc, real = agree("bfd", argv, tmp_path)
    assert rc != 0 and real == {("dso-missing", "__libc_stack_end", "libse.a(stackend.o)")}
    report = build_report(resolve_link_line(argv, cwd=str(tmp_path)), fix=True)
    (err,) = [e for e in report.errors if e.shown]
    assert err.kind == "dso-missing" and err.versioned == "__libc_stack_end@@GLIBC_2.2.5"
    assert err.other == "/lib64/ld-linux-x86-64.so.2"
    lc = argv.index("-lc")
    assert f"after the last -lc (argument {lc})" in err.explanation
    assert "libc.so.6" in err.explanation and err.argument_index == lc + 1
    assert "DSO missing from command line" in err.message
    by_desc = {f.description: f for f in report.fixes}
    repeat = by_desc[f"repeat -lc after libse.a (argument {lc + 1})"]
    late_copy = by_desc[f"--copy-dt-needed-entries before libse.a (argument {lc + 1})"]
    early_copy = by_desc[f"--copy-dt-needed-entries before -lc (argument {lc})"]
    assert repeat.fixes_alone and early_copy.fixes_alone
    assert not late_copy.fixes_alone and "follows the -lc" in late_copy.reason
    # The real linker agrees on each: the repeated -lc and the early flag link, the late one does not.
    assert run_linker(repeat.argv, "bfd", str(tmp_path))[0] == 0
    assert run_linker(early_copy.argv, "bfd", str(tmp_path))[0] == 0
    assert run_linker(late_copy.argv, "bfd", str(tmp_path))[0] != 0


@pytest.mark.parametrize("linker", ["gold", "lld", "mold"])
def test_dso_missing_case_other_linkers(tmp_path: Path, linker: str) -> None:
    if linker not in available_linkers():
        pytest.skip(f"{linker} not installed")
    dso_missing_case(tmp_path)
    agree(linker, raw_line(linker, ["main.o"], after_lc=["libse.a"]), tmp_path)


@pytest.mark.parametrize("linker", ["bfd", "gold", "lld", "mold"])
def test_dropped_archive_from_group(tmp_path: Path, linker: str) -> None:
    if linker not in available_linkers():
        pytest.skip(f"{linker} not installed")
    cycle_case(tmp_path)
    whole = raw_line(linker, ["main.o", "--start-group", "liba.a", "libb.a", "libc_.a", "--end-group"])
    rc, _ = agree(linker, whole, tmp_path)
    assert rc == 0
    broken = raw_line(linker, ["main.o", "--start-group", "liba.a", "libc_.a", "--end-group"])
    rc, real = agree(linker, broken, tmp_path)
    assert rc != 0 and {f[1] for f in real} == {"b1"}
    report = build_report(resolve_link_line(broken, cwd=str(tmp_path)))
    assert {(e.symbol, e.referenced_by) for e in report.errors if e.shown} == {("b1", "liba.a(a1.o)")}


@pytest.mark.parametrize("linker", ["bfd", "gold", "lld", "mold"])
def test_wrong_archive_order(tmp_path: Path, linker: str) -> None:
    if linker not in available_linkers():
        pytest.skip(f"{linker} not installed")
    order_case(tmp_path)
    argv = raw_line(linker, ["main.o", "libbase.a", "libtop.a"])
    rc, real = agree(linker, argv, tmp_path)
    report = build_report(resolve_link_line(argv, cwd=str(tmp_path)), fix=True)
    if linker in ("bfd", "gold"):
        assert rc != 0 and real == {("undefined-reference", "base", "libtop.a(top.o)")}
        (err,) = report.errors
        assert any(d.status == "before-referrer" for d in err.defined_in)
        fixing = [f for f in report.fixes if f.fixes_alone]
        assert any(f.description.startswith("move libbase.a") for f in fixing)
        for f in fixing[:2]:
            assert run_linker(f.argv, linker, str(tmp_path))[0] == 0
    else:
        assert rc == 0 and report.links
        assert any("only because it ignores archive order" in n for n in report.notes)
        assert any("backward reference: `base'" in n for n in report.notes)


@pytest.mark.parametrize("linker", ["bfd", "gold", "lld", "mold"])
def test_shared_library_before_user_as_needed(tmp_path: Path, linker: str) -> None:
    if linker not in available_linkers():
        pytest.skip(f"{linker} not installed")
    as_needed_case(tmp_path)
    argv = raw_line(linker, ["--as-needed", "-L.", "-lf", "user.o"])
    rc, _ = agree(linker, argv, tmp_path)
    assert (rc != 0) == (linker == "bfd")
    if linker == "bfd":
        report = build_report(resolve_link_line(argv, cwd=str(tmp_path)), fix=True)
        (err,) = report.errors
        assert [d.status for d in err.defined_in] == ["dropped-as-needed"]
        assert any(f.fixes_alone and f.description.startswith("move -lf") for f in report.fixes)


def test_cxx11_abi_mismatch(tmp_path: Path) -> None:
    if shutil.which("g++") is None:
        pytest.skip("g++ not installed")
    cxx11_abi_case(tmp_path)
    argv = ["g++", "use.o", "libgreet.a", "-o", "app"]
    report = build_report(resolve_link_line(argv, cwd=str(tmp_path)))
    (err,) = [e for e in report.errors if e.shown]
    assert err.kind == "undefined-reference" and err.referenced_by == "use.o"
    assert err.demangled is not None and "__cxx11" in err.demangled
    kinds = {m.kind for m in err.near_misses}
    assert "cxx11-abi" in kinds
    assert any(m.file == "libgreet.a(greet.o)" for m in err.near_misses), err.near_misses
    rc, _ = agree(report.linker, list(report.argv), tmp_path, demangled=True)
    assert rc != 0
    sh(["g++", "use.o", "libgreet.a", "-o", "app2", "-Wl,--unresolved-symbols=ignore-all"], tmp_path)
