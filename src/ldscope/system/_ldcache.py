"""Reader for glibc's binary /etc/ld.so.cache and a model of how ld.so looks names up in it.

Layouts (glibc's sysdeps/generic/dl-cache.h): the old libc5 "ld.so-1.7.0" table, the new
"glibc-ld.so.cache1.1" table, and the combined layout older ldconfig wrote by default (an old
table with the new one hidden in its string area).  When both are present ld.so uses only the
new one, so `LdCache.entries` holds the table ld.so would use.

String offsets follow the readers (elf/dl-cache.c, ldconfig -p): entry strings are relative to
the start of the table's header, extension offsets and glibc-hwcaps name offsets are relative
to the start of the file.  (glibc 2.36's `ldconfig -c compat` writes hwcaps name offsets
relative to the new header, so in such files ld.so and `ldconfig -p` read the wrong names;
so does this reader, on purpose.)

Any size is read, as ld.so reads it (elf/dl-cache.c): no entry-count or size limit, only
its structural checks (the header fits, nlibs entries fit in the file); string indices are
checked where a lookup uses them, so a bad one spoils that lookup, not the cache.  Entries are
decoded only where the bisection looks, so a 1M-entry cache costs a lookup O(log n).
"""

from __future__ import annotations

import heapq
import os
import struct
from collections.abc import Sequence
from dataclasses import dataclass

from ldscope.elf import open_regular
from ldscope.errors import InputFormatError
from ldscope.system import _platform as _plat
from ldscope.system._machines import abi_name

MAGIC_OLD = b"ld.so-1.7.0"
MAGIC_NEW = b"glibc-ld.so.cache1.1"
_SPARSE_FLOOR = 64 << 20  # below this a cache is read whatever its blocks say
MAX_STRING = 4096  # PATH_MAX: longer names could not be opened anyway

FLAG_TYPE_MASK = 0x00FF
FLAG_LIBC4, FLAG_ELF, FLAG_ELF_LIBC5, FLAG_ELF_LIBC6 = 0x0000, 0x0001, 0x0002, 0x0003
FLAG_REQUIRED_MASK = 0xFF00
FLAG_SPARC_LIB64, FLAG_IA64_LIB64, FLAG_X8664_LIB64 = 0x0100, 0x0200, 0x0300
FLAG_S390_LIB64, FLAG_POWERPC_LIB64, FLAG_MIPS64_LIBN32 = 0x0400, 0x0500, 0x0600
FLAG_MIPS64_LIBN64, FLAG_X8664_LIBX32, FLAG_ARM_LIBHF = 0x0700, 0x0800, 0x0900
FLAG_AARCH64_LIB64, FLAG_ARM_LIBSF, FLAG_MIPS_LIB32_NAN2008 = 0x0A00, 0x0B00, 0x0C00
FLAG_MIPS64_LIBN32_NAN2008, FLAG_MIPS64_LIBN64_NAN2008 = 0x0D00, 0x0E00
FLAG_RISCV_FLOAT_ABI_SOFT, FLAG_RISCV_FLOAT_ABI_DOUBLE = 0x0F00, 0x1000

DL_CACHE_HWCAP_EXTENSION = 1 << 62
DL_CACHE_HWCAP_ISA_LEVEL_MASK = (1 << 10) - 1
HWCAP_TLS_MASK = 1 << 63
CACHE_EXTENSION_MAGIC = 0xEAA42174  # (uint32_t) -358342284
TAG_GENERATOR, TAG_GLIBC_HWCAPS = 0, 1
_U64 = (1 << 64) - 1

_TYPE_NAMES = {FLAG_LIBC4: "libc4", FLAG_ELF: "ELF", FLAG_ELF_LIBC5: "libc5",
               FLAG_ELF_LIBC6: "libc6"}
