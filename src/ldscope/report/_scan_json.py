"""A scan as the `ldscope.scan/1` JSON document."""

from __future__ import annotations

from typing import Any

from ldscope.report._load_json import problem_json
from ldscope.scan import Finding, ScanResult

SCAN_SCHEMA = "ldscope.scan/1"


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
        "targets": [{"spec": t.spec, "kind": t.kind, "path": t.path, "interpreter": t.interpreter,
                     "chosen_because": t.chosen_because}
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
