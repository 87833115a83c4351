"""What every resolution engine shares: adding objects and libraries, and the final checks."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

from ldscope.linker._symbol_kinds import COMMON, SHARED, SHARED_WEAK, STRONG, WEAK
from ldscope.linker.engines._policy import Policy
from ldscope.linker.engines._table import Outcome, TraceStep, Unit
from ldscope.linker.frontend import LineItem, LinkOptions
from ldscope.linker.inputs import (
    ArchiveFacts,
    FactsCache,
    Input,
    MemberProblem,
    ObjectFacts,
    ResolvedLine,
    SharedFacts,
)
from ldscope.vocab import LinkErrorKind

_FATAL_PROBLEMS = {LinkErrorKind.INCOMPATIBLE_INPUT, LinkErrorKind.NOT_RECOGNIZED, LinkErrorKind.CORRUPT_INPUT}
# Defined by the linker itself (default script PROVIDEs and built-ins of bfd, gold, lld, mold).
LINKER_DEFINED = frozenset((
    "_GLOBAL_OFFSET_TABLE_", "_DYNAMIC", "__ehdr_start", "__executable_start", "__bss_start",
    "_end", "end", "_edata", "edata", "_etext", "etext", "__etext", "__dso_handle",
    "__init_array_start", "__init_array_end", "__preinit_array_start", "__preinit_array_end",
    "__fini_array_start", "__fini_array_end", "__rela_iplt_start", "__rela_iplt_end",
    "__rel_iplt_start", "__rel_iplt_end", "_TLS_MODULE_BASE_", "__GNU_EH_FRAME_HDR",
    "_PROCEDURE_LINKAGE_TABLE_", "__global_pointer$", "_gp", "__data_start", "data_start",
    "__TMC_END__", "__bss_end__", "_bss_end__", "__end__", "__x86_64_lbr_reserved",
))  # fmt: skip


# Defined by bfd's default scripts for executables only: its -shared scripts have no
# __init_array_start & co. (ld --verbose -shared); gold, lld and mold define them in shared
# objects too (measured with a hidden reference from a -shared link).
EXECUTABLE_ONLY_FOR_BFD = frozenset((
    "__preinit_array_start", "__preinit_array_end", "__init_array_start", "__init_array_end",
    "__fini_array_start", "__fini_array_end",
))


def linker_defines(key: str) -> bool:
    """True for symbols the linker provides itself (including __start_SEC/__stop_SEC)."""
    return key in LINKER_DEFINED or key.startswith(("__start_", "__stop_"))


@dataclass(frozen=True, slots=True)
class EngineContext:
    """Everything an engine needs besides its policy."""

    line: ResolvedLine
    options: LinkOptions
    kind: str  # exec | pie | shared | relocatable
    env: Mapping[str, str]
    cache: FactsCache
    program: str
    cwd: str
    script_dirs: tuple[str, ...]  # the built-in directories (bfd's DT_NEEDED search)
    missing_fatal: bool = True  # False for build logs: the files existed when the build ran
    line_items: tuple[LineItem, ...] = ()


class Engine:
    """Base engine: symbol table updates and end-of-link diagnostics."""

    def run(self) -> Outcome:
        """Simulate the link (each engine implements it)."""
        raise NotImplementedError

    def __init__(self, ctx: EngineContext, policy: Policy) -> None:
        self.ctx = ctx
        self.policy = policy
        self.out = Outcome()
        self.t = self.out.table
        self.seen_groups: dict[str, int] = {}
        self.new_symbols = 0
        self.undefined_seen = 0  # gold's saw_undefined: symbols regular objects made newly undefined
        self.commons: set[str] = set()  # symbols ever defined as common by a regular object
        # uid -> the COMDAT groups it lost; the references made only from them (never reported)
        # are worked out when a symbol it refers to stays undefined (dead_refs).
        self.dropped_groups: dict[int, list[str]] = {}
        self._dead_refs: dict[int, frozenset[str]] = {}
        self._shlib_keys: dict[int, tuple[tuple[str, ...], tuple[str, ...]]] = {}
        self.missing = False

    # ------------------------------------------------------------------ units
    def new_unit(self, display: str, inp: Input | None, facts: ObjectFacts | SharedFacts,
                 member: int | None = None, by: str | None = None) -> int:
        """Register a unit; its id."""
        uid = len(self.out.units)
        pos = inp.position if inp is not None else -1
        self.out.units.append(Unit(uid, display, pos, inp, facts, member, by))
        return uid

    def member_display(self, inp: Input, facts: ArchiveFacts, member: int) -> str:
        """`libx.a(m.o)` as linkers print it."""
        return f"{inp.display}({facts.member_names[member]})"

    def include_member(self, inp: Input, facts: ArchiveFacts, member: int, why: str | None,
                       by: int | None) -> int | None:
        """Extract one archive member; None if it cannot be used."""
        if (inp.seq, member) in self.out.extracted:
            return None
        got = facts.member(member)
        display = self.member_display(inp, facts, member)
        if isinstance(got, MemberProblem):
            self.out.error(LinkErrorKind.CORRUPT_INPUT, None, None, detail=f"{display}: {got.reason}",
                           input_seq=inp.seq)
            self.out.extracted[(inp.seq, member)] = -1
            return None
        uid = self.include_object(got, display, inp, member)
        self.out.extracted[(inp.seq, member)] = uid
        self.out.trace.append(TraceStep("extract", display, inp.position, why, self.name_of(by)))
        return uid

    def name_of(self, uid: int | None) -> str | None:
        """Display of a unit; `-u`/`-e` for the symbols the command line itself asks for."""
        if uid is None:
            return None
        if uid < 0:
            return "the command line (-u/--entry)"
        return self.out.units[uid].display

    def seed_undefined(self) -> None:
        """-u symbols (and, for gold/lld/mold, the --entry symbol) start out undefined: they
        extract archive members but are never reported when nothing defines them."""
        o = self.ctx.options
        keys = list(o.undefined) + list(o.require_defined)
        if o.entry and self.policy.name != "bfd":
            keys.append(o.entry)
        for key in keys:
            if key and not self.t.known(key):
                self.t.undef[key] = -1
                self.t.first_ref[key] = (-1, True)

    # ------------------------------------------------------------------ symbols
    def include_object(self, facts: ObjectFacts, display: str, inp: Input | None,
                       member: int | None = None) -> int:
        """Add a regular object's definitions and references."""
        uid = self.new_unit(display, inp, facts, member)
        t = self.t
        discarded = self.claim_groups(facts, uid)
        new = 0
        defs = t.defs
        for kind, keys in ((STRONG, facts.strong), (WEAK, facts.weak), (COMMON, facts.common)):
            if not keys:
                continue
            if discarded:
                keys = tuple(k for k in keys if k not in discarded)
            if kind == COMMON:
                new += sum(1 for k in keys if not t.known(k))
            # New names in bulk (the common case); the others through define()'s rules.
            fresh = list(keys) if defs.keys().isdisjoint(keys) else [k for k in keys if k not in defs]
            if fresh:
                entry = (kind, uid)
                defs.update(dict.fromkeys(fresh, entry))
                for pending in (t.undef, t.weak_undef):
                    if pending:
                        for k in pending.keys() & fresh:
                            del pending[k]
            if len(fresh) != len(keys):
                fresh_set = set(fresh)
                for key in keys:
                    if key not in fresh_set:
                        self.define(key, kind, uid)
        refs, strong_refs, undef, weak_undef = t.refs, t.strong_refs, t.undef, t.weak_undef
        if facts.common:
            self.commons.update(facts.common)
        first = t.first_ref
        for key in self.strong_references(facts):
            first.setdefault(key, (uid, True))
            refs.setdefault(key, []).append(uid)
            strong_refs.setdefault(key, []).append(uid)
            if key in defs or key in undef:
                continue
            if weak_undef.pop(key, None) is None:
                self.undefined_seen += 1  # gold's saw_undefined: a symbol newly undefined
            new += 1  # new, or weak turned strong: bfd's undefs list grows either way
            undef[key] = uid
        for key in facts.weak_undef:
            first.setdefault(key, (uid, False))
            refs.setdefault(key, []).append(uid)
            if key in defs or key in undef or key in weak_undef:
                continue
            new += 1
            self.undefined_seen += 1
            weak_undef[key] = uid
        self.new_symbols += new
        return uid

    def strong_references(self, facts: ObjectFacts) -> tuple[str, ...]:
        """An object's strong references in this output: an executable drops the TLS
        resolver calls the linker relaxes away (ObjectFacts.tls_relaxable)."""
        if facts.tls_relaxable and self.ctx.kind in ("exec", "pie"):
            return tuple(k for k in facts.undef if k not in facts.tls_relaxable)
        return facts.undef

    def claim_groups(self, facts: ObjectFacts, uid: int) -> set[str]:
        """Keep the first copy of each COMDAT group: keys defined in discarded copies, and
        references made only from discarded copies (never reported) are noted."""
        discarded: set[str] = set()
        seen = self.seen_groups
        if not facts.groups:
            return discarded
        # Groups another unit kept first are dropped; the others are this unit's from now on.
        dropped = [sig for sig in facts.groups if seen.get(sig, uid) != uid]
        seen.update(dict.fromkeys((sig for sig in facts.groups if sig not in seen), uid))
        for sig in dropped:
            # The keys whose last section assignment is this group (as group_of says).
            discarded.update(k for k in facts.group_keys.get(sig, ()) if facts.group_of.get(k) == sig)
        if dropped and facts.group_references is not None:
            self.dropped_groups[uid] = dropped
        return discarded

    def dead_refs(self, uid: int) -> frozenset[str]:
        """References of unit `uid` made only from the COMDAT copies it discarded."""
        found = self._dead_refs.get(uid)
        if found is None:
            dropped = self.dropped_groups.get(uid)
            facts = self.out.units[uid].facts
            refs = facts.group_references if dropped and isinstance(facts, ObjectFacts) else None
            found = refs.only_from(dropped) if refs is not None and dropped else frozenset()
            self._dead_refs[uid] = found
        return found

    def define(self, key: str, kind: int, uid: int) -> None:
        """A regular definition (strong beats weak and common; two strong ones clash)."""
        t = self.t
        cur = t.defs.get(key)
        if cur is None:
            t.defs[key] = (kind, uid)
            t.undef.pop(key, None)
            t.weak_undef.pop(key, None)
            return
        ckind, cuid = cur
        if cuid == uid:
            return
        if ckind in (SHARED, SHARED_WEAK):
            t.defs[key] = (kind, uid)
        elif kind == STRONG:
            if ckind == STRONG:
                if not self.ctx.options.allow_multiple_definition:
                    self.out.error(LinkErrorKind.MULTIPLE_DEFINITION, key, uid, cuid)
            else:
                t.defs[key] = (STRONG, uid)
        elif kind == COMMON and ckind == WEAK:
            t.defs[key] = (COMMON, uid)  # a common symbol beats a weak definition

    def add_shared_symbols(self, lib: SharedFacts, uid: int) -> None:
        """A library's definitions fill undefined symbols; its references are recorded."""
        t = self.t
        defs, undef, weak_undef = t.defs, t.undef, t.weak_undef
        lib_defs = lib.defs
        # Set operations, not a loop over every export: a link adds libc's ~3,000 and
        # libstdc++'s ~6,000 definitions, and a log's links add them again and again.
        taken = lib_defs.keys() & defs.keys()
        if self.policy.name == "bfd" and taken:  # bfd: a library's data definition beats a common
            for key in taken:
                if defs[key][0] == COMMON and lib.beats_common(key):
                    defs[key] = (SHARED_WEAK if lib_defs[key] else SHARED, uid)
                    if undef.pop(key, None) is None:
                        weak_undef.pop(key, None)
        if len(taken) < len(lib_defs):
            # dict.fromkeys keeps the library's order (insertion order is observable in reports).
            fresh = dict.fromkeys(lib_defs, (SHARED, uid))
            for key in taken:
                del fresh[key]
            weak_fresh = lib.weak_defs & fresh.keys() if lib.weak_defs else ()
            defs.update(fresh)
            for key in weak_fresh:
                defs[key] = (SHARED_WEAK, uid)
            filled = undef.keys() & fresh.keys() if undef else set()
            for key in filled:
                del undef[key]
            if weak_undef:
                for key in (weak_undef.keys() & fresh.keys()) - filled:
                    del weak_undef[key]
        strong, weak = self.shlib_keys(lib, uid)
        for key in strong:
            t.first_ref.setdefault(key, (uid, True))
            t.shared_refs.setdefault(key, []).append(uid)
            if key in defs or key in undef:
                continue
            weak_undef.pop(key, None)
            self.new_symbols += 1
            undef[key] = uid
        for key in weak:
            t.first_ref.setdefault(key, (uid, False))
            if not t.known(key):
                weak_undef[key] = uid
                self.new_symbols += 1

    def shlib_keys(self, lib: SharedFacts, uid: int) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """A library's (strong, weak) reference keys under this linker's rule for versioned
        references: bfd looks up `name@VER`, lld 14 ignores them, gold and mold use `name`."""
        found = self._shlib_keys.get(uid)
        if found is not None:
            return found
        rule = self.policy.versioned_shlib_refs
        versions = lib.undef_versions

        def key_of(name: str) -> str | None:
            ver = versions.get(name)
            if ver is None or rule == "plain":
                return name
            return None if rule == "ignore" else f"{name}@{ver}"

        strong = tuple(k for k in map(key_of, lib.undef) if k is not None)
        weak = tuple(k for k in map(key_of, lib.weak_undef) if k is not None)
        self._shlib_keys[uid] = (strong, weak)
        return strong, weak

    # ------------------------------------------------------------------ inputs
    def input_problem(self, inp: Input) -> None:
        """Missing, incompatible or unreadable inputs, reported the linker's way."""
        problem = inp.problem or LinkErrorKind.CORRUPT_INPUT
        if problem == LinkErrorKind.MISSING_INPUT:
            self.missing = True
            first_fatal = self.policy.missing_input == "first-fatal" and self.ctx.missing_fatal
            self.out.error(LinkErrorKind.MISSING_INPUT, None, None, detail=inp.detail or inp.spec,
                           fatal=first_fatal, input_seq=inp.seq)
            return
        fatal = self.policy.name == "bfd" and problem in _FATAL_PROBLEMS
        self.out.error(problem, None, None, detail=inp.detail or inp.spec, fatal=fatal,
                       input_seq=inp.seq)

    def after_inputs(self) -> None:
        """bfd and lld stop once every input was opened if one was missing."""
        if self.missing and self.ctx.missing_fatal and self.policy.missing_input in ("stop-after-open", "stop"):
            self.out.fatal = True

    # ------------------------------------------------------------------ final checks
    def report_objects(self) -> bool:
        """Whether undefined references from regular objects are errors for this output."""
        o = self.ctx.options
        if self.ctx.kind == "relocatable":
            return False
        if o.unresolved_symbols in ("ignore-all", "ignore-in-object-files"):
            return False
        return self.ctx.kind in ("exec", "pie") or o.no_undefined

    def check_shlibs(self) -> bool:
        """Whether undefined symbols of input libraries are errors for this output."""
        o = self.ctx.options
        if self.ctx.kind == "relocatable" or self.policy.shlib_check == "none":
            return False
        if o.unresolved_symbols in ("ignore-all", "ignore-in-shared-libs"):
            return False
        if o.allow_shlib_undefined is not None:
            return not o.allow_shlib_undefined
        return self.ctx.kind in ("exec", "pie")

    def provide_linker_symbols(self) -> None:
        """Symbols the linker defines (or PROVIDEs) stop being undefined; so do --defsym ones."""
        t = self.t
        script_lacks = EXECUTABLE_ONLY_FOR_BFD if self.policy.name == "bfd" and self.ctx.kind == "shared" else ()
        for key in [k for k in t.undef if (linker_defines(k) and k not in script_lacks)
                    or k in self.ctx.options.defsym]:
            del t.undef[key]
            t.defs.setdefault(key, (STRONG, -1))

    def undefined_errors(self, referrers_of: Mapping[str, list[int]] | None = None) -> None:
        """One error per (symbol, referencing object) still undefined."""
        self.provide_linker_symbols()
        if not self.report_objects():
            self.hidden_undefined_errors()
            return
        t = self.t
        source = referrers_of or (t.refs if self.policy.weak_referrers_reported else t.strong_refs)
        kind = LinkErrorKind.UNDEFINED_WARNING if self.ctx.options.warn_unresolved else LinkErrorKind.UNDEFINED_REFERENCE
        keys = list(t.undef)
        if self.policy.error_limit and len(keys) > self.policy.error_limit:
            keys.sort(key=lambda k: self.scan_position(k, source))  # which ones lld shows
        for key in keys:
            if not self.strongly_undefined(key):
                continue
            seen: set[int] = set()
            for uid in source.get(key, ()):
                if uid in self.dropped_groups and key in self.dead_refs(uid):
                    continue
                if uid not in seen:
                    seen.add(uid)
                    self.out.error(kind, key, uid)

    def scan_position(self, key: str, source: Mapping[str, list[int]]) -> tuple[int, int]:
        """Where lld's relocation scan first meets an undefined `key`: the first object (in
        link order) referring to it, and its place in that object's relocation order."""
        referrers = source.get(key) or [self.t.undef.get(key, 1 << 30)]
        uid = min(u for u in referrers if u >= 0) if any(u >= 0 for u in referrers) else 1 << 30
        if uid >= len(self.out.units):
            return (uid, 0)
        facts = self.out.units[uid].facts
        order = facts.undef_order if isinstance(facts, ObjectFacts) else ()
        return (uid, order.index(key) if key in order else len(order))

    def hidden_undefined_errors(self) -> None:
        """A shared object may leave symbols undefined (for the loader to find), but not
        one its referencing object declares hidden or internal: that must be in this output."""
        if self.ctx.kind != "shared" or self.ctx.options.unresolved_symbols in ("ignore-all", "ignore-in-object-files"):
            return
        t = self.t
        for key in list(t.undef):
            if not self.strongly_undefined(key):
                continue
            for uid in dict.fromkeys(t.strong_refs.get(key, ())):
                facts = self.out.units[uid].facts
                if isinstance(facts, ObjectFacts) and key in facts.hidden_undef:
                    self.out.error(LinkErrorKind.HIDDEN_UNDEFINED, key, uid)

    def shlib_errors(self, libs: list[int], eligible: set[int] | None = None) -> None:
        """Undefined symbols of input libraries (executables, unless allowed)."""
        if not self.check_shlibs():
            return
        t = self.t
        reported: set[str] = set()
        for uid in libs:
            if eligible is not None and uid not in eligible:
                continue
            lib = self.out.units[uid].facts
            assert isinstance(lib, SharedFacts)
            for key in self.shlib_keys(lib, uid)[0]:
                if key in t.defs or key in reported or not self.strongly_undefined(key):
                    continue
                if self.policy.binding_rule == "first-ref":
                    # gold: the symbol belongs to its first referrer, until a strong reference
                    # from a regular object takes it over.
                    if t.first_ref.get(key, (uid, True))[0] != uid or t.strong_refs.get(key):
                        continue
                elif self.policy.shlib_skip_regular and t.refs.get(key):
                    continue
                if self.policy.shlib_once_per_symbol:
                    reported.add(key)
                self.out.error(LinkErrorKind.SHLIB_UNDEFINED, key, uid)

    def binding_strong(self, key: str) -> bool:
        """Strongly referenced now, by the linker's rule for weak vs. strong references.

        bfd: any strong reference; lld: the regular references when there are any, else
        the first library reference (later library references never change the binding);
        gold: the first reference, made strong by a later strong regular reference.
        """
        t = self.t
        if key not in t.undef:
            return False
        rule = self.policy.binding_rule
        if rule == "regular":
            if t.refs.get(key):
                return bool(t.strong_refs.get(key))
            first = t.first_ref.get(key)
            return first is None or first[1]
        if rule == "first-ref":
            first = t.first_ref.get(key)
            return bool(t.strong_refs.get(key)) or (first is not None and first[1])
        return True

    def strongly_undefined(self, key: str) -> bool:
        """Undefined and not weak, by the linker's binding rule."""
        return self.binding_strong(key)

    def stop_after_duplicates(self) -> None:
        """lld and mold report nothing after "duplicate symbol" errors."""
        if self.policy.duplicates_stop and any(e.kind == LinkErrorKind.MULTIPLE_DEFINITION for e in self.out.errors):
            self.out.fatal = True

    def required_errors(self) -> None:
        """--require-defined symbols that nothing defines."""
        for key in self.ctx.options.require_defined:
            if key not in self.t.defs:
                self.out.error(LinkErrorKind.REQUIRED_UNDEFINED, key, None)

    def soname_of(self, uid: int) -> str:
        """SONAME of a library unit (its file name when it has none)."""
        lib = self.out.units[uid].facts
        assert isinstance(lib, SharedFacts)
        return lib.soname or os.path.basename(lib.path)

    def needed_known(self, uid: int, sonames: set[str]) -> bool:
        """True when every DT_NEEDED of the library is among the link's libraries."""
        lib = self.out.units[uid].facts
        assert isinstance(lib, SharedFacts)
        return all(n in sonames for n in lib.needed)
