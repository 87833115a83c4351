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


class StringTable:
    """A NUL-terminated string table inside a larger buffer, decoded only when asked."""

    __slots__ = ("_nul_positions", "_raw", "size", "start")

    def __init__(self, raw: RawBuffer, start: int, size: int) -> None:
        self._raw = raw
        self.start = start
        self.size = size
        self._nul_positions: np.ndarray | None = None

    def get_bytes(self, offset: int) -> bytes:
        """The raw bytes of the string at `offset` (without the NUL)."""
        if offset < 0 or offset >= self.size:
            return b""
        begin = self.start + offset
        end_of_table = self.start + self.size
        end = self._raw.find(b"\0", begin, end_of_table)
        if end < 0:
            end = end_of_table
        return self._raw[begin:end]

    def get(self, offset: int) -> str:
        """The string at `offset`, decoded (undecodable bytes kept via surrogateescape)."""
        return self.get_bytes(offset).decode("utf-8", "surrogateescape")

    def _nuls(self) -> np.ndarray:
        if self._nul_positions is None:
            buffer: Any = getattr(self._raw, "buffer", self._raw)
            table = np.frombuffer(buffer, dtype=np.uint8, count=self.size, offset=self.start)
            nuls = np.flatnonzero(table == 0).astype(np.int32 if self.size < 2**31 else np.int64)
            # A table not ending in NUL: treat its end as the terminator, like readelf does.
            self._nul_positions = np.append(nuls, np.array([self.size], dtype=nuls.dtype))
        return self._nul_positions

    def _bounds(self, offsets: np.ndarray | Sequence[int]) -> tuple[list[int], list[int]]:
        """Absolute (start, end) of each string, found with one vectorised search."""
        offs = np.asarray(offsets, dtype=np.int64)
        if offs.size == 0:
            return [], []
        nuls = self._nuls()
        clipped = np.clip(offs, 0, self.size)
        ends = nuls[np.minimum(np.searchsorted(nuls, clipped), len(nuls) - 1)]
        return (clipped + self.start).tolist(), (ends + self.start).tolist()

    def get_many_bytes(self, offsets: np.ndarray | Sequence[int]) -> list[bytes]:
        """Many strings at once, as raw bytes."""
        raw = self._raw
        starts, ends = self._bounds(offsets)
        return [raw[s:e] for s, e in zip(starts, ends)]

    def get_many(self, offsets: np.ndarray | Sequence[int]) -> list[str]:
        """Many strings at once, decoded; bounds are computed in chunks to keep peak memory
        close to the size of the names themselves."""
        raw = self._raw
        offs = np.asarray(offsets, dtype=np.int64)
        result: list[str] = []
        for at in range(0, offs.size, _CHUNK):
            starts, ends = self._bounds(offs[at : at + _CHUNK])
            result.extend(
                raw[s:e].decode("utf-8", "surrogateescape") for s, e in zip(starts, ends)
            )
        return result


class ViewBuffer:
    """Adapts a memoryview (e.g. an archive member) to the RawBuffer interface."""

    __slots__ = ("buffer",)

    def __init__(self, view: memoryview) -> None:
        self.buffer = view.cast("B") if view.format != "B" or view.ndim != 1 else view

    def __getitem__(self, key: slice, /) -> bytes:
        return bytes(self.buffer[key])

    def find(self, sub: bytes, start: int = 0, end: int | None = None, /) -> int:
        stop = len(self.buffer) if end is None else min(end, len(self.buffer))
        if start >= stop:
            return -1
        if len(sub) == 1:
            chunk = np.frombuffer(self.buffer[start:stop], dtype=np.uint8)
            hits = np.flatnonzero(chunk == sub[0])
            return int(hits[0]) + start if hits.size else -1
        pos = bytes(self.buffer[start:stop]).find(sub)
        return pos + start if pos >= 0 else -1

    def __len__(self) -> int:
        return len(self.buffer)
