"""ELF notes: the GNU build-id, and the .gnu_debuglink section."""

from __future__ import annotations

import struct

from ldscope.elf.constants import NT_GNU_BUILD_ID
from ldscope.elf.strings import RawBuffer


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
