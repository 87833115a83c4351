"""One file's verdict: load (choose the host → simulate → explain) and link (simulate →
explain → fix → confirm)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ldscope.analysis._link_results import InputSummary, LinkReport, TraceEntry
from ldscope.analysis._load import LoadAnalysis, LoadOptions, new_analysis, open_target, simulate_load

if TYPE_CHECKING:
    from ldscope.analysis._link import build_report, link_report, simulate_command

_LINK = frozenset({"build_report", "link_report", "simulate_command"})


def __getattr__(name: str) -> Any:
    """The link analysis, imported on first use: loads and scans never need the link model."""
    if name in _LINK:
        from ldscope.analysis import _link

        return getattr(_link, name)
    raise AttributeError(f"module 'ldscope.analysis' has no attribute {name!r}")


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
