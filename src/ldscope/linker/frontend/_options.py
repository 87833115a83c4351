"""The linker's own command line (ld, collect2, ld.gold, ld.lld, mold): options and inputs.

Only what changes symbol resolution is modelled; every other known option is accepted and
ignored, and unknown options pass through with a warning. Options take one or two dashes
(`-rpath`, `--rpath`), their argument joined (`--opt=x`, `-Lx`) or as the next word.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import lru_cache
from importlib.resources import files


@dataclass(frozen=True, slots=True)
class _OptionTable:
    """data/options.json, read once."""

    takes_argument: frozenset[str]
    flags: frozenset[str]
    short_with_argument: frozenset[str]
    single_dash_long: frozenset[str]
    optional_argument: frozenset[str]
    ignored_prefixes: tuple[str, ...]
    aliases: dict[str, str]
    state_flags: frozenset[str]
    effects: dict[str, tuple[object, ...]]
    z_keywords: dict[str, tuple[str, object]]
    unsupported: dict[str, frozenset[str]]


def _load_table() -> _OptionTable:
    raw = json.loads((files("ldscope.linker") / "data" / "options.json").read_text(encoding="utf-8"))
    table = _OptionTable(
        frozenset(raw["takes_argument"]), frozenset(raw["flags"]), frozenset(raw["short_with_argument"]),
        frozenset(raw["single_dash_long"]), frozenset(raw["optional_argument"]), tuple(raw["ignored_prefixes"]),
        dict(raw["aliases"]), frozenset(raw["state_flags"]),
        {k: tuple(v) for k, v in raw["effects"].items()},
        {k: (v[0], v[1]) for k, v in raw["z_keywords"].items()},
        {k: frozenset(v) for k, v in raw["unsupported"].items()},
    )
    fields = set(LinkOptions.__dataclass_fields__)
    for name, effect in table.effects.items():
        action = effect[0]
        if action not in _ACTIONS or (len(effect) > 1 and effect[1] not in fields and action != "item"):
            raise ValueError(f"options.json: option {name}: unknown effect {effect}")
    return table


_ACTIONS = frozenset({"item", "search-dir", "z-keyword", "set", "flag", "append", "append-name",
                      "append-path-list", "set-count"})  # checked against _EFFECTS' keys in the tests


@dataclass(frozen=True, slots=True)
class LineItem:
    """One event on the line, in order: an input, a -l, or a positional state change."""

    kind: str  # "file" | "lib" | "state" | "script"
    value: str  # path, library name (":file" for -l:file), or the state flag
    position: int  # index in the linker argv of the word that carried it
    text: str  # the word(s) as written


@dataclass(slots=True)
class LinkOptions:
    """Everything global the line says (last one wins, as in ld)."""

    pie: bool | None = None
    shared: bool = False
    relocatable: bool = False
    static: bool = False
    no_undefined: bool = False  # --no-undefined / -z defs
    allow_shlib_undefined: bool | None = None  # None: the per-output default
    unresolved_symbols: str | None = None  # ignore-all | report-all | ignore-in-object-files | ...
    warn_unresolved: bool = False
    undefined: list[str] = field(default_factory=list)  # -u
    require_defined: list[str] = field(default_factory=list)
    entry: str | None = None
    sysroot: str | None = None
    library_paths: list[tuple[str, int]] = field(default_factory=list)  # (dir, position)
    rpath: list[str] = field(default_factory=list)
    rpath_link: list[str] = field(default_factory=list)
    soname: str | None = None
    output: str | None = None
    nostdlib: bool = False
    defsym: list[str] = field(default_factory=list)
    allow_multiple_definition: bool = False
    emulation: str | None = None
    z_keywords: list[str] = field(default_factory=list)
    unknown: list[tuple[str, int]] = field(default_factory=list)
    fuse_ld: str | None = None
    version_scripts: list[str] = field(default_factory=list)
    undefined_version: bool | None = None  # --[no-]undefined-version; None: the linker's default
    error_limit: int | None = None  # lld's --error-limit (default 20; 0: no limit)
    seen: list[tuple[str, int, str]] = field(default_factory=list)  # (name as written, position, text)


@dataclass(frozen=True, slots=True)
class ParsedLine:
    """The linker argv split into ordered items and global options."""

    argv: tuple[str, ...]
    items: tuple[LineItem, ...]
    options: LinkOptions
    warnings: tuple[str, ...]


def _split_long(word: str) -> tuple[str, str | None]:
    """`--name=value` -> (name, value); `-name` -> (name, None)."""
    body = word.lstrip("-")
    if "=" in body:
        name, value = body.split("=", 1)
        return name, value
    return body, None


@lru_cache(maxsize=1)
def option_table() -> _OptionTable:
    """The option table (data/options.json), read on first use."""
    return _load_table()


def parse_linker_argv(argv: list[str] | tuple[str, ...]) -> ParsedLine:
    """Split a raw linker command line (argv[0] is the linker) into items and options."""
    table = option_table()
    opts = LinkOptions()
    items: list[LineItem] = []
    warnings: list[str] = []
    i = 1
    n = len(argv)
    while i < n:
        word = argv[i]
        pos = i
        i += 1
        if word == "" or not word.startswith("-") or word == "-":
            items.append(LineItem("file", word, pos, word))
            continue
        if word in ("-(", "-)"):
            items.append(LineItem("state", table.aliases.get(word[1:], word[1:]), pos, word))
            continue
        name, value = _option_name(word, table)
        if name == "fuse-ld" and not word.startswith("--"):
            opts.fuse_ld = value
            continue
        canon = table.aliases.get(name, name)
        opts.seen.append((name, pos, word))
        takes_arg = name in table.takes_argument or canon in table.takes_argument or (
            len(name) == 1 and name in table.short_with_argument)
        if takes_arg and value is None:
            if canon in table.optional_argument:
                value = ""
            elif i < n:
                value = argv[i]
                i += 1
            else:
                warnings.append(f"option {word} at argument {pos} is missing its argument")
                value = ""
        text = word if i == pos + 1 else f"{word} {argv[pos + 1]}"
        if not _apply(opts, items, table, canon, value or "", pos, text):
            opts.unknown.append((word, pos))
            warnings.append(f"unknown option {word} (argument {pos}) passed through")
    return ParsedLine(tuple(argv), tuple(items), opts, tuple(warnings))


def _option_name(word: str, table: _OptionTable) -> tuple[str, str | None]:
    """(option name, joined value or None): `--name=value`, `-name`, or a short option with
    its argument joined (`-Lx`)."""
    name, value = _split_long(word)
    if word.startswith("--") or name == "fuse-ld":
        return name, value
    if name in table.takes_argument or name in table.flags or name.split("=", 1)[0] in table.single_dash_long:
        return name, value
    letter = name[0]
    if letter in table.short_with_argument:
        return letter, word[2:] or value
    return word[1:], value


def _apply(opts: LinkOptions, items: list[LineItem], table: _OptionTable, name: str, value: str, pos: int,
           text: str) -> bool:
    """Record one option's effect; False for an option the table does not know."""
    if name in table.state_flags:
        if name == "static":
            opts.static = True
        items.append(LineItem("state", name, pos, text))
        return True
    effect = table.effects.get(name)
    if effect is None:
        return (name in table.takes_argument or name in table.flags
                or (len(name) == 1 and name in table.short_with_argument) or name.startswith(table.ignored_prefixes))
    action, *args = effect
    if action == "item":
        items.append(LineItem(str(args[0]), value, pos, text))
    elif action == "search-dir":
        opts.library_paths.append((value, pos))
    elif action == "z-keyword":
        opts.z_keywords.append(value)
        if value in table.z_keywords:
            setattr(opts, *table.z_keywords[value])
    else:
        _EFFECTS[str(action)](opts, str(args[0]), value, args[1:])
    return True


