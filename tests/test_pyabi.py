"""system._pyabi: a target interpreter's extension suffixes, import names and wheel tags, read from
its files; checked against this machine's own interpreters (run here, as oracles only),
importlib's FileFinder and packaging's sys_tags()."""

from __future__ import annotations

import glob
import importlib.machinery
import json
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from dataclasses import replace
from pathlib import Path

import packaging.tags
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ldscope.elf import is_elf
from ldscope.system import (
    InterpreterABI,
    extension_tag_of,
    interpreter_abi,
    module_name_for,
    wheel_tag_problems,
)
from ldscope.system._pyabi import DERIVED

_ORACLE = (
    "import importlib.machinery as m, json, os, sys, sysconfig;"
    "print(json.dumps({'suffixes': m.EXTENSION_SUFFIXES, 'version': list(sys.version_info[:2]),"
    "'soabi': sysconfig.get_config_var('SOABI'), 'ft': bool(sysconfig.get_config_var('Py_GIL_DISABLED')),"
    "'glibc': os.confstr('CS_GNU_LIBC_VERSION')}))"
)
MULTIARCH = sysconfig.get_config_var("MULTIARCH") or "x86_64-linux-gnu"
HOST_GLIBC = os.confstr("CS_GNU_LIBC_VERSION") or ""
ON_GLIBC = HOST_GLIBC.startswith("glibc ")


def _is_elf(path: str) -> bool:
    try:
        with open(os.path.realpath(path), "rb") as fh:
            return is_elf(fh.read(4))
    except OSError:
        return False


def _interpreters() -> list[str]:
    """This machine's Python 3 interpreters: the system's, the one running, pyenv's and uv's."""
    found = ["/usr/bin/python3", os.path.realpath("/usr/bin/python3"), sys.executable,
             os.path.realpath(sys.executable), getattr(sys, "_base_executable", sys.executable)]
    found += sorted(glob.glob("/usr/bin/python3.[0-9]*"))
    for pattern in ("~/.pyenv/versions/*/bin/python3", "~/.local/share/uv/python/*/bin/python3"):
        found += sorted(glob.glob(os.path.expanduser(pattern)))
    return [p for p in dict.fromkeys(found) if os.path.basename(p) != "python3-config" and _is_elf(p)]


def _oracle(interpreter: str) -> dict[str, object] | None:
    """What the interpreter itself says (None for one that is not Python 3.6+ or does not run)."""
    proc = subprocess.run([interpreter, "-S", "-c", _ORACLE], capture_output=True, text=True, timeout=60)
    if proc.returncode != 0:
        return None
    data: dict[str, object] = json.loads(proc.stdout)
    return data


def _glibc(text: object) -> tuple[int, int] | None:
    if not isinstance(text, str) or not text.startswith("glibc "):
        return None
    major, minor = text.split()[1].split(".")[:2]
    return int(major), int(minor)


def _check_against_oracle(interpreter: str) -> InterpreterABI:
    expected = _oracle(interpreter)
    if expected is None:
        pytest.skip(f"{interpreter} is not a runnable Python 3")
    abi = interpreter_abi(interpreter)
    assert abi is not None, interpreter
    assert abi.extension_suffixes == tuple(expected["suffixes"]), interpreter  # type: ignore[arg-type]
    assert abi.version == tuple(expected["version"]), interpreter  # type: ignore[arg-type]
    assert abi.soabi == expected["soabi"], interpreter
    assert abi.free_threaded == expected["ft"], interpreter
    assert abi.glibc == _glibc(expected["glibc"]), interpreter
    assert abi.source != DERIVED and os.path.isfile(abi.source)
    return abi


@pytest.mark.parametrize("interpreter", _interpreters())
def test_suffixes_and_glibc_match_what_each_interpreter_here_reports(interpreter: str) -> None:
    """EXTENSION_SUFFIXES, version, SOABI, free-threading and glibc, read vs. asked."""
    _check_against_oracle(interpreter)


