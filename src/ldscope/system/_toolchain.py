"""What the installed toolchain says about itself, asked without linking anything: where a
program is on PATH, GNU ld's built-in search directories (`ld --verbose`), gold's compiled-in
ones, what a compiler driver would run (`gcc -###`), rustc's sysroot.

Each question runs at most a dry-run query of the program (`--verbose`, `-###`,
`--print sysroot`) and is answered from the environment given, never the process's own.

Which program may be run is decided by the caller's `RunPolicy`: a command the user gave runs
its own programs; a build log's line (untrusted input: a CI artifact, a bug report) runs
programs found on PATH by their name only, never a path the log names; `--no-exec` runs
nothing, and each answer is then a built-in default that says it was assumed.
"""

from __future__ import annotations

import enum
import os
import re
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache

from ldscope.system._environment import home_directory, search_path
from ldscope.system._ldconf import read_ld_so_conf
from ldscope.system._machines import by_emulation

_SEARCH_DIR = re.compile(r'SEARCH_DIR\("?([^")]*)"?\)')
# `ld.bfd --verbose` on Debian 12 binutils 2.40, x86_64: used when no ld.bfd is installed.
_DEBIAN_BFD_X86_64 = (
    "=/usr/local/lib/x86_64-linux-gnu", "=/lib/x86_64-linux-gnu", "=/usr/lib/x86_64-linux-gnu",
    "=/usr/lib/x86_64-linux-gnu64", "=/usr/local/lib64", "=/lib64", "=/usr/lib64",
    "=/usr/local/lib", "=/lib", "=/usr/lib", "=/usr/x86_64-linux-gnu/lib64",
    "=/usr/x86_64-linux-gnu/lib",
)  # fmt: skip
DRIVER_TIMEOUT = 60


class Execution(enum.Enum):
    """Whose programs ldscope may run to ask the toolchain about a link line."""

    OWN = "own"  # the line's own programs: a command the user gave, or a log with --trust-log
    BY_NAME = "by-name"  # a log's line: its programs by name only, found on PATH, never its paths
    NONE = "none"  # --no-exec: nothing at all; built-in defaults, said to be assumed


@dataclass(frozen=True, slots=True)
class RunPolicy:
    """What may be run for one link line: whose programs, and a driver the user named
    (`--driver`) to ask instead of the line's own."""

    execution: Execution = Execution.OWN
    driver: str | None = None

    @property
    def may_run(self) -> bool:
        """Whether anything at all may be run."""
        return self.execution is not Execution.NONE


def find_program(name: str, env: Mapping[str, str], cwd: str | None = None) -> str | None:
    """The program `name` as a shell with `env` would run it: a path is taken from `cwd`
    (a relative one is None without it: never from ldscope's own directory), a bare name is
    looked up in the absolute directories of PATH (relative entries, such as `.` or an empty
    one, are skipped for the same reason)."""
    if os.sep in name:
        if not os.path.isabs(name):
            if cwd is None:
                return None
            name = os.path.join(cwd, name)
        return name if _is_executable(name) else None
    if not name or name in (".", ".."):
        return None
    for directory in search_path(env).split(os.pathsep):
        if os.path.isabs(directory):
            candidate = os.path.join(directory, name)
            if _is_executable(candidate):
                return candidate
    return None


def _is_executable(path: str) -> bool:
    return os.path.isfile(path) and os.access(path, os.X_OK)


def program_to_run(name: str, env: Mapping[str, str], cwd: str | None, execution: Execution) -> str | None:
    """The program to run for `name` under `execution` (None: not found, or nothing may run):
    the name as written (from `cwd`) for the user's own line, its basename on PATH for a log's."""
    if execution is Execution.NONE:
        return None
    if execution is Execution.BY_NAME:
        return find_program(os.path.basename(name), env)
    return find_program(name, env, cwd)


def bfd_script_search_dirs(program: str, emulation: str | None, env: Mapping[str, str], ask: bool = True
                           ) -> tuple[tuple[str, ...], str]:
    """SEARCH_DIRs of bfd's default script (asked of `program`, an absolute path or a name
    on PATH, with --verbose; `ask` False: never asked) and where they came from."""
    if not ask:
        if emulation in (None, "elf_x86_64"):
            return _DEBIAN_BFD_X86_64, "documented Debian 12 binutils defaults, assumed (--no-exec: `ld --verbose` not run)"
        return (), f"no default directories known for emulation {emulation} (--no-exec: `ld --verbose` not run)"
    exe = find_program(program, env) or find_program("ld.bfd", env) or find_program("ld", env)
    return _bfd_script_search_dirs(exe, emulation)


@lru_cache(maxsize=16)
def _bfd_script_search_dirs(exe: str | None, emulation: str | None) -> tuple[tuple[str, ...], str]:
    if exe is not None:
        cmd = [exe, "--verbose"] if not emulation else [exe, "-m", emulation, "--verbose"]
        try:
            out = subprocess.run(cmd, capture_output=True, text=True, timeout=20).stdout
        except (OSError, subprocess.TimeoutExpired):
            out = ""
        dirs = tuple(_SEARCH_DIR.findall(out))
        if dirs:
            return dirs, f"`{os.path.basename(exe)} --verbose` SEARCH_DIR lines"
    if emulation in (None, "elf_x86_64"):
        return _DEBIAN_BFD_X86_64, "documented Debian 12 binutils defaults (ld.bfd not found)"
    return (), f"no default directories known for emulation {emulation}"


