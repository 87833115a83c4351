"""Per-input symbol facts as a linker sees them, read once per file and cached.

Symbol keys: a plain name stands for an unversioned reference or definition; a definition
with a default version (`foo@@V`) is also reachable as `foo`; every versioned definition is
reachable as `foo@V` (what an object's `.symver` reference to `foo@V` looks up).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

import numpy as np

from ldscope.elf import (
    Archive,
    ElfFile,
    IndexedArchive,
    LinkerScript,
    is_archive,
    is_elf,
    parse_linker_script,
    read_regular,
)
from ldscope.elf import constants as C
from ldscope.errors import InputFormatError
from ldscope.linker._symbol_kinds import SymbolKind
from ldscope.linker.inputs._pic_facts import PicRelocation, pic_relocations
from ldscope.linker.inputs._sections import BranchSite, SectionShare, branch_sites, section_shares
from ldscope.vocab import LinkErrorKind

# The kinds in facts (ObjectFacts.symbols, SharedFacts.order) are plain ints, as the store
# gives them back: marshal takes a symbol list as it is, no encoding per symbol (the store's
# write of a C++ archive's members and of libstdc++.so took a Python call per symbol).
STRONG, WEAK, COMMON = int(SymbolKind.STRONG), int(SymbolKind.WEAK), int(SymbolKind.COMMON)
UNDEFINED, WEAK_UNDEFINED = int(SymbolKind.UNDEFINED), int(SymbolKind.WEAK_UNDEFINED)

_SNIFF = 4096
_MAX_SCRIPT = 4 << 20


@dataclass(frozen=True, slots=True)
class NonPicRelocation:
    """A relocation no shared object or PIE can hold (x86-64 R_X86_64_32/32S: an absolute
    32-bit address), as the linkers name it."""

    type: str  # R_X86_64_32
    target: str  # the symbol, or the section of a section symbol
    against_section: bool  # a section symbol (a local: "against local symbol")
    mergeable: bool  # the target section is SHF_MERGE (mold: `<fragment>`)
    section: str  # the section holding the relocated word
    offset: int
    number: int = 0  # the relocation type's number (gold names TLS ones by it)
    shared_only: bool = False  # refused in a shared object only (TLS local-exec, PC32), not in a PIE
    tls: bool = False  # a TLS local-exec relocation (AArch64 wording)
    preemptible: bool = False  # PC32 to a default-visibility global: fine if it binds locally


@dataclass(frozen=True, slots=True)
class LongBranch:
    """An AArch64 B/BL (R_AARCH64_JUMP26/CALL26, ±128 MiB) to a symbol of its own input
    section further away than it reaches: no linker can put a veneer inside a section."""

    type: str  # R_AARCH64_CALL26
    target: str
    section: str
    offset: int
    distance: int


@dataclass(frozen=True, slots=True)
class ObjectFacts:
    """Global symbols of one relocatable object (a file or an archive member)."""

    name: str
    machine: str
    elf_class: int
    strong: tuple[str, ...]
    weak: tuple[str, ...]
    common: tuple[str, ...]
    data_defs: frozenset[str]  # strong, not a function, not common: what bfd accepts for a common
    undef: tuple[str, ...]  # strong references
    weak_undef: tuple[str, ...]  # references that are weak (and not also strong)
    group_of: Mapping[str, str]  # key -> COMDAT group signature of its section
    groups: tuple[str, ...]
    e_type: int = C.ET_REL
    group_keys: Mapping[str, tuple[str, ...]] = field(default_factory=dict)  # signature -> its keys
    symbols: tuple[tuple[str, int], ...] = ()  # (key, SymbolKind) in symbol-table order
    group_references: GroupReferences | None = None  # undefined names used from each COMDAT group
    # References only made by general- or local-dynamic TLS call sequences (`call
    # __tls_get_addr` after a TLSGD/TLSLD relocation): in an executable every linker relaxes
    # the sequence to initial- or local-exec and the call is gone (g++ -static's libstdc++.a).
    tls_relaxable: frozenset[str] = frozenset()
    non_pic: tuple[NonPicRelocation, ...] = ()  # absolute 32-bit relocations in loaded sections
    hidden_undef: frozenset[str] = frozenset()  # undefined with hidden/internal visibility: must be linked in
    long_branches: tuple[LongBranch, ...] = ()  # branches out of range inside one section
    # Text relocations and AArch64 non-PIC sequences (inputs/_pic_facts.py).
    pic_relocs: tuple[PicRelocation, ...] = ()
    # Undefined names in the order the relocations first refer to them (section by section):
    # the order lld reports undefined symbols in (what its --error-limit cuts).
    undef_order: tuple[str, ...] = ()
    # What the object contributes to each output section, and its branches whose reach
    # depends on the layout (the output-layout estimate, linker/_layout.py).
    shares: tuple[SectionShare, ...] = ()
    branch_sites: tuple[BranchSite, ...] = ()

    def defines(self, key: str) -> bool:
        """True if the object defines `key` (strong, weak or common)."""
        return key in self.strong or key in self.weak or key in self.common


@dataclass(frozen=True, slots=True)
class SharedFacts:
    """The dynamic interface of one shared library."""

    path: str
    soname: str | None
    needed: tuple[str, ...]
    runpath: tuple[str, ...]
    rpath: tuple[str, ...]
    machine: str
    elf_class: int
    defs: Mapping[str, bool]  # key -> weak definition?
    display: Mapping[str, str]  # key -> "name@@VER" for versioned definitions
    undef: tuple[str, ...]
    weak_undef: tuple[str, ...]
    undef_versions: Mapping[str, str] = field(default_factory=dict)  # reference -> version it names
    order: tuple[tuple[str, int], ...] = ()  # (key, SymbolKind) in .dynsym order
    data_defs: frozenset[str] = frozenset()  # strong, not a function, in an initialised section
    weak_defs: frozenset[str] = frozenset()  # keys of `defs` that are weak definitions

    def beats_common(self, key: str) -> bool:
        """bfd: this library's definition replaces a common symbol of a regular object (a
        strong data symbol with initialised contents; a function, a weak symbol or a
        .bss symbol -- a common resolved when the library was made -- does not)."""
        return key in self.data_defs

    def shown(self, key: str) -> str:
        """The symbol as a linker prints it (`name@@VER` when versioned)."""
        return self.display.get(key, key)


@dataclass(frozen=True, slots=True)
class MemberProblem:
    """An archive member a linker cannot use, and why."""

    name: str
    reason: str


@dataclass(slots=True)
class ArchiveFacts:
    """An ar archive: its GNU index and members whose facts are read on first use."""

    path: str
    opened: Archive | None  # None until a member must be read from the file (see `archive`)
    member_names: tuple[str, ...]
    index_entries: tuple[tuple[str, int], ...]
    has_gnu_index: bool
    problems: dict[int, str] = field(default_factory=dict)
    _members: dict[int, ObjectFacts | MemberProblem] = field(default_factory=dict)
    _defined: dict[str, list[int]] | None = None
    _index_names: frozenset[str] | None = None
    # Members' facts from the persistent store (encoded), and how to decode one (_facts_store).
    _stored: dict[int, Any] | None = None
    _decode_stored: Callable[[Any, str], ObjectFacts | MemberProblem | None] | None = None

    def attach_stored(self, stored: dict[int, Any],
                      decoder: Callable[[Any, str], ObjectFacts | MemberProblem | None]) -> None:
        """Members read by an earlier run (decoded on first use instead of parsed)."""
        self._stored, self._decode_stored = stored, decoder

    def stored_and_parsed(self, encoder: Callable[[ObjectFacts | MemberProblem], Any]) -> dict[int, Any]:
        """Every member known now, encoded: those stored before and those parsed in this run."""
        known = dict(self._stored or {})
        for index, facts in self._members.items():
            if index not in known:
                try:
                    known[index] = encoder(facts)
                except TypeError:
                    continue  # something the store cannot hold: parsed again next time
        return known

    @property
    def archive(self) -> Archive:
        """The archive itself, opened on first use: members the store holds need no file read."""
        if self.opened is None:
            self.opened = IndexedArchive.open(self.path)
        return self.opened

    def index_names(self) -> frozenset[str]:
        """The names the archive's index lists (computed once)."""
        if self._index_names is None:
            self._index_names = frozenset(name for name, _member in self.index_entries)
        return self._index_names

    def member(self, index: int) -> ObjectFacts | MemberProblem:
        """Facts of member `index` (cached), or why it cannot be used."""
        found = self._members.get(index)
        if found is not None:
            return found
        display = f"{self.path}({self.member_names[index]})"
        if self._stored is not None and self._decode_stored is not None and index in self._stored:
            decoded = self._decode_stored(self._stored[index], display)
            if decoded is not None:
                self._members[index] = decoded
                return decoded
        result: ObjectFacts | MemberProblem
        m = self.archive.members[index]
        if not m.is_elf:
            result = MemberProblem(m.name, m.skip_reason or "not an ELF object")
        else:
            try:
                elf = ElfFile(self.archive.member_data(m), display)
                result = object_facts(elf, display)
            except (InputFormatError, ValueError) as exc:
                reason = exc.reason if isinstance(exc, InputFormatError) else str(exc)
                result = MemberProblem(m.name, reason)
        self._members[index] = result
        return result

    def lazy_symbols(self) -> dict[str, list[int]]:
        """Defined symbol -> members defining it, from the members' own tables (no index)."""
        if self._defined is None:
            found: dict[str, list[int]] = {}
            for i in range(len(self.member_names)):
                facts = self.member(i)
                if isinstance(facts, MemberProblem):
                    continue
                for group in (facts.strong, facts.weak, facts.common):
                    for key in group:
                        found.setdefault(key, []).append(i)
            self._defined = found
        return self._defined