# required-bits value -> (text ldconfig -p prints, ABI, EI_CLASS or None when it varies)
_REQUIRED: dict[int, tuple[str, str, int | None]] = {
    0: ("", "generic", None),
    FLAG_SPARC_LIB64: (",64bit", "sparcv9", 2),
    FLAG_IA64_LIB64: (",IA-64", "ia64", 2),
    FLAG_X8664_LIB64: (",x86-64", "x86_64", 2),
    FLAG_S390_LIB64: (",64bit", "s390x", 2),
    FLAG_POWERPC_LIB64: (",64bit", "ppc64", 2),
    FLAG_MIPS64_LIBN32: (",N32", "mips-n32", 1),
    FLAG_MIPS64_LIBN64: (",64bit", "mips64", 2),
    FLAG_X8664_LIBX32: (",x32", "x32", 1),
    FLAG_ARM_LIBHF: (",hard-float", "arm-hf", 1),
    FLAG_AARCH64_LIB64: (",AArch64", "aarch64", 2),
    FLAG_ARM_LIBSF: (",soft-float", "arm-sf", 1),
    FLAG_MIPS_LIB32_NAN2008: (",nan2008", "mips-nan2008", 1),
    FLAG_MIPS64_LIBN32_NAN2008: (",N32,nan2008", "mips-n32-nan2008", 1),
    FLAG_MIPS64_LIBN64_NAN2008: (",64bit,nan2008", "mips64-nan2008", 2),
    FLAG_RISCV_FLOAT_ABI_SOFT: (",soft-float", "riscv-soft-float", None),
    FLAG_RISCV_FLOAT_ABI_DOUBLE: (",double-float", "riscv-double-float", None),
}


def _text(raw: bytes) -> str:
    return raw.decode("utf-8", "surrogateescape")


@dataclass(frozen=True, slots=True)
class CacheEntry:
    """One cache entry: soname `key` -> `path`, with ldconfig's flags and hwcap word."""

    key: str
    path: str
    flags: int
    hwcap: int = 0
    hwcaps_subdirectory: str | None = None
    osversion: int = 0
    index: int = 0

    @property
    def abi(self) -> str:
        """The ABI the flags name ("x86_64", "aarch64", "generic", ...; "unknown" if unknown)."""
        known = _REQUIRED.get(self.flags & FLAG_REQUIRED_MASK)
        return known[1] if known else "unknown"

    @property
    def elf_class(self) -> int | None:
        """EI_CLASS the flags imply (1 or 2), None when they do not say (generic, riscv)."""
        known = _REQUIRED.get(self.flags & FLAG_REQUIRED_MASK)
        return known[2] if known else None

    @property
    def is_hwcaps_extension(self) -> bool:
        """True if the hwcap word names a glibc-hwcaps subdirectory (DL_CACHE_HWCAP_EXTENSION)."""
        return _is_extension(self.hwcap)

    @property
    def isa_level(self) -> int:
        """x86 ISA level index stored with glibc-hwcaps entries (0 baseline .. 3 = x86-64-v4)."""
        return (self.hwcap >> 32) & DL_CACHE_HWCAP_ISA_LEVEL_MASK if self.is_hwcaps_extension else 0

    def flags_description(self) -> str:
        """The flags as `ldconfig -p` prints them, e.g. "libc6,x86-64"."""
        kind = _TYPE_NAMES.get(self.flags & FLAG_TYPE_MASK, "unknown")
        required = self.flags & FLAG_REQUIRED_MASK
        known = _REQUIRED.get(required)
        return kind + (known[0] if known else f",{required}")

    def describe(self) -> str:
        """The entry as one `ldconfig -p` line (without the leading tab)."""
        text = self.flags_description()
        if self.hwcaps_subdirectory is not None:
            text += f', hwcap: "{self.hwcaps_subdirectory}"'
        elif self.hwcap:
            text += f", hwcap: {self.hwcap:#018x}"
        return f"{self.key} ({text}) => {self.path}"


def _is_extension(hwcap: int) -> bool:
    upper = (hwcap >> 32) & ~DL_CACHE_HWCAP_ISA_LEVEL_MASK
    return upper == DL_CACHE_HWCAP_EXTENSION >> 32