def test_the_system_interpreter_and_the_host_glibc() -> None:
    if not _is_elf("/usr/bin/python3"):
        pytest.skip("no /usr/bin/python3")
    abi = _check_against_oracle(os.path.realpath("/usr/bin/python3"))
    if ON_GLIBC:
        assert abi.glibc == _glibc(HOST_GLIBC)
    assert abi.machine == packaging.tags._normalize_string(sysconfig.get_platform()).split("_", 1)[1]


@pytest.mark.parametrize("copies", [False, True], ids=["symlinks", "copies"])
def test_a_venv_reads_its_base_installation(tmp_path: Path, copies: bool) -> None:
    """A venv's lib/ has no sysconfigdata: pyvenv.cfg's home leads to the base installation."""
    venv = tmp_path / "venv"
    cmd = [sys.executable, "-m", "venv", "--without-pip", str(venv)] + (["--copies"] if copies else [])
    subprocess.run(cmd, check=True, capture_output=True, timeout=120)
    abi = _check_against_oracle(str(venv / "bin" / "python"))
    base = os.path.realpath(getattr(sys, "_base_executable", sys.executable))
    assert abi == interpreter_abi(base)


def test_the_running_interpreter_agrees_with_importlib() -> None:
    abi = interpreter_abi(sys.executable)
    assert abi is not None
    assert abi.extension_suffixes == tuple(importlib.machinery.EXTENSION_SUFFIXES)
    assert abi.soabi == sysconfig.get_config_var("SOABI")
    assert abi.version == sys.version_info[:2]


def test_nothing_is_run(monkeypatch: pytest.MonkeyPatch) -> None:
    """Reading only: no subprocess, exec or spawn while the ABI is worked out."""
    def refuse(*_args: object, **_kwargs: object) -> None:
        raise AssertionError("interpreter_abi ran something")

    monkeypatch.setattr(subprocess.Popen, "__init__", refuse)
    for name in ("execv", "execve", "posix_spawn", "posix_spawnp", "system", "fork"):
        if hasattr(os, name):
            monkeypatch.setattr(os, name, refuse)
    assert interpreter_abi(sys.executable) is not None


# ------------------------------------------------------------------ no sysconfigdata, synthetic files
def _copy_interpreter(bin_dir: Path, name: str) -> Path:
    bin_dir.mkdir(parents=True, exist_ok=True)
    target = bin_dir / name
    shutil.copy(os.path.realpath(sys.executable), target)
    return target


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("python3.12", (f".cpython-312-{MULTIARCH}.so", ".abi3.so", ".so")),
        ("python3.7", (f".cpython-37m-{MULTIARCH}.so", ".abi3.so", ".so")),
        # 3.13t/3.14t still list .abi3.so (measured on 3.14.3t; cpython#120901 open).
        ("python3.13t", (f".cpython-313t-{MULTIARCH}.so", ".abi3.so", ".so")),
        # 3.15 (PEP 803, gh-122931), as measured on 3.15.0rc2 and its free-threaded build.
        ("python3.15", (f".cpython-315-{MULTIARCH}.so", f".abi3-{MULTIARCH}.so", ".abi3.so",
                        f".abi3t-{MULTIARCH}.so", ".abi3t.so", ".so")),
        ("python3.15t", (f".cpython-315t-{MULTIARCH}.so", f".abi3t-{MULTIARCH}.so", ".abi3t.so", ".so")),
    ],
)
def test_without_sysconfigdata_the_suffixes_are_derived(tmp_path: Path, name: str, expected: tuple[str, ...]) -> None:
    if not _is_elf(sys.executable):
        pytest.skip("the running interpreter is not an ELF file")
    exe = _copy_interpreter(tmp_path / "bin", name)
    abi = interpreter_abi(str(exe))
    assert abi is not None
    assert abi.source == DERIVED
    assert abi.extension_suffixes == expected
    assert abi.free_threaded == name.endswith("t")
    assert abi.version == (3, int(name.split(".")[1].rstrip("t")))


