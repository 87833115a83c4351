"""What a target Python interpreter imports and which wheel tags it accepts, read from its files.

Nothing here runs the interpreter. Its version, build flags and extension-module suffixes come
from the `_sysconfigdata_*.py` of its base installation, read as text (never imported): the
same SOABI/EXT_SUFFIX CPython's `Python/dynload_shlib.c` builds `_PyImport_DynLoadFiletab`
(and so `importlib.machinery.EXTENSION_SUFFIXES`) from. Without that file the suffixes are
derived from the version (file and directory names, pyvenv.cfg) and the machine (the ELF
header). The glibc is read from the libc.so.6 the interpreter would run with.

The supported wheel tags are built the way pip builds them for the running interpreter
(`packaging.tags.cpython_tags` + `compatible_tags`), with the manylinux platforms generated for
the target's glibc and machine instead of the running host's.
"""

from __future__ import annotations

import ast
import glob
import os
import re
from dataclasses import dataclass
from functools import lru_cache

from packaging.tags import Tag, compatible_tags, cpython_tags, generic_tags
from packaging.utils import parse_wheel_filename

from ldscope.elf import ElfFile, InputFormatError, open_regular_text, read_regular
from ldscope.system._ldconf import resolve_in_root
from ldscope.system._machines import Machine, abi_name, known_machine
from ldscope.system._platform import default_search_dirs

DERIVED = "derived from version and machine"

# The wheel platform tag's architecture (what packaging derives from uname and the pointer
# size) where it differs from ldscope's ABI name. A 32-bit arm interpreter is armv7l as on an
# armv7 kernel (on an aarch64 kernel pip says armv8l and also accepts armv7l).
_WHEEL_ARCH = {"i386": "i686", "arm": "armv7l", "sparcv9": "sparc64"}
# packaging._manylinux._ALLOWED_ARCHS plus the two 32-bit ones it accepts after an ELF check
# (i686: EM_386; armv7l: hard-float EABI5, which is not checked here).
_MANYLINUX_ARCHS = frozenset({"x86_64", "aarch64", "ppc64", "ppc64le", "s390x", "loongarch64", "riscv64",
                              "i686", "armv7l"})
# packaging._manylinux._LEGACY_MANYLINUX_MAP: the PEP 513/571/599 names of three glibc levels.
_LEGACY_MANYLINUX = {(2, 17): "manylinux2014", (2, 12): "manylinux2010", (2, 5): "manylinux1"}
_LEGACY_GLIBC = {name: version for version, name in _LEGACY_MANYLINUX.items()}

_NAME = re.compile(r"(python|pypy)(\d+)\.(\d+)([a-z]*)")
_LIBDIR = re.compile(r"(python|pypy)(\d+)\.(\d+)(t?)")
_SYSCONFIG = re.compile(r"_sysconfigdata_([a-z]*)_(.*)\.py")
_LIBC_BANNER = re.compile(rb"release version (\d+)\.(\d+)")
_GLIBC_NODE = re.compile(r"GLIBC_(\d+)\.(\d+)(?:\.\d+)?")
_TAG_IN_NAME = re.compile(r"(cpython-\d+[a-z]*(-[\w-]+)?|pypy\d+-pp\d+(-[\w-]+)?|graalpy[\w-]+|abi\d+t?(-[\w-]+)?)")


@dataclass(frozen=True, slots=True)
class InterpreterABI:
    """What one Python interpreter imports and runs with, as read from its files."""

    version: tuple[int, int]  # (3, 11)
    implementation: str  # "cpython" or "pypy"
    soabi: str | None  # "cpython-311-x86_64-linux-gnu"
    extension_suffixes: tuple[str, ...]  # importlib.machinery.EXTENSION_SUFFIXES of that interpreter
    free_threaded: bool  # a --disable-gil build (3.13t)
    machine: str  # the wheel platform tag's architecture: x86_64, i686, aarch64, armv7l, ...
    glibc: tuple[int, int] | None  # the glibc of the libc.so.6 it would run with; None: none found
    source: str  # the sysconfigdata file the suffixes came from, or DERIVED