@dataclass(frozen=True, slots=True)
class CacheLookupContext:
    """What the running ld.so brings to a cache lookup (see `for_machine`)."""

    accepted_flags: frozenset[int]
    default_flags: int
    hwcaps_subdirs: tuple[str, ...] = ()  # active glibc-hwcaps names, most preferred first
    x86_isa_bits: int | None = None  # GNU_PROPERTY_X86_ISA_1_* the CPU has; None: no ISA check
    legacy_hwcap: int = 0  # GLRO(dl_hwcap) & hwcap_mask
    platform_mask: int = 0  # _DL_HWCAP_PLATFORM (0: the ABI has no platform bits)
    platform_bit: int | None = None  # bit of GLRO(dl_platform); None: not a known platform

    @classmethod
    def for_machine(
        cls,
        machine: str,
        elf_class: int | None = None,
        cpu: _plat.CpuFeatures | None = None,
        *,
        variant: str | None = None,
        hwcaps_prepend: Sequence[str] = (),
        hwcaps_mask: Sequence[str] | None = None,
    ) -> CacheLookupContext:
        """The context of glibc 2.36's ld.so for an ABI on a CPU (None: a baseline CPU).

        `variant` picks among ABIs one machine/class pair does not tell apart: "soft" (arm,
        riscv soft-float), "nan2008", "n32", "n32-nan2008" (mips).
        """
        abi = abi_name(machine, elf_class)
        accepted, default = cache_flags_for(abi, variant)
        subdirs = _plat.hwcaps_subdirs(abi, cpu, prepend=hwcaps_prepend, mask=hwcaps_mask)
        isa: int | None = None
        if abi in ("x86_64", "x32"):
            isa = _plat.x86_isa_bits(cpu) if cpu is not None else _plat.X86_ISA_BASELINE
        legacy = 0
        for hwcap_bit, _name in _plat.legacy_hwcap_bits(abi, cpu):
            legacy |= 1 << hwcap_bit
        mask = 0
        bit: int | None = None
        table = _PLATFORM_BITS.get(abi)
        if table is not None:
            first, names = table
            mask = ((1 << len(names)) - 1) << first
            current = _plat.platform_expansion(abi, cpu)
            if current in names:
                bit = first + names.index(current)
        return cls(frozenset(accepted), default, subdirs, isa, legacy, mask, bit)


_X86_PLATFORMS = ("i586", "i686", "haswell", "xeon_phi")
_PPC_PLATFORMS = ("power4", "ppc970", "power5", "power5+", "power6", "ppc-cell-be", "power6x",
                  "power7", "ppca2", "ppc405", "ppc440", "ppc464", "ppc476", "power8",
                  "power9", "power10")
_S390_PLATFORMS = ("g5", "z900", "z990", "z9-109", "z10", "z196", "zEC12", "z13", "z14", "z15",
                   "z16")
# ABI -> (_DL_FIRST_PLATFORM, platform names in bit order).  x86_64's ld.so only recognises
# haswell/xeon_phi (HWCAP_PLATFORMS_START 2) and i386's only i586/i686 (count 2).
_PLATFORM_BITS: dict[str, tuple[int, tuple[str, ...]]] = {
    "x86_64": (48, _X86_PLATFORMS), "x32": (48, _X86_PLATFORMS), "i386": (48, _X86_PLATFORMS[:2]),
    "ppc64le": (32, _PPC_PLATFORMS), "ppc64": (32, _PPC_PLATFORMS), "ppc": (32, _PPC_PLATFORMS),
    "s390x": (32, _S390_PLATFORMS), "s390": (32, _S390_PLATFORMS),
}


