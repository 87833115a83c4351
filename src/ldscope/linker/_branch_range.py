"""AArch64 branches out of reach once the output is laid out (issue 11 item 7), predicted from
the output-layout estimate (_layout.py) only where the estimate cannot be wrong: distances are
lower bounds (the inputs between caller and target, no padding, nothing the linker adds), so a
branch predicted out of reach is out of reach whatever the linker inserts.

Measured with binutils 2.40 (bfd, gold 1.16), lld 14 and mold 1.10 (docs/fidelity.md):
* CALL26/JUMP26 reach ±128 MiB; every linker inserts veneers between input sections. bfd and
  gold put them after the caller's stub group (which ends at or after the caller's input
  section), never before it; lld and mold put thunks before or after. So bfd and gold fail when
  the caller is 128 MiB or more before the end of its own input section and the target is out
  of reach; lld and mold link.
* CONDBR19 (±1 MiB) and TSTBR14 (±32 KiB) get no veneer from any linker; mold 1.10 does not
  know TSTBR14 at all ("unknown relocation").
* A CALL26/JUMP26 to an undefined weak symbol in a static executable: gold branches to
  address 0 and overflows beyond 128 MiB; bfd and lld make it a no-op and link.
* mold 1.10 crashes (SIGSEGV) on an executable output section made of one input section of
  128 MiB or more (a 100 MiB one links; with any second section it links).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from ldscope.linker._layout import LayoutEstimate, estimate_layout
from ldscope.linker.engines import Outcome, Policy
from ldscope.linker.frontend import LinkOptions
from ldscope.linker.inputs import BranchSite, ObjectFacts, SharedFacts
from ldscope.vocab import LinkErrorKind

_CALL_REACH = 1 << 27
_GOLD_STATIC_BASE = 0x400000  # gold's text-segment start of a static non-PIE executable
# Output sections before .text in bfd's and gold's layout (measured on aarch64): .init, .plt.
_BEFORE_TEXT = frozenset({".init", ".plt"})


class BranchProblem(Enum):
    """Why a branch cannot reach its target."""

    STUB_UNREACHABLE = "stub-unreachable"  # bfd/gold: the veneer would go after a >= 128 MiB section
    NO_VENEER = "no-veneer"  # CONDBR19/TSTBR14 out of reach: no linker adds a veneer
    UNKNOWN_RELOCATION = "unknown-relocation"  # mold 1.10 rejects TSTBR14
    WEAK_AT_ZERO = "weak-at-zero"  # gold: a branch to an undefined weak symbol at address 0
    ALONE_SECTION_CRASH = "alone-section-crash"  # mold 1.10 segfaults


@dataclass(frozen=True, slots=True)
class BranchFinding:
    """A branch the layout estimate puts out of reach for one linker."""

    problem: BranchProblem
    uid: int
    site: BranchSite | None  # None for mold's crash, which no branch causes
    distance: int  # at least this far (bytes); the estimate itself is `estimate`
    estimate: int
    text_size: int  # the estimated size of the caller's output section
    section: str  # the caller's output section
    links_with: tuple[str, ...]  # the linkers that link this branch (measured)


def _bounds(layout: LayoutEstimate, outcome: Outcome, uid: int, site: BranchSite, kind: str,
            linker: str) -> tuple[int, int] | None:
    """(lower bound of |target - branch|, estimate of target - branch), or None when the
    target's place (before or after the caller) is not certain."""
    own = layout.placements.get((uid, site.output, site.rank))
    if own is None:
        return None
    here = own.start + site.before + site.offset  # estimated, from the output section's start
    # What lies at least between the branch and the end (start) of its object's share: the
    # rest of its section, and the share's other sections (their sizes, without padding).
    padding = own.size - own.min_size
    after_caller = site.section_size - site.offset
    after_share = after_caller + max(0, own.min_size - site.before - site.section_size)
    before_share = site.offset + max(0, site.before - padding)
    if site.local is not None:
        out, rank, offset = site.local
        if out == site.output:
            there = layout.placements.get((uid, out, rank))
            if there is None:
                return None
            estimate = there.start + offset - here
            forward = rank > site.rank or (rank == site.rank and offset >= site.before + site.section_size)
            backward = rank < site.rank or (rank == site.rank and offset < site.before)
            if forward:
                return after_caller, estimate
            return (site.offset, estimate) if backward else None
        if linker not in ("bfd", "gold") or site.output != ".text":
            return None  # lld and mold order output sections differently (and link anyway)
        if out in _BEFORE_TEXT:
            return before_share + own.min_start, -(here + offset)
        section = layout.section(out)
        if out == ".fini" or (section is not None and section.code):
            text = layout.section(".text")
            return after_share, (text.size if text is not None else own.size) - here + offset
        return None
    defined = outcome.table.defs.get(site.target)
    if defined is None or defined[1] is None:
        return None
    target_uid = defined[1]
    target = outcome.units[target_uid].facts
    if isinstance(target, SharedFacts) or kind == "shared":
        if not isinstance(target, SharedFacts):
            return None  # a preemptible definition of a shared object is called through its PLT
        if linker not in ("bfd", "gold") or site.output != ".text":
            return None
        return before_share + own.min_start, -here  # bfd's and gold's .plt precede .text
    if target_uid == uid or site.output != ".text" or not isinstance(target, ObjectFacts):
        return None
    code = [layout.placements.get((target_uid, s.output, s.rank)) for s in target.shares if s.code]
    if not code or None in code or any(s.output != ".text" for s in target.shares if s.code):
        return None  # some of its code goes elsewhere: the symbol's own section is not known
    spans = [p for p in code if p is not None]
    if min(p.min_start for p in spans) >= own.min_start + own.min_size:
        first = min(spans, key=lambda p: p.start)
        between = first.min_start - (own.min_start + own.min_size)
        return after_share + between, first.start - here
    if max(p.min_start + p.min_size for p in spans) <= own.min_start:
        last = max(spans, key=lambda p: p.start)
        between = own.min_start - (last.min_start + last.min_size)
        return before_share + between, last.start - here
    return None


