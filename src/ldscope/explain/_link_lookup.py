"""Where else a symbol is defined: libraries reached only through DT_NEEDED, libraries on the
search path that are not on the line, and, when neither has it, libraries in the link's own
build tree. Read-only, bounded, cached per simulation."""

from __future__ import annotations

import os
from dataclasses import dataclass

from ldscope.elf import (
    ElfFile,
    IndexedArchive,
    is_archive,
    is_elf,
    looks_like_linker_script,
    open_regular,
    read_linker_script,
    read_regular,
)
from ldscope.errors import InputFormatError
from ldscope.explain._build_tree import build_tree_libraries
from ldscope.linker import Simulation
from ldscope.linker.inputs import ArchiveFacts, FactsCache, SharedFacts, bfd_needed_search_path, library_flag

MAX_FILES_PER_DIR = 400
MAX_FILES = 1500
# Build-tree providers offered for one symbol: the nearest; each becomes a fix to simulate.
MAX_TREE_CANDIDATES = 2


@dataclass(frozen=True, slots=True)
class Candidate:
    """A library not used for resolution that defines the symbol."""

    path: str
    how: str  # "dt-needed" | "search-path" | "build-tree"
    via: str | None  # the library whose DT_NEEDED names it, or the -l name to use (None: a path)
    via_position: int | None
    shown: str  # the symbol as that library spells it (name@@VER)


