"""A wheel is an untrusted container: one regression test per class of hostile member.

Each bad member is one line naming the wheel and the member (`WHEEL: member 'NAME': reason`,
in the JSON `errors` and on stderr), the exit status is 2, the wheel's good member is still
scanned, and so is a good target given after it. Zip bombs are refused from their headers
before a byte is decompressed: peak memory and CPU time are measured in a child process.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from tests.scan_support import files_by_path, findings_of, run, scan_json
from tests.wheel_support import (
    BZIP2,
    DEFLATED,
    LZMA,
    STORED,
    Member,
    build_zip,
    compress,
    lying,
    member,
    metadata_members,
    overlapping_bomb,
    zero_bomb,
)

WHEEL = "hostile-1.0-py3-none-linux_x86_64.whl"
MOUNT = f"/(wheel)/{WHEEL}"


@pytest.fixture(scope="module")
def elf(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    """A real small shared library (gcc), the content of every library member here."""
    d = tmp_path_factory.mktemp("elf")
    (d / "good.c").write_text("int good(void) { return 1; }\n")
    run(["gcc", "-shared", "-fPIC", "-o", "libgood.so", "good.c", "-Wl,-soname,libgood.so"], cwd=d)
    return (d / "libgood.so").read_bytes()


@pytest.fixture
def other_target(tmp_path: Path, elf: bytes) -> Path:
    """A good target scanned after the hostile wheel in the same run."""
    d = tmp_path / "other"
    d.mkdir()
    (d / "libother.so").write_bytes(elf)
    return d


def _wheel(tmp_path: Path, elf: bytes, bad: list[Member], overlap: int = 0, name: str = WHEEL) -> Path:
    """The good member pkg/libgood.so, then the bad ones, then dist-info."""
    good = member("pkg/libgood.so", elf, mode=0o755)
    path = tmp_path / name
    members = [*bad, good] if overlap else [good, *bad]
    path.write_bytes(build_zip([*members, *metadata_members("hostile", "1.0")], overlap))
    return path


def _scan(wheel: Path, other: Path, *options: str) -> tuple[int, dict[str, object], str]:
    code, doc, err = scan_json(*options, str(wheel), str(other))
    assert "Traceback" not in err
    return code, doc, err


def _check(tmp_path: Path, elf: bytes, other: Path, bad: list[Member], reason: str, shown: str | None = None,
           *options: str) -> dict[str, object]:
    """The one error line, exit 2, the good member and the other target still scanned."""
    wheel = _wheel(tmp_path, elf, bad)
    name = shown if shown is not None else repr(bad[0].name.decode())
    code, doc, err = _scan(wheel, other, *options)
    line = f"{wheel}: member {name}: {reason}"
    assert doc["errors"] == [line]
    assert code == 2
    assert f"ldscope: {wheel}: member " in err and len([e for e in err.splitlines() if "member" in e]) == 1
    files = files_by_path(doc)
    assert files[f"{MOUNT}/pkg/libgood.so"]["loads"] is True
    assert files[f"{other}/libother.so"]["loads"] is True
    # The bad member is the wheel's input error, not also an unreadable-file finding.
    assert not [f for f in findings_of(doc) if f["kind"] == "unreadable-file"]
    return doc


# ------------------------------------------------------------------ decompression errors


def test_deflate_byte_flip(tmp_path: Path, elf: bytes, other_target: Path) -> None:
    m = member("pkg/libbad.so", elf, mode=0o755)
    flipped = replace(m, data=b"\xff" + m.data[1:])  # block type 3: reserved
    _check(tmp_path, elf, other_target, [flipped],
           "cannot decompress (deflate): Error -3 while decompressing data: invalid block type")


def test_deflate_crc_mismatch(tmp_path: Path, elf: bytes, other_target: Path) -> None:
    m = member("pkg/libbad.so", elf, mode=0o755)
    _check(tmp_path, elf, other_target, [replace(m, crc=m.crc ^ 1)],
           "bad CRC-32 (corrupt deflate data, or a size that lies)")


def test_corrupt_lzma(tmp_path: Path, elf: bytes, other_target: Path) -> None:
    m = member("pkg/libbad.so", elf, LZMA, mode=0o755)
    corrupt = replace(m, data=m.data[:9] + b"\xff" * 64 + m.data[73:])
    _check(tmp_path, elf, other_target, [corrupt], "cannot decompress (LZMA): Corrupt input data")


def test_corrupt_bzip2(tmp_path: Path, elf: bytes, other_target: Path) -> None:
    m = member("pkg/libbad.so", elf, BZIP2, mode=0o755)
    corrupt = replace(m, data=m.data[:4] + b"\x00" * 16 + m.data[20:])
    _check(tmp_path, elf, other_target, [corrupt], "cannot decompress (bzip2): Invalid data stream")


def test_unsupported_method(tmp_path: Path, elf: bytes, other_target: Path) -> None:
    m = replace(member("pkg/libbad.so", elf, STORED, mode=0o755), method=99)
    _check(tmp_path, elf, other_target, [m], "unsupported compression method 99 (not read)")


def test_stored_bzip2_and_lzma_members_are_read(tmp_path: Path, elf: bytes, other_target: Path) -> None:
    wheel = _wheel(tmp_path, elf, [member(f"pkg/lib{n}.so", elf, method, 0o755)
                                   for n, method in (("s", STORED), ("b", BZIP2), ("l", LZMA))])
    code, doc, _ = _scan(wheel, other_target)
    assert (code, doc["errors"]) == (0, [])
    assert {p: f["loads"] for p, f in files_by_path(doc).items()} == {
        f"{MOUNT}/pkg/lib{n}.so": True for n in ("good", "s", "b", "l")} | {f"{other_target}/libother.so": True}


@pytest.mark.parametrize("fmt", ["text", "json", "sarif", "junit"])
def test_zip_version_too_new_is_an_input_error(tmp_path: Path, elf: bytes, other_target: Path, fmt: str) -> None:
    """zipfile raises NotImplementedError for a directory entry needing zip version > 6.3
    (a traceback before, in every format)."""
    raw = bytearray(build_zip([member("pkg/x.py", b"x = 1\n"), *metadata_members("v", "1.0")]))
    at = raw.find(b"PK\x01\x02")
    raw[at + 6: at + 8] = (64).to_bytes(2, "little")  # version needed to extract: 6.4
    wheel = tmp_path / "v-1.0-py3-none-any.whl"
    wheel.write_bytes(bytes(raw))
    proc = subprocess.run([sys.executable, "-m", "ldscope", "scan", "-j", "1", "--format", fmt, str(wheel),
                           str(other_target)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.splitlines() == [f"ldscope: {wheel}: not a valid wheel (zip): zip file version 6.4"]


# ------------------------------------------------------------------------- member names


@pytest.mark.parametrize(("name", "reason"), [
    ("./x.so", "member name contains a '.' component"),
    ("a//b.so", "member name contains an empty component ('//')"),
    ("", "empty member name"),
    ("../evil.so", "member name contains '..' (path traversal: not read)"),
    ("pkg/../../evil.so", "member name contains '..' (path traversal: not read)"),
    ("/tmp/evil.so", "absolute member name (outside the wheel: not read)"),
    ("C:/evil.so", "member name starts with a drive letter (outside the wheel: not read)"),
    ("pkg\\evil.so", "member name contains a backslash (zip names use '/')"),
    ("pkg/lib\x00evil.so", "member name contains a NUL byte"),
    ("../evil/", "member name contains '..' (path traversal: not read)"),  # a directory entry
])
def test_bad_member_name(tmp_path: Path, elf: bytes, other_target: Path, name: str, reason: str) -> None:
    _check(tmp_path, elf, other_target, [member(name, elf, mode=0o755)], reason)


def test_duplicate_member_name(tmp_path: Path, elf: bytes, other_target: Path) -> None:
    twice = member("pkg/libtwice.so", elf, mode=0o755)
    _check(tmp_path, elf, other_target, [twice, replace(twice, data=compress(b"other", DEFLATED))],
           "duplicate member name (which copy an installer keeps is not defined: neither is read)")


# ---------------------------------------------------------------------------- size lies


def test_size_lie_header_too_small(tmp_path: Path, elf: bytes, other_target: Path) -> None:
    claimed = len(elf) - 100
    _check(tmp_path, elf, other_target, [lying(member("pkg/libbad.so", elf, mode=0o755), claimed)],
           f"it holds more than the {claimed} bytes its header says (a size that lies): not read")


def test_size_lie_header_too_large(tmp_path: Path, elf: bytes, other_target: Path) -> None:
    claimed = len(elf) + 100
    _check(tmp_path, elf, other_target, [lying(member("pkg/libbad.so", elf, mode=0o755), claimed)],
           f"its data ends after {len(elf)} bytes uncompressed, its header says {claimed} "
           "(a size that lies, or a truncated deflate stream)")


def test_overlapping_files_bomb(tmp_path: Path, elf: bytes, other_target: Path) -> None:
    """Five more directory entries, names of their own, all pointing at one member's data."""
    kernel = member("pkg/libk.so", elf, mode=0o755)
    wheel = _wheel(tmp_path, elf, [kernel], overlap=5)
    code, doc, _ = _scan(wheel, other_target)
    errors = doc["errors"]
    assert isinstance(errors, list) and code == 2
    # Every one of the six is refused: the last one's name is longer than the local header's.
    assert len(errors) == 6 and all("overlaps member 'pkg/lib" in e for e in errors)
    size = len(kernel.data)
    assert errors[0] == (f"{wheel}: member 'pkg/libk.so': its data ({size} bytes at offset 0) overlaps member "
                         "'pkg/libk.so.0' (an overlapping-files zip bomb, or a corrupt wheel): not read")
    files = files_by_path(doc)
    assert files[f"{MOUNT}/pkg/libgood.so"]["loads"] is True and files[f"{other_target}/libother.so"]["loads"] is True


