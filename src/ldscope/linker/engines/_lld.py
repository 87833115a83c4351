"""lld's engine: archives give lazy symbols, extracted whenever a reference meets one.

Order still matters in a few places, all modelled: the first archive defining a symbol
wins; an object's definitions are resolved first, then its references in symbol-table
order, each extraction happening at once (depth first); a shared library's definition replaces a lazy symbol; a common symbol
followed by an archive whose member has a global, non-common definition extracts it
(--fortran-common, lld 14's default), not the other way round; a weak reference never
extracts.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

from ldscope.linker._symbol_kinds import COMMON, SHARED, SHARED_WEAK, UNDEFINED, WEAK, WEAK_UNDEFINED
from ldscope.linker.engines._base import Engine, EngineContext
from ldscope.linker.engines._policy import Policy
from ldscope.linker.engines._table import Outcome, TraceStep
from ldscope.linker.inputs import ArchiveFacts, GroupEnd, Input, ObjectFacts, SharedFacts
from ldscope.vocab import LinkErrorKind


class LazyEngine(Engine):
    """lld."""

    def __init__(self, ctx: EngineContext, policy: Policy) -> None:
        super().__init__(ctx, policy)
        self.lazy: dict[str, tuple[Input, ArchiveFacts, int]] = {}
        self.sonames: dict[str, int] = {}
        self.shared: list[int] = []
        self.stack: list[tuple[int, Iterator[tuple[str, int]], frozenset[str]]] = []

    def run(self) -> Outcome:
        """Simulate the link."""
        self.seed_undefined()
        for ev in self.ctx.line.events:
            if isinstance(ev, GroupEnd):
                continue
            inp = ev
            if inp.problem is not None:
                self.input_problem(inp)
                continue
            facts = inp.facts
            if isinstance(facts, ObjectFacts):
                self.parse_object(facts, inp.display, inp, None)
            elif isinstance(facts, ArchiveFacts):
                if inp.whole_archive:
                    for m in range(len(facts.member_names)):
                        self.fetch(inp, facts, m, None, None)
                else:
                    self.add_lazy(inp, facts)
            elif isinstance(facts, SharedFacts):
                self.add_shared(inp, facts)
        self.after_inputs()
        self.stop_after_duplicates()
        self.finish()
        return self.out

    # ------------------------------------------------------------------ objects
    def parse_object(self, facts: ObjectFacts, display: str, inp: Input, member: int | None,
                     why: str | None = None, by: int | None = None) -> None:
        """Resolve an object's symbols in order, extracting members depth first."""
        uid = self.start_unit(facts, display, inp, member)
        if member is not None:
            self.out.trace.append(TraceStep("extract", display, inp.position, why, self.name_of(by)))
        self.run_stack(uid)

    def start_unit(self, facts: ObjectFacts, display: str, inp: Input, member: int | None) -> int:
        """Create the unit, claim its COMDAT groups, and push its symbols."""
        uid = self.new_unit(display, inp, facts, member)
        discarded = self.claim_groups(facts, uid)
        # lld resolves all definitions first, then the references (which may extract).
        syms = facts.symbols
        if facts.tls_relaxable and self.ctx.kind in ("exec", "pie"):  # see strong_references
            syms = tuple(x for x in syms if x[0] not in facts.tls_relaxable)
        ordered = [x for x in syms if x[1] <= COMMON] + [x for x in syms if x[1] >= UNDEFINED]
        self.stack.append((uid, iter(ordered), frozenset(discarded)))
        return uid

    def run_stack(self, base: int) -> None:
        """Drain the symbol stack (an explicit stack instead of recursion)."""
        t = self.t
        while self.stack:
            uid, it, discarded = self.stack[-1]
            step = next(it, None)
            if step is None:
                self.stack.pop()
                continue
            key, code = step
            if code == UNDEFINED:
                t.first_ref.setdefault(key, (uid, True))
                t.refs.setdefault(key, []).append(uid)
                t.strong_refs.setdefault(key, []).append(uid)
                if key in t.defs:
                    continue
                t.weak_undef.pop(key, None)
                t.undef.setdefault(key, uid)
                self.extract_for(key, uid)
            elif code == WEAK_UNDEFINED:
                t.first_ref.setdefault(key, (uid, False))
                t.refs.setdefault(key, []).append(uid)
                if key not in t.defs and key not in t.undef:
                    t.weak_undef.setdefault(key, uid)
            elif key not in discarded:
                self.define(key, code, uid)

    def extract_for(self, key: str, by: int) -> None:
        """A strong reference met a lazy symbol: extract its member now."""
        found = self.lazy.pop(key, None)
        if found is None:
            return
        inp, facts, m = found
        if by is not None and by >= 0 and self.out.units[by].input is not None:
            ref = self.out.units[by].input
            if ref is not None and ref.seq > inp.seq:
                self.out.backrefs.append((key, self.out.units[by].display, inp.seq))
        self.fetch(inp, facts, m, key, by)

    def fetch(self, inp: Input, facts: ArchiveFacts, m: int, why: str | None, by: int | None) -> None:
        """Extract member `m` (once)."""
        if (inp.seq, m) in self.out.extracted:
            return
        got = facts.member(m)
        if not isinstance(got, ObjectFacts):
            self.include_member(inp, facts, m, why, by)
            return
        display = self.member_display(inp, facts, m)
        self.out.extracted[(inp.seq, m)] = len(self.out.units)
        self.out.trace.append(TraceStep("extract", display, inp.position, why, self.name_of(by)))
        self.start_unit(got, display, inp, m)
        if len(self.stack) == 1:
            self.run_stack(self.stack[0][0])

    # ------------------------------------------------------------------ archives
    def add_lazy(self, inp: Input, facts: ArchiveFacts) -> None:
        """Index symbols become lazy; an undefined one extracts at once."""
        t = self.t
        if facts.has_gnu_index:
            entries: list[tuple[str, int]] = list(facts.index_entries)
        else:
            entries = [(k, ms[0]) for k, ms in facts.lazy_symbols().items()]
        for sym, m in entries:
            cur = t.defs.get(sym)
            if cur is not None:
                if cur[0] == COMMON:
                    got = facts.member(m)
                    if isinstance(got, ObjectFacts) and sym in got.strong and sym not in got.common:
                        self.fetch(inp, facts, m, sym, cur[1])
                continue
            if sym in t.undef and self.binding_strong(sym):
                if sym not in self.lazy:
                    self.lazy[sym] = (inp, facts, m)
                    self.extract_for(sym, t.undef[sym])
                continue
            self.lazy.setdefault(sym, (inp, facts, m))

    # ------------------------------------------------------------------ libraries
    def add_shared(self, inp: Input, lib: SharedFacts) -> None:
        """A shared library: definitions replace lazy symbols, references extract."""
        soname = lib.soname or os.path.basename(inp.display)
        if soname in self.sonames:
            self.out.trace.append(TraceStep("skip-duplicate", inp.display, inp.position, None, soname))
            return
        uid = self.new_unit(inp.display, inp, lib)
        self.sonames[soname] = uid
        self.shared.append(uid)
        t = self.t
        skip = set(lib.undef_versions)  # lld 14 ignores a library's versioned references
        for key, code in lib.order:
            if code <= WEAK:
                if key not in t.defs:
                    self.lazy.pop(key, None)
                    t.defs[key] = (SHARED_WEAK if code == WEAK else SHARED, uid)
                    if t.undef.pop(key, None) is None:
                        t.weak_undef.pop(key, None)
                continue
            if key in skip:
                continue
            strong = code == UNDEFINED
            t.first_ref.setdefault(key, (uid, strong))
            if strong:
                t.shared_refs.setdefault(key, []).append(uid)
            if key in t.defs:
                continue
            if strong:
                t.weak_undef.pop(key, None)
                t.undef.setdefault(key, uid)
                if key in self.lazy:
                    self.extract_for(key, uid)
            elif key not in t.undef:
                t.weak_undef.setdefault(key, uid)

    # ------------------------------------------------------------------ end
    def finish(self) -> None:
        """Undefined references; libraries whose DT_NEEDED are all known are checked."""
        for uid in self.shared:
            if self.uses(uid):
                self.out.needed_libs.append(uid)
                self.out.trace.append(TraceStep("needed", self.out.units[uid].display,
                                                self.out.units[uid].position))
        self.undefined_errors()
        known = set(self.sonames)
        eligible = {u for u in self.shared if self.needed_known(u, known)}
        self.shlib_errors(self.shared, eligible)
        self.versioned_shlib_errors([u for u in self.shared if u in eligible])
        self.required_errors()

    def versioned_shlib_errors(self, libs: list[int]) -> None:
        """lld's check of a library's versioned references (`name@VER`, which resolution
        leaves alone): a library in the link must define that version of the name, else
        "undefined reference to name@VER [--no-allow-shlib-undefined]" (measured, lld 14)."""
        if not self.check_shlibs():
            return
        t = self.t
        for uid in libs:
            lib = self.out.units[uid].facts
            assert isinstance(lib, SharedFacts)
            for name, version in lib.undef_versions.items():
                key = f"{name}@{version}"
                if name in lib.undef and key not in t.defs:
                    self.out.error(LinkErrorKind.SHLIB_UNDEFINED, key, uid)

    def uses(self, uid: int) -> bool:
        """True when a regular object binds a strong reference to this library."""
        t = self.t
        unit = self.out.units[uid]
        lib = unit.facts
        assert isinstance(lib, SharedFacts)
        if unit.input is None or not unit.input.as_needed:
            return True
        return any(t.defs.get(k, (0, -1))[1] == uid and t.strong_refs.get(k) for k in lib.defs)
