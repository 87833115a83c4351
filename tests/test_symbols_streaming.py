"""`ldscope symbols` writes as it reads: bounded memory on a 200,000-symbol .symtab, one valid
JSON document built incrementally (compact; --pretty is the same document indented), NDJSON
one object per line, columns that agree with the reader's one-symbol path, and a reader that
goes away (`| head`) ends it quietly."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from ldscope.cli import cli
from ldscope.elf import ElfFile
from ldscope.inspection import ListingOptions, list_symbols
from tests.conftest import run
from tests.measure_support import MEASURED_CLI

SRC = str(Path(__file__).resolve().parents[1] / "src")
COUNT = 200_000
# Without streaming (every row an object, one JSON string) this listing took 745 MB; with
# it about 75 MB (Python and numpy are ~30 MB of that, the mapped file 25 MB).
RSS_LIMIT_KB = 200 * 1024


@pytest.fixture(scope="module")
def big(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A relocatable object with COUNT global symbols of 113-character names."""
    if shutil.which("gcc") is None:
        pytest.skip("gcc is not installed")
    d = tmp_path_factory.mktemp("bigsymtab")
    lines = [".text"]
    for i in range(COUNT):
        name = f"_ZN9namespace{i:06d}4some4long5class4nameINS_6detail14type_argumentsEE8functionEv_padding_padded"
        lines += [f".globl {name}", f"{name}:"]
    lines.append("nop")
    (d / "big.s").write_text("\n".join(lines) + "\n")
    run(["gcc", "-c", "-o", "big.o", "big.s"], cwd=d)
    return d / "big.o"


# The child reports its own peak (VmHWM of its address space): ru_maxrss from wait4 would
# also count the pytest worker it was forked from, whose pages exec inherits as a high mark.


def run_measured(args: list[str], stdout_path: Path) -> tuple[int, int, bytes]:
    """Run `python -m ldscope ARGS` with stdout to a file; (exit status, peak RSS KB, stderr)."""
    env = {**os.environ, "PYTHONPATH": SRC}
    with open(stdout_path, "wb") as out:
        proc = subprocess.run([sys.executable, "-c", MEASURED_CLI, *args], stdout=out,
                              stderr=subprocess.PIPE, env=env, check=False)
    lines = proc.stderr.splitlines()
    peak = [int(x.split()[1]) for x in lines if x.startswith(b"PEAK_KB ")]
    assert peak, proc.stderr
    return proc.returncode, peak[-1], b"\n".join(x for x in lines if not x.startswith(b"PEAK_KB "))


def test_json_listing_memory_is_bounded(big: Path, tmp_path: Path) -> None:
    out = tmp_path / "big.json"
    code, rss_kb, err = run_measured(["symbols", "--format", "json", str(big)], out)
    assert code == 0, err
    assert rss_kb <= RSS_LIMIT_KB, f"peak RSS {rss_kb} KB"
    data = out.read_bytes()
    doc = json.loads(data)
    symbols = doc["files"][0]["symbols"]
    assert len(symbols) == COUNT + 0 and doc["files"][0]["searched"] == COUNT
    assert symbols[0]["name"].startswith("_ZN9namespace000000") and symbols[0]["nm_code"] == "T"
    assert len(data) / COUNT < 330  # compact: no indentation (pretty was ~460 bytes a symbol)


def test_text_listing_memory_is_bounded(big: Path, tmp_path: Path) -> None:
    out = tmp_path / "big.txt"
    code, rss_kb, err = run_measured(["symbols", str(big)], out)
    assert code == 0, err
    assert rss_kb <= RSS_LIMIT_KB, f"peak RSS {rss_kb} KB"
    with open(out, "rb") as fh:
        assert sum(1 for _ in fh) == COUNT


def test_ndjson_one_object_per_line(big: Path, tmp_path: Path) -> None:
    out = tmp_path / "big.ndjson"
    code, _, err = run_measured(["symbols", "--format", "ndjson", str(big), "/no/such/file"], out)
    assert code == 2, err  # a file that cannot be read: exit 2, the other still listed
    with open(out, encoding="utf-8") as fh:
        records = [json.loads(line) for line in fh]
    kinds = [r["record"] for r in records]
    assert kinds[0] == "table" and records[0]["schema"] == "ldscope.symbols/1"
    assert records[0]["searched"] == COUNT
    assert kinds.count("symbol") == COUNT
    assert kinds[-1] == "error" and records[-1]["file"] == "/no/such/file"


def test_pretty_is_the_same_document_indented(built: dict[str, Path]) -> None:
    args = ["symbols", "--format", "json", str(built["libfoo"]), str(built["archive"]), str(built["garbage"])]
    compact = CliRunner().invoke(cli, args)
    pretty = CliRunner().invoke(cli, [*args, "--pretty"])
    assert compact.exit_code == pretty.exit_code == 2  # garbage is not ELF
    doc = json.loads(compact.stdout)
    assert "\n" not in compact.stdout.rstrip("\n")
    assert pretty.stdout == json.dumps(doc, indent=2) + "\n"
    assert [f["member"] for f in doc["files"]][1:] == ["a.o", "b_with_a_long_member_name.o"]
    assert doc["errors"][0]["file"] == str(built["garbage"])


def test_empty_json_document_is_valid(built: dict[str, Path]) -> None:
    for extra in ([], ["--pretty"]):
        result = CliRunner().invoke(cli, ["symbols", "--format", "json", "--all", str(built["stripped"]), *extra])
        assert result.exit_code == 1
        doc = json.loads(result.stdout)
        assert doc["files"][0]["status"] == "stripped" and doc["files"][0]["symbols"] == []


def test_columns_agree_with_the_reader(built: dict[str, Path]) -> None:
    for key in ("libfoo", "libwidget", "main"):
        with ElfFile.open(built[key]) as elf:
            listing = list_symbols(elf, ListingOptions(), str(built[key]))
            rows = listing.rows
            table = elf.dynsym
            assert table is not None and rows
            for row in rows:
                sym = table.symbol(row.index)
                assert (row.name, row.value, row.size, row.bind, row.type, row.visibility) == (
                    sym.name, sym.value, sym.size, sym.bind, sym.type, sym.visibility)
                assert (row.version, row.version_hidden, row.version_file) == (
                    sym.version, sym.version_hidden, sym.version_file)
                assert row.versioned_name == sym.versioned_name


def test_reader_going_away_is_quiet(big: Path) -> None:
    env = {**os.environ, "PYTHONPATH": SRC}
    proc = subprocess.Popen([sys.executable, "-m", "ldscope", "symbols", str(big)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    assert proc.stdout is not None and proc.stderr is not None
    first = proc.stdout.read(4096)
    proc.stdout.close()
    err = proc.stderr.read()
    proc.wait()
    assert first.startswith(b"0000000000000000 T _ZN9namespace000000")
    assert b"Traceback" not in err and b"BrokenPipe" not in err
    assert proc.returncode == 141  # as a shell reports a program stopped by SIGPIPE (README)
