"""File access for the loader model: the real filesystem, or wheels overlaid on it (read in place)."""

from __future__ import annotations

import bz2
import lzma
import os
import re
import stat
import struct
import zipfile
import zlib
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from ldscope.elf import ElfFile, open_regular, read_regular
from ldscope.errors import InputFormatError


class OSFileSystem:
    """Plain files. Special files (devices, FIFOs, sockets) are never opened."""

    def head(self, path: str, size: int) -> bytes:
        """The first `size` bytes of a regular file (OSError if it cannot be read)."""
        return read_regular(path, size)

    def key(self, path: str) -> tuple[object, ...]:
        """Identity of the file (device, inode): the same file reached by two names is one."""
        st = os.stat(path)
        return (st.st_dev, st.st_ino)

    @contextmanager
    def open_elf(self, path: str) -> Iterator[ElfFile]:
        """An ElfFile for the path (mmap'ed), closed afterwards."""
        elf = ElfFile.open(path)
        try:
            yield elf
        finally:
            elf.close()

    def listdir(self, path: str) -> list[str]:
        """Names in a directory (OSError if unreadable)."""
        return os.listdir(path)

    def is_file(self, path: str) -> bool:
        """True for an existing regular file (after symlinks)."""
        try:
            return stat.S_ISREG(os.stat(path).st_mode)
        except OSError:
            return False


@dataclass(frozen=True, slots=True)
class WheelLimits:
    """How much a wheel's members may decompress to: zip bombs and lying headers stop here.

    The defaults pass every real wheel measured (the largest member, libcublasLt.so.13, is
    541 MB; torch's native files and metadata together 1.05 GB; above 4 MiB no member
    compresses better than 7.2:1) and stop a zip bomb before it is decompressed: deflate
    reaches ~1030:1 on zeros, bzip2 and LZMA far more.
    """

    member_bytes: int = 2 << 30  # per member (--max-member-size)
    wheel_bytes: int = 8 << 30  # all members read from one wheel together (--max-wheel-size)
    ratio: float = 100.0  # uncompressed / compressed, for members over RATIO_EXEMPT_BYTES (--max-ratio)


# Members up to this size may have any ratio: auditwheel-repaired libraries padded to 2 MiB
# pages are mostly zeros (57:1 for pysam's 2 MB libbz2), and 16 MiB is no bomb.
RATIO_EXEMPT_BYTES = 16 << 20
_CHUNK = 1 << 20  # bytes decompressed per step (and compressed bytes read per step)
_METHODS = {zipfile.ZIP_STORED: "stored", zipfile.ZIP_DEFLATED: "deflate",
            zipfile.ZIP_BZIP2: "bzip2", zipfile.ZIP_LZMA: "LZMA"}
_DRIVE = re.compile(r"^[A-Za-z]:")


def _shown(name: str) -> str:
    """A member name quoted for a one-line message (control characters escaped)."""
    return repr(name)


def member_name_problem(name: str) -> str | None:
    """Why a member name is not a plain relative path inside the wheel (None: it is)."""
    if name == "":
        return "empty member name"
    if "\x00" in name:
        return "member name contains a NUL byte"
    if "\\" in name:
        return "member name contains a backslash (zip names use '/')"
    if name.startswith("/"):
        return "absolute member name (outside the wheel: not read)"
    if _DRIVE.match(name):
        return "member name starts with a drive letter (outside the wheel: not read)"
    parts = name.split("/")
    if ".." in parts:
        return "member name contains '..' (path traversal: not read)"
    body = parts[:-1] if name.endswith("/") else parts  # a directory entry ends with one '/'
    if "" in body:
        return "member name contains an empty component ('//')"
    if "." in body:
        return "member name contains a '.' component"
    return None


