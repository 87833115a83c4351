"""One machines table answers every machine question: the loader's default directories, the
linker's emulations and built-in directories, the driver fallback, near-miss searches; and
a simulation reads the environment it is given, never the process's."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from ldscope.analysis import LoadOptions, simulate_load
from ldscope.elf import constants as C
from ldscope.explain import NearMissFinder
from ldscope.linker.frontend import parse_linker_argv
from ldscope.linker.inputs import resolve_inputs
from ldscope.loader import HostKind, ImageCache, make_environment
from ldscope.system import (
    MACHINES,
    by_emulation,
    default_search_dirs,
    gold_search_dirs,
    known_machine,
    machine,
)
from tests.conftest import run

HAVE_CROSS_TOOLS = shutil.which("llvm-mc") is not None and shutil.which("ld.lld") is not None


def test_every_machine_is_named_as_the_elf_reader_names_its_files() -> None:
    for m in MACHINES:
        name = m.elf_machine_name
        assert name == C.machine_name(m.e_machine, m.elf_class, m.little_endian is not False)
        assert known_machine(m.name, m.elf_class) is m
        assert m.multiarch_dirs == (f"/lib/{m.triplet}", f"/usr/lib/{m.triplet}")
        if m.bfd_emulation:
            assert by_emulation(m.bfd_emulation) is m


def test_the_answers_come_from_the_table() -> None:
    assert machine("arm64").triplet == "aarch64-linux-gnu"
    assert machine("x86_64", 1).name == "x32" and machine("x86_64", 1).bfd_emulation == "elf32_x86_64"
    assert default_search_dirs("s390x", 2) == ("/lib/s390x-linux-gnu", "/usr/lib/s390x-linux-gnu", "/lib", "/usr/lib")
    assert gold_search_dirs("aarch64linux")[:2] == ("/lib/aarch64-linux-gnu", "/usr/lib/aarch64-linux-gnu")
    assert gold_search_dirs(None)[0] == "/lib/x86_64-linux-gnu"
    assert by_emulation("no-such-emulation") is None
    with pytest.raises(ValueError):
        machine("pdp11")


def test_the_linker_learns_the_target_from_the_emulation(tmp_path: Path) -> None:
    """`-m aarch64linux`: an x86_64 object on the line is of the wrong machine."""
    (tmp_path / "a.c").write_text("int a(void) { return 1; }\n")
    run(["gcc", "-c", "a.c"], cwd=tmp_path)
    parsed = parse_linker_argv(["ld", "-m", "aarch64linux", "a.o"])
    resolved = resolve_inputs(parsed.items, parsed.options, str(tmp_path), (), "test")
    assert resolved.target == ("aarch64", 2)
    (inp,) = resolved.inputs
    assert inp.problem == "incompatible-input" and "built for x86_64 64-bit" in (inp.detail or "")


def _aarch64(d: Path, name: str, asm: str, soname: str | None = None) -> Path:
    (d / f"{name}.s").write_text(asm)
    run(["llvm-mc", "-triple=aarch64-linux-gnu", "-filetype=obj", f"{name}.s", "-o", f"{name}.o"], cwd=d)
    out = d / name
    run(["ld.lld", "-shared", *(["-soname", soname] if soname else []), f"{name}.o", "-o", str(out)], cwd=d)
    return out


@pytest.mark.skipif(not HAVE_CROSS_TOOLS, reason="llvm-mc and ld.lld build the aarch64 files")
def test_near_misses_look_where_the_targets_machine_keeps_libraries(tmp_path: Path) -> None:
    """An aarch64 root: other Pythons' libpython is looked for in /usr/lib/aarch64-linux-gnu
    (the machine's multiarch directory inside the root), not in x86_64's."""
    root = tmp_path / "root"
    libdir = root / "usr" / "lib" / "aarch64-linux-gnu"
    libdir.mkdir(parents=True)
    (root / "opt").mkdir()
    lib = _aarch64(tmp_path, "libpython3.99.so.1.0", ".text\n.globl PyFoo_Bar\n.type PyFoo_Bar,%function\nPyFoo_Bar:\n  ret\n",
                   "libpython3.99.so.1.0")
    shutil.copy(lib, libdir / lib.name)
    ext = _aarch64(tmp_path, "ext.cpython-399-aarch64-linux-gnu.so",
                   ".text\n.globl PyInit_ext\n.type PyInit_ext,%function\nPyInit_ext:\n  b PyFoo_Bar\n")
    shutil.copy(ext, root / "opt" / ext.name)
    env = make_environment(clear=True, root=str(root))
    images = ImageCache()
    report = simulate_load(f"/opt/{ext.name}", LoadOptions(root=str(root), host=HostKind.DLOPEN, near_misses=False),
                           images, env)
    finder = NearMissFinder(report, images, env)
    m = finder.machine()
    assert m is not None and m.name == "aarch64"
    assert "/usr/lib/aarch64-linux-gnu/libpython3.99.so.1.0" in finder._python_libraries()
    # The hwcaps subdirectories of the search path are not mistaken for library directories.
    assert all(not d.endswith(("/tls", "/aarch64")) for d in finder.search_dirs())


def test_a_simulation_reads_the_environment_it_is_given(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The process environment finds the library; the environment given does not: the
    simulation follows the one given (and with none given, the process's)."""
    (tmp_path / "lib").mkdir()
    (tmp_path / "x.c").write_text("int x(void) { return 1; }\n")
    (tmp_path / "main.c").write_text("int x(void); int main(void) { return x(); }\n")
    run(["gcc", "-shared", "-fPIC", "-o", "lib/libx.so", "x.c"], cwd=tmp_path)
    run(["gcc", "-o", "main", "main.c", "-Llib", "-lx"], cwd=tmp_path)
    monkeypatch.setenv("LD_LIBRARY_PATH", str(tmp_path / "lib"))
    exe = str(tmp_path / "main")
    assert simulate_load(exe).loads  # the process environment, captured
    given = make_environment(base={"PATH": os.defpath})
    report = simulate_load(exe, env=given)
    assert not report.loads
    assert [p.library for p in report.problems if p.kind == "missing-library"] == ["libx.so"]
    assert simulate_load(exe, LoadOptions(clear_env=True)).loads is False


def test_the_real_loader_agrees_on_the_environment_test(tmp_path: Path) -> None:
    """The same program under the real ld.so, in both environments (the oracle for the test above)."""
    (tmp_path / "lib").mkdir()
    (tmp_path / "x.c").write_text("int x(void) { return 0; }\n")
    (tmp_path / "main.c").write_text("int x(void); int main(void) { return x(); }\n")
    run(["gcc", "-shared", "-fPIC", "-o", "lib/libx.so", "x.c"], cwd=tmp_path)
    run(["gcc", "-o", "main", "main.c", "-Llib", "-lx"], cwd=tmp_path)
    found = subprocess.run([str(tmp_path / "main")], env={"LD_LIBRARY_PATH": str(tmp_path / "lib")})
    missing = subprocess.run([str(tmp_path / "main")], env={}, capture_output=True, text=True)
    assert found.returncode == 0
    assert missing.returncode == 127 and "libx.so" in missing.stderr
