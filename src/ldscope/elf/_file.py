"""ElfFile: one ELF object (read into memory when small, else mapped: see _snapshot), its
tables exposed as numpy arrays on demand."""

from __future__ import annotations

import mmap
import os
from functools import cached_property
from typing import Any, NamedTuple

import numpy as np

from ldscope.elf import constants as C
from ldscope.elf._dynamic import DynamicInfo, decode_dynamic
from ldscope.elf._extents import DataExtents, check_on_disk, data_extents
from ldscope.elf._hashes import dynsym_count_from_hashes, gnu_hash_symbol_count
from ldscope.elf._notes import find_build_id, read_comdat_groups, read_debuglink, read_notes
from ldscope.elf._regular import open_regular
from ldscope.elf._relocs import (
    RelocationTable,
    StackedRelocations,
    read_dynamic_relocations,
    read_relr_words,
    read_section_relocations,
    read_stacked_relocations,
    reference_kinds,
)
from ldscope.elf._snapshot import COPY_LIMIT_BYTES, FileGuard, read_or_map
from ldscope.elf._strings import RawBuffer, SpanBuffer, StringTable, ViewBuffer, WindowBuffer
from ldscope.elf._structs import elf_dtypes
from ldscope.elf._symbols import SymbolTable
from ldscope.elf._versions import (
    SymbolVersions,
    VersionDefinition,
    VersionRequirement,
    parse_verdef,
    parse_verneed,
)
from ldscope.errors import InputFormatError

ELF_MAGIC = C.ELF_MAGIC


def is_elf(first_bytes: bytes) -> bool:
    """True if the bytes start with the ELF magic."""
    return first_bytes[:4] == ELF_MAGIC


class Section(NamedTuple):
    """A section header, decoded. A named tuple, not a frozen dataclass: an object built with
    -ffunction-sections has thousands of sections, and a frozen dataclass's __init__ (one
    object.__setattr__ per field) costs five times a tuple's; it is as immutable."""

    index: int  # type: ignore[assignment]  # the field shadows tuple.index, which nothing here calls
    name: str
    type: int
    flags: int
    addr: int
    offset: int
    size: int
    link: int
    info: int
    entsize: int