def test_without_any_version_or_elf_there_is_no_answer(tmp_path: Path) -> None:
    script = tmp_path / "bin" / "python3"
    script.parent.mkdir()
    script.write_text("#!/bin/sh\nexec /usr/bin/python3 \"$@\"\n")
    assert interpreter_abi(str(script)) is None
    assert interpreter_abi(str(tmp_path / "bin" / "python3.11")) is None  # missing file: no machine


def _sysconfigdata(libdir: Path, name: str, **values: object) -> Path:
    libdir.mkdir(parents=True, exist_ok=True)
    path = libdir / name
    marker = libdir / "EXECUTED"
    body = ",\n ".join(f"{k!r}: {v!r}" for k, v in values.items())
    # Were the file executed, the marker would appear: it must be read as text only.
    path.write_text(f"open({str(marker)!r}, 'w').close()\nbuild_time_vars = {{{body}}}\n")
    return path


def test_sysconfigdata_is_read_as_text_and_decides(tmp_path: Path) -> None:
    """A free-threaded debug 3.13 build: SOABI, EXT_SUFFIX, ALT_SOABI from the file; never run."""
    prefix = tmp_path / "prefix"
    exe = _copy_interpreter(prefix / "bin", "python3.13td")
    data = _sysconfigdata(prefix / "lib" / "python3.13t", f"_sysconfigdata_td_linux_{MULTIARCH}.py",
                          SOABI=f"cpython-313td-{MULTIARCH}", EXT_SUFFIX=f".cpython-313td-{MULTIARCH}.so",
                          ALT_SOABI=f"cpython-313t-{MULTIARCH}", ABIFLAGS="td", Py_GIL_DISABLED=1,
                          MULTIARCH=MULTIARCH, VERSION="3.13")
    # A release build's file in the same dir (as Debian's -dbg packages share one) is not chosen.
    _sysconfigdata(prefix / "lib" / "python3.13t", f"_sysconfigdata_t_linux_{MULTIARCH}.py",
                   SOABI="wrong", EXT_SUFFIX=".wrong.so", VERSION="3.13")
    abi = interpreter_abi(str(exe))
    assert abi is not None
    assert abi.source == str(data)
    assert abi.extension_suffixes == (f".cpython-313td-{MULTIARCH}.so", f".cpython-313t-{MULTIARCH}.so",
                                      ".abi3.so", ".so")
    assert abi.free_threaded and abi.version == (3, 13)
    assert not (prefix / "lib" / "python3.13t" / "EXECUTED").exists()


def test_pypy_lists_only_its_own_suffix(tmp_path: Path) -> None:
    prefix = tmp_path / "pypy"
    exe = _copy_interpreter(prefix / "bin", "pypy3.10")
    _sysconfigdata(prefix / "lib" / "pypy3.10", "_sysconfigdata.py", SOABI="pypy310-pp73",
                   EXT_SUFFIX=f".pypy310-pp73-{MULTIARCH}.so", VERSION="3.10")
    abi = interpreter_abi(str(exe))
    assert abi is not None and abi.implementation == "pypy"
    assert abi.extension_suffixes == (f".pypy310-pp73-{MULTIARCH}.so",)
    if abi.glibc is not None:
        wheel = f"x-1-pp310-pypy310_pp73-manylinux_2_17_{abi.machine}.whl"
        assert wheel_tag_problems(wheel, abi) == []
    [cp] = wheel_tag_problems(f"x-1-cp310-cp310-linux_{abi.machine}.whl", abi)
    assert "PyPy 3.10" in cp


