"""No hang on a special file anywhere a path is taken (issue 13, item 4).

A FIFO without a writer blocks open() for ever, /dev/zero never ends, a socket cannot be
opened, /dev/null is empty: each, given as a target or an option, is one line on stderr
naming it, exit status 2. Met while walking a directory, an environment or a root it is
skipped (the scan's own rules) and the run goes on. Every command runs in its own process
with a timeout: a hang is a failure.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import socket
import subprocess
import sys
import sysconfig
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from ldscope.elf import (
    ElfFile,
    NotRegularFileError,
    check_regular,
    open_regular,
    read_regular,
    special_kind,
)

SRC = str(Path(__file__).resolve().parents[1] / "src")
TIMEOUT = 60  # seconds; a command that is still running then is hung
KINDS = ("fifo", "socket", "devnull", "devzero")
WORDS = {"fifo": "is a FIFO", "socket": "is a socket", "devnull": "is a character device",
         "devzero": "is a character device"}
EXE = os.path.realpath(sys.executable)  # an ELF executable that surely loads

needs_gcc = pytest.mark.skipif(shutil.which("gcc") is None, reason="needs gcc")


def make_special(kind: str, where: Path) -> Path:
    """A special file of `kind` at `where` (the devices as symlinks to /dev/null and /dev/zero)."""
    if kind == "fifo":
        os.mkfifo(where)
    elif kind == "socket":
        # Bound under a short name (AF_UNIX paths are limited to 107 bytes), then moved: the
        # node stays after the socket is closed.
        short = Path(tempfile.mkdtemp(prefix="s", dir="/tmp"))
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.bind(str(short / "s"))
        finally:
            sock.close()
        os.rename(short / "s", where)
        short.rmdir()
    else:
        os.symlink("/dev/null" if kind == "devnull" else "/dev/zero", where)
    return where


def ldscope(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """`python -m ldscope ARGS` in its own process; a hang fails the test (TimeoutExpired)."""
    env = {**os.environ, "PYTHONPATH": SRC}
    env.pop("LD_LIBRARY_PATH", None)
    proc = subprocess.run([sys.executable, "-m", "ldscope", *args], capture_output=True, text=True,
                          timeout=TIMEOUT, env=env, cwd=cwd, stdin=subprocess.DEVNULL)
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc


def assert_one_line_error(proc: subprocess.CompletedProcess[str], path: Path | str, kind: str) -> None:
    """Exit status 2 and exactly one line on stderr, naming the file and what it is."""
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith(f"ldscope: {path}") or f" {path} " in lines[0], lines[0]
    assert WORDS[kind] in lines[0] and "not a regular file" in lines[0], lines[0]


@pytest.fixture(params=KINDS)
def special(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[str, Path]:
    kind: str = request.param
    return kind, make_special(kind, tmp_path / f"special-{kind}")


def _extension_module() -> str:
    spec = importlib.util.find_spec("_ctypes")
    if spec is None or not spec.origin or not spec.origin.endswith(".so"):
        pytest.skip("no _ctypes extension module file")
    return spec.origin


# ------------------------------------------------------------------------- the opener


def test_opener_refuses_every_special_kind(special: tuple[str, Path]) -> None:
    kind, path = special
    with pytest.raises(NotRegularFileError) as caught:
        read_regular(path)
    assert WORDS[kind] in caught.value.reason and caught.value.filename == str(path)
    assert isinstance(caught.value, OSError)  # callers that handle unreadable files handle it


def test_opener_reads_regular_files_and_refuses_directories(tmp_path: Path) -> None:
    (tmp_path / "f").write_bytes(b"abc")
    assert read_regular(tmp_path / "f") == b"abc" and read_regular(tmp_path / "f", 2) == b"ab"
    with open_regular(tmp_path / "f") as fh:
        assert os.get_blocking(fh.fileno())  # O_NONBLOCK was only for the open
    with pytest.raises(IsADirectoryError):
        read_regular(tmp_path)
    assert check_regular(tmp_path / "f").st_size == 3
    assert special_kind(os.stat(tmp_path).st_mode) == "directory"
    assert special_kind(os.stat(tmp_path / "f").st_mode) is None


def test_fifo_swapped_in_after_the_stat_is_refused_without_blocking(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """The race: stat said regular, then the name became a FIFO. The open must not block (it
    is O_NONBLOCK) and the check on the descriptor refuses it."""
    regular = tmp_path / "regular"
    regular.write_bytes(b"x")
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    import ldscope.elf._regular as opener

    real_stat = os.stat
    monkeypatch.setattr(opener.os, "stat", lambda p, *a, **k: real_stat(regular) if str(p) == str(fifo)
                        else real_stat(p, *a, **k))
    outcome: list[BaseException] = []

    def target() -> None:
        try:
            opener.read_regular(fifo)
        except BaseException as exc:
            outcome.append(exc)

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(TIMEOUT)
    assert not thread.is_alive(), "open() of the FIFO blocked"
    assert len(outcome) == 1 and isinstance(outcome[0], NotRegularFileError), outcome


def test_elf_reader_refuses_special_files(special: tuple[str, Path]) -> None:
    _kind, path = special
    with pytest.raises(OSError):
        ElfFile.open(path)


# -------------------------------------------------------------------- targets and options


def test_load_target(special: tuple[str, Path]) -> None:
    kind, path = special
    assert_one_line_error(ldscope("load", str(path)), path, kind)


def test_load_python(special: tuple[str, Path]) -> None:
    kind, path = special
    assert_one_line_error(ldscope("load", "--python", str(path), _extension_module()), path, kind)


@pytest.mark.parametrize("option", ["--preload", "--loaded"])
def test_load_preload_and_loaded(special: tuple[str, Path], option: str) -> None:
    kind, path = special
    proc = ldscope("load", option, str(path), EXE)
    assert_one_line_error(proc, path, kind)
    assert option in proc.stderr


def test_load_root(special: tuple[str, Path]) -> None:
    _kind, path = special
    proc = ldscope("load", "--root", str(path), "/bin/true")
    assert proc.returncode == 2 and proc.stderr.splitlines() == [proc.stderr.strip()]
    assert f"ldscope: {path}: --root: not a directory" in proc.stderr


def test_load_target_inside_root(special: tuple[str, Path], tmp_path: Path) -> None:
    kind, path = special
    root = tmp_path / "root"
    (root / "usr" / "bin").mkdir(parents=True)
    make_special(kind, root / "usr" / "bin" / "prog")
    proc = ldscope("load", "--root", str(root), "/usr/bin/prog")
    assert proc.returncode == 2 and len(proc.stderr.splitlines()) == 1, proc.stderr
    assert WORDS[kind] in proc.stderr and "prog" in proc.stderr
    assert path.exists()


def test_scan_target(special: tuple[str, Path]) -> None:
    kind, path = special
    assert_one_line_error(ldscope("scan", str(path)), path, kind)


def test_scan_target_named_like_a_wheel(special: tuple[str, Path], tmp_path: Path) -> None:
    kind, _ = special
    wheel = make_special(kind, tmp_path / "pkg-1.0-py3-none-any.whl")
    assert_one_line_error(ldscope("scan", str(wheel)), wheel, kind)


def test_scan_python(special: tuple[str, Path]) -> None:
    kind, path = special
    assert_one_line_error(ldscope("scan", "--python", str(path)), path, kind)


@pytest.mark.parametrize("option", ["--root", "--with-env"])
def test_scan_directory_options(special: tuple[str, Path], option: str, tmp_path: Path) -> None:
    _kind, path = special
    proc = ldscope("scan", option, str(path), str(tmp_path))
    assert proc.returncode == 2 and len(proc.stderr.splitlines()) == 1, proc.stderr
    assert f"ldscope: {path}: {option}: not a directory" in proc.stderr


@pytest.mark.parametrize("option", ["--preload", "--loaded"])
def test_scan_preload_and_loaded(special: tuple[str, Path], option: str, tmp_path: Path) -> None:
    kind, path = special
    assert_one_line_error(ldscope("scan", option, str(path), EXE), path, kind)


@pytest.mark.parametrize("command", ["info", "symbols"])
def test_info_and_symbols_targets(special: tuple[str, Path], command: str, tmp_path: Path) -> None:
    kind, path = special
    assert_one_line_error(ldscope(command, str(path)), path, kind)
    # The run goes on: a good file after it is still read, the status still 2.
    proc = ldscope(command, str(path), EXE)
    assert proc.returncode == 2 and proc.stdout and len(proc.stderr.splitlines()) == 1


# ------------------------------------------------------------------------------ link


@pytest.fixture(scope="module")
def object_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if shutil.which("gcc") is None:
        pytest.skip("needs gcc")
    d = tmp_path_factory.mktemp("obj")
    (d / "m.c").write_text("int main(void) { return 0; }\n")
    subprocess.run(["gcc", "-c", "-o", str(d / "m.o"), str(d / "m.c")], check=True, capture_output=True)
    return d / "m.o"


def test_link_input_file(special: tuple[str, Path], object_file: Path, tmp_path: Path) -> None:
    kind, path = special
    proc = ldscope("link", "--no-driver", "--", "gcc", str(object_file), str(path), "-o", "app", cwd=tmp_path)
    assert_one_line_error(proc, path, kind)


def test_link_search_hit(special: tuple[str, Path], object_file: Path, tmp_path: Path) -> None:
    kind, _ = special
    libs = tmp_path / "libs"
    libs.mkdir()
    hit = make_special(kind, libs / "libfoo.so")
    proc = ldscope("link", "--no-driver", "--", "gcc", str(object_file), f"-L{libs}", "-lfoo", "-o", "app",
                   cwd=tmp_path)
    assert_one_line_error(proc, hit, kind)


def test_link_response_file(special: tuple[str, Path], object_file: Path, tmp_path: Path) -> None:
    kind, path = special
    proc = ldscope("link", "--no-driver", "--", "gcc", str(object_file), f"@{path}", "-o", "app", cwd=tmp_path)
    assert proc.returncode == 2 and len(proc.stderr.splitlines()) == 1, proc.stderr
    assert f"response file {path} {WORDS[kind]}, not a regular file" in proc.stderr


def test_link_file_named_by_a_linker_script(special: tuple[str, Path], object_file: Path, tmp_path: Path) -> None:
    kind, path = special
    script = tmp_path / "inputs.ld"
    script.write_text(f"INPUT({path})\n")
    proc = ldscope("link", "--no-driver", "--", "gcc", str(object_file), str(script), "-o", "app", cwd=tmp_path)
    assert_one_line_error(proc, path, kind)


def test_link_script_given_as_the_script(special: tuple[str, Path], object_file: Path, tmp_path: Path) -> None:
    kind, path = special
    proc = ldscope("link", "--no-driver", "--", "gcc", str(object_file), f"-Wl,-T,{path}", "-o", "app", cwd=tmp_path)
    assert_one_line_error(proc, path, kind)


def test_link_from_log(special: tuple[str, Path]) -> None:
    kind, path = special
    assert_one_line_error(ldscope("link", "--from-log", str(path)), path, kind)


# ------------------------------------------------------- met while walking: skipped, run goes on


def _good_library(d: Path) -> Path:
    (d / "good.c").write_text("int good(void) { return 1; }\n")
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(d / "libgood.so"), str(d / "good.c")],
                   check=True, capture_output=True)
    return d / "libgood.so"


@needs_gcc
def test_special_files_inside_a_scanned_directory_are_skipped(tmp_path: Path) -> None:
    import json

    tree = tmp_path / "tree"
    tree.mkdir()
    good = _good_library(tree)
    for kind in KINDS:
        make_special(kind, tree / f"lib{kind}.so")
        make_special(kind, tree / f"{kind}.py")
    proc = ldscope("scan", "--format", "json", "-j", "1", str(tree))
    assert proc.returncode == 0, proc.stderr  # special files are not problems of the tree
    doc = json.loads(proc.stdout)
    assert [f["path"] for f in doc["files"]] == [str(good)]
    skipped = {s["path"]: s for s in doc["skipped"]}
    for kind in KINDS:
        assert "not opened" in skipped[str(tree / f"lib{kind}.so")]["reason"]
        assert skipped[str(tree / f"lib{kind}.so")]["is_problem"] is False


@pytest.fixture(scope="module")
def hostile_environment(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A venv whose package imports a FIFO module and /dev/zero, one distribution's RECORD a
    FIFO and another's METADATA a socket: (the venv, its extension module)."""
    include = sysconfig.get_paths()["include"]
    if shutil.which("gcc") is None or not os.path.exists(os.path.join(include, "Python.h")):
        pytest.skip("needs gcc and Python.h")
    venv = tmp_path_factory.mktemp("hostile") / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, capture_output=True)
    site = next((venv / "lib").glob("python3*/site-packages"))
    pkg = site / "pkg"
    pkg.mkdir()
    ext = pkg / f"_e{sysconfig.get_config_var('EXT_SUFFIX')}"
    (pkg / "e.c").write_text("#include <Python.h>\nstatic struct PyModuleDef d = {PyModuleDef_HEAD_INIT, \"_e\", 0, -1, 0};\n"
                             "PyMODINIT_FUNC PyInit__e(void) { return PyModule_Create(&d); }\n")
    subprocess.run(["gcc", "-shared", "-fPIC", f"-I{include}", "-o", str(ext), str(pkg / "e.c")],
                   check=True, capture_output=True)
    (pkg / "e.c").unlink()
    (pkg / "__init__.py").write_text("from . import fifo, zero, sock\nfrom . import _e\n")
    make_special("fifo", pkg / "fifo.py")
    make_special("devzero", pkg / "zero.py")
    make_special("socket", pkg / "sock.py")
    info = site / "pkg-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: pkg\nVersion: 1.0\n")
    make_special("fifo", info / "RECORD")
    other = site / "other-1.0.dist-info"
    other.mkdir()
    make_special("socket", other / "METADATA")
    make_special("fifo", other / "RECORD")
    return venv, ext


