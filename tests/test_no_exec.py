"""Nothing named by untrusted input is executed (issue 13, item 2), and each claim of the
README's "What ldscope runs" section, proved with a PATH of recording stubs (each appends its
name and argv to a log, and prints what the real program prints here) and `evil` programs
placed where a build log names them: by absolute path, and as a relative `./evil/ld.bfd` that
exists in ldscope's own working directory. `--no-exec` is also checked with `strace -f`."""

from __future__ import annotations

import os
import re
import shutil
import stat
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

import ldscope

needs_gcc = pytest.mark.skipif(shutil.which("gcc") is None, reason="gcc is needed to build the test objects")
SRC = str(Path(ldscope.__file__).resolve().parent.parent)

# What `gcc -### main.o -o app` prints on Debian 12 (gcc 12, x86_64), the link step copied from
# this machine; the stub puts its own arguments where gcc puts the user's inputs.
_COLLECT2 = (
    ' /usr/lib/gcc/x86_64-linux-gnu/12/collect2 -plugin /usr/lib/gcc/x86_64-linux-gnu/12/liblto_plugin.so '
    '"-plugin-opt=/usr/lib/gcc/x86_64-linux-gnu/12/lto-wrapper" --build-id --eh-frame-hdr -m elf_x86_64 '
    '"--hash-style=gnu" --as-needed -dynamic-linker /lib64/ld-linux-x86-64.so.2 -pie '
    '/usr/lib/gcc/x86_64-linux-gnu/12/../../../x86_64-linux-gnu/Scrt1.o '
    '/usr/lib/gcc/x86_64-linux-gnu/12/../../../x86_64-linux-gnu/crti.o /usr/lib/gcc/x86_64-linux-gnu/12/crtbeginS.o '
    '-L/usr/lib/gcc/x86_64-linux-gnu/12 -L/usr/lib/gcc/x86_64-linux-gnu/12/../../../x86_64-linux-gnu '
    '-L/lib/x86_64-linux-gnu -L/usr/lib/x86_64-linux-gnu'
)
_TAIL = ('-lgcc --push-state --as-needed -lgcc_s --pop-state -lc -lgcc --push-state --as-needed -lgcc_s '
         '--pop-state /usr/lib/gcc/x86_64-linux-gnu/12/crtendS.o '
         '/usr/lib/gcc/x86_64-linux-gnu/12/../../../x86_64-linux-gnu/crtn.o')
_SEARCH_DIRS = ('SEARCH_DIR("=/usr/local/lib/x86_64-linux-gnu"); SEARCH_DIR("=/lib/x86_64-linux-gnu"); '
                'SEARCH_DIR("=/usr/lib/x86_64-linux-gnu"); SEARCH_DIR("=/lib"); SEARCH_DIR("=/usr/lib");')


