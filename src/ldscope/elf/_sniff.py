"""What kind of file a path is (ELF, ar archive, GNU ld script, other), read from its first bytes."""

from __future__ import annotations

import enum
import os
import stat

from ldscope.elf._archive import is_archive
from ldscope.elf._file import is_elf
from ldscope.errors import InputFormatError

SNIFF_BYTES = 4096

# Extensions of files that are never native code, whatever their mode bits: a site-packages
# tree is mostly these (torch: 9,000 headers, 11,000 .py/.pyc), and not stat'ing them halves
# the walk.
NEVER_NATIVE = frozenset({
    "py", "pyc", "pyi", "pyo", "pyx", "pxd", "h", "hh", "hpp", "hxx", "cuh", "cu", "c", "cc",
    "cpp", "cxx", "inc", "txt", "md", "rst", "json", "yaml", "yml", "toml", "cfg", "ini", "cmake",
    "jinja", "typed", "html", "css", "js", "mjs", "png", "jpg", "jpeg", "gif", "svg", "csv",
    "xml", "xsl", "pem", "tmpl",
})  # fmt: skip


class FileKind(enum.Enum):
    """Kinds of input ldscope knows how to read."""

    ELF = "elf"
    ARCHIVE = "archive"
    LINKER_SCRIPT = "linker-script"
    OTHER = "other"


def _looks_like_script(head: bytes) -> bool:
    from ldscope.elf._ldscript import looks_like_linker_script

    return looks_like_linker_script(head)


def sniff(head: bytes) -> FileKind:
    """Classify a file by its first bytes."""
    if is_elf(head):
        return FileKind.ELF
    if is_archive(head):
        return FileKind.ARCHIVE
    if _looks_like_script(head):
        return FileKind.LINKER_SCRIPT
    return FileKind.OTHER


def detect_kind(path: str) -> FileKind:
    """Classify the file at `path`; unreadable or special files raise InputFormatError."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise InputFormatError(path, "no such file") from None
    except OSError as exc:
        raise InputFormatError(path, f"cannot stat: {exc.strerror or exc}") from None
    if stat.S_ISDIR(st.st_mode):
        raise InputFormatError(path, "is a directory")
    if not stat.S_ISREG(st.st_mode):
        raise InputFormatError(path, "not a regular file (device, FIFO or socket); not opened")
    try:
        with open(path, "rb") as fh:
            head = fh.read(SNIFF_BYTES)
    except OSError as exc:
        raise InputFormatError(path, f"cannot read: {exc.strerror or exc}") from None
    if not head:
        raise InputFormatError(path, "empty file", 0)
    return sniff(head)
