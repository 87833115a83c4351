"""`info`: a person-readable summary of an ELF file, an archive or a linker script."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

import numpy as np

from ldscope.elf import ElfFile, FileKind, detect_kind, read_regular
from ldscope.elf import constants as C
from ldscope.errors import InputFormatError


@dataclass(frozen=True, slots=True)
class RequiredVersions:
    """Versions an ELF file requires from one library (its verneed entry)."""

    file: str
    versions: tuple[str, ...]
    weak: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class SegmentInfo:
    """One program header, as `readelf -l` lists it."""

    type: str
    offset: int
    vaddr: int
    filesz: int
    memsz: int
    flags: str


@dataclass(frozen=True, slots=True)
class SectionInfo:
    """One section header, as `readelf -S` lists it."""

    index: int
    name: str
    type: str
    addr: int
    offset: int
    size: int


@dataclass(frozen=True, slots=True)
class ElfInfo:
    """The loader- and linker-relevant facts of one ELF file."""

    path: str
    elf_class: int
    endian: str
    machine: str
    type: str
    pie: bool
    osabi: int
    interpreter: str | None
    soname: str | None
    needed: tuple[str, ...]
    rpath: str | None
    runpath: str | None
    flags: tuple[str, ...]
    flags_1: tuple[str, ...]
    bind_now: bool
    versions_required: tuple[RequiredVersions, ...]
    versions_defined: tuple[str, ...]
    version_base: str | None
    dynamic_symbols: int
    dynamic_defined: int
    dynamic_undefined: int
    symtab_symbols: int | None
    sections: int
    stripped: bool
    build_id: str | None
    debuglink: str | None
    separate_debug: bool = False  # a separate debug file: no code, no dynamic section
    lazy_binding_applies: bool = True  # False where "binding" means nothing (static, .o, core)
    dynamic_section_unused: bool = False  # a .dynamic section ld.so never reads (no PT_DYNAMIC)
    dynamic_section_needed: tuple[str, ...] = ()  # that section's DT_NEEDED (not the loader's)
    warnings: tuple[str, ...] = ()  # parts that could not be read, each named
    segments: tuple[SegmentInfo, ...] = ()
    section_list: tuple[SectionInfo, ...] = ()
    kind: str = "elf"


@dataclass(frozen=True, slots=True)
class MemberInfo:
    """One archive member as `info` shows it."""

    name: str
    size: int
    is_elf: bool
    skip_reason: str | None
    indexed_symbols: int


@dataclass(frozen=True, slots=True)
class ArchiveInfo:
    """An ar archive: its format, members and symbol index."""

    path: str
    format: str
    members: tuple[MemberInfo, ...]
    has_index: bool
    index_format: str | None
    index_symbols: int
    ld_refuses: bool
    kind: str = "archive"


@dataclass(frozen=True, slots=True)
class ScriptInput:
    """One input a linker script references."""

    name: str
    as_needed: bool
    in_group: bool


@dataclass(frozen=True, slots=True)
class ScriptInfo:
    """A GNU ld script (such as glibc's libc.so) and what it references."""

    path: str
    output_format: tuple[str, ...]
    inputs: tuple[ScriptInput, ...]
    search_dirs: tuple[str, ...]
    unknown_commands: tuple[str, ...]
    kind: str = "linker-script"


FileInfo = ElfInfo | ArchiveInfo | ScriptInfo


_T = TypeVar("_T")


def _part(warnings: list[str], what: str, read: Callable[[], _T]) -> _T | None:
    """Read one part of a file (None if malformed, reported by name: the rest is read)."""
    try:
        return read()
    except InputFormatError as exc:
        warnings.append(f"{what}: {exc.reason}; not read")
        return None


def elf_info(elf: ElfFile, path: str) -> ElfInfo:
    """Summarise an open ELF file (what cannot be read is named in `warnings`)."""
    warnings: list[str] = []
    dyn = _part(warnings, "dynamic section", lambda: elf.dynamic)
    # A .dynamic section the loader never reads (no PT_DYNAMIC; readelf -d shows none either).
    unused = _part(warnings, ".dynamic section", lambda: elf.section_dynamic) if dyn is None else None
    dynsym = _part(warnings, "dynamic symbol table", lambda: elf.dynsym)
    defined = undefined = 0
    if dynsym is not None and len(dynsym):
        dmask = dynsym.defined_mask
        defined = int(np.count_nonzero(dmask))
        undefined = len(dynsym) - defined - 1
    by_file: dict[str, tuple[list[str], list[str]]] = {}
    for req in (_part(warnings, "version requirements", lambda: elf.version_requirements) or ()):
        entry = by_file.setdefault(req.file, ([], []))
        entry[0].append(req.name)
        if req.weak:
            entry[1].append(req.name)
    symtab = _part(warnings, ".symtab", lambda: elf.symtab)
    debuglink = _part(warnings, ".gnu_debuglink", lambda: elf.debuglink)
    defs = _part(warnings, "version definitions", lambda: elf.version_definitions) or ()
    build_id = _part(warnings, "notes", lambda: elf.build_id)
    loadable = elf.e_type in (C.ET_DYN, C.ET_EXEC)
    return ElfInfo(
        path=path,
        elf_class=64 if elf.is64 else 32,
        endian="little" if elf.little_endian else "big",
        machine=elf.machine,
        type=elf.type_name,
        # readelf's rule: DF_1_PIE makes a DYN file an executable (glibc's libc.so.6 has an
        # interpreter, to run as a program, and is still a shared object).
        pie=bool(dyn is not None and dyn.pie),
        osabi=elf.osabi,
        interpreter=_part(warnings, "PT_INTERP", lambda: elf.interpreter),
        soname=dyn.soname if dyn else None,
        needed=dyn.needed if dyn else (),
        rpath=dyn.rpath_raw if dyn else None,
        runpath=dyn.runpath_raw if dyn else None,
        flags=tuple(dyn.flag_names()) if dyn else (),
        flags_1=tuple(dyn.flag_1_names()) if dyn else (),
        bind_now=bool(dyn and dyn.now),
        versions_required=tuple(
            RequiredVersions(f, tuple(v), tuple(w)) for f, (v, w) in by_file.items()
        ),
        versions_defined=tuple(d.name for d in defs if not d.is_base),
        version_base=next((d.name for d in defs if d.is_base), None),
        dynamic_symbols=len(dynsym) if dynsym is not None else 0,
        dynamic_defined=defined,
        dynamic_undefined=max(undefined, 0),
        symtab_symbols=len(symtab) if symtab is not None else None,
        sections=len(elf.section_headers),
        stripped=elf.is_stripped,
        build_id=build_id,
        debuglink=debuglink[0] if debuglink else None,
        separate_debug=elf.is_separate_debug,
        lazy_binding_applies=loadable and dyn is not None and not elf.is_separate_debug,
        dynamic_section_unused=elf.dynamic_section_unused is not None,
        dynamic_section_needed=unused.needed if unused is not None else (),
        warnings=tuple(elf.warnings) + tuple(warnings),
        segments=tuple(_segments(elf)),
        section_list=tuple(SectionInfo(s.index, s.name, _SECTION_TYPES.get(s.type, f"{s.type:#x}"), s.addr, s.offset, s.size)
                           for s in elf.sections),
    )


# readelf's names for the common program header and section types; others print as numbers.
_SEGMENT_TYPES = {0: "NULL", 1: "LOAD", 2: "DYNAMIC", 3: "INTERP", 4: "NOTE", 5: "SHLIB", 6: "PHDR",
                  7: "TLS", 0x6474E550: "GNU_EH_FRAME", 0x6474E551: "GNU_STACK", 0x6474E552: "GNU_RELRO",
                  0x6474E553: "GNU_PROPERTY", 0x6474E554: "GNU_SFRAME"}
_SECTION_TYPES = {0: "NULL", 1: "PROGBITS", 2: "SYMTAB", 3: "STRTAB", 4: "RELA", 5: "HASH", 6: "DYNAMIC",
                  7: "NOTE", 8: "NOBITS", 9: "REL", 10: "SHLIB", 11: "DYNSYM", 14: "INIT_ARRAY",
                  15: "FINI_ARRAY", 16: "PREINIT_ARRAY", 17: "GROUP", 18: "SYMTAB_SHNDX", 19: "RELR",
                  0x6FFFFFF5: "GNU_ATTRIBUTES", 0x6FFFFFF6: "GNU_HASH", 0x6FFFFFFD: "VERDEF",
                  0x6FFFFFFE: "VERNEED", 0x6FFFFFFF: "VERSYM", 0x70000003: "ARM_ATTRIBUTES"}


def _segments(elf: ElfFile) -> list[SegmentInfo]:
    headers = elf.program_headers
    result = []
    for p_type, p_flags, offset, vaddr, filesz, memsz in zip(
            headers["p_type"].tolist(), headers["p_flags"].tolist(), headers["p_offset"].tolist(),
            headers["p_vaddr"].tolist(), headers["p_filesz"].tolist(), headers["p_memsz"].tolist()):
        flags = "".join(c if p_flags & bit else " " for c, bit in (("R", 4), ("W", 2), ("E", 1)))
        result.append(SegmentInfo(_SEGMENT_TYPES.get(p_type, f"{p_type:#x}"), offset, vaddr, filesz, memsz, flags))
    return result


def archive_info(path: str) -> ArchiveInfo:
    """Summarise an ar archive (members, index, whether GNU ld would refuse it)."""
    from ldscope.elf import Archive

    with Archive.open(path) as archive:
        members = tuple(
            MemberInfo(
                m.name, m.size, m.is_elf, m.skip_reason, len(archive.symbols_defined_by(m))
            )
            for m in archive.members
        )
        return ArchiveInfo(
            path=path,
            format=archive.kind,
            members=members,
            has_index=archive.has_index,
            index_format=archive.index_format,
            index_symbols=len(archive.index_entries),
            ld_refuses=archive.ld_reports_no_index,
        )


def script_info(path: str) -> ScriptInfo:
    """Summarise a GNU ld script."""
    from ldscope.elf import parse_linker_script

    try:
        data = read_regular(path, 1 << 20)
    except OSError as exc:
        raise InputFormatError(path, f"cannot read: {exc.strerror or exc}") from None
    script = parse_linker_script(data.decode("utf-8", "replace"), path)
    fmt = script.output_format
    output_format = (fmt,) if isinstance(fmt, str) else tuple(fmt or ())
    return ScriptInfo(
        path=path,
        output_format=output_format,
        inputs=tuple(ScriptInput(i.name, i.as_needed, i.in_group) for i in script.inputs),
        search_dirs=tuple(script.search_dirs),
        unknown_commands=tuple(script.unknown_commands),
    )


def describe(path: str) -> FileInfo:
    """Summarise any supported file; unsupported or malformed input raises InputFormatError."""
    kind = detect_kind(path)
    if kind is FileKind.ELF:
        try:
            with ElfFile.open(path) as elf:
                return elf_info(elf, path)
        except OSError as exc:
            raise InputFormatError(path, f"cannot read: {exc.strerror or exc}") from None
    if kind is FileKind.ARCHIVE:
        return archive_info(path)
    if kind is FileKind.LINKER_SCRIPT:
        return script_info(path)
    size = os.path.getsize(path)
    raise InputFormatError(path, f"not an ELF file, ar archive or linker script ({size} bytes)", 0)
