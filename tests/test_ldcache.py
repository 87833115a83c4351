"""ld.so.cache parsing and lookup, checked against ldconfig -p and against ld.so's own choices."""

from __future__ import annotations

import os
import random
import re
import shutil
import struct
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest

from ldscope.errors import InputFormatError
from ldscope.system import _platform as P
from ldscope.system._ldcache import (
    CACHE_EXTENSION_MAGIC,
    DL_CACHE_HWCAP_EXTENSION,
    CacheLookupContext,
    LdCache,
    _libcmp,
    load_ld_cache,
    parse_ld_cache,
)

LDSO = "/lib64/ld-linux-x86-64.so.2"
HOST_OK = os.uname().machine == "x86_64" and os.path.exists(LDSO)
TOOLS_OK = (HOST_OK and shutil.which("gcc") is not None and shutil.which("ldconfig") is not None
            and os.path.exists("/etc/ld.so.cache"))
needs_tools = pytest.mark.skipif(not TOOLS_OK, reason="needs x86_64 glibc, gcc and ldconfig")
needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="needs root for chroot")
SAFE_SONAMES = ("libz.so.1", "libm.so.6", "libutil.so.1", "libresolv.so.2", "libexpat.so.1",
                "libzstd.so.1", "liblzma.so.5", "libbz2.so.1.0", "libcrypt.so.1", "libffi.so.8",
                "libuuid.so.1", "libdl.so.2")


def _ldconfig_p(*args: str) -> list[str]:
    out = subprocess.run(["ldconfig", "-p", *args], capture_output=True, check=True,
                         env={"LC_ALL": "C", "PATH": os.environ.get("PATH", "")}).stdout
    return out.decode("utf-8", "surrogateescape").splitlines()


def _gcc(*args: str) -> None:
    subprocess.run(["gcc", *args], check=True, capture_output=True)


@dataclass
class Root:
    path: Path
    caches: dict[str, bytes]


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Root:
    if not TOOLS_OK:
        pytest.skip("needs x86_64 glibc, gcc and ldconfig")
    top = tmp_path_factory.mktemp("ldcache")
    src = top / "f.c"
    src.write_text("int ldscope_f(void){return 1;}\n")
    r = top / "root"
    a, b = r / "opt/a", r / "opt/b"
    for d in (a / "glibc-hwcaps/x86-64-v2", a / "glibc-hwcaps/x86-64-v3", a / "tls",
              a / "x86_64", a / "haswell", b, r / "etc"):
        d.mkdir(parents=True)

    def lib(path: Path, soname: str, *extra: str) -> None:
        _gcc("-shared", "-fPIC", f"-Wl,-soname,{soname}", "-o", str(path), str(src), *extra)

    lib(a / "libfoo.so.1", "libfoo.so.1")
    lib(a / "glibc-hwcaps/x86-64-v2/libfoo.so.1", "libfoo.so.1")
    lib(a / "glibc-hwcaps/x86-64-v3/libfoo.so.1", "libfoo.so.1", "-Wl,-z,x86-64-v3")
    for sub in ("tls", "x86_64", "haswell"):
        lib(a / sub / "libbar.so.2", "libbar.so.2")
    lib(b / "libbar.so.2", "libbar.so.2")
    lib(b / "libfoo.so.10", "libfoo.so.10")
    lib(b / "libfoo.so.1", "libfoo.so.1", "-m32", "-nostdlib")
    (r / "etc/ld.so.conf").write_text("/opt/a\n/opt/b\n")
    caches = {}
    for fmt in ("new", "old", "compat"):
        subprocess.run(["ldconfig", "-X", "-c", fmt, "-r", str(r), "-C", f"/etc/cache.{fmt}",
                        "-f", "/etc/ld.so.conf"], check=True, capture_output=True)
        caches[fmt] = (r / f"etc/cache.{fmt}").read_bytes()
    return Root(r, caches)


# --- the real cache ---------------------------------------------------------------------------

@needs_tools
def test_real_cache_matches_ldconfig_p() -> None:
    cache = load_ld_cache("/etc/ld.so.cache")
    assert cache.ldconfig_lines() == _ldconfig_p()
    assert cache.format in ("new", "old+new")
    assert cache.generator is None or cache.generator.startswith("ldconfig")
    for entry in cache.entries:
        if entry.flags == 0x303:
            assert entry.abi == "x86_64" and entry.elf_class == 2


