"""Bytes are data: a file whose path, SONAME, RUNPATH, NEEDED and symbol names hold byte 0xE9
(not UTF-8) and terminal escape sequences goes through every command, in text and JSON, to
stdout and to -o FILE, under the C locale, C.UTF-8 and an ASCII stdout: no traceback, valid
UTF-8 JSON without surrogates whose `*_bytes` fields give the original bytes back, and text
with the bytes escaped visibly and no raw ESC."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from ldscope.report import dumps, safe, sanitized
from tests.conftest import run

SRC = str(Path(__file__).resolve().parents[1] / "src")
CAFE, ESC = b"Qcaf\xe9Q", b"Q\x1b[31m"  # replace the sentinels QCAFEQ and QESCQQ (same length)
FILE_NAME = b"lib\xe9\x1b[7m.so"
SONAME = b"lib" + CAFE + b".so"
RUNPATH = b"/opt/" + CAFE + b"/" + ESC
SYMBOL = b"fn_" + CAFE
EVIL_SYMBOL = b"fn_" + ESC
VERSION = CAFE + b"_1"


@pytest.fixture(scope="module")
def weird(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    """The path (bytes) of a library built with gcc, then patched: every QCAFEQ becomes
    Qcaf\\xe9Q and every QESCQQ becomes Q ESC [31m; it needs a library that is gone."""
    if shutil.which("gcc") is None:
        pytest.skip("gcc is not installed")
    d = tmp_path_factory.mktemp("bytes")
    (d / "lib.c").write_text(
        "int fn_QCAFEQ(int x) { return x + 1; }\n"
        "int fn_QESCQQ(int x) { return x + 2; }\n"
        "extern int miss_fn(void);\n"
        "int call_miss(void) { return miss_fn(); }\n"
    )
    (d / "miss.c").write_text("int miss_fn(void) { return 0; }\n")
    (d / "lib.map").write_text("QCAFEQ_1 { global: fn_*; call_miss; local: *; };\n")
    run(["gcc", "-shared", "-fPIC", "-o", "libQESCQQmiss.so", "miss.c", "-Wl,-soname,libQESCQQmiss.so"], cwd=d)
    run(["gcc", "-shared", "-fPIC", "-o", "libx.so", "lib.c", "-Wl,-soname,libQCAFEQ.so",
         "-Wl,-rpath,/opt/QCAFEQ/QESCQQ", "-Wl,--version-script=lib.map", "-L.", "-lQESCQQmiss"], cwd=d)
    (d / "libQESCQQmiss.so").unlink()
    data = (d / "libx.so").read_bytes().replace(b"QCAFEQ", CAFE).replace(b"QESCQQ", ESC)
    (d / "libx.so").unlink()
    (d / "lib.c").unlink()
    (d / "miss.c").unlink()
    (d / "lib.map").unlink()
    path = os.fsencode(d) + b"/" + FILE_NAME
    with open(path, "wb") as fh:
        fh.write(data)
    return path


ENVS = {
    "C": {"LANG": "C", "LC_ALL": "C"},
    "C.UTF-8": {"LANG": "C.UTF-8", "LC_ALL": "C.UTF-8"},
    "ascii-stdout": {"LANG": "C.UTF-8", "LC_ALL": "C.UTF-8", "PYTHONIOENCODING": "ascii"},
}
COMMANDS = {  # name: (argv before the target, expected exit status, target is the directory)
    "info": (["info"], 0, False),
    "symbols": (["symbols"], 0, False),
    "symbols-all": (["symbols", "--all"], 0, False),
    "load": (["load"], 1, False),  # its NEEDED library is gone
    "scan": (["scan"], 1, True),
}
CASES = [
    (cmd, fmt, env, dest)
    for cmd in COMMANDS
    for fmt in (("text", "json", "ndjson") if cmd.startswith("symbols") else ("text", "json"))
    for env in ENVS
    for dest in ("stdout", "file")
]


def invoke(argv: list[bytes], env_name: str) -> subprocess.CompletedProcess[bytes]:
    env = {k: v for k, v in os.environ.items() if k not in ("LANG", "LC_ALL", "PYTHONIOENCODING")}
    env.update(ENVS[env_name])
    env["PYTHONPATH"] = SRC
    return subprocess.run([os.fsencode(sys.executable), b"-m", b"ldscope", *argv], capture_output=True, env=env)


def strings_and_keys(value: Any) -> list[str]:
    """Every string (and object key) in a JSON value."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [s for v in value for s in strings_and_keys(v)]
    if isinstance(value, dict):
        return [s for k, v in value.items() for s in [k, *strings_and_keys(v)]]
    return []


def bytes_fields(value: Any) -> list[tuple[str, bytes, Any]]:
    """(field, decoded bytes, readable sibling) for every `<field>_bytes` in a JSON value."""
    found: list[tuple[str, bytes, Any]] = []
    if isinstance(value, list):
        for v in value:
            found += bytes_fields(v)
    elif isinstance(value, dict):
        for k, v in value.items():
            if k.endswith("_bytes"):
                field = k[: -len("_bytes")]
                if isinstance(v, str):
                    found.append((field, bytes.fromhex(v), value[field]))
                elif isinstance(v, list):
                    found += [(field, bytes.fromhex(h), r) for h, r in zip(v, value[field]) if h is not None]
            else:
                found += bytes_fields(v)
    return found


@pytest.mark.parametrize(("cmd", "fmt", "env_name", "dest"), CASES)
def test_weird_bytes_everywhere(weird: bytes, tmp_path: Path, cmd: str, fmt: str, env_name: str, dest: str) -> None:
    head, expected, on_directory = COMMANDS[cmd]
    target = os.path.dirname(weird) if on_directory else weird
    argv = [a.encode() for a in head] + [b"--format", fmt.encode()]
    out_file = tmp_path / "report.out"
    if dest == "file":
        argv += [b"-o", os.fsencode(out_file)]
    proc = invoke([*argv, target], env_name)
    assert b"Traceback" not in proc.stderr, proc.stderr.decode("utf-8", "replace")
    assert proc.returncode == expected, proc.stderr.decode("utf-8", "replace")
    assert b"\x1b" not in proc.stderr
    data = out_file.read_bytes() if dest == "file" else proc.stdout
    if dest == "file":
        assert proc.stdout == b""
    assert data
    if fmt == "text":
        assert b"\\xe9" in data
        assert b"\xe9" not in data
        assert b"\x1b" not in data
        assert b"\\x1b[31m" in data  # the ESC sequence, shown escaped
        if cmd == "symbols":
            assert b"fn_Qcaf\\xe9Q@@Qcaf\\xe9Q_1" in data
        return
    text = data.decode("utf-8")  # strict: the document is valid UTF-8
    docs = [json.loads(line) for line in text.splitlines()] if fmt == "ndjson" else [json.loads(text)]
    for doc in docs:
        for s in strings_and_keys(doc):
            assert not any(0xD800 <= ord(c) <= 0xDFFF for c in s), repr(s)
    fields = [f for doc in docs for f in bytes_fields(doc)]
    originals = {b for _, b, _ in fields}
    # Every *_bytes field gives back bytes, and its sibling is those bytes escaped readably.
    for _, raw, shown in fields:
        assert shown == safe_readable(raw)
    assert weird in originals or target in originals
    if cmd.startswith("symbols"):
        assert ("name", SYMBOL, "fn_Qcaf\\xe9Q") in fields
        names = {d.get("name") for doc in docs for d in _symbol_objects(doc)}
        assert EVIL_SYMBOL.decode() in names  # valid UTF-8 (ESC included) is kept as it is
        if cmd == "symbols":  # the dynamic table has versions
            assert ("version", VERSION, "Qcaf\\xe9Q_1") in fields
    if cmd == "info":
        by_field = {f: b for f, b, _ in fields}
        assert by_field["soname"] == SONAME
        assert by_field["runpath"] == RUNPATH
        assert by_field["path"] == weird
        assert by_field["versions_defined"] == VERSION


def safe_readable(raw: bytes) -> str:
    """The readable form documented in docs/json.md: undecodable bytes as \\xNN text."""
    return "".join(
        f"\\x{ord(c) - 0xDC00:02x}" if 0xDC80 <= ord(c) <= 0xDCFF else c
        for c in raw.decode("utf-8", "surrogateescape")
    )


def _symbol_objects(doc: Any) -> list[dict[str, Any]]:
    if doc.get("record") == "symbol":
        return [doc]
    return [s for f in doc.get("files", []) for s in f.get("symbols", [])]


def test_safe_escapes_bytes_and_controls() -> None:
    name = b"caf\xe9\x1b[2J\x07\x9b\x7f".decode("utf-8", "surrogateescape") + "\u202e"
    assert safe(name) == "caf\\xe9\\x1b[2J\\x07\\x9b\\x7f\\u202e"
    assert safe("line\nbreak\ttab") == "line\\nbreak\\ttab"
    assert safe("back\\slash") == "back\\\\slash"  # doubled: an escape in a name is not an escape
    assert safe("plain é ü") == "plain é ü"  # printable Unicode is left alone


def test_sanitized_keeps_unchanged_objects() -> None:
    from ldscope.loader import TriedPath
    from ldscope.vocab import FoundVia

    clean = TriedPath("/usr/lib/libc.so.6", FoundVia.CACHE, "found")
    assert sanitized(clean) is clean
    dirty = TriedPath(b"/opt/\xe9/x".decode("utf-8", "surrogateescape"), FoundVia.RUNPATH, "not found")
    out = sanitized(dirty)
    assert out.path == "/opt/\\xe9/x" and out.source is FoundVia.RUNPATH


def test_dumps_adds_bytes_siblings() -> None:
    raw = b"lib\xe9.so"
    name = raw.decode("utf-8", "surrogateescape")
    doc = json.loads(dumps({"soname": name, "needed": ["libc.so.6", name], "ok": "x"}, pretty=False))
    assert doc == {
        "soname": "lib\\xe9.so",
        "soname_bytes": raw.hex(),
        "needed": ["libc.so.6", "lib\\xe9.so"],
        "needed_bytes": [None, raw.hex()],
        "ok": "x",
    }


@pytest.mark.parametrize("fmt", ["text", "json", "sarif"])
def test_link_line_with_weird_input_name(tmp_path: Path, fmt: str) -> None:
    if shutil.which("gcc") is None:
        pytest.skip("gcc is not installed")
    missing = b"main\xe9\x1b[2J.o"
    proc = invoke([b"link", b"--format", fmt.encode(), b"--", b"gcc", b"-o", b"out", missing], "ascii-stdout")
    assert b"Traceback" not in proc.stderr, proc.stderr.decode("utf-8", "replace")
    assert proc.returncode == 1  # the input is missing: predicted to fail
    if fmt == "text":
        assert b"main\\xe9\\x1b[2J.o" in proc.stdout and b"\x1b" not in proc.stdout
        return
    doc = json.loads(proc.stdout.decode("utf-8"))
    assert all(not any(0xD800 <= ord(c) <= 0xDFFF for c in s) for s in strings_and_keys(doc))
    if fmt == "json":
        assert missing in {raw for _, raw, _ in bytes_fields(doc)}


def test_pretty_json_with_bytes_is_the_compact_document_indented(weird: bytes) -> None:
    compact = invoke([b"symbols", b"--format", b"json", weird], "ascii-stdout")
    pretty = invoke([b"symbols", b"--format", b"json", b"--pretty", weird], "ascii-stdout")
    assert compact.returncode == pretty.returncode == 0
    doc = json.loads(compact.stdout.decode("utf-8"))
    assert pretty.stdout.decode("utf-8") == json.dumps(doc, indent=2) + "\n"
    assert any("name_bytes" in s for s in doc["files"][0]["symbols"])


def test_scan_sarif_with_weird_bytes_is_valid_sarif(weird: bytes) -> None:
    from tests.test_report_sarif import _validate

    proc = invoke([b"scan", b"--format", b"sarif", os.path.dirname(weird)], "ascii-stdout")
    assert proc.returncode == 1 and b"Traceback" not in proc.stderr
    doc = json.loads(proc.stdout.decode("utf-8"))
    assert _validate(doc) == []
    text = json.dumps(doc)
    assert "_bytes" not in text  # SARIF objects have fixed properties: readable text only
    uris = [loc["physicalLocation"]["artifactLocation"]["uri"]
            for r in doc["runs"][0]["results"] for loc in r["locations"]]
    assert "lib%E9%1B[7m.so" in uris  # the bytes percent-encoded, as a file URI spells them


def test_scan_junit_with_weird_bytes_is_well_formed_xml(weird: bytes) -> None:
    import xml.etree.ElementTree as ET

    proc = invoke([b"scan", b"--format", b"junit", os.path.dirname(weird)], "C")
    assert proc.returncode == 1 and b"Traceback" not in proc.stderr
    assert b"\x1b" not in proc.stdout and b"\xe9" not in proc.stdout
    root = ET.fromstring(proc.stdout)  # control characters would make it ill-formed XML
    names = [case.get("name") for case in root.iter("testcase")]
    assert any(n and n.endswith("lib\\xe9\\x1b[7m.so") for n in names)
