"""Hand-built zip files for the hostile-wheel tests: every header field under the test's control.

`zipfile` refuses to write most of what a hostile wheel holds (lying sizes, names with NUL,
raw precompressed streams), so members are laid out here byte by byte: local header, data,
central directory, end record. `zero_bomb` makes a deflate stream of N MiB of zeros without
compressing N MiB (one full-flushed block repeated), so a 4 GiB bomb costs milliseconds.
"""

from __future__ import annotations

import bz2
import functools
import lzma
import struct
import zlib
from dataclasses import dataclass, replace

STORED, DEFLATED, BZIP2, LZMA = 0, 8, 12, 14
MiB = 1 << 20


@dataclass(frozen=True, slots=True)
class Member:
    """One member as written: name bytes, compressed data, the sizes and CRC its headers claim."""

    name: bytes
    data: bytes  # as stored (already compressed)
    method: int
    crc: int
    file_size: int
    mode: int = 0o644
    local_name: bytes | None = None  # a different name in the local header (None: the same)


def member(name: str | bytes, content: bytes, method: int = DEFLATED, mode: int = 0o644) -> Member:
    """An honest member: `content` compressed with `method`."""
    raw = name.encode() if isinstance(name, str) else name
    return Member(raw, compress(content, method), method, zlib.crc32(content), len(content), mode)


def compress(content: bytes, method: int) -> bytes:
    """The member data zip stores for `content` with `method`."""
    if method == STORED:
        return content
    if method == DEFLATED:
        c = zlib.compressobj(6, zlib.DEFLATED, -15)
        return c.compress(content) + c.flush()
    if method == BZIP2:
        return bz2.compress(content)
    if method == LZMA:
        # zip's LZMA: a 4-byte header (version, properties size) then the raw LZMA1 properties and stream.
        filters = [{"id": lzma.FILTER_LZMA1}]
        props = lzma._encode_filter_properties(filters[0])  # type: ignore[attr-defined]
        c = lzma.LZMACompressor(lzma.FORMAT_RAW, filters=[lzma._decode_filter_properties(lzma.FILTER_LZMA1, props)])  # type: ignore[attr-defined]
        return struct.pack("<BBH", 9, 4, len(props)) + props + c.compress(content) + c.flush()
    return content  # an unknown method: the bytes as they are


def zero_bomb(name: str, mib: int, prefix: bytes = b"", real_crc: bool = True) -> Member:
    """`prefix` (e.g. a real ELF file) then `mib` MiB of zeros, deflated (ratio ~1030:1), built
    from one repeated full-flush block. `real_crc=False` skips the CRC (~1 s per GiB)."""
    data, crc, size = _zero_stream(mib, prefix, real_crc)
    return Member(name.encode(), data, DEFLATED, crc, min(size, 0xFFFFFFFF), 0o755)


@functools.lru_cache(maxsize=64)
def _zero_stream(mib: int, prefix: bytes, real_crc: bool) -> tuple[bytes, int, int]:
    c = zlib.compressobj(9, zlib.DEFLATED, -15)
    head = c.compress(prefix) + c.flush(zlib.Z_FULL_FLUSH) if prefix else b""
    block = c.compress(bytes(MiB)) + c.flush(zlib.Z_FULL_FLUSH)
    data = head + block * mib + c.flush()
    crc = zlib.crc32(prefix)
    if real_crc:
        zeros = bytes(MiB)
        for _ in range(mib):
            crc = zlib.crc32(zeros, crc)
    return data, crc, len(prefix) + mib * MiB


def lying(m: Member, file_size: int) -> Member:
    """The same member with headers claiming `file_size` uncompressed bytes."""
    return replace(m, file_size=file_size)


