"""What a load simulation concludes: libraries found (and how), problems, bindings."""

from __future__ import annotations

from dataclasses import dataclass, field

from ldscope.vocab import FoundVia, NearMiss, ProblemKind, Severity, When


@dataclass(frozen=True, slots=True)
class TriedPath:
    """One place the loader looked for a library, and what it found there."""

    path: str
    source: FoundVia  # the search rule: rpath, LD_LIBRARY_PATH, runpath, ld.so.cache, default path
    outcome: str  # "found", "not found", "wrong ELF class", "wrong machine", ...


@dataclass(frozen=True, slots=True)
class LibraryResult:
    """A library as the loader resolved it (or failed to)."""

    name: str
    path: str | None
    found_via: FoundVia | None
    needed_by: tuple[str, ...]
    tried: tuple[TriedPath, ...]
    soname: str | None = None
    depth: int = 0


@dataclass(frozen=True, slots=True)
class Problem:
    """One reason the target does not load (or a warning), with its evidence."""

    kind: ProblemKind
    severity: Severity
    file: str
    message: str
    when: When = When.LOAD
    symbol: str | None = None
    demangled: str | None = None
    version: str | None = None
    library: str | None = None
    tried: tuple[TriedPath, ...] = ()
    near_misses: tuple[NearMiss, ...] = ()
    cause: str | None = None  # grouping key for problems sharing one root cause
    cause_summary: str | None = None  # one line naming that shared cause
    follow_on_symbols: int = 0  # undefined symbols ld.so never reaches because of this problem


@dataclass(frozen=True, slots=True)
class Binding:
    """A symbol reference and the file it binds to."""

    referrer: str
    symbol: str
    version: str | None
    provider: str | None
    when: When


@dataclass(frozen=True, slots=True)
class LoadReport:
    """The outcome of simulating one load."""

    target: str
    host: str
    loads: bool
    libraries: tuple[LibraryResult, ...]
    problems: tuple[Problem, ...]
    bindings: tuple[Binding, ...] = field(default=())
    load_order: tuple[str, ...] = ()
    global_scope: tuple[str, ...] = ()
