"""The binutils oracles: readelf and nm over many files in one process, output split per file."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ldscope.elf import constants as C
from tests.elf_oracle.sample import sample


@dataclass
class RelocSection:
    name: str
    offset: int
    count: int
    entries: list[tuple[int, int, str]]  # (r_offset, r_info, type name)
    relr_offsets: int | None = None  # RELR: how many addresses the words encode


@dataclass
class ReadelfReport:
    """What one file's section of `readelf -W -h -S -d -r -s -V -n -x .gnu_debuglink` says."""

    header: dict[str, str] = field(default_factory=dict)
    sections: list[tuple[int, str, str, int, int, int, int, str, int, int, int]] = field(
        default_factory=list
    )  # (index, name, type, addr, off, size, entsize, flags, link, info, align)
    dynamic: list[tuple[str, str]] | None = None  # (tag name, shown value)
    dynamic_count: int = 0
    relocations: list[RelocSection] = field(default_factory=list)
    symbols: dict[str, list[tuple[int, int, int, str, str, str, str, str]]] = field(
        default_factory=dict
    )  # table -> (num, value, size, type, bind, vis, ndx, name)
    symbol_counts: dict[str, int] = field(default_factory=dict)
    verdefs: list[tuple[int, str, str, list[str]]] = field(default_factory=list)
    verneeds: list[tuple[str, str, int, str]] = field(default_factory=list)
    build_ids: list[str] = field(default_factory=list)
    debuglink_hex: bytes | None = None


READELF_OPTIONS = ["-W", "-h", "-S", "-d", "-r", "-s", "-V", "-n", "-x", ".gnu_debuglink"]

_SECTION_RE = re.compile(
    r"^\s*\[\s*(\d+)\]\s(.*?)\s([0-9a-f]{8}|[0-9a-f]{16})\s([0-9a-f]{6,})\s([0-9a-f]{6,})\s"
    r"([0-9a-f]{2,})\s+([A-Za-z]*)\s+(\d+)\s+(\d+)\s+(\d+)$"
)
_SYMBOL_RE = re.compile(
    r"^\s*(\d+):\s([0-9a-f]+)\s+(0x[0-9a-f]+|\d+)\s"
    r"(<[^>]*>: \d+|\S+)\s+(<[^>]*>: \d+|\S+)\s+(\S+)(?:\s+\[[^\]]*\])?\s+"
    r"(OS \[0x[0-9a-f]+\]|\S+)\s?(.*)$"
)
_DYN_RE = re.compile(r"^\s*0x[0-9a-f]+\s+\(([^)]*)\)\s+(.*)$")
_RELOC_HDR = re.compile(
    r"^Relocation section '(.*)' at offset 0x([0-9a-f]+) contains (\d+) entr(?:y|ies):"
)
_RELOC_RE = re.compile(r"^([0-9a-f]+)\s+([0-9a-f]+)\s+(\S+)")
_VERDEF_RE = re.compile(
    r"^\s*(?:0x)?[0-9a-f]+: Rev: \d+\s+Flags: (.*?)\s+Index: (\d+)\s+Cnt: \d+(?:\s+Name: (.*))?$"
)
_PARENT_RE = re.compile(r"^\s*(?:0x)?[0-9a-f]+: Parent \d+: (.*)$")
_VERNEED_RE = re.compile(r"^\s*(?:0x)?[0-9a-f]+: Version: \d+\s+File: (.*?)\s+Cnt: \d+$")
_VERNAUX_RE = re.compile(r"^\s*(?:0x)?[0-9a-f]+:\s+Name: (.*?)\s+Flags: (.*?)\s+Version: (\d+)$")
_HEX_RE = re.compile(r"^  0x[0-9a-f]+ (.{35})")


