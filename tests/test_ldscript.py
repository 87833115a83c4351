"""GNU ld script reader: real scripts on this machine, edge cases, and GNU ld as oracle."""

from __future__ import annotations

import glob
import os
import re
import shutil
import subprocess
import threading
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ldscope.elf._ldscript import (
    LinkerScript,
    looks_like_linker_script,
    parse_linker_script,
    read_linker_script,
)
from ldscope.errors import InputFormatError

LIBDIR = "/usr/lib/x86_64-linux-gnu"
HAVE_LD = shutil.which("ld") is not None and shutil.which("gcc") is not None


def parse(text: str) -> LinkerScript:
    return parse_linker_script(text, "t.ld")


def names(script: LinkerScript) -> list[str]:
    return [i.name for i in script.inputs]


def _real_scripts() -> list[str]:
    found = []
    for p in sorted(glob.glob(f"{LIBDIR}/*.so") + glob.glob(f"{LIBDIR}/*.a")):
        try:
            with open(p, "rb") as fh:
                head = fh.read(4096)
        except OSError:
            continue
        if head[:4] != b"\x7fELF" and head[:8] != b"!<arch>\n" and b"\0" not in head:
            found.append(p)
    return found


REAL_SCRIPTS = _real_scripts()


# ---------------------------------------------------------------- real files


@pytest.mark.skipif(not os.path.exists(f"{LIBDIR}/libc.so"), reason="no glibc libc.so script")
def test_glibc_libc_so() -> None:
    s = read_linker_script(f"{LIBDIR}/libc.so")
    assert s.output_format == ("elf64-x86-64",)
    assert s.default_output_format == "elf64-x86-64"
    assert len(s.groups) == 1 and s.groups[0] == tuple(range(len(s.inputs)))
    assert all(i.in_group and not i.is_library_flag for i in s.inputs)
    assert [(os.path.basename(i.name), i.as_needed) for i in s.inputs] == [
        ("libc.so.6", False),
        ("libc_nonshared.a", False),
        (os.path.basename(s.inputs[-1].name), True),
    ]
    assert s.inputs[-1].name.startswith("/lib") and "ld-linux" in s.inputs[-1].name
    assert s.fully_understood and s.warnings == () and not s.rejected_by_ld
    text = Path(f"{LIBDIR}/libc.so").read_text()
    for i in s.inputs:
        assert text[i.offset : i.offset + len(i.name)] == i.name


@pytest.mark.skipif(not REAL_SCRIPTS, reason="no linker scripts in the library directory")
@pytest.mark.parametrize("path", REAL_SCRIPTS, ids=os.path.basename)
def test_every_real_library_script(path: str) -> None:
    with open(path, "rb") as fh:
        assert looks_like_linker_script(fh.read(4096))
    s = read_linker_script(path)
    assert s.inputs and s.fully_understood and not s.warnings
    raw = Path(path).read_text()
    flags = re.findall(r"(?:^|[\s(])-l([\w.+-]+)", raw)
    assert [i.name for i in s.inputs if i.is_library_flag] == flags
    for i in s.inputs:
        assert raw[i.offset :].startswith(("-l" if i.is_library_flag else "") + i.name)


@pytest.mark.skipif(not os.path.exists(f"{LIBDIR}/libcurses.so"), reason="no Debian libcurses.so")
def test_debian_ncurses_input_script_without_comment() -> None:
    s = read_linker_script(f"{LIBDIR}/libcurses.so")
    assert [(i.name, i.is_library_flag, i.in_group) for i in s.inputs] == [
        ("libncurses.so.6", False, False),
        ("tinfo", True, False),
    ]
    assert s.groups == ()


@pytest.mark.skipif(not HAVE_LD, reason="GNU ld not installed")
def test_ld_default_script_is_parsed_with_sections_reported() -> None:
    text = subprocess.run(["ld", "--verbose"], capture_output=True, text=True).stdout
    body = text.split("=" * 50)[1]
    s = parse(body)
    dirs = re.findall(r'SEARCH_DIR\("([^"]*)"\)', body)
    assert s.search_dirs == tuple(dirs) and dirs
    assert len(s.output_format) == 3 and s.entry == "_start" and s.output_arch
    assert [u.name for u in s.unknown_details] == ["SECTIONS"]
    assert s.unknown_commands[0].startswith("SECTIONS {") and not s.fully_understood
    assert s.unknown_details[0].known_to_ld and not s.rejected_by_ld


LDSCRIPT_FILES = sorted(glob.glob(f"{LIBDIR}/ldscripts/*"))[:40]


