"""Where the peer corpora come from, fetched once into a cache, and which files they hold.

Three sources:

* pyelftools' test files: `$LDSCOPE_PYELFTOOLS_TESTFILES`, else the shared read-only copy
  (`/work/shared/corpora/pyelftools-testfiles`, commit e5fa2a4f), else the `test/testfiles_*`
  folders of the pyelftools 0.33 sdist (a superset of that commit's files, byte-identical
  where both have a file), fetched with `pip download` into the cache.
* Debian cross packages (`libc6-*-cross`, `libstdc++6-*-cross`) for machines the suite did
  not read yet: installed (`.ci/run` installs them, so they are under /usr/<triplet>/), else
  `apt-get download` + `dpkg-deb -x` into the cache, keyed by the .deb's version.
* libc6-dbg's separate debug files (/usr/lib/debug/.build-id/**), installed or cached alike.

The cache is `$LDSCOPE_TEST_CACHE` (default ~/.cache/ldscope-tests, as the real-world tier),
not $XDG_CACHE_HOME: conftest.py points that at a fresh temporary directory. Downloads are
locked, so pytest-xdist workers fetch once. A source that cannot be had is `Unavailable`,
with the reason the tests skip with.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from tests.elf_oracle.sample import locked

ELF_MAGIC = b"\x7fELF"
AR_MAGIC = b"!<arch>\n"
SHARED_PYELFTOOLS = Path("/work/shared/corpora/pyelftools-testfiles")
PYELFTOOLS_SDIST = "pyelftools==0.33"
PYELFTOOLS_FOLDERS = ("testfiles_for_dwarfdump", "testfiles_for_location_info",
                      "testfiles_for_readelf", "testfiles_for_unittests")

# Debian 12 packages of machines (or ABIs) test_elf_foreign.py does not read: package →
# the directory under its root that holds the libraries, and why it is here.
CROSS_PACKAGES: dict[str, tuple[str, str]] = {
    "libc6-riscv64-cross": ("usr/riscv64-linux-gnu/lib", "RISC-V 64, little-endian"),
    "libstdc++6-riscv64-cross": ("usr/riscv64-linux-gnu/lib", "RISC-V C++ runtime"),
    "libc6-mips64el-cross": ("usr/mips64el-linux-gnuabi64/lib",
                             "MIPS64 n64: 64-bit r_info split in three"),
    "libstdc++6-mips64el-cross": ("usr/mips64el-linux-gnuabi64/lib", "MIPS64 C++ runtime"),
    "libc6-mips-cross": ("usr/mips-linux-gnu/lib", "MIPS32 big-endian, DT_MIPS_* tags"),
    "libc6-mipsn32-cross": ("usr/mips64-linux-gnuabin32/lib", "MIPS n32: ELFCLASS32 64-bit ABI"),
    "libc6-i386-cross": ("usr/i686-linux-gnu/lib", "i386 with REL (not RELA) relocations"),
    "libstdc++6-i386-cross": ("usr/i686-linux-gnu/lib", "i386 C++ runtime"),
    "libc6-armel-cross": ("usr/arm-linux-gnueabi/lib", "32-bit ARM soft-float"),
    "libc6-x32-cross": ("usr/x86_64-linux-gnux32/lib", "x32: EM_X86_64 in ELFCLASS32"),
    "libc6-powerpc-cross": ("usr/powerpc-linux-gnu/lib", "32-bit PowerPC, big-endian"),
    "libc6-ppc64-cross": ("usr/powerpc64-linux-gnu/lib", "64-bit PowerPC big-endian ELFv1"),
    "libc6-sparc64-cross": ("usr/sparc64-linux-gnu/lib", "SPARC v9, big-endian"),
    "libc6-m68k-cross": ("usr/m68k-linux-gnu/lib", "m68k, big-endian 32-bit"),
    "libc6-sh4-cross": ("usr/sh4-linux-gnu/lib", "SuperH"),
    "libc6-hppa-cross": ("usr/hppa-linux-gnu/lib", "PA-RISC, big-endian"),
    "libc6-arc-cross": ("usr/arc-linux-gnu/lib", "ARCv2"),
    "libc6.1-alpha-cross": ("usr/alpha-linux-gnu/lib", "Alpha: e_machine 0x9026, 8-byte hash words"),
}
DBG_PACKAGE = "libc6-dbg"
DBG_DIR = "usr/lib/debug/.build-id"


@dataclass(frozen=True, slots=True)
class Corpus:
    """One peer corpus: a name, a root directory and the files under it (relative paths)."""

    name: str
    root: str
    files: tuple[str, ...]
    origin: str  # where it came from, for the report

    def path(self, rel: str) -> str:
        return os.path.join(self.root, rel)


@dataclass(frozen=True, slots=True)
class Unavailable:
    """A corpus that could not be had, and why (the tests skip with this reason)."""

    name: str
    reason: str


def cache_root() -> Path:
    return Path(os.environ.get("LDSCOPE_TEST_CACHE", Path.home() / ".cache" / "ldscope-tests"))


def is_elf_or_archive(path: str) -> bool:
    try:
        with open(path, "rb") as fh:
            head = fh.read(8)
    except OSError:
        return False
    return head[:4] == ELF_MAGIC or head == AR_MAGIC


def corpus_files(root: str) -> tuple[str, ...]:
    """Regular (not symlinked) ELF files and ar archives under root, relative, sorted."""
    found: list[str] = []
    for base, dirs, names in os.walk(root):
        dirs.sort()
        for name in names:
            path = os.path.join(base, name)
            if os.path.islink(path) or not os.path.isfile(path):
                continue
            if is_elf_or_archive(path):
                found.append(os.path.relpath(path, root))
    return tuple(sorted(found))


# ------------------------------------------------------------------------ pyelftools
def _pyelftools_sdist_tree() -> Path | str:
    """The sdist's test folders, extracted into the cache (a str: why not)."""
    dest = cache_root() / f"pyelftools-sdist-{PYELFTOOLS_SDIST.split('==')[1]}"
    done = dest / ".complete"
    with locked(dest):
        if done.exists():
            return dest
        with tempfile.TemporaryDirectory() as tmp:
            res = subprocess.run(
                [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--no-binary", ":all:",
                 PYELFTOOLS_SDIST, "-d", tmp],
                capture_output=True, text=True, timeout=600,
            )
            archives = list(Path(tmp).glob("pyelftools-*.tar.gz"))
            if res.returncode != 0 or not archives:
                last = (res.stderr.strip().splitlines() or ["no output"])[-1]
                return f"pip download {PYELFTOOLS_SDIST} failed: {last}"
            with tarfile.open(archives[0]) as tar:
                for member in tar.getmembers():
                    parts = Path(member.name).parts
                    # Only the test folders' regular files; never an absolute or .. path.
                    if (len(parts) > 3 and parts[1] == "test" and parts[2] in PYELFTOOLS_FOLDERS
                            and member.isfile() and ".." not in parts):
                        target = dest.joinpath(*parts[2:])
                        target.parent.mkdir(parents=True, exist_ok=True)
                        with tar.extractfile(member) as src, open(target, "wb") as out:  # type: ignore[union-attr]
                            shutil.copyfileobj(src, out)
        done.write_text(PYELFTOOLS_SDIST + "\n")
    return dest


