"""A scan as text: a one-screen summary, then findings grouped by cause, most severe first."""

from __future__ import annotations

from ldscope.scan import ScanResult
from ldscope.vocab import ProblemKind, Severity


def render_scan_text(result: ScanResult, verbose: bool = False, use_color: bool = False) -> str:
    """Summary first (one screen), then findings grouped by cause, most severe first."""

    def style(text: str, color: str | None, bold: bool = False) -> str:
        if not use_color or color is None:
            return text
        import click

        return click.style(text, fg=color, bold=bold)

    s = result.summary()
    lines = []
    for t in result.targets:
        interp = f" (interpreter {t.interpreter})" if t.interpreter else ""
        lines.append(f"scanned {t.kind} {t.path}{interp}")
    by_kind = s["by_kind"]
    assert isinstance(by_kind, dict)
    plural = {"library": "libraries", "executable": "executables", "extension": "extensions"}
    kinds = ", ".join(f"{n} {plural.get(k, k) if n != 1 else k}" for k, n in by_kind.items()) or "no native files"
    lines.append(f"  {s['native_files']} native files ({kinds}) among {s['files_seen']} files")
    verdict = style(f"{s['loads']} load", "green") + ", " + (
        style(f"{s['fails']} fail", "red", True) if s["fails"] else "0 fail"
    )
    lines.append(f"  {verdict}")
    pk = s["problems_by_kind"]
    assert isinstance(pk, dict)
    if pk:
        lines.append("  problems: " + ", ".join(f"{n} {k}" for k, n in pk.items()))
    if s["skipped"]:
        lines.append(f"  skipped: {s['skipped']} ({s['unreadable']} unreadable: see findings)")
    if not result.findings:
        lines.append("")
        lines.append(style("no findings: everything native in here loads", "green", True))
        return "\n".join(lines) + "\n"
    lines.append("")
    lines.append(f"findings ({len(result.findings)}, most severe first):")
    shown = result.findings if verbose else result.findings[:25]
    for i, f in enumerate(shown, 1):
        color = "red" if f.severity == Severity.ERROR else "yellow"
        lines.append(f"{i:>3}. " + style(f"{f.severity}", color, True) + f" {f.title}")
        files = f.files if verbose else f.files[:3]
        more = f" and {len(f.files) - len(files)} more" if len(files) < len(f.files) else ""
        lines.append(f"       affects: {', '.join(files)}{more}")
        for p in (f.problems if verbose else f.problems[:5]):
            if p.kind == ProblemKind.UNRESOLVED_SYMBOL:
                version = f"@{p.version}" if p.version else ""
                lines.append(f"       - {p.symbol}{version} [{p.when}]" + (f"  = {p.demangled}" if p.demangled else ""))
            elif p.kind == ProblemKind.MISSING_LIBRARY and p.tried:
                tried = p.tried if verbose else p.tried[-4:]
                lines.append(f"       - tried ({len(p.tried)} paths{', last ' + str(len(tried)) if len(tried) < len(p.tried) else ''}): "
                             + ", ".join(t.path for t in tried))
            elif len(f.problems) > 1:
                lines.append(f"       - {p.message}")
            for n in p.near_misses[: (3 if verbose else 1)]:
                lines.append(f"         near-miss: {n.explanation}")
        if not verbose and len(f.problems) > 5:
            lines.append(f"       … {len(f.problems) - 5} more (-v)")
    if len(shown) < len(result.findings):
        lines.append(f"… {len(result.findings) - len(shown)} more findings (-v lists all)")
    return "\n".join(lines) + "\n"
