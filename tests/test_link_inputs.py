"""Link-line input forms and bad input: response files, -Wl/-Xlinker, drivers, logs, broken files."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from ldscope.analysis._link import build_report, link_report
from ldscope.linker.frontend._cmdline import CommandLineError, resolve_link_line, split_quoted
from ldscope.linker.frontend._driver import fallback_linker_argv
from ldscope.linker.frontend._logparse import find_link_in_log
from ldscope.linker.frontend._options import parse_linker_argv
from tests.link_cases import order_case, sh

needs_gcc = pytest.mark.skipif(shutil.which("gcc") is None, reason="gcc needed")


def test_split_quoted_like_libiberty() -> None:
    assert split_quoted(r'a "b c" d\ e \"f\" ' + "'g h'") == ["a", "b c", "d e", '"f"', "g h"]
    assert split_quoted('"" x') == ["", "x"]


def test_option_forms() -> None:
    p = parse_linker_argv(["ld", "-lfoo", "-l", "bar", "--library=baz", "-L/x", "-L", "/y",
                           "--library-path=/z", "-o", "out", "-zdefs", "-z", "muldefs",
                           "--as-needed", "-(", "a.o", "-)", "-rpath-link=/r", "-soname", "s",
                           "--frobnicate", "-Bstatic", "-l:libq.a", "--push-state", "--pop-state"])
    libs = [i.value for i in p.items if i.kind == "lib"]
    assert libs == ["foo", "bar", "baz", ":libq.a"]
    assert [d for d, _ in p.options.library_paths] == ["/x", "/y", "/z"]
    assert p.options.output == "out" and p.options.no_undefined and p.options.allow_multiple_definition
    assert p.options.rpath_link == ["/r"] and p.options.soname == "s"
    states = [i.value for i in p.items if i.kind == "state"]
    assert states == ["as-needed", "start-group", "end-group", "Bstatic", "push-state", "pop-state"]
    assert any("--frobnicate" in w for w in p.warnings)


def test_response_files_nested(tmp_path: Path) -> None:
    (tmp_path / "inner.rsp").write_text("-L/opt/lib 'b c.o'\n")
    (tmp_path / "outer.rsp").write_text("a.o @inner.rsp -lm\n")
    line = resolve_link_line(["ld.bfd", "@outer.rsp", "@missing.rsp"], cwd=str(tmp_path))
    assert line.argv == ("ld.bfd", "a.o", "-L/opt/lib", "b c.o", "-lm", "@missing.rsp")
    assert any("outer.rsp" in n for n in line.notes)


def test_wl_and_xlinker_unpacked_without_driver() -> None:
    argv, notes = fallback_linker_argv(["gcc", "main.o", "-Wl,--as-needed,-rpath,/x", "-Xlinker",
                                        "--no-undefined", "-lfoo", "-o", "app", "x.c"])
    i = argv.index("main.o")
    assert argv[i:i + 6] == ["main.o", "--as-needed", "-rpath", "/x", "--no-undefined", "-lfoo"]
    assert "-lc" in argv and argv[argv.index("-o") + 1] == "app"
    assert any("x.c would be compiled" in n for n in notes)


def test_unknown_program_is_a_usage_error() -> None:
    with pytest.raises(CommandLineError):
        resolve_link_line(["python3", "a.o"])
    with pytest.raises(CommandLineError):
        resolve_link_line([])


def test_linker_choice() -> None:
    assert resolve_link_line(["ld.lld", "a.o"]).linker == "lld"
    assert resolve_link_line(["mold", "a.o"]).linker == "mold"
    assert resolve_link_line(["ld.gold", "a.o"]).linker == "gold"
    assert resolve_link_line(["ld.bfd", "a.o"], linker="lld").linker == "lld"
    assert resolve_link_line(["gcc", "-fuse-ld=mold", "a.o"], use_driver=False).linker == "mold"


@needs_gcc
def test_driver_dry_run_gives_real_line(tmp_path: Path) -> None:
    order_case(tmp_path)
    line = resolve_link_line(["gcc", "main.o", "libtop.a", "libbase.a", "-o", "app"], cwd=str(tmp_path))
    assert line.source == "driver"
    assert "-lc" in line.argv and any(w.endswith("crtn.o") for w in line.argv)
    assert not (tmp_path / "app").exists()  # a dry run: nothing was linked
    no_driver = resolve_link_line(["gcc", "main.o"], cwd=str(tmp_path), use_driver=False)
    assert no_driver.source == "driver-fallback" and any("defaults" in n for n in no_driver.notes)
    missing = resolve_link_line(["definitely-not-installed-gcc", "main.o"], cwd=str(tmp_path))
    assert missing.source == "driver-fallback"


RUSTC_LOG = '''   Compiling demo v0.1.0 (/work/demo)
error: linking with `cc` failed: exit status: 1
  |
  = note: LC_ALL="C" PATH="/usr/bin:/bin" VSLANG="1033" "cc" "-m64" "/tmp/rustcAbC/symbols.o" "main.o" "-Wl,--as-needed" "-L" "/work/demo/out" "-lcfoo" "-o" "/work/demo/target/debug/deps/demo-1" "-nodefaultlibs" "-lc"
  = note: /usr/bin/ld: /work/demo/out/libcfoo.a(foo.o): in function `foo':
          foo.c:(.text+0x5): undefined reference to `bar_value'
          collect2: error: ld returned 1 exit status
'''

NINJA_LOG = '''[1/3] Building C object CMakeFiles/app.dir/main.c.o
[2/3] Linking C executable app
FAILED: app
: && /usr/bin/cc -O2 CMakeFiles/app.dir/main.c.o -o app  libfoo.a libbar.a && :
/usr/bin/ld: libfoo.a(foo.c.o): in function `foo':
foo.c:(.text+0x9): undefined reference to `bar'
collect2: error: ld returned 1 exit status
ninja: build stopped: subcommand failed.
'''

MAKE_LOG = '''make[1]: Entering directory '/src/build'
cc -c -o main.o main.c
cd /src/build/sub && cc -o prog main.o -L. -lz
/usr/bin/ld: cannot find -lz: No such file or directory
make[1]: *** [Makefile:3: prog] Error 1
'''


def test_rustc_note_with_environment() -> None:
    found = find_link_in_log(RUSTC_LOG)
    assert found.origin == "rustc linker note"
    assert found.argv[:3] == ("cc", "-m64", "/tmp/rustcAbC/symbols.o") and found.argv[-1] == "-lc"
    assert found.reported_symbols() == {"bar_value"}


def test_ninja_and_make_logs() -> None:
    ninja = find_link_in_log(NINJA_LOG)
    assert ninja.argv == ("/usr/bin/cc", "-O2", "CMakeFiles/app.dir/main.c.o", "-o", "app", "libfoo.a", "libbar.a")
    assert ninja.reported_symbols() == {"bar"}
    make = find_link_in_log(MAKE_LOG)
    assert make.argv[:3] == ("cc", "-o", "prog") and make.cwd == "/src/build/sub"
    with pytest.raises(CommandLineError):
        find_link_in_log("nothing to see here\n")


@needs_gcc
def test_missing_inputs_are_partial(tmp_path: Path) -> None:
    order_case(tmp_path)
    report = link_report(["ld.bfd", "main.o", "gone.o", "-lnothere", "libtop.a"], cwd=str(tmp_path))
    kinds = [e.kind for e in report.errors if e.shown]
    assert kinds == ["missing-input", "missing-input"] and report.partial and not report.links
    gone = report.errors[0]
    assert "cannot find gone.o" in gone.message and gone.argument_index == 2
    lib = report.errors[1]
    assert "cannot find -lnothere" in lib.message and "tried" in lib.explanation
    hidden = [e for e in report.errors if not e.shown]
    assert {e.symbol for e in hidden} >= {"base"}  # what would follow, once the inputs exist


@needs_gcc
def test_archive_without_index(tmp_path: Path) -> None:
    order_case(tmp_path)
    sh(["ar", "rcS", "libnoidx.a", "top.o"], tmp_path)
    bfd = link_report(["ld.bfd", "main.o", "libnoidx.a", "libbase.a"], cwd=str(tmp_path))
    (err,) = [e for e in bfd.errors if e.shown]
    assert err.kind == "archive-no-index" and "run ranlib" in err.message
    lld = link_report(["ld.lld", "main.o", "libnoidx.a", "libbase.a", "-e", "main"], cwd=str(tmp_path))
    assert not [e for e in lld.errors if e.kind == "archive-no-index"]


@needs_gcc
def test_corrupt_member_and_garbage_files(tmp_path: Path) -> None:
    order_case(tmp_path)
    (tmp_path / "bad.o").write_bytes(b"\x7fELF\x02\x01\x01" + b"\xff" * 60)
    sh(["ar", "rc", "libbad.a", "bad.o", "top.o"], tmp_path)
    sh(["ranlib", "libbad.a"], tmp_path)
    report = link_report(["ld.bfd", "main.o", "--whole-archive", "libbad.a", "--no-whole-archive",
                          "libbase.a"], cwd=str(tmp_path))
    bad = [e for e in report.errors if e.kind == "corrupt-input"]
    assert bad and "libbad.a(bad.o)" in bad[0].message and report.partial
    (tmp_path / "junk.o").write_bytes(b"\x7fELF" + b"\0" * 3)
    junk = link_report(["ld.bfd", "main.o", "junk.o"], cwd=str(tmp_path))
    assert any(e.kind == "corrupt-input" and "junk.o" in e.message for e in junk.errors)


@needs_gcc
def test_script_with_syntax_error(tmp_path: Path) -> None:
    order_case(tmp_path)
    (tmp_path / "libbroken.so").write_text("/* GNU ld script */\nGROUP ( libbase.a\n")
    report = link_report(["ld.bfd", "main.o", "libtop.a", "-L.", "-lbroken"], cwd=str(tmp_path))
    (err,) = [e for e in report.errors if e.shown]
    assert err.kind == "not-recognized" and "libbroken.so" in err.message
    assert "never closed" in err.message


@needs_gcc
def test_script_inputs_and_as_needed(tmp_path: Path) -> None:
    order_case(tmp_path)
    (tmp_path / "libboth.so").write_text("/* GNU ld script */\nGROUP ( libtop.a libbase.a )\n")
    report = link_report(["ld.bfd", "-e", "main", "main.o", "-L.", "-lboth"], cwd=str(tmp_path))
    assert report.links, report.errors
    specs = [i.spec for i in report.inputs]
    assert "libtop.a (from ./libboth.so)" in specs and "libbase.a (from ./libboth.so)" in specs


def test_unsupported_option_for_linker(tmp_path: Path) -> None:
    (tmp_path / "a.o").write_bytes(b"")
    report = link_report(["ld.lld", "--copy-dt-needed-entries", "a.o"], cwd=str(tmp_path))
    shown = [e for e in report.errors if e.shown]
    assert [e.kind for e in shown] == ["unknown-option"]
    assert "unknown argument '--copy-dt-needed-entries'" in shown[0].message


@needs_gcc
def test_explicit_missing_shlib_dependency_bfd(tmp_path: Path) -> None:
    """A library's DT_NEEDED not found: bfd warns and reports its unresolved references."""
    (tmp_path / "bar.c").write_text("int bar(void) { return 1; }\n")
    (tmp_path / "foo.c").write_text("extern int bar(void); int foo(void) { return bar(); }\n")
    (tmp_path / "main.c").write_text("extern int foo(void); int main(void) { return foo(); }\n")
    sh(["gcc", "-shared", "-fPIC", "-o", "libbar.so", "bar.c", "-Wl,-soname,libbar.so"], tmp_path)
    sh(["gcc", "-shared", "-fPIC", "-o", "libfoo.so", "foo.c", "-L.", "-lbar", "-Wl,-soname,libfoo.so"], tmp_path)
    sh(["gcc", "-c", "main.c"], tmp_path)
    report = build_report(resolve_link_line(["gcc", "main.o", "-L.", "-lfoo"], cwd=str(tmp_path)), fix=True)
    assert any("libbar.so, needed by ./libfoo.so, not found" in w for w in report.warnings)
    (err,) = report.errors
    assert err.kind == "shlib-undefined" and err.symbol == "bar"
    assert any(f.fixes_alone for f in report.fixes)