@pytest.mark.skipif(not LDSCRIPT_FILES, reason="no binutils ldscripts directory")
def test_binutils_full_scripts_parse() -> None:
    for path in LDSCRIPT_FILES:
        s = read_linker_script(path)
        assert not s.rejected_by_ld, path
        assert "SECTIONS" in [u.name for u in s.unknown_details], path


# ---------------------------------------------------------------- edge cases


def test_groups_as_needed_flags_and_quotes() -> None:
    s = parse(
        'INPUT(crt.o) GROUP ( "my lib.a" -lfoo AS_NEEDED ( -lbar /x/y.so AS_NEEDED(z.so) ) )\n'
        "GROUP(a.a , b.a)"
    )
    got = [(i.name, i.as_needed, i.in_group, i.is_library_flag, i.group) for i in s.inputs]
    assert got == [
        ("crt.o", False, False, False, None),
        ("my lib.a", False, True, False, 0),
        ("foo", False, True, True, 0),
        ("bar", True, True, True, 0),
        ("/x/y.so", True, True, False, 0),
        ("z.so", True, True, False, 0),
        ("a.a", False, True, False, 1),
        ("b.a", False, True, False, 1),
    ]
    assert s.groups == ((1, 2, 3, 4, 5), (6, 7))


def test_comments_and_other_modelled_commands() -> None:
    s = parse(
        '# hash comment line\n/* block\n comment ( */ OUTPUT_FORMAT("a", "b", "c")\n'
        'OUTPUT_ARCH(i386:x86-64) ENTRY(_start) SEARCH_DIR(/opt/lib); SEARCH_DIR("=/usr/lib")\n'
        "INPUT(/* inside */ x.o) # trailing\n"
    )
    assert s.output_format == ("a", "b", "c") and s.output_arch == "i386:x86-64"
    assert s.entry == "_start" and s.search_dirs == ("/opt/lib", "=/usr/lib")
    assert names(s) == ["x.o"] and s.fully_understood


def test_glued_commas_follow_gnu_ld_and_warn() -> None:
    s = parse("INPUT(a.o,b.o) INPUT(c.o , d.o)")
    assert names(s) == ["a.o,b.o", "c.o", "d.o"]
    assert len(s.warnings) == 1 and "'a.o,b.o'" in s.warnings[0]
    assert parse("OUTPUT_FORMAT(x,y,z)").output_format == ("x,y,z",)


def test_invalid_characters_are_skipped_with_warnings() -> None:
    s = parse('INPUT(a@b.o 0c.o "unterminated)')
    assert names(s) == ["a", "b.o", "c.o", "unterminated"]
    assert len(s.warnings) == 3


def test_unknown_statements_are_recorded_not_misread() -> None:
    s = parse(
        "x = 1; PROVIDE(y = 2); SECTIONS { .text : { *(.text) } } "
        "INSERT AFTER .text INPUT(a.o) FOO(bar.o) VERSION { V1 { global: *; }; }"
    )
    assert names(s) == ["a.o"]
    assert [(u.name, u.known_to_ld) for u in s.unknown_details] == [
        ("x", True),
        ("PROVIDE", True),
        ("SECTIONS", True),
        ("INSERT", True),
        ("FOO", False),
        ("VERSION", True),
    ]
    assert s.unknown_commands[3] == "INSERT AFTER .text"
    assert s.rejected_by_ld and not s.fully_understood
    assert not parse("x = 1;").rejected_by_ld
    assert parse("x = 1").rejected_by_ld  # ld needs the ';'


def test_second_output_format_is_ignored_like_ld() -> None:
    s = parse("OUTPUT_FORMAT(a) OUTPUT_FORMAT(b)")
    assert s.output_format == ("a",) and "keeps the first" in s.warnings[0]


def test_empty_and_comment_only_scripts() -> None:
    for text in ("", "  \n", "/* nothing */", "# only\n"):
        s = parse(text)
        assert s.inputs == () and s.fully_understood


@pytest.mark.parametrize(
    ("text", "offset", "needle"),
    [
        ("INPUT(a.o", 5, "never closed"),
        ("GROUP(a.o AS_NEEDED(b.o)", 5, "never closed"),
        ("GROUP(a.o AS_NEEDED(b.o", 19, "never closed"),
        ("INPUT(a.o))", 10, "unbalanced ')'"),
        ("/* x", 0, "unterminated /* comment"),
        ("INPUT(a.o) /* x", 11, "unterminated /* comment"),
        ("INPUT()", 6, "empty INPUT()"),
        ("INPUT(AS_NEEDED())", 16, "empty AS_NEEDED()"),
        ("INPUT(a.o ,)", 11, "',' before ')'"),
        ("INPUT(,a.o)", 6, "unexpected ','"),
        ("AS_NEEDED(a.o)", 0, "only valid inside"),
        ("GROUP(GROUP(a.o))", 6, "GROUP inside GROUP"),
        ("INPUT a.o", 0, "must be followed by '('"),
        ("OUTPUT_FORMAT(a b c)", 0, "one name or three"),
        ("OUTPUT_FORMAT(a , b)", 0, "one name or three"),
        ("ENTRY(a b)", 0, "exactly one name"),
        ("SECTIONS { .text : { *(.text) }", 9, "never closed"),
        ("INPUT(a.o) }", 11, "unbalanced '}'"),
        ("INPUT((a.o))", 6, "unexpected '('"),
    ],
)
def test_syntax_errors_raise_input_format_error(text: str, offset: int, needle: str) -> None:
    with pytest.raises(InputFormatError) as info:
        parse_linker_script(text, "bad.ld")
    assert info.value.file == "bad.ld"
    assert info.value.offset == offset
    assert needle in info.value.reason