def cache_flags_for(machine: str, variant: str | None = None,
                    elf_class: int | None = None) -> tuple[frozenset[int], int]:
    """(flags _dl_cache_check_flags accepts, _DL_CACHE_DEFAULT_ID) for an ABI's ld.so."""
    abi = abi_name(machine, elf_class)
    libc6 = FLAG_ELF_LIBC6
    generic = (frozenset({FLAG_ELF, libc6}), libc6)

    def only(required: int) -> tuple[frozenset[int], int]:
        return frozenset({required | libc6}), required | libc6

    if abi == "arm":
        arm = FLAG_ARM_LIBSF if variant == "soft" else FLAG_ARM_LIBHF
        return frozenset({arm | libc6, libc6}), libc6
    if abi in ("mips", "mipsel", "mips64", "mips64el"):
        wide = abi.startswith("mips64")
        if variant == "nan2008":
            return only(FLAG_MIPS64_LIBN64_NAN2008 if wide else FLAG_MIPS_LIB32_NAN2008)
        if variant == "n32":
            return only(FLAG_MIPS64_LIBN32)
        if variant == "n32-nan2008":
            return only(FLAG_MIPS64_LIBN32_NAN2008)
        return only(FLAG_MIPS64_LIBN64) if wide else generic
    if abi in ("riscv64", "riscv32"):
        return only(FLAG_RISCV_FLOAT_ABI_SOFT if variant == "soft" else FLAG_RISCV_FLOAT_ABI_DOUBLE)
    required = {"x86_64": FLAG_X8664_LIB64, "x32": FLAG_X8664_LIBX32,
                "aarch64": FLAG_AARCH64_LIB64, "ppc64le": FLAG_POWERPC_LIB64,
                "ppc64": FLAG_POWERPC_LIB64, "s390x": FLAG_S390_LIB64,
                "sparcv9": FLAG_SPARC_LIB64, "ia64": FLAG_IA64_LIB64}.get(abi)
    return only(required) if required is not None else generic


class _Table:
    """One layout's entry table over the cache bytes, decoded only where a lookup looks.

    ld.so (search_cache) reads the O(log n) keys its bisection visits and checks each string
    index as it uses it (_dl_cache_verify_ptr): a bad index ends that lookup, not the cache.
    Decoding every entry up front would cost ~600 MB and 8 s of CPU for a 1M-entry cache.
    """

    __slots__ = (
        "_all",
        "_strings",
        "count",
        "data",
        "hwcaps_names",
        "name",
        "order",
        "start",
        "string_base",
        "wide",
    )

    def __init__(self, data: bytes, name: str, order: str, start: int, count: int, wide: bool,
                 string_base: int, hwcaps_names: tuple[str, ...]) -> None:
        self.data = data
        self.name = name
        self.order = order
        self.start = start  # offset of entry 0
        self.count = count
        self.wide = wide  # new-format entries (24 bytes, with osversion and hwcap)
        self.string_base = string_base  # entry string indices count from here
        self.hwcaps_names = hwcaps_names
        self._strings: dict[int, bytes | None] = {}
        self._all: tuple[CacheEntry, ...] | None = None

    def _row(self, index: int) -> tuple[int, int, int, int, int]:
        if self.wide:
            flags, key, value, osversion, hwcap = struct.unpack_from(
                self.order + "iIIIQ", self.data, self.start + 24 * index)
            return flags, key, value, osversion, hwcap
        flags, key, value = struct.unpack_from(self.order + "iII", self.data, self.start + 12 * index)
        return flags, key, value, 0, 0

    def _raw(self, index: int) -> bytes | None:
        """The NUL-terminated string at a string index; None where ld.so could not use one."""
        if index in self._strings:
            return self._strings[index]
        offset = self.string_base + index
        data = self.data
        found: bytes | None = None
        if offset < len(data):
            end = data.find(b"\0", offset, offset + MAX_STRING + 1)
            if end >= 0:
                found = data[offset:end]
        self._strings[index] = found
        return found

    def key(self, index: int) -> bytes | None:
        """Entry `index`'s key, None if its string index is bogus."""
        return self._raw(self._row(index)[1])

    def entry(self, index: int) -> CacheEntry | None:
        """Entry `index`, None if its key or path cannot be read (ld.so skips such entries)."""
        flags, key, value, osversion, hwcap = self._row(index)
        raw_key, raw_path = self._raw(key), self._raw(value)
        if raw_key is None or raw_path is None:
            return None
        subdir = None
        if self.wide and _is_extension(hwcap) and (hwcap & 0xFFFFFFFF) < len(self.hwcaps_names):
            subdir = self.hwcaps_names[hwcap & 0xFFFFFFFF]
        return CacheEntry(_text(raw_key), _text(raw_path), flags, hwcap, subdir, osversion, index)

    def all(self) -> tuple[CacheEntry, ...]:
        """Every entry, as `ldconfig -p` lists them; a bad string is an InputFormatError."""
        if self._all is None:
            entries = []
            size = 24 if self.wide else 12
            for index in range(self.count):
                entry = self.entry(index)
                if entry is None:
                    at = self.start + size * index
                    raise InputFormatError(self.name, f"entry {index}: string index past the end "
                                           "of the file, unterminated or over-long", at)
                entries.append(entry)
            self._all = tuple(entries)
        return self._all


