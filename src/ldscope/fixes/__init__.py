"""The smallest change that fixes it, checked by simulating the change: candidate edits of a
link line, each re-simulated with the same linker in the same environment, and (only when
asked) confirmed by the real linker."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ldscope.fixes._results import Confirmation, Edit, Fix

if TYPE_CHECKING:
    from ldscope.fixes._confirm import confirm, run_linker, runnable_argv
    from ldscope.fixes._link import apply_edits, candidates, evaluate

_LINK = frozenset({"apply_edits", "candidates", "evaluate"})
_CONFIRM = frozenset({"confirm", "run_linker", "runnable_argv"})


def __getattr__(name: str) -> Any:
    """The fix finders, imported on first use (the result types above are enough to render)."""
    if name in _LINK:
        from ldscope.fixes import _link

        return getattr(_link, name)
    if name in _CONFIRM:
        from ldscope.fixes import _confirm

        return getattr(_confirm, name)
    raise AttributeError(f"module 'ldscope.fixes' has no attribute {name!r}")

__all__ = ["Confirmation", "Edit", "Fix", "apply_edits", "candidates", "confirm", "evaluate", "run_linker", "runnable_argv"]
