"""Every ldscope command over a corpus, in-process (click's CliRunner), in text and JSON.

`info`, `info -v`, `symbols`, `symbols --all` and `symbols -D` take many files: each runs over
a batch of files at once (the way people call them, and cheap). `load` takes one file: it
runs per ELF shared object or executable. A run passes when its exit status is 0, 1 or 2,
it raised nothing (CliRunner catches what escapes the command: a traceback a person would
see), stderr has no "Traceback", and JSON output parses.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field

from click.testing import CliRunner, Result

from ldscope.cli import cli
from ldscope.elf import ElfFile
from ldscope.elf import constants as C
from ldscope.errors import InputFormatError

MULTI_FILE_COMMANDS: tuple[tuple[str, ...], ...] = (
    ("info",), ("info", "-v"), ("symbols",), ("symbols", "--all"), ("symbols", "-D"),
)
FORMATS = ("text", "json")
BATCH = 40  # files per multi-file invocation


@dataclass
class Sweep:
    """Runs made and what went wrong in them."""

    runs: int = 0
    exit_codes: dict[int, int] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)


def _judge(sweep: Sweep, argv: Sequence[str], res: Result) -> None:
    sweep.runs += 1
    sweep.exit_codes[res.exit_code] = sweep.exit_codes.get(res.exit_code, 0) + 1
    label = "ldscope " + " ".join(argv[:4]) + (" ..." if len(argv) > 4 else "")
    if res.exception is not None and not isinstance(res.exception, SystemExit):
        sweep.problems.append(f"{label}: raised {type(res.exception).__name__}: {res.exception}")
        return
    if res.exit_code not in (0, 1, 2):
        sweep.problems.append(f"{label}: exit status {res.exit_code}")
    if "Traceback" in res.stderr:
        sweep.problems.append(f"{label}: traceback on stderr: {res.stderr[-400:]}")
    if "--format" in argv and argv[argv.index("--format") + 1] == "json" and res.stdout.strip():
        try:
            json.loads(res.stdout)
        except ValueError as exc:
            sweep.problems.append(f"{label}: JSON does not parse: {exc}")


def loadable(path: str) -> bool:
    """ET_DYN and ET_EXEC files (what `ldscope load` is for); unreadable ones too, since
    load must then say so with status 2."""
    try:
        with ElfFile.open(path) as elf:
            return elf.e_type in (C.ET_DYN, C.ET_EXEC)
    except InputFormatError:
        return True


def sweep(paths: Sequence[str], load_paths: Sequence[str] | None = None) -> Sweep:
    """All commands, both formats, over `paths`; `load` over `load_paths` (default: the
    loadable ones among paths)."""
    runner = CliRunner()
    result = Sweep()
    for i in range(0, len(paths), BATCH):
        batch = list(paths[i : i + BATCH])
        for command in MULTI_FILE_COMMANDS:
            for fmt in FORMATS:
                argv = [*command, "--format", fmt, *batch]
                _judge(result, argv, runner.invoke(cli, argv))
    for path in load_paths if load_paths is not None else [p for p in paths if loadable(p)]:
        for fmt in FORMATS:
            argv = ["load", "--format", fmt, path]
            _judge(result, argv, runner.invoke(cli, argv))
    return result