@cache
def pyelftools_corpus() -> Corpus | Unavailable:
    override = os.environ.get("LDSCOPE_PYELFTOOLS_TESTFILES")
    if override:
        return Corpus("pyelftools", override, corpus_files(override), f"$LDSCOPE_PYELFTOOLS_TESTFILES={override}")
    if SHARED_PYELFTOOLS.is_dir():
        root = str(SHARED_PYELFTOOLS)
        return Corpus("pyelftools", root, corpus_files(root), f"{root} (pyelftools commit e5fa2a4f)")
    tree = _pyelftools_sdist_tree()
    if isinstance(tree, str):
        return Unavailable("pyelftools", tree)
    return Corpus("pyelftools", str(tree), corpus_files(str(tree)), f"{PYELFTOOLS_SDIST} sdist, test/testfiles_*")


# ---------------------------------------------------------------------------- Debian
def _installed_version(package: str) -> str | None:
    if shutil.which("dpkg-query") is None:
        return None
    res = subprocess.run(["dpkg-query", "-W", "-f=${Status} ${Version}", package],
                         capture_output=True, text=True)
    if res.returncode != 0 or not res.stdout.startswith("install ok installed"):
        return None
    return res.stdout.split()[-1]


def _candidate_version(package: str) -> str | None:
    if shutil.which("apt-cache") is None:
        return None
    res = subprocess.run(["apt-cache", "show", "--no-all-versions", package],
                         capture_output=True, text=True)
    for line in res.stdout.splitlines():
        if line.startswith("Version: "):
            return line.split(" ", 1)[1].strip()
    return None


