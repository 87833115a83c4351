"""The Python API of the link simulation (`ldscope link`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ldscope.analysis._link_results import InputSummary, LinkReport, TraceEntry
from ldscope.linker import Simulation, link_environment, simulate_argv
from ldscope.linker.frontend import CommandLineError, LinkLine, resolve_link_line
from ldscope.linker.inputs import ArchiveFacts, MemberProblem, ObjectFacts, SharedFacts
from ldscope.vocab import LinkErrorKind

if TYPE_CHECKING:
    from ldscope.explain import LinkError, SymbolTrace
    from ldscope.fixes import Fix

_PARTIAL_KINDS = (LinkErrorKind.MISSING_INPUT, LinkErrorKind.CORRUPT_INPUT)


def simulate_command(argv: Sequence[str], cwd: str | None = None, linker: str | None = None,
                     env: Mapping[str, str] | None = None) -> Simulation:
    """Simulate a driver or linker command line."""
    line = resolve_link_line(list(argv), cwd=cwd, linker=linker, env=env)
    return simulate_argv(line, environment=link_environment(env))


def predict_link_facts(argv: Sequence[str], cwd: str, linker: str | None = None
                       ) -> tuple[bool, list[tuple[str, str | None, str | None, str]]]:
    """(links?, [(kind, symbol, referrer, input spec)]) of the errors the linker would print."""
    sim = simulate_command(argv, cwd=cwd, linker=linker)
    out: list[tuple[str, str | None, str | None, str]] = []
    units = sim.outcome.units
    inputs = {i.seq: i for i in sim.resolved.inputs}
    for e in sim.outcome.errors:
        if not e.shown:
            continue
        ref = units[e.uid].display if e.uid is not None and e.uid >= 0 else None
        spec = ""
        if e.input_seq is not None and e.input_seq in inputs:
            inp = inputs[e.input_seq]
            spec = inp.spec if inp.path is None else inp.display
        out.append((e.kind, e.key, ref, spec))
    return sim.links, out


def _inputs(sim: Simulation) -> tuple[InputSummary, ...]:
    out: list[InputSummary] = []
    for i in sim.resolved.inputs:
        kind = {ObjectFacts: "object", SharedFacts: "shared", ArchiveFacts: "archive"}.get(
            type(i.facts), "missing" if i.path is None else "other")
        flags = tuple(name for name, on in (
            ("as-needed", i.as_needed), ("whole-archive", i.whole_archive),
            ("copy-dt-needed-entries", i.copy_dt_needed), ("static", i.static_only),
            ("group", bool(i.groups))) if on)
        out.append(InputSummary(i.position, i.spec, i.path, kind, flags, i.problem))
    return tuple(out)


def _member_problems(sim: Simulation) -> list[str]:
    notes: list[str] = []
    for (seq, m), uid in sim.outcome.extracted.items():
        if uid != -1:
            continue
        inp = next((i for i in sim.resolved.inputs if i.seq == seq), None)
        if inp is not None and isinstance(inp.facts, ArchiveFacts):
            got = inp.facts.member(m)
            if isinstance(got, MemberProblem):
                notes.append(f"{inp.display}({got.name}): {got.reason}")
    return notes


def backref_notes(sim: Simulation) -> list[str]:
    """lld/mold: where the link depends on going back to an earlier archive (--warn-backrefs)."""
    if sim.policy.ordered or not sim.outcome.backrefs:
        return []
    inputs = {i.seq: i for i in sim.resolved.inputs}
    notes: list[str] = []
    for key, who, seq in sim.outcome.backrefs[:8]:
        arc = inputs.get(seq)
        if arc is not None:
            notes.append(f"backward reference: `{key}' referenced by {who} is defined in "
                         f"{arc.display} (argument {arc.position}), which comes before it "
                         "(lld --warn-backrefs would warn)")
    bfd = simulate_argv(sim.line, linker="bfd", environment=sim.environment)
    if sim.links and not bfd.links:
        shown = [e for e in bfd.outcome.errors if e.shown]
        if all(e.kind == LinkErrorKind.UNDEFINED_REFERENCE for e in shown):
            notes.insert(0, f"this line links with {sim.policy.label} only because it ignores archive "
                            f"order: GNU ld (bfd) would fail with {len(shown)} error(s); reorder the archives "
                            "or group them to be portable")
        else:  # not an order problem: say only that bfd refuses it, and with what
            kinds = ", ".join(dict.fromkeys(str(e.kind) for e in shown))
            notes.insert(0, f"this line links with {sim.policy.label}, but GNU ld (bfd) would fail "
                            f"with {len(shown)} error(s) ({kinds})")
    return notes


def build_report(line: LinkLine, env: Mapping[str, str] | None = None, fix: bool = False,
                 confirm: bool = False, search: bool = True, why: Sequence[str] = ()) -> LinkReport:
    """Simulate, explain, and (if asked) find and confirm fixes."""
    sim = simulate_argv(line, environment=link_environment(env))
    errors: tuple[LinkError, ...] = ()
    if sim.outcome.errors:
        # Explanations and fixes are imported only when there is something to explain: a
        # gate's passing link skips a third of ldscope's modules (each dataclass costs ~1 ms).
        from ldscope.explain import LinkExplainer

        errors = LinkExplainer(sim, search=search).explain()
    fixes: tuple[Fix, ...] = ()
    if (fix or confirm) and not sim.links:
        from ldscope.fixes import evaluate

        fixes = evaluate(sim, errors)
    confirmation = None
    if confirm and line.policy.may_run:  # --no-exec: the real linker is never run
        from ldscope.fixes import confirm as run_confirm

        confirmation, fixes = run_confirm(line.argv, sim.policy.name, line.cwd, sim.links, fixes,
                                          sim.environment.variables, line.program_for(sim.policy.name))
    notes = [*line.notes, *sim.resolved.notes,
             f"default search directories: {sim.resolved.default_dirs_source}", *backref_notes(sim)]
    partial_reasons = [e.message for e in errors if e.kind in _PARTIAL_KINDS]
    member_notes = _member_problems(sim)
    partial = bool(partial_reasons or member_notes)
    if partial:
        notes.append("partial: the simulation continued without inputs it could not read")
    warnings = [*sim.parsed.warnings, *sim.resolved.warnings, *sim.outcome.warnings, *member_notes]
    warnings += [e.message for e in errors if e.kind.is_warning]
    trace = tuple(TraceEntry(t.action, t.target, t.position if t.position is not None and t.position >= 0 else None,
                             t.symbol, t.by) for t in sim.outcome.trace)
    return LinkReport(
        linker=sim.policy.name, argv=line.argv, original=line.original, cwd=line.cwd,
        source=line.source, output_kind=sim.kind, links=sim.links, partial=partial,
        errors=tuple(e for e in errors if not e.kind.is_warning),
        warnings=tuple(dict.fromkeys(warnings)), notes=tuple(dict.fromkeys(notes)), fixes=fixes,
        trace=trace, inputs=_inputs(sim), confirmation=confirmation,
        why=_traces(sim, why),
    )


def link_report(argv: Sequence[str], cwd: str | None = None, linker: str | None = None,
                env: Mapping[str, str] | None = None, fix: bool = False, confirm: bool = False,
                use_driver: bool = True, search: bool = True) -> LinkReport:
    """The full report for a command line (driver, linker or @response file)."""
    line = resolve_link_line(list(argv), cwd=cwd, linker=linker, env=env, use_driver=use_driver)
    return build_report(line, env=env, fix=fix, confirm=confirm, search=search)


@dataclass(frozen=True, slots=True)
class FixCheck:
    """One fix of one link, tried on another link line of the same build."""

    fix_of: int  # index of the link whose fix it is
    fix_id: str
    on: int  # index of the link it was tried on
    added: tuple[str, ...]  # the words added (at the end, as rustc or the user appends them)
    links_before: bool
    links_after: bool


def check_fixes_across(lines: Sequence[LinkLine], reports: Sequence[LinkReport]) -> tuple[FixCheck, ...]:
    """Every fix that adds words at the end of the user's command (rustc's link-arg, a
    driver line's `-l…`), tried on each other link line of the log: a fix made for one test
    binary must not be checked on that one only."""
    checks: list[FixCheck] = []
    for k, (line, report) in enumerate(zip(lines, reports)):
        for fix in report.fixes:
            added = _appended_words(line, fix)
            if added is None:
                continue
            for j, (other, other_report) in enumerate(zip(lines, reports)):
                if j == k:
                    continue
                after = _links_with(other, added)
                if after is not None:
                    checks.append(FixCheck(k, fix.id, j, added, other_report.links, after))
    return tuple(checks)


def _appended_words(line: LinkLine, fix: Fix) -> tuple[str, ...] | None:
    """The words a fix appends to the user's command, or None if it does something else."""
    if not (fix.fixes_alone and fix.user_links and fix.user_argv):
        return None
    base = line.argv if fix.user_argv[:len(line.argv)] == line.argv else line.original
    if tuple(fix.user_argv[:len(base)]) != tuple(base) or len(fix.user_argv) == len(base):
        return None
    return tuple(fix.user_argv[len(base):])


def _links_with(line: LinkLine, added: tuple[str, ...]) -> bool | None:
    """Whether `line` links with `added` at the end of its command (None: cannot tell)."""
    try:
        if line.source == "log" and line.original == line.argv:
            return simulate_argv(line, (*line.argv, *added)).links
        edited = resolve_link_line([*line.original, *added], cwd=line.cwd, linker=line.linker,
                                   use_driver=line.source != "driver-fallback", source=line.source,
                                   policy=line.policy)
    except CommandLineError:
        return None
    return simulate_argv(edited).links


def _traces(sim: Simulation, names: Sequence[str]) -> tuple[SymbolTrace, ...]:
    """`--why` traces (the tracer is imported only when asked)."""
    if not names:
        return ()
    from ldscope.explain import trace_symbol

    return tuple(trace_symbol(sim, name) for name in names)
