"""`link --from-log` on the logs real builds write (issue 11, item 6): ninja's relative
`-C` directory, --cwd as the base, a log from another machine, `cargo rustc -- --print
link-args`, stale codegen units, the toolchain the log names, and no prediction built on
inputs that are not there."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ldscope.linker.frontend import find_link_in_log, find_links_in_log
from ldscope.linker.frontend._logparse import expand_rustc, toolchain_sysroot

needs_gcc = pytest.mark.skipif(shutil.which("gcc") is None, reason="gcc is needed")


def _link(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "ldscope", "link", *args], capture_output=True, text=True,
                          cwd=cwd, timeout=300)


@pytest.fixture()
def ninja_project(tmp_path: Path) -> Path:
    """A CMake/ninja-like tree: objects in build/, the log next to build/."""
    build = tmp_path / "build"
    build.mkdir()
    (build / "main.c").write_text("int bar(void);\nint main(void) { return bar(); }\n")
    subprocess.run(["gcc", "-c", "main.c", "-o", "main.c.o"], cwd=build, check=True)
    (tmp_path / "build.log").write_text(
        "ninja: Entering directory `build'\n[1/2] Building C object main.c.o\n[2/2] Linking C executable app\n"
        "FAILED: app\n: && /usr/bin/cc main.c.o -o app && :\n"
        "/usr/bin/ld: main.c.o: in function `main':\nmain.c:(.text+0x5): undefined reference to `bar'\n"
        "collect2: error: ld returned 1 exit status\nninja: build stopped: subcommand failed.\n")
    return tmp_path


@needs_gcc
def test_ninja_relative_directory_is_taken_from_where_ninja_ran(ninja_project: Path, tmp_path_factory: pytest.TempPathFactory) -> None:
    elsewhere = tmp_path_factory.mktemp("elsewhere")
    # Run from an unrelated directory: the log's own directory is the base.
    result = _link("--from-log", str(ninja_project / "build.log"), "--format", "json", cwd=elsewhere)
    assert result.returncode == 1, result.stderr
    assert "undefined reference to `bar'" in result.stdout and "cannot find" not in result.stdout
    found = find_link_in_log((ninja_project / "build.log").read_text(), str(ninja_project))
    assert found.cwd == str(ninja_project / "build")


@needs_gcc
def test_cwd_is_the_base_and_stands_for_another_machine_s_directory(ninja_project: Path, tmp_path: Path) -> None:
    log = tmp_path / "ci.log"
    log.write_text("make[1]: Entering directory '/home/ci/project/build'\ncc main.c.o -o app\n"
                   "/usr/bin/ld: main.c.o: undefined reference to `bar'\n")
    result = _link("--from-log", str(log), "--cwd", str(ninja_project / "build"), cwd=tmp_path)
    assert result.returncode == 1 and "undefined reference to `bar'" in result.stdout, result.stderr


@needs_gcc
def test_no_prediction_from_inputs_that_are_not_there(ninja_project: Path, tmp_path: Path) -> None:
    log = tmp_path / "ci.log"
    log.write_text("cc main.c.o other.o -o app\n/usr/bin/ld: main.c.o: undefined reference to `bar'\n")
    result = _link("--from-log", str(log), cwd=tmp_path)
    assert result.returncode == 2
    assert "none of the log's 2 input files is found" in result.stderr and "--cwd DIR" in result.stderr
    assert result.stdout == ""


def test_cargo_print_link_args_output_is_read() -> None:
    log = ('   Compiling demo v0.1.0 (/work/demo)\nLC_ALL="C" PATH="/usr/bin" "cc" "-m64" "main.o" '
           '"-o" "/work/demo/target/debug/deps/demo-1" "-lc"\n    Finished dev [unoptimized] target(s)\n')
    found = find_link_in_log(log)
    assert found.origin == "rustc --print link-args"
    assert found.argv == ("cc", "-m64", "main.o", "-o", "/work/demo/target/debug/deps/demo-1", "-lc")


def test_stale_codegen_units_are_not_taken_for_the_omitted_ones(tmp_path: Path) -> None:
    out = tmp_path / "demo-1"
    stale = [tmp_path / f"demo-1.old{k}.rcgu.o" for k in range(3)]
    fresh = [tmp_path / f"demo-1.new{k}.rcgu.o" for k in range(2)]
    for path in stale:
        path.write_bytes(b"")
    past = time.time() - 3600
    for path in stale:
        os.utime(path, (past, past))
    for path in fresh:
        path.write_bytes(b"")
    notes: list[str] = []
    argv = expand_rustc(["cc", "<2 object files omitted>", "-o", str(out)], notes, {})
    assert argv[1:3] == sorted(map(str, fresh))
    assert "using the 2 newest" in notes[0] and "stale" in notes[0]


def test_the_log_s_toolchain_gives_the_sysroot(tmp_path: Path) -> None:
    nightly = tmp_path / "rustup" / "toolchains" / "nightly-x86_64-unknown-linux-gnu"
    (nightly / "lib" / "rustlib").mkdir(parents=True)
    (tmp_path / "rustup" / "toolchains" / "stable-x86_64-unknown-linux-gnu").mkdir()
    env = {"RUSTUP_HOME": str(tmp_path / "rustup")}
    assert toolchain_sysroot("nightly", env) == str(nightly)
    assert toolchain_sysroot("../../etc", env) is None  # a name from a log never leaves rustup's tree
    notes: list[str] = []
    argv = expand_rustc(["cc", "<sysroot>/lib/rustlib/x.rlib", "-o", "out"], notes, env, "nightly")
    assert argv[1] == f"{nightly}/lib/rustlib/x.rlib"
    assert any("nightly" in n for n in notes)
    log = ("$ cargo +nightly build\nerror: linking with `cc` failed: exit status: 1\n"
           '  = note: "cc" "<sysroot>/lib/rustlib/x.rlib" "-o" "out"\n')
    found = find_link_in_log(log, env=env)
    assert found.argv[1] == f"{nightly}/lib/rustlib/x.rlib"


@needs_gcc
def test_every_link_of_a_log_is_predicted_and_each_fix_tried_on_the_others(tmp_path: Path) -> None:
    """A make log linking a library and two programs that both miss -lm: one prediction per
    link, and the -lm fix found for one program is tried on the other links (and fixes the
    other program too, as the real linker confirms)."""
    (tmp_path / "lib.c").write_text("int lib(void) { return 2; }\n")
    (tmp_path / "a.c").write_text("double sqrt(double);\nint main(int c, char **v) { (void)v; return (int)sqrt(c); }\n")
    (tmp_path / "b.c").write_text("double cos(double);\nint main(int c, char **v) { (void)v; return (int)cos(c); }\n")
    subprocess.run(["gcc", "-c", "-fPIC", "lib.c", "a.c", "b.c"], cwd=tmp_path, check=True)
    (tmp_path / "build.log").write_text(
        "cc -shared -o libl.so lib.o\ncc -o prog_a a.o\n"
        "/usr/bin/ld: a.o: in function `main':\na.c:(.text+0x1d): undefined reference to `sqrt'\n"
        "collect2: error: ld returned 1 exit status\n"
        "cc -o prog_b b.o\n/usr/bin/ld: b.o: undefined reference to `cos'\n"
        "collect2: error: ld returned 1 exit status\nmake: *** [Makefile:5: all] Error 1\n")
    links = find_links_in_log((tmp_path / "build.log").read_text(), str(tmp_path))
    assert [link.argv[-1] for link in links] == ["lib.o", "a.o", "b.o"]
    assert links[1].reported_symbols() == {"sqrt"} and links[2].reported_symbols() == {"cos"}
    result = _link("--fix", "--from-log", str(tmp_path / "build.log"), "--format", "json", cwd=tmp_path)
    assert result.returncode == 1, result.stderr
    document = json.loads(result.stdout)
    assert document["schema"] == "ldscope.link-log/1"
    assert [r["links"] for r in document["links"]] == [True, False, False]
    on_b = [c for c in document["fix_checks"] if c["fix_of"] == 1 and c["on"] == 2 and c["added"] == ["-lm"]]
    assert on_b and on_b[0]["links_before"] is False and on_b[0]["links_after"] is True
    assert subprocess.run(["cc", "-o", "prog_b", "b.o", "-lm"], cwd=tmp_path).returncode == 0
    on_lib = [c for c in document["fix_checks"] if c["fix_of"] == 1 and c["on"] == 0]
    assert on_lib and on_lib[0]["links_after"] is True
    text = _link("--fix", "--from-log", str(tmp_path / "build.log"), cwd=tmp_path).stdout
    assert "== link 2 of 3 in the log: prog_a" in text and "on link 3: links with it" in text
