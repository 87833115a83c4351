"""What differs between GNU ld (bfd), gold, lld and mold: one record per linker, read from
`linker/data/policies.json` (the measurements behind each field are in docs/fidelity.md)."""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from importlib.resources import files

_LABELS = {"bfd": "GNU ld (bfd)", "gold": "GNU gold", "lld": "LLD", "mold": "mold"}
# The values each rule-naming field may take (the engines test for exactly these).
_CHOICES = {
    "missing_input": {"stop-after-open", "continue", "stop", "first-fatal"},
    "no_index": {"fatal", "skip", "read-members"},
    "shlib_check": {"all", "known-needed", "known-needed-nonsystem", "none"},
    "binding_rule": {"any-strong", "regular", "first-ref"},
    "versioned_shlib_refs": {"versioned", "ignore", "plain"},
    "static_dynamic_object": {"static-region", "static-link", "accept"},
    "undefined_version_error": {"opt-in", "default", "never"},
    "non_pic_reports": {"first", "each"},
    "long_branch_in_section": {"error", "thunk", "crash"},
}


@dataclass(frozen=True, slots=True, kw_only=True)
class Policy:
    """One linker's resolution rules."""

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
    program: str
    duplicates_stop: bool  # lld, mold: after "duplicate symbol" nothing else is reported
    shlib_once_per_symbol: bool  # gold names only the first library referencing the symbol
    shlib_skip_regular: bool  # a symbol a regular object also references is reported only there
    binding_rule: str  # weak vs. strong undefined: "any-strong" (bfd), "regular" (lld), "first-ref" (gold)
    versioned_shlib_refs: str  # a library's `name@VER` reference: "versioned" | "ignore" | "plain"
    # A shared library given where only archives are allowed: refused inside any -Bstatic or
    # -static region (bfd, lld: "attempted static link of dynamic object"), only in a -static
    # link (gold: "cannot mix -static with dynamic object"), or linked anyway (mold 1.10).
    static_dynamic_object: str
    # A version script naming a symbol nothing defines: an error with --no-undefined-version
    # ("opt-in": bfd, gold, lld 14), also without it ("default": lld >= 16), or only ever a
    # warning ("never": mold 1.10).
    undefined_version_error: str
    non_pic_reports: str  # relocations a PIC output cannot hold: the "first" (bfd, gold) or "each"
    # An AArch64 CALL26/JUMP26 out of reach inside one input section (measured with a .skip of
    # 140 MiB): bfd "relocation truncated to fit", gold "Stub is too far away" ("error"), lld
    # links ("thunk"); mold 1.10 links it ("thunk": with its thunk after the section, the branch
    # it writes is wrong) unless the section is alone in its output section, where it crashes
    # whatever the branches (linker/_branch_range.py). Between input sections all four insert
    # veneers/thunks and link.
    long_branch_in_section: str
    # Errors printed before the linker stops ("too many errors emitted, stopping now"): lld's
    # --error-limit, 20 by default; 0 for the linkers without one.
    error_limit: int

    @property
    def label(self) -> str:
        """How the linker calls itself in messages."""
        return _LABELS[self.name]


def _load() -> dict[str, Policy]:
    raw = json.loads((files("ldscope.linker") / "data" / "policies.json").read_text(encoding="utf-8"))
    fields = {f.name for f in dataclasses.fields(Policy)} - {"name"}
    policies: dict[str, Policy] = {}
    for name, values in raw.items():
        if name.startswith("_"):
            continue
        if set(values) != fields:
            raise ValueError(f"policies.json: {name}: fields {sorted(set(values) ^ fields)} missing or unknown")
        for key, allowed in _CHOICES.items():
            if values[key] not in allowed:
                raise ValueError(f"policies.json: {name}: {key} is {values[key]!r}, not one of {sorted(allowed)}")
        policies[name] = Policy(name=name, **values)
    return policies


POLICIES: dict[str, Policy] = _load()