@dataclass(frozen=True, slots=True)
class _Hints:
    """What the interpreter's names and its venv say about it, before sysconfigdata."""

    version: tuple[int, int] | None
    abiflags: str  # from a name like python3.13t or python3.11d
    pypy: bool
    bases: tuple[str, ...]  # host paths of candidate base installations, best first


def _in_root(root: str | None, path: str) -> str:
    """The host path of an absolute path seen from inside root (symlinks resolved inside it)."""
    if root is None:
        return os.path.realpath(path)
    return resolve_in_root(root, path) or os.path.join(root, path.lstrip("/"))


def _host_interpreter(interpreter: str, root: str | None) -> tuple[str, str]:
    """(the path as given on the host, its real host path): inside root when root is given."""
    if root is None:
        given = os.path.abspath(interpreter)
        return given, os.path.realpath(given)
    top = os.path.abspath(root)
    given = os.path.abspath(interpreter)
    if given != top and not given.startswith(top.rstrip("/") + "/"):
        given = os.path.join(top, interpreter.lstrip("/"))  # an in-root path: /usr/bin/python3
    inside = "/" + os.path.relpath(given, top)
    return given, resolve_in_root(root, inside) or given


def _read_pyvenv(prefix: str) -> dict[str, str]:
    try:
        with open_regular_text(os.path.join(prefix, "pyvenv.cfg")) as fh:
            lines = fh.read().splitlines()
    except OSError:
        return {}
    cfg: dict[str, str] = {}
    for line in lines:
        key, sep, value = line.partition("=")
        if sep:
            cfg[key.strip().lower()] = value.strip()
    return cfg


def _hints(given: str, real: str, prefix: str, root: str | None) -> _Hints:
    version: tuple[int, int] | None = None
    abiflags = ""
    pypy = False
    for path in (given, real):
        m = _NAME.fullmatch(os.path.basename(path))
        if m:
            version = version or (int(m.group(2)), int(m.group(3)))
            abiflags = abiflags or m.group(4)
            pypy = pypy or m.group(1) == "pypy"
        pypy = pypy or os.path.basename(path).startswith("pypy")
    cfg = _read_pyvenv(prefix)
    bases: list[str] = []
    if cfg:
        # A venv: its lib/ holds site-packages only; sysconfigdata is in the base installation.
        for key in ("version_info", "version"):
            m = re.match(r"(\d+)\.(\d+)", cfg.get(key, ""))
            if m and version is None:
                version = (int(m.group(1)), int(m.group(2)))
        if cfg.get("implementation", "").lower() == "pypy":
            pypy = True
        for key in ("base-prefix", "base_prefix"):
            if cfg.get(key):
                bases.append(_in_root(root, cfg[key]))
        if cfg.get("home"):
            bases.append(os.path.dirname(_in_root(root, cfg["home"])))
        for key in ("base-executable", "executable"):
            if cfg.get(key):
                bases.append(os.path.dirname(os.path.dirname(_in_root(root, cfg[key]))))
    bases += [prefix, os.path.dirname(os.path.dirname(real))]
    unique = tuple(dict.fromkeys(os.path.normpath(b) for b in bases))
    return _Hints(version, abiflags, pypy, unique)


def _lib_dirs(hints: _Hints) -> list[tuple[str, tuple[int, int], bool, bool]]:
    """(lib dir, version, free-threaded, pypy) of each base's lib/python3.X[t], best first."""
    found: list[tuple[str, tuple[int, int], bool, bool]] = []
    for base in hints.bases:
        for lib in ("lib", "lib64"):
            for d in sorted(glob.glob(os.path.join(glob.escape(base), lib, "*3.*"))):
                m = _LIBDIR.fullmatch(os.path.basename(d))
                if m and os.path.isdir(d):
                    found.append((d, (int(m.group(2)), int(m.group(3))), m.group(4) == "t", m.group(1) == "pypy"))
    if hints.version is not None:
        wanted_t = "t" in hints.abiflags
        # The version the names give, the free-threaded dir only for a name that says t.
        found = [f for f in found if f[1] == hints.version]
        found.sort(key=lambda f: f[2] != wanted_t)
    elif len({(f[1], f[2]) for f in found}) > 1:
        return []  # several versions and nothing saying which: do not guess
    return found


