"""A library that needs symbols from a program's process (a plugin) is simulated in that
program when the scanned target holds it: it loads there, so it is a warning naming the
program; without such a program, or when it fails there too, the error stands."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from tests.scan_support import files_by_path, findings_of, scan_json

pytestmark = pytest.mark.skipif(shutil.which("gcc") is None, reason="needs gcc")

HOST_C = "int host_fn(int x) { return x + 1; }\n"
PLUGIN_C = "int host_fn(int);\nint plugin_fn(void) { return host_fn(2); }\n"
GREEDY_C = "int host_fn(int);\nint nobody_fn(void);\nint plugin_fn(void) { return host_fn(2) + nobody_fn(); }\n"
PROG_C = "int host_fn(int);\nint main(void) { return host_fn(0) - 1; }\n"
EXPORTING_PROG_C = "int host_fn(int x) { return x + 1; }\nint main(void) { return host_fn(0) - 1; }\n"


def _gcc(d: Path, *args: str) -> None:
    subprocess.run(["gcc", *args], cwd=d, check=True, capture_output=True)


def _tree(d: Path, plugin: str = PLUGIN_C, program: str | None = "links") -> Path:
    d.mkdir()
    (d / "host.c").write_text(HOST_C)
    (d / "plugin.c").write_text(plugin)
    _gcc(d, "-shared", "-fPIC", "-o", "libhost.so", "host.c", "-Wl,-soname,libhost.so")
    _gcc(d, "-shared", "-fPIC", "-o", "plugin.so", "plugin.c")
    if program == "links":
        (d / "prog.c").write_text(PROG_C)
        _gcc(d, "-o", "prog", "prog.c", "-L.", "-lhost", "-Wl,-rpath,$ORIGIN")
    elif program == "exports":
        (d / "prog.c").write_text(EXPORTING_PROG_C)
        _gcc(d, "-o", "prog", "prog.c", "-rdynamic")
    for source in d.glob("*.c"):
        source.unlink()
    return d


def _plugin(doc: dict[str, object], d: Path) -> dict[str, object]:
    return files_by_path(doc)[str(d / "plugin.so")]


def test_a_plugin_of_a_program_linking_its_provider_loads_in_it(tmp_path: Path) -> None:
    d = _tree(tmp_path / "t")
    code, doc, _ = scan_json(str(d))
    assert code == 0
    plugin = _plugin(doc, d)
    assert plugin["loads"] is True
    assert plugin["host"] == f"shared library dlopen'ed by {d / 'prog'}"
    [finding] = findings_of(doc)
    assert finding["severity"] == "warning"
    assert finding["title"].startswith(f"{d / 'plugin.so'} is a plugin of {d / 'prog'}")
    # The evidence stays: the symbol and where it is defined.
    [problem] = finding["problems"]
    assert problem["symbol"] == "host_fn"
    assert problem["near_misses"][0]["file"] == str(d / "libhost.so")


def test_a_plugin_of_a_program_exporting_the_symbols_itself_loads_in_it(tmp_path: Path) -> None:
    d = _tree(tmp_path / "t", program="exports")
    code, doc, _ = scan_json(str(d))
    assert code == 0
    assert _plugin(doc, d)["host"] == f"shared library dlopen'ed by {d / 'prog'}"


def test_without_such_a_program_the_error_stands(tmp_path: Path) -> None:
    d = _tree(tmp_path / "t", program=None)
    code, doc, _ = scan_json(str(d))
    assert code == 1
    plugin = _plugin(doc, d)
    assert plugin["loads"] is False
    assert "minimal host" in plugin["host"]
    assert [f["severity"] for f in findings_of(doc)] == ["error"]


def test_a_symbol_no_one_defines_keeps_the_error(tmp_path: Path) -> None:
    d = _tree(tmp_path / "t", plugin=GREEDY_C)
    code, doc, _ = scan_json(str(d))
    assert code == 1
    plugin = _plugin(doc, d)
    assert plugin["loads"] is False
    assert "minimal host" in plugin["host"]
