"""Per-file loader facts, parsed once per (device, inode) and shared by every simulation."""

from __future__ import annotations

import threading
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from ldscope.elf import REF_LOAD, REF_NONE, ElfFile, StringTable, VersionRequirement, copy_relocated_symbols
from ldscope.elf import constants as C
from ldscope.errors import InputFormatError
from ldscope.loader._symarrays import DefinitionArrays, NameTable, ReferenceArrays
from ldscope.system import OSFileSystem

# For images built outside an ImageCache (tests, one-off reads): one shared table.
_DEFAULT_NAMES = NameTable()

# Tables with more entries than this keep their names undecoded until asked (libtorch_cpu,
# among the biggest real libraries, has 75,000).
_EAGER_NAMES_MAX = 1 << 20

# Symbol types ld.so accepts as definitions (ALLOWED_STT in dl-lookup.c)
_ALLOWED_TYPES = frozenset(
    {C.STT_NOTYPE, C.STT_OBJECT, C.STT_FUNC, C.STT_COMMON, C.STT_TLS, C.STT_GNU_IFUNC}
)
# The same as a lookup table over st_info's 4-bit type (np.isin sorts, and imports numpy.ma).
_ALLOWED_TYPE_TABLE = np.array([t in _ALLOWED_TYPES for t in range(16)], dtype=bool)


@dataclass(frozen=True, slots=True)
class Reference:
    """A dynamic symbol a file's relocations make the loader look up."""

    index: int
    name: str
    version: str | None
    version_file: str | None
    version_hidden: bool
    weak: bool
    undefined: bool
    at_load: bool  # referenced by a data/GOT/TLS relocation (else PLT only)
    is_copy: bool
    type: int


@dataclass(frozen=True, slots=True)
class Definition:
    """One exported definition candidate for a name (in dynsym index order)."""

    index: int
    version_index: int  # versym & 0x7fff (0/1 for unversioned)
    hidden: bool  # versym hidden bit
    plt_canonical: bool  # an UNDEF entry with a value: matches only non-PLT lookups
    type: int
    bind: int