def test_scan_of_an_environment_with_special_python_files(hostile_environment: tuple[Path, Path]) -> None:
    import json

    venv, ext = hostile_environment
    proc = ldscope("scan", "--format", "json", "-j", "1", "--no-cache", str(venv))
    assert proc.returncode == 0, proc.stderr
    assert {f["path"]: f["loads"] for f in json.loads(proc.stdout)["files"]} == {str(ext): True}


def test_load_under_an_environment_with_special_python_files(hostile_environment: tuple[Path, Path]) -> None:
    venv, ext = hostile_environment
    proc = ldscope("load", "--python", str(venv / "bin" / "python"), str(ext))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith(f"{ext}: loads")


@pytest.mark.parametrize("name", ["etc/ld.so.conf", "etc/ld.so.conf.d/x.conf", "etc/ld.so.cache",
                                  "var/lib/dpkg/status"])
@pytest.mark.parametrize("kind", ["fifo", "devzero"])
def test_root_whose_loader_files_are_special(tmp_path: Path, name: str, kind: str) -> None:
    """ld.so.conf (and what it includes), ld.so.cache and dpkg's status inside --root: read
    through the same opener, so a FIFO or /dev/zero there is unreadable, never waited on."""
    root = tmp_path / "root"
    for d in ("etc/ld.so.conf.d", "usr/bin", "var/lib/dpkg"):
        (root / d).mkdir(parents=True)
    shutil.copy(EXE, root / "usr" / "bin" / "prog")
    if name != "etc/ld.so.conf":
        (root / "etc" / "ld.so.conf").write_text("include /etc/ld.so.conf.d/*.conf\n")
    make_special(kind, root / name)
    load = ldscope("load", "--root", str(root), "/usr/bin/prog")
    assert load.returncode in (0, 1), load.stderr  # a verdict (its libraries are not in the root)
    scan = ldscope("scan", "-j", "1", "--root", str(root))
    assert scan.returncode in (0, 1), scan.stderr
    assert "scanned root" in scan.stdout


