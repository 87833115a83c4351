"""The machines table: one record per ABI, from ELF identity to every name tools give it.

For each ABI: the ELF machine and class, the Debian multiarch triplet, upstream glibc's
slibdir, GNU ld's emulation, the AT_PLATFORM the kernel usually passes, the glibc-hwcaps
subdirectories glibc 2.36 knows and the legacy hwcap bits ld.so still tries. Every other
module asks this table (the loader's default directories, the linker's emulation and
built-in directories, the driver fallback, near-miss searches), so a machine is added here
once. Names are those of `ldscope.elf.constants.machine_name`; common aliases ("amd64",
"arm64") are accepted.
"""

from __future__ import annotations

from dataclasses import dataclass

from ldscope.elf import constants as C

ELFCLASS32 = C.ELFCLASS32
ELFCLASS64 = C.ELFCLASS64


@dataclass(frozen=True, slots=True)
class Machine:
    """One ABI: a machine, a class (and for some, a byte order)."""

    name: str  # ldscope's ABI name: x86_64, x32, i386, aarch64, arm, ppc64le, ...
    e_machine: int
    elf_class: int
    triplet: str  # Debian multiarch tuple
    slibdir: str  # upstream glibc's default slibdir (libdir is /usr + slibdir)
    bfd_emulation: str | None  # GNU ld's -m value
    at_platform: str | None  # AT_PLATFORM when nothing better is known (None: the kernel passes none)
    hwcaps: tuple[str, ...] = ()  # glibc-hwcaps subdirectories, most preferred first
    legacy_hwcap_bits: tuple[tuple[int, str], ...] = ()  # (dl_hwcap bit, name) of HWCAP_IMPORTANT
    little_endian: bool | None = None  # None: both byte orders share this name

    @property
    def elf_machine_name(self) -> str:
        """The name ldscope.elf gives files of this ABI (`ElfFile.machine`)."""
        return C.machine_name(self.e_machine, self.elf_class, self.little_endian is not False)

    @property
    def multiarch_dirs(self) -> tuple[str, ...]:
        """Debian's multiarch library directories, where this ABI's libraries live."""
        return (f"/lib/{self.triplet}", f"/usr/lib/{self.triplet}")

    @property
    def usr_library_dirs(self) -> tuple[str, ...]:
        """Where packages install this ABI's libraries under /usr (multiarch, slibdir, plain)."""
        return (f"/usr/lib/{self.triplet}", "/usr/lib", "/usr/local/lib", "/usr" + self.slibdir)


_X86_HWCAPS = ("x86-64-v4", "x86-64-v3", "x86-64-v2")
_PPC_BITS = ((10, "dfp"), (28, "altivec"))
_S390_BITS = ((1, "zarch"), (4, "ldisp"), (5, "eimm"), (6, "dfp"), (11, "vx"), (13, "vxe"), (15, "vxe2"))

MACHINES: tuple[Machine, ...] = (
    Machine("x86_64", C.EM_X86_64, ELFCLASS64, "x86_64-linux-gnu", "/lib64", "elf_x86_64", "x86_64", _X86_HWCAPS),
    Machine("x32", C.EM_X86_64, ELFCLASS32, "x86_64-linux-gnux32", "/libx32", "elf32_x86_64", "x86_64", _X86_HWCAPS),
    Machine("i386", C.EM_386, ELFCLASS32, "i386-linux-gnu", "/lib", "elf_i386", "i686"),
    Machine("aarch64", C.EM_AARCH64, ELFCLASS64, "aarch64-linux-gnu", "/lib64", "aarch64linux", "aarch64",
            legacy_hwcap_bits=((8, "atomics"),)),
    Machine("arm", C.EM_ARM, ELFCLASS32, "arm-linux-gnueabihf", "/lib", "armelf_linux_eabi", "v7l",
            legacy_hwcap_bits=((6, "vfp"), (12, "neon"))),
    Machine("ppc64le", C.EM_PPC64, ELFCLASS64, "powerpc64le-linux-gnu", "/lib64", "elf64lppc", "power8",
            ("power10", "power9"), _PPC_BITS, little_endian=True),
    Machine("ppc64", C.EM_PPC64, ELFCLASS64, "powerpc64-linux-gnu", "/lib64", "elf64ppc", "power8",
            legacy_hwcap_bits=_PPC_BITS, little_endian=False),
    Machine("ppc", C.EM_PPC, ELFCLASS32, "powerpc-linux-gnu", "/lib", "elf32ppclinux", "ppc",
            legacy_hwcap_bits=_PPC_BITS),
    Machine("s390x", C.EM_S390, ELFCLASS64, "s390x-linux-gnu", "/lib64", "elf64_s390", "z196",
            ("z16", "z15", "z14", "z13"), _S390_BITS),
    Machine("s390", C.EM_S390, ELFCLASS32, "s390-linux-gnu", "/lib", "elf_s390", "z196", legacy_hwcap_bits=_S390_BITS),
    Machine("sparcv9", 43, ELFCLASS64, "sparc64-linux-gnu", "/lib64", "elf64_sparc", "sparc64"),
    Machine("sparc", 2, ELFCLASS32, "sparc-linux-gnu", "/lib", "elf32_sparc", "sparc"),
    Machine("mips", C.EM_MIPS, ELFCLASS32, "mips-linux-gnu", "/lib", "elf32btsmip", "mips", little_endian=False),
    Machine("mipsel", C.EM_MIPS, ELFCLASS32, "mipsel-linux-gnu", "/lib", "elf32ltsmip", "mips", little_endian=True),
    Machine("mips64", C.EM_MIPS, ELFCLASS64, "mips64-linux-gnuabi64", "/lib64", "elf64btsmip", "mips",
            little_endian=False),
    Machine("mips64el", C.EM_MIPS, ELFCLASS64, "mips64el-linux-gnuabi64", "/lib64", "elf64ltsmip", "mips",
            little_endian=True),
    Machine("riscv64", C.EM_RISCV, ELFCLASS64, "riscv64-linux-gnu", "/lib64/lp64d", "elf64lriscv", None),
    Machine("riscv32", C.EM_RISCV, ELFCLASS32, "riscv32-linux-gnu", "/lib32/ilp32d", "elf32lriscv", None),
    Machine("ia64", 50, ELFCLASS64, "ia64-linux-gnu", "/lib", None, "ia64"),
    Machine("loongarch64", C.EM_LOONGARCH, ELFCLASS64, "loongarch64-linux-gnu", "/lib64", "elf64loongarch",
            "loongarch"),
    Machine("alpha", 0x9026, ELFCLASS64, "alpha-linux-gnu", "/lib", "elf64alpha", "alpha"),
)  # fmt: skip