def _set(opts: LinkOptions, field_name: str, value: str, extra: list[object]) -> None:
    setattr(opts, field_name, value)


def _flag(opts: LinkOptions, field_name: str, value: str, extra: list[object]) -> None:
    setattr(opts, field_name, extra[0])


def _set_count(opts: LinkOptions, field_name: str, value: str, extra: list[object]) -> None:
    if value.isdigit():
        setattr(opts, field_name, int(value))


def _append(opts: LinkOptions, field_name: str, value: str, extra: list[object]) -> None:
    getattr(opts, field_name).append(value)


def _append_name(opts: LinkOptions, field_name: str, value: str, extra: list[object]) -> None:
    getattr(opts, field_name).append(value.split("=", 1)[0])  # --defsym NAME=EXPR


def _append_path_list(opts: LinkOptions, field_name: str, value: str, extra: list[object]) -> None:
    getattr(opts, field_name).extend(p for p in value.split(":") if p)


# What an option's `effects` entry does to LinkOptions (the other actions touch the items).
_EFFECTS = {"set": _set, "flag": _flag, "set-count": _set_count, "append": _append,
            "append-name": _append_name, "append-path-list": _append_path_list}


def output_kind(opts: LinkOptions, default_pie: bool = False) -> str:
    """exec, pie, shared or relocatable, as the options decide."""
    if opts.relocatable:
        return "relocatable"
    if opts.shared:
        return "shared"
    if opts.pie if opts.pie is not None else default_pie:
        return "pie"
    return "exec"


def unsupported_options(opts: LinkOptions, linker: str) -> list[tuple[str, int]]:
    """(option text, position) of options this linker rejects."""
    refused = option_table().unsupported.get(linker, frozenset())
    return [(text, pos) for name, pos, text in opts.seen if name in refused]
