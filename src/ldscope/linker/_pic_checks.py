"""Relocations a shared object or PIE cannot hold as they are, and what each linker does
with them (measured with GNU ld 2.40, gold 1.16, lld 14 and mold 1.10 on x86-64 and
AArch64; the matrix is in docs/fidelity.md):

* text relocations -- an absolute pointer-size word (R_X86_64_64, R_AARCH64_ABS64) in a
  read-only section needs a dynamic relocation there. `-z notext` allows them everywhere; `-z
  text` refuses them everywhere; by default lld refuses them (except, in a PIE, against a
  global function or object, which lld 14 links), bfd warns on x86-64 (silent on AArch64
  unless `--warn-shared-textrel`), gold and mold link silently;
* AArch64 non-PIC code: ADRP + :lo12: against a symbol another module may define, MOVW_UABS
  (`-mcmodel=large`), ABS32 -- refused whatever `-z text` says, each linker its own way.
"""

from __future__ import annotations

import os

from ldscope.elf import constants as C
from ldscope.linker._symbol_kinds import SHARED, SHARED_WEAK
from ldscope.linker.engines import Outcome, Policy, RawError, Unit
from ldscope.linker.frontend import LinkOptions
from ldscope.linker.inputs import ObjectFacts, PicFamily, PicRelocation
from ldscope.vocab import LinkErrorKind

_UNDEFINED = (LinkErrorKind.UNDEFINED_REFERENCE, LinkErrorKind.SHLIB_UNDEFINED, LinkErrorKind.HIDDEN_UNDEFINED)
_ADRP = frozenset((275, 276))  # R_AARCH64_ADR_PREL_PG_HI21(_NC): the half bfd and mold name
_TYPED = (C.STT_OBJECT, C.STT_FUNC, -1)  # -1: defined elsewhere, where compilers always set a type


def add_pic_relocation_errors(outcome: Outcome, policy: Policy, kind: str, options: LinkOptions) -> None:
    """Text relocations and AArch64 non-PIC relocations of the link's objects, as errors or
    warnings in the linker's own words, before its undefined-symbol errors."""
    found = [(u, r) for u in outcome.units if isinstance(u.facts, ObjectFacts) for r in u.facts.pic_relocs]
    if not found:
        return
    fresh: list[RawError] = []
    fatal = False
    if kind in ("shared", "pie"):
        textrels = [(u, r) for u, r in found if r.family == PicFamily.ABSOLUTE_WORD]
        if textrels:
            fresh += _text_relocations(outcome, policy.name, kind, options, textrels)
        code, fatal = _aarch64_non_pic(outcome, policy.name, kind, options, found)
        fresh += code
    elif policy.name == "mold":
        fresh += _mold_abs32(found)
    if not fresh:
        return
    if outcome.fatal:  # a fatal error came first: the linker never gets this far
        fresh = [_hidden(e) for e in fresh]
    if fatal:
        outcome.errors = [_hidden(e) if e.kind in _UNDEFINED else e for e in outcome.errors]
        outcome.fatal = True
    at = next((n for n, e in enumerate(outcome.errors) if e.kind in _UNDEFINED), len(outcome.errors))
    outcome.errors[at:at] = fresh


def _hidden(e: RawError) -> RawError:
    return RawError(e.kind, e.key, e.uid, e.other, e.detail, False, e.input_seq)


def _text_mode(options: LinkOptions) -> str | None:
    """The last of -z text / -z notext (the last one wins in all four), or None."""
    return next((z for z in reversed(options.z_keywords) if z in ("text", "notext")), None)


def _warn_flags(options: LinkOptions) -> set[str]:
    return {name for name, _pos, _text in options.seen if name in ("warn-shared-textrel", "warn-textrel")}