def _script(path: Path, record: Path, name: str, body: str = "") -> Path:
    """A program that appends `NAME ARGS...` to `record`, then runs `body` (sh)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f'#!/bin/sh\nprintf "%s" "{name}" >> "{record}"\nfor a in "$@"; do printf " %s" "$a" >> "{record}"; '
                    f'done\necho >> "{record}"\n{body}\nexit 0\n')
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return path


def _driver_body() -> str:
    """gcc: `-print-prog-name=ld` answers `ld`; `-###` prints the link step with its inputs."""
    return ('case "$1" in -print-prog-name=*) echo "${1#-print-prog-name=}"; exit 0;; esac\n'
            'args=""\nfor a in "$@"; do [ "$a" = "-###" ] || args="$args $a"; done\n'
            f"echo 'Using built-in specs.' >&2\necho '{_COLLECT2}'\"$args\"' {_TAIL}' >&2")


_LD_BODY = f'for a in "$@"; do [ "$a" = "--verbose" ] && echo \'{_SEARCH_DIRS}\'; done'


@dataclass
class Bench:
    """The stubs, the evil programs, a build directory with main.o, and ldscope's own cwd."""

    root: Path
    record: Path
    stubs: Path
    build: Path  # where the log is and the link ran (main.o)
    work: Path  # ldscope's own working directory: holds ./evil/ld.bfd and ./evil/gcc
    evil: Path  # absolute directory a log names

    def env(self, path: str | None = None) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if k not in ("LD_LIBRARY_PATH", "LD_PRELOAD", "LD_AUDIT")}
        env.update(PATH=path if path is not None else str(self.stubs), HOME=str(self.root / "home"),
                   PYTHONPATH=SRC)
        env.pop("RUSTUP_HOME", None)
        return env

    def link(self, *args: str, path: str | None = None, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
        self.record.write_text("")
        return subprocess.run([sys.executable, "-m", "ldscope", "link", "-v", *args], capture_output=True, text=True,
                              cwd=cwd or self.work, env=self.env(path), timeout=300)

    def ran(self) -> list[str]:
        return self.record.read_text().splitlines() if self.record.exists() else []

    def log(self, text: str, name: str = "build.log") -> str:
        (self.build / name).write_text(text)
        return str(self.build / name)


@pytest.fixture()
def bench(tmp_path: Path) -> Bench:
    record = tmp_path / "ran.txt"
    stubs = tmp_path / "stubs"
    _script(stubs / "gcc", record, "PATH-gcc", _driver_body())
    _script(stubs / "cc", record, "PATH-cc", _driver_body())
    for name in ("ld", "ld.bfd"):
        _script(stubs / name, record, f"PATH-{name}", _LD_BODY)
    _script(stubs / "rustc", record, "PATH-rustc", f'echo "{tmp_path}/rust-sysroot"')
    build, work, evil = tmp_path / "build", tmp_path / "work", tmp_path / "evil"
    for name in ("gcc", "ld.bfd"):
        _script(evil / name, record, f"EVIL-abs-{name}", _driver_body() if name == "gcc" else _LD_BODY)
        _script(work / "evil" / name, record, f"EVIL-cwd-{name}", _driver_body() if name == "gcc" else _LD_BODY)
        _script(build / "evil" / name, record, f"EVIL-logdir-{name}", _driver_body() if name == "gcc" else _LD_BODY)
    (build / "main.c").write_text("int main(void) { return 0; }\n")
    subprocess.run(["gcc", "-c", "main.c", "-o", "main.o"], cwd=build, check=True)
    return Bench(tmp_path, record, stubs, build, work, evil)


def _names(lines: list[str]) -> list[str]:
    return [line.split(" ", 1)[0] for line in lines]


def _evil(lines: list[str]) -> list[str]:
    return [line for line in lines if line.startswith("EVIL")]


# -- a log's programs are not run by default ------------------------------------------------

@needs_gcc
def test_a_log_s_absolute_driver_is_never_run_the_same_name_on_path_is(bench: Bench) -> None:
    log = bench.log(f"{bench.evil}/gcc main.o -o app\n")
    result = bench.link("--from-log", log, "--format", "json")
    assert result.returncode in (0, 1), result.stderr
    ran = bench.ran()
    assert _evil(ran) == []
    assert any(line.startswith("PATH-gcc -### main.o -o app") for line in ran)  # the stub answered -###
    assert "PATH-gcc -print-prog-name=ld" in ran  # collect2's ld, asked of the same stub
    assert any(line.startswith("PATH-ld ") and line.endswith(" --verbose") for line in ran), ran  # of the ld it named
    assert f"the log's driver '{bench.evil}/gcc' is not run" in result.stdout
    assert "link line obtained from `gcc -###`" in result.stdout


@needs_gcc
def test_a_log_s_absolute_driver_runs_only_with_trust_log(bench: Bench) -> None:
    log = bench.log(f"{bench.evil}/gcc main.o -o app\n")
    result = bench.link("--from-log", log, "--trust-log")
    assert result.returncode in (0, 1), result.stderr
    ran = bench.ran()
    assert any(line.startswith("EVIL-abs-gcc -### main.o -o app") for line in ran)
    assert "EVIL-abs-gcc -print-prog-name=ld" in ran
    assert not any(line.startswith("PATH-gcc") for line in ran)


@needs_gcc
def test_a_log_s_relative_linker_is_never_resolved_against_ldscope_s_directory(bench: Bench) -> None:
    """`./evil/ld.bfd` exists in ldscope's cwd and in the log's directory: by default neither
    runs (ld.bfd from PATH answers --verbose); with --trust-log the log's directory's runs,
    never the one in ldscope's own directory."""
    assert (bench.work / "evil" / "ld.bfd").exists()
    log = bench.log("./evil/ld.bfd -o app main.o -lc\n")
    result = bench.link("--from-log", log)
    assert result.returncode in (0, 1), result.stderr
    ran = bench.ran()
    assert _evil(ran) == [] and ran == ["PATH-ld.bfd --verbose"]
    trusted = bench.link("--from-log", log, "--trust-log")
    assert trusted.returncode in (0, 1), trusted.stderr
    assert bench.ran() == ["EVIL-logdir-ld.bfd --verbose"]
    (bench.build / "evil" / "ld.bfd").unlink()  # gone from the link's directory: ldscope's own is still never used
    bench.link("--from-log", log, "--trust-log")
    assert _evil(bench.ran()) == [] and bench.ran() == ["PATH-ld.bfd --verbose"]


@needs_gcc
def test_driver_names_exactly_the_driver_that_runs(bench: Bench) -> None:
    alt = _script(bench.root / "mine" / "my-gcc", bench.record, "MINE-gcc", _driver_body())
    log = bench.log(f"{bench.evil}/gcc main.o -o app\n")
    result = bench.link("--from-log", log, "--driver", str(alt))
    assert result.returncode in (0, 1), result.stderr
    ran = bench.ran()
    drivers = [line for line in ran if "gcc" in line.split(" ", 1)[0]]
    assert drivers and all(line.startswith("MINE-gcc ") for line in drivers)
    assert any(line.startswith("MINE-gcc -### main.o -o app") for line in drivers)
    assert _evil(ran) == []
    assert f"asked the driver named with --driver ({alt})" in result.stdout
    # A bare name is looked up on PATH; a path that is not a program is a usage error.
    bad = bench.link("--from-log", log, "--driver", str(bench.root / "nothing-here"))
    assert bad.returncode == 2 and "is not an executable program" in bad.stderr and bench.ran() == []


@needs_gcc
def test_the_log_s_driver_not_on_path_gives_the_documented_defaults(bench: Bench) -> None:
    _script(bench.evil / "x86_64-evil-linux-gnu-gcc", bench.record, "EVIL-cross", _driver_body())
    log = bench.log(f"{bench.evil}/x86_64-evil-linux-gnu-gcc main.o -o app\n")
    result = bench.link("--from-log", log)
    assert result.returncode in (0, 1), result.stderr
    assert _evil(bench.ran()) == []
    assert "no 'x86_64-evil-linux-gnu-gcc' is on PATH" in result.stdout
    assert "fallback defaults: Debian 12 gcc" in result.stdout


@needs_gcc
def test_the_api_treats_a_line_from_a_log_as_untrusted_by_default(bench: Bench) -> None:
    """`resolve_link_line(..., source="log")` without a policy: the log's paths are not run."""
    from ldscope.linker.frontend import find_link_in_log, resolve_link_line

    env = bench.env()
    found = find_link_in_log(f"{bench.evil}/gcc main.o -o app\n", str(bench.build), env=env)
    bench.record.write_text("")
    line = resolve_link_line(list(found.argv), cwd=found.cwd, env=env, source="log")
    assert _evil(bench.ran()) == [] and any(x.startswith("PATH-gcc -### main.o") for x in bench.ran())
    assert line.source == "log" and line.program_for("bfd") == str(bench.stubs / "ld")


@needs_gcc
def test_a_fuse_ld_path_is_not_asked_of_the_driver(bench: Bench) -> None:
    """clang's `-fuse-ld=PATH` in a log: the driver is not asked `-print-prog-name=ld.PATH`
    (gcc echoes an unknown name back; resolved in the log's directory it would name a file the
    log's author put there), and nothing planted there runs."""
    planted = _script(bench.build / "ld..." / "evil" / "ld", bench.record, "EVIL-planted-ld", _LD_BODY)
    assert planted.exists()
    log = bench.log("gcc -fuse-ld=../evil/ld main.o -o app\n")
    result = bench.link("--from-log", log)
    assert result.returncode in (0, 1, 2), result.stderr
    assert _evil(bench.ran()) == [] and not any("-print-prog-name" in x for x in bench.ran())


# -- --confirm and --compile with a log -------------------------------------------------------

@needs_gcc
def test_confirm_on_a_log_runs_the_linker_on_path_not_the_log_s(bench: Bench) -> None:
    log = bench.log(f"{bench.evil}/ld.bfd -o app main.o -lc\n")
    result = bench.link("--from-log", log, "--confirm")
    assert result.returncode in (0, 1), result.stderr
    ran = bench.ran()
    assert _evil(ran) == []
    assert any(line.startswith("PATH-ld.bfd main.o -lc -o ") for line in ran)  # the real link, by name on PATH
    trusted = bench.link("--from-log", log, "--confirm", "--trust-log")
    assert trusted.returncode in (0, 1), trusted.stderr
    assert any(line.startswith("EVIL-abs-ld.bfd main.o -lc -o ") for line in bench.ran())


@needs_gcc
def test_confirm_never_passes_a_plugin_the_line_names(bench: Bench) -> None:
    result = bench.link("--confirm", "--", "ld.bfd", "-plugin", "/tmp/evil.so", "--plugin=/tmp/e.so",
                        "-o", "app", "main.o", "-lc", cwd=bench.build)
    assert result.returncode in (0, 1), result.stderr
    real = [line for line in bench.ran() if line.startswith("PATH-ld.bfd main.o")]
    assert real and all("plugin" not in line for line in real)


@needs_gcc
def test_compile_with_a_log_needs_trust_log(bench: Bench) -> None:
    log = bench.log(f"{bench.evil}/gcc main.c -o app\n")
    refused = bench.link("--compile", "--from-log", log)
    assert refused.returncode == 2 and "not one from a log" in refused.stderr and bench.ran() == []
    trusted = bench.link("--compile", "--from-log", log, "--trust-log")
    assert any(line.startswith("EVIL-abs-gcc -c main.c -o ") for line in bench.ran()), trusted.stderr


# -- a command the user gives is the user's own ----------------------------------------------

@needs_gcc
def test_a_command_given_runs_its_own_driver_from_the_link_s_directory(bench: Bench) -> None:
    """`ldscope link -- ./evil/gcc ...` is the user's own command: its driver is asked
    (`-###`), the one in the link's directory (--cwd), not ldscope's."""
    result = bench.link("--cwd", str(bench.build), "--", "./evil/gcc", "main.o", "-o", "app")
    assert result.returncode in (0, 1), result.stderr
    ran = bench.ran()
    assert any(line.startswith("EVIL-logdir-gcc -### main.o -o app") for line in ran)
    assert not any(line.startswith("EVIL-cwd") for line in ran)


@needs_gcc
def test_relative_path_entries_are_never_searched(bench: Bench) -> None:
    """PATH=.:STUBS from a directory holding ./gcc: the stub answers (a `.` or empty entry
    of PATH would make ldscope's directory a place programs come from)."""
    _script(bench.work / "gcc", bench.record, "EVIL-dot-gcc", _driver_body())
    result = bench.link("--", "gcc", str(bench.build / "main.o"), "-o", "app", path=f".::{bench.stubs}")
    assert result.returncode in (0, 1), result.stderr
    assert _evil(bench.ran()) == [] and any(line.startswith("PATH-gcc -###") for line in bench.ran())


@needs_gcc
def test_no_driver_still_asks_ld_verbose(bench: Bench) -> None:
    result = bench.link("--no-driver", "--", "gcc", str(bench.build / "main.o"), "-o", "app")
    assert result.returncode in (0, 1), result.stderr
    assert bench.ran() == ["PATH-ld -m elf_x86_64 --verbose"]  # the documented defaults' `ld -m elf_x86_64`


@needs_gcc
def test_a_linker_line_given_asks_its_own_ld_for_search_directories(bench: Bench) -> None:
    mine = _script(bench.root / "mine" / "ld.bfd", bench.record, "MINE-ld.bfd", _LD_BODY)
    result = bench.link("--", str(mine), "-o", "app", "main.o", "-lc", cwd=bench.build)
    assert result.returncode in (0, 1), result.stderr
    assert bench.ran() == ["MINE-ld.bfd --verbose"]


# -- rustc -------------------------------------------------------------------------------------

def _rust_log(bench: Bench) -> str:
    return bench.log(
        "error: linking with `cc` failed: exit status: 1\n"
        '  = note: "cc" "-m64" "main.o" "<sysroot>/lib/rustlib/x86_64-unknown-linux-gnu/lib/libstd-0123.rlib" '
        '"-o" "app" "-nodefaultlibs"\n'
        "  = note: /usr/bin/ld: main.o: undefined reference to `foo'\n", "cargo.log")


@needs_gcc
def test_a_rustc_log_asks_the_user_s_rustc_for_its_sysroot(bench: Bench) -> None:
    result = bench.link("--from-log", _rust_log(bench))
    assert result.returncode in (0, 1, 2), result.stderr
    assert "PATH-rustc --print sysroot" in bench.ran()
    assert _evil(bench.ran()) == []


@needs_gcc
def test_without_rustc_on_path_the_one_in_cargo_bin_is_asked(bench: Bench) -> None:
    (bench.stubs / "rustc").unlink()
    _script(bench.root / "home" / ".cargo" / "bin" / "rustc", bench.record, "CARGO-rustc", 'echo /nonexistent')
    bench.link("--from-log", _rust_log(bench))
    assert "CARGO-rustc --print sysroot" in bench.ran() and _evil(bench.ran()) == []


# -- --no-exec ---------------------------------------------------------------------------------

@needs_gcc
def test_no_exec_runs_nothing_and_says_what_it_assumed(bench: Bench) -> None:
    log = bench.log(f"{bench.evil}/gcc main.o -o app\n")
    result = bench.link("--no-exec", "--from-log", log)
    assert result.returncode in (0, 1), result.stderr
    assert bench.ran() == []
    assert "--no-exec: the driver was not asked (-###); using documented defaults instead" in result.stdout
    assert "assumed (--no-exec: `ld --verbose` not run)" in result.stdout
    given = bench.link("--no-exec", "--", "ld.bfd", "-o", "app", "main.o", "-lc", cwd=bench.build)
    assert given.returncode in (0, 1), given.stderr
    assert bench.ran() == [] and "`ld --verbose` not run" in given.stdout


@needs_gcc
def test_no_exec_reads_rustup_s_default_toolchain_instead_of_asking_rustc(bench: Bench) -> None:
    toolchain = bench.root / "home" / ".rustup" / "toolchains" / "stable-x86_64-unknown-linux-gnu"
    toolchain.mkdir(parents=True)
    (bench.root / "home" / ".rustup" / "settings.toml").write_text(
        'default_toolchain = "stable-x86_64-unknown-linux-gnu"\n')
    result = bench.link("--no-exec", "--from-log", _rust_log(bench))
    assert bench.ran() == []
    assert f"<sysroot> assumed to be rustup's default toolchain: {toolchain}" in result.stdout


@pytest.mark.parametrize("other", [["--confirm"], ["--compile"], ["--trust-log"], ["--driver", "gcc"]])
def test_no_exec_refuses_options_that_run_something(bench: Bench, other: list[str]) -> None:
    log = bench.log("gcc main.o -o app\n")
    result = bench.link("--no-exec", *other, "--from-log", log)
    assert result.returncode == 2 and "--no-exec runs nothing" in result.stderr
    assert bench.ran() == []


def _execs(strace_out: Path) -> list[str]:
    """The programs execve'd (successfully or not), from `strace -f -e trace=execve -qq`."""
    return re.findall(r'execve\("([^"]+)"', strace_out.read_text())


needs_strace = pytest.mark.skipif(shutil.which("strace") is None, reason="strace is needed")


def _strace(bench: Bench, args: list[str], cwd: Path, extra: dict[str, str] | None = None
            ) -> tuple[subprocess.CompletedProcess[str], list[str]]:
    out = bench.root / "strace.txt"
    proc = subprocess.run([shutil.which("strace") or "strace", "-f", "-e", "trace=execve", "-qq", "-o", str(out),
                           sys.executable, "-m", "ldscope", *args], capture_output=True, text=True, cwd=cwd,
                          env={**bench.env(), **(extra or {})}, timeout=300)
    if "ptrace" in proc.stderr and "Operation not permitted" in proc.stderr:
        pytest.skip("strace cannot trace here")
    # The first execve is strace starting python; cli.main() may re-execute the same
    # interpreter once (LD_LIBRARY_PATH/LD_PRELOAD set); anything else was run by ldscope.
    python = {sys.executable, os.path.realpath(sys.executable)}
    return proc, [p for p in _execs(out) if p not in python]


@needs_gcc
@needs_strace
def test_no_exec_executes_nothing_under_strace(bench: Bench) -> None:
    log = bench.log(f"{bench.evil}/gcc main.o -o app\n")
    proc, others = _strace(bench, ["link", "--no-exec", "--from-log", log], bench.work)
    assert proc.returncode in (0, 1), proc.stderr
    assert others == [] and bench.ran() == []
    proc, others = _strace(bench, ["link", "--no-exec", "--", "gcc", "main.o", "-o", "app"], bench.build)
    assert proc.returncode in (0, 1), proc.stderr
    assert others == []
    # Started with LD_LIBRARY_PATH set, ldscope re-executes itself (the same interpreter): that
    # exec, and nothing else.
    proc, others = _strace(bench, ["link", "--no-exec", "--", "gcc", "main.o", "-o", "app"], bench.build,
                           {"LD_LIBRARY_PATH": str(bench.root), "LD_PRELOAD": ""})
    assert proc.returncode in (0, 1), proc.stderr
    assert others == [] and _execs(bench.root / "strace.txt").count(sys.executable) == 2
    # The control: without --no-exec strace does see the driver and ld run.
    proc, others = _strace(bench, ["link", "--", "gcc", "main.o", "-o", "app"], bench.build)
    assert str(bench.stubs / "gcc") in others and str(bench.stubs / "ld") in others


@needs_gcc
@needs_strace
def test_scan_load_symbols_and_info_execute_nothing(bench: Bench) -> None:
    """The README's claim that the other commands run nothing (a scan's workers are forks)."""
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", "libm1.so", "main.c"], cwd=bench.build, check=True)
    lib = str(bench.build / "libm1.so")
    for args in (["load", lib], ["scan", "-j", "2", str(bench.build)], ["symbols", lib], ["info", lib],
                 ["load", "--python", sys.executable, lib]):
        proc, others = _strace(bench, args, bench.work)
        assert proc.returncode in (0, 1, 2) and "Traceback" not in proc.stderr, (args, proc.stderr)
        assert others == [], (args, others)
        assert bench.ran() == []


def test_link_help_names_what_runs_and_how_to_forbid_it() -> None:
    from click.testing import CliRunner

    from ldscope.cli import cli

    text = " ".join(CliRunner().invoke(cli, ["link", "--help"], terminal_width=200).output.split())
    for option in ("--no-exec", "--trust-log", "--driver PATH", "--no-driver", "--confirm", "--compile"):
        assert option in text
    assert "ldscope link --no-exec --from-log ci.log" in text
    assert "a program path it names is never run" in text


def test_readme_section_lists_every_program_ldscope_runs() -> None:
    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text()
    section = readme.split("## What ldscope runs", 1)[1].split("\n## ", 1)[0]
    for claim in ("`DRIVER -### ARGS`", "-print-prog-name=ld", "`ld --verbose`", "`rustc --print sysroot`",
                  "`link --confirm` only", "`link --compile` only", "**`--no-exec`**", "`--trust-log`",
                  "`--driver PATH`", "relative PATH entries"):
        assert claim in section, claim
