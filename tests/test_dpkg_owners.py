"""DebianOwners: which installed Debian package lists a file, read from dpkg's database.

On the real machine the answers are checked against dpkg-query itself (-S for the owner, -W for
version and architecture); a synthetic root in tmp_path covers what this machine cannot show
(removed packages, arch-qualified lists, malformed stanzas, the root prefix, no database)."""

from __future__ import annotations

import glob
import os
import random
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from ldscope.system import DebianOwners, PackageOwner

DPKG_DB = Path("/var/lib/dpkg")
HAS_DB = (DPKG_DB / "status").is_file() and bool(glob.glob(str(DPKG_DB / "info" / "*.list")))
needs_dpkg_query = pytest.mark.skipif(shutil.which("dpkg-query") is None or not HAS_DB,
                                      reason="needs dpkg-query and a dpkg database")
needs_db = pytest.mark.skipif(not HAS_DB, reason="needs a dpkg database")
MULTIARCH = "/usr/lib/x86_64-linux-gnu"
MERGED = ("bin", "sbin", "lib", "lib32", "lib64", "libx32", "libo32")


def _libc() -> str:
    for path in (f"{MULTIARCH}/libc.so.6", "/lib/x86_64-linux-gnu/libc.so.6"):
        if os.path.exists(path):
            return path
    pytest.skip("no x86_64 Debian libc.so.6")


def _other_spelling(path: str) -> str | None:
    """The oracle's own merged-/usr alias: /usr/lib/x ↔ /lib/x."""
    for top in MERGED:
        if path.startswith(f"/usr/{top}/"):
            return path[4:]
        if path.startswith(f"/{top}/"):
            return "/usr" + path
    return None


def _dpkg_query_s(paths: list[str]) -> dict[str, set[str]]:
    """path → package names (arch qualifier dropped), from one `dpkg-query -S` call."""
    out = subprocess.run(["dpkg-query", "-S", *paths], capture_output=True, text=True, timeout=120,
                         env={"LC_ALL": "C", "PATH": os.environ.get("PATH", "")}, check=False).stdout
    owners: dict[str, set[str]] = {}
    for line in out.splitlines():
        if line.startswith("diversion by "):
            continue
        packages, sep, path = line.partition(": ")  # "a:amd64, b: /path"
        if sep:
            owners.setdefault(path, set()).update(p.strip().partition(":")[0] for p in packages.split(","))
    return owners


def _dpkg_query_w() -> dict[str, tuple[str, str]]:
    """Installed package name → (version, architecture), from `dpkg-query -W`."""
    out = subprocess.run(
        ["dpkg-query", "-W", "-f", "${db:Status-Status}\t${Package}\t${Version}\t${Architecture}\n"],
        capture_output=True, text=True, timeout=120, check=True).stdout
    table = {}
    for line in out.splitlines():
        state, name, version, arch = line.split("\t")
        if state == "installed":
            table[name] = (version, arch)
    return table


@needs_dpkg_query
def test_libc_owner_is_what_dpkg_query_says_under_both_spellings() -> None:
    libc = _libc()
    other = _other_spelling(libc)
    assert other is not None
    owners = _dpkg_query_s([libc, other])
    listed = [p for p in (libc, other) if p in owners]
    assert listed, "dpkg-query -S knows neither spelling of libc.so.6"
    assert owners[listed[0]] == {"libc6"}
    qualified = subprocess.run(["dpkg-query", "-S", listed[0]], capture_output=True, text=True,
                               check=True).stdout.partition(": ")[0]  # "libc6:amd64"
    version = subprocess.run(["dpkg-query", "-W", "-f", "${Version}", qualified], capture_output=True,
                             text=True, check=True).stdout
    arch = subprocess.run(["dpkg-query", "-W", "-f", "${Architecture}", qualified], capture_output=True,
                          text=True, check=True).stdout

    db = DebianOwners()
    expected = PackageOwner("libc6", version, arch)
    assert db.owner_of(libc) == expected
    assert db.owner_of(other) == expected
    assert db.owner_of("/lib/x86_64-linux-gnu/libc.so.6") == db.owner_of(f"{MULTIARCH}/libc.so.6")
    assert db.owner_of(f"{MULTIARCH}/../x86_64-linux-gnu/libc.so.6") == expected  # normalised


