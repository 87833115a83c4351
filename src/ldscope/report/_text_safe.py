"""The one escape for text output: every string that comes from a file or a file name
(symbol and version names, SONAMEs, NEEDED entries, RUNPATHs, paths, distribution names,
messages embedding them) is passed through `safe` before a text renderer lays it out.

The rule (docs/json.md, "Text output"): a character is written as itself if Python's
`str.isprintable()` accepts it and it is not a backslash; otherwise it is escaped:

* `\\\\` for a backslash (so every escape below is unambiguous, as `ls -b` writes it);
* `\\n`, `\\t`, `\\r` for line feed, tab and carriage return;
* `\\xHH` for the other C0 controls and DEL (U+0000–U+001F, U+007F), and for a byte that is
  not UTF-8 (names are decoded with surrogateescape: byte 0xE9 is U+DCE9), which is always
  0x80–0xFF;
* `\\uHHHH` / `\\UHHHHHHHH` for every other code point `isprintable` rejects: C1 controls,
  the bidi marks, embeddings, overrides and isolates (U+061C, U+200E/F, U+202A–U+202E,
  U+2066–U+2069), zero-width and other format characters (category Cf: U+200B–U+200D,
  U+2060, U+FEFF, U+00AD, …), line and paragraph separators, spaces other than U+0020,
  private-use, surrogate and unassigned code points (as `readelf --unicode=escape` writes
  them). Python's `repr()` escapes the same set.

So an escape sequence cannot reach the terminal, a newline cannot forge a report line, a
right-to-left override cannot reorder one, and the original bytes can be read back.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from itertools import pairwise
from typing import Any

_SIMPLE = {"\t": "\\t", "\n": "\\n", "\r": "\\r", "\\": "\\\\"}
# Characters a transformation of a name may add around it (lld's `m.o in archive libx.a`,
# gold's `'sym', version 'V'`): a line break in a name is recognised by its neighbours
# up to the nearest of these.
_WORD_EDGES = "()'`@ :,[]<>\"="


def _escape_char(c: str) -> str:
    o = ord(c)
    if 0xDC80 <= o <= 0xDCFF:  # surrogateescape: the original byte
        return f"\\x{o - 0xDC00:02x}"
    simple = _SIMPLE.get(c)
    if simple is not None:
        return simple
    if o < 0x80:
        return f"\\x{o:02x}"
    return f"\\u{o:04x}" if o < 0x10000 else f"\\U{o:08x}"


def safe(text: str) -> str:
    """`text` escaped for text output: undecodable bytes, controls (newlines too), bidi and
    other invisible format characters, and backslashes (the rule in the module docstring)."""
    if text.isprintable() and "\\" not in text:
        return text
    return "".join(c if c.isprintable() and c != "\\" else _escape_char(c) for c in text)


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
    return "\\" in whole or (not plain_ascii(whole) and not whole.isprintable())


def message_lines(message: str, untrusted: Iterable[str]) -> list[str]:
    """A multi-line message the library worded (a linker's two-line error) as escaped lines:
    a line break inside one of the `untrusted` values it embeds (a symbol or file name) is
    escaped with the rest of that value; only the wording's own breaks start a line. When
    in doubt a break is escaped: the output is then less tidy, never forged."""
    if "\n" not in message:
        return [safe(message)]
    from_values: set[int] = set()
    for value in untrusted:
        if "\n" not in value:
            continue
        parts = value.split("\n")
        for before, after in pairwise(parts):
            tail = before[max(before.rfind(c) for c in _WORD_EDGES) + 1:]
            cut = [i for i in (after.find(c) for c in _WORD_EDGES) if i >= 0]
            head = after[: min(cut)] if cut else after
            pattern = f"{tail}\n{head}"
            at = message.find(pattern)
            while at >= 0:
                from_values.add(at + len(tail))
                at = message.find(pattern, at + 1)
    lines, start = [], 0
    for at, c in enumerate(message):
        if c == "\n" and at not in from_values:
            lines.append(safe(message[start:at]))
            start = at + 1
    lines.append(safe(message[start:]))
    return lines


def strings_in(value: Any, skip: frozenset[str] = frozenset()) -> list[str]:
    """Every string in a result (dataclasses, tuples, lists, dicts), fields named in `skip`
    left out: the untrusted values `message_lines` looks for."""
    found: list[str] = []
    stack = [value]
    while stack:  # iterative: results nest only a few levels, but nothing here recurses
        v = stack.pop()
        if isinstance(v, str):
            found.append(v)
        elif dataclasses.is_dataclass(v) and not isinstance(v, type):
            stack += [getattr(v, f.name) for f in dataclasses.fields(v) if f.name not in skip]
        elif isinstance(v, (tuple, list)):
            stack += v
        elif isinstance(v, dict):
            stack += [*v.keys(), *v.values()]
    return found


def sanitized(value: Any) -> Any:
    """A copy of a result (dataclasses, tuples, lists, dicts, strings) with every string
    passed through `safe`; unchanged parts are the same objects, so enums stay enums. A
    renderer calls it once on what it is given, then adds its own layout and colour."""
    if isinstance(value, str):
        if type(value) is not str or (value.isprintable() and "\\" not in value):
            return value
        return safe(value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        changes = {}
        for f in dataclasses.fields(value):
            if not f.init:
                continue
            old = getattr(value, f.name)
            new = sanitized(old)
            if new is not old:
                changes[f.name] = new
        return dataclasses.replace(value, **changes) if changes else value
    if isinstance(value, (tuple, list)):
        items = [sanitized(v) for v in value]
        if all(a is b for a, b in zip(items, value)):
            return value
        return type(value)(items) if type(value) in (tuple, list) else value
    if isinstance(value, dict):
        pairs = [(sanitized(k), sanitized(v)) for k, v in value.items()]
        if all(a is k and b is v for (a, b), (k, v) in zip(pairs, value.items())):
            return value
        return dict(pairs)
    return value
