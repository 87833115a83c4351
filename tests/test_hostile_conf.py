"""Hostile depth, globs and cache sizes (issue 13, items 7, 8 and the ld.so.conf half of 11).

Directory trees and dotted names deeper than Python's recursion limit, include patterns with
~1,000 components or 40 KB of stars, ld.so.cache files of 150k and 1M entries checked against
the real loader in a chroot, and hypothesis-generated ld.so.conf trees checked against
`ldconfig -r ROOT -v -N`.
"""

from __future__ import annotations

import functools
import os
import re
import resource
import shutil
import struct
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ldscope.scan._discover import Discovery, walk_tree
from ldscope.system._ldcache import CacheLookupContext, _libcmp, load_ld_cache
from ldscope.system._ldconf import read_ld_so_conf
from ldscope.system._pyimports import ImportGraph

SRC = str(Path(__file__).resolve().parent.parent / "src")
DEPTH = 1100  # deeper than sys.getrecursionlimit() (1000)
LDSO = "/lib64/ld-linux-x86-64.so.2"
LIBC = "/lib/x86_64-linux-gnu/libc.so.6"
HOST_OK = (os.uname().machine == "x86_64" and os.path.exists(LDSO) and os.path.exists(LIBC)
           and shutil.which("gcc") is not None)
needs_ldconfig = pytest.mark.skipif(shutil.which("ldconfig") is None, reason="needs ldconfig")


def _deep(top: Path, depth: int, name: str = "d") -> Path:
    """`top/d/d/.../d` (depth levels), made one level at a time (pathlib's and os.makedirs'
    `parents` recurse, and so does shutil.rmtree: see _remove_deep)."""
    here = str(top)
    os.makedirs(here, exist_ok=True)
    for _ in range(depth):
        here = os.path.join(here, name)
        os.mkdir(here)
    return Path(here)


def _remove_deep(top: Path) -> None:
    """Remove a tree bottom-up without recursion (pytest's cleanup would hit the limit)."""
    for directory, _dirs, names in _walk_bottom_up(str(top)):
        for n in names:
            os.unlink(os.path.join(directory, n))
        os.rmdir(directory)


def _walk_bottom_up(top: str) -> list[tuple[str, list[str], list[str]]]:
    order: list[tuple[str, list[str], list[str]]] = []
    pending = [top]
    while pending:
        d = pending.pop()
        entries = list(os.scandir(d))
        dirs = [e.path for e in entries if e.is_dir(follow_symlinks=False)]
        order.append((d, dirs, [e.name for e in entries if not e.is_dir(follow_symlinks=False)]))
        pending.extend(dirs)
    return order[::-1]


@pytest.fixture()
def deep_tmp(tmp_path: Path):  # type: ignore[no-untyped-def]
    yield tmp_path / "deep"
    if (tmp_path / "deep").exists():
        _remove_deep(tmp_path / "deep")


def _run_bounded(code: str, cpu_seconds: int = 20, memory: int = 2 << 30) -> subprocess.CompletedProcess[str]:
    """Run Python `code` with ldscope importable, under RLIMIT_CPU and RLIMIT_AS."""
    def limits() -> None:
        resource.setrlimit(resource.RLIMIT_CPU, (cpu_seconds, cpu_seconds))
        resource.setrlimit(resource.RLIMIT_AS, (memory, memory))

    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": SRC}, preexec_fn=limits, check=False)


# --- item 7: no recursion over untrusted depth --------------------------------------------------

def test_deep_tree_walk_reaches_the_bottom(deep_tmp: Path) -> None:
    bottom = _deep(deep_tmp, DEPTH)
    (bottom / "libdeep.so").write_text("not an ELF file\n")
    found = Discovery()
    walk_tree(str(deep_tmp), found)
    assert [s.path for s in found.skipped] == [str(bottom / "libdeep.so")]
    assert found.skipped[0].reason == "named like a library but not an ELF file"


