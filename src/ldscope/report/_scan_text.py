"""A scan as text: a one-screen summary, then findings grouped by cause, most severe first."""

from __future__ import annotations

from ldscope.report._style import styled
from ldscope.scan import Finding, ScanResult
from ldscope.vocab import ProblemKind, Severity

_PLURAL = {"library": "libraries", "executable": "executables", "extension": "extensions"}
_FINDINGS_SHOWN = 25  # without -v
_PROBLEMS_SHOWN = 5  # per finding, without -v


def render_scan_text(result: ScanResult, verbose: bool = False, use_color: bool = False) -> str:
    """Summary first (one screen), then findings grouped by cause, most severe first."""
    lines = _summary(result, use_color)
    if not result.findings:
        lines += ["", styled("no findings: everything native in here loads", "green", use_color, True)]
        return "\n".join(lines) + "\n"
    lines += ["", f"findings ({len(result.findings)}, most severe first):"]
    shown = result.findings if verbose else result.findings[:_FINDINGS_SHOWN]
    for i, f in enumerate(shown, 1):
        lines += _finding(i, f, verbose, use_color)
    if len(shown) < len(result.findings):
        lines.append(f"… {len(result.findings) - len(shown)} more findings (-v lists all)")
    return "\n".join(lines) + "\n"


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


def _finding(number: int, f: Finding, verbose: bool, use_color: bool) -> list[str]:
    color = "red" if f.severity == Severity.ERROR else "yellow"
    lines = [f"{number:>3}. " + styled(f"{f.severity}", color, use_color, True) + f" {f.title}"]
    files = f.files if verbose else f.files[:3]
    more = f" and {len(f.files) - len(files)} more" if len(files) < len(f.files) else ""
    lines.append(f"       affects: {', '.join(files)}{more}")
    for p in (f.problems if verbose else f.problems[:_PROBLEMS_SHOWN]):
        if p.kind == ProblemKind.UNRESOLVED_SYMBOL:
            version = f"@{p.version}" if p.version else ""
            lines.append(f"       - {p.symbol}{version} [{p.when}]" + (f"  = {p.demangled}" if p.demangled else ""))
        elif p.kind == ProblemKind.MISSING_LIBRARY and p.tried:
            tried = p.tried if verbose else p.tried[-4:]
            last = f", last {len(tried)}" if len(tried) < len(p.tried) else ""
            lines.append(f"       - tried ({len(p.tried)} paths{last}): " + ", ".join(t.path for t in tried))
        elif len(f.problems) > 1:
            lines.append(f"       - {p.message}")
        lines += [f"         near-miss: {n.explanation}" for n in p.near_misses[: (3 if verbose else 1)]]
    if not verbose and len(f.problems) > _PROBLEMS_SHOWN:
        lines.append(f"       … {len(f.problems) - _PROBLEMS_SHOWN} more (-v)")
    return lines
