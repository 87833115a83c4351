"""ELF constants and their names (gABI, GNU extensions, common machines' relocation types)."""

from __future__ import annotations

# e_ident
ELF_MAGIC = b"\x7fELF"  # EI_MAG0..EI_MAG3
ELFCLASS32 = 1
ELFCLASS64 = 2
ELFDATA2LSB = 1
ELFDATA2MSB = 2

# e_type
ET_NONE, ET_REL, ET_EXEC, ET_DYN, ET_CORE = 0, 1, 2, 3, 4
ELF_TYPE_NAMES = {0: "NONE", 1: "REL", 2: "EXEC", 3: "DYN", 4: "CORE"}

# e_machine: every value binutils' include/elf/common.h names (binutils 2.43), as short
# lowercase names in the style of GNU tools' architecture names. Where one value has several
# names (a reused or deprecated number) the current one wins. Anything else is EM_<number>.
# machine_name() refines some by class and byte order (ppc64le, riscv32/64, s390/s390x, x32).
MACHINE_NAMES: dict[int, str] = {
    0: "none", 1: "m32", 2: "sparc", 3: "i386", 4: "m68k", 5: "m88k", 6: "iamcu", 7: "i860",
    8: "mips", 9: "s370", 10: "mips_rs3_le", 11: "old_sparcv9", 15: "hppa", 17: "vpp550",
    # SPARC v8+ (32-bit code using v9 instructions) is the 32-bit sparc ABI: the same loader,
    # libraries and relocations, and GNU ld links it with EM_SPARC objects.
    18: "sparc",
    19: "i960", 20: "ppc", 21: "ppc64", 22: "s390x", 23: "spu", 36: "v800", 37: "fr20",
    38: "rh32", 39: "mcore", 40: "arm", 41: "alpha", 42: "sh", 43: "sparcv9", 44: "tricore",
    45: "arc", 46: "h8300", 47: "h8300h", 48: "h8s", 49: "h8500", 50: "ia64", 51: "mips_x",
    52: "coldfire", 53: "m68hc12", 54: "mma", 55: "pcp", 56: "ncpu", 57: "ndr1",
    58: "starcore", 59: "me16", 60: "st100", 61: "tinyj", 62: "x86_64", 63: "pdsp",
    64: "pdp10", 65: "pdp11", 66: "fx66", 67: "st9plus", 68: "st7", 69: "m68hc16",
    70: "m68hc11", 71: "m68hc08", 72: "m68hc05", 73: "svx", 74: "st19", 75: "vax", 76: "cris",
    77: "javelin", 78: "firepath", 79: "zsp", 80: "mmix", 81: "huany", 82: "prism", 83: "avr",
    84: "fr30", 85: "d10v", 86: "d30v", 87: "v850", 88: "m32r", 89: "mn10300", 90: "mn10200",
    91: "picojava", 92: "or1k", 93: "arc_compact", 94: "xtensa", 95: "videocore",
    96: "tmm_gpp", 97: "ns32k", 98: "tpc", 99: "snp1k", 100: "st200", 101: "ip2k", 102: "max",
    103: "cr", 104: "f2mc16", 105: "msp430", 106: "blackfin", 107: "se_c33", 108: "sep",
    109: "arca", 110: "unicore", 111: "excess", 112: "dxp", 113: "nios2", 114: "crx",
    115: "xgate", 116: "c166", 117: "m16c", 118: "dspic30f", 119: "ce", 120: "m32c",
    131: "tsk3000", 132: "rs08", 134: "ecog2", 135: "score", 136: "dsp24", 137: "videocore3",
    138: "lm32", 139: "se_c17", 140: "tic6x", 141: "tic2000", 142: "tic5500", 144: "ti_pru",
    160: "mmdsp_plus", 161: "cypress_m8c", 162: "r32c", 163: "trimedia",
    164: "hexagon",  # EM_QDSP6: Qualcomm's DSP6 is Hexagon
    165: "8051", 166: "stxp7x", 167: "nds32", 168: "ecog1x", 169: "maxq30", 170: "ximo16",
    171: "manik", 172: "craynv2", 173: "rx", 174: "metag", 175: "elbrus", 176: "ecog16",
    177: "cr16", 178: "etpu", 179: "sle9x", 180: "l1om", 181: "k1om", 183: "aarch64",
    185: "avr32", 186: "stm8", 187: "tile64", 188: "tilepro", 189: "microblaze", 190: "cuda",
    191: "tilegx", 192: "cloudshield", 193: "corea_1st", 194: "corea_2nd",
    195: "arc_compact2", 196: "open8", 197: "rl78", 198: "videocore5", 199: "78k0r",
    200: "56800ex", 201: "ba1", 202: "ba2", 203: "xcore", 204: "mchp_pic", 205: "intelgt",
    210: "km32", 211: "kmx32", 212: "kmx16", 213: "kmx8", 214: "kvarc", 215: "cdp",
    216: "coge", 217: "cool", 218: "norc", 219: "csr_kalimba", 220: "z80", 221: "visium",
    222: "ft32", 223: "moxie", 224: "amdgpu", 243: "riscv", 244: "lanai", 245: "ceva",
    246: "ceva_x2", 247: "bpf", 248: "graphcore_ipu", 249: "img1", 250: "nfp", 251: "ve",
    252: "csky", 253: "arc_compact3_64", 254: "mcs6502", 255: "arc_compact3", 256: "kvx",
    257: "65816", 258: "loongarch", 259: "kf32",
    # Unofficial values binutils still reads (written before a number was assigned).
    0x1057: "avr", 0x1059: "msp430", 0x1223: "epiphany", 0x2530: "mt", 0x3330: "fr30",
    0x4157: "wasm", 0x4688: "xc16x", 0x4DEF: "s12z", 0x5441: "frv", 0x5AA5: "dlx",
    0x7650: "d10v", 0x7676: "d30v", 0x8217: "ip2k", 0x9025: "ppc", 0x9026: "alpha",
    0x9041: "m32r", 0x9080: "v850", 0xA390: "s390x", 0xABC7: "xtensa", 0xAD45: "xstormy16",
    0xBAAB: "microblaze", 0xBEEF: "mn10300", 0xDEAD: "mn10200", 0xF00D: "mep",
    0xFEB0: "m32c", 0xFEBA: "iq2000", 0xFEBB: "nios32", 0xFEED: "moxie",
}  # fmt: skip
EM_386, EM_PPC, EM_PPC64, EM_S390, EM_ARM = 3, 20, 21, 22, 40
EM_X86_64, EM_AARCH64, EM_RISCV, EM_LOONGARCH, EM_MIPS = 62, 183, 243, 258, 8
EM_S390_OLD = 0xA390

