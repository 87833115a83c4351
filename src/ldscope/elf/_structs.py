"""numpy dtypes for ELF structures, per class and byte order (built once, cached)."""

from __future__ import annotations

from functools import cache

import numpy as np


@cache
def elf_dtypes(is64: bool, little: bool) -> dict[str, np.dtype]:
    """The structured dtypes for one ELF flavour: ehdr, shdr, phdr, sym, dyn, rel, rela."""
    e = "<" if little else ">"
    addr = e + ("u8" if is64 else "u4")
    off = addr
    word = e + "u4"
    half = e + "u2"
    xword = e + ("u8" if is64 else "u4")
    sxword = e + ("i8" if is64 else "i4")
    ehdr = np.dtype(
        [
            ("e_ident", "u1", (16,)),
            ("e_type", half),
            ("e_machine", half),
            ("e_version", word),
            ("e_entry", addr),
            ("e_phoff", off),
            ("e_shoff", off),
            ("e_flags", word),
            ("e_ehsize", half),
            ("e_phentsize", half),
            ("e_phnum", half),
            ("e_shentsize", half),
            ("e_shnum", half),
            ("e_shstrndx", half),
        ]
    )
    shdr = np.dtype(
        [
            ("sh_name", word),
            ("sh_type", word),
            ("sh_flags", xword),
            ("sh_addr", addr),
            ("sh_offset", off),
            ("sh_size", xword),
            ("sh_link", word),
            ("sh_info", word),
            ("sh_addralign", xword),
            ("sh_entsize", xword),
        ]
    )
    if is64:
        phdr = np.dtype(
            [
                ("p_type", word),
                ("p_flags", word),
                ("p_offset", off),
                ("p_vaddr", addr),
                ("p_paddr", addr),
                ("p_filesz", xword),
                ("p_memsz", xword),
                ("p_align", xword),
            ]
        )
        sym = np.dtype(
            [
                ("st_name", word),
                ("st_info", "u1"),
                ("st_other", "u1"),
                ("st_shndx", half),
                ("st_value", addr),
                ("st_size", xword),
            ]
        )
    else:
        phdr = np.dtype(
            [
                ("p_type", word),
                ("p_offset", off),
                ("p_vaddr", addr),
                ("p_paddr", addr),
                ("p_filesz", word),
                ("p_memsz", word),
                ("p_flags", word),
                ("p_align", word),
            ]
        )
        sym = np.dtype(
            [
                ("st_name", word),
                ("st_value", addr),
                ("st_size", word),
                ("st_info", "u1"),
                ("st_other", "u1"),
                ("st_shndx", half),
            ]
        )
    dyn = np.dtype([("d_tag", sxword), ("d_val", xword)])
    rel = np.dtype([("r_offset", addr), ("r_info", xword)])
    rela = np.dtype([("r_offset", addr), ("r_info", xword), ("r_addend", sxword)])
    return {
        "ehdr": ehdr,
        "shdr": shdr,
        "phdr": phdr,
        "sym": sym,
        "dyn": dyn,
        "rel": rel,
        "rela": rela,
        "half": np.dtype(half),
        "word": np.dtype(word),
        "xword": np.dtype(xword),
    }