def gold_search_dirs(emulation: str | None) -> tuple[str, ...]:
    """gold's compiled-in library directories (Debian 12 binutils), for the emulation's machine."""
    found = by_emulation(emulation or "elf_x86_64")
    triplet = found.triplet if found is not None else "x86_64-linux-gnu"
    return (f"/lib/{triplet}", f"/usr/lib/{triplet}", "/lib", "/usr/lib")


@lru_cache(maxsize=4)
def ld_so_conf_dirs(sysroot: str | None) -> tuple[str, ...]:
    """Directories of /etc/ld.so.conf (inside the sysroot), as bfd reads them."""
    root = sysroot if sysroot not in (None, "", "/") else None
    try:
        return read_ld_so_conf("/etc/ld.so.conf", root).directories
    except (OSError, ValueError):
        return ()


def driver_dry_run(argv: list[str], cwd: str, env: Mapping[str, str]) -> tuple[str | None, str]:
    """Run `DRIVER -### ARGS` (a dry run: nothing is compiled or linked; DRIVER an absolute
    path or a name on PATH, chosen by the caller's RunPolicy); (its stderr, or None with why
    it could not be asked)."""
    program = argv[0]
    exe = find_program(program, env, cwd)
    if exe is None or not os.path.exists(exe):
        return None, f"driver {program!r} is not installed here"
    try:
        proc = subprocess.run(
            [exe, "-###", *argv[1:]], cwd=cwd, capture_output=True, text=True, timeout=DRIVER_TIMEOUT,
            env=dict(env), errors="surrogateescape",
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return None, f"driver {program!r} could not be asked for its link line: {exc}"
    return proc.stderr, ""


def driver_query(program: str, option: str, cwd: str, env: Mapping[str, str]) -> str | None:
    """The one line a driver prints for a query option (`-print-prog-name=ld`,
    `-print-sysroot`): nothing is compiled or linked; None if it cannot be asked."""
    exe = find_program(program, env, cwd)
    if exe is None or not os.path.exists(exe):
        return None
    # The answer names no input, so it is the same for every link of a run (a log's links ask
    # the same driver the same question): asked once per program, option and environment.
    key = (os.path.normpath(exe), option, tuple(sorted(env.items())))
    if key not in _QUERY_ANSWERS:
        _QUERY_ANSWERS[key] = _ask_driver(exe, option, cwd, env)
    return _QUERY_ANSWERS[key]


_QUERY_ANSWERS: dict[tuple[str, str, tuple[tuple[str, str], ...]], str | None] = {}


def _ask_driver(exe: str, option: str, cwd: str, env: Mapping[str, str]) -> str | None:
    try:
        proc = subprocess.run([exe, option], cwd=cwd, capture_output=True, text=True, timeout=DRIVER_TIMEOUT,
                              env=dict(env), errors="surrogateescape")
    except (OSError, subprocess.TimeoutExpired):
        return None
    answer = proc.stdout.strip()
    return answer if proc.returncode == 0 and answer and "\n" not in answer else None


COMPILE_TIMEOUT = 600


def run_compiler(argv: list[str], cwd: str, env: Mapping[str, str]) -> str | None:
    """Run the user's own compile command (only behind `link --compile`); None on success,
    else why it failed (the compiler's last lines)."""
    exe = find_program(argv[0], env, cwd)
    if exe is None or not os.path.exists(exe):
        return f"compiler {argv[0]!r} is not installed here"
    try:
        proc = subprocess.run([exe, *argv[1:]], cwd=cwd, capture_output=True, text=True,
                              timeout=COMPILE_TIMEOUT, env=dict(env), errors="surrogateescape")
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"{argv[0]} could not be run: {exc}"
    if proc.returncode != 0:
        tail = "; ".join(proc.stderr.strip().splitlines()[-3:])
        return f"{' '.join(argv)} failed (exit {proc.returncode}): {tail}"
    return None


def rust_sysroot(env: Mapping[str, str]) -> str | None:
    """rustc's sysroot (asks `rustc --print sysroot` of the rustc on PATH, else
    ~/.cargo/bin/rustc: the user's own, never one a log names)."""
    home = home_directory(env)
    candidates = [find_program("rustc", env)]
    if home:
        candidates.append(os.path.join(home, ".cargo", "bin", "rustc"))
    return _rust_sysroot(tuple(c for c in candidates if c))


@lru_cache(maxsize=2)
def _rust_sysroot(candidates: tuple[str, ...]) -> str | None:
    for exe in candidates:
        if os.path.exists(exe):
            try:
                out = subprocess.run([exe, "--print", "sysroot"], capture_output=True, text=True, timeout=30)
            except (OSError, subprocess.TimeoutExpired):
                continue
            if out.returncode == 0 and out.stdout.strip():
                return out.stdout.strip()
    return None
