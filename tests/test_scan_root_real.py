"""`scan --root` on real root filesystems: no finding on a file that is not a library (issue 13, item 9).

A minimal Debian 12 root made by debootstrap (cached as a tarball under
~/.cache/ldscope-tests/, so only the first run needs the network), and the host's own /etc.
Before the fix, every name containing `.so` was "named like a library": /etc/ld.so.cache,
/etc/ld.so.conf, gdb's `libfoo.so.6.0.0-gdb.py` scripts ...
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from ldscope.scan._discover import named_like_library

SRC = str(Path(__file__).resolve().parent.parent / "src")
CACHE = Path(os.path.expanduser("~/.cache/ldscope-tests"))
TARBALL = CACHE / "debootstrap-bookworm-minbase.tar.gz"


def test_library_name_patterns() -> None:
    libraries = ["libz.so", "libz.so.1", "libfoo.so.1.2.3", "ld-linux-x86-64.so.2", "ld.so.1",
                 "foo.cpython-311-x86_64-linux-gnu.so", "_ssl.abi3.so", "libstdc++.so.6.0.30"]
    others = ["ld.so.cache", "ld.so.conf", "ld.so.conf.d", "debian.sources", "x.socket",
              "libstdc++.so.6.0.30-gdb.py", "libglib-2.0.so.0.7400.6-gdb.py", "libfoo.so.1a",
              "foo.so.txt", "a.sock", "libfoo.so.", "libfoo.so.1..2"]
    assert [n for n in libraries if not named_like_library(n)] == []
    assert [n for n in others if named_like_library(n)] == []


def _no_devices(member: tarfile.TarInfo, dest: str) -> tarfile.TarInfo | None:
    """tarfile's "tar" filter, minus device nodes and FIFOs (not creatable without root)."""
    if member.ischr() or member.isblk() or member.isfifo():
        return None
    return tarfile.tar_filter(member, dest)


def _debian_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("debian") / "root"
    if not TARBALL.exists():
        if shutil.which("debootstrap") is None or os.geteuid() != 0:
            pytest.skip("needs debootstrap (and root) or a cached root tarball")
        build = tmp_path_factory.mktemp("debootstrap") / "root"
        try:
            subprocess.run(["debootstrap", "--variant=minbase", "bookworm", str(build),
                            "http://deb.debian.org/debian"], check=True, capture_output=True,
                           timeout=1800)
        except (subprocess.CalledProcessError, subprocess.TimeoutExpired) as exc:
            pytest.skip(f"debootstrap failed (network?): {exc}")
        CACHE.mkdir(parents=True, exist_ok=True)
        partial = TARBALL.with_suffix(".partial")
        with tarfile.open(partial, "w:gz") as tar:
            tar.add(build, arcname=".")
        partial.rename(TARBALL)
    root.mkdir()
    with tarfile.open(TARBALL) as tar:
        tar.extractall(root, filter=_no_devices)
    return root


@pytest.fixture(scope="module")
def debian_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _debian_root(tmp_path_factory)


def _scan(*args: str) -> dict[str, object]:
    run = subprocess.run([sys.executable, "-m", "ldscope", "scan", *args, "--format", "json"],
                         capture_output=True, text=True, env={**os.environ, "PYTHONPATH": SRC},
                         check=False)
    assert "Traceback" not in run.stderr, run.stderr[-3000:]
    assert run.returncode in (0, 1), run.stderr[-3000:]
    result = json.loads(run.stdout)
    assert isinstance(result, dict)
    return result


def _not_library_findings(result: dict[str, object]) -> list[str]:
    """Findings and problem skips naming a file that is not named like a library."""
    bad = []
    for finding in result["findings"]:  # type: ignore[attr-defined]
        for path in finding["files"]:
            if not named_like_library(os.path.basename(path)) and finding["kind"] != "unresolved-symbol":
                bad.append(f"{path}: {finding['title']}")
    for skip in result.get("skipped", []):  # type: ignore[attr-defined]
        if "not an ELF" in json.dumps(skip):
            bad.append(json.dumps(skip))
    return bad


def test_debian_minbase_root_has_no_false_library_errors(debian_root: Path) -> None:
    assert (debian_root / "etc/ld.so.cache").exists() or (debian_root / "etc/ld.so.conf").exists()
    result = _scan("--root", str(debian_root))
    text = json.dumps(result)
    assert "named like a library but not an ELF file" not in text
    for name in ("ld.so.cache", "ld.so.conf", "debian.sources", "-gdb.py"):
        assert not any(name in f for f in _not_library_findings(result)), name
    assert _not_library_findings(result) == []


def test_host_etc_has_no_false_library_errors(tmp_path: Path) -> None:
    run = subprocess.run([sys.executable, "-m", "ldscope", "scan", "/etc", "--format", "json"],
                         capture_output=True, text=True, env={**os.environ, "PYTHONPATH": SRC},
                         check=False)
    assert "Traceback" not in run.stderr
    assert "named like a library but not an ELF file" not in run.stdout


def test_debian_minbase_perl_modules_are_plugins_of_perl(debian_root: Path) -> None:
    """perl-base's XS modules link no libperl: the Perl_* symbols they need are exported by the
    statically linked /usr/bin/perl. Simulated as loaded by it they load: warnings, not errors."""
    result = _scan("--root", str(debian_root))
    perl_modules = [f for f in result["findings"]  # type: ignore[attr-defined]
                    if any("/perl-base/auto/" in p for p in f["files"])]
    assert perl_modules, "minbase ships perl-base's XS modules"
    for finding in perl_modules:
        assert finding["severity"] == "warning", finding["title"]
        assert "is a plugin of /usr/bin/perl" in finding["title"]
    files = {f["path"]: f for f in result["files"]}  # type: ignore[attr-defined]
    posix = next(p for p in files if p.endswith("/perl-base/auto/POSIX/POSIX.so"))
    assert files[posix]["loads"] is True
    assert "dlopen'ed by /usr/bin/perl" in files[posix]["host"]