def build_zip(members: list[Member], overlap: int = 0) -> bytes:
    """A zip of `members` in order. `overlap` > 0 adds that many extra central-directory
    entries pointing at the first member's local header (an "overlapping files" bomb)."""
    out = bytearray()
    central = bytearray()
    offsets = []
    for m in members:
        offsets.append(len(out))
        local = m.name if m.local_name is None else m.local_name
        out += struct.pack("<4s5H3I2H", b"PK\x03\x04", 20, 0, m.method, 0, 0x21,
                           m.crc, len(m.data), m.file_size, len(local), 0) + local + m.data
    entries = [(m, off) for m, off in zip(members, offsets)]
    # Each extra entry has a name of its own (so it is no duplicate) and the first member's data.
    entries += [(replace(members[0], name=members[0].name + b".%d" % i), offsets[0]) for i in range(overlap)]
    for m, off in entries:
        central += struct.pack("<4s6H3I5H2I", b"PK\x01\x02", 0x0314, 20, 0, m.method, 0, 0x21,
                               m.crc, len(m.data), m.file_size, len(m.name), 0, 0, 0, 0,
                               (m.mode | 0o100000) << 16, off) + m.name
    end = struct.pack("<4s4H2IH", b"PK\x05\x06", 0, 0, len(entries), len(entries), len(central), len(out), 0)
    return bytes(out + central + end)


def metadata_members(dist: str, version: str) -> list[Member]:
    """The dist-info members a wheel needs (RECORD without hashes: nothing here checks them)."""
    info = f"{dist}-{version}.dist-info"
    return [member(f"{info}/METADATA", f"Metadata-Version: 2.1\nName: {dist}\nVersion: {version}\n".encode()),
            member(f"{info}/WHEEL", b"Wheel-Version: 1.0\nRoot-Is-Purelib: false\nTag: py3-none-linux_x86_64\n"),
            member(f"{info}/RECORD", b"")]


def overlapping_bomb(count: int, kernel_mib: int, prefix: bytes = b"") -> bytes:
    """An "overlapping files" zip bomb (Fifield, 2019): `count` members, each with a local
    header of its own, whose deflate data quotes the next member's local header in a stored
    block and then continues into the next member's data, down to one shared kernel of
    `prefix` + `kernel_mib` MiB of zeros. Every member decompresses to the whole kernel (and
    the headers quoted); CRCs are left 0 (a reader pays before it can check them)."""
    kernel, _, kernel_size = _zero_stream(kernel_mib, prefix, False)
    names = [f"bomb/lib{i:03d}.so".encode() for i in range(count)]
    # Built from the last member back: data_i = stored block(LH_{i+1}) + data_{i+1}.
    locals_: list[bytes] = [b""] * count
    datas: list[bytes] = [b""] * count
    sizes = [0] * count
    data, size = kernel, kernel_size
    for i in reversed(range(count)):
        datas[i], sizes[i] = data, size
        locals_[i] = struct.pack("<4s5H3I2H", b"PK\x03\x04", 20, 0, DEFLATED, 0, 0x21, 0, len(data), size,
                                 len(names[i]), 0) + names[i]
        quoted = locals_[i]
        data = struct.pack("<BHH", 0, len(quoted), len(quoted) ^ 0xFFFF) + quoted + data
        size += len(quoted)
    out = bytearray()
    offsets = []
    for i in range(count):
        offsets.append(len(out))
        out += locals_[i]
        if i + 1 < count:
            out += struct.pack("<BHH", 0, len(locals_[i + 1]), len(locals_[i + 1]) ^ 0xFFFF)
    out += kernel
    central = bytearray()
    for i in range(count):
        central += struct.pack("<4s6H3I5H2I", b"PK\x01\x02", 0x0314, 20, 0, DEFLATED, 0, 0x21, 0,
                               len(datas[i]), sizes[i], len(names[i]), 0, 0, 0, 0,
                               (0o755 | 0o100000) << 16, offsets[i]) + names[i]
    end = struct.pack("<4s4H2IH", b"PK\x05\x06", 0, 0, count, count, len(central), len(out), 0)
    return bytes(out + central + end)
