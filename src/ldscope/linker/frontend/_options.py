"""The linker's own command line (ld, collect2, ld.gold, ld.lld, mold): options and inputs.

Only what changes symbol resolution is modelled; every other known option is accepted and
ignored, and unknown options pass through with a warning. Options take one or two dashes
(`-rpath`, `--rpath`), their argument joined (`--opt=x`, `-Lx`) or as the next word.
"""

from __future__ import annotations

from dataclasses import dataclass, field

# Options (long names, without dashes) whose argument may be the next word.
_LONG_WITH_ARG = frozenset((
    "architecture", "format", "mri-script", "entry", "auxiliary", "filter", "gpsize", "soname",
    "dynamic-linker", "library", "library-path", "output", "just-symbols", "trace-symbol",
    "undefined", "require-defined", "script", "dT", "default-script", "Map", "defsym",
    "dynamic-list", "version-script", "rpath", "rpath-link", "wrap", "exclude-libs",
    "retain-symbols-file", "section-start", "Tbss", "Tdata", "Ttext", "Ttext-segment",
    "Trodata-segment", "Tldata-segment", "plugin", "plugin-opt", "error-limit", "thread-count",
    "audit", "depaudit", "init", "fini", "oformat", "image-base", "dependency-file", "assert",
    "sysroot", "hash-style", "unresolved-symbols", "build-id", "compress-debug-sections",
    "export-dynamic-symbol", "export-dynamic-symbol-list", "dynamic-list-data", "icf",
    "version-exports-section", "task-link", "spare-dynamic-tags", "sort-section", "mllvm",
    "lto-O", "lto-partitions", "emit-relocs-for", "package-metadata", "O", "m", "soname",
    "z", "R", "Y", "y", "a", "A", "b", "c", "e", "f", "F", "G", "h", "I", "l", "L", "o", "P", "T",
    "u", "chroot", "why-extract", "warn-symbol-type", "plugin-opt", "symbol-ordering-file",
    "call-graph-ordering-file", "pack-dyn-relocs", "z-separate", "sectalign",
    "orphan-handling", "unique", "print-symbol-counts", "run-after-link",
))  # fmt: skip
# Long flags that take no argument (accepted quietly).
_LONG_FLAGS = frozenset((
    "eh-frame-hdr", "no-eh-frame-hdr", "build-id", "export-dynamic", "no-export-dynamic",
    "gc-sections", "no-gc-sections", "print-gc-sections", "strip-all", "strip-debug", "s", "S",
    "relax", "no-relax", "enable-new-dtags", "disable-new-dtags", "demangle", "no-demangle",
    "fatal-warnings", "no-fatal-warnings", "warn-common", "warn-once", "warn-constructors",
    "warn-execstack", "no-warn-execstack", "warn-rwx-segments", "no-warn-rwx-segments",
    "warn-textrel", "verbose", "version", "v", "V", "trace", "t", "M", "print-map", "nostdlib",
    "Bsymbolic", "Bsymbolic-functions", "Bno-symbolic", "Bgroup", "no-undefined-version",
    "undefined-version", "discard-all", "discard-locals", "x", "X", "d", "dc", "dp", "E",
    "N", "n", "omagic", "nmagic", "no-omagic", "q", "emit-relocs", "g", "i", "r",
    "relocatable", "shared", "Bshareable", "pie", "pic-executable", "no-pie", "static",
    "no-undefined", "allow-shlib-undefined", "no-allow-shlib-undefined", "warn-backrefs",
    "allow-multiple-definition", "warn-unresolved-symbols", "error-unresolved-symbols",
    "as-needed", "no-as-needed", "whole-archive", "no-whole-archive", "copy-dt-needed-entries",
    "no-copy-dt-needed-entries", "add-needed", "no-add-needed", "start-group", "end-group",
    "push-state", "pop-state", "Bstatic", "Bdynamic", "dn", "dy", "non_shared", "call_shared",
    "no-keep-memory", "reduce-memory-overheads", "stats", "no-print-gc-sections", "color-diagnostics",
    "no-color-diagnostics", "threads", "no-threads", "icf=all", "ignore-data-address-equality",
    "no-dynamic-linker", "no-rosegment", "rosegment", "pack-dyn-relocs", "use-android-relr-tags",
    "noinhibit-exec", "check-sections", "no-check-sections", "define-common", "no-define-common",
    "sort-common", "no-ld-generated-unwind-info", "ld-generated-unwind-info", "detect-odr-violations",
    "no-warn-mismatch", "warn-mismatch", "no-warn-search-mismatch", "long-plt", "no-long-plt",
    "apply-dynamic-relocs", "start-lib", "end-lib", "why-extract", "print-archive-stats",
    "dependency-file", "help", "be-quiet", "no-be-quiet", "Qy", "error-handling-script",
    "no-error-limit", "fix-cortex-a53-843419", "EB", "EL", "qmagic", "Ur", "cref", "trace",
    "no-warnings", "w", "undefined-glob", "enable-non-contiguous-regions", "ctf-variables",
    "no-ctf-variables", "hash-size", "compress-debug-sections", "ignore-function-address-equality",
    "no-gnu-unique", "gdb-index", "no-gdb-index", "perf", "quick-exit", "no-quick-exit",
))  # fmt: skip
# Single letters whose argument may be joined (-Lx) or the next word (-L x).
_SHORT_WITH_ARG = frozenset("aAbcefFGhIlLmoOPRTuyYz")
_ALIASES = {
    "library": "l", "library-path": "L", "output": "o", "entry": "e", "undefined": "u",
    "script": "T", "soname": "h", "trace-symbol": "y", "dynamic-linker": "I",
    "just-symbols": "R", "Bshareable": "shared", "pic-executable": "pie", "dn": "Bstatic",
    "non_shared": "Bstatic", "dy": "Bdynamic", "call_shared": "Bdynamic",
    "add-needed": "copy-dt-needed-entries", "no-add-needed": "no-copy-dt-needed-entries",
    "relocatable": "r", "i": "r", "(": "start-group", ")": "end-group", "format": "b",
    "mri-script": "c", "auxiliary": "f", "filter": "F", "gpsize": "G", "depaudit": "P",
    "architecture": "A",
}
STATE_FLAGS = frozenset((
    "as-needed", "no-as-needed", "whole-archive", "no-whole-archive", "copy-dt-needed-entries",
    "no-copy-dt-needed-entries", "Bstatic", "Bdynamic", "static", "start-group", "end-group",
    "push-state", "pop-state",
))  # fmt: skip


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

    output_kind: str = "pie-or-exec"  # "exec" | "pie" | "shared" | "relocatable"
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
    error_limit: int | None = None
    defsym: list[str] = field(default_factory=list)
    wrap: list[str] = field(default_factory=list)
    gc_sections: bool = False
    allow_multiple_definition: bool = False
    fatal_warnings: bool = False
    warn_backrefs: bool = False
    emulation: str | None = None
    noinhibit_exec: bool = False
    dynamic_linker: str | None = None
    z_keywords: list[str] = field(default_factory=list)
    unknown: list[tuple[str, int]] = field(default_factory=list)
    fuse_ld: str | None = None
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


