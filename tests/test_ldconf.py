"""ld.so.conf reading, checked against what `ldconfig -v` says it scans."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from ldscope.system._ldconf import read_ld_so_conf, resolve_in_root
from ldscope.system._platform import default_search_dirs

needs_ldconfig = pytest.mark.skipif(shutil.which("ldconfig") is None, reason="needs ldconfig")
DEBIAN_X86_64 = os.path.isdir("/lib/x86_64-linux-gnu") and os.uname().machine == "x86_64"
needs_debian = pytest.mark.skipif(not DEBIAN_X86_64, reason="needs Debian x86_64 ldconfig")


def _ldconfig_dirs(*args: str) -> list[str]:
    """Top-level directories `ldconfig -v` scans, in order (not glibc-hwcaps/legacy subdirs)."""
    out = subprocess.run(["ldconfig", "-N", "-X", "-v", *args], capture_output=True, text=True,
                         env={"LC_ALL": "C", "PATH": os.environ.get("PATH", "")},
                         timeout=60, check=False).stdout
    return re.findall(r"^(/\S*): \(from ", out, re.M)


SYSTEM = default_search_dirs("x86_64", 2) if DEBIAN_X86_64 else ()


@needs_ldconfig
@needs_debian
def test_host_ld_so_conf_matches_ldconfig() -> None:
    conf = read_ld_so_conf("/etc/ld.so.conf", system_dirs=SYSTEM)
    assert list(conf.directories) == _ldconfig_dirs()
    assert conf.files_read[0] == "/etc/ld.so.conf"
    assert all(not p.startswith("/etc/ld.so.conf:") for p in conf.problems)


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


@pytest.fixture()
def sysroot(tmp_path: Path) -> Path:
    r = tmp_path / "root"
    for d in ("usr/lib/x86_64-linux-gnu", "opt/one", "opt/two", "opt/three", "opt/real",
              "srv/lib", "lib/x86_64-linux-gnu"):
        (r / d).mkdir(parents=True)
    (r / "opt/link").symlink_to("/opt/real")  # absolute: must resolve inside the root
    (r / "etc/alt").mkdir(parents=True)
    (r / "etc/conf.d").mkdir()
    _write(r / "etc/ld.so.conf",
           "# comment line\n"
           "\n"
           "   /opt/one   # trailing comment\n"
           "include conf.d/*.conf\n"
           "hwcap 1 nosegneg\n"
           "HWCAP 0 foo\n"
           "/opt/two///\n"
           "/opt/missing\n"
           "/opt/three=libc6\n"
           "include /etc/alt/x.conf /etc/alt/absent.conf\n"
           "/opt/real\n")
    _write(r / "etc/conf.d/b.conf", "/opt/link\n/opt/one\n")
    _write(r / "etc/conf.d/a.conf", "/srv/lib\n")
    _write(r / "etc/conf.d/.hidden.conf", "/opt/hidden\n")
    _write(r / "etc/conf.d/c.txt", "/opt/not-included\n")
    _write(r / "etc/alt/x.conf", "include ../conf.d/a.conf\n/usr/lib/x86_64-linux-gnu/\n")
    return r


def test_sysroot_conf(sysroot: Path) -> None:
    conf = read_ld_so_conf("/etc/ld.so.conf", root=str(sysroot), system_dirs=SYSTEM or (
        "/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib", "/usr/lib"))
    assert conf.directories == ("/opt/one", "/srv/lib", "/opt/link", "/opt/two", "/opt/three",
                                "/usr/lib/x86_64-linux-gnu", "/lib/x86_64-linux-gnu", "/lib",
                                "/usr/lib")
    assert conf.files_read == ("/etc/ld.so.conf", "/etc/conf.d/a.conf", "/etc/conf.d/b.conf",
                               "/etc/alt/x.conf", "/etc/alt/../conf.d/a.conf")
    assert conf.missing_directories == ("/opt/missing",)
    assert conf.ignored_hwcap_lines == ("/etc/ld.so.conf:5", "/etc/ld.so.conf:6")
    assert conf.root == str(sysroot)


@needs_ldconfig
@needs_debian
def test_sysroot_conf_matches_ldconfig(sysroot: Path) -> None:
    conf = read_ld_so_conf("/etc/ld.so.conf", root=str(sysroot), system_dirs=SYSTEM)
    assert list(conf.directories) == _ldconfig_dirs("-r", str(sysroot), "-f", "/etc/ld.so.conf")


def test_include_loop_is_bounded(tmp_path: Path) -> None:
    _write(tmp_path / "a.conf", f"{tmp_path}/one\ninclude b.conf\n")
    _write(tmp_path / "b.conf", "include a.conf\ninclude *.conf\n")
    (tmp_path / "one").mkdir()
    conf = read_ld_so_conf(str(tmp_path / "a.conf"))
    assert conf.directories == (f"{tmp_path}/one",)
    assert any("include loop" in p for p in conf.problems)
    assert len(conf.files_read) < 10


def test_self_include_in_root_and_bad_lines(tmp_path: Path) -> None:
    _write(tmp_path / "etc/ld.so.conf", "include /etc/ld.so.conf\nrelative/dir\n/x=libc9\n/\n")
    (tmp_path / "relative/dir").mkdir(parents=True)
    (tmp_path / "x").mkdir()
    conf = read_ld_so_conf("/etc/ld.so.conf", root=str(tmp_path))
    assert conf.directories == ("/relative/dir", "/x")
    assert any("include loop" in p for p in conf.problems)
    assert any("relative directory" in p for p in conf.problems)
    assert any("libc9 is not a known library type" in p for p in conf.problems)


def test_unreadable_and_missing(tmp_path: Path) -> None:
    conf = read_ld_so_conf(str(tmp_path / "absent.conf"))
    assert conf.directories == () and conf.files_read == ()
    assert len(conf.problems) == 1 and "cannot be read" in conf.problems[0]
    (tmp_path / "dir.conf").mkdir()
    _write(tmp_path / "top.conf", f"include {tmp_path}/dir.conf\n")
    conf = read_ld_so_conf(str(tmp_path / "top.conf"))
    assert any("dir.conf" in p for p in conf.problems)


def test_resolve_in_root(tmp_path: Path) -> None:
    (tmp_path / "usr/lib").mkdir(parents=True)
    (tmp_path / "lib").symlink_to("usr/lib")
    (tmp_path / "abs").symlink_to("/usr/lib")
    (tmp_path / "loop").symlink_to("/loop")
    assert resolve_in_root(str(tmp_path), "/lib/x") == f"{tmp_path}/usr/lib/x"
    assert resolve_in_root(str(tmp_path), "/abs/../../../lib") == f"{tmp_path}/usr/lib"
    assert resolve_in_root(str(tmp_path), "/nope/x") is None
    assert resolve_in_root(str(tmp_path), "/loop/x") is None
    assert resolve_in_root(str(tmp_path), "/") == str(tmp_path)
