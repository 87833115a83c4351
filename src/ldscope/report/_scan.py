"""Render a ScanResult: one-screen text summary and findings, JSON, SARIF 2.1.0, JUnit XML."""

from __future__ import annotations

import os
from typing import Any

from ldscope import __version__
from ldscope.report._load_json import problem_json
from ldscope.scan import Finding, ScanResult
from ldscope.vocab import ProblemKind, Severity

SCAN_SCHEMA = "ldscope.scan/1"


def scan_fails(result: ScanResult, fail_on: str) -> bool:
    """True if any finding is at or above the --fail-on severity."""
    if fail_on == "never":
        return False
    limit = Severity(fail_on)
    return any(Severity.rank_of(f.severity) <= limit.rank for f in result.findings)


# ------------------------------------------------------------------ text
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


# ------------------------------------------------------------------ json
def finding_json(f: Finding) -> dict[str, Any]:
    """One finding as JSON."""
    return {
        "cause": f.cause,
        "severity": f.severity,
        "kind": f.kind,
        "title": f.title,
        "files": list(f.files),
        "problems": [problem_json(p) for p in f.problems],
    }


def scan_json(result: ScanResult) -> dict[str, Any]:
    """The ldscope.scan/1 document."""
    return {
        "schema": SCAN_SCHEMA,
        "targets": [{"spec": t.spec, "kind": t.kind, "path": t.path, "interpreter": t.interpreter}
                    for t in result.targets],
        "summary": result.summary(),
        "files": [
            {
                "path": f.path,
                "kind": f.kind,
                "loads": f.loads,
                "host": f.host,
                "checked_as_part_of": f.checked_as_part_of,
                "assumed_loaded": list(f.assumed_loaded),
                "problems": [problem_json(p) for p in f.problems],
            }
            for f in result.files
        ],
        "findings": [finding_json(f) for f in result.findings],
        "skipped": [{"path": s.path, "reason": s.reason, "is_problem": s.is_problem}
                    for s in result.skipped],
        "errors": list(result.errors),
    }


# ------------------------------------------------------------------ sarif
_RULE_HELP = {
    ProblemKind.MISSING_LIBRARY: "A DT_NEEDED library is not found on the loader's search path.",
    ProblemKind.MISSING_VERSION: "A required symbol version node is not defined by the library found.",
    ProblemKind.UNRESOLVED_SYMBOL: "A referenced symbol is defined by no object in the load scope.",
    ProblemKind.UNREADABLE_FILE: "A file could not be read or is not a valid ELF file.",
    ProblemKind.MISSING_INTERPRETER: "The program interpreter (PT_INTERP) does not exist.",
    ProblemKind.WRONG_ARCHITECTURE: "A library of the wrong class, byte order or machine.",
    ProblemKind.NO_VERSION_INFORMATION: "A library required with versions defines none.",
    "duplicate-soname": "Two different files share one SONAME.",
    "found-via-variable": "A library is found only through LD_LIBRARY_PATH.",
}


def _uri_bases(result: ScanResult) -> list[tuple[str, str]]:
    """(uriBaseId, directory) per distinct target base: TARGET, TARGET_2, ..."""
    bases: list[str] = []
    for t in result.targets:
        base = (t.path if os.path.isdir(t.path) else os.path.dirname(t.path)).rstrip("/") or "/"
        if base not in bases:
            bases.append(base)
    return [("TARGET" if i == 0 else f"TARGET_{i + 1}", b) for i, b in enumerate(bases)]


def _artifact(path: str, bases: list[tuple[str, str]]) -> dict[str, str]:
    """An artifactLocation relative to the (deepest) target base holding the path; a path
    outside every target (a system library a finding names) keeps its absolute file URI."""
    best: tuple[str, str] | None = None
    for base_id, base in bases:
        prefix = base.rstrip("/") + "/"
        if path.startswith(prefix) and (best is None or len(base) > len(best[1])):
            best = (base_id, base)
    if best is None:
        return {"uri": "file://" + path}
    return {"uri": path[len(best[1].rstrip("/")) + 1:], "uriBaseId": best[0]}