def test_deep_tree_scan_cli_has_no_traceback(deep_tmp: Path) -> None:
    bottom = _deep(deep_tmp, DEPTH)
    (bottom / "libdeep.so").write_text("not an ELF file\n")
    run = subprocess.run([sys.executable, "-m", "ldscope", "scan", str(deep_tmp)],
                         capture_output=True, text=True, env={**os.environ, "PYTHONPATH": SRC},
                         check=False)
    assert "Traceback" not in run.stderr and "RecursionError" not in run.stderr + run.stdout
    assert run.returncode == 1  # the one finding: libdeep.so is not an ELF file
    assert "libdeep.so" in run.stdout


def test_walk_order_is_os_walk_order(tmp_path: Path) -> None:
    """Depth first, names sorted, a directory's files before its subdirectories."""
    for rel in ("b/libz.so", "a/c/liby.so", "a/libx.so", "libw.so", "a/b/libv.so"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("x")
    found = Discovery()
    walk_tree(str(tmp_path), found)
    assert [os.path.relpath(s.path, tmp_path) for s in found.skipped] == [
        "libw.so", "a/libx.so", "a/b/libv.so", "a/c/liby.so", "b/libz.so"]


def test_deep_dotted_name_resolves_without_recursion(deep_tmp: Path) -> None:
    bottom = _deep(deep_tmp, DEPTH, "p")
    here = str(deep_tmp)
    for _ in range(DEPTH):
        here = os.path.join(here, "p")
        with open(os.path.join(here, "__init__.py"), "w"):
            pass
    (bottom / "leaf.py").write_text("import os\n")
    graph = ImportGraph((str(deep_tmp),), (".so",))
    name = ".".join(["p"] * DEPTH + ["leaf"])
    module = graph.resolve(name)
    assert module is not None and module.path == str(bottom / "leaf.py")
    assert graph.closure(name).required == ()


# --- item 7: ld.so.conf includes, bounded and linear ----------------------------------------------

def _conf_root(tmp_path: Path, include_line: str) -> Path:
    root = tmp_path / "root"
    (root / "etc/ld.so.conf.d").mkdir(parents=True)
    (root / "opt/lib").mkdir(parents=True)
    (root / "etc/ld.so.conf.d/a.conf").write_text("/opt/lib\n")
    (root / "etc/ld.so.conf").write_text(include_line + "\n")
    return root


HOSTILE_LINES = {
    "1000-components": "include " + "/*" * 1000,
    "1000-components-in-dir": "include /etc/ld.so.conf.d" + "/*" * 1000,
    "40KB-stars": "include /etc/ld.so.conf.d/" + "*" * 40_000,
    "40KB-star-a": "include /etc/ld.so.conf.d/" + "*a" * 20_000 + "b",
    "40KB-brackets": "include /etc/ld.so.conf.d/" + "[!a]*" * 8_000,
    "40KB-open-brackets": "include /etc/ld.so.conf.d/" + "[" * 40_000,
    "40KB-classes": "include /etc/ld.so.conf.d/" + "[[:" * 13_000 + "]",
    "4000-patterns": "include " + " ".join(["/etc/ld.so.conf.d/*.conf"] * 4000),
}


@pytest.mark.parametrize("label", sorted(HOSTILE_LINES))
def test_hostile_include_lines_are_cheap(tmp_path: Path, label: str) -> None:
    root = _conf_root(tmp_path, HOSTILE_LINES[label])
    code = ("import resource, time\n"
            "from ldscope.system._ldconf import read_ld_so_conf\n"
            f"conf = read_ld_so_conf('/etc/ld.so.conf', root={str(root)!r})\n"
            "print(repr(conf.directories), time.process_time())\n")
    run = _run_bounded(code, cpu_seconds=20)
    assert run.returncode == 0, run.stderr[-2000:]
    directories, cpu = run.stdout.rsplit(" ", 1)
    assert float(cpu) < 5.0, (label, cpu)  # CPU time of the whole child, imports included
    expected = ["/opt/lib"] if label in ("4000-patterns", "40KB-stars") else []
    assert directories == repr(tuple(expected))
    if shutil.which("ldconfig"):
        assert _ldconfig_dirs(root) == expected


def test_include_loops_and_diamonds_are_linear(tmp_path: Path) -> None:
    etc = tmp_path / "etc"
    etc.mkdir()
    (tmp_path / "lib0").mkdir()
    # 30 levels of diamonds: ldconfig would read the last file 2**30 times.
    for level in range(30):
        (etc / f"{level}a.conf").write_text(f"include {level + 1}*.conf\n")
        (etc / f"{level}b.conf").write_text(f"include {level + 1}*.conf\n")
    (etc / "30a.conf").write_text("/lib0\ninclude /etc/0a.conf\n")  # and a loop back to the top
    start = time.process_time()
    conf = read_ld_so_conf("/etc/0a.conf", root=str(tmp_path))
    assert time.process_time() - start < 5.0
    assert conf.directories == ("/lib0",)
    assert any("include loop" in p for p in conf.problems)
    assert len(conf.files_read) < 400  # each file parsed once; each inclusion recorded (179)


def test_deep_include_chain(tmp_path: Path) -> None:
    """Each file includes the next: nesting far past Python's recursion limit, read to the end
    as ldconfig reads it when its descriptor limit allows (it keeps every level open)."""
    etc = tmp_path / "etc"
    etc.mkdir()
    for i in range(3000):
        (etc / f"f{i}.conf").write_text(f"include f{i + 1}.conf\n/d{i}\n")
    present = (0, 998, 999, 1000, 1020, 2999)
    for i in present:
        (tmp_path / f"d{i}").mkdir()
    conf = read_ld_so_conf("/etc/f0.conf", root=str(tmp_path))
    assert conf.directories == tuple(f"/d{i}" for i in reversed(present))
    assert len(conf.files_read) == 3000
    if shutil.which("ldconfig") and resource.getrlimit(resource.RLIMIT_NOFILE)[0] > 3100:
        code = "import resource; resource.setrlimit(resource.RLIMIT_NOFILE, (4000, 4000))"
        assert _ldconfig_dirs(tmp_path, "/etc/f0.conf", code) == list(conf.directories)


def test_glob_semantics(tmp_path: Path) -> None:
    etc = tmp_path / "etc/c"
    etc.mkdir(parents=True)
    names = ["a.conf", "b.conf", ".hidden.conf", "ab.conf", "[x].conf", "a*b", "z.txt", "é.conf"]
    for n in names:
        (tmp_path / "d" / n).mkdir(parents=True)
        (etc / n).write_text(f"/d/{n}\n")
    cases = {
        "*.conf": ["[x].conf", "a.conf", "ab.conf", "b.conf", "é.conf"],
        ".*": [".hidden.conf"],
        "?.conf": ["a.conf", "b.conf"],
        "[ab].conf": ["a.conf", "b.conf"],
        "[!a]*.conf": ["[x].conf", "b.conf", "é.conf"],
        "\\[x\\].conf": ["[x].conf"],
        "a\\*b": ["a*b"],
        "[[:lower:]]?.conf": ["ab.conf"],
        "*a*b*": ["a*b", "ab.conf"],
        "[a-b]*": ["a*b", "a.conf", "ab.conf", "b.conf"],
        "[": [],
    }
    for pattern, expected in cases.items():
        (tmp_path / "etc/top.conf").write_text(f"include /etc/c/{pattern}\n")
        conf = read_ld_so_conf("/etc/top.conf", root=str(tmp_path))
        got = sorted(d.rsplit("/", 1)[1] for d in conf.directories)
        assert got == sorted(expected), pattern


# --- item 8: ld.so.cache of any size, as the real loader reads it ----------------------------------

def _new_cache(rows: list[tuple[str, str]]) -> bytes:
    """A new-format cache (glibc's dl-cache.h layout), sorted as ldconfig sorts it."""
    rows = sorted(rows, key=functools.cmp_to_key(lambda a, b: -_libcmp(a[0].encode(), b[0].encode())))
    base = 48 + 24 * len(rows)
    strings = bytearray()
    table = bytearray()
    for key, path in rows:
        key_at = base + len(strings)
        strings += key.encode() + b"\0"
        path_at = base + len(strings)
        strings += path.encode() + b"\0"
        table += struct.pack("<iIIIQ", 0x303, key_at, path_at, 0, 0)
    header = b"glibc-ld.so.cache1.1" + struct.pack("<IIB3xI12x", len(rows), len(strings), 2, 0)
    return bytes(header + table + strings)


@pytest.fixture(scope="module")
def chroot_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if not HOST_OK:
        pytest.skip("needs x86_64 glibc and gcc")
    top = tmp_path_factory.mktemp("bigcache")
    root = top / "root"
    for d in ("lib64", "lib/x86_64-linux-gnu", "opt/lib", "etc"):
        (root / d).mkdir(parents=True)
    shutil.copy(os.path.realpath(LDSO), root / "lib64/ld-linux-x86-64.so.2")
    shutil.copy(os.path.realpath(LIBC), root / "lib/x86_64-linux-gnu/libc.so.6")
    (top / "t.c").write_text("int hostile_f(void) { return 42; }\n")
    (top / "m.c").write_text("#include <stdio.h>\nint hostile_f(void);\n"
                             "int main(void) { printf(\"loaded %d\\n\", hostile_f()); return 0; }\n")
    lib = root / "opt/lib/libhostile.so.1"  # only the cache says where it is
    subprocess.run(["gcc", "-shared", "-fPIC", "-Wl,-soname,libhostile.so.1", "-o", str(lib),
                    str(top / "t.c")], check=True, capture_output=True)
    subprocess.run(["gcc", "-o", str(root / "prog"), str(top / "m.c"), str(lib)], check=True,
                   capture_output=True)
    return root


def _cache_case(root: Path, entries: int, with_library: bool) -> None:
    filler = [(f"libfiller{i}.so.1", f"/usr/lib/filler/libfiller{i}.so.1") for i in range(entries)]
    real = [("libc.so.6", "/lib/x86_64-linux-gnu/libc.so.6")]
    if with_library:
        real.append(("libhostile.so.1", "/opt/lib/libhostile.so.1"))
    (root / "etc/ld.so.cache").write_bytes(_new_cache(filler + real))


def _ldscope_load(root: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "ldscope", "load", "--root", str(root), "/prog"],
                          capture_output=True, text=True, env={**os.environ, "PYTHONPATH": SRC},
                          check=False)