_BY_NAME: dict[str, Machine] = {m.name: m for m in MACHINES}
_BY_EMULATION: dict[str, Machine] = {m.bfd_emulation: m for m in MACHINES if m.bfd_emulation}

_ALIASES: dict[str, str] = {
    "amd64": "x86_64", "x86-64": "x86_64", "x64": "x86_64",
    "x86": "i386", "i486": "i386", "i586": "i386", "i686": "i386", "ia32": "i386",
    "arm64": "aarch64", "armhf": "arm", "armel": "arm", "armv7l": "arm", "armv8l": "arm",
    "powerpc64le": "ppc64le", "ppc64el": "ppc64le", "powerpc64": "ppc64", "powerpc": "ppc",
    "sparc64": "sparcv9", "loongarch": "loongarch64", "mips64el": "mips64el",
}  # fmt: skip


def normalize_machine(machine: str, elf_class: int | None = None) -> str:
    """Canonical machine name (ldscope.elf naming) for a machine name or common alias."""
    name = machine.strip().lower()
    name = name.removeprefix("em_")
    name = _ALIASES.get(name, name)
    wide = elf_class in (ELFCLASS64, 64)
    narrow = elf_class in (ELFCLASS32, 32)
    if name == "riscv":
        return "riscv32" if narrow else "riscv64"
    if name == "s390" and wide:
        return "s390x"
    if name == "mips" and wide:
        return "mips64"
    if name == "mipsel" and wide:
        return "mips64el"
    if name == "sparc" and wide:
        return "sparcv9"
    return name


def abi_name(machine: str, elf_class: int | None = None) -> str:
    """The ABI a (machine, class) pair names: like the machine, but x86_64 + ELFCLASS32 is x32."""
    name = normalize_machine(machine, elf_class)
    if name == "x86_64" and elf_class in (ELFCLASS32, 32):
        return "x32"
    return name


def machine(name: str, elf_class: int | None = None) -> Machine:
    """The record of a machine name (or alias) and class; ValueError for an unknown one."""
    found = _BY_NAME.get(abi_name(name, elf_class))
    if found is None:
        raise ValueError(f"no machine facts for {name!r}")
    return found


def known_machine(name: str, elf_class: int | None = None) -> Machine | None:
    """The record of a machine name and class, None if the table has none."""
    return _BY_NAME.get(abi_name(name, elf_class))


def by_emulation(emulation: str | None) -> Machine | None:
    """The machine GNU ld's `-m EMULATION` links for (None if unknown)."""
    return _BY_EMULATION.get(emulation) if emulation else None


def multiarch_triplet(name: str, elf_class: int | None = None, *, soft_float: bool = False) -> str:
    """Debian multiarch tuple, e.g. x86_64-linux-gnu (arm: gnueabihf unless soft_float)."""
    triplet = machine(name, elf_class).triplet
    if soft_float and triplet == "arm-linux-gnueabihf":
        return "arm-linux-gnueabi"
    return triplet
