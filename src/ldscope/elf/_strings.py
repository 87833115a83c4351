"""String tables: names decoded lazily, one at a time or in bulk through numpy."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

import numpy as np


class RawBuffer(Protocol):
    """What the readers need of a buffer: mmap and bytes both qualify."""

    def __getitem__(self, key: slice, /) -> bytes: ...
    def find(self, sub: bytes, start: int = ..., end: int = ..., /) -> int: ...
    def __len__(self) -> int: ...


_CHUNK = 1024
# get_many decodes the whole table at once when at least this many names are asked for and
# they average fewer than this many table bytes each (i.e. they are much of the table).
_BULK_MIN_NAMES = 64
_BULK_BYTES_PER_NAME = 256
_BULK_CHUNK = 1 << 14
_NAME_WINDOW = 1 << 16


class StringTable:
    """A NUL-terminated string table inside a larger buffer, decoded only when asked."""

    __slots__ = ("_nul_positions", "_raw", "size", "start")

    def __init__(self, raw: RawBuffer, start: int, size: int) -> None:
        self._raw = raw
        self.start = start
        self.size = size
        self._nul_positions: np.ndarray | None = None

    def _end(self, begin: int) -> int:
        """Absolute end of the string starting at absolute `begin` (its NUL, or the table end)."""
        end_of_table = self.start + self.size
        # Search a bounded window first: a name has no reason to be longer, and an
        # unterminated table must not make every lookup scan to its end.
        window = min(end_of_table, begin + _NAME_WINDOW)
        end = self._raw.find(b"\0", begin, window)
        if end >= 0:
            return end
        if window == end_of_table:
            return end_of_table
        nuls = self._nuls()
        i = int(np.searchsorted(nuls, begin - self.start))
        return self.start + int(nuls[min(i, len(nuls) - 1)])

    def get_bytes(self, offset: int) -> bytes:
        """The raw bytes of the string at `offset` (without the NUL)."""
        if offset < 0 or offset >= self.size:
            return b""
        begin = self.start + offset
        # The bounded search of _end, inlined: every version and library name comes here.
        end = self._raw.find(b"\0", begin, min(self.start + self.size, begin + _NAME_WINDOW))
        return self._raw[begin : end if end >= 0 else self._end(begin)]

    def get(self, offset: int) -> str:
        """The string at `offset`, decoded (undecodable bytes kept via surrogateescape)."""
        return self.get_bytes(offset).decode("utf-8", "surrogateescape")

    def _nuls(self) -> np.ndarray:
        """Offsets of every NUL (plus the table end); only for names longer than the window."""
        if self._nul_positions is None:
            buffer: Any = getattr(self._raw, "buffer", self._raw)
            origin = getattr(self._raw, "origin", 0)  # a SpanBuffer's first byte's offset
            table = np.frombuffer(buffer, dtype=np.uint8, count=self.size, offset=self.start - origin)
            nuls = np.flatnonzero(table == 0).astype(np.int32 if self.size < 2**31 else np.int64)
            self._nul_positions = np.append(nuls, np.array([self.size], dtype=nuls.dtype))
        return self._nul_positions

    def get_many(self, offsets: np.ndarray | Sequence[int]) -> list[str]:
        """Many strings at once, decoded.

        When the names asked for cover much of the table, the table is decoded and split
        in one C-level pass and each offset picks its piece (about 30x faster than a NUL
        search per name on a 75,000-name libtorch); for a few names out of a large table,
        one bounded search per name keeps memory at the size of those names.
        """
        offs = np.asarray(offsets, dtype=np.int64)
        if offs.size >= _BULK_MIN_NAMES and offs.size * _BULK_BYTES_PER_NAME >= self.size:
            return self._get_many_bulk(offs)
        return self._get_many_each(offs)

    def _get_many_each(self, offs: np.ndarray) -> list[str]:
        raw = self._raw
        base = self.start
        size = self.size
        end_of_table = base + size
        find = raw.find
        result: list[str] = []
        append = result.append
        for at in range(0, offs.size, _CHUNK):
            for o in offs[at : at + _CHUNK].tolist():
                if o < 0 or o >= size:
                    append("")
                    continue
                begin = base + o
                end = find(b"\0", begin, min(end_of_table, begin + _NAME_WINDOW))
                if end < 0:
                    end = self._end(begin)
                append(raw[begin:end].decode("utf-8", "surrogateescape"))
        return result

    def _get_many_bulk(self, offs: np.ndarray) -> list[str]:
        """Decode the table chunk by chunk (each ends at a NUL): split each chunk in one
        C-level pass and give every offset inside it its piece. Only one chunk's pieces
        and the offsets' order are alive besides the result, so memory stays near the
        names themselves."""
        raw = self._raw
        base = self.start
        end = base + self.size
        result = [""] * offs.size
        order = np.argsort(offs, kind="stable")
        sorted_offs = offs[order]
        first = int(np.searchsorted(sorted_offs, 0, side="left"))  # negative offsets stay ""
        pos = base
        while pos < end and first < sorted_offs.size:
            stop = min(end, pos + _BULK_CHUNK)
            if stop < end:
                nul = raw.find(b"\0", stop - 1, end)
                stop = end if nul < 0 else nul + 1
            last = int(np.searchsorted(sorted_offs, stop - base, side="left"))
            if last > first:
                chunk = raw[pos:stop]
                # latin-1 maps byte i to character i: byte offsets index the text directly.
                parts = chunk.decode("latin-1").split("\0")
                starts = np.cumsum(np.fromiter(map(len, parts), dtype=np.int64, count=len(parts)) + 1)
                starts = np.concatenate(([0], starts[:-1]))
                local = sorted_offs[first:last] - (pos - base)
                which = np.searchsorted(starts, local, side="right") - 1
                inside = local - starts[which]
                ascii_only = chunk.isascii()
                for k, w, d in zip(order[first:last].tolist(), which.tolist(), inside.tolist()):
                    piece = parts[w][d:] if d else parts[w]
                    if not ascii_only and not piece.isascii():
                        piece = piece.encode("latin-1").decode("utf-8", "surrogateescape")
                    result[k] = piece
            first = last
            pos = stop
        return result


class ViewBuffer:
    """Adapts a memoryview (e.g. an archive member) to the RawBuffer interface.

    Members are small, so slicing and NUL searches use one bytes copy (C speed); numpy
    views keep using the memoryview (`buffer`) without copying.
    """

    __slots__ = ("_data", "buffer")

    def __init__(self, view: memoryview) -> None:
        self.buffer = view.cast("B") if view.format != "B" or view.ndim != 1 else view
        self._data = bytes(self.buffer)

    def __getitem__(self, key: slice, /) -> bytes:
        return self._data[key]

    def find(self, sub: bytes, start: int = 0, end: int | None = None, /) -> int:
        return self._data.find(sub, start, len(self._data) if end is None else end)

    def __len__(self) -> int:
        return len(self._data)


class SpanBuffer:
    """Bytes copied out of a larger buffer, addressed by their offsets in that buffer: a
    mapped file's string table, copied so that decoding it cannot fault (see `_snapshot`)."""

    __slots__ = ("buffer", "origin")

    def __init__(self, data: bytes, origin: int) -> None:
        self.buffer = data
        self.origin = origin

    def __getitem__(self, key: slice, /) -> bytes:
        start = self.origin if key.start is None else key.start
        stop = self.origin + len(self.buffer) if key.stop is None else key.stop
        return self.buffer[max(start - self.origin, 0) : max(stop - self.origin, 0)]

    def find(self, sub: bytes, start: int = 0, end: int | None = None, /) -> int:
        stop = len(self.buffer) if end is None else end - self.origin
        pos = self.buffer.find(sub, max(start - self.origin, 0), max(stop, 0))
        return pos + self.origin if pos >= 0 else -1

    def __len__(self) -> int:
        return self.origin + len(self.buffer)


class WindowBuffer:
    """A RawBuffer view of [base, base+size) of another buffer, for offset-relative parsers."""

    __slots__ = ("_base", "_raw", "_size")

    def __init__(self, raw: RawBuffer, base: int, size: int) -> None:
        self._raw = raw
        self._base = base
        self._size = size

    def __getitem__(self, key: slice, /) -> bytes:
        start = 0 if key.start is None else key.start
        stop = self._size if key.stop is None else min(key.stop, self._size)
        if start >= stop:
            return b""
        return self._raw[self._base + start : self._base + stop]

    def find(self, sub: bytes, start: int = 0, end: int | None = None, /) -> int:
        stop = self._size if end is None else min(end, self._size)
        pos = self._raw.find(sub, self._base + start, self._base + stop)
        return pos - self._base if pos >= 0 else -1

    def __len__(self) -> int:
        return self._size