def _real_load(root: Path) -> subprocess.CompletedProcess[str]:
    """The test's own program, run by the real loader inside the root: the oracle."""
    chroot = shutil.which("chroot") or "/usr/sbin/chroot"
    return subprocess.run([chroot, str(root), "/prog"], capture_output=True, text=True,
                          timeout=120, check=False)


def _check_cache_size(root: Path, entries: int) -> None:
    for with_library in (True, False):
        _cache_case(root, entries, with_library)
        cache = load_ld_cache(str(root / "etc/ld.so.cache"))
        assert len(cache) == entries + 1 + with_library
        picked = cache.lookup("libhostile.so.1", CacheLookupContext.for_machine("x86_64", 2))
        assert [e.path for e in picked] == (["/opt/lib/libhostile.so.1"] if with_library else [])
        if shutil.which("ldconfig"):
            listing = subprocess.run(["ldconfig", "-p", "-C", str(root / "etc/ld.so.cache")],
                                     capture_output=True, text=True, check=True).stdout
            assert listing.startswith(f"{entries + 1 + with_library} libs found in cache")
        ours = _ldscope_load(root)
        assert "Traceback" not in ours.stderr
        assert "cache ignored" not in ours.stdout + ours.stderr
        if os.geteuid() == 0:
            real = _real_load(root)
            assert (real.returncode == 0) == with_library, real.stderr
            assert (real.stdout == "loaded 42\n") == with_library
        assert (ours.returncode == 0) == with_library, ours.stdout
        assert ("DOES NOT LOAD" in ours.stdout) != with_library