def _sysconfig_file(libdir: str, abiflags: str, triplet: str | None) -> str | None:
    """The _sysconfigdata_*.py the interpreter would load: `_sysconfigdata_{abiflags}_{platform}_{multiarch}`."""
    files = sorted(glob.glob(os.path.join(glob.escape(libdir), "_sysconfigdata*.py")))
    if not files:
        return None

    def rank(path: str) -> tuple[int, int]:
        name = os.path.basename(path)
        m = _SYSCONFIG.fullmatch(name)
        flags, rest = (m.group(1), m.group(2)) if m else ("", name)
        # sysconfig._get_sysconfigdata_name(): abiflags first (a -dbg build shares the dir),
        # then the upstream linux_<multiarch> name over Debian's and conda's extra copies.
        flag_rank = 0 if flags == abiflags else 1
        if triplet and rest == f"linux_{triplet}":
            place = 0
        elif rest.startswith("linux_"):
            place = 1
        elif triplet and triplet in rest:
            place = 2
        else:
            place = 3
        return flag_rank, place

    return min(files, key=rank)


def _config_vars(path: str, keys: tuple[str, ...]) -> dict[str, object]:
    """Values of build_time_vars keys, found by regex in the file's text (never executed)."""
    try:
        with open_regular_text(path) as fh:
            text = fh.read()
    except OSError:
        return {}
    found: dict[str, object] = {}
    for key in keys:
        m = re.search(
            rf"['\"]{re.escape(key)}['\"]\s*:\s*('(?:[^'\\\n]|\\.)*'|\"(?:[^\"\\\n]|\\.)*\"|-?\d+)", text
        )
        if m:
            try:
                found[key] = ast.literal_eval(m.group(1))  # a single literal token: no code runs
            except (ValueError, SyntaxError):
                continue
    return found


def _elf_facts(path: str) -> tuple[Machine | None, bool]:
    """(the machine, links against musl) from the interpreter's ELF header and PT_INTERP."""
    try:
        with ElfFile.open(path) as elf:
            found = known_machine(elf.machine, elf.elf_class)
            interp = elf.interpreter or ""
    except (OSError, InputFormatError):
        return None, False
    return found, "ld-musl" in os.path.basename(interp)


def _cpython_suffixes(
    version: tuple[int, int], ext_suffix: str, soabi: str, alt_soabi: str | None, free_threaded: bool
) -> tuple[str, ...]:
    """CPython's `_PyImport_DynLoadFiletab` on Linux, in order (Python/dynload_shlib.c)."""
    suffixes = [ext_suffix]
    if alt_soabi:
        # A --with-pydebug build without trace refs also loads release-ABI modules (3.8+).
        suffixes.append(f".{alt_soabi}.so")
    if version >= (3, 15):
        # PEP 803 and gh-122931: abi3t (both builds) and multiarch-tagged stable-ABI names
        # first; plain abi3 stays out of free-threaded builds (#ifndef Py_GIL_DISABLED).
        # Measured on 3.15.0rc2: ext, .abi3-<plat>.so, .abi3.so, .abi3t-<plat>.so, .abi3t.so, .so.
        plat = soabi.split("-", 2)[2] if soabi.count("-") >= 2 else ""
        stable = ("abi3t",) if free_threaded else ("abi3", "abi3t")
        for tag in stable:
            if plat:
                suffixes.append(f".{tag}-{plat}.so")
            suffixes.append(f".{tag}.so")
    elif version >= (3, 2):
        # Before 3.15 the free-threaded builds (3.13t, 3.14t) still list .abi3.so: measured on
        # 3.14.3t ['.cpython-314t-darwin.so', '.abi3.so', '.so'] (cpython#120901 is open).
        suffixes.append(".abi3.so")
    suffixes.append(".so")
    return tuple(dict.fromkeys(suffixes))


def _wheel_arch(name: str) -> str:
    return _WHEEL_ARCH.get(name, name)


