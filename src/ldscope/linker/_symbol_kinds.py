"""The one vocabulary of symbol kinds a link model uses: what a file's symbol is (read by
`inputs`) and what kind of definition the link-wide table holds for a name (`engines`)."""

from __future__ import annotations

from enum import IntEnum


class SymbolKind(IntEnum):
    """A symbol as resolution sees it. The order matters: definitions (STRONG..COMMON) sort
    before references (UNDEFINED, WEAK_UNDEFINED); SHARED kinds exist only in the table."""

    STRONG = 1  # a strong (global or unique) definition in a regular object
    WEAK = 2  # a weak definition
    COMMON = 3  # a common symbol (tentative definition)
    UNDEFINED = 4  # a strong reference
    WEAK_UNDEFINED = 5  # a weak reference
    SHARED = 6  # defined by a shared library
    SHARED_WEAK = 7  # weakly defined by a shared library


# Short names for the hot loops of the engines (an attribute lookup per symbol adds up).
STRONG, WEAK, COMMON = SymbolKind.STRONG, SymbolKind.WEAK, SymbolKind.COMMON
UNDEFINED, WEAK_UNDEFINED = SymbolKind.UNDEFINED, SymbolKind.WEAK_UNDEFINED
SHARED, SHARED_WEAK = SymbolKind.SHARED, SymbolKind.SHARED_WEAK
