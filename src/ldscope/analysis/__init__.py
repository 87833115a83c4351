"""One file's verdict: load (choose the host → simulate → explain) and link (simulate →
explain → fix → confirm)."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ldscope.analysis._link import (
        FixCheck,
        build_report,
        check_fixes_across,
        link_report,
        simulate_command,
    )
    from ldscope.analysis._link_results import InputSummary, LinkReport, TraceEntry
    from ldscope.analysis._load import LoadAnalysis, LoadOptions, new_analysis, open_target, simulate_load

# name -> module: each half imported on first use (a link never needs the loader model, a
# load or scan never the link model; `ldscope link` starts faster for it).
_WHERE = {
    "build_report": "_link", "link_report": "_link", "simulate_command": "_link",
    "FixCheck": "_link", "check_fixes_across": "_link",
    "InputSummary": "_link_results", "LinkReport": "_link_results", "TraceEntry": "_link_results",
    "LoadAnalysis": "_load", "LoadOptions": "_load", "new_analysis": "_load", "open_target": "_load",
    "simulate_load": "_load",
}  # fmt: skip


def __getattr__(name: str) -> Any:
    """The module's names, each imported from its own half on first use."""
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'ldscope.analysis' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"ldscope.analysis.{module}"), name)
    globals()[name] = value  # later lookups skip this function
    return value


__all__ = [
    "FixCheck",
    "InputSummary",
    "LinkReport",
    "LoadAnalysis",
    "LoadOptions",
    "TraceEntry",
    "build_report",
    "check_fixes_across",
    "link_report",
    "new_analysis",
    "open_target",
    "simulate_command",
    "simulate_load",
]
