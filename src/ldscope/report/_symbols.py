"""Render symbol listings as nm-like text, as JSON (schema ldscope.symbols/1) or as NDJSON,
a chunk of rows at a time: the CLI writes each piece as it is produced, so a 530,000-symbol
table is never one string. The compact JSON rows are built with one f-string per row over
the chunk's columns (names checked, and escaped if need be, a whole chunk at once): that
row is most of the time `--format json` takes (docs/performance.md compares it with readelf)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Sequence
from json.encoder import encode_basestring_ascii as _json_str
from typing import Any

from ldscope.elf import format_versioned_name
from ldscope.inspection import RowChunk, SymbolRow, TableListing
from ldscope.report._json import bytes_safe, has_raw_bytes, raw_hex, readable
from ldscope.report._text_safe import needs_escape, plain_ascii, safe

SYMBOLS_SCHEMA = "ldscope.symbols/1"

_BLANK = " " * 16
_PIECE_ROWS = 4096  # rows per written piece
_SHN_COMMON, _EM_ARM = 0xFFF2, 40


# ------------------------------------------------------------------------------- text
def render_symbols_text(listings: list[TableListing], prefix_names: bool, demangle: bool, verbose: bool) -> str:
    """nm-style lines: value, letter, name[@version]; `file:` or `archive(member):` prefixed."""
    return "".join(piece for listing in listings for piece in symbols_text(listing, prefix_names, demangle, verbose))


def symbols_text(listing: TableListing, prefix_names: bool, demangle: bool, verbose: bool) -> Iterator[str]:
    """The nm-style lines of one listing, a chunk at a time (each piece ends in a newline)."""
    if listing.status != "ok":
        return
    prefix = f"{safe(listing.display_name)}: " if prefix_names else ""
    thumb = listing.machine == _EM_ARM
    for chunk in listing.chunks():
        if len(chunk):
            yield "\n".join(_lines(chunk, prefix, demangle, verbose, thumb)) + "\n"


def _shown_names(chunk: RowChunk, demangle: bool) -> list[str]:
    """Each row's printed name: demangled if asked, with its version as nm prints it."""
    names = chunk.name
    shown = [d or n for n, d in zip(names, chunk.demangled)] if demangle and chunk.demangled else names
    if chunk.version is not None:
        hidden = chunk.version_hidden or [False] * len(names)
        files = chunk.version_file or [None] * len(names)
        out = []
        for s, n, v, h, f, shndx in zip(shown, names, chunk.version, hidden, files, chunk.section_index):
            if v is None or (s != n and n == v):
                out.append(s)
            else:
                out.append(format_versioned_name(s, v, shndx != 0, h or f is not None))
        shown = out
    if needs_escape(shown):
        shown = [safe(s) for s in shown]
    return shown


def _nm_values(chunk: RowChunk, thumb: bool) -> list[str]:
    """The value column as nm prints it: blank when undefined, a common symbol's size (bfd
    reads st_size as its value), an ARM Thumb function's address without bit 0."""
    values = chunk.value
    if _SHN_COMMON in chunk.section_index:
        values = [sz if sh == _SHN_COMMON else v for v, sz, sh in zip(values, chunk.size, chunk.section_index)]
    if thumb:
        values = [v & ~1 if t in ("FUNC", "IFUNC") else v for v, t in zip(values, chunk.type)]
    return [f"{v:016x}" if s else _BLANK for v, s in zip(values, chunk.section_index)]


def _lines(chunk: RowChunk, prefix: str, demangle: bool, verbose: bool, thumb: bool = False) -> list[str]:
    names = _shown_names(chunk, demangle)
    values = _nm_values(chunk, thumb)
    if verbose:
        return [
            f"{prefix}{v} {c} {size:>8} {b:<6} {t:<7} {vis:<9} {n}"
            for v, c, size, b, t, vis, n in zip(
                values, chunk.nm_code, chunk.size, chunk.bind, chunk.type, chunk.visibility, names
            )
        ]
    if prefix:
        return [f"{prefix}{v} {c} {n}" for v, c, n in zip(values, chunk.nm_code, names)]
    return [f"{v} {c} {n}" for v, c, n in zip(values, chunk.nm_code, names)]


# ------------------------------------------------------------------------------- JSON
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


def _table_json(listing: TableListing) -> dict[str, Any]:
    return {
        "file": listing.file,
        "member": listing.member,
        "table": listing.table,
        "status": listing.status,
        "reason": listing.reason,
        "searched": listing.searched,
    }