def _text_relocations(outcome: Outcome, linker: str, kind: str, options: LinkOptions,
                      found: list[tuple[Unit, PicRelocation]]) -> list[RawError]:
    mode = _text_mode(options)
    if mode == "notext":
        return []
    warn = _warn_flags(options)
    first_unit, first = found[0]
    if linker == "lld":
        # lld 14 in a PIE takes a function or object symbol's address as a link-time constant
        # (no dynamic relocation at all); sections and untyped symbols fail as in -shared.
        hits = [(u, r) for u, r in found if not (kind == "pie" and not r.local and r.symbol_type in _TYPED)]
        return [RawError(LinkErrorKind.TEXT_RELOCATION, r.target, u.uid, None, _lld_wording(outcome, u, r))
                for u, r in hits]
    if linker == "mold":
        if mode == "text":
            return [RawError(LinkErrorKind.TEXT_RELOCATION, r.target, u.uid, None,
                             f"{_mold_name(u)}:({r.section}): {r.type} relocation at offset {r.offset:#x} against "
                             f"symbol `{r.target}' can not be used; recompile with -fPIC") for u, r in found]
        if "warn-textrel" in warn or ("warn-shared-textrel" in warn and kind == "shared"):
            return [*(RawError(LinkErrorKind.TEXTREL_WARNING, r.target, u.uid, None,
                               f"{_mold_name(u)}:({r.section}): relocation against symbol `{r.target}' in "
                               "read-only section") for u, r in found),
                    RawError(LinkErrorKind.TEXTREL_WARNING, None, None, None, "creating a DT_TEXTREL in an output file")]
        return []
    if linker == "gold":
        if mode == "text":
            return [RawError(LinkErrorKind.TEXT_RELOCATION, first.target, first_unit.uid, None,
                             "read-only segment has dynamic relocations")]
        if "warn-shared-textrel" in warn and kind == "shared":
            return [RawError(LinkErrorKind.TEXTREL_WARNING, first.target, first_unit.uid, None,
                             "shared library text segment is not shareable")]
        return []
    return _bfd_text_relocations(linker, kind, mode, warn, found)


def _bfd_text_relocations(linker: str, kind: str, mode: str | None, warn: set[str],
                          found: list[tuple[Unit, PicRelocation]]) -> list[RawError]:
    """bfd: one line naming the first text relocation (x86-64 names local ones, first, too;
    AArch64 only symbols), then the error (-z text) or "creating DT_TEXTREL" (a warning)."""
    x86 = isinstance(found[0][0].facts, ObjectFacts) and found[0][0].facts.machine == "x86_64"
    if not (mode == "text" or warn or x86):
        return []  # Debian's AArch64 ld checks text relocations only when asked
    named = next(((u, r) for u, r in found if r.local), None) if x86 else None
    named = named or next(((u, r) for u, r in found if not r.local), None)
    out: list[RawError] = []
    if named is not None:
        u, r = named
        what = "relocation" if r.local else f"relocation against `{r.target}'"
        out.append(RawError(LinkErrorKind.TEXTREL_WARNING, r.target, u.uid, None,
                            f"{u.display}: warning: {what} in read-only section `{r.section}'"))
    first_unit, first = found[0]
    if mode == "text":
        out.append(RawError(LinkErrorKind.TEXT_RELOCATION, first.target, first_unit.uid, None,
                            "read-only segment has dynamic relocations"))
    else:
        output = "a shared object" if kind == "shared" else "a PIE"
        out.append(RawError(LinkErrorKind.TEXTREL_WARNING, None, None, None, f"warning: creating DT_TEXTREL in {output}"))
    return out