def test_cache_of_150k_entries_is_used_as_ld_so_uses_it(chroot_root: Path) -> None:
    _check_cache_size(chroot_root, 150_000)


@pytest.mark.slow
def test_cache_of_1m_entries_is_used_as_ld_so_uses_it(chroot_root: Path) -> None:
    _check_cache_size(chroot_root, 1_000_000)


def test_big_cache_lookup_is_bounded_by_the_file(tmp_path: Path) -> None:
    rows = [(f"libfiller{i}.so.1", f"/f/libfiller{i}.so.1") for i in range(300_000)]
    path = tmp_path / "ld.so.cache"
    path.write_bytes(_new_cache([*rows, ("libx.so.1", "/x/libx.so.1")]))
    code = ("import time\n"
            "from ldscope.system._ldcache import load_ld_cache, CacheLookupContext\n"
            f"c = load_ld_cache({str(path)!r})\n"
            "t = time.process_time()\n"
            "ctx = CacheLookupContext.for_machine('x86_64', 2)\n"
            "hits = [c.lookup(f'libfiller{i}.so.1', ctx)[0].path for i in range(0, 300000, 3000)]\n"
            "print(len(c), len(hits), c.find('libx.so.1')[0].path, time.process_time() - t)\n")
    # The file is ~20 MB: ld.so maps it; so may ldscope, but not build 300k objects (that
    # took ~180 MB and 2.4 s per load before).
    run = _run_bounded(code, cpu_seconds=30, memory=600 << 20)
    assert run.returncode == 0, run.stderr[-2000:]
    count, hits, found, cpu = run.stdout.split()
    assert (count, hits, found) == ("300001", "100", "/x/libx.so.1")
    assert float(cpu) < 2.0