def symbols_json(listings: list[TableListing], errors: list[dict[str, Any]]) -> dict[str, Any]:
    """The JSON document for `ldscope symbols`, as one object (small listings; the CLI
    streams it with `symbols_json_stream`)."""
    return {
        "schema": SYMBOLS_SCHEMA,
        "files": [{**_table_json(x), "symbols": [row_json(r) for r in x.rows]} for x in listings],
        "errors": errors,
    }


def _name_pieces(values: list[str], key: str, sep: str = ",", colon: str = ":") -> list[str]:
    """Each value's JSON string content (no quotes); one holding undecodable bytes also
    closes itself and opens `<key>_bytes` (`caf\\xe9","name_bytes":"636166e9`)."""
    if not values:
        return []
    whole = "".join(values)
    if whole.isascii():
        # The common case needs no escaping at all.
        if '"' not in whole and "\\" not in whole and plain_ascii(whole):
            return values
        joined = "\0".join(values)
        if "\\" not in joined:  # names never hold NUL: each \u0000 escaped is a separator
            parts = _json_str(joined)[1:-1].split("\\u0000")
            if len(parts) == len(values):
                return parts
    return [_name_piece(v, key, sep, colon) for v in values]


def _name_piece(value: str, key: str, sep: str = ",", colon: str = ":") -> str:
    if has_raw_bytes(value):
        return f'{_json_str(readable(value))[1:-1]}"{sep}"{key}_bytes"{colon}"{raw_hex(value)}'
    return str(_json_str(value)[1:-1])


def _literals(
    values: Sequence[str | None] | None, n: int, key: str, cache: dict[str | None, str],
    sep: str = ",", colon: str = ":",
) -> list[str]:
    """JSON literals for optional strings (null where None), each distinct value escaped once
    (per key: one holding undecodable bytes also carries `<key>_bytes`)."""
    if values is None:
        return ["null"] * n
    for v in set(values) - cache.keys():
        if v is None:
            cache[v] = "null"
        elif has_raw_bytes(v):
            cache[v] = f'{json.dumps(readable(v))}{sep}"{key}_bytes"{colon}"{raw_hex(v)}"'
        else:
            cache[v] = json.dumps(v)
    return list(map(cache.__getitem__, values))


def _json_rows(chunk: RowChunk, caches: dict[str, dict[str | None, str]]) -> list[str]:
    """The chunk's symbols as compact JSON objects, one string each (key order as row_json)."""
    n = len(chunk)
    names = _name_pieces(chunk.name, "name")
    if chunk.demangled is None:
        demangled = ["null"] * n
    else:
        demangled = ["null" if d is None else '"' + _name_piece(d, "demangled") + '"' for d in chunk.demangled]
    if chunk.version is None:
        # No versions (.symtab): the tail of every row is the same.
        return [
            f'{{"index":{i},"name":"{nm}","demangled":{dm},"value":{v},"size":{sz},"bind":"{b}",'
            f'"type":"{t}","visibility":"{vis}","section_index":{sh},"defined":{"true" if sh else "false"},'
            f'"nm_code":"{c}","version":null,"version_hidden":false,"version_file":null}}'
            for i, nm, dm, v, sz, b, t, vis, sh, c in zip(
                chunk.index, names, demangled, chunk.value, chunk.size, chunk.bind, chunk.type,
                chunk.visibility, chunk.section_index, chunk.nm_code,
            )
        ]
    versions = _literals(chunk.version, n, "version", caches["version"])
    files = _literals(chunk.version_file, n, "version_file", caches["version_file"])
    hidden = chunk.version_hidden or [False] * n
    return [
        f'{{"index":{i},"name":"{nm}","demangled":{dm},"value":{v},"size":{sz},"bind":"{b}",'
        f'"type":"{t}","visibility":"{vis}","section_index":{sh},"defined":{"true" if sh else "false"},'
        f'"nm_code":"{c}","version":{ver},"version_hidden":{"true" if h else "false"},"version_file":{f}}}'
        for i, nm, dm, v, sz, b, t, vis, sh, c, ver, h, f in zip(
            chunk.index, names, demangled, chunk.value, chunk.size, chunk.bind, chunk.type,
            chunk.visibility, chunk.section_index, chunk.nm_code, versions, hidden, files,
        )
    ]