def _run_in_thread(action: Callable[[], object]) -> list[BaseException]:
    outcome: list[BaseException] = []

    def target() -> None:
        try:
            action()
        except BaseException as exc:
            outcome.append(exc)

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(TIMEOUT)
    assert not thread.is_alive(), "blocked"
    return outcome


def test_library_readers_refuse_a_fifo_without_blocking(tmp_path: Path) -> None:
    """The readers below the CLI (what a script using the API calls) go through the opener."""
    from ldscope.elf import detect_kind, read_linker_script
    from ldscope.errors import InputFormatError
    from ldscope.system import load_ld_cache, read_ld_so_conf

    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    for action in (lambda: detect_kind(str(fifo)), lambda: read_linker_script(fifo),
                   lambda: load_ld_cache(str(fifo)), lambda: ElfFile.open(fifo)):
        outcome = _run_in_thread(action)
        assert len(outcome) == 1 and isinstance(outcome[0], (OSError, InputFormatError)), outcome
        assert "FIFO" in str(outcome[0])
    conf: list[object] = []
    assert _run_in_thread(lambda: conf.append(read_ld_so_conf(str(fifo)))) == []
    assert conf and any("FIFO" in p for p in conf[0].problems)  # type: ignore[attr-defined]


# ------------------------------------------------------------- one opener, used everywhere

