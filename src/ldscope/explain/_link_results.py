"""An explained link error: worded like the linker, with where the symbol is defined (and why
that did not count) and what is almost the symbol wanted."""

from __future__ import annotations

from dataclasses import dataclass

from ldscope.vocab import LinkErrorKind, NearMiss, Words


class DefinitionStatus(Words):
    """Why a definition of the wanted symbol did or did not resolve the reference."""

    EXTRACTED = "extracted"  # the member is in the link
    NOT_EXTRACTED = "not-extracted"
    BEFORE_REFERRER = "before-referrer"  # the archive comes before the reference (bfd, gold)
    WEAK_REFERENCE = "weak-reference"  # every reference is weak: weak references never extract
    ARCHIVE_NO_INDEX = "archive-no-index"
    DROPPED_AS_NEEDED = "dropped-as-needed"  # an --as-needed library nothing needed when reached
    ON_LINE = "on-line"  # a library on the line defines it
    DT_NEEDED_ONLY = "dt-needed-only"  # reachable only as a DT_NEEDED entry of a library
    SEARCH_PATH = "search-path"  # a library on the search path, not on the line
    BUILD_TREE = "build-tree"  # a library in the link's own build tree, in no search directory


@dataclass(frozen=True, slots=True)
class Definition:
    """A place that defines (or could define) the symbol, and why it did or did not count."""

    where: str
    argument_index: int | None
    status: DefinitionStatus
    detail: str


@dataclass(frozen=True, slots=True)
class LinkError:
    """One predicted error, worded like the linker and explained."""

    kind: LinkErrorKind
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
