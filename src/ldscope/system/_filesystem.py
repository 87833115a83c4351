"""File access for the loader model: the real filesystem, or wheels overlaid on it (read in place)."""

from __future__ import annotations

import os
import stat
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager

from ldscope.elf import ElfFile, read_regular
from ldscope.errors import InputFormatError

# A wheel member larger than this is not decompressed (zip bombs, absurd headers).
MAX_MEMBER_BYTES = 2 << 30


class OSFileSystem:
    """Plain files. Special files (devices, FIFOs, sockets) are never opened."""

    def head(self, path: str, size: int) -> bytes:
        """The first `size` bytes of a regular file (OSError if it cannot be read)."""
        return read_regular(path, size)

    def key(self, path: str) -> tuple[object, ...]:
        """Identity of the file (device, inode): the same file reached by two names is one."""
        st = os.stat(path)
        return (st.st_dev, st.st_ino)

    @contextmanager
    def open_elf(self, path: str) -> Iterator[ElfFile]:
        """An ElfFile for the path (mmap'ed), closed afterwards."""
        elf = ElfFile.open(path)
        try:
            yield elf
        finally:
            elf.close()

    def listdir(self, path: str) -> list[str]:
        """Names in a directory (OSError if unreadable)."""
        return os.listdir(path)

    def is_file(self, path: str) -> bool:
        """True for an existing regular file (after symlinks)."""
        try:
            return stat.S_ISREG(os.stat(path).st_mode)
        except OSError:
            return False


class WheelOverlay(OSFileSystem):
    """A wheel's members appear under `mount` (e.g. an environment's site-packages).

    Members are read from the zip on demand, one at a time; everything else falls through
    to the real filesystem.
    """

    def __init__(self, wheel_path: str, mount: str) -> None:
        self.wheel_path = wheel_path
        self.mount = mount.rstrip("/")
        try:
            self._zip = zipfile.ZipFile(wheel_path)
            infos = self._zip.infolist()
        except (zipfile.BadZipFile, OSError, ValueError) as exc:
            raise InputFormatError(wheel_path, f"not a valid wheel (zip): {exc}") from None
        self.members: dict[str, zipfile.ZipInfo] = {}
        self.dirs: dict[str, set[str]] = {}
        for info in infos:
            if info.is_dir() or info.filename.startswith("/") or ".." in info.filename.split("/"):
                continue
            virtual = f"{self.mount}/{info.filename}"
            self.members[virtual] = info
            parent, _, name = virtual.rpartition("/")
            while parent.startswith(self.mount):
                self.dirs.setdefault(parent, set()).add(name)
                parent, _, name = parent.rpartition("/")

    def close(self) -> None:
        """Close the zip file."""
        self._zip.close()

    def _member(self, path: str) -> zipfile.ZipInfo | None:
        return self.members.get(os.path.normpath(path))

    def read(self, path: str, limit: int | None = None) -> bytes:
        """A member's bytes (bounded), InputFormatError for absurd or corrupt members."""
        info = self._member(path)
        if info is None:
            raise FileNotFoundError(2, "No such file or directory", path)
        if info.file_size > MAX_MEMBER_BYTES:
            raise InputFormatError(
                f"{self.wheel_path}:{info.filename}",
                f"member claims {info.file_size} bytes, more than the {MAX_MEMBER_BYTES} read",
            )
        try:
            with self._zip.open(info) as fh:
                return fh.read(limit if limit is not None else MAX_MEMBER_BYTES + 1)
        except (zipfile.BadZipFile, OSError, EOFError, ValueError, NotImplementedError) as exc:
            raise InputFormatError(f"{self.wheel_path}:{info.filename}", f"cannot decompress: {exc}") from None

    def head(self, path: str, size: int) -> bytes:
        if self._member(path) is not None:
            return self.read(path, size)
        return super().head(path, size)

    def key(self, path: str) -> tuple[object, ...]:
        if self._member(path) is not None:
            return ("wheel", self.wheel_path, os.path.normpath(path))
        return super().key(path)

    @contextmanager
    def open_elf(self, path: str) -> Iterator[ElfFile]:
        if self._member(path) is None:
            with super().open_elf(path) as elf:
                yield elf
            return
        yield ElfFile.from_bytes(self.read(path), f"{self.wheel_path}:{path[len(self.mount) + 1:]}")

    def listdir(self, path: str) -> list[str]:
        names = set(self.dirs.get(os.path.normpath(path), ()))
        try:
            names.update(super().listdir(path))
        except OSError:
            if not names:
                raise
        return sorted(names)

    def is_file(self, path: str) -> bool:
        return self._member(path) is not None or super().is_file(path)

    def virtual_files(self) -> list[str]:
        """Every member's virtual path."""
        return sorted(self.members)