def test_fifield_overlapping_bomb(tmp_path: Path, elf: bytes) -> None:
    """The real construction: 50 members, local headers of their own, each one's data running
    through the next ones' into a shared 1 GiB kernel: refused from the headers, member by member."""
    wheel = tmp_path / "ovl-1.0-py3-none-linux_x86_64.whl"
    wheel.write_bytes(overlapping_bomb(50, 1024, elf))
    rss_kb, cpu, code, err = _cost("--format", "json", str(wheel))
    lines = err.splitlines()
    assert code == 2 and len(lines) == 50
    assert all(" overlaps member 'bomb/lib" in line for line in lines[:49])
    assert lines[0].startswith(f"ldscope: {wheel}: member 'bomb/lib000.so': its data (")
    assert lines[49].startswith(f"ldscope: {wheel}: member 'bomb/lib049.so': compression ratio ")
    assert rss_kb < 200_000 and cpu < 20, (rss_kb, cpu)


# ------------------------------------------------------------------------- budgets, bombs


def test_bomb_over_member_budget(tmp_path: Path, elf: bytes, other_target: Path) -> None:
    bomb = zero_bomb("pkg/libbomb.so", 3000, elf, real_crc=False)  # 3000 MiB claimed, ~3 MB stored
    _check(tmp_path, elf, other_target, [bomb],
           f"its header claims {bomb.file_size} bytes uncompressed, over the per-member budget of "
           f"{2 << 30} (--max-member-size): not read")


