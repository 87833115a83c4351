"""No false positives: `ldscope scan` agrees with `ldd -r` on the environment the tests run in,
on a deterministic sample of this machine's system libraries, and on a PyTorch environment.

Every file's facts (undefined symbols with the object that needs them, libraries not found,
version nodes not found) are compared with `ldd -r` (libpython preloaded for what Python
imports; a library checked inside another file's load is compared inside that file's trace).
docs/scan-oracle.md explains the oracle and the differences that remain by design.
"""

from __future__ import annotations

import os
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from tests.scan_support import (
    compare_with_ldd,
    files_by_path,
    findings_of,
    ldd_for_entry,
    scan_json,
    scan_process,
    site_packages,
    torch_venv,
)

SYSTEM_LIB_DIR = "/usr/lib/x86_64-linux-gnu"
SAMPLE_SIZE = 220


def _disagreements(doc: dict[str, object], tree: str | None) -> tuple[int, list[str]]:
    entries = sorted(files_by_path(doc).values(), key=lambda e: str(e["path"]))

    def check(entry: dict[str, object]) -> list[str]:
        return [str(d) for d in compare_with_ldd(entry, ldd_for_entry(entry, tree))]

    with ThreadPoolExecutor(3) as pool:
        return len(entries), [d for ds in pool.map(check, entries) for d in ds]


# ------------------------------------------------------------- the test suite's own env


@pytest.fixture(scope="module")
def own_env() -> dict[str, object]:
    code, doc, err = scan_json()
    assert code == 0, (err, findings_of(doc)[:3])
    return doc


def test_no_argument_scans_this_environment_clean() -> None:
    """What a user runs after installing: `ldscope scan`, exit 0, a useful summary."""
    proc = scan_process(timeout=240)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    first = proc.stdout.splitlines()[0]
    assert first.startswith(f"scanned environment {os.path.abspath(sys.prefix)}")
    assert f"(interpreter {os.path.realpath(sys.executable)})" in first
    assert "native files" in proc.stdout and "no findings" in proc.stdout


def test_this_environment_matches_ldd(own_env: dict[str, object]) -> None:
    files = files_by_path(own_env)
    assert own_env["findings"] == []
    # numpy is a dependency of ldscope itself: its extensions are in here.
    assert any("/numpy/_core/_multiarray_umath" in p for p in files)
    prefix = os.path.abspath(sys.prefix)
    checked, problems = _disagreements(own_env, prefix)
    assert checked == len(files)
    assert problems == []


# ------------------------------------------------------------------- system libraries


def _system_sample() -> list[str]:
    """Every k-th regular *.so* file of the multiarch directory (sorted: deterministic)."""
    names = sorted(n for n in os.listdir(SYSTEM_LIB_DIR) if ".so" in n)
    regular = [os.path.join(SYSTEM_LIB_DIR, n) for n in names
               if os.path.isfile(os.path.join(SYSTEM_LIB_DIR, n))
               and not os.path.islink(os.path.join(SYSTEM_LIB_DIR, n))]
    if len(regular) < SAMPLE_SIZE:
        pytest.skip(f"only {len(regular)} libraries in {SYSTEM_LIB_DIR}")
    step = len(regular) / SAMPLE_SIZE
    return [regular[int(i * step)] for i in range(SAMPLE_SIZE)]


def test_system_libraries_match_ldd() -> None:
    sample = _system_sample()
    code, doc, _ = scan_json(*sample)
    assert code in (0, 1)
    files = files_by_path(doc)
    skipped = {s["path"]: s["reason"] for s in doc["skipped"]}  # type: ignore[union-attr]
    # Every sampled file is either simulated or skipped with a reason (ld scripts: libc.so).
    assert set(sample) == set(files) | set(skipped)
    assert all("ld script" in r or "not an ELF" in r for r in skipped.values()), skipped
    assert len(files) >= 200
    checked, problems = _disagreements(doc, None)
    assert checked == len(files)
    assert problems == []
    # Whatever ldscope says fails, ldd -r says fails: libraries that need symbols their host
    # program provides (plugins) are expected; each such finding names its symbols.
    for finding in findings_of(doc):
        assert finding["kind"] in ("unresolved-symbol", "missing-library", "missing-version"), finding


# ---------------------------------------------------------------------------- PyTorch


@pytest.fixture(scope="module")
def torch_scan() -> tuple[Path, dict[str, object]]:
    env = torch_venv()
    code, doc, err = scan_json(str(env))
    assert code == 1, err
    return env, doc


@pytest.mark.slow  # builds a PyTorch venv on first use
def test_torch_env_matches_ldd(torch_scan: tuple[Path, dict[str, object]]) -> None:
    env, doc = torch_scan
    files = files_by_path(doc)
    site = site_packages(env)
    torch_c = site / "torch" / "_C.cpython-311-x86_64-linux-gnu.so"
    assert files[str(torch_c)]["kind"] == "extension" and files[str(torch_c)]["loads"] is True
    libs = {os.path.basename(p): f for p, f in files.items() if f["kind"] == "library"}
    for name in ("libtorch_cpu.so", "libtorch_python.so", "libc10.so"):
        assert libs[name]["loads"] is True and libs[name]["checked_as_part_of"] == str(torch_c)
    assert len(files) >= 100
    checked, problems = _disagreements(doc, str(site))
    assert checked == len(files)
    assert problems == []


@pytest.mark.slow
def test_torch_env_only_real_failure_is_test_shim(torch_scan: tuple[Path, dict[str, object]]) -> None:
    """torch/bin/test_shim (a test binary in the wheel) has RUNPATH $ORIGIN (torch/bin), but
    its libraries are in torch/lib: ld.so cannot load it either (see docs/scan-oracle.md)."""
    env, doc = torch_scan
    failing = [p for p, f in files_by_path(doc).items() if not f["loads"]]
    shim = str(site_packages(env) / "torch" / "bin" / "test_shim")
    assert failing == [shim]
    missing = {p["library"] for f in findings_of(doc) for p in f["problems"]  # type: ignore[attr-defined]
               if p["kind"] == "missing-library"}
    assert missing == {"libtorch.so", "libtorch_cpu.so", "libc10.so"}
    assert all(f["files"] == [shim] for f in findings_of(doc))
