"""Which distribution a file belongs to: RECORD for Python packages, dpkg's lists for Debian
system files (read, never by running pip or dpkg), and the advice that follows for a library
that is missing."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

from ldscope.loader import LoadReport, Problem
from ldscope.system import DebianOwners, Distribution
from ldscope.vocab import FoundVia, Words

# auditwheel renames what it vendors with a content hash (libquadmath-96973f99.so.0.0.0,
# libjpeg.67fb65bd.so.8): only such a name is a bundled copy; libcuda.so.1 never is.
_VENDORED = re.compile(r"[-.][0-9a-f]{8}(?:-[0-9a-f]{8})?\.so")


class OwnerSource(Words):
    """Where an owner was read."""

    RECORD = "RECORD"  # a Python distribution's dist-info/RECORD
    DPKG = "dpkg"  # /var/lib/dpkg/info/*.list


@dataclass(frozen=True, slots=True)
class Owner:
    """The distribution that installed a file."""

    name: str
    version: str | None
    source: OwnerSource

    @property
    def label(self) -> str:
        """"pillow 11.0.0", "libc6 2.36-9" for messages."""
        return f"{self.name} {self.version}" if self.version else self.name


class Attribution:
    """Owners of files, from the Python distributions of the targets and dpkg's database."""

    def __init__(self, root: str | None = None) -> None:
        self._record: dict[str, Distribution] = {}
        self._by_basename: dict[str, list[tuple[str, Distribution]]] = {}
        self._dpkg = DebianOwners(root)
        self._cache: dict[str, Owner | None] = {}

    def add(self, distributions: list[Distribution]) -> None:
        """Know the files these distributions' RECORDs list."""
        for d in distributions:
            for f in d.files:
                self._record.setdefault(f, d)
                self._by_basename.setdefault(os.path.basename(f), []).append((f, d))

    def owner_of(self, path: str) -> Owner | None:
        """Who installed `path` (None: no RECORD and no Debian list names it)."""
        if path in self._cache:
            return self._cache[path]
        owner: Owner | None = None
        for candidate in dict.fromkeys((os.path.normpath(path), os.path.realpath(path))):
            dist = self._record.get(candidate)
            if dist is not None:
                owner = Owner(dist.name, dist.version, OwnerSource.RECORD)
                break
        if owner is None:
            package = self._dpkg.owner_of(path)
            if package is not None:
                owner = Owner(package.name, package.version, OwnerSource.DPKG)
        self._cache[path] = owner
        return owner

    def _installs_into(self, owner: Owner | None, directory: str) -> bool:
        """True if the distribution `owner` names has files in `directory` (its own .libs)."""
        if owner is None or owner.source != OwnerSource.RECORD:
            return False
        prefix = directory.rstrip("/") + "/"
        return any(path.startswith(prefix) and d.name == owner.name
                   for path, d in self._record.items() if path.startswith(prefix))

    def listed_as(self, name: str) -> list[tuple[str, Distribution]]:
        """(path, distribution) of RECORD entries whose file name is `name`."""
        return self._by_basename.get(name, [])

    def advice_for_missing(self, problem: Problem) -> list[str]:
        """What to do about a missing library: where its bundled copy belongs, who lists it."""
        name = problem.library or ""
        advice: list[str] = []
        bundled = _bundled_directory(problem)
        needer = self.owner_of(problem.file)
        listed = [(p, d) for p, d in self.listed_as(name) if not os.path.exists(p)]
        if listed:
            path, dist = listed[0]
            advice.append(f"{path} is listed in {dist.label}'s RECORD but is not on disk: reinstall it "
                          f"(pip install --force-reinstall --no-deps {dist.name}=={dist.version})"
                          if dist.version else f"{path} is listed in {dist.name}'s RECORD but is not on "
                          f"disk: reinstall {dist.name}")
        elif bundled is not None and _VENDORED.search(name) and self._installs_into(needer, bundled):
            who = f" (of {needer.label})" if needer is not None else ""
            advice.append(f"no installed distribution provides it; a bundled copy belongs in {bundled}, "
                          f"where {os.path.basename(problem.file)}{who} looks first (its RPATH/RUNPATH)")
        else:
            package = next((o for t in problem.tried if t.source == FoundVia.DEFAULT
                            for o in [self._dpkg.owner_of(t.path)] if o is not None), None)
            if package is not None:
                advice.append(f"listed by the Debian package {package.name} {package.version or ''} but not "
                              f"on disk: reinstall it (apt-get install --reinstall {package.name})")
            else:
                advice.append("provided by no installed distribution (no RECORD lists it) and by no "
                              "installed Debian package (no dpkg list names it where ld.so looked)")
        return advice


def _bundled_directory(problem: Problem) -> str | None:
    """The first RPATH/RUNPATH directory the loader tried that is no subdirectory of another
    one tried (ld.so tries glibc-hwcaps subdirectories of each first)."""
    dirs = list(dict.fromkeys(os.path.normpath(os.path.dirname(t.path)) for t in problem.tried
                              if t.source in (FoundVia.RPATH, FoundVia.RUNPATH)))
    bases = [d for d in dirs if not any(d != o and d.startswith(o.rstrip("/") + "/") for o in dirs)]
    # A directory that does not exist is a build machine's leftover (/__w/_temp/…/lib), not
    # where anything belongs: say nothing about it.
    existing = [d for d in bases if os.path.isdir(d)]
    return existing[0] if existing else None


def provider_paths(reports: list[tuple[str, LoadReport]]) -> list[str]:
    """Every library path any load found (the providers), in order seen."""
    seen: dict[str, None] = {}
    for _target, report in reports:
        for lib in report.libraries:
            if lib.path:
                seen.setdefault(os.path.normpath(lib.path), None)
    return list(seen)
