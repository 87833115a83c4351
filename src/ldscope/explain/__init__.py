"""Why a wanted symbol, version or library was not found, what is closest, and which problems
share one root cause: the near-miss engines for load and link, and cause grouping."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ldscope.explain._causes import CauseGroup, cause_of, group_by_cause, problem_key
from ldscope.explain._link_results import Definition, DefinitionStatus, LinkError
from ldscope.explain._load import EXPLAINED_KINDS, NearMissFinder, ReportExplainer, explain
from ldscope.explain._load_index import SharedIndex

if TYPE_CHECKING:
    from ldscope.explain._link import LinkExplainer
    from ldscope.explain._why import SymbolInput, SymbolTrace, trace_symbol


def __getattr__(name: str) -> Any:
    """The link explainer, imported on first use: loads and scans never need the link model."""
    if name == "LinkExplainer":
        from ldscope.explain._link import LinkExplainer

        return LinkExplainer
    if name in ("SymbolInput", "SymbolTrace", "trace_symbol"):
        from ldscope.explain import _why

        return getattr(_why, name)
    raise AttributeError(f"module 'ldscope.explain' has no attribute {name!r}")


__all__ = [
    "EXPLAINED_KINDS",
    "CauseGroup",
    "Definition",
    "DefinitionStatus",
    "LinkError",
    "LinkExplainer",
    "NearMissFinder",
    "ReportExplainer",
    "SharedIndex",
    "SymbolInput",
    "SymbolTrace",
    "cause_of",
    "explain",
    "group_by_cause",
    "problem_key",
    "trace_symbol",
]