@dataclass(frozen=True, slots=True)
class ScriptFacts:
    """A GNU ld script given as an input (e.g. glibc's libc.so)."""

    path: str
    script: LinkerScript


@dataclass(frozen=True, slots=True)
class BadInput:
    """A file that exists but is not something the linker can use."""

    path: str
    reason: str
    kind: LinkErrorKind  # MISSING_INPUT, INCOMPATIBLE_INPUT, CORRUPT_INPUT or NOT_RECOGNIZED


FileFacts = ObjectFacts | SharedFacts | ArchiveFacts | ScriptFacts | BadInput


def _keys_for_definition(name: str) -> tuple[str, ...]:
    """Lookup keys a definition named `name` (maybe `foo@@V` / `foo@V`) answers to."""
    at = name.find("@")
    if at <= 0:
        return (name,)
    base = name[:at]
    if name.startswith("@@", at):
        return (base, base + "@" + name[at + 2 :])
    return (name,)


# (TLS resolver symbol, relocation types that open a GD/LD call sequence) per machine.
_TLS_CALL_SEQUENCES = {
    C.EM_X86_64: ("__tls_get_addr", frozenset({19, 20})),  # R_X86_64_TLSGD, R_X86_64_TLSLD
    C.EM_386: ("___tls_get_addr", frozenset({18, 19})),  # R_386_TLS_GD, R_386_TLS_LDM
}


