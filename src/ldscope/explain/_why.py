"""`link --why SYMBOL`: like ld's --trace-symbol, across the four models. Every input that
references or defines the symbol, which definition won and why, and how each library got
into the link, so "why does this link succeed?" has an answer too."""

from __future__ import annotations

import os
from dataclasses import dataclass

from ldscope.cxx import demangle
from ldscope.linker import COMMON, SHARED, SHARED_WEAK, STRONG, WEAK, Simulation
from ldscope.linker.engines import Unit
from ldscope.linker.inputs import ArchiveFacts, ObjectFacts, SharedFacts

_KIND_WORDS: dict[int, str] = {STRONG: "strong definition", WEAK: "weak definition", COMMON: "common symbol",
               SHARED: "shared-library definition", SHARED_WEAK: "weak shared-library definition"}


@dataclass(frozen=True, slots=True)
class SymbolInput:
    """One input's part in a symbol's story."""

    file: str
    argument_index: int | None
    role: str  # "defines" | "references" | "defines, not extracted"
    detail: str  # strong/weak/common/shared, or why an archive member was not used
    in_link: bool
    how_in_link: str  # command line, a script's AS_NEEDED, another library's DT_NEEDED, ...


@dataclass(frozen=True, slots=True)
class SymbolTrace:
    """Everything about one symbol in one simulated link."""

    symbol: str
    demangled: str | None
    keys: tuple[str, ...]  # the symbol keys matched (name, name@VER, ...)
    winner: str | None  # the definition the link uses
    why: str
    inputs: tuple[SymbolInput, ...]


def trace_symbol(sim: Simulation, name: str) -> SymbolTrace:
    """The story of `name` (and its versioned keys `name@VER`) in this link."""
    table = sim.outcome.table
    known = set(table.defs) | set(table.refs) | set(table.undef) | set(table.weak_undef) | set(table.shared_refs)
    keys = tuple(sorted(k for k in known if k == name or k.split("@", 1)[0] == name)) or (name,)
    units = sim.outcome.units
    rows: list[SymbolInput] = []
    seen: set[tuple[str, str]] = set()

    def add(row: SymbolInput) -> None:
        if (row.file, row.role) not in seen:
            seen.add((row.file, row.role))
            rows.append(row)

    for u in units:
        defined = [k for k in keys if _unit_defines(u, k)]
        if defined:
            kind = _definition_kind(u, defined[0])
            add(SymbolInput(u.display, _position(u), "defines", _KIND_WORDS.get(kind, "definition"), True,
                            _how(sim, u)))
    for key in keys:
        for uid in dict.fromkeys([*table.refs.get(key, ()), *table.shared_refs.get(key, ())]):
            u = units[uid]
            strong = uid in table.strong_refs.get(key, ()) or uid in table.shared_refs.get(key, ())
            add(SymbolInput(u.display, _position(u), "references", "strong" if strong else "weak", True,
                            _how(sim, u)))
    in_link = {(u.input.seq if u.input else -1, u.member) for u in units}
    for inp in sim.resolved.inputs:
        f = inp.facts
        if isinstance(f, ArchiveFacts):
            for key in keys:
                for m in _members_defining(f, key):
                    if (inp.seq, m) in in_link:
                        continue
                    add(SymbolInput(f"{inp.display}({f.member_names[m]})", inp.position, "defines, not extracted",
                                    "the symbol was already defined, or never undefined, when the linker "
                                    "reached this archive" if sim.policy.ordered else
                                    "another definition was chosen", False, _input_how(inp.spec, inp.position)))
    winner_key = next((k for k in keys if k in table.defs), None)
    winner, why = None, _undefined_why(sim, keys)
    if winner_key is not None:
        kind, uid = table.defs[winner_key]
        u = units[uid]
        winner = u.display
        why = _winner_why(sim, u, kind, rows)
    return SymbolTrace(name, demangle(name) if name.startswith("_Z") else None, keys, winner, why, tuple(rows))


def _unit_defines(u: Unit, key: str) -> bool:
    f = u.facts
    if isinstance(f, SharedFacts):
        return key in f.defs
    return f.defines(key)


def _definition_kind(u: Unit, key: str) -> int:
    f = u.facts
    if isinstance(f, SharedFacts):
        return SHARED_WEAK if f.defs.get(key) else SHARED
    assert isinstance(f, ObjectFacts)
    if key in f.strong:
        return STRONG
    return WEAK if key in f.weak else COMMON


def _members_defining(f: ArchiveFacts, key: str) -> list[int]:
    if f.has_gnu_index:
        return [m for s, m in f.index_entries if s == key]
    return list(f.lazy_symbols().get(key, []))


def _position(u: Unit) -> int | None:
    return u.position if u.position >= 0 else None


def _input_how(spec: str, position: int) -> str:
    if " (from " in spec:
        script = spec.split(" (from ", 1)[1].rstrip(")")
        return f"named by the linker script {script} (argument {position})"
    return f"on the command line: {spec} (argument {position})"


def _how(sim: Simulation, u: Unit) -> str:
    """How a unit came into the link, in the words a person checks the line with."""
    if u.dt_needed_by:
        how = f"loaded for the DT_NEEDED entry of {u.dt_needed_by}"
        if sim.resolved.inputs and any(i.copy_dt_needed for i in sim.resolved.inputs if i.display == u.dt_needed_by):
            how += " (--copy-dt-needed-entries)"
        return how
    inp = u.input
    if inp is None:
        return "added by the linker"
    how = _input_how(inp.spec, inp.position)
    if u.member is not None:
        step = next((s for s in sim.outcome.trace if s.action == "extract" and s.target == u.display), None)
        if step is not None and step.symbol:
            how = f"extracted from {inp.display} for `{step.symbol}' referenced by {step.by or '?'}; {how}"
        elif inp.whole_archive:
            how = f"included by --whole-archive; {how}"
    if inp.as_needed and isinstance(u.facts, SharedFacts):
        kept = any(s.action == "needed" and s.target == u.display for s in sim.outcome.trace)
        mode = "in the script's AS_NEEDED(...)" if inp.script_as_needed else "--as-needed in effect"
        how += f"; {mode} (" + ("kept, so it becomes a DT_NEEDED entry: something it defines is used"
                                if kept else "dropped unless something it defines is used") + ")"
    return how


def _winner_why(sim: Simulation, u: Unit, kind: int, rows: list[SymbolInput]) -> str:
    strong_defs = [r for r in rows if r.role == "defines" and r.detail == _KIND_WORDS[STRONG]]
    label = sim.policy.label
    if kind == STRONG:
        if len(strong_defs) > 1 and sim.outcome.errors:
            return f"{u.display} has the first strong definition; the others clash with it"
        return f"{u.display} has a strong definition, which beats weak, common and shared-library ones"
    if kind == WEAK:
        return f"{u.display} has the first weak definition and no input has a strong one"
    if kind == COMMON:
        return f"{u.display}'s common symbol: no input has a real definition"
    base = os.path.basename(u.display)
    return (f"no regular object defines it, so {label} binds it to {base}'s definition at load time "
            f"({u.display} is in the link: {_how(sim, u)})")


def _undefined_why(sim: Simulation, keys: tuple[str, ...]) -> str:
    table = sim.outcome.table
    if any(k in table.undef for k in keys):
        return "nothing in the link defines it: it is undefined (see the error for where it is defined elsewhere)"
    if any(k in table.weak_undef for k in keys):
        return "only weak references and no definition: it stays 0 at run time"
    return "no input on the line references or defines it"
