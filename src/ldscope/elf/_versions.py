"""GNU symbol versioning: verdef, verneed and versym, resolved per symbol."""

from __future__ import annotations

import struct
from dataclasses import dataclass

import numpy as np

from ldscope.elf._strings import RawBuffer, StringTable
from ldscope.elf.constants import VER_FLG_BASE, VER_FLG_WEAK, VERSYM_HIDDEN, VERSYM_VERSION
from ldscope.errors import InputFormatError


@dataclass(frozen=True, slots=True)
class VersionDefinition:
    """One verdef entry: `name` (first aux), its index, flags and parent names."""

    index: int
    name: str
    flags: int
    parents: tuple[str, ...]

    @property
    def is_base(self) -> bool:
        """True for the VER_FLG_BASE entry naming the file itself."""
        return bool(self.flags & VER_FLG_BASE)


@dataclass(frozen=True, slots=True)
class VersionRequirement:
    """One vernaux entry: version `name` needed from `file`, with its index and weak flag."""

    file: str
    name: str
    index: int
    flags: int
    hash: int

    @property
    def weak(self) -> bool:
        """True if VER_FLG_WEAK: a missing version is not fatal."""
        return bool(self.flags & VER_FLG_WEAK)


def parse_verdef(
    raw: RawBuffer, name: str, offset: int, count: int, strings: StringTable, little: bool
) -> tuple[VersionDefinition, ...]:
    """Walk the verdef chain (at most `count` entries, bounds-checked)."""
    e = "<" if little else ">"
    result: list[VersionDefinition] = []
    pos = offset
    size = len(raw)
    # Entries and names together no more than could fit in the file: overlapping entries
    # (vd_next and vda_next of a few bytes) must not make a small file a huge list.
    budget = max(size // 8, 1)
    for _ in range(count):
        budget -= 1
        if budget < 0 or pos < 0 or pos + 20 > size:
            raise InputFormatError(name, "version definition outside the file", pos)
        _ver, flags, ndx, cnt, _hash, aux, nxt = struct.unpack(e + "HHHHIII", raw[pos : pos + 20])
        names: list[str] = []
        apos = pos + aux
        for _a in range(min(cnt, 64)):
            budget -= 1
            if budget < 0 or apos < 0 or apos + 8 > size:
                raise InputFormatError(name, "version definition aux outside the file", apos)
            vda_name, vda_next = struct.unpack(e + "II", raw[apos : apos + 8])
            names.append(strings.get(vda_name))
            if vda_next == 0:
                break
            apos += vda_next
        if not names:
            raise InputFormatError(name, "version definition without a name", pos)
        result.append(VersionDefinition(ndx, names[0], flags, tuple(names[1:])))
        if nxt == 0:
            break
        pos += nxt
    return tuple(result)


def parse_verneed(
    raw: RawBuffer, name: str, offset: int, count: int, strings: StringTable, little: bool
) -> tuple[VersionRequirement, ...]:
    """Walk the verneed chain and its vernaux entries (bounded by counts and file size)."""
    e = "<" if little else ">"
    result: list[VersionRequirement] = []
    pos = offset
    size = len(raw)
    budget = max(size // 16, 1)  # no more entries than could fit in the file
    for _ in range(count):
        budget -= 1
        if budget < 0 or pos < 0 or pos + 16 > size:
            raise InputFormatError(name, "version requirement outside the file", pos)
        _ver, cnt, vn_file, aux, nxt = struct.unpack(e + "HHIII", raw[pos : pos + 16])
        file_name = strings.get(vn_file)
        apos = pos + aux
        for _a in range(cnt):
            budget -= 1
            if budget < 0 or apos < 0 or apos + 16 > size:
                raise InputFormatError(name, "version requirement aux outside the file", apos)
            vna_hash, vna_flags, vna_other, vna_name, vna_next = struct.unpack(
                e + "IHHII", raw[apos : apos + 16]
            )
            result.append(
                VersionRequirement(file_name, strings.get(vna_name), vna_other, vna_flags, vna_hash)
            )
            if vna_next == 0:
                break
            apos += vna_next
        if nxt == 0:
            break
        pos += nxt
    return tuple(result)


class SymbolVersions:
    """Per-symbol version resolution for one dynamic symbol table."""

    __slots__ = ("_table", "definitions", "requirements", "versym")

    def __init__(
        self,
        versym: np.ndarray | None,
        definitions: tuple[VersionDefinition, ...],
        requirements: tuple[VersionRequirement, ...],
    ) -> None:
        self.versym = versym
        self.definitions = definitions
        self.requirements = requirements
        table: dict[int, tuple[str, str | None]] = {}
        for d in definitions:
            table[d.index] = (d.name, None)
        for r in requirements:
            table[r.index] = (r.name, r.file)
        self._table = table

    def lookup_table(self) -> dict[int, tuple[str, str | None]]:
        """versym index → (version name, verneed file or None), verneed entries winning."""
        return dict(self._table)

    def of(self, index: int) -> tuple[str | None, bool, str | None]:
        """(version name or None, hidden flag, file named by the verneed entry) for a symbol."""
        if self.versym is None or index >= len(self.versym):
            return None, False, None
        raw = int(self.versym[index])
        ndx = raw & VERSYM_VERSION
        hidden = bool(raw & VERSYM_HIDDEN)
        if ndx <= 1:
            return None, hidden, None
        entry = self._table.get(ndx)
        if entry is None:
            return None, hidden, None
        return entry[0], hidden, entry[1]

    def version_names(self, count: int) -> list[str | None]:
        """Version name of the first `count` symbols (None where unversioned)."""
        if self.versym is None:
            return [None] * count
        idx = (self.versym[:count] & VERSYM_VERSION).tolist()
        table = self._table
        return [table[i][0] if i > 1 and i in table else None for i in idx] + [None] * (
            count - len(idx)
        )

    def hidden_mask(self, count: int) -> np.ndarray:
        """True where the versym hidden bit is set."""
        if self.versym is None:
            return np.zeros(count, dtype=bool)
        mask = np.zeros(count, dtype=bool)
        n = min(count, len(self.versym))
        mask[:n] = (self.versym[:n] & VERSYM_HIDDEN) != 0
        return mask

    @property
    def base_name(self) -> str | None:
        """The VER_FLG_BASE definition's name (normally the SONAME), if any."""
        for d in self.definitions:
            if d.is_base:
                return d.name
        return None

    def defined_version_names(self) -> list[str]:
        """Names of the non-base version definitions."""
        return [d.name for d in self.definitions if not d.is_base]
