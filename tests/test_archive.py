"""ar archive reader: checked against GNU ar/nm (and llvm-ar, rustc) as oracles."""

from __future__ import annotations

import os
import shutil
import struct
import subprocess
import threading
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ldscope.elf._archive import AR_MAGIC, Archive, is_archive
from ldscope.errors import InputFormatError

HAVE_GCC = shutil.which("gcc") is not None and shutil.which("ar") is not None
HAVE_LLVM_AR = shutil.which("llvm-ar") is not None
HAVE_RUSTC = shutil.which("rustc") is not None
needs_gcc = pytest.mark.skipif(not HAVE_GCC, reason="gcc/ar not installed")
LONG = "a_very_long_member_name_file.o"

SOURCES = {
    "a.c": "int alpha(void){return 1;}\nint shared_sym = 3;\n",
    "a_very_long_member_name_file.c": "int beta(void){return 2;}\n",
    "dup.c": "__attribute__((weak)) int alpha(void){return 9;}\nint gamma_fn(void){return 4;}\n",
    "sp ace.c": "int spaced(void){return 5;}\n",
}
OBJECTS = ["a.o", LONG, "dup.o", "sp ace.o"]


def run(*args: str, cwd: Path | None = None, env: dict[str, str] | None = None) -> str:
    return subprocess.run(
        list(args), cwd=cwd, env=env, check=True, capture_output=True, text=True
    ).stdout


@pytest.fixture(scope="module")
def objdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if not HAVE_GCC:
        pytest.skip("gcc/ar not installed")
    d = tmp_path_factory.mktemp("objs")
    for name, text in SOURCES.items():
        (d / name).write_text(text)
        run("gcc", "-c", name, cwd=d)
    return d


def make(objdir: Path, name: str, *flags: str, tool: str = "ar", env_extra: str = "") -> Path:
    env = dict(os.environ)
    if env_extra:
        key, _, value = env_extra.partition("=")
        env[key] = value
    run(tool, *flags, name, *OBJECTS, cwd=objdir, env=env)
    return objdir / name


def armap(path: Path, nm: str = "nm") -> list[tuple[str, str]]:
    """(symbol, member) pairs from `nm --print-armap`, the oracle for the index."""
    out = subprocess.run([nm, "--print-armap", str(path)], capture_output=True, text=True).stdout
    marker = "Archive index:\n" if nm == "nm" else "Archive map\n"
    if marker not in out:
        return []
    pairs = []
    for line in out.split(marker, 1)[1].split("\n\n", 1)[0].splitlines():
        sym, _, member = line.rpartition(" in ")
        pairs.append((sym, member))
    return pairs


def ar_listing(path: Path, tool: str = "ar") -> list[str]:
    return run(tool, "t", str(path)).splitlines()


# ---------------------------------------------------------------- GNU archives


@needs_gcc
def test_gnu_archive_matches_ar_and_nm(objdir: Path) -> None:
    path = make(objdir, "libg.a", "rcs")
    with Archive.open(path) as ar:
        assert ar.kind == "gnu"
        assert ar.has_index and ar.index_format == "gnu"
        assert not ar.ld_reports_no_index
        assert [m.name for m in ar.members] == ar_listing(path) == OBJECTS
        pairs = [(sym, ar.members[i].name) for sym, i in ar.index_entries]
        assert pairs == armap(path)
        assert ar.index["alpha"] == (0, 2)  # strong in a.o first, weak in dup.o second
        assert [m.name for m in ar.members_defining("beta")] == [LONG]
        assert ar.symbols_defined_by(2) == ("alpha", "gamma_fn")
        assert ar.members_defining("nonexistent") == ()
        for m in ar.members:
            assert m.is_elf and m.skip_reason is None
            assert bytes(ar.member_data(m)) == (objdir / m.name).read_bytes()
            assert m.size == (objdir / m.name).stat().st_size


