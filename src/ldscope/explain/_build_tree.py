"""Libraries in a link's own build tree. CMake names a library it built by its path
(`../libcjson.so.1.7.15`, `lib/libgtest.a`, `libunity.a`), in no -L or default directory, so
when such a word is dropped from a line no search directory holds a provider: the library is
found only by looking where the link itself lives. Read-only and bounded: the directories the
line names, then a bounded walk of the build root above the command's directory (or, with no
root marked, of the command's directory, and the parent's `lib` beside it)."""

from __future__ import annotations

import os
import re
from collections.abc import Iterable

# How far above the command's directory a build root's marker is looked for: CMake runs a
# test's link in `build/tests` or `build/test/unit/x`, its root (CMakeCache.txt) a few levels up.
MAX_UP = 4
# Levels below a marked root that are walked: `lib/libgtest.a` is 1, FetchContent's
# `_deps/googletest-build/lib/libgtest.a` is 3.
MAX_DEPTH = 3
# With no marker there is no root to walk: the command's own directory is walked this deep,
# and above it only the parent's files and its library directories (`../lib`), never the
# parent's other subdirectories (a sibling project's libraries are not this link's).
MAX_DEPTH_UNMARKED = 2
_LIBRARY_DIRS = ("lib", "lib64", "lib32")
# Directory entries looked at in one walk, and a directory's size beyond which it is not a
# build directory (a data set, a system directory): a huge tree costs a bounded listing.
MAX_ENTRIES = 4000
MAX_DIR_ENTRIES = 2000
MAX_LIBRARIES = 200

# Files only the top of a build tree holds (CMake's cache, Ninja's and Meson's build files,
# autoconf's config.status); a Makefile is in every directory of a CMake/automake tree.
_ROOT_MARKERS = ("CMakeCache.txt", "build.ninja", "config.status", "meson-private")
# Never a library's home: CMake's own per-target object and check-project directories, and
# package caches.
_SKIP_DIRS = frozenset(("CMakeFiles", "node_modules", "__pycache__"))
# lib*.a, lib*.so, lib*.so.N...: libraries only. An object file is linked whole, so one that
# defines the symbols (another program's main object, a test's fixture) would drag in
# everything else it defines; a library contributes only what is asked for.
_LIBRARY = re.compile(r"^(lib.+?)\.(?:a|so(?:\.[0-9][0-9A-Za-z._-]*)?)$")


def find_build_root(cwd: str) -> str | None:
    """The nearest directory at or above `cwd` (at most MAX_UP levels) holding a build root's
    marker, or None."""
    here = os.path.abspath(cwd)
    for _ in range(MAX_UP + 1):
        if any(os.path.exists(os.path.join(here, m)) for m in _ROOT_MARKERS):
            return here
        parent = os.path.dirname(here)
        if parent == here:
            return None
        here = parent
    return None


_SYSTEM = ("/usr", "/lib", "/lib64", "/etc", "/proc", "/sys", "/dev")


def is_system_dir(d: str) -> bool:
    """The file-system root or a system directory: never a project's build tree."""
    norm = os.path.normpath(d)
    return norm == "/" or any(norm == s or norm.startswith(s + "/") for s in _SYSTEM)


def _libraries_in(d: str, budget: list[int]) -> tuple[list[str], list[str]]:
    """(library files, subdirectories to walk) of one directory, nearest-first order: in a
    directory, a shared library before the archive of the same name (as -l picks), one name per
    file (the shortest: `libcjson.so` for the `libcjson.so.1.7.15` it points to)."""
    try:
        with os.scandir(d) as it:
            entries = []
            for entry in it:
                entries.append(entry)
                if len(entries) > MAX_DIR_ENTRIES:
                    return [], []
    except OSError:
        return [], []
    budget[0] -= len(entries)
    by_file: dict[str, str] = {}
    subdirs: list[str] = []
    for entry in entries:
        name = entry.name
        try:
            if entry.is_dir(follow_symlinks=False):
                if not name.startswith(".") and name not in _SKIP_DIRS:
                    subdirs.append(name)
                continue
            if not _LIBRARY.match(name) or not entry.is_file():
                continue
        except OSError:
            continue
        real = os.path.realpath(entry.path)
        seen = by_file.get(real)
        if seen is None or (len(name), name) < (len(seen), seen):
            by_file[real] = name

    def order(name: str) -> tuple[str, int, str]:
        m = _LIBRARY.match(name)
        return (m.group(1) if m else name, 1 if name.endswith(".a") else 0, name)

    libs = [os.path.join(d, n) for n in sorted(by_file.values(), key=order)]
    # `lib`, `lib64`: where CMake and autotools put libraries; walked before the rest.
    subdirs.sort(key=lambda n: (not n.startswith("lib"), n))
    return libs, [os.path.join(d, n) for n in subdirs]


def build_tree_libraries(cwd: str, anchors: Iterable[str], exclude: Iterable[str]) -> list[str]:
    """Absolute paths of the library files in the link's directories (`anchors`: the command's,
    the output's, the inputs') and in its build root, nearest first, one path per file, none of
    `exclude` (real paths: the inputs and the output). Bounded by the MAX_* limits."""
    skip = set(exclude)
    found: list[str] = []
    listed: set[str] = set()
    budget = [MAX_ENTRIES]
    listings: dict[str, tuple[list[str], list[str]]] = {}

    def listing(d: str) -> tuple[list[str], list[str]]:
        if d not in listings:
            listings[d] = _libraries_in(d, budget)
        return listings[d]

    def take(paths: list[str]) -> None:
        for p in paths:
            real = os.path.realpath(p)
            if real not in skip and len(found) < MAX_LIBRARIES:
                skip.add(real)
                found.append(p)

    for d in dict.fromkeys(os.path.abspath(a) for a in anchors):
        if is_system_dir(d) or d in listed or budget[0] <= 0:
            continue
        listed.add(d)
        take(listing(d)[0])
    here = os.path.abspath(cwd)
    root = find_build_root(here)
    depth_limit = MAX_DEPTH
    if root is None:
        parent = os.path.dirname(here)
        for d in (parent, *(os.path.join(parent, n) for n in _LIBRARY_DIRS)):
            if not is_system_dir(d) and d not in listed and os.path.isdir(d):
                listed.add(d)
                take(listing(d)[0])
        root, depth_limit = here, MAX_DEPTH_UNMARKED
    if is_system_dir(root):
        return found
    queue: list[tuple[str, int]] = [(root, 0)]
    while queue and budget[0] > 0 and len(found) < MAX_LIBRARIES:
        d, depth = queue.pop(0)
        libs, subdirs = listing(d)
        if d not in listed:
            listed.add(d)
            take(libs)
        if depth < depth_limit:
            queue.extend((s, depth + 1) for s in subdirs)
    return found
