"""Reader for ld.so.conf as glibc 2.36's ldconfig reads it (elf/ldconfig.c parse_conf).

Rules: `#` starts a comment anywhere on a line; leading white space is skipped; blank lines are
ignored; `include PATTERN...` reads every file a glob matches (sorted, relative patterns are
relative to the including file's directory); `hwcap ...` lines are ignored by modern glibc
("hwcap directive ignored"); anything else names a directory, with trailing white space and
slashes removed and an optional `=TYPE` suffix (libc4/libc5/libc6/glibc2) dropped.  Like
ldconfig, directories that do not exist are skipped and a directory listed twice (same device
and inode, so /lib/x and /usr/lib/x on a merged-/usr system count once) keeps its first place.

With `root`, every absolute path (the file, includes, directories, symlink targets) is taken
inside that directory, as `ldconfig -r ROOT` does.
"""

from __future__ import annotations

import glob
import os
import stat
from collections.abc import Sequence
from dataclasses import dataclass

from ldscope.elf import read_regular

MAX_CONF_SIZE = 1 << 20  # bytes read from one configuration file
MAX_FILES = 1000  # files read in total (diamond-shaped includes could otherwise explode)
MAX_DEPTH = 32  # include nesting (ldconfig has no limit and would recurse until it crashes)
MAX_SYMLINKS = 40  # like glibc's __eloop_threshold
_LIB_TYPES = ("libc4", "libc5", "libc6", "glibc2")
_SPACE = " \t\n\v\f\r"
_MAGIC = set("*?[")


@dataclass(frozen=True, slots=True)
class LdSoConf:
    """What ldconfig would make of an ld.so.conf: its directories, in order, and what went wrong."""

    directories: tuple[str, ...]
    files_read: tuple[str, ...]
    problems: tuple[str, ...] = ()
    missing_directories: tuple[str, ...] = ()  # listed, but absent: ldconfig skips them
    ignored_hwcap_lines: tuple[str, ...] = ()  # "file:line" of `hwcap` directives
    root: str | None = None


def resolve_in_root(root: str | None, path: str) -> str | None:
    """Host path of absolute `path` seen from inside `root` (symlinks resolved within it).

    Mirrors ldconfig's chroot_canon: "." and ".." are resolved lexically and never leave the
    root, absolute symlink targets restart at the root; a missing last component is fine, a
    missing intermediate one (or a symlink loop) gives None.  Without a root: os.path.realpath.
    """
    if root is None:
        return os.path.realpath(path)
    top = os.path.abspath(root)
    parts: list[str] = []  # resolved components below top
    pending = [c for c in path.split("/") if c][::-1]
    links = 0
    while pending:
        comp = pending.pop()
        if comp == ".":
            continue
        if comp == "..":
            if parts:
                parts.pop()
            continue
        parts.append(comp)
        host = os.path.join(top, *parts)
        try:
            info = os.lstat(host)
        except OSError:
            if not pending:
                break
            return None
        if stat.S_ISLNK(info.st_mode):
            links += 1
            if links > MAX_SYMLINKS:
                return None
            try:
                target = os.readlink(host)
            except OSError:
                if not pending:
                    break
                return None
            parts.pop()
            if target.startswith("/"):
                parts = []
            pending.extend([c for c in target.split("/") if c][::-1])
    return os.path.join(top, *parts) if parts else top


