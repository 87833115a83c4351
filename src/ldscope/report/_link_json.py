"""A link report as the `ldscope.link/1` JSON document (docs/json.md)."""

from __future__ import annotations

from typing import Any

from ldscope import __version__
from ldscope.analysis import InputSummary, LinkReport, TraceEntry
from ldscope.explain import Definition, LinkError, SymbolTrace
from ldscope.fixes import Confirmation, Edit, Fix
from ldscope.vocab import NearMiss

LINK_SCHEMA = "ldscope.link/1"


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
        "why": [_why_json(t) for t in report.why],
    }


def _why_json(t: SymbolTrace) -> dict[str, Any]:
    return {"symbol": t.symbol, "demangled": t.demangled, "keys": list(t.keys), "winner": t.winner,
            "why": t.why, "inputs": [{"file": i.file, "argument_index": i.argument_index, "role": i.role,
                                      "detail": i.detail, "in_link": i.in_link, "how_in_link": i.how_in_link}
                                     for i in t.inputs]}


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
        "user_description": f.user_description, "user_argv": list(f.user_argv), "user_links": f.user_links,
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
