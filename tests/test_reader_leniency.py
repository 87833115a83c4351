"""Readers read what the loader reads, and what readelf reads (issue 12, items 2-4).

Every case is a real file built here with gcc, damaged the way real files are, and checked
against the real glibc loader (ctypes.CDLL in a child process, or running the program) and
against readelf: PT_DYNAMIC is found by address as ld.so finds it; a `.dynamic` section
without PT_DYNAMIC is refused as ld.so refuses it; separate debug files are described, not
rejected; a broken section header table or one corrupt name is a warning, not a lost file.
"""

from __future__ import annotations

import json
import os
import shutil
import struct
import subprocess
import sys
from pathlib import Path

import pytest

from ldscope.elf import ElfFile

pytestmark = pytest.mark.skipif(shutil.which("gcc") is None or shutil.which("readelf") is None,
                                reason="gcc and readelf are needed")

PT_DYNAMIC, PT_NULL = 2, 0


def _ldscope(*args: str | Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "LC_ALL": "C"}
    return subprocess.run([sys.executable, "-m", "ldscope", *map(str, args)], capture_output=True,
                          text=True, env=env, timeout=120)


def _cdll(path: Path) -> str:
    """The real loader's verdict on dlopen(path): "ok" or its error message."""
    code = ("import ctypes, sys\ntry:\n    ctypes.CDLL(sys.argv[1])\n    print('ok')\n"
            "except OSError as e:\n    print(e)\n")
    return subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True,
                          timeout=60).stdout.strip()


def _gcc(*args: str | Path) -> None:
    subprocess.run(["gcc", *map(str, args)], check=True, capture_output=True, timeout=120)


def _phdrs(data: bytes) -> list[tuple[int, int]]:
    """(file offset of the header, p_type) of each program header (ELF64 little-endian)."""
    phoff = struct.unpack_from("<Q", data, 0x20)[0]
    phentsize, phnum = struct.unpack_from("<HH", data, 0x36)
    return [(phoff + i * phentsize, struct.unpack_from("<I", data, phoff + i * phentsize)[0])
            for i in range(phnum)]


@pytest.fixture(scope="module")
def libs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """libb.so, and liba.so needing it through RUNPATH $ORIGIN."""
    d = tmp_path_factory.mktemp("lenient")
    (d / "b.c").write_text("int b_value(void) { return 7; }\n")
    (d / "a.c").write_text("int b_value(void);\nint a_value(void) { return b_value() + 1; }\n")
    _gcc("-shared", "-fPIC", "-g", "-o", d / "libb.so", d / "b.c")
    _gcc("-shared", "-fPIC", "-g", "-o", d / "liba.so", d / "a.c", "-L", d, "-lb", "-Wl,-rpath,$ORIGIN")
    assert _cdll(d / "liba.so") == "ok"
    return d


def _patched(src: Path, dst: Path, patch: dict[int, bytes]) -> Path:
    data = bytearray(src.read_bytes())
    for offset, value in patch.items():
        data[offset:offset + len(value)] = value
    dst.write_bytes(bytes(data))
    return dst


def test_pt_dynamic_is_read_at_its_address_not_its_file_offset(libs: Path, tmp_path: Path) -> None:
    data = (libs / "liba.so").read_bytes()
    header = next(off for off, p_type in _phdrs(data) if p_type == PT_DYNAMIC)
    # p_offset points at the ELF header: glibc never looks at it (it uses l_addr + p_vaddr).
    shutil.copy(libs / "libb.so", tmp_path / "libb.so")
    lib = _patched(libs / "liba.so", tmp_path / "liba.so", {header + 8: struct.pack("<Q", 0x40)})
    assert _cdll(lib) == "ok"
    with ElfFile.open(lib) as elf:
        assert elf.dynamic is not None and elf.dynamic.needed == ("libb.so",)
    info = json.loads(_ldscope("info", "--format", "json", lib).stdout)
    assert info["files"][0]["needed"] == ["libb.so"]
    assert _ldscope("load", lib).returncode == 0
    # Without its dependency the real loader fails, and ldscope must say so too.
    (tmp_path / "libb.so").unlink()
    assert "libb.so: cannot open shared object file" in _cdll(lib)
    result = _ldscope("load", lib)
    assert result.returncode == 1 and "libb.so" in result.stdout and "DOES NOT LOAD" in result.stdout


def test_dynamic_section_without_pt_dynamic_is_refused_like_ld_so(libs: Path, tmp_path: Path) -> None:
    data = (libs / "libb.so").read_bytes()
    header = next(off for off, p_type in _phdrs(data) if p_type == PT_DYNAMIC)
    lib = _patched(libs / "libb.so", tmp_path / "libb.so", {header: struct.pack("<I", PT_NULL)})
    assert _cdll(lib).endswith("object file has no dynamic section")
    result = _ldscope("load", lib)
    assert result.returncode == 1 and "object file has no dynamic section" in result.stdout
    with ElfFile.open(lib) as elf:
        assert elf.dynamic is None and elf.dynamic_section_unused is not None
    text = _ldscope("info", lib)
    assert text.returncode == 0 and "no PT_DYNAMIC: the loader does not read it" in text.stdout
    # info still shows the section's NEEDED, apart and marked: neither ld.so nor readelf -d use it.
    a_data = (libs / "liba.so").read_bytes()
    a_header = next(off for off, p_type in _phdrs(a_data) if p_type == PT_DYNAMIC)
    a_lib = _patched(libs / "liba.so", tmp_path / "liba.so", {a_header: struct.pack("<I", PT_NULL)})
    info = json.loads(_ldscope("info", "--format", "json", a_lib).stdout)["files"][0]
    assert info["dynamic_section_unused"] is True and info["dynamic_section_needed"] == ["libb.so"]
    readelf = subprocess.run(["readelf", "-d", str(a_lib)], capture_output=True, text=True,
                             env={**os.environ, "LC_ALL": "C"})
    assert "There is no dynamic section" in readelf.stdout and info["needed"] == []  # as readelf -d
    assert _cdll(a_lib).endswith("object file has no dynamic section")


