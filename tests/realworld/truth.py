"""The truth for every native file of a corpus environment: the real Python import.

Every ELF file of the venv (symbolic links not followed) is classified by reading it (a
minimal ELF64 reader here, independent of ldscope): an *extension* defines a `PyInit_*`
dynamic symbol, an *executable* is ET_EXEC, a PIE (DF_1_PIE) or has PT_INTERP and no SONAME,
anything else of type ET_DYN is a *library*.  Then, each in a fresh subprocess of the
environment's own interpreter (`bin/python -I -c SNIPPET`, LD_LIBRARY_PATH, LD_PRELOAD and
PYTHON* removed from its environment):

* an extension module under site-packages is imported by its dotted name, as Python would: its
  parent package first (`import a.b`: that is the real process state in which `a.b.c` is ever
  imported; when it fails and the failure is not the file's own, `stage` is `package`).  If
  that import loaded the file already (a module of any name has it as `__file__`, or it is
  mapped: cv2 loads `cv2.abi3.so` as `cv2`), it loads (`loaded_as`).  Else
  `importlib.util.find_spec(name)` must name this very file (else another file wins:
  `shadowed`), then `import a.b.c`.  A failure records the exception chain, its innermost
  error (`root_error`) and whether the file stayed mapped (`mapped`: dlopen succeeded, the
  failure is Python-level).  A file
  whose name leaves no module name after every suffix of that interpreter's
  `importlib.machinery.EXTENSION_SUFFIXES` (a `.cpython-312-x86_64-linux-gnu.so` in 3.11) is
  never imported by Python: `importable: false, reason: "suffix"`, and it does not load
  (`ok: false`); whether `ExtensionFileLoader` loads it by path is recorded beside
  (`by_path`).  A file in a directory that is no package name (`reason: "path"`) or shadowed
  gets its by-path result as its truth.
* a shared library under site-packages: the top-level package of the distribution owning it
  (dist-info RECORD) is imported first (its failure is recorded, `package_error`; the process
  state is whatever it left), then `ctypes.CDLL(path)`.  CPython 3.11's `_ctypes.dlopen` ORs
  RTLD_NOW into the mode and `CDLL`'s default mode is RTLD_LOCAL, so this is
  `dlopen(path, RTLD_NOW | RTLD_LOCAL)`: every symbol bound at load.  Checked by experiment
  (a library whose only unresolved reference is a PLT call: `CDLL(path)` fails with
  "undefined symbol", `CDLL(path, mode=os.RTLD_LAZY)` loads) and by Modules/_ctypes/callproc.c
  `py_dl_open` (`mode |= RTLD_NOW;`).
* executables are not run: `status: "not-covered"`, as are files outside site-packages.

Each file records its kind, the exact snippet run, `ok`, the error text and the owning
distribution (name and version, from the RECORD files).  The truth is cached as JSON beside the
venv (`rw-NAME-KEY.truth-vN.json`), computed once per machine by `WORKERS` workers, each
driving one subprocess at a time, with a per-file timeout (`status: "timeout"`, `ok: null`).
"""

from __future__ import annotations

import csv
import json
import mmap
import os
import re
import struct
import subprocess
import time
from collections.abc import Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from tests.realworld.build import BuiltEnv
from tests.scan_support import CACHE_DIR, _locked

TRUTH_VERSION = 4  # bump when how the truth is computed changes
SCHEMA = "ldscope-tests.truth/1"
WORKERS = 2
TIMEOUT = 180.0  # seconds per file (importing torch takes a few)
MARKER = "@@LDSCOPE-TRUTH@@"
_DROPPED_ENV = ("LD_LIBRARY_PATH", "LD_PRELOAD", "LD_AUDIT", "LD_BIND_NOW")

# ------------------------------------------------------------------------ reading ELF files

