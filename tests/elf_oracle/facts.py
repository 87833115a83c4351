"""The normalised facts the oracles are compared on, as ldscope reads them."""

from __future__ import annotations

from dataclasses import dataclass, field

from ldscope.elf import ElfFile
from ldscope.elf._symbols import SymbolTable


@dataclass(frozen=True)
class SymFact:
    """One symbol, normalised: raw name bytes, numbers, and its GNU version."""

    name: bytes
    value: int
    size: int
    bind: int
    type: int
    visibility: int
    shndx: int
    version: bytes | None = None
    hidden: bool = False
    from_verneed: bool = False
    version_index: int = 0


@dataclass
class ElfFacts:
    """Everything the oracles and ldscope are compared on, for one file."""

    elf_class: int = 0
    little_endian: bool = True
    e_type: int = 0
    e_machine: int = 0
    shnum: int = 0
    phnum: int = 0
    entry: int = 0
    sections: list[tuple[bytes, int, int, int, int, int, int, int]] = field(default_factory=list)
    has_dynamic: bool = False
    needed: tuple[bytes, ...] = ()
    soname: bytes | None = None
    rpath: bytes | None = None
    runpath: bytes | None = None
    dt_flags: int = 0
    dt_flags_1: int = 0
    bind_now: bool = False
    dynamic_count: int = 0
    verdefs: list[tuple[int, int, bytes, tuple[bytes, ...]]] = field(default_factory=list)
    verneeds: list[tuple[bytes, bytes, int, int]] = field(default_factory=list)
    dynsym: list[SymFact] | None = None
    symtab: list[SymFact] | None = None
    build_id: str | None = None
    debuglink: tuple[bytes, int] | None = None
    stripped: bool = True


def _b(text: str) -> bytes:
    return text.encode("utf-8", "surrogateescape")


def ldscope_symbols(table: SymbolTable, with_versions: bool) -> list[SymFact]:
    """SymFacts for a whole ldscope table (names via names(), versions via symbol())."""
    names = table.names()
    values = table.value.tolist()
    sizes = table.size.tolist()
    binds = table.bind.tolist()
    types = table.type.tolist()
    vis = table.visibility.tolist()
    shndx = table.section_index.tolist()
    versym = table.versions.versym if (with_versions and table.versions is not None) else None
    out = []
    for i, name in enumerate(names):
        version: bytes | None = None
        hidden = False
        from_verneed = False
        vindex = 0
        if versym is not None and table.versions is not None:
            v, hidden, vfile = table.versions.of(i)
            vindex = int(versym[i]) & 0x7FFF if i < len(versym) else 0
            if v is not None:
                version = _b(v)
                from_verneed = vfile is not None
        out.append(
            SymFact(_b(name), values[i], sizes[i], binds[i], types[i], vis[i], shndx[i],
                    version, hidden, from_verneed, vindex)
        )
    return out


def ldscope_facts(elf: ElfFile) -> ElfFacts:
    """The facts as ldscope reads them."""
    f = ElfFacts()
    f.elf_class = 64 if elf.is64 else 32
    f.little_endian = elf.little_endian
    f.e_type = elf.e_type
    f.e_machine = elf.e_machine
    f.shnum = len(elf.sections)
    f.phnum = len(elf.program_headers)
    f.entry = elf.entry
    f.sections = [
        (_b(s.name), s.type, s.addr, s.offset, s.size, s.link, s.info, s.entsize)
        for s in elf.sections
    ]
    dyn = elf.dynamic
    if dyn is not None:
        f.has_dynamic = True
        f.needed = tuple(_b(n) for n in dyn.needed)
        f.soname = None if dyn.soname is None else _b(dyn.soname)
        f.rpath = None if dyn.rpath_raw is None else _b(dyn.rpath_raw)
        f.runpath = None if dyn.runpath_raw is None else _b(dyn.runpath_raw)
        f.dt_flags = dyn.flags
        f.dt_flags_1 = dyn.flags_1
        f.bind_now = dyn.bind_now
        f.dynamic_count = dyn.entry_count
    f.verdefs = [(d.index, d.flags, _b(d.name), tuple(_b(p) for p in d.parents))
                 for d in elf.version_definitions]
    f.verneeds = [(_b(r.file), _b(r.name), r.index, r.flags) for r in elf.version_requirements]
    if elf.dynsym is not None:
        f.dynsym = ldscope_symbols(elf.dynsym, True)
    if elf.symtab is not None:
        f.symtab = ldscope_symbols(elf.symtab, False)
    f.build_id = elf.build_id
    dl = elf.debuglink
    f.debuglink = None if dl is None else (_b(dl[0]), dl[1])
    f.stripped = elf.is_stripped
    return f
