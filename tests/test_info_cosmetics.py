"""`info` says what readelf says about a file's kind, and only what applies (issue 12, item 6)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ldscope.inspection import ElfInfo, describe

pytestmark = pytest.mark.skipif(shutil.which("gcc") is None or shutil.which("readelf") is None,
                                reason="gcc and readelf are needed")


def _readelf_type(path: Path | str) -> str:
    out = subprocess.run(["readelf", "-hW", str(path)], capture_output=True, text=True,
                         env={**os.environ, "LC_ALL": "C"}).stdout
    match = re.search(r"^\s*Type:\s*(.+)$", out, re.M)
    assert match is not None
    return match.group(1).strip()


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("kinds")
    (d / "m.c").write_text("int main(void) { return 0; }\n")
    files = {"pie": d / "pie", "nopie": d / "nopie", "static": d / "static", "object": d / "m.o",
             "shared": d / "libm_.so"}
    subprocess.run(["gcc", "-pie", "-fPIE", "-o", files["pie"], d / "m.c"], check=True)
    subprocess.run(["gcc", "-no-pie", "-o", files["nopie"], d / "m.c"], check=True)
    subprocess.run(["gcc", "-static", "-o", files["static"], d / "m.c"], check=True)
    subprocess.run(["gcc", "-c", "-o", files["object"], d / "m.c"], check=True)
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", files["shared"], d / "m.c"], check=True)
    return files


def _info(path: Path | str) -> ElfInfo:
    info = describe(str(path))
    assert isinstance(info, ElfInfo)
    return info


def test_pie_is_decided_by_df_1_pie_as_readelf_decides(built: dict[str, Path]) -> None:
    libc = "/lib/x86_64-linux-gnu/libc.so.6"
    cases = [built["pie"], built["shared"], built["nopie"]] + ([libc] if os.path.exists(libc) else [])
    for path in cases:
        readelf_pie = "Position-Independent Executable" in _readelf_type(path)
        assert _info(path).pie == readelf_pie, path
    if os.path.exists(libc):  # it has an interpreter, and is still a shared object
        assert _info(libc).interpreter is not None and not _info(libc).pie


def test_binding_line_only_where_lazy_binding_means_something(built: dict[str, Path]) -> None:
    assert _info(built["pie"]).lazy_binding_applies and _info(built["shared"]).lazy_binding_applies
    for kind in ("static", "object"):
        assert not _info(built[kind]).lazy_binding_applies, kind
    text = subprocess.run([sys.executable, "-m", "ldscope", "info", str(built["static"]), str(built["object"]),
                           str(built["pie"])], capture_output=True, text=True).stdout
    blocks = text.split("\n\n")
    assert "binding:" not in blocks[0] and "binding:" not in blocks[1] and "binding:" in blocks[2]


def test_verbose_lists_program_and_section_headers_like_readelf(built: dict[str, Path]) -> None:
    info = _info(built["pie"])
    out = subprocess.run(["readelf", "-lSW", str(built["pie"])], capture_output=True, text=True,
                         env={**os.environ, "LC_ALL": "C"}).stdout
    readelf_sections = re.findall(r"^\s*\[\s*\d+\]\s+(\S+)", out, re.M)
    assert [s.name for s in info.section_list][1:] == readelf_sections[1:]  # [0] is the null section
    readelf_segments = re.findall(r"^\s{2}([A-Z_]+)\s+0x", out, re.M)
    assert [s.type for s in info.segments] == readelf_segments
    terse = subprocess.run([sys.executable, "-m", "ldscope", "info", str(built["pie"])],
                           capture_output=True, text=True).stdout
    verbose = subprocess.run([sys.executable, "-m", "ldscope", "info", "-v", str(built["pie"])],
                             capture_output=True, text=True).stdout
    assert "segment LOAD" not in terse and "segment LOAD" in verbose and ".text" in verbose
