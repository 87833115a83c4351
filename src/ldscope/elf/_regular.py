"""Opening a path for reading only if it is a regular file: never a FIFO, socket or device.

open() of a FIFO without a writer blocks forever, /dev/zero never ends, a tty waits for a
line, and opening some devices has effects of its own (a watchdog, a tape rewinding). Every
place ldscope reads a file whose path comes from its input goes through `open_regular`: the
path is stat'ed first (a special file is never opened at all), then opened with O_NONBLOCK
(so a file swapped for a FIFO between the two calls cannot block the open) and checked again
on the descriptor, which is what is read.
"""

from __future__ import annotations

import errno
import os
import stat
from typing import IO

_FLAGS = os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC


class NotRegularFileError(OSError):
    """A path names a FIFO, socket or device where a file's contents were to be read."""

    def __init__(self, path: str, kind: str) -> None:
        # No errno says "not a regular file"; EINVAL is what reading it as one would be.
        self.reason = f"is a {kind}, not a regular file (not read)"
        super().__init__(errno.EINVAL, self.reason, path)
        self.kind = kind

    def __str__(self) -> str:
        return f"{self.filename}: {self.reason}"


def special_kind(mode: int) -> str | None:
    """What a non-regular file is ("FIFO", "socket", "character device", ...); None for a regular file."""
    if stat.S_ISREG(mode):
        return None
    if stat.S_ISDIR(mode):
        return "directory"
    if stat.S_ISFIFO(mode):
        return "FIFO"
    if stat.S_ISSOCK(mode):
        return "socket"
    if stat.S_ISCHR(mode):
        return "character device"
    if stat.S_ISBLK(mode):
        return "block device"
    return "special file"


def _refuse(path: str | os.PathLike[str], kind: str) -> None:
    if kind == "directory":
        raise IsADirectoryError(errno.EISDIR, "Is a directory", os.fspath(path))
    raise NotRegularFileError(os.fspath(path), kind)


def check_regular(path: str | os.PathLike[str]) -> os.stat_result:
    """stat `path` (following symlinks): IsADirectoryError for a directory, NotRegularFileError
    for a FIFO, socket or device."""
    st = os.stat(path)
    kind = special_kind(st.st_mode)
    if kind is not None:
        _refuse(path, kind)
    return st


def open_regular_fd(path: str | os.PathLike[str]) -> int:
    """A read-only descriptor of the regular file at `path` (OSError otherwise, never blocking)."""
    check_regular(path)
    fd = os.open(path, _FLAGS)
    try:
        kind = special_kind(os.fstat(fd).st_mode)
        if kind is not None:  # replaced between the stat and the open
            _refuse(path, kind)
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd


def open_regular(path: str | os.PathLike[str]) -> IO[bytes]:
    """The regular file at `path` opened for reading in binary (OSError for anything else)."""
    return os.fdopen(open_regular_fd(path), "rb")


def open_regular_text(path: str | os.PathLike[str], encoding: str = "utf-8", errors: str = "replace") -> IO[str]:
    """The regular file at `path` opened for reading as text (OSError for anything else)."""
    return os.fdopen(open_regular_fd(path), "r", encoding=encoding, errors=errors)


def read_regular(path: str | os.PathLike[str], limit: int = -1) -> bytes:
    """The bytes of the regular file at `path`, at most `limit` of them (OSError for anything else)."""
    with open_regular(path) as fh:
        return fh.read(limit)
