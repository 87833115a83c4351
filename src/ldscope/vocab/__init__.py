"""The words every model and report shares: severities, problem kinds, when a problem bites,
how a library was found, near-miss kinds, link error kinds, and the near-miss record.

Each vocabulary is an enum whose values are the strings of the JSON schemas (docs/json.md),
so `Severity.ERROR == "error"` and a member prints as its value.
"""

from __future__ import annotations

from ldscope.vocab._kinds import FoundVia, LinkErrorKind, ProblemKind, When
from ldscope.vocab._nearmiss import NearMiss, NearMissKind
from ldscope.vocab._severity import Severity
from ldscope.vocab._words import Words

__all__ = [
    "FoundVia",
    "LinkErrorKind",
    "NearMiss",
    "NearMissKind",
    "ProblemKind",
    "Severity",
    "When",
    "Words",
]
