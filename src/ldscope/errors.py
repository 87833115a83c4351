"""The one exception type for malformed or unreadable input, and the one for a run stopped by a signal."""

from __future__ import annotations


class InputFormatError(Exception):
    """A file could not be read as what it claims to be (ELF, archive, script, cache).

    Carries the file, the byte offset where the problem was found (or None) and a short
    reason, so the CLI can print a one-line diagnostic and go on with other files.
    """

    def __init__(self, file: str, reason: str, offset: int | None = None) -> None:
        self.file = file
        self.reason = reason
        self.offset = offset
        super().__init__(self.one_line())

    def one_line(self) -> str:
        """The diagnostic as a person reads it: `file: [at 0x..:] reason`."""
        where = f" at offset {self.offset:#x}" if self.offset is not None else ""
        return f"{self.file}:{where} {self.reason}"


# The issue names it ElfFormatError; archives, scripts and caches raise the same type.
ElfFormatError = InputFormatError


class Interrupted(BaseException):
    """A signal (SIGTERM, SIGHUP, SIGINT) stopped the run after its worker processes were
    stopped; the command exits with 128 + the signal's number, as a shell reports it.

    A BaseException, like KeyboardInterrupt: no `except Exception` on the way out swallows it."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum
