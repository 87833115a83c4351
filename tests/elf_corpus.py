"""A deterministic sample of real ELF files on this machine, and the oracles that read them.

Used by the differential and foreign-architecture tests (this is a helper, not a test):

* `sample(workdir)` picks ≥ 300 ELF files: system shared libraries, executables, crt `.o`
  files, members of system `.a` archives (extracted into `workdir`), the running Python's
  extension modules and a handful of gcc-built fixtures (symbol versions, RPATH/RUNPATH,
  -z now, copy relocations, TLS, static PIE, debuglink, COMDAT groups, and an object with
  more than 65,280 sections for extended section numbering). Candidates are sorted and
  picked with an even stride, so the sample is the same on every run on the same machine.
* `ldscope_facts`, `pyelftools_facts`: the same normalised facts from ldscope and from
  pyelftools; `run_readelf` / `run_nm` run the binutils oracles over many files with one
  process and split the output per file.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from functools import cache
from pathlib import Path
from typing import TypeVar

from ldscope.elf import ElfFile
from ldscope.elf import constants as C
from ldscope.elf._symbols import SymbolTable

ELF_MAGIC = b"\x7fELF"
MIN_SAMPLE = 300
MAX_FILE_BYTES = 4 * 1024 * 1024  # keeps the pyelftools oracle inside the time budget

# Per-kind quotas; when a kind is short on this machine the remainder is topped up from the
# other pools, so the total is stable.
QUOTAS: dict[str, int] = {
    "shared": 115,
    "executable": 80,
    "object": 24,
    "archive-member": 60,
    "extension": 30,
}
TARGET = 325  # quotas + fixtures land a bit above MIN_SAMPLE


# --------------------------------------------------------------------------- sample
@dataclass(frozen=True)
class CorpusFile:
    """One sample file. Archive members are extracted to `path` and remember their origin."""

    path: str
    kind: str  # shared | executable | object | archive-member | extension | fixture
    archive: str | None = None
    member: str | None = None
    member_offset: int = 0
    member_size: int = 0

    @property
    def label(self) -> str:
        if self.archive is not None:
            return f"{self.archive}({self.member})"
        return self.path


def native_multiarch() -> str:
    """The Debian multiarch triplet of this machine (x86_64-linux-gnu here)."""
    value = sysconfig.get_config_var("MULTIARCH")
    if isinstance(value, str) and value:
        return value
    gcc = shutil.which("gcc")
    if gcc:
        out = subprocess.run([gcc, "-print-multiarch"], capture_output=True, text=True)
        if out.returncode == 0 and out.stdout.strip():
            return out.stdout.strip()
    return f"{os.uname().machine}-linux-gnu"


def _is_elf(path: str) -> bool:
    try:
        with open(path, "rb") as fh:
            return fh.read(4) == ELF_MAGIC
    except OSError:
        return False


def _regular_elf_files(paths: Iterable[str], max_bytes: int = MAX_FILE_BYTES) -> list[str]:
    """Real paths of readable regular ELF files ≤ max_bytes, deduplicated and sorted."""
    seen: set[str] = set()
    for p in paths:
        real = os.path.realpath(p)
        if real in seen:
            continue
        try:
            st = os.stat(real)
        except OSError:
            continue
        if not os.path.isfile(real) or st.st_size < 64 or st.st_size > max_bytes:
            continue
        if _is_elf(real):
            seen.add(real)
    return sorted(seen)


T = TypeVar("T")


def stride_pick(items: Sequence[T], count: int) -> list[T]:
    """`count` items spread evenly over a sorted sequence (all of them if fewer)."""
    if count >= len(items):
        return list(items)
    return [items[(i * len(items)) // count] for i in range(count)]


def _listdir(directory: str) -> list[str]:
    try:
        return [os.path.join(directory, n) for n in sorted(os.listdir(directory))]
    except OSError:
        return []


def shared_library_candidates() -> list[str]:
    triplet = native_multiarch()
    names: list[str] = []
    for d in (f"/usr/lib/{triplet}", f"/lib/{triplet}"):
        names += [p for p in _listdir(d) if re.search(r"\.so(\.[0-9.]+)?$", p)]
    return _regular_elf_files(names)


def executable_candidates() -> list[str]:
    names: list[str] = []
    for d in ("/usr/bin", "/usr/sbin"):
        names += [p for p in _listdir(d) if os.access(p, os.X_OK)]
    return _regular_elf_files(names)


def object_candidates() -> list[str]:
    triplet = native_multiarch()
    names = [p for p in _listdir(f"/usr/lib/{triplet}") if p.endswith(".o")]
    for gcc_dir in _listdir(f"/usr/lib/gcc/{triplet}"):
        names += [p for p in _listdir(gcc_dir) if p.endswith(".o")]
    return _regular_elf_files(names)


def extension_candidates() -> list[str]:
    dest = sysconfig.get_config_var("DESTSHARED")
    if not isinstance(dest, str):
        return []
    return _regular_elf_files(p for p in _listdir(dest) if p.endswith(".so"))


def archive_candidates() -> list[str]:
    triplet = native_multiarch()
    names = [p for p in _listdir(f"/usr/lib/{triplet}") if p.endswith(".a")]
    for gcc_dir in _listdir(f"/usr/lib/gcc/{triplet}"):
        names += [p for p in _listdir(gcc_dir) if p.endswith(".a")]
    out = []
    for p in sorted({os.path.realpath(n) for n in names}):
        try:
            with open(p, "rb") as fh:
                if fh.read(8) == b"!<arch>\n":
                    out.append(p)
        except OSError:
            pass
    return out


@dataclass(frozen=True)
class ArchiveMember:
    archive: str
    index: int
    name: str
    offset: int  # of the member's data in the archive
    size: int


def archive_members(path: str) -> list[ArchiveMember]:
    """The ELF members of a GNU/SysV `ar` archive (symbol and long-name tables skipped)."""
    with open(path, "rb") as fh:
        data = fh.read()
    if data[:8] != b"!<arch>\n":
        return []
    pos = 8
    long_names = b""
    members: list[ArchiveMember] = []
    index = 0
    while pos + 60 <= len(data):
        header = data[pos : pos + 60]
        raw_name = header[:16].decode("ascii", "replace").rstrip()
        try:
            size = int(header[48:58].decode("ascii").strip() or "0")
        except ValueError:
            break
        start = pos + 60
        if raw_name == "//":
            long_names = data[start : start + size]
        elif raw_name not in ("/", "/SYM64/"):
            if raw_name.startswith("/") and raw_name[1:].isdigit():
                off = int(raw_name[1:])
                end = long_names.find(b"/\n", off)
                name = long_names[off : end if end >= 0 else None].decode("utf-8", "replace")
            else:
                name = raw_name.rstrip("/")
            if data[start : start + 4] == ELF_MAGIC and size <= MAX_FILE_BYTES:
                members.append(ArchiveMember(path, index, name, start, size))
            index += 1
        pos = start + size + (size & 1)
    return members


def member_candidates(quota: int) -> list[ArchiveMember]:
    """Members spread over all archives: a few from each, then an even stride overall."""
    archives = archive_candidates()
    if not archives:
        return []
    per_archive = max(2, quota // len(archives) + 1)
    pool: list[ArchiveMember] = []
    for a in archives:
        members = archive_members(a)
        if not members:
            continue
        picks = [members[(i * len(members)) // per_archive] for i in range(per_archive)]
        pool += list(dict.fromkeys(picks)) if len(members) > per_archive else members
    return pool


@contextlib.contextmanager
def _locked(directory: Path) -> Iterator[None]:
    directory.mkdir(parents=True, exist_ok=True)
    with open(directory / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def shared_workdir(basetemp: Path) -> Path:
    """A directory shared by all pytest-xdist workers of one run (basetemp's parent)."""
    root = basetemp.parent if os.environ.get("PYTEST_XDIST_WORKER") else basetemp
    return root / "elf-corpus"


@cache
def sample(workdir: Path) -> tuple[CorpusFile, ...]:
    """The sample, built (fixtures compiled, members extracted) once per workdir."""
    index = workdir / "sample.json"
    with _locked(workdir):
        if index.exists():
            return tuple(CorpusFile(**d) for d in json.loads(index.read_text()))
        files = _build_sample(workdir)
        index.write_text(json.dumps([asdict(f) for f in files], indent=1))
    return tuple(files)


def _build_sample(workdir: Path) -> list[CorpusFile]:
    pools: dict[str, list[str]] = {
        "shared": shared_library_candidates(),
        "executable": executable_candidates(),
        "object": object_candidates(),
        "extension": extension_candidates(),
    }
    members = member_candidates(QUOTAS["archive-member"])
    fixtures = [CorpusFile(str(p), "fixture") for p in build_fixtures(workdir / "fixtures")]
    chosen: dict[str, list[str]] = {k: stride_pick(v, QUOTAS[k]) for k, v in pools.items()}
    member_pick = stride_pick(members, QUOTAS["archive-member"])

    def total() -> int:
        return sum(len(v) for v in chosen.values()) + len(member_pick) + len(fixtures)

    # Top up from the larger pools when some directory was thin on this machine.
    for kind in ("executable", "shared"):
        missing = TARGET - total()
        if missing <= 0:
            break
        rest = [p for p in pools[kind] if p not in set(chosen[kind])]
        chosen[kind] += stride_pick(rest, missing)
    missing = TARGET - total()
    if missing > 0:  # last resort: more archive members (libc.a alone has over a thousand)
        picked = set(member_pick)
        more = member_candidates(QUOTAS["archive-member"] + 4 * missing)
        member_pick += stride_pick([m for m in more if m not in picked], missing)

    files: list[CorpusFile] = []
    seen: set[str] = set()
    for kind in ("shared", "executable", "object", "extension"):
        for p in chosen[kind]:
            if p not in seen:
                seen.add(p)
                files.append(CorpusFile(p, kind))
    files += _extract_members(member_pick, workdir / "members")
    files += fixtures
    return files


def _extract_members(members: Sequence[ArchiveMember], dest: Path) -> list[CorpusFile]:
    dest.mkdir(parents=True, exist_ok=True)
    out = []
    for m in members:
        stem = Path(m.archive).name.replace(".", "_")
        safe = re.sub(r"[^A-Za-z0-9_.+-]", "_", m.name)
        target = dest / f"{stem}-{m.index:05d}-{safe}"
        with open(m.archive, "rb") as fh:
            fh.seek(m.offset)
            target.write_bytes(fh.read(m.size))
        out.append(CorpusFile(str(target), "archive-member", m.archive, m.name, m.offset, m.size))
    return out


# --------------------------------------------------------------------------- fixtures
FIX_VER_C = r"""
#include <stdio.h>
#include <string.h>
int fix_data = 42;
__thread int fix_tls = 7;
int foo_v1(void) { return 1; }
int foo_v2(void) { return 2; }
__asm__(".symver foo_v1,foo@VERS_1.0");
__asm__(".symver foo_v2,foo@@VERS_2.0");
int bar(void) { return 3; }
__attribute__((visibility("protected"))) int prot(void) { return 4; }
__attribute__((weak)) int weakfn(void) { return 5; }
int uses_libc(const char *s) { return (int)strlen(s) + puts(s); }
int get_tls(void) { return fix_tls; }
"""
FIX_VER_MAP = """
VERS_1.0 { global: foo; bar; fix_data; fix_tls; local: *; };
VERS_2.0 { global: foo; prot; weakfn; uses_libc; get_tls; } VERS_1.0;
"""
FIX_CXX_CC = r"""
#include <string>
#include <vector>
extern "C" int foo(void);
namespace fix {
struct Widget { virtual ~Widget(); int n = 0; };
Widget::~Widget() {}
std::string greet(const std::string& s) { return "hi " + s; }
template <class T> T twice(T x) { return x + x; }
int use() { std::vector<int> v{1, 2, 3}; return (int)twice(v.size()) + foo(); }
thread_local int counter = 3;
int bump() { return ++counter; }
}
"""
FIX_CXX_MAP = """CXXFIX_1 { global: extern "C++" { fix::*; }; local: *; };"""
FIX_MAIN_C = r"""
#include <stdio.h>
extern int foo(void);
extern int bar(void);
extern int fix_data;
int main(void) { printf("%d\n", foo() + bar() + fix_data); return 0; }
"""
FIX_STATIC_C = r"""
#include <stdio.h>
#include <string.h>
int main(int argc, char **argv) { printf("%zu\n", strlen(argv[0]) + (size_t)argc); return 0; }
"""
FIX_TINY_C = r"""
int tiny_data[4] = {1, 2, 3, 4};
int tiny_old(int x) { return x + 1; }
int tiny_new(int x) { return x + 2; }
__asm__(".symver tiny_old,tiny@TINY_1");
__asm__(".symver tiny_new,tiny@@TINY_2");
int tiny_value(void) { return tiny_data[2]; }
"""
FIX_TINY_MAP = """
TINY_1 { global: tiny; tiny_data; local: *; };
TINY_2 { global: tiny; tiny_value; } TINY_1;
"""
FIX_TINY_MAIN_C = r"""
extern int tiny(int);
extern int tiny_value(void);
extern int tiny_data[4];
int *p = &tiny_data[1];
void _start(void) { tiny(tiny_value() + *p); for (;;) {} }
"""
MANY_SECTIONS = 70_000


def _many_sections_asm() -> str:
    """> 65,280 sections: forces e_shnum = 0, e_shstrndx = SHN_XINDEX and SHT_SYMTAB_SHNDX."""
    parts = [
        "\t.section .group_sig_text,\"axG\",@progbits,grp_sig,comdat\n"
        "\t.globl grp_sig\n\t.type grp_sig,@function\ngrp_sig:\n\tret\n",
        "\t.comm common_sym,16,8\n\t.globl abs_sym\n\t.set abs_sym,0x1234\n",
        "\t.section .tbss,\"awT\",@nobits\n\t.globl tls_sym\n\t.type tls_sym,@object\n"
        "tls_sym:\n\t.zero 8\n\t.size tls_sym,8\n",
    ]
    for i in range(MANY_SECTIONS):
        vis = ("", "\t.hidden f{0}\n", "\t.protected f{0}\n", "\t.weak f{0}\n")[i % 4].format(i)
        # A call (hence a .rela section) in every 1000th function only: `readelf -r` is
        # quadratic in the number of relocation sections.
        call = f"\tcall f{(i * 7919) % MANY_SECTIONS}\n" if i % 1000 == 0 else ""
        parts.append(
            f"\t.section .text.f{i},\"ax\",@progbits\n\t.globl f{i}\n{vis}"
            f"\t.type f{i},@function\nf{i}:\n{call}\tret\n\t.size f{i},.-f{i}\n"
        )
    parts.append("\t.section .data.last,\"aw\"\nlocal_obj:\n\t.quad f0, abs_sym, common_sym\n")
    return "".join(parts)


# Tiny files (a few KB, little padding) make good fuzzing seeds.
SMALL_PAGES = ["-Wl,-z,noseparate-code", "-Wl,-z,max-page-size=0x10",
               "-Wl,-z,common-page-size=0x10"]

# (output name, [commands]); commands run in the fixture directory, `{cc}`/`{cxx}` expanded.
FIXTURE_RECIPES: list[tuple[str, list[list[str]]]] = [
    (
        "libfix_ver.so",
        [["{cc}", "-shared", "-fPIC", "-O1", "-o", "libfix_ver.so", "fix_ver.c",
          "-Wl,--version-script=fix_ver.map", "-Wl,-soname,libfix_ver.so.1",
          "-Wl,--disable-new-dtags", "-Wl,-rpath,/opt/fix/a:/opt/fix/b", "-Wl,--hash-style=both"]],
    ),
    (
        "libfix_sysv.so",
        [["{cc}", "-shared", "-fPIC", "-o", "libfix_sysv.so", "fix_ver.c",
          "-Wl,--version-script=fix_ver.map", "-Wl,-soname,libfix_sysv.so",
          "-Wl,--hash-style=sysv", "-Wl,-z,nodefaultlib", "-Wl,-z,nodelete", "-Wl,-z,origin"]],
    ),
    (
        "libfix_cxx.so",
        [["{cxx}", "-shared", "-fPIC", "-O1", "-o", "libfix_cxx.so", "fix_cxx.cc",
          "-Wl,--version-script=fix_cxx.map", "-Wl,--enable-new-dtags",
          "-Wl,-rpath,$ORIGIN/../lib:/opt/fix", "-L.", "-l:libfix_ver.so",
          "-Wl,--hash-style=gnu"]],
    ),
    ("fix_cxx.o", [["{cxx}", "-c", "-fPIC", "-O1", "-o", "fix_cxx.o", "fix_cxx.cc"]]),
    (
        "fix_now",
        [["{cc}", "-O1", "-o", "fix_now", "fix_main.c", "-L.", "-l:libfix_ver.so",
          "-Wl,-z,now", "-Wl,--enable-new-dtags", "-Wl,-rpath,$ORIGIN"]],
    ),
    (
        "fix_copyreloc",
        [["{cc}", "-O1", "-no-pie", "-fno-pic", "-o", "fix_copyreloc", "fix_main.c", "-L.",
          "-l:libfix_ver.so", "-Wl,-z,lazy", "-Wl,--disable-new-dtags", "-Wl,-rpath,/opt/r"]],
    ),
    ("fix_static_pie", [["{cc}", "-O1", "-static-pie", "-o", "fix_static_pie", "fix_static.c"]]),
    ("fix_static", [["{cc}", "-O1", "-static", "-o", "fix_static", "fix_static.c"]]),
    (
        "fix_dbglink",
        [["objcopy", "--only-keep-debug", "fix_now", "fix_now.debug"],
         ["objcopy", "--strip-debug", "--add-gnu-debuglink=fix_now.debug", "fix_now",
          "fix_dbglink"]],
    ),
    (
        "libfix_tiny.so",
        [["{cc}", "-nostdlib", "-shared", "-fPIC", "-Os", "-o", "libfix_tiny.so", "fix_tiny.c",
          "-Wl,--version-script=fix_tiny.map", "-Wl,-soname,libfix_tiny.so",
          "-Wl,--hash-style=both", "-Wl,--build-id=sha1", "-Wl,-z,norelro", *SMALL_PAGES]],
    ),
    (
        "fix_tiny_exe",
        [["{cc}", "-nostdlib", "-fPIE", "-pie", "-Os", "-o", "fix_tiny_exe", "fix_tiny_main.c",
          "-L.", "-l:libfix_tiny.so", "-Wl,-z,norelro", "-Wl,--hash-style=gnu", *SMALL_PAGES]],
    ),
    ("fix_tiny.o", [["{cc}", "-c", "-Os", "-o", "fix_tiny.o", "fix_tiny.c"]]),
    ("fix_many_sections.o", [["{cc}", "-c", "-o", "fix_many_sections.o", "fix_many.s"]]),
    (
        "libfix_m32.so",
        [["{cc}", "-m32", "-shared", "-fPIC", "-o", "libfix_m32.so", "fix_ver.c",
          "-Wl,--version-script=fix_ver.map"]],
    ),
]

FIXTURE_SOURCES: dict[str, str] = {
    "fix_ver.c": FIX_VER_C,
    "fix_ver.map": FIX_VER_MAP,
    "fix_cxx.cc": FIX_CXX_CC,
    "fix_cxx.map": FIX_CXX_MAP,
    "fix_main.c": FIX_MAIN_C,
    "fix_static.c": FIX_STATIC_C,
    "fix_tiny.c": FIX_TINY_C,
    "fix_tiny.map": FIX_TINY_MAP,
    "fix_tiny_main.c": FIX_TINY_MAIN_C,
}


def build_fixtures(dest: Path, only: Iterable[str] | None = None) -> list[Path]:
    """Compile the fixtures that exist on this machine's toolchain; skip the rest quietly.

    `only`: build just these outputs (their recipes must not need the others')."""
    cc = shutil.which("gcc") or shutil.which("cc")
    cxx = shutil.which("g++") or shutil.which("c++")
    if cc is None:
        return []
    dest.mkdir(parents=True, exist_ok=True)
    for name, text in FIXTURE_SOURCES.items():
        (dest / name).write_text(text)
    wanted = None if only is None else set(only)
    if wanted is None or "fix_many_sections.o" in wanted:
        (dest / "fix_many.s").write_text(_many_sections_asm())
    built: list[Path] = []
    env = dict(os.environ, LC_ALL="C")
    for output, commands in FIXTURE_RECIPES:
        if wanted is not None and output not in wanted:
            continue
        ok = True
        for cmd in commands:
            argv = [a.format(cc=cc, cxx=cxx or "") for a in cmd]
            if not argv[0]:
                ok = False
                break
            res = subprocess.run(argv, cwd=dest, capture_output=True, env=env, timeout=120)
            if res.returncode != 0:
                ok = False
                break
        if ok and (dest / output).exists():
            built.append(dest / output)
    return built


def fixture(files: Sequence[CorpusFile], name: str) -> CorpusFile | None:
    """The sample's fixture with this file name, if it was built."""
    for f in files:
        if f.kind == "fixture" and Path(f.path).name == name:
            return f
    return None


# --------------------------------------------------------------------------- facts
@dataclass(frozen=True)
class SymFact:
    """One symbol, normalised: raw name bytes, numbers, and its GNU version."""

    name: bytes
    value: int
    size: int
    bind: int
    type: int
    visibility: int
    shndx: int
    version: bytes | None = None
    hidden: bool = False
    from_verneed: bool = False
    version_index: int = 0


@dataclass
class ElfFacts:
    """Everything the oracles and ldscope are compared on, for one file."""

    elf_class: int = 0
    little_endian: bool = True
    e_type: int = 0
    e_machine: int = 0
    shnum: int = 0
    phnum: int = 0
    entry: int = 0
    sections: list[tuple[bytes, int, int, int, int, int, int, int]] = field(default_factory=list)
    has_dynamic: bool = False
    needed: tuple[bytes, ...] = ()
    soname: bytes | None = None
    rpath: bytes | None = None
    runpath: bytes | None = None
    dt_flags: int = 0
    dt_flags_1: int = 0
    bind_now: bool = False
    dynamic_count: int = 0
    verdefs: list[tuple[int, int, bytes, tuple[bytes, ...]]] = field(default_factory=list)
    verneeds: list[tuple[bytes, bytes, int, int]] = field(default_factory=list)
    dynsym: list[SymFact] | None = None
    symtab: list[SymFact] | None = None
    build_id: str | None = None
    debuglink: tuple[bytes, int] | None = None
    stripped: bool = True


def _b(text: str) -> bytes:
    return text.encode("utf-8", "surrogateescape")


def ldscope_symbols(table: SymbolTable, with_versions: bool) -> list[SymFact]:
    """SymFacts for a whole ldscope table (names via names(), versions via symbol())."""
    names = table.names()
    values = table.value.tolist()
    sizes = table.size.tolist()
    binds = table.bind.tolist()
    types = table.type.tolist()
    vis = table.visibility.tolist()
    shndx = table.section_index.tolist()
    versym = table.versions.versym if (with_versions and table.versions is not None) else None
    out = []
    for i, name in enumerate(names):
        version: bytes | None = None
        hidden = False
        from_verneed = False
        vindex = 0
        if versym is not None and table.versions is not None:
            v, hidden, vfile = table.versions.of(i)
            vindex = int(versym[i]) & 0x7FFF if i < len(versym) else 0
            if v is not None:
                version = _b(v)
                from_verneed = vfile is not None
        out.append(
            SymFact(_b(name), values[i], sizes[i], binds[i], types[i], vis[i], shndx[i],
                    version, hidden, from_verneed, vindex)
        )
    return out


def ldscope_facts(elf: ElfFile) -> ElfFacts:
    """The facts as ldscope reads them."""
    f = ElfFacts()
    f.elf_class = 64 if elf.is64 else 32
    f.little_endian = elf.little_endian
    f.e_type = elf.e_type
    f.e_machine = elf.e_machine
    f.shnum = len(elf.sections)
    f.phnum = len(elf.program_headers)
    f.entry = elf.entry
    f.sections = [
        (_b(s.name), s.type, s.addr, s.offset, s.size, s.link, s.info, s.entsize)
        for s in elf.sections
    ]
    dyn = elf.dynamic
    if dyn is not None:
        f.has_dynamic = True
        f.needed = tuple(_b(n) for n in dyn.needed)
        f.soname = None if dyn.soname is None else _b(dyn.soname)
        f.rpath = None if dyn.rpath_raw is None else _b(dyn.rpath_raw)
        f.runpath = None if dyn.runpath_raw is None else _b(dyn.runpath_raw)
        f.dt_flags = dyn.flags
        f.dt_flags_1 = dyn.flags_1
        f.bind_now = dyn.bind_now
        f.dynamic_count = dyn.entry_count
    f.verdefs = [(d.index, d.flags, _b(d.name), tuple(_b(p) for p in d.parents))
                 for d in elf.version_definitions]
    f.verneeds = [(_b(r.file), _b(r.name), r.index, r.flags) for r in elf.version_requirements]
    if elf.dynsym is not None:
        f.dynsym = ldscope_symbols(elf.dynsym, True)
    if elf.symtab is not None:
        f.symtab = ldscope_symbols(elf.symtab, False)
    f.build_id = elf.build_id
    dl = elf.debuglink
    f.debuglink = None if dl is None else (_b(dl[0]), dl[1])
    f.stripped = elf.is_stripped
    return f


# ----------------------------------------------------------------- pyelftools oracle
def _enum_maps() -> dict[str, dict[str, int]]:
    from elftools.elf import enums

    sh_types: dict[str, int] = {}
    for name in dir(enums):
        if name.startswith("ENUM_SH_TYPE"):
            sh_types.update({k: v for k, v in getattr(enums, name).items() if k != "_default_"})
    return {
        "sh_type": sh_types,
        "bind": {k: v for k, v in enums.ENUM_ST_INFO_BIND.items() if k != "_default_"},
        "type": {k: v for k, v in enums.ENUM_ST_INFO_TYPE.items() if k != "_default_"},
        "vis": {k: v for k, v in enums.ENUM_ST_VISIBILITY.items() if k != "_default_"},
        "shndx": {k: v for k, v in enums.ENUM_ST_SHNDX.items() if k != "_default_"},
        "e_type": {k: v for k, v in enums.ENUM_E_TYPE.items() if k != "_default_"},
        "e_machine": {k: v for k, v in enums.ENUM_E_MACHINE.items() if k != "_default_"},
        "d_tag": {k: v for k, v in enums.ENUM_D_TAG.items() if k != "_default_"},
        "vers": {k: v for k, v in enums.ENUM_VERSYM.items() if k != "_default_"},
    }


_ENUMS: dict[str, dict[str, int]] = {}


def _num(value: object, kind: str) -> int:
    """pyelftools gives enum names for known values and ints otherwise; make both ints."""
    if isinstance(value, int):
        return value
    if not _ENUMS:
        _ENUMS.update(_enum_maps())
    return _ENUMS[kind][str(value)]


def _latin1(text: str) -> bytes:
    return text.encode("latin-1")  # pyelftools decodes every string as latin-1


def pyelftools_facts(path: str) -> ElfFacts:
    """The facts as pyelftools reads them."""
    from elftools.elf.dynamic import DynamicSection, DynamicSegment
    from elftools.elf.elffile import ELFFile
    from elftools.elf.gnuversions import GNUVerDefSection, GNUVerNeedSection, GNUVerSymSection
    from elftools.elf.sections import NoteSection, SymbolTableIndexSection, SymbolTableSection

    f = ElfFacts()
    with open(path, "rb") as fh:
        elf = ELFFile(fh)
        h = elf.header
        f.elf_class = elf.elfclass
        f.little_endian = elf.little_endian
        f.e_type = _num(h["e_type"], "e_type")
        f.e_machine = _num(h["e_machine"], "e_machine")
        f.shnum = elf.num_sections() if h["e_shoff"] else 0
        f.phnum = elf.num_segments()
        f.entry = h["e_entry"]
        sections = list(elf.iter_sections()) if f.shnum else []
        for s in sections:
            f.sections.append((
                _latin1(s.name), _num(s["sh_type"], "sh_type"), s["sh_addr"], s["sh_offset"],
                s["sh_size"], s["sh_link"], s["sh_info"], s["sh_entsize"],
            ))
        dynamic: DynamicSection | DynamicSegment | None = None
        for s in sections:
            if isinstance(s, DynamicSection) and s["sh_type"] == "SHT_DYNAMIC":
                dynamic = s
                break
        if not sections:
            for seg in elf.iter_segments():
                if isinstance(seg, DynamicSegment):
                    dynamic = seg
        if dynamic is not None:
            f.has_dynamic = True
            needed: list[bytes] = []
            count = 0
            for tag in dynamic.iter_tags():
                name = tag.entry.d_tag
                if name == "DT_NULL":
                    break
                count += 1
                if name == "DT_NEEDED":
                    needed.append(_latin1(tag.needed))
                elif name == "DT_SONAME" and f.soname is None:
                    f.soname = _latin1(tag.soname)
                elif name == "DT_RPATH" and f.rpath is None:
                    f.rpath = _latin1(tag.rpath)
                elif name == "DT_RUNPATH" and f.runpath is None:
                    f.runpath = _latin1(tag.runpath)
                elif name == "DT_FLAGS" and not f.dt_flags:
                    f.dt_flags = tag.entry.d_val
                elif name == "DT_FLAGS_1" and not f.dt_flags_1:
                    f.dt_flags_1 = tag.entry.d_val
                elif name == "DT_BIND_NOW":
                    f.bind_now = True
            f.needed = tuple(needed)
            f.dynamic_count = count
        verdef_names: dict[int, bytes] = {}
        verneed_names: dict[int, bytes] = {}
        versym: GNUVerSymSection | None = None
        for s in sections:
            if isinstance(s, GNUVerDefSection):
                for vd, aux_iter in s.iter_versions():
                    names = [_latin1(a.name) for a in aux_iter]
                    f.verdefs.append((vd["vd_ndx"], vd["vd_flags"], names[0], tuple(names[1:])))
                    verdef_names.setdefault(vd["vd_ndx"], names[0])
            elif isinstance(s, GNUVerNeedSection):
                for vn, aux_iter in s.iter_versions():
                    for a in aux_iter:
                        f.verneeds.append((_latin1(vn.name), _latin1(a.name), a["vna_other"],
                                           a["vna_flags"]))
                        verneed_names.setdefault(a["vna_other"], _latin1(a.name))
            elif isinstance(s, GNUVerSymSection):
                versym = s
        for index, s in enumerate(sections):
            if not isinstance(s, SymbolTableSection):
                continue
            xindex: SymbolTableIndexSection | None = None
            for x in sections:
                if isinstance(x, SymbolTableIndexSection) and x["sh_link"] == index:
                    xindex = x
            is_dyn = s["sh_type"] == "SHT_DYNSYM"
            syms: list[SymFact] = []
            for i, sym in enumerate(s.iter_symbols()):
                shndx = _num(sym["st_shndx"], "shndx")
                if shndx == C.SHN_XINDEX and xindex is not None:
                    shndx = xindex.get_section_index(i)
                version: bytes | None = None
                hidden = False
                from_verneed = False
                vindex = 0
                if is_dyn and versym is not None and i < versym.num_symbols():
                    raw = _num(versym.get_symbol(i)["ndx"], "vers")
                    hidden = bool(raw & 0x8000)
                    vindex = raw & 0x7FFF
                    if vindex >= 2:
                        if vindex in verdef_names:
                            version = verdef_names[vindex]
                        elif vindex in verneed_names:
                            version = verneed_names[vindex]
                            from_verneed = True
                info = sym["st_info"]
                syms.append(SymFact(
                    _latin1(sym.name), sym["st_value"], sym["st_size"],
                    _num(info["bind"], "bind"), _num(info["type"], "type"),
                    _num(sym["st_other"]["visibility"], "vis"), shndx,
                    version, hidden, from_verneed, vindex,
                ))
            if is_dyn and f.dynsym is None:
                f.dynsym = syms
            elif not is_dyn and f.symtab is None:
                f.symtab = syms
        for s in sections:
            if isinstance(s, NoteSection) and f.build_id is None:
                for note in s.iter_notes():
                    if note["n_type"] == "NT_GNU_BUILD_ID" and note["n_name"] == "GNU":
                        f.build_id = note["n_desc"]
                        break
            if s.name == ".gnu_debuglink" and s["sh_type"] != "SHT_NOBITS":
                f.debuglink = parse_debuglink_bytes(s.data(), elf.little_endian)
        f.stripped = not any(s["sh_type"] == "SHT_SYMTAB" for s in sections)
    return f


def parse_debuglink_bytes(data: bytes, little: bool) -> tuple[bytes, int] | None:
    """(file name, CRC32) from .gnu_debuglink contents, independently of ldscope."""
    nul = data.find(b"\0")
    if nul <= 0:
        return None
    crc_at = (nul + 4) & ~3
    if crc_at + 4 > len(data):
        return data[:nul], 0
    return data[:nul], int.from_bytes(data[crc_at : crc_at + 4], "little" if little else "big")


# -------------------------------------------------------------------- readelf oracle
@dataclass
class RelocSection:
    name: str
    offset: int
    count: int
    entries: list[tuple[int, int, str]]  # (r_offset, r_info, type name)
    relr_offsets: int | None = None  # RELR: how many addresses the words encode


@dataclass
class ReadelfReport:
    """What one file's section of `readelf -W -h -S -d -r -s -V -n -x .gnu_debuglink` says."""

    header: dict[str, str] = field(default_factory=dict)
    sections: list[tuple[int, str, str, int, int, int, int, str, int, int, int]] = field(
        default_factory=list
    )  # (index, name, type, addr, off, size, entsize, flags, link, info, align)
    dynamic: list[tuple[str, str]] | None = None  # (tag name, shown value)
    dynamic_count: int = 0
    relocations: list[RelocSection] = field(default_factory=list)
    symbols: dict[str, list[tuple[int, int, int, str, str, str, str, str]]] = field(
        default_factory=dict
    )  # table -> (num, value, size, type, bind, vis, ndx, name)
    symbol_counts: dict[str, int] = field(default_factory=dict)
    verdefs: list[tuple[int, str, str, list[str]]] = field(default_factory=list)
    verneeds: list[tuple[str, str, int, str]] = field(default_factory=list)
    build_ids: list[str] = field(default_factory=list)
    debuglink_hex: bytes | None = None


READELF_OPTIONS = ["-W", "-h", "-S", "-d", "-r", "-s", "-V", "-n", "-x", ".gnu_debuglink"]

_SECTION_RE = re.compile(
    r"^\s*\[\s*(\d+)\]\s(.*?)\s([0-9a-f]{8}|[0-9a-f]{16})\s([0-9a-f]{6,})\s([0-9a-f]{6,})\s"
    r"([0-9a-f]{2,})\s+([A-Za-z]*)\s+(\d+)\s+(\d+)\s+(\d+)$"
)
_SYMBOL_RE = re.compile(
    r"^\s*(\d+):\s([0-9a-f]+)\s+(0x[0-9a-f]+|\d+)\s"
    r"(<[^>]*>: \d+|\S+)\s+(<[^>]*>: \d+|\S+)\s+(\S+)(?:\s+\[[^\]]*\])?\s+"
    r"(OS \[0x[0-9a-f]+\]|\S+)\s?(.*)$"
)
_DYN_RE = re.compile(r"^\s*0x[0-9a-f]+\s+\(([^)]*)\)\s+(.*)$")
_RELOC_HDR = re.compile(
    r"^Relocation section '(.*)' at offset 0x([0-9a-f]+) contains (\d+) entr(?:y|ies):"
)
_RELOC_RE = re.compile(r"^([0-9a-f]+)\s+([0-9a-f]+)\s+(\S+)")
_VERDEF_RE = re.compile(
    r"^\s*(?:0x)?[0-9a-f]+: Rev: \d+\s+Flags: (.*?)\s+Index: (\d+)\s+Cnt: \d+(?:\s+Name: (.*))?$"
)
_PARENT_RE = re.compile(r"^\s*(?:0x)?[0-9a-f]+: Parent \d+: (.*)$")
_VERNEED_RE = re.compile(r"^\s*(?:0x)?[0-9a-f]+: Version: \d+\s+File: (.*?)\s+Cnt: \d+$")
_VERNAUX_RE = re.compile(r"^\s*(?:0x)?[0-9a-f]+:\s+Name: (.*?)\s+Flags: (.*?)\s+Version: (\d+)$")
_HEX_RE = re.compile(r"^  0x[0-9a-f]+ (.{35})")


def parse_readelf(text: str) -> ReadelfReport:
    """Parse one file's worth of readelf output (any subset of READELF_OPTIONS)."""
    r = ReadelfReport()
    mode = ""
    table = ""
    reloc: RelocSection | None = None
    hexdata: list[str] = []
    current_file = ""
    for line in text.splitlines():
        if not line.strip():
            if mode in ("header",):
                mode = ""
            continue
        if line.startswith("ELF Header:"):
            mode = "header"
            continue
        if line.startswith("Section Headers:"):
            mode = "sections"
            continue
        if line.startswith(("Dynamic section at offset", "Dynamic section contains")):
            m = re.search(r"contains (\d+) entr", line)
            r.dynamic = []
            r.dynamic_count = int(m.group(1)) if m else 0
            mode = "dynamic"
            continue
        m = _RELOC_HDR.match(line)
        if m:
            reloc = RelocSection(m.group(1), int(m.group(2), 16), int(m.group(3)), [])
            r.relocations.append(reloc)
            mode = "reloc"
            continue
        m = re.match(r"^Symbol table (?:'(.*)'|for image) contains (\d+) entr", line)
        if m:
            table = m.group(1) or "<image>"
            r.symbols[table] = []
            r.symbol_counts[table] = int(m.group(2))
            mode = "symbols"
            continue
        if line.startswith("Version definition section"):
            mode = "verdef"
            continue
        if line.startswith("Version needs section"):
            mode = "verneed"
            continue
        if line.startswith(("Version symbols section", "Displaying notes", "Program Headers")):
            mode = "notes" if line.startswith("Displaying notes") else "other"
            continue
        if line.startswith("Hex dump of section '.gnu_debuglink'"):
            mode = "hex"
            continue
        if line.startswith(("There are no", "There is no", "Key to Flags", "Relocation section")):
            mode = "other" if not line.startswith("Key to Flags") else "keys"
            continue
        if mode == "header":
            key, _, value = line.partition(":")
            r.header[key.strip()] = value.strip()
        elif mode == "sections":
            m = _SECTION_RE.match(line)
            if m:
                head = m.group(2)
                hm = re.match(r"^(\S*)\s+(.+?)\s*$", head)
                name, stype = (hm.group(1), hm.group(2)) if hm else ("", head.strip())
                r.sections.append((
                    int(m.group(1)), name, stype, int(m.group(3), 16), int(m.group(4), 16),
                    int(m.group(5), 16), int(m.group(6), 16), m.group(7), int(m.group(8)),
                    int(m.group(9)), int(m.group(10)),
                ))
        elif mode == "dynamic":
            m = _DYN_RE.match(line)
            if m and r.dynamic is not None:
                r.dynamic.append((m.group(1), m.group(2)))
        elif mode == "reloc" and reloc is not None:
            m = _RELOC_RE.match(line)
            relr = re.match(r"^\s+(\d+) offsets?$", line)
            if relr:
                reloc.relr_offsets = int(relr.group(1))
            elif m:
                reloc.entries.append((int(m.group(1), 16), int(m.group(2), 16), m.group(3)))
        elif mode == "symbols":
            m = _SYMBOL_RE.match(line)
            if m:
                size = m.group(3)
                r.symbols[table].append((
                    int(m.group(1)), int(m.group(2), 16),
                    int(size, 16) if size.startswith("0x") else int(size),
                    m.group(4), m.group(5), m.group(6), m.group(7), m.group(8),
                ))
        elif mode == "verdef":
            m = _VERDEF_RE.match(line)
            if m:
                r.verdefs.append((int(m.group(2)), m.group(1), m.group(3) or "", []))
            else:
                m = _PARENT_RE.match(line)
                if m and r.verdefs:
                    r.verdefs[-1][3].append(m.group(1))
        elif mode == "verneed":
            m = _VERNEED_RE.match(line)
            if m:
                current_file = m.group(1)
                continue
            m = _VERNAUX_RE.match(line)
            if m:
                r.verneeds.append((current_file, m.group(1), int(m.group(3)), m.group(2)))
        elif mode == "notes":
            m = re.search(r"\sBuild ID: ([0-9a-f]+)$", line)
            if m:
                r.build_ids.append(m.group(1))
        elif mode == "hex":
            m = _HEX_RE.match(line)
            if m:
                hexdata.append(m.group(1).replace(" ", ""))
    if hexdata:
        r.debuglink_hex = bytes.fromhex("".join(hexdata))
    return r


def _split_by_file(text: str, paths: Sequence[str], marker: str) -> dict[str, str]:
    if len(paths) == 1:
        return {paths[0]: text}
    out: dict[str, list[str]] = {}
    current: list[str] | None = None
    wanted = set(paths)
    for line in text.splitlines():
        name = _file_marker(line, marker)
        if name is not None and name in wanted:
            current = out.setdefault(name, [])
            continue
        if current is not None:
            current.append(line)
    return {p: "\n".join(v) for p, v in out.items()}


def _file_marker(line: str, marker: str) -> str | None:
    if marker == "readelf" and line.startswith("File: "):
        return line[6:]
    if marker == "nm" and line.endswith(":") and line.startswith("/"):
        return line[:-1]
    return None


def run_readelf(
    paths: Sequence[str], options: Sequence[str] = READELF_OPTIONS, readelf: str = "readelf"
) -> dict[str, ReadelfReport]:
    """Run one readelf over many files and parse each file's part of the output."""
    if not paths:
        return {}
    res = subprocess.run(
        [readelf, *options, *paths], capture_output=True, env=dict(os.environ, LC_ALL="C"),
        timeout=300,
    )
    text = res.stdout.decode("utf-8", "surrogateescape")
    return {p: parse_readelf(t) for p, t in _split_by_file(text, paths, "readelf").items()}


def run_nm_dynamic(paths: Sequence[str]) -> dict[str, list[tuple[str, str]]]:
    """`nm -D` for many files in one process: per file a list of (type letter, name)."""
    if not paths:
        return {}
    res = subprocess.run(
        ["nm", "-D", *paths], capture_output=True, env=dict(os.environ, LC_ALL="C"), timeout=300
    )
    text = res.stdout.decode("utf-8", "surrogateescape")
    out: dict[str, list[tuple[str, str]]] = {}
    for path, chunk in _split_by_file(text, paths, "nm").items():
        rows = []
        for line in chunk.splitlines():
            m = re.match(r"^(?:[0-9a-f]+| +) (\S) (.*)$", line)
            if m:
                rows.append((m.group(1), m.group(2)))
        out[path] = rows
    return out


# readelf -h "Machine:" text → ldscope's machine name.
READELF_MACHINES: dict[str, str] = {
    "Advanced Micro Devices X86-64": "x86_64",
    "AArch64": "aarch64",
    "IBM S/390": "s390x",
    "ARM": "arm",
    "PowerPC64": "ppc64le",
    "Intel 80386": "i386",
    "RISC-V": "riscv64",
}
READELF_TYPES = {"NONE": 0, "REL": 1, "EXEC": 2, "DYN": 3, "CORE": 4}
READELF_BINDS = {"LOCAL": 0, "GLOBAL": 1, "WEAK": 2, "UNIQUE": 10}
READELF_SYMTYPES = {"NOTYPE": 0, "OBJECT": 1, "FUNC": 2, "SECTION": 3, "FILE": 4, "COMMON": 5,
                    "TLS": 6, "IFUNC": 10}
READELF_VIS = {"DEFAULT": 0, "INTERNAL": 1, "HIDDEN": 2, "PROTECTED": 3}
READELF_NDX = {"UND": 0, "ABS": C.SHN_ABS, "COM": C.SHN_COMMON, "LARGE_COM": 0xFF02}
READELF_VERFLAGS = {"none": 0, "BASE": 1, "WEAK": 2, "INFO": 4}


def readelf_number(text: str, names: dict[str, int]) -> int:
    """A readelf symbol column (name or `<OS specific>: 11` or `PRC[0xff00]`) as a number."""
    if text in names:
        return names[text]
    m = re.search(r"(?:: (\d+)$)|\[(0x[0-9a-f]+)\]$", text)
    if m:
        return int(m.group(1)) if m.group(1) else int(m.group(2), 16)
    return int(text)


def readelf_flags(text: str) -> int:
    """Version flags as readelf prints them (`none`, `BASE`, `WEAK`, `BASE | WEAK`)."""
    bits = 0
    for part in text.split("|"):
        part = part.strip()
        if part.startswith("<unknown:"):
            bits |= int(part[9:].strip(" >"), 16)
        else:
            bits |= READELF_VERFLAGS[part]
    return bits


def bracketed(value: str) -> str | None:
    m = re.search(r"\[(.*)\]$", value)
    return m.group(1) if m else None


def main() -> None:  # pragma: no cover - a convenience: print the sample composition
    import tempfile
    from collections import Counter

    workdir = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(tempfile.mkdtemp()) / "elf-corpus"
    files = sample(workdir)
    print(len(files), dict(Counter(f.kind for f in files)))


if __name__ == "__main__":  # pragma: no cover
    main()