_ET_EXEC, _ET_DYN = 2, 3
_PT_INTERP, _PT_DYNAMIC = 3, 2
_DT_SONAME, _DT_FLAGS_1, _DF_1_PIE = 14, 0x6FFFFFFB, 0x08000000
_SHT_DYNSYM = 11
_STB_GLOBAL, _STB_WEAK = 1, 2


def elf_kind(path: Path) -> str | None:
    """`extension`, `library` or `executable` for a native ELF file; None if not ELF or not
    loadable (relocatable objects, cores, truncated files)."""
    try:
        with open(path, "rb") as fh:
            if fh.read(4) != b"\x7fELF":
                return None
            size = os.fstat(fh.fileno()).st_size
            if size < 64:
                return None
            with mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as m:
                return _classify(m)
    except (OSError, ValueError, struct.error):
        return None


def _classify(m: mmap.mmap) -> str | None:
    if m[4] != 2 or m[5] != 1:  # ELF64 little-endian only: the machines of this tier
        return "library" if struct.unpack_from("<H", m, 16)[0] == _ET_DYN else None
    e_type, = struct.unpack_from("<H", m, 16)
    if e_type == _ET_EXEC:
        return "executable"
    if e_type != _ET_DYN:
        return None
    e_phoff, e_shoff = struct.unpack_from("<QQ", m, 32)
    e_phentsize, e_phnum, e_shentsize, e_shnum = struct.unpack_from("<HHHH", m, 54)
    interp = pie = soname = False
    for i in range(e_phnum):
        p_type, _, p_offset, _, _, p_filesz = struct.unpack_from("<IIQQQQ", m, e_phoff + i * e_phentsize)
        if p_type == _PT_INTERP:
            interp = True
        elif p_type == _PT_DYNAMIC:
            for off in range(p_offset, p_offset + p_filesz, 16):
                tag, val = struct.unpack_from("<qQ", m, off)
                if tag == 0:
                    break
                if tag == _DT_FLAGS_1 and val & _DF_1_PIE:
                    pie = True
                elif tag == _DT_SONAME:
                    soname = True
    if _defines_pyinit(m, e_shoff, e_shentsize, e_shnum):
        return "extension"
    # A PIE, or a program with an interpreter and no SONAME; libc.so.6 has both PT_INTERP and a SONAME.
    return "executable" if pie or (interp and not soname) else "library"


def _defines_pyinit(m: mmap.mmap, e_shoff: int, e_shentsize: int, e_shnum: int) -> bool:
    sections = [struct.unpack_from("<IIQQQQIIQQ", m, e_shoff + i * e_shentsize) for i in range(e_shnum)]
    for _, sh_type, _, _, off, size, link, _, _, entsize in sections:
        if sh_type != _SHT_DYNSYM or link >= len(sections):
            continue
        str_off, str_size = sections[link][4], sections[link][5]
        strtab = m[str_off:str_off + str_size]
        if b"PyInit" not in strtab:  # cheap: most libraries have no such name at all
            return False
        for sym in range(off, off + size, entsize or 24):
            st_name, st_info, _, st_shndx = struct.unpack_from("<IBBH", m, sym)
            if st_shndx == 0 or (st_info >> 4) not in (_STB_GLOBAL, _STB_WEAK):
                continue
            end = strtab.find(b"\0", st_name)
            name = strtab[st_name:end]
            if name.startswith((b"PyInit_", b"PyInitU_")):
                return True
    return False


def native_files(root: Path) -> list[tuple[Path, str]]:
    """Every native ELF file under `root` (symlinks not followed), with its kind, sorted."""
    out = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        for name in sorted(filenames):
            path = Path(dirpath) / name
            if path.is_symlink() or not path.is_file():
                continue
            kind = elf_kind(path)
            if kind is not None:
                out.append((path, kind))
    return out


# ----------------------------------------------------------------- names and distributions


