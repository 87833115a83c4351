"""Why a relocation of non-PIC code stops (or only warns about) a shared object or PIE, and
what fixes it (the checks themselves are linker/_pic_checks.py)."""

from __future__ import annotations

from ldscope.vocab import LinkErrorKind

_TEXTREL_COST = ("the loader then writes to those code or read-only pages at every start (they are no "
                 "longer shared between processes, and SELinux's execmod policy or hardened systems refuse it)")


def pic_explanation(kind: LinkErrorKind, who: str, symbol: str | None, label: str) -> str:
    """The explanation of a text relocation (error or warning) or of AArch64 non-PIC code."""
    what = f"the absolute address of {symbol}" if symbol else "absolute addresses"
    if kind == LinkErrorKind.TEXT_RELOCATION:
        return (f"{who} was compiled without -fPIC: it holds {what} in a read-only section, which a shared "
                "object or PIE can only fix up by a dynamic relocation there (a text relocation). "
                f"{label} refuses text relocations here (lld by default, every linker with -z text): recompile "
                "that object (its archive) with -fPIC; linking with -z notext accepts them, but "
                + _TEXTREL_COST)
    if kind == LinkErrorKind.TEXTREL_WARNING:
        return (f"{who} holds {what} in a read-only section, so the output gets text relocations (DT_TEXTREL); "
                f"it links, but {_TEXTREL_COST}. Recompile that object with -fPIC to avoid them")
    return (f"{who} was compiled without -fPIC (AArch64 code addressing {symbol} directly: ADRP/ADD/LDR of a "
            "symbol another module may define, MOVZ/MOVK of an absolute address with -mcmodel=large, or a 32-bit "
            f"absolute address); a shared object or PIE cannot hold that relocation and {label} refuses it. "
            "Recompile that object (its archive) with -fPIC; -z notext does not help")
