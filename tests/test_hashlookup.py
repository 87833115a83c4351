"""Looking names up through DT_GNU_HASH / DT_HASH, checked against pyelftools' .dynsym.

The answer for every name must be what reading the whole symbol table gives: defined
(st_shndx != SHN_UNDEF) with global or weak binding. Checked on the machine's libraries
(GNU hash), on libraries built here with only a SysV table, only a GNU table and both, and
on names that are absent, undefined, local, or share a hash bucket.
"""

from __future__ import annotations

import glob
import os
import random
from pathlib import Path

import pytest
from elftools.elf.elffile import ELFFile

from ldscope.elf import ElfFile
from ldscope.elf._hashlookup import HashedNames, gnu_hash, lookup_exported, sysv_hash
from tests.conftest import run


def oracle(path: str) -> tuple[set[str], set[str]]:
    """(exported names, every other .dynsym name) as pyelftools reads them."""
    exported: set[str] = set()
    others: set[str] = set()
    with open(path, "rb") as fh:
        section = ELFFile(fh).get_section_by_name(".dynsym")
        for sym in section.iter_symbols() if section is not None else ():
            if sym.entry["st_shndx"] != "SHN_UNDEF" and sym.entry["st_info"]["bind"] != "STB_LOCAL":
                exported.add(sym.name)
            else:
                others.add(sym.name)
    return exported, others - exported


def check(path: str, extra: list[str], rng: random.Random) -> int:
    """Ask for a sample of exported, unexported and absent names; return how many asked."""
    exported, others = oracle(path)
    asked = rng.sample(sorted(exported), min(300, len(exported)))
    unexported = sorted(others - {""})
    asked += rng.sample(unexported, min(100, len(unexported)))
    asked += [n + "_absent" for n in asked[:50]] + extra
    with ElfFile.open(path) as elf:
        found = lookup_exported(elf, HashedNames(asked))
    assert found is not None, f"{path}: no hash table"
    got = {asked[i] for i in found}
    assert got == {n for n in asked if n in exported}, path
    return len(asked)


def test_hash_functions_match_the_abi_examples() -> None:
    """Reference values: dl_new_hash and the System V ABI's elf_hash."""
    assert gnu_hash(b"") == 5381
    assert gnu_hash(b"printf") == 0x156B2BB8
    assert gnu_hash(b"exit") == 0x7C967E3F
    assert sysv_hash(b"printf") == 0x077905A6
    assert sysv_hash(b"exit") == 0x0006CF04


def test_system_libraries_answer_like_their_symbol_tables() -> None:
    """Every library of a sample of /usr/lib answers like its whole .dynsym."""
    rng = random.Random(7)
    libs = sorted(p for p in glob.glob("/usr/lib/x86_64-linux-gnu/*.so.*")
                  if os.path.isfile(p) and not os.path.islink(p))
    assert len(libs) >= 20
    asked = 0
    for path in rng.sample(libs, 40):
        with open(path, "rb") as fh:
            if fh.read(4) != b"\x7fELF":
                continue
        asked += check(path, ["malloc", "free", "main", "_init"], rng)
    assert asked > 5000


@pytest.mark.parametrize("style", ["sysv", "gnu", "both"])
def test_built_library_with_each_hash_style(tmp_path: Path, style: str) -> None:
    """A library with 600 exported, hidden and weak names; colliding buckets included."""
    lines = []
    for i in range(600):
        attr = '__attribute__((visibility("hidden"))) ' if i % 7 == 0 else ""
        weak = "__attribute__((weak)) " if i % 5 == 0 else ""
        lines.append(f"{attr}{weak}int fn_{i}(int x) {{ return x + {i}; }}")
    lines.append("extern int undefined_here(int);\nint calls(void) { return undefined_here(1); }")
    (tmp_path / "lib.c").write_text("\n".join(lines) + "\n")
    run(["gcc", "-shared", "-fPIC", f"-Wl,--hash-style={style}", "-o", "libmany.so", "lib.c"], cwd=tmp_path)
    path = str(tmp_path / "libmany.so")
    with ElfFile.open(path) as elf:
        has_gnu = elf.dynamic_tag(0x6FFFFEF5) is not None
        has_sysv = elf.dynamic_tag(4) is not None
    assert (has_gnu, has_sysv) == {"sysv": (False, True), "gnu": (True, False), "both": (True, True)}[style]
    names = [f"fn_{i}" for i in range(600)] + ["undefined_here", "calls", "fn_600", "fn_"]
    with ElfFile.open(path) as elf:
        found = {names[i] for i in lookup_exported(elf, HashedNames(names)) or []}
    assert found == {f"fn_{i}" for i in range(600) if i % 7} | {"calls"}
    check(path, [], random.Random(1))
