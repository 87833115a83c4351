"""Every renderer: text for people, JSON (versioned schemas, docs/json.md), SARIF 2.1.0 (one
writer for scan and link) and JUnit XML for CI. The library never prints: renderers return
strings or documents, and the CLI writes them."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ldscope.report._info import INFO_SCHEMA, info_json, render_info
    from ldscope.report._json import dumps, to_jsonable
    from ldscope.report._junit import scan_junit
    from ldscope.report._link_json import LINK_SCHEMA, link_json
    from ldscope.report._link_text import ablation_table, render_link_text
    from ldscope.report._load_json import LOAD_SCHEMA, load_report_json, problem_json
    from ldscope.report._load_text import render_load_text, render_problems
    from ldscope.report._sarif import LINK_RULES, PROBLEM_RULES, link_sarif, sarif_document, scan_sarif
    from ldscope.report._scan_json import SCAN_SCHEMA, finding_json, scan_json
    from ldscope.report._scan_text import render_scan_text
    from ldscope.report._symbols import (
        SYMBOLS_SCHEMA,
        render_symbols_text,
        symbols_json,
        symbols_json_stream,
        symbols_ndjson_stream,
        symbols_text,
    )
    from ldscope.report._text_safe import message_lines, safe, sanitized

# Each name is imported on first use: `ldscope symbols` must not pay for the scan and load
# models the other renderers import (hundreds of milliseconds per run).
_EXPORTS: dict[str, str] = {
    "INFO_SCHEMA": "ldscope.report._info",
    "LINK_RULES": "ldscope.report._sarif",
    "LINK_SCHEMA": "ldscope.report._link_json",
    "LOAD_SCHEMA": "ldscope.report._load_json",
    "PROBLEM_RULES": "ldscope.report._sarif",
    "SCAN_SCHEMA": "ldscope.report._scan_json",
    "SYMBOLS_SCHEMA": "ldscope.report._symbols",
    "ablation_table": "ldscope.report._link_text",
    "dumps": "ldscope.report._json",
    "finding_json": "ldscope.report._scan_json",
    "info_json": "ldscope.report._info",
    "link_json": "ldscope.report._link_json",
    "link_sarif": "ldscope.report._sarif",
    "load_report_json": "ldscope.report._load_json",
    "message_lines": "ldscope.report._text_safe",
    "problem_json": "ldscope.report._load_json",
    "render_info": "ldscope.report._info",
    "render_link_text": "ldscope.report._link_text",
    "render_load_text": "ldscope.report._load_text",
    "render_problems": "ldscope.report._load_text",
    "render_scan_text": "ldscope.report._scan_text",
    "render_symbols_text": "ldscope.report._symbols",
    "safe": "ldscope.report._text_safe",
    "sanitized": "ldscope.report._text_safe",
    "sarif_document": "ldscope.report._sarif",
    "scan_json": "ldscope.report._scan_json",
    "scan_junit": "ldscope.report._junit",
    "scan_sarif": "ldscope.report._sarif",
    "symbols_json": "ldscope.report._symbols",
    "symbols_json_stream": "ldscope.report._symbols",
    "symbols_ndjson_stream": "ldscope.report._symbols",
    "symbols_text": "ldscope.report._symbols",
    "to_jsonable": "ldscope.report._json",
}


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


__all__ = [
    "INFO_SCHEMA",
    "LINK_RULES",
    "LINK_SCHEMA",
    "LOAD_SCHEMA",
    "PROBLEM_RULES",
    "SCAN_SCHEMA",
    "SYMBOLS_SCHEMA",
    "ablation_table",
    "dumps",
    "finding_json",
    "info_json",
    "link_json",
    "link_sarif",
    "load_report_json",
    "message_lines",
    "problem_json",
    "render_info",
    "render_link_text",
    "render_load_text",
    "render_problems",
    "render_scan_text",
    "render_symbols_text",
    "safe",
    "sanitized",
    "sarif_document",
    "scan_json",
    "scan_junit",
    "scan_sarif",
    "symbols_json",
    "symbols_json_stream",
    "symbols_ndjson_stream",
    "symbols_text",
    "to_jsonable",
]