def _triplet(found: Machine, musl: bool, version: tuple[int, int]) -> str:
    # CPython's configure names musl in the triplet from 3.11 (gh-87278, merged early 2022);
    # before, musl builds said -linux-gnu. Best effort: distributions may patch this.
    if musl and version >= (3, 11):
        return found.triplet.replace("-linux-gnu", "-linux-musl")
    return found.triplet


def _glibc_of(found: Machine, root: str | None) -> tuple[int, int] | None:
    """The glibc version of the first libc.so.6 of this machine in ld.so's default directories."""
    dirs = dict.fromkeys((*default_search_dirs(found.name, found.elf_class, "debian"),
                          *default_search_dirs(found.name, found.elf_class, "generic")))
    for d in dirs:
        path = _in_root(root, os.path.join(d, "libc.so.6"))
        version = _libc_version(path, found.name)
        if version is not None:
            return version
    return None


def _libc_version(path: str, wanted: str) -> tuple[int, int] | None:
    try:
        with ElfFile.open(path) as elf:
            if abi_name(elf.machine, elf.elf_class) != wanted:
                return None  # another ABI's libc (a multilib /lib): not the one ld.so would load
            nodes = [_GLIBC_NODE.fullmatch(v.name) for v in elf.version_definitions]
    except (OSError, InputFormatError):
        return None
    try:
        data = read_regular(path)
    except OSError:
        data = b""
    # gnu_get_libc_version()'s string is in the banner ("... stable release version 2.36.");
    # a release that adds no symbol has no GLIBC_2.N node of its own, so the banner comes first.
    banner = _LIBC_BANNER.search(data)
    if banner:
        return int(banner.group(1)), int(banner.group(2))
    versions = [(int(m.group(1)), int(m.group(2))) for m in nodes if m]
    return max(versions) if versions else None


def interpreter_abi(interpreter: str, prefix: str | None = None, root: str | None = None) -> InterpreterABI | None:
    """What `interpreter` imports and runs with, read from its installation (None: cannot tell).

    `interpreter` and `prefix` are host paths; with `root`, an interpreter path outside it is
    taken as seen from inside it, and absolute paths read from pyvenv.cfg and the libc search
    are resolved inside it. The prefix defaults to the parent of the interpreter's bin/.
    """
    given, real = _host_interpreter(interpreter, root)
    prefix = os.path.abspath(prefix) if prefix else os.path.dirname(os.path.dirname(given))
    hints = _hints(given, real, prefix, root)
    found, musl = _elf_facts(real)
    lib_dirs = _lib_dirs(hints)
    for libdir, dir_version, ft_dir, pypy_dir in lib_dirs:
        abi = _from_sysconfig(libdir, dir_version, ft_dir, pypy_dir, hints, found, musl, root)
        if abi is not None:
            return abi
    # No sysconfigdata: what CPython's configure would have produced for this version and machine.
    version = hints.version or (lib_dirs[0][1] if lib_dirs else None)
    if version is None or version[0] != 3 or found is None:
        return None
    # A name like python3.13t says free-threaded; so does a lib/python3.13t with no lib/python3.13.
    ft_dirs = {ft for _d, v, ft, _p in lib_dirs if v == version}
    free_threaded = "t" in hints.abiflags or ft_dirs == {True}
    glibc = None if musl else _glibc_of(found, root)
    arch = _wheel_arch(found.name)
    if hints.pypy:
        # PyPy's tag (pypy39-pp73) carries its own release number: not derivable from the version.
        return InterpreterABI(version, "pypy", None, (), free_threaded, arch, glibc, DERIVED)
    flags = hints.abiflags or ("t" if free_threaded else "")
    if version < (3, 8) and "m" not in flags:
        flags += "m"  # pymalloc's "m": the default ABI flag before 3.8
    soabi = f"cpython-{version[0]}{version[1]}{flags}-{_triplet(found, musl, version)}"
    suffixes = _cpython_suffixes(version, f".{soabi}.so", soabi, None, free_threaded)
    return InterpreterABI(version, "cpython", soabi, suffixes, free_threaded, arch, glibc, DERIVED)


