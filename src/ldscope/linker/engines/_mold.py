"""mold's engine: every definition competes by rank, then liveness spreads from the objects.

Ranks (lower wins, ties by file priority): a strong definition in an object on the line,
a weak one, a strong definition in a shared library or an archive member not yet
extracted, a weak one there, a common symbol, a common symbol in an unextracted member.
Priorities follow the command line (archive members in archive order at the archive's
place), so the earlier of two equal definitions wins.
Every object on the line is live; a live object's strong reference (or common symbol whose
owner has a real definition) makes the owner live; a live library's references (weak
ones too) make objects live, never other libraries. Resolution then runs again over live files.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from ldscope.linker._symbol_kinds import COMMON, SHARED, SHARED_WEAK, STRONG, WEAK
from ldscope.linker.engines._base import Engine, EngineContext
from ldscope.linker.engines._policy import Policy
from ldscope.linker.engines._table import Outcome, TraceStep
from ldscope.linker.inputs import ArchiveFacts, GroupEnd, Input, MemberProblem, ObjectFacts, SharedFacts
from ldscope.vocab import LinkErrorKind


@dataclass(slots=True)
class _File:
    inp: Input
    facts: ObjectFacts | SharedFacts
    display: str
    member: int | None
    in_lib: bool
    priority: int = 0
    alive: bool = False
    uid: int = -1
    discarded: frozenset[str] = frozenset()  # keys defined in COMDAT copies another file keeps


class MoldEngine(Engine):
    """mold."""

    weak_refs_extract = False

    def __init__(self, ctx: EngineContext, policy: Policy) -> None:
        super().__init__(ctx, policy)
        self.files: list[_File] = []

    def run(self) -> Outcome:
        """Simulate the link."""
        objs: list[_File] = []
        libs: list[_File] = []
        dsos: list[_File] = []
        order: list[_File] = []  # command-line order decides ties (file priority)
        sonames: set[str] = set()
        seen_paths: set[str] = set()
        for ev in self.ctx.line.events:
            if isinstance(ev, GroupEnd) or self.out.fatal:
                continue
            inp = ev
            if inp.problem is not None:
                self.input_problem(inp)
                continue
            facts = inp.facts
            # mold reads an archive once however often it is named (measured with 1.10); an
            # object file named twice is two objects, whose symbols clash.
            if isinstance(facts, ArchiveFacts):
                real = os.path.realpath(os.path.join(self.ctx.cwd, inp.display))
                if real in seen_paths:
                    self.out.trace.append(TraceStep("skip-duplicate", inp.display, inp.position, None, real))
                    continue
                seen_paths.add(real)
            if isinstance(facts, ObjectFacts):
                objs.append(_File(inp, facts, inp.display, None, False))
                order.append(objs[-1])
            elif isinstance(facts, ArchiveFacts):
                for m in range(len(facts.member_names)):
                    got = facts.member(m)
                    display = self.member_display(inp, facts, m)
                    if isinstance(got, MemberProblem):
                        if inp.whole_archive:
                            self.out.error(LinkErrorKind.CORRUPT_INPUT, None, None, detail=f"{display}: {got.reason}")
                        continue
                    f = _File(inp, got, display, m, not inp.whole_archive)
                    (libs if f.in_lib else objs).append(f)
                    order.append(f)
            elif isinstance(facts, SharedFacts):
                soname = facts.soname or os.path.basename(inp.display)
                if soname in sonames:
                    continue
                sonames.add(soname)
                dsos.append(_File(inp, facts, inp.display, None, False))
                order.append(dsos[-1])
        self.after_inputs()
        self.files = order
        for prio, f in enumerate(self.files, start=2):
            f.priority = prio
        self.mark_live(objs, dsos)
        self.resolve_live()
        self.stop_after_duplicates()
        self.finish()
        return self.out

    # ------------------------------------------------------------------ resolution
    def owners(self, live_only: bool) -> dict[str, tuple[int, int, _File, int]]:
        """key -> (rank, priority, file, kind) of the winning definition."""
        best: dict[str, tuple[int, int, _File, int]] = {}
        for f in self.files:
            if live_only and not f.alive:
                continue
            lazy = f.in_lib and not f.alive
            facts = f.facts
            if isinstance(facts, SharedFacts):
                for key, weak in facts.defs.items():
                    # mold 1.10 matches an explicit `foo@V1` reference only to a non-default
                    # `foo@V1`, never to the default `foo@@V1` (measured: "undefined symbol: foo").
                    if "@" in key and facts.display.get(key.split("@", 1)[0]) == key.replace("@", "@@", 1):
                        continue
                    cand = (4 if weak else 3, f.priority, f, SHARED_WEAK if weak else SHARED)
                    cur = best.get(key)
                    if cur is None or cand[:2] < cur[:2]:
                        best[key] = cand
                continue
            gone = f.discarded
            for kind, keys in ((STRONG, facts.strong), (WEAK, facts.weak), (COMMON, facts.common)):
                if gone:
                    keys = tuple(k for k in keys if k not in gone)
                if kind == COMMON:
                    rank = 6 if lazy else 5
                elif lazy:
                    rank = 3 if kind == STRONG else 4
                else:
                    rank = 1 if kind == STRONG else 2
                for key in keys:
                    cur = best.get(key)
                    if cur is None or (rank, f.priority) < cur[:2]:
                        best[key] = (rank, f.priority, f, kind)
        return best

    def mark_live(self, objs: list[_File], dsos: list[_File]) -> None:
        """Spread liveness from the objects on the line (and libraries not --as-needed)."""
        owners = self.owners(live_only=False)
        work: list[_File] = []
        for f in objs:
            f.alive = True
            work.append(f)
        for f in dsos:
            if not f.inp.as_needed:
                f.alive = True
                work.append(f)
        o = self.ctx.options
        for key in [*o.undefined, *o.require_defined, *([o.entry] if o.entry else [])]:
            self.wake(owners.get(key), work, key, None)
        while work:
            f = work.pop(0)
            facts = f.facts
            if isinstance(facts, SharedFacts):
                # A library's references (weak ones too) pull in objects, never other libraries.
                for key in (*facts.undef, *facts.weak_undef):
                    own = owners.get(key)
                    if own is not None and not isinstance(own[2].facts, SharedFacts):
                        self.wake(own, work, key, f)
                continue
            for key in self.strong_references(facts):
                self.wake(owners.get(key), work, key, f)
            if self.weak_refs_extract:
                for key in facts.weak_undef:
                    self.wake(owners.get(key), work, key, f)
            for key in facts.common:
                own = owners.get(key)
                if own is not None and own[3] != COMMON:
                    self.wake(own, work, key, f)

    def wake(self, own: tuple[int, int, _File, int] | None, work: list[_File], key: str,
             by: _File | None) -> None:
        """Make the owner of `key` live."""
        if own is None or own[2].alive:
            return
        f = own[2]
        f.alive = True
        work.append(f)
        if f.member is not None:
            self.out.trace.append(TraceStep("extract", f.display, f.inp.position, key,
                                            by.display if by else None))
            if by is not None and by.inp.seq > f.inp.seq:
                self.out.backrefs.append((key, by.display, f.inp.seq))

    def resolve_live(self) -> None:
        """Create units for live files in priority order and settle each symbol's owner."""
        t = self.t
        for f in self.files:
            if not f.alive:
                continue
            f.uid = self.new_unit(f.display, f.inp, f.facts, f.member)
            if f.member is not None:
                self.out.extracted[(f.inp.seq, f.member)] = f.uid
            if isinstance(f.facts, SharedFacts):
                self.out.needed_libs.append(f.uid)
                self.out.trace.append(TraceStep("needed", f.display, f.inp.position))
        for f in self.files:
            if not f.alive and f.in_lib is False and isinstance(f.facts, SharedFacts):
                self.out.dropped_libs.append(f.inp)
        for f in self.files:
            if f.alive and isinstance(f.facts, ObjectFacts) and f.facts.groups:
                f.discarded = frozenset(self.claim_groups(f.facts, f.uid))
        owners = self.owners(live_only=True)
        for key, (_rank, _prio, f, kind) in owners.items():
            t.defs[key] = (kind, f.uid)
        for f in self.files:
            if not f.alive:
                continue
            facts = f.facts
            if isinstance(facts, SharedFacts):
                for key in facts.undef:
                    t.shared_refs.setdefault(key, []).append(f.uid)
                    if key not in t.defs:
                        t.undef.setdefault(key, f.uid)
                continue
            for key in self.strong_references(facts):
                t.refs.setdefault(key, []).append(f.uid)
                t.strong_refs.setdefault(key, []).append(f.uid)
                if key not in t.defs:
                    t.undef.setdefault(key, f.uid)
            for key in facts.weak_undef:
                t.refs.setdefault(key, []).append(f.uid)
                if key not in t.defs:
                    t.weak_undef.setdefault(key, f.uid)
            self.duplicates(f, owners)

    def duplicates(self, f: _File, owners: dict[str, tuple[int, int, _File, int]]) -> None:
        """A strong definition whose symbol another live file owns."""
        facts = f.facts
        assert isinstance(facts, ObjectFacts)
        if self.ctx.options.allow_multiple_definition:
            return
        for key in facts.strong:
            own = owners.get(key)
            if own is not None and own[2] is not f and key not in f.discarded:
                self.out.error(LinkErrorKind.MULTIPLE_DEFINITION, key, f.uid, own[2].uid)

    def finish(self) -> None:
        """Undefined references (per reference: a weak one is never reported). Building a
        shared library, a symbol whose first referrer (by priority) refers to it weakly is
        exported as a dynamic import, even under -z defs, so nothing is reported for it."""
        t = self.t
        if self.ctx.kind == "shared":
            for key in [k for k in t.undef if t.refs.get(k)]:
                first = t.refs[key][0]
                if first not in t.strong_refs.get(key, ()):
                    del t.undef[key]
        self.undefined_errors(t.strong_refs)
        self.required_errors()