@dataclass(frozen=True, slots=True)
class LdCache:
    """A parsed ld.so.cache: the table ld.so uses, its layout and the generator string."""

    table: _Table
    format: str  # "old", "new" or "old+new"
    generator: str | None = None
    hwcaps_names: tuple[str, ...] = ()  # the glibc-hwcaps extension's names, in section order
    byteorder: str = "little"
    name: str = ""
    # What ld.so reads past without ignoring the cache (a malformed extension directory: no
    # glibc-hwcaps entry is then usable); `ldconfig -p` refuses such a file.
    problems: tuple[str, ...] = ()

    @property
    def entries(self) -> tuple[CacheEntry, ...]:
        """Every entry of the table ld.so uses (decoded on first use; InputFormatError if bad)."""
        return self.table.all()

    def __len__(self) -> int:
        return self.table.count

    def find(self, soname: str) -> list[CacheEntry]:
        """Every entry whose key is `soname`, in file order, without any filtering.

        Found by ld.so's bisection (the table is sorted by _dl_cache_libcmp), so a cache of any
        size costs O(log n) here; entries with unreadable strings are left out.
        """
        table = self.table
        found = []
        for index in self._binary_search(soname.encode("utf-8", "surrogateescape")):
            entry = table.entry(index)
            if entry is not None:
                found.append(entry)
        return found

    def ldconfig_lines(self) -> list[str]:
        """The listing `ldconfig -p` prints for this cache, line by line (InputFormatError where
        ldconfig -p fails: a bad string index, malformed extension data)."""
        if self.problems:
            raise InputFormatError(self.name, self.problems[0])
        entries = self.entries
        lines = [f"{len(entries)} libs found in cache `{self.name}'"]
        lines.extend("\t" + entry.describe() for entry in entries)
        if self.generator is not None:
            lines.append(f"Cache generated by: {self.generator}")
        return lines

    def lookup(self, soname: str, context: CacheLookupContext) -> list[CacheEntry]:
        """Usable entries for `soname`, best first, ranked as glibc 2.36's ld.so ranks them.

        Element 0 is exactly what ld.so takes from the cache (it never falls back to a second
        cache entry: if that file cannot be used it goes on with the default directories);
        element k is what it would take if elements 0..k-1 were not in the cache.
        """
        table = self.table
        group: list[CacheEntry] = []
        for index in self._binary_search(soname.encode("utf-8", "surrogateescape")):
            entry = table.entry(index)
            if entry is not None:  # a bad path index: _dl_cache_verify_ptr skips the entry
                group.append(entry)
        if not group:
            return []
        priorities = _hwcaps_priorities(self.hwcaps_names, context.hwcaps_subdirs)
        return self._rank(group, context, priorities)

    def _binary_search(self, name: bytes) -> list[int]:
        """Indices search_cache scans for `name`: first match found by bisection, then onward.

        A bogus key index met on the way ends the search with nothing, as in search_cache.
        """
        key = self.table.key
        left, right = 0, self.table.count - 1
        while left <= right:
            middle = (left + right) // 2
            probe = key(middle)
            if probe is None:
                return []
            cmp = _libcmp(name, probe)
            if cmp == 0:
                left = middle
                while middle > 0:
                    before = key(middle - 1)
                    if before is None or _libcmp(name, before) != 0:
                        break
                    middle -= 1
                group = []
                while middle <= right:
                    if middle > left:
                        after = key(middle)
                        if after is None or _libcmp(name, after) != 0:
                            break
                    group.append(middle)
                    middle += 1
                return group
            if cmp < 0:
                left = middle + 1
            else:
                right = middle - 1
        return []

    def _rank(self, group: list[CacheEntry], ctx: CacheLookupContext,
              priorities: list[int]) -> list[CacheEntry]:
        """search_cache's choice among `group`, then its next choice without it, and so on.

        New format: glibc-hwcaps entries compete by priority (ties: file order) until the scan
        meets a plain entry whose flags are accepted; that entry (if usable) comes next, and
        even an unusable one ends the scan while a glibc-hwcaps candidate is pending.  Old
        format: the scan keeps going until an entry with the default flags; without one the
        last accepted entry wins.
        """
        accepted = [e for e in group if e.flags in ctx.accepted_flags]
        if self.format == "old":
            exact = [e for e in accepted if e.flags == ctx.default_flags]
            return exact + [e for e in reversed(accepted) if e.flags != ctx.default_flags]
        platform = (1 << ctx.platform_bit) if ctx.platform_bit is not None else _U64
        exclude = ~(ctx.legacy_hwcap | ctx.platform_mask | HWCAP_TLS_MASK) & _U64
        ranked: list[CacheEntry] = []
        pending: list[tuple[int, int, CacheEntry]] = []  # (priority, index, entry): glibc-hwcaps
        for entry in accepted:
            hwcap = entry.hwcap
            wrong_platform = bool(ctx.platform_mask and hwcap & ctx.platform_mask
                                  and hwcap & ctx.platform_mask != platform)
            if _is_extension(hwcap):
                if ctx.x86_isa_bits is not None:
                    needed = 1 << ((hwcap >> 32) & DL_CACHE_HWCAP_ISA_LEVEL_MASK)
                    if needed & ctx.x86_isa_bits != needed:
                        continue
                index = hwcap & 0xFFFFFFFF
                priority = priorities[index] if index < len(priorities) else 0
                if priority and not wrong_platform:
                    heapq.heappush(pending, (priority, entry.index, entry))
                continue
            while pending:  # this plain entry ends any scan that already has a candidate
                ranked.append(heapq.heappop(pending)[2])
            if not (hwcap & exclude or wrong_platform):
                ranked.append(entry)
        while pending:
            ranked.append(heapq.heappop(pending)[2])
        return ranked


