"""What glibc 2.36's ld.so derives from the machine and CPU to build its search path: the
default directories, $LIB and $PLATFORM, glibc-hwcaps and legacy hwcap subdirectories.

Per-ABI facts come from the machines table (`_machines.py`); machine names are those of
`ldscope.elf.constants.machine_name`, aliases accepted. ELF classes are EI_CLASS values.

Everything marked "observed" was checked on Debian 12 (glibc 2.36) x86_64 with `LD_DEBUG=libs`
and `ld.so --help`; see docs/loader-facts.md.  The rest follows glibc 2.36's sources.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from ldscope.elf import open_regular_text
from ldscope.system._machines import abi_name, known_machine, machine, normalize_machine

# GNU_PROPERTY_X86_ISA_1_* bits, as in cpu_features->isa_1 and GNU_PROPERTY_X86_ISA_1_NEEDED.
X86_ISA_BASELINE = 1 << 0
X86_ISA_V2 = 1 << 1
X86_ISA_V3 = 1 << 2
X86_ISA_V4 = 1 << 3

Flavor = Literal["debian", "generic"]

# glibc's sysdeps/x86/get-isa-level.h, spelled as Linux /proc/cpuinfo flag names
# (pni = SSE3, abm = LZCNT, lahf_lm = LAHF/SAHF in 64-bit mode).
_X86_LEVEL_FLAGS: tuple[tuple[int, frozenset[str]], ...] = (
    (X86_ISA_BASELINE, frozenset({"cmov", "cx8", "fpu", "fxsr", "mmx", "sse", "sse2"})),
    (X86_ISA_V2, frozenset({"cx16", "lahf_lm", "popcnt", "pni", "ssse3", "sse4_1", "sse4_2"})),
    (X86_ISA_V3, frozenset({"avx", "avx2", "f16c", "fma", "abm", "movbe"})),
    (X86_ISA_V4, frozenset({"avx512f", "avx512bw", "avx512cd", "avx512dq", "avx512vl"})),
)

def default_search_dirs(
    name: str, elf_class: int | None = None, flavor: Flavor = "debian"
) -> tuple[str, ...]:
    """ld.so's built-in system search path (SYSTEM_DIRS) for a Debian or upstream-default glibc."""
    abi = machine(name, elf_class)
    if flavor == "debian":
        # Observed: `ld.so --help` and LD_DEBUG "(system search path)" on Debian 12 amd64.
        return (*abi.multiarch_dirs, "/lib", "/usr/lib")
    return (abi.slibdir, "/usr" + abi.slibdir)


def lib_expansion(name: str, elf_class: int | None = None, flavor: Flavor = "debian") -> str:
    """What `$LIB` in DT_RPATH/DT_RUNPATH expands to (DL_DST_LIB)."""
    abi = machine(name, elf_class)
    if flavor == "debian":
        return f"lib/{abi.triplet}"  # observed: lib/x86_64-linux-gnu
    return os.path.basename(abi.slibdir)  # upstream: $(notdir $(slibdir))


@dataclass(frozen=True, slots=True)
class CpuFeatures:
    """The CPU as ld.so sees it: vendor, feature flag names and the kernel's AT_PLATFORM."""

    machine: str
    vendor: str = ""
    flags: frozenset[str] = frozenset()
    at_platform: str | None = None


def parse_cpuinfo(text: str, machine: str | None = None) -> CpuFeatures:
    """CpuFeatures from the text of /proc/cpuinfo (first processor's block)."""
    mach = normalize_machine(machine or os.uname().machine)
    vendor = ""
    flags: set[str] = set()
    at_platform: str | None = None
    seen_flags = False
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if not sep:
            continue
        key = key.strip().lower()
        value = value.strip()
        if key == "vendor_id" and not vendor:
            vendor = value
        elif key in ("flags", "features") and not seen_flags:
            flags.update(value.split())
            seen_flags = True
        elif key == "cpu" and mach.startswith("ppc") and at_platform is None:
            first = value.split(",")[0].split()
            if first and first[0].lower().startswith("power"):
                at_platform = first[0].lower()
    return CpuFeatures(mach, vendor, frozenset(flags), at_platform)


def read_cpu_features(path: str = "/proc/cpuinfo", machine: str | None = None) -> CpuFeatures:
    """Read the running CPU's features from /proc/cpuinfo (reading only, bounded)."""
    with open_regular_text(path) as handle:
        text = handle.read(4 << 20)
    return parse_cpuinfo(text, machine)


def x86_isa_bits(cpu: CpuFeatures) -> int:
    """GNU_PROPERTY_X86_ISA_1_* bits the CPU supports, as glibc's get_isa_level computes."""
    bits = 0
    for bit, needed in _X86_LEVEL_FLAGS:
        if not needed <= cpu.flags:
            break
        bits |= bit
    return bits


def x86_64_level(cpu: CpuFeatures) -> int:
    """The x86-64 micro-architecture level (0 = below baseline, 1..4 = baseline..v4)."""
    return x86_isa_bits(cpu).bit_length()


def _active_count(machine: str, cpu: CpuFeatures) -> int:
    """How many glibc-hwcaps subdirectories (counted from the least capable) are usable."""
    f = cpu.flags
    if machine in ("x86_64", "x32"):
        return max(0, x86_64_level(cpu) - 1)
    if machine == "ppc64le":
        plat = cpu.at_platform or ""
        power9 = {"arch_3_00", "ieee128"} <= f or plat in ("power9", "power10")
        power10 = {"arch_3_1", "mma"} <= f or plat == "power10"
        return 0 if not power9 else (2 if power10 else 1)
    if machine == "s390x":
        steps = ({"vx"}, {"vxd", "vxe", "gs"}, {"vxe2", "vxp"}, {"vxp2"})
        count = 0
        for needed in steps:
            if not needed <= f:
                break
            count += 1
        return count
    return 0