# Section types
SHT_NULL, SHT_PROGBITS, SHT_SYMTAB, SHT_STRTAB, SHT_RELA = 0, 1, 2, 3, 4
SHT_HASH, SHT_DYNAMIC, SHT_NOTE, SHT_NOBITS, SHT_REL = 5, 6, 7, 8, 9
SHT_DYNSYM = 11
SHT_GROUP = 17
SHT_SYMTAB_SHNDX = 18
SHT_RELR = 19
SHT_GNU_HASH = 0x6FFFFFF6
SHT_GNU_VERDEF = 0x6FFFFFFD
SHT_GNU_VERNEED = 0x6FFFFFFE
SHT_GNU_VERSYM = 0x6FFFFFFF
GRP_COMDAT = 1

# Special section indices
SHN_UNDEF = 0
SHN_LORESERVE = 0xFF00
SHN_ABS = 0xFFF1
SHN_COMMON = 0xFFF2
SHN_XINDEX = 0xFFFF

# Program header types
PT_NULL, PT_LOAD, PT_DYNAMIC, PT_INTERP, PT_NOTE = 0, 1, 2, 3, 4
PT_PHDR, PT_TLS = 6, 7
PT_GNU_EH_FRAME, PT_GNU_STACK, PT_GNU_RELRO = 0x6474E550, 0x6474E551, 0x6474E552

