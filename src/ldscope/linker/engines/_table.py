"""The link-wide symbol table shared by the resolution engines, and their raw findings."""

from __future__ import annotations

from dataclasses import dataclass, field

from ldscope.linker.inputs import Input, ObjectFacts, SharedFacts
from ldscope.vocab import LinkErrorKind


@dataclass(slots=True)
class Unit:
    """An object file, archive member or shared library that takes part in the link."""

    uid: int
    display: str  # "a.o", "libx.a(m.o)", "libfoo.so"
    position: int  # argument index of the input that brought it in
    input: Input | None
    facts: ObjectFacts | SharedFacts
    member: int | None = None
    dt_needed_by: str | None = None  # set for libraries loaded only through a DT_NEEDED entry

    @property
    def is_shared(self) -> bool:
        """True for shared libraries."""
        return isinstance(self.facts, SharedFacts)


@dataclass(frozen=True, slots=True)
class RawError:
    """A finding before wording: kind, symbol key, the unit at fault, and another unit."""

    kind: LinkErrorKind
    key: str | None
    uid: int | None
    other: int | None = None
    detail: str = ""
    shown: bool = True  # False when the real linker stops before getting here
    input_seq: int | None = None


@dataclass(frozen=True, slots=True)
class TraceStep:
    """One step of the resolution worth explaining (extractions, needed/dropped libraries)."""

    action: str  # extract | needed | dropped | load-dt-needed | skip-duplicate | not-found
    target: str
    position: int | None
    symbol: str | None = None
    by: str | None = None


@dataclass(slots=True)
class Table:
    """Definitions and references, by symbol key."""

    defs: dict[str, tuple[int, int]] = field(default_factory=dict)  # key -> (SymbolKind, uid)
    undef: dict[str, int] = field(default_factory=dict)  # strongly referenced, undefined
    weak_undef: dict[str, int] = field(default_factory=dict)  # only weakly referenced
    refs: dict[str, list[int]] = field(default_factory=dict)  # regular referrers (any binding)
    strong_refs: dict[str, list[int]] = field(default_factory=dict)
    shared_refs: dict[str, list[int]] = field(default_factory=dict)  # libraries' strong refs
    first_ref: dict[str, tuple[int, bool]] = field(default_factory=dict)  # key -> (uid, strong?)

    def known(self, key: str) -> bool:
        """True once the symbol has been seen at all (bfd's hash entry exists)."""
        return key in self.defs or key in self.undef or key in self.weak_undef


@dataclass(slots=True)
class Outcome:
    """What an engine found: units in link order, errors, trace and library states."""

    units: list[Unit] = field(default_factory=list)
    table: Table = field(default_factory=Table)
    errors: list[RawError] = field(default_factory=list)
    trace: list[TraceStep] = field(default_factory=list)
    needed_libs: list[int] = field(default_factory=list)  # uids of libraries kept (DT_NEEDED)
    dropped_libs: list[Input] = field(default_factory=list)  # as-needed libraries not needed
    fatal: bool = False  # the real linker stops at the first fatal error
    extracted: dict[tuple[int, int], int] = field(default_factory=dict)  # (input seq, member) -> uid
    backrefs: list[tuple[str, str, int]] = field(default_factory=list)  # (key, referrer, archive seq)
    warnings: list[str] = field(default_factory=list)

    def error(self, kind: LinkErrorKind, key: str | None, uid: int | None, other: int | None = None,
              detail: str = "", fatal: bool = False, input_seq: int | None = None) -> None:
        """Record an error (hidden if a fatal error came first); `fatal` stops the rest."""
        self.errors.append(RawError(kind, key, uid, other, detail, not self.fatal, input_seq))
        if fatal:
            self.fatal = True

    def unit(self, uid: int) -> Unit:
        """Unit by id."""
        return self.units[uid]
