"""Bad input is normal input: broken wheels, lying zip headers, symlink loops, unreadable
directories, devices and FIFOs, broken links, non-ELF `.so` files. Each is a finding or
skipped with a reason, nothing special is ever opened, and the scan finishes."""

from __future__ import annotations

import os
import shutil
import stat
import struct
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests.scan_support import files_by_path, findings_of, make_wheel, run, scan_json, scan_process

CLAIMED = 0xFFFFFFF0  # 4 GiB - 16: more than the 2 GiB a wheel member may decompress to


def _lib(d: Path, name: str = "libgood.so") -> Path:
    (d / "good.c").write_text("int good(void) { return 1; }\n")
    run(["gcc", "-shared", "-fPIC", "-o", name, "good.c", f"-Wl,-soname,{name}"], cwd=d)
    (d / "good.c").unlink()
    return d / name


def _skipped(doc: dict[str, object]) -> dict[str, tuple[str, bool]]:
    return {str(s["path"]): (str(s["reason"]), bool(s["is_problem"])) for s in doc["skipped"]}  # type: ignore[union-attr]


def _peak_rss_kb(*args: str) -> tuple[int, int, str]:
    """Run `python -m ldscope scan ARGS` in a child; (its peak RSS in KiB, exit code, stdout)."""
    wrapper = ("import resource, subprocess, sys\n"
               "p = subprocess.run([sys.executable, '-m', 'ldscope', 'scan', *sys.argv[1:]], capture_output=True, text=True)\n"
               "sys.stderr.write(p.stdout)\n"
               "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, p.returncode)\n")
    proc = subprocess.run([sys.executable, "-c", wrapper, *args], capture_output=True, text=True, timeout=120)
    rss, code = proc.stdout.split()
    return int(rss), int(code), proc.stderr


# ------------------------------------------------------------------------------ wheels


