"""Finding the native files in a tree, without opening anything that is not a regular file."""

from __future__ import annotations

import errno
import os
import re
import stat
from collections.abc import Callable
from dataclasses import dataclass, field

from ldscope.elf import NEVER_NATIVE, read_regular
from ldscope.elf import constants as C

ELF_MAGIC = C.ELF_MAGIC


@dataclass(frozen=True, slots=True)
class Candidate:
    """A regular ELF file found in a target."""

    path: str  # as the target's loader would name it (inside a root: the target-side path)
    host_path: str  # where it is on this machine (or a wheel's virtual path)
    e_type: int
    machine: int
    elf_class: int


@dataclass(frozen=True, slots=True)
class Skipped:
    """Something in a target that was not analysed, and why."""

    path: str
    reason: str
    is_problem: bool  # unreadable things are findings; ordinary non-ELF files are not


@dataclass
class Discovery:
    """What walking a target found."""

    candidates: list[Candidate] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)
    files_seen: int = 0


# The names a loader or linker would use for a library: `*.so` (`lib*.so`, Python's
# `x.cpython-311-x86_64-linux-gnu.so`) and `*.so.N[.N...]` with numeric version parts.  Not
# `ld.so.cache`, `ld.so.conf`, `debian.sources`, `x.socket` or gdb's auto-load scripts
# `libfoo.so.6.0.0-gdb.py`: those are ordinary files that happen to contain `.so`.
_LIBRARY_NAME = re.compile(r"\.so(?:\.[0-9]+)*\Z")
# Names whose head is still worth a look (an ELF file named `libx.so.1.2a` is scanned), but
# whose not being ELF is no finding.
_MAYBE_LIBRARY = re.compile(r"\.so(?:\Z|\.)")


def named_like_library(name: str) -> bool:
    """`libz.so`, `libz.so.1.2.13`, `x.cpython-311-x86_64-linux-gnu.so`; not `ld.so.conf`, `x.so.1-gdb.py`."""
    return _LIBRARY_NAME.search(name) is not None


def _interesting(name: str, mode: int) -> bool:
    """Files worth reading the head of: library-like names or executable bits."""
    return (bool(mode & 0o111) or _MAYBE_LIBRARY.search(name) is not None
            or name.endswith((".node", ".bin")))


def classify_head(head: bytes) -> tuple[int, bool, int, int] | None:
    """(e_type, has PT_INTERP unknown=False, e_machine, class) from an ELF header, or None."""
    if len(head) < 20 or head[:4] != ELF_MAGIC or head[4] not in (1, 2) or head[5] not in (1, 2):
        return None
    little = head[5] == 1
    e_type = int.from_bytes(head[16:18], "little" if little else "big")
    e_machine = int.from_bytes(head[18:20], "little" if little else "big")
    return e_type, False, e_machine, head[4]


def walk_tree(top: str, discovery: Discovery, root: str | None = None,
              skip_dirs: frozenset[str] = frozenset({"proc", "sys", "dev"})) -> None:
    """Add every ELF file under `top` (lstat first: special files are never opened)."""

    def on_error(exc: OSError) -> None:
        path = getattr(exc, "filename", None) or top
        discovery.skipped.append(Skipped(_target(path, root), f"unreadable directory: {exc.strerror}", True))

    if not os.path.isdir(top):
        _consider(top, discovery, root)
        return
    skip = (skip_dirs if root is not None and os.path.abspath(top) == os.path.abspath(root)
            else frozenset())
    # An explicit stack, not recursion: a tree 1,000 levels deep (or 100,000) is walked in
    # the same order os.walk would give, without a RecursionError.  Directories are pushed in
    # reverse so they are popped in name order: depth first, files before subdirectories.
    pending: list[tuple[str, frozenset[str]]] = [(top, skip)]
    while pending:
        directory, skip_here = pending.pop()
        subdirs = _walk_dir(directory, discovery, root, on_error, skip_here)
        pending.extend((sub, frozenset()) for sub in reversed(subdirs))


def _entry_name(entry: os.DirEntry[str]) -> str:
    return entry.name