def object_facts(elf: ElfFile, display: str) -> ObjectFacts:
    """Split the non-local symbols of a relocatable object the way symbol resolution needs."""
    facts = _object_facts(elf, display)
    non_pic = _non_pic_relocations(elf)
    if non_pic:
        facts = replace(facts, non_pic=non_pic)
    pic_relocs = pic_relocations(elf)
    if pic_relocs:
        facts = replace(facts, pic_relocs=pic_relocs)
    long_branches = _long_branches(elf)
    if long_branches:
        facts = replace(facts, long_branches=long_branches)
    facts = _with_layout_facts(facts, elf)
    if len(facts.undef) > 1:
        order = _undefined_in_relocation_order(elf, frozenset(facts.undef))
        if order:
            facts = replace(facts, undef_order=order)
    if facts.undef and elf.symtab is not None:
        table = elf.symtab
        hidden = np.flatnonzero((table.section_index == C.SHN_UNDEF) & np.isin(table.visibility, (1, 2)))
        hidden = hidden[hidden > 0]
        if hidden.size:
            names = frozenset(table.names_at(hidden)) & frozenset(facts.undef)
            if names:
                facts = replace(facts, hidden_undef=names)
    sequence = _TLS_CALL_SEQUENCES.get(elf.e_machine)
    if sequence is not None and sequence[0] in facts.undef and _only_tls_calls(elf, *sequence):
        facts = replace(facts, tls_relaxable=frozenset((sequence[0],)))
    return facts


_X86_PC32 = 2  # R_X86_64_PC32
_TLS_LOCAL_EXEC = frozenset((23, *range(544, 560)))  # R_X86_64_TPOFF32, R_AARCH64_TLSLE_*
_NON_PIC_NAMES = {2: "R_X86_64_PC32", 23: "R_X86_64_TPOFF32"}

# Relocation types no position-independent output can hold: x86-64's absolute 32-bit ones;
# AArch64's TLS local-exec ones (an executable's own TLS block: a shared object has none).
_NON_PIC_TYPES = {C.EM_X86_64: {10: "R_X86_64_32", 11: "R_X86_64_32S", 23: "R_X86_64_TPOFF32"},
                  C.EM_AARCH64: {
                      544: "R_AARCH64_TLSLE_MOVW_TPREL_G2", 545: "R_AARCH64_TLSLE_MOVW_TPREL_G1",
                      546: "R_AARCH64_TLSLE_MOVW_TPREL_G1_NC", 547: "R_AARCH64_TLSLE_MOVW_TPREL_G0",
                      548: "R_AARCH64_TLSLE_MOVW_TPREL_G0_NC", 549: "R_AARCH64_TLSLE_ADD_TPREL_HI12",
                      550: "R_AARCH64_TLSLE_ADD_TPREL_LO12", 551: "R_AARCH64_TLSLE_ADD_TPREL_LO12_NC",
                      552: "R_AARCH64_TLSLE_LDST8_TPREL_LO12", 553: "R_AARCH64_TLSLE_LDST8_TPREL_LO12_NC",
                      554: "R_AARCH64_TLSLE_LDST16_TPREL_LO12", 555: "R_AARCH64_TLSLE_LDST16_TPREL_LO12_NC",
                      556: "R_AARCH64_TLSLE_LDST32_TPREL_LO12", 557: "R_AARCH64_TLSLE_LDST32_TPREL_LO12_NC",
                      558: "R_AARCH64_TLSLE_LDST64_TPREL_LO12", 559: "R_AARCH64_TLSLE_LDST64_TPREL_LO12_NC",
                  }}
_MAX_NON_PIC = 16
SHF_ALLOC, SHF_MERGE = 0x2, 0x10