def test_wheel_that_is_not_a_zip_is_an_input_error(tmp_path: Path) -> None:
    bogus = tmp_path / "bogus-1.0-py3-none-any.whl"
    bogus.write_text("this is not a zip file\n")
    proc = scan_process(str(bogus))
    assert proc.returncode == 2
    assert f"ldscope: {bogus}: not a valid wheel (zip)" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_truncated_wheel_is_an_input_error(tmp_path: Path) -> None:
    lib = _lib(tmp_path)
    whl = make_wheel(tmp_path / "cut-1.0-py3-none-linux_x86_64.whl", "cut", "1.0", "py3-none-linux_x86_64",
                     {"cut/libgood.so": lib})
    data = whl.read_bytes()
    whl.write_bytes(data[: len(data) // 2])  # the central directory is gone
    code, doc, err = scan_json(str(whl))
    assert code == 2
    assert "not a valid wheel (zip)" in err
    assert doc["errors"] and doc["files"] == []


def _lying_wheel(tmp_path: Path) -> tuple[Path, str]:
    """A wheel whose extension member's headers claim CLAIMED bytes (it holds a real ELF file)."""
    lib = _lib(tmp_path)
    member = "hugepkg/_huge.cpython-311-x86_64-linux-gnu.so"
    whl = make_wheel(tmp_path / "hugepkg-1.0-cp311-cp311-linux_x86_64.whl", "hugepkg", "1.0",
                     "cp311-cp311-linux_x86_64", {member: lib, "hugepkg/libgood.so": lib})
    raw = bytearray(whl.read_bytes())
    name = member.encode()
    patched = 0
    for sig, size_at, name_at in ((b"PK\x03\x04", 22, 30), (b"PK\x01\x02", 24, 46)):
        pos = raw.find(sig)
        while pos != -1:
            if raw[pos + name_at: pos + name_at + len(name)] == name:
                struct.pack_into("<I", raw, pos + size_at, CLAIMED)
                patched += 1
            pos = raw.find(sig, pos + 4)
    assert patched == 2
    whl.write_bytes(bytes(raw))
    with zipfile.ZipFile(whl) as zf:
        assert zf.getinfo(member).file_size == CLAIMED
    return whl, member


def test_zip_member_claiming_huge_size_is_capped_and_reported(tmp_path: Path) -> None:
    whl, member = _lying_wheel(tmp_path)
    rss_kb, code, _out = _peak_rss_kb(str(whl), "--format", "json", "-j", "1")
    assert code == 2  # a wheel member that cannot be read is an input error
    assert rss_kb < 250_000, f"peak RSS {rss_kb} KiB: something was allocated for the claimed size"
    code, doc, err = scan_json(str(whl))
    line = (f"{whl}: member {member!r}: its header claims {CLAIMED} bytes uncompressed, over the "
            f"per-member budget of {2 << 30} (--max-member-size): not read")
    assert code == 2 and doc["errors"] == [line]
    assert f"ldscope: {line}" in err
    assert not _skipped(doc) and not [f for f in findings_of(doc) if f["kind"] == "unreadable-file"]
    # The honest member beside it is still analysed.
    assert [p.rsplit("/", 1)[-1] for p in files_by_path(doc)] == ["libgood.so"]


# ------------------------------------------------------------------------------- trees


@pytest.fixture
def bad_tree(tmp_path: Path) -> Path:
    t = tmp_path / "tree"
    (t / "good").mkdir(parents=True)
    good = _lib(t / "good")
    os.mkfifo(t / "libfifo.so")
    os.mknod(t / "libdev.so", 0o644 | stat.S_IFCHR, os.makedev(1, 3))  # like /dev/null
    os.symlink("/dev/zero", t / "libzero.so")  # reading it would never end
    os.symlink("libloop2.so", t / "libloop1.so")
    os.symlink("libloop1.so", t / "libloop2.so")
    os.symlink("selfloop", t / "selfloop")
    os.symlink("nowhere.so.1", t / "libbroken.so")
    (t / "libscript.so").write_text("/* GNU ld script */\nGROUP ( libgood.so )\n")
    (t / "libtext.so").write_text("hello, I am not a library at all, but I am long enough\n")
    (t / "libempty.so").write_bytes(b"")
    (t / "libtrunc.so").write_bytes(good.read_bytes()[:300])  # a real header, no tables
    (t / "libweird.so").write_bytes(b"\x7fELF\x02\x01\x01" + b"\xff" * 60)
    (t / "a.o").write_bytes(b"")  # not interesting: no finding
    return t


def test_bad_tree_each_entry_reported_and_scan_finishes(bad_tree: Path) -> None:
    # A FIFO opened for reading would block forever: the scan must end well within the timeout.
    proc = scan_process(str(bad_tree), "--format", "json", "-j", "1", timeout=60)
    assert proc.returncode == 1, proc.stderr
    assert "Traceback" not in proc.stderr
    code, doc, _ = scan_json(str(bad_tree))
    assert code == 1
    t = str(bad_tree)
    skipped = _skipped(doc)
    expected = {
        f"{t}/libfifo.so": ("special file (device, FIFO or socket): not opened", False),
        f"{t}/libdev.so": ("special file (device, FIFO or socket): not opened", False),
        f"{t}/libzero.so": ("symlink to a special file (device, FIFO or socket): not opened", False),
        f"{t}/libloop1.so": ("symlink loop", True),
        f"{t}/libloop2.so": ("symlink loop", True),
        f"{t}/selfloop": ("symlink loop", True),
        f"{t}/libbroken.so": ("broken symlink", True),
        f"{t}/libscript.so": ("GNU ld script (used by the linker, never loaded)", False),
        f"{t}/libtext.so": ("named like a library but not an ELF file", True),
        f"{t}/libempty.so": ("named like a library but not an ELF file", True),
        f"{t}/libweird.so": ("ELF file of type 65535: cannot be loaded", True),
    }
    for path, want in expected.items():
        assert skipped.get(path) == want, (path, skipped.get(path))
    reason, is_problem = skipped[f"{t}/libtrunc.so"]
    assert is_problem and reason.startswith("unreadable ELF file:")
    assert set(skipped) == set(expected) | {f"{t}/libtrunc.so"}
    # Problems are findings of their own (one each); the good library still loads.
    unreadable = sorted(str(f["files"][0]) for f in findings_of(doc) if f["kind"] == "unreadable-file")  # type: ignore[index]
    assert unreadable == sorted(p for p, (_, problem) in skipped.items() if problem)
    assert all(f["kind"] == "unreadable-file" for f in findings_of(doc))
    assert {p: f["loads"] for p, f in files_by_path(doc).items()} == {f"{t}/good/libgood.so": True}


def test_special_files_are_never_opened(bad_tree: Path, tmp_path: Path) -> None:
    """strace: no open() of the scan names a special file (a FIFO without a writer would block
    it forever; /dev/zero never ends)."""
    if shutil.which("strace") is None:
        proc = scan_process(str(bad_tree), "-j", "1", timeout=30)
        assert proc.returncode == 1
        return
    log = tmp_path / "trace"
    subprocess.run(["strace", "-f", "-qq", "-e", "trace=open,openat", "-o", str(log), sys.executable,
                    "-m", "ldscope", "scan", str(bad_tree), "-j", "1"], capture_output=True, timeout=60)
    opened = log.read_text()
    assert "good/libgood.so" in opened and "libscript.so" in opened  # regular files are read
    for name in ("libfifo.so", "libdev.so", "libzero.so", "/dev/zero"):
        assert name not in opened


def test_unreadable_directory_and_file_as_root(bad_tree: Path) -> None:
    """Root bypasses permission bits (CAP_DAC_OVERRIDE): a chmod 000 directory is read."""
    locked = bad_tree / "locked"
    locked.mkdir()
    _lib(locked, "libhidden.so")
    os.chmod(locked, 0)
    try:
        code, doc, _ = scan_json(str(bad_tree))
        assert code == 1  # the bad tree's own findings
        if os.geteuid() == 0:
            assert str(locked / "libhidden.so") in files_by_path(doc)
        else:
            assert _skipped(doc)[str(locked)] == ("unreadable directory: Permission denied", True)
    finally:
        os.chmod(locked, 0o755)


def test_unreadable_directory_and_file_without_dac_override(bad_tree: Path) -> None:
    """What a non-root user sees: as root, drop CAP_DAC_OVERRIDE/CAP_DAC_READ_SEARCH (setpriv)."""
    if os.geteuid() != 0 or shutil.which("setpriv") is None:
        pytest.skip("needs root and setpriv to drop the DAC capabilities")
    locked = bad_tree / "locked"
    locked.mkdir()
    _lib(locked, "libhidden.so")
    secret = _lib(bad_tree / "good", "libsecret.so")
    os.chmod(locked, 0)
    os.chmod(secret, 0)
    try:
        proc = subprocess.run(
            ["setpriv", "--inh-caps=-all", "--bounding-set=-dac_override,-dac_read_search",
             sys.executable, "-m", "ldscope", "scan", str(bad_tree), "--format", "json", "-j", "1"],
            capture_output=True, text=True, timeout=60)
    finally:
        os.chmod(locked, 0o755)
        os.chmod(secret, 0o755)
    import json

    assert proc.returncode == 1, proc.stderr
    doc = json.loads(proc.stdout)
    skipped = _skipped(doc)
    assert skipped[str(locked)] == ("unreadable directory: Permission denied", True)
    assert skipped[str(secret)] == ("unreadable: Permission denied", True)
    titles = [str(f["title"]) for f in findings_of(doc)]
    assert f"{locked}: unreadable directory: Permission denied" in titles
    assert f"{secret}: unreadable: Permission denied" in titles
    assert files_by_path(doc)[str(bad_tree / "good" / "libgood.so")]["loads"] is True