def module_name(rel: Path, suffixes: Iterable[str]) -> tuple[str | None, str | None]:
    """(dotted module name, None), or (None, reason) when Python never imports the file at
    `rel` (relative to site-packages) by name: `suffix` (no extension suffix leaves a module
    name: `x.cpython-312-x86_64-linux-gnu.so` in 3.11) or `path` (a directory is no package
    name)."""
    filename = rel.name
    stem = None
    for suffix in suffixes:
        if filename.endswith(suffix) and filename[:-len(suffix)].isidentifier():
            stem = filename[:-len(suffix)]
            break
    if stem is None:
        return None, "suffix"
    if not all(part.isidentifier() for part in rel.parts[:-1]):
        return None, "path"
    return ".".join([*rel.parts[:-1], stem]), None


@dataclass(frozen=True)
class Distribution:
    """An installed distribution: its name, version and top-level import names."""

    name: str
    version: str
    top_level: tuple[str, ...]


def distributions(site: Path) -> dict[str, Distribution]:
    """realpath of every file a RECORD lists → the distribution owning it."""
    owners: dict[str, Distribution] = {}
    for info in sorted(site.glob("*.dist-info")):
        meta = _metadata(info / "METADATA")
        record = info / "RECORD"
        if not record.is_file():
            continue
        with open(record, newline="") as fh:
            entries = [row[0] for row in csv.reader(fh) if row]
        top = (info / "top_level.txt").read_text().split() if (info / "top_level.txt").is_file() else []
        if not top:
            top = sorted({Path(e).parts[0].removesuffix(".py") for e in entries
                          if not e.startswith("..") and Path(e).parts[0].removesuffix(".py").isidentifier()})
        dist = Distribution(meta.get("Name", info.name.split("-")[0]), meta.get("Version", "?"), tuple(top))
        for e in entries:
            owners[os.path.realpath(site / e)] = dist
    return owners


def _metadata(path: Path) -> dict[str, str]:
    out: dict[str, str] = {}
    if path.is_file():
        for line in path.read_text(errors="replace").splitlines():
            if not line.strip():
                break  # the body begins
            key, sep, value = line.partition(":")
            if sep and key in ("Name", "Version"):
                out.setdefault(key, value.strip())
    return out


def owning_package(rel: Path, dist: Distribution | None) -> str | None:
    """The top-level package imported before a library at `rel` is dlopen'ed: the first
    directory when it is one of its distribution's top-level names, else the top-level name
    matching the distribution's name, else its first top-level name."""
    first = rel.parts[0] if len(rel.parts) > 1 else None
    if dist is None:
        return first if first and first.isidentifier() else None
    if first in dist.top_level:
        return first
    norm = re.sub(r"[-_.]+", "_", dist.name).lower()
    for top in dist.top_level:
        if top.lower() == norm:
            return top
    return dist.top_level[0] if dist.top_level else None


# ---------------------------------------------------------------------------- the snippets

_HARNESS = """\
import importlib, importlib.machinery, importlib.util, json, os, sys, traceback
R = {{"stage": None}}
def mapped(path):  # whether ld.so has the file mapped in this process (dlopen'ed, by anyone)
    with open("/proc/self/maps") as maps:
        return any(line.rstrip("\\n").endswith(" " + os.path.realpath(path)) for line in maps)
def same(path):  # whether path is this very file
    try:
        return os.path.samefile(path, P)
    except (OSError, TypeError, ValueError):
        return False
def report(ok, error=None):
    R["ok"] = ok
    if error is not None:
        R["error"] = type(error).__name__ + ": " + str(error)
        R["error_detail"] = "".join(traceback.format_exception(error)[-8:])
        chain, seen = [], set()
        while error is not None and id(error) not in seen:
            seen.add(id(error))
            chain.append({{"error": type(error).__name__ + ": " + str(error),
                          "name": getattr(error, "name", None), "path": getattr(error, "path", None)}})
            error = error.__cause__ or error.__context__
        R["error_chain"] = chain
        R["root_error"] = chain[-1]["error"]
        if P:  # dlopen itself succeeded when the file stays mapped: the failure came after (Python-level)
            R["mapped"] = mapped(P)
    sys.stdout.flush()
    sys.stderr.flush()
    os.write(1, ("\\n{marker}" + json.dumps(R) + "\\n").encode())
    os._exit(0)
P = {path!r}
"""