# ---------------------------------------------------------------- GNU ld as oracle

LD_CASES = [
    "INPUT(a.o)",
    "# c\nINPUT(a.o)",
    "INPUT(a.o , b.o)",
    "INPUT(a.o,b.o)",
    "INPUT(a.o ,)",
    "INPUT(a.o , , b.o)",
    "INPUT(,a.o)",
    "INPUT(a.o",
    "INPUT(a.o))",
    "INPUT()",
    "INPUT(AS_NEEDED())",
    "AS_NEEDED(a.o)",
    "GROUP(GROUP(a.o))",
    "GROUP(a.o INPUT(b.o))",
    "INPUT(AS_NEEDED(AS_NEEDED(a.o)))",
    "INPUT(a.o AS_NEEDED)",
    "INPUT(a.o) /* x",
    "OUTPUT_FORMAT(a b c) INPUT(a.o)",
    "OUTPUT_FORMAT(a , b) INPUT(a.o)",
    "OUTPUT_FORMAT(elf64-x86-64 , elf64-x86-64 , elf64-x86-64) INPUT(a.o)",
    'OUTPUT_FORMAT("elf64-x86-64","elf64-x86-64","elf64-x86-64") INPUT(a.o)',
    "ENTRY(a b) INPUT(a.o)",
    "ENTRY(a,b) INPUT(a.o)",
    "SEARCH_DIR(/a , /b)",
    "x = 1; INPUT(a.o)",
    "x = 1 INPUT(a.o)",
    "INPUT(a.o) FOO",
    "FOO(a.o)",
    "INPUT(a.o) SECTIONS { .text : { *(.text) } }",
    "INPUT(a.o) SECTIONS { .text : { *(.text) } ",
    "INPUT(a.o) PROVIDE(x = 1);",
    "INPUT(a.o) PROVIDE(x = 1)",
    "INPUT(a@b.o)",
    'INPUT("a.o)',
    "INPUT a.o",
    "INPUT(a.o {)",
    "INPUT((a.o))",
    "INPUT(a.o) VERSION { V1 { global: *; }; }",
    "INPUT(a.o) INSERT AFTER .text",
    'INPUT(a.o) ASSERT(1, "m")',
    '"x" INPUT(a.o)',
    "INPUT(a.o) (x)",
    "input(a.o)",
]


@pytest.fixture(scope="module")
def ld_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if not HAVE_LD:
        pytest.skip("GNU ld not installed")
    d = tmp_path_factory.mktemp("ld")
    (d / "a.c").write_text("int alpha(void){return 1;}\n")
    (d / "b.c").write_text("int beta(void){return 2;}\n")
    subprocess.run(["gcc", "-c", "a.c", "b.c"], cwd=d, check=True)
    return d


def ld_verdict(d: Path, text: str) -> tuple[bool, list[str]]:
    """(GNU ld reported a syntax error, names it could not find)."""
    (d / "t.ld").write_text(text)
    res = subprocess.run(["ld", "-r", "-o", "t.out", "t.ld"], cwd=d, capture_output=True, text=True)
    err = res.stderr
    syntax = (
        "syntax error" in err
        or "EOF in comment" in err
        or (
            "file format not recognized" in err
            and "treating as linker script" not in err
            and "cannot find" not in err
        )
    )
    return syntax, re.findall(r"cannot find (.*?): ", err)


@pytest.mark.parametrize("text", LD_CASES)
def test_ld_rejects_exactly_what_we_reject(ld_dir: Path, text: str) -> None:
    ld_syntax, _ = ld_verdict(ld_dir, text)
    try:
        ours = parse(text).rejected_by_ld
    except InputFormatError:
        ours = True
    assert ours == ld_syntax