def _canonical(name: str) -> str:
    return _ALIASES.get(name, name)


def parse_linker_argv(argv: list[str] | tuple[str, ...]) -> ParsedLine:
    """Split a raw linker command line (argv[0] is the linker) into items and options."""
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
            items.append(LineItem("state", _canonical(word[1:]), pos, word))
            continue
        name: str
        value: str | None
        if word.startswith("--"):
            name, value = _split_long(word)
        else:
            name, value = _split_long(word)
            if name == "fuse-ld":
                opts.fuse_ld = value
                continue
            if name not in _LONG_WITH_ARG and name not in _LONG_FLAGS and not _is_long_single(name):
                letter = name[0]
                if letter in _SHORT_WITH_ARG:
                    rest = word[2:]
                    if rest:
                        value = rest
                    name = letter
                else:
                    name = word[1:]
        canon = _canonical(name)
        opts.seen.append((name, pos, word))
        takes_arg = name in _LONG_WITH_ARG or canon in _LONG_WITH_ARG or (
            len(name) == 1 and name in _SHORT_WITH_ARG)
        if takes_arg and value is None:
            if canon in ("build-id", "hash-style", "compress-debug-sections", "threads", "icf"):
                value = ""
            elif i < n:
                value = argv[i]
                i += 1
            else:
                warnings.append(f"option {word} at argument {pos} is missing its argument")
                value = ""
        text = word if i == pos + 1 else f"{word} {argv[pos + 1]}"
        _apply(opts, items, canon, value, pos, text, word, warnings)
    return ParsedLine(tuple(argv), tuple(items), opts, tuple(warnings))


def _is_long_single(name: str) -> bool:
    """Single-dash long options ld accepts besides the table (e.g. -rpath-link, -soname)."""
    return name.split("=", 1)[0] in ("rpath-link", "soname", "rpath", "shared", "static", "pie")