@needs_gcc
def test_l_colon_fix_for_unversioned_name(tmp_path: Path) -> None:
    (tmp_path / "q.c").write_text("int q(void) { return 1; }\n")
    (tmp_path / "m.c").write_text("extern int q(void); int main(void) { return q(); }\n")
    sh(["gcc", "-shared", "-fPIC", "-o", "libqq.so.1", "q.c", "-Wl,-soname,libqq.so.1"], tmp_path)
    sh(["gcc", "-c", "m.c"], tmp_path)
    report = link_report(["gcc", "m.o", "-L.", "-lqq"], cwd=str(tmp_path), fix=True)
    fix = next(f for f in report.fixes if f.fixes_alone)
    assert fix.description.startswith("use -l:libqq.so.1 instead of -lqq")
    assert "-l:libqq.so.1" in fix.argv and "-lqq" not in fix.argv


@needs_gcc
@pytest.mark.parametrize("linker", ["bfd", "gold", "lld", "mold"])
def test_undefined_option_extracts(tmp_path: Path, linker: str) -> None:
    from tests.link_oracle import PROGRAMS, parse, predicted_facts, run_real

    if shutil.which(PROGRAMS[linker]) is None:
        pytest.skip(f"{linker} missing")
    order_case(tmp_path)
    (tmp_path / "m0.c").write_text("int main(void) { return 0; }\n")
    sh(["gcc", "-c", "-fPIC", "m0.c"], tmp_path)
    argv = [PROGRAMS[linker], "-o", "out", "-e", "main", "m0.o", "-u", "top", "libtop.a"]
    rc, err = run_real(argv, str(tmp_path))
    report = link_report(argv, cwd=str(tmp_path))
    assert report.links == (rc == 0)
    shown = [(e.kind, e.symbol or "", e.referenced_by or "") for e in report.errors if e.shown]
    assert set(shown) == parse(linker, err).facts == {("undefined-reference", "base", "libtop.a(top.o)")}
    assert predicted_facts([(k, s, r, "") for k, s, r in shown]) == parse(linker, err).facts