def _from_sysconfig(
    libdir: str, version: tuple[int, int], ft_dir: bool, pypy_dir: bool, hints: _Hints,
    found: Machine | None, musl: bool, root: str | None,
) -> InterpreterABI | None:
    """The ABI as the lib dir's sysconfigdata gives it (None: no usable file there)."""
    flags = hints.abiflags or ("t" if ft_dir else "")
    if version < (3, 8) and "m" not in flags and not pypy_dir:
        flags += "m"
    path = _sysconfig_file(libdir, flags, found.triplet if found else None)
    if path is None:
        return None
    cv = _config_vars(path, ("SOABI", "EXT_SUFFIX", "MULTIARCH", "ALT_SOABI", "ABIFLAGS", "Py_GIL_DISABLED",
                             "VERSION"))
    soabi, ext, multiarch, alt = cv.get("SOABI"), cv.get("EXT_SUFFIX"), cv.get("MULTIARCH"), cv.get("ALT_SOABI")
    if not isinstance(soabi, str) or not isinstance(ext, str) or not ext.startswith("."):
        return None
    m = re.fullmatch(r"(\d+)\.(\d+)", str(cv.get("VERSION", "")))
    if m:
        version = (int(m.group(1)), int(m.group(2)))
    if found is None and isinstance(multiarch, str) and multiarch:
        found = known_machine(multiarch.split("-", 1)[0])  # not an ELF file (a wrapper): trust MULTIARCH
    if found is None:
        return None
    pypy = soabi.startswith("pypy") or pypy_dir or hints.pypy
    free_threaded = bool(cv.get("Py_GIL_DISABLED")) or "t" in str(cv.get("ABIFLAGS") or "") or ft_dir
    if pypy:
        # PyPy's _imp.extension_suffixes() is its one tagged suffix: no .abi3.so, no bare .so.
        suffixes: tuple[str, ...] = (ext,)
    else:
        suffixes = _cpython_suffixes(version, ext, soabi, alt if isinstance(alt, str) else None, free_threaded)
    return InterpreterABI(
        version=version,
        implementation="pypy" if pypy else "cpython",
        soabi=soabi,
        extension_suffixes=suffixes,
        free_threaded=free_threaded,
        machine=_wheel_arch(found.name),
        glibc=None if musl else _glibc_of(found, root),
        source=path,
    )


def module_name_for(filename: str, abi: InterpreterABI) -> str | None:
    """The module name the interpreter's FileFinder would import this file as (None: never)."""
    name = os.path.basename(filename)
    # FileFinder.find_spec(M) looks for M + suffix for each suffix; so the file is module M iff
    # it is M + some suffix, M non-empty and without a dot (find_spec uses the last component).
    for suffix in abi.extension_suffixes:
        if name.endswith(suffix):
            module = name[: -len(suffix)]
            if module and "." not in module:
                return module
    return None


def extension_tag_of(filename: str) -> str | None:
    """The ABI tag in an extension module's file name ("cpython-312-x86_64-linux-gnu", "abi3"), or None."""
    name = os.path.basename(filename)
    if not name.endswith(".so"):
        return None
    stem = name[:-3]
    head, dot, tag = stem.rpartition(".")
    if not dot or not head:
        return None
    return tag if _TAG_IN_NAME.fullmatch(tag) else None


def _platforms(abi: InterpreterABI) -> list[str]:
    """The platform tags pip accepts for this interpreter (packaging's _linux_platforms, for a target)."""
    arch = abi.machine
    platforms: list[str] = []
    if abi.glibc is not None and arch in _MANYLINUX_ARCHS:
        major, minor = abi.glibc
        # glibc 2.17 is the oldest manylinux level anywhere, 2.5 on x86 (packaging's too_old_glibc2).
        oldest = 5 if arch in ("x86_64", "i686") else 17
        if major == 2:
            for level in range(minor, oldest - 1, -1):
                platforms.append(f"manylinux_2_{level}_{arch}")
                legacy = _LEGACY_MANYLINUX.get((2, level))
                if legacy:
                    platforms.append(f"{legacy}_{arch}")
    platforms.append(f"linux_{arch}")
    return platforms