# Dynamic tags
DT_NULL, DT_NEEDED, DT_PLTRELSZ, DT_PLTGOT, DT_HASH = 0, 1, 2, 3, 4
DT_STRTAB, DT_SYMTAB, DT_RELA, DT_RELASZ, DT_RELAENT = 5, 6, 7, 8, 9
DT_STRSZ, DT_SYMENT, DT_INIT, DT_FINI, DT_SONAME, DT_RPATH = 10, 11, 12, 13, 14, 15
DT_SYMBOLIC, DT_REL, DT_RELSZ, DT_RELENT, DT_PLTREL = 16, 17, 18, 19, 20
DT_DEBUG, DT_TEXTREL, DT_JMPREL, DT_BIND_NOW = 21, 22, 23, 24
DT_RUNPATH, DT_FLAGS = 29, 30
DT_RELRSZ, DT_RELR, DT_RELRENT = 35, 36, 37
DT_GNU_HASH = 0x6FFFFEF5
DT_VERSYM = 0x6FFFFFF0
DT_FLAGS_1 = 0x6FFFFFFB
DT_VERDEF, DT_VERDEFNUM = 0x6FFFFFFC, 0x6FFFFFFD
DT_VERNEED, DT_VERNEEDNUM = 0x6FFFFFFE, 0x6FFFFFFF
DT_AUXILIARY, DT_FILTER = 0x7FFFFFFD, 0x7FFFFFFF

# DT_FLAGS bits
DF_FLAG_NAMES = {0x1: "ORIGIN", 0x2: "SYMBOLIC", 0x4: "TEXTREL", 0x8: "BIND_NOW", 0x10: "STATIC_TLS"}
DF_BIND_NOW = 0x8
# DT_FLAGS_1 bits
DF_1_FLAG_NAMES = {
    0x1: "NOW",
    0x2: "GLOBAL",
    0x4: "GROUP",
    0x8: "NODELETE",
    0x10: "LOADFLTR",
    0x20: "INITFIRST",
    0x40: "NOOPEN",
    0x80: "ORIGIN",
    0x100: "DIRECT",
    0x200: "TRANS",
    0x400: "INTERPOSE",
    0x800: "NODEFLIB",
    0x1000: "NODUMP",
    0x2000: "CONFALT",
    0x4000: "ENDFILTEE",
    0x8000: "DISPRELDNE",
    0x10000: "DISPRELPND",
    0x20000: "NODIRECT",
    0x40000: "IGNMULDEF",
    0x80000: "NOKSYMS",
    0x100000: "NOHDR",
    0x200000: "EDITED",
    0x400000: "NORELOC",
    0x800000: "SYMINTPOSE",
    0x1000000: "GLOBAUDIT",
    0x2000000: "SINGLETON",
    0x4000000: "STUB",
    0x8000000: "PIE",
}
DF_1_NOW, DF_1_NODEFLIB, DF_1_PIE = 0x1, 0x800, 0x8000000

# Symbols
STB_LOCAL, STB_GLOBAL, STB_WEAK, STB_GNU_UNIQUE = 0, 1, 2, 10
BIND_NAMES = {0: "LOCAL", 1: "GLOBAL", 2: "WEAK", 10: "UNIQUE"}
STT_NOTYPE, STT_OBJECT, STT_FUNC, STT_SECTION, STT_FILE = 0, 1, 2, 3, 4
STT_COMMON, STT_TLS, STT_GNU_IFUNC = 5, 6, 10
TYPE_NAMES = {
    0: "NOTYPE",
    1: "OBJECT",
    2: "FUNC",
    3: "SECTION",
    4: "FILE",
    5: "COMMON",
    6: "TLS",
    10: "IFUNC",
}
STV_DEFAULT, STV_INTERNAL, STV_HIDDEN, STV_PROTECTED = 0, 1, 2, 3
VISIBILITY_NAMES = {0: "DEFAULT", 1: "INTERNAL", 2: "HIDDEN", 3: "PROTECTED"}

# Symbol versioning
VER_NDX_LOCAL, VER_NDX_GLOBAL = 0, 1
VERSYM_HIDDEN = 0x8000
VERSYM_VERSION = 0x7FFF
VER_FLG_BASE, VER_FLG_WEAK = 0x1, 0x2