def _apply(opts: LinkOptions, items: list[LineItem], name: str, value: str | None, pos: int,
           text: str, word: str, warnings: list[str]) -> None:
    """Record one option's effect."""
    v = value or ""
    if name in STATE_FLAGS:
        if name == "static":
            opts.static = True
        items.append(LineItem("state", name, pos, text))
    elif name == "l":
        items.append(LineItem("lib", v, pos, text))
    elif name == "T":
        items.append(LineItem("script", v, pos, text))
    elif name == "L":
        opts.library_paths.append((v, pos))
    elif name == "o":
        opts.output = v
    elif name == "shared":
        opts.shared = True
    elif name == "pie":
        opts.pie = True
    elif name == "no-pie":
        opts.pie = False
    elif name == "r":
        opts.relocatable = True
    elif name == "no-undefined":
        opts.no_undefined = True
    elif name == "z":
        _apply_z(opts, v)
    elif name == "allow-shlib-undefined":
        opts.allow_shlib_undefined = True
    elif name == "no-allow-shlib-undefined":
        opts.allow_shlib_undefined = False
    elif name == "unresolved-symbols":
        opts.unresolved_symbols = v
    elif name == "warn-unresolved-symbols":
        opts.warn_unresolved = True
    elif name == "error-unresolved-symbols":
        opts.warn_unresolved = False
    elif name == "u":
        opts.undefined.append(v)
    elif name == "require-defined":
        opts.require_defined.append(v)
    elif name == "e":
        opts.entry = v
    elif name == "sysroot":
        opts.sysroot = v
    elif name == "rpath" or name == "R":
        opts.rpath.extend(p for p in v.split(":") if p)
    elif name == "rpath-link":
        opts.rpath_link.extend(p for p in v.split(":") if p)
    elif name == "h":
        opts.soname = v
    elif name == "nostdlib":
        opts.nostdlib = True
    elif name == "error-limit":
        opts.error_limit = int(v) if v.isdigit() else opts.error_limit
    elif name == "no-error-limit":
        opts.error_limit = 0
    elif name == "defsym":
        opts.defsym.append(v.split("=", 1)[0])
    elif name == "wrap":
        opts.wrap.append(v)
    elif name == "gc-sections":
        opts.gc_sections = True
    elif name == "no-gc-sections":
        opts.gc_sections = False
    elif name == "allow-multiple-definition":
        opts.allow_multiple_definition = True
    elif name == "fatal-warnings":
        opts.fatal_warnings = True
    elif name == "warn-backrefs":
        opts.warn_backrefs = True
    elif name == "m":
        opts.emulation = v
    elif name == "noinhibit-exec":
        opts.noinhibit_exec = True
    elif name == "I":
        opts.dynamic_linker = v
    elif name in _LONG_WITH_ARG or name in _LONG_FLAGS or (len(name) == 1 and name in _SHORT_WITH_ARG) or name.startswith(("plugin", "mllvm", "lto-", "thinlto", "O", "hash-style", "build-id")):
        return
    else:
        opts.unknown.append((word, pos))
        warnings.append(f"unknown option {word} (argument {pos}) passed through")


def _apply_z(opts: LinkOptions, keyword: str) -> None:
    opts.z_keywords.append(keyword)
    if keyword == "defs":
        opts.no_undefined = True
    elif keyword == "undefs":
        opts.no_undefined = False
    elif keyword == "muldefs":
        opts.allow_multiple_definition = True


def output_kind(opts: LinkOptions, default_pie: bool = False) -> str:
    """exec, pie, shared or relocatable, as the options decide."""
    if opts.relocatable:
        return "relocatable"
    if opts.shared:
        return "shared"
    if opts.pie if opts.pie is not None else default_pie:
        return "pie"
    return "exec"


# Options a linker refuses ("unknown argument"), measured with each linker here.
UNSUPPORTED = {
    "bfd": frozenset(("warn-backrefs", "error-limit", "why-extract", "fortran-common", "start-lib",
                      "end-lib")),
    "gold": frozenset(("warn-backrefs", "error-limit", "why-extract", "fortran-common",
                       "require-defined")),
    "lld": frozenset(("copy-dt-needed-entries", "add-needed", "Bgroup", "require-defined")),
    "mold": frozenset(("copy-dt-needed-entries", "add-needed", "warn-backrefs", "Bgroup",
                       "error-limit", "why-extract", "fortran-common")),
}


def unsupported_options(opts: LinkOptions, linker: str) -> list[tuple[str, int]]:
    """(option text, position) of options this linker rejects."""
    refused = UNSUPPORTED.get(linker, frozenset())
    return [(text, pos) for name, pos, text in opts.seen if name in refused]
