"""From raw findings to explained errors: who references what, where a definition exists,
why it did not count, and what is almost the symbol wanted."""

from __future__ import annotations

import os
import re

from ldscope.cxx import demangle, demangle_like_linkers
from ldscope.explain._build_tree import is_system_dir
from ldscope.explain._link_lookup import Candidate, Lookup
from ldscope.explain._link_nearmiss import Source, cxx_near_misses, version_near_misses
from ldscope.explain._link_pic import pic_explanation
from ldscope.explain._link_results import Definition, DefinitionStatus, LinkError
from ldscope.linker import Simulation, explain_branch, word
from ldscope.linker.engines import RawError, Unit
from ldscope.linker.inputs import ArchiveFacts, Input, ObjectFacts, SharedFacts
from ldscope.vocab import LinkErrorKind, NearMiss

_SYMBOL_KINDS = (LinkErrorKind.UNDEFINED_REFERENCE, LinkErrorKind.UNDEFINED_WARNING, LinkErrorKind.SHLIB_UNDEFINED, LinkErrorKind.DSO_MISSING,
                 LinkErrorKind.REQUIRED_UNDEFINED)


_PROGRAM_ENTRY_SYMBOLS = frozenset(("main", "WinMain", "wmain"))
# The start files a driver adds (crt1.o, Scrt1.o, crti.o, crtbeginS.o, crtend.o, ...).
_TOOLCHAIN_OBJECT = re.compile(r"^(?:[SMgr]?|gr)crt[1in]\.o$|^crt(?:begin|end|fastmath|offload)\w*\.o$")


def _class_data_of(key: str) -> tuple[str, str] | None:
    """("vtable" | "typeinfo" | "VTT", class) for `_ZTV`/`_ZTI`/`_ZTT` symbols, else None."""
    what = {"_ZTV": "vtable", "_ZTI": "typeinfo", "_ZTT": "VTT"}.get(key[:4])
    if what is None:
        return None
    shown = demangle(key) or ""
    for prefix in ("vtable for ", "typeinfo for ", "VTT for "):
        if shown.startswith(prefix):
            return what, shown[len(prefix):]
    return None


def last_own_object(sim: Simulation) -> int | None:
    """The argument index of the line's last object file of its own (not a start file the
    driver adds from the toolchain), or None."""
    found = None
    for i in sim.resolved.inputs:
        if (isinstance(i.facts, ObjectFacts) and i.path and i.position >= 0
                and not _TOOLCHAIN_OBJECT.match(os.path.basename(i.path))
                and not is_system_dir(os.path.dirname(os.path.join(sim.line.cwd, i.path)))):
            found = i.position if found is None else max(found, i.position)
    return found


def _is_start_file(display: str) -> bool:
    """crt1.o, Scrt1.o, rcrt1.o, gcrt1.o, grcrt1.o: what calls main."""
    return os.path.basename(display).endswith("crt1.o")


