"""Robustness: mutated wheels are read, or give the one malformed-input error, fast and bounded.

Seeds are three small wheels built here byte by byte (tests/wheel_support.py) around a real
gcc-built shared library: deflate, stored, bzip2 and LZMA members, an extension module, an
executable, directory entries and dist-info. Each case mutates member names (traversal,
absolute, drive letters, '//', './', empty, NUL, backslash, duplicates, very long), compression
methods (declared without recompressing, unknown numbers), sizes and CRCs (lies, zero, 4 GiB),
member data (flips, truncation, garbage), overlapping central-directory entries, small zero
bombs, and then bytes of the built zip (flips, truncation, central-directory fields poked).

Each case runs in-process through what `scan WHEEL` does with a wheel target: the discovery
of its members (`_discover_wheel`, which builds the WheelOverlay), every candidate parsed as
an ElfImage through the overlay, and the dist-info read. Anything but success or the one
`not a valid wheel (zip)` InputFormatError fails, as does an error line that is not one line
naming the wheel and the member, a central-directory name that is neither read nor reported
(nothing silently dropped), more decompressed than the budgets allow, or a case taking ≥ 1 s
CPU. 5 batches × 2,500 = 12,500 cases; the first batch runs in the fast lane.
"""

from __future__ import annotations

import os
import random
import re
import resource
import shutil
import tempfile
import time
import zipfile
from collections import Counter
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from ldscope.errors import InputFormatError
from ldscope.loader import ImageCache
from ldscope.scan._engine import _discover_wheel, _TargetFiles, _wheel_distribution
from ldscope.scan._targets import ScanTarget, TargetKind
from ldscope.system import WheelLimits, WheelOverlay
from tests.conftest import batches, run
from tests.wheel_support import (
    BZIP2,
    DEFLATED,
    LZMA,
    STORED,
    Member,
    MiB,
    build_zip,
    compress,
    member,
    metadata_members,
    zero_bomb,
)

BATCHES = 5
CASES_PER_BATCH = 2500  # 5 × 2,500 = 12,500 cases per full run
MAX_CPU_SECONDS = 1.0  # per case, CPU time (never wall-clock)
LIMITS = WheelLimits(member_bytes=32 * MiB, wheel_bytes=4 * MiB, ratio=100.0)
WHEEL = "fuzz-1.0-cp311-cp311-linux_x86_64.whl"

HOSTILE_NAMES = [
    "", "/", "./x.so", "a//b.so", "../x.so", "pkg/../../x.so", "/tmp/x.so", "/etc/passwd", "C:/x.so", "c:x.so",
    "pkg\\x.so", "..\\x.so", "pkg/lib\x00x.so", "\x00", "pkg/./libx.so", "pkg//", "../", "..", ".", "pkg/.",
    "x" * 300 + ".so", "pkg/libé.so", "pkg/lib\n.so", "pkg/lib\x1b[2J.so", "pkg/lib\u202e.so", "//x.so",
]
INTERESTING_32 = [0, 1, 0x7F, 0xFF, 0xFFFF, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFE, 0xFFFFFFFF]
# Central-directory entry fields: (offset in the entry, width): method, CRC, sizes, name and
# extra lengths, the local header offset.
CD_FIELDS = [(10, 2), (16, 4), (20, 4), (24, 4), (28, 2), (30, 2), (32, 2), (42, 4), (8, 2)]


def _elf(d: Path) -> bytes:
    (d / "f.c").write_text("int fuzz(void) { return 2; }\n")
    run(["gcc", "-shared", "-fPIC", "-o", "libfuzz.so", "f.c", "-Wl,-soname,libfuzz.so"], cwd=d)
    return (d / "libfuzz.so").read_bytes()


@pytest.fixture(scope="module")
def seeds(tmp_path_factory: pytest.TempPathFactory) -> list[list[Member]]:
    return seed_wheels(_elf(tmp_path_factory.mktemp("fuzzelf")))


def seed_wheels(elf: bytes) -> list[list[Member]]:
    """The three seed wheels' members around the library `elf`."""
    meta = metadata_members("fuzz", "1.0")
    return [
        [member("fuzz/libfuzz.so", elf, DEFLATED, 0o755), *meta],
        [member("fuzz/libs.so", elf, STORED, 0o755), member("fuzz/libb.so.1", elf, BZIP2, 0o755),
         member("fuzz/_ext.cpython-311-x86_64-linux-gnu.so", elf, LZMA, 0o755),
         member("fuzz/__init__.py", b"from . import _ext\n"), *meta],
        [member("fuzz/", b"", STORED), member("fuzz.libs/", b"", STORED),
         member("fuzz.libs/libdep-1a2b.so.3", elf, DEFLATED, 0o755),
         member("fuzz/bin/tool", elf, DEFLATED, 0o755), member("fuzz/data.txt", b"hello " * 200), *meta],
    ]


