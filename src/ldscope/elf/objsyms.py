"""What a relocatable object (or archive member) defines and needs, as a linker sees it."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ldscope.elf import constants as C
from ldscope.elf.file import ElfFile


@dataclass(frozen=True, slots=True)
class ObjectSymbols:
    """Global symbols of one relocatable object, split the way symbol resolution needs them."""

    defined: tuple[str, ...]  # strong (GLOBAL or UNIQUE) definitions
    weak_defined: tuple[str, ...]
    undefined: tuple[str, ...]  # strong references
    weak_undefined: tuple[str, ...]
    common: tuple[str, ...]
    comdat: tuple[str, ...]  # COMDAT group signatures
    has_symtab: bool


def object_symbols(elf: ElfFile) -> ObjectSymbols:
    """Split the non-local symbols of a relocatable object (from .symtab)."""
    table = elf.symtab
    if table is None:
        return ObjectSymbols((), (), (), (), (), tuple(g for g, _ in elf.comdat_groups), False)
    bind = table.bind
    shndx = table.section_index
    nonlocal_ = bind != C.STB_LOCAL
    nonlocal_[0:1] = False
    undefined = nonlocal_ & (shndx == C.SHN_UNDEF)
    common = nonlocal_ & (shndx == C.SHN_COMMON)
    defined = nonlocal_ & ~undefined & ~common
    weak = bind == C.STB_WEAK
    names = table.strings.get_many(table.entries["st_name"][np.flatnonzero(nonlocal_)])
    by_index = dict(zip(np.flatnonzero(nonlocal_).tolist(), names))

    def pick(mask: np.ndarray) -> tuple[str, ...]:
        return tuple(by_index[i] for i in np.flatnonzero(mask).tolist())

    return ObjectSymbols(
        defined=pick(defined & ~weak),
        weak_defined=pick(defined & weak),
        undefined=pick(undefined & ~weak),
        weak_undefined=pick(undefined & weak),
        common=pick(common),
        comdat=tuple(g for g, _ in elf.comdat_groups),
        has_symtab=True,
    )