def test_a_root_is_read_inside_it(tmp_path: Path) -> None:
    """A venv in a root: pyvenv.cfg's absolute home and the libc are looked up inside the root."""
    root = tmp_path / "root"
    _copy_interpreter(root / "usr" / "bin", "python3.12")
    data = _sysconfigdata(root / "usr" / "lib" / "python3.12", f"_sysconfigdata__linux_{MULTIARCH}.py",
                          SOABI=f"cpython-312-{MULTIARCH}", EXT_SUFFIX=f".cpython-312-{MULTIARCH}.so",
                          MULTIARCH=MULTIARCH, VERSION="3.12")
    venv = root / "opt" / "venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "bin" / "python").symlink_to("/usr/bin/python3.12")  # absolute: inside the root
    (venv / "pyvenv.cfg").write_text("home = /usr/bin\nversion = 3.12.4\n")
    abi = interpreter_abi(str(venv / "bin" / "python"), root=str(root))
    assert abi is not None
    assert abi.source == str(data)
    assert abi.extension_suffixes == (f".cpython-312-{MULTIARCH}.so", ".abi3.so", ".so")
    assert abi.glibc is None  # the root has no libc.so.6
    # The same interpreter named as seen from inside the root.
    assert interpreter_abi("/opt/venv/bin/python", root=str(root)) == abi
    host_libc = interpreter_abi(sys.executable)
    libc = "/lib/" + MULTIARCH + "/libc.so.6"
    if host_libc is None or host_libc.glibc is None or not os.path.exists(libc):
        pytest.skip("no host glibc to copy into the root")
    (root / "lib" / MULTIARCH).mkdir(parents=True)
    shutil.copy(os.path.realpath(libc), root / "lib" / MULTIARCH / "libc.so.6")
    assert interpreter_abi(str(venv / "bin" / "python"), root=str(root)) == replace(abi, glibc=host_libc.glibc)


# ------------------------------------------------------------------ module names, FileFinder as oracle
PY311 = InterpreterABI((3, 11), "cpython", "cpython-311-x86_64-linux-gnu",
                       (".cpython-311-x86_64-linux-gnu.so", ".abi3.so", ".so"), False, "x86_64", (2, 36),
                       "test")


def test_module_names_under_3_11() -> None:
    assert module_name_for("PIL/_imaging.cpython-312-x86_64-linux-gnu.so", PY311) is None
    assert module_name_for("_imaging.cpython-311-x86_64-linux-gnu.so", PY311) == "_imaging"
    assert module_name_for("_cffi_backend.abi3.so", PY311) == "_cffi_backend"
    assert module_name_for("foo.so", PY311) == "foo"
    assert module_name_for("foo.pyd", PY311) is None
    assert module_name_for(".so", PY311) is None
    assert module_name_for("libfoo.so.1", PY311) is None


def _filefinder_names(filename: str) -> set[str]:
    """The module names the running interpreter's FileFinder finds this file under."""
    loader = (importlib.machinery.ExtensionFileLoader, importlib.machinery.EXTENSION_SUFFIXES)
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, filename)
        Path(path).touch()
        finder = importlib.machinery.FileFinder(d, loader)
        found = set()
        # Every name FileFinder could find it under is the file name minus some suffix.
        for suffix in importlib.machinery.EXTENSION_SUFFIXES:
            if filename.endswith(suffix):
                name = filename[: -len(suffix)]
                spec = finder.find_spec(name) if name else None  # "" is no module name
                if spec is not None and spec.origin == path and spec.name == name:
                    found.add(name)
        return found


_FRAGMENTS = [*importlib.machinery.EXTENSION_SUFFIXES, ".so", ".abi3.so", ".abi3", ".cpython-312-x86_64-linux-gnu.so",
              f".cpython-{sys.version_info[0]}{sys.version_info[1]}", f"-{MULTIARCH}", ".", "so", ".pyd", "x", "-",
              ".cpython-311d-x86_64-linux-gnu.so", ".abi3t.so"]