def branch_findings(units_outcome: Outcome, policy: Policy, kind: str, options: LinkOptions) -> list[BranchFinding]:
    """Branches this linker cannot resolve, as the layout estimate proves (lower bounds only)."""
    seen = {name for name, _pos, _text in options.seen}
    if seen & {"gc-sections", "icf", "sort-section", "symbol-ordering-file", "section-start", "T", "script",
               "Ttext", "Tdata", "Tbss", "Ttext-segment"}:
        return []  # the layout is not the inputs' order any more: silent
    outcome = units_outcome
    objects = [u for u in outcome.units if isinstance(u.facts, ObjectFacts)]
    if not any(u.facts.branch_sites or any(s.code and s.size >= _CALL_REACH for s in u.facts.shares)
               for u in objects if isinstance(u.facts, ObjectFacts)):
        return []  # most links: nothing the layout could put out of reach
    layout = estimate_layout(outcome.units)
    name = policy.name
    found: list[BranchFinding] = []
    for section in layout.sections:
        if name == "mold" and section.code and section.inputs == 1 and section.size >= _CALL_REACH:
            uid = next(uid for (uid, out, _r) in layout.placements if out == section.name)
            found.append(BranchFinding(BranchProblem.ALONE_SECTION_CRASH, uid, None, section.size, section.size,
                                       section.size, section.name, ("bfd", "gold", "lld")))
            return found  # the process dies
    # A static executable: no shared library takes part (the driver's -static is -Bstatic for ld).
    static_exec = kind == "exec" and not any(u.is_shared for u in outcome.units)
    for u in objects:
        facts = u.facts
        assert isinstance(facts, ObjectFacts)
        for site in facts.branch_sites:
            text = layout.section(site.output)
            text_size = text.size if text is not None else site.section_size
            if site.type == "R_AARCH64_TSTBR14" and name == "mold":
                found.append(BranchFinding(BranchProblem.UNKNOWN_RELOCATION, u.uid, site, 0, 0, text_size,
                                           site.output, ("bfd", "gold", "lld")))
                continue
            if site.weak_undefined:
                own = layout.placements.get((u.uid, site.output, site.rank))
                if name == "gold" and static_exec and site.reach == _CALL_REACH and own is not None:
                    low = _GOLD_STATIC_BASE + own.min_start + site.offset
                    if low > site.reach:
                        found.append(BranchFinding(BranchProblem.WEAK_AT_ZERO, u.uid, site, low,
                                                   _GOLD_STATIC_BASE + own.start + site.before + site.offset,
                                                   text_size, site.output, ("bfd", "lld")))
                continue
            if site.exact is not None:
                found.append(BranchFinding(BranchProblem.NO_VENEER, u.uid, site, abs(site.exact), site.exact,
                                           text_size, site.output, ()))
                continue
            bounds = _bounds(layout, outcome, u.uid, site, kind, name)
            if bounds is None or bounds[0] <= site.reach:
                continue  # within reach, or not certainly out of it
            if site.reach < _CALL_REACH:
                found.append(BranchFinding(BranchProblem.NO_VENEER, u.uid, site, bounds[0], bounds[1], text_size,
                                           site.output, ()))
            elif name in ("bfd", "gold") and site.section_size - site.offset >= site.reach:
                found.append(BranchFinding(BranchProblem.STUB_UNREACHABLE, u.uid, site, bounds[0], bounds[1],
                                           text_size, site.output, ("lld", "mold")))
    return found


