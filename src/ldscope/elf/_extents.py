"""Which bytes of a file are really on disk: the data extents of a sparse file.

A file can claim a gigabyte and hold twenty kilobytes (`truncate -s 1G`): the rest are holes
that read as zeros. Tables read from holes cost memory and time for bytes nobody wrote, so
the readers ask, before building a big table, how much of it is really there.
"""

from __future__ import annotations

import errno
import os

import numpy as np

from ldscope.elf._regular import open_regular_fd
from ldscope.errors import InputFormatError

# A table at least this big (bytes) whose holes are more than half of it is refused: below
# it nothing costs enough to matter, and no linker writes a table that is mostly zero pages.
SPARSE_MIN_BYTES = 1 << 20
# Extents walked at most (two lseek calls each); past that the rest of the file counts as data.
_MAX_EXTENTS = 1 << 16


class DataExtents:
    """The [start, end) byte ranges of a file that hold data (everything else is a hole)."""

    __slots__ = ("_before", "_ends", "_starts")

    def __init__(self, starts: list[int], ends: list[int]) -> None:
        self._starts = np.array(starts, dtype=np.int64)
        self._ends = np.array(ends, dtype=np.int64)
        # Data bytes before each extent, for data_bytes in two binary searches.
        lengths = self._ends - self._starts
        self._before = np.concatenate(([0], np.cumsum(lengths))).astype(np.int64)

    def _data_below(self, at: int) -> int:
        """Data bytes in [0, at)."""
        i = int(np.searchsorted(self._starts, at, side="right"))  # extents starting before `at`
        if i == 0:
            return 0
        inside = min(at, int(self._ends[i - 1])) - int(self._starts[i - 1])
        return int(self._before[i - 1]) + max(inside, 0)

    def data_bytes(self, start: int, end: int) -> int:
        """How many bytes of [start, end) are data, not holes."""
        if end <= start:
            return 0
        return self._data_below(end) - self._data_below(start)


def data_extents(fd: int, st: os.stat_result) -> DataExtents | None:
    """The data extents of an open regular file, or None when it has no holes worth
    knowing about (its allocated blocks cover its size, or SEEK_DATA is unsupported)."""
    size = st.st_size
    if size < SPARSE_MIN_BYTES or getattr(st, "st_blocks", size) * 512 >= size:
        return None
    starts: list[int] = []
    ends: list[int] = []
    pos = 0
    try:
        while pos < size and len(starts) < _MAX_EXTENTS:
            try:
                start = os.lseek(fd, pos, os.SEEK_DATA)
            except OSError as exc:
                if exc.errno == errno.ENXIO:
                    break  # only holes from pos to the end
                raise
            end = os.lseek(fd, start, os.SEEK_HOLE)
            starts.append(start)
            ends.append(min(end, size))
            pos = end
        else:
            if pos < size:
                starts.append(pos)
                ends.append(size)
    except (OSError, AttributeError):
        return None  # no SEEK_DATA here: every byte counts as data
    finally:
        try:
            os.lseek(fd, 0, os.SEEK_SET)
        except OSError:
            pass
    return DataExtents(starts, ends)


def check_on_disk(extents: DataExtents | None, file: str, what: str, start: int, nbytes: int,
                  count: int, report_offset: int) -> None:
    """Raise InputFormatError when a big table at [start, start+nbytes) is mostly holes."""
    if extents is None or nbytes < SPARSE_MIN_BYTES:
        return
    data = extents.data_bytes(start, start + nbytes)
    if data * 2 >= nbytes:
        return
    entries = f"{count:,} entries ({nbytes:,} bytes)" if count != nbytes else f"{nbytes:,} bytes"
    raise InputFormatError(
        file,
        f"{what} claims {entries} but only {data:,} bytes of it are on disk "
        "(the rest are holes of a sparse file)",
        report_offset,
    )


def path_extents(path: str) -> DataExtents | None:
    """data_extents of the regular file at `path` (None if it cannot be opened or has no holes)."""
    try:
        fd = open_regular_fd(path)
    except (OSError, ValueError):
        return None
    try:
        return data_extents(fd, os.fstat(fd))
    except OSError:
        return None
    finally:
        os.close(fd)