# Notes
NT_GNU_BUILD_ID = 3


def machine_name(e_machine: int, elf_class: int = ELFCLASS64, little_endian: bool = True) -> str:
    """Human name of an e_machine value, distinguishing ppc64 from ppc64le and 32/64-bit kin."""
    if e_machine == EM_PPC64:
        return "ppc64le" if little_endian else "ppc64"
    if e_machine == EM_RISCV:
        return "riscv64" if elf_class == ELFCLASS64 else "riscv32"
    if e_machine == EM_LOONGARCH:
        return "loongarch64" if elf_class == ELFCLASS64 else "loongarch32"
    if e_machine in (EM_S390, EM_S390_OLD):
        return "s390x" if elf_class == ELFCLASS64 else "s390"
    if e_machine == EM_X86_64 and elf_class == ELFCLASS32:
        return "x32"  # the x32 ABI: x86-64 code in ELFCLASS32 files (its own loader and libraries)
    if e_machine == EM_MIPS:
        return "mips64" if elf_class == ELFCLASS64 else "mips"
    return MACHINE_NAMES.get(e_machine, f"EM_{e_machine}")


# Relocation type names: the ones whose timing matters to the loader (PLT vs data), plus the
# commonest others. Unknown types print as R_<machine>_<number>.
_RELOC_NAMES: dict[int, dict[int, str]] = {
    EM_X86_64: {
        0: "R_X86_64_NONE", 1: "R_X86_64_64", 2: "R_X86_64_PC32", 4: "R_X86_64_PLT32",
        5: "R_X86_64_COPY", 6: "R_X86_64_GLOB_DAT", 7: "R_X86_64_JUMP_SLOT",
        8: "R_X86_64_RELATIVE", 9: "R_X86_64_GOTPCREL", 10: "R_X86_64_32", 11: "R_X86_64_32S",
        16: "R_X86_64_DTPMOD64", 17: "R_X86_64_DTPOFF64", 18: "R_X86_64_TPOFF64",
        19: "R_X86_64_TLSGD", 20: "R_X86_64_TLSLD", 22: "R_X86_64_GOTTPOFF",
        24: "R_X86_64_PC64", 36: "R_X86_64_TLSDESC", 37: "R_X86_64_IRELATIVE",
        41: "R_X86_64_GOTPCRELX", 42: "R_X86_64_REX_GOTPCRELX",
    },
    EM_386: {
        0: "R_386_NONE", 1: "R_386_32", 2: "R_386_PC32", 3: "R_386_GOT32", 4: "R_386_PLT32",
        5: "R_386_COPY", 6: "R_386_GLOB_DAT", 7: "R_386_JMP_SLOT", 8: "R_386_RELATIVE",
        14: "R_386_TLS_TPOFF", 35: "R_386_TLS_DTPMOD32", 36: "R_386_TLS_DTPOFF32",
        37: "R_386_TLS_TPOFF32", 41: "R_386_TLS_DESC", 42: "R_386_IRELATIVE",
    },
    EM_AARCH64: {
        0: "R_AARCH64_NONE", 257: "R_AARCH64_ABS64", 1024: "R_AARCH64_COPY",
        1025: "R_AARCH64_GLOB_DAT", 1026: "R_AARCH64_JUMP_SLOT", 1027: "R_AARCH64_RELATIVE",
        1028: "R_AARCH64_TLS_DTPMOD", 1029: "R_AARCH64_TLS_DTPREL", 1030: "R_AARCH64_TLS_TPREL",
        1031: "R_AARCH64_TLSDESC", 1032: "R_AARCH64_IRELATIVE",
    },
    EM_ARM: {
        0: "R_ARM_NONE", 2: "R_ARM_ABS32", 17: "R_ARM_TLS_DTPMOD32", 18: "R_ARM_TLS_DTPOFF32",
        19: "R_ARM_TLS_TPOFF32", 20: "R_ARM_COPY", 21: "R_ARM_GLOB_DAT",
        22: "R_ARM_JUMP_SLOT", 23: "R_ARM_RELATIVE", 13: "R_ARM_TLS_DESC",
        160: "R_ARM_IRELATIVE",
    },
    EM_RISCV: {
        0: "R_RISCV_NONE", 1: "R_RISCV_32", 2: "R_RISCV_64", 3: "R_RISCV_RELATIVE",
        4: "R_RISCV_COPY", 5: "R_RISCV_JUMP_SLOT", 6: "R_RISCV_TLS_DTPMOD32",
        7: "R_RISCV_TLS_DTPMOD64", 8: "R_RISCV_TLS_DTPREL32", 9: "R_RISCV_TLS_DTPREL64",
        10: "R_RISCV_TLS_TPREL32", 11: "R_RISCV_TLS_TPREL64", 12: "R_RISCV_TLSDESC",
        58: "R_RISCV_IRELATIVE",
    },
    EM_PPC64: {
        0: "R_PPC64_NONE", 19: "R_PPC64_COPY", 20: "R_PPC64_GLOB_DAT",
        21: "R_PPC64_JMP_SLOT", 22: "R_PPC64_RELATIVE", 38: "R_PPC64_ADDR64",
        68: "R_PPC64_DTPMOD64", 73: "R_PPC64_TPREL64", 78: "R_PPC64_DTPREL64",
        248: "R_PPC64_IRELATIVE",
    },
    EM_PPC: {
        0: "R_PPC_NONE", 1: "R_PPC_ADDR32", 19: "R_PPC_COPY", 20: "R_PPC_GLOB_DAT",
        21: "R_PPC_JMP_SLOT", 22: "R_PPC_RELATIVE", 248: "R_PPC_IRELATIVE",
    },
    EM_S390: {
        0: "R_390_NONE", 4: "R_390_32", 9: "R_390_COPY", 10: "R_390_GLOB_DAT",
        11: "R_390_JMP_SLOT", 12: "R_390_RELATIVE", 22: "R_390_64", 54: "R_390_TLS_DTPMOD",
        55: "R_390_TLS_DTPOFF", 56: "R_390_TLS_TPOFF", 61: "R_390_IRELATIVE",
    },
    EM_LOONGARCH: {
        0: "R_LARCH_NONE", 1: "R_LARCH_32", 2: "R_LARCH_64", 3: "R_LARCH_RELATIVE",
        4: "R_LARCH_COPY", 5: "R_LARCH_JUMP_SLOT", 6: "R_LARCH_TLS_DTPMOD32",
        7: "R_LARCH_TLS_DTPMOD64", 8: "R_LARCH_TLS_DTPREL32", 9: "R_LARCH_TLS_DTPREL64",
        10: "R_LARCH_TLS_TPREL32", 11: "R_LARCH_TLS_TPREL64", 12: "R_LARCH_IRELATIVE",
        14: "R_LARCH_TLS_DESC64",
    },
}

# Relocation types that the loader resolves lazily at first call (unless BIND_NOW & co).
LAZY_RELOC_TYPES: dict[int, frozenset[int]] = {
    EM_X86_64: frozenset({7}),
    EM_386: frozenset({7}),
    EM_AARCH64: frozenset({1026}),
    EM_ARM: frozenset({22}),
    EM_RISCV: frozenset({5}),
    EM_PPC64: frozenset({21}),
    EM_PPC: frozenset({21}),
    EM_S390: frozenset({11}),
    EM_LOONGARCH: frozenset({5}),
}

COPY_RELOC_TYPES: dict[int, int] = {
    EM_X86_64: 5, EM_386: 5, EM_AARCH64: 1024, EM_ARM: 20, EM_RISCV: 4,
    EM_PPC64: 19, EM_PPC: 19, EM_S390: 9, EM_LOONGARCH: 4,
}


def reloc_type_name(e_machine: int, r_type: int) -> str:
    """Name of a relocation type for a machine, e.g. R_X86_64_JUMP_SLOT."""
    names = _RELOC_NAMES.get(e_machine)
    if names is not None and r_type in names:
        return names[r_type]
    return f"R_{MACHINE_NAMES.get(e_machine, f'EM{e_machine}').upper()}_{r_type}"