@needs_dpkg_query
def test_random_multiarch_libraries_agree_with_dpkg_query() -> None:
    files = sorted(p for p in glob.glob(f"{MULTIARCH}/*.so*")
                   if os.path.isfile(p) and not any(c in p for c in "*?[]\\"))
    if not files:
        pytest.skip(f"no libraries in {MULTIARCH}")
    sample = random.Random(20240810).sample(files, min(50, len(files)))
    # The oracle's spellings, in order: as given, its alias, its real path, that one's alias.
    spellings = {}
    for path in sample:
        real = os.path.realpath(path)
        spellings[path] = [s for s in (path, _other_spelling(path), real, _other_spelling(real)) if s]
    oracle = _dpkg_query_s(sorted({s for group in spellings.values() for s in group}))
    installed = _dpkg_query_w()

    db = DebianOwners()
    owned = 0
    for path in sample:
        expected = next((oracle[s] for s in spellings[path] if s in oracle), None)
        got = db.owner_of(path)
        if expected is None:
            assert got is None, path
            continue
        owned += 1
        assert got is not None, f"{path}: dpkg-query says {expected}"
        assert got.name in expected, path
        assert (got.version, got.architecture) == installed[got.name], path
        assert got.source == "dpkg"
    assert owned > 0


@needs_db
def test_index_build_costs_under_a_second_of_cpu() -> None:
    db = DebianOwners()
    start = time.process_time()
    owner = db.owner_of(_libc())  # the first call reads the whole database
    spent = time.process_time() - start
    assert owner is not None
    assert spent < 1.0, f"index build took {spent:.3f} s CPU"


STATUS = """\
Package: libfoo1
Status: install ok installed
Priority: optional
Architecture: amd64
Multi-Arch: same
Version: 1.2-3
Description: a library
 Package: not-a-package
 .
 continuation lines are not fields

Package: oldpkg
Status: deinstall ok config-files
Architecture: amd64
Version: 0.9-1

Garbage line without a colon
Status: install ok installed
Version: 6.6

Package: halfpkg
Status: install ok
Architecture: amd64

Package: tool
Status: hold ok installed
Architecture: all
Version: 2.0

Package: libbaz
Status: install ok installed
Architecture: amd64
Multi-Arch: same
Version: 4
"""

LISTS = {
    "libfoo1:amd64.list": "/.\n/lib\n/lib/x86_64-linux-gnu\n/lib/x86_64-linux-gnu/libfoo.so.1.2\n"
                          "/lib/x86_64-linux-gnu/libfoo.so.1\n\nrelative/garbage\n",
    "oldpkg.list": "/usr/lib/x86_64-linux-gnu/libold.so.1\n",
    "halfpkg.list": "/usr/lib/x86_64-linux-gnu/libhalf.so.1\n",
    "tool.list": "/usr/bin/tool\n",
    "libbaz:i386.list": "/usr/lib/i386-linux-gnu/libbaz.so.4\n",  # only libbaz:amd64 is installed
    "libbaz:amd64.list": "/usr/lib/x86_64-linux-gnu/libbaz.so.4\n",
    "nostatus.list": "/usr/lib/x86_64-linux-gnu/libghost.so.1\n",
}


def _make_root(root: Path) -> None:
    info = root / "var/lib/dpkg/info"
    info.mkdir(parents=True)
    (root / "var/lib/dpkg/status").write_text(STATUS)
    for name, text in LISTS.items():
        (info / name).write_text(text)
    lib = root / "usr/lib/x86_64-linux-gnu"
    lib.mkdir(parents=True)
    (lib / "libfoo.so.1.2").write_bytes(b"\x7fELF")
    (lib / "libfoo.so.1").symlink_to("libfoo.so.1.2")
    (lib / "libfoo.so").symlink_to("libfoo.so.1")  # the -dev symlink, listed by nobody here
    (lib / "libabs.so").symlink_to("/usr/lib/x86_64-linux-gnu/libfoo.so.1.2")  # absolute: inside root
    (root / "lib").symlink_to("usr/lib")
    (root / "usr/bin").mkdir()
    (root / "bin").symlink_to("usr/bin")


