"""Helpers for the `ldscope scan` tests: cached real venvs, small builds, wheels, the ldd oracle.

Real environments are built once per machine with pip into a cache directory
(`$LDSCOPE_TEST_CACHE`, default `~/.cache/ldscope-tests/`), keyed by the interpreter and the
requirement list, and reused; a test that needs one is skipped (with pip's own words) when
pip cannot install it.  The oracle is `ldd -r` (LD_TRACE_LOADED_OBJECTS with LD_WARN and
LD_BIND_NOW: every reference is bound, nothing of the program runs), with the interpreter's
libpython preloaded for files a Python process imports, and, for files built here, importing
them for real in a subprocess.
"""

from __future__ import annotations

import base64
import contextlib
import fcntl
import functools
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from click.testing import CliRunner

from ldscope.cli import cli

CACHE_DIR = Path(os.environ.get("LDSCOPE_TEST_CACHE", "~/.cache/ldscope-tests")).expanduser()
TORCH_WHEEL = Path("/opt/wheels/torch-2.13.0+cpu-cp311-cp311-manylinux_2_28_x86_64.whl")
PY312_INCLUDE = Path("/root/.pyenv/versions/3.12.1/include/python3.12")
# Real binary wheels: C (numpy), C/C++/Fortran (scipy, with its vendored OpenBLAS and
# libgfortran), C++ (kiwisolver: a pybind-style C++ extension linking libstdc++).
REAL_PACKAGES = ("numpy", "scipy", "kiwisolver")


# ------------------------------------------------------------------------------ the CLI


def scan_json(*args: str, jobs: int = 1) -> tuple[int, dict[str, object], str]:
    """`ldscope scan --format json ARGS` in-process: (exit code, document, stderr)."""
    result = CliRunner().invoke(cli, ["scan", "--format", "json", "-j", str(jobs), *args],
                                catch_exceptions=False)
    doc = json.loads(result.stdout) if result.stdout.strip().startswith("{") else {}
    return result.exit_code, doc, result.stderr


def scan_process(*args: str, timeout: float = 120, env: dict[str, str] | None = None,
                 ) -> subprocess.CompletedProcess[str]:
    """`ldscope scan ARGS` as its own process (exit codes as CI sees them)."""
    return subprocess.run([sys.executable, "-m", "ldscope", "scan", *args], capture_output=True,
                          text=True, timeout=timeout, env=env)


def files_by_path(doc: dict[str, object]) -> dict[str, dict[str, object]]:
    files = doc["files"]
    assert isinstance(files, list)
    return {str(f["path"]): f for f in files}


def findings_of(doc: dict[str, object]) -> list[dict[str, object]]:
    findings = doc["findings"]
    assert isinstance(findings, list)
    return findings


# ----------------------------------------------------------------------- cached venvs


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)  # pytest-xdist workers build each venv once
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def cached_venv(label: str, requirements: Sequence[str], pip_args: Sequence[str] = ()) -> Path:
    """A venv of this interpreter with `requirements` pip-installed, built once and reused."""
    key = hashlib.sha256(json.dumps([os.path.realpath(sys.executable), sys.version,
                                     list(requirements), list(pip_args)]).encode()).hexdigest()[:12]
    venv = CACHE_DIR / f"{label}-{key}"
    done = venv / ".ldscope-complete"
    skip_marker = venv.with_suffix(".pip-failed")
    with _locked(CACHE_DIR / f"{label}-{key}.lock"):
        if done.exists():
            return venv
        if skip_marker.exists() and skip_marker.stat().st_mtime > _now() - 3600:
            pytest.skip(skip_marker.read_text())
        shutil.rmtree(venv, ignore_errors=True)
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, capture_output=True)
        proc = subprocess.run(
            [str(venv / "bin" / "python"), "-m", "pip", "install", "--no-input", "-q",
             "--disable-pip-version-check", *pip_args, *requirements],
            capture_output=True, text=True, timeout=900,
        )
        if proc.returncode != 0:
            reason = (f"pip could not install {' '.join(requirements)} (is PyPI reachable?): "
                      + (proc.stderr.strip().splitlines() or ["no output"])[-1])
            skip_marker.write_text(reason)
            shutil.rmtree(venv, ignore_errors=True)
            pytest.skip(reason)
        done.write_text(" ".join(requirements) + "\n")
    return venv


