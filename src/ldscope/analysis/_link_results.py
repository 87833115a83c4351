"""What `ldscope link` reports: frozen results with a versioned JSON form (ldscope.link/1)."""

from __future__ import annotations

from dataclasses import dataclass

SCHEMA = "ldscope.link/1"


@dataclass(frozen=True, slots=True)
class Definition:
    """A place that defines (or could define) the symbol, and why it did or did not count."""

    where: str
    argument_index: int | None
    status: str  # see docs/json.md: extracted, not-extracted, before-referrer, ...
    detail: str


@dataclass(frozen=True, slots=True)
class NearMiss:
    """A symbol that is almost the one wanted: same name, other signature, ABI or version."""

    symbol: str
    demangled: str | None
    where: str
    kind: str  # cxx11-abi, parameter-changed, other-version, hidden-version, ...
    differences: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class LinkError:
    """One predicted error, worded like the linker and explained."""

    kind: str
    symbol: str | None
    demangled: str | None
    versioned: str | None  # `sym@@VER` as the linker prints it
    referenced_by: str | None
    argument_index: int | None
    defined_in: tuple[Definition, ...]
    message: str
    explanation: str
    near_misses: tuple[NearMiss, ...]
    shown: bool  # False: the real linker stops (fatal error) before printing this one
    other: str | None = None  # first definition (multiple-definition) or the library (dso-missing)


@dataclass(frozen=True, slots=True)
class Edit:
    """One change to the linker argv: insert `args` before index `at`, or remove [at, at+count)."""

    op: str  # insert | remove
    at: int
    args: tuple[str, ...] = ()
    count: int = 0


@dataclass(frozen=True, slots=True)
class Fix:
    """A candidate change, simulated; confirmed by the real linker when asked (--confirm)."""

    id: str
    description: str
    edit: tuple[Edit, ...]
    argv: tuple[str, ...]
    fixes_alone: bool
    in_combination: bool
    remaining_errors: int
    reason: str
    confirmed: bool | None = None


@dataclass(frozen=True, slots=True)
class TraceEntry:
    """A step of the resolution: why a member was extracted, a library kept or dropped."""

    action: str
    target: str
    argument_index: int | None
    symbol: str | None
    by: str | None


@dataclass(frozen=True, slots=True)
class InputSummary:
    """An input as resolved (for the report): what the argument turned into."""

    argument_index: int
    spec: str
    path: str | None
    kind: str
    flags: tuple[str, ...]
    problem: str | None


@dataclass(frozen=True, slots=True)
class Confirmation:
    """The real linker's verdict on the original line (--confirm)."""

    program: str
    exit_status: int | None
    links: bool | None
    agrees: bool | None
    detail: str


@dataclass(frozen=True, slots=True)
class LinkReport:
    """Everything `ldscope link` found for one link line."""

    linker: str
    argv: tuple[str, ...]
    original: tuple[str, ...]
    cwd: str
    source: str
    output_kind: str
    links: bool
    partial: bool
    errors: tuple[LinkError, ...]
    warnings: tuple[str, ...]
    notes: tuple[str, ...]
    fixes: tuple[Fix, ...]
    trace: tuple[TraceEntry, ...]
    inputs: tuple[InputSummary, ...]
    confirmation: Confirmation | None = None
