"""Which installed Debian package owns a file, read from dpkg's database (never by running dpkg).

The database is `<root>/var/lib/dpkg`: `status` (RFC 822 stanzas; dpkg's pending journal in
`updates/` is applied on top, as dpkg-query does) says which packages are installed, and
`info/PKG.list` or `info/PKG:ARCH.list` (Multi-Arch: same packages) names every path a package
unpacked, one a line.  Only packages whose Status state is installed (or only waiting for
triggers: its files are in place) count; a removed package's leftover list is ignored.

dpkg-divert is ignored: `diversions` is not read, so a diverted path answers for the package
whose list names it (dpkg-query -S would add "diversion by" lines), which is who shipped it.

A path is looked up as given, normalised, with its directory's real path, under its merged-/usr
alias (Debian's lists still say /lib/x86_64-linux-gnu/libc.so.6 where the file is asked for as
/usr/lib/..., and the other way round), and finally by its own real path (a symlink such as
libz.so.1 nobody lists answers for the package of the file it points to).
"""

from __future__ import annotations

import os
import posixpath
import re
from collections.abc import Iterator
from dataclasses import dataclass

from ldscope.elf import read_regular
from ldscope.system._ldconf import resolve_in_root

_DB = "var/lib/dpkg"
# dpkg's package states whose files are all unpacked and configured (dpkg -l "ii", "iW", "it").
_INSTALLED_STATES = frozenset({"installed", "triggers-awaited", "triggers-pending"})
_WANTED_FIELDS = frozenset({"package", "status", "architecture", "version"})
# The top-level directories Debian's usrmerge turns into symlinks into /usr.
_MERGED_DIRS = ("bin", "sbin", "lib", "lib32", "lib64", "libx32", "libo32")
_STANZA_BREAK = re.compile(r"\n[ \t]*\n")


@dataclass(frozen=True, slots=True)
class PackageOwner:
    """An installed Debian package that lists a file, with what dpkg's status says about it."""

    name: str  # without the ":amd64" of a Multi-Arch: same package's list name
    version: str | None
    architecture: str | None  # "amd64", "all", ...; None when the stanza has none
    source: str = "dpkg"


def _stanzas(text: str) -> list[dict[str, str]]:
    """The wanted fields of each stanza of a status file; continuation and malformed lines skipped."""
    out = []
    for block in _STANZA_BREAK.split(text):
        fields: dict[str, str] = {}
        for line in block.split("\n"):
            if line[:1] in (" ", "\t"):  # continuation of a multi-line field (Description, Conffiles)
                continue
            key, sep, value = line.partition(":")
            key = key.lower()
            if sep and key in _WANTED_FIELDS:
                fields[key] = value.strip()
        if fields.get("package"):
            out.append(fields)
    return out


def _read_text(path: str) -> str | None:
    try:
        data = read_regular(path)
    except OSError:
        return None
    # Paths are bytes to dpkg; surrogateescape keeps them equal to what os.fsdecode gives.
    return data.decode("utf-8", "surrogateescape")


def _installed_packages(db: str) -> dict[tuple[str, str], PackageOwner] | None:
    """(name, architecture) → owner for every installed package; None without a readable status."""
    text = _read_text(os.path.join(db, "status"))
    if text is None:
        return None
    records = {}
    texts = [text]
    try:
        entries = os.listdir(os.path.join(db, "updates"))
        journal = sorted((n for n in entries if n.isascii() and n.isdigit()), key=int)
    except OSError:
        journal = []
    for name in journal:  # dpkg's not yet merged journal: later entries replace the status's
        update = _read_text(os.path.join(db, "updates", name))
        if update is not None:
            texts.append(update)
    for chunk in texts:
        for fields in _stanzas(chunk):
            records[(fields["package"], fields.get("architecture", ""))] = fields
    installed = {}
    for (name, arch), fields in records.items():
        status = fields.get("status", "").split()
        if len(status) == 3 and status[2] in _INSTALLED_STATES:
            installed[(name, arch)] = PackageOwner(name, fields.get("version") or None, arch or None)
    return installed


