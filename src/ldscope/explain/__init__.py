"""Why a wanted symbol, version or library was not found, what is closest, and which problems
share one root cause: the near-miss engines for load and link, and cause grouping."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ldscope.explain._causes import CauseGroup, cause_of, group_by_cause, problem_key
    from ldscope.explain._link import LinkExplainer, last_own_object
    from ldscope.explain._link_results import Definition, DefinitionStatus, LinkError
    from ldscope.explain._load import EXPLAINED_KINDS, NearMissFinder, ReportExplainer, explain
    from ldscope.explain._load_index import SharedIndex
    from ldscope.explain._why import SymbolInput, SymbolTrace, trace_symbol

# name -> module, imported on first use: a link never needs the load explainers (nor the
# loader model they import), a load or scan never the link explainer.
_WHERE = {
    "CauseGroup": "_causes", "cause_of": "_causes", "group_by_cause": "_causes", "problem_key": "_causes",
    "LinkExplainer": "_link", "last_own_object": "_link",
    "Definition": "_link_results", "DefinitionStatus": "_link_results", "LinkError": "_link_results",
    "EXPLAINED_KINDS": "_load", "NearMissFinder": "_load", "ReportExplainer": "_load", "explain": "_load",
    "SharedIndex": "_load_index",
    "SymbolInput": "_why", "SymbolTrace": "_why", "trace_symbol": "_why",
}  # fmt: skip


def __getattr__(name: str) -> Any:
    """The module's names, each imported from its own module on first use."""
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'ldscope.explain' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"ldscope.explain.{module}"), name)
    globals()[name] = value  # later lookups skip this function
    return value


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
    "last_own_object",
    "problem_key",
    "trace_symbol",
]
