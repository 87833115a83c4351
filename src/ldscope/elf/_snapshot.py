"""A file's bytes that a concurrent truncation cannot turn into SIGBUS: small files read into
memory, large ones mapped with their identity checked before each table is handed out.

Reading through mmap is what keeps large files cheap (a 600 MB libtorch is mostly code that is
never read), but a mapped page past a new end of file raises SIGBUS on access, which kills the
process (exit 135, no message). A Python-level SIGBUS handler cannot help: CPython's C handler
only sets a flag and returns, so the faulting load runs again (forever); recovering would
need a C handler that maps a page over the fault, which a pure-Python package does not have.
So:

* files up to SMALL_FILE_BYTES are read with read() into bytes: nothing can fault, and the
  identity (device, inode, size, mtime, ctime) before and after the read says whether the
  bytes are one state of the file;
* larger files are mapped and keep their descriptor; every table up to COPY_LIMIT_BYTES
  (`ElfFile.array`, `string_table`, `read_bytes`) is read with pread after a fresh fstat has
  matched the identity at mapping time: a read cannot fault, and a file cut short or changed
  is "changed while being read". So are the members of a mapped archive, up to the same size.

The residual window, for mapped files only, is what is still read through the mapping: views
and string tables larger than COPY_LIMIT_BYTES (whole-file views: the GNU hash chain walk,
scattered relocation sections of a relocatable object; a .strtab over 16 MiB), archive
members larger than COPY_LIMIT_BYTES, an archive's header walk and symbol index while it is
opened, and the ELF header's first bytes right after mapping: a truncation during one of
those still faults. (`window()`, for the version tables and notes, reads each slice with
pread too.) An in-place rewrite that keeps the size, inode and timestamps (within one mtime
tick: a few milliseconds) is not seen; the bytes read are then a mix of both versions, which
the readers (fuzzed on arbitrary bytes) reject or read as a file like any other.
"""

from __future__ import annotations

import mmap
import os

from ldscope.errors import InputFormatError

# Files up to this size are read into memory. The cost is one copy of the whole file where a
# map touches only the pages read (headers and dynamic tables, a fraction of a library), and
# memory for the duration of one read (a scan's images keep decoded tables, not the file).
SMALL_FILE_BYTES = 1 << 20

# A mapped file's tables up to this size are read with pread; beyond it (a view to the end of
# a 600 MB file) they stay views of the mapping.
COPY_LIMIT_BYTES = 16 << 20

CHANGED = "changed while being read"


def _identity(st: os.stat_result) -> tuple[int, int, int, int, int]:
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


class FileGuard:
    """The identity of a mapped file at the time it was mapped, checked against a fresh fstat."""

    __slots__ = ("_fd", "_identity", "name")

    def __init__(self, fd: int, name: str, st: os.stat_result) -> None:
        self._fd: int | None = os.dup(fd)
        self._identity = _identity(st)
        self.name = name

    def check(self) -> None:
        """Raise InputFormatError("changed while being read") if the file is not as mapped."""
        if self._fd is None:
            return
        try:
            now = os.fstat(self._fd)
        except OSError:
            raise InputFormatError(self.name, CHANGED) from None
        if _identity(now) != self._identity:
            raise InputFormatError(self.name, CHANGED)

    def read(self, offset: int, length: int) -> bytes:
        """`length` bytes at file offset `offset`, read with pread (a read cannot fault: a file
        cut short gives fewer bytes, which is "changed while being read")."""
        self.check()
        if self._fd is None:
            raise InputFormatError(self.name, "read after close")
        data = os.pread(self._fd, length, offset)
        if len(data) != length:
            raise InputFormatError(self.name, CHANGED)
        return data

    def buffer(self, size: int) -> PreadBuffer:
        """The file's first `size` bytes as a RawBuffer whose every slice is a pread."""
        return PreadBuffer(self, size)

    def close(self) -> None:
        """Release the descriptor (checks then pass: the mapping is being dropped)."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


class PreadBuffer:
    """A RawBuffer over a guarded file: each slice read with pread (for parsers that take a
    few small slices: version tables, notes), so none can fault."""

    __slots__ = ("_guard", "_size")

    def __init__(self, guard: FileGuard, size: int) -> None:
        self._guard = guard
        self._size = size

    def __getitem__(self, key: slice, /) -> bytes:
        start = 0 if key.start is None else max(key.start, 0)
        stop = self._size if key.stop is None else min(key.stop, self._size)
        return self._guard.read(start, stop - start) if start < stop else b""

    def find(self, sub: bytes, start: int = 0, end: int | None = None, /) -> int:
        pos = self[start:end].find(sub)
        return pos + max(start, 0) if pos >= 0 else -1

    def __len__(self) -> int:
        return self._size


def read_or_map(fd: int, name: str, st: os.stat_result) -> tuple[bytes | mmap.mmap, FileGuard | None]:
    """The bytes of the open regular file `fd` (stat `st`, size > 0): read into memory when
    small (no guard needed), else mapped read-only with a guard. OSError propagates."""
    if st.st_size <= SMALL_FILE_BYTES:
        chunks = []
        remaining = st.st_size + 1  # one byte more: a file that grew is seen as changed
        while remaining > 0:
            chunk = os.pread(fd, remaining, st.st_size + 1 - remaining)
            if not chunk:
                break
            chunks.append(chunk)
            remaining -= len(chunk)
        data = b"".join(chunks)  # one chunk: that very object, not a copy
        if len(data) != st.st_size or _identity(os.fstat(fd)) != _identity(st):
            raise InputFormatError(name, CHANGED)
        return data, None
    mm = mmap.mmap(fd, 0, access=mmap.ACCESS_READ)
    guard = FileGuard(fd, name, st)
    if len(mm) != st.st_size:
        guard.close()
        mm.close()
        raise InputFormatError(name, CHANGED)
    try:
        guard.check()
    except InputFormatError:
        guard.close()
        mm.close()
        raise
    return mm, guard