@dataclass(slots=True)
class Lookup:
    """Lazily built indexes over DT_NEEDED libraries and the search path."""

    sim: Simulation
    _needed: list[tuple[str, SharedFacts, str, int | None]] | None = None
    _search: list[tuple[str, SharedFacts | ArchiveFacts]] | None = None
    _names: list[tuple[str, frozenset[str]]] | None = None
    _tree: list[tuple[str, frozenset[str]]] | None = None

    @property
    def cache(self) -> FactsCache:
        """The facts cache the simulation was given."""
        return self.sim.environment.cache

    def abs(self, path: str) -> str:
        """Path against the link's directory."""
        return path if os.path.isabs(path) else os.path.join(self.sim.line.cwd, path)

    def needed_libraries(self) -> list[tuple[str, SharedFacts, str, int | None]]:
        """(path, facts, needed by, its argument) for DT_NEEDED entries not on the line."""
        if self._needed is not None:
            return self._needed
        on_line = {self.abs(i.display) for i in self.sim.resolved.inputs if isinstance(i.facts, SharedFacts)}
        sonames = {i.facts.soname for i in self.sim.resolved.inputs
                   if isinstance(i.facts, SharedFacts) and i.facts.soname}
        queue = [(i.display, i.facts, i.position) for i in self.sim.resolved.inputs
                 if isinstance(i.facts, SharedFacts)]
        found: list[tuple[str, SharedFacts, str, int | None]] = []
        seen: set[str] = set()
        o = self.sim.parsed.options
        ldirs = [d for d, _ in o.library_paths]
        while queue and len(found) < 64:
            by_path, by, pos = queue.pop(0)
            for name in by.needed:
                if name in seen or name in sonames:
                    continue
                seen.add(name)
                cands = bfd_needed_search_path(name, self.abs(by_path), by.runpath, by.rpath,
                                               o.rpath_link, o.rpath, self.sim.environment.variables, o.sysroot,
                                               self.sim.resolved.search_dirs)
                cands += [(os.path.join(d, name), "-L") for d in ldirs]
                for path, _rule in cands:
                    full = self.abs(path)
                    if full in on_line or not os.path.isfile(full):
                        continue
                    facts = self.cache.get(full)
                    if isinstance(facts, SharedFacts):
                        found.append((path, facts, by_path, pos))
                        queue.append((path, facts, pos))
                        break
        self._needed = found
        return found

    def search_libraries(self) -> list[tuple[str, SharedFacts | ArchiveFacts]]:
        """lib*.so / lib*.a in the search directories that are not inputs (bounded)."""
        if self._search is not None:
            return self._search
        out: list[tuple[str, SharedFacts | ArchiveFacts]] = []
        for path in self.search_paths():
            facts = self.cache.get(self.abs(path))
            if isinstance(facts, (SharedFacts, ArchiveFacts)):
                out.append((path, facts))
        self._search = out
        return out

    def where(self, key: str, search: bool = True, tree: bool = False) -> list[Candidate]:
        """Libraries outside the resolution that define `key`; with `tree`, when neither
        DT_NEEDED nor the search path has one, the build tree's (the nearest few)."""
        out: list[Candidate] = []
        for path, facts, by, pos in self.needed_libraries():
            if key in facts.defs:
                out.append(Candidate(path, "dt-needed", by, pos, facts.shown(key)))
        if search:
            by_flag: dict[str, Candidate] = {}
            for path, names in self.search_index():
                if key in names:
                    lib = self.cache.get(self.abs(path))
                    shown = lib.shown(key) if isinstance(lib, SharedFacts) else key
                    flag = library_flag(path)
                    seen = by_flag.get(flag)
                    # One candidate per -l: the file that -l finds (the first directory holding
                    # either; there, libX.so before libX.a, as a dynamic link searches).
                    if seen is None or (os.path.dirname(seen.path) == os.path.dirname(path)
                                        and seen.path.endswith(".a") and path.endswith(".so")):
                        by_flag[flag] = Candidate(path, "search-path", flag, None, shown)
            out.extend(by_flag.values())
        if tree and not out:
            for path, names in self.tree_index():
                if key in names:
                    lib = self.cache.get(self.abs(path))
                    shown = lib.shown(key) if isinstance(lib, SharedFacts) else key
                    out.append(Candidate(path, "build-tree", None, None, shown))
                    if len(out) == MAX_TREE_CANDIDATES:
                        break
        return out

    def tree_index(self) -> list[tuple[str, frozenset[str]]]:
        """(path as the user writes it: relative to the command's directory, names it
        defines) for the libraries of the link's own build tree that are not inputs."""
        if self._tree is None:
            sim = self.sim
            cwd = os.path.abspath(sim.line.cwd)
            inputs = [self.abs(i.path) for i in sim.resolved.inputs if i.path]
            output = sim.parsed.options.output
            anchors = [cwd, *([os.path.dirname(self.abs(output))] if output else []),
                       *(os.path.dirname(p) for p in inputs)]
            exclude = {os.path.realpath(p) for p in inputs}
            if output:  # a previous build of this very output is never its own provider
                exclude.add(os.path.realpath(self.abs(output)))
            found: list[tuple[str, frozenset[str]]] = []
            for full in build_tree_libraries(cwd, anchors, exclude):
                names = exported_names(full)
                if names:
                    found.append((os.path.relpath(full, cwd), names))
            self._tree = found
        return self._tree

    def search_index(self) -> list[tuple[str, frozenset[str]]]:
        """(path, names it defines) for the search-path libraries, read as lightly as possible:
        a shared library's exported names only, an archive's symbol index."""
        if self._names is None:
            found: list[tuple[str, frozenset[str]]] = []
            covered: set[str] = set()  # files a script names: the script's -l is the one to write
            for path in self.search_paths():
                names = exported_names(self.abs(path))
                if names is None:
                    members = _script_members(self.abs(path))
                    if members:
                        member_names = [exported_names(m) for m in members]
                        names = frozenset().union(*(n for n in member_names if n is not None))
                        covered.update(os.path.realpath(m) for m in members)
                if names is not None:
                    found.append((path, names))
            self._names = [(p, n) for p, n in found if os.path.realpath(self.abs(p)) not in covered]
        return self._names

    def search_paths(self) -> list[str]:
        """Candidate library files in the search directories (bounded)."""
        used = {os.path.realpath(self.abs(i.display)) for i in self.sim.resolved.inputs if i.path}
        user_dirs = {d for d, _ in self.sim.parsed.options.library_paths}
        out: list[str] = []
        for d in dict.fromkeys(self.sim.resolved.search_dirs):
            try:
                names = sorted(os.listdir(self.abs(d)))
            except OSError:
                continue
            versioned = d in user_dirs and not _is_system(d)
            names = [n for n in names if n.startswith("lib") and (
                n.endswith((".a", ".so")) or (versioned and ".so." in n))][:MAX_FILES_PER_DIR]
            for n in names:
                path = os.path.join(d, n)
                real = os.path.realpath(self.abs(path))
                if real not in used and len(out) < MAX_FILES:
                    used.add(real)
                    out.append(path)
        return out


