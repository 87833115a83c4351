"""What differs between GNU ld (bfd), gold, lld and mold, as measured against the real tools."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Policy:
    """One linker's resolution rules (see docs/fidelity.md for the experiments behind them)."""

    name: str
    ordered: bool  # archives scanned left to right once (bfd, gold) vs. order-free (lld, mold)
    archive_loop_on_new_symbols: bool  # bfd rescans an archive only when new symbols appeared
    common_pulls_data_definition: bool  # bfd: a member with a real data definition beats a common
    as_needed_at_position: bool  # bfd: --as-needed decided when the library is reached
    loads_dt_needed: bool  # bfd reads DT_NEEDED of input libraries ("DSO missing" comes from this)
    missing_input: str  # "stop-after-open" (bfd) | "continue" (gold) | "stop" (lld) | "first-fatal" (mold)
    no_index: str  # "fatal" (bfd) | "skip" (gold) | "read-members" (lld, mold)
    shlib_check: str  # "all" (bfd) | "known-needed" (lld) | "known-needed-nonsystem" (gold) | "none"
    weak_referrers_reported: bool  # a weak reference is listed when the symbol is strongly undefined
    default_error_limit: int | None  # lld stops after 20 errors by default
    program: str
    duplicates_stop: bool  # lld, mold: after "duplicate symbol" nothing else is reported
    shlib_once_per_symbol: bool  # gold names only the first library referencing the symbol
    shlib_skip_regular: bool  # a symbol a regular object also references is reported only there
    binding_rule: str  # weak vs. strong undefined: "any-strong" (bfd), "regular" (lld), "first-ref" (gold)
    versioned_shlib_refs: str  # a library's `name@VER` reference: "versioned" | "ignore" | "plain"

    @property
    def label(self) -> str:
        """How the linker calls itself in messages."""
        return {"bfd": "GNU ld (bfd)", "gold": "GNU gold", "lld": "LLD", "mold": "mold"}[self.name]


BFD = Policy("bfd", True, True, True, True, True, "stop-after-open", "fatal", "all", True, None,
             "ld.bfd", False, True, True, "any-strong", "versioned")
GOLD = Policy("gold", True, False, False, False, False, "continue", "skip", "known-needed-nonsystem",
              True, None, "ld.gold", False, True, True, "first-ref", "versioned")
LLD = Policy("lld", False, False, True, False, False, "stop", "read-members", "known-needed", True,
             20, "ld.lld", True, False, False, "regular", "ignore")
MOLD = Policy("mold", False, False, True, False, False, "first-fatal", "read-members", "none", False,
              None, "mold", True, False, False, "any-strong", "plain")
POLICIES = {p.name: p for p in (BFD, GOLD, LLD, MOLD)}