# --- item 11 (half): ld.so.conf trees fuzzed ------------------------------------------------------

_NAMES = ["a.conf", "b.conf", "c.conf", "x.txt", ".h.conf"]
_component = st.sampled_from(["*", "*.conf", "?.conf", "[ab].conf", "[!a]*", "a.conf", "b*",
                              "\\*", "[", "*[", "**", ".*", "x.txt", "c.conf"])
_dir_line = st.sampled_from(["/l/one", "/l/two", "/l/missing", "/l/one/", "l/two", "/l/two=libc6",
                             "/l/three # c", "  /l/one", "/l/link"])


@st.composite
def _line(draw: st.DrawFn, nested: bool, includes: bool = True) -> str:
    kinds = ["dir", "dir", "include", "include2", "comment", "hwcap", "odd", "long"]
    kind = draw(st.sampled_from(kinds if includes else kinds[:2] + kinds[4:]))
    if kind == "dir":
        return draw(_dir_line)
    if kind in ("include", "include2"):
        where = "" if nested else draw(st.sampled_from(["/etc/", "/etc/d/", "d/", ""]))
        parts = [where + draw(_component) for _ in range(1 if kind == "include" else 2)]
        return "include " + " ".join(parts)
    if kind == "comment":
        return "# include *"
    if kind == "hwcap":
        return "hwcap 1 x"
    if kind == "odd":
        return draw(st.text(alphabet="\x00\x01\t #*[]/\\é\x7f", max_size=20))
    return "/l/" + "x" * draw(st.integers(200, 5000))


@st.composite
def _tree(draw: st.DrawFn) -> dict[str, list[str]]:
    files = {"ld.so.conf": draw(st.lists(_line(False), max_size=6))}
    nested_includes = draw(st.booleans())  # without them most trees can be compared with ldconfig
    for name in draw(st.lists(st.sampled_from(_NAMES), max_size=5, unique=True)):
        files["d/" + name] = draw(st.lists(_line(True, nested_includes), max_size=5))
    return files


