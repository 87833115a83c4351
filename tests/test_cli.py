"""The `ldscope info` and `ldscope symbols` commands, end to end, on gcc-built files."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from ldscope.cli import cli


def invoke(*args: str) -> tuple[int, str, str]:
    """Run the CLI in-process; (exit code, stdout, stderr)."""
    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def readelf(*args: str) -> str:
    return subprocess.run(["readelf", "-W", *args], capture_output=True, text=True, check=True).stdout


def test_help_lists_commands_and_exit_codes() -> None:
    code, out, _ = invoke("--help")
    assert code == 0
    assert "symbols" in out and "info" in out
    assert "Exit status" in out


def test_cli_import_does_not_load_numpy_or_rich() -> None:
    # Startup speed: `ldscope --help` must not import the heavy modules.
    code = (
        "import sys, ldscope.cli; "
        "print(','.join(m for m in ('numpy', 'rich', 'ldscope.elf') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


def test_python_dash_m_and_version() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "ldscope", "--version"], capture_output=True, text=True, check=True
    )
    assert out.stdout.startswith("ldscope, version ")


def test_info_shared_library_matches_readelf(built: dict[str, Path]) -> None:
    lib = str(built["libfoo"])
    code, out, _ = invoke("info", "--format", "json", lib)
    assert code == 0
    doc = json.loads(out)
    assert doc["schema"] == "ldscope.info/1"
    info = doc["files"][0]
    assert info["soname"] == "libfoo.so.1"
    assert info["rpath"] == "/opt/foo/lib:$ORIGIN"
    assert info["runpath"] is None
    needed = [ln.split("[")[1].rstrip("]") for ln in readelf("-d", lib).splitlines() if "(NEEDED)" in ln]
    assert info["needed"] == needed
    assert info["versions_defined"] == ["FOO_1.0", "FOO_2.0"]
    assert info["version_base"] == "libfoo.so.1"
    assert info["machine"] == "x86_64" and info["elf_class"] == 64 and info["type"] == "DYN"
    assert info["stripped"] is False
    build_id = next(ln for ln in readelf("-n", lib).splitlines() if "Build ID" in ln).split()[-1]
    assert info["build_id"] == build_id


def test_info_text_executable(built: dict[str, Path]) -> None:
    code, out, _ = invoke("info", str(built["main"]))
    assert code == 0
    assert "interpreter:" in out and "/lib64/ld-linux-x86-64.so.2" in out
    assert "libfoo.so.1" in out and "libc.so.6" in out
    assert "requires:" in out and "GLIBC_2.2.5" in out


def test_info_runpath_and_now(built: dict[str, Path]) -> None:
    code, out, _ = invoke("info", "--format", "json", str(built["libwidget"]))
    assert code == 0
    info = json.loads(out)["files"][0]
    assert info["runpath"] == "/opt/w" and info["rpath"] is None
    assert info["bind_now"] is True
    assert "libstdc++.so.6" in info["needed"]


def test_info_archive_members_and_index(built: dict[str, Path]) -> None:
    code, out, _ = invoke("info", "--format", "json", str(built["archive"]))
    assert code == 0
    info = json.loads(out)["files"][0]
    assert info["kind"] == "archive"
    assert [m["name"] for m in info["members"]] == ["a.o", "b_with_a_long_member_name.o"]
    assert info["has_index"] is True
    assert info["index_symbols"] == 3  # a_func, a_common, b_func
    assert info["ld_refuses"] is False


def test_info_linker_script() -> None:
    script = "/usr/lib/x86_64-linux-gnu/libc.so"
    if not os.path.exists(script):
        pytest.skip("glibc's libc.so linker script not present")
    code, out, _ = invoke("info", "--format", "json", script)
    assert code == 0
    info = json.loads(out)["files"][0]
    assert info["kind"] == "linker-script"
    names = [i["name"] for i in info["inputs"]]
    assert any(n.endswith("libc.so.6") for n in names)
    assert any(i["as_needed"] for i in info["inputs"])


def test_info_bad_file_is_one_line_and_others_go_on(built: dict[str, Path]) -> None:
    code, out, err = invoke("info", str(built["garbage"]), "/no/such/file", str(built["libfoo"]))
    assert code == 2
    assert "libfoo.so.1" in out  # the good file was still summarised
    lines = [ln for ln in err.splitlines() if ln]
    assert len(lines) == 2
    assert str(built["garbage"]) in lines[0] and "Traceback" not in err
    assert "/no/such/file: no such file" in lines[1]


def test_symbols_dynamic_versions_like_nm(built: dict[str, Path]) -> None:
    lib = str(built["libfoo"])
    code, out, _ = invoke("symbols", "--defined", lib)
    assert code == 0
    names = {ln.split()[-1] for ln in out.splitlines()}
    nm = subprocess.run(["nm", "-D", "--defined-only", lib], capture_output=True, text=True).stdout
    nm_names = {ln.split()[-1] for ln in nm.splitlines() if ln.strip()}
    assert names == nm_names
    assert "foo@@FOO_2.0" in names and "foo@FOO_1.0" in names


def test_symbols_undefined_weak_letter(built: dict[str, Path]) -> None:
    code, out, _ = invoke("symbols", "--undefined", str(built["libfoo"]))
    assert code == 0
    assert any(ln.split() == ["w", "bar_missing"] for ln in out.splitlines())


def test_symbols_grep_matches_demangled(built: dict[str, Path]) -> None:
    code, out, _ = invoke("symbols", "-C", "--grep", r"Widget::resize", str(built["libwidget"]))
    assert code == 0
    assert "ui::Widget::resize(int, unsigned int) const" in out
    code, out, _ = invoke("symbols", "--grep", r"^_ZNK2ui6Widget6resizeEij$", str(built["libwidget"]))
    assert code == 0 and "_ZNK2ui6Widget6resizeEij" in out


def test_symbols_archive_members_like_nm_A(built: dict[str, Path]) -> None:
    archive = str(built["archive"])
    code, out, _ = invoke("symbols", archive)
    assert code == 0
    assert f"{archive}(a.o):" in out
    assert f"{archive}(b_with_a_long_member_name.o):" in out
    lines = [ln for ln in out.splitlines() if "b_with" in ln]
    assert any(ln.endswith("U a_func") for ln in lines)
    assert any(" C a_common" in ln for ln in out.splitlines())


def test_symbols_stripped_all_is_said(built: dict[str, Path]) -> None:
    code, out, err = invoke("symbols", "--all", str(built["stripped"]))
    assert code == 1
    assert out == ""
    assert "stripped" in err


def test_symbols_nothing_matched_says_how_many_searched(built: dict[str, Path]) -> None:
    lib = str(built["libfoo"])
    code, out, err = invoke("symbols", "--grep", "no_such_symbol_anywhere", lib)
    assert code == 1 and out == ""
    total = len(
        [ln for ln in subprocess.run(["nm", "-D", lib], capture_output=True, text=True).stdout.splitlines() if ln]
    )
    assert f"({total} symbols searched)" in err


def test_symbols_json(built: dict[str, Path]) -> None:
    code, out, _ = invoke("symbols", "--format", "json", str(built["libfoo"]))
    assert code == 0
    doc = json.loads(out)
    assert doc["schema"] == "ldscope.symbols/1"
    syms = {s["name"] + ("@@" if not s["version_hidden"] else "@") + (s["version"] or ""): s
            for s in doc["files"][0]["symbols"] if s["defined"] and s["version"]}
    assert syms["foo@@FOO_2.0"]["type"] == "FUNC"
    assert syms["foo@FOO_1.0"]["version_hidden"] is True


def test_symbols_fifo_is_not_opened(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe.so"
    os.mkfifo(fifo)
    code, _, err = invoke("symbols", str(fifo))
    assert code == 2
    assert "not a regular file" in err


def test_output_file(built: dict[str, Path], tmp_path: Path) -> None:
    target = tmp_path / "report.json"
    code, out, _ = invoke("info", "--format", "json", "-o", str(target), str(built["libfoo"]))
    assert code == 0 and out == ""
    assert json.loads(target.read_text())["files"][0]["soname"] == "libfoo.so.1"


@pytest.mark.parametrize("command", ["load", "info", "symbols", "scan"])
def test_quiet_prints_nothing_and_keeps_the_exit_status(command: str, tmp_path: Path) -> None:
    """-q: nothing on stdout, the same exit status, and --output still gets the report."""
    target = "/bin/ls" if command != "scan" else str(tmp_path)
    if command == "scan":
        (tmp_path / "libnotelf.so").write_bytes(b"not an ELF file, though named like one")
    loud = CliRunner().invoke(cli, [command, target], catch_exceptions=False)
    quiet = CliRunner().invoke(cli, [command, "-q", target], catch_exceptions=False)
    assert quiet.output == "" and loud.output != ""
    assert quiet.exit_code == loud.exit_code
    if command == "scan":
        assert loud.exit_code == 1  # the file named like a library is a finding
    report = tmp_path / "report.txt"
    written = CliRunner().invoke(cli, [command, "-q", "-o", str(report), target], catch_exceptions=False)
    assert written.output == "" and written.exit_code == loud.exit_code
    assert report.read_text() == loud.output