_EXPORTED: dict[tuple[str, int, int], frozenset[str] | None] = {}


def exported_names(path: str) -> frozenset[str] | None:
    """Names a library file defines for the linker (cached by identity): a shared library's
    exported dynamic symbols, an archive's index; None for anything else."""
    try:
        st = os.stat(path)
        head = read_regular(path, 8)  # a FIFO or device met in a search directory is skipped
    except (OSError, ValueError):
        return None
    ident = (path, st.st_ino, st.st_mtime_ns)
    if ident in _EXPORTED:
        return _EXPORTED[ident]
    names: frozenset[str] | None = None
    try:
        if is_elf(head):
            with ElfFile.open(path) as elf:
                table = elf.dynsym
                names = frozenset(table.exported_names()) if table is not None else frozenset()
        elif is_archive(head):
            names = _index_names(path)
            if names is None:
                with IndexedArchive.open(path) as ar:
                    names = frozenset(s for s, _ in ar.index_entries)
    except (InputFormatError, ValueError, OSError):
        names = None
    _EXPORTED[ident] = names
    return names


def _script_members(path: str) -> list[str]:
    """The files a linker script in a search directory names by path (Debian's libm.so and
    libm.a: GROUP(libm.so.6 AS_NEEDED(libmvec.so.1)), GROUP(libm-2.36.a libmvec.a)): what
    `-lm` really brings in; [] for anything that is not such a script."""
    try:
        head = read_regular(path, 4096)
    except (OSError, ValueError):
        return []
    if not looks_like_linker_script(head):
        return []
    try:
        script = read_linker_script(path)
    except InputFormatError:
        return []
    here = os.path.dirname(path)
    members = []
    for item in script.inputs:
        if item.is_library_flag:
            continue
        candidate = item.name if os.path.isabs(item.name) else os.path.join(here, item.name)
        if os.path.isfile(candidate):
            members.append(candidate)
    return members


def _index_names(path: str) -> frozenset[str] | None:
    """The names in a GNU archive's symbol index (the first member, `/` or `/SYM64/`), read
    without walking the members; None when the layout is anything else."""
    with open_regular(path) as fh:
        head = fh.read(8 + 60)
        if len(head) < 68 or head[8 + 58:8 + 60] != b"`\n":
            return None
        name = head[8:24].rstrip(b" ")
        if name not in (b"/", b"/SYM64/"):
            return None
        size = int(head[8 + 48:8 + 58].rstrip(b" ") or b"0")
        table = fh.read(size)
    width = 8 if name == b"/SYM64/" else 4
    if len(table) < width:
        return None
    count = int.from_bytes(table[:width], "big")
    if count > (len(table) - width) // width:
        return None
    parts = table[width + count * width:].split(b"\0", count)
    if len(parts) <= count:
        return None
    return frozenset(p.decode("utf-8", "surrogateescape") for p in parts[:count])


def _is_system(d: str) -> bool:
    """A compiler or system library directory (not the project's own)."""
    norm = os.path.normpath(d)
    return norm.startswith(("/usr/lib", "/lib", "/usr/local/lib"))