def test_ratio_over_limit(tmp_path: Path, elf: bytes, other_target: Path) -> None:
    bomb = zero_bomb("pkg/libbomb.so", 1024, elf, real_crc=False)
    ratio = bomb.file_size / len(bomb.data)
    _check(tmp_path, elf, other_target, [bomb],
           f"compression ratio {ratio:.0f}:1 ({len(bomb.data)} bytes claiming {bomb.file_size}), "
           "over the limit of 100:1 (--max-ratio): not read")


def test_wheel_budget(tmp_path: Path, elf: bytes, other_target: Path) -> None:
    padded = elf + os.urandom(600_000)  # incompressible: only the per-wheel budget stops it
    doc = _check(tmp_path, elf, other_target, [member("pkg/liba.so", padded, mode=0o755),
                                               member("pkg/libb.so", padded, mode=0o755)],
                 f"reading its {len(padded)} bytes would take the wheel past the per-wheel budget of "
                 "1048576 bytes decompressed (--max-wheel-size): not read", "'pkg/libb.so'",
                 "--max-wheel-size", "1M")
    assert files_by_path(doc)[f"{MOUNT}/pkg/liba.so"]["loads"] is True


def test_options_raise_the_budgets(tmp_path: Path, elf: bytes, other_target: Path) -> None:
    """A library padded with 20 MiB of zeros (~1000:1): refused by default, read when allowed."""
    padded = zero_bomb("pkg/libpadded.so", 20, elf)
    wheel = _wheel(tmp_path, elf, [padded])
    code, doc, _ = _scan(wheel, other_target)
    assert code == 2 and "over the limit of 100:1 (--max-ratio)" in str(doc["errors"])
    code, doc, _ = _scan(wheel, other_target, "--max-member-size", "16M", "--max-ratio", "2000")
    assert code == 2 and "over the per-member budget of 16777216 (--max-member-size)" in str(doc["errors"])
    code, doc, _ = _scan(wheel, other_target, "--max-member-size", "64MiB", "--max-ratio", "2000")
    assert (code, doc["errors"]) == (0, [])
    assert files_by_path(doc)[f"{MOUNT}/pkg/libpadded.so"]["loads"] is True