class LinkExplainer:
    """Explains the errors of one simulation."""

    def __init__(self, sim: Simulation, lookup: Lookup | None = None, search: bool = True) -> None:
        self.sim = sim
        self.lookup = lookup or Lookup(sim)
        self.search = search
        self.inputs = {i.seq: i for i in sim.resolved.inputs}
        self.label = sim.policy.label
        self._sources: list[Source] | None = None

    # ------------------------------------------------------------------ helpers
    def arg(self, pos: int | None) -> str:
        """`-lc (argument 29)` for an argv index."""
        if pos is None or pos < 0 or pos >= len(self.sim.line.argv):
            return "(not on the line)"
        return f"{self.sim.line.argv[pos]} (argument {pos})"

    def place(self, u: Unit | None) -> str:
        """`a.o (argument 5)` or `libx.a(m.o) (-lx (argument 7))`."""
        if u is None:
            return "the link"
        if u.position < 0:
            return u.display + (f" (DT_NEEDED of {u.dt_needed_by})" if u.dt_needed_by else "")
        if self.sim.line.argv[u.position] == u.display:
            return f"{u.display} (argument {u.position})"
        return f"{u.display} ({self.arg(u.position)})"

    def unit(self, uid: int | None) -> Unit | None:
        """Unit by id (None for linker-made ones)."""
        if uid is None or uid < 0:
            return None
        return self.sim.outcome.units[uid]

    def shown_symbol(self, key: str, lib_uid: int | None = None) -> str:
        """`name@@VER` when the defining library versions it."""
        u = self.unit(lib_uid)
        if u is not None and isinstance(u.facts, SharedFacts):
            return u.facts.shown(key)
        return key

    def sources(self) -> list[Source]:
        """Everything that could hold a near-miss: inputs, DT_NEEDED libraries, search path."""
        if self._sources is None:
            found: list[Source] = []
            for inp in self.sim.resolved.inputs:
                if isinstance(inp.facts, (SharedFacts, ArchiveFacts)):
                    found.append((inp.display, inp.facts))
            for u in self.sim.outcome.units:
                if not u.is_shared and u.member is None:
                    found.append((u.display, u.facts))
            for path, facts, _by, _pos in self.lookup.needed_libraries():
                found.append((path, facts))
            self._sources = found
        return self._sources

    # ------------------------------------------------------------------ errors
    def explain(self) -> tuple[LinkError, ...]:
        """All errors, explained, in the order found."""
        return tuple(self.one(e) for e in self.sim.outcome.errors)

    def one(self, e: RawError) -> LinkError:
        """One error."""
        sim = self.sim
        ref = self.unit(e.uid)
        other = self.unit(e.other)
        key = e.key
        versioned = self.shown_symbol(key, e.other) if key and e.kind == LinkErrorKind.DSO_MISSING else key
        dem = demangle(key.split("@", 1)[0]) if key else None
        shown_sym = versioned or ""
        if dem and e.kind != LinkErrorKind.DSO_MISSING and key:
            # The message as the linker prints it: its demangling (std::istream, not c++filt's
            # std::basic_istream<char, ...>).
            shown_sym = (demangle_like_linkers(key.split("@", 1)[0]) or dem) + key[len(key.split("@", 1)[0]):]
        ref_name = ref.display if ref is not None else None
        other_name = other.display if other is not None else None
        detail = e.detail
        if e.kind == LinkErrorKind.MISSING_INPUT and e.input_seq in self.inputs:
            detail = self.inputs[e.input_seq].detail or detail
        message = word(sim.policy.name, sim.line.message_program(sim.policy.name), e.kind, shown_sym, ref_name,
                       other_name, detail, sim.environment.variables)
        defs: tuple[Definition, ...] = ()
        misses: tuple[NearMiss, ...] = ()
        explanation = ""
        if key and e.kind in _SYMBOL_KINDS:
            defs = self.definitions(key, ref)
            if not any(d.status in (DefinitionStatus.BEFORE_REFERRER, DefinitionStatus.DROPPED_AS_NEEDED, DefinitionStatus.DT_NEEDED_ONLY)
                       for d in defs) and _class_data_of(key) is None:
                misses = self.near_misses(key)
            explanation = self.explain_symbol(e, key, ref, other, defs, misses)
        elif e.kind == LinkErrorKind.MULTIPLE_DEFINITION and key:
            defs, explanation = self.explain_duplicate(key, ref, other)
        else:
            explanation = self.explain_input(e)
        pos = ref.position if ref is not None and ref.position >= 0 else None
        if pos is None and e.input_seq in self.inputs:
            pos = self.inputs[e.input_seq].position
        return LinkError(e.kind, key, dem, versioned if versioned != key else None, ref_name, pos,
                         defs, message, explanation, misses, e.shown, other_name)

    def near_misses(self, key: str) -> tuple[NearMiss, ...]:
        """C++ signature/ABI near-misses (anywhere) and other versions of the name (in the
        libraries of the link and their DT_NEEDED)."""
        out: tuple[NearMiss, ...] = ()
        if key.startswith("_Z"):
            search = self.lookup.search_libraries() if self.search else []
            out = cxx_near_misses(key, [*self.sources(), *search])
        near = [(w, f) for w, f in self.sources() if isinstance(f, SharedFacts)][:64]
        return out + version_near_misses(key, near)

    # ------------------------------------------------------------------ definitions
    def definitions(self, key: str, ref: Unit | None) -> tuple[Definition, ...]:
        """Where `key` is defined on the line (and why that did not count), and elsewhere."""
        sim = self.sim
        o = sim.outcome
        ref_pos = ref.position if ref is not None and ref.position >= 0 else None
        weak_only = bool(o.table.refs.get(key)) and not o.table.strong_refs.get(key)
        out: list[Definition] = []
        for inp in sim.resolved.inputs:
            f = inp.facts
            if isinstance(f, ArchiveFacts):
                for m in self.members_defining(f, key):
                    out.append(self.archive_definition(inp, f, m, key, ref_pos, weak_only))
            elif isinstance(f, SharedFacts) and key in f.defs:
                out.append(self.library_definition(inp, f, key, ref_pos))
        explained = any(d.status in (DefinitionStatus.BEFORE_REFERRER, DefinitionStatus.DROPPED_AS_NEEDED, DefinitionStatus.WEAK_REFERENCE) for d in out)
        # A program's `main` comes from the program's own objects: a library on the search path
        # that happens to define one (libncurses++.a) is never the fix.
        entry = key in _PROGRAM_ENTRY_SYMBOLS
        search = self.search and not explained and not entry
        # The build tree only when nothing on the line defines it at all (its libraries are a
        # guess from where the link lives, not from anything the line names).
        tree = self.search and not out
        for cand in self.lookup.where(key, search=search, tree=tree):
            if cand.how == "build-tree" and entry and not (self.has_own_objects()
                                                            and self.beside_line_library(cand.path)):
                continue
            out.append(self.candidate_definition(cand))
        return tuple(out)

    def has_own_objects(self) -> bool:
        """True if the line links an object file of its own (not the toolchain's start files):
        a program with no objects left lacks them, not a library's `main`."""
        return last_own_object(self.sim) is not None

    def beside_line_library(self, path: str) -> bool:
        """True if `path` is in the directory of a library the line already links: a project's
        own `main` library (libgtest_main.a beside the line's lib/libgtest.a) is part of the
        set it links against; one elsewhere in the tree defining `main` is only a program's."""
        here = os.path.dirname(os.path.realpath(self.lookup.abs(path)))
        return any(os.path.dirname(os.path.realpath(self.lookup.abs(i.path))) == here
                   for i in self.sim.resolved.inputs
                   if i.path and isinstance(i.facts, (SharedFacts, ArchiveFacts)))

    def members_defining(self, f: ArchiveFacts, key: str) -> list[int]:
        """Members an archive says define `key`."""
        if f.has_gnu_index:
            return [m for s, m in f.index_entries if s == key]
        return list(f.lazy_symbols().get(key, []))

    def archive_definition(self, inp: Input, f: ArchiveFacts, m: int, key: str,
                           ref_pos: int | None, weak_only: bool) -> Definition:
        """An archive member defining the symbol: extracted or why not."""
        where = f"{inp.display}({f.member_names[m]})"
        o = self.sim.outcome
        if (inp.seq, m) in o.extracted:
            return Definition(where, inp.position, DefinitionStatus.EXTRACTED, f"{where} is in the link")
        if weak_only:
            return Definition(where, inp.position, DefinitionStatus.WEAK_REFERENCE,
                              f"{where} defines it, but every reference is weak, and a weak "
                              "reference never extracts an archive member")
        if self.sim.policy.ordered and ref_pos is not None and inp.position <= ref_pos:
            return Definition(where, inp.position, DefinitionStatus.BEFORE_REFERRER,
                              f"{where} defines it, but {self.arg(inp.position)} comes before the "
                              f"reference (argument {ref_pos}); {self.label} scans archives once, "
                              "left to right, and does not go back")
        if not f.has_gnu_index and self.sim.policy.name == "bfd":
            return Definition(where, inp.position, DefinitionStatus.ARCHIVE_NO_INDEX,
                              f"{where} defines it, but {inp.display} has no symbol index")
        return Definition(where, inp.position, DefinitionStatus.NOT_EXTRACTED,
                          f"{where} defines it but was not extracted")

    def library_definition(self, inp: Input, f: SharedFacts, key: str, ref_pos: int | None) -> Definition:
        """A shared library on the line defining the symbol."""
        o = self.sim.outcome
        if inp in o.dropped_libs:
            later = f" (the reference comes later, argument {ref_pos})" if ref_pos and ref_pos > inp.position else ""
            return Definition(inp.display, inp.position, DefinitionStatus.DROPPED_AS_NEEDED,
                              f"{inp.display} at {self.arg(inp.position)} defines {f.shown(key)} but "
                              f"was --as-needed and nothing needed it when the link reached it{later}; "
                              f"{self.label} does not come back to it")
        return Definition(inp.display, inp.position, DefinitionStatus.ON_LINE, f"{inp.display} defines {f.shown(key)}")

    def candidate_definition(self, c: Candidate) -> Definition:
        """A library outside the resolution."""
        if c.how == "dt-needed":
            return Definition(c.path, None, DefinitionStatus.DT_NEEDED_ONLY,
                              f"{c.path} defines {c.shown}, but the link reaches it only as a "
                              f"DT_NEEDED entry of {c.via} ({self.arg(c.via_position)})")
        if c.how == "build-tree":
            return Definition(c.path, None, DefinitionStatus.BUILD_TREE,
                              f"{c.path} in the build tree defines {c.shown}; it is in no search directory "
                              f"and not on the line (add it by that path)")
        if os.path.basename(c.path) == "libc.a" and any(u.is_shared for u in self.sim.outcome.units):
            # glibc's static libc.a defines its internals for static programs only; mixed into a
            # dynamic link gold and mold refuse it (fixes/_link.py offers no -lc for it either).
            return Definition(c.path, None, DefinitionStatus.SEARCH_PATH,
                              f"{c.path} on the search path defines {c.shown}, but for static programs "
                              "only: a dynamic link does not take glibc's libc.a (link the library that "
                              "refers to it dynamically, or the whole program -static)")
        return Definition(c.path, None, DefinitionStatus.SEARCH_PATH,
                          f"{c.path} on the search path defines {c.shown}; it is not on the line "
                          f"(add {c.via})")

    # ------------------------------------------------------------------ text
    def explain_symbol(self, e: RawError, key: str, ref: Unit | None, other: Unit | None,
                       defs: tuple[Definition, ...], misses: tuple[NearMiss, ...]) -> str:
        """Why the symbol did not resolve."""
        name = self.shown_symbol(key, e.other)
        if e.kind != LinkErrorKind.DSO_MISSING:
            dem = demangle(key.split("@", 1)[0])
            name = f"`{dem}' ({key})" if dem else key
        where = self.place(ref)
        if e.kind == LinkErrorKind.DSO_MISSING and other is not None:
            return self.explain_dso_missing(name, ref, other)
        if e.kind == LinkErrorKind.SHLIB_UNDEFINED:
            text = f"{where} needs {name}, and nothing in the link defines it"
            if self.sim.kind in ("exec", "pie"):
                text += " (executables are linked with --no-allow-shlib-undefined by default)"
        elif e.kind == LinkErrorKind.REQUIRED_UNDEFINED:
            text = f"--require-defined={key}: nothing in the link defines it"
        elif _class_data_of(key) is not None and not defs:
            text = self.explain_key_function(key, where)
        elif key in _PROGRAM_ENTRY_SYMBOLS and ref is not None and _is_start_file(ref.display):
            text = (f"the program has no `{key}': {where} (the C start-up file) calls it, and no object "
                    "on the line defines it. Add the object or source that defines main, or link with "
                    "-shared if this is meant to be a library")
        else:
            text = f"{name} is referenced by {where} and defined nowhere in the link"
        reasons = [d.detail for d in defs if d.status != DefinitionStatus.EXTRACTED]
        if reasons:
            text += ". " + ". ".join(reasons)
        if misses:
            text += ". Near: " + "; ".join(f"{m.file}: {m.demangled or m.symbol} ({m.kind})" for m in misses[:2])
        return text

    def explain_key_function(self, key: str, where: str) -> str:
        """An undefined vtable/typeinfo: the Itanium C++ ABI emits them with the class's key
        function (its first virtual member function that is neither inline nor pure), so
        the usual cause is that function declared and never defined."""
        what, cls = _class_data_of(key) or ("vtable", "?")
        prefix = cls + "::"
        undefined_members = [k for k in self.sim.outcome.table.undef if k.startswith("_Z")
                             and (demangle(k) or "").startswith(prefix)]
        members = [demangle(k) or k for k in undefined_members]
        text = (f"the {what} for {cls} is referenced by {where} and defined nowhere: a compiler emits it "
                f"only with {cls}'s key function (its first virtual member function that is neither "
                "inline nor pure virtual), so that function is declared but never defined, or the object "
                "defining it is not on the line")
        if members:
            text += (f". {cls}'s members referenced and defined nowhere: {', '.join(members[:4])}; the key "
                     f"function is likely {members[0]}")
        return text

    def explain_dso_missing(self, name: str, ref: Unit | None, lib: Unit) -> str:
        """GNU ld's "DSO missing from command line", with the positions that matter."""
        by = lib.dt_needed_by or "another library"
        by_pos = [u.position for u in self.sim.outcome.units if u.display == by and u.position >= 0]
        ref_pos = ref.position if ref is not None else -1
        text = (f"{name} is defined only in {lib.display}, which the link reaches only through "
                f"the DT_NEEDED entry of {by}")
        if by_pos:
            last = max(by_pos)
            text += f" ({self.arg(last)})"
            if ref_pos > last:
                text += (f"; the reference comes from {ref.display if ref else '?'} at argument "
                         f"{ref_pos}, after the last {self.sim.line.argv[last]} (argument {last})")
            elif ref is not None:
                text += f"; the reference comes from {self.place(ref)}"
        text += (". GNU ld does not let a regular object use a library that is not on the command "
                 "line (DSO missing from command line); --copy-dt-needed-entries only governs "
                 "libraries after it")
        return text

    def explain_duplicate(self, key: str, ref: Unit | None, other: Unit | None) -> tuple[tuple[Definition, ...], str]:
        """Two strong definitions, and why each is in the link."""
        defs: list[Definition] = []
        parts: list[str] = []
        for u in (other, ref):
            if u is None:
                continue
            why = self.why_in_link(u)
            defs.append(Definition(u.display, u.position if u.position >= 0 else None, DefinitionStatus.EXTRACTED, why))
            parts.append(f"{self.place(u)}{': ' + why if why else ''}")
        return tuple(defs), f"{key} is defined strongly twice: " + "; ".join(parts)

    def why_in_link(self, u: Unit) -> str:
        """For an archive member: which reference extracted it."""
        for step in self.sim.outcome.trace:
            if step.action == "extract" and step.target == u.display:
                if step.symbol is None:
                    return "included by --whole-archive"
                return f"extracted to satisfy `{step.symbol}' referenced by {step.by or '?'}"
        return "on the line"

    def culprit(self, e: RawError) -> str:
        """The input an error is about, as the linker names it."""
        return self.sim.outcome.units[e.uid].display if e.uid is not None else "an object"

    def explain_input(self, e: RawError) -> str:
        """Missing or unusable inputs."""
        inp = self.inputs.get(e.input_seq) if e.input_seq is not None else None
        if e.kind == LinkErrorKind.MISSING_INPUT and inp is not None:
            tried = ", ".join(inp.tried[:12]) + (" ..." if len(inp.tried) > 12 else "")
            return (f"{inp.spec} at argument {inp.position} was not found"
                    + (f"; tried {tried}" if tried else "")
                    + ". The simulation continues without it (the verdict is partial)")
        if e.kind == LinkErrorKind.UNKNOWN_OPTION:
            return f"{self.label} does not accept {e.detail}"
        if e.kind in (LinkErrorKind.BRANCH_OUT_OF_RANGE, LinkErrorKind.RELOCATION_OVERFLOW):
            laid_out = explain_branch(self.sim.outcome, self.sim.policy, self.sim.kind, self.sim.parsed.options,
                                      e.uid, e.key)
            if laid_out is not None:
                return laid_out
        if e.kind == LinkErrorKind.BRANCH_OUT_OF_RANGE:
            return (f"an AArch64 B/BL reaches ±128 MiB; this one targets {e.key} further away inside the "
                    "same input section, where no linker can place a veneer (between sections bfd, gold, "
                    "lld and mold all insert one). lld links it (a thunk); bfd and gold fail; mold 1.10 "
                    "links it but writes a wrong branch (measured), and crashes when the section is alone in its "
                    "output section. Split the code into more sections (-ffunction-sections), shrink it (an "
                    "optimised build), or use -mcmodel=large")
        if e.kind == LinkErrorKind.HIDDEN_UNDEFINED:
            who = self.culprit(e)
            return (f"{who} declares {e.key} with hidden visibility, so it must be defined inside this "
                    "shared object (a shared library may leave only default-visibility symbols for the "
                    "loader); nothing on the line defines it: add the object that does, or make the "
                    "declaration default visibility")
        if e.kind == LinkErrorKind.NON_PIC_RELOCATION:
            who = self.culprit(e)
            return (f"{who} was compiled without -fPIC (an absolute 32-bit address of {e.key}); a shared "
                    "object or PIE cannot hold it: recompile that object (its archive) with -fPIC, or link "
                    "an executable with -no-pie")
        if e.kind in (LinkErrorKind.TEXT_RELOCATION, LinkErrorKind.TEXTREL_WARNING, LinkErrorKind.NON_PIC_CODE):
            return pic_explanation(e.kind, self.culprit(e), e.key, self.label)
        if e.kind == LinkErrorKind.UNDEFINED_VERSION:
            return (f"the version script assigns {e.key} to version {e.detail}, but no object in the link "
                    f"defines {e.key}; with --no-undefined-version {self.label} refuses that: define it, "
                    "remove it from the script, or drop --no-undefined-version (mold only warns)")
        if e.kind == LinkErrorKind.STATIC_DYNAMIC_OBJECT:
            where = "in a -static link" if self.sim.parsed.options.static else "after -Bstatic"
            return (f"{e.detail} is a shared library, given {where}, where {self.label} takes only "
                    "archives: link its static archive (libNAME.a) instead, or drop -static/-Bstatic "
                    "for it (mold links it anyway)")
        if e.kind == LinkErrorKind.ARCHIVE_NO_INDEX:
            return f"{e.detail} has no symbol index; run ranlib (or ar s) on it"
        return e.detail or e.kind