def _libcmp(p1: bytes, p2: bytes) -> int:
    """glibc's _dl_cache_libcmp: digit runs compare numerically, other bytes as signed chars."""
    i = j = 0
    n1, n2 = len(p1), len(p2)
    while i < n1:
        c1 = p1[i]
        c2 = p2[j] if j < n2 else 0
        if 0x30 <= c1 <= 0x39:
            if not 0x30 <= c2 <= 0x39:
                return 1
            start = i
            while i < n1 and 0x30 <= p1[i] <= 0x39:
                i += 1
            run1 = p1[start:i].lstrip(b"0")
            start = j
            while j < n2 and 0x30 <= p2[j] <= 0x39:
                j += 1
            run2 = p2[start:j].lstrip(b"0")
            if run1 != run2:  # compare as numbers of any length
                return 1 if (len(run1), run1) > (len(run2), run2) else -1
        elif 0x30 <= c2 <= 0x39:
            return -1
        elif c1 != c2:
            return _schar(c1) - _schar(c2)
        else:
            i += 1
            j += 1
    return -_schar(p2[j]) if j < n2 else 0


def _schar(byte: int) -> int:
    return byte - 256 if byte >= 128 else byte


def _hwcaps_priorities(cache_names: Sequence[str], active: Sequence[str]) -> list[int]:
    """glibc_hwcaps_priorities_init: merge the cache's sorted names with the sorted active list."""
    if not cache_names:
        return []
    prio = [(name.encode("utf-8", "surrogateescape"), rank + 1) for rank, name in enumerate(active)]
    prio.sort(key=lambda item: item[0])  # stable, like glibc's insertion sort
    left = [name.encode("utf-8", "surrogateescape") for name in cache_names]
    result: list[int] = []
    li = ri = 0
    while li < len(left) and ri < len(prio):
        if left[li] == prio[ri][0]:
            result.append(prio[ri][1])
            li += 1
            ri += 1
        elif left[li] < prio[ri][0]:
            result.append(0)
            li += 1
        else:
            ri += 1
    result.extend(0 for _ in range(li, len(left)))
    return result