def _installed_files(package: str, subdir: str) -> tuple[str, ...]:
    """The package's own ELF files under /subdir (dpkg -L: a directory can hold several
    packages' files, e.g. libc6-*-cross and libstdc++6-*-cross)."""
    res = subprocess.run(["dpkg", "-L", package], capture_output=True, text=True)
    top = os.path.join("/", subdir)
    paths = [p for p in res.stdout.splitlines() if p.startswith(top + "/")]
    return tuple(sorted(os.path.relpath(p, top) for p in paths
                        if not os.path.islink(p) and os.path.isfile(p) and is_elf_or_archive(p)))


def debian_root(package: str, subdir: str) -> tuple[str, str] | str:
    """(root, origin) holding `subdir` of the package: "/" when installed, else the package
    downloaded and unpacked into the cache; a str says why neither."""
    installed = _installed_version(package)
    if installed is not None and os.path.isdir(os.path.join("/", subdir)):
        return "/", f"installed {package} {installed}"
    if shutil.which("apt-get") is None or shutil.which("dpkg-deb") is None:
        return f"{package} is not installed and apt-get/dpkg-deb are absent (apt-get install {package})"
    version = _candidate_version(package)
    if version is None:
        return f"{package} is not installed and apt knows no version of it (apt-get update?)"
    dest = cache_root() / f"debian-{package}-{version.replace(':', '_')}"
    done = dest / ".complete"
    with locked(dest):
        if not done.exists():
            with tempfile.TemporaryDirectory() as tmp:
                res = subprocess.run(["apt-get", "download", "-q", f"{package}={version}"], cwd=tmp,
                                     capture_output=True, text=True, timeout=600)
                debs = list(Path(tmp).glob("*.deb"))
                if res.returncode != 0 or not debs:
                    last = (res.stderr.strip().splitlines() or ["no output"])[-1]
                    return f"apt-get download {package}={version} failed: {last}"
                extracted = subprocess.run(["dpkg-deb", "-x", str(debs[0]), str(dest)],
                                           capture_output=True, text=True)
                if extracted.returncode != 0:
                    return f"dpkg-deb -x {debs[0].name} failed: {extracted.stderr.strip()}"
            done.write_text(f"{package} {version}\n")
    if not os.path.isdir(dest / subdir):
        return f"{package} {version} has no {subdir}"
    return str(dest), f"{package} {version} (apt-get download, cached in {dest})"


def _debian_corpus(name: str, package: str, subdir: str) -> Corpus | Unavailable:
    got = debian_root(package, subdir)
    if isinstance(got, str):
        return Unavailable(name, got)
    root, origin = got
    top = os.path.join(root, subdir)
    files = _installed_files(package, subdir) if root == "/" else corpus_files(top)
    return Corpus(name, top, files, origin)


@cache
def cross_corpus(package: str) -> Corpus | Unavailable:
    return _debian_corpus(package, package, CROSS_PACKAGES[package][0])


@cache
def dbg_corpus() -> Corpus | Unavailable:
    return _debian_corpus(DBG_PACKAGE, DBG_PACKAGE, DBG_DIR)


def all_corpora() -> list[Corpus | Unavailable]:
    """Every peer corpus, pyelftools first, then the cross packages, then libc6-dbg."""
    return [pyelftools_corpus(), *(cross_corpus(p) for p in CROSS_PACKAGES), dbg_corpus()]


CORPUS_NAMES: tuple[str, ...] = ("pyelftools", *CROSS_PACKAGES, DBG_PACKAGE)


def corpus_by_name(name: str) -> Corpus | Unavailable:
    if name == "pyelftools":
        return pyelftools_corpus()
    if name == DBG_PACKAGE:
        return dbg_corpus()
    return cross_corpus(name)
