"""One cause for a bad LD_LIBRARY_PATH entry: a library it supplies in place of the system's
copy, older than what the files need.

ld.so searches LD_LIBRARY_PATH before the cache, so a directory holding an old libstdc++.so.6
gives every C++ program of the process that copy: "version `GLIBCXX_3.4.30' not found", and
symbols the old copy lacks. Those are one root cause, with one fix (drop or reorder the entry),
not a dozen symptoms with near-miss advice ("link with libasan", "signature changed").
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, replace

from ldscope.errors import InputFormatError
from ldscope.loader import ElfImage, ImageCache, LoadEnvironment, LoadReport
from ldscope.vocab import FoundVia, ProblemKind

_FAMILY = re.compile(r"^(.*?)(\d+(?:\.\d+)*)$")


@dataclass(frozen=True, slots=True)
class Shadowing:
    """A library found through LD_LIBRARY_PATH whose system copy has what the files need."""

    found: str  # the copy LD_LIBRARY_PATH supplied
    system: str  # the copy a process without the entry gets (ld.so.cache)
    versions_needed: tuple[str, ...]
    offers_up_to: str | None

    def summary(self, files: int) -> str:
        """"LD_LIBRARY_PATH entry /opt/old shadows /lib/…/libstdc++.so.6 with an older copy …"."""
        needed = ", ".join(self.versions_needed[:3]) + (" …" if len(self.versions_needed) > 3 else "")
        offers = f"offers up to {self.offers_up_to}, " if self.offers_up_to else ""
        return (f"LD_LIBRARY_PATH entry {os.path.dirname(self.found)} shadows {self.system} with an older "
                f"copy ({offers}{files} file{'s need' if files != 1 else ' needs'} {needed}): remove the entry "
                "or put the system directory before it")


def _system_copy(env: LoadEnvironment, images: ImageCache, soname: str) -> tuple[str, ElfImage] | None:
    cache = env.ld_cache
    if cache is None:
        return None
    for entry in cache.find(soname):
        try:
            return entry.path, images.get(env.host_path(entry.path))
        except InputFormatError:
            continue
    return None


def _highest(names: frozenset[str] | set[str], like: str) -> str | None:
    """The highest version node of the same family (GLIBCXX_3.4.29 for GLIBCXX_3.4.30)."""
    m = _FAMILY.match(like)
    if m is None:
        return None
    prefix = m.group(1)
    same = [n for n in names if n.startswith(prefix) and _FAMILY.match(n) and _FAMILY.match(n).group(1) == prefix]  # type: ignore[union-attr]
    return max(same, key=lambda n: tuple(int(x) for x in re.findall(r"\d+", n)), default=None)


def relabel_shadowing(reports: list[tuple[str, LoadReport]], env: LoadEnvironment,
                      images: ImageCache) -> tuple[list[tuple[str, LoadReport]], dict[str, Shadowing]]:
    """Reports whose problems caused by a shadowing LD_LIBRARY_PATH copy share its cause."""
    found: dict[str, Shadowing] = {}
    affected: dict[str, set[str]] = {}
    system_images: dict[str, ElfImage] = {}
    for target, report in reports:
        via_variable = {lib.path: lib for lib in report.libraries if lib.found_via == FoundVia.LD_LIBRARY_PATH and lib.path}
        for p in report.problems:
            if p.kind != ProblemKind.MISSING_VERSION or p.library not in via_variable or not p.version:
                continue
            lib = via_variable[p.library]
            system = _system_copy(env, images, lib.soname or os.path.basename(p.library))
            if system is None or os.path.realpath(system[0]) == os.path.realpath(p.library):
                continue
            if p.version not in system[1].all_verdef_names:
                continue  # the system copy lacks it too: not the entry's fault
            before = found.get(p.library)
            needed = tuple(sorted({*(before.versions_needed if before else ()), p.version}))
            try:
                offers = _highest(images.get(env.host_path(p.library)).all_verdef_names, p.version)
            except InputFormatError:
                offers = None
            found[p.library] = Shadowing(p.library, system[0], needed, offers)
            system_images[p.library] = system[1]
            affected.setdefault(p.library, set()).add(target)
    if not found:
        return reports, found
    out: list[tuple[str, LoadReport]] = []
    for target, report in reports:
        shadows = [s for path, s in found.items() if target in affected[path]]
        if not shadows:
            out.append((target, report))
            continue
        shadow = shadows[0]
        cause = f"shadowed:{shadow.found}"
        summary = shadow.summary(len(affected[shadow.found]))
        problems = []
        for p in report.problems:
            if (p.kind == ProblemKind.MISSING_VERSION and p.library in found) or (
                    p.kind == ProblemKind.UNRESOLVED_SYMBOL and p.symbol
                    and system_images[shadow.found].defines(p.symbol)):
                # Symbols the system copy has and the old one lacks: the same cause.
                p = replace(p, cause=cause, cause_summary=summary, near_misses=())
            problems.append(p)
        out.append((target, replace(report, problems=tuple(problems))))
    return out, found