def _non_pic_relocations(elf: ElfFile) -> tuple[NonPicRelocation, ...]:
    """The first R_X86_64_32/32S relocations of sections the program loads (debug sections'
    are never a problem), with what they point at."""
    types = _NON_PIC_TYPES.get(elf.e_machine)
    if types is None or elf.e_type != C.ET_REL:
        return ()
    x86 = elf.e_machine == C.EM_X86_64
    relocs = elf.stacked_relocations
    if not len(relocs):
        return ()
    headers = elf.section_headers
    target = relocs.target
    in_range = (target > 0) & (target < len(headers))
    loaded = np.zeros(len(relocs), dtype=bool)
    loaded[in_range] = (headers["sh_flags"][target[in_range]] & SHF_ALLOC) != 0
    hit = loaded & np.isin(relocs.types, np.array(sorted(types)))
    table = elf.symtab
    if x86 and table is not None:
        # PC32 to a default-visibility global: the symbol may be preempted in a shared
        # object, so the 32-bit PC-relative word cannot reach it (non-PIC code's `g`).
        # Kept apart: the common PC32 to locals and hidden symbols are fine.
        pc32 = np.flatnonzero(loaded & (relocs.types == _X86_PC32))
        if pc32.size:
            syms = relocs.symbol_indices[pc32].astype(np.int64)
            ok = (syms > 0) & (syms < len(table))
            pc32, syms = pc32[ok], syms[ok]
            preempt = ((table.bind[syms] != C.STB_LOCAL) & (table.visibility[syms] == 0)
                       & (table.type[syms] != C.STT_SECTION))
            hit[pc32[preempt]] = True
    hits = np.flatnonzero(hit)
    if not hits.size or table is None:
        return ()
    sections = elf.sections
    found: list[NonPicRelocation] = []
    # Section by section, at most the slots left per section (skipped entries use theirs).
    hit_sections = relocs.rel_section[hits]
    bounds = np.flatnonzero(np.diff(hit_sections)) + 1
    for chunk in np.split(hits, bounds):
        for k in chunk[: _MAX_NON_PIC - len(found)].tolist():
            sym = int(relocs.symbol_indices[k])
            if not 0 < sym < len(table):
                continue
            shndx = int(table.section_index[sym])
            is_section = int(table.type[sym]) == C.STT_SECTION
            if shndx == C.SHN_ABS:
                continue  # an absolute value needs no relocation at load time
            target_sec = sections[shndx] if 0 < shndx < len(sections) else None
            name = target_sec.name if is_section and target_sec is not None else table.name(sym)
            mergeable = bool(target_sec is not None and target_sec.flags & SHF_MERGE)
            number = int(relocs.types[k])
            tls = number in _TLS_LOCAL_EXEC
            found.append(NonPicRelocation(_NON_PIC_NAMES.get(number, types.get(number, str(number))), name,
                                          is_section, mergeable, sections[int(relocs.target[k])].name,
                                          int(relocs.offsets[k]), number,
                                          shared_only=tls or (number == _X86_PC32 and x86),
                                          tls=tls and not x86, preemptible=number == _X86_PC32 and x86))
        if len(found) >= _MAX_NON_PIC:
            break
    return tuple(found)


_BRANCH26 = {283: "R_AARCH64_CALL26", 282: "R_AARCH64_JUMP26"}
_BRANCH_REACH = 1 << 27  # ±128 MiB


def _long_branches(elf: ElfFile) -> tuple[LongBranch, ...]:
    """CALL26/JUMP26 relocations whose target lies in the same section, out of reach. Only
    sections larger than the reach can hold one, so most objects cost one size test."""
    if elf.e_machine != C.EM_AARCH64 or elf.e_type != C.ET_REL:
        return ()
    headers = elf.section_headers
    if not len(headers) or int(headers["sh_size"].max()) < _BRANCH_REACH:
        return ()
    sections = elf.sections
    table = elf.symtab
    if table is None:
        return ()
    found: list[LongBranch] = []
    for sec, relocs in elf.section_relocations:
        if not 0 < sec.info < len(sections) or sections[sec.info].size < _BRANCH_REACH:
            continue
        for k in np.flatnonzero(np.isin(relocs.types, list(_BRANCH26))).tolist():
            sym = int(relocs.symbol_indices[k])
            if not 0 < sym < len(table) or int(table.section_index[sym]) != sec.info:
                continue
            addend = int(relocs.addends[k]) if relocs.addends is not None else 0
            distance = int(table.entries["st_value"][sym]) + addend - int(relocs.offsets[k])
            if not -_BRANCH_REACH <= distance < _BRANCH_REACH:
                found.append(LongBranch(_BRANCH26[int(relocs.types[k])], table.name(sym),
                                        sections[sec.info].name, int(relocs.offsets[k]), distance))
            if len(found) >= _MAX_NON_PIC:
                return tuple(found)
    return tuple(found)


def _with_layout_facts(facts: ObjectFacts, elf: ElfFile) -> ObjectFacts:
    """The object's section shares and layout-dependent branches (see inputs/_sections.py)."""
    shares = section_shares(elf)
    sites = branch_sites(elf)
    return replace(facts, shares=shares, branch_sites=sites) if shares or sites else facts


