"""`ldscope link` on the command line: formats, exit codes, --fix/--ablate/--confirm."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from ldscope.cli import cli
from tests.link_cases import dso_missing_case, order_case, raw_line

pytestmark = pytest.mark.skipif(shutil.which("gcc") is None or shutil.which("ld.bfd") is None,
                                reason="gcc and ld.bfd needed")


def run(args: list[str], cwd: Path) -> tuple[int, str]:
    """Invoke the CLI in `cwd`."""
    result = CliRunner().invoke(cli, ["link", "--cwd", str(cwd), *args])
    return result.exit_code, result.output


def test_exit_codes_and_text(tmp_path: Path) -> None:
    order_case(tmp_path)
    code, out = run(["--", "gcc", "main.o", "libtop.a", "libbase.a"], tmp_path)
    assert code == 0 and "the link links" in out
    code, out = run(["--", "gcc", "main.o", "libbase.a", "libtop.a"], tmp_path)
    assert code == 1 and "undefined reference to `base'" in out and "libtop.a(top.o)" in out
    code, out = run(["--", "python3", "x"], tmp_path)
    assert code == 2
    code, out = run([], tmp_path)
    assert code == 2


def test_json_schema(tmp_path: Path) -> None:
    order_case(tmp_path)
    code, out = run(["--fix", "--format", "json", "--", "gcc", "main.o", "libbase.a", "libtop.a"], tmp_path)
    assert code == 1
    doc = json.loads(out)
    assert doc["schema"] == "ldscope.link/1" and doc["linker"] == "bfd"
    assert doc["links"] is False and doc["partial"] is False and isinstance(doc["argv"], list)
    (err,) = doc["errors"]
    for key in ("kind", "symbol", "demangled", "referenced_by", "argument_index", "defined_in",
                "message", "near_misses", "explanation", "shown"):
        assert key in err
    assert err["kind"] == "undefined-reference" and err["referenced_by"] == "libtop.a(top.o)"
    assert err["defined_in"][0]["status"] == "before-referrer"
    fix = next(f for f in doc["fixes"] if f["fixes_alone"])
    for key in ("description", "edit", "fixes_alone", "confirmed", "argv", "reason"):
        assert key in fix
    assert fix["confirmed"] is None
    assert {"action", "target", "argument_index", "symbol", "by"} <= set(doc["trace"][0])


def test_sarif(tmp_path: Path) -> None:
    order_case(tmp_path)
    code, out = run(["--format", "sarif", "--", "gcc", "main.o", "libbase.a", "libtop.a"], tmp_path)
    doc = json.loads(out)
    assert code == 1 and doc["version"] == "2.1.0"
    (res,) = doc["runs"][0]["results"]
    assert res["ruleId"] == "undefined-reference" and res["level"] == "error"
    assert res["locations"][0]["physicalLocation"]["artifactLocation"]["uri"].endswith("/libtop.a")


def test_ablate_and_confirm(tmp_path: Path) -> None:
    dso_missing_case(tmp_path)
    argv = raw_line("bfd", ["main.o"], after_lc=["libse.a"])
    code, out = run(["--ablate", "--", *argv], tmp_path)
    assert code == 1 and "alone  combined" in out and "repeat -lc after libse.a" in out
    code, out = run(["--confirm", "--format", "json", "--", *argv], tmp_path)
    doc = json.loads(out)
    assert doc["confirmation"]["agrees"] is True and doc["confirmation"]["links"] is False
    assert all(f["confirmed"] is True for f in doc["fixes"])  # the real linker agrees on every candidate
    assert not (tmp_path / "app").exists()  # --confirm links into a temporary directory only


def test_output_file_and_verbose(tmp_path: Path) -> None:
    order_case(tmp_path)
    target = tmp_path / "report.txt"
    code, out = run(["-v", "-o", str(target), "--", "gcc", "main.o", "libtop.a", "libbase.a"], tmp_path)
    text = target.read_text()
    assert code == 0 and out == "" and "trace:" in text and "extract: libtop.a(top.o)" in text
