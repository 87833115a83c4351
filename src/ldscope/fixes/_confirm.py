"""`--confirm`: run the real linker (explicit opt-in only) on the original line and on each
candidate line, writing into a temporary directory, and report whether it agrees. The linker
is the line's own binary for a command the user gave; for a log's line, the same name found
on PATH (a log's path runs only with `--trust-log`); never under `--no-exec`.

A fix is `confirmed` when the real linker does what the simulation predicted for that line:
it links for a fix that fixes the link alone, it still fails for a rejected candidate."""

from __future__ import annotations

import os
import subprocess
import tempfile
from collections.abc import Mapping
from dataclasses import replace

from ldscope.fixes._results import Confirmation, Fix
from ldscope.system import environment_or_process, find_program

PROGRAMS = {"bfd": "ld.bfd", "gold": "ld.gold", "lld": "ld.lld", "mold": "mold"}
TIMEOUT = 300


def runnable_argv(argv: tuple[str, ...], linker: str, out: str, env: Mapping[str, str],
                  program: str | None = None) -> list[str] | None:
    """The line with the real linker program (the line's own, e.g. a cross toolchain's ld,
    when given as an absolute path or a name on PATH: `LinkLine.program_for` never gives a
    log's path unless it is trusted), its output in `out`, plugin options dropped."""
    exe = find_program(program, env) if program is not None and os.path.basename(program) != "collect2" else None
    if exe is None:
        exe = find_program(PROGRAMS[linker], env) or (find_program("ld", env) if linker == "bfd" else None)
    if exe is None:
        return None
    words: list[str] = [exe]
    skip = False
    for w in argv[1:]:
        if skip:
            skip = False
        elif w in ("-plugin", "--plugin", "--load-pass-plugin", "-o", "--output"):
            skip = True  # a plugin is a shared object the linker would load: never one a line names
        elif not w.startswith(("-plugin", "--plugin", "--load-pass-plugin", "-fuse-ld", "--output=")):
            words.append(w)
    return [*words, "-o", out]


def run_linker(argv: tuple[str, ...], linker: str, cwd: str, env: Mapping[str, str] | None = None,
               program: str | None = None) -> tuple[int | None, str]:
    """(exit status or None if it could not run, stderr tail), run in environment `env`
    (default: the process environment)."""
    env = environment_or_process(env)
    with tempfile.TemporaryDirectory(prefix="ldscope-confirm-") as tmp:
        words = runnable_argv(argv, linker, os.path.join(tmp, "out"), env, program)
        if words is None:
            return None, f"{PROGRAMS[linker]} is not installed"
        try:
            proc = subprocess.run(words, cwd=cwd, capture_output=True, text=True, timeout=TIMEOUT,
                                  errors="replace", env=dict(env))
        except (OSError, subprocess.TimeoutExpired) as exc:
            return None, str(exc)
        return proc.returncode, proc.stderr[-4000:]


def confirm(argv: tuple[str, ...], linker: str, cwd: str, predicted_links: bool,
            fixes: tuple[Fix, ...], env: Mapping[str, str], program: str | None = None,
            ) -> tuple[Confirmation, tuple[Fix, ...]]:
    """Run the original line and every fix that links alone (or in combination), with the
    line's own linker binary when known (`program`)."""
    status, err = run_linker(argv, linker, cwd, env, program)
    links = None if status is None else status == 0
    agrees = None if links is None else links == predicted_links
    conf = Confirmation(program if program and os.path.basename(program) != "collect2" else PROGRAMS[linker],
                        status, links, agrees, err.strip())
    checked: list[Fix] = []
    for f in fixes:
        rc, _ = run_linker(f.argv, linker, cwd, env, program)
        # confirmed: the real linker does what was predicted for this line (links or not).
        checked.append(replace(f, confirmed=None if rc is None else (rc == 0) == f.fixes_alone))
    return conf, tuple(checked)