@needs_gcc
def test_header_fields_match_ar_tv(objdir: Path) -> None:
    path = make(objdir, "libu.a", "rcsU")  # U: real mtime/uid/gid/mode instead of zeros
    listing = run("ar", "tv", str(path)).splitlines()
    with Archive.open(path) as ar:
        assert len(listing) == len(ar.members)
        for line, m in zip(listing, ar.members, strict=True):
            perms, ids, size = line.split(None, 3)[:3]
            uid, gid = (int(x) for x in ids.split("/"))
            assert (m.uid, m.gid, m.size) == (uid, gid, int(size))
            assert perms == _mode_string(m.mode)
            assert m.mtime == int((objdir / m.name).stat().st_mtime)


def _mode_string(mode: int) -> str:
    return "".join(c if mode & (1 << (8 - i)) else "-" for i, c in enumerate("rwxrwxrwx"))


@needs_gcc
def test_archive_without_index_is_flagged_and_ld_agrees(objdir: Path) -> None:
    path = make(objdir, "libn.a", "rcS")
    with Archive.open(path) as ar:
        assert not ar.has_index and ar.index_format is None
        assert dict(ar.index) == {} and ar.index_entries == ()
        assert ar.ld_reports_no_index
        assert [m.name for m in ar.members] == OBJECTS
    (objdir / "main.c").write_text("int alpha(void);\nint main(void){return alpha();}\n")
    res = subprocess.run(
        ["gcc", "main.c", "libn.a", "-o", "main"], cwd=objdir, capture_output=True, text=True
    )
    assert res.returncode != 0 and "archive has no index" in res.stderr


@needs_gcc
def test_empty_archive_has_no_members_and_ld_accepts_it(tmp_path: Path) -> None:
    run("ar", "rcs", "empty.a", cwd=tmp_path)
    with Archive.open(tmp_path / "empty.a") as ar:
        assert ar.members == [] and not ar.ld_reports_no_index and ar.kind == "gnu"


# ---------------------------------------------------------------- thin archives


@needs_gcc
def test_thin_archive_resolves_members_and_reports_missing(objdir: Path, tmp_path: Path) -> None:
    src = tmp_path / "src"
    src.mkdir()
    for name in OBJECTS:
        shutil.copy(objdir / name, src / name)
    run("ar", "rcsT", "libt.a", *OBJECTS, cwd=src)
    path = src / "libt.a"
    with Archive.open(path) as ar:
        assert ar.kind == "thin" and ar.index_format == "gnu"
        assert [m.path for m in ar.members] == [str(src / n) for n in OBJECTS] == ar_listing(path)
        # nm names thin members by their resolved path
        assert [(s, ar.members[i].path) for s, i in ar.index_entries] == armap(path)
        for m in ar.members:
            assert m.is_elf and m.offset == 0
            assert bytes(ar.member_data(m)) == (src / m.name).read_bytes()
    (src / LONG).unlink()
    with Archive.open(path) as ar:
        gone = ar.members[1]
        assert not gone.is_elf
        assert gone.skip_reason == f"thin archive member file not found: {src / LONG}"
        assert ar.members[0].is_elf and ar.index["beta"] == (1,)
        with pytest.raises(InputFormatError):
            ar.member_data(gone)


def test_thin_archive_from_buffer_with_absolute_and_relative_paths(tmp_path: Path) -> None:
    obj = tmp_path / "x.o"
    obj.write_bytes(b"\x7fELF" + b"\0" * 60)
    names = f"x.o/\n{tmp_path}/x.o/\n".encode()
    data = THIN_MAGIC_BYTES + _member("//", names)
    data += _hdr("/0", 64) + _hdr(f"/{len('x.o/') + 1}", 64)
    ar = Archive.from_buffer(data, str(tmp_path / "t.a"))
    assert [m.path for m in ar.members] == [str(obj), str(obj)]
    assert all(m.is_elf for m in ar.members) and ar.kind == "thin"
    assert bytes(ar.member_data(0)) == obj.read_bytes()


# ---------------------------------------------------------------- llvm-ar formats


