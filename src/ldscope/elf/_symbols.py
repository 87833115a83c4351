"""Symbol tables (.dynsym, .symtab) as numpy views, with lazily decoded names and versions."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from ldscope.elf._strings import StringTable
from ldscope.elf.constants import (
    BIND_NAMES,
    SHN_ABS,
    SHN_COMMON,
    SHN_UNDEF,
    STB_LOCAL,
    STB_WEAK,
    STV_DEFAULT,
    STV_PROTECTED,
    TYPE_NAMES,
    VISIBILITY_NAMES,
)

if TYPE_CHECKING:
    from ldscope.elf._versions import SymbolVersions


@dataclass(frozen=True, slots=True)
class Symbol:
    """One symbol, fully decoded (made on demand; tables keep arrays, not these)."""

    index: int
    name: str
    value: int
    size: int
    bind: str
    type: str
    visibility: str
    section_index: int
    version: str | None
    version_hidden: bool
    version_file: str | None

    @property
    def defined(self) -> bool:
        """True unless the symbol is undefined (SHN_UNDEF)."""
        return self.section_index != SHN_UNDEF

    @property
    def versioned_name(self) -> str:
        """`name@@VER` for default definitions, `name@VER` for hidden or references.

        A version from verneed (version_file set) is a reference even on a defined symbol
        (a copy-relocated variable), so it gets `@`, as readelf and nm print it.
        """
        hidden = self.version_hidden or self.version_file is not None
        return format_versioned_name(self.name, self.version, self.defined, hidden)


def is_exported(st_info: int, st_other: int, st_shndx: int) -> bool:
    """One entry's SymbolTable.exported_mask: defined, not local, default or protected."""
    return st_shndx != SHN_UNDEF and st_info >> 4 != STB_LOCAL and st_other & 3 in (STV_DEFAULT, STV_PROTECTED)


def format_versioned_name(name: str, version: str | None, defined: bool, hidden: bool) -> str:
    """`name@@VER` for default definitions, `name@VER` for hidden ones and references.

    A version's own definition symbol (e.g. `FOO_1.0` in version FOO_1.0) prints bare, as
    nm and readelf print it.
    """
    if version is None or (defined and name == version):
        return name
    sep = "@@" if defined and not hidden else "@"
    return f"{name}{sep}{version}"


