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

# Process-wide name → integer tables. Forked workers inherit and extend their own copy;
# only the per-file boolean results cross process boundaries, never the integers.
_NAME_IDS: dict[str, int] = {}
_VERSION_IDS: dict[str, int] = {}
_NEXT_ID = itertools.count()


def intern_names(names: Sequence[str]) -> np.ndarray:
    """Integer ids for names (equal names, equal ids), in one C-level pass.

    setdefault offers every name the next number of a shared counter and keeps the first
    one a name got: ids are unique but not dense, and nothing runs per name in Python.
    """
    return np.fromiter(map(_NAME_IDS.setdefault, names, _NEXT_ID), dtype=np.int64, count=len(names))


def name_id_of(name: str) -> int | None:
    """The id of a name already interned, None if no file seen so far has it."""
    return _NAME_IDS.get(name)


def version_id(name: str | None) -> int:
    """Integer id of a version name; -1 for none."""
    if name is None:
        return -1
    return _VERSION_IDS.setdefault(name, len(_VERSION_IDS))


def version_lut(names_by_index: dict[int, str]) -> np.ndarray:
    """versym index → version id (-1 where the index names nothing)."""
    size = max(names_by_index, default=0) + 1
    lut = np.full(max(size, 2), -1, dtype=np.int32)
    for index, name in names_by_index.items():
        if index >= 0:
            lut[index] = version_id(name)
    return lut


@dataclass(frozen=True, slots=True)
class ReferenceArrays:
    """One file's relocation-referenced symbols, one entry per reference."""

    name_ids: np.ndarray  # int64
    version_ids: np.ndarray  # int32, -1: unversioned
    plt: np.ndarray  # bool: referenced by PLT relocations only
    copy: np.ndarray  # bool: the target of a copy relocation
    fails_unbound: np.ndarray  # bool: an error when nothing binds it (not weak; undefined or copy)


@dataclass(frozen=True, slots=True)
class DefinitionArrays:
    """One file's definitions grouped by name: for each distinct name (sorted by id) where
    its definitions start in the per-definition arrays (dynsym order within a name)."""

    unique_ids: np.ndarray  # int64, sorted
    first: np.ndarray  # int64 start of each name's run in the per-definition arrays
    count: np.ndarray  # int64 definitions of that name
    symbol_index: np.ndarray  # int64 dynsym index of each definition
    version_ids: np.ndarray  # int32, -1 where ld.so sees no version (l_versions has none)
    hidden: np.ndarray  # bool: versym hidden bit
    plt_canonical: np.ndarray  # bool: an undefined entry with a value (canonical PLT)
    later_version: np.ndarray  # bool: versym index >= 3

    @classmethod
    def build(cls, name_ids: np.ndarray, symbol_index: np.ndarray, versym: np.ndarray,
              version_names: dict[int, str], undefined: np.ndarray) -> DefinitionArrays:
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
        lut = version_lut(version_names)
        inside = ndx < lut.size
        vids = np.full(index.size, -1, dtype=np.int32)
        vids[inside] = lut[ndx[inside]]
        return cls(ids[starts], starts.astype(np.int64), counts.astype(np.int64), index, vids,
                   (raw & 0x8000) != 0, undefined[index], ndx >= 3)


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
    found = np.flatnonzero(defs.unique_ids[pos] == refs.name_ids)
    if not found.size:
        return result
    first = defs.first[pos[found]]
    single = defs.count[pos[found]] == 1
    r = found[single]
    d = first[single]
    # A canonical PLT entry never satisfies a PLT lookup.
    usable = ~(defs.plt_canonical[d] & refs.plt[r])
    if has_versym:
        ref_version = refs.version_ids[r]
        def_version = defs.version_ids[d]
        hidden = defs.hidden[d]
        # Versioned reference: the same version, or a definition with none that is not hidden.
        versioned_ok = (def_version == ref_version) | ((def_version < 0) & ~hidden)
        # Unversioned reference: the base version, or the one non-hidden later version.
        unversioned_ok = ~defs.later_version[d] | ~hidden
        usable &= np.where(ref_version >= 0, versioned_ok, unversioned_ok)
    result[r[usable]] = True
    many = ~single
    if many.any():
        counts = defs.count[pos[found[many]]]
        for ref_index, start, count in zip(found[many].tolist(), first[many].tolist(), counts.tolist()):
            result[ref_index] = match_many(ref_index, start, count)
    if same_file:
        result &= ~refs.copy  # a copy relocation never binds to the program's own copy
    return result
