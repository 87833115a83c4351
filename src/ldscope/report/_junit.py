"""A scan as JUnit XML: one test case per native file."""

from __future__ import annotations

from ldscope.report._text_safe import sanitized
from ldscope.scan import ScanResult
from ldscope.vocab import Severity


def scan_junit(result: ScanResult) -> str:
    """JUnit XML: one test case per native file; failures carry the problems."""
    result = sanitized(result)  # names and paths with control characters or raw bytes, escaped
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