def _abi_tag(abi: InterpreterABI) -> str:
    """The interpreter's own ABI tag (packaging's _cpython_abis / _generic_abi)."""
    if abi.soabi and abi.soabi.startswith("cpython-"):
        return "cp" + abi.soabi.split("-")[1]
    if abi.soabi and abi.soabi.startswith("pypy"):
        return "_".join(abi.soabi.split("-")[:2])
    return f"cp{abi.version[0]}{abi.version[1]}" + ("t" if abi.free_threaded else "")


@lru_cache(maxsize=64)
def _supported_tags(abi: InterpreterABI) -> frozenset[Tag]:
    """Every tag pip would accept for this interpreter on its platform."""
    platforms = _platforms(abi)
    nodot = f"{abi.version[0]}{abi.version[1]}"
    if abi.implementation == "pypy":
        tags = list(generic_tags(f"pp{nodot}", [_abi_tag(abi)], platforms))
        tags += compatible_tags(abi.version, "pp3", platforms)
        return frozenset(tags)
    own = _abi_tag(abi)
    abis = [own]
    if abi.version >= (3, 8) and "d" in own[2:]:
        abis.append(own.replace("d", ""))  # a debug build also loads release-ABI modules
    tags = list(cpython_tags(abi.version, abis, platforms))
    tags += compatible_tags(abi.version, f"cp{nodot}", platforms)
    return frozenset(tags)


def _describe(abi: InterpreterABI) -> str:
    name = "PyPy" if abi.implementation == "pypy" else "CPython"
    text = f"{name} {abi.version[0]}.{abi.version[1]}"
    return f"free-threaded {text}" if abi.free_threaded else text


def _python_problem(interp: str, tag_abi: str, abi: InterpreterABI) -> str:
    """Why a wheel's (interpreter, ABI) tag pair does not fit the interpreter."""
    have = _describe(abi)
    m = re.fullmatch(r"([a-z]+?)(\d)(\d*)", interp)
    if not m:
        return f"is for {interp}-{tag_abi}; the interpreter is {have}"
    kind, major, minor = m.group(1), int(m.group(2)), int(m.group(3)) if m.group(3) else None
    wanted = f"{major}.{minor}" if minor is not None else f"{major}"
    if kind == "pp" and abi.implementation != "pypy":
        return f"is for PyPy ({interp}-{tag_abi}); the interpreter is {have}"
    if kind == "cp" and abi.implementation != "cpython" and tag_abi != "none":
        return f"is for CPython {wanted} ({interp}-{tag_abi}); the interpreter is {have}"
    if major != abi.version[0]:
        return f"is for Python {wanted} ({interp}); the interpreter is {have}"
    if kind not in ("cp", "pp", "py"):
        return f"is for {interp}-{tag_abi}; the interpreter is {have}"
    newer = minor is not None and minor > abi.version[1]
    if tag_abi in ("abi3", "abi3t"):
        if tag_abi == "abi3" and abi.free_threaded:
            return f"uses the stable ABI ({interp}-abi3), which {have} does not support (pip will not pick it)"
        if tag_abi == "abi3t" and not abi.free_threaded:
            return f"uses the free-threaded stable ABI (abi3t), which {have} with the GIL does not accept ({interp}-abi3t)"
        if newer:
            return f"needs CPython {wanted} or newer ({interp}-{tag_abi}); the interpreter is {have}"
        return f"is for {interp}-{tag_abi}; the interpreter is {have}"
    if tag_abi == "none":
        if newer:
            return f"needs Python {wanted} or newer ({interp}); the interpreter is {have}"
        return f"is for {'CPython ' if kind == 'cp' else 'Python '}{wanted} ({interp}); the interpreter is {have}"
    own = _abi_tag(abi)
    flags = re.fullmatch(r"cp\d+([a-z]*)", tag_abi)
    if kind == "cp" and flags and minor == abi.version[1]:
        if "t" in flags.group(1) and not abi.free_threaded:
            return f"is for free-threaded CPython {wanted} ({tag_abi}); the interpreter is CPython {wanted} with the GIL ({own})"
        if "t" not in flags.group(1) and abi.free_threaded:
            return f"is for CPython {wanted} with the GIL ({tag_abi}); the interpreter is {have} ({own})"
        if "d" in flags.group(1):
            return f"is for a debug build of CPython {wanted} ({tag_abi}); the interpreter is {have} ({own})"
        return f"is for the ABI {tag_abi}; the interpreter is {have} ({own})"
    name = "CPython" if kind == "cp" else "PyPy" if kind == "pp" else "Python"
    if kind == "cp" and flags and "t" in flags.group(1):
        name = "free-threaded CPython"
    shown = tag_abi if kind == "cp" and flags else interp
    return f"is for {name} {wanted} ({shown}); the interpreter is {have}"


