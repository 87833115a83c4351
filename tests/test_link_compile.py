"""Compile-and-link commands and the most common link error of all (issue 11, items 2 and 4).

`gcc h.c -o h` compiles first: its link step's inputs do not exist yet, so it is reported,
not predicted (exit 2), unless `--compile` makes the objects with the user's compiler. A
`-c`/`-S`/`-E` command is not a link. A missing `-lm` is fixed with `-lm`, the name a user
writes (Debian's libm.so and libm.a are linker scripts naming libm.so.6 and libm-2.36.a),
and the fix is checked by the real linker.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ldscope.linker.frontend import CompilesFirstError, DriverRefusedError, NotALinkError, resolve_link_line
from ldscope.linker.frontend._driver import compile_commands, driver_plan

pytestmark = pytest.mark.skipif(shutil.which("gcc") is None, reason="gcc is needed")


def _link(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "ldscope", "link", *args], capture_output=True, text=True,
                          cwd=cwd, timeout=300)


@pytest.fixture()
def sources(tmp_path: Path) -> Path:
    (tmp_path / "h.c").write_text('#include <stdio.h>\nint main(void) { puts("h"); return 0; }\n')
    (tmp_path / "m.c").write_text("double sqrt(double);\nint main(int c, char **v) { (void)v; "
                                  "return (int)sqrt((double)c); }\n")
    (tmp_path / "u.c").write_text("int helper(void) { return 3; }\n")
    return tmp_path


def test_driver_plan_reads_sources_languages_and_stop_options() -> None:
    plan = driver_plan(["gcc", "-O2", "-I", "inc.c", "a.c", "b.o", "-x", "c", "noext", "-x", "none",
                        "lib.a", "-o", "out.c", "-lm"])
    assert [src for _, src in plan.sources] == ["a.c", "noext"]  # -I's and -o's arguments are not inputs
    assert plan.stops_before_link is None
    assert driver_plan(["cc", "-c", "a.c"]).stops_before_link == "-c"
    assert driver_plan(["g++", "-E", "a.cc"]).stops_before_link == "-E"
    words = ["gcc", "-O2", "-fPIC", "-DX=1", "a.c", "-Wl,--as-needed", "-shared", "-L.", "-lz", "-o", "liba.so"]
    plan = driver_plan(words)
    assert compile_commands(words, plan, ["/t/0-a.o"]) == [["gcc", "-O2", "-fPIC", "-DX=1", "-c", "a.c", "-o", "/t/0-a.o"]]


def test_compile_only_command_is_not_a_link(sources: Path) -> None:
    with pytest.raises(NotALinkError, match=r"compiles to object files only \(-c\)"):
        resolve_link_line(["gcc", "-c", "h.c", "-o", "h.o"], cwd=str(sources))
    result = _link("--", "gcc", "-c", "h.c", "-o", "h.o", cwd=sources)
    assert result.returncode == 2 and "not a link" in result.stderr and result.stdout == ""
    assert not (sources / "h.o").exists()  # nothing was compiled


def test_compile_and_link_is_reported_with_the_link_step(sources: Path) -> None:
    with pytest.raises(CompilesFirstError) as caught:
        resolve_link_line(["gcc", "h.c", "u.c", "-o", "h"], cwd=str(sources))
    assert caught.value.sources == ("h.c", "u.c")
    step = caught.value.link_step
    assert "<object of h.c>" in step and "<object of u.c>" in step and "-lc" in step
    result = _link("--", "gcc", "h.c", "-o", "h", cwd=sources)
    assert result.returncode == 2
    assert "compiles h.c first: the link step's inputs don't exist yet" in result.stderr
    assert "the driver's link step:" in result.stderr and "cannot find" not in result.stdout + result.stderr
    assert not (sources / "h").exists()


def test_compile_flag_predicts_the_link_and_agrees_with_the_real_build(sources: Path) -> None:
    ok = _link("--compile", "--", "gcc", "h.c", "u.c", "-o", "h", cwd=sources)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert not (sources / "h").exists()  # predicted, not linked
    assert subprocess.run(["gcc", "h.c", "u.c", "-o", "h"], cwd=sources).returncode == 0
    assert not list(Path("/tmp").glob("ldscope-compile-*/0-h.o"))  # the temporary objects are gone


def test_missing_libm_is_fixed_with_minus_lm_and_the_fix_really_links(sources: Path) -> None:
    if subprocess.run(["gcc", "m.c", "-o", "m"], cwd=sources, capture_output=True).returncode == 0:
        pytest.skip("this toolchain links sqrt without -lm")
    result = _link("--fix", "--compile", "--", "gcc", "m.c", "-o", "m", cwd=sources)
    assert result.returncode == 1
    assert "undefined reference to `sqrt'" in result.stdout
    assert "(add -lm)" in result.stdout and "-lm-" not in result.stdout  # never libm-2.36.a's name
    assert "add -lm after" in result.stdout
    fixed = subprocess.run(["gcc", "m.c", "-o", "m", "-lm"], cwd=sources, capture_output=True, text=True)
    assert fixed.returncode == 0, fixed.stderr  # the real linker agrees with the fix


def test_compile_is_refused_for_commands_from_a_log(sources: Path) -> None:
    log = sources / "build.log"
    log.write_text("gcc h.c -o h\n")
    result = _link("--compile", "--from-log", str(log), cwd=sources)
    assert result.returncode == 2 and "not one from a log" in result.stderr


def test_a_driver_command_without_inputs_fails_as_the_driver_says(sources: Path) -> None:
    """Dropping the only object of a link line: gcc stops with "no input files" before any
    linker runs (found on bzip2's real lines); predicted as that failure, not a fallback link."""
    real = subprocess.run(["gcc", "-O2", "-o", "app"], cwd=sources, capture_output=True, text=True)
    assert real.returncode == 1 and "gcc: fatal error: no input files" in real.stderr
    with pytest.raises(DriverRefusedError, match="no input files"):
        resolve_link_line(["gcc", "-O2", "-o", "app"], cwd=str(sources))
    result = _link("--", "gcc", "-O2", "-o", "app", cwd=sources)
    assert result.returncode == 1 and "gcc: fatal error: no input files" in result.stdout
    # A -l alone is an input: gcc links (and fails on main), so does the model.
    assert resolve_link_line(["gcc", "-lm", "-o", "app"], cwd=str(sources)).linker == "bfd"