# Reads that do not take a path from ldscope's input: ldscope's own source files (digests of
# the readers), /proc/self/maps, and the opener itself.
_OWN_READS = {
    ("cli/__init__.py", "_mapped_files"),
    ("linker/inputs/_facts_store.py", "facts_fingerprint"),
    ("system/_import_cache.py", "scanner_fingerprint"),
    ("cli/common.py", "_open_output"),  # --output: opened for writing (flags in a variable)
    ("elf/_regular.py", "open_regular_fd"),
}


def _function_of(node: object, parents: dict[object, object]) -> str:
    import ast

    while node in parents:
        node = parents[node]
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            return node.name
    return "<module>"


def _assigned_value(tree: object, arg: object) -> object:
    """What a name passed as an argument was bound to (by `x = …` or `with … as x`), else
    the argument itself."""
    import ast

    if not isinstance(arg, ast.expr):
        return arg
    wanted = ast.unparse(arg)
    assert isinstance(tree, ast.AST)
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and any(ast.unparse(t) == wanted for t in node.targets):
            return node.value
        if isinstance(node, ast.withitem) and node.optional_vars is not None \
                and ast.unparse(node.optional_vars) == wanted:
            return node.context_expr
    return arg


def _reads_outside_the_opener() -> list[str]:
    """Every call in src/ldscope that opens a path for reading without elf.open_regular:
    open(...) / io.open without a writing mode, os.open without O_WRONLY/O_RDWR,
    Path.read_bytes() / read_text(), zipfile.ZipFile(path)."""
    import ast

    package = Path(SRC) / "ldscope"
    found = []
    for file in sorted(package.rglob("*.py")):
        rel = file.relative_to(package).as_posix()
        tree = ast.parse(file.read_text(encoding="utf-8"))
        parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}

        for node in ast.walk(tree):
            if not isinstance(node, ast.Call):
                continue
            func = node.func
            name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
            base = "" if isinstance(func, ast.Name) else func.value.id if isinstance(func, ast.Attribute) and \
                isinstance(func.value, ast.Name) else "<expression>"  # self._zip.open(member)
            source = ast.unparse(node)
            if name == "open" and base in ("", "io"):
                mode = node.args[1] if len(node.args) > 1 else next(
                    (k.value for k in node.keywords if k.arg == "mode"), None)
                if isinstance(mode, ast.Constant) and any(c in str(mode.value) for c in "wax+"):
                    continue  # writing
            elif name == "open" and base == "os":
                if "O_WRONLY" in source or "O_RDWR" in source:
                    continue
            elif name in ("read_bytes", "read_text") and not node.args:
                if "files(" in source:  # importlib.resources: ldscope's own data
                    continue
            elif name == "ZipFile":
                if node.args and "open_regular" in ast.unparse(_assigned_value(tree, node.args[0])):
                    continue  # given a file object the opener opened
            else:
                continue
            if (rel, _function_of(node, parents)) not in _OWN_READS:
                found.append(f"{rel}:{node.lineno}: {source}")
    return found


def test_every_read_of_a_path_goes_through_the_opener() -> None:
    """A new open() of an input path would bring the hangs back: use elf.open_regular,
    read_regular or open_regular_text (wheels: open the file with open_regular first)."""
    assert _reads_outside_the_opener() == []
