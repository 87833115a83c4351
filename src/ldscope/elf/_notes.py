"""ELF notes: the GNU build-id, and the .gnu_debuglink section."""

from __future__ import annotations

import struct
from typing import TYPE_CHECKING

import numpy as np

from ldscope.elf import constants as C
from ldscope.elf._extents import SPARSE_MIN_BYTES
from ldscope.elf.constants import NT_GNU_BUILD_ID
from ldscope.errors import InputFormatError

if TYPE_CHECKING:
    from ldscope.elf._file import ElfFile
from ldscope.elf._strings import RawBuffer


def iter_notes(
    raw: RawBuffer, start: int, size: int, little: bool, align: int = 4
) -> list[tuple[str, int, bytes]]:
    """(owner name, type, descriptor) for each note in [start, start+size), bounds-checked."""
    e = "<" if little else ">"
    notes: list[tuple[str, int, bytes]] = []
    pos = start
    end = min(start + size, len(raw))
    align = 8 if align == 8 else 4
    while pos + 12 <= end and len(notes) < 4096:
        namesz, descsz, ntype = struct.unpack(e + "III", raw[pos : pos + 12])
        name_start = pos + 12
        desc_start = name_start + ((namesz + align - 1) // align) * align
        desc_end = desc_start + descsz
        if desc_end > end:
            break  # truncated note: stop rather than read past the segment
        owner = raw[name_start : name_start + namesz].rstrip(b"\0").decode("ascii", "replace")
        notes.append((owner, ntype, raw[desc_start:desc_end]))
        pos = desc_start + ((descsz + align - 1) // align) * align
    return notes


def find_build_id(notes: list[tuple[str, int, bytes]]) -> str | None:
    """Hex build-id from a list of notes, if present."""
    for owner, ntype, desc in notes:
        if owner == "GNU" and ntype == NT_GNU_BUILD_ID:
            return desc.hex()
    return None


def parse_debuglink(data: bytes, little: bool = True) -> tuple[str, int] | None:
    """(file name, CRC32) from the contents of a .gnu_debuglink section."""
    nul = data.find(b"\0")
    if nul <= 0:
        return None
    name = data[:nul].decode("utf-8", "surrogateescape")
    crc_at = (nul + 4) & ~3
    if crc_at + 4 > len(data):
        return name, 0
    (crc,) = struct.unpack("<I" if little else ">I", data[crc_at : crc_at + 4])
    return name, crc


def read_notes(elf: ElfFile) -> list[tuple[str, int, bytes]]:
    """All notes from PT_NOTE segments (or SHT_NOTE sections when there are none)."""
    window = elf.window()
    found: list[tuple[str, int, bytes]] = []
    headers = elf.program_headers
    notes = headers[headers["p_type"] == C.PT_NOTE] if len(headers) else headers
    regions = list(zip(notes["p_offset"].tolist(), notes["p_filesz"].tolist(), notes["p_align"].tolist()))
    if not regions:
        regions = [(s.offset, s.size, 4) for s in elf.sections if s.type == C.SHT_NOTE]
    for off, size, align in regions:
        if 0 <= off <= elf.size:
            elf.require_on_disk(off, min(size, elf.size - off), "note segment")
        found.extend(iter_notes(window, off, size, elf.little_endian, align))
    return found


def read_debuglink(elf: ElfFile) -> tuple[str, int] | None:
    """(.gnu_debuglink file name, CRC32) if present."""
    sec = elf.section_by_name(".gnu_debuglink")
    if sec is None or sec.type == C.SHT_NOBITS:
        return None
    return parse_debuglink(elf.read_bytes(sec.offset, sec.size, ".gnu_debuglink"), elf.little_endian)


def read_comdat_groups(elf: ElfFile) -> tuple[tuple[str, tuple[int, ...]], ...]:
    """(signature symbol name, member section indices) for each COMDAT group."""
    indices = elf.sections_of_type(C.SHT_GROUP)
    if not indices:
        return ()
    word = elf.dtypes["word"]
    headers = elf.section_headers[indices]
    limit = len(elf.section_headers) + 1
    found: list[tuple[int, tuple[int, ...]]] = []  # (signature symbol index, members)
    offsets = headers["sh_offset"].astype(np.int64)
    counts = headers["sh_size"].astype(np.int64) // 4
    too_long = np.flatnonzero(counts > limit)
    if too_long.size:
        i = indices[int(too_long[0])]
        raise InputFormatError(elf.name, f"section group {i} lists more members than there are sections")
    # In bounds without overflow (a fuzzed offset near 2**63 must not wrap around).
    in_file = bool(np.all((offsets >= 0) & (offsets <= elf.size) & (counts >= 0)
                          & (counts <= (elf.size - offsets) // 4)))
    if in_file:
        for big in np.flatnonzero(counts * 4 >= SPARSE_MIN_BYTES).tolist():  # holes, per group
            elf.require_on_disk(int(offsets[big]), int(counts[big]) * 4, f"section group {indices[big]}",
                                int(counts[big]))
    if in_file and counts.sum():
        # All groups' words in one gather (a C++ object can hold thousands of groups).
        total = int(counts.sum())
        first = np.repeat(np.cumsum(counts) - counts, counts)
        at = np.repeat(offsets, counts) + (np.arange(total, dtype=np.int64) - first) * 4
        data = elf.file_bytes()
        words = data[at[:, None] + np.arange(4, dtype=np.int64)].view(word).reshape(total).tolist()
        bounds = np.cumsum(counts).tolist()
        start = 0
        for info, end in zip(headers["sh_info"].tolist(), bounds):
            if end > start and words[start] & C.GRP_COMDAT:
                found.append((info, tuple(words[start + 1:end])))
            start = end
    else:  # one past the end of the file: read group by group for the error naming it
        for offset, size, info in zip(headers["sh_offset"].tolist(), headers["sh_size"].tolist(),
                                      headers["sh_info"].tolist()):
            group_words = elf.array(offset, word, size // 4, "SHT_GROUP").tolist()
            if group_words and group_words[0] & C.GRP_COMDAT:
                found.append((info, tuple(group_words[1:])))
    if not found:
        return ()
    symtab = elf.symtab
    count = len(symtab) if symtab is not None else 0
    named = [k for k, (info, _m) in enumerate(found) if 0 <= info < count]
    signatures = [""] * len(found)
    if symtab is not None and named:
        for k, name in zip(named, symtab.names_at(np.array([found[k][0] for k in named], dtype=np.int64))):
            signatures[k] = name
    return tuple((sig, members) for sig, (_info, members) in zip(signatures, found))
