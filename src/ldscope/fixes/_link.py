"""Candidate fixes, each verified by simulating the edited line with the same linker.

For every error the candidates follow from why it happened: an archive passed before the
reference is repeated, moved or grouped; an --as-needed library dropped too early is moved
or kept; a library reached only through DT_NEEDED (or found on the search path, or by its
path in the link's own build tree, after the last of its users) is added;
for "DSO missing" the library whose DT_NEEDED names it is repeated after the reference,
the needed library is added, and --copy-dt-needed-entries is tried where it takes effect
and where it does not. Candidates that do not fix the link alone are tried together.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, replace

from ldscope.explain import Definition, DefinitionStatus, LinkError, last_own_object
from ldscope.fixes._results import Edit, Fix
from ldscope.fixes._user_words import user_fix
from ldscope.linker import Simulation, simulate_argv
from ldscope.linker.inputs import library_flag
from ldscope.vocab import LinkErrorKind

_TWO_WORD = frozenset(("-l", "-L", "-T", "-o", "-u", "-e", "-z", "-m", "-R", "-h", "-y", "-Y",
                       "--library", "--library-path", "--script", "-rpath", "--rpath",
                       "-rpath-link", "--rpath-link"))
MAX_CANDIDATES = 24


@dataclass(frozen=True, slots=True)
class Candidate:
    """An edit to try, the errors it aims at, and why it may not work."""

    description: str
    edits: tuple[Edit, ...]
    target: int  # index of the error it addresses
    caveat: str = ""


def arg_end(argv: tuple[str, ...], pos: int) -> int:
    """Index just after the argument at `pos` (two words for `-l foo`)."""
    if 0 <= pos < len(argv) and argv[pos] in _TWO_WORD:
        return min(pos + 2, len(argv))
    return min(pos + 1, len(argv))


def apply_edits(argv: tuple[str, ...], edits: tuple[Edit, ...]) -> tuple[str, ...]:
    """The argv after the edits (applied from the highest index down, so indices hold)."""
    words = list(argv)
    order = sorted(edits, key=lambda e: (e.at, 1 if e.op == "remove" else 0), reverse=True)
    for e in order:
        if e.op == "insert":
            words[e.at:e.at] = list(e.args)
        elif e.op == "remove":
            del words[e.at:e.at + e.count]
    return tuple(words)


def candidates(sim: Simulation, errors: tuple[LinkError, ...]) -> list[Candidate]:
    """Candidate edits for the errors (bounded), in the order the errors came."""
    out: list[Candidate] = []
    seen: set[tuple[Edit, ...]] = set()
    fatal_shown = any(x.shown for x in errors if x.kind != LinkErrorKind.MISSING_INPUT)
    considered = [(i, e) for i, e in enumerate(errors) if e.shown or not fatal_shown]
    # Every error places a build-tree library, shown or not: lld stops printing after
    # --error-limit, yet the references it leaves unsaid (libgtest_main.a's) need it too.
    tree_at = _build_tree_positions(sim.line.argv, list(errors), last_own_object(sim))
    for i, e in considered:
        _add(out, seen, _for_error(sim, e, i, tree_at))
    for i, e in enumerate(errors):
        if e.kind == LinkErrorKind.MULTIPLE_DEFINITION and e.shown:
            _add(out, seen, _second_copy(sim, e, i))
    duplicate = next((i for i, e in enumerate(errors) if e.kind == LinkErrorKind.MULTIPLE_DEFINITION and e.shown), None)
    if duplicate is not None:
        _add(out, seen, [Candidate("--allow-multiple-definition (keeps the first definition; a workaround)",
                                   (Edit("insert", 1, ("--allow-multiple-definition",)),), duplicate,
                                   "a workaround, not a fix")])
    return out


def _second_copy(sim: Simulation, e: LinkError, i: int) -> list[Candidate]:
    """A duplicate definition because the same file is on the line twice: remove the
    second copy (the one the linker complains about)."""
    argv = sim.line.argv
    p = e.argument_index
    first = next((u.position for u in sim.outcome.units if u.display == e.other and u.member is None), None)
    if p is None or first is None or first < 0 or first == p or not (0 <= p < len(argv)):
        return []

    def same(a: int, b: int) -> bool:
        try:
            return os.path.samefile(os.path.join(sim.line.cwd, argv[a]), os.path.join(sim.line.cwd, argv[b]))
        except OSError:
            return False

    if not same(first, p):
        return []
    second = max(first, p)
    return [Candidate(f"remove the second copy of {argv[second]} (argument {second}; the first is "
                      f"argument {min(first, p)})", (Edit("remove", second, (), 1),), i)]


def _add(out: list[Candidate], seen: set[tuple[Edit, ...]], found: list[Candidate]) -> None:
    for c in found:
        if c.edits not in seen and len(out) < MAX_CANDIDATES:
            seen.add(c.edits)
            out.append(c)


def _build_tree_positions(argv: tuple[str, ...], errors: list[LinkError],
                          last_object: int | None) -> dict[str, tuple[int, int | None]]:
    """For each build-tree library some error's symbol is defined in: where to insert it (just
    after the last of the references it resolves, so bfd and gold have seen every user when they
    reach it, and never before the line's own objects: `main`'s user is the start file, yet a
    main library goes after the objects, where a build writes it) and the argument it follows."""
    floor = (arg_end(argv, last_object), last_object) if last_object is not None else (-1, None)
    found: dict[str, tuple[int, int | None]] = {}
    for e in errors:
        if e.kind not in (LinkErrorKind.UNDEFINED_REFERENCE, LinkErrorKind.SHLIB_UNDEFINED):
            continue
        p = e.argument_index
        after = arg_end(argv, p) if p is not None else len(argv)
        for d in e.defined_in:
            if d.status == DefinitionStatus.BUILD_TREE:
                found[d.where] = max(found.get(d.where, floor), (after, p), key=lambda x: x[0])
    return found


def _for_error(sim: Simulation, e: LinkError, i: int,
               tree_at: dict[str, tuple[int, int | None]]) -> list[Candidate]:
    """The candidates that follow from why error `i` happened."""
    argv = sim.line.argv
    p = e.argument_index
    after = arg_end(argv, p) if p is not None else len(argv)
    if e.kind == LinkErrorKind.DSO_MISSING:
        return _dso_missing(sim, e, i, after)
    if e.kind == LinkErrorKind.MISSING_INPUT:
        return _versioned_only(sim, e, i, p) if p is not None else []
    if e.kind == LinkErrorKind.TEXT_RELOCATION:
        return [_allow_text_relocations(argv, i)]
    if e.kind not in (LinkErrorKind.UNDEFINED_REFERENCE, LinkErrorKind.SHLIB_UNDEFINED):
        return []
    dynamic = any(u.is_shared for u in sim.outcome.units)
    out = [c for d in e.defined_in if not (dynamic and _static_libc(d))
           for c in _for_definition(argv, d, i, p, after, tree_at)]
    if e.kind == LinkErrorKind.SHLIB_UNDEFINED:
        out.append(Candidate("--allow-shlib-undefined (only hides the problem: the program may fail to load)",
                             (Edit("insert", 1, ("--allow-shlib-undefined",)),), i, "a workaround, not a fix"))
    return out


def _for_definition(argv: tuple[str, ...], d: Definition, i: int, p: int | None, after: int,
                    tree_at: dict[str, tuple[int, int | None]]) -> list[Candidate]:
    """Edits that would let the reference at `p` reach definition `d`, by why it did not."""
    a = d.argument_index
    if d.status == DefinitionStatus.BEFORE_REFERRER and a is not None and p is not None:
        words = argv[a:arg_end(argv, a)]
        return [Candidate(f"repeat {' '.join(words)} after {argv[p]} (argument {p})", (Edit("insert", after, words),), i),
                Candidate(f"move {' '.join(words)} (argument {a}) after {argv[p]} (argument {p})",
                          (Edit("remove", a, (), len(words)), Edit("insert", after, words)), i),
                Candidate(f"wrap arguments {a}..{p} in --start-group/--end-group",
                          (Edit("insert", a, ("--start-group",)), Edit("insert", after, ("--end-group",))), i)]
    if d.status == DefinitionStatus.DROPPED_AS_NEEDED and a is not None:
        words = argv[a:arg_end(argv, a)]
        out = []
        if p is not None and p > a:
            out.append(Candidate(f"move {' '.join(words)} (argument {a}) after {argv[p]} (argument {p})",
                                 (Edit("remove", a, (), len(words)), Edit("insert", after, words)), i))
        out.append(Candidate(f"keep {' '.join(words)} with --no-as-needed",
                             (Edit("insert", a, ("--push-state", "--no-as-needed")),
                              Edit("insert", arg_end(argv, a), ("--pop-state",))), i))
        return out
    if d.status == DefinitionStatus.DT_NEEDED_ONLY:
        return [Candidate(f"add {d.where} after {_at(argv, p)}", (Edit("insert", after, (d.where,)),), i)]
    if d.status == DefinitionStatus.SEARCH_PATH:
        flag = library_flag(d.where)
        return [Candidate(f"add {flag} after {_at(argv, p)} ({d.where})", (Edit("insert", after, (flag,)),), i)]
    if d.status == DefinitionStatus.BUILD_TREE:
        at, last = tree_at.get(d.where, (after, p))
        return [Candidate(f"add {d.where} after {_at(argv, last)} (found in the build tree, in no search "
                          "directory)", (Edit("insert", at, (d.where,)),), i)]
    return []


def _static_libc(d: Definition) -> bool:
    """glibc's static libc.a: never a fix for a dynamic link. Its members refer to libc's
    internals with hidden visibility, which libc.so.6 also defines; gold refuses the mix ("hidden
    symbol '__call_tls_dtors' is not defined locally") and mold too ("undefined symbol: __read"),
    even where bfd and lld link it (zstd's paramgrill with `-Wl,-Bstatic -lm`, the real-project
    corpus)."""
    return d.status == DefinitionStatus.SEARCH_PATH and os.path.basename(d.where) == "libc.a"


def _allow_text_relocations(argv: tuple[str, ...], i: int) -> Candidate:
    """-z notext at the end (the last of -z text/-z notext wins in all four linkers); the
    real fix, recompiling with -fPIC, is not an edit of the line."""
    return Candidate("-z notext (accepts the text relocations; recompiling the object with -fPIC is the fix)",
                     (Edit("insert", len(argv), ("-z", "notext")),), i,
                     "a workaround, not a fix: the output keeps text relocations (DT_TEXTREL)")


def _versioned_only(sim: Simulation, e: LinkError, i: int, p: int) -> list[Candidate]:
    """-lfoo not found, but libfoo.so.N is there (no development symlink): use -l:."""
    argv = sim.line.argv
    words = argv[p:arg_end(argv, p)]
    joined = "".join(words)
    if not joined.startswith("-l") or joined.startswith("-l:"):
        return []
    name = joined[2:]
    out: list[Candidate] = []
    for d in dict.fromkeys(sim.resolved.search_dirs):
        try:
            found = sorted(f for f in os.listdir(os.path.join(sim.line.cwd, d))
                           if f.startswith(f"lib{name}.so."))
        except OSError:
            continue
        for f in found[:2]:
            out.append(Candidate(f"use -l:{f} instead of {joined} ({d} has {f} but no lib{name}.so)",
                                 (Edit("remove", p, (), len(words)), Edit("insert", p, (f"-l:{f}",))), i))
        if out:
            break
    return out


def _at(argv: tuple[str, ...], p: int | None) -> str:
    return f"{argv[p]} (argument {p})" if p is not None and 0 <= p < len(argv) else "the end"


def _dso_missing(sim: Simulation, e: LinkError, i: int, after: int) -> list[Candidate]:
    """DSO missing: repeat the library that needs it, add it, or copy DT_NEEDED entries."""
    argv = sim.line.argv
    out: list[Candidate] = []
    lib = next((u for u in sim.outcome.units if u.display == e.other), None)
    by = lib.dt_needed_by if lib is not None else None
    positions = sorted({u.position for u in sim.outcome.units if u.display == by and u.position >= 0})
    p = e.argument_index
    if positions:
        k = positions[-1]
        words = argv[k:arg_end(argv, k)]
        out.append(Candidate(f"repeat {' '.join(words)} after {_at(argv, p)}",
                             (Edit("insert", after, words),), i))
        out.append(Candidate(f"--copy-dt-needed-entries before {' '.join(words)} (argument {k})",
                             (Edit("insert", k, ("--copy-dt-needed-entries",)),), i))
        if p is not None and p > k:
            out.append(Candidate(
                f"--copy-dt-needed-entries before {_at(argv, p)}", (Edit("insert", p, ("--copy-dt-needed-entries",)),),
                i, f"`--copy-dt-needed-entries` here follows the {' '.join(words)} (argument {k}) it "
                   "would need to govern: it only affects libraries after it"))
    if e.other:
        out.append(Candidate(f"add {e.other} after {_at(argv, p)}", (Edit("insert", after, (e.other,)),), i))
    return out


def evaluate(sim: Simulation, errors: tuple[LinkError, ...]) -> tuple[Fix, ...]:
    """Simulate every candidate alone, then the non-fixing ones together."""
    cands = candidates(sim, errors)
    if not cands:
        return ()
    argv = sim.line.argv
    results: list[tuple[Candidate, Simulation]] = []
    for c in cands:
        results.append((c, simulate_argv(sim.line, apply_edits(argv, c.edits), sim.policy.name,
                                           sim.environment)))
    combo_ids: set[int] = set()
    combo_fix: Fix | None = None
    if not any(s.links for _, s in results):
        picks: dict[int, int] = {}
        for n, (c, s) in enumerate(results):
            if c.caveat or c.target in picks:
                continue
            if _still_has(s, errors[c.target]) is False:
                picks[c.target] = n
        if len(picks) > 1:
            edits = tuple(e for n in picks.values() for e in results[n][0].edits)
            combined = simulate_argv(sim.line, apply_edits(argv, edits), sim.policy.name, sim.environment)
            if combined.links:
                combo_ids = set(picks.values())
                combo_fix = Fix(f"fix{len(cands) + 1}", "together: " + "; ".join(
                    results[n][0].description for n in picks.values()), edits,
                    apply_edits(argv, edits), True, True, 0, "the combination links")
    fixes: list[Fix] = []
    for n, (c, s) in enumerate(results):
        remaining = sum(1 for x in s.outcome.errors if not x.kind.is_warning)
        if s.links:
            reason = c.caveat or "links"
        elif c.caveat:
            reason = c.caveat
        elif _still_has(s, errors[c.target]):
            reason = "does not fix it: the same error remains"
        else:
            reason = f"fixes that error, but {remaining} error(s) remain"
        fixes.append(Fix(f"fix{n + 1}", c.description, c.edits, apply_edits(argv, c.edits), s.links,
                         n in combo_ids, remaining, reason))
    if combo_fix is not None:
        fixes.append(combo_fix)
    return tuple(_in_user_words(sim, f) for f in fixes)


def _in_user_words(sim: Simulation, f: Fix) -> Fix:
    """Attach the fix as the user types it (for fixes that link), simulated again."""
    if not (f.fixes_alone or f.in_combination) or f.argv == sim.line.argv:
        return f
    found = user_fix(sim, f.edit)
    if found is None:
        return f
    return replace(f, user_description=found.description, user_argv=found.argv, user_links=found.links)


def _still_has(s: Simulation, e: LinkError) -> bool:
    """True if the simulation still shows the same (kind, symbol, referrer) problem."""
    for x in s.outcome.errors:
        if x.kind == e.kind and x.key == e.symbol:
            ref = s.outcome.units[x.uid].display if x.uid is not None and x.uid >= 0 else None
            if ref == e.referenced_by:
                return True
    return False
