"""Error messages worded the way each linker prints them, so they can be matched to a log.

Source locations (`a.c:(.text+0x5)`, `in function 'f'`) need debug information and
relocations the simulation does not read; messages name the object instead, which is the
part of the line a person searches for.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping

from ldscope.system import find_program

_PROGRAM = {"bfd": "ld.bfd", "gold": "ld.gold", "lld": "ld.lld", "mold": "mold"}


def program_label(linker: str, program: str, env: Mapping[str, str]) -> str:
    """How the linker names itself at the start of a line: its argv[0] for GNU ld and gold
    (collect2 runs them by full path, found on PATH), `ld.lld` and `mold` for the others."""
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


def missing_spec(spec: str) -> tuple[str, bool]:
    """(name, is -l) of a missing input."""
    if spec.startswith("-l"):
        return spec, True
    return spec, False


def word(linker: str, program: str, kind: str, symbol: str | None, ref: str | None,
         other: str | None, detail: str, env: Mapping[str, str]) -> str:
    """The linker's message for one error."""
    p = program_label(linker, program, env)
    s = symbol or ""
    if linker == "bfd":
        return _bfd(p, kind, s, ref, other, detail)
    if linker == "gold":
        return _gold(p, kind, s, ref, other, detail)
    if linker == "lld":
        return _lld(p, kind, s, ref, other, detail)
    return _mold(p, kind, s, ref, other, detail)


def _missing(detail: str) -> tuple[str, bool]:
    spec = detail[len("cannot find "):] if detail.startswith("cannot find ") else detail
    return missing_spec(spec)


def _bfd(p: str, kind: str, s: str, ref: str | None, other: str | None, detail: str) -> str:
    if kind == "undefined-reference":
        return f"{p}: {ref}: undefined reference to `{s}'"
    if kind == "undefined-warning":
        return f"{p}: warning: {ref}: undefined reference to `{s}'"
    if kind == "dso-missing":
        return (f"{p}: {ref}: undefined reference to symbol '{s}'\n"
                f"{p}: {other}: error adding symbols: DSO missing from command line")
    if kind == "shlib-undefined":
        return f"{p}: {ref}: undefined reference to `{s}'"
    if kind == "multiple-definition":
        return f"{p}: {ref}: multiple definition of `{s}'; {other}: first defined here"
    if kind == "missing-input":
        name, _ = _missing(detail)
        return f"{p}: cannot find {name}: No such file or directory"
    if kind == "archive-no-index":
        return f"{p}: {detail}: error adding symbols: archive has no index; run ranlib to add one"
    if kind == "unknown-option":
        return f"{p}: unrecognized option '{detail.split(' (argument')[0]}'"
    if kind == "required-undefined":
        return f"{p}: required symbol `{s}' not defined"
    if kind in ("incompatible-input", "not-recognized", "corrupt-input"):
        return f"{p}: {detail}"
    return f"{p}: {detail or kind}"


def _gold(p: str, kind: str, s: str, ref: str | None, other: str | None, detail: str) -> str:
    if kind in ("undefined-reference", "shlib-undefined"):
        return f"{ref}: error: undefined reference to '{s}'"
    if kind == "undefined-warning":
        return f"{ref}: warning: undefined reference to '{s}'"
    if kind == "multiple-definition":
        return f"{p}: error: {ref}: multiple definition of '{s}'\n{p}: {other}: previous definition here"
    if kind == "missing-input":
        name, is_lib = _missing(detail)
        if is_lib:
            return f"{p}: error: cannot find {name}"
        return f"{p}: error: cannot open {name}: No such file or directory"
    if kind == "archive-no-index":
        return f"{p}: error: {detail}: no archive symbol table (run ranlib)"
    if kind == "unknown-option":
        return f"{p}: {detail.split(' (argument')[0]}: unknown option"
    return f"{p}: error: {detail or kind}"  # includes unsupported-option


def _lld(p: str, kind: str, s: str, ref: str | None, other: str | None, detail: str) -> str:
    if kind == "undefined-reference":
        return f"{p}: error: undefined symbol: {s}\n>>> referenced by {lld_location(ref or '')}"
    if kind == "undefined-warning":
        return f"{p}: warning: undefined symbol: {s}\n>>> referenced by {lld_location(ref or '')}"
    if kind == "shlib-undefined":
        return f"{p}: error: {ref}: undefined reference to {s} [--no-allow-shlib-undefined]"
    if kind == "multiple-definition":
        return (f"{p}: error: duplicate symbol: {s}\n>>> defined at {lld_location(other or '')}\n"
                f">>> defined at {lld_location(ref or '')}")
    if kind == "missing-input":
        name, is_lib = _missing(detail)
        if is_lib:
            return f"{p}: error: unable to find library {name}"
        return f"{p}: error: cannot open {name}: No such file or directory"
    if kind == "unknown-option":
        return f"{p}: error: unknown argument '{detail.split(' (argument')[0]}'"
    return f"{p}: error: {detail or kind}"


def _mold(p: str, kind: str, s: str, ref: str | None, other: str | None, detail: str) -> str:
    if kind == "undefined-reference":
        return f"{p}: error: undefined symbol: {s}\n>>> referenced by {ref}"
    if kind == "undefined-warning":
        return f"{p}: warning: undefined symbol: {s}\n>>> referenced by {ref}"
    if kind == "multiple-definition":
        return f"{p}: error: duplicate symbol: {ref}: {other}: {s}"
    if kind == "missing-input":
        name, is_lib = _missing(detail)
        if is_lib:
            return f"{p}: fatal: library not found: {name[2:]}"
        return f"{p}: fatal: cannot open {name}: No such file or directory"
    if kind == "unknown-option":
        return f"{p}: fatal: unknown command line option: {detail.split(' (argument')[0]}"
    return f"{p}: error: {detail or kind}"
