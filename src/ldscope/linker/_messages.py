"""Error messages worded the way each linker prints them, so they can be matched to a log.

The wording is data (`data/messages.json`, one template per linker and error kind). Source
locations (`a.c:(.text+0x5)`, `in function 'f'`) need debug information and relocations the
simulation does not read; messages name the object instead, which is the part of the line a
person searches for.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from functools import lru_cache
from importlib.resources import files

from ldscope.system import find_program
from ldscope.vocab import LinkErrorKind

_PROGRAM = {"bfd": "ld.bfd", "gold": "ld.gold", "lld": "ld.lld", "mold": "mold"}
_LIBRARY_VARIANT = " -l"  # the kind suffix of a missing -l library's own wording


@lru_cache(maxsize=1)
def templates() -> dict[str, dict[str, str]]:
    """linker -> kind -> template, read once from data/messages.json (keys checked)."""
    raw = json.loads((files("ldscope.linker") / "data" / "messages.json").read_text(encoding="utf-8"))
    table = {linker: dict(kinds) for linker, kinds in raw.items() if not linker.startswith("_")}
    known = {k.value for k in LinkErrorKind} | {"*", LinkErrorKind.MISSING_INPUT + _LIBRARY_VARIANT}
    for linker, kinds in table.items():
        unknown = set(kinds) - known
        if unknown or "*" not in kinds or linker not in _PROGRAM:
            raise ValueError(f"messages.json: {linker}: unknown kinds {sorted(unknown)} or no `*` wording")
    return table


def program_label(linker: str, program: str, env: Mapping[str, str]) -> str:
    """How the linker names itself at the start of a line: its argv[0] for GNU ld and gold
    (collect2 runs them by full path, found on PATH), `ld.lld` and `mold` for the others."""
    if linker == "lld" and os.path.basename(program).endswith("-ld.lld"):
        return os.path.basename(program)  # lld names itself by argv[0]: aarch64-linux-gnu-ld.lld
    if linker in ("lld", "mold"):
        return _PROGRAM[linker]
    if os.path.basename(program) == "collect2":
        name = "ld" if linker == "bfd" else _PROGRAM[linker]
        return find_program(name, env) or name
    return program


def lld_location(display: str) -> str:
    """`libx.a(m.o)` -> `m.o in archive libx.a`, as lld's `>>> referenced by` lines print."""
    m = re.match(r"^(.*)\(([^()]*)\)$", display)
    if m:
        return f"{m.group(2)} in archive {m.group(1)}"
    return display


def word(linker: str, program: str, kind: str, symbol: str | None, ref: str | None,
         other: str | None, detail: str, env: Mapping[str, str]) -> str:
    """The linker's message for one error."""
    spec = detail[len("cannot find "):] if detail.startswith("cannot find ") else detail
    fields = {
        "program": program_label(linker, program, env), "symbol": symbol or "", "referrer": ref,
        "other": other, "referrer_lld": lld_location(ref or ""), "other_lld": lld_location(other or ""),
        "detail": detail, "detail_or_kind": detail or kind, "input": spec, "library": spec[2:],
        "option": detail.split(" (argument")[0],
    }
    if linker == "gold" and symbol and "@" in symbol.lstrip("@") and kind in (
            LinkErrorKind.SHLIB_UNDEFINED, LinkErrorKind.UNDEFINED_REFERENCE):
        name, _, version = symbol.partition("@")
        fields["symbol"] = f"{name}', version '{version.lstrip('@')}"  # gold: 'v_baz', version 'V2'
    if linker == "mold" and symbol and "@" in symbol.lstrip("@") and kind == LinkErrorKind.UNDEFINED_REFERENCE:
        fields["symbol"] = symbol.split("@", 1)[0]  # mold names the symbol without its version
    wording = templates()[linker]
    key = kind + _LIBRARY_VARIANT if kind == LinkErrorKind.MISSING_INPUT and spec.startswith("-l") else kind
    template = wording.get(key) or wording.get(kind) or wording["*"]
    return template.format(**fields)