_ENDINGS = [*importlib.machinery.EXTENSION_SUFFIXES, ".so", "", ".abi3t.so", ".cpython-312-x86_64-linux-gnu.so"]


@settings(max_examples=400, deadline=None)
@given(st.text("abcXYZ_019-", max_size=6), st.lists(st.sampled_from(_FRAGMENTS), max_size=2),
       st.sampled_from(_ENDINGS))
def test_module_name_for_agrees_with_filefinder(stem: str, fragments: list[str], ending: str) -> None:
    """Module-ish names with suffix fragments: ours and FileFinder's verdict agree on each."""
    filename = stem + "".join(fragments) + ending
    if filename in ("", ".", "..") or len(filename) > 200:
        return
    abi = interpreter_abi(sys.executable)
    assert abi is not None
    names = _filefinder_names(filename)
    assert len(names) <= 1
    assert module_name_for(filename, abi) == (names.pop() if names else None), filename


def test_extension_tags() -> None:
    assert extension_tag_of("PIL/_imaging.cpython-312-x86_64-linux-gnu.so") == "cpython-312-x86_64-linux-gnu"
    assert extension_tag_of("_cffi_backend.abi3.so") == "abi3"
    assert extension_tag_of("x.abi3t-aarch64-linux-gnu.so") == "abi3t-aarch64-linux-gnu"
    assert extension_tag_of("x.pypy310-pp73-x86_64-linux-gnu.so") == "pypy310-pp73-x86_64-linux-gnu"
    assert extension_tag_of("_x.cpython-37m-x86_64-linux-gnu.so") == "cpython-37m-x86_64-linux-gnu"
    assert extension_tag_of("foo.so") is None
    assert extension_tag_of("libfoo.so.1") is None
    assert extension_tag_of("foo.bar.so") is None
    assert extension_tag_of(".abi3.so") is None


# ------------------------------------------------------------------ wheel tags
def test_a_wheel_for_another_python_version() -> None:
    [problem] = wheel_tag_problems("pillow-11.0.0-cp312-cp312-manylinux_2_28_x86_64.whl", PY311)
    assert "cp312" in problem and "3.12" in problem and "3.11" in problem
    assert problem.startswith("pillow-11.0.0-cp312-cp312-manylinux_2_28_x86_64.whl ")
    assert "glibc" not in problem  # the platform fits: only the mismatching part is named


def test_a_wheel_for_a_newer_glibc() -> None:
    [problem] = wheel_tag_problems("numpy-2.3.0-cp311-cp311-manylinux_2_39_x86_64.whl", PY311)
    assert "2.39" in problem and "2.36" in problem and "manylinux_2_39" in problem
    assert wheel_tag_problems("numpy-2.3.0-cp311-cp311-manylinux_2_36_x86_64.whl", PY311) == []


def test_wheels_the_interpreter_accepts() -> None:
    assert wheel_tag_problems("cryptography-44.0.0-cp38-abi3-manylinux_2_28_x86_64.whl", PY311) == []
    assert wheel_tag_problems("six-1.16.0-py2.py3-none-any.whl", PY311) == []
    assert wheel_tag_problems("click-8.1.7-py3-none-any.whl", PY311) == []
    assert wheel_tag_problems("x-1-cp311-cp311-manylinux1_x86_64.whl", PY311) == []
    assert wheel_tag_problems("x-1-cp311-cp311-manylinux2014_x86_64.manylinux_2_17_x86_64.whl", PY311) == []
    assert wheel_tag_problems("x-1-cp311-cp311-linux_x86_64.whl", PY311) == []


def test_a_wheel_for_another_machine() -> None:
    [problem] = wheel_tag_problems("x-1-cp311-cp311-manylinux_2_17_aarch64.manylinux2014_aarch64.whl", PY311)
    assert "aarch64" in problem and "x86_64" in problem and "glibc" not in problem


