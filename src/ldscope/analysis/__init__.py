"""One file's verdict: load (choose the host → simulate → explain) and link (simulate →
explain → fix)."""

from __future__ import annotations

from ldscope.analysis._link import build_report, link_report, simulate_command
from ldscope.analysis._load import LoadOptions, simulate_load

__all__ = ["LoadOptions", "build_report", "link_report", "simulate_command", "simulate_load"]