def parse_readelf(text: str) -> ReadelfReport:
    """Parse one file's worth of readelf output (any subset of READELF_OPTIONS)."""
    r = ReadelfReport()
    mode = ""
    table = ""
    reloc: RelocSection | None = None
    hexdata: list[str] = []
    current_file = ""
    for line in text.splitlines():
        if not line.strip():
            if mode in ("header",):
                mode = ""
            continue
        if line.startswith("ELF Header:"):
            mode = "header"
            continue
        if line.startswith("Section Headers:"):
            mode = "sections"
            continue
        if line.startswith(("Dynamic section at offset", "Dynamic section contains")):
            m = re.search(r"contains (\d+) entr", line)
            r.dynamic = []
            r.dynamic_count = int(m.group(1)) if m else 0
            mode = "dynamic"
            continue
        m = _RELOC_HDR.match(line)
        if m:
            reloc = RelocSection(m.group(1), int(m.group(2), 16), int(m.group(3)), [])
            r.relocations.append(reloc)
            mode = "reloc"
            continue
        m = re.match(r"^Symbol table (?:'(.*)'|for image) contains (\d+) entr", line)
        if m:
            table = m.group(1) or "<image>"
            r.symbols[table] = []
            r.symbol_counts[table] = int(m.group(2))
            mode = "symbols"
            continue
        if line.startswith("Version definition section"):
            mode = "verdef"
            continue
        if line.startswith("Version needs section"):
            mode = "verneed"
            continue
        if line.startswith(("Version symbols section", "Displaying notes", "Program Headers")):
            mode = "notes" if line.startswith("Displaying notes") else "other"
            continue
        if line.startswith("Hex dump of section '.gnu_debuglink'"):
            mode = "hex"
            continue
        if line.startswith(("There are no", "There is no", "Key to Flags", "Relocation section")):
            mode = "other" if not line.startswith("Key to Flags") else "keys"
            continue
        if mode == "header":
            key, _, value = line.partition(":")
            r.header[key.strip()] = value.strip()
        elif mode == "sections":
            m = _SECTION_RE.match(line)
            if m:
                head = m.group(2)
                hm = re.match(r"^(\S*)\s+(.+?)\s*$", head)
                name, stype = (hm.group(1), hm.group(2)) if hm else ("", head.strip())
                r.sections.append((
                    int(m.group(1)), name, stype, int(m.group(3), 16), int(m.group(4), 16),
                    int(m.group(5), 16), int(m.group(6), 16), m.group(7), int(m.group(8)),
                    int(m.group(9)), int(m.group(10)),
                ))
        elif mode == "dynamic":
            m = _DYN_RE.match(line)
            if m and r.dynamic is not None:
                r.dynamic.append((m.group(1), m.group(2)))
        elif mode == "reloc" and reloc is not None:
            m = _RELOC_RE.match(line)
            relr = re.match(r"^\s+(\d+) offsets?$", line)
            if relr:
                reloc.relr_offsets = int(relr.group(1))
            elif m:
                reloc.entries.append((int(m.group(1), 16), int(m.group(2), 16), m.group(3)))
        elif mode == "symbols":
            m = _SYMBOL_RE.match(line)
            if m:
                size = m.group(3)
                r.symbols[table].append((
                    int(m.group(1)), int(m.group(2), 16),
                    int(size, 16) if size.startswith("0x") else int(size),
                    m.group(4), m.group(5), m.group(6), m.group(7), m.group(8),
                ))
        elif mode == "verdef":
            m = _VERDEF_RE.match(line)
            if m:
                r.verdefs.append((int(m.group(2)), m.group(1), m.group(3) or "", []))
            else:
                m = _PARENT_RE.match(line)
                if m and r.verdefs:
                    r.verdefs[-1][3].append(m.group(1))
        elif mode == "verneed":
            m = _VERNEED_RE.match(line)
            if m:
                current_file = m.group(1)
                continue
            m = _VERNAUX_RE.match(line)
            if m:
                r.verneeds.append((current_file, m.group(1), int(m.group(3)), m.group(2)))
        elif mode == "notes":
            m = re.search(r"\sBuild ID: ([0-9a-f]+)$", line)
            if m:
                r.build_ids.append(m.group(1))
        elif mode == "hex":
            m = _HEX_RE.match(line)
            if m:
                hexdata.append(m.group(1).replace(" ", ""))
    if hexdata:
        r.debuglink_hex = bytes.fromhex("".join(hexdata))
    return r


def _split_by_file(text: str, paths: Sequence[str], marker: str) -> dict[str, str]:
    if len(paths) == 1:
        return {paths[0]: text}
    out: dict[str, list[str]] = {}
    current: list[str] | None = None
    wanted = set(paths)
    for line in text.splitlines():
        name = _file_marker(line, marker)
        if name is not None and name in wanted:
            current = out.setdefault(name, [])
            continue
        if current is not None:
            current.append(line)
    return {p: "\n".join(v) for p, v in out.items()}


def _file_marker(line: str, marker: str) -> str | None:
    if marker == "readelf" and line.startswith("File: "):
        return line[6:]
    if marker == "nm" and line.endswith(":") and line.startswith("/"):
        return line[:-1]
    return None


def run_readelf(
    paths: Sequence[str], options: Sequence[str] = READELF_OPTIONS, readelf: str = "readelf"
) -> dict[str, ReadelfReport]:
    """Run one readelf over many files and parse each file's part of the output."""
    if not paths:
        return {}
    res = subprocess.run(
        [readelf, *options, *paths], capture_output=True, env=dict(os.environ, LC_ALL="C"),
        timeout=300,
    )
    text = res.stdout.decode("utf-8", "surrogateescape")
    return {p: parse_readelf(t) for p, t in _split_by_file(text, paths, "readelf").items()}


def run_nm_dynamic(paths: Sequence[str]) -> dict[str, list[tuple[str, str]]]:
    """`nm -D` for many files in one process: per file a list of (type letter, name)."""
    if not paths:
        return {}
    res = subprocess.run(
        ["nm", "-D", *paths], capture_output=True, env=dict(os.environ, LC_ALL="C"), timeout=300
    )
    text = res.stdout.decode("utf-8", "surrogateescape")
    out: dict[str, list[tuple[str, str]]] = {}
    for path, chunk in _split_by_file(text, paths, "nm").items():
        rows = []
        for line in chunk.splitlines():
            m = re.match(r"^(?:[0-9a-f]+| +) (\S) (.*)$", line)
            if m:
                rows.append((m.group(1), m.group(2)))
        out[path] = rows
    return out


