"""Binding as array operations: which of a file's references another file satisfies.

A scan binds hundreds of thousands of references (every test program of a PyTorch wheel
against libtorch_cpu's 75,000 exports). Doing that one reference at a time in Python was
most of a scan's time, so names are interned to integers once per file and check_match is
evaluated over whole arrays; only names a file defines more than once (several versions of
one symbol) go through the reference-at-a-time `match_in_object`.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

# DefinitionArrays.single_version markers (version ids are >= 0).
ANY_VERSION = -2
NO_VERSION = -3


class NameTable:
    """Symbol and version names → integers for the files of one image cache (one scan):
    the table lives as long as the images whose arrays use it, not the process.

    Forked workers inherit and extend their own copy; only per-file boolean results cross
    process boundaries, never the integers.
    """

    __slots__ = ("_names", "_next_id", "_versions")

    def __init__(self) -> None:
        self._names: dict[str, int] = {}
        self._versions: dict[str, int] = {}
        self._next_id = itertools.count()

    def intern(self, names: Sequence[str]) -> np.ndarray:
        """Integer ids for names (equal names, equal ids), in one C-level pass.

        setdefault offers every name the next number of a shared counter and keeps the
        first one a name got: ids are unique but not dense, and nothing runs per name in
        Python.
        """
        return np.fromiter(map(self._names.setdefault, names, self._next_id), dtype=np.int64,
                           count=len(names))

    def id_of(self, name: str) -> int | None:
        """The id of a name already interned, None if no file seen so far has it."""
        return self._names.get(name)

    def version_id(self, name: str | None) -> int:
        """Integer id of a version name; -1 for none."""
        if name is None:
            return -1
        return self._versions.setdefault(name, len(self._versions))

    def version_lut(self, names_by_index: dict[int, str]) -> np.ndarray:
        """versym index → version id (-1 where the index names nothing)."""
        size = max(names_by_index, default=0) + 1
        lut = np.full(max(size, 2), -1, dtype=np.int32)
        for index, name in names_by_index.items():
            if index >= 0:
                lut[index] = self.version_id(name)
        return lut


@dataclass(frozen=True, slots=True)
class ReferenceArrays:
    """One file's relocation-referenced symbols that are errors when nothing binds them (not
    weak; undefined, or the target of a copy relocation), one entry per reference."""

    name_ids: np.ndarray  # int64
    version_ids: np.ndarray  # int32, -1: unversioned
    plt: np.ndarray  # bool: referenced by PLT relocations only
    copy: np.ndarray  # bool: the target of a copy relocation
    positions: np.ndarray  # int64: each one's index in ElfImage.references


@dataclass(frozen=True, slots=True)
class DefinitionArrays:
    """One file's definitions grouped by name: for each distinct name (sorted by id) where
    its definitions start in the per-definition arrays (dynsym order within a name)."""

    unique_ids: np.ndarray  # int64, sorted
    first: np.ndarray  # int64 start of each name's run in the per-definition arrays
    count: np.ndarray  # int64 definitions of that name
    symbol_index: np.ndarray  # int64 dynsym index of each definition
    # Per distinct name, check_match's answer when the name has one definition:
    single: np.ndarray  # bool: exactly one definition
    single_plt_canonical: np.ndarray  # bool: ... and it is a canonical PLT entry
    single_version: np.ndarray  # int32: version a versioned reference must have; ANY_VERSION
    #   (unversioned, not hidden: every version matches) or NO_VERSION (matches none)
    single_unversioned_ok: np.ndarray  # bool: ... and an unversioned reference accepts it

    @classmethod
    def build(cls, name_ids: np.ndarray, symbol_index: np.ndarray, versym: np.ndarray,
              version_names: dict[int, str], undefined: np.ndarray, table: NameTable) -> DefinitionArrays:
        """From the defined entries' name ids and dynsym indices, and the file's version data."""
        order = np.argsort(name_ids, kind="stable")
        ids = name_ids[order]
        index = symbol_index[order]
        if ids.size:
            starts = np.flatnonzero(np.concatenate(([True], ids[1:] != ids[:-1])))
        else:
            starts = np.zeros(0, dtype=np.int64)
        counts = np.diff(np.append(starts, ids.size))
        raw = versym[index].astype(np.int64)
        ndx = raw & 0x7FFF
        lut = table.version_lut(version_names)
        inside = ndx < lut.size
        # -1 where ld.so sees no version (l_versions has none for the index)
        vids = np.full(index.size, -1, dtype=np.int32)
        vids[inside] = lut[ndx[inside]]
        hidden = (raw & 0x8000) != 0
        later = ndx >= 3
        plt_canonical = undefined[index]
        # Versioned reference: the same version, or a definition with none that is not hidden.
        wanted = np.where(vids >= 0, vids, np.where(hidden, NO_VERSION, ANY_VERSION)).astype(np.int32)
        return cls(ids[starts], starts.astype(np.int64), counts.astype(np.int64), index,
                   counts == 1, plt_canonical[starts], wanted[starts],
                   # Unversioned reference: the base version, or the one non-hidden later version.
                   ~later[starts] | ~hidden[starts])


def satisfied(refs: ReferenceArrays, defs: DefinitionArrays, has_versym: bool, same_file: bool,
              match_many: Callable[[int, int, int], bool]) -> np.ndarray:
    """For each reference: does this file have a definition check_match accepts?

    `match_many(reference, first, count)` decides names defined more than once, in the
    reference-at-a-time model; everything else is decided here as array operations,
    exactly as `binding.match_in_object` decides a single candidate.
    """
    result = np.zeros(refs.name_ids.size, dtype=bool)
    if not refs.name_ids.size or not defs.unique_ids.size:
        return result
    pos = np.searchsorted(defs.unique_ids, refs.name_ids)
    np.minimum(pos, defs.unique_ids.size - 1, out=pos)
    hit = defs.unique_ids[pos] == refs.name_ids
    single = defs.single[pos]
    # A canonical PLT entry never satisfies a PLT lookup.
    result = hit & single & ~(defs.single_plt_canonical[pos] & refs.plt)
    if has_versym:
        wanted = defs.single_version[pos]
        versioned_ok = (wanted == refs.version_ids) | (wanted == ANY_VERSION)
        result &= np.where(refs.version_ids >= 0, versioned_ok, defs.single_unversioned_ok[pos])
    many = np.flatnonzero(hit & ~single)
    if many.size:
        first = defs.first[pos[many]].tolist()
        counts = defs.count[pos[many]].tolist()
        for ref_index, start, count in zip(many.tolist(), first, counts):
            result[ref_index] = match_many(ref_index, start, count)
    if same_file:
        result &= ~refs.copy  # a copy relocation never binds to the program's own copy
    return result