@pytest.mark.skipif(not HAVE_LLVM_AR, reason="llvm-ar not installed")
@pytest.mark.parametrize(
    ("fmt", "env", "index_format", "kind"),
    [
        ("gnu", "SYM64_THRESHOLD=0", "gnu64", "gnu"),
        ("bsd", "", "bsd", "bsd"),
        ("darwin", "", "bsd", "bsd"),
        ("darwin", "SYM64_THRESHOLD=0", "bsd64", "bsd"),
    ],
)
def test_llvm_ar_formats(objdir: Path, fmt: str, env: str, index_format: str, kind: str) -> None:
    path = make(
        objdir, f"lib-{fmt}-{bool(env)}.a", "rcs", f"--format={fmt}", tool="llvm-ar", env_extra=env
    )
    with Archive.open(path) as ar:
        assert ar.kind == kind and ar.index_format == index_format
        names = [n for n in ar_listing(path, "llvm-ar") if not n.startswith("__.SYMDEF")]
        assert [m.name for m in ar.members] == names == OBJECTS
        assert sorted((s, ar.members[i].name) for s, i in ar.index_entries) == sorted(
            armap(path, "llvm-nm")
        )
        for m in ar.members:
            assert bytes(ar.member_data(m)) == (objdir / m.name).read_bytes()
        # GNU ld on ELF only reads the GNU index: a BSD one is "archive has no index".
        assert ar.ld_reports_no_index == (kind == "bsd")


THIN_MAGIC_BYTES = b"!<thin>\n"


def _hdr(name: str, size: int, mode: str = "644") -> bytes:
    h = f"{name:<16}{0:<12}{0:<6}{0:<6}{mode:<8}{size:<10}`\n".encode()
    assert len(h) == 60
    return h


def _member(name: str, data: bytes) -> bytes:
    return _hdr(name, len(data)) + data + (b"\n" if len(data) % 2 else b"")


def _bsd_archive(endian: str, symdef_name: str) -> bytes:
    """A 4.4BSD archive built by hand as FreeBSD ar(5) describes it."""
    obj1, obj2 = b"\x7fELF" + b"1" * 20, b"\x7fELF" + b"2" * 31
    long_name = b"long_member_name_object.o\0\0\0"  # padded with NULs
    strtab = b"foo\0bar\0baz\0"
    nsym = 3
    symdef_body_len = 4 + 8 * nsym + 4 + len(strtab)
    symdef_name_b = symdef_name.encode().ljust(20, b"\0")
    first = 8 + 60 + len(symdef_name_b) + symdef_body_len
    first += first % 2
    second = first + 60 + len(obj1) + len(obj1) % 2
    ranlib = struct.pack(f"{endian}I", 8 * nsym) + struct.pack(
        f"{endian}6I", 0, first, 4, second, 8, first
    )
    body = symdef_name_b + ranlib + struct.pack(f"{endian}I", len(strtab)) + strtab
    out = AR_MAGIC + _hdr(f"#1/{len(symdef_name_b)}", len(body)) + body
    out += b"\n" * (len(body) % 2)
    assert len(out) == first
    out += _member("short.o", obj1)
    assert len(out) == second
    out += _hdr(f"#1/{len(long_name)}", len(long_name) + len(obj2)) + long_name + obj2
    return out + b"\n" * ((len(long_name) + len(obj2)) % 2)


@pytest.mark.parametrize("endian", ["<", ">"])
@pytest.mark.parametrize("symdef", ["__.SYMDEF", "__.SYMDEF SORTED"])
def test_hand_built_bsd_archive(endian: str, symdef: str) -> None:
    ar = Archive.from_buffer(_bsd_archive(endian, symdef), "bsd.a")
    assert ar.kind == "bsd" and ar.index_format == "bsd"
    assert [m.name for m in ar.members] == ["short.o", "long_member_name_object.o"]
    assert ar.index_entries == (("foo", 0), ("bar", 1), ("baz", 0))
    assert bytes(ar.member_data(1)) == b"\x7fELF" + b"2" * 31
    assert ar.members[1].size == 35 and ar.members[0].size == 24


# ---------------------------------------------------------------- rlibs