class _Decompressor:
    """One member's data stream, decompressed in bounded steps (max_length on every call:
    zipfile's own reader asks bzip2 and LZMA for everything a chunk holds, gigabytes for a bomb)."""

    def __init__(self, method: int, fd: int, start: int, size: int) -> None:
        self._method = method
        self._fd = fd
        self._pos = start
        self._left = size  # compressed bytes not read yet
        self.eof = False
        self._dec: Any = None
        if method == zipfile.ZIP_DEFLATED:
            self._dec = zlib.decompressobj(-15)
        elif method == zipfile.ZIP_BZIP2:
            self._dec = bz2.BZ2Decompressor()
        elif method == zipfile.ZIP_LZMA:
            # zip's LZMA: version (2 bytes), properties size (2), properties, raw LZMA1 stream.
            head = self._raw(4)
            if len(head) < 4:
                raise ValueError("LZMA header truncated")
            (psize,) = struct.unpack("<H", head[2:4])
            props = self._raw(psize)
            if len(props) < psize:
                raise ValueError("LZMA properties truncated")
            filters = [lzma._decode_filter_properties(lzma.FILTER_LZMA1, props)]  # type: ignore[attr-defined]
            self._dec = lzma.LZMADecompressor(lzma.FORMAT_RAW, filters=filters)

    def _raw(self, n: int) -> bytes:
        n = min(n, self._left)
        data = os.pread(self._fd, n, self._pos) if n > 0 else b""
        self._pos += len(data)
        self._left = 0 if len(data) < n else self._left - len(data)
        return data

    def read(self, n: int) -> bytes:
        """Up to n more uncompressed bytes (b"" at the end of the stream or of the data)."""
        if self.eof:
            return b""
        if self._method == zipfile.ZIP_STORED:
            data = self._raw(n)
            self.eof = not data
            return data
        dec = self._dec
        while True:
            if self._method == zipfile.ZIP_DEFLATED:
                feed = dec.unconsumed_tail or self._raw(_CHUNK)
            elif dec.needs_input:
                feed = self._raw(_CHUNK)
                if not feed:
                    self.eof = True  # the data ended inside the stream
                    return b""
            else:
                feed = b""  # output still buffered inside the decompressor
            out: bytes = dec.decompress(feed, n)
            if dec.eof:
                self.eof = True
                return out
            if out:
                return out
            if not feed and self._method == zipfile.ZIP_DEFLATED:
                self.eof = True
                return b""