def _platform_problem(platform: str, abi: InterpreterABI) -> str:
    """Why a wheel's platform tag does not fit the interpreter's machine and libc."""
    have_glibc = f"glibc {abi.glibc[0]}.{abi.glibc[1]}" if abi.glibc else None
    m = re.fullmatch(r"manylinux_(\d+)_(\d+)_(\w+)", platform)
    legacy = re.fullmatch(r"(manylinux1|manylinux2010|manylinux2014)_(\w+)", platform)
    glibc: tuple[int, int] | None = None
    if m:
        glibc, arch = (int(m.group(1)), int(m.group(2))), m.group(3)
    elif legacy:
        glibc, arch = _LEGACY_GLIBC[legacy.group(1)], legacy.group(2)
    if glibc is not None:
        if arch != abi.machine:
            return f"is for {arch}; the interpreter is {abi.machine}"
        if arch not in _MANYLINUX_ARCHS:
            return f"is a manylinux wheel for {arch}, where pip accepts no manylinux tag"
        need = f"needs glibc {glibc[0]}.{glibc[1]} ({platform})"
        if have_glibc is None:
            return f"{need}; no glibc was found for this interpreter (musl, or no libc.so.6)"
        return f"{need}; this system has {have_glibc}"
    musl = re.fullmatch(r"musllinux_(\d+)_(\d+)_(\w+)", platform)
    if musl:
        if musl.group(3) != abi.machine:
            return f"is for {musl.group(3)}; the interpreter is {abi.machine}"
        if have_glibc:
            return f"is for musl libc ({platform}); the interpreter runs with {have_glibc}"
        return f"is for musl libc ({platform}); ldscope does not read which musl a system has"
    linux = re.fullmatch(r"linux_(\w+)", platform)
    if linux:
        return f"is for {linux.group(1)}; the interpreter is {abi.machine}"
    for prefix, system in (("macosx", "macOS"), ("win", "Windows"), ("ios", "iOS"), ("android", "Android"),
                           ("pyodide", "WebAssembly"), ("emscripten", "WebAssembly"), ("pyemscripten", "WebAssembly")):
        if platform.startswith(prefix):
            return f"is for {system} ({platform}); the interpreter runs on Linux ({abi.machine})"
    return f"is for the platform {platform}; the interpreter accepts e.g. linux_{abi.machine}"


def wheel_tag_problems(wheel_filename: str, abi: InterpreterABI) -> list[str]:
    """Why pip would not install this wheel for the interpreter (empty: it would)."""
    filename = os.path.basename(wheel_filename)
    try:
        _name, _version, _build, tags = parse_wheel_filename(filename)
    except ValueError as err:  # InvalidWheelFilename; InvalidVersion from older packaging
        return [f"{filename} is not a valid wheel file name ({err})"]
    supported = _supported_tags(abi)
    if tags & supported:
        return []
    good_pairs = {(t.interpreter, t.abi) for t in supported}
    good_platforms = {t.platform for t in supported}
    pairs = sorted({(t.interpreter, t.abi) for t in tags})
    platforms = sorted({t.platform for t in tags})
    problems: list[str] = []
    if not any(p in good_pairs for p in pairs):
        problems += [_python_problem(interp, tag_abi, abi) for interp, tag_abi in pairs]
    if not any(p in good_platforms for p in platforms):
        problems += [_platform_problem(p, abi) for p in platforms]
    if not problems:
        # Each part fits something, but no whole tag does (e.g. cp311-cp311-any).
        listed = ", ".join(sorted(str(t) for t in tags))
        problems.append(f"has no tag this interpreter accepts ({listed}); {_describe(abi)} on {abi.machine}")
    return [f"{filename} {text}" for text in dict.fromkeys(problems)]