@pytest.mark.skipif(not HAVE_RUSTC, reason="rustc not installed")
def test_rust_rlib_members_and_bitcode_skip(tmp_path: Path) -> None:
    (tmp_path / "tiny.rs").write_text(
        'pub fn hello() -> u32 { 42 }\n#[no_mangle] pub extern "C" fn c_hello() -> u32 { 7 }\n'
    )
    run(
        "rustc",
        "--crate-type=rlib",
        "-C",
        "opt-level=0",
        "tiny.rs",
        "-o",
        "libtiny.rlib",
        cwd=tmp_path,
    )
    run(
        "rustc",
        "--crate-type=rlib",
        "-C",
        "linker-plugin-lto",
        "tiny.rs",
        "-o",
        "libbc.rlib",
        cwd=tmp_path,
    )
    with Archive.open(tmp_path / "libtiny.rlib") as ar:
        names = [m.name for m in ar.members]
        assert names == ar_listing(tmp_path / "libtiny.rlib")
        assert "lib.rmeta" in names
        assert [(s, ar.members[i].name) for s, i in ar.index_entries] == armap(
            tmp_path / "libtiny.rlib"
        )
        assert ar.members_defining("c_hello")[0].name.endswith(".o")
        assert all(m.is_elf == (m.skip_reason is None) for m in ar.members)
    with Archive.open(tmp_path / "libbc.rlib") as ar:
        obj = next(m for m in ar.members if m.name.endswith(".o"))
        assert not obj.is_elf and obj.skip_reason is not None
        assert "LLVM bitcode" in obj.skip_reason
        assert bytes(ar.member_data(obj))[:4] == b"BC\xc0\xde"


def test_raw_rust_metadata_and_other_non_elf_members_get_reasons() -> None:
    data = AR_MAGIC + _member("lib.rmeta/", b"rust\0\0\0\x08" + b"m" * 20)
    data += _member("x.bc.z/", b"RUST_OBJECT\x01\0\0")
    data += _member("empty.o/", b"")
    data += _member("notes.txt/", b"hello world\n")
    ar = Archive.from_buffer(data, "lib.rlib")
    reasons = [m.skip_reason or "" for m in ar.members]
    assert not any(m.is_elf for m in ar.members)
    assert "Rust crate metadata" in reasons[0]
    assert "RUST_OBJECT" in reasons[1]
    assert reasons[2] == "empty member"
    assert "not an ELF object" in reasons[3] and "68656c6c" in reasons[3]


# ---------------------------------------------------------------- system archives


SYSTEM_ARCHIVES = [
    p
    for p in (
        "/usr/lib/x86_64-linux-gnu/libc_nonshared.a",
        "/usr/lib/x86_64-linux-gnu/libc.a",
        "/usr/lib/x86_64-linux-gnu/libz.a",
    )
    if os.path.exists(p) and is_archive(Path(p).read_bytes()[:8])
]


@pytest.mark.skipif(not SYSTEM_ARCHIVES or not HAVE_GCC, reason="no system archives")
@pytest.mark.parametrize("path", SYSTEM_ARCHIVES)
def test_system_archives_agree_with_ar_and_nm(path: str) -> None:
    with Archive.open(path) as ar:
        assert [m.name for m in ar.members] == ar_listing(Path(path))
        assert [(s, ar.members[i].name) for s, i in ar.index_entries] == armap(Path(path))
        assert all(m.is_elf for m in ar.members)


# ---------------------------------------------------------------- API and files


def test_is_archive() -> None:
    assert is_archive(b"!<arch>\nrest") and is_archive(b"!<thin>\n")
    assert not is_archive(b"\x7fELF") and not is_archive(b"!<arch") and not is_archive(b"")


def test_open_errors_are_input_format_errors(tmp_path: Path) -> None:
    (tmp_path / "empty.a").write_bytes(b"")
    (tmp_path / "elf.a").write_bytes(b"\x7fELF" + b"\0" * 100)
    for p in (tmp_path / "missing.a", tmp_path, tmp_path / "empty.a", tmp_path / "elf.a"):
        with pytest.raises(InputFormatError):
            Archive.open(p)