class WheelOverlay(OSFileSystem):
    """A wheel's members appear under `mount` (e.g. an environment's site-packages).

    The wheel is an untrusted container: members with a name that is not a plain relative
    path (empty, '..', absolute, drive letters, '//', './', NUL, backslashes), duplicate
    names, overlapping data, encryption or an unknown compression method are never read and
    are listed in `errors`; members are decompressed in bounded steps, within `limits`, and
    a member that cannot be decompressed is listed there too (its reads raise
    InputFormatError). Everything else falls through to the real filesystem.
    """

    def __init__(self, wheel_path: str, mount: str, limits: WheelLimits | None = None) -> None:
        self.wheel_path = wheel_path
        self.mount = mount.rstrip("/")
        self.limits = limits if limits is not None else WheelLimits()
        try:
            # Opened through the regular-file opener (a FIFO swapped in after the target check
            # must not block); zipfile then reads from that descriptor and close() closes it.
            self._file = open_regular(wheel_path)
            try:
                self._zip = zipfile.ZipFile(self._file)
            except BaseException:
                self._file.close()
                raise
            infos = self._zip.infolist()
            self._size = os.fstat(self._zip.fp.fileno()).st_size  # type: ignore[union-attr]
        except (zipfile.BadZipFile, OSError, ValueError, EOFError, NotImplementedError, struct.error) as exc:
            raise InputFormatError(wheel_path, f"not a valid wheel (zip): {exc}") from None
        self.members: dict[str, zipfile.ZipInfo] = {}
        self.dirs: dict[str, set[str]] = {}
        self.errors: dict[str, str] = {}  # member name -> why it is not (fully) read, in order
        self.failed: set[str] = set()  # virtual paths of members listed in `errors`
        self._charged: dict[str, int] = {}  # member name -> bytes decompressed (counted once)
        self._total = 0
        for info, problem in self._validate(infos).items():
            self.errors.setdefault(info.orig_filename, problem)
        for info in infos:
            if info.orig_filename in self.errors or info.is_dir():
                continue
            virtual = f"{self.mount}/{info.filename}"
            self.members[virtual] = info
            parent, _, name = virtual.rpartition("/")
            while parent.startswith(self.mount):
                self.dirs.setdefault(parent, set()).add(name)
                parent, _, name = parent.rpartition("/")

    def _validate(self, infos: list[zipfile.ZipInfo]) -> dict[zipfile.ZipInfo, str]:
        """The members never read, and why: names, duplicates, methods, overlapping data."""
        bad: dict[zipfile.ZipInfo, str] = {}
        copies = Counter(i.filename.rstrip("/") for i in infos)
        for info in infos:
            # zipfile cuts names at a NUL byte; orig_filename keeps what the header says.
            problem = member_name_problem(info.orig_filename)
            if problem is None and copies[info.filename.rstrip("/")] > 1:
                problem = "duplicate member name (which copy an installer keeps is not defined: neither is read)"
            if problem is None and info.flag_bits & 0x1:
                problem = "encrypted member (not read)"
            if problem is None and info.compress_type not in _METHODS:
                problem = f"unsupported compression method {info.compress_type} (not read)"
            if problem is not None:
                bad[info] = problem
        # Overlapping data ("overlapping files" zip bombs): each member's local header and
        # data must end before the next member's header and the central directory begin.
        ordered = sorted((i for i in infos if i not in bad), key=lambda i: i.header_offset)
        end_of_data = getattr(self._zip, "start_dir", self._size)
        for info, nxt in zip(ordered, [*ordered[1:], None]):
            limit = nxt.header_offset if nxt is not None else end_of_data
            needed = 30 + len(info.orig_filename.encode("utf-8" if info.flag_bits & 0x800 else "cp437", "replace"))
            if info.header_offset + needed + info.compress_size > limit:
                other = f"member {_shown(nxt.orig_filename)}" if nxt is not None else "the central directory"
                bad[info] = (f"its data ({info.compress_size} bytes at offset {info.header_offset}) overlaps "
                             f"{other} (an overlapping-files zip bomb, or a corrupt wheel): not read")
        return bad

    def close(self) -> None:
        """Close the zip file."""
        self._zip.close()
        self._file.close()

    def error_lines(self) -> list[str]:
        """One line per member not (fully) read: `WHEEL: member 'NAME': reason`."""
        return [f"{self.wheel_path}: member {_shown(name)}: {reason}" for name, reason in self.errors.items()]

    def _member(self, path: str) -> zipfile.ZipInfo | None:
        return self.members.get(os.path.normpath(path))

    def _fail(self, info: zipfile.ZipInfo, reason: str) -> InputFormatError:
        """Record a member that cannot be read; the error its reads raise."""
        self.errors.setdefault(info.orig_filename, reason)
        self.failed.add(f"{self.mount}/{info.filename}")
        return InputFormatError(f"{self.wheel_path}:{info.filename}", self.errors[info.orig_filename])

    def _allow(self, info: zipfile.ZipInfo, want: int) -> None:
        """Check the member's claimed size against the budgets before a byte is decompressed."""
        limits = self.limits
        if info.file_size > limits.member_bytes:
            raise self._fail(info, f"its header claims {info.file_size} bytes uncompressed, over the per-member "
                                   f"budget of {limits.member_bytes} (--max-member-size): not read")
        allowed = max(limits.ratio * info.compress_size, RATIO_EXEMPT_BYTES)
        if info.file_size > allowed:
            ratio = info.file_size / max(info.compress_size, 1)
            raise self._fail(info, f"compression ratio {ratio:.0f}:1 ({info.compress_size} bytes claiming "
                                   f"{info.file_size}), over the limit of {limits.ratio:g}:1 (--max-ratio): not read")
        more = want - self._charged.get(info.orig_filename, 0)
        if more > 0 and self._total + more > limits.wheel_bytes:
            raise self._fail(info, f"reading its {want} bytes would take the wheel past the per-wheel budget of "
                                   f"{limits.wheel_bytes} bytes decompressed (--max-wheel-size): not read")

    def read(self, path: str, limit: int | None = None) -> bytes:
        """A member's bytes (the first `limit`, or all), decompressed within the budgets;
        InputFormatError (recorded in `errors`) for corrupt, lying or over-budget members."""
        info = self._member(path)
        if info is None:
            raise FileNotFoundError(2, "No such file or directory", path)
        if info.orig_filename in self.errors:
            raise InputFormatError(f"{self.wheel_path}:{info.filename}", self.errors[info.orig_filename])
        whole = limit is None or limit >= info.file_size
        want = info.file_size if limit is None else min(limit, info.file_size)
        self._allow(info, want)
        method = _METHODS[info.compress_type]
        try:
            data = self._decompress(info, want, whole)
        except (zlib.error, lzma.LZMAError, OSError, EOFError, ValueError, struct.error) as exc:
            raise self._fail(info, f"cannot decompress ({method}): {exc}") from None
        charged = self._charged.get(info.orig_filename, 0)
        if len(data) > charged:
            self._total += len(data) - charged
            self._charged[info.orig_filename] = len(data)
        return data

    def _local_data_start(self, info: zipfile.ZipInfo) -> int:
        """Where the member's data begins, from its local header (checked against the directory)."""
        fh = self._zip.fp
        assert fh is not None
        header = os.pread(fh.fileno(), 30, info.header_offset)
        if len(header) < 30 or header[:4] != b"PK\x03\x04":
            raise ValueError(f"no local file header at offset {info.header_offset}")
        name_len, extra_len = struct.unpack("<HH", header[26:30])
        name = os.pread(fh.fileno(), name_len, info.header_offset + 30)
        if name.decode("utf-8" if info.flag_bits & 0x800 else "cp437", "replace") != info.orig_filename:
            raise ValueError("the local header names another member (the central directory lies)")
        start = info.header_offset + 30 + name_len + extra_len
        if start + info.compress_size > self._size:
            raise ValueError(f"its data ({info.compress_size} bytes at offset {start}) runs past the end of the wheel")
        return start

    def _decompress(self, info: zipfile.ZipInfo, want: int, whole: bool) -> bytes:
        """Decompress `want` bytes in steps; for a whole member also check its size and CRC."""
        method = _METHODS[info.compress_type]
        start = self._local_data_start(info)
        assert self._zip.fp is not None
        stream = _Decompressor(info.compress_type, self._zip.fp.fileno(), start, info.compress_size)
        chunks: list[bytes] = []
        got = 0
        while got < want:
            piece = stream.read(min(_CHUNK, want - got))
            if not piece:
                break
            chunks.append(piece)
            got += len(piece)
        if got < want:
            raise self._fail(info, f"its data ends after {got} bytes uncompressed, its header says {info.file_size} "
                                   f"(a size that lies, or a truncated {method} stream)")
        data = b"".join(chunks)
        if whole:
            if stream.read(1):
                raise self._fail(info, f"it holds more than the {info.file_size} bytes its header says "
                                       "(a size that lies): not read")
            if zlib.crc32(data) != info.CRC:
                raise self._fail(info, f"bad CRC-32 (corrupt {method} data, or a size that lies)")
        return data

    def head(self, path: str, size: int) -> bytes:
        if self._member(path) is not None:
            return self.read(path, size)
        return super().head(path, size)

    def key(self, path: str) -> tuple[object, ...]:
        if self._member(path) is not None:
            return ("wheel", self.wheel_path, os.path.normpath(path))
        return super().key(path)

    @contextmanager
    def open_elf(self, path: str) -> Iterator[ElfFile]:
        if self._member(path) is None:
            with super().open_elf(path) as elf:
                yield elf
            return
        yield ElfFile.from_bytes(self.read(path), f"{self.wheel_path}:{path[len(self.mount) + 1:]}")

    def listdir(self, path: str) -> list[str]:
        names = set(self.dirs.get(os.path.normpath(path), ()))
        try:
            names.update(super().listdir(path))
        except OSError:
            if not names:
                raise
        return sorted(names)

    def is_file(self, path: str) -> bool:
        return self._member(path) is not None or super().is_file(path)

    def virtual_files(self) -> list[str]:
        """Every member's virtual path."""
        return sorted(self.members)
