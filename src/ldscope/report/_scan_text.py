"""A scan as text: a one-screen summary, then findings grouped by cause, most severe first."""

from __future__ import annotations

import os

from ldscope.loader import Problem
from ldscope.report._style import styled
from ldscope.report._text_safe import sanitized
from ldscope.scan import Finding, Owner, ScanResult
from ldscope.vocab import FoundVia, ProblemKind, Severity

_PLURAL = {"library": "libraries", "executable": "executables", "extension": "extensions"}
_FINDINGS_SHOWN = 25  # without -v
_PROBLEMS_SHOWN = 5  # per finding, without -v


def render_scan_text(result: ScanResult, verbose: bool = False, use_color: bool = False) -> str:
    """Summary first (one screen), then findings grouped by cause, most severe first."""
    result = sanitized(result)  # every name, path and message escaped once (report/_text_safe.py)
    lines = _summary(result, use_color)
    if not result.findings and result.errors:
        # Not "everything loads": something given could not be read (its lines are on stderr).
        count = len(result.errors)
        lines += ["", styled(f"no findings in what was read; {count} input error{'s' if count != 1 else ''} "
                             "(on standard error): not everything was scanned", "yellow", use_color, True)]
        return "\n".join(lines) + "\n"
    if not result.findings:
        lines += ["", styled("no findings: everything native in here loads", "green", use_color, True)]
        return "\n".join(lines) + "\n"
    lines += ["", f"findings ({len(result.findings)}, most severe first):"]
    shown = result.findings if verbose else result.findings[:_FINDINGS_SHOWN]
    owners = dict(result.owners)
    hosts = {f.path: f.host or (f"checked as part of {f.checked_as_part_of}" if f.checked_as_part_of else None)
             for f in result.files}
    for i, f in enumerate(shown, 1):
        lines += _finding(i, f, verbose, use_color, owners, hosts)
    if len(shown) < len(result.findings):
        lines.append(f"… {len(result.findings) - len(shown)} more findings (-v lists all)")
    return "\n".join(lines) + "\n"


def tried_by_rule(p: Problem, verbose: bool) -> list[str]:
    """Where ld.so looked for a missing library, one line per search rule: the directories
    once each (their glibc-hwcaps subdirectories counted, not listed), in the order tried."""
    by_rule: dict[str, dict[str, None]] = {}
    subdirs: dict[str, int] = {}
    name = p.library or ""
    dirs = [os.path.normpath(os.path.dirname(t.path)) for t in p.tried]
    for t, d in zip(p.tried, dirs):
        if t.source == FoundVia.CACHE:
            by_rule.setdefault(t.source, {})[t.path if t.outcome == "not found" else f"{t.path}: {t.outcome}"] = None
            continue
        base = next((o for o in dirs if d != o and d.startswith(o.rstrip("/") + "/")), None)
        if base is not None and not verbose:
            subdirs[t.source] = subdirs.get(t.source, 0) + 1
            continue
        by_rule.setdefault(t.source, {})[d] = None
    lines = []
    for rule, found in by_rule.items():
        extra = f" (+{subdirs[rule]} hwcaps subdirectories)" if subdirs.get(rule) else ""
        lines.append(f"looked in ({rule}): {', '.join(found)}{extra}")
    if not lines:
        lines.append(f"looked for {name}: nowhere to look")
    return lines


def _summary(result: ScanResult, use_color: bool) -> list[str]:
    s = result.summary()
    lines = []
    for t in result.targets:
        interp = f" (interpreter {t.interpreter})" if t.interpreter else ""
        why = f" — {t.chosen_because}" if t.chosen_because else ""
        lines.append(f"scanned {t.kind} {t.path}{interp}{why}")
    by_kind = s["by_kind"]
    assert isinstance(by_kind, dict)
    kinds = ", ".join(f"{n} {_PLURAL.get(k, k) if n != 1 else k}" for k, n in by_kind.items()) or "no native files"
    lines.append(f"  {s['native_files']} native files ({kinds}) among {s['files_seen']} files")
    fails = styled(f"{s['fails']} fail", "red", use_color, True) if s["fails"] else "0 fail"
    lines.append(f"  {styled(str(s['loads']) + ' load', 'green', use_color)}, {fails}")
    by_problem = s["problems_by_kind"]
    assert isinstance(by_problem, dict)
    if by_problem:
        lines.append("  problems: " + ", ".join(f"{n} {k}" for k, n in by_problem.items()))
    if s["skipped"]:
        lines.append(f"  skipped: {s['skipped']} ({s['unreadable']} unreadable: see findings)")
    return lines


def _finding(number: int, f: Finding, verbose: bool, use_color: bool,
             owners: dict[str, Owner | None] | None = None, hosts: dict[str, str | None] | None = None) -> list[str]:
    color = "red" if f.severity == Severity.ERROR else "yellow"
    lines = [f"{number:>3}. " + styled(f"{f.severity}", color, use_color, True) + f" {f.title}"]
    files = f.files if verbose else f.files[:3]
    more = f" and {len(f.files) - len(files)} more" if len(files) < len(f.files) else ""
    owners = owners or {}

    def named(path: str) -> str:
        owner = owners.get(path)
        return f"{path} ({owner.label})" if owner is not None else path

    lines.append(f"       affects: {', '.join(named(p) for p in files)}{more}")
    host = (hosts or {}).get(f.files[0]) if f.files else None
    if host:
        # How the first file was loaded, and what the process had loaded before it.
        lines.append(f"       as: {host}")
    lines += [f"       fix: {a}" for a in f.advice]
    seen_lines: set[str] = set()
    for p in (f.problems if verbose else f.problems[:_PROBLEMS_SHOWN]):
        if p.kind == ProblemKind.UNRESOLVED_SYMBOL:
            version = f"@{p.version}" if p.version else ""
            lines.append(f"       - {p.symbol}{version} [{p.when}]" + (f"  = {p.demangled}" if p.demangled else ""))
        elif p.kind == ProblemKind.MISSING_LIBRARY and p.tried:
            # Two needers of one missing library usually searched the same places: say it once.
            for line in tried_by_rule(p, verbose):
                if line not in seen_lines:
                    seen_lines.add(line)
                    lines.append(f"       - {line}")
        elif len(f.problems) > 1:
            lines.append(f"       - {p.message}")
        lines += [f"         near-miss: {n.explanation}" for n in p.near_misses[: (3 if verbose else 1)]]
    if not verbose and len(f.problems) > _PROBLEMS_SHOWN:
        lines.append(f"       … {len(f.problems) - _PROBLEMS_SHOWN} more (-v)")
    return lines