def _build_index(db: str) -> dict[str, PackageOwner]:
    """Path → owner over the lists of the installed packages (empty without a database)."""
    installed = _installed_packages(db)
    info = os.path.join(db, "info")
    try:
        names = sorted(n for n in os.listdir(info) if n.endswith(".list"))
    except OSError:
        return {}
    if not installed:
        return {}
    by_name: dict[str, PackageOwner] = {}
    for (name, _arch), package in sorted(installed.items()):
        by_name.setdefault(name, package)
    index: dict[str, PackageOwner] = {}
    # Every line is indexed: on the development machine (Debian 12, 723 lists, 121,869 lines,
    # 111,358 distinct paths) the whole build, status included, costs 0.06-0.13 s CPU and holds
    # about 16.5 MB, so no filter to native-looking paths is needed (a Python filter on ".so" and
    # bin/lib directories measured 0.08 s and halves the memory, but would leave most files unowned).
    # Lists are taken in reverse name order so that, when several packages list a path (shared
    # directories, Multi-Arch: same files), the first by list name wins; dict.update keeps it in C.
    for list_name in reversed(names):
        stem = list_name[: -len(".list")]
        name, sep, arch = stem.partition(":")
        owner = installed.get((name, arch)) if sep else by_name.get(name)
        if owner is None:  # not installed (config-files, half-installed) or not in status at all
            continue
        text = _read_text(os.path.join(info, list_name))
        if text is not None:
            # Blank and relative lines are malformed; they stay in the index but never match,
            # since every path asked is made absolute first.
            index.update(dict.fromkeys(text.split("\n"), owner))
    index.pop("", None)
    return index


def _usrmerge_alias(path: str) -> str | None:
    """The other spelling of a path under a merged /usr (/lib/x ↔ /usr/lib/x), or None."""
    for top in _MERGED_DIRS:
        merged = f"/usr/{top}"
        if path == merged or path.startswith(merged + "/"):
            return path[len("/usr"):]
        if path == f"/{top}" or path.startswith(f"/{top}/"):
            return "/usr" + path
    return None


def _with_alias(path: str) -> tuple[str, ...]:
    alias = _usrmerge_alias(path)
    return (path,) if alias is None else (path, alias)


class DebianOwners:
    """Which installed Debian package lists a file, from <root>/var/lib/dpkg (read lazily)."""

    def __init__(self, root: str | None = None) -> None:
        top = os.path.abspath(root) if root is not None else "/"
        self._root = None if top == "/" else top
        self._index: dict[str, PackageOwner] | None = None  # built by the first owner_of

    def owner_of(self, path: str) -> PackageOwner | None:
        """The installed package that lists `path` (host's or root's view), or None."""
        if self._index is None:
            self._index = _build_index(os.path.join(self._root or "/", _DB))
        if not self._index or "\0" in path:  # no list names a NUL; lstat would raise on one
            return None
        for candidate in self._candidates(path):
            owner = self._index.get(candidate)
            if owner is not None:
                return owner
        return None

    def _inside(self, path: str) -> str:
        """`path` as seen from inside the root (the root's prefix stripped if present)."""
        path = os.path.abspath(path)  # also normalises; a relative path is taken from the cwd
        if path.startswith("//"):  # POSIX keeps a leading "//"; the lists never spell one
            path = "/" + path.lstrip("/")
        return self._strip_root(path)

    def _strip_root(self, path: str) -> str:
        if self._root is not None and (path == self._root or path.startswith(self._root + "/")):
            return path[len(self._root):] or "/"
        return path

    def _realpath(self, path: str) -> str | None:
        """Real path of `path` inside the root (symlinks resolved there), root's view; None if broken."""
        host = resolve_in_root(self._root, path)
        if host is None:
            return None
        return self._inside(host) if self._root is not None else host

    def _candidates(self, path: str) -> Iterator[str]:
        """The spellings to look up, most literal first (symlinks are resolved only if needed)."""
        if path.startswith("/"):  # as given (only the root's prefix taken off)
            yield self._strip_root(path)
        normal = self._inside(path)
        yield from _with_alias(normal)
        directory, base = posixpath.split(normal)
        real_dir = self._realpath(directory)
        if real_dir is not None:
            yield from _with_alias(posixpath.join(real_dir, base))
        real = self._realpath(normal)
        if real is not None:  # a symlink nobody lists: the owner of what it points to
            yield from _with_alias(real)
