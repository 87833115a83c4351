"""Plugins of a program in the same target: a library whose missing symbols come from a
library it does not link, which a program of the target does link (perl's modules and
libperl.so, a server's modules and the server), or from the program itself (perl-base's
statically linked perl, gdb for libthread_db).

Such a library is dlopen'ed by that program, not by an arbitrary one: simulated in a minimal
host it cannot bind, in the program's process it can. The scan tries it there, and only when
that load succeeds reports it as loading with a warning that names the program; otherwise
the minimal-host report stands. Nothing here guesses: the second verdict is a simulation.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace

from ldscope.loader import Host, HostKind, LoadReport, Problem
from ldscope.vocab import NearMissKind, ProblemKind, Severity


def programs_by_needed(programs: Sequence[tuple[str, tuple[str, ...]]]) -> dict[str, list[str]]:
    """DT_NEEDED name -> the programs (target-side paths) that need it directly."""
    out: dict[str, list[str]] = {}
    for path, needed in programs:
        for name in needed:
            out.setdefault(name, []).append(path)
    return out


def _missing(report: LoadReport) -> list[Problem] | None:
    """The load's errors if every one is a missing symbol (None otherwise)."""
    errors = [p for p in report.problems if p.severity == Severity.ERROR]
    if not errors or any(p.kind != ProblemKind.UNRESOLVED_SYMBOL or not p.symbol for p in errors):
        return None
    return errors


def plugin_host(report: LoadReport, hosts: Mapping[str, list[str]], soname_of: Callable[[str], str | None],
                exporting: Callable[[list[str]], list[str]]) -> str | None:
    """The program of the target whose process has what `report` missed (the first in path
    order), or None: one that links every library the near-misses name as defining the missing
    symbols, or, when no program does, one that exports them all itself
    (`exporting`: the programs exporting every given name; perl-base's perl, gdb)."""
    errors = _missing(report)
    if errors is None:
        return None
    linking = _linking_every_provider(errors, hosts, soname_of)
    if not linking:
        linking = set(exporting(sorted({p.symbol for p in errors if p.symbol})))
    return min(linking) if linking else None


def _linking_every_provider(errors: list[Problem], hosts: Mapping[str, list[str]],
                            soname_of: Callable[[str], str | None]) -> set[str]:
    """The programs linking, for every missing symbol, a library the near-misses name as
    defining it (empty if a symbol has no such library)."""
    providers: set[str] = set()
    for problem in errors:
        found = {m.file for m in problem.near_misses if m.kind == NearMissKind.NOT_IN_SCOPE and m.file}
        if not found:
            return set()
        providers |= found
    candidates: set[str] | None = None
    for provider in providers:
        names = {os.path.basename(provider)}
        soname = soname_of(provider)
        if soname:
            names.add(soname)
        linking = {program for name in names for program in hosts.get(name, ())}
        candidates = linking if candidates is None else candidates & linking
        if not candidates:
            return set()
    return candidates or set()


def as_plugin(minimal: LoadReport, in_program: LoadReport, program: str) -> LoadReport:
    """The minimal-host report's problems as warnings naming `program`, in whose process the
    library loads (`in_program` is that simulation)."""
    summary = (f"{minimal.target} is a plugin of {program}: the symbols it needs are not in what it "
               "links but in that program's process; it loads there and fails in any other")
    warnings: list[Problem] = [
        replace(p, severity=Severity.WARNING, cause=f"plugin:{minimal.target}:{program}", cause_summary=summary)
        for p in minimal.problems if p.severity == Severity.ERROR
    ]
    others = [p for p in minimal.problems if p.severity != Severity.ERROR]
    return replace(in_program, problems=tuple(warnings + others + list(in_program.problems)))


def program_host(program: str, like: Host) -> Host:
    """`like` (a minimal dlopen host) with `program` as the process that dlopens."""
    return Host(HostKind.DLOPEN, program, like.preload, like.loaded, like.now)