def _now() -> float:
    import time

    return time.time()


def real_venv() -> Path:
    """numpy, scipy and kiwisolver binary wheels from PyPI."""
    return cached_venv("real", REAL_PACKAGES, ("--only-binary=:all:",))


def torch_venv() -> Path:
    """The local PyTorch CPU wheel installed with its dependencies (skip when absent)."""
    if not TORCH_WHEEL.is_file():
        pytest.skip(f"{TORCH_WHEEL} is not on this machine")
    return cached_venv("torch", (str(TORCH_WHEEL),), ("--only-binary=:all:",))


def site_packages(venv: Path) -> Path:
    found = sorted(venv.glob("lib/python3*/site-packages"))
    assert found, f"no site-packages in {venv}"
    return found[0]


def venv_python(venv: Path) -> Path:
    return venv / "bin" / "python"


@functools.cache
def _libpython() -> str | None:
    libdir = sysconfig.get_config_var("LIBDIR")
    name = sysconfig.get_config_var("INSTSONAME") or sysconfig.get_config_var("LDLIBRARY")
    path = os.path.join(str(libdir), str(name))
    return os.path.realpath(path) if os.path.exists(path) else None


_libpython()  # sysconfig's first initialisation is not thread-safe: do it at import


def libpython() -> str:
    """The shared libpython of the interpreter running the tests (and of its venvs)."""
    path = _libpython()
    if path is None:
        pytest.skip("this interpreter has no shared libpython to preload for ldd -r")
    return path


def ext_suffix() -> str:
    return str(sysconfig.get_config_var("EXT_SUFFIX"))


def clone_venv(venv: Path, dest: Path) -> Path:
    """A copy of a cached venv made of hard links (cheap); add files to it, never modify one."""
    subprocess.run(["cp", "-al", str(venv), str(dest)], check=True)
    return dest


# ------------------------------------------------------------------------------ builds