class ElfImage:
    """What the loader needs from one ELF file: identity, dynamic info, definitions, references."""

    def __init__(self, elf: ElfFile, host_path: str, names: NameTable | None = None) -> None:
        self.host_path = host_path
        self._table = names if names is not None else _DEFAULT_NAMES
        self.elf_class = elf.elf_class
        self.e_machine = elf.e_machine
        self.machine = elf.machine
        self.little_endian = elf.little_endian
        self.e_type = elf.e_type
        self.osabi = elf.osabi
        self.interpreter = elf.interpreter
        dyn = elf.dynamic
        self.is_dynamic = dyn is not None
        # What _dl_map_object_from_fd refuses a file for, whatever its dynamic info says.
        self.has_load_segments = elf.has_load_segments
        self.has_pt_dynamic = elf.has_pt_dynamic
        self.is_separate_debug = elf.is_separate_debug
        self.soname = dyn.soname if dyn else None
        self.needed: tuple[str, ...] = dyn.needed if dyn else ()
        self.rpath: tuple[str, ...] = dyn.rpath if dyn and dyn.rpath_raw is not None else ()
        self.runpath: tuple[str, ...] = dyn.runpath if dyn and dyn.runpath_raw is not None else ()
        self.has_rpath = bool(dyn and dyn.rpath_raw is not None)
        self.has_runpath = bool(dyn and dyn.runpath_raw is not None)
        self.now = bool(dyn and dyn.now)
        self.nodeflib = bool(dyn and dyn.nodeflib)
        self.symbolic = bool(dyn and (C.DT_SYMBOLIC in dyn.tags or dyn.flags & 0x2))
        self.filters = dyn.filters if dyn else ()
        self.verdefs: dict[int, str] = {
            d.index: d.name for d in elf.version_definitions if not d.is_base
        }
        self.verdef_names = frozenset(self.verdefs.values())
        # ld.so's match_symbol compares against every verdef entry, the base one included.
        self.all_verdef_names = frozenset(d.name for d in elf.version_definitions)
        self.has_verdef = bool(elf.version_definitions)
        self.version_requirements: tuple[VersionRequirement, ...] = elf.version_requirements
        table = elf.dynsym
        self.symbol_count = len(table) if table is not None else 0
        # Programs are rarely a provider (only for what the libraries leave unbound), so
        # their defined names - 120,000 in a wheel's test programs - are decoded on demand
        # from a copy of their string table; libraries' names are decoded here, all at once,
        # unless the table is far bigger than any real one (a crafted file's millions of
        # null entries): then only the names binding needs are, as for programs.
        self._all_names: list[str] | None = None
        self._lazy_strings: tuple[StringTable, np.ndarray] | None = None
        if table is None:
            self._all_names = []
        elif (self.is_main_executable_type and self.soname is None) or self.symbol_count > _EAGER_NAMES_MAX:
            strings = table.strings
            blob = elf.read_bytes(strings.start - elf.base, strings.size, "dynamic string table")
            self._lazy_strings = (StringTable(blob, 0, len(blob)),
                                  np.array(table.entries["st_name"], dtype=np.uint32))
        else:
            self._all_names = table.names()
        self._ref_names: list[str] = []
        self.has_versym = table is not None and table.versions is not None and (
            table.versions.versym is not None
        )
        self._defined_idx: np.ndarray = np.zeros(0, dtype=np.int64)
        self._ref_idx: np.ndarray = np.zeros(0, dtype=np.int64)
        self._ref_at_load: np.ndarray = np.zeros(0, dtype=bool)
        self._ref_copy: np.ndarray = np.zeros(0, dtype=bool)
        self._ref_versions: dict[int, tuple[str, str | None]] = {}
        self._versym = np.ones(0, dtype=np.int32)
        self._bind = np.zeros(0, dtype=np.int8)
        self._stype = np.zeros(0, dtype=np.int8)
        self._undefined = np.zeros(0, dtype=bool)
        self._definitions: dict[str, list[Definition]] | None = None
        self._references: list[Reference] | None = None
        if table is not None and self.symbol_count:
            self._index_symbols(elf)

    def _index_symbols(self, elf: ElfFile) -> None:
        """Keep compact copies of what binding needs; objects are built on first use."""
        table = elf.dynsym
        assert table is not None
        n = self.symbol_count
        bind = table.bind.astype(np.int8)
        stype = table.type.astype(np.int8)
        shndx = table.section_index
        value = table.value
        versions = table.versions
        versym = (
            versions.versym[:n].astype(np.int32)
            if versions is not None and versions.versym is not None
            else np.ones(n, dtype=np.int32)
        )
        if len(versym) < n:
            versym = np.concatenate([versym, np.ones(n - len(versym), dtype=np.int32)])
        undefined = shndx == C.SHN_UNDEF
        usable = (bind != C.STB_LOCAL) & _ALLOWED_TYPE_TABLE[stype & 0xF]
        # st_value 0 is "no value" except for TLS and absolute symbols (check_match).
        has_value = (value != 0) | (stype == C.STT_TLS) | (shndx == C.SHN_ABS)
        defined = usable & has_value & (~undefined | (value != 0))
        defined[0] = False
        self._defined_idx = np.flatnonzero(defined)
        self._versym = versym
        self._bind = bind
        self._stype = stype
        self._undefined = undefined
        kinds = elf.symbol_reference_kinds
        copies = copy_relocated_symbols(list(elf.dynamic_relocations), elf.e_machine)
        ref_idx = np.flatnonzero(kinds != REF_NONE)
        self._ref_idx = ref_idx
        self._ref_names = self._names_at(ref_idx)
        self._ref_at_load = kinds[ref_idx] == REF_LOAD
        copied = np.zeros(n, dtype=bool)
        copied[copies[copies < n]] = True
        self._ref_copy = copied[ref_idx]
        self._ref_versions = (
            versions.lookup_table() if versions is not None and versions.versym is not None else {})

    def _ref_version(self, i: int) -> tuple[str | None, bool, str | None]:
        """(version, hidden, verneed file) of dynsym entry i, as SymbolVersions.of."""
        raw = int(self._versym[i])
        entry = self._ref_versions.get(raw & 0x7FFF) if raw & 0x7FFF > 1 else None
        hidden = bool(raw & 0x8000)
        return (entry[0], hidden, entry[1]) if entry is not None else (None, hidden, None)

    def _reference(self, position: int) -> Reference:
        i = int(self._ref_idx[position])
        version, hidden, vfile = self._ref_version(i)
        return Reference(
            index=i, name=self._ref_names[position], version=version, version_file=vfile, version_hidden=hidden,
            weak=int(self._bind[i]) == C.STB_WEAK, undefined=bool(self._undefined[i]),
            at_load=bool(self._ref_at_load[position]), is_copy=bool(self._ref_copy[position]),
            type=int(self._stype[i]),
        )

    def reference(self, position: int) -> Reference:
        """One entry of `references`, without building the others."""
        if self._references is not None:
            return self._references[position]
        return self._reference(position)

    @property
    def _names(self) -> list[str]:
        """Every .dynsym name (a program's decoded on first use)."""
        if self._all_names is None:
            assert self._lazy_strings is not None
            strings, offsets = self._lazy_strings
            self._all_names = strings.get_many(offsets)
            self._lazy_strings = None
        return self._all_names

    def _names_at(self, indices: np.ndarray) -> list[str]:
        """Names of some .dynsym entries, without decoding the others."""
        if self._all_names is None and self._lazy_strings is not None:
            strings, offsets = self._lazy_strings
            return strings.get_many(offsets[indices])
        names = self._names
        return [names[i] for i in indices.tolist()]

    def _ids_at(self, indices: np.ndarray) -> np.ndarray:
        """Interned name ids of some .dynsym entries (all names interned once when decoded)."""
        if self._all_names is None:
            return self._table.intern(self._names_at(indices))
        return self._name_ids[indices]

    @cached_property
    def _name_ids(self) -> np.ndarray:
        """Interned ids of every dynsym name (one pass for references and definitions)."""
        return self._table.intern(self._names)

    @cached_property
    def reference_arrays(self) -> ReferenceArrays:
        """The references that fail when nothing binds them, as arrays (interned names,
        version ids) for array binding. A file's own defined symbols are most of a big
        library's references (58,000 of libtorch_cpu.so's 59,000) and can never fail."""
        weak = self._bind[self._ref_idx] == C.STB_WEAK
        positions = np.flatnonzero(~weak & (self._undefined[self._ref_idx] | self._ref_copy))
        idx = self._ref_idx[positions]
        lut = self._table.version_lut({k: v[0] for k, v in self._ref_versions.items() if k > 1})
        ndx = (self._versym[idx] & 0x7FFF).astype(np.int64) if idx.size else np.zeros(0, dtype=np.int64)
        vids = np.full(idx.size, -1, dtype=np.int32)
        inside = ndx < lut.size
        vids[inside] = lut[ndx[inside]]
        return ReferenceArrays(self._ids_at(idx), vids, ~self._ref_at_load[positions],
                               self._ref_copy[positions], positions)

    @cached_property
    def definition_arrays(self) -> DefinitionArrays:
        """The definitions as arrays grouped by interned name, for array binding."""
        idx = self._defined_idx
        return DefinitionArrays.build(self._ids_at(idx), idx, self._versym,
                                      self.version_index_names, self._undefined, self._table)

    def definition_run(self, first: int, count: int) -> list[Definition]:
        """Definitions [first, first+count) of `definition_arrays` (one name), in dynsym order."""
        arrays = self.definition_arrays
        result = []
        for k in range(first, first + count):
            i = int(arrays.symbol_index[k])
            vs = int(self._versym[i])
            result.append(Definition(i, vs & 0x7FFF, bool(vs & 0x8000), bool(self._undefined[i]),
                                     int(self._stype[i]), int(self._bind[i])))
        return result

    def definitions_named(self, name: str) -> list[Definition]:
        """Definitions of one name in dynsym order, without building the whole name index."""
        if self._definitions is not None:
            return self._definitions.get(name, [])
        arrays = self.definition_arrays  # interns this image's names: only then can `name` have an id
        name_id = self._table.id_of(name)
        if name_id is None or not arrays.unique_ids.size:
            return []
        pos = int(np.searchsorted(arrays.unique_ids, name_id))
        if pos >= arrays.unique_ids.size or int(arrays.unique_ids[pos]) != name_id:
            return []
        return self.definition_run(int(arrays.first[pos]), int(arrays.count[pos]))

    def defines(self, name: str) -> bool:
        """True if the file exports this name (any version)."""
        return bool(self.definitions_named(name))

    def defined_name_list(self) -> list[str]:
        """Distinct exported names in dynsym order (no Definition objects built)."""
        cached: list[str] | None = getattr(self, "_defined_name_list", None)
        if cached is None:
            cached = list(dict.fromkeys(self._names_at(self._defined_idx)))
            self._defined_name_list = cached
        return cached

    @property
    def definitions(self) -> dict[str, list[Definition]]:
        """name → definitions in dynsym order (built on first use)."""
        if self._definitions is None:
            versym = self._versym
            defs: dict[str, list[Definition]] = {}
            # Only the definitions' names: a program's others stay undecoded.
            for i, name in zip(self._defined_idx.tolist(), self._names_at(self._defined_idx)):
                vs = int(versym[i])
                defs.setdefault(name, []).append(
                    Definition(i, vs & 0x7FFF, bool(vs & 0x8000), bool(self._undefined[i]),
                               int(self._stype[i]), int(self._bind[i]))
                )
            self._definitions = defs
        return self._definitions

    @property
    def copy_relocated_names(self) -> frozenset[str]:
        """Names this file copy-relocates (its copy is the one every other file binds to)."""
        cached = getattr(self, "_copy_names", None)
        if cached is None:
            cached = frozenset(r.name for r in self.references if r.is_copy)
            self._copy_names = cached
        return cached

    @property
    def references(self) -> list[Reference]:
        """Relocation-referenced dynamic symbols (built on first use)."""
        if self._references is None:
            self._references = [self._reference(p) for p in range(len(self._ref_idx))]
        return self._references

    @classmethod
    def synthetic(cls, needed: tuple[str, ...], like: ElfImage) -> ElfImage:
        """A stand-in main program that only needs `needed` (a minimal dlopen host)."""
        image = cls.__new__(cls)
        image.host_path = "(minimal host)"
        image._table = like._table
        image.elf_class, image.e_machine, image.machine = like.elf_class, like.e_machine, like.machine
        image.little_endian, image.e_type, image.osabi = like.little_endian, C.ET_DYN, 0
        image.interpreter = None
        image.is_dynamic = True
        image.has_load_segments = image.has_pt_dynamic = True
        image.is_separate_debug = False
        image.soname = None
        image.needed = needed
        image.rpath = image.runpath = ()
        image.has_rpath = image.has_runpath = False
        image.now = image.nodeflib = image.symbolic = False
        image.filters = ()
        image.verdefs = {}
        image.verdef_names = frozenset()
        image.all_verdef_names = frozenset()
        image.has_verdef = False
        image.version_requirements = ()
        image.symbol_count = 0
        image._all_names = []
        image._lazy_strings = None
        image._ref_names = []
        image.has_versym = False
        image._defined_idx = np.zeros(0, dtype=np.int64)
        image._ref_idx = np.zeros(0, dtype=np.int64)
        image._ref_at_load = image._ref_copy = image._undefined = np.zeros(0, dtype=bool)
        image._ref_versions = {}
        image._versym = np.ones(0, dtype=np.int32)
        image._bind = image._stype = np.zeros(0, dtype=np.int8)
        image._definitions = {}
        image._references = []
        return image

    @cached_property
    def version_index_names(self) -> dict[int, str]:
        """versym index -> version name, as dl-version.c `_dl_check_map_versions` fills
        map->l_versions: every vernaux entry (vna_other) and every non-base verdef."""
        names = {req.index & 0x7FFF: req.name for req in self.version_requirements}
        names.update(self.verdefs)
        return names

    @property
    def is_main_executable_type(self) -> bool:
        """ET_EXEC, or a PIE (ET_DYN with an interpreter)."""
        return self.e_type == C.ET_EXEC or (self.e_type == C.ET_DYN and self.interpreter is not None)

    def all_names(self) -> list[str]:
        """Every .dynsym name (decoded once)."""
        return self._names


class ImageCache:
    """Parses each distinct file once (keyed by device and inode); thread-safe."""

    def __init__(self, fs: OSFileSystem | None = None) -> None:
        self.fs = fs if fs is not None else OSFileSystem()
        self.names = NameTable()  # the integer names of every image of this cache
        self._images: dict[tuple[object, ...], ElfImage | InputFormatError] = {}
        self._lock = threading.Lock()

    def get(self, host_path: str) -> ElfImage:
        """The image of a file, raising InputFormatError (cached too) for bad files."""
        try:
            key = self.fs.key(host_path)
        except OSError as exc:
            raise InputFormatError(host_path, f"cannot stat: {exc.strerror or exc}") from None
        with self._lock:
            cached = self._images.get(key)
        if cached is None:
            try:
                with self.fs.open_elf(host_path) as elf:
                    cached = ElfImage(elf, host_path, self.names)
            except InputFormatError as exc:
                cached = exc
            except OSError as exc:
                cached = InputFormatError(host_path, f"cannot read: {exc.strerror or exc}")
            with self._lock:
                self._images[key] = cached
        if isinstance(cached, InputFormatError):
            raise cached
        return cached

    def __len__(self) -> int:
        return len(self._images)