def test_other_mismatches_are_named() -> None:
    [abi3] = wheel_tag_problems("x-1-cp312-abi3-manylinux_2_17_x86_64.whl", PY311)
    assert "3.12 or newer" in abi3
    [musl] = wheel_tag_problems("x-1-cp311-cp311-musllinux_1_2_x86_64.whl", PY311)
    assert "musl" in musl and "2.36" in musl
    assert len(wheel_tag_problems("x-1-cp39-cp39-macosx_11_0_arm64.whl", PY311)) == 2  # version and OS
    [bad] = wheel_tag_problems("not-a-wheel.whl", PY311)
    assert "not a valid wheel file name" in bad
    no_glibc = replace(PY311, glibc=None)
    [problem] = wheel_tag_problems("x-1-cp311-cp311-manylinux_2_17_x86_64.whl", no_glibc)
    assert "no glibc" in problem
    assert wheel_tag_problems("x-1-cp311-cp311-linux_x86_64.whl", no_glibc) == []


def test_free_threaded_wheels() -> None:
    ft = InterpreterABI((3, 13), "cpython", "cpython-313t-x86_64-linux-gnu",
                        (".cpython-313t-x86_64-linux-gnu.so", ".abi3.so", ".so"), True, "x86_64", (2, 36), "test")
    assert wheel_tag_problems("x-1-cp313-cp313t-manylinux_2_17_x86_64.whl", ft) == []
    [gil] = wheel_tag_problems("x-1-cp313-cp313-manylinux_2_17_x86_64.whl", ft)
    assert "with the GIL" in gil and "cp313t" in gil
    [abi3] = wheel_tag_problems("x-1-cp38-abi3-manylinux_2_17_x86_64.whl", ft)
    assert "abi3" in abi3 and "free-threaded" in abi3
    py313 = replace(ft, free_threaded=False, soabi="cpython-313-x86_64-linux-gnu")
    [t] = wheel_tag_problems("x-1-cp313-cp313t-manylinux_2_17_x86_64.whl", py313)
    assert "free-threaded" in t and "with the GIL" in t


def _running() -> InterpreterABI:
    abi = interpreter_abi(sys.executable)
    if abi is None or not ON_GLIBC:
        pytest.skip("the running interpreter's ABI cannot be read here (or the host is not glibc)")
    return abi


def test_the_running_interpreter_accepts_what_sys_tags_accepts() -> None:
    """packaging's own tags for the running interpreter are the oracle: same platforms, and over a
    universe of tags mixed from them (plus some it lacks), the same verdict on each."""
    abi = _running()
    expected = {t for t in packaging.tags.sys_tags() if not t.platform.startswith("musllinux")}
    for tag in expected:
        assert wheel_tag_problems(f"x-1-{tag}.whl", abi) == [], tag
    interpreters = {t.interpreter for t in expected} | {"cp312", "cp310", "pp311", "py2"}
    abis = {t.abi for t in expected} | {"cp312", "cp311t", "abi3t"}
    newer = f"manylinux_2_{abi.glibc[1] + 1}_{abi.machine}" if abi.glibc else "manylinux_2_99_x86_64"
    platforms = {t.platform for t in expected} | {newer, "manylinux_2_17_aarch64", "linux_i686", "win_amd64"}
    checked = 0
    for interp in sorted(interpreters):
        for a in sorted(abis):
            for p in [*sorted(platforms)[::3], "any"]:
                tag = packaging.tags.Tag(interp, a, p)
                assert (wheel_tag_problems(f"x-1-{tag}.whl", abi) == []) == (tag in expected), tag
                checked += 1
    assert checked > 1000


def test_platform_sets_match_sys_tags() -> None:
    abi = _running()
    from ldscope.system._pyabi import _platforms

    expected = {t.platform for t in packaging.tags.sys_tags()
                if t.platform != "any" and not t.platform.startswith("musllinux")}
    assert set(_platforms(abi)) == expected
