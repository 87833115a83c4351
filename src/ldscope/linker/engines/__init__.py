"""The resolution engines: GNU ld (bfd) and gold scan left to right once; lld resolves lazy
archive symbols whenever a reference meets one; mold ranks every definition and spreads
liveness. Each linker's measured differences are data (`policies.json`)."""

from __future__ import annotations

from ldscope.linker.engines._base import Engine, EngineContext, linker_defines
from ldscope.linker.engines._lld import LazyEngine
from ldscope.linker.engines._mold import MoldEngine
from ldscope.linker.engines._ordered import OrderedEngine
from ldscope.linker.engines._policy import POLICIES, Policy
from ldscope.linker.engines._table import Outcome, RawError, Table, TraceStep, Unit

__all__ = [
    "POLICIES",
    "Engine",
    "EngineContext",
    "LazyEngine",
    "MoldEngine",
    "OrderedEngine",
    "Outcome",
    "Policy",
    "RawError",
    "Table",
    "TraceStep",
    "Unit",
    "linker_defines",
]