def _undefined_in_relocation_order(elf: ElfFile, undefined: frozenset[str]) -> tuple[str, ...]:
    """Undefined symbols by their first relocation, sections in header order."""
    table = elf.symtab
    if table is None:
        return ()
    undefined_index = table.section_index == C.SHN_UNDEF
    # All sections' symbol indices end to end, in header order: one first-occurrence pass
    # over the whole (a C++ object has thousands of small relocation sections).
    stacked = elf.stacked_relocations.symbol_indices
    if not stacked.size:
        return ()
    syms, first = np.unique(stacked.astype(np.int64), return_index=True)
    syms = syms[np.argsort(first, kind="stable")]
    syms = syms[(syms > 0) & (syms < len(table))]
    syms = syms[undefined_index[syms]]
    return tuple(dict.fromkeys(name for name in table.names_at(syms) if name in undefined))


def _only_tls_calls(elf: ElfFile, resolver: str, openers: frozenset[int]) -> bool:
    """True if every relocation against `resolver` is the call of a GD/LD sequence: no more
    of them than sequence openers, section by section."""
    table = elf.symtab
    if table is None:
        return False
    # The resolver is undefined here: look among the undefined names only.
    undefined = np.flatnonzero(table.section_index == C.SHN_UNDEF)
    targets = [i for i, name in zip(undefined.tolist(), table.names_at(undefined)) if name == resolver]
    relocs = elf.stacked_relocations
    if not targets or not len(relocs):
        return True
    # Per relocation section: calls of the resolver against sequence openers (one bincount each).
    sections = relocs.rel_section
    size = int(sections.max()) + 1
    calls = np.bincount(sections[np.isin(relocs.symbol_indices, targets)], minlength=size)
    opened = np.bincount(sections[np.isin(relocs.types, sorted(openers))], minlength=size)
    return not bool(np.any(calls > opened))


def _object_facts(elf: ElfFile, display: str) -> ObjectFacts:
    table = elf.symtab
    groups = elf.comdat_groups
    if table is None or len(table) == 0:
        return ObjectFacts(display, elf.machine, elf.elf_class, (), (), (), frozenset(), (), (),
                           {}, tuple(g for g, _ in groups), elf.e_type)
    bind = table.bind
    shndx = table.section_index
    stype = table.type
    keep = bind != C.STB_LOCAL
    keep[0] = False
    idx = np.flatnonzero(keep)
    names = _symtab_names(elf, table.entries["st_name"][idx].tolist())
    if names is None:
        names = table.strings.get_many(table.entries["st_name"][idx])
    if "" not in names and not any("@" in n for n in names):
        facts = _plain_object_facts(elf, display, names, bind[idx], shndx[idx], stype[idx])
        return _with_groups(elf, facts, groups, idx, names, shndx[idx]) if groups else facts
    binds = bind[idx].tolist()
    secs = shndx[idx].tolist()
    types = stype[idx].tolist()
    section_group: dict[int, str] = {}
    for sig, members in groups:
        for s in members:
            section_group[s] = sig
    strong: list[str] = []
    weak: list[str] = []
    common: list[str] = []
    data: set[str] = set()
    undef: dict[str, None] = {}
    weak_undef: dict[str, None] = {}
    group_of: dict[str, str] = {}
    keys_of_group: dict[str, list[str]] = {}
    order: list[tuple[str, int]] = []
    for name, b, sec, typ in zip(names, binds, secs, types):
        if not name:
            continue
        if sec == C.SHN_UNDEF:
            if b == C.STB_WEAK:
                weak_undef[name] = None
                order.append((name, WEAK_UNDEFINED))
            else:
                undef[name] = None
                order.append((name, UNDEFINED))
            continue
        keys = _keys_for_definition(name) if "@" in name else (name,)
        if sec == C.SHN_COMMON:
            common.extend(keys)
            order.extend((k, COMMON) for k in keys)
            continue
        is_weak = b == C.STB_WEAK
        code = WEAK if is_weak else STRONG
        if len(keys) == 1:
            (weak if is_weak else strong).append(name)
            order.append((name, code))
        else:
            (weak if is_weak else strong).extend(keys)
            order.extend((k, code) for k in keys)
        if not is_weak and typ != C.STT_FUNC:
            data.update(keys)
        group = section_group.get(sec)
        if group is not None:
            for k in keys:
                group_of[k] = group
                keys_of_group.setdefault(group, []).append(k)
    group_references = _refs_by_group(elf, idx.tolist(), names, secs, section_group) if groups else None
    return ObjectFacts(
        name=display, machine=elf.machine, elf_class=elf.elf_class, strong=tuple(strong),
        weak=tuple(weak), common=tuple(common), data_defs=frozenset(data), undef=tuple(undef),
        weak_undef=tuple(n for n in weak_undef if n not in undef), group_of=group_of,
        groups=tuple(g for g, _ in groups), e_type=elf.e_type,
        symbols=tuple(order), group_references=group_references,
        group_keys={g: tuple(dict.fromkeys(ks)) for g, ks in keys_of_group.items()},
    )


