"""Checks a linker makes once symbols are resolved: inputs a static link refuses, version
scripts naming undefined symbols, relocations a position-independent output cannot hold."""

from __future__ import annotations

import os

from ldscope.errors import InputFormatError
from ldscope.linker._symbol_kinds import SHARED, SHARED_WEAK
from ldscope.linker.engines import Outcome, Policy, RawError
from ldscope.linker.frontend import LinkOptions
from ldscope.linker.inputs import (
    Input,
    NonPicRelocation,
    ObjectFacts,
    ResolvedLine,
    SharedFacts,
    version_script_names,
)
from ldscope.vocab import LinkErrorKind


def static_dynamic_objects(resolved: ResolvedLine, static_link: bool, policy: Policy) -> list[Input]:
    """Shared libraries on the line that this linker refuses in a static context: named by
    path (a -l under -Bstatic finds only libNAME.a) in a -Bstatic/-static region (bfd, lld),
    or anywhere in a -static link (gold)."""
    rule = policy.static_dynamic_object
    if rule == "accept" or (rule == "static-link" and not static_link):
        return []
    return [inp for inp in resolved.inputs if isinstance(inp.facts, SharedFacts)
            and (inp.static_only or rule == "static-link")]


def undefined_version_errors(opts: LinkOptions, policy: Policy, outcome: Outcome, cwd: str) -> list[RawError]:
    """--no-undefined-version: every exact name a version script exports must be defined by
    the link's objects (a shared library's definition does not count)."""
    rule = policy.undefined_version_error
    wanted = opts.undefined_version is False if rule == "opt-in" else opts.undefined_version is not True
    if rule == "never" or not wanted or not opts.version_scripts:
        return []
    defined = {key for key, (kind, _uid) in outcome.table.defs.items() if kind not in (SHARED, SHARED_WEAK)}
    errors: list[RawError] = []
    for script in opts.version_scripts:
        try:
            names = version_script_names(os.path.join(cwd, script))
        except InputFormatError:
            continue  # the linker's own "cannot open" is not modelled here
        errors.extend(RawError(LinkErrorKind.UNDEFINED_VERSION, name, None, None, node or "{anonymous}")
                      for node, name in names if name not in defined)
    return errors


def add_non_pic_errors(outcome: Outcome, policy: Policy, kind: str, options: LinkOptions | None = None) -> None:
    """Absolute 32-bit relocations (R_X86_64_32/32S) in objects linked into a shared object
    or a PIE: bfd and gold report the first (bfd then stops), lld and mold every one."""
    if kind not in ("shared", "pie"):
        return
    # A PC32 to a global binds locally (and is fine) with -Bsymbolic or a version script that
    # may hide it: silent then, rather than wrong.
    binds_locally = options is not None and (bool(options.version_scripts) or any(
        name.startswith("Bsymbolic") for name, _pos, _text in options.seen))
    found = [(u.uid, r) for u in outcome.units if isinstance(u.facts, ObjectFacts) for r in u.facts.non_pic
             if (kind == "shared" or not r.shared_only) and not (r.preemptible and binds_locally)]
    if not found:
        return
    if policy.non_pic_reports == "first":
        found = found[:1]
    undefined = (LinkErrorKind.UNDEFINED_REFERENCE, LinkErrorKind.SHLIB_UNDEFINED, LinkErrorKind.HIDDEN_UNDEFINED)
    # (bfd on AArch64 reports its TLS local-exec relocations after the undefined symbols.)
    if policy.name == "mold" or (policy.name == "bfd" and any(not r.tls for _uid, r in found)):
        # bfd: fatal in size_dynamic_sections, before any undefined symbol is reported; mold
        # stops after its relocation scan (measured on libc.a in a -shared link).
        outcome.errors = [e if e.kind not in undefined
                          else RawError(e.kind, e.key, e.uid, e.other, e.detail, False, e.input_seq)
                          for e in outcome.errors]
    fresh = [RawError(LinkErrorKind.NON_PIC_RELOCATION, reloc.target, uid, None,
                      non_pic_wording(policy.name, reloc, kind, outcome.units[uid].display), not outcome.fatal)
             for uid, reloc in found]
    # lld reports relocation errors while scanning, undefined symbols after the scan.
    at = next((n for n, e in enumerate(outcome.errors) if e.kind in undefined), len(outcome.errors))
    outcome.errors[at:at] = fresh
    if policy.name == "bfd" and any(not r.tls for _uid, r in found):
        outcome.fatal = True


def add_long_branch_errors(outcome: Outcome, policy: Policy) -> None:
    """AArch64 branches out of reach inside one input section (see Policy.long_branch_in_section)."""
    rule = policy.long_branch_in_section
    if rule == "thunk":
        return
    for u in outcome.units:
        if not isinstance(u.facts, ObjectFacts):
            continue
        for b in u.facts.long_branches:
            detail = (f"({b.section}+{b.offset:#x}): relocation truncated to fit: {b.type} against symbol "
                      f"`{b.target}' defined in {b.section} section in {u.display}")
            if rule == "crash":
                detail = f"a {b.type} to {b.target} {abs(b.distance) >> 20} MiB away inside {u.display}({b.section})"
            outcome.error(LinkErrorKind.BRANCH_OUT_OF_RANGE, b.target, u.uid, detail=detail)
            if rule == "crash":
                return  # the process dies at the first


def non_pic_wording(linker: str, r: NonPicRelocation, kind: str, referrer: str) -> str:
    """The part of each linker's message that names the relocation (measured: bfd 2.40,
    gold 1.16, lld 14, mold 1.10)."""
    if r.tls:  # AArch64 TLS local-exec (measured: gold 1.16, lld 14, mold 1.10 on libc.a)
        if linker == "gold":
            return f"unsupported TLSLE reloc {r.number} in shared code."
        if linker == "lld":
            return f"relocation {r.type} against {r.target} cannot be used with -shared"
        if linker == "mold":
            archive, paren, member = referrer.partition("(")
            return (f"{os.path.normpath(archive) + paren + member}:({r.section}): relocation {r.type} against "
                    f"`{r.target}` can not be used when making a shared object; recompile with -fPIC")
        return f"relocation {r.type} against `{r.target}' can not be used when making a shared object; recompile with -fPIC"
    if linker == "bfd":
        target = f"`{r.target}'" if r.against_section else f"symbol `{r.target}'"
        output, flag = ("shared object", "PIC") if kind == "shared" else ("PIE object", "PIE")
        return f"relocation {r.type} against {target} can not be used when making a {output}; recompile with -f{flag}"
    if linker == "gold":
        against = "" if r.against_section else f" against '{r.target}'"
        return f"requires dynamic {r.type} reloc{against} which may overflow at runtime; recompile with -fPIC"
    if linker == "lld":
        against = "local symbol" if r.against_section else f"symbol '{r.target}'"
        return f"relocation {r.type} cannot be used against {against}; recompile with -fPIC"
    target = "<fragment>" if r.against_section and r.mergeable else r.target
    archive, paren, member = referrer.partition("(")
    referrer = os.path.normpath(archive) + paren + member  # mold prints paths cleaned: libx.a, not ./libx.a
    return (f"{referrer}:({r.section}): {r.type} relocation at offset {r.offset:#x} against symbol "
            f"`{target}' can not be used; recompile with -fPIC")
