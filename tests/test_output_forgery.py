"""Output that cannot be forged: a library built here whose file name, SONAME, NEEDED entry,
RUNPATH, exported and undefined symbol names and version name all hold terminal escape
sequences (clear screen, set the title), a newline that would forge a report line, bidi
overrides and isolates, a C0 control, a backslash and bytes that are not UTF-8 goes
through every command and every format. Text (stdout and stderr): no control byte but the
renderer's own line ends, no ESC, no bidi character, no forged line, the names shown
escaped by the one rule (report/_text_safe.py, docs/json.md "Text output"). JSON and SARIF:
ASCII documents that parse and keep the bytes. JUnit: well-formed XML 1.0 with one failing
test case per error, unreadable file and target that could not be scanned."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from ldscope.report import message_lines, safe, sanitized
from tests.conftest import run

SRC = str(Path(__file__).resolve().parents[1] / "src")
FORGED = b"OK: everything loads"
# ESC[2J clears the screen, ESC]0;...BEL sets the terminal title, the newline would start a
# line of its own, U+202E and U+2067 reorder what follows, \x01 is a C0 control, \xff is not
# UTF-8, and the backslash makes `\x1b` in a name distinguishable from an escaped ESC.
EVIL = b"\x1b[2J\x1b]0;pwned\x07\n" + FORGED + b"\xe2\x80\xae\x01\\x1b\xff\xe2\x81\xa7"
SHOWN = "\\x1b[2J\\x1b]0;pwned\\x07\\nOK: everything loads\\u202e\\x01\\\\x1b\\xff\\u2067"
PH = (b"QZX" * 20)[: len(EVIL)]  # a placeholder of the same length, valid in C names
BIDI = [chr(c) for c in (*range(0x202A, 0x202F), *range(0x2066, 0x206A), 0x200E, 0x200F, 0x061C)]


def _evil(name: bytes) -> bytes:
    return name.replace(PH, EVIL)


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> dict[str, bytes]:
    """Paths (bytes) of: a library with the hostile SONAME, file name, RUNPATH, missing NEEDED,
    exported symbol and version; a library with a hostile undefined symbol; an object that
    calls both; a corrupt file with a hostile name; the directory holding them."""
    if shutil.which("gcc") is None:
        pytest.skip("gcc is not installed")
    d = tmp_path_factory.mktemp("forgery")
    ph = PH.decode()
    (d / "gone.c").write_text("int gone_fn(void) { return 0; }\n")
    (d / "lib.c").write_text(f"int fn_{ph}(int x) {{ return x + 1; }}\nint plain(void) {{ return 2; }}\n")
    (d / "user.c").write_text(f"extern int undef_{ph}(void);\nint user(void) {{ return undef_{ph}(); }}\n")
    (d / "main.c").write_text(f"extern int fn_{ph}(int);\nextern int undef_{ph}(void);\n"
                              f"int main(void) {{ return fn_{ph}(1) + undef_{ph}(); }}\n")
    (d / "lib.map").write_text(f"{ph}_1 {{ global: fn_*; plain; local: *; }};\n")
    run(["gcc", "-shared", "-fPIC", "-o", f"libgone{ph}.so", "gone.c", f"-Wl,-soname,libgone{ph}.so"], cwd=d)
    run(["gcc", "-shared", "-fPIC", "-o", f"lib{ph}.so", "lib.c", f"-Wl,-soname,lib{ph}.so",
         f"-Wl,-rpath,/opt/{ph}", "-Wl,--version-script=lib.map", "-L.", "-Wl,--no-as-needed", f"-lgone{ph}"], cwd=d)
    run(["gcc", "-shared", "-fPIC", "-o", f"libuser{ph}.so", "user.c"], cwd=d)
    run(["gcc", "-c", "-fPIC", "-o", f"m{ph}.o", "main.c"], cwd=d)
    (d / f"libgone{ph}.so").unlink()
    out: dict[str, bytes] = {"dir": os.fsencode(d)}
    for key, name in (("lib", f"lib{ph}.so"), ("user", f"libuser{ph}.so"), ("obj", f"m{ph}.o")):
        data = (d / name).read_bytes()
        assert PH in data
        path = os.fsencode(d) + b"/" + _evil(name.encode())
        with open(path, "wb") as fh:
            fh.write(_evil(data))
        (d / name).unlink()
        out[key] = path
    for f in ("gone.c", "lib.c", "user.c", "main.c", "lib.map"):
        (d / f).unlink()
    out["bad"] = os.fsencode(d) + b"/lib" + EVIL + b"bad.so"  # named like a library, not ELF
    with open(out["bad"], "wb") as fh:
        fh.write(b"not an ELF file\n")
    return out


def invoke(*argv: bytes) -> subprocess.CompletedProcess[bytes]:
    env = {k: v for k, v in os.environ.items() if k not in ("LANG", "LC_ALL", "PYTHONIOENCODING")}
    env.update({"LANG": "C.UTF-8", "LC_ALL": "C.UTF-8", "PYTHONPATH": SRC})
    return subprocess.run([os.fsencode(sys.executable), b"-m", b"ldscope", *argv], capture_output=True, env=env)


def assert_unforgeable(data: bytes, what: str) -> str:
    """Text that reaches a terminal: UTF-8, no control byte but '\\n', no DEL, no bidi
    character, no line the hostile names forged; returns it decoded."""
    bad = sorted({b for b in data if (b < 0x20 and b != 0x0A) or b == 0x7F})
    assert not bad, f"{what}: control bytes {bad} in {data[:2000]!r}"
    text = data.decode("utf-8")  # strict: undecodable bytes were escaped
    assert not [c for c in text if c in BIDI], f"{what}: bidi characters in {text!r}"
    forged = [line for line in text.splitlines() if FORGED.decode() in line and "\\n" + FORGED.decode() not in line]
    assert not forged, f"{what}: forged lines {forged!r}"
    assert not any(line.lstrip().startswith(FORGED.decode()) for line in text.splitlines()), what
    return text


# ----------------------------------------------------------------------------- the rule


def test_the_escaping_rule() -> None:
    raw = EVIL.decode("utf-8", "surrogateescape")
    assert safe(raw) == SHOWN
    assert safe("a\\b") == "a\\\\b"  # a backslash is doubled: `\\x1b` is never an ESC
    assert safe("\x85\u00a0\u200b\ufeff\u2028\U000e0001") == "\\u0085\\u00a0\\u200b\\ufeff\\u2028\\U000e0001"
    assert safe("\u061c\u200e\u200f\u202a\u202d\u2066\u2069") == "\\u061c\\u200e\\u200f\\u202a\\u202d\\u2066\\u2069"
    assert safe("\t\r\x7f\x00") == "\\t\\r\\x7f\\x00"
    assert safe("plain é ü 名前 😀") == "plain é ü 名前 😀"  # printable Unicode stays as it is
    # C1 controls are code points (\u0085), undecodable bytes are bytes (\x85): never confused.
    assert safe(b"\xc2\x85\x85".decode("utf-8", "surrogateescape")) == "\\u0085\\x85"


def test_sanitized_escapes_every_string_once() -> None:
    from ldscope.loader import TriedPath
    from ldscope.vocab import FoundVia

    raw = EVIL.decode("utf-8", "surrogateescape")
    t = TriedPath("/opt/" + raw, FoundVia.RUNPATH, "not found")
    once = sanitized(t)
    assert once.path == "/opt/" + SHOWN and once.source is FoundVia.RUNPATH
    clean = TriedPath("/usr/lib/libc.so.6", FoundVia.CACHE, "found")
    assert sanitized(clean) is clean


def test_message_lines_keep_the_wording_breaks_only() -> None:
    raw = EVIL.decode("utf-8", "surrogateescape")
    lld = f"ld.lld: error: undefined symbol: undef_{raw}\n>>> referenced by m{raw}.o in archive liba.a"
    assert message_lines(lld, [f"undef_{raw}", f"liba.a(m{raw}.o)"]) == [
        f"ld.lld: error: undefined symbol: undef_{SHOWN}", f">>> referenced by m{SHOWN}.o in archive liba.a"]
    # A name that is nothing but a line break: every break is escaped (tidy no more, never forged).
    assert message_lines("a\nb", ["\n"]) == ["a\\nb"]
    assert message_lines("one line", []) == ["one line"]


# ------------------------------------------------------------------------- every command

TEXT_CASES = {  # name: (argv before the target, target key, exit status)
    "scan": ([b"scan", b"-j", b"1"], "dir", 1),
    "scan-v": ([b"scan", b"-j", b"1", b"-v"], "dir", 1),
    "load": ([b"load"], "lib", 1),
    "load-v": ([b"load", b"-v"], "lib", 1),
    "load-user": ([b"load", b"-v"], "user", 1),
    "info": ([b"info"], "lib", 0),
    "info-v": ([b"info", b"-v"], "lib", 0),
    "info-obj": ([b"info"], "obj", 0),
    "symbols": ([b"symbols"], "lib", 0),
    "symbols-v": ([b"symbols", b"-v", b"--all"], "lib", 0),
    "symbols-obj": ([b"symbols", b"--demangle"], "obj", 0),
}


@pytest.mark.parametrize("case", sorted(TEXT_CASES))
def test_text_reports_cannot_be_forged(hostile: dict[str, bytes], case: str) -> None:
    head, key, expected = TEXT_CASES[case]
    proc = invoke(*head, hostile[key])
    assert b"Traceback" not in proc.stderr, proc.stderr.decode("utf-8", "replace")
    assert proc.returncode == expected, proc.stderr.decode("utf-8", "replace")
    out = assert_unforgeable(proc.stdout, f"{case} stdout")
    assert_unforgeable(proc.stderr, f"{case} stderr")
    assert SHOWN in out  # the hostile names are shown, escaped, not dropped
    if case == "symbols":
        assert f" T fn_{SHOWN}@@{SHOWN}_1\n" in out
    if case.startswith("info") and key == "lib":
        assert f"  soname:              lib{SHOWN}.so\n" in out
        assert f"  needed:              libgone{SHOWN}.so\n" in out
        assert f"  runpath:             /opt/{SHOWN}\n" in out
        assert f"  defines versions:    {SHOWN}_1\n" in out
    if case.startswith("load") and key == "lib":
        assert f"libgone{SHOWN}.so not found" in out
    if case == "load-user":
        assert f"undef_{SHOWN}" in out


def test_scan_text_names_every_hostile_file(hostile: dict[str, bytes]) -> None:
    proc = invoke(b"scan", b"-j", b"1", hostile["dir"])
    out = assert_unforgeable(proc.stdout, "scan")
    assert f"lib{SHOWN}bad.so: named like a library but not an ELF file" in out
    assert f"libgone{SHOWN}.so is missing" in out
    assert f"undef_{SHOWN}" in out


@pytest.mark.parametrize("linker", ["bfd", "lld"])
def test_link_text_cannot_be_forged(hostile: dict[str, bytes], linker: str) -> None:
    if shutil.which("ld.lld" if linker == "lld" else "ld.bfd") is None:
        pytest.skip(f"{linker} is not installed")
    for verbose in ([], [b"-v"]):
        proc = invoke(b"link", b"--no-driver", b"--linker", linker.encode(), *verbose, b"--",
                      b"gcc", b"-o", hostile["dir"] + b"/out", hostile["obj"], hostile["lib"])
        assert b"Traceback" not in proc.stderr, proc.stderr.decode("utf-8", "replace")
        assert proc.returncode == 1, proc.stderr.decode("utf-8", "replace")
        out = assert_unforgeable(proc.stdout, f"link {linker} {verbose}")
        assert_unforgeable(proc.stderr, f"link {linker} stderr")
        assert f"undef_{SHOWN}" in out
        # The message's own lines are kept; the name's newline is escaped inside its line.
        wording = [line for line in out.splitlines() if line.startswith("  | ")]
        assert any(f"undef_{SHOWN}" in line for line in wording), out
        if linker == "lld":
            assert any(line.startswith("  | >>> referenced by ") and line.endswith(f"/m{SHOWN}.o")
                       for line in wording), out


def test_link_through_the_driver_cannot_be_forged(hostile: dict[str, bytes]) -> None:
    """Through `gcc -###` too: whatever the driver makes of the names, nothing is forged."""
    if shutil.which("ld.bfd") is None:
        pytest.skip("ld.bfd is not installed")
    proc = invoke(b"link", b"--linker", b"bfd", b"-v", b"--",
                  b"gcc", b"-o", hostile["dir"] + b"/out", hostile["obj"], hostile["lib"])
    assert b"Traceback" not in proc.stderr and proc.returncode == 1, proc.stderr.decode("utf-8", "replace")
    assert_unforgeable(proc.stdout, "link via the driver")
    assert_unforgeable(proc.stderr, "link via the driver, stderr")


# ----------------------------------------------------------------------- JSON and SARIF

JSON_CASES = {
    "scan-json": ([b"scan", b"-j", b"1", b"--format", b"json"], "dir", 1),
    "load-json": ([b"load", b"--format", b"json"], "lib", 1),
    "info-json": ([b"info", b"--format", b"json"], "lib", 0),
    "symbols-json": ([b"symbols", b"--format", b"json"], "lib", 0),
    "symbols-ndjson": ([b"symbols", b"--format", b"ndjson"], "lib", 0),
}


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    if isinstance(value, dict):
        return [s for k, v in value.items() for s in (k, *_strings(v))]
    return []


@pytest.mark.parametrize("case", sorted(JSON_CASES))
def test_json_documents_escape_hostile_names(hostile: dict[str, bytes], case: str) -> None:
    head, key, expected = JSON_CASES[case]
    proc = invoke(*head, hostile[key])
    assert proc.returncode == expected, proc.stderr.decode("utf-8", "replace")
    assert proc.stdout.isascii() and not [b for b in proc.stdout if b < 0x20 and b != 0x0A]
    docs = [json.loads(line) for line in proc.stdout.splitlines()] if case.endswith("ndjson") else [
        json.loads(proc.stdout)]
    strings = [s for doc in docs for s in _strings(doc)]
    # Valid UTF-8 is kept as it is (escaped by JSON itself); the byte 0xff made readable,
    # with the original bytes in `<field>_bytes`.
    readable = EVIL.decode("utf-8", "surrogateescape").replace("\udcff", "\\xff")
    assert any(readable in s for s in strings)
    hexes = {s for s in strings if all(c in "0123456789abcdef" for c in s) and len(s) % 2 == 0}
    assert any(EVIL.hex() in h for h in hexes)


@pytest.mark.parametrize("command", ["scan", "link"])
def test_sarif_documents_with_hostile_names_are_valid(hostile: dict[str, bytes], command: str) -> None:
    from tests.test_report_sarif import _validate

    if command == "scan":
        proc = invoke(b"scan", b"-j", b"1", b"--format", b"sarif", hostile["dir"])
    else:
        if shutil.which("ld.bfd") is None:
            pytest.skip("ld.bfd is not installed")
        proc = invoke(b"link", b"--no-driver", b"--linker", b"bfd", b"--format", b"sarif", b"--",
                      b"gcc", b"-o", hostile["dir"] + b"/out", hostile["obj"], hostile["lib"])
    assert proc.returncode == 1, proc.stderr.decode("utf-8", "replace")
    assert proc.stdout.isascii() and not [b for b in proc.stdout if b < 0x20 and b != 0x0A]
    doc = json.loads(proc.stdout)
    assert _validate(doc) == []
    messages = [r["message"]["text"] for r in doc["runs"][0]["results"]]
    assert any("OK: everything loads" in m for m in messages)


# ------------------------------------------------------------------------------- JUnit


def test_junit_is_well_formed_and_counts_every_error(hostile: dict[str, bytes]) -> None:
    missing = hostile["dir"] + b"/nothere" + EVIL
    proc = invoke(b"scan", b"-j", b"1", b"--format", b"junit", hostile["dir"], missing)
    assert proc.returncode == 2, proc.stderr.decode("utf-8", "replace")  # a target is missing
    assert_unforgeable(proc.stderr, "junit stderr")
    data = proc.stdout
    assert not [b for b in data if b < 0x20 and b not in (0x0A,)] and b"\x1b" not in data
    root = ET.fromstring(data)  # well-formed XML 1.0, or this raises
    (suite,) = root.findall("testsuite")
    cases = suite.findall("testcase")
    failed = {c.get("name"): c.find("failure") for c in cases if c.find("failure") is not None}
    assert suite.get("tests") == root.get("tests") == str(len(cases))
    assert suite.get("failures") == root.get("failures") == str(len(failed))
    d = os.fsdecode(hostile["dir"])
    by_name = {c.get("name"): c for c in cases}
    # The two libraries: one needs a missing library, one has an undefined symbol.
    assert f"{d}/lib{SHOWN}.so" in failed and f"{d}/libuser{SHOWN}.so" in failed
    # The corrupt file: a failing case of its own (it made the exit status 1 before).
    bad = failed[f"{d}/lib{SHOWN}bad.so"]
    assert bad is not None and bad.get("type") == "unreadable-file"
    assert by_name[f"{d}/lib{SHOWN}bad.so"].get("classname") == "ldscope.unreadable-file"
    assert "named like a library but not an ELF file" in (bad.get("message") or "")
    # The target that does not exist: one failing case.
    target_case = f"{d}/nothere{SHOWN}: no such file or directory"
    target = failed[target_case]
    assert target is not None and target.get("type") == "input-error"
    assert by_name[target_case].get("classname") == "ldscope.target"
    assert len(failed) == 4


def test_junit_replaces_what_xml_forbids() -> None:
    """Whatever reaches the writer, XML 1.0's forbidden characters never reach the document."""
    from ldscope.loader import Problem
    from ldscope.report import scan_junit
    from ldscope.scan import ScanResult
    from ldscope.vocab import ProblemKind, Severity, When

    path = "/x/lib\x01\x0b\ufffe\udcff\ud800.so"
    problem = Problem(ProblemKind.UNREADABLE_FILE, Severity.ERROR, path, f"{path}: unreadable", When.NEVER)
    from ldscope.scan import Finding

    finding = Finding(f"unreadable:{path}", Severity.ERROR, ProblemKind.UNREADABLE_FILE, problem.message,
                      (problem,), (path,))
    result = ScanResult((), (), (finding,), (), ("/t\x02: cannot scan \x1b[2J",), 0)
    root = ET.fromstring(scan_junit(result))
    names = [c.get("name") for c in root.iter("testcase")]
    assert names == ["/x/lib\\x01\\x0b\\ufffe\\xff\\ud800.so", "/t\\x02: cannot scan \\x1b[2J"]
    assert root.get("failures") == "2"