def _plain_object_facts(elf: ElfFile, display: str, names: list[str], bind: np.ndarray,
                        shndx: np.ndarray, stype: np.ndarray) -> ObjectFacts:
    """The common case (no COMDAT groups, no versioned names): codes computed with numpy."""
    undef = shndx == C.SHN_UNDEF
    common = shndx == C.SHN_COMMON
    weak = bind == C.STB_WEAK
    codes = np.where(undef, np.where(weak, WEAK_UNDEFINED, UNDEFINED),
                     np.where(common, COMMON, np.where(weak, WEAK, STRONG))).tolist()
    is_data = (~undef & ~common & ~weak & (stype != C.STT_FUNC)).tolist()
    buckets: dict[int, list[str]] = {STRONG: [], WEAK: [], COMMON: [], UNDEFINED: [],
                                     WEAK_UNDEFINED: []}
    data: list[str] = []
    for name, code, d in zip(names, codes, is_data):
        buckets[code].append(name)
        if d:
            data.append(name)
    strong_undef = tuple(dict.fromkeys(buckets[UNDEFINED]))
    weak_undef = tuple(n for n in dict.fromkeys(buckets[WEAK_UNDEFINED]) if n not in strong_undef)
    return ObjectFacts(
        name=display, machine=elf.machine, elf_class=elf.elf_class,
        strong=tuple(buckets[STRONG]), weak=tuple(buckets[WEAK]),
        common=tuple(buckets[COMMON]), data_defs=frozenset(data), undef=strong_undef,
        weak_undef=weak_undef, group_of={}, groups=(), e_type=elf.e_type,
        symbols=tuple(zip(names, codes)),
    )


def _with_groups(elf: ElfFile, facts: ObjectFacts, groups: tuple[tuple[str, tuple[int, ...]], ...],
                 idx: np.ndarray, names: list[str], shndx: np.ndarray) -> ObjectFacts:
    """The COMDAT facts of an object whose symbols took the plain path: each definition's
    group, each group's keys, the references made from each group (arrays, no symbol loop)."""
    signatures = list(dict.fromkeys(sig for sig, _members in groups))
    code_of = {sig: k for k, sig in enumerate(signatures)}
    code_by_section = np.full(len(elf.section_headers), -1, dtype=np.int64)
    section_group: dict[int, str] = {}
    for sig, members in groups:  # later groups win a section, as the symbol loop's dict did
        for section in members:
            section_group[section] = sig
            if 0 <= section < len(code_by_section):
                code_by_section[section] = code_of[sig]
    defined = (shndx != C.SHN_UNDEF) & (shndx != C.SHN_COMMON) & (shndx < len(code_by_section))
    codes = np.full(len(names), -1, dtype=np.int64)
    codes[defined] = code_by_section[shndx[defined]]
    grouped = np.flatnonzero(codes >= 0)
    group_of: dict[str, str] = {}
    keys_of_group: dict[str, list[str]] = {}
    for k, code in zip(grouped.tolist(), codes[grouped].tolist()):
        sig = signatures[code]
        group_of[names[k]] = sig
        keys_of_group.setdefault(sig, []).append(names[k])
    references = _refs_by_group(elf, idx.tolist(), names, shndx.tolist(), section_group)
    return replace(facts, group_of=group_of, groups=tuple(g for g, _ in groups), group_references=references,
                   group_keys={g: tuple(dict.fromkeys(ks)) for g, ks in keys_of_group.items()})


def _symtab_names(elf: ElfFile, offsets: list[int]) -> list[str] | None:
    """Names from .symtab's string table, read as one bytes object (fast for archive
    members, whose buffers are memoryviews); None if the table is unavailable."""
    table = elf.symtab
    if table is None:
        return None
    strings = table.strings
    blob = elf.read_bytes(strings.start - elf.base, strings.size, ".strtab")
    size = len(blob)
    if not offsets:
        return []
    nuls = np.flatnonzero(np.frombuffer(blob, dtype=np.uint8) == 0)
    nuls = np.append(nuls, size)
    offs = np.minimum(np.asarray(offsets, dtype=np.int64), size)
    ends = nuls[np.searchsorted(nuls, offs)].tolist()
    return [blob[o:e].decode("utf-8", "surrogateescape") for o, e in zip(offs.tolist(), ends)]


GroupState = tuple[np.ndarray, np.ndarray, Mapping[int, str], Mapping[str, int]]


