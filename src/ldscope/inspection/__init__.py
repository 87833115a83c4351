"""What `ldscope symbols` and `ldscope info` compute: nm-like symbol listings (never silently
empty) and summaries of ELF files, archives and linker scripts."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
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
    from ldscope.inspection._listing import (
        ListingOptions,
        RowChunk,
        SymbolRow,
        TableListing,
        is_mapping_symbol,
        list_symbols,
    )
    from ldscope.inspection._sources import collect_listings, iter_listings

# Each name is imported on first use: listing symbols must not pay for what `describe`
# imports (the scan's attribution and the loader model).
_EXPORTS: dict[str, str] = {
    "ArchiveInfo": "ldscope.inspection._info",
    "ElfInfo": "ldscope.inspection._info",
    "FileInfo": "ldscope.inspection._info",
    "ListingOptions": "ldscope.inspection._listing",
    "MemberInfo": "ldscope.inspection._info",
    "RequiredVersions": "ldscope.inspection._info",
    "RowChunk": "ldscope.inspection._listing",
    "ScriptInfo": "ldscope.inspection._info",
    "SectionInfo": "ldscope.inspection._info",
    "SegmentInfo": "ldscope.inspection._info",
    "SymbolRow": "ldscope.inspection._listing",
    "TableListing": "ldscope.inspection._listing",
    "collect_listings": "ldscope.inspection._sources",
    "describe": "ldscope.inspection._info",
    "is_mapping_symbol": "ldscope.inspection._listing",
    "iter_listings": "ldscope.inspection._sources",
    "list_symbols": "ldscope.inspection._listing",
}


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


__all__ = [
    "ArchiveInfo",
    "ElfInfo",
    "FileInfo",
    "ListingOptions",
    "MemberInfo",
    "RequiredVersions",
    "RowChunk",
    "ScriptInfo",
    "SectionInfo",
    "SegmentInfo",
    "SymbolRow",
    "TableListing",
    "collect_listings",
    "describe",
    "is_mapping_symbol",
    "iter_listings",
    "list_symbols",
]