def run(cmd: Sequence[str], cwd: Path | None = None) -> str:
    proc = subprocess.run(list(cmd), cwd=cwd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise AssertionError(f"{' '.join(cmd)} failed:\n{proc.stdout}\n{proc.stderr}")
    return proc.stdout


GEO_V1 = """
namespace geo {
int area(int side) { return side * side; }
struct Shape { int sides; int scale(int factor) const; };
int Shape::scale(int factor) const { return sides * factor; }
}
"""
# v2 changes the parameter of a free function and of a member function: an extension built
# against v1 references _ZN3geo4areaEi and _ZNK3geo5Shape5scaleEi, which v2 no longer defines.
GEO_V2 = """
namespace geo {
int area(long side) { return (int)(side * side); }
struct Shape { int sides; int scale(double factor) const; };
int Shape::scale(double factor) const { return (int)(sides * factor); }
}
"""
GEO_HEADER = """
namespace geo { int area(int side); struct Shape { int sides; int scale(int factor) const; }; }
"""
GEO_EXT = """
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include "geo.h"
static PyObject* area(PyObject*, PyObject* arg) {
    geo::Shape s{3};
    return PyLong_FromLong(geo::area((int)PyLong_AsLong(arg)) + s.scale(2));
}
static PyMethodDef methods[] = {{"area", area, METH_O, nullptr}, {nullptr, nullptr, 0, nullptr}};
static struct PyModuleDef mod = {PyModuleDef_HEAD_INIT, "_geoext", nullptr, -1, methods};
PyMODINIT_FUNC PyInit__geoext(void) { return PyModule_Create(&mod); }
"""


@dataclass
class GeoBuild:
    """libgeo v1 and v2 (same SONAME libgeo.so.1) and an extension built against v1."""

    v1: Path
    v2: Path
    extension: Path


def build_geo(d: Path) -> GeoBuild:
    if shutil.which("g++") is None:
        pytest.skip("g++ is not installed")
    (d / "v1").mkdir()
    (d / "v2").mkdir()
    (d / "geo_v1.cpp").write_text(GEO_V1)
    (d / "geo_v2.cpp").write_text(GEO_V2)
    (d / "geo.h").write_text(GEO_HEADER)
    (d / "_geoext.cpp").write_text(GEO_EXT)
    run(["g++", "-shared", "-fPIC", "-O1", "-o", "v1/libgeo.so.1", "geo_v1.cpp", "-Wl,-soname,libgeo.so.1"], cwd=d)
    run(["g++", "-shared", "-fPIC", "-O1", "-o", "v2/libgeo.so.1", "geo_v2.cpp", "-Wl,-soname,libgeo.so.1"], cwd=d)
    ext = d / f"_geoext{ext_suffix()}"
    run(["g++", "-shared", "-fPIC", "-O1", f"-I{sysconfig.get_paths()['include']}", "-I.", "-o", ext.name,
         "_geoext.cpp", "-Lv1", "-l:libgeo.so.1", "-Wl,-rpath,$ORIGIN"], cwd=d)
    return GeoBuild(d / "v1" / "libgeo.so.1", d / "v2" / "libgeo.so.1", ext)


PY312_EXT = """
#define PY_SSIZE_T_CLEAN
#include <Python.h>
/* PyType_GetDict is new in CPython 3.12: libpython3.11 does not define it. */
static PyObject* type_dict(PyObject* self, PyObject* arg) {
    return PyType_GetDict((PyTypeObject*)arg);
}
static PyMethodDef methods[] = {{"type_dict", type_dict, METH_O, NULL}, {NULL, NULL, 0, NULL}};
static struct PyModuleDef mod = {PyModuleDef_HEAD_INIT, "_py312", NULL, -1, methods};
PyMODINIT_FUNC PyInit__py312(void) { return PyModule_Create(&mod); }
"""

NEEDY_LIB = "int needy_value(void) { return 42; }\n"
NEEDY_EXT = """
#define PY_SSIZE_T_CLEAN
#include <Python.h>
extern int needy_value(void);
static PyObject* value(PyObject* self, PyObject* unused) { return PyLong_FromLong(needy_value()); }
static PyMethodDef methods[] = {{"value", value, METH_NOARGS, NULL}, {NULL, NULL, 0, NULL}};
static struct PyModuleDef mod = {PyModuleDef_HEAD_INIT, "_needy", NULL, -1, methods};
PyMODINIT_FUNC PyInit__needy(void) { return PyModule_Create(&mod); }
"""


def build_py312_extension(d: Path) -> Path:
    """A tiny cp312 extension using a 3.12-only C-API function (skip without 3.12 headers)."""
    if not (PY312_INCLUDE / "Python.h").is_file():
        pytest.skip(f"CPython 3.12 headers not found at {PY312_INCLUDE}")
    (d / "py312.c").write_text(PY312_EXT)
    out = d / "_py312.cpython-312-x86_64-linux-gnu.so"
    run(["gcc", "-shared", "-fPIC", "-O1", f"-I{PY312_INCLUDE}", "-o", out.name, "py312.c"], cwd=d)
    return out


def build_needy_extension(d: Path) -> Path:
    """An extension (this Python) needing libneedy.so.3, which is then not shipped."""
    (d / "needy.c").write_text(NEEDY_LIB)
    (d / "needy_ext.c").write_text(NEEDY_EXT)
    (d / "needylib").mkdir()
    run(["gcc", "-shared", "-fPIC", "-o", "needylib/libneedy.so.3", "needy.c", "-Wl,-soname,libneedy.so.3"], cwd=d)
    out = d / f"_needy{ext_suffix()}"
    run(["gcc", "-shared", "-fPIC", f"-I{sysconfig.get_paths()['include']}", "-o", out.name, "needy_ext.c",
         "-Lneedylib", "-l:libneedy.so.3", "-Wl,-rpath,$ORIGIN/../needy.libs", "-Wl,--enable-new-dtags"], cwd=d)
    return out


def make_wheel(path: Path, dist: str, version: str, tag: str, members: dict[str, bytes | Path],
               requires: Sequence[str] = ()) -> Path:
    """A real wheel: the members plus dist-info METADATA, WHEEL and RECORD (with hashes)."""
    info = f"{dist}-{version}.dist-info"
    meta = f"Metadata-Version: 2.1\nName: {dist}\nVersion: {version}\n" + "".join(
        f"Requires-Dist: {r}\n" for r in requires)
    wheel = f"Wheel-Version: 1.0\nGenerator: ldscope-tests\nRoot-Is-Purelib: false\nTag: {tag}\n"
    data: dict[str, bytes] = {}
    for name, content in members.items():
        data[name] = content.read_bytes() if isinstance(content, Path) else content
    data[f"{info}/METADATA"] = meta.encode()
    data[f"{info}/WHEEL"] = wheel.encode()
    record = []
    for name, blob in data.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(blob).digest()).rstrip(b"=").decode()
        record.append(f"{name},sha256={digest},{len(blob)}")
    record.append(f"{info}/RECORD,,")
    data[f"{info}/RECORD"] = ("\n".join(record) + "\n").encode()
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, blob in data.items():
            zi = zipfile.ZipInfo(name, (2024, 1, 1, 0, 0, 0))
            zi.external_attr = (0o755 if name.endswith(".so") else 0o644) << 16
            zi.compress_type = zipfile.ZIP_DEFLATED
            zf.writestr(zi, blob)
    return path


