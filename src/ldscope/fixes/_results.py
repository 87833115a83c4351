"""Candidate fixes of a link line, as simulated, and the real linker's verdict (--confirm)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Edit:
    """One change to the linker argv: insert `args` before index `at`, or remove [at, at+count)."""

    op: str  # insert | remove
    at: int
    args: tuple[str, ...] = ()
    count: int = 0


@dataclass(frozen=True, slots=True)
class Fix:
    """A candidate change, simulated; confirmed by the real linker when asked (--confirm)."""

    id: str
    description: str
    edit: tuple[Edit, ...]
    argv: tuple[str, ...]
    fixes_alone: bool
    in_combination: bool
    remaining_errors: int
    reason: str
    confirmed: bool | None = None
    # The same fix on the command the user gave (-Wl,..., -l... at its own positions, or rustc's
    # -C link-arg=...), and whether that exact command was simulated to link.
    user_description: str | None = None
    user_argv: tuple[str, ...] = ()
    user_links: bool | None = None


@dataclass(frozen=True, slots=True)
class Confirmation:
    """The real linker's verdict on the original line (--confirm)."""

    program: str
    exit_status: int | None
    links: bool | None
    agrees: bool | None
    detail: str
