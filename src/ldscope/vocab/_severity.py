"""How bad a problem or finding is, and the one order in which severities are ranked."""

from __future__ import annotations

from ldscope.vocab._words import Words


class Severity(Words):
    """error (the file does not load or link), warning (it may not), info (worth knowing)."""

    ERROR = "error"
    WARNING = "warning"
    INFO = "info"

    @property
    def rank(self) -> int:
        """0 for the most severe; sorting by rank puts errors first."""
        return _RANK[self]

    @staticmethod
    def rank_of(value: str) -> int:
        """The rank of a severity given as a string (unknown values rank after info)."""
        try:
            return _RANK[Severity(value)]
        except ValueError:
            return len(_RANK)


_RANK: dict[Severity, int] = {Severity.ERROR: 0, Severity.WARNING: 1, Severity.INFO: 2}