def install_wheel(wheel: Path, site: Path) -> list[Path]:
    """What pip does for these simple wheels: unzip into site-packages (modes kept)."""
    out = []
    with zipfile.ZipFile(wheel) as zf:
        for zi in zf.infolist():
            target = site / zi.filename
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(zf.read(zi))
            os.chmod(target, (zi.external_attr >> 16) & 0o777 or 0o644)
            out.append(target)
    return out


def import_in(python: Path, module_path: Path, name: str, code: str = "") -> subprocess.CompletedProcess[str]:
    """Import an extension file for real (its exact path, whatever its tag) in a subprocess."""
    script = (
        "import importlib.machinery as m, importlib.util as u, sys\n"
        f"loader = m.ExtensionFileLoader({name!r}, {str(module_path)!r})\n"
        f"spec = u.spec_from_file_location({name!r}, {str(module_path)!r}, loader=loader)\n"
        "mod = u.module_from_spec(spec)\nspec.loader.exec_module(mod)\n" + code
    )
    env = {k: v for k, v in os.environ.items() if k not in ("LD_LIBRARY_PATH", "LD_PRELOAD")}
    return subprocess.run([str(python), "-c", script], capture_output=True, text=True, timeout=60, env=env)


# ---------------------------------------------------------------------------- ldd -r

_UNDEF = re.compile(r"^undefined symbol: (\S+?)(?:, version (\S+))?\s+\((.*)\)$")
_NOT_FOUND = re.compile(r"^\s*(\S+) => not found$")
_NO_VERSION = re.compile(r"^\s*(\S+): version `([^']+)' not found \(required by (.+)\)$")


@dataclass
class LddResult:
    """What `ldd -r` reported for one file."""

    path: str
    returncode: int
    undefined: set[tuple[str, str]] = field(default_factory=set)  # (symbol, object realpath)
    not_found: set[str] = field(default_factory=set)
    missing_versions: set[tuple[str, str]] = field(default_factory=set)  # (version, requirer)
    loaded: dict[str, str] = field(default_factory=dict)  # name -> path
    raw: str = ""

    @property
    def clean(self) -> bool:
        return not (self.undefined or self.not_found or self.missing_versions)


def ldd_r(path: str, preload: str | None = None, timeout: float = 120) -> LddResult:
    """`ldd -r path` in a clean loader environment (LD_PRELOAD=preload if given)."""
    env = {k: v for k, v in os.environ.items() if k not in ("LD_LIBRARY_PATH", "LD_PRELOAD")}
    if preload:
        env["LD_PRELOAD"] = preload
    proc = subprocess.run(["ldd", "-r", path], capture_output=True, text=True, env=env, timeout=timeout)
    result = LddResult(path, proc.returncode, raw=proc.stdout + proc.stderr)
    for line in (proc.stdout + "\n" + proc.stderr).splitlines():
        if m := _UNDEF.match(line.strip()):
            result.undefined.add((m.group(1), os.path.realpath(m.group(3))))
        elif m := _NOT_FOUND.match(line):
            result.not_found.add(m.group(1))
        elif m := _NO_VERSION.match(line):
            result.missing_versions.add((m.group(2), os.path.realpath(m.group(3))))
        elif "=>" in line:
            name, _, rest = line.strip().partition(" => ")
            result.loaded[name] = rest.rsplit(" (", 1)[0]
    return result


def ldd_preload_for(entry: dict[str, object], python_tree: str | None) -> str | None:
    """libpython for files a Python process imports: extensions, and libraries under site-packages."""
    path = str(entry["path"])
    if entry["kind"] == "extension":
        return libpython()
    if entry["kind"] == "library" and python_tree and path.startswith(python_tree):
        return libpython()
    return None


