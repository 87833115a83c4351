"""A deterministic sample of real ELF files on this machine: system libraries, executables, crt objects, archive members, extension modules and the gcc-built fixtures, picked with an even stride (the same sample on every run on one machine)."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import shutil
import subprocess
import sysconfig
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import asdict, dataclass
from functools import cache
from pathlib import Path
from typing import TypeVar

from tests.elf_oracle.fixtures import build_fixtures

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


def regular_elf_files(paths: Iterable[str], max_bytes: int = MAX_FILE_BYTES) -> list[str]:
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


def listdir(directory: str) -> list[str]:
    try:
        return [os.path.join(directory, n) for n in sorted(os.listdir(directory))]
    except OSError:
        return []


def shared_library_candidates() -> list[str]:
    triplet = native_multiarch()
    names: list[str] = []
    for d in (f"/usr/lib/{triplet}", f"/lib/{triplet}"):
        names += [p for p in listdir(d) if re.search(r"\.so(\.[0-9.]+)?$", p)]
    return regular_elf_files(names)


def executable_candidates() -> list[str]:
    names: list[str] = []
    for d in ("/usr/bin", "/usr/sbin"):
        names += [p for p in listdir(d) if os.access(p, os.X_OK)]
    return regular_elf_files(names)


def object_candidates() -> list[str]:
    triplet = native_multiarch()
    names = [p for p in listdir(f"/usr/lib/{triplet}") if p.endswith(".o")]
    for gcc_dir in listdir(f"/usr/lib/gcc/{triplet}"):
        names += [p for p in listdir(gcc_dir) if p.endswith(".o")]
    return regular_elf_files(names)


def extension_candidates() -> list[str]:
    dest = sysconfig.get_config_var("DESTSHARED")
    if not isinstance(dest, str):
        return []
    return regular_elf_files(p for p in listdir(dest) if p.endswith(".so"))


def archive_candidates() -> list[str]:
    triplet = native_multiarch()
    names = [p for p in listdir(f"/usr/lib/{triplet}") if p.endswith(".a")]
    for gcc_dir in listdir(f"/usr/lib/gcc/{triplet}"):
        names += [p for p in listdir(gcc_dir) if p.endswith(".a")]
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
def locked(directory: Path) -> Iterator[None]:
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
    with locked(workdir):
        if index.exists():
            return tuple(CorpusFile(**d) for d in json.loads(index.read_text()))
        files = build_sample(workdir)
        index.write_text(json.dumps([asdict(f) for f in files], indent=1))
    return tuple(files)


def build_sample(workdir: Path) -> list[CorpusFile]:
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


def fixture(files: Sequence[CorpusFile], name: str) -> CorpusFile | None:
    """The sample's fixture with this file name, if it was built."""
    for f in files:
        if f.kind == "fixture" and Path(f.path).name == name:
            return f
    return None
