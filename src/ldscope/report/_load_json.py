"""The `ldscope.load/1` JSON document, and the problem objects load and scan documents share."""

from __future__ import annotations

from typing import Any

from ldscope.loader import LibraryResult, LoadReport, Problem, TriedPath
from ldscope.report._json import to_jsonable
from ldscope.vocab import NearMiss

LOAD_SCHEMA = "ldscope.load/1"


def load_report_json(report: LoadReport) -> dict[str, Any]:
    """The `ldscope.load/1` JSON document for one report."""
    return {
        "schema": LOAD_SCHEMA,
        "target": report.target,
        "host": report.host,
        "loads": report.loads,
        "libraries": [library_json(lib) for lib in report.libraries],
        "problems": [problem_json(p) for p in report.problems],
        "load_order": list(report.load_order),
        "bindings": [to_jsonable(b) for b in report.bindings],
    }


def library_json(lib: LibraryResult) -> dict[str, Any]:
    """One library of the load tree."""
    return {
        "name": lib.name,
        "path": lib.path,
        "found_via": lib.found_via,
        "needed_by": list(lib.needed_by),
        "tried": [tried_json(t) for t in lib.tried],
    }


def tried_json(t: TriedPath) -> dict[str, Any]:
    """One path the loader tried."""
    return {"path": t.path, "source": t.source, "outcome": t.outcome}


def problem_json(p: Problem) -> dict[str, Any]:
    """One problem as JSON (shared by load and scan)."""
    return {
        "kind": p.kind,
        "severity": p.severity,
        "file": p.file,
        "symbol": p.symbol,
        "demangled": p.demangled,
        "version": p.version,
        "library": p.library,
        "when": p.when,
        "message": p.message,
        "cause": p.cause,
        "cause_summary": p.cause_summary,
        "follow_on_symbols": p.follow_on_symbols,
        "tried": [tried_json(t) for t in p.tried],
        "near_misses": [near_miss_json(n) for n in p.near_misses],
    }


def near_miss_json(n: NearMiss) -> dict[str, Any]:
    """One load near-miss."""
    return {"symbol": n.symbol, "demangled": n.demangled, "file": n.file, "explanation": n.explanation,
            "kind": n.kind}
