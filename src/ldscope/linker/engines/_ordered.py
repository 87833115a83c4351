"""The left-to-right engine of GNU ld (bfd) and gold.

Inputs are read once, in order. An archive contributes the members that define a symbol
undefined at that point, scanning its index again while that brings something new; a group
rescans its archives until nothing changes. bfd decides --as-needed when it reaches the
library, and after all inputs reads the DT_NEEDED entries of the libraries it kept: a symbol
a regular object needs that only such a library defines is "DSO missing from command line".
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from ldscope.linker._symbol_kinds import COMMON
from ldscope.linker.engines._base import Engine, EngineContext
from ldscope.linker.engines._policy import Policy
from ldscope.linker.engines._table import Outcome, TraceStep
from ldscope.linker.inputs import (
    ArchiveFacts,
    GroupEnd,
    Input,
    ObjectFacts,
    SharedFacts,
    bfd_needed_search_path,
)
from ldscope.vocab import LinkErrorKind


class OrderedEngine(Engine):
    """bfd and gold."""

    def __init__(self, ctx: EngineContext, policy: Policy) -> None:
        super().__init__(ctx, policy)
        self.included: dict[int, set[int]] = {}
        self.needed_sonames: set[str] = set()
        self.loaded_sonames: set[str] = set()
        self.needed_list: list[tuple[str, int, bool]] = []  # (DT_NEEDED name, by uid, by no-add)
        self.shared_inputs: dict[int, int] = {}  # input seq -> uid
        self.system_libs: set[int] = set()
        self.dt_loaded: list[int] = []  # libraries read only through DT_NEEDED
        self.pending: dict[int, Sequence[tuple[str, int]]] = {}  # archive seq -> entries still open
        self.pruned: dict[int, int] = {}  # archive seq -> members included when last pruned

    def run(self) -> Outcome:
        """Simulate the link; the outcome holds units, errors and the trace."""
        self.seed_undefined()
        groups: dict[int, list[Input]] = {}
        group_start: dict[int, int] = {}  # gold: undefined symbols seen when the group began
        for ev in self.ctx.line.events:
            if self.out.fatal and self.policy.name == "bfd":
                break
            if isinstance(ev, GroupEnd):
                self.rescan(groups.pop(ev.group, []), group_start.pop(ev.group, self.undefined_seen))
                continue
            inp = ev
            for g in inp.groups:
                group_start.setdefault(g, self.undefined_seen)
            if inp.problem is not None:
                self.input_problem(inp)
                continue
            facts = inp.facts
            if isinstance(facts, (ArchiveFacts, SharedFacts)):
                for g in inp.groups:
                    groups.setdefault(g, []).append(inp)
            if isinstance(facts, ArchiveFacts):
                if inp.whole_archive:
                    for m in range(len(facts.member_names)):
                        self.include_member(inp, facts, m, None, None)
                else:
                    self.scan_archive(inp, facts)
            elif isinstance(facts, ObjectFacts):
                self.include_object(facts, inp.display, inp)
            elif isinstance(facts, SharedFacts):
                self.add_shared(inp, facts)
        self.after_inputs()
        if self.policy.loads_dt_needed and not self.out.fatal:
            self.load_dt_needed()
        self.finish()
        return self.out

    # ------------------------------------------------------------------ archives
    def rescan(self, archives: list[Input], seen_at_start: int) -> None:
        """--end-group: rescan the group's archives until nothing new comes in.

        bfd rescans at least once, then while new symbols appear, and reconsiders the
        group's --as-needed libraries it had left out; gold rescans only while objects
        have brought new undefined symbols since the group began.
        """
        if not self.policy.archive_loop_on_new_symbols:
            seen = seen_at_start
            while archives and seen != self.undefined_seen:
                seen = self.undefined_seen
                self.rescan_pass(archives)
            return
        while archives and not self.out.fatal:
            before_syms = self.new_symbols
            self.rescan_pass(archives)
            if self.new_symbols == before_syms:
                break

    def rescan_pass(self, members: list[Input]) -> None:
        """One pass over a group: archives again, and (bfd) --as-needed libraries left out."""
        for inp in members:
            if isinstance(inp.facts, ArchiveFacts):
                if not inp.whole_archive:
                    self.scan_archive(inp, inp.facts)
            elif isinstance(inp.facts, SharedFacts) and self.policy.as_needed_at_position \
                    and inp in self.out.dropped_libs:
                self.out.dropped_libs.remove(inp)
                self.add_shared(inp, inp.facts, again=True)

    def scan_archive(self, inp: Input, facts: ArchiveFacts) -> None:
        """Extract the members that define currently undefined symbols."""
        if not facts.has_gnu_index and facts.member_names:
            if inp.seq not in self.included:
                self.included[inp.seq] = set()
                fatal = self.policy.no_index == "fatal"
                self.out.error(LinkErrorKind.ARCHIVE_NO_INDEX, None, None, detail=inp.display, fatal=fatal,
                               input_seq=inp.seq)
            return
        included = self.included.setdefault(inp.seq, set())
        t = self.t
        if not (self.policy.common_pulls_data_definition and self.commons) \
                and t.undef.keys().isdisjoint(facts.index_names()):
            return  # nothing undefined is in the index: no member can be extracted (the common case)
        bfd = self.policy.archive_loop_on_new_symbols
        entries = self.pending.get(inp.seq, facts.index_entries)
        while True:
            if len(included) > self.pruned.get(inp.seq, 0):
                # Entries of members already in the link are never looked at again.
                entries = [e for e in entries if e[1] not in included]
                self.pending[inp.seq] = entries
                self.pruned[inp.seq] = len(included)
            again = False
            last = -1
            for sym, m in entries:
                if m in included or m == last:
                    continue
                if sym in t.undef and self.binding_strong(sym):
                    by = t.undef[sym]
                elif self.policy.common_pulls_data_definition and t.defs.get(sym, (0, 0))[0] == COMMON:
                    got = facts.member(m)
                    if not isinstance(got, ObjectFacts) or sym not in got.data_defs:
                        continue
                    by = t.defs[sym][1]
                else:
                    continue
                before = self.new_symbols
                included.add(m)
                self.include_member(inp, facts, m, sym, by)
                last = m
                if not bfd or self.new_symbols != before:
                    again = True
                if self.out.fatal and self.policy.name == "bfd":
                    return
            if not again:
                return

    # ------------------------------------------------------------------ libraries
    def add_shared(self, inp: Input, lib: SharedFacts, again: bool = False) -> None:
        """A shared library on the line (or from a script); `again` on a group rescan."""
        soname = lib.soname or os.path.basename(inp.display)
        if soname in (self.needed_sonames if self.policy.name == "bfd" else self.loaded_sonames):
            self.out.trace.append(TraceStep("skip-duplicate", inp.display, inp.position, None, soname))
            return
        why: str | None = None
        if inp.as_needed and self.policy.as_needed_at_position:
            why = self.first_use(lib, soname)
            if why is None:
                self.out.dropped_libs.append(inp)
                if not again:
                    self.out.trace.append(TraceStep("dropped", inp.display, inp.position))
                return
        uid = self.new_unit(inp.display, inp, lib)
        self.shared_inputs[inp.seq] = uid
        if inp.found_by_search and os.path.dirname(inp.display) in self.ctx.script_dirs:
            self.system_libs.add(uid)
        self.loaded_sonames.add(soname)
        self.needed_sonames.add(soname)
        self.out.needed_libs.append(uid)
        self.out.trace.append(TraceStep("needed", inp.display, inp.position, why))
        self.add_shared_symbols(lib, uid)
        for name in lib.needed:
            self.needed_list.append((name, uid, not inp.copy_dt_needed))

    def first_use(self, lib: SharedFacts, soname: str) -> str | None:
        """The symbol that makes an --as-needed library needed right now (bfd), if any.

        A regular object's non-weak reference to an undefined symbol counts, and so does a
        common symbol the library's initialised data definition replaces (bfd reads commons
        as references); so does a library's reference when no library on the line lists
        this one in DT_NEEDED.
        """
        t = self.t
        small, large = (t.undef, lib.defs) if len(t.undef) < len(lib.defs) else (lib.defs, t.undef)
        on_needed = any(name == soname for name, _, _ in self.needed_list)
        for key in small:
            if key not in large:
                continue
            if t.strong_refs.get(key):
                return key
            if t.shared_refs.get(key) and not on_needed:
                return key
        for key in self.commons:
            if t.defs.get(key, (0, 0))[0] == COMMON and lib.beats_common(key):
                return key
        return None

    # ------------------------------------------------------------------ DT_NEEDED (bfd)
    def load_dt_needed(self) -> None:
        """Read the DT_NEEDED entries of kept libraries, as ld/ldelf.c after_open does."""
        o = self.ctx.options
        shared_out = self.ctx.kind == "shared"
        ignore_shlib = (o.allow_shlib_undefined if o.allow_shlib_undefined is not None else shared_out) \
            or o.unresolved_symbols in ("ignore-all", "ignore-in-shared-libs")
        done: set[str] = set()
        i = 0
        while i < len(self.needed_list) and not self.out.fatal:
            name, by, no_add = self.needed_list[i]
            i += 1
            if ignore_shlib and no_add:
                continue
            if name in done:
                continue
            done.add(name)
            loaded, dropped = self.command_line_match(name)
            if loaded:
                continue
            by_unit = self.out.units[by]
            path = dropped.display if dropped is not None else self.search_needed(name, by)
            if path is None:
                self.out.warnings.append(
                    f"{name}, needed by {by_unit.display}, not found (try using -rpath or -rpath-link)")
                self.out.trace.append(TraceStep("not-found", name, None, None, by_unit.display))
                continue
            facts = self.ctx.cache.get(self.abs(path))
            if not isinstance(facts, SharedFacts):
                continue
            if self.same_file_loaded(path):
                continue
            self.load_needed_lib(path, facts, by, no_add)

    def abs(self, path: str) -> str:
        """Path relative to the link's working directory."""
        return path if os.path.isabs(path) else os.path.join(self.ctx.cwd, path)

    def command_line_match(self, name: str) -> tuple[bool, Input | None]:
        """(already loaded?, a dropped --as-needed input of that name) as ldelf_check_needed."""
        dropped: Input | None = None
        for inp in self.ctx.line.inputs:
            if inp.facts is None:
                continue
            match = inp.display == name or (inp.found_by_search and os.path.basename(inp.display) == name)
            if not match and isinstance(inp.facts, SharedFacts):
                match = inp.facts.soname == name
            if not match:
                continue
            if inp in self.out.dropped_libs:
                dropped = dropped or inp
            elif isinstance(inp.facts, SharedFacts) or inp.display == name:
                return True, None
        return False, dropped

    def same_file_loaded(self, path: str) -> bool:
        """bfd's stat check: the file is one of the libraries already in the link."""
        try:
            st = os.stat(self.abs(path))
        except OSError:
            return False
        for uid in self.out.needed_libs:
            unit = self.out.units[uid]
            try:
                other = os.stat(self.abs(unit.display))
            except OSError:
                continue
            if (other.st_dev, other.st_ino) == (st.st_dev, st.st_ino):
                return True
        return False

    def search_needed(self, name: str, by: int) -> str | None:
        """Find a DT_NEEDED library along bfd's path (libraries without libc skipped first)."""
        unit = self.out.units[by]
        lib = unit.facts
        assert isinstance(lib, SharedFacts)
        o = self.ctx.options
        candidates = bfd_needed_search_path(
            name, self.abs(unit.display), lib.runpath, lib.rpath, o.rpath_link, o.rpath,
            self.ctx.env, o.sysroot, self.ctx.script_dirs)
        target = (lib.machine, lib.elf_class)
        for force in (False, True):
            for path, _rule in candidates:
                if not os.path.isfile(self.abs(path)):
                    continue
                facts = self.ctx.cache.get(self.abs(path))
                if not isinstance(facts, SharedFacts) or (facts.machine, facts.elf_class) != target:
                    continue
                if not force and facts.needed and not any(n.startswith("libc.so") for n in facts.needed):
                    continue
                return path
        return None

    def load_needed_lib(self, path: str, lib: SharedFacts, by: int, no_add: bool) -> None:
        """Add a library found through DT_NEEDED; a regular reference to it (or a common
        symbol its initialised data definition would replace) is DSO missing."""
        t = self.t
        by_name = self.out.units[by].display
        uid = self.new_unit(path, None, lib, by=by_name)
        self.out.trace.append(TraceStep("load-dt-needed", path, None, None, by_name))
        for key in lib.defs:
            strong_undef = key in t.undef and bool(t.strong_refs.get(key))
            common = not strong_undef and t.defs.get(key, (0, 0))[0] == COMMON and lib.beats_common(key)
            if strong_undef or common:
                if no_add:
                    first = t.undef[key] if strong_undef else t.defs[key][1]
                    self.out.error(LinkErrorKind.DSO_MISSING, key, first, uid, fatal=True)
                    return
                self.out.needed_libs.append(uid)
        self.add_shared_symbols(lib, uid)
        self.dt_loaded.append(uid)
        for name in lib.needed:
            self.needed_list.append((name, uid, no_add))

    # ------------------------------------------------------------------ end
    def finish(self) -> None:
        """Undefined references, library checks and required symbols."""
        if self.out.fatal and self.policy.name != "gold":
            self.report_hidden()
            return
        self.undefined_errors()
        if self.policy.name == "bfd":
            libs = list(dict.fromkeys([*self.out.needed_libs, *self.dt_loaded]))
            self.shlib_errors(libs)
        else:
            sonames = {self.soname_of(u) for u in self.shared_inputs.values()}
            eligible = {u for u in self.shared_inputs.values()
                        if self.needed_known(u, sonames) and u not in self.system_libs}
            self.shlib_errors(list(self.shared_inputs.values()), eligible)
            self.gold_copy_dt_needed(sonames)
        self.required_errors()

    def gold_copy_dt_needed(self, sonames: set[str]) -> None:
        """gold refuses --copy-dt-needed-entries (last one on the line wins) as soon as a
        library has a DT_NEEDED entry that is not in the link; reported once."""
        last = None
        for item in self.ctx.line_items:
            if item.kind == "state" and item.value in ("copy-dt-needed-entries", "no-copy-dt-needed-entries"):
                last = item.value
        if last != "copy-dt-needed-entries":
            return
        for uid in self.shared_inputs.values():
            lib = self.out.units[uid].facts
            assert isinstance(lib, SharedFacts)
            missing = [n for n in lib.needed if n not in sonames]
            if missing:
                self.out.error(LinkErrorKind.UNSUPPORTED_OPTION, None, uid, detail=(
                    f"--copy-dt-needed-entries is not supported but is required for {missing[0]} "
                    f"in {self.out.units[uid].display}"))
                return

    def report_hidden(self) -> None:
        """After a fatal error, still compute what would follow (marked not shown)."""
        self.undefined_errors()
        self.required_errors()