@pytest.mark.parametrize(
    "text",
    [
        "INPUT(nope1.o nope2.o)",
        "INPUT(x.o,y.o)",
        "INPUT(q@r.o)",
        'GROUP("sp ace.o" -lnosuchlib_zz AS_NEEDED(q.o))',
        "INPUT(=x1.o ~x2.o $x3.o x+y.o x:y.o)",
    ],
)
def test_file_names_match_what_ld_looks_for(ld_dir: Path, text: str) -> None:
    _, missing = ld_verdict(ld_dir, text)
    s = parse(text)
    wanted = [("-l" if i.is_library_flag else "") + i.name for i in s.inputs]
    wanted = [w[1:] if w.startswith("=") else w for w in wanted]  # empty sysroot
    assert missing == wanted


# ---------------------------------------------------------------- detection and files


def test_looks_like_linker_script() -> None:
    assert looks_like_linker_script(b"/* GNU ld script\n   Use the shared library */\n")
    assert looks_like_linker_script(b"INPUT(libncurses.so.6 -ltinfo)\n")
    assert looks_like_linker_script(b"\n\n/* c */ GROUP ( libtinfo.so )\n")
    assert looks_like_linker_script(b"# comment\nOUTPUT_FORMAT(elf64-x86-64)\n")
    assert looks_like_linker_script(b"SECTIONS\n{\n}\n")
    assert not looks_like_linker_script(b"\x7fELF\x02\x01\x01" + b"\0" * 50)
    assert not looks_like_linker_script(b"!<arch>\n/               0")
    assert not looks_like_linker_script(b"int main(void) { return 0; }\n")
    assert not looks_like_linker_script(b"hello world\n")
    assert not looks_like_linker_script(b"")
    assert not looks_like_linker_script(b"INPUT(a.o)\0\0binary")
    assert not looks_like_linker_script(b"input(a.o)")


def test_read_linker_script_refuses_special_and_huge_files(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo.so"
    os.mkfifo(fifo)
    errors: list[BaseException] = []
    t = threading.Thread(target=lambda: _capture(errors, fifo), daemon=True)
    t.start()
    t.join(5)
    assert not t.is_alive() and isinstance(errors[0], InputFormatError)
    big = tmp_path / "big.so"
    with open(big, "wb") as fh:
        fh.truncate(5 << 20)
    with pytest.raises(InputFormatError, match="too large"):
        read_linker_script(big)
    for p in (tmp_path, tmp_path / "missing.so"):
        with pytest.raises(InputFormatError):
            read_linker_script(p)
    (tmp_path / "bin.so").write_bytes(b"INPUT(\xff\xfe.o)")
    s = read_linker_script(tmp_path / "bin.so")
    assert names(s) == [".o"] and len(s.warnings) == 2  # bytes ld can't lex are skipped


def _capture(errors: list[BaseException], path: Path) -> None:
    try:
        read_linker_script(path)
    except BaseException as exc:
        errors.append(exc)


# ---------------------------------------------------------------- fuzz

FUZZ_SEEDS = [
    "/* GNU ld script */\nOUTPUT_FORMAT(elf64-x86-64)\nGROUP ( /lib/libc.so.6 "
    "/usr/lib/libc_nonshared.a  AS_NEEDED ( /lib64/ld-linux-x86-64.so.2 ) )\n",
    "INPUT(libncurses.so.6 -ltinfo)\n",
    'OUTPUT_FORMAT("a", "b",\n "c") SEARCH_DIR("=/usr/lib"); ENTRY(_start)\n'
    "SECTIONS { .text : { *(.text) } } x = 1;",
]
ALPHABET = '()"{};,#/*\n -lAS_NEEDEDGROUPINPUTx.o='


@settings(max_examples=300, deadline=None)
@given(
    seed=st.sampled_from(FUZZ_SEEDS),
    edits=st.lists(
        st.tuples(st.integers(0, 200), st.text(ALPHABET, max_size=5), st.integers(0, 4)),
        min_size=1,
        max_size=6,
    ),
)
def test_fuzz_script_parser(seed: str, edits: list[tuple[int, str, int]]) -> None:
    text = seed
    for at, new, cut in edits:
        at %= len(text) + 1
        text = text[:at] + new + text[at + cut :]
    try:
        s = parse_linker_script(text, "fuzz.ld")
    except InputFormatError as exc:
        assert exc.offset is not None and 0 <= exc.offset <= len(text)
        return
    for i in s.inputs:
        assert i.name == "" or i.name in text
        assert 0 <= i.offset < len(text)
    for g in s.groups:
        assert all(s.inputs[k].in_group for k in g)


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=300))
def test_fuzz_detection_and_decoding_never_crash(data: bytes) -> None:
    looks_like_linker_script(data)
    try:
        parse_linker_script(data.decode("utf-8", "surrogateescape"), "b.ld")
    except InputFormatError as exc:
        assert exc.file == "b.ld"
