"""Render symbol listings as nm-like text or as JSON (schema ldscope.symbols/1)."""

from __future__ import annotations

from typing import Any

from ldscope.elf import format_versioned_name
from ldscope.inspection import SymbolRow, TableListing

SYMBOLS_SCHEMA = "ldscope.symbols/1"


def render_symbols_text(listings: list[TableListing], prefix_names: bool, demangle: bool, verbose: bool) -> str:
    """nm-style lines: value, letter, name[@version]; `file:` or `archive(member):` prefixed."""
    out: list[str] = []
    for listing in listings:
        if listing.status != "ok":
            continue
        width = 16
        prefix = f"{listing.display_name}: " if prefix_names else ""
        for row in listing.rows:
            out.append(prefix + _line(row, width, demangle, verbose))
    return "\n".join(out) + ("\n" if out else "")


def _line(row: SymbolRow, width: int, demangle: bool, verbose: bool) -> str:
    value = " " * width if not row.defined else f"{row.value:0{width}x}"
    shown = row.demangled if demangle and row.demangled else row.name
    hidden = row.version_hidden or row.version_file is not None  # verneed versions print with @
    name = format_versioned_name(shown, row.version, row.defined, hidden)
    if row.version is not None and shown != row.name and row.name == row.version:
        name = shown
    if verbose:
        return (
            f"{value} {row.nm_code} {row.size:>8} {row.bind:<6} {row.type:<7} "
            f"{row.visibility:<9} {name}"
        )
    return f"{value} {row.nm_code} {name}"


def row_json(row: SymbolRow) -> dict[str, Any]:
    """One symbol as a JSON object."""
    return {
        "index": row.index,
        "name": row.name,
        "demangled": row.demangled,
        "value": row.value,
        "size": row.size,
        "bind": row.bind,
        "type": row.type,
        "visibility": row.visibility,
        "section_index": row.section_index,
        "defined": row.defined,
        "nm_code": row.nm_code,
        "version": row.version,
        "version_hidden": row.version_hidden,
        "version_file": row.version_file,
    }


def symbols_json(listings: list[TableListing], errors: list[dict[str, Any]]) -> dict[str, Any]:
    """The JSON document for `ldscope symbols`."""
    return {
        "schema": SYMBOLS_SCHEMA,
        "files": [
            {
                "file": listing.file,
                "member": listing.member,
                "table": listing.table,
                "status": listing.status,
                "reason": listing.reason,
                "searched": listing.searched,
                "symbols": [row_json(r) for r in listing.rows],
            }
            for listing in listings
        ],
        "errors": errors,
    }