_IMPORT = """\
try:
    R["stage"] = "package"
    {parent_import}
    R["stage"] = "find_spec"
    for key, value in sorted(sys.modules.items(), key=lambda kv: kv[0] != {name!r}):
        f = getattr(value, "__file__", None)  # its package imported it (maybe by another name)
        if isinstance(f, str) and os.path.basename(f) == os.path.basename(P) and same(f):
            R["loaded_as"] = key
            report(True)
    if mapped(P):  # its package dlopen'ed it (cv2 loads itself so)
        R["loaded_as"] = "(mapped by its package)"
        report(True)
    spec = importlib.util.find_spec({name!r})
    R["origin"] = spec.origin if spec else None
    if not same(R["origin"]):
        report(None)
    R["stage"] = "module"
    import {name}
    report(True)
except BaseException as e:
    report(False, e)
"""

_BY_PATH = """\
try:
    R["stage"] = "package"
    {parent_import}
    R["stage"] = "module"
    loader = importlib.machinery.ExtensionFileLoader({name!r}, P)
    spec = importlib.util.spec_from_file_location({name!r}, P, loader=loader)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    report(True)
except BaseException as e:
    report(False, e)
"""

_LIBRARY = """\
import ctypes
if {package!r}:
    R["stage"] = "package"
    try:
        importlib.import_module({package!r})
    except BaseException as e:
        R["package_error"] = type(e).__name__ + ": " + str(e)
for user in {users!r}:  # the extensions that NEED it: it is really loaded as part of them
    try:
        importlib.import_module(user)
    except BaseException as e:
        R.setdefault("user_errors", []).append(user + ": " + type(e).__name__ + ": " + str(e))
R["already_loaded"] = mapped(P)
try:
    R["stage"] = "library"
    ctypes.CDLL(P)
    report(True)
except BaseException as e:
    report(False, e)
"""


def import_snippet(path: Path, name: str) -> str:
    """Import the extension at `path` by its dotted `name` (its parent package first)."""
    parent = name.rpartition(".")[0]
    return (_HARNESS.format(marker=MARKER, path=str(path))
            + _IMPORT.format(parent_import=f"import {parent}" if parent else "pass", name=name))


def by_path_snippet(path: Path, name: str, parent: str | None) -> str:
    """Load the extension at `path` by path (`ExtensionFileLoader`), its package imported first."""
    return (_HARNESS.format(marker=MARKER, path=str(path))
            + _BY_PATH.format(parent_import=f"import {parent}" if parent else "pass", name=name))


def library_snippet(path: Path, package: str | None, users: tuple[str, ...] = ()) -> str:
    """Import `package`, then the extension modules `users` (errors recorded), then
    `ctypes.CDLL(path)` (dlopen RTLD_NOW | RTLD_LOCAL)."""
    return _HARNESS.format(marker=MARKER, path=str(path)) + _LIBRARY.format(package=package or "",
                                                                            users=tuple(users))


def dynamic_names(path: Path) -> tuple[tuple[str, ...], str | None]:
    """(DT_NEEDED names, DT_SONAME) of an ELF file, read with pyelftools (not ldscope)."""
    from elftools.common.exceptions import ELFError
    from elftools.elf.dynamic import DynamicSection
    from elftools.elf.elffile import ELFFile

    needed: list[str] = []
    soname = None
    try:
        with open(path, "rb") as fh:
            for section in ELFFile(fh).iter_sections():
                if isinstance(section, DynamicSection):
                    for tag in section.iter_tags():
                        if tag.entry.d_tag == "DT_NEEDED":
                            needed.append(tag.needed)
                        elif tag.entry.d_tag == "DT_SONAME":
                            soname = tag.soname
    except (OSError, ELFError, ValueError):
        pass
    return tuple(needed), soname


