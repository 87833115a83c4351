"""Rendering a LinkReport: terse text (rich with -v), JSON (ldscope.link/1) and SARIF 2.1.0."""

from __future__ import annotations

import os
from typing import Any

from ldscope import __version__
from ldscope.analysis import InputSummary, LinkReport, TraceEntry
from ldscope.explain import Definition, LinkError
from ldscope.fixes import Confirmation, Edit, Fix
from ldscope.vocab import LinkErrorKind, NearMiss

LINK_SCHEMA = "ldscope.link/1"

_LABEL = {"bfd": "GNU ld (bfd)", "gold": "GNU gold", "lld": "LLD", "mold": "mold"}


def link_json(report: LinkReport) -> dict[str, Any]:
    """The versioned JSON document (ldscope.link/1, docs/json.md)."""
    return {
        "schema": LINK_SCHEMA, "ldscope_version": __version__,
        "linker": report.linker, "argv": list(report.argv), "original": list(report.original),
        "cwd": report.cwd, "source": report.source, "output_kind": report.output_kind,
        "links": report.links, "partial": report.partial,
        "errors": [_error_json(e) for e in report.errors],
        "warnings": list(report.warnings), "notes": list(report.notes),
        "fixes": [_fix_json(f) for f in report.fixes],
        "trace": [_trace_json(t) for t in report.trace],
        "inputs": [_input_json(i) for i in report.inputs],
        "confirmation": _confirmation_json(report.confirmation) if report.confirmation else None,
    }


def _error_json(e: LinkError) -> dict[str, Any]:
    return {
        "kind": e.kind, "symbol": e.symbol, "demangled": e.demangled, "versioned": e.versioned,
        "referenced_by": e.referenced_by, "argument_index": e.argument_index,
        "defined_in": [_definition_json(d) for d in e.defined_in], "message": e.message,
        "explanation": e.explanation, "near_misses": [_near_miss_json(n) for n in e.near_misses],
        "shown": e.shown, "other": e.other,
    }


def _definition_json(d: Definition) -> dict[str, Any]:
    return {"where": d.where, "argument_index": d.argument_index, "status": d.status, "detail": d.detail}


def _near_miss_json(n: NearMiss) -> dict[str, Any]:
    return {"symbol": n.symbol, "demangled": n.demangled, "where": n.file, "kind": n.kind,
            "differences": list(n.differences)}


def _fix_json(f: Fix) -> dict[str, Any]:
    return {
        "id": f.id, "description": f.description, "edit": [_edit_json(e) for e in f.edit],
        "argv": list(f.argv), "fixes_alone": f.fixes_alone, "in_combination": f.in_combination,
        "remaining_errors": f.remaining_errors, "reason": f.reason, "confirmed": f.confirmed,
    }


def _edit_json(e: Edit) -> dict[str, Any]:
    return {"op": e.op, "at": e.at, "args": list(e.args), "count": e.count}


def _trace_json(t: TraceEntry) -> dict[str, Any]:
    return {"action": t.action, "target": t.target, "argument_index": t.argument_index, "symbol": t.symbol,
            "by": t.by}


def _input_json(i: InputSummary) -> dict[str, Any]:
    return {"argument_index": i.argument_index, "spec": i.spec, "path": i.path, "kind": i.kind,
            "flags": list(i.flags), "problem": i.problem}


def _confirmation_json(c: Confirmation) -> dict[str, Any]:
    return {"program": c.program, "exit_status": c.exit_status, "links": c.links, "agrees": c.agrees,
            "detail": c.detail}


def _error_text(e: LinkError, verbose: bool) -> list[str]:
    head = f"{'error' if e.shown else 'error (after a fatal one: not printed by the linker)'}: {e.kind}"
    if e.symbol:
        head += f"  {e.versioned or e.symbol}"
        if e.demangled:
            head += f"  [{e.demangled}]"
    lines = [head]
    lines += [f"  | {m}" for m in e.message.splitlines()]
    if e.explanation:
        lines.append(f"  why: {e.explanation}")
    if verbose and e.defined_in:
        lines.append("  defined in:")
        lines += [f"    - {d.where} [{d.status}]: {d.detail}" for d in e.defined_in]
    if e.near_misses:
        lines.append("  near misses:")
        for m in e.near_misses[: (5 if verbose else 2)]:
            lines.append(f"    - {m.file}: {m.demangled or m.symbol} ({m.kind})")
            lines += [f"        {d}" for d in m.differences[:4]]
    return lines


def _fix_line(f: Fix) -> str:
    mark = "✓" if f.fixes_alone else ("+" if f.in_combination else "✗")
    conf = "" if f.confirmed is None else ("  [confirmed by the real linker]" if f.confirmed
                                           else "  [the real linker disagrees]")
    return f"  {mark} {f.id}: {f.description} — {f.reason}{conf}"