def test_fifo_is_refused_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo.a"
    os.mkfifo(fifo)
    outcome: list[BaseException] = []

    def target() -> None:
        try:
            Archive.open(fifo)
        except BaseException as exc:
            outcome.append(exc)

    t = threading.Thread(target=target, daemon=True)
    t.start()
    t.join(5)
    assert not t.is_alive()
    assert len(outcome) == 1 and isinstance(outcome[0], InputFormatError)
    assert "regular file" in outcome[0].reason


def test_close_and_views(tmp_path: Path) -> None:
    path = tmp_path / "l.a"
    path.write_bytes(AR_MAGIC + _member("x.o/", b"\x7fELF12345"))
    ar = Archive.open(path)
    view = ar.member_data(0)
    ar.close()
    assert bytes(view) == b"\x7fELF12345"  # a held view stays valid after close
    with pytest.raises(ValueError):
        ar.member_data(0)
    ar.close()  # idempotent
    with Archive.open(path) as ar2, pytest.raises(ValueError):
        ar2.member_data(5)


def test_member_data_is_zero_copy(tmp_path: Path) -> None:
    data = bytearray(AR_MAGIC + _member("x.o/", b"\x7fELFabc"))
    ar = Archive.from_buffer(data, "mem.a")
    view = ar.member_data(0)
    data[8 + 60 + 4] = ord("Z")
    assert bytes(view) == b"\x7fELFZbc"
    view.release()


# ---------------------------------------------------------------- malformed input


def _gnu_bytes() -> bytes:
    """A small GNU archive with index, long names and an odd-sized member, built by hand."""
    names = b"long_name_member_object.o/\n"
    body1, body2 = b"\x7fELF" + b"A" * 11, b"\x7fELF" + b"B" * 8
    strtab = b"sym_a\0sym_b\0"
    index_len = 4 + 4 * 2 + len(strtab)
    first = 8 + 60 + index_len + 60 + len(names)
    first += first % 2
    second = first + 60 + len(body1) + len(body1) % 2
    index = struct.pack(">3I", 2, first, second) + strtab
    out = AR_MAGIC + _member("/", index) + _member("//", names)
    assert len(out) == first
    out += _member("short.o/", body1)
    assert len(out) == second
    return out + _member("/0", body2)


def test_hand_built_gnu_archive() -> None:
    ar = Archive.from_buffer(_gnu_bytes(), "g.a")
    assert [m.name for m in ar.members] == ["short.o", "long_name_member_object.o"]
    assert dict(ar.index) == {"sym_a": (0,), "sym_b": (1,)}


def _replace(data: bytes, at: int, new: bytes) -> bytes:
    return data[:at] + new + data[at + len(new) :]


@pytest.mark.parametrize(
    ("mutate", "needle"),
    [
        (lambda d: d[:-3], "runs past the end"),
        (lambda d: d + b"x" * 30, "truncated member header"),
        (lambda d: _replace(d, 8 + 48, b"99999999  "), "runs past the end"),
        (lambda d: _replace(d, 8 + 48, b"12a       "), "not a number"),
        (lambda d: _replace(d, 8 + 58, b"XX"), "terminator"),
        (lambda d: _replace(d, 8 + 60, struct.pack(">I", 0x7FFFFFFF)), "count"),
        (lambda d: _replace(d, 8 + 60, struct.pack(">I", 3)), "fewer than 3 names"),
        (lambda d: _replace(d, 8 + 64, struct.pack(">I", 12)), "not a member header"),
        (lambda d: d[: -(60 + 12)] + _hdr("/999", 12) + d[-12:], "outside the '//' table"),
        (lambda d: d.replace(b"//              ", b"xx/             "), "without a '//'"),
        (lambda d: b"!<arch>\r" + d[8:], "bad magic"),
    ],
)
def test_malformed_gnu_archives_raise_input_format_error(mutate: object, needle: str) -> None:
    assert callable(mutate)
    data = mutate(_gnu_bytes())
    with pytest.raises(InputFormatError) as info:
        Archive.from_buffer(data, "bad.a")
    assert needle in info.value.reason


