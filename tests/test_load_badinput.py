"""Bad input on the loader's path: each gives a clear problem entry, and the simulation goes on."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from ldscope.analysis._load import LoadOptions, simulate_load
from ldscope.errors import InputFormatError
from ldscope.loader._environment import make_environment
from ldscope.loader._simulate import LoaderModel
from tests.conftest import run


@pytest.fixture()
def prog(tmp_path: Path) -> Path:
    """A program needing libok.so.1 and libbad.so.1, both looked for in lib/ (RUNPATH)."""
    (tmp_path / "lib").mkdir()
    (tmp_path / "ok.c").write_text("int ok(void) { return 0; }\n")
    (tmp_path / "bad.c").write_text("int bad(void) { return 0; }\n")
    run(["gcc", "-shared", "-fPIC", "-o", "lib/libok.so.1", "ok.c", "-Wl,-soname,libok.so.1"], cwd=tmp_path)
    run(["gcc", "-shared", "-fPIC", "-o", "build-libbad.so.1", "bad.c", "-Wl,-soname,libbad.so.1"], cwd=tmp_path)
    (tmp_path / "main.c").write_text("int ok(void); int bad(void);\nint main(void) { return ok() + bad(); }\n")
    run(["gcc", "-o", "main", "main.c", "lib/libok.so.1", "build-libbad.so.1", f"-Wl,-rpath,{tmp_path}/lib"],
        cwd=tmp_path)
    return tmp_path


def test_missing_library(prog: Path) -> None:
    report = simulate_load(str(prog / "main"), LoadOptions(clear_env=True))
    assert not report.loads
    kinds = {p.kind: p for p in report.problems}
    assert kinds["missing-library"].library == "libbad.so.1"
    ok = next(lib for lib in report.libraries if lib.name == "libok.so.1")
    assert ok.path == f"{prog}/lib/libok.so.1"  # the rest was still resolved


def test_broken_symlink_on_the_path_is_not_found(prog: Path) -> None:
    os.symlink(prog / "nowhere.so", prog / "lib" / "libbad.so.1")
    report = simulate_load(str(prog / "main"), LoadOptions(clear_env=True))
    lib = next(x for x in report.libraries if x.name == "libbad.so.1")
    assert lib.path is None
    assert any(t.path == f"{prog}/lib/libbad.so.1" and t.outcome == "not found" for t in lib.tried)


def test_symlink_loop_on_the_path_is_not_found(prog: Path) -> None:
    os.symlink(prog / "lib" / "loop2", prog / "lib" / "libbad.so.1")
    os.symlink(prog / "lib" / "libbad.so.1", prog / "lib" / "loop2")
    report = simulate_load(str(prog / "main"), LoadOptions(clear_env=True))
    lib = next(x for x in report.libraries if x.name == "libbad.so.1")
    assert lib.path is None and any(p.kind == "missing-library" for p in report.problems)


def test_non_elf_file_named_like_the_library_stops_the_search(prog: Path) -> None:
    # Longer than an ELF header: ld.so says "invalid ELF header" (a shorter one: "file too
    # short"; both checked against the real loader by hand, see docs/loader-facts.md).
    (prog / "lib" / "libbad.so.1").write_text("/* GNU ld script */\nGROUP ( /usr/lib/libbad.so.2 AS_NEEDED ( /lib/x.so ) )\n")
    report = simulate_load(str(prog / "main"), LoadOptions(clear_env=True))
    problem = next(p for p in report.problems if p.library == "libbad.so.1")
    assert problem.kind == "unreadable-file"
    assert "invalid ELF header" in problem.message
    assert problem.tried[-1].path == f"{prog}/lib/libbad.so.1"


def test_empty_file_named_like_the_library(prog: Path) -> None:
    (prog / "lib" / "libbad.so.1").write_bytes(b"")
    report = simulate_load(str(prog / "main"), LoadOptions(clear_env=True))
    problem = next(p for p in report.problems if p.library == "libbad.so.1")
    assert "file too short" in problem.message


def test_fifo_on_the_path_is_not_opened(prog: Path) -> None:
    os.mkfifo(prog / "lib" / "libbad.so.1")
    report = simulate_load(str(prog / "main"), LoadOptions(clear_env=True))  # must not hang
    problem = next(p for p in report.problems if p.library == "libbad.so.1")
    assert problem.severity == "error"


def test_cyclic_needed_graph(tmp_path: Path) -> None:
    # liba needs libb, libb needs liba: ld.so loads each once.
    (tmp_path / "a.c").write_text("int b(void); int a(void) { return 1; } int use_b(void) { return b(); }\n")
    (tmp_path / "b.c").write_text("int a(void); int b(void) { return 2; } int use_a(void) { return a(); }\n")
    run(["gcc", "-shared", "-fPIC", "-o", "libb.so", "b.c", "-Wl,-soname,libb.so",
         "-Wl,--unresolved-symbols=ignore-all"], cwd=tmp_path)
    run(["gcc", "-shared", "-fPIC", "-o", "liba.so", "a.c", "-Wl,-soname,liba.so", "-L.", "-lb",
         "-Wl,-rpath,$ORIGIN"], cwd=tmp_path)
    run(["gcc", "-shared", "-fPIC", "-o", "libb.so", "b.c", "-Wl,-soname,libb.so", "-L.", "-la",
         "-Wl,-rpath,$ORIGIN"], cwd=tmp_path)
    (tmp_path / "m.c").write_text("int use_a(void); int main(void) { return use_a(); }\n")
    run(["gcc", "-o", "m", "m.c", "-L.", "-lb", "-la", "-Wl,-rpath,$ORIGIN"], cwd=tmp_path)
    report = simulate_load(str(tmp_path / "m"))
    assert report.loads is True
    assert sorted(p for p in report.load_order if p.endswith(".so")) == [f"{tmp_path}/liba.so", f"{tmp_path}/libb.so"]


def test_malformed_cache_is_reported_and_ignored(tmp_path: Path) -> None:
    root = tmp_path / "root"
    (root / "etc").mkdir(parents=True)
    (root / "etc" / "ld.so.cache").write_bytes(b"glibc-ld.so.cache1.1" + b"\xff" * 40)
    env = make_environment(clear=True, root=str(root))
    assert env.ld_cache is None
    assert any("ld.so.cache" in p for p in env.problems)


def test_unreadable_target_is_an_input_error(tmp_path: Path) -> None:
    bad = tmp_path / "x.so"
    bad.write_bytes(b"\x7fELF\x02\x01\x01" + b"\0" * 9 + b"\xff" * 10)
    with pytest.raises(InputFormatError):
        simulate_load(str(bad))


def test_wrong_class_file_is_skipped_and_named(tmp_path: Path) -> None:
    armhf = "/usr/arm-linux-gnueabihf/lib/libc.so.6"
    if not os.path.exists(armhf):
        pytest.skip("libc6-armhf-cross not installed")
    (tmp_path / "lib").mkdir()
    os.symlink(armhf, tmp_path / "lib" / "libz.so.1")  # a 32-bit ARM file where a 64-bit one is wanted
    (tmp_path / "m.c").write_text("int main(void) { return 0; }\n")
    run(["gcc", "-o", "m", "m.c", "-Wl,--no-as-needed", "-lz", f"-Wl,-rpath,{tmp_path}/lib"], cwd=tmp_path)
    report = LoaderModel(make_environment(clear=True)).load_executable(str(tmp_path / "m"))
    lib = next(x for x in report.libraries if x.name == "libz.so.1")
    assert lib.path is not None and lib.path.startswith("/")  # found later, in the cache
    assert any(t.path == f"{tmp_path}/lib/libz.so.1" and t.outcome == "wrong ELF class" for t in lib.tried)