def _wheel_members(result: ScanResult) -> list[tuple[str, str]]:
    """(wheel path, member name) of every wheel target, longest names first."""
    import zipfile

    out: list[tuple[str, str]] = []
    for t in result.targets:
        if t.kind != "wheel":
            continue
        try:
            with zipfile.ZipFile(t.path) as zf:
                out.extend((t.path, n) for n in zf.namelist() if not n.endswith("/"))
        except (zipfile.BadZipFile, OSError, ValueError):
            continue
    return sorted(out, key=lambda m: -len(m[1]))


def _location(path: str, bases: list[tuple[str, str]], members: list[tuple[str, str]]) -> dict[str, Any]:
    """A SARIF location: a file of a target, or for a wheel member (read in place and shown
    where it would be installed) the wheel file itself, the member as a logical location."""
    for wheel, member in members:
        if path.endswith("/" + member):
            return {"physicalLocation": {"artifactLocation": _artifact(wheel, bases)},
                    "logicalLocations": [{"fullyQualifiedName": member}]}
    return {"physicalLocation": {"artifactLocation": _artifact(path, bases)}}


def scan_sarif(result: ScanResult) -> dict[str, Any]:
    """SARIF 2.1.0: one rule per problem kind, one result per finding and file affected."""
    kinds = sorted({f.kind for f in result.findings})
    rules = [
        {
            "id": kind,
            "name": "".join(part.capitalize() for part in kind.split("-")),
            "shortDescription": {"text": _RULE_HELP.get(kind, kind)},
        }
        for kind in kinds
    ]
    level = {"error": "error", "warning": "warning", "info": "note"}
    members = _wheel_members(result)
    bases = _uri_bases(result)
    results = []
    for f in result.findings:
        details = "; ".join(
            (p.symbol or p.library or p.message) for p in f.problems[:10]
        )
        near = next((n.explanation for p in f.problems for n in p.near_misses), None)
        text = f.title + (f" — {details}" if details and details != f.title else "")
        if near:
            text += f" — near-miss: {near}"
        for path in f.files[:50]:
            results.append({
                "ruleId": f.kind,
                "ruleIndex": kinds.index(f.kind),
                "level": level.get(f.severity, "note"),
                "message": {"text": text},
                "locations": [_location(path, bases, members)],
                "partialFingerprints": {"ldscopeCause": f.cause},
            })
    return {
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {"name": "ldscope", "version": __version__, "rules": rules}},
            "originalUriBaseIds": {
                base_id: {"uri": "file://" + base.rstrip("/") + "/"} for base_id, base in bases or [("TARGET", "/")]
            },
            "results": results,
        }],
    }


# ------------------------------------------------------------------ junit
def scan_junit(result: ScanResult) -> str:
    """JUnit XML: one test case per native file; failures carry the problems."""
    from xml.sax.saxutils import escape, quoteattr  # imports urllib: only for this format
    cases = []
    failures = 0
    for f in result.files:
        errors = [p for p in f.problems if p.severity == Severity.ERROR]
        body = ""
        if not f.loads or errors:
            failures += 1
            text = "\n".join(p.message for p in errors) or "does not load"
            body = f'<failure message={quoteattr(errors[0].message if errors else "does not load")} type="{escape(errors[0].kind if errors else "load")}">{escape(text)}</failure>'
        cases.append(f'  <testcase classname={quoteattr("ldscope." + f.kind)} name={quoteattr(f.path)} time="0">{body}</testcase>')
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        f'<testsuites tests="{len(result.files)}" failures="{failures}">\n'
        f'<testsuite name="ldscope scan" tests="{len(result.files)}" failures="{failures}" errors="0">\n'
        + "\n".join(cases)
        + "\n</testsuite>\n</testsuites>\n"
    )
