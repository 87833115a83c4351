"""Relocations of one object that a position-independent output (a shared object or a PIE)
cannot resolve at link time: absolute pointer-size words in read-only sections (they become
text relocations), and AArch64 non-PIC code sequences (ADRP/ADD/LDR against a symbol another
module may define, MOVW_UABS, ABS32). What each linker makes of them is in
`linker/_pic_checks.py`; the x86-64 32-bit ones and AArch64 TLS local-exec are `non_pic`."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ldscope.elf import ElfFile
from ldscope.elf import constants as C
from ldscope.vocab import Words

SHF_WRITE, SHF_ALLOC = 0x1, 0x2
_MAX_FOUND = 16  # enough to word what a linker prints first; the verdict needs only one


class PicFamily(Words):
    """Why a relocation cannot stay as it is in a shared object or PIE."""

    ABSOLUTE_WORD = "absolute-word"  # R_X86_64_64 / R_AARCH64_ABS64 in a read-only section
    PAGE = "page"  # AArch64 ADRP + ADD/LDR :lo12: of a symbol that may be preempted
    MOVW = "movw"  # AArch64 MOVZ/MOVK #:abs_gN: (-mcmodel=large without -fPIC)
    ABS32 = "abs32"  # AArch64 R_AARCH64_ABS32/ABS16: too narrow for a run-time address


@dataclass(frozen=True, slots=True)
class PicRelocation:
    """One such relocation, with what the linkers' messages name."""

    family: PicFamily
    type: str  # R_AARCH64_MOVW_UABS_G3
    number: int  # gold names AArch64 ones by number: "unsupported reloc 269"
    target: str  # the symbol, or the section of a section symbol
    local: bool  # a section or local symbol ("against local symbol", "a local symbol")
    symbol_type: int  # STT_* of a symbol defined in this object; -1 when undefined here
    section: str  # the section holding the relocated field
    offset: int


_X86_64 = {1: "R_X86_64_64"}
_AARCH64_ABS64 = {257: "R_AARCH64_ABS64"}
_AARCH64_ABS32 = {258: "R_AARCH64_ABS32", 259: "R_AARCH64_ABS16"}
_AARCH64_MOVW = {263: "R_AARCH64_MOVW_UABS_G0", 264: "R_AARCH64_MOVW_UABS_G0_NC", 265: "R_AARCH64_MOVW_UABS_G1",
                 266: "R_AARCH64_MOVW_UABS_G1_NC", 267: "R_AARCH64_MOVW_UABS_G2",
                 268: "R_AARCH64_MOVW_UABS_G2_NC", 269: "R_AARCH64_MOVW_UABS_G3"}
# ADRP and the :lo12: halves that complete it (ADD, and LDR/STR of each size).
_AARCH64_PAGE = {275: "R_AARCH64_ADR_PREL_PG_HI21", 276: "R_AARCH64_ADR_PREL_PG_HI21_NC",
                 277: "R_AARCH64_ADD_ABS_LO12_NC", 278: "R_AARCH64_LDST8_ABS_LO12_NC",
                 284: "R_AARCH64_LDST16_ABS_LO12_NC", 285: "R_AARCH64_LDST32_ABS_LO12_NC",
                 286: "R_AARCH64_LDST64_ABS_LO12_NC", 299: "R_AARCH64_LDST128_ABS_LO12_NC"}


def _families(e_machine: int) -> dict[int, tuple[PicFamily, str]]:
    if e_machine == C.EM_X86_64:
        return {n: (PicFamily.ABSOLUTE_WORD, name) for n, name in _X86_64.items()}
    if e_machine == C.EM_AARCH64:
        found = {n: (PicFamily.ABSOLUTE_WORD, name) for n, name in _AARCH64_ABS64.items()}
        found.update({n: (PicFamily.ABS32, name) for n, name in _AARCH64_ABS32.items()})
        found.update({n: (PicFamily.MOVW, name) for n, name in _AARCH64_MOVW.items()})
        found.update({n: (PicFamily.PAGE, name) for n, name in _AARCH64_PAGE.items()})
        return found
    return {}


def pic_relocations(elf: ElfFile) -> tuple[PicRelocation, ...]:
    """The first relocations of a relocatable x86-64 or AArch64 object that a shared object
    or PIE cannot hold as they are, in section and relocation order."""
    families = _families(elf.e_machine)
    if not families or elf.e_type != C.ET_REL:
        return ()
    relocs = elf.stacked_relocations  # all sections at once (C++ objects have thousands)
    if not len(relocs):
        return ()
    headers = elf.section_headers
    targets = relocs.target
    in_range = (targets > 0) & (targets < len(headers))
    flags = np.zeros(len(relocs), dtype=np.int64)
    flags[in_range] = headers["sh_flags"][targets[in_range]]
    # Debug sections are never loaded, so never relocated at run time; an absolute word in
    # writable data is an ordinary dynamic relocation (C++ vtables in .data.rel.ro: most hits).
    words = np.array(sorted(n for n, (family, _name) in families.items() if family == PicFamily.ABSOLUTE_WORD))
    ordinary = np.isin(relocs.types, words) & ((flags & SHF_WRITE) != 0)
    hits = np.flatnonzero(((flags & SHF_ALLOC) != 0) & ~ordinary & np.isin(relocs.types, np.array(sorted(families))))
    if not hits.size:
        return ()
    table = elf.symtab
    if table is None:
        return ()
    sections = elf.sections
    found: list[PicRelocation] = []
    for k in hits.tolist():
        family, name = families[int(relocs.types[k])]
        if family == PicFamily.ABSOLUTE_WORD and flags[k] & SHF_WRITE:
            continue  # an ordinary dynamic relocation in writable data
        sym = int(relocs.symbol_indices[k])
        if not 0 < sym < len(table):
            continue
        shndx = int(table.section_index[sym])
        if shndx == C.SHN_ABS:
            continue  # an absolute value is the same wherever the output is loaded
        local = int(table.bind[sym]) == C.STB_LOCAL
        if family == PicFamily.PAGE and (local or int(table.visibility[sym]) != 0):
            continue  # PC-relative to something that binds locally: fine in any output
        stype = int(table.type[sym])
        target_sec = sections[shndx] if 0 < shndx < len(sections) else None
        target = target_sec.name if stype == C.STT_SECTION and target_sec is not None else table.name(sym)
        found.append(PicRelocation(family, name, int(relocs.types[k]), target, local,
                                   stype if shndx != C.SHN_UNDEF else -1,
                                   sections[int(targets[k])].name, int(relocs.offsets[k])))
        if len(found) >= _MAX_FOUND:
            return tuple(found)
    return tuple(found)