def render_link_text(report: LinkReport, verbose: bool = False, ablate: bool = False) -> str:
    """Human-readable report."""
    label = _LABEL.get(report.linker, report.linker)
    shown = [e for e in report.errors if e.shown and e.kind != LinkErrorKind.UNDEFINED_WARNING]
    verdict = "links" if report.links else f"FAILS ({len(shown)} error{'s' if len(shown) != 1 else ''})"
    lines = [f"ldscope link: {label}, {report.output_kind} — the link {verdict}"
             + ("  (partial: some inputs could not be read)" if report.partial else "")]
    if verbose:
        lines.append(f"  line ({report.source}): {' '.join(report.argv)}")
    for e in report.errors:
        if not e.shown and not verbose:
            continue
        lines.append("")
        lines += _error_text(e, verbose)
    hidden = sum(1 for e in report.errors if not e.shown)
    if hidden and not verbose:
        lines.append(f"\n({hidden} more found after the linker's first fatal error; -v shows them)")
    if report.fixes:
        lines.append("")
        lines.append("fixes (each simulated with the same linker):")
        fixing = [f for f in report.fixes if f.fixes_alone or f.in_combination]
        rest = [f for f in report.fixes if not (f.fixes_alone or f.in_combination)]
        lines += [_fix_line(f) for f in fixing]
        if ablate or verbose:
            lines += [_fix_line(f) for f in rest]
        elif rest:
            lines.append(f"  ({len(rest)} other candidate(s) do not fix it; --ablate lists them)")
    if ablate and report.fixes:
        lines.append("")
        lines += ablation_table(report.fixes)
    if report.confirmation is not None:
        c = report.confirmation
        real = "not run" if c.links is None else ("links" if c.links else f"fails (exit {c.exit_status})")
        agree = "" if c.agrees is None else ("; agrees with the prediction" if c.agrees else "; DISAGREES with the prediction")
        lines.append(f"\nconfirmed with {c.program}: {real}{agree}")
    if verbose and report.trace:
        lines.append("\ntrace:")
        for t in report.trace:
            pos = f" (argument {t.argument_index})" if t.argument_index is not None else ""
            why = f" for `{t.symbol}'" if t.symbol else ""
            by = f" referenced by {t.by}" if t.by else ""
            lines.append(f"  {t.action}: {t.target}{pos}{why}{by}")
    for w in report.warnings:
        lines.append(f"warning: {w}")
    if verbose:
        lines += [f"note: {n}" for n in report.notes]
    else:
        lines += [f"note: {n}" for n in report.notes if "only because" in n or "partial" in n]
    return "\n".join(lines) + "\n"


def ablation_table(fixes: tuple[Fix, ...]) -> list[str]:
    """One row per candidate: alone, in combination, remaining errors, confirmation."""
    rows = [("id", "alone", "combined", "left", "confirmed", "candidate")]
    for f in fixes:
        conf = "-" if f.confirmed is None else ("yes" if f.confirmed else "NO")
        rows.append((f.id, "yes" if f.fixes_alone else "no", "yes" if f.in_combination else "no",
                     str(f.remaining_errors), conf, f.description))
    widths = [max(len(r[i]) for r in rows) for i in range(5)]
    return ["  ".join(c.ljust(widths[i]) if i < 5 else c for i, c in enumerate(r)) for r in rows]


def link_sarif(report: LinkReport) -> dict[str, Any]:
    """SARIF 2.1.0: one result per error the linker would print."""
    kinds = sorted({e.kind for e in report.errors})
    rules = [{"id": k, "name": k.replace("-", " "), "shortDescription": {"text": k}} for k in kinds]
    results: list[dict[str, Any]] = []
    for e in report.errors:
        if not e.shown:
            continue
        target = e.referenced_by or (e.defined_in[0].where if e.defined_in else None)
        loc: dict[str, Any] = {}
        if target:
            path = target.split("(", 1)[0] if target.endswith(")") else target
            loc["physicalLocation"] = {"artifactLocation": {"uri": _uri(path, report.cwd)}}
        if e.symbol:
            loc["logicalLocations"] = [{"name": e.symbol, "fullyQualifiedName": e.demangled or e.symbol,
                                        "kind": "function"}]
        results.append({
            "ruleId": e.kind,
            "level": "warning" if e.kind == LinkErrorKind.UNDEFINED_WARNING else "error",
            "message": {"text": f"{e.message}\n{e.explanation}".strip()},
            "locations": [loc] if loc else [],
            "properties": {"argument_index": e.argument_index, "linker": report.linker},
        })
    return {
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {"name": "ldscope", "version": __version__,
                                "informationUri": "https://github.com/ldscope/ldscope", "rules": rules}},
            "results": results,
            "properties": {"links": report.links, "partial": report.partial, "schema": LINK_SCHEMA},
        }],
    }


def _uri(path: str, cwd: str) -> str:
    full = path if os.path.isabs(path) else os.path.normpath(os.path.join(cwd, path))
    return "file://" + full
