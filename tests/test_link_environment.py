"""A link simulation carries the environment it was given: fixes are re-simulated in it.

Regression for `link_report(..., env=E, fix=True)`, which re-simulated candidate fixes in the
process environment: with a DT_NEEDED library found only through E's LD_LIBRARY_PATH, every
fix came back "fixes that error, but 1 error(s) remain" although the fixed line links.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from ldscope.analysis import link_report
from ldscope.fixes import run_linker
from tests.link_cases import sh, write

pytestmark = pytest.mark.skipif(shutil.which("gcc") is None or shutil.which("ld.bfd") is None,
                                reason="gcc and ld.bfd needed")


def _build(d: Path) -> Path:
    """main.o needs top() (libtop.a, given too early) and needs_fn() (libneeds.so, whose
    DT_NEEDED libdep.so is in deps/, reachable only through LD_LIBRARY_PATH)."""
    write(d, {
        "main.c": "extern int top(void); extern int needs_fn(void); int main(void) { return top() + needs_fn(); }\n",
        "top.c": "int top(void) { return 1; }\n",
        "needs.c": "extern int dep_fn(void); int needs_fn(void) { return dep_fn(); }\n",
        "dep.c": "int dep_fn(void) { return 7; }\n",
    })
    sh(["gcc", "-c", "-fPIC", "main.c", "top.c", "needs.c", "dep.c"], d)
    sh(["ar", "rcs", "libtop.a", "top.o"], d)
    (d / "deps").mkdir()
    sh(["gcc", "-shared", "-o", "deps/libdep.so", "dep.o", "-Wl,-soname,libdep.so"], d)
    sh(["gcc", "-shared", "-o", "libneeds.so", "needs.o", "-Wl,-soname,libneeds.so", "-Ldeps", "-ldep"], d)
    return d / "deps"


def test_fixes_are_simulated_in_the_given_environment(tmp_path: Path) -> None:
    deps = _build(tmp_path)
    argv = ["gcc", "libtop.a", "main.o", "-L.", "-lneeds"]
    env = {"PATH": os.environ.get("PATH", os.defpath), "LD_LIBRARY_PATH": str(deps)}
    report = link_report(argv, cwd=str(tmp_path), linker="bfd", env=env, fix=True)
    assert not report.links
    assert [(e.kind, e.symbol) for e in report.errors] == [("undefined-reference", "top")]
    fixing = [f for f in report.fixes if f.fixes_alone]
    assert fixing, [(f.description, f.reason) for f in report.fixes]
    move = next(f for f in fixing if f.description.startswith("move libtop.a"))
    assert move.reason == "links" and move.remaining_errors == 0
    # The real linker, in the same environment, agrees that the fixed line links.
    assert run_linker(move.argv, "bfd", str(tmp_path), env)[0] == 0


def test_without_the_variable_the_library_is_missing(tmp_path: Path) -> None:
    """The same line in an environment without LD_LIBRARY_PATH: libdep.so is not found, so
    libneeds.so's own reference stays undefined and moving libtop.a alone is not enough."""
    _build(tmp_path)
    env = {"PATH": os.environ.get("PATH", os.defpath)}
    argv = ["gcc", "libtop.a", "main.o", "-L.", "-lneeds"]
    report = link_report(argv, cwd=str(tmp_path), linker="bfd", env=env, fix=True)
    assert ("shlib-undefined", "dep_fn") in [(e.kind, e.symbol) for e in report.errors]
    move = next(f for f in report.fixes if f.description.startswith("move libtop.a"))
    assert not move.fixes_alone and "1 error(s) remain" in move.reason
    assert run_linker(move.argv, "bfd", str(tmp_path), env)[0] != 0
