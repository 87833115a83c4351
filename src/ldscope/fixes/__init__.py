"""The smallest change that fixes it, checked by simulating the change: candidate edits of a
link line, each re-simulated with the same linker in the same environment, and (only when
asked) confirmed by the real linker."""

from __future__ import annotations

from ldscope.fixes._confirm import confirm, run_linker, runnable_argv
from ldscope.fixes._link import apply_edits, candidates, evaluate
from ldscope.fixes._results import Confirmation, Edit, Fix

__all__ = ["Confirmation", "Edit", "Fix", "apply_edits", "candidates", "confirm", "evaluate", "run_linker", "runnable_argv"]
