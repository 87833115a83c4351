"""The dynamic section, decoded: NEEDED, SONAME, search paths, flags and table addresses."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ldscope.elf import constants as C


@dataclass(frozen=True, slots=True)
class DynamicInfo:
    """What the dynamic section says, in file order where order matters (NEEDED)."""

    needed: tuple[str, ...]
    soname: str | None
    rpath: tuple[str, ...]
    runpath: tuple[str, ...]
    flags: int
    flags_1: int
    bind_now: bool
    has_hash: bool
    has_gnu_hash: bool
    entry_count: int
    # Raw tag → value (first occurrence) for everything else a caller may want.
    tags: dict[int, int] = field(default_factory=dict)
    rpath_raw: str | None = None
    runpath_raw: str | None = None
    filters: tuple[str, ...] = ()
    auxiliary: tuple[str, ...] = ()

    @property
    def now(self) -> bool:
        """True if every reference binds at load (DT_BIND_NOW, DF_BIND_NOW or DF_1_NOW)."""
        return self.bind_now or bool(self.flags & C.DF_BIND_NOW) or bool(self.flags_1 & C.DF_1_NOW)

    @property
    def nodeflib(self) -> bool:
        """True if DF_1_NODEFLIB: ld.so.cache and default dirs are skipped for this object."""
        return bool(self.flags_1 & C.DF_1_NODEFLIB)

    @property
    def pie(self) -> bool:
        """True if DF_1_PIE."""
        return bool(self.flags_1 & C.DF_1_PIE)

    def flag_names(self) -> list[str]:
        """DT_FLAGS bit names."""
        return [n for bit, n in C.DF_FLAG_NAMES.items() if self.flags & bit]

    def flag_1_names(self) -> list[str]:
        """DT_FLAGS_1 bit names."""
        return [n for bit, n in C.DF_1_FLAG_NAMES.items() if self.flags_1 & bit]


def split_search_path(value: str | None) -> tuple[str, ...]:
    """Split an RPATH/RUNPATH string on ':' as ld.so does.

    An empty element stays "": glibc's fillin_rpath gives it an empty directory name, so
    the bare file name is tried (relative to the current directory), not "./name".
    """
    if value is None:
        return ()
    return tuple(value.split(":"))


def decode_dynamic(entries: np.ndarray, get_string: object) -> DynamicInfo:
    """Decode an array of dynamic entries (stopping at DT_NULL) with a string lookup."""
    tags = entries["d_tag"]
    vals = entries["d_val"]
    null_at = np.flatnonzero(tags == C.DT_NULL)
    count = int(null_at[0]) if null_at.size else len(tags)
    tags_list = tags[:count].tolist()
    vals_list = vals[:count].tolist()
    first: dict[int, int] = {}
    needed_offsets: list[int] = []
    filter_offsets: list[int] = []
    aux_offsets: list[int] = []
    for tag, val in zip(tags_list, vals_list):
        if tag == C.DT_NEEDED:
            needed_offsets.append(val)
        elif tag == C.DT_FILTER:
            filter_offsets.append(val)
        elif tag == C.DT_AUXILIARY:
            aux_offsets.append(val)
        first.setdefault(tag, val)
    getter = get_string  # callable(int) -> str, resolved lazily by the caller's string table
    assert callable(getter)
    needed = tuple(getter(o) for o in needed_offsets)
    soname = getter(first[C.DT_SONAME]) if C.DT_SONAME in first else None
    rpath_raw = getter(first[C.DT_RPATH]) if C.DT_RPATH in first else None
    runpath_raw = getter(first[C.DT_RUNPATH]) if C.DT_RUNPATH in first else None
    return DynamicInfo(
        needed=needed,
        soname=soname,
        rpath=split_search_path(rpath_raw),
        runpath=split_search_path(runpath_raw),
        flags=first.get(C.DT_FLAGS, 0),
        flags_1=first.get(C.DT_FLAGS_1, 0),
        bind_now=C.DT_BIND_NOW in first,
        has_hash=C.DT_HASH in first,
        has_gnu_hash=C.DT_GNU_HASH in first,
        entry_count=count,
        tags=first,
        rpath_raw=rpath_raw,
        runpath_raw=runpath_raw,
        filters=tuple(getter(o) for o in filter_offsets),
        auxiliary=tuple(getter(o) for o in aux_offsets),
    )