def load_ld_cache(path: str = "/etc/ld.so.cache") -> LdCache:
    """Read and parse an ld.so.cache file of any size (ld.so maps all of it)."""
    # No size or entry-count limit: ld.so (elf/dl-cache.c _dl_load_cache_lookup) maps the whole
    # file and only checks that the header fits and that nlibs entries fit in the file's size.
    # The work here is bounded the same way: by the bytes really in the file.
    try:
        with open_regular(path) as handle:
            info = os.fstat(handle.fileno())
            on_disk = info.st_blocks * 512
            if info.st_size > _SPARSE_FLOOR and on_disk * 16 < info.st_size:
                # Memory is bounded by what is really on disk: ldconfig never writes holes.
                raise InputFormatError(path, f"sparse cache file: {info.st_size} bytes claimed, "
                                       f"{on_disk} on disk")
            data = handle.read(info.st_size)
    except OSError as exc:
        raise InputFormatError(path, f"cannot read cache: {exc.strerror or exc}") from None
    return parse_ld_cache(data, path)


def parse_ld_cache(data: bytes, name: str) -> LdCache:
    """Parse the bytes of an ld.so.cache (any of the three layouts); raise InputFormatError."""
    if data.startswith(MAGIC_NEW):
        return _Parser(data, name).parse_new(0, "new")
    if data.startswith(MAGIC_OLD):
        return _Parser(data, name).parse_old()
    raise InputFormatError(name, "not an ld.so.cache (bad magic)", 0)


