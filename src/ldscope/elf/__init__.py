"""Readers for the native file formats ldscope analyses: ELF files (through mmap, tables as
numpy views, names decoded on demand), ar archives (GNU, BSD, thin, .rlib) and GNU ld scripts.

Reading only: nothing here knows about loaders or linkers. Malformed input raises
`InputFormatError` naming the file and the offset.

    from ldscope.elf import ElfFile
    with ElfFile.open("/usr/lib/x86_64-linux-gnu/libstdc++.so.6") as elf:
        names = elf.dynsym.names()
"""

from __future__ import annotations

from ldscope.elf import constants
from ldscope.elf._archive import AR_MAGIC, THIN_MAGIC, Archive, ArchiveMember, is_archive
from ldscope.elf._archive_index import IndexedArchive
from ldscope.elf._file import ElfFile, Section, is_elf
from ldscope.elf._hashlookup import HashedNames, gnu_hash, lookup_exported, sysv_hash
from ldscope.elf._ldscript import (
    LinkerScript,
    ScriptInput,
    looks_like_linker_script,
    parse_linker_script,
    read_linker_script,
)
from ldscope.elf._regular import (
    NotRegularFileError,
    check_regular,
    open_regular,
    open_regular_fd,
    open_regular_text,
    read_regular,
    special_kind,
)
from ldscope.elf._relocs import REF_LOAD, REF_NONE, REF_PLT, copy_relocated_symbols
from ldscope.elf._sniff import NEVER_NATIVE, FileKind, detect_kind, sniff
from ldscope.elf._strings import StringTable
from ldscope.elf._symbols import Symbol, SymbolTable, format_versioned_name, is_exported
from ldscope.elf._versions import SymbolVersions, VersionDefinition, VersionRequirement
from ldscope.errors import ElfFormatError, InputFormatError

__all__ = [
    "AR_MAGIC",
    "NEVER_NATIVE",
    "REF_LOAD",
    "REF_NONE",
    "REF_PLT",
    "THIN_MAGIC",
    "Archive",
    "ArchiveMember",
    "ElfFile",
    "ElfFormatError",
    "FileKind",
    "HashedNames",
    "IndexedArchive",
    "InputFormatError",
    "LinkerScript",
    "NotRegularFileError",
    "ScriptInput",
    "Section",
    "StringTable",
    "Symbol",
    "SymbolTable",
    "SymbolVersions",
    "VersionDefinition",
    "VersionRequirement",
    "check_regular",
    "constants",
    "copy_relocated_symbols",
    "detect_kind",
    "format_versioned_name",
    "gnu_hash",
    "is_archive",
    "is_elf",
    "is_exported",
    "looks_like_linker_script",
    "lookup_exported",
    "open_regular",
    "open_regular_fd",
    "open_regular_text",
    "parse_linker_script",
    "read_linker_script",
    "read_regular",
    "sniff",
    "special_kind",
    "sysv_hash",
]
