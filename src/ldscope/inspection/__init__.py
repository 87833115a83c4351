"""What `ldscope symbols` and `ldscope info` compute: nm-like symbol listings (never silently
empty) and summaries of ELF files, archives and linker scripts."""

from __future__ import annotations

from ldscope.inspection._info import (
    ArchiveInfo,
    ElfInfo,
    FileInfo,
    MemberInfo,
    RequiredVersions,
    ScriptInfo,
    SectionInfo,
    SegmentInfo,
    describe,
)
from ldscope.inspection._listing import ListingOptions, SymbolRow, TableListing, list_symbols
from ldscope.inspection._sources import collect_listings

__all__ = [
    "ArchiveInfo",
    "ElfInfo",
    "FileInfo",
    "ListingOptions",
    "MemberInfo",
    "RequiredVersions",
    "ScriptInfo",
    "SectionInfo",
    "SegmentInfo",
    "SymbolRow",
    "TableListing",
    "collect_listings",
    "describe",
    "list_symbols",
]
