"""`info`: a person-readable summary of an ELF file, an archive or a linker script."""

from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np

from ldscope.elf import ElfFile, FileKind, detect_kind
from ldscope.elf import constants as C
from ldscope.errors import InputFormatError


@dataclass(frozen=True, slots=True)
class RequiredVersions:
    """Versions an ELF file requires from one library (its verneed entry)."""

    file: str
    versions: tuple[str, ...]
    weak: tuple[str, ...]


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


def elf_info(elf: ElfFile, path: str) -> ElfInfo:
    """Summarise an open ELF file."""
    dyn = elf.dynamic
    dynsym = elf.dynsym
    defined = undefined = 0
    if dynsym is not None and len(dynsym):
        dmask = dynsym.defined_mask
        defined = int(np.count_nonzero(dmask))
        undefined = len(dynsym) - defined - 1
    by_file: dict[str, tuple[list[str], list[str]]] = {}
    for req in elf.version_requirements:
        entry = by_file.setdefault(req.file, ([], []))
        entry[0].append(req.name)
        if req.weak:
            entry[1].append(req.name)
    symtab = elf.symtab
    debuglink = elf.debuglink
    defs = elf.version_definitions
    return ElfInfo(
        path=path,
        elf_class=64 if elf.is64 else 32,
        endian="little" if elf.little_endian else "big",
        machine=elf.machine,
        type=elf.type_name,
        pie=(elf.e_type == C.ET_DYN and elf.interpreter is not None)
        or bool(dyn is not None and dyn.pie),
        osabi=elf.osabi,
        interpreter=elf.interpreter,
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
        build_id=elf.build_id,
        debuglink=debuglink[0] if debuglink else None,
    )


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
        with open(path, "rb") as fh:
            data = fh.read(1 << 20)
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