def _pretty_rows(chunk: RowChunk, caches: dict[str, dict[str | None, str]]) -> list[str]:
    """The chunk's symbols as JSON objects indented as `json.dumps(indent=2)` indents them
    at the depth of a table's `symbols` list (the same fields as _json_rows)."""
    n = len(chunk)
    s, c = ",\n          ", ": "
    names = _name_pieces(chunk.name, "name", s, c)
    if chunk.demangled is None:
        demangled = ["null"] * n
    else:
        demangled = ["null" if d is None else '"' + _name_piece(d, "demangled", s, c) + '"' for d in chunk.demangled]
    versions = _literals(chunk.version, n, "version", caches["version"], s, c)
    files = _literals(chunk.version_file, n, "version_file", caches["version_file"], s, c)
    hidden = chunk.version_hidden or [False] * n
    return [
        f'        {{\n          "index": {i}{s}"name": "{nm}"{s}"demangled": {dm}{s}"value": {v}{s}"size": {sz}'
        f'{s}"bind": "{b}"{s}"type": "{t}"{s}"visibility": "{vis}"{s}"section_index": {sh}'
        f'{s}"defined": {"true" if sh else "false"}{s}"nm_code": "{code}"{s}"version": {ver}'
        f'{s}"version_hidden": {"true" if h else "false"}{s}"version_file": {f}\n        }}'
        for i, nm, dm, v, sz, b, t, vis, sh, code, ver, h, f in zip(
            chunk.index, names, demangled, chunk.value, chunk.size, chunk.bind, chunk.type,
            chunk.visibility, chunk.section_index, chunk.nm_code, versions, hidden, files,
        )
    ]


def symbols_json_stream(
    listings: Iterable[TableListing], errors: Sequence[dict[str, Any]], pretty: bool = False
) -> Iterator[str]:
    """The `ldscope.symbols/1` document in pieces: the opening, each table and its symbols
    a chunk at a time, then `errors` (read at the end, so the caller may fill it meanwhile)."""
    caches: dict[str, dict[str | None, str]] = {"version": {}, "version_file": {}}
    if pretty:
        yield '{\n  "schema": "' + SYMBOLS_SCHEMA + '",\n  "files": ['
    else:
        yield '{"schema":"' + SYMBOLS_SCHEMA + '","files":['
    first_table = True
    for listing in listings:
        head = bytes_safe(_table_json(listing))
        if pretty:
            text = json.dumps(head, indent=2).replace("\n", "\n    ")
            yield ("\n    " if first_table else ",\n    ") + text[:-6] + ',\n      "symbols": ['
        else:
            yield ("" if first_table else ",") + json.dumps(head, separators=(",", ":"))[:-1] + ',"symbols":['
        first_table = False
        first_row = True
        for chunk in listing.chunks():
            if not len(chunk):
                continue
            if pretty:
                yield ("\n" if first_row else ",\n") + ",\n".join(_pretty_rows(chunk, caches))
            else:
                rows = _json_rows(chunk, caches)
                for at in range(0, len(rows), _PIECE_ROWS):  # small pieces: less text alive at once
                    if not first_row or at:
                        yield ","
                    yield ",".join(rows[at : at + _PIECE_ROWS])
            first_row = False
        if pretty:
            yield ("]" if first_row else "\n      ]") + "\n    }"
        else:
            yield "]}"
    errs = [bytes_safe(e) for e in errors]
    if pretty:
        tail = json.dumps(errs, indent=2).replace("\n", "\n  ")
        yield ("]" if first_table else "\n  ]") + ',\n  "errors": ' + tail + "\n}\n"
    else:
        yield '],"errors":' + json.dumps(errs, separators=(",", ":")) + "}\n"


def symbols_ndjson_stream(listings: Iterable[TableListing], errors: list[dict[str, Any]]) -> Iterator[str]:
    """NDJSON: per table a `{"record":"table",…}` line, then one `{"record":"symbol",…}` line
    per symbol; an `{"record":"error",…}` line for each file that could not be read, written
    as soon as it is known (entries appended to `errors` while the listings are iterated)."""
    caches: dict[str, dict[str | None, str]] = {"version": {}, "version_file": {}}
    seen_errors = 0
    for listing in listings:
        while seen_errors < len(errors):
            yield _error_line(errors[seen_errors])
            seen_errors += 1
        head = {"record": "table", "schema": SYMBOLS_SCHEMA, **_table_json(listing)}
        yield json.dumps(bytes_safe(head), separators=(",", ":")) + "\n"
        for chunk in listing.chunks():
            if len(chunk):
                yield "".join('{"record":"symbol",' + r[1:] + "\n" for r in _json_rows(chunk, caches))
    while seen_errors < len(errors):
        yield _error_line(errors[seen_errors])
        seen_errors += 1


def _error_line(error: dict[str, Any]) -> str:
    return json.dumps(bytes_safe({"record": "error", **error}), separators=(",", ":")) + "\n"
