"""What an object contributes to the output's sections, and its AArch64 branches whose reach
depends on the output layout (read once with the object's facts)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ldscope.elf import ElfFile
from ldscope.elf import constants as C

_SHF_ALLOC = 0x2
_SHF_EXECINSTR = 0x4
_MAX_SITES = 64

# Input-section name -> (output section, rank inside it), the default GNU linker script's
# mapping (aarch64-linux-gnu-ld --verbose; gold, lld and mold use the same names). The rank
# orders the script's lines inside one output section: .text.unlikely before .text.hot
# before .text.
_TEXT_RANKS = ((".text.unlikely", 0), (".text.exit", 1), (".text.startup", 2), (".text.hot", 3),
               (".text.sorted.", 4))
_PREFIXES = (
    (".text", ".text"), (".gnu.linkonce.t.", ".text"), (".stub", ".text"),
    (".rodata1", ".rodata1"), (".rodata", ".rodata"), (".gnu.linkonce.r.", ".rodata"),
    (".eh_frame", ".eh_frame"), (".gcc_except_table", ".gcc_except_table"),
    (".tdata", ".tdata"), (".gnu.linkonce.td.", ".tdata"), (".tbss", ".tbss"), (".gnu.linkonce.tb.", ".tbss"),
    (".preinit_array", ".preinit_array"), (".init_array", ".init_array"), (".ctors", ".init_array"),
    (".fini_array", ".fini_array"), (".dtors", ".fini_array"),
    (".data.rel.ro", ".data.rel.ro"), (".data1", ".data1"), (".data", ".data"),
    (".gnu.linkonce.d.", ".data"), (".bss", ".bss"), (".gnu.linkonce.b.", ".bss"),
)
_EXACT = {".init": ".init", ".fini": ".fini", ".tcommon": ".tbss"}


def output_section_of(name: str) -> tuple[str, int]:
    """The output section (and rank inside it) the default linker script maps `name` to; an
    unmatched name is an orphan, kept under its own name."""
    if name in _EXACT:
        return _EXACT[name], 0
    for prefix, out in _PREFIXES:
        if name == prefix or (name.startswith(prefix) and (prefix.endswith(".") or name[len(prefix)] == ".")):
            if out == ".text":
                for sub, rank in _TEXT_RANKS:
                    if name == sub or name.startswith(sub + ".") or (sub.endswith(".") and name.startswith(sub)):
                        return out, rank
                return out, 5
            return out, 0
    return name, 0


@dataclass(frozen=True, slots=True)
class SectionShare:
    """The bytes one object contributes to one output section (at one rank)."""

    output: str
    rank: int
    size: int  # the inputs' sizes, summed: a lower bound of the space they take
    padded: int  # each input aligned as the linker aligns it, from offset 0 of the share
    align: int  # the largest input alignment
    code: bool  # some input is SHF_EXECINSTR
    count: int  # input sections
    single: str = ""  # the input section's name when there is one


@dataclass(frozen=True, slots=True)
class BranchSite:
    """An AArch64 branch (CALL26/JUMP26 ±128 MiB, CONDBR19 ±1 MiB, TSTBR14 ±32 KiB) whose
    reach depends on where the linker places its caller and target."""

    type: str  # R_AARCH64_CALL26
    reach: int  # the largest forward distance + 4; backward it reaches -reach
    section: str  # the caller's input section
    offset: int  # the branch's offset in it
    section_size: int
    output: str  # the caller's output section, rank, and the bytes of this object's share before it
    rank: int
    before: int
    target: str  # the symbol (a section symbol: the section's name)
    # A target in another section of this object: its output section, rank, and offset in the
    # object's share there (section start + symbol value + addend); None for a symbol of another unit.
    local: tuple[str, int, int] | None
    weak_undefined: bool = False
    exact: int | None = None  # a target in the caller's own section: the exact distance
    target_section: str = ""  # a target in this object: its input section's name


_BRANCH_TYPES = {283: ("R_AARCH64_CALL26", 1 << 27), 282: ("R_AARCH64_JUMP26", 1 << 27),
                 280: ("R_AARCH64_CONDBR19", 1 << 20), 279: ("R_AARCH64_TSTBR14", 1 << 15)}
_LONG = (282, 283)


def section_shares(elf: ElfFile) -> tuple[SectionShare, ...]:
    """The object's SHF_ALLOC sections summed per output section, in first-appearance order.

    Only AArch64 objects: the layout estimate serves the branch-range checks alone, and a
    section-by-section pass costs a C++ object with thousands of sections milliseconds."""
    if elf.e_type != C.ET_REL or elf.e_machine != C.EM_AARCH64:
        return ()
    return tuple(_shares(elf)[0].values())


def _shares(elf: ElfFile) -> tuple[dict[tuple[str, int], SectionShare], dict[int, tuple[str, int, int]]]:
    """Shares and, per section index, (output, rank, offset of the section in its share)."""
    headers = elf.section_headers
    shares: dict[tuple[str, int], SectionShare] = {}
    where: dict[int, tuple[str, int, int]] = {}
    if not len(headers):
        return shares, where
    aligns = headers["sh_addralign"].tolist()
    for sec in elf.sections:
        if not sec.flags & _SHF_ALLOC or sec.type == C.SHT_GROUP:
            continue
        out, rank = output_section_of(sec.name)
        align = max(1, int(aligns[sec.index]))
        old = shares.get((out, rank))
        start = -(-old.padded // align) * align if old is not None else 0
        where[sec.index] = (out, rank, start)
        code = bool(sec.flags & _SHF_EXECINSTR)
        if old is None:
            shares[(out, rank)] = SectionShare(out, rank, sec.size, start + sec.size, align, code, 1, sec.name)
        else:
            shares[(out, rank)] = SectionShare(out, rank, old.size + sec.size, start + sec.size,
                                               max(align, old.align), old.code or code, old.count + 1)
    return shares, where


def branch_sites(elf: ElfFile) -> tuple[BranchSite, ...]:
    """Branches that may be out of reach once linked: every CONDBR19/TSTBR14 leaving its
    section or out of reach inside it; every CALL26/JUMP26 in a section of 128 MiB or more
    (only there can a linker fail to place a veneer) that leaves its section; every
    CALL26/JUMP26 to an undefined weak symbol (it resolves to address 0)."""
    if elf.e_machine != C.EM_AARCH64 or elf.e_type != C.ET_REL:
        return ()
    table = elf.symtab
    if table is None:
        return ()
    sections = elf.sections
    huge = any(s.size >= 1 << 27 and s.flags & _SHF_EXECINSTR for s in sections)
    relocation_sets = [(sec, relocs) for sec, relocs in elf.section_relocations
                       if 0 < sec.info < len(sections) and sections[sec.info].flags & _SHF_EXECINSTR]
    candidates = []
    for sec, relocs in relocation_sets:
        types = relocs.types
        mask = (types == 280) | (types == 279)
        mask |= np.isin(types, _LONG) & (huge and sections[sec.info].size >= 1 << 27)
        weak_targets = (table.section_index == C.SHN_UNDEF) & (table.bind == C.STB_WEAK)
        syms = relocs.symbol_indices.astype(np.int64)
        in_table = (syms > 0) & (syms < len(table))
        weak_hits = np.zeros(len(syms), dtype=bool)
        weak_hits[in_table] = weak_targets[syms[in_table]]
        mask |= np.isin(types, _LONG) & weak_hits
        if mask.any():
            candidates.append((sec, relocs, np.flatnonzero(mask).tolist()))
    if not candidates:
        return ()
    _shares_by_output, where = _shares(elf)
    values = table.entries["st_value"]
    found: list[BranchSite] = []
    for sec, relocs, hits in candidates:
        caller = sections[sec.info]
        out, rank, before = where.get(caller.index, (caller.name, 0, 0))
        for k in hits:
            number = int(relocs.types[k])
            name, reach = _BRANCH_TYPES[number]
            sym = int(relocs.symbol_indices[k])
            if not 0 < sym < len(table):
                continue
            shndx = int(table.section_index[sym])
            offset = int(relocs.offsets[k])
            addend = int(relocs.addends[k]) if relocs.addends is not None else 0
            value = int(values[sym]) + addend
            is_section = int(table.type[sym]) == C.STT_SECTION
            target = sections[shndx].name if is_section and 0 < shndx < len(sections) else table.name(sym)
            weak = shndx == C.SHN_UNDEF and int(table.bind[sym]) == C.STB_WEAK
            if shndx == caller.index:
                distance = value - offset
                if -reach <= distance < reach:
                    continue
                if number in _LONG:
                    continue  # LongBranch (_facts) already covers it
                found.append(BranchSite(name, reach, caller.name, offset, caller.size, out, rank, before,
                                        target, None, exact=distance, target_section=caller.name))
            elif 0 < shndx < len(sections) and shndx in where:
                t_out, t_rank, t_start = where[shndx]
                found.append(BranchSite(name, reach, caller.name, offset, caller.size, out, rank, before,
                                        target, (t_out, t_rank, t_start + value),
                                        target_section=sections[shndx].name))
            elif shndx == C.SHN_UNDEF:
                found.append(BranchSite(name, reach, caller.name, offset, caller.size, out, rank, before,
                                        target, None, weak_undefined=weak))
            if len(found) >= _MAX_SITES:
                return tuple(found)
    return tuple(found)