def add_layout_branch_errors(outcome: Outcome, policy: Policy, kind: str, options: LinkOptions) -> None:
    """The findings of branch_findings as this linker's errors."""
    for f in branch_findings(outcome, policy, kind, options):
        unit = outcome.units[f.uid]
        site = f.site
        if site is None:
            detail = f"a {f.text_size >> 20} MiB {f.section} made of one input section, {unit.display}"
            outcome.error(LinkErrorKind.BRANCH_OUT_OF_RANGE, None, f.uid, detail=detail, fatal=True)
            return
        target_display = _target_display(outcome, f.uid, site)
        if f.problem == BranchProblem.STUB_UNREACHABLE:
            detail = (f"({site.section}+{site.offset:#x}): relocation truncated to fit: {site.type} against "
                          f"symbol `{target_display[0]}' defined in {target_display[1]} section in {target_display[2]}")
            outcome.error(LinkErrorKind.BRANCH_OUT_OF_RANGE, site.target, f.uid, detail=detail)
            continue
        outcome.error(LinkErrorKind.RELOCATION_OVERFLOW, site.target, f.uid,
                      detail=_overflow_wording(policy.name, f, unit.display, target_display))


def _target_display(outcome: Outcome, uid: int, site: BranchSite) -> tuple[str, str, str]:
    """(symbol, section, file) as bfd names a branch target."""
    unit = outcome.units[uid]
    if site.local is not None:
        return site.target, site.target_section or site.local[0], unit.display
    defined = outcome.table.defs.get(site.target)
    if defined is not None and defined[1] is not None:
        other = outcome.units[defined[1]]
        if isinstance(other.facts, SharedFacts):
            return other.facts.display.get(site.target, site.target), ".text", other.display
        return site.target, _single_text_name(other.facts), other.display
    return site.target, "*UND*", unit.display


def _single_text_name(facts: ObjectFacts | SharedFacts) -> str:
    if isinstance(facts, ObjectFacts):
        names = [s.single for s in facts.shares if s.code and s.single]
        if len(names) == 1:
            return names[0]
    return ".text"


