"""Fetch the pinned Debian source packages, build the projects and capture their link lines.

Sources come from the archive this machine's apt already uses (deb.debian.org, bookworm main;
`pins.json` names the exact versions) through a private apt configuration: its own sources.list
with a `deb-src` line and its own lists and cache directories, so /etc/apt is never edited and
no root is needed (`apt-get source --download-only PKG=VERSION`, then `dpkg-source -x`).

Each project builds with its own build system (make, or CMake with make or ninja) in a tree of
its own, with the C/C++ compiler replaced by a logging wrapper: the wrapper appends its exact
argv (as the real driver name, `gcc`, `g++` or `aarch64-linux-gnu-gcc`) and working directory
to a log, then execs the real driver.  That log gives the link commands exactly as the build
system ran them (the same commands `make V=1` / `ninja -v` print, without having to undo the
shell's quoting and line continuations).  A link command is a driver command with `-o`, no
`-c`/`-S`/`-E`/`-M`, and no source file among its inputs.

Everything is cached under `$LDSCOPE_TEST_CACHE/link-projects-KEY/` (default
`~/.cache/ldscope-tests`), KEY hashing the pins, the recipes, HARNESS_VERSION and the versions
of the toolchain packages; a lock file makes pytest-xdist workers build each project once.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from tests.scan_support import CACHE_DIR, _locked

HERE = Path(__file__).resolve().parent
PINS = json.loads((HERE / "pins.json").read_text())
FETCH_FAILURE_TTL = 3600.0  # seconds a failed download is remembered (then tried again)
HARNESS_VERSION = 1  # bump when a recipe's meaning, the capture or the mutations change

# The toolchain packages whose versions go into the cache key (a missing one counts as "none").
TOOL_PACKAGES = ("gcc-12", "g++-12", "binutils", "binutils-x86-64-linux-gnu", "lld-14", "mold",
                 "libc6-dev", "libstdc++-12-dev", "cmake", "ninja-build", "make", "dpkg-dev",
                 "gcc-12-aarch64-linux-gnu", "binutils-aarch64-linux-gnu", "libc6-dev-arm64-cross")


class Unavailable(Exception):
    """A project cannot be fetched or built here (the message says why)."""


@dataclass(frozen=True)
class Recipe:
    """How one corpus project is built: shell steps run in its unpacked source tree.

    The steps see $CC and $CXX (the logging wrappers), $AR and $RANLIB, and $JOBS."""

    name: str
    package: str
    steps: tuple[str, ...]
    target: str | None = None  # a cross triplet (aarch64-linux-gnu), None for the native build
    tools: tuple[str, ...] = ("make",)
    max_lines: int = 60  # variants kept (ldscope's C++ predictions with big archives are slower)

    def spec(self) -> list[object]:
        """What goes into the cache key."""
        return [self.name, self.package, PINS["packages"][self.package], list(self.steps), self.target]


_BZIP2 = (
    # the static library and the programs linked with it, then the shared library; objects are
    # PIC for both so the two makefiles share them.  A libbz2.so symlink (the -dev package's)
    # makes later `-lbz2` mean the shared library, so -Bstatic/-static mutations differ.
    'make -j"$JOBS" CC="$CC" AR="$AR" RANLIB="$RANLIB" CFLAGS="-O1 -g0 -fPIC -D_FILE_OFFSET_BITS=64" '
    'libbz2.a bzip2 bzip2recover',
    'make -f Makefile-libbz2_so CC="$CC" CFLAGS="-O1 -g0 -fPIC -D_FILE_OFFSET_BITS=64"',
    "ln -sf libbz2.so.1.0 libbz2.so",
)

RECIPES: tuple[Recipe, ...] = (
    Recipe("bzip2", "bzip2", _BZIP2),
    Recipe("lz4", "lz4", (
        'make -j"$JOBS" -C lib CC="$CC" AR="$AR" CFLAGS="-O1 -g0" liblz4.a liblz4',
        'make -j"$JOBS" -C programs CC="$CC" CFLAGS="-O1 -g0" lz4',
    )),
    Recipe("cjson", "cjson", (
        'cmake -S . -B build -G "Unix Makefiles" -DCMAKE_C_COMPILER="$CC" -DCMAKE_BUILD_TYPE=None '
        '-DCMAKE_C_FLAGS="-O1 -g0" -DENABLE_CUSTOM_COMPILER_FLAGS=OFF -DENABLE_CJSON_TEST=ON '
        '-DENABLE_CJSON_UTILS=ON -DBUILD_SHARED_AND_STATIC_LIBS=ON >/dev/null',
        'make -j"$JOBS" -C build VERBOSE=1',
    ), tools=("make", "cmake")),
    Recipe("jansson", "jansson", (
        'cmake -S . -B build -G Ninja -DCMAKE_C_COMPILER="$CC" -DCMAKE_BUILD_TYPE=None '
        '-DCMAKE_C_FLAGS="-O1 -g0" -DJANSSON_BUILD_SHARED_LIBS=ON -DJANSSON_BUILD_DOCS=OFF '
        '-DJANSSON_EXAMPLES=ON >/dev/null',
        'ninja -v -j"$JOBS" -C build',
    ), tools=("cmake", "ninja")),
    Recipe("yaml-cpp", "yaml-cpp", (
        'cmake -S . -B build -G Ninja -DCMAKE_CXX_COMPILER="$CXX" -DCMAKE_BUILD_TYPE=None '
        '-DCMAKE_CXX_FLAGS="-O0 -g0" -DYAML_BUILD_SHARED_LIBS=ON -DYAML_CPP_BUILD_TESTS=OFF '
        '-DYAML_CPP_BUILD_TOOLS=ON -DYAML_CPP_BUILD_CONTRIB=ON >/dev/null',
        'ninja -v -j"$JOBS" -C build',
    ), tools=("cmake", "ninja")),
    Recipe("libyaml", "libyaml", (
        # the static library (CMake's default here) and its test programs linked with it
        'cmake -S . -B build -G Ninja -DCMAKE_C_COMPILER="$CC" -DCMAKE_BUILD_TYPE=None '
        '-DCMAKE_C_FLAGS="-O1 -g0" -DBUILD_TESTING=ON >/dev/null',
        'ninja -v -j"$JOBS" -C build',
    ), tools=("cmake", "ninja")),
    Recipe("googletest", "googletest", (
        # C++ static archives: libgtest.a, libgtest_main.a and the samples linked with them
        'cmake -S . -B build -G Ninja -DCMAKE_CXX_COMPILER="$CXX" -DCMAKE_BUILD_TYPE=None '
        '-DCMAKE_CXX_FLAGS="-O0 -g0" -DBUILD_GMOCK=OFF -Dgtest_build_samples=ON >/dev/null',
        'ninja -v -j"$JOBS" -C build',
    ), tools=("cmake", "ninja"), max_lines=24),
    Recipe("bzip2-aarch64", "bzip2", _BZIP2, target="aarch64-linux-gnu"),
    Recipe("zstd", "libzstd", (
        # CMake's build (build/cmake): libzstd.so (-soname), libzstd.a, the programs and the
        # tests linked with lib/libzstd.a; zstd also with the installed libz.so and liblzma.so
        # named by their full paths (CMP0060 NEW), paramgrill with -lm
        'cmake -S build/cmake -B out -G Ninja -DCMAKE_C_COMPILER="$CC" -DCMAKE_BUILD_TYPE=None '
        '-DCMAKE_C_FLAGS="-O1 -g0" -DZSTD_BUILD_TESTS=ON -DZSTD_ZLIB_SUPPORT=ON -DZSTD_LZMA_SUPPORT=ON '
        '-DZSTD_LZ4_SUPPORT=OFF >/dev/null',
        'ninja -v -j"$JOBS" -C out',
    ), tools=("cmake", "ninja")),
    Recipe("xz-utils", "xz-utils", (
        # autotools and libtool: liblzma.so with its version script (liblzma_linux.map) and
        # -lpthread, then xz, xzdec, lzmadec, lzmainfo and the test programs linked with
        # ../src/liblzma/.libs/liblzma.so by path (`make check TESTS=` builds them, runs none)
        './configure CC="$CC" CFLAGS="-O1 -g0" --disable-nls --disable-doc --disable-scripts '
        '--disable-lzma-links >/dev/null',
        'make -j"$JOBS" V=1 >/dev/null',
        'make -j"$JOBS" V=1 -C tests check TESTS= >/dev/null',
    )),
    Recipe("pcre2", "pcre2", (
        # CMake, shared and static: libpcre2-8.so, libpcre2-posix.so (with -rpath and
        # libpcre2-8.so.0.11.2 by path), pcre2grep (libpcre2-posix.a -lz -lbz2 libpcre2-8.a),
        # pcre2test, pcre2posix_test; no JIT, no readline/libedit
        'cmake -S . -B build -G Ninja -DCMAKE_C_COMPILER="$CC" -DCMAKE_BUILD_TYPE=None '
        '-DCMAKE_C_FLAGS="-O1 -g0" -DBUILD_SHARED_LIBS=ON -DBUILD_STATIC_LIBS=ON -DPCRE2_SUPPORT_JIT=OFF '
        '-DPCRE2_SUPPORT_LIBZ=ON -DPCRE2_SUPPORT_LIBBZ2=ON -DPCRE2_SUPPORT_LIBREADLINE=OFF '
        '-DPCRE2_SUPPORT_LIBEDIT=OFF >/dev/null',
        'ninja -v -j"$JOBS" -C build',
    ), tools=("cmake", "ninja")),
)


@dataclass(frozen=True)
class LinkCommand:
    """One link command the build ran: the driver argv and its directory (relative to root)."""

    argv: tuple[str, ...]
    cwd: str

    @property
    def shared(self) -> bool:
        """Does it link a shared library?"""
        return "-shared" in self.argv

    @property
    def output(self) -> str:
        """The `-o` file."""
        return self.argv[self.argv.index("-o") + 1] if "-o" in self.argv[:-1] else ""


@dataclass
class Project:
    """A built corpus project."""

    recipe: Recipe
    root: Path  # the unpacked, built source tree
    links: list[LinkCommand] = field(default_factory=list)
    build_seconds: float = 0.0

    @property
    def name(self) -> str:
        """The corpus name (bzip2, bzip2-aarch64, ...)."""
        return self.recipe.name


def tool_versions() -> dict[str, str]:
    """Installed versions of TOOL_PACKAGES (dpkg's view)."""
    proc = subprocess.run(["dpkg-query", "-W", "-f", "${Package} ${Version}\n", *TOOL_PACKAGES],
                          capture_output=True, text=True)
    got = dict(line.split(" ", 1) for line in proc.stdout.splitlines() if " " in line)
    return {p: got.get(p, "none") for p in TOOL_PACKAGES}


def cache_key() -> str:
    """KEY of `link-projects-KEY`: pins, recipes, harness version and toolchain versions."""
    blob = json.dumps([PINS, [r.spec() for r in RECIPES], HARNESS_VERSION, tool_versions()],
                      sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:12]


def cache_root() -> Path:
    """This machine's corpus directory."""
    return CACHE_DIR / f"link-projects-{cache_key()}"


def _apt_options(base: Path) -> list[str]:
    return [
        "-o", f"Dir::Etc::SourceList={base / 'sources.list'}",
        "-o", "Dir::Etc::SourceParts=/dev/null",
        "-o", f"Dir::State::Lists={base / 'lists'}",
        "-o", f"Dir::Cache={base / 'cache'}",
        "-o", "APT::Sandbox::User=root" if os.geteuid() == 0 else "Debug::NoLocking=0",
        "-q",
    ]


def _last(proc: subprocess.CompletedProcess[str]) -> str:
    lines = (proc.stderr or "").strip().splitlines() or (proc.stdout or "").strip().splitlines()
    return lines[-1] if lines else f"exit {proc.returncode}"


def fetch_sources(root: Path, package: str) -> Path:
    """Download one pinned source package (once) into root/sources; that directory.

    One package at a time, so a pin the archive no longer carries (a point release replaced it)
    makes only its own projects unavailable."""
    dest = root / "sources"
    done = dest / f".fetched-{package}"
    failed = dest / f".failed-{package}"
    with _locked(root / "sources.lock"):
        if done.exists():
            return dest
        if failed.exists() and failed.stat().st_mtime > time.time() - FETCH_FAILURE_TTL:
            raise Unavailable(failed.read_text())
        for tool in ("apt-get", "dpkg-source"):
            if shutil.which(tool) is None:
                raise Unavailable(f"{tool} is not installed (apt-get install dpkg-dev)")
        apt = root / "apt"
        opts = _apt_options(apt)
        dest.mkdir(parents=True, exist_ok=True)
        if not (apt / ".updated").exists():
            (apt / "lists" / "partial").mkdir(parents=True, exist_ok=True)
            (apt / "cache" / "archives" / "partial").mkdir(parents=True, exist_ok=True)
            (apt / "sources.list").write_text(f"deb-src {PINS['archive']} {PINS['suite']} {PINS['component']}\n")
            proc = subprocess.run(["apt-get", *opts, "update"], capture_output=True, text=True, timeout=600)
            if proc.returncode != 0:
                failed.write_text(f"apt-get update (deb-src) failed: {_last(proc)}")
                raise Unavailable(failed.read_text())
            (apt / ".updated").write_text("")
        wanted = f"{package}={PINS['packages'][package]}"
        proc = subprocess.run(["apt-get", *opts, "source", "--download-only", wanted], cwd=dest,
                              capture_output=True, text=True, timeout=600)
        if proc.returncode != 0:
            failed.write_text(f"apt-get source {wanted} failed: {_last(proc)}")
            raise Unavailable(failed.read_text())
        done.write_text(wanted + "\n")
    return dest


def _dsc(sources: Path, package: str) -> Path:
    version = PINS["packages"][package].split(":", 1)[-1]
    found = sorted(p for p in sources.glob("*.dsc") if p.name.endswith(f"_{version}.dsc")
                   and _dsc_source(p) == package)
    if not found:
        raise Unavailable(f"no {package}_{version}.dsc in {sources}")
    return found[0]


def _dsc_source(path: Path) -> str:
    for line in path.read_text(errors="replace").splitlines():
        if line.startswith("Source:"):
            return line.split(":", 1)[1].strip()
    return ""


_WRAPPER = """#!{python}
import json, os, sys
argv = [{real!r}, *sys.argv[1:]]
with open({log!r}, "a") as f:
    f.write(json.dumps({{"argv": argv, "cwd": os.getcwd()}}) + "\\n")
os.execvp(argv[0], argv)
"""


def _wrappers(root: Path, target: str | None) -> dict[str, str]:
    """The logging CC and CXX for a build (and the binutils it uses)."""
    bindir = root / ".ldscope-wrap"
    bindir.mkdir(exist_ok=True)
    log = root / ".ldscope-commands.jsonl"
    prefix = f"{target}-" if target else ""
    env: dict[str, str] = {}
    for var, real in (("CC", f"{prefix}gcc"), ("CXX", f"{prefix}g++")):
        path = bindir / real
        path.write_text(_WRAPPER.format(python="/usr/bin/python3", real=real, log=str(log)))
        path.chmod(0o755)
        env[var] = str(path)
    env["AR"] = f"{prefix}ar"
    env["RANLIB"] = f"{prefix}ranlib"
    return env


_SOURCE_SUFFIXES = (".c", ".cc", ".cpp", ".cxx", ".C", ".c++", ".s", ".S", ".i", ".ii")
_SEPARATE_ARG = {"-o", "-MF", "-MT", "-MQ", "-x", "-include", "-imacros", "-isystem", "-idirafter",
                 "-iquote", "-I", "-L", "-D", "-U", "-Xlinker", "-T", "-u", "-e", "-z", "-l"}


def is_link_command(argv: list[str]) -> bool:
    """A driver command that links objects/libraries (no compile-only flag, no source, not a
    configure check: no `-` (source on stdin), no output named conftest)."""
    words = argv[1:]
    if "-o" not in words or any(w in ("-c", "-S", "-E", "-M", "-MM", "--version", "-v", "-") for w in words):
        return False
    out = words[words.index("-o") + 1:][:1]
    if out and Path(out[0]).name.startswith("conftest"):
        return False
    prev = ""
    for w in words:
        if not w.startswith("-") and prev not in _SEPARATE_ARG and w.endswith(_SOURCE_SUFFIXES):
            return False
        prev = w
    return True


def capture(root: Path, log: Path) -> list[LinkCommand]:
    """The link commands in a wrapper log (CMake's own compiler checks left out)."""
    out: list[LinkCommand] = []
    seen: set[tuple[tuple[str, ...], str]] = set()
    for line in log.read_text().splitlines():
        rec = json.loads(line)
        cwd = Path(rec["cwd"])
        if "CMakeFiles" in cwd.parts or not is_link_command(rec["argv"]):
            continue
        cmd = LinkCommand(tuple(rec["argv"]), os.path.relpath(cwd, root))
        if (cmd.argv, cmd.cwd) not in seen:
            seen.add((cmd.argv, cmd.cwd))
            out.append(cmd)
    return out


def build(recipe: Recipe, jobs: int = 2) -> Project:
    """The recipe's project, built and its link lines captured (cached)."""
    base = cache_root()
    base.mkdir(parents=True, exist_ok=True)
    proj = base / "projects" / recipe.name
    done = proj.with_suffix(".json")
    failed = proj.with_suffix(".failed")
    with _locked(base / f"{recipe.name}.lock"):
        if done.exists():
            data = json.loads(done.read_text())
            return Project(recipe, Path(data["root"]),
                           in_fixed_order([LinkCommand(tuple(c["argv"]), c["cwd"]) for c in data["links"]]),
                           data["build_seconds"])
        if failed.exists():
            raise Unavailable(failed.read_text())
        missing = [t for t in recipe.tools if shutil.which(t) is None]
        if recipe.target and shutil.which(f"{recipe.target}-gcc") is None:
            missing.append(f"{recipe.target}-gcc")
        if missing:
            raise Unavailable(f"{recipe.name}: {', '.join(missing)} not installed")
        start = time.monotonic()
        sources = fetch_sources(base, recipe.package)
        shutil.rmtree(proj, ignore_errors=True)
        proj.parent.mkdir(parents=True, exist_ok=True)
        proc = subprocess.run(["dpkg-source", "--no-check", "-x", str(_dsc(sources, recipe.package)),
                               str(proj)], capture_output=True, text=True, timeout=600)
        if proc.returncode != 0:
            raise Unavailable(f"dpkg-source -x {recipe.package}: {_last(proc)}")
        env = {**os.environ, **_wrappers(proj, recipe.target), "JOBS": str(jobs), "LC_ALL": "C"}
        for step in recipe.steps:
            proc = subprocess.run(["bash", "-euo", "pipefail", "-c", step], cwd=proj, env=env,
                                  capture_output=True, text=True, timeout=1200)
            if proc.returncode != 0:
                msg = f"{recipe.name}: `{step}` failed: {_last(proc)}"
                failed.write_text(msg)
                raise Unavailable(msg)
        links = capture(proj, proj / ".ldscope-commands.jsonl")
        seconds = round(time.monotonic() - start, 1)
        done.write_text(json.dumps({"root": str(proj), "build_seconds": seconds,
                                    "links": [{"argv": list(c.argv), "cwd": c.cwd} for c in links]},
                                   indent=1) + "\n")
    return Project(recipe, proj, in_fixed_order(links), seconds)


def in_fixed_order(links: list[LinkCommand]) -> list[LinkCommand]:
    """The link commands by (directory, output): a parallel build (-j2) runs them in an order of
    its own each time, and a command's number here is part of known.py's keys."""
    return sorted(links, key=lambda c: (c.cwd, c.output, c.argv))


def recipe(name: str) -> Recipe:
    """The recipe called `name`."""
    return next(r for r in RECIPES if r.name == name)
