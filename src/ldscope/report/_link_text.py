"""A link report as text: terse by default, the whole story with -v, the fix table with --ablate."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ldscope.report._text_safe import message_lines, sanitized, strings_in

if TYPE_CHECKING:  # annotations only: a passing link's report imports no explainer or fix search
    from ldscope.analysis import LinkReport
    from ldscope.explain import LinkError
    from ldscope.fixes import Fix


def _error_text(e: LinkError, verbose: bool, message: list[str]) -> list[str]:
    head = f"{'error' if e.shown else 'error (after a fatal one: not printed by the linker)'}: {e.kind}"
    if e.symbol:
        head += f"  {e.versioned or e.symbol}"
        if e.demangled:
            head += f"  [{e.demangled}]"
    lines = [head]
    lines += [f"  | {m}" for m in message]
    if e.explanation:
        lines.append(f"  why: {e.explanation}")
    if verbose and e.defined_in:
        lines.append("  defined in:")
        lines += [f"    - {d.where} [{d.status}]: {d.detail}" for d in e.defined_in]
    if e.near_misses:
        lines.append("  near misses:")
        for m in e.near_misses[: (5 if verbose else 2)]:
            lines.append(f"    - {m.file}: {m.demangled or m.symbol} ({m.kind})")
            lines += [f"        {d}" for d in m.differences[:4]]
    return lines


def _fix_line(f: Fix) -> str:
    mark = "✓" if f.fixes_alone else ("+" if f.in_combination else "✗")
    conf = "" if f.confirmed is None else ("  [confirmed by the real linker]" if f.confirmed
                                           else "  [the real linker disagrees]")
    line = f"  {mark} {f.id}: {f.description} — {f.reason}{conf}"
    if f.user_description:
        checked = "links" if f.user_links else "does NOT link as written"
        line += f"\n      in your command: {f.user_description} ({checked}):\n        {' '.join(f.user_argv)}"
    return line


def render_link_text(report: LinkReport, verbose: bool = False, ablate: bool = False) -> str:
    """Human-readable report: the verdict, each error, the fixes, then what -v asks for."""
    # Every name, path and message escaped once (report/_text_safe.py); the linker's own
    # multi-line wording keeps its line breaks, a name's are escaped (message_lines).
    untrusted = [s for s in strings_in(report, skip=frozenset({"message"})) if "\n" in s]
    messages = [message_lines(e.message, untrusted) for e in report.errors]
    report = sanitized(report)
    lines = _verdict(report, verbose)
    lines += _errors(report, verbose, messages)
    lines += _fixes(report, verbose, ablate)
    lines += _confirmation(report)
    lines += _why(report)
    if verbose:
        lines += _trace(report)
    lines += [f"warning: {w}" for w in report.warnings]
    lines += [f"note: {n}" for n in report.notes if verbose or "only because" in n or "partial" in n]
    return "\n".join(lines) + "\n"


def _why(report: LinkReport) -> list[str]:
    """--why SYMBOL: who defines and references it, the winner and how each got in."""
    lines: list[str] = []
    for t in report.why:
        name = f"{t.symbol} [{t.demangled}]" if t.demangled else t.symbol
        lines += ["", f"why {name}: " + (f"bound to {t.winner}" if t.winner else "no definition is used")]
        lines.append(f"  {t.why}")
        for i in t.inputs:
            where = f" (argument {i.argument_index})" if i.argument_index is not None else ""
            lines.append(f"  - {i.file}{where} {i.role} it ({i.detail})")
            lines.append(f"      in the link: {i.how_in_link}" if i.in_link else f"      {i.how_in_link}")
    return lines


def _verdict(report: LinkReport, verbose: bool) -> list[str]:
    from ldscope.linker import POLICIES  # the link model is loaded once there is a link report

    policy = POLICIES.get(report.linker)
    label = policy.label if policy is not None else report.linker
    shown = [e for e in report.errors if e.shown and not e.kind.is_warning]
    verdict = "links" if report.links else f"FAILS ({len(shown)} error{'s' if len(shown) != 1 else ''})"
    lines = [f"ldscope link: {label}, {report.output_kind} — the link {verdict}"
             + ("  (partial: some inputs could not be read)" if report.partial else "")]
    if verbose:
        lines.append(f"  line ({report.source}): {' '.join(report.argv)}")
    return lines


def _errors(report: LinkReport, verbose: bool, messages: list[list[str]]) -> list[str]:
    lines: list[str] = []
    for e, message in zip(report.errors, messages):
        if e.shown or verbose:
            lines.append("")
            lines += _error_text(e, verbose, message)
    hidden = sum(1 for e in report.errors if not e.shown)
    if hidden and not verbose:
        lines.append(f"\n({hidden} more found after the linker's first fatal error; -v shows them)")
    return lines


def _fixes(report: LinkReport, verbose: bool, ablate: bool) -> list[str]:
    if not report.fixes:
        return []
    lines = ["", "fixes (each simulated with the same linker):"]
    fixing = [f for f in report.fixes if f.fixes_alone or f.in_combination]
    rest = [f for f in report.fixes if not (f.fixes_alone or f.in_combination)]
    lines += [_fix_line(f) for f in fixing]
    if ablate or verbose:
        lines += [_fix_line(f) for f in rest]
    elif rest:
        lines.append(f"  ({len(rest)} other candidate(s) do not fix it; --ablate lists them)")
    if ablate:
        lines.append("")
        lines += ablation_table(report.fixes)
    return lines


def _confirmation(report: LinkReport) -> list[str]:
    c = report.confirmation
    if c is None:
        return []
    real = "not run" if c.links is None else ("links" if c.links else f"fails (exit {c.exit_status})")
    agree = "" if c.agrees is None else ("; agrees with the prediction" if c.agrees else "; DISAGREES with the prediction")
    return [f"\nconfirmed with {c.program}: {real}{agree}"]


def _trace(report: LinkReport) -> list[str]:
    if not report.trace:
        return []
    lines = ["\ntrace:"]
    for t in report.trace:
        pos = f" (argument {t.argument_index})" if t.argument_index is not None else ""
        why = f" for `{t.symbol}'" if t.symbol else ""
        by = f" referenced by {t.by}" if t.by else ""
        lines.append(f"  {t.action}: {t.target}{pos}{why}{by}")
    return lines


def ablation_table(fixes: tuple[Fix, ...]) -> list[str]:
    """One row per candidate: alone, in combination, remaining errors, confirmation."""
    rows = [("id", "alone", "combined", "left", "confirmed", "candidate")]
    for f in fixes:
        conf = "-" if f.confirmed is None else ("yes" if f.confirmed else "NO")
        rows.append((f.id, "yes" if f.fixes_alone else "no", "yes" if f.in_combination else "no",
                     str(f.remaining_errors), conf, f.description))
    widths = [max(len(r[i]) for r in rows) for i in range(5)]
    return ["  ".join(c.ljust(widths[i]) if i < 5 else c for i, c in enumerate(r)) for r in rows]