# readelf -h "Machine:" text → ldscope's machine name. The entries whose name depends on
# the class or byte order are the 64-bit little-endian kin; readelf_machine() refines them.
READELF_MACHINES: dict[str, str] = {
    "Advanced Micro Devices X86-64": "x86_64",
    "AArch64": "aarch64",
    "IBM S/390": "s390x",
    "ARM": "arm",
    "PowerPC64": "ppc64le",
    "Intel 80386": "i386",
    "RISC-V": "riscv64",
    "LoongArch": "loongarch64",
    "MIPS R3000": "mips64",
    "None": "none",
    "Alpha": "alpha",
    "HPPA": "hppa",
    "MC68000": "m68k",
    "PowerPC": "ppc",
    "Sparc": "sparc",
    "Sparc v8+": "sparc",
    "Sparc v9": "sparcv9",
    "ARCv2": "arc_compact2",
    "ARCompact": "arc_compact",
    "Renesas / SuperH SH": "sh",
    "Siemens Tricore": "tricore",
    "Texas Instruments TMS320C2000 DSP family": "tic2000",
    "Microchip Technology dsPIC30F Digital Signal Controller": "dspic30f",
    "Intel IA-64": "ia64",
    "Linux BPF": "bpf",
    "QUALCOMM DSP6 Processor": "hexagon",
    "C-SKY": "csky",
}
# (64-bit name, 32-bit name, big-endian 64-bit name) where class or byte order decide.
_READELF_BY_CLASS: dict[str, tuple[str, str, str]] = {
    "Advanced Micro Devices X86-64": ("x86_64", "x32", "x86_64"),
    "PowerPC64": ("ppc64le", "ppc64le", "ppc64"),
    "RISC-V": ("riscv64", "riscv32", "riscv64"),
    "LoongArch": ("loongarch64", "loongarch32", "loongarch64"),
    "IBM S/390": ("s390x", "s390", "s390x"),
    "MIPS R3000": ("mips64", "mips", "mips64"),
}


def readelf_machine(header: dict[str, str]) -> str | None:
    """ldscope's machine name for a `readelf -h` header (its Machine, Class and Data lines);
    None if readelf printed no Machine line, the description itself if it is unmapped."""
    described = header.get("Machine")
    if described is None:
        return None
    if described in _READELF_BY_CLASS:
        wide, narrow, big = _READELF_BY_CLASS[described]
        if header.get("Class") == "ELF32":
            return narrow
        return big if "big endian" in header.get("Data", "") else wide
    return READELF_MACHINES.get(described, described)


READELF_TYPES = {"NONE": 0, "REL": 1, "EXEC": 2, "DYN": 3, "CORE": 4}
READELF_BINDS = {"LOCAL": 0, "GLOBAL": 1, "WEAK": 2, "UNIQUE": 10}
READELF_SYMTYPES = {"NOTYPE": 0, "OBJECT": 1, "FUNC": 2, "SECTION": 3, "FILE": 4, "COMMON": 5,
                    "TLS": 6, "IFUNC": 10, "REGISTER": 13}  # REGISTER: STT_SPARC_REGISTER
READELF_VIS = {"DEFAULT": 0, "INTERNAL": 1, "HIDDEN": 2, "PROTECTED": 3}
READELF_NDX = {"UND": 0, "ABS": C.SHN_ABS, "COM": C.SHN_COMMON, "LARGE_COM": 0xFF02}
READELF_VERFLAGS = {"none": 0, "BASE": 1, "WEAK": 2, "INFO": 4}


def readelf_number(text: str, names: dict[str, int]) -> int:
    """A readelf symbol column (name or `<OS specific>: 11` or `PRC[0xff00]`) as a number."""
    if text in names:
        return names[text]
    m = re.search(r"(?:: (\d+)$)|\[(0x[0-9a-f]+)\]$", text)
    if m:
        return int(m.group(1)) if m.group(1) else int(m.group(2), 16)
    return int(text)


def readelf_flags(text: str) -> int:
    """Version flags as readelf prints them (`none`, `BASE`, `WEAK`, `BASE | WEAK`)."""
    bits = 0
    for part in text.split("|"):
        part = part.strip()
        if part.startswith("<unknown:"):
            bits |= int(part[9:].strip(" >"), 16)
        else:
            bits |= READELF_VERFLAGS[part]
    return bits


def bracketed(value: str) -> str | None:
    m = re.search(r"\[(.*)\]$", value)
    return m.group(1) if m else None


def main() -> None:  # pragma: no cover - a convenience: print the sample composition
    import tempfile
    from collections import Counter

    workdir = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(tempfile.mkdtemp()) / "elf-corpus"
    files = sample(workdir)
    print(len(files), dict(Counter(f.kind for f in files)))


if __name__ == "__main__":  # pragma: no cover
    main()
