"""Relocation tables (REL, RELA, RELR) as arrays, and what they say about binding time."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ldscope.elf.constants import COPY_RELOC_TYPES, LAZY_RELOC_TYPES, reloc_type_name

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
    lazy_types = np.array(sorted(LAZY_RELOC_TYPES.get(e_machine, frozenset())), dtype=np.int64)
    for table in tables:
        if len(table) == 0:
            continue
        syms = table.symbol_indices
        valid = (syms > 0) & (syms < symbol_count)
        if table.is_plt:
            lazy = np.isin(table.types, lazy_types)
        else:
            lazy = np.zeros(len(table), dtype=bool)
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
    return np.unique(np.concatenate(parts)) if parts else np.zeros(0, dtype=np.int64)


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