class SymbolTable:
    """A symbol table: numpy structured array of entries plus its string table.

    Bulk arrays (`bind`, `type`, `visibility`, `section_index`, `value`, `size`) are numpy
    views or cheap derivations; names are decoded only when `name()`/`names()` is called.
    """

    __slots__ = ("_name_index", "_names", "corrupt", "entries", "kind", "section_index", "strings", "versions")

    CORRUPT_NAME = "<corrupt>"  # readelf's word for a name outside its string table

    def __init__(
        self,
        entries: np.ndarray,
        strings: StringTable,
        kind: str,
        section_index: np.ndarray | None = None,
        versions: SymbolVersions | None = None,
        corrupt: np.ndarray | None = None,
    ) -> None:
        self.entries = entries
        self.corrupt = corrupt  # indices whose st_name is outside the string table
        self.strings = strings
        self.kind = kind
        shndx = entries["st_shndx"].astype(np.uint32)
        if section_index is not None:
            shndx = np.where(shndx == 0xFFFF, section_index, shndx)
        self.section_index: np.ndarray = shndx
        self.versions = versions
        self._names: list[str] | None = None
        self._name_index: dict[str, list[int]] | None = None

    def __len__(self) -> int:
        return int(self.entries.shape[0])

    @property
    def value(self) -> np.ndarray:
        """st_value of every entry."""
        return self.entries["st_value"]

    @property
    def size(self) -> np.ndarray:
        """st_size of every entry."""
        return self.entries["st_size"]

    @property
    def bind(self) -> np.ndarray:
        """STB_* of every entry."""
        return self.entries["st_info"] >> 4

    @property
    def type(self) -> np.ndarray:
        """STT_* of every entry."""
        return self.entries["st_info"] & 0xF

    @property
    def visibility(self) -> np.ndarray:
        """STV_* of every entry."""
        return self.entries["st_other"] & 0x3

    @property
    def defined_mask(self) -> np.ndarray:
        """True where the symbol is defined (not SHN_UNDEF)."""
        return self.section_index != SHN_UNDEF

    @property
    def global_mask(self) -> np.ndarray:
        """True for the symbols other files see: not local, default or protected visibility
        (defined or not; hidden and internal ones are the file's own)."""
        vis = self.visibility
        return (self.bind != STB_LOCAL) & ((vis == STV_DEFAULT) | (vis == STV_PROTECTED))

    @property
    def exported_mask(self) -> np.ndarray:
        """True for the definitions other files can bind to: defined and global_mask."""
        return self.global_mask & self.defined_mask

    def exported_names(self) -> list[str]:
        """Names of the exported definitions (exported_mask), in table order."""
        return self.strings.get_many(self.entries["st_name"][np.flatnonzero(self.exported_mask)])

    @property
    def undefined_mask(self) -> np.ndarray:
        """True for undefined symbols, excluding the null entry 0."""
        mask = self.section_index == SHN_UNDEF
        if mask.size:
            mask[0] = False
        return mask

    @property
    def weak_mask(self) -> np.ndarray:
        """True for STB_WEAK symbols."""
        return self.bind == STB_WEAK

    @property
    def common_mask(self) -> np.ndarray:
        """True for common symbols (SHN_COMMON)."""
        return self.section_index == SHN_COMMON

    @property
    def absolute_mask(self) -> np.ndarray:
        """True for absolute symbols (SHN_ABS)."""
        return self.section_index == SHN_ABS

    def name(self, index: int) -> str:
        """Decoded name of entry `index`."""
        if self._names is not None:
            return self._names[index]
        offset = int(self.entries["st_name"][index])
        if self.corrupt is not None and offset >= max(self.strings.size, 1):
            return self.CORRUPT_NAME
        return self.strings.get(offset)

    def names(self) -> list[str]:
        """All names, decoded once and cached."""
        if self._names is None:
            names = self.strings.get_many(self.entries["st_name"])
            if self.corrupt is not None:
                for i in self.corrupt.tolist():
                    names[i] = self.CORRUPT_NAME
            self._names = names
        return self._names

    def names_at(self, indices: np.ndarray) -> list[str]:
        """The names of some entries, decoded (a name outside the table is `<corrupt>`)."""
        offsets = self.entries["st_name"][indices]
        names = self.strings.get_many(offsets)
        if self.corrupt is not None:
            for i in np.flatnonzero(offsets >= max(self.strings.size, 1)).tolist():
                names[i] = self.CORRUPT_NAME
        return names

    def indices_of(self, name: str) -> list[int]:
        """Entries with this exact name (builds a name index on first use)."""
        if self._name_index is None:
            index: dict[str, list[int]] = {}
            for i, n in enumerate(self.names()):
                if n:
                    index.setdefault(n, []).append(i)
            self._name_index = index
        return self._name_index.get(name, [])

    def symbol(self, index: int) -> Symbol:
        """One fully decoded Symbol."""
        entry = self.entries[index]
        info = int(entry["st_info"])
        version: str | None = None
        hidden = False
        vfile: str | None = None
        if self.versions is not None:
            version, hidden, vfile = self.versions.of(index)
        return Symbol(
            index=index,
            name=self.name(index),
            value=int(entry["st_value"]),
            size=int(entry["st_size"]),
            bind=BIND_NAMES.get(info >> 4, f"<{info >> 4}>"),
            type=TYPE_NAMES.get(info & 0xF, f"<{info & 0xF}>"),
            visibility=VISIBILITY_NAMES[int(entry["st_other"]) & 3],
            section_index=int(self.section_index[index]),
            version=version,
            version_hidden=hidden,
            version_file=vfile,
        )

    def __iter__(self):  # type: ignore[no-untyped-def]
        for i in range(len(self)):
            yield self.symbol(i)
