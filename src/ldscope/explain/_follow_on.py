"""Follow-on problems: what ld.so never reaches once a needed library is missing.

ld.so maps every NEEDED library before it relocates anything; when one cannot be found the
load stops there ("cannot open shared object file"), so no symbol is ever looked up. The
simulation still binds, to show what else would be wrong, but those undefined symbols are
consequences: most would come from the missing library. They are counted under it, not
listed (or explained with near-misses) as causes of their own.
"""

from __future__ import annotations

import os
from dataclasses import replace

from ldscope.loader import LoadReport, Problem
from ldscope.vocab import ProblemKind, Severity


def fold_follow_on(report: LoadReport) -> LoadReport:
    """The report with undefined symbols counted under the missing library they follow from."""
    missing = [p for p in report.problems if p.kind == ProblemKind.MISSING_LIBRARY and p.severity == Severity.ERROR]
    if not missing:
        return report
    undefined = [p for p in report.problems if p.kind == ProblemKind.UNRESOLVED_SYMBOL]
    if not undefined:
        return report
    needs_missing = {os.path.normpath(p.file): p for p in reversed(missing)}
    counts: dict[int, dict[str, int]] = {}
    for p in undefined:
        # A file's symbols go to the missing library it needs itself, else to the first one.
        owner = needs_missing.get(os.path.normpath(p.file), missing[0])
        per_file = counts.setdefault(id(owner), {})
        per_file[p.file] = per_file.get(p.file, 0) + 1
    kept: list[Problem] = []
    for p in report.problems:
        if p.kind == ProblemKind.UNRESOLVED_SYMBOL:
            continue
        folded = counts.get(id(p))
        if folded:
            total = sum(folded.values())
            where = ", ".join(f"{n} of {os.path.basename(f)}" for f, n in folded.items())
            p = replace(p, follow_on_symbols=total, message=(
                f"{p.message}; ld.so stops there, before binding: {total} undefined "
                f"symbol{'s' if total != 1 else ''} ({where}) would have to come from it or "
                "another missing library"))
        kept.append(p)
    return replace(report, problems=tuple(kept))
