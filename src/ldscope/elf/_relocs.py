"""Relocation tables (REL, RELA, RELR) as arrays, and what they say about binding time."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from ldscope.elf import constants as C
from ldscope.elf._extents import SPARSE_MIN_BYTES
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


@dataclass(frozen=True, slots=True)
class StackedRelocations:
    """Every SHT_REL/SHT_RELA section's entries end to end, in section header order, with the
    section each entry came from: one set of arrays for a whole object (a C++ object built
    with -ffunction-sections has thousands of small relocation sections, and numpy per
    section costs more than the work)."""

    rel_section: np.ndarray  # index of the relocation section of each entry
    target: np.ndarray  # that section's sh_info: the section the entry applies to
    offsets: np.ndarray
    symbol_indices: np.ndarray
    types: np.ndarray
    addends: np.ndarray | None

    def __len__(self) -> int:
        return int(self.offsets.shape[0])


def read_stacked_relocations(elf: ElfFile) -> StackedRelocations:
    """All relocation sections of a file as one StackedRelocations (bounds-checked)."""
    headers = elf.section_headers
    sh_type = headers["sh_type"] if len(headers) else np.zeros(0, dtype=np.uint32)
    chosen = np.flatnonzero((sh_type == C.SHT_REL) | (sh_type == C.SHT_RELA))
    kinds = set(sh_type[chosen].tolist())
    if len(kinds) != 1:  # none, or REL and RELA mixed (no toolchain does that): section by section
        return _stacked_from_tables(elf)
    dtype = elf.dtypes["rela" if kinds == {C.SHT_RELA} else "rel"]
    item = dtype.itemsize
    starts = headers["sh_offset"][chosen].astype(np.int64)
    counts = headers["sh_size"][chosen].astype(np.int64) // item
    # In bounds without overflow (a fuzzed offset near 2**63 must not wrap around).
    if not bool(np.all((starts >= 0) & (starts <= elf.size) & (counts >= 0) & (counts <= (elf.size - starts) // item))):
        return _stacked_from_tables(elf)  # raises the per-section error, naming the section
    for big in np.flatnonzero(counts * item >= SPARSE_MIN_BYTES).tolist():  # holes, per section
        elf.require_on_disk(int(starts[big]), int(counts[big]) * item, elf.sections[int(chosen[big])].name,
                            int(counts[big]))
    ends = starts + counts * item
    total = int(counts.sum())
    if total and bool(np.all(starts[1:] == ends[:-1])):  # back to back (what assemblers write)
        entries = elf.array(int(starts[0]), dtype, total, "relocation sections")
    elif total:
        # Gather each entry's bytes from wherever its section lies, in one fancy index.
        first_of_section = np.repeat(np.cumsum(counts) - counts, counts)
        entry_start = np.repeat(starts, counts) + (np.arange(total, dtype=np.int64) - first_of_section) * item
        data = elf.file_bytes()
        entries = data[entry_start[:, None] + np.arange(item, dtype=np.int64)].view(dtype).reshape(total)
    else:
        entries = np.zeros(0, dtype=dtype)
    syms, types = split_info(entries["r_info"], elf.is64, elf.e_machine)
    addends = entries["r_addend"] if "r_addend" in (entries.dtype.names or ()) else None
    return StackedRelocations(np.repeat(chosen, counts), np.repeat(headers["sh_info"][chosen].astype(np.int64), counts),
                              entries["r_offset"], syms, types, addends)


def _stacked_from_tables(elf: ElfFile) -> StackedRelocations:
    tables = elf.section_relocations
    empty = np.zeros(0, dtype=np.int64)
    if not tables:
        return StackedRelocations(empty, empty, empty, empty, empty, None)
    counts = [len(t) for _s, t in tables]
    has_addends = all(t.addends is not None for _s, t in tables)
    return StackedRelocations(
        np.repeat(np.array([s.index for s, _t in tables], dtype=np.int64), counts),
        np.repeat(np.array([s.info for s, _t in tables], dtype=np.int64), counts),
        np.concatenate([t.offsets.astype(np.int64) for _s, t in tables]),
        np.concatenate([t.symbol_indices for _s, t in tables]),
        np.concatenate([t.types for _s, t in tables]),
        np.concatenate([t.addends.astype(np.int64) for _s, t in tables if t.addends is not None])
        if has_addends else None,
    )


def read_relr_words(elf: ElfFile) -> np.ndarray:
    """The RELR table's raw words (DT_RELR), empty if absent."""
    size = elf.dynamic_tag(C.DT_RELRSZ)
    off = elf.dynamic_offset(C.DT_RELR, "DT_RELR", size or 0)
    if off is None or not size:
        return np.zeros(0, dtype=elf.dtypes["xword"])
    dtype = elf.dtypes["xword"]
    return elf.array(off, dtype, size // dtype.itemsize, "DT_RELR")
