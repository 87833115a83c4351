"""Symbol listings like `nm`, for ELF files and archive members, with honest absence.

A listing is produced lazily, a chunk of rows at a time, as columns computed with numpy from
the symbol arrays (letters, bind/type/visibility names and versions through lookup tables):
a 530,000-symbol .symtab is never held as 530,000 objects, so the CLI can write each chunk
as it is made and memory stays at one chunk's names.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import numpy as np

from ldscope.elf import ElfFile, SymbolTable, format_versioned_name
from ldscope.elf import constants as C

SHF_WRITE, SHF_ALLOC, SHF_EXECINSTR = 0x1, 0x2, 0x4
CHUNK_ROWS = 8192  # rows per chunk: large enough for numpy to pay, small enough for memory

# BFD marks non-alloc sections with these names SEC_DEBUGGING; nm prints `N` for a symbol in
# one, local or not (bfd/elf.c _bfd_elf_make_section_from_shdr, bfd/syms.c decode_section_type).
_DEBUG_PREFIXES = (".debug", ".gnu.debuglto_.debug_", ".gnu.linkonce.wi.", ".zdebug", ".line", ".stab")


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
class RowChunk:
    """A run of listed symbols of one table, as parallel columns (plain Python values)."""

    index: list[int]
    name: list[str]
    demangled: list[str | None] | None  # None: not demangled (no -C, no --grep)
    value: list[int]
    size: list[int]
    bind: list[str]
    type: list[str]
    visibility: list[str]
    section_index: list[int]
    nm_code: str  # one letter per row
    version: list[str | None] | None  # None: the table has no versions
    version_hidden: list[bool] | None
    version_file: list[str | None] | None

    def __len__(self) -> int:
        return len(self.index)

    def rows(self) -> Iterator[SymbolRow]:
        """The chunk as SymbolRow objects (for callers that want one object per symbol)."""
        n = len(self.index)
        dem = self.demangled or [None] * n
        ver = self.version or [None] * n
        hid = self.version_hidden or [False] * n
        vfile = self.version_file or [None] * n
        for i in range(n):
            yield SymbolRow(
                self.index[i], self.name[i], dem[i], self.value[i], self.size[i], self.bind[i],
                self.type[i], self.visibility[i], self.section_index[i], self.nm_code[i],
                ver[i], hid[i], vfile[i],
            )


def _no_chunks() -> Iterator[RowChunk]:
    return iter(())


@dataclass(frozen=True, slots=True)
class TableListing:
    """The outcome for one file (or archive member): its rows, or why there are none.

    `chunks()` produces the rows lazily from the open file: it is valid only while the file
    the listing came from is open (inside `iter_listings`' loop body)."""

    file: str
    member: str | None
    table: str  # "dynsym" or "symtab"
    status: str  # "ok", "stripped", "no-dynamic-symbols", "error", "skipped"
    reason: str | None
    searched: int  # symbols examined before filtering
    machine: int = 0  # e_machine (nm prints ARM Thumb function addresses without bit 0)
    source: Callable[[], Iterator[RowChunk]] = field(default=_no_chunks, repr=False, compare=False)

    @property
    def display_name(self) -> str:
        """`archive(member)` like `nm -A`, or the file name."""
        return f"{self.file}({self.member})" if self.member else self.file

    def chunks(self) -> Iterator[RowChunk]:
        """The listed rows, a chunk at a time."""
        return self.source()

    @property
    def rows(self) -> tuple[SymbolRow, ...]:
        """Every listed row as objects (materialises the whole listing: small tables only)."""
        return tuple(row for chunk in self.chunks() for row in chunk.rows())


@dataclass(frozen=True, slots=True)
class ListingOptions:
    """Which table and which symbols to list."""

    table: str | None = None  # None: dynsym for shared objects/executables, symtab for .o
    defined_only: bool = False
    undefined_only: bool = False
    demangle: bool = False
    grep: re.Pattern[str] | None = None
    special_syms: bool = False  # show ARM/AArch64/RISC-V mapping symbols (nm --special-syms)


def _section_letters(elf: ElfFile) -> tuple[np.ndarray, np.ndarray]:
    """nm letter per section index (uppercase ASCII codes), and which sections are debugging
    sections (whose letter `N` stays uppercase for local symbols, as nm prints it)."""
    letters = []
    debug = []
    for sec in elf.sections:
        is_debug = not sec.flags & SHF_ALLOC and (sec.name.startswith(_DEBUG_PREFIXES) or sec.name == ".gdb_index")
        # bfd's order: code first (an --only-keep-debug file's NOBITS .text is still `t`).
        if sec.flags & SHF_EXECINSTR:
            letters.append("T")
        elif sec.type == C.SHT_NOBITS and sec.flags & SHF_ALLOC:
            letters.append("B")
        elif sec.flags & SHF_WRITE and sec.flags & SHF_ALLOC:
            letters.append("D")
        elif sec.flags & SHF_ALLOC:
            letters.append("R")
        else:
            letters.append("N")
        debug.append(is_debug)
    return (np.frombuffer("".join(letters).encode("ascii"), dtype=np.uint8).copy(),
            np.array(debug, dtype=bool))


def _nm_letters(
    bind: np.ndarray,
    stype: np.ndarray,
    shndx: np.ndarray,
    raw_shndx: np.ndarray,
    letters: np.ndarray,
    debug: np.ndarray,
    machine: int,
) -> str:
    """nm's letter for each symbol (bfd_decode_symclass), computed on whole arrays."""
    nsec = letters.size
    inside = shndx < nsec
    at = np.where(inside, shndx, nsec)  # past the end: the padding slot, `?` and not debug
    code = np.append(letters, np.uint8(ord("?")))[at]
    is_debug = np.append(debug, False)[at]
    # bfd reads processor-specific reserved indices as absolute (x86-64's large common as common).
    reserved = (raw_shndx >= 0xFF00) & (raw_shndx != 0xFFFF)
    code = np.where(reserved, ord("A"), code)
    code = np.where(shndx == C.SHN_COMMON, ord("C"), code)
    if machine == C.EM_X86_64:
        code = np.where(raw_shndx == 0xFF02, ord("C"), code)
    lower = (bind == C.STB_LOCAL) & (code >= ord("A")) & (code <= ord("Z")) & ~is_debug
    code = np.where(lower, code + 32, code)
    weak = bind == C.STB_WEAK
    obj = stype == C.STT_OBJECT
    code = np.where(bind == C.STB_GNU_UNIQUE, ord("u"), code)
    code = np.where(weak, np.where(obj, ord("V"), ord("W")), code)
    code = np.where(stype == C.STT_GNU_IFUNC, ord("i"), code)
    undef = shndx == C.SHN_UNDEF
    code = np.where(undef, np.where(weak, np.where(obj, ord("v"), ord("w")), ord("U")), code)
    return code.astype(np.uint8).tobytes().decode("ascii")


def _lut(names: dict[int, str], size: int) -> np.ndarray:
    table = np.empty(size, dtype=object)
    for i in range(size):
        table[i] = names.get(i, str(i))
    return table


_BIND_LUT = _lut(C.BIND_NAMES, 16)
_TYPE_LUT = _lut(C.TYPE_NAMES, 16)
_VIS_LUT = _lut(C.VISIBILITY_NAMES, 4)


def default_table(elf: ElfFile) -> str:
    """`dynsym` for shared objects and executables, `symtab` for relocatable objects."""
    return "symtab" if elf.e_type == C.ET_REL else "dynsym"


def is_mapping_symbol(machine: int, name: str) -> bool:
    """True for a name nm hides on this machine unless --special-syms (binutils 2.40's
    is_target_special_symbol): on ARM `$a`, `$t`, `$d` and any `$<lowercase letter>`, on
    AArch64 `$x`, `$d` and the tags `$m`, `$f`, `$p`, each bare or followed by `.anything`;
    on RISC-V any name starting `$d` or `$x`, and also empty names and local labels
    (`.L…`, `..…`, `_.L_…`), as nm 2.40 checked on EM_RISCV objects."""
    if machine == C.EM_RISCV:
        return name == "" or name.startswith(("$d", "$x", ".L", "..", "_.L_"))
    if len(name) < 2 or name[0] != "$":
        return False
    if machine == C.EM_ARM:
        return "a" <= name[1] <= "z" and (len(name) == 2 or name[2] == ".")
    if machine == C.EM_AARCH64:
        return name[1] in "xdmfp" and (len(name) == 2 or name[2] == ".")
    return False


def _hide_mapping_symbols(elf: ElfFile, table: SymbolTable, candidates: np.ndarray) -> np.ndarray:
    """Drop the candidates nm hides as mapping symbols (only names that may be one are
    decoded, found through their first byte)."""
    strings = table.strings
    if not strings.size or not candidates.size:
        return candidates
    raw = elf.array(strings.start - elf.base, np.dtype(np.uint8), strings.size, "string table")
    offs = table.entries["st_name"][candidates].astype(np.int64)
    valid = offs < strings.size
    first = np.zeros(offs.shape, dtype=np.uint8)
    first[valid] = raw[offs[valid]]
    special = (first == ord("$")) | (first == 0) | (first == ord(".")) | (first == ord("_")) if elf.e_machine == C.EM_RISCV else first == ord("$")
    maybe = np.flatnonzero(special)
    if not maybe.size:
        return candidates
    names = strings.get_many(offs[maybe])
    drop = [int(i) for i, n in zip(maybe.tolist(), names) if is_mapping_symbol(elf.e_machine, n)]
    if not drop:
        return candidates
    return np.delete(candidates, drop)


def list_symbols(
    elf: ElfFile, options: ListingOptions, file: str, member: str | None = None
) -> TableListing:
    """List the symbols of one ELF file per `options`, never silently empty (rows are made
    lazily by the listing's `chunks()`, while `elf` stays open)."""
    table_name = options.table or default_table(elf)
    table: SymbolTable | None = elf.symtab if table_name == "symtab" else elf.dynsym
    if table is None:
        unreadable = [w for w in elf.warnings if "section header" in w]
        if table_name == "symtab" and unreadable and not len(elf.section_headers):
            # Not stripped: its section headers (where a .symtab is found) cannot be read.
            status, reason = "unreadable", f"no .symtab can be found: {unreadable[0]} (try --dynamic)"
        elif table_name == "symtab":
            status, reason = "stripped", "no .symtab: the file is stripped (try --dynamic)"
        else:
            status, reason = "no-dynamic-symbols", "no dynamic symbol table (static or relocatable file; try --all)"
        return TableListing(file, member, table_name, status, reason, 0)
    count = len(table)
    mask = np.ones(count, dtype=bool)
    if count:
        mask[0] = False  # the null symbol
    if table_name == "symtab":
        stype_all = table.type
        mask &= stype_all != C.STT_SECTION  # nm hides section symbols
        mask &= stype_all != C.STT_FILE
    if options.defined_only:
        mask &= table.defined_mask
    if options.undefined_only:
        mask &= ~table.defined_mask
    candidates = np.flatnonzero(mask)
    if not options.special_syms and elf.e_machine in (C.EM_ARM, C.EM_AARCH64, C.EM_RISCV):
        candidates = _hide_mapping_symbols(elf, table, candidates)
    with_versions = table_name == "dynsym"

    def source() -> Iterator[RowChunk]:
        return _chunks(elf, table, candidates, options, with_versions)

    return TableListing(file, member, table_name, "ok", None, len(candidates), elf.e_machine, source)


# A chunk's names are decoded from the stretch of string table they lie in when it averages
# at most this many bytes a name: one decode and one NUL scan of the stretch (about 1.5 ns a
# byte) beat a search and a decode per name (about 1.7 us) up to there.
_STRETCH_BYTES_PER_NAME = 1024


def _names(elf: ElfFile, table: SymbolTable, idx: np.ndarray) -> list[str]:
    """Names of entries `idx`. A linker writes most names in symbol order, so a chunk's
    names sit in a few stretches of the string table (most in one; names shared with
    earlier symbols elsewhere): each dense stretch is decoded in one pass, names scattered
    between them one at a time."""
    strings = table.strings
    offs = table.entries["st_name"][idx].astype(np.int64)
    if offs.size < 64 or int(offs.min()) < 0 or int(offs.max()) >= strings.size:
        return table.names_at(idx)  # a name outside the table is shown `<corrupt>`, as readelf does
    order = np.argsort(offs, kind="stable")
    ordered = offs[order]
    # A new stretch wherever consecutive names (in table order) are more than 64 KiB apart.
    breaks = np.flatnonzero(np.diff(ordered) > 1 << 16) + 1
    starts = np.concatenate(([0], breaks))
    stops = np.concatenate((breaks, [ordered.size]))
    names = np.empty(offs.size, dtype=object)
    alone: list[np.ndarray] = []
    for first, last in zip(starts.tolist(), stops.tolist()):
        group = ordered[first:last]
        lo, hi = int(group[0]), int(group[-1])
        end = min(strings.size, hi + len(strings.get_bytes(hi)) + 1)
        if last - first < 16 or end - lo > (last - first) * _STRETCH_BYTES_PER_NAME:
            alone.append(order[first:last])
            continue
        raw = elf.read_bytes(strings.start - elf.base + lo, end - lo)
        names[order[first:last]] = _stretch_names(raw, group - lo)
    if alone:
        where = np.concatenate(alone)
        names[where] = strings.get_many(offs[where])
    return list(names.tolist())


def _stretch_names(raw: bytes, offsets: np.ndarray) -> list[str]:
    """The NUL-terminated names at `offsets` of `raw` (undecodable bytes kept with
    surrogateescape, as StringTable decodes them)."""
    nuls = np.flatnonzero(np.frombuffer(raw, dtype=np.uint8) == 0)
    nuls = np.append(nuls, len(raw))  # an unterminated last name ends with the stretch
    ends = nuls[np.searchsorted(nuls, offsets)]
    # latin-1 maps byte i to character i, so byte offsets index the text directly.
    text = raw.decode("latin-1")
    names = [text[a:b] for a, b in zip(offsets.tolist(), ends.tolist())]
    if not text.isascii():
        names = [n if n.isascii() else n.encode("latin-1").decode("utf-8", "surrogateescape") for n in names]
    return names


def _chunks(
    elf: ElfFile,
    table: SymbolTable,
    candidates: np.ndarray,
    options: ListingOptions,
    with_versions: bool,
) -> Iterator[RowChunk]:
    letters, debug = _section_letters(elf)
    versions = table.versions if with_versions else None
    versym = versions.versym if versions is not None else None
    lookup = versions.lookup_table() if versions is not None else {}
    size = max(lookup, default=1) + 2  # the last slot stays None: indexes past every version
    ver_lut = np.full(size, None, dtype=object)
    file_lut = np.full(size, None, dtype=object)
    for ndx, (vname, vfile) in lookup.items():
        if ndx > 1:  # 0 and 1 are local and global: no version
            ver_lut[ndx], file_lut[ndx] = vname, vfile
    entries = table.entries
    pattern = options.grep
    want_demangled = options.demangle or pattern is not None
    for start in range(0, candidates.size, CHUNK_ROWS):
        idx = candidates[start : start + CHUNK_ROWS]
        names = _names(elf, table, idx)
        demangled: list[str | None] | None = None
        if want_demangled:
            from ldscope.cxx import demangle_many

            demangled = demangle_many(names)
        if pattern is not None and demangled is not None:
            keep = [
                i for i, (n, d) in enumerate(zip(names, demangled))
                if pattern.search(n) or (d is not None and pattern.search(d))
            ]
            if not keep:
                continue
            if len(keep) < len(names):
                idx = idx[keep]
                names = [names[i] for i in keep]
                demangled = [demangled[i] for i in keep]
        sub = entries[idx]
        info = sub["st_info"]
        bind = info >> 4
        stype = info & 0xF
        shndx = table.section_index[idx]
        version = hidden = vfile = None
        if versym is not None:
            raw = np.zeros(idx.size, dtype=np.uint16)
            inside = idx < versym.size
            raw[inside] = versym[idx[inside]]
            ndx = np.minimum(raw & C.VERSYM_VERSION, size - 1)
            version = ver_lut[ndx].tolist()
            vfile = file_lut[ndx].tolist()
            hidden = ((raw & C.VERSYM_HIDDEN) != 0).tolist()
        yield RowChunk(
            index=idx.tolist(),
            name=names,
            demangled=demangled if options.demangle or pattern is not None else None,
            value=sub["st_value"].tolist(),
            size=sub["st_size"].tolist(),
            bind=_BIND_LUT[bind].tolist(),
            type=_TYPE_LUT[stype].tolist(),
            visibility=_VIS_LUT[sub["st_other"] & 3].tolist(),
            section_index=shndx.tolist(),
            nm_code=_nm_letters(bind, stype, shndx, sub["st_shndx"], letters, debug, elf.e_machine),
            version=version,
            version_hidden=hidden,
            version_file=vfile,
        )
