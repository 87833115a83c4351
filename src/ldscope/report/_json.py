"""JSON rendering helpers shared by every command (versioned schemas, stable key order).

Bytes are data: a name that is not valid UTF-8 reaches here decoded with surrogateescape
(byte 0xE9 is U+DCE9). JSON cannot carry that (strict parsers reject lone surrogates), so
every string field holding such bytes is written readable, the bytes as `\\xNN` text, and
gets a sibling `<field>_bytes` with the exact bytes in hex (docs/json.md, "Bytes").
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any


def to_jsonable(value: Any) -> Any:
    """Dataclasses, tuples and enums to plain JSON values (recursively)."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: to_jsonable(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, (list, tuple)):
        return [to_jsonable(v) for v in value]
    if isinstance(value, dict):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if hasattr(value, "value") and hasattr(value, "name") and type(value).__module__ != "builtins":
        return value.value
    return value


def has_raw_bytes(text: str) -> bool:
    """True if `text` holds surrogates (undecodable bytes kept by surrogateescape)."""
    if text.isascii():
        return False
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def readable(text: str) -> str:
    """`text` with each undecodable byte written as `\\xNN` (valid Unicode, for JSON)."""
    out = []
    for c in text:
        o = ord(c)
        if 0xDC80 <= o <= 0xDCFF:
            out.append(f"\\x{o - 0xDC00:02x}")
        elif 0xD800 <= o <= 0xDFFF:
            out.append(f"\\u{o:04x}")
        else:
            out.append(c)
    return "".join(out)


def raw_hex(text: str) -> str:
    """The exact bytes `text` was decoded from, in lowercase hex."""
    try:
        return text.encode("utf-8", "surrogateescape").hex()
    except UnicodeEncodeError:  # a surrogate not from surrogateescape: keep its code unit
        return text.encode("utf-8", "surrogatepass").hex()


def bytes_safe(value: Any) -> Any:
    """A JSON value with every undecodable string made readable and, in an object, given
    a `<key>_bytes` sibling (a list of strings gets a parallel list, null where clean)."""
    if isinstance(value, str):
        return readable(value) if has_raw_bytes(value) else value
    if isinstance(value, list):
        return [bytes_safe(v) for v in value]
    if not isinstance(value, dict):
        return value
    out: dict[str, Any] = {}
    for key, v in value.items():
        k = bytes_safe(key) if isinstance(key, str) else key
        if isinstance(v, str) and has_raw_bytes(v):
            out[k] = readable(v)
            out[f"{k}_bytes"] = raw_hex(v)
        elif isinstance(v, list) and any(isinstance(x, str) and has_raw_bytes(x) for x in v):
            out[k] = [bytes_safe(x) for x in v]
            out[f"{k}_bytes"] = [raw_hex(x) if isinstance(x, str) and has_raw_bytes(x) else None for x in v]
        else:
            out[k] = bytes_safe(v)
    return out


def dumps(document: dict[str, Any], pretty: bool = True) -> str:
    """Serialise a document (valid UTF-8 and ASCII-safe, indented or compact, trailing newline)."""
    doc = bytes_safe(document)
    if pretty:
        return json.dumps(doc, indent=2, ensure_ascii=True) + "\n"
    return json.dumps(doc, ensure_ascii=True, separators=(",", ":")) + "\n"
