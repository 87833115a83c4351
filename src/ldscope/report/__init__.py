"""Every renderer: text for people, JSON (versioned schemas, docs/json.md), SARIF 2.1.0 and
JUnit XML for CI. The library never prints: renderers return strings or documents."""

from __future__ import annotations

from ldscope.report._info_text import INFO_SCHEMA, render_info
from ldscope.report._json import dumps, to_jsonable
from ldscope.report._link import ablation_table, link_json, link_sarif, render_link_text
from ldscope.report._load_json import LOAD_SCHEMA, load_report_json, problem_json
from ldscope.report._load_text import render_load_text, render_problems
from ldscope.report._scan import (
    SCAN_SCHEMA,
    finding_json,
    render_scan_text,
    scan_fails,
    scan_json,
    scan_junit,
    scan_sarif,
)
from ldscope.report._symbols_text import SYMBOLS_SCHEMA, render_symbols_text, symbols_json

__all__ = [
    "INFO_SCHEMA",
    "LOAD_SCHEMA",
    "SCAN_SCHEMA",
    "SYMBOLS_SCHEMA",
    "ablation_table",
    "dumps",
    "finding_json",
    "link_json",
    "link_sarif",
    "load_report_json",
    "problem_json",
    "render_info",
    "render_link_text",
    "render_load_text",
    "render_problems",
    "render_scan_text",
    "render_symbols_text",
    "scan_fails",
    "scan_json",
    "scan_junit",
    "scan_sarif",
    "symbols_json",
    "to_jsonable",
]