class GroupReferences:
    """Which undefined names an object's relocations use, from which COMDAT group (or from
    outside any group), as arrays: a link asks only "which references are made by nothing
    but the copies I discard", per object, and that is two numpy set operations."""

    __slots__ = ("_code_of", "_group_codes", "_load", "_names", "_symbols")

    def __init__(self, group_codes: np.ndarray, symbols: np.ndarray, names: Mapping[int, str],
                 code_of: Mapping[str, int]) -> None:
        self._group_codes = group_codes  # per (section, symbol) pair: group code, -1 outside groups
        self._symbols = symbols  # symbol-table index of the undefined name
        self._names = names
        self._code_of = code_of  # group signature -> code
        self._load: Callable[[], GroupState] | None = None

    @classmethod
    def deferred(cls, load: Callable[[], GroupState]) -> GroupReferences:
        """References made only when first asked about (the store's members: most links
        never ask, since only an undefined symbol's referrers are looked at)."""
        refs = cls.__new__(cls)
        refs._load = load
        return refs

    def _loaded(self) -> None:
        if self._load is not None:
            load, self._load = self._load, None
            self._group_codes, self._symbols, self._names, self._code_of = load()

    def state(self) -> GroupState:
        """What it is made of (for the persistent store)."""
        self._loaded()
        return self._group_codes, self._symbols, self._names, self._code_of

    def only_from(self, signatures: Iterable[str]) -> frozenset[str]:
        """Names referenced from these groups' sections and from no other section."""
        self._loaded()
        codes = [self._code_of[s] for s in signatures if s in self._code_of]
        if not codes:
            return frozenset()
        # A lookup table over the group codes (shifted by one: -1 is "outside any group").
        table = np.zeros(len(self._code_of) + 1, dtype=bool)
        table[np.asarray(codes) + 1] = True
        dropped = table[self._group_codes + 1]
        gone = set(self._symbols[dropped].tolist())
        if not gone:
            return frozenset()
        dead = gone.difference(self._symbols[~dropped].tolist())
        return frozenset(self._names[i] for i in dead)


def _refs_by_group(elf: ElfFile, indices: list[int], names: list[str], secs: list[int],
                   section_group: dict[int, str]) -> GroupReferences | None:
    """Undefined symbols referenced from each COMDAT group's sections, and from the rest.

    A reference only made from a group that the link discards is never reported."""
    undef_name = {i: n for i, n, sec in zip(indices, names, secs) if sec == C.SHN_UNDEF and n}
    relocs = elf.stacked_relocations
    if not undef_name or not len(relocs):
        return None
    # Only entries against an undefined name matter.
    table_size = max(undef_name) + 1
    is_undef = np.zeros(table_size, dtype=bool)
    is_undef[list(undef_name)] = True
    syms = relocs.symbol_indices.astype(np.int64)
    keep = (syms >= 0) & (syms < table_size)
    keep[keep] = is_undef[syms[keep]]
    if not keep.any():
        return None
    # A relocation section belongs to the group of the section it applies to (or its own).
    code_of = {sig: k for k, sig in enumerate(dict.fromkeys(section_group.values()))}
    code_by_section = np.full(len(elf.section_headers), -1, dtype=np.int64)
    for section, sig in section_group.items():
        if 0 <= section < len(code_by_section):
            code_by_section[section] = code_of[sig]
    targets = relocs.target[keep]
    own = relocs.rel_section[keep]
    in_range = (targets >= 0) & (targets < len(code_by_section))
    codes = np.full(targets.shape, -1, dtype=np.int64)
    codes[in_range] = code_by_section[targets[in_range]]
    codes = np.where(codes >= 0, codes, code_by_section[own])
    return GroupReferences(codes, syms[keep], undef_name, code_of)


def shared_facts(elf: ElfFile, path: str) -> SharedFacts:
    """Exported definitions, references, SONAME and DT_NEEDED of a shared library."""
    dyn = elf.dynamic
    table = elf.dynsym
    defs: dict[str, bool] = {}
    display: dict[str, str] = {}
    undef: list[str] = []
    weak_undef: list[str] = []
    versioned: dict[str, str] = {}
    order: list[tuple[str, int]] = []
    data_defs: set[str] = set()
    if table is not None and len(table):
        bind = table.bind
        shndx = table.section_index
        keep = table.global_mask
        keep[0] = False
        idx = np.flatnonzero(keep)
        names = table.strings.get_many(table.entries["st_name"][idx])
        binds = bind[idx].tolist()
        secs = shndx[idx].tolist()
        types = table.type[idx].tolist()
        nobits = {i for i, t in enumerate(elf.section_headers["sh_type"].tolist()) if t == C.SHT_NOBITS} \
            if len(elf.section_headers) else set()
        versions = table.versions
        vnames: list[str | None] = [None] * len(idx)
        hidden: list[bool] = [False] * len(idx)
        if versions is not None and versions.versym is not None:
            all_names = versions.version_names(len(table))
            hmask = versions.hidden_mask(len(table))
            pos = idx.tolist()
            vnames = [all_names[i] for i in pos]
            hidden = hmask[idx].tolist()
        for name, b, sec, ver, hid, typ in zip(names, binds, secs, vnames, hidden, types):
            if not name:
                continue
            if sec not in (C.SHN_UNDEF, C.SHN_COMMON) and b != C.STB_WEAK and typ not in (
                    C.STT_FUNC, C.STT_GNU_IFUNC) and sec not in nobits:
                data_defs.add(name)
            if sec == C.SHN_UNDEF:
                (weak_undef if b == C.STB_WEAK else undef).append(name)
                order.append((name, WEAK_UNDEFINED if b == C.STB_WEAK else UNDEFINED))
                if ver is not None:
                    versioned[name] = ver
                continue
            weak = b == C.STB_WEAK
            code = WEAK if weak else STRONG
            if ver is None or ver == name:
                defs.setdefault(name, weak)
                order.append((name, code))
                continue
            defs.setdefault(f"{name}@{ver}", weak)
            order.append((f"{name}@{ver}", code))
            if not hid:
                defs.setdefault(name, weak)
                order.append((name, code))
                display[name] = f"{name}@@{ver}"
            else:
                display.setdefault(f"{name}@{ver}", f"{name}@{ver}")
    return SharedFacts(
        path=path,
        soname=dyn.soname if dyn is not None else None,
        needed=dyn.needed if dyn is not None else (),
        runpath=dyn.runpath if dyn is not None else (),
        rpath=dyn.rpath if dyn is not None else (),
        machine=elf.machine, elf_class=elf.elf_class, defs=defs, display=display,
        undef=tuple(undef), weak_undef=tuple(weak_undef), undef_versions=versioned, order=tuple(order), data_defs=frozenset(data_defs),
        weak_defs=frozenset(k for k, weak in defs.items() if weak),
    )