class _Parser:
    """Bounds-checked reads over the cache bytes."""

    def __init__(self, data: bytes, name: str) -> None:
        self.data = data
        self.name = name
        self.strings: dict[int, str] = {}

    def fail(self, reason: str, offset: int | None = None) -> InputFormatError:
        return InputFormatError(self.name, reason, offset)

    def string(self, offset: int, where: int) -> str:
        cached = self.strings.get(offset)
        if cached is not None:
            return cached
        if offset >= len(self.data):
            raise self.fail(f"string offset {offset:#x} past the end of the file", where)
        end = self.data.find(b"\0", offset, offset + MAX_STRING + 1)
        if end < 0:
            raise self.fail(f"unterminated or over-long string at {offset:#x}", where)
        text = _text(self.data[offset:end])
        self.strings[offset] = text
        return text

    def parse_old(self) -> LdCache:
        data = self.data
        if len(data) <= 16:  # ld.so: cachesize > sizeof (struct cache_file)
            raise self.fail("truncated old-format header", len(data))
        room = (len(data) - 16) // 12
        order = "<"
        nlibs = struct.unpack_from("<I", data, 12)[0]
        if nlibs > room:
            nlibs = struct.unpack_from(">I", data, 12)[0]
            order = ">"
            if nlibs > room:
                raise self.fail(f"entry count {struct.unpack_from('<I', data, 12)[0]} "
                                "does not fit in the file", 12)
        end = 16 + nlibs * 12
        for new_at in sorted({(end + 7) & ~7, end}):
            if data[new_at:new_at + len(MAGIC_NEW)] == MAGIC_NEW and len(data) >= new_at + 48:
                return self.parse_new(new_at, "old+new")
        table = _Table(data, self.name, order, 16, nlibs, False, end, ())
        return LdCache(table, "old", byteorder=_ORDER_NAMES[order], name=self.name)

    def parse_new(self, base: int, fmt: str) -> LdCache:
        data = self.data
        # ld.so: cachesize > sizeof (struct cache_file_new); inside an old table, >= suffices.
        if len(data) < base + 48 + (base == 0):
            raise self.fail("truncated new-format header", len(data))
        endian = data[base + 28] & 3
        if endian == 1:
            raise self.fail("cache is marked invalid (endianness flag 1)", base + 28)
        room = (len(data) - base - 48) // 24
        if endian == 0:  # written by an ldconfig without endianness support: guess
            fits = struct.unpack_from("<I", data, base + 20)[0] <= room
            order = "<" if fits else ">"
        else:
            order = "<" if endian == 2 else ">"
        nlibs, _len_strings = struct.unpack_from(order + "II", data, base + 20)
        ext_offset = struct.unpack_from(order + "I", data, base + 32)[0]
        # The one structural check ld.so makes: nlibs entries fit in the file (no count limit).
        if nlibs > room:
            raise self.fail(f"entry count {nlibs} does not fit in the file", base + 20)
        hwcaps_names, generator, problem = self.extensions(order, ext_offset)
        table = _Table(data, self.name, order, base + 48, nlibs, True, base, hwcaps_names)
        return LdCache(table, fmt, generator, hwcaps_names, _ORDER_NAMES[order], self.name,
                       (problem,) if problem else ())

    def extensions(self, order: str, offset: int) -> tuple[tuple[str, ...], str | None, str | None]:
        """cache_extension_load: (glibc-hwcaps names, generator string, what was wrong).

        A malformed extension directory does not make ld.so ignore the cache: it loads
        without the extensions, so no glibc-hwcaps entry is usable (priority 0).
        """
        try:
            return self._extensions(order, offset)
        except InputFormatError as exc:
            return (), None, exc.reason

    def _extensions(self, order: str, offset: int) -> tuple[tuple[str, ...], str | None, str | None]:
        data = self.data
        if offset == 0:
            return (), None, None
        if offset % 4 or offset + 8 > len(data):
            raise self.fail(f"malformed extension directory offset {offset:#x}", offset)
        magic, count = struct.unpack_from(order + "II", data, offset)
        if magic != CACHE_EXTENSION_MAGIC:
            raise self.fail("bad extension directory magic", offset)
        if offset + 8 + count * 16 > len(data):
            raise self.fail(f"extension count {count} does not fit in the file", offset + 4)
        sections: dict[int, tuple[int, int]] = {}
        for i in range(count):
            tag, _flags, sec_off, sec_size = struct.unpack_from(order + "IIII", data,
                                                                offset + 8 + i * 16)
            if sec_off + sec_size > len(data):
                raise self.fail(f"extension section {i} extends past the end of the file",
                                offset + 8 + i * 16)
            if tag <= TAG_GLIBC_HWCAPS:
                sections[tag] = (sec_off, sec_size)
        generator = None
        if TAG_GENERATOR in sections:
            gen_off, gen_size = sections[TAG_GENERATOR]
            generator = data[gen_off:gen_off + gen_size].decode("utf-8", "replace")
        names: list[str] = []
        problem = None
        hw_off, hw_size = sections.get(TAG_GLIBC_HWCAPS, (0, 0))
        if hw_size and hw_off % 4 == 0 and hw_size % 4 == 0:  # cache_extension_verify
            for i, (index,) in enumerate(struct.iter_unpack(order + "I",
                                                            data[hw_off:hw_off + hw_size])):
                try:
                    names.append(self.string(index, hw_off + 4 * i))
                except InputFormatError as exc:
                    # ld.so gives a name it cannot read priority 0: "" is never an active one.
                    names.append("")
                    problem = problem or f"glibc-hwcaps name {i}: {exc.reason}"
        return tuple(names), generator, problem


_ORDER_NAMES = {"<": "little", ">": "big"}
