"""A scan as the `ldscope.scan/2` JSON document."""

from __future__ import annotations

from typing import Any

from ldscope.report._load_json import problem_json
from ldscope.scan import Finding, Owner, ScanResult

SCAN_SCHEMA = "ldscope.scan/2"


def finding_json(f: Finding) -> dict[str, Any]:
    """One finding as JSON."""
    return {
        "cause": f.cause,
        "severity": f.severity,
        "kind": f.kind,
        "title": f.title,
        "files": list(f.files),
        "problems": [problem_json(p) for p in f.problems],
        "advice": list(f.advice),
    }


def owner_json(owner: Owner | None) -> dict[str, Any] | None:
    """A file's distribution: name, version, where it was read (RECORD or dpkg); null if none."""
    return None if owner is None else {"name": owner.name, "version": owner.version, "source": owner.source}


def scan_json(result: ScanResult) -> dict[str, Any]:
    """The ldscope.scan/2 document."""
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
                "distribution": owner_json(f.owner),
                "problems": [problem_json(p) for p in f.problems],
            }
            for f in result.files
        ],
        "findings": [finding_json(f) for f in result.findings],
        "owners": {path: owner_json(owner) for path, owner in result.owners},
        "skipped": [{"path": s.path, "reason": s.reason, "is_problem": s.is_problem}
                    for s in result.skipped],
        "errors": list(result.errors),
    }