@pytest.mark.parametrize(
    ("mutate", "needle"),
    [
        (lambda d: _replace(d, 8 + 60 + 20, struct.pack("<I", 0x10000)), "sizes do not fit"),
        (lambda d: _replace(d, 8 + 60 + 24, struct.pack("<I", 500)), "string table"),
        (lambda d: _replace(d, 8 + 3, b"9999"), "exceeds member size"),
    ],
)
def test_malformed_bsd_archives_raise_input_format_error(mutate: object, needle: str) -> None:
    assert callable(mutate)
    with pytest.raises(InputFormatError) as info:
        Archive.from_buffer(mutate(_bsd_archive("<", "__.SYMDEF")), "bad.a")
    assert needle in info.value.reason


def test_every_truncation_parses_or_raises_input_format_error() -> None:
    data = _gnu_bytes()
    parsed = []
    for n in range(len(data)):
        try:
            ar = Archive.from_buffer(data[:n], "t.a")
        except InputFormatError:
            continue
        parsed.append((n, len(ar.members)))
    # Only the bare magic is a valid prefix: every other cut either splits a header or
    # data, or leaves index entries pointing at members that are gone.
    assert parsed == [(8, 0)]
    assert len(Archive.from_buffer(data, "t.a").members) == 2


FUZZ_SEEDS = [_gnu_bytes(), _bsd_archive("<", "__.SYMDEF"), _bsd_archive(">", "__.SYMDEF_64")]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.sampled_from(FUZZ_SEEDS),
    edits=st.lists(
        st.tuples(st.integers(0, 400), st.binary(min_size=0, max_size=4), st.booleans()),
        min_size=1,
        max_size=6,
    ),
    thin=st.booleans(),
)
def test_fuzz_archive_parser(seed: bytes, edits: list[tuple[int, bytes, bool]], thin: bool) -> None:
    data = bytearray(seed)
    if thin:
        data[:8] = THIN_MAGIC_BYTES
    for at, new, in_place in edits:
        at %= len(data) + 1
        # in place keeps the layout (reaches the index and name parsing); else shift it
        data[at : at + (len(new) if in_place else 2)] = new
    try:
        ar = Archive.from_buffer(bytes(data), "/nonexistent/dir/fuzz.a")
    except InputFormatError as exc:
        assert exc.file == "/nonexistent/dir/fuzz.a"
        return
    for m in ar.members:
        if m.path is None:
            assert m.offset >= 0 and m.offset + m.size <= len(data)
            assert len(ar.member_data(m)) == m.size
        else:
            assert not m.is_elf and m.skip_reason
            with pytest.raises(InputFormatError):
                ar.member_data(m)
    for _sym, idx in ar.index_entries:
        assert 0 <= idx < len(ar.members)


def test_thin_member_name_with_nul_byte_is_a_skip_reason_not_a_crash() -> None:
    names = b"bad\0name.o/\n"
    data = THIN_MAGIC_BYTES + _member("//", names) + _hdr("/0", 10)
    ar = Archive.from_buffer(data, "/nonexistent/t.a")
    assert ar.members[0].skip_reason is not None
    assert "not a valid path" in ar.members[0].skip_reason
    with pytest.raises(InputFormatError):
        ar.member_data(0)


def test_bsd_short_symdef_sorted_name_fills_the_whole_name_field() -> None:
    obj = b"\x7fELF" + b"x" * 12
    first = 8 + 60 + 4 + 8 + 4 + 4
    ranlib = struct.pack("<I", 8) + struct.pack("<2I", 0, first) + struct.pack("<I", 4)
    data = AR_MAGIC + _member("__.SYMDEF SORTED", ranlib + b"sym\0") + _member("o.o", obj)
    ar = Archive.from_buffer(data, "s.a")
    assert ar.kind == "bsd" and ar.index_format == "bsd"
    assert [m.name for m in ar.members] == ["o.o"] and dict(ar.index) == {"sym": (0,)}