def _mutate_members(rng: random.Random, members: list[Member], elf_like: bytes) -> tuple[list[Member], int]:
    """Member-level mutations: names, methods, sizes, CRCs, data, duplicates, bombs, overlaps."""
    out = list(members)
    overlap = 0
    for _ in range(rng.randint(1, 3)):
        i = rng.randrange(len(out))
        m = out[i]
        op = rng.randrange(11)
        if op == 0:
            out[i] = replace(m, name=rng.choice(HOSTILE_NAMES).encode("utf-8"))
        elif op == 1:  # a method declared, the data left as it is
            out[i] = replace(m, method=rng.choice([STORED, DEFLATED, BZIP2, LZMA, 99, rng.randrange(30)]))
        elif op == 2:
            sizes = [0, 1, m.file_size - 1, m.file_size + 1, m.file_size * 2, 0xFFFFFFFF, rng.randrange(1 << 32)]
            out[i] = replace(m, file_size=min(max(0, rng.choice(sizes)), 0xFFFFFFFF))
        elif op == 3:
            out[i] = replace(m, crc=m.crc ^ (1 << rng.randrange(32)))
        elif op == 4 and m.data:
            data = bytearray(m.data)
            for _ in range(rng.randint(1, 8)):
                data[rng.randrange(len(data))] = rng.randrange(256)
            out[i] = replace(m, data=bytes(data))
        elif op == 5:
            out[i] = replace(m, data=m.data[: rng.randrange(len(m.data) + 1)])
        elif op == 6:
            out[i] = replace(m, data=m.data + rng.randbytes(rng.randint(1, 64)))
        elif op == 7:
            out.insert(rng.randrange(len(out) + 1), replace(m, data=compress(rng.randbytes(32), m.method)))
        elif op == 8:
            # Under the 16 MiB ratio exemption (read), over the ratio limit, over the member budget.
            out[i] = zero_bomb(m.name.decode("utf-8", "replace") or "b", rng.choice([1, 2, 20, 40]), elf_like[:256],
                               real_crc=rng.random() < 0.5)
        elif op == 9:
            overlap = rng.randint(1, 3)
        else:
            out[i] = replace(m, local_name=m.name[:-1] + b"X" if m.name else b"x")
    return out, overlap


def _mutate_bytes(rng: random.Random, data: bytes) -> bytes:
    """Byte-level mutations of the built zip."""
    raw = bytearray(data)
    op = rng.randrange(4)
    if op == 0:
        for _ in range(rng.randint(1, 16)):
            raw[rng.randrange(len(raw))] = rng.randrange(256)
    elif op == 1:
        del raw[rng.randrange(len(raw)):]
    elif op == 2:
        entries = [m.start() for m in re.finditer(b"PK\x01\x02", raw) if m.start() + 46 <= len(raw)]
        for _ in range(rng.randint(1, 3)):
            if not entries:
                break
            at = rng.choice(entries)
            off, width = rng.choice(CD_FIELDS)
            value = rng.choice([*INTERESTING_32, rng.randrange(1 << 32)]) & ((1 << (8 * width)) - 1)
            raw[at + off: at + off + width] = value.to_bytes(width, "little")
    else:
        pos = rng.randrange(len(raw))
        raw[pos:pos] = rng.randbytes(rng.randint(1, 32))
    return bytes(raw)


def _case(path: Path, data: bytes) -> str:
    """One case through the scan's wheel handling; its outcome class."""
    path.write_bytes(data)
    found = _TargetFiles()
    target = ScanTarget(str(path), TargetKind.WHEEL, str(path))
    try:
        _discover_wheel(target, None, found, LIMITS)
    except InputFormatError as exc:
        assert exc.file == str(path) and exc.reason.startswith("not a valid wheel (zip): "), exc.one_line()
        return "not a zip"
    overlay = found.fs
    assert isinstance(overlay, WheelOverlay)
    try:
        cache = ImageCache(overlay)
        for c in found.discovery.candidates:
            try:
                cache.get(c.host_path)
            except InputFormatError:
                pass  # a corrupt member (listed in overlay.errors) or a corrupt ELF file inside
        _wheel_distribution(overlay, overlay.mount)
        lines = overlay.error_lines()
        for line in lines:
            assert line.startswith(f"{path}: member ") and "\n" not in line and "\r" not in line, line
        # Nothing dropped silently: every directory entry is read, a directory, or reported.
        read = {i.orig_filename for i in overlay.members.values()}
        for info in overlay._zip.infolist():
            assert info.orig_filename in read or info.orig_filename in overlay.errors or info.is_dir(), info
        assert overlay._total <= LIMITS.wheel_bytes
        return "member errors" if lines else "clean"
    finally:
        overlay.close()


