"""A scan as JUnit XML: one test case per native file, per file that could not be read and
per target that could not be scanned, so the failures add up to the exit status."""

from __future__ import annotations

import re

from ldscope.loader import Problem
from ldscope.report._text_safe import safe, sanitized
from ldscope.scan import ScanResult
from ldscope.vocab import Severity

# What XML 1.0 forbids (its `Char` production): after `sanitized` nothing of it is left, and
# this is the proof that the document stays well-formed whatever a renderer change lets in.
_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def _xml_char(m: re.Match[str]) -> str:
    return safe(m.group())


def scan_junit(result: ScanResult) -> str:
    """JUnit XML: a test case per native file, per unreadable or corrupt file and per target
    that could not be scanned; failures carry the problems (every error counted)."""
    result = sanitized(result)  # every name, path and message escaped once (report/_text_safe.py)
    from xml.sax.saxutils import escape, quoteattr  # imports urllib: only for this format

    cases: list[str] = []
    failures = 0

    def case(classname: str, name: str, errors: list[tuple[str, str]]) -> None:
        """One test case; `errors` as (type, message), the first names the failure."""
        nonlocal failures
        body = ""
        if errors:
            failures += 1
            text = "\n".join(message for _, message in errors)
            body = (f"<failure message={quoteattr(errors[0][1])} type={quoteattr(errors[0][0])}>"
                    f"{escape(text)}</failure>")
        cases.append(f"  <testcase classname={quoteattr(classname)} name={quoteattr(name)} time=\"0\">"
                     f"{body}</testcase>")

    # Error findings by file: an environment-level cause (duplicate SONAMEs, a Python check)
    # names files whose own load may not hold the problem.
    by_file: dict[str, list[Problem]] = {}
    for finding in result.findings:
        if finding.severity == Severity.ERROR:
            for path in finding.files:
                by_file.setdefault(path, []).extend(finding.problems[:1])
    native: set[str] = set()
    for f in result.files:
        native.add(f.path)
        errors = [(str(p.kind), p.message) for p in f.problems if p.severity == Severity.ERROR]
        seen = {m for _, m in errors}
        errors += [(str(p.kind), p.message) for p in by_file.get(f.path, ()) if p.message not in seen]
        if not f.loads and not errors:
            errors = [("load", "does not load")]
        case("ldscope." + f.kind, f.path, errors)
    # Files a finding names that were not loaded: unreadable or corrupt files, wheels.
    for path, problems in by_file.items():
        if path not in native:
            native.add(path)
            case(f"ldscope.{problems[0].kind}", path, [(str(p.kind), p.message) for p in problems])
    for error in result.errors:
        # `TARGET: reason`; a target's name may hold ": " itself, so the case is the whole line.
        case("ldscope.target", error, [("input-error", error)])
    document = (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        f'<testsuites tests="{len(cases)}" failures="{failures}">\n'
        f'<testsuite name="ldscope scan" tests="{len(cases)}" failures="{failures}" errors="0">\n'
        + "\n".join(cases)
        + "\n</testsuite>\n</testsuites>\n"
    )
    return _NOT_XML.sub(_xml_char, document)
