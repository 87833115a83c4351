"""Findings: distinct problems reported once, grouped by root cause, with every file affected."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

from ldscope.elf import open_regular, open_regular_text
from ldscope.explain import group_by_cause
from ldscope.loader import ElfImage, LoadEnvironment, LoadReport, Problem
from ldscope.scan._discover import Candidate
from ldscope.vocab import FoundVia, ProblemKind, Severity, When

_LD_LIBRARY_PATH_SET = re.compile(r"\bLD_LIBRARY_PATH\s*=")


@dataclass(frozen=True, slots=True)
class Finding:
    """One root cause: its distinct problems and the scanned files it affects."""

    cause: str
    severity: Severity
    kind: ProblemKind
    title: str
    problems: tuple[Problem, ...]
    files: tuple[str, ...]
    advice: tuple[str, ...] = ()  # what to do, when it follows from the facts (reinstall X, ...)


def _title(problems: tuple[Problem, ...]) -> str:
    first = problems[0]
    if first.cause_summary:
        if first.kind in (ProblemKind.UNRESOLVED_SYMBOL, ProblemKind.MISSING_VERSION) and len(problems) > 1:
            versions = sum(1 for p in problems if p.kind == ProblemKind.MISSING_VERSION)
            symbols = len(problems) - versions
            counted = [f"{versions} missing version{'s' if versions != 1 else ''}"] if versions else []
            counted += [f"{symbols} symbol{'s' if symbols != 1 else ''}"] if symbols else []
            return f"{first.cause_summary} ({', '.join(counted)})"
        if first.kind == ProblemKind.NOT_IMPORTABLE:
            return f"{first.cause_summary}: {len(problems)} file{'s' if len(problems) != 1 else ''}"
        return first.cause_summary
    if first.kind == ProblemKind.MISSING_LIBRARY:
        needers = sorted({os.path.normpath(p.file) for p in problems})
        more = f" and {len(needers) - 1} more" if len(needers) > 1 else ""
        return f"{first.library} is missing (needed by {needers[0]}{more})"
    if first.kind == ProblemKind.UNRESOLVED_SYMBOL and len(problems) > 1:
        return f"{first.file}: {len(problems)} undefined symbols"
    return first.message


def collect_findings(reports: list[tuple[str, LoadReport]]) -> list[Finding]:
    """One finding per root cause over every load (information-only problems aside)."""
    loads = [(target, [p for p in report.problems if p.severity != Severity.INFO]) for target, report in reports]
    return [Finding(g.cause, g.severity, g.root.kind, _title(g.problems), g.problems, g.affected)
            for g in group_by_cause(loads)]


def environment_findings(
    candidates: list[Candidate],
    images: dict[str, ElfImage],
    reports: list[tuple[str, LoadReport]],
    activation_scripts: tuple[str, ...],
    env: LoadEnvironment,
    set_with_option: bool = False,
) -> list[Finding]:
    """Findings about the environment rather than a file: duplicate SONAMEs, LD_LIBRARY_PATH."""
    findings: list[Finding] = []
    by_soname: dict[str, list[str]] = {}
    keys_seen: dict[str, set[int]] = {}
    for c in candidates:
        image = images.get(c.path)
        if image is None or image.soname is None:
            continue
        ids = keys_seen.setdefault(image.soname, set())
        if id(image) in ids:
            continue  # the same file (hard link or same inode) under another name
        ids.add(id(image))
        by_soname.setdefault(image.soname, []).append(c.path)
    for soname, paths in sorted(by_soname.items()):
        if len(paths) < 2 or _identical([images[p].host_path for p in paths]):
            continue  # byte-identical copies (auditwheel's content-hashed names) cannot disagree
        message = (f"{len(paths)} different files have SONAME {soname}: " + ", ".join(paths)
                   + "; which one a process gets depends on load order and search paths")
        problem = Problem(ProblemKind.DUPLICATE_SONAME, Severity.WARNING, paths[0], message, When.NEVER,
                            library=soname, cause=f"duplicate-soname:{soname}")
        findings.append(Finding(problem.cause or "", Severity.WARNING, ProblemKind.DUPLICATE_SONAME,
                                f"two copies of {soname} in the target", (problem,), tuple(paths)))
    via_variable: dict[str, list[str]] = {}
    sonames: dict[str, str] = {}
    for target, report in reports:
        for lib in report.libraries:
            if lib.found_via == FoundVia.LD_LIBRARY_PATH and lib.path:
                via_variable.setdefault(lib.path, [])
                sonames[lib.path] = lib.soname or lib.name
                if target not in via_variable[lib.path]:
                    via_variable[lib.path].append(target)
    setters = [s for s in activation_scripts if _sets_ld_library_path(s)]
    cache = env.ld_cache
    for path, targets in sorted(via_variable.items()):
        if cache is not None and cache.find(sonames.get(path) or os.path.basename(path)):
            continue  # a process without the variable finds the cache's copy: "will not find it" is false
        origin = ("set with --env" if set_with_option else f"set by activation script {setters[0]}" if setters
                  else "set in the environment ldscope runs in")
        message = (f"{path} is found only through LD_LIBRARY_PATH ({origin}); a process started "
                   "without it (a service, another shell, a subprocess with a clean environment) "
                   "will not find it")
        problem = Problem(ProblemKind.FOUND_VIA_VARIABLE, Severity.WARNING, path, message, When.NEVER,
                            library=os.path.basename(path), cause=f"ld-library-path:{path}")
        findings.append(Finding(problem.cause or "", Severity.WARNING, ProblemKind.FOUND_VIA_VARIABLE,
                                f"{os.path.basename(path)} found only via LD_LIBRARY_PATH",
                                (problem,), tuple(targets)))
    return findings


def _identical(paths: list[str]) -> bool:
    """True if all files have the same contents (size first, then SHA-256)."""
    import hashlib

    try:
        sizes = {os.path.getsize(p) for p in paths}
        if len(sizes) > 1:
            return False
        digests = set()
        for p in paths:
            h = hashlib.sha256()
            with open_regular(p) as fh:
                while chunk := fh.read(1 << 20):
                    h.update(chunk)
            digests.add(h.hexdigest())
        return len(digests) == 1
    except OSError:
        return False


def _sets_ld_library_path(script: str) -> bool:
    try:
        with open_regular_text(script) as fh:
            return bool(_LD_LIBRARY_PATH_SET.search(fh.read(1 << 20)))
    except OSError:
        return False
