"""The base of every vocabulary: a string enum that prints as its value."""

from __future__ import annotations

from enum import Enum


class Words(str, Enum):
    """A vocabulary member is its JSON string: equal to it, hashed like it, printed as it."""

    def __str__(self) -> str:
        return str(self.value)

    def __format__(self, spec: str) -> str:
        return format(str(self.value), spec)
