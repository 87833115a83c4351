"""What `ldscope link` reports for one link line (JSON form: ldscope.link/1, docs/json.md)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # annotations only: a link that succeeds never imports the fix search
    from ldscope.explain import LinkError, SymbolTrace
    from ldscope.fixes import Confirmation, Fix


@dataclass(frozen=True, slots=True)
class TraceEntry:
    """A step of the resolution: why a member was extracted, a library kept or dropped."""

    action: str
    target: str
    argument_index: int | None
    symbol: str | None
    by: str | None


@dataclass(frozen=True, slots=True)
class InputSummary:
    """An input as resolved (for the report): what the argument turned into."""

    argument_index: int
    spec: str
    path: str | None
    kind: str
    flags: tuple[str, ...]
    problem: str | None


@dataclass(frozen=True, slots=True)
class LinkReport:
    """Everything `ldscope link` found for one link line."""

    linker: str
    argv: tuple[str, ...]
    original: tuple[str, ...]
    cwd: str
    source: str
    output_kind: str
    links: bool
    partial: bool
    errors: tuple[LinkError, ...]
    warnings: tuple[str, ...]
    notes: tuple[str, ...]
    fixes: tuple[Fix, ...]
    trace: tuple[TraceEntry, ...]
    inputs: tuple[InputSummary, ...]
    confirmation: Confirmation | None = None
    why: tuple[SymbolTrace, ...] = ()  # --why SYMBOL