def _overflow_wording(linker: str, f: BranchFinding, referrer: str, target: tuple[str, str, str]) -> str:
    """Each linker's words for a relocation that does not fit (measured, see the module doc)."""
    site = f.site
    assert site is not None
    low, high = -site.reach, site.reach - 1
    if linker == "mold" and f.problem == BranchProblem.UNKNOWN_RELOCATION:
        return f"{referrer}:({site.section}): unknown relocation: {site.type}"
    if linker == "bfd":
        return (f"({site.section}+{site.offset:#x}): relocation truncated to fit: {site.type} against "
                + (f"undefined symbol `{target[0]}'" if target[1] == "*UND*"
                   else f"symbol `{target[0]}' defined in {target[1]} section in {target[2]}"))
    if linker == "gold":
        return f"{referrer}({site.section}+{site.offset:#x}): error: relocation overflow in {site.type}"
    if linker == "lld":
        return (f"{referrer}:({site.section}+{site.offset:#x}): relocation {site.type} out of range: "
                f"{f.estimate} is not in [{low}, {high}]; references {site.target}\n>>> defined in {target[2]}")
    return (f"{referrer}:({site.section}): relocation {site.type} against {site.target} out of range: "
            f"{f.estimate} is not in [{low}, {site.reach})")


def explain_branch(outcome: Outcome, policy: Policy, kind: str, options: LinkOptions, uid: int | None,
                   target: str | None) -> str | None:
    """Why a branch error of this link happens, naming the estimate and the reach; None if the
    error is not one of the layout's."""
    for f in branch_findings(outcome, policy, kind, options):
        if f.uid != uid or (f.site is not None and f.site.target != target):
            continue
        mib = f"{f.text_size / (1 << 20):.1f} MiB"
        links = ", ".join(f.links_with)
        if f.site is None:
            return (f"the estimated {f.section} ({mib}, from the inputs' section sizes) is one input section of "
                    f"{outcome.units[uid].display if uid is not None else '?'}; mold 1.10 crashes on an executable "
                    f"output section made of one input section of 128 MiB or more (a second input section avoids "
                    f"it). {links} link it")
        site = f.site
        reach = f"±{site.reach >> 20} MiB" if site.reach >= 1 << 20 else f"±{site.reach >> 10} KiB"
        where = (f"{f.distance / (1 << 20):.1f} MiB at least (estimated from the inputs' section sizes; "
                 f"the estimated {f.section} is {mib})")
        if f.problem == BranchProblem.STUB_UNREACHABLE:
            return (f"a {site.type} reaches {reach}; this one, at {site.section}+{site.offset:#x}, targets "
                    f"{site.target} {where}. Between input sections the linkers insert a veneer, but "
                    f"{policy.label} places it after the caller's stub group, which ends after this "
                    f"{site.section_size >> 20} MiB input section, {(site.section_size - site.offset) >> 20} MiB away: "
                    f"out of reach too (--stub-group-size cannot split an input section). {links} place thunks "
                    f"before the caller and link it: link with lld (-fuse-ld=lld), or split the code into more "
                    f"sections (-ffunction-sections) or shrink it (an optimised build)")
        if f.problem == BranchProblem.UNKNOWN_RELOCATION:
            return (f"mold 1.10 does not implement {site.type} (a TBZ/TBNZ to another section or a global "
                    f"symbol); {links} resolve it. Link with another linker, or branch through a B")
        if f.problem == BranchProblem.WEAK_AT_ZERO:
            return (f"{site.target} is an undefined weak symbol, so gold resolves the {site.type} to address "
                    f"0, {f.distance / (1 << 20):.1f} MiB at least from the branch in a static executable "
                    f"(estimated .text {mib}), beyond {reach}; {links} turn the branch into a no-op and link it")
        exact = "exactly" if site.exact is not None else where
        return (f"a {site.type} reaches {reach} and no linker inserts a veneer for it; this one targets "
                f"{site.target} {exact if site.exact is None else f'{abs(site.exact)} bytes away ' + exact + ' (inside one section)'}: "
                f"restructure the branch (an inverted condition around a B, which reaches ±128 MiB)")
    return None
