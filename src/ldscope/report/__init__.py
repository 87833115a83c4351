"""Every renderer: text for people, JSON (versioned schemas, docs/json.md), SARIF 2.1.0 (one
writer for scan and link) and JUnit XML for CI. The library never prints: renderers return
strings or documents, and the CLI writes them."""

from __future__ import annotations

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
from ldscope.report._symbols import SYMBOLS_SCHEMA, render_symbols_text, symbols_json

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
    "problem_json",
    "render_info",
    "render_link_text",
    "render_load_text",
    "render_problems",
    "render_scan_text",
    "render_symbols_text",
    "sarif_document",
    "scan_json",
    "scan_junit",
    "scan_sarif",
    "symbols_json",
    "to_jsonable",
]