def test_synthetic_root(tmp_path: Path) -> None:
    root = tmp_path / "root"
    db = DebianOwners(str(root))  # nothing is read yet: the database does not even exist
    _make_root(root)
    foo = PackageOwner("libfoo1", "1.2-3", "amd64")

    # root's view and host's view, both usrmerge spellings
    assert db.owner_of("/lib/x86_64-linux-gnu/libfoo.so.1.2") == foo
    assert db.owner_of("/usr/lib/x86_64-linux-gnu/libfoo.so.1.2") == foo
    assert db.owner_of(f"{root}/usr/lib/x86_64-linux-gnu/libfoo.so.1.2") == foo
    assert db.owner_of(f"{root}/lib/x86_64-linux-gnu/libfoo.so.1") == foo
    assert db.owner_of(f"{root}/usr/lib/x86_64-linux-gnu/./libfoo.so.1") == foo
    # unlisted symlinks answer for their target, absolute targets resolved inside the root
    assert db.owner_of("/usr/lib/x86_64-linux-gnu/libfoo.so") == foo
    assert db.owner_of(f"{root}/usr/lib/x86_64-linux-gnu/libabs.so") == foo

    # not installed (config-files; a two-word Status), or listed but not in status at all
    assert db.owner_of("/usr/lib/x86_64-linux-gnu/libold.so.1") is None
    assert db.owner_of("/usr/lib/x86_64-linux-gnu/libhalf.so.1") is None
    assert db.owner_of("/usr/lib/x86_64-linux-gnu/libghost.so.1") is None
    # arch-qualified lists match the stanza of that architecture only
    assert db.owner_of("/usr/lib/x86_64-linux-gnu/libbaz.so.4") == PackageOwner("libbaz", "4", "amd64")
    assert db.owner_of("/usr/lib/i386-linux-gnu/libbaz.so.4") is None
    # hold is still installed; /bin ↔ /usr/bin
    assert db.owner_of(f"{root}/bin/tool") == PackageOwner("tool", "2.0", "all")
    # the malformed stanza (no Package) and a continuation line posing as a field are skipped
    assert db.owner_of("relative/garbage") is None
    assert db.owner_of("/usr/lib/x86_64-linux-gnu/libnothing.so") is None

    # built once: later changes to the database are not seen by this instance
    (root / "var/lib/dpkg/info/tool.list").write_text("/usr/bin/other\n")
    assert db.owner_of("/usr/bin/tool") == PackageOwner("tool", "2.0", "all")
    assert DebianOwners(str(root)).owner_of("/usr/bin/tool") is None


def test_pending_journal_updates_the_status(tmp_path: Path) -> None:
    _make_root(tmp_path)
    updates = tmp_path / "var/lib/dpkg/updates"
    updates.mkdir()
    (updates / "0001").write_text("Package: tool\nStatus: install ok installed\nArchitecture: all\nVersion: 2.1\n")
    (updates / "0002").write_text("Package: libbaz\nStatus: deinstall ok config-files\nArchitecture: amd64\n")
    (updates / "tmp.i").write_text("Package: tool\nStatus: purge ok not-installed\n")  # not a journal entry
    db = DebianOwners(str(tmp_path))
    assert db.owner_of("/usr/bin/tool") == PackageOwner("tool", "2.1", "all")
    assert db.owner_of("/usr/lib/x86_64-linux-gnu/libbaz.so.4") is None


def test_missing_or_unreadable_database_answers_none(tmp_path: Path) -> None:
    assert DebianOwners(str(tmp_path / "absent")).owner_of("/usr/lib/x86_64-linux-gnu/libc.so.6") is None

    no_info = tmp_path / "no_info"
    (no_info / "var/lib/dpkg").mkdir(parents=True)
    (no_info / "var/lib/dpkg/status").write_text(STATUS)
    assert DebianOwners(str(no_info)).owner_of("/lib/x86_64-linux-gnu/libfoo.so.1.2") is None

    no_status = tmp_path / "no_status"
    _make_root(no_status)
    (no_status / "var/lib/dpkg/status").unlink()
    (no_status / "var/lib/dpkg/status").mkdir()  # unreadable as a file
    assert DebianOwners(str(no_status)).owner_of("/lib/x86_64-linux-gnu/libfoo.so.1.2") is None

    garbage = tmp_path / "garbage"
    _make_root(garbage)
    (garbage / "var/lib/dpkg/status").write_bytes(b"\xff\xfe\x00binary\n\n\n:::\n")
    assert DebianOwners(str(garbage)).owner_of("/lib/x86_64-linux-gnu/libfoo.so.1.2") is None
