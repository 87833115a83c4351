"""Where else a symbol is defined: libraries reached only through DT_NEEDED, and libraries
on the search path that are not on the line. Read-only, bounded, cached per simulation."""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from ldscope.linker.facts import DEFAULT_CACHE, ArchiveFacts, FactsCache, ObjectFacts, SharedFacts
from ldscope.linker.model import Simulation
from ldscope.linker.searchdirs import bfd_needed_search_path

MAX_FILES_PER_DIR = 400
MAX_FILES = 1500


@dataclass(frozen=True, slots=True)
class Candidate:
    """A library not used for resolution that defines the symbol."""

    path: str
    how: str  # "dt-needed" | "search-path"
    via: str | None  # the library whose DT_NEEDED names it, or the -l name to use
    via_position: int | None
    shown: str  # the symbol as that library spells it (name@@VER)


@dataclass(slots=True)
class Lookup:
    """Lazily built indexes over DT_NEEDED libraries and the search path."""

    sim: Simulation
    cache: FactsCache = field(default_factory=lambda: DEFAULT_CACHE)
    _needed: list[tuple[str, SharedFacts, str, int | None]] | None = None
    _search: list[tuple[str, SharedFacts | ArchiveFacts]] | None = None

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
                                               o.rpath_link, o.rpath, os.environ, o.sysroot,
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
        used = {os.path.realpath(self.abs(i.display)) for i in self.sim.resolved.inputs if i.path}
        out: list[tuple[str, SharedFacts | ArchiveFacts]] = []
        total = 0
        for d in dict.fromkeys(self.sim.resolved.search_dirs):
            try:
                names = sorted(os.listdir(self.abs(d)))[:MAX_FILES_PER_DIR]
            except OSError:
                continue
            for n in names:
                if not n.startswith("lib") or not (n.endswith(".a") or n.endswith(".so") or ".so." in n):
                    continue
                path = os.path.join(d, n)
                real = os.path.realpath(self.abs(path))
                if real in used or total >= MAX_FILES:
                    continue
                used.add(real)
                total += 1
                facts = self.cache.get(self.abs(path))
                if isinstance(facts, (SharedFacts, ArchiveFacts)):
                    out.append((path, facts))
        self._search = out
        return out

    def where(self, key: str, search: bool = True) -> list[Candidate]:
        """Libraries outside the resolution that define `key`."""
        out: list[Candidate] = []
        for path, facts, by, pos in self.needed_libraries():
            if key in facts.defs:
                out.append(Candidate(path, "dt-needed", by, pos, facts.shown(key)))
        if search:
            for path, lib in self.search_libraries():
                if isinstance(lib, SharedFacts):
                    hit = key in lib.defs
                    shown = lib.shown(key)
                else:
                    hit = any(s == key for s, _ in lib.index_entries) if lib.has_gnu_index else key in lib.lazy_symbols()
                    shown = key
                if hit:
                    out.append(Candidate(path, "search-path", library_flag(path), None, shown))
        return out


def library_flag(path: str) -> str:
    """The -l option that finds `path` (`-lfoo` for libfoo.so/.a, else `-l:name`)."""
    base = os.path.basename(path)
    for suffix in (".so", ".a"):
        if base.startswith("lib") and base.endswith(suffix):
            return f"-l{base[3:-len(suffix)]}"
    return f"-l:{base}"


def defines(facts: ObjectFacts, key: str) -> bool:
    """True if a relocatable object defines `key`."""
    return facts.defines(key)
