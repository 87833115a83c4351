"""What near-miss searches keep for a whole scan: which libraries export which names
(asked of each library's own hash table) and the C++ definitions of each file by function."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ldscope.elf import HashedNames, is_elf, lookup_exported
from ldscope.errors import InputFormatError
from ldscope.loader import ElfImage


@dataclass(slots=True)
class _FileExports:
    """What near-miss searches learned about one candidate library."""

    identity: object
    soname: str | None = None
    asked: set[str] = field(default_factory=set)
    found: set[str] = field(default_factory=set)
    probes: int = 0
    complete: bool = False  # every export is in `found` (no need to ask again)


# After this many separate probes of one file, read all its exports once instead.
_PROBES_BEFORE_FULL_READ = 4


class SharedIndex:
    """Per-file facts near-miss searches reuse across every report of one scan."""

    def __init__(self) -> None:
        self._files: dict[object, _FileExports | None] = {}
        # id(image) → base name → [(mangled, demangled)]: images live in the scan's cache.
        self.cxx_indexes: dict[int, dict[str, list[tuple[str, str]]]] = {}
        self.cxx_names: dict[int, list[str]] = {}  # id(image) → its exported C++ names
        self.dir_files: dict[str, list[str]] = {}  # directory → its library-like files
        # mangled name → (base function name, demangled), None if it does not demangle
        self.cxx_parsed: dict[str, tuple[str, str] | None] = {}

    def exporters(
        self, fs: object, files: list[tuple[str, str]], wanted: list[str]
    ) -> dict[str, list[tuple[str, object, str | None]]]:
        """wanted name → [(path, identity, SONAME)] of the files [(path, host path)] that
        export it (defined, global or weak).

        Each file answers from its own DT_GNU_HASH/DT_HASH table, as ld.so would, so only
        the wanted names are ever compared; answers are kept for later reports.
        """
        found: dict[str, list[tuple[str, object, str | None]]] = {}
        hashed: HashedNames | None = None
        for path, host in files:
            try:
                identity = fs.key(host)  # type: ignore[attr-defined]
            except OSError:
                continue
            facts = self._files.get(identity, _UNSEEN)
            if facts is _UNSEEN or (isinstance(facts, _FileExports) and not facts.complete
                                    and any(n not in facts.asked for n in wanted)):
                if hashed is None:
                    hashed = HashedNames(wanted)
                facts = self._probe(fs, host, identity, facts if isinstance(facts, _FileExports) else None,
                                    hashed)
                self._files[identity] = facts
            if not isinstance(facts, _FileExports):
                continue
            for name in wanted:
                if name in facts.found:
                    found.setdefault(name, []).append((path, facts.identity, facts.soname))
        return found

    def _probe(self, fs: object, host: str, identity: object, facts: _FileExports | None,
               wanted: HashedNames) -> _FileExports | None:
        """Ask one file about the wanted names (None if it is not a readable ELF file)."""
        try:
            if facts is None:
                if not is_elf(fs.head(host, 4)):  # type: ignore[attr-defined]
                    return None
                facts = _FileExports(identity)
            with fs.open_elf(host) as elf:  # type: ignore[attr-defined]
                facts.probes += 1
                hits = None if facts.probes > _PROBES_BEFORE_FULL_READ else lookup_exported(elf, wanted)
                if hits is None:
                    table = elf.dynsym
                    if table is not None:
                        facts.found.update(table.exported_names())
                    facts.complete = True
                else:
                    facts.found.update(wanted.text[i] for i in hits)
                    facts.asked.update(wanted.text)
                if facts.found and facts.soname is None and elf.dynamic is not None:
                    facts.soname = elf.dynamic.soname
        except (InputFormatError, OSError):
            return None
        return facts

    def cxx_definitions(self, image: ElfImage, base_name: str) -> list[tuple[str, str]]:
        """[(mangled, demangled)] of an image's C++ definitions whose function is `base_name`.

        Only names whose mangled form can encode that name are demangled and parsed (the
        <source-name> `<length><identifier>`, or std::'s abbreviations for its own
        classes' constructors): libtorch_cpu.so exports 60,000 C++ names. Each name is
        parsed at most once per scan, however many base names ask for it.
        """
        per_image = self.cxx_indexes.setdefault(id(image), {})
        cached = per_image.get(base_name)
        if cached is not None:
            return cached
        names = self.cxx_names.get(id(image))
        if names is None:
            names = [n for n in image.defined_name_list() if n.startswith("_Z")]
            self.cxx_names[id(image)] = names
        tokens = _mangled_tokens(base_name)
        if tokens is None:
            candidates = names  # an operator or conversion: no cheap filter
        elif len(tokens) == 1:
            token = tokens[0]
            candidates = [n for n in names if token in n]
        else:
            candidates = [n for n in names if any(t in n for t in tokens)]
        parsed = self.cxx_parsed
        self._parse_cxx([n for n in candidates if n not in parsed])
        found = []
        for mangled in candidates:
            entry = parsed[mangled]
            if entry is not None and entry[0] == base_name:
                found.append((mangled, entry[1]))
        per_image[base_name] = found
        return found

    def _parse_cxx(self, names: list[str]) -> None:
        """Demangle and parse names into the scan-wide (base name, demangled) memo."""
        if not names:
            return
        from ldscope.cxx import demangle_many, parse_signature

        parsed = self.cxx_parsed
        for mangled, pretty in zip(names, demangle_many(names)):
            parsed[mangled] = None if pretty is None else (parse_signature(pretty).base_name, pretty)


_UNSEEN = object()


_IDENTIFIER = re.compile(r"~?([A-Za-z_][A-Za-z0-9_]*)$")
# std:: abbreviations (Itanium ABI <substitution>) that stand for a class name in constructors
# and destructors of the old-ABI string and stream classes.
_STD_ABBREVIATIONS = {
    "basic_string": ("Ss", "Sb"), "allocator": ("Sa",), "basic_istream": ("Si",),
    "basic_ostream": ("So",), "basic_iostream": ("Sd",),
}


# Builtin types are one-letter codes, not <source-name>s ("typeinfo for int" is _ZTIi).
_BUILTIN_TYPES = frozenset({
    "void", "bool", "char", "wchar_t", "char8_t", "char16_t", "char32_t", "short", "int", "long",
    "float", "double", "__int128", "__float128", "decimal32", "decimal64", "decimal128", "signed",
    "unsigned", "auto", "_Float16", "__bf16",
})


def _mangled_tokens(base_name: str) -> tuple[str, ...] | None:
    """Substrings one of which every mangled name of a function called base_name contains;
    None when there is no such cheap test (operators, conversions, builtin types)."""
    m = _IDENTIFIER.match(base_name)
    if m is None or m.group(1) in _BUILTIN_TYPES:
        return None
    ident = m.group(1)
    return (f"{len(ident)}{ident}", *_STD_ABBREVIATIONS.get(ident, ()))
