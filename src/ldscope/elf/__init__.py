"""Readers for the native file formats ldscope analyses (ELF, ar archives, ld scripts)."""

from ldscope.elf._file import ElfFile, Section, is_elf
from ldscope.elf._symbols import Symbol, SymbolTable
from ldscope.errors import ElfFormatError, InputFormatError

__all__ = [
    "ElfFile",
    "ElfFormatError",
    "InputFormatError",
    "Section",
    "Symbol",
    "SymbolTable",
    "is_elf",
]