def _read_head(path: str) -> bytes:
    return read_regular(path, _SNIFF)


def _read_script(path: str) -> str:
    data = read_regular(path, _MAX_SCRIPT + 1)
    if len(data) > _MAX_SCRIPT:
        raise InputFormatError(path, "too large for a linker script")
    return data.decode("utf-8", "surrogateescape")


def read_facts(path: str) -> FileFacts:
    """Classify and read one input file (never raises for bad content: returns BadInput)."""
    try:
        head = _read_head(path)
    except (OSError, ValueError) as exc:
        reason = getattr(exc, "strerror", None) or exc
        return BadInput(path, f"cannot open: {reason}", LinkErrorKind.MISSING_INPUT)
    if not head:
        return BadInput(path, "file is empty (file format not recognized)", LinkErrorKind.NOT_RECOGNIZED)
    try:
        if is_elf(head):
            elf = ElfFile.open(path)
            if elf.e_type == C.ET_DYN:
                return shared_facts(elf, path)
            if elf.e_type == C.ET_REL:
                return object_facts(elf, path)
            return BadInput(path, f"{elf.type_name} file cannot be linked against", LinkErrorKind.NOT_RECOGNIZED)
        if is_archive(head):
            ar = IndexedArchive.open(path)
            return ArchiveFacts(
                path=path, opened=ar, member_names=tuple(m.name for m in ar.members),
                index_entries=ar.index_entries, has_gnu_index=not ar.ld_reports_no_index,
            )
        text = _read_script(path)
        return ScriptFacts(path, parse_linker_script(text, path))
    except InputFormatError as exc:
        kind = LinkErrorKind.CORRUPT_INPUT if is_elf(head) or is_archive(head) else LinkErrorKind.NOT_RECOGNIZED
        return BadInput(path, exc.reason, kind)
    except OSError as exc:
        return BadInput(path, f"cannot read: {exc.strerror or exc}", LinkErrorKind.MISSING_INPUT)


class FactsCache:
    """Facts per file, keyed by identity (device, inode, size, mtime) so edits are seen."""

    def __init__(self) -> None:
        self._by_key: dict[tuple[str, int, int, int, int], FileFacts] = {}
        self.store: FactsStoreLike | None = None  # facts kept between runs (linker.use_facts_store)

    def clear(self) -> None:
        """Forget every file read so far."""
        self._by_key.clear()

    def get(self, path: str) -> FileFacts:
        """Facts of `path`, read at most once while the file is unchanged."""
        try:
            st = os.stat(path)
        except OSError as exc:
            return BadInput(path, f"cannot open: {exc.strerror or exc}", LinkErrorKind.MISSING_INPUT)
        key = (path, st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)
        found = self._by_key.get(key)
        if found is None:
            store = self.store
            found = (store.load_shared(path, st) or store.load_archive(path, st)) if store is not None else None
            if found is None:
                found = read_facts(path)
                if store is not None and isinstance(found, SharedFacts):
                    store.remember_shared(path, st, found)
                elif store is not None and isinstance(found, ArchiveFacts):
                    store.attach_archive(path, st, found)
            if len(self._by_key) > 4096:
                self._by_key.clear()
            self._by_key[key] = found
        return found


class FactsStoreLike(Protocol):
    """What the cache needs of a persistent store (linker/inputs/_facts_store.py)."""

    def load_shared(self, path: str, st: os.stat_result) -> SharedFacts | None:
        """A shared library's stored facts, if the file is unchanged."""

    def remember_shared(self, path: str, st: os.stat_result, facts: SharedFacts) -> None:
        """Keep a shared library's facts."""

    def attach_archive(self, path: str, st: os.stat_result, facts: ArchiveFacts) -> None:
        """Give an archive its stored members."""

    def load_archive(self, path: str, st: os.stat_result) -> ArchiveFacts | None:
        """An archive's stored table and members, if the file is unchanged (not opened)."""

    def save(self) -> None:
        """Write what was added."""


DEFAULT_CACHE = FactsCache()