class ElfFile:
    """An ELF file (or an ELF member inside an archive) read without copying.

    Construction validates the ELF header and the section and program header tables;
    everything else (dynamic section, symbol tables, versions, relocations, notes) is read
    on first access. Malformed input raises InputFormatError, never anything else.
    """

    def __init__(
        self, raw: RawBuffer | memoryview, name: str, base: int = 0, size: int | None = None,
        guard: FileGuard | None = None, extents: DataExtents | None = None,
    ) -> None:
        self.name = name
        # For a mapped file: checked before every table is handed out (see _snapshot).
        self._guard = guard
        self._copied_tables: dict[tuple[int, int], StringTable] = {}
        # Which bytes of `raw` are really on disk (None: all of them); see _extents.
        self._extents = extents
        if isinstance(raw, memoryview):
            raw = ViewBuffer(raw)
        self._raw: RawBuffer = raw
        self._buffer: Any = getattr(raw, "buffer", raw)
        self.base = base
        self.size = (len(raw) - base) if size is None else size
        self._mmap: mmap.mmap | None = None
        if self.size < 16 or raw[base : base + 4] != ELF_MAGIC:
            raise InputFormatError(name, "not an ELF file (no \\x7fELF magic)", 0)
        ident = raw[base : base + 16]
        if ident[4] not in (C.ELFCLASS32, C.ELFCLASS64):
            raise InputFormatError(name, f"unknown ELF class {ident[4]}", 4)
        if ident[5] not in (C.ELFDATA2LSB, C.ELFDATA2MSB):
            raise InputFormatError(name, f"unknown ELF data encoding {ident[5]}", 5)
        self.elf_class = ident[4]
        self.is64 = ident[4] == C.ELFCLASS64
        self.little_endian = ident[5] == C.ELFDATA2LSB
        self.osabi = ident[7]
        self.dtypes = elf_dtypes(self.is64, self.little_endian)
        ehdr = self.array(0, self.dtypes["ehdr"], 1, "ELF header")[0]
        self.e_type = int(ehdr["e_type"])
        self.e_machine = int(ehdr["e_machine"])
        self.e_flags = int(ehdr["e_flags"])
        self.entry = int(ehdr["e_entry"])
        self._ehdr = ehdr
        # Parts that could not be read, each named (readelf warns and goes on; so do we).
        self.warnings: list[str] = []
        self.section_headers = self._read_section_headers()
        self.program_headers = self._read_program_headers()

    # ----------------------------------------------------------------- opening
    @classmethod
    def open(cls, path: str | os.PathLike[str], display_name: str | None = None) -> ElfFile:
        """Open a file read-only: read into memory when small, else mapped (see _snapshot);
        OSError propagates for unreadable files, a file changed while read is InputFormatError."""
        name = display_name if display_name is not None else os.fspath(path)
        with open_regular(path) as fh:  # never blocks on a FIFO, never reads a device
            st = os.fstat(fh.fileno())
            if st.st_size == 0:
                raise InputFormatError(name, "empty file", 0)
            extents = data_extents(fh.fileno(), st)
            raw, guard = read_or_map(fh.fileno(), name, st)
        try:
            elf = cls(raw, name, guard=guard, extents=extents)
        except BaseException:
            if guard is not None:
                guard.close()
            if isinstance(raw, mmap.mmap):
                try:
                    raw.close()
                except BufferError:
                    pass  # views made before the error (held by the traceback) pin the mapping
            raise
        elf._mmap = raw if isinstance(raw, mmap.mmap) else None
        return elf

    @classmethod
    def from_bytes(cls, data: bytes, name: str = "<bytes>") -> ElfFile:
        """Parse an in-memory image."""
        return cls(data, name)

    def close(self) -> None:
        """Release the mapping (views into it must no longer be used)."""
        if self._guard is not None:
            self._guard.close()
        if self._mmap is not None:
            try:
                self._mmap.close()
            except BufferError:
                pass  # numpy views still alive; the mapping goes away with them
            self._mmap = None

    def __enter__(self) -> ElfFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------ raw access
    def array(self, offset: int, dtype: np.dtype, count: int, what: str) -> np.ndarray:
        """A bounds-checked numpy view of `count` records at file offset `offset`: inside the
        file, not mostly holes of a sparse file when big, and (for a mapped file's tables) a
        copy read with pread (see _snapshot)."""
        if count < 0 or offset < 0 or offset + count * dtype.itemsize > self.size:
            entries = f"{count:,} entries of {dtype.itemsize} bytes" if count != 1 else f"{dtype.itemsize} bytes"
            raise InputFormatError(
                self.name,
                f"{what} claims {entries} at {max(offset, 0):#x} but the file is {self.size:,} bytes",
                offset,
            )
        if count == 0:
            return np.zeros(0, dtype=dtype)
        check_on_disk(self._extents, self.name, what, self.base + offset, count * dtype.itemsize, count, offset)
        nbytes = count * dtype.itemsize
        if self._guard is not None and nbytes <= COPY_LIMIT_BYTES:
            # A mapped file: read with pread, which cannot fault (see _snapshot).
            return np.frombuffer(self._guard.read(self.base + offset, nbytes), dtype=dtype, count=count)
        if self._guard is not None:
            self._guard.check()  # a view of the mapping: the residual window of _snapshot
        return np.frombuffer(self._buffer, dtype=dtype, count=count, offset=self.base + offset)

    def require_on_disk(self, offset: int, length: int, what: str, count: int | None = None) -> None:
        """Raise InputFormatError naming `what` if [offset, offset+length) is big and mostly
        holes of a sparse file (bytes nobody wrote: no linker leaves them in a table)."""
        check_on_disk(self._extents, self.name, what, self.base + offset, length,
                      length if count is None else count, offset)

    def file_bytes(self) -> np.ndarray:
        """The whole file as a uint8 view, for gathers from scattered offsets (each
        gathered table was checked on its own; holes in between are no table's)."""
        return np.frombuffer(self._buffer, dtype=np.uint8, count=self.size, offset=self.base)

    def data_bytes(self, offset: int, length: int) -> int:
        """How many bytes of [offset, offset+length) are really on disk (not holes)."""
        if self._extents is None:
            return max(0, min(length, self.size - offset))
        return self._extents.data_bytes(self.base + offset, self.base + offset + length)

    def read_bytes(self, offset: int, length: int, what: str = "data") -> bytes:
        """Bytes at a file offset, bounds-checked (and not mostly holes, when many)."""
        if offset < 0 or length < 0 or offset + length > self.size:
            raise InputFormatError(self.name, f"{what} extends past the end of the file", offset)
        self.require_on_disk(offset, length, what)
        if self._guard is not None:
            return self._guard.read(self.base + offset, length)  # cannot fault (see _snapshot)
        return self._raw[self.base + offset : self.base + offset + length]

    def string_table(self, offset: int, size: int, what: str = "string table") -> StringTable:
        """A string table at a file offset, bounds-checked."""
        if offset < 0 or size < 0 or offset + size > self.size:
            raise InputFormatError(self.name, f"{what} extends past the end of the file", offset)
        check_on_disk(self._extents, self.name, what, self.base + offset, size, size, offset)
        start = self.base + offset
        if self._guard is not None and size <= COPY_LIMIT_BYTES:
            # A mapped file: the table read with pread and decoded from that copy (see _snapshot),
            # once (.dynsym's link and DT_STRTAB are one table).
            table = self._copied_tables.get((start, size))
            if table is None:
                table = StringTable(SpanBuffer(self._guard.read(start, size), start), start, size)
                self._copied_tables[(start, size)] = table
            return table
        if self._guard is not None:
            self._guard.check()  # decoded from the mapping: the residual window of _snapshot
        return StringTable(self._raw, start, size)

    # ------------------------------------------------------------- headers
    def _read_section_headers(self) -> np.ndarray:
        """The section header table; a broken one is ignored with a warning (the loader never
        reads it, and readelf goes on without it)."""
        shoff = int(self._ehdr["e_shoff"])
        shnum = int(self._ehdr["e_shnum"])
        shentsize = int(self._ehdr["e_shentsize"])
        dtype = self.dtypes["shdr"]
        none = np.zeros(0, dtype=dtype)
        if shoff == 0:
            return none
        if shentsize == 0 and shnum == 0:
            self.warnings.append("a non-zero section header offset but no section headers: none read")
            return none
        if shentsize != dtype.itemsize:
            self.warnings.append(f"section header entry size {shentsize} (expected {dtype.itemsize}): "
                                 "section headers ignored")
            return none
        if shnum == 0:
            # Extended numbering: the real count is in section 0's sh_size.
            if shoff + dtype.itemsize > self.size:
                self.warnings.append("section header 0 extends past the end of the file: section headers ignored")
                return none
            first = self.array(shoff, dtype, 1, "section header 0")
            shnum = int(first[0]["sh_size"])
            if shnum == 0:
                return none
        if shoff + shnum * dtype.itemsize > self.size:
            self.warnings.append(f"section header table ({shnum} × {dtype.itemsize} bytes at {shoff:#x}) "
                                 "extends past the end of the file: section headers ignored")
            return none
        try:
            return self.array(shoff, dtype, shnum, "section header table")
        except InputFormatError as exc:  # mostly holes of a sparse file: ignored like the above
            self.warnings.append(f"{exc.reason}: section headers ignored")
            return none

    def _read_program_headers(self) -> np.ndarray:
        phoff = int(self._ehdr["e_phoff"])
        phnum = int(self._ehdr["e_phnum"])
        dtype = self.dtypes["phdr"]
        if phoff == 0 or phnum == 0:
            return np.zeros(0, dtype=dtype)
        if int(self._ehdr["e_phentsize"]) != dtype.itemsize:
            raise InputFormatError(self.name, "bad program header size", 0)
        if phnum == 0xFFFF and len(self.section_headers):
            phnum = int(self.section_headers[0]["sh_info"])
        return self.array(phoff, dtype, phnum, "program header table")

    @property
    def type_name(self) -> str:
        """REL, EXEC, DYN, CORE or a number."""
        return C.ELF_TYPE_NAMES.get(self.e_type, str(self.e_type))

    @property
    def machine(self) -> str:
        """Machine name: x86_64, aarch64, ppc64le, s390x, i386, arm, riscv64, ..."""
        return C.machine_name(self.e_machine, self.elf_class, self.little_endian)

    @cached_property
    def _shstrtab(self) -> StringTable | None:
        if not len(self.section_headers):
            return None
        index = int(self._ehdr["e_shstrndx"])
        if index == C.SHN_XINDEX:
            index = int(self.section_headers[0]["sh_link"])
        if index == 0 or index >= len(self.section_headers):
            return None
        sh = self.section_headers[index]
        offset, size = int(sh["sh_offset"]), int(sh["sh_size"])
        if int(sh["sh_type"]) == C.SHT_NOBITS or offset < 0 or size < 0 or offset + size > self.size:
            self.warnings.append(f"section name table (section {index}) is not in the file: sections unnamed")
            return None
        return self.string_table(offset, size, "section name table")

    @cached_property
    def sections(self) -> tuple[Section, ...]:
        """All section headers, decoded (names included)."""
        strtab = self._shstrtab
        headers = self.section_headers
        # Names in one call (a C++ object with -ffunction-sections has thousands of sections).
        names = strtab.get_many(headers["sh_name"]) if strtab is not None and len(headers) else [""] * len(headers)
        return tuple(Section(i, name, sh_type, flags, addr, off, size, link, info, entsize)
                     for i, ((_name_off, sh_type, flags, addr, off, size, link, info, _align, entsize), name)
                     in enumerate(zip(headers.tolist(), names)))

    def section_by_name(self, name: str) -> Section | None:
        """The first section with this name."""
        for s in self.sections:
            if s.name == name:
                return s
        return None

    def sections_of_type(self, sh_type: int) -> list[int]:
        """Indices of the sections of one type, in order."""
        return list(self._sections_by_type.get(sh_type, ()))

    @cached_property
    def _sections_by_type(self) -> dict[int, list[int]]:
        if not len(self.section_headers):
            return {}
        # Grouped with numpy: an object built with -ffunction-sections has thousands of sections.
        types = self.section_headers["sh_type"]
        order = np.argsort(types, kind="stable")
        kinds, starts = np.unique(types[order], return_index=True)
        return {kind: chunk.tolist() for kind, chunk in zip(kinds.tolist(), np.split(order, starts[1:]))}

    @cached_property
    def _load_segments(self) -> list[tuple[int, int, int]]:
        """(p_vaddr, p_filesz, p_offset) of every PT_LOAD, as Python ints (read once)."""
        headers = self.program_headers
        if not len(headers):
            return []
        loads = np.flatnonzero(headers["p_type"] == C.PT_LOAD)
        return list(zip(headers["p_vaddr"][loads].tolist(), headers["p_filesz"][loads].tolist(),
                        headers["p_offset"][loads].tolist()))

    def vaddr_to_offset(self, vaddr: int, length: int = 0) -> int | None:
        """File offset of a virtual address via the PT_LOAD segments (None if unmapped)."""
        for start, filesz, offset in self._load_segments:
            if start <= vaddr and vaddr + length <= start + filesz:
                return vaddr - start + offset
        return None

    def _segment(self, p_type: int) -> np.void | None:
        headers = self.program_headers
        if not len(headers):
            return None
        # One array comparison: extended numbering (PN_XNUM) allows millions of headers.
        found = np.flatnonzero(headers["p_type"] == p_type)
        return headers[int(found[0])] if found.size else None

    # ------------------------------------------------------------- dynamic
    @cached_property
    def is_separate_debug(self) -> bool:
        """True for a separate debug file (`objcopy --only-keep-debug`, Debian's -dbg
        packages): its allocated sections, `.dynamic` among them, kept only as headers."""
        named = [s for s in self.sections if s.name == ".dynamic"]
        if named:
            return named[0].type == C.SHT_NOBITS
        code = [s for s in self.sections if s.flags & 0x6 == 0x6 and s.size]  # SHF_ALLOC|SHF_EXECINSTR
        return bool(code) and all(s.type == C.SHT_NOBITS for s in code)

    @cached_property
    def dynamic_section_unused(self) -> Section | None:
        """A `.dynamic` section the loader never reads: the file has program headers but no
        PT_DYNAMIC (ld.so refuses such a shared object: "object file has no dynamic section")."""
        if not len(self.program_headers) or self._segment(C.PT_DYNAMIC) is not None:
            return None
        secs = self.sections_of_type(C.SHT_DYNAMIC)
        return self.sections[secs[0]] if secs else None

    @cached_property
    def section_dynamic(self) -> DynamicInfo | None:
        """The `.dynamic` section decoded on its own (what readelf shows when there is no
        PT_DYNAMIC); None when dynamic_section_unused is None. Never what the loader uses."""
        sec = self.dynamic_section_unused
        if sec is None or sec.type == C.SHT_NOBITS:
            return None
        dtype = self.dtypes["dyn"]
        entries = self.array(sec.offset, dtype, sec.size // dtype.itemsize, ".dynamic section")
        link = self.sections[sec.link] if 0 < sec.link < len(self.sections) else None
        if link is None or link.type == C.SHT_NOBITS:
            return None
        strings = self.string_table(link.offset, link.size, ".dynamic strings")
        return decode_dynamic(entries, strings.get)

    @property
    def has_pt_dynamic(self) -> bool:
        """True if a PT_DYNAMIC program header exists (what ld.so reads the dynamic info by)."""
        return self._segment(C.PT_DYNAMIC) is not None

    @property
    def has_load_segments(self) -> bool:
        """True if the file has a PT_LOAD segment."""
        return bool(self._load_segments)

    def _dynamic_location(self) -> tuple[int, int] | None:
        """(file offset, size) of the dynamic entries as ld.so finds them: PT_DYNAMIC's
        p_vaddr through the PT_LOAD mapping it (l_ld), not its p_offset. Without program
        headers (relocatable or section-only files) the `.dynamic` section."""
        ph = self._segment(C.PT_DYNAMIC)
        if ph is None:
            if len(self.program_headers):
                return None  # the loader sees no dynamic section; see dynamic_section_unused
            secs = self.sections_of_type(C.SHT_DYNAMIC)
            if not secs:
                return None
            sh = self.section_headers[secs[0]]
            return int(sh["sh_offset"]), int(sh["sh_size"])
        if self.is_separate_debug:
            return None  # readelf: "There is no dynamic section in this file."
        vaddr, filesz, memsz = int(ph["p_vaddr"]), int(ph["p_filesz"]), int(ph["p_memsz"])
        wanted = max(filesz, memsz)
        for start, seg_filesz, seg_offset in self._load_segments:
            if start <= vaddr < start + seg_filesz:
                # Bytes past the segment's file part are zero in memory: a DT_NULL there.
                return vaddr - start + seg_offset, min(wanted, start + seg_filesz - vaddr)
        headers = self.program_headers
        loads = headers[headers["p_type"] == C.PT_LOAD]
        if any(start <= vaddr < start + size for start, size in zip(loads["p_vaddr"].tolist(),
                                                                 loads["p_memsz"].tolist())):
            return None  # in a segment's zero-filled part: DT_NULL straight away
        offset = int(ph["p_offset"])
        if filesz == 0:
            return None
        self.warnings.append(f"PT_DYNAMIC address {vaddr:#x} is in no PT_LOAD's file data: "
                             f"read at its file offset {offset:#x}")
        return offset, filesz

    @cached_property
    def _dynamic_entries(self) -> np.ndarray | None:
        dtype = self.dtypes["dyn"]
        location = self._dynamic_location()
        if location is None:
            return None
        offset, size = location
        if offset < 0 or size < 0 or offset >= self.size:
            raise InputFormatError(self.name, "dynamic section is not in the file", offset)
        count = min(size, self.size - offset) // dtype.itemsize
        if count * dtype.itemsize < size:
            self.warnings.append(f"dynamic section ({size} bytes at {offset:#x}) is cut short by the end of the file")
        return self.array(offset, dtype, count, "dynamic section")

    @cached_property
    def _dynamic_tags(self) -> dict[int, int]:
        """Tag -> value of the first entry of each tag before DT_NULL (as ld.so reads them)."""
        entries = self._dynamic_entries
        if entries is None:
            return {}
        tags = entries["d_tag"].tolist()
        values = entries["d_val"].tolist()
        first: dict[int, int] = {}
        for tag, value in zip(tags, values):
            if tag == C.DT_NULL:
                break
            first.setdefault(tag, value)
        return first

    def dynamic_tag(self, tag: int) -> int | None:
        """The value of the first `tag` entry of the dynamic section, None if absent."""
        return self._dynamic_tags.get(tag)

    def dynamic_offset(self, tag: int, what: str, length: int = 0) -> int | None:
        addr = self.dynamic_tag(tag)
        if addr is None:
            return None
        off = self.vaddr_to_offset(addr, length)
        if off is None:
            # Prelinked-less ET_REL objects have no segments; treat addresses as offsets only
            # when there are no program headers at all.
            if not len(self.program_headers):
                return addr
            room = self.segment_room(addr)
            if room is not None:
                # ld.so sees only what the PT_LOAD maps: a table is inside its segment.
                raise InputFormatError(self.name, f"{what} claims {length:,} bytes at {addr:#x} but "
                                       f"its segment holds {room:,} bytes from there")
            raise InputFormatError(self.name, f"{what} address {addr:#x} is not in any segment")
        return off

    def segment_room(self, vaddr: int) -> int | None:
        """Bytes of file data from `vaddr` to the end of the PT_LOAD holding it (None: in none)."""
        for start, filesz, _offset in self._load_segments:
            if start <= vaddr < start + filesz:
                return start + filesz - vaddr
        return None

    @cached_property
    def dynstr(self) -> StringTable | None:
        """The dynamic string table (.dynstr / DT_STRTAB)."""
        secs = self.sections_of_type(C.SHT_DYNSYM)
        if secs:
            link = int(self.section_headers[secs[0]]["sh_link"])
            if 0 < link < len(self.section_headers):
                sh = self.section_headers[link]
                return self.string_table(int(sh["sh_offset"]), int(sh["sh_size"]), ".dynstr")
        size = self.dynamic_tag(C.DT_STRSZ)
        off = self.dynamic_offset(C.DT_STRTAB, "DT_STRTAB", size or 0)
        if off is None or size is None:
            return None
        return self.string_table(off, size, "DT_STRTAB")

    @cached_property
    def dynamic(self) -> DynamicInfo | None:
        """The decoded dynamic section, read from PT_DYNAMIC (None for static files)."""
        entries = self._dynamic_entries
        if entries is None:
            return None
        strtab = self.dynstr
        if strtab is None:
            raise InputFormatError(self.name, "dynamic section without a string table")
        return decode_dynamic(entries, strtab.get)

    @cached_property
    def interpreter(self) -> str | None:
        """PT_INTERP contents (the requested dynamic loader)."""
        ph = self._segment(C.PT_INTERP)
        if ph is None:
            return None
        data = self.read_bytes(int(ph["p_offset"]), int(ph["p_filesz"]), "PT_INTERP")
        return data.split(b"\0", 1)[0].decode("utf-8", "surrogateescape")

    # ------------------------------------------------------------- symbols
    def _symbol_table_from_section(self, index: int, kind: str) -> SymbolTable:
        sh = self.section_headers[index]
        dtype = self.dtypes["sym"]
        if int(sh["sh_type"]) == C.SHT_NOBITS:
            raise InputFormatError(self.name, f"{kind} has no data (SHT_NOBITS)")
        entries = self.array(
            int(sh["sh_offset"]), dtype, int(sh["sh_size"]) // dtype.itemsize, kind
        )
        link = int(sh["sh_link"])
        if not 0 < link < len(self.section_headers):
            raise InputFormatError(self.name, f"{kind} links to bad string table {link}")
        strsh = self.section_headers[link]
        strname = self.sections[link].name
        strings = self.string_table(int(strsh["sh_offset"]), int(strsh["sh_size"]),
                                    f"{strname} ({kind} strings)" if strname else f"{kind} strings")
        extended: np.ndarray | None = None
        for x in self.sections_of_type(C.SHT_SYMTAB_SHNDX):
            xsh = self.section_headers[x]
            if int(xsh["sh_link"]) == index:
                extended = self.array(
                    int(xsh["sh_offset"]), self.dtypes["word"], len(entries), "SHT_SYMTAB_SHNDX"
                )
        return SymbolTable(entries, strings, kind, extended, corrupt=self._corrupt_names(entries, strings, kind))

    def _corrupt_names(self, entries: np.ndarray, strings: StringTable, kind: str) -> np.ndarray | None:
        """Entries whose name lies outside their string table (shown `<corrupt>`, as readelf
        does, with a warning), or None when every name is readable."""
        if not len(entries) or int(entries["st_name"].max()) < max(strings.size, 1):
            return None
        bad = np.flatnonzero(entries["st_name"] >= max(strings.size, 1))
        self.warnings.append(f"{kind}: {bad.size} symbol name(s) outside the string table "
                             f"(first: symbol {int(bad[0])}), shown as <corrupt>")
        return bad

    @cached_property
    def dynsym(self) -> SymbolTable | None:
        """The dynamic symbol table (from .dynsym, or from PT_DYNAMIC when sections are gone)."""
        secs = self.sections_of_type(C.SHT_DYNSYM)
        if secs:
            table = self._symbol_table_from_section(secs[0], ".dynsym")
        else:
            if self.dynamic is None:
                return None
            off = self.dynamic_offset(C.DT_SYMTAB, "DT_SYMTAB")
            count = self.hashed_symbol_count
            strings = self.dynstr
            if off is None or count is None or strings is None:
                return None
            self.dynamic_offset(C.DT_SYMTAB, f"DT_SYMTAB ({count:,} symbols by the hash table)",
                                count * self.dtypes["sym"].itemsize)
            entries = self.array(off, self.dtypes["sym"], count, "DT_SYMTAB")
            table = SymbolTable(entries, strings, "dynsym", corrupt=self._corrupt_names(entries, strings, "DT_SYMTAB"))
        table.versions = self.versions if self._has_versions else None
        return table

    @cached_property
    def hashed_symbol_count(self) -> int | None:
        """The number of dynamic symbols as the DT_HASH / DT_GNU_HASH table gives it."""
        return dynsym_count_from_hashes(self)

    @cached_property
    def gnu_hash_symbol_count(self) -> int | None:
        """Where DT_GNU_HASH's last chain ends: no chain of the table runs past it."""
        return gnu_hash_symbol_count(self)

    @cached_property
    def symtab(self) -> SymbolTable | None:
        """The full symbol table (.symtab); None if the file is stripped."""
        secs = self.sections_of_type(C.SHT_SYMTAB)
        if not secs:
            return None
        return self._symbol_table_from_section(secs[0], ".symtab")

    @property
    def is_stripped(self) -> bool:
        """True if there is no .symtab (or no section headers at all)."""
        return not self.sections_of_type(C.SHT_SYMTAB)

    # ------------------------------------------------------------- versions
    @property
    def _has_versions(self) -> bool:
        return bool(
            self.sections_of_type(C.SHT_GNU_VERSYM)
            or self.dynamic_tag(C.DT_VERSYM) is not None
        )

    def _version_table_location(self, sh_type: int, tag: int, count_tag: int) -> tuple[int, int] | None:
        secs = self.sections_of_type(sh_type)
        if secs:
            sh = self.section_headers[secs[0]]
            return int(sh["sh_offset"]), int(sh["sh_info"])
        off = self.dynamic_offset(tag, hex(tag))
        count = self.dynamic_tag(count_tag)
        if off is None or count is None:
            return None
        return off, count

    @cached_property
    def version_definitions(self) -> tuple[VersionDefinition, ...]:
        """verdef entries (including the VER_FLG_BASE one)."""
        loc = self._version_table_location(C.SHT_GNU_VERDEF, C.DT_VERDEF, C.DT_VERDEFNUM)
        if loc is None or self.dynstr is None:
            return ()
        return parse_verdef(
            self.window(), self.name, loc[0], loc[1], self.dynstr,
            self.little_endian,
        )

    @cached_property
    def version_requirements(self) -> tuple[VersionRequirement, ...]:
        """vernaux entries: (file, version name, index, flags)."""
        loc = self._version_table_location(C.SHT_GNU_VERNEED, C.DT_VERNEED, C.DT_VERNEEDNUM)
        if loc is None or self.dynstr is None:
            return ()
        return parse_verneed(
            self.window(), self.name, loc[0], loc[1], self.dynstr,
            self.little_endian,
        )

    @cached_property
    def versions(self) -> SymbolVersions:
        """Version resolution for .dynsym entries."""
        versym: np.ndarray | None = None
        half = self.dtypes["half"]
        secs = self.sections_of_type(C.SHT_GNU_VERSYM)
        if secs:
            sh = self.section_headers[secs[0]]
            versym = self.array(int(sh["sh_offset"]), half, int(sh["sh_size"]) // 2, ".gnu.version")
        else:
            off = self.dynamic_offset(C.DT_VERSYM, "DT_VERSYM")
            if off is not None:
                count = self.hashed_symbol_count
                if count is not None:
                    self.dynamic_offset(C.DT_VERSYM, f"DT_VERSYM ({count:,} symbols by the hash table)",
                                        count * half.itemsize)
                    versym = self.array(off, half, count, "DT_VERSYM")
        return SymbolVersions(versym, self.version_definitions, self.version_requirements)

    # ----------------------------------------------------------- relocations
    @cached_property
    def dynamic_relocations(self) -> tuple[RelocationTable, ...]:
        """Dynamic relocation tables (DT_RELA/DT_REL/DT_JMPREL), read from PT_DYNAMIC."""
        return read_dynamic_relocations(self)

    @cached_property
    def section_relocations(self) -> tuple[tuple[Section, RelocationTable], ...]:
        """Relocation sections (SHT_REL/SHT_RELA), e.g. of relocatable objects."""
        return read_section_relocations(self)

    @cached_property
    def stacked_relocations(self) -> StackedRelocations:
        """All relocation sections' entries as one set of arrays (see StackedRelocations)."""
        return read_stacked_relocations(self)

    @cached_property
    def relr_words(self) -> np.ndarray:
        """The RELR table's raw words (DT_RELR), empty if absent."""
        return read_relr_words(self)

    @cached_property
    def symbol_reference_kinds(self) -> np.ndarray:
        """Per .dynsym index: 0 unreferenced, 1 PLT only (lazy), 2 bound at load."""
        dynsym = self.dynsym
        count = len(dynsym) if dynsym is not None else 0
        return reference_kinds(list(self.dynamic_relocations), count, self.e_machine)

    # ---------------------------------------------------------------- notes
    @cached_property
    def notes(self) -> list[tuple[str, int, bytes]]:
        """All notes from PT_NOTE segments (or SHT_NOTE sections when there are none)."""
        return read_notes(self)

    @cached_property
    def build_id(self) -> str | None:
        """The GNU build-id as hex, if present."""
        return find_build_id(self.notes)

    @cached_property
    def debuglink(self) -> tuple[str, int] | None:
        """(.gnu_debuglink file name, CRC32) if present."""
        return read_debuglink(self)

    @cached_property
    def comdat_groups(self) -> tuple[tuple[str, tuple[int, ...]], ...]:
        """(signature symbol name, member section indices) for each COMDAT group."""
        return read_comdat_groups(self)

    def window(self) -> WindowBuffer:
        """This file's bytes as a RawBuffer with offsets relative to the file start."""
        if self._guard is not None:  # a mapped file: every slice a pread (see _snapshot)
            return WindowBuffer(self._guard.buffer(self.base + self.size), self.base, self.size)
        return WindowBuffer(self._raw, self.base, self.size)

    def describe(self) -> dict[str, Any]:
        """A short dict identity of the file: class, endianness, machine, type."""
        return {
            "class": 64 if self.is64 else 32,
            "endian": "little" if self.little_endian else "big",
            "machine": self.machine,
            "type": self.type_name,
        }