def test_separate_debug_file_is_described_and_listed(libs: Path, tmp_path: Path) -> None:
    debug = tmp_path / "liba.debug"
    subprocess.run(["objcopy", "--only-keep-debug", str(libs / "liba.so"), str(debug)], check=True)
    readelf = subprocess.run(["readelf", "-d", str(debug)], capture_output=True, text=True,
                             env={**os.environ, "LC_ALL": "C"})
    assert "There is no dynamic section" in readelf.stdout
    with ElfFile.open(debug) as elf:
        assert elf.is_separate_debug and elf.dynamic is None and elf.dynsym is None
        assert elf.symtab is not None and "a_value" in elf.symtab.names()
        build_id = elf.build_id
    info = _ldscope("info", debug)
    assert info.returncode == 0 and f"separate debug file: for build-id {build_id}" in info.stdout
    listing = _ldscope("symbols", "--all", debug)
    assert listing.returncode == 0 and " a_value" in listing.stdout
    assert _ldscope("symbols", "-D", debug).returncode == 1  # nothing to list, said; not an error
    # The real loader refuses it in these words; so does the model.
    assert _cdll(debug).endswith("object file has no dynamic section")
    assert "object file has no dynamic section" in _ldscope("load", debug).stdout
    # A directory holding debug files scans clean: a note, never an error finding.
    tree = tmp_path / "tree"
    tree.mkdir()
    shutil.copy(debug, tree / "liba.so.debug")
    shutil.copy(libs / "libb.so", tree / "libb.so")
    scan = _ldscope("scan", tree, "--format", "json")
    assert scan.returncode == 0, scan.stdout
    document = json.loads(scan.stdout)
    skipped = {Path(s["path"]).name: s for s in document["skipped"]}
    assert skipped["liba.so.debug"]["is_problem"] is False
    assert "separate debug file" in skipped["liba.so.debug"]["reason"]


@pytest.fixture(scope="module")
def hello(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("hello")
    (d / "hi.c").write_text('#include <stdio.h>\nint main(void) { puts("hi"); return 0; }\n')
    _gcc("-o", d / "hi", d / "hi.c")
    return d / "hi"


def _runs(program: Path) -> bool:
    os.chmod(program, 0o755)
    return subprocess.run([str(program)], capture_output=True, text=True, timeout=30).stdout == "hi\n"


@pytest.mark.parametrize("damage", ["no-entry-size", "no-count", "past-the-end"])
def test_broken_section_header_table_is_a_warning(hello: Path, tmp_path: Path, damage: str) -> None:
    data = hello.read_bytes()
    shoff = struct.unpack_from("<Q", data, 0x28)[0]
    if damage == "no-entry-size":  # e_shentsize 0 and e_shnum 0, e_shoff kept
        program = _patched(hello, tmp_path / "hi", {0x3A: b"\0\0", 0x3C: b"\0\0"})
    elif damage == "no-count":
        program = _patched(hello, tmp_path / "hi", {0x3A: b"\0\0"})
    else:  # the table cut off: the file ends where it begins
        program = tmp_path / "hi"
        program.write_bytes(data[:shoff + 16])
    assert _runs(program)  # the loader never reads section headers
    with ElfFile.open(program) as elf:
        assert len(elf.section_headers) == 0 and elf.warnings
        assert elf.dynamic is not None and "libc.so.6" in elf.dynamic.needed
    info = _ldscope("info", program)
    assert info.returncode == 0 and "warning:" in info.stdout and "libc.so.6" in info.stdout
    assert _ldscope("load", program).returncode == 0
    # Honest absence: the .symtab is not "stripped", it cannot be located.
    listing = _ldscope("symbols", "--all", program)
    assert listing.returncode == 1 and "no .symtab can be found" in listing.stderr
    assert "stripped" not in listing.stderr


def test_one_corrupt_symbol_name_is_shown_as_readelf_shows_it(hello: Path, tmp_path: Path) -> None:
    with ElfFile.open(hello) as elf:
        symtab = next(s for s in elf.sections if s.name == ".symtab")
        index = elf.symtab.names().index("main") if elf.symtab is not None else -1
    assert index > 0
    program = _patched(hello, tmp_path / "hi", {symtab.offset + index * 24: struct.pack("<I", 0x7FFFFFF0)})
    readelf = subprocess.run(["readelf", "-sW", str(program)], capture_output=True, text=True,
                             env={**os.environ, "LC_ALL": "C"})
    assert "<corrupt>" in readelf.stdout
    with ElfFile.open(program) as elf:
        assert elf.symtab is not None and elf.symtab.names()[index] == "<corrupt>"
        assert any(".symtab" in w for w in elf.warnings)
    listing = _ldscope("symbols", "--all", program)
    assert listing.returncode == 0 and "<corrupt>" in listing.stdout
    info = _ldscope("info", program)
    assert info.returncode == 0 and "shown as <corrupt>" in info.stdout
