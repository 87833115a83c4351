"""Root causes: which problems share one, named once, and grouped the same way for every report.

A problem's cause key comes from the loader (`missing-library:libfoo.so`) or, for an
unresolved symbol, from its best near-miss (`rebuilt:EXT:LIB`: the file was built against
another version of LIB). Grouping folds the consequences of a missing library into it:
ld.so stops at a missing DT_NEEDED library, so the symbols of the file that needed it,
found nowhere else, are that library's consequence, not causes of their own (ldd -r lists
both).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from ldscope.loader import Problem
from ldscope.vocab import NearMiss, NearMissKind, ProblemKind, Severity


def cause_of(problem: Problem, misses: Sequence[NearMiss]) -> tuple[str | None, str | None]:
    """A grouping key and a one-line summary for a problem, from its best near-miss: problems
    with the same root cause (one library rebuilt, another Python) get the same key."""
    if problem.kind != ProblemKind.UNRESOLVED_SYMBOL or not misses:
        return problem.cause, None
    best = misses[0]
    base = os.path.basename(best.file) if best.file else None
    if best.kind in (NearMissKind.SIGNATURE_CHANGED, NearMissKind.NAMESPACE_MOVED):
        return (f"rebuilt:{problem.file}:{best.file}",
                f"{problem.file} was built against another version of {base}: symbols changed signature")
    if best.kind == NearMissKind.CXX11_ABI:
        return (f"cxx11:{problem.file}:{best.file}",
                f"{problem.file} and {base} disagree on _GLIBCXX_USE_CXX11_ABI")
    if best.kind == NearMissKind.PYTHON_API:
        return (f"python:{problem.file}", f"{problem.file} was built for another Python version")
    if best.kind == NearMissKind.OTHER_VERSION:
        return (f"version:{problem.file}:{best.file}",
                f"{problem.file} wants symbol versions {base} does not define")
    if best.kind == NearMissKind.NOT_IN_SCOPE:
        return (f"scope:{problem.file}:{best.file}",
                f"symbols {problem.file} needs are defined in {best.file}, which is not loaded")
    return problem.cause, None


@dataclass(frozen=True, slots=True)
class CauseGroup:
    """One root cause: its distinct problems (the root first) and the loads they came from."""

    cause: str
    problems: tuple[Problem, ...]
    affected: tuple[str, ...]  # the targets whose loads have these problems, in order seen

    @property
    def root(self) -> Problem:
        """The problem that names the cause."""
        return self.problems[0]

    @property
    def severity(self) -> Severity:
        """The most severe of its problems."""
        return min((p.severity for p in self.problems), key=Severity.rank_of)


def problem_key(p: Problem) -> tuple[object, ...]:
    """What makes two problems the same problem (seen in two loads, it is reported once)."""
    return (p.kind, p.file, p.symbol, p.version, p.library, p.message)


def group_by_cause(loads: Iterable[tuple[str, Sequence[Problem]]]) -> list[CauseGroup]:
    """Distinct problems of (target, problems) loads grouped by root cause, in order seen."""
    problems: dict[tuple[object, ...], Problem] = {}
    affected: dict[tuple[object, ...], list[str]] = {}
    consequence: dict[tuple[object, ...], str] = {}
    for target, load_problems in loads:
        missing_by_file: dict[str, str] = {}
        for p in load_problems:
            if p.kind == ProblemKind.MISSING_LIBRARY and p.severity == Severity.ERROR:
                missing_by_file.setdefault(p.file, p.cause or _fallback_cause(p))
        for p in load_problems:
            key = problem_key(p)
            problems.setdefault(key, p)
            hit = affected.setdefault(key, [])
            if target not in hit:
                hit.append(target)
            if (p.kind == ProblemKind.UNRESOLVED_SYMBOL and p.file in missing_by_file and not p.near_misses
                    and not p.cause_summary):
                consequence.setdefault(key, missing_by_file[p.file])
    keys_by_cause: dict[str, list[tuple[object, ...]]] = {}
    for key, p in problems.items():
        cause = consequence.get(key) or p.cause or _fallback_cause(p)
        keys_by_cause.setdefault(cause, []).append(key)
    groups = []
    for cause, keys in keys_by_cause.items():
        keys.sort(key=lambda k: 0 if k not in consequence else 1)  # the root cause first
        files: list[str] = []
        for k in keys:
            files.extend(f for f in affected[k] if f not in files)
        groups.append(CauseGroup(cause, tuple(problems[k] for k in keys), tuple(files)))
    return groups


def _fallback_cause(p: Problem) -> str:
    """The cause key of a problem the loader gave none."""
    return p.kind + ":" + (p.library or p.message)
