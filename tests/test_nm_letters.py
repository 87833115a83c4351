"""nm letters and hidden symbols, checked against the real `nm` (binutils) on gcc-built
objects: `N` for symbols in debugging sections, mapping symbols hidden per machine."""

from __future__ import annotations

import os
import shutil
import struct
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from ldscope.cli import cli
from ldscope.elf import constants as C
from ldscope.inspection import is_mapping_symbol
from tests.conftest import run

SOURCE = r"""
__asm__(".text\n"
        "\"$x\": nop\n" "\"$d\": nop\n" "\"$x.foo\": nop\n" "\"$d.1\": nop\n" "\"$a\": nop\n"
        "\"$t\": nop\n" "\"$t.x\": nop\n" "\"$m\": nop\n" "\"$b\": nop\n" "\"$xrv64i2p1\": nop\n"
        "\"$q\": nop\n" "\"$X\": nop\n" "\"$xy\": nop\n" "\"$\": nop\n" "keep_me: nop\n"
        ".section .debug_foo,\"\",@progbits\n" "dbg_local: .byte 0\n"
        ".globl dbg_global\n" "dbg_global: .byte 0\n"
        ".section .zdebug_x,\"\",@progbits\n" "zdbg_local: .byte 0\n"
        ".section .note_other,\"\",@progbits\n" "nondebug_local: .byte 0\n"
        ".text\n");
int f(void) { return 0; }
int common_array[7];  /* -fcommon: nm prints its size (28) as the value */
"""
DOLLAR_NAMES = ["$x", "$d", "$x.foo", "$d.1", "$a", "$t", "$t.x", "$m", "$b", "$xrv64i2p1", "$q", "$X", "$xy", "$"]


@pytest.fixture(scope="module")
def objects(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The same object as x86-64, and relabelled (e_machine patched) AArch64, RISC-V and ARM:
    nm picks its target, and so its special-symbol rule, from e_machine alone."""
    if shutil.which("gcc") is None or shutil.which("nm") is None:
        pytest.skip("gcc or nm is not installed")
    d = tmp_path_factory.mktemp("nmletters")
    (d / "m.c").write_text(SOURCE)
    run(["gcc", "-fcommon", "-c", "-o", "m64.o", "m.c"], cwd=d)
    built = {"x86_64": d / "m64.o"}
    try:
        run(["gcc", "-m32", "-fcommon", "-c", "-o", "m32.o", "m.c"], cwd=d)
    except AssertionError:
        pass  # no 32-bit support: the ARM case is skipped
    for name, src, machine in (("aarch64", "m64.o", C.EM_AARCH64), ("riscv", "m64.o", C.EM_RISCV),
                               ("arm", "m32.o", C.EM_ARM)):
        if not (d / src).exists():
            continue
        data = bytearray((d / src).read_bytes())
        struct.pack_into("<H", data, 18, machine)
        (d / f"{name}.o").write_bytes(bytes(data))
        built[name] = d / f"{name}.o"
    return built


def nm_rows(path: Path) -> list[tuple[int | None, str, str]]:
    out = subprocess.run(["nm", "-p", str(path)], capture_output=True, text=True, check=True,
                         env={**os.environ, "LC_ALL": "C"}).stdout
    return parse(out)


def ldscope_rows(*args: str) -> list[tuple[int | None, str, str]]:
    result = CliRunner().invoke(cli, ["symbols", "--all", *args], catch_exceptions=False)
    assert result.exit_code == 0, result.stderr
    return parse(result.stdout)


def parse(text: str) -> list[tuple[int | None, str, str]]:
    """(value or None, letter, name) per line: nm pads 32-bit values to 8 digits, ldscope to 16."""
    rows = []
    for line in text.splitlines():
        value, letter, name = line[:-1].rsplit(" ", 2) if line.endswith(" ") else line.rsplit(" ", 2)
        rows.append((int(value, 16) if value.strip() else None, letter, name))
    return rows


@pytest.mark.parametrize("machine", ["x86_64", "aarch64", "riscv", "arm"])
def test_listing_matches_nm(objects: dict[str, Path], machine: str) -> None:
    if machine not in objects:
        pytest.skip("no 32-bit gcc for the ARM-labelled object")
    assert ldscope_rows(str(objects[machine])) == nm_rows(objects[machine])


def test_debug_section_symbols_are_uppercase_N(objects: dict[str, Path]) -> None:
    letters = {name: letter for _, letter, name in ldscope_rows(str(objects["x86_64"]))}
    assert letters["dbg_local"] == "N"  # local, yet uppercase: nm's debugging-symbol letter
    assert letters["zdbg_local"] == "N"
    assert letters["dbg_global"] == "N"
    assert letters["nondebug_local"] == "n"  # a non-alloc section not named as debugging
    assert letters["common_array"] == "C"
    values = {name: value for value, _, name in ldscope_rows(str(objects["x86_64"]))}
    assert values["common_array"] == 28  # st_size, as bfd reads a common symbol's value


def test_mapping_symbols_hidden_per_machine(objects: dict[str, Path]) -> None:
    shown = {m: {n for _, _, n in ldscope_rows(str(p))} for m, p in objects.items()}
    assert set(DOLLAR_NAMES) <= shown["x86_64"]  # nothing is special on x86-64
    assert not {"$x", "$d", "$x.foo", "$d.1", "$m"} & shown["aarch64"]
    assert {"$a", "$t", "$xy", "$X"} <= shown["aarch64"]
    assert not {"$x", "$d", "$x.foo", "$xy", "$xrv64i2p1"} & shown["riscv"]
    assert {"$a", "$m", "$X"} <= shown["riscv"]
    if "arm" in shown:
        assert not {"$a", "$t", "$t.x", "$d", "$b", "$q"} & shown["arm"]
        assert {"$X", "$xy", "$", "$xrv64i2p1"} <= shown["arm"]


def test_special_syms_shows_them(objects: dict[str, Path]) -> None:
    names = {n for _, _, n in ldscope_rows("--special-syms", str(objects["aarch64"]))}
    assert set(DOLLAR_NAMES) <= names


def test_is_mapping_symbol_rules() -> None:
    assert is_mapping_symbol(C.EM_AARCH64, "$x.42") and not is_mapping_symbol(C.EM_AARCH64, "$xy")
    assert is_mapping_symbol(C.EM_ARM, "$t") and not is_mapping_symbol(C.EM_ARM, "$T")
    assert is_mapping_symbol(C.EM_RISCV, "") and is_mapping_symbol(C.EM_RISCV, ".L12")
    assert not is_mapping_symbol(C.EM_X86_64, "$x")
