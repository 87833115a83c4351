"""Relocation tables (REL, RELA, RELR) as arrays, and what they say about binding time."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from ldscope.elf import constants as C
from ldscope.elf.constants import COPY_RELOC_TYPES, LAZY_RELOC_TYPES, reloc_type_name

if TYPE_CHECKING:
    from ldscope.elf._file import ElfFile, Section

# Per-symbol reference kinds, as small integers in a numpy array.
REF_NONE = 0
REF_PLT = 1  # only lazily bound PLT slots: fails at first call
REF_LOAD = 2  # data/GOT/TLS/copy relocations: bound when the object is loaded


@dataclass(frozen=True, slots=True)
class RelocationTable:
    """One relocation table: where it came from and its entries as arrays."""

    source: str  # e.g. ".rela.dyn", ".rela.plt", "DT_RELA", "DT_JMPREL", "DT_RELR"
    is_plt: bool
    offsets: np.ndarray
    symbol_indices: np.ndarray
    types: np.ndarray
    addends: np.ndarray | None

    def __len__(self) -> int:
        return int(self.offsets.shape[0])

    def type_names(self, e_machine: int) -> list[str]:
        """Relocation type names, e.g. R_X86_64_GLOB_DAT."""
        return [reloc_type_name(e_machine, t) for t in self.types.tolist()]


def split_info(info: np.ndarray, is64: bool, e_machine: int) -> tuple[np.ndarray, np.ndarray]:
    """(symbol index, type) from r_info; ELF64 packs 32/32 bits, ELF32 24/8."""
    info = info.astype(np.uint64)
    if is64:
        return (info >> np.uint64(32)).astype(np.int64), (info & np.uint64(0xFFFFFFFF)).astype(
            np.int64
        )
    return (info >> np.uint64(8)).astype(np.int64), (info & np.uint64(0xFF)).astype(np.int64)


def make_table(
    source: str, entries: np.ndarray, is64: bool, e_machine: int, is_plt: bool
) -> RelocationTable:
    """Wrap a REL or RELA entry array."""
    syms, types = split_info(entries["r_info"], is64, e_machine)
    addends = entries["r_addend"] if "r_addend" in (entries.dtype.names or ()) else None
    return RelocationTable(source, is_plt, entries["r_offset"], syms, types, addends)


def reference_kinds(
    tables: list[RelocationTable], symbol_count: int, e_machine: int
) -> np.ndarray:
    """For each dynamic symbol index: REF_NONE, REF_PLT (lazy only) or REF_LOAD."""
    kinds = np.zeros(symbol_count, dtype=np.int8)
    lazy_types = sorted(LAZY_RELOC_TYPES.get(e_machine, frozenset()))
    for table in tables:
        if len(table) == 0:
            continue
        syms = table.symbol_indices
        valid = (syms > 0) & (syms < symbol_count)
        lazy = np.zeros(len(table), dtype=bool)
        if table.is_plt:
            for lazy_type in lazy_types:  # one or two types: cheaper than np.isin's sort
                lazy |= table.types == lazy_type
        load_syms = syms[valid & ~lazy]
        plt_syms = syms[valid & lazy]
        kinds[plt_syms] = np.maximum(kinds[plt_syms], REF_PLT)
        kinds[load_syms] = REF_LOAD
    return kinds


def copy_relocated_symbols(tables: list[RelocationTable], e_machine: int) -> np.ndarray:
    """Dynamic symbol indices that have a copy relocation."""
    copy_type = COPY_RELOC_TYPES.get(e_machine)
    if copy_type is None:
        return np.zeros(0, dtype=np.int64)
    parts = [t.symbol_indices[t.types == copy_type] for t in tables if len(t)]
    if not parts:
        return np.zeros(0, dtype=np.int64)
    # Sorted and distinct; not np.unique, whose masked-array check imports numpy.ma (6 ms).
    found = np.sort(np.concatenate(parts))
    return found[np.concatenate(([True], found[1:] != found[:-1]))] if found.size else found


def relr_count(words: np.ndarray, word_bits: int) -> int:
    """Number of relative relocations encoded by a RELR table (addresses and bitmaps)."""
    if words.size == 0:
        return 0
    is_bitmap = (words & 1) == 1
    addresses = int(np.count_nonzero(~is_bitmap))
    bitmaps = words[is_bitmap] >> 1
    bits = 0
    for w in bitmaps.tolist():
        bits += bin(int(w)).count("1")
    _ = word_bits
    return addresses + bits


def read_dynamic_relocations(elf: ElfFile) -> tuple[RelocationTable, ...]:
    """Dynamic relocation tables (DT_RELA/DT_REL/DT_JMPREL), read from PT_DYNAMIC."""
    if elf.dynamic is None:
        return ()
    tables: list[RelocationTable] = []
    plt_kind = elf.dynamic_tag(C.DT_PLTREL)
    specs = [
        (C.DT_RELA, C.DT_RELASZ, "rela", "DT_RELA", False),
        (C.DT_REL, C.DT_RELSZ, "rel", "DT_REL", False),
        (C.DT_JMPREL, C.DT_PLTRELSZ, "rela" if plt_kind == C.DT_RELA else "rel", "DT_JMPREL", True),
    ]
    jmprel = elf.dynamic_tag(C.DT_JMPREL)
    jmpsz = elf.dynamic_tag(C.DT_PLTRELSZ) or 0
    for tag, size_tag, kind, source, is_plt in specs:
        size = elf.dynamic_tag(size_tag)
        off = elf.dynamic_offset(tag, source, size or 0)
        if off is None or not size:
            continue
        dtype = elf.dtypes[kind]
        entries = elf.array(off, dtype, size // dtype.itemsize, source)
        if not is_plt and jmprel is not None and jmpsz:
            # Drop the PLT part when DT_RELASZ covers it (lld and bfd differ here).
            start = elf.dynamic_tag(tag) or 0
            if start <= jmprel < start + size:
                keep = (jmprel - start) // dtype.itemsize
                entries = entries[:keep]
        tables.append(make_table(source, entries, elf.is64, elf.e_machine, is_plt))
    return tuple(tables)


def read_section_relocations(elf: ElfFile) -> tuple[tuple[Section, RelocationTable], ...]:
    """Relocation sections (SHT_REL/SHT_RELA), e.g. of relocatable objects."""
    result = []
    for sec in elf.sections:
        if sec.type not in (C.SHT_REL, C.SHT_RELA):
            continue
        dtype = elf.dtypes["rela" if sec.type == C.SHT_RELA else "rel"]
        entries = elf.array(sec.offset, dtype, sec.size // dtype.itemsize, sec.name)
        is_plt = sec.name.endswith(".plt")
        result.append((sec, make_table(sec.name, entries, elf.is64, elf.e_machine, is_plt)))
    return tuple(result)


def read_relr_words(elf: ElfFile) -> np.ndarray:
    """The RELR table's raw words (DT_RELR), empty if absent."""
    size = elf.dynamic_tag(C.DT_RELRSZ)
    off = elf.dynamic_offset(C.DT_RELR, "DT_RELR", size or 0)
    if off is None or not size:
        return np.zeros(0, dtype=elf.dtypes["xword"])
    dtype = elf.dtypes["xword"]
    return elf.array(off, dtype, size // dtype.itemsize, "DT_RELR")
