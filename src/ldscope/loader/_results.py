"""What a load simulation concludes: libraries found (and how), problems, bindings."""

from __future__ import annotations

from dataclasses import dataclass, field

# Problem kinds (JSON `kind`)
MISSING_LIBRARY = "missing-library"
MISSING_VERSION = "missing-version"
UNRESOLVED_SYMBOL = "unresolved-symbol"
UNREADABLE_FILE = "unreadable-file"
MISSING_INTERPRETER = "missing-interpreter"
WRONG_ARCHITECTURE = "wrong-architecture"
NO_VERSION_INFORMATION = "no-version-information"
INTERPOSITION = "interposition"

# When a problem bites
WHEN_LOAD = "load"
WHEN_FIRST_CALL = "first-call"
WHEN_NEVER = "never"

# found_via values
VIA_MAIN = "main program"
VIA_DIRECT = "direct path"
VIA_RPATH = "rpath"
VIA_LD_LIBRARY_PATH = "LD_LIBRARY_PATH"
VIA_RUNPATH = "runpath"
VIA_CACHE = "ld.so.cache"
VIA_DEFAULT = "default path"
VIA_ALREADY_LOADED = "already loaded"
VIA_PRELOAD = "preload"
VIA_HOST = "host process"
VIA_INTERPRETER = "interpreter"


@dataclass(frozen=True, slots=True)
class TriedPath:
    """One place the loader looked for a library, and what it found there."""

    path: str
    source: str  # rpath, LD_LIBRARY_PATH, runpath, ld.so.cache, default path
    outcome: str  # "found", "not found", "wrong ELF class", "wrong machine", ...


@dataclass(frozen=True, slots=True)
class LibraryResult:
    """A library as the loader resolved it (or failed to)."""

    name: str
    path: str | None
    found_via: str | None
    needed_by: tuple[str, ...]
    tried: tuple[TriedPath, ...]
    soname: str | None = None
    depth: int = 0


@dataclass(frozen=True, slots=True)
class NearMiss:
    """Something close to what was wanted, with a one-line explanation a person can act on."""

    symbol: str
    demangled: str | None
    file: str | None
    explanation: str
    kind: str
    score: float = 0.0


@dataclass(frozen=True, slots=True)
class Problem:
    """One reason the target does not load (or a warning), with its evidence."""

    kind: str
    severity: str  # "error", "warning", "info"
    file: str
    message: str
    when: str = WHEN_LOAD
    symbol: str | None = None
    demangled: str | None = None
    version: str | None = None
    library: str | None = None
    tried: tuple[TriedPath, ...] = ()
    near_misses: tuple[NearMiss, ...] = ()
    cause: str | None = None  # grouping key for problems sharing one root cause
    cause_summary: str | None = None  # one line naming that shared cause


@dataclass(frozen=True, slots=True)
class Binding:
    """A symbol reference and the file it binds to."""

    referrer: str
    symbol: str
    version: str | None
    provider: str | None
    when: str


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