def run_snippet(python: Path, snippet: str, timeout: float = TIMEOUT) -> dict[str, object]:
    """Run a snippet in a fresh `python -I -c` (no LD_LIBRARY_PATH/LD_PRELOAD/PYTHON*): its report,
    or what happened instead (`crashed`: the exit status and stderr; `timeout`)."""
    env = {k: v for k, v in os.environ.items() if k not in _DROPPED_ENV and not k.startswith("PYTHON")}
    start = time.monotonic()
    try:
        proc = subprocess.run([str(python), "-I", "-c", snippet], capture_output=True, text=True,
                              timeout=timeout, env=env, cwd="/", errors="replace")
    except subprocess.TimeoutExpired:
        return {"status": "timeout", "ok": None, "error": f"no answer within {timeout:.0f} s",
                "seconds": round(time.monotonic() - start, 2)}
    seconds = round(time.monotonic() - start, 2)
    for line in reversed(proc.stdout.splitlines()):
        if line.startswith(MARKER):
            result: dict[str, object] = json.loads(line[len(MARKER):])
            result["seconds"] = seconds
            return result
    tail = "".join(proc.stderr.splitlines(keepends=True)[-8:])
    return {"ok": False, "stage": "crashed", "error": f"exit status {proc.returncode}: {tail.strip()}",
            "seconds": seconds}


# ------------------------------------------------------------------------- one file's truth


def _site_relative(path: Path, site: Path) -> Path | None:
    try:
        return path.relative_to(site)
    except ValueError:
        return None


def file_truth(built: BuiltEnv, path: Path, kind: str, owners: dict[str, Distribution],
               suffixes: list[str], users: dict[str, tuple[str, ...]] | None = None) -> dict[str, object]:
    """The truth for one native file of `built` (see the module docstring)."""
    site = built.site
    rel = _site_relative(path, site)
    dist = owners.get(os.path.realpath(path))
    entry: dict[str, object] = {
        "path": str(path), "rel": str(rel if rel is not None else path.relative_to(built.path)),
        "kind": kind, "dist": dist.name if dist else None, "dist_version": dist.version if dist else None,
        "importable": None, "reason": None, "module": None, "test": None, "snippet": None,
        "status": "not-covered", "ok": None, "stage": None, "error": None, "by_path": None,
    }
    if kind == "executable" or rel is None:
        entry["reason"] = "executable: not run" if kind == "executable" else "outside site-packages"
        return entry
    if kind == "library":
        package = owning_package(rel, dist)
        # A library that extension modules NEED is loaded as part of them (with their RPATH):
        # import them first, as a process using it does; then dlopen it by path.
        _, soname = dynamic_names(path)
        needing = tuple(dict.fromkeys((users or {}).get(soname or path.name, ())
                                      + (users or {}).get(path.name, ())))
        snippet = library_snippet(path, package, needing)
        entry.update(test=(f"import {package}; " if package else "")
                     + "".join(f"import {u}; " for u in needing) + f"ctypes.CDLL({str(path)!r})",
                     snippet=snippet)
        entry.update(_outcome(run_snippet(built.python, snippet)))
        return entry
    name, reason = module_name(rel, suffixes)
    if name is not None:
        snippet = import_snippet(path, name)
        entry.update(module=name, test=f"import {name}", snippet=snippet)
        result = run_snippet(built.python, snippet)
        if result.get("ok") is not None or result.get("status") == "timeout":
            entry.update(importable=True, **_outcome(result, path))
            return entry
        reason = f"shadowed by {result.get('origin')}"
    # Not importable by name: say why, and load it by path for the record.
    stem = rel.name.split(".")[0]
    parent = ".".join(rel.parts[:-1]) if all(p.isidentifier() for p in rel.parts[:-1]) else None
    by_name = f"{parent}.{stem}" if parent else stem
    snippet = by_path_snippet(path, by_name, parent)
    by_path = _outcome(run_snippet(built.python, snippet), path)
    by_path.update(test=f"ExtensionFileLoader({by_name!r}, {str(path)!r})", snippet=snippet)
    entry.update(importable=False, reason=reason, module=name, by_path=by_path,
                 test=f"none: Python never imports it by name ({reason}); by path: {by_path['test']}")
    if reason == "suffix":
        entry.update(status="not-importable", ok=False, stage="suffix",
                     error=f"{rel.name}: no suffix of {suffixes} leaves a module name: Python never imports it")
    else:
        entry.update(status=by_path["status"], ok=by_path["ok"], stage=by_path["stage"], error=by_path["error"])
    return entry


