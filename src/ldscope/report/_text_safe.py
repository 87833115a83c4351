"""Make any name, path or message safe to print: undecodable bytes and control characters
become visible escapes (`\\xe9`, `\\x1b`), as `ls -b` and readelf show them.

Names reach the report decoded with surrogateescape (byte 0xE9 is U+DCE9). Printed raw they
make the encoder raise, and a name holding ESC sequences could rewrite the user's terminal,
so every text renderer passes what it prints through `safe` (one value) or `sanitized` (a
whole result object, before the renderer adds its own layout and colour).
"""

from __future__ import annotations

import dataclasses
from typing import Any

_SIMPLE = {"\t": "\\t", "\n": "\\n", "\r": "\\r"}


def _escape_char(c: str) -> str:
    o = ord(c)
    if 0xDC80 <= o <= 0xDCFF:  # surrogateescape: the original byte
        return f"\\x{o - 0xDC00:02x}"
    if c in _SIMPLE:
        return _SIMPLE[c]
    if o < 0x100:
        return f"\\x{o:02x}"
    return f"\\u{o:04x}" if o < 0x10000 else f"\\U{o:08x}"


def safe(text: str) -> str:
    """`text` with undecodable bytes, controls (newlines too) and other unprintables escaped."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else _escape_char(c) for c in text)


def safe_lines(text: str) -> str:
    """Like `safe`, but keeps newlines: for multi-line messages the library words itself."""
    if text.isprintable():
        return text
    return "\n".join(safe(line) for line in text.split("\n"))


def plain_ascii(text: str) -> bool:
    """True if `text` is printable ASCII only (no controls, no DEL), tested at C speed: the
    question asked of every chunk of names, which are nearly always plain."""
    if not text.isascii():
        return False
    import numpy as np  # already loaded wherever chunks of names exist

    codes = np.frombuffer(text.encode("ascii"), dtype=np.uint8)
    return not codes.size or (int(codes.min()) >= 0x20 and int(codes.max()) < 0x7F)


def needs_escape(texts: list[str]) -> bool:
    """True if any of `texts` holds something `safe` would change (one C-level test for a
    whole chunk of names)."""
    whole = "".join(texts)
    return not plain_ascii(whole) and not whole.isprintable()


def sanitized(value: Any, keep_newlines: bool = True) -> Any:
    """A copy of a result (dataclasses, tuples, lists, dicts, strings) with every string made
    safe (`safe_lines`, or `safe` when not `keep_newlines`); unchanged parts are the same
    objects, so enums stay enums."""
    if isinstance(value, str):
        if value.isprintable() or type(value) is not str:
            return value
        return safe_lines(value) if keep_newlines else safe(value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        changes = {}
        for f in dataclasses.fields(value):
            if not f.init:
                continue
            old = getattr(value, f.name)
            new = sanitized(old, keep_newlines)
            if new is not old:
                changes[f.name] = new
        return dataclasses.replace(value, **changes) if changes else value
    if isinstance(value, (tuple, list)):
        items = [sanitized(v, keep_newlines) for v in value]
        if all(a is b for a, b in zip(items, value)):
            return value
        return type(value)(items) if type(value) in (tuple, list) else value
    if isinstance(value, dict):
        pairs = [(sanitized(k, keep_newlines), sanitized(v, keep_newlines)) for k, v in value.items()]
        if all(a is k and b is v for (a, b), (k, v) in zip(pairs, value.items())):
            return value
        return dict(pairs)
    return value