class _Reader:
    def __init__(self, root: str | None, cwd: str) -> None:
        self.root = root
        self.cwd = cwd
        self.dirs: list[str] = []
        self.seen: set[tuple[int, int]] = set()
        self.files: list[str] = []
        self.problems: list[str] = []
        self.missing: list[str] = []
        self.hwcap_lines: list[str] = []
        self.stack: list[str] = []

    def host(self, path: str) -> str | None:
        if self.root is None:
            return path
        return resolve_in_root(self.root, path)

    def parse_file(self, path: str, top: bool) -> None:
        """parse_conf: one configuration file, given by its path inside the root."""
        if len(self.files) >= MAX_FILES:
            self.problems.append(f"{path}: not read, more than {MAX_FILES} files included")
            return
        if len(self.stack) >= MAX_DEPTH:
            self.problems.append(f"{path}: not read, includes nested deeper than {MAX_DEPTH}")
            return
        real = self.host(path)
        key = os.path.realpath(real) if real is not None else path
        if key in self.stack:
            self.problems.append(f"{path}: include loop (already being read), skipped")
            return
        try:
            if real is None:
                raise FileNotFoundError(path)
            raw = read_regular(real, MAX_CONF_SIZE + 1)
        except OSError as exc:
            if top or not isinstance(exc, FileNotFoundError):
                reason = exc.strerror or type(exc).__name__
                self.problems.append(f"{path}: cannot be read ({reason}), ignored")
            return
        if len(raw) > MAX_CONF_SIZE:
            self.problems.append(f"{path}: larger than {MAX_CONF_SIZE} bytes, rest ignored")
            raw = raw[:MAX_CONF_SIZE]
        self.files.append(path)
        self.stack.append(key)
        try:
            text = raw.decode("utf-8", "surrogateescape")
            for lineno, line in enumerate(text.split("\n"), start=1):
                self.parse_line(path, lineno, line)
        finally:
            self.stack.pop()

    def parse_line(self, path: str, lineno: int, line: str) -> None:
        line = line.split("\0", 1)[0].split("#", 1)[0].lstrip(_SPACE)
        if not line:
            return
        if line.startswith("include") and line[7:8] in (" ", "\t"):
            for word in line[8:].replace("\t", " ").split(" "):
                if word:
                    self.include(path, lineno, word)
        elif line[:5].lower() == "hwcap" and line[5:6] in (" ", "\t"):
            self.hwcap_lines.append(f"{path}:{lineno}")
        else:
            self.add_dir(line, f"{path}:{lineno}")

    def include(self, path: str, lineno: int, pattern: str) -> None:
        """parse_conf_include: read every file the pattern matches, in sorted order."""
        if not pattern.startswith("/"):
            base = os.path.dirname(path) if "/" in path else self.cwd
            pattern = os.path.join(base, pattern)
        for match in self.glob_in_root(pattern, f"{path}:{lineno}"):
            self.parse_file(match, top=False)

    def glob_in_root(self, pattern: str, where: str) -> list[str]:
        """Paths (inside the root) matching `pattern`, sorted bytewise like glob(3) in C."""
        if self.root is None:
            found = glob.glob(pattern)
        else:
            comps = [c for c in pattern.split("/") if c]
            fixed = 0
            while fixed < len(comps) and not _MAGIC & set(comps[fixed]):
                fixed += 1
            prefix = "/" + "/".join(comps[:fixed])
            if fixed == len(comps):
                return [prefix]
            host_prefix = resolve_in_root(self.root, prefix)
            if host_prefix is None:
                self.problems.append(f"{where}: cannot resolve {prefix} inside {self.root}")
                return []
            rest = "/".join(comps[fixed:])
            host_matches = glob.glob(os.path.join(glob.escape(host_prefix), rest))
            found = [os.path.join(prefix, os.path.relpath(m, host_prefix)) for m in host_matches]
        return sorted(found, key=lambda p: p.encode("utf-8", "surrogateescape"))

    def add_dir(self, line: str, where: str) -> None:
        """add_dir_1: one directory line."""
        path, equal, kind = line.partition("=")
        if equal and kind not in _LIB_TYPES:
            self.problems.append(f"{where}: {kind} is not a known library type")
        path = path.rstrip(_SPACE).rstrip("/")
        if not path:
            return
        if not path.startswith("/"):
            self.problems.append(f"{where}: relative directory {path!r} (relative to /)")
        self.add_path(path if path.startswith("/") else "/" + path)

    def add_path(self, path: str) -> None:
        real = self.host(path)
        try:
            if real is None:
                raise FileNotFoundError(path)
            info = os.stat(real)
        except OSError:
            self.missing.append(path)
            return
        ident = (info.st_dev, info.st_ino)
        if ident in self.seen:
            return
        self.seen.add(ident)
        self.dirs.append(path)


def read_ld_so_conf(
    path: str = "/etc/ld.so.conf",
    root: str | None = None,
    *,
    system_dirs: Sequence[str] = (),
) -> LdSoConf:
    """Read ld.so.conf (path inside `root` if given); `system_dirs` are appended like ldconfig's."""
    reader = _Reader(root, "/" if root is not None else os.getcwd())
    reader.parse_file(path, top=True)
    for directory in system_dirs:
        reader.add_path(directory.rstrip("/") or "/")
    return LdSoConf(
        tuple(reader.dirs), tuple(reader.files), tuple(reader.problems), tuple(reader.missing),
        tuple(reader.hwcap_lines), root,
    )
