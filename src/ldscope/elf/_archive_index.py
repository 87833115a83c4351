"""The archive reader with its GNU symbol index decoded in bulk (numpy) and mapped lazily.

The link engines walk `index_entries` in order and rarely need the name -> members map, so
building it for 100k symbols up front is wasted; everything else is ldscope.elf._archive's.
Inconsistent indexes fall back to the base reader, which reports them precisely.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

import numpy as np

from ldscope.elf._archive import Archive
from ldscope.elf._extents import check_on_disk


class _LazyIndex(Mapping[str, tuple[int, ...]]):
    """symbol -> member indices, built from the entries on first use."""

    def __init__(self, entries: tuple[tuple[str, int], ...]) -> None:
        self._entries = entries
        self._map: dict[str, tuple[int, ...]] | None = None

    def _built(self) -> dict[str, tuple[int, ...]]:
        if self._map is None:
            acc: dict[str, dict[int, None]] = {}
            for sym, m in self._entries:
                acc.setdefault(sym, {})[m] = None
            self._map = {k: tuple(v) for k, v in acc.items()}
        return self._map

    def __getitem__(self, key: str) -> tuple[int, ...]:
        return self._built()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._built())

    def __len__(self) -> int:
        return len(self._built())


class IndexedArchive(Archive):
    """An Archive whose GNU (`/`, `/SYM64/`) index is read with numpy."""

    def _read_index(self, buf: memoryview, fmt: str, start: int, size: int,
                    offset_to_member: dict[int, int]) -> None:
        if fmt not in ("gnu", "gnu64"):
            super()._read_index(buf, fmt, start, size, offset_to_member)
            return
        check_on_disk(self._extents, self.name, "symbol index", start, size, size, start)
        table = bytes(buf[start:start + size])
        width = 8 if fmt == "gnu64" else 4
        count = int.from_bytes(table[:width], "big") if len(table) >= width else -1
        names = table[width + max(count, 0) * width:].split(b"\0", max(count, 0))
        if count < 0 or count > (len(table) - width) // width or len(names) <= count or not offset_to_member:
            super()._read_index(buf, fmt, start, size, offset_to_member)
            return
        offs = np.frombuffer(table, dtype=">u8" if width == 8 else ">u4", count=count, offset=width)
        keys = np.fromiter(sorted(offset_to_member), dtype=np.int64, count=len(offset_to_member))
        vals = np.array([offset_to_member[int(k)] for k in keys], dtype=np.int64)
        pos = np.minimum(np.searchsorted(keys, offs), len(keys) - 1)
        if count and not bool(np.all(keys[pos] == offs)):
            super()._read_index(buf, fmt, start, size, offset_to_member)
            return
        decoded = [n.decode("utf-8", "surrogateescape") for n in names[:count]]
        self.has_index = True
        self.index_format = fmt
        self.index_entries = tuple(zip(decoded, vals[pos].tolist()))
        self.index = _LazyIndex(self.index_entries)
