"""What kind of file a path is (ELF, ar archive, GNU ld script, other), read from its first bytes."""

from __future__ import annotations

import enum

from ldscope.elf._archive import is_archive
from ldscope.elf._file import is_elf
from ldscope.elf._regular import NotRegularFileError, read_regular
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
        head = read_regular(path, SNIFF_BYTES)
    except FileNotFoundError:
        raise InputFormatError(path, "no such file") from None
    except IsADirectoryError:
        raise InputFormatError(path, "is a directory") from None
    except NotRegularFileError as exc:
        raise InputFormatError(path, exc.reason) from None
    except (OSError, ValueError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
        raise InputFormatError(path, f"cannot read: {reason}") from None
    if not head:
        raise InputFormatError(path, "empty file", 0)
    return sniff(head)
