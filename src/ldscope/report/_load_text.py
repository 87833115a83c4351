"""Render a LoadReport as text: a libtree-like tree, then problems grouped by cause."""

from __future__ import annotations

from ldscope.explain import CauseGroup, group_by_cause
from ldscope.loader import LibraryResult, LoadReport, Problem
from ldscope.report._style import styled
from ldscope.report._text_safe import sanitized
from ldscope.vocab import FoundVia, ProblemKind, Severity


def render_load_text(report: LoadReport, verbose: bool = False, use_color: bool = False) -> str:
    """The whole text report for one load."""
    report = sanitized(report)  # every name, path and message escaped once (report/_text_safe.py)
    lines: list[str] = []
    verdict = (
        styled("loads", "green", use_color, True)
        if report.loads
        else styled("DOES NOT LOAD", "red", use_color, True)
    )
    lines.append(f"{report.target}: {verdict}")
    lines.append(f"  as: {report.host}")
    lines.append("")
    lines.extend(_tree(report, verbose, use_color))
    problems = [p for p in report.problems if verbose or p.severity != Severity.INFO]
    if problems:
        lines.append("")
        lines.extend(_problems(problems, verbose, use_color))
    return "\n".join(lines) + "\n"


def _tree(report: LoadReport, verbose: bool, use_color: bool) -> list[str]:
    children: dict[str, list[LibraryResult]] = {}
    for lib in report.libraries:
        for parent in lib.needed_by:
            children.setdefault(parent, []).append(lib)
    lines = [report.target]
    shown: set[str] = set()

    def walk(parent: str, prefix: str, depth: int) -> None:
        kids = children.get(parent, [])
        for i, lib in enumerate(kids):
            last = i == len(kids) - 1
            branch = "└── " if last else "├── "
            if lib.path is None:
                label = styled(f"{lib.name} not found", "red", use_color, True)
                lines.append(f"{prefix}{branch}{label}")
                sub = prefix + ("    " if last else "│   ")
                if lib.tried:
                    lines.append(f"{sub}  tried, in order:")
                    tried = lib.tried if verbose or len(lib.tried) <= 12 else lib.tried[:12]
                    for t in tried:
                        lines.append(f"{sub}    {t.path}  [{t.source}: {t.outcome}]")
                    if len(tried) < len(lib.tried):
                        lines.append(f"{sub}    … {len(lib.tried) - len(tried)} more (-v lists all)")
                continue
            repeat = lib.path in shown
            via = lib.found_via or ""
            name = lib.name if lib.name == lib.path else f"{lib.name} => {lib.path}"
            suffix = " (see above)" if repeat and via != FoundVia.ALREADY_LOADED else ""
            color = "blue" if via == FoundVia.ALREADY_LOADED else None
            lines.append(f"{prefix}{branch}{styled(name, color, use_color)}  [{via}]{suffix}")
            if not repeat:
                shown.add(lib.path)
                if depth < 32:
                    walk(lib.path, prefix + ("    " if last else "│   "), depth + 1)

    walk(report.target, "", 0)
    if verbose:
        host_roots = [lib for lib in report.libraries if "(host)" in lib.needed_by]
        if host_roots:
            lines.append("")
            lines.append("host process:")
            for lib in report.libraries:
                if lib.path and lib.path not in shown and lib.path != report.target:
                    lines.append(f"  {lib.name} => {lib.path}  [{lib.found_via}]")
    return lines


def render_problems(problems: list[Problem], verbose: bool, use_color: bool) -> list[str]:
    """Problems grouped by cause, most severe first, each with its evidence and near-misses."""
    return _problems(sanitized(problems), verbose, use_color)


def _problems(problems: list[Problem], verbose: bool, use_color: bool) -> list[str]:
    """render_problems on problems already escaped (escaping twice would double backslashes)."""
    ordered = sorted(problems, key=lambda p: Severity.rank_of(p.severity))
    groups = group_by_cause([("", ordered)])
    count = sum(len(g.problems) for g in groups)
    plural = "s" if count != 1 else ""
    lines = [f"{count} problem{plural}, {len(groups)} cause{'s' if len(groups) != 1 else ''}:"]
    for group in groups:
        lines += _cause(group, verbose, use_color)
    return lines


def _cause(group: CauseGroup, verbose: bool, use_color: bool) -> list[str]:
    """One cause: its headline, its problems (symbols with near-misses), the paths tried."""
    members = group.problems
    first = group.root
    color = "red" if first.severity == Severity.ERROR else "yellow"
    tag = styled(f"{first.severity} [{first.when}]", color, use_color, True)
    if first.cause_summary:
        symbols = f" ({len(members)} symbols)" if len(members) > 1 else ""
        lines = [f"  {tag} {first.cause_summary}{symbols}"]
    elif first.kind == ProblemKind.UNRESOLVED_SYMBOL and len(members) > 1:
        lines = [f"  {tag} {first.file}: {len(members)} undefined symbols"]
    else:
        lines = [f"  {tag} {first.message}"]
    shown = members if verbose or len(members) <= 10 else members[:10]
    for p in shown:
        if p.kind == ProblemKind.UNRESOLVED_SYMBOL:
            version = f" (version {p.version})" if p.version else ""
            when = f" [{p.when}]" if p.when != first.when else ""
            lines.append(f"      {p.symbol}{version}{when}")
            if p.demangled:
                lines.append(f"        = {p.demangled}")
        lines += [f"        near-miss: {n.explanation}" for n in p.near_misses[: (5 if verbose else 2)]]
    if len(shown) < len(members):
        lines.append(f"      … {len(members) - len(shown)} more (-v lists all)")
    if first.kind == ProblemKind.MISSING_LIBRARY and first.tried and verbose:
        lines.append("      tried, in order:")
        lines += [f"        {t.path}  [{t.source}: {t.outcome}]" for t in first.tried]
    return lines
