"""One file's verdict: load (choose the host → simulate → explain) and link (simulate →
explain → fix → confirm)."""

from __future__ import annotations

from ldscope.analysis._link import build_report, link_report, simulate_command
from ldscope.analysis._link_results import InputSummary, LinkReport, TraceEntry
from ldscope.analysis._load import LoadAnalysis, LoadOptions, new_analysis, open_target, simulate_load

__all__ = [
    "InputSummary",
    "LinkReport",
    "LoadAnalysis",
    "LoadOptions",
    "TraceEntry",
    "build_report",
    "link_report",
    "new_analysis",
    "open_target",
    "simulate_command",
    "simulate_load",
]