def all_hwcaps_subdirs(machine: str, elf_class: int | None = None) -> tuple[str, ...]:
    """Every glibc-hwcaps subdirectory name glibc 2.36 knows for the ABI, most preferred first."""
    found = known_machine(machine, elf_class)
    return found.hwcaps if found is not None else ()


def hwcaps_subdirs(
    machine: str,
    cpu_features: CpuFeatures | None = None,
    elf_class: int | None = None,
    *,
    prepend: Sequence[str] = (),
    mask: Sequence[str] | None = None,
) -> tuple[str, ...]:
    """glibc-hwcaps subdirectory names ld.so searches, in priority order (most preferred first).

    `prepend` models `ld.so --glibc-hwcaps-prepend`, `mask` `--glibc-hwcaps-mask`; without a
    CPU the baseline is assumed (no subdirectory is active).  aarch64 has none in 2.36.
    """
    abi = abi_name(machine, elf_class)
    record = known_machine(abi)
    names = record.hwcaps if record is not None else ()
    active = _active_count(abi, cpu_features) if cpu_features is not None else 0
    chosen = names[len(names) - active:] if active else ()
    if mask is not None:
        allowed = set(mask)
        chosen = tuple(n for n in chosen if n in allowed)
    return tuple(prepend) + chosen


def platform_expansion(machine: str, cpu: CpuFeatures | None = None,
                       elf_class: int | None = None) -> str | None:
    """What `$PLATFORM` expands to (GLRO(dl_platform)); None: unset, the path element is dropped."""
    abi = abi_name(machine, elf_class)
    if cpu is not None and abi in ("x86_64", "x32", "i386"):
        chosen = _x86_platform(abi, cpu)
        if chosen is not None:
            return chosen
    if cpu is not None and cpu.at_platform:
        return cpu.at_platform
    record = known_machine(abi)
    if record is None:
        raise ValueError(f"no glibc loader facts for machine {machine!r}")
    return record.at_platform


def _x86_platform(abi: str, cpu: CpuFeatures) -> str | None:
    """dl_platform as sysdeps/x86/cpu-features.c overrides it (None: keep AT_PLATFORM)."""
    f = cpu.flags
    if abi == "i386":
        if "cmov" in f:
            return "i686"
        return "i586" if "cx8" in f else None
    if cpu.vendor != "GenuineIntel":
        return None  # only Intel CPUs get "haswell" / "xeon_phi"
    if {"avx512cd", "avx512er", "avx512pf"} <= f:
        return "xeon_phi"
    if {"avx2", "fma", "bmi1", "bmi2", "abm", "movbe", "popcnt"} <= f:
        return "haswell"
    return None


def legacy_hwcap_bits(machine: str, cpu: CpuFeatures | None = None,
                      elf_class: int | None = None) -> tuple[tuple[int, str], ...]:
    """The (bit, name) pairs of GLRO(dl_hwcap) & hwcap_mask, lowest bit first."""
    abi = abi_name(machine, elf_class)
    flags = cpu.flags if cpu is not None else frozenset()
    if abi in ("x86_64", "x32"):
        bits: list[tuple[int, str]] = [(1, "x86_64")]
        if (cpu is not None and cpu.vendor == "GenuineIntel" and "avx512cd" in flags
                and "avx512er" not in flags and {"avx512bw", "avx512dq", "avx512vl"} <= flags):
            bits.append((2, "avx512_1"))
        return tuple(bits)
    if abi == "i386":
        return ((0, "sse2"),) if "sse2" in flags else ()
    record = known_machine(abi)
    known = record.legacy_hwcap_bits if record is not None else ()
    return tuple(pair for pair in known if pair[1] in flags)


def legacy_hwcap_subdirs(machine: str, cpu: CpuFeatures | None = None,
                         elf_class: int | None = None) -> tuple[str, ...]:
    """Legacy hwcap subdirectories ld.so 2.36 still tries, in order, before the directory itself.

    The power set of (hwcap names, platform, "tls") as _dl_important_hwcaps builds it; it
    contains duplicates when the platform equals a hwcap name (observed on x86_64:
    tls/x86_64/x86_64, tls/x86_64, tls/x86_64, tls, x86_64/x86_64, x86_64, x86_64).
    """
    names = [name for _, name in legacy_hwcap_bits(machine, cpu, elf_class)]
    platform = platform_expansion(machine, cpu, elf_class)
    if platform is not None:
        names.append(platform)
    names.append("tls")
    count = len(names)
    full = (1 << count) - 1
    result: list[str] = []
    for n in range(full):  # the last combination is empty: the directory itself
        chosen = full - n
        result.append("/".join(names[k] for k in reversed(range(count)) if chosen >> k & 1))
    return tuple(result)


def search_subdirs(directory: str, machine: str, cpu: CpuFeatures | None = None,
                   elf_class: int | None = None) -> tuple[str, ...]:
    """Every directory ld.so tries for one search-path element, in order (as LD_DEBUG prints)."""
    base = directory.rstrip("/") or "/"
    prefix = base if base != "/" else ""
    dirs = [f"{prefix}/glibc-hwcaps/{name}" for name in hwcaps_subdirs(machine, cpu, elf_class)]
    dirs.extend(f"{prefix}/{sub}" for sub in legacy_hwcap_subdirs(machine, cpu, elf_class))
    dirs.append(base)
    return tuple(dirs)