def _walk_dir(directory: str, discovery: Discovery, root: str | None,
              on_error: Callable[[OSError], None], skip_dirs: frozenset[str]) -> list[str]:
    """One directory: its files considered, names sorted, one scandir (its entry types spare
    a stat for files that cannot matter); returns its subdirectories to walk, in name order."""
    entries: list[os.DirEntry[str]] = []
    append = entries.append
    never = NEVER_NATIVE
    skipped = 0
    try:
        with os.scandir(directory) as it:
            for entry in it:  # hot: 50,000 entries in a Python prefix, hence the locals
                name = entry.name
                # Only a real suffix counts: `cmake`, `c` and `md` are programs' whole names.
                _stem, dot, suffix = name.rpartition(".")
                if dot and not named_like_library(name) and suffix in never and entry.is_file(
                        follow_symlinks=False):
                    skipped += 1  # source, text and bytecode: no stat, no sort
                    continue
                append(entry)
    except OSError as exc:
        on_error(exc)
        return []
    finally:
        discovery.files_seen += skipped
    entries.sort(key=_entry_name)
    subdirs: list[str] = []
    for entry in entries:
        try:
            is_dir = entry.is_dir()
        except OSError:
            is_dir = False
        if is_dir:
            if not entry.is_symlink() and entry.name not in skip_dirs:
                subdirs.append(entry.path)
            continue
        lst = None
        if entry.is_file(follow_symlinks=False):
            try:
                lst = entry.stat(follow_symlinks=False)
            except OSError:
                lst = None
        _consider(entry.path, discovery, root, lst)
    return subdirs


def _target(host_path: str, root: str | None) -> str:
    if root is None:
        return host_path
    rel = os.path.relpath(host_path, root)
    return "/" + rel if rel != "." else "/"


def _consider(path: str, discovery: Discovery, root: str | None,
              lst: os.stat_result | None = None) -> None:
    discovery.files_seen += 1
    if lst is None:
        try:
            lst = os.lstat(path)
        except OSError as exc:
            discovery.skipped.append(Skipped(_target(path, root), f"cannot stat: {exc.strerror}", True))
            return
    if stat.S_ISLNK(lst.st_mode):
        try:
            st = os.stat(path)
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                discovery.skipped.append(Skipped(_target(path, root), "symlink loop", True))
            elif named_like_library(os.path.basename(path)):
                discovery.skipped.append(Skipped(_target(path, root), "broken symlink", True))
            return
        # A symlink is never scanned itself: a file it reaches in the tree is scanned under its
        # own name, and one outside the tree is not part of the target (in a --root tree an
        # absolute link would otherwise be resolved against this machine's files).
        if not (stat.S_ISREG(st.st_mode) or stat.S_ISDIR(st.st_mode)):
            discovery.skipped.append(Skipped(_target(path, root), "symlink to a special file (device, FIFO or socket): not opened", False))
        return
    if not stat.S_ISREG(lst.st_mode):
        if stat.S_ISFIFO(lst.st_mode) or stat.S_ISCHR(lst.st_mode) or stat.S_ISBLK(lst.st_mode) or stat.S_ISSOCK(lst.st_mode):
            discovery.skipped.append(Skipped(_target(path, root), "special file (device, FIFO or socket): not opened", False))
        return
    name = os.path.basename(path)
    if not _interesting(name, lst.st_mode) or (lst.st_size < 52 and not named_like_library(name)):
        return  # too short for an ELF header; short `.so` files (ld scripts) are reported below
    try:
        head = read_regular(path, 64)  # lstat'ed above; read_regular closes the race
    except OSError as exc:
        discovery.skipped.append(Skipped(_target(path, root), f"unreadable: {exc.strerror}", True))
        return
    info = classify_head(head)
    if info is None:
        if named_like_library(name):
            from ldscope.elf import looks_like_linker_script

            if looks_like_linker_script(head):
                discovery.skipped.append(Skipped(_target(path, root), "GNU ld script (used by the linker, never loaded)", False))
            elif head[:4] == ELF_MAGIC:
                discovery.skipped.append(Skipped(_target(path, root), "malformed ELF header", True))
            else:
                discovery.skipped.append(Skipped(_target(path, root), "named like a library but not an ELF file", True))
        return
    e_type, _, machine, elf_class = info
    if e_type not in (C.ET_DYN, C.ET_EXEC):
        if e_type == C.ET_REL:
            discovery.skipped.append(Skipped(_target(path, root), "relocatable object (.o): linked, not loaded", False))
        elif named_like_library(name):
            discovery.skipped.append(Skipped(_target(path, root), f"ELF file of type {e_type}: cannot be loaded", True))
        return
    discovery.candidates.append(Candidate(_target(path, root), path, e_type, machine, elf_class))