def _cost(*args: str) -> tuple[int, float, int, str]:
    """`python -m ldscope scan ARGS` in a child: (peak RSS KiB, CPU seconds, exit code, stderr)."""
    wrapper = ("import json, resource, subprocess, sys\n"
               "p = subprocess.run([sys.executable, '-m', 'ldscope', 'scan', '-j', '1', *sys.argv[1:]],"
               " capture_output=True, text=True)\n"
               "r = resource.getrusage(resource.RUSAGE_CHILDREN)\n"
               "print(json.dumps([r.ru_maxrss, r.ru_utime + r.ru_stime, p.returncode, p.stderr]))\n")
    proc = subprocess.run([sys.executable, "-c", wrapper, *args], capture_output=True, text=True, timeout=300)
    rss, cpu, code, err = json.loads(proc.stdout)
    return rss, cpu, code, err


@pytest.mark.parametrize("mib", [1024, 2047])
def test_zip_bomb_costs_no_memory(tmp_path: Path, elf: bytes, mib: int) -> None:
    """The issue's 1 MB and 2 MB bombs (1 and 2 GiB of zeros after an ELF header): 2.1 GB /
    4.2 GB peak before; refused from the header now (see the README for the figures)."""
    bomb = zero_bomb("pkg/libbomb.so", mib, elf, real_crc=False)
    wheel = tmp_path / "bomb-1.0-py3-none-linux_x86_64.whl"
    wheel.write_bytes(build_zip([bomb, *metadata_members("bomb", "1.0")]))
    assert wheel.stat().st_size < (mib + 100) * 1100
    rss_kb, cpu, code, err = _cost(str(wheel))
    assert code == 2 and "over the limit of 100:1 (--max-ratio)" in err
    assert rss_kb < 200_000, f"peak RSS {rss_kb} KiB"
    assert cpu < 20, f"{cpu} s CPU"
    # A lying header (1 MiB claimed) over the same stream: decompression stops at the claim.
    liar = tmp_path / "liar-1.0-py3-none-linux_x86_64.whl"
    liar.write_bytes(build_zip([lying(bomb, 1 << 20), *metadata_members("liar", "1.0")]))
    rss_kb, cpu, code, err = _cost(str(liar))
    assert code == 2 and "(a size that lies)" in err
    assert rss_kb < 200_000 and cpu < 20