@needs_tools
def test_real_cache_is_sorted_by_libcmp() -> None:
    keys = [e.key.encode() for e in load_ld_cache().entries]
    assert all(_libcmp(keys[i], keys[i + 1]) >= 0 for i in range(len(keys) - 1))
    assert _libcmp(b"libfoo.so.10", b"libfoo.so.9") > 0
    assert _libcmp(b"libfoo.so.1", b"libfoo.so.1") == 0


def _cache_picks(stderr: str) -> dict[str, str | None]:
    """name -> the path ld.so took from the cache (None: not found there), per LD_DEBUG=libs."""
    picks: dict[str, str | None] = {}
    pattern = re.compile(r"find library=(\S+) \[0\]; searching\n\s*\d+:\s+search cache=\S+\n"
                         r"\s*\d+:\s+(trying file=(\S+)|search path=)")
    for m in pattern.finditer(stderr):
        picks[m.group(1)] = m.group(3)
    return picks


@pytest.fixture(scope="module")
def dlopener(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if not TOOLS_OK:
        pytest.skip("needs x86_64 glibc, gcc and ldconfig")
    top = tmp_path_factory.mktemp("dlopen")
    (top / "d.c").write_text("#include <dlfcn.h>\nint main(int c, char **v) {\n"
                             "  for (int i = 1; i < c; i++) dlopen(v[i], RTLD_LAZY);\n"
                             "  return 0;\n}\n")
    _gcc("-o", str(top / "dlopen"), str(top / "d.c"))
    return top / "dlopen"


@needs_tools
def test_real_cache_lookup_matches_ld_so(dlopener: Path) -> None:
    cache = load_ld_cache()
    ctx = CacheLookupContext.for_machine("x86_64", 2, P.read_cpu_features())
    names = [n for n in SAFE_SONAMES if cache.find(n)] + ["libldscope-absent.so.0"]
    run = subprocess.run([str(dlopener), *names], capture_output=True, text=True,
                         env={"LD_DEBUG": "libs"}, timeout=30, check=True)
    picks = _cache_picks(run.stderr)
    assert len(names) >= 2
    for name in names:
        assert name in picks, name
        ranked = cache.lookup(name, ctx)
        assert (ranked[0].path if ranked else None) == picks[name], name


# --- caches generated by ldconfig ----------------------------------------------------------------

@needs_tools
@pytest.mark.parametrize("fmt, layout", [("new", "new"), ("old", "old"), ("compat", "old+new")])
def test_ldconfig_written_caches_match_ldconfig_p(root: Root, fmt: str, layout: str) -> None:
    """glibc 2.36's `-c old` / `-c compat` writers overflow a heap buffer (old-table indices
    are written with the new-table index), so their output can be corrupt: then ldconfig -p
    itself crashes and the reader must reject the file instead of guessing."""
    listing = subprocess.run(["ldconfig", "-p", "-r", str(root.path), "-C", f"/etc/cache.{fmt}"],
                             capture_output=True, check=False,
                             env={"LC_ALL": "C", "PATH": os.environ.get("PATH", "")})
    if listing.returncode != 0:
        with pytest.raises(InputFormatError):
            parse_ld_cache(root.caches[fmt], f"/etc/cache.{fmt}")
        return
    cache = parse_ld_cache(root.caches[fmt], f"/etc/cache.{fmt}")
    assert cache.format == layout
    assert cache.ldconfig_lines() == listing.stdout.decode("utf-8", "surrogateescape").splitlines()


def _synthetic(root: Root) -> dict[str, bytes]:
    """The ldconfig-written new cache re-laid out in the other layouts by build_cache."""
    new = parse_ld_cache(root.caches["new"], "new")
    rows = [(e.flags, e.key, e.path, e.hwcap) for e in new.entries]
    return {
        "old": build_cache(rows, layout="old"),
        "old+new": build_cache(rows, new.hwcaps_names, new.generator, layout="old+new"),
        "old+new-misread": build_cache(rows, new.hwcaps_names, new.generator, layout="old+new",
                                       hwcaps_from_file_start=False),
    }


@needs_tools
def test_synthetic_layouts_match_ldconfig_p(root: Root) -> None:
    for label, data in _synthetic(root).items():
        (root.path / f"etc/synth.{label}").write_bytes(data)
        cache = parse_ld_cache(data, f"/etc/synth.{label}")
        assert cache.format == label.split("-")[0]
        assert cache.ldconfig_lines() == _ldconfig_p("-r", str(root.path), "-C",
                                                     f"/etc/synth.{label}"), label
    misread = parse_ld_cache(_synthetic(root)["old+new-misread"], "misread")
    assert misread.hwcaps_names != ("x86-64-v2", "x86-64-v3")


@needs_tools
def test_hwcaps_extension_entries(root: Root) -> None:
    cache = parse_ld_cache(root.caches["new"], "new")
    assert cache.hwcaps_names == ("x86-64-v2", "x86-64-v3")
    assert cache.generator is not None and "ldconfig" in cache.generator
    foo = cache.find("libfoo.so.1")
    assert [e.hwcaps_subdirectory for e in foo] == ["x86-64-v2", "x86-64-v3", None, None]
    assert [e.isa_level for e in foo[:2]] == [0, 2]  # -z x86-64-v3 -> ISA level index 2
    assert foo[0].hwcap == DL_CACHE_HWCAP_EXTENSION | 0
    assert foo[1].hwcap == DL_CACHE_HWCAP_EXTENSION | (2 << 32) | 1
    assert foo[3].flags == 1 and foo[3].elf_class is None and foo[3].abi == "generic"
    bar = {e.path.split("/")[3]: e.hwcap for e in cache.find("libbar.so.2")}
    assert bar == {"tls": 1 << 63, "haswell": 1 << 50, "x86_64": 1 << 1, "libbar.so.2": 0}


@needs_tools
def test_generated_cache_lookup_model(root: Root) -> None:
    cache = parse_ld_cache(root.caches["new"], "new")
    flags = ("cmov cx8 fpu fxsr mmx sse sse2 cx16 lahf_lm popcnt pni ssse3 sse4_1 sse4_2 avx "
             "avx2 f16c fma abm movbe bmi1 bmi2 avx512f avx512bw avx512cd avx512dq avx512vl")
    v4 = P.CpuFeatures("x86_64", "AuthenticAMD", frozenset(flags.split()))

    def paths(name: str, ctx: CacheLookupContext) -> list[str]:
        return [e.path for e in cache.lookup(name, ctx)]

    ctx = CacheLookupContext.for_machine("x86_64", 2, v4)
    assert paths("libfoo.so.1", ctx) == ["/opt/a/glibc-hwcaps/x86-64-v3/libfoo.so.1",
                                         "/opt/a/glibc-hwcaps/x86-64-v2/libfoo.so.1",
                                         "/opt/a/libfoo.so.1"]
    assert paths("libbar.so.2", ctx) == ["/opt/a/tls/libbar.so.2", "/opt/a/x86_64/libbar.so.2",
                                         "/opt/b/libbar.so.2"]
    baseline = CacheLookupContext.for_machine("x86_64", 2, None)
    assert paths("libfoo.so.1", baseline) == ["/opt/a/libfoo.so.1"]
    intel = CacheLookupContext.for_machine("x86_64", 2, P.CpuFeatures(
        "x86_64", "GenuineIntel", v4.flags))
    assert paths("libbar.so.2", intel)[:2] == ["/opt/a/tls/libbar.so.2",
                                               "/opt/a/haswell/libbar.so.2"]
    assert paths("libfoo.so.1", CacheLookupContext.for_machine("i386", 1)) == [
        "/opt/b/libfoo.so.1"]
    assert paths("libfoo.so.1", CacheLookupContext.for_machine("x86_64", 1, v4)) == []
    assert paths("libfoo.so", ctx) == [] and paths("libfoo.so.10", ctx) == [
        "/opt/b/libfoo.so.10"]


@needs_tools
@needs_root
@pytest.mark.parametrize("fmt", ["new", "old", "old+new", "old+new-misread"])
def test_lookup_matches_ld_so_in_chroot(root: Root, dlopener: Path, fmt: str) -> None:
    """ld.so (run inside the temp root, so it reads our cache) takes what lookup() ranks first."""
    r = root.path
    for src, dst in ((LDSO, r / "lib64/ld-linux-x86-64.so.2"),
                     ("/lib/x86_64-linux-gnu/libc.so.6", r / "lib/x86_64-linux-gnu/libc.so.6"),
                     (str(dlopener), r / "dlopen")):
        dst.parent.mkdir(parents=True, exist_ok=True)
        if not dst.exists():
            shutil.copy(os.path.realpath(src), dst)
    data = root.caches["new"] if fmt == "new" else _synthetic(root)[fmt]
    (r / "etc/ld.so.cache").write_bytes(data)
    cache = parse_ld_cache(data, fmt)
    cpu = P.read_cpu_features()
    names = ["libfoo.so.1", "libbar.so.2", "libfoo.so.10", "libnone.so.3"]
    variants: list[tuple[list[str], CacheLookupContext]] = [
        ([], CacheLookupContext.for_machine("x86_64", 2, cpu)),
        (["--glibc-hwcaps-mask", "x86-64-v2"],
         CacheLookupContext.for_machine("x86_64", 2, cpu, hwcaps_mask=["x86-64-v2"])),
        (["--glibc-hwcaps-prepend", "x86-64-v2"],
         CacheLookupContext.for_machine("x86_64", 2, cpu, hwcaps_prepend=["x86-64-v2"])),
        (["--glibc-hwcaps-mask", "none"],
         CacheLookupContext.for_machine("x86_64", 2, cpu, hwcaps_mask=["none"])),
    ]
    for options, ctx in variants:
        chroot = shutil.which("chroot") or "/usr/sbin/chroot"
        run = subprocess.run([chroot, str(r), "/lib64/ld-linux-x86-64.so.2", *options,
                              "/dlopen", *names], capture_output=True, text=True,
                             env={"LD_DEBUG": "libs"}, timeout=30, check=False)
        picks = _cache_picks(run.stderr)
        for name in names:
            ranked = cache.lookup(name, ctx)
            assert picks.get(name, "missing") == (ranked[0].path if ranked else None), (
                fmt, options, name)
    if fmt == "old+new-misread":  # names misread: ld.so ignores the glibc-hwcaps entries
        assert cache.lookup("libfoo.so.1", variants[0][1])[0].path == "/opt/a/libfoo.so.1"


# --- synthetic caches and malformed input ------------------------------------------------------

def build_cache(entries: Sequence[tuple[int, str, str, int]], hwcaps: Sequence[str] = (),
                generator: str | None = "ldscope test", order: str = "<", endian: int = 2,
                layout: str = "new", hwcaps_from_file_start: bool = True) -> bytes:
    """A cache in any layout: entries are (flags, key, path, hwcap), written in the given order.

    "old+new" is laid out as glibc <= 2.31's ldconfig wrote it: the old table (entries without
    hwcap, padded to an even count), alignment, then the new header and table, then strings.
    """
    old_rows = [e for e in entries if e[3] == 0] if layout != "new" else []
    if layout == "old+new" and len(old_rows) % 2:
        old_rows.append(old_rows[-1])
    old_size = 16 + 12 * len(old_rows) if layout != "new" else 0
    new_at = (old_size + 7) & ~7 if layout != "old" else old_size
    new_size = 48 + 24 * len(entries) if layout != "old" else 0
    strings_at = new_at + new_size
    strings = bytearray()
    offsets: dict[str, int] = {}

    def add(text: str) -> int:  # offset from the start of the string area
        if text not in offsets:
            offsets[text] = len(strings)
            strings.extend(text.encode() + b"\0")
        return offsets[text]

    old = b""
    if layout != "new":
        shift = strings_at - old_size  # old string indices count from the end of the old table
        old = b"ld.so-1.7.0\0" + struct.pack(order + "I", len(old_rows)) + b"".join(
            struct.pack(order + "iII", f, shift + add(k), shift + add(v))
            for f, k, v, _ in old_rows)
        old += b"\0" * (new_at - old_size)
    if layout == "old":
        return old + bytes(strings)
    rows = b"".join(struct.pack(order + "iIIIQ", f, new_size + add(k), new_size + add(v), 0, h)
                    for f, k, v, h in entries)
    hw_base = strings_at if hwcaps_from_file_start else new_size
    hw_index = [hw_base + add(name) for name in hwcaps]
    ext_off = (strings_at + len(strings) + 3) & ~3
    sections = []
    body = b""
    data_at = ext_off + 8 + 16 * ((generator is not None) + bool(hwcaps))
    if hwcaps:
        sections.append(struct.pack(order + "IIII", 1, 0, data_at, 4 * len(hwcaps)))
        body += b"".join(struct.pack(order + "I", i) for i in hw_index)
    if generator is not None:
        sections.append(struct.pack(order + "IIII", 0, 0, data_at + len(body), len(generator)))
        body += generator.encode()
    header = b"glibc-ld.so.cache1.1" + struct.pack(order + "IIB3xI12x", len(entries),
                                                    len(strings), endian, ext_off)
    ext = struct.pack(order + "II", CACHE_EXTENSION_MAGIC, len(sections)) + b"".join(sections)
    padding = b"\0" * (ext_off - strings_at - len(strings))
    return old + header + rows + bytes(strings) + padding + ext + body


def build_new(entries: Sequence[tuple[int, str, str, int]], hwcaps: Sequence[str] = (),
              generator: str | None = "ldscope test", order: str = "<", endian: int = 2) -> bytes:
    """A new-format cache (see build_cache)."""
    return build_cache(entries, hwcaps, generator, order, endian)


X86 = 0x303
EXT = DL_CACHE_HWCAP_EXTENSION


def test_big_endian_and_priority_merge() -> None:
    entries = [(X86, "libq.so.1", "/v2/libq.so.1", EXT | 0), (X86, "libq.so.1", "/v3/libq.so.1",
               EXT | 1), (X86, "libq.so.1", "/plain/libq.so.1", 0)]
    for order, endian in (("<", 2), (">", 3), (">", 0)):
        cache = parse_ld_cache(build_new(entries, ["x86-64-v2", "x86-64-v3"], order=order,
                                         endian=endian), "synthetic")
        assert cache.byteorder == ("little" if order == "<" else "big")
        assert [e.hwcaps_subdirectory for e in cache.entries] == ["x86-64-v2", "x86-64-v3", None]
    prefer_v2 = CacheLookupContext(frozenset({X86}), X86, ("x86-64-v2", "x86-64-v4", "x86-64-v3"))
    assert [e.path for e in cache.lookup("libq.so.1", prefer_v2)] == [
        "/v2/libq.so.1", "/v3/libq.so.1", "/plain/libq.so.1"]
    only_v3_isa = CacheLookupContext(frozenset({X86}), X86, ("x86-64-v3",), x86_isa_bits=0b11)
    isa_cache = parse_ld_cache(build_new([(X86, "libq.so.1", "/v3/libq.so.1", EXT | 2 << 32),
                                          (X86, "libq.so.1", "/plain/libq.so.1", 0)],
                                         ["x86-64-v3"]), "isa")
    assert [e.path for e in isa_cache.lookup("libq.so.1", only_v3_isa)] == ["/plain/libq.so.1"]


def test_old_format_scan_keeps_going_until_default_flags() -> None:
    strings = b"libq.so.1\0/a/libq.so.1\0/b/libq.so.1\0"
    rows = struct.pack("<iII", 1, 0, 10) + struct.pack("<iII", 3, 0, 23)
    data = b"ld.so-1.7.0\0" + struct.pack("<I", 2) + rows + strings
    cache = parse_ld_cache(data, "old")
    assert cache.format == "old" and len(cache.entries) == 2
    i386 = CacheLookupContext.for_machine("i386", 1)
    assert [e.path for e in cache.lookup("libq.so.1", i386)] == ["/b/libq.so.1", "/a/libq.so.1"]


def _bad(data: bytes) -> None:
    with pytest.raises(InputFormatError):
        parse_ld_cache(data, "bad")


def test_malformed_caches_raise_input_format_error() -> None:
    good = build_new([(X86, "liba.so.1", "/l/liba.so.1", EXT | 0)], ["x86-64-v2"])
    parse_ld_cache(good, "good")
    for cut in range(len(good)):
        # Cut inside the header or table: ld.so ignores the file.  Cut later: ld.so uses it
        # (it checks only that nlibs entries fit), `ldconfig -p` refuses it.
        if cut < 48 + 24:
            _bad(good[:cut])
        else:
            with pytest.raises(InputFormatError):
                parse_ld_cache(good[:cut], "cut").ldconfig_lines()
    _bad(b"not a cache at all, not at all")
    _bad(b"")
    huge = bytearray(good)
    huge[20:24] = struct.pack("<I", 0xFFFFFFFF)
    _bad(bytes(huge))
    past = bytearray(good)
    past[52:56] = struct.pack("<I", 0x7FFFFFFF)  # key offset of entry 0
    # ld.so checks string indices only as a lookup uses them (_dl_cache_verify_ptr): the cache
    # is still used, the lookup that meets the bogus key finds nothing, the full listing fails.
    bogus = parse_ld_cache(bytes(past), "bogus-key")
    assert bogus.lookup("liba.so.1", CacheLookupContext.for_machine("x86_64", 2)) == []
    assert bogus.find("liba.so.1") == []
    with pytest.raises(InputFormatError):
        bogus.ldconfig_lines()
    invalid = bytearray(good)
    invalid[28] = 1
    _bad(bytes(invalid))
    ext_off = struct.unpack_from("<I", good, 32)[0]
    for where, value in ((32, ext_off + 2), (32, len(good) + 4), (ext_off, 0),
                         (ext_off + 4, 0x10000000), (ext_off + 16, 0xFFFFFF00)):
        broken = bytearray(good)
        broken[where:where + 4] = struct.pack("<I", value)
        # cache_extension_load fails: ld.so still uses the cache, with no glibc-hwcaps entry
        # usable (liba's only entry is one); `ldconfig -p` refuses the file.
        cache = parse_ld_cache(bytes(broken), "bad-extension")
        assert cache.hwcaps_names == () and cache.problems
        assert cache.lookup("liba.so.1", CacheLookupContext.for_machine("x86_64", 2, None,
                                                                         hwcaps_prepend=["x86-64-v2"])) == []
        assert [e.path for e in cache.find("liba.so.1")] == ["/l/liba.so.1"]
        with pytest.raises(InputFormatError):
            cache.ldconfig_lines()
    old = b"ld.so-1.7.0\0" + struct.pack("<I", 0x40000000) + b"\0" * 64
    _bad(old)
    bogus_old = parse_ld_cache(b"ld.so-1.7.0\0" + struct.pack("<I", 1)
                               + struct.pack("<iII", 1, 500, 0) + b"x\0", "bogus-old")
    assert bogus_old.find("x") == []
    with pytest.raises(InputFormatError):
        bogus_old.ldconfig_lines()


def test_random_corruption_only_raises_input_format_error() -> None:
    good = build_new([(X86, f"lib{i}.so.{i}", f"/l/lib{i}.so", EXT | (i % 2)) for i in range(6)],
                     ["x86-64-v2", "x86-64-v3"])
    rng = random.Random(1234)
    ctx = CacheLookupContext.for_machine("x86_64", 2)
    for _ in range(400):
        data = bytearray(good)
        for _ in range(rng.randint(1, 4)):
            data[rng.randrange(len(data))] = rng.randrange(256)
        try:
            cache = parse_ld_cache(bytes(data), "fuzz")
        except InputFormatError:
            continue
        assert isinstance(cache, LdCache)
        cache.lookup("lib3.so.3", ctx)


def test_unreadable_file_raises_input_format_error(tmp_path: Path) -> None:
    with pytest.raises(InputFormatError):
        load_ld_cache(str(tmp_path / "absent"))
    with pytest.raises(InputFormatError):
        load_ld_cache(str(tmp_path))


def _reference_pick(cache: LdCache, group: list[int], ctx: CacheLookupContext,
                    priorities: list[int], excluded: set[int]) -> int | None:
    """A line-by-line transcription of glibc 2.36 search_cache's scan (entries in `excluded`
    are treated as absent), used to check LdCache's direct ranking."""
    best: int | None = None
    best_priority = 0
    platform = (1 << ctx.platform_bit) if ctx.platform_bit is not None else (1 << 64) - 1
    exclude = ~(ctx.legacy_hwcap | ctx.platform_mask | (1 << 63)) & ((1 << 64) - 1)
    for i in group:
        entry = cache.entries[i]
        if i in excluded or entry.flags not in ctx.accepted_flags:
            continue
        named = False
        if cache.format != "old":
            named = entry.is_hwcaps_extension
            if named and ctx.x86_isa_bits is not None:
                needed = 1 << entry.isa_level
                if needed & ctx.x86_isa_bits != needed:
                    continue
            if not named and best is not None:
                break
            if entry.hwcap & exclude and not named:
                continue
            masked = entry.hwcap & ctx.platform_mask
            if ctx.platform_mask and masked and masked != platform:
                continue
            if named:
                index = entry.hwcap & 0xFFFFFFFF
                priority = priorities[index] if index < len(priorities) else 0
                if priority == 0 or (best is not None and priority >= best_priority):
                    continue
                best_priority = priority
        best = i
        if not named and entry.flags == ctx.default_flags:
            break
    return best


def test_ranking_equals_repeated_glibc_scan() -> None:
    from ldscope.system._ldcache import _hwcaps_priorities

    rng = random.Random(99)
    names = ["x86-64-v2", "x86-64-v3", "x86-64-v4"]
    contexts = [CacheLookupContext.for_machine("x86_64", 2, None),
                CacheLookupContext(frozenset({X86, 1}), X86, ("x86-64-v3", "x86-64-v2"),
                                   x86_isa_bits=0b111, legacy_hwcap=2, platform_mask=0xF << 48,
                                   platform_bit=50),
                CacheLookupContext(frozenset({X86}), X86, ("x86-64-v2", "x86-64-v4", "x86-64-v3"),
                                   x86_isa_bits=0b1111, platform_mask=0xF << 48)]
    hwcap_choices = [0, 0, 1 << 63, 1 << 1, 1 << 2, 1 << 50, 1 << 51, EXT, EXT | 1, EXT | 2,
                     EXT | 3, EXT | (1 << 32) | 1, EXT | (3 << 32) | 2, EXT | (1 << 50)]
    for layout in ("new", "old"):
        for _ in range(150):
            rows = [(rng.choice([X86, X86, 1, 0x803]), "libq.so.1", f"/p{i}/libq.so.1",
                     rng.choice(hwcap_choices) if layout == "new" else 0)
                    for i in range(rng.randint(1, 9))]
            data = build_cache(rows, names, layout=layout)
            cache = parse_ld_cache(data, "rank")
            group = list(range(len(cache.entries)))
            for ctx in contexts:
                prios = _hwcaps_priorities(cache.hwcaps_names, ctx.hwcaps_subdirs)
                expected: list[int] = []
                pick = _reference_pick(cache, group, ctx, prios, set())
                while pick is not None:
                    expected.append(pick)
                    pick = _reference_pick(cache, group, ctx, prios, set(expected))
                got = [e.index for e in cache.lookup("libq.so.1", ctx)]
                assert got == expected, (rows, ctx)


def test_libcmp_long_digit_runs_and_large_groups() -> None:
    assert _libcmp(b"lib" + b"9" * 5000, b"lib" + b"9" * 4999 + b"8") > 0
    assert _libcmp(b"lib007.so", b"lib7.so") == 0
    rows = [(X86, "libsame.so.1", f"/d{i}/libsame.so.1", EXT | (i % 3)) for i in range(20000)]
    cache = parse_ld_cache(build_new(rows, ["x86-64-v2", "x86-64-v3", "x86-64-v4"]), "big")
    ctx = CacheLookupContext(frozenset({X86}), X86, ("x86-64-v3", "x86-64-v2"))
    ranked = cache.lookup("libsame.so.1", ctx)
    assert len(ranked) == sum(1 for i in range(20000) if i % 3 != 2)
    assert ranked[0].path == "/d1/libsame.so.1"