def _aarch64_non_pic(outcome: Outcome, linker: str, kind: str, options: LinkOptions,
                     found: list[tuple[Unit, PicRelocation]]) -> tuple[list[RawError], bool]:
    """ADRP/:lo12: against a preemptible symbol, MOVW_UABS and ABS32, per linker; and whether
    the linker stops there (bfd, before it reports undefined symbols)."""
    binds_locally = bool(options.version_scripts) or any(
        name.startswith("Bsymbolic") for name, _pos, _text in options.seen)
    out: list[RawError] = []
    stops: list[bool] = []
    for u, r in found:
        before, in_library = len(out), False
        if r.family == PicFamily.PAGE:
            in_library = outcome.table.defs.get(r.target, (None, None))[0] in (SHARED, SHARED_WEAK)
            # In a PIE only a library's symbol may be preempted (bfd: the others get a copy
            # relocation or bind locally); -Bsymbolic or a version script may bind it locally:
            # silent then, rather than wrong.
            if (kind == "pie" and not in_library) or (kind == "shared" and binds_locally):
                continue
            if linker == "bfd" and r.number in _ADRP:
                out.append(_non_pic(u, r, f"relocation {r.type} against symbol `{r.target}' which may bind "
                                          "externally can not be used when making a shared object; recompile "
                                          "with -fPIC"))
            elif linker == "lld" and kind == "shared":
                out.append(_non_pic(u, r, _lld_wording(outcome, u, r)))
            elif linker == "mold" and kind == "shared" and r.number in _ADRP:
                out.append(_non_pic(u, r, _mold_wording(u, r)))
        elif r.family in (PicFamily.MOVW, PicFamily.ABS32):
            movw = r.family == PicFamily.MOVW
            if linker == "bfd":
                target = "a local symbol" if r.local else r.target
                tail = "; recompile with -fPIC" if movw else ""
                out.append(_non_pic(u, r, f"relocation {r.type} against `{target}' can not be used when making a "
                                          f"shared object{tail}"))
            elif linker == "gold" and (movw or r.local):
                out.append(_non_pic(u, r, f"unsupported reloc {r.number} in pos independent link."))
            elif linker == "lld":
                out.append(_non_pic(u, r, _lld_wording(outcome, u, r)))
            elif linker == "mold" and not movw:
                out.append(_non_pic(u, r, f"{_mold_name(u)}:({r.section}): unknown relocation: {r.type}"))
        if len(out) > before:
            stops.append(linker == "bfd" and (r.family != PicFamily.PAGE or in_library))
    if linker == "bfd":
        # bfd refuses ABS32/MOVW while reading relocations (the first one ends the link), ADRP
        # while applying them (each one, until an unresolvable one ends it).
        stop = next((n for n, s in enumerate(stops) if s), None)
        if stop is not None:
            return out[:stop + 1] + [_hidden(e) for e in out[stop + 1:]], True
    return out, False


def _non_pic(u: Unit, r: PicRelocation, detail: str) -> RawError:
    return RawError(LinkErrorKind.NON_PIC_CODE, r.target, u.uid, None, detail)


def _mold_abs32(found: list[tuple[Unit, PicRelocation]]) -> list[RawError]:
    """mold 1.10 has no R_AARCH64_ABS32 in loaded sections at all, in any output."""
    return [_non_pic(u, r, f"{_mold_name(u)}:({r.section}): unknown relocation: {r.type}")
            for u, r in found if r.family == PicFamily.ABS32]


def _mold_name(u: Unit) -> str:
    archive, paren, member = u.display.partition("(")
    return os.path.normpath(archive) + paren + member  # mold prints paths cleaned: libx.a, not ./libx.a


def _mold_wording(u: Unit, r: PicRelocation) -> str:
    return (f"{_mold_name(u)}:({r.section}): {r.type} relocation at offset {r.offset:#x} against symbol "
            f"`{r.target}' can not be used; recompile with -fPIC")


def _lld_wording(outcome: Outcome, u: Unit, r: PicRelocation) -> str:
    """lld's error with its `>>> defined in` and `>>> referenced by` lines."""
    against = "local symbol" if r.local else f"symbol '{r.target}'"
    definer = u.display
    if not r.local:
        uid = outcome.table.defs.get(r.target, (None, None))[1]
        definer = outcome.units[uid].display if uid is not None and 0 <= uid < len(outcome.units) else u.display
    archive, paren, member = u.display.partition("(")
    where = (f"{member[:-1]}:({r.section}+{r.offset:#x}) in archive {archive}" if paren
             else f"{u.display}:({r.section}+{r.offset:#x})")
    return (f"relocation {r.type} cannot be used against {against}; recompile with -fPIC\n"
            f">>> defined in {definer}\n>>> referenced by {where}")