def ldscope_facts(entry: dict[str, object]) -> tuple[set[tuple[str, str]], set[str], set[tuple[str, str]]]:
    """(unresolved (symbol, file), missing libraries, missing (version, requirer)) of a scan entry."""
    undefined, missing, versions = set(), set(), set()
    problems = entry["problems"]
    assert isinstance(problems, list)
    for p in problems:
        if p["severity"] != "error":
            continue
        if p["kind"] == "unresolved-symbol":
            undefined.add((str(p["symbol"]), os.path.realpath(str(p["file"]))))
        elif p["kind"] == "missing-library":
            missing.add(str(p["library"]))
        elif p["kind"] == "missing-version":
            versions.add((str(p["version"]), os.path.realpath(str(p["file"]))))
    return undefined, missing, versions


@dataclass
class Disagreement:
    path: str
    kind: str
    ldscope: object
    ldd: object

    def __str__(self) -> str:
        return f"{self.path}: {self.kind}: ldscope {self.ldscope!r} vs ldd -r {self.ldd!r}"


def ldd_for_entry(entry: dict[str, object], python_tree: str | None) -> LddResult:
    """The oracle run for a scan entry: `ldd -r` on the file itself, or, for a library checked
    as part of another file's load, on that file (the library's real context: ld.so finds a
    library's own dependencies through what its loader already loaded and through the
    loader's RPATH, so `ldd -r` on the library alone can fail where the process never does —
    auditwheel's vendored libgfortran without RUNPATH is one such)."""
    covering = entry.get("checked_as_part_of")
    if covering:
        # The covering file is an extension or executable of the same tree.
        kind = "extension" if str(covering).endswith(".so") else "executable"
        return ldd_r(str(covering), ldd_preload_for({"path": covering, "kind": kind}, python_tree))
    return ldd_r(str(entry["path"]), ldd_preload_for(entry, python_tree))


def compare_with_ldd(entry: dict[str, object], ldd: LddResult) -> list[Disagreement]:
    """Differences between a scan entry and its oracle run (`ldd_for_entry`).

    A file simulated in its own load (an executable, an extension, a library nobody else
    loads) is compared fact by fact with everything ldd -r reports.  A library checked as
    part of another file's load carries only its own problems, so only the facts about that
    library in the covering file's trace are compared.
    """
    path = str(entry["path"])
    undefined, missing, versions = ldscope_facts(entry)
    ldd_undefined, ldd_missing, ldd_versions = ldd.undefined, ldd.not_found, ldd.missing_versions
    if entry.get("checked_as_part_of"):
        real = os.path.realpath(path)
        ldd_undefined = {u for u in ldd_undefined if u[1] == real}
        ldd_versions = {v for v in ldd_versions if v[1] == real}
        undefined = {u for u in undefined if u[1] == real}
        needed = _needed(path)
        ldd_missing = {n for n in ldd_missing if n in needed}
    out = []
    # ld.so stops at a missing library; ldscope counts the undefined symbols that follow from
    # it under that problem (follow_on_symbols) where ldd -r lists them: same number.
    problems = entry.get("problems") or []
    assert isinstance(problems, list)
    follow_on = sum(int(p.get("follow_on_symbols") or 0) for p in problems)
    if follow_on and undefined <= ldd_undefined and len(undefined) + follow_on == len(ldd_undefined):
        undefined = set(ldd_undefined)
    if undefined != ldd_undefined:
        out.append(Disagreement(path, "undefined symbols", sorted(undefined - ldd_undefined),
                                sorted(ldd_undefined - undefined)))
    if missing != ldd_missing:
        out.append(Disagreement(path, "missing libraries", sorted(missing), sorted(ldd_missing)))
    if versions != ldd_versions:
        out.append(Disagreement(path, "missing versions", sorted(versions), sorted(ldd_versions)))
    if bool(entry["loads"]) != ldd.clean and not out:
        out.append(Disagreement(path, "verdict", entry["loads"], ldd.clean))
    return out


def _needed(path: str) -> set[str]:
    out = subprocess.run(["readelf", "-dW", path], capture_output=True, text=True).stdout
    return set(re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", out))
