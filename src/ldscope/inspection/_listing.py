"""Symbol listings like `nm`, for ELF files and archive members, with honest absence."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from ldscope.elf import ElfFile, SymbolTable, format_versioned_name
from ldscope.elf import constants as C

SHF_WRITE, SHF_ALLOC, SHF_EXECINSTR = 0x1, 0x2, 0x4


@dataclass(frozen=True, slots=True)
class SymbolRow:
    """One listed symbol with everything `nm`/`readelf` would show, plus its demangled name."""

    index: int
    name: str
    demangled: str | None
    value: int
    size: int
    bind: str
    type: str
    visibility: str
    section_index: int
    nm_code: str
    version: str | None
    version_hidden: bool
    version_file: str | None

    @property
    def defined(self) -> bool:
        """True unless undefined."""
        return self.section_index != C.SHN_UNDEF

    @property
    def versioned_name(self) -> str:
        """`name@@VER` (default definition), `name@VER` (hidden or reference), or `name`."""
        hidden = self.version_hidden or self.version_file is not None  # verneed versions print with @
        return format_versioned_name(self.name, self.version, self.defined, hidden)


@dataclass(frozen=True, slots=True)
class TableListing:
    """The outcome for one file (or archive member): its rows, or why there are none."""

    file: str
    member: str | None
    table: str  # "dynsym" or "symtab"
    status: str  # "ok", "stripped", "no-dynamic-symbols", "error", "skipped"
    reason: str | None
    searched: int  # symbols examined before filtering
    rows: tuple[SymbolRow, ...]

    @property
    def display_name(self) -> str:
        """`archive(member)` like `nm -A`, or the file name."""
        return f"{self.file}({self.member})" if self.member else self.file


@dataclass(frozen=True, slots=True)
class ListingOptions:
    """Which table and which symbols to list."""

    table: str | None = None  # None: dynsym for shared objects/executables, symtab for .o
    defined_only: bool = False
    undefined_only: bool = False
    demangle: bool = False
    grep: re.Pattern[str] | None = None


def _section_codes(elf: ElfFile) -> list[str]:
    """nm letter per section index (uppercase), from section type and flags."""
    codes = []
    for sec in elf.sections:
        if sec.type == C.SHT_NOBITS and sec.flags & SHF_ALLOC:
            codes.append("B")
        elif sec.flags & SHF_EXECINSTR:
            codes.append("T")
        elif sec.flags & SHF_WRITE and sec.flags & SHF_ALLOC:
            codes.append("D")
        elif sec.flags & SHF_ALLOC:
            codes.append("R")
        else:
            codes.append("N")
    return codes


def _nm_code(bind: int, stype: int, shndx: int, section_codes: list[str]) -> str:
    if shndx == C.SHN_UNDEF:
        if bind == C.STB_WEAK:
            return "v" if stype == C.STT_OBJECT else "w"
        return "U"
    if bind == C.STB_GNU_UNIQUE:
        return "u"
    if stype == C.STT_GNU_IFUNC:
        return "i"
    if bind == C.STB_WEAK:
        return "V" if stype == C.STT_OBJECT else "W"
    if shndx == C.SHN_ABS:
        code = "A"
    elif shndx == C.SHN_COMMON:
        code = "C"
    elif shndx < len(section_codes):
        code = section_codes[shndx]
    else:
        code = "?"
    return code.lower() if bind == C.STB_LOCAL else code


def default_table(elf: ElfFile) -> str:
    """`dynsym` for shared objects and executables, `symtab` for relocatable objects."""
    return "symtab" if elf.e_type == C.ET_REL else "dynsym"


def list_symbols(
    elf: ElfFile, options: ListingOptions, file: str, member: str | None = None
) -> TableListing:
    """List the symbols of one ELF file per `options`, never silently empty."""
    table_name = options.table or default_table(elf)
    table: SymbolTable | None = elf.symtab if table_name == "symtab" else elf.dynsym
    if table is None:
        if table_name == "symtab":
            status, reason = "stripped", "no .symtab: the file is stripped (try --dynamic)"
        else:
            status, reason = "no-dynamic-symbols", "no dynamic symbol table (static or relocatable file; try --all)"
        return TableListing(file, member, table_name, status, reason, 0, ())
    count = len(table)
    mask = np.ones(count, dtype=bool)
    if count:
        mask[0] = False  # the null symbol
    if table_name == "symtab":
        mask &= table.type != C.STT_SECTION  # nm hides section symbols
        mask &= table.type != C.STT_FILE
    if options.defined_only:
        mask &= table.defined_mask
    if options.undefined_only:
        mask &= ~table.defined_mask
    candidates = np.flatnonzero(mask)
    names = table.names_at(candidates)
    demangled: list[str | None] = [None] * len(names)
    if options.demangle or options.grep is not None:
        from ldscope.cxx import demangle_many

        demangled = demangle_many(names)
    keep = list(range(len(names)))
    if options.grep is not None:
        pattern = options.grep
        keep = [
            i
            for i in keep
            if pattern.search(names[i]) or (demangled[i] is not None and pattern.search(demangled[i] or ""))
        ]
    rows = tuple(_rows(elf, table, candidates, names, demangled, keep, table_name == "dynsym"))
    return TableListing(file, member, table_name, "ok", None, len(candidates), rows)


def _rows(
    elf: ElfFile,
    table: SymbolTable,
    candidates: np.ndarray,
    names: list[str],
    demangled: list[str | None],
    keep: list[int],
    with_versions: bool,
) -> Iterator[SymbolRow]:
    codes = _section_codes(elf)
    versions = table.versions if with_versions else None
    entries = table.entries
    shndx_all = table.section_index
    for i in keep:
        idx = int(candidates[i])
        entry = entries[idx]
        info = int(entry["st_info"])
        bind, stype = info >> 4, info & 0xF
        shndx = int(shndx_all[idx])
        version, hidden, vfile = versions.of(idx) if versions is not None else (None, False, None)
        yield SymbolRow(
            index=idx,
            name=names[i],
            demangled=demangled[i],
            value=int(entry["st_value"]),
            size=int(entry["st_size"]),
            bind=C.BIND_NAMES.get(bind, str(bind)),
            type=C.TYPE_NAMES.get(stype, str(stype)),
            visibility=C.VISIBILITY_NAMES[int(entry["st_other"]) & 3],
            section_index=shndx,
            nm_code=_nm_code(bind, stype, shndx, codes),
            version=version,
            version_hidden=hidden,
            version_file=vfile,
        )