@pytest.fixture
def scratch(tmp_path: Path) -> Iterator[Path]:
    """Where cases are written: tmpfs when there is one (a case is one file rewritten 2,500 times)."""
    shm = Path("/dev/shm")
    if not (shm.is_dir() and os.access(shm, os.W_OK)):
        yield tmp_path
        return
    d = Path(tempfile.mkdtemp(prefix="ldscope-wheel-fuzz-", dir=shm))
    try:
        yield d
    finally:
        shutil.rmtree(d, ignore_errors=True)


def _cases(seed_members: list[list[Member]], batch: int) -> list[bytes]:
    rng = random.Random(0x13_000 + batch)
    elf_like = seed_members[0][0].data
    out = []
    for _ in range(CASES_PER_BATCH):
        members, overlap = _mutate_members(rng, rng.choice(seed_members), elf_like)
        if rng.random() < 0.2:
            members, overlap = list(rng.choice(seed_members)), 0
        data = build_zip(members, overlap)
        out.append(_mutate_bytes(rng, data) if rng.random() < 0.5 else data)
    return out


@pytest.mark.parametrize("batch", batches(BATCHES))
def test_mutated_wheels(seeds: list[list[Member]], scratch: Path, tmp_path: Path, batch: int) -> None:
    path = scratch / WHEEL
    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    outcomes: Counter[str] = Counter()
    slowest = 0.0
    for i, data in enumerate(_cases(seeds, batch)):
        start = time.process_time()
        try:
            outcomes[_case(path, data)] += 1
        except AssertionError:
            raise
        except Exception as exc:  # anything but the one malformed-input error is a bug
            (tmp_path / f"crash-{batch}-{i}.whl").write_bytes(data)
            raise AssertionError(f"case {batch}/{i}: {type(exc).__name__}: {exc}") from exc
        cpu = time.process_time() - start
        slowest = max(slowest, cpu)
        assert cpu < MAX_CPU_SECONDS, f"case {batch}/{i} took {cpu:.2f} s CPU"
    assert sum(outcomes.values()) == CASES_PER_BATCH
    # The mutator reaches every outcome, and most cases get past the zip directory.
    assert outcomes["clean"] > 0 and outcomes["not a zip"] > 0
    assert outcomes["member errors"] > CASES_PER_BATCH // 4, outcomes
    grown_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - rss_before
    assert grown_kib < 300_000, f"peak RSS grew by {grown_kib} KiB"


def test_seeds_are_clean_wheels(seeds: list[list[Member]], tmp_path: Path) -> None:
    """Unmutated, every seed reads without an error (the fuzz starts from valid wheels)."""
    for n, members in enumerate(seeds):
        path = tmp_path / f"seed{n}-{WHEEL}"
        assert _case(path, build_zip(members)) == "clean"
        with zipfile.ZipFile(path) as zf:
            assert zf.testzip() is None


def test_one_line_per_class_in_the_fuzz_vocabulary(seeds: list[list[Member]], scratch: Path) -> None:
    """The first batch's member errors cover every class of the issue (names, traversal,
    duplicates, methods, decompression, sizes, budgets, overlaps)."""
    reasons: Counter[str] = Counter()
    path = scratch / WHEEL
    for data in _cases(seeds, 0):
        path.write_bytes(data)
        try:
            overlay = WheelOverlay(str(path), "/m", LIMITS)
        except InputFormatError:
            continue
        try:
            for v in overlay.virtual_files():
                try:
                    overlay.read(v)
                except InputFormatError:
                    pass
            for reason in overlay.errors.values():
                reasons[reason] += 1
        finally:
            overlay.close()
    text = " | ".join(reasons)
    for needle in ("member name contains '..'", "absolute member name", "drive letter", "empty member name",
                   "NUL", "backslash", "empty component", "'.' component", "duplicate member name",
                   "unsupported compression method", "cannot decompress", "bad CRC-32", "its data ends after",
                   "it holds more than", "compression ratio", "its header claims", "per-wheel budget", "overlaps"):
        assert needle in text, (needle, sorted(reasons)[:50])