def _outcome(result: dict[str, object], path: Path | None = None) -> dict[str, object]:
    ok = result.get("ok")
    status = result.get("status") or ("ok" if ok else "fail")
    stage = result.get("stage")
    if stage == "package" and path is not None and _names_file(result, path):
        stage = "module"  # its package imports it: the file's own failure, met while importing the package
    out = {"status": status, "ok": ok, "stage": stage, "error": result.get("error"),
           "seconds": result.get("seconds")}
    for extra in ("root_error", "error_chain", "error_detail", "package_error", "loaded_as", "already_loaded",
                  "mapped"):
        if result.get(extra) is not None:
            out[extra] = result[extra]
    return out


def _names_file(result: dict[str, object], path: Path) -> bool:
    """Whether a failure is the file's own: the ImportError is about it, or names it."""
    chain = result.get("error_chain") or []
    assert isinstance(chain, list)
    for link in chain:
        if isinstance(link.get("path"), str):
            try:
                if os.path.samefile(link["path"], path):
                    return True
            except OSError:
                pass
    return any(str(path) in str(link.get("error")) for link in chain)


# ---------------------------------------------------------------------------- the env's truth


def truth_path(built: BuiltEnv) -> Path:
    """Where the truth of `built` is cached (beside the venv, keyed like it)."""
    return CACHE_DIR / f"{built.stem}.truth-v{TRUTH_VERSION}.json"


def compute_truth(built: BuiltEnv, workers: int = WORKERS) -> dict[str, object]:
    """The truth for every native file of `built` (not cached; see `truth`)."""
    start = time.monotonic()
    probe = run_snippet(built.python, _HARNESS.format(marker=MARKER, path="")
                        + "R['suffixes'] = importlib.machinery.EXTENSION_SUFFIXES\nreport(True)\n")
    suffixes = list(probe["suffixes"])  # type: ignore[call-overload]
    owners = distributions(built.site)
    files = native_files(built.path)
    users: dict[str, tuple[str, ...]] = {}
    for path, kind in files:
        rel = _site_relative(path, built.site)
        name = module_name(rel, suffixes)[0] if kind == "extension" and rel is not None else None
        if name is not None:
            for needed in dynamic_names(path)[0]:
                users[needed] = (*users.get(needed, ()), name)
    with ThreadPoolExecutor(workers) as pool:
        entries = list(pool.map(lambda f: file_truth(built, f[0], f[1], owners, suffixes, users), files))
    return {
        "schema": SCHEMA, "env": built.env.name, "path": str(built.path), "site": str(built.site), "key": built.key,
        "python": str(built.python), "extension_suffixes": suffixes, "workers": workers,
        "seconds": round(time.monotonic() - start, 1), "files": entries,
    }


def truth(built: BuiltEnv) -> dict[str, object]:
    """The truth of `built`, computed once per machine and cached as JSON (xdist-safe)."""
    path = truth_path(built)
    with _locked(path.with_suffix(".lock")):
        if path.exists():
            cached: dict[str, object] = json.loads(path.read_text())
            return cached
        doc = compute_truth(built)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(doc, indent=1) + "\n")
        tmp.replace(path)
    return doc


def entries(doc: dict[str, object]) -> Iterator[dict[str, object]]:
    """The per-file entries of a truth document."""
    files = doc["files"]
    assert isinstance(files, list)
    yield from files