def _build(root: Path, files: dict[str, list[str]]) -> None:
    for d in ("etc/d", "l/one", "l/two", "l/three"):
        (root / d).mkdir(parents=True, exist_ok=True)
    (root / "l/link").symlink_to("/l/one")
    for rel, lines in files.items():
        (root / "etc" / rel).write_bytes("\n".join(lines).encode("utf-8", "surrogateescape"))


def _ldconfig_dirs(root: Path, conf: str = "/etc/ld.so.conf", preexec: str = "") -> list[str] | None:
    """Directories `ldconfig -r ROOT -v -N` says it scans, in order (None: it failed or hung)."""
    argv = ["ldconfig", "-N", "-X", "-v", "-r", str(root), "-f", conf]
    if preexec:
        argv = [sys.executable, "-c", preexec + "\nimport os, sys; os.execvp(sys.argv[1], sys.argv[1:])",
                *argv]
    try:
        out = subprocess.run(argv, capture_output=True, timeout=20, check=False,
                             env={"LC_ALL": "C", "PATH": os.environ.get("PATH", "")})
    except subprocess.TimeoutExpired:
        return None
    if out.returncode != 0:
        return None
    return re.findall(r"^(/\S*): \(from ", out.stdout.decode("utf-8", "replace"), re.M)


@needs_ldconfig
@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(files=_tree())
def test_fuzzed_conf_trees(tmp_path_factory: pytest.TempPathFactory, files: dict[str, list[str]]) -> None:
    root = tmp_path_factory.mktemp("conf")
    _build(root, files)
    start = time.process_time()
    conf = read_ld_so_conf("/etc/ld.so.conf", root=str(root))
    assert time.process_time() - start < 2.0
    assert set(conf.directories) <= {"/l/one", "/l/two", "/l/three", "/l/link"}
    assert len(conf.directories) == len(set(conf.directories))
    assert len(conf.files_read) <= 1000
    if any("include loop" in p for p in conf.problems):
        return  # ldconfig recurses through a loop until it runs out of descriptors
    if any(line.startswith("l/") for lines in files.values() for line in lines):
        return  # a relative directory: ldscope reports it and takes it from /, ldconfig -r drops it
    real = _ldconfig_dirs(root)
    if real is not None:
        assert list(conf.directories) == real, files


def test_malformed_extension_does_not_make_the_cache_ignored(chroot_root: Path) -> None:
    """cache_extension_load failing only disables glibc-hwcaps entries in ld.so."""
    data = bytearray(_new_cache([("libc.so.6", "/lib/x86_64-linux-gnu/libc.so.6"),
                                 ("libhostile.so.1", "/opt/lib/libhostile.so.1")]))
    data[32:36] = struct.pack("<I", 2)  # a misaligned extension directory offset
    (chroot_root / "etc/ld.so.cache").write_bytes(bytes(data))
    ours = _ldscope_load(chroot_root)
    assert ours.returncode == 0 and "cache ignored" not in ours.stdout, ours.stdout
    if os.geteuid() == 0:
        real = _real_load(chroot_root)
        assert real.returncode == 0 and real.stdout == "loaded 42\n", real.stderr


def test_sparse_cache_is_refused_without_reading_it(tmp_path: Path) -> None:
    """A 10 GiB cache with 4 KiB on disk: one line, and memory bounded by what is on disk."""
    path = tmp_path / "ld.so.cache"
    with open(path, "wb") as handle:
        handle.write(b"glibc-ld.so.cache1.1")
        handle.truncate(10 << 30)
    code = ("from ldscope.errors import InputFormatError\n"
            "from ldscope.system._ldcache import load_ld_cache\n"
            "try:\n"
            f"    load_ld_cache({str(path)!r})\n"
            "except InputFormatError as exc:\n"
            "    print(exc.reason)\n")
    run = _run_bounded(code, cpu_seconds=20, memory=1 << 30)
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stdout.startswith("sparse cache file: 10737418240 bytes claimed")