def test_every_renderer_in_process_with_hostile_owners(hostile: dict[str, bytes]) -> None:
    """The renderers called directly, on results whose distribution names and versions (read
    from METADATA or dpkg's status) are hostile too: nothing a renderer forgets gets out."""
    import dataclasses

    from ldscope import LoadOptions, simulate_load
    from ldscope.report import (
        dumps,
        load_report_json,
        render_load_text,
        render_scan_text,
        scan_json,
        scan_junit,
        scan_sarif,
    )
    from ldscope.scan import Owner, OwnerSource, ScanSettings, run_scan

    raw = EVIL.decode("utf-8", "surrogateescape")
    result = run_scan((os.fsdecode(hostile["dir"]),), ScanSettings(jobs=1))
    owner = Owner("dist" + raw, "1.0" + raw, OwnerSource.RECORD)
    result = dataclasses.replace(
        result,
        files=tuple(dataclasses.replace(f, owner=owner) for f in result.files),
        owners=tuple((path, owner) for path, _ in result.owners),
        findings=tuple(dataclasses.replace(f, advice=(f"reinstall dist{raw}",)) for f in result.findings),
    )
    for verbose in (False, True):
        text = render_scan_text(result, verbose=verbose)
        assert_unforgeable(text.encode("utf-8", "surrogateescape"), f"scan text verbose={verbose}")
        assert f"(dist{SHOWN} 1.0{SHOWN})" in text and f"fix: reinstall dist{SHOWN}" in text
    ET.fromstring(scan_junit(result))
    for doc in (scan_json(result), scan_sarif(result)):
        data = dumps(doc).encode("utf-8")
        assert data.isascii() and not [b for b in data if b < 0x20 and b != 0x0A]
    report = simulate_load(os.fsdecode(hostile["lib"]), LoadOptions())
    for verbose in (False, True):
        text = render_load_text(report, verbose=verbose)
        assert_unforgeable(text.encode("utf-8", "surrogateescape"), f"load text verbose={verbose}")
    assert dumps(load_report_json(report)).isascii()
