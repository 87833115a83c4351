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

Hostile trees are bounded, and the work is linear in what is on disk.  ldconfig has no limits
of its own: it recurses once per nested include with the file still open, so an include loop
ends only when it runs out of file descriptors (about 1,020 levels) or stack, and it reads a
file again each time it is included, so diamond-shaped includes cost exponential time.  Here
includes are followed with an explicit stack (no recursion), a file already being read is an
include loop (reported, skipped), a file already read is not parsed again (it could add no
directory: those are de-duplicated), and the totals are capped (MAX_* below).  Include
patterns are matched as glob(3) matches them (`*`, `?`, `[...]`, backslash quoting, a leading
`.` matched only explicitly), one component at a time, each directory listed once, with a
matcher linear in the name: never a regular expression that can backtrack.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Sequence
from dataclasses import dataclass

from ldscope.elf import read_regular

MAX_CONF_SIZE = 1 << 20  # bytes read from one configuration file
MAX_TOTAL_SIZE = 16 << 20  # bytes read from all of them
# ldconfig keeps every nesting level open: its depth limit is RLIMIT_NOFILE (1024 by default,
# often far more), after which it warns and goes on.  Memory here is bounded by MAX_TOTAL_SIZE
# whatever the depth, so these are generous.
MAX_FILES = 100_000  # files opened, re-reads included
MAX_DEPTH = 100_000  # include nesting
MAX_MATCHES = 10_000  # paths one include pattern may match (or keep as candidates)
MAX_SYMLINKS = 40  # like glibc's __eloop_threshold
NAME_MAX = 255  # longest directory entry name: a longer glob component matches nothing
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

_CLASSES: dict[bytes, frozenset[int]] = {
    name.encode(): frozenset(b for b in range(128) if test(chr(b)))
    for name, test in (
        ("alpha", str.isalpha), ("digit", str.isdigit), ("alnum", str.isalnum),
        ("upper", str.isupper), ("lower", str.islower), ("space", lambda c: c in _SPACE),
        ("blank", lambda c: c in " \t"), ("xdigit", lambda c: c in "0123456789abcdefABCDEF"),
        ("punct", lambda c: c.isprintable() and not c.isalnum() and c != " "),
        ("print", lambda c: c.isprintable()), ("graph", lambda c: c.isprintable() and c != " "),
        ("cntrl", lambda c: ord(c) < 32 or ord(c) == 127))
}  # the C locale's classes, as ldconfig run with LC_ALL=C sees them


def _bracket(comp: bytes, start: int) -> tuple[frozenset[int], int] | None:
    """A `[...]` expression at `start`: (bytes it matches, index after it); None if unclosed."""
    if comp.find(b"]", start + 2) < 0:  # cheap, and spares a rescan per `[` of `[[[[...`
        return None
    i = start + 1
    negate = i < len(comp) and comp[i] in b"!^"
    if negate:
        i += 1
    chosen: set[int] = set()
    first = True
    while i < len(comp):
        c = comp[i]
        if c == 0x5D and not first:  # ]
            members = frozenset(range(256)) - chosen if negate else frozenset(chosen)
            return members - {0x2F}, i + 1
        first = False
        if c == 0x5B and comp[i + 1:i + 2] in (b":", b"=", b"."):  # [:class:] [=c=] [.c.]
            kind = comp[i + 1:i + 2]
            end = comp.find(kind + b"]", i + 2, i + 20)  # class names are short: no rescans
            if end < 0:
                return None
            inner = comp[i + 2:end]
            if kind == b":":
                if inner not in _CLASSES:
                    return None
                chosen |= _CLASSES[inner]
            elif len(inner) == 1:
                chosen.add(inner[0])
            else:
                return None
            i = end + 2
            continue
        if c == 0x5C and i + 1 < len(comp):  # backslash quotes inside a bracket too
            i += 1
            c = comp[i]
        if comp[i + 1:i + 2] == b"-" and i + 2 < len(comp) and comp[i + 2] != 0x5D:
            high = comp[i + 2]
            if high == 0x5C and i + 3 < len(comp):
                high = comp[i + 3]
                i += 1
            chosen.update(range(c, high + 1))
            i += 3
            continue
        chosen.add(c)
        i += 1
    return None


_ANY = frozenset(range(256)) - {0x2F}  # `?`: any byte a name can hold


class _Segment:
    """A run of single-byte tests between two `*`: fixed width, so matching cannot backtrack."""

    __slots__ = ("regex", "width")

    def __init__(self, units: list[frozenset[int] | int]) -> None:
        self.width = len(units)
        parts = []
        for unit in units:
            if isinstance(unit, int):
                parts.append(re.escape(bytes([unit])))
            elif unit == _ANY:
                parts.append(b"[^/]")
            elif unit:
                parts.append(b"[" + b"".join(b"\\x%02x" % b for b in sorted(unit)) + b"]")
            else:
                parts.append(b"(?!)")
        self.regex = re.compile(b"".join(parts), re.DOTALL)


class _Matcher:
    """One glob(3) path component: segments separated by `*`, matched greedily, leftmost
    first.  With fixed-width segments that is exact, and the cost is linear in the name (times
    a segment's width) however many stars the pattern has."""

    __slots__ = ("dot_ok", "segments", "starred", "width")

    def __init__(self, segments: list[_Segment], starred: bool, dot_ok: bool) -> None:
        self.segments = segments
        self.starred = starred
        self.dot_ok = dot_ok  # the pattern starts with a literal '.' (FNM_PERIOD)
        self.width = sum(seg.width for seg in segments)

    def matches(self, name: bytes) -> bool:
        """True if glob(3) would match `name` (no '/' in it) with this component."""
        if name.startswith(b".") and not self.dot_ok:
            return False
        size = len(name)
        if self.width > size or (not self.starred and self.width != size):
            return False
        segments = self.segments
        if not self.starred:
            return segments[0].regex.fullmatch(name) is not None
        first, last = segments[0], segments[-1]
        if first.width and first.regex.match(name) is None:
            return False
        pos = first.width
        end = size - last.width
        for seg in segments[1:-1]:
            found = seg.regex.search(name, pos, end)
            if found is None:
                return False
            pos = found.end()
        return pos <= end and (not last.width or last.regex.fullmatch(name, end) is not None)


def _compile_component(comp: bytes) -> _Matcher | bytes | None:
    """A component as glob(3) reads it: its literal name (bytes) if it has no magic, else a
    matcher, or None if it can match no name at all (longer than NAME_MAX: parsing stops
    there, so a 40 KB component costs no more than a 256-byte one)."""
    runs: list[list[frozenset[int] | int]] = [[]]
    magic = False
    width = 0  # single-byte tests so far: beyond NAME_MAX nothing can match, stop parsing
    i = 0
    while i < len(comp):
        if width > NAME_MAX:
            return None
        c = comp[i]
        if c == 0x2A:  # *
            magic = True
            if runs[-1] or len(runs) == 1:
                runs.append([])
            i += 1
            continue
        if c == 0x3F:  # ?
            magic = True
            runs[-1].append(_ANY)
            width += 1
            i += 1
            continue
        if c == 0x5B:  # [
            parsed = _bracket(comp, i)
            if parsed is not None:
                magic = True
                runs[-1].append(parsed[0])
                width += 1
                i = parsed[1]
                continue
        if c == 0x5C and i + 1 < len(comp):  # backslash: the next byte as itself
            i += 1
            c = comp[i]
        runs[-1].append(c)
        width += 1
        i += 1
    if width > NAME_MAX:
        return None
    if not magic:
        return bytes(u for u in runs[0] if isinstance(u, int))
    starred = len(runs) > 1
    head = runs[0]
    dot_ok = bool(head) and head[0] == 0x2E
    return _Matcher([_Segment(r) for r in runs], starred, dot_ok)


class _Frame:
    """One configuration file being read: its lines and where the reader is in them."""

    __slots__ = ("key", "lines", "next", "path")

    def __init__(self, path: str, key: str, lines: list[str]) -> None:
        self.path = path
        self.key = key
        self.lines = lines
        self.next = 0


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
        self.stack: list[_Frame | str] = []  # files being read; include matches to open
        self.depth = 0  # files being read
        self.reading: set[str] = set()  # keys of the files on the stack
        self.done: set[str] = set()  # keys of the files read to the end
        self.total = 0
        self.listings: dict[str, list[bytes]] = {}

    def host(self, path: str) -> str | None:
        if self.root is None:
            return path
        return resolve_in_root(self.root, path)

    def run(self, path: str) -> None:
        """parse_conf on the top file, includes followed depth first without recursion.

        The stack holds files being read and, above them, include matches not yet opened:
        ldconfig reads each match to the end (its own includes too) before opening the next,
        and all of them before the including file's next line.
        """
        self.open_file(path, top=True)
        stack = self.stack
        while stack:
            item = stack[-1]
            if isinstance(item, str):
                stack.pop()
                self.open_file(item, top=False)
                continue
            if item.next >= len(item.lines):
                stack.pop()
                self.depth -= 1
                self.reading.discard(item.key)
                self.done.add(item.key)
                continue
            lineno = item.next + 1
            item.next += 1
            for pattern in reversed(self.parse_line(item.path, lineno, item.lines[lineno - 1])):
                stack.extend(reversed(self.include_matches(item.path, lineno, pattern)))

    def open_file(self, path: str, top: bool) -> None:
        """parse_conf's opening of one file, given by its path inside the root."""
        if len(self.files) >= MAX_FILES:
            self.problems.append(f"{path}: not read, more than {MAX_FILES} files included")
            return
        if self.depth >= MAX_DEPTH:
            self.problems.append(f"{path}: not read, includes nested deeper than {MAX_DEPTH}")
            return
        real = self.host(path)
        key = os.path.realpath(real) if real is not None else path
        if key in self.reading:
            self.problems.append(f"{path}: include loop (already being read), skipped")
            return
        if key in self.done:
            self.files.append(path)  # ldconfig reads it again; nothing it says can be new
            return
        try:
            if real is None:
                raise FileNotFoundError(path)
            raw = read_regular(real, min(MAX_CONF_SIZE, MAX_TOTAL_SIZE - self.total) + 1)
        except OSError as exc:
            if top or not isinstance(exc, FileNotFoundError):
                reason = exc.strerror or type(exc).__name__
                self.problems.append(f"{path}: cannot be read ({reason}), ignored")
            return
        limit = min(MAX_CONF_SIZE, MAX_TOTAL_SIZE - self.total)
        if len(raw) > limit:
            self.problems.append(f"{path}: larger than {limit} bytes"
                                 f"{' (all files together)' if limit < MAX_CONF_SIZE else ''},"
                                 " rest ignored")
            raw = raw[:limit]
        self.total += len(raw)
        self.files.append(path)
        self.reading.add(key)
        self.stack.append(_Frame(path, key, raw.decode("utf-8", "surrogateescape").split("\n")))
        self.depth += 1

    def parse_line(self, path: str, lineno: int, line: str) -> list[str]:
        """One line: a directory or hwcap line is handled here, include patterns returned."""
        line = line.split("\0", 1)[0].split("#", 1)[0].lstrip(_SPACE)
        if not line:
            return []
        if line.startswith("include") and line[7:8] in (" ", "\t"):
            return [word for word in line[8:].replace("\t", " ").split(" ") if word]
        if line[:5].lower() == "hwcap" and line[5:6] in (" ", "\t"):
            self.hwcap_lines.append(f"{path}:{lineno}")
        else:
            self.add_dir(line, f"{path}:{lineno}")
        return []

    def include_matches(self, path: str, lineno: int, pattern: str) -> list[str]:
        """parse_conf_include: the files the pattern matches, in sorted order."""
        if not pattern.startswith("/"):
            base = os.path.dirname(path) if "/" in path else self.cwd
            pattern = os.path.join(base, pattern)
        return self.glob(pattern, f"{path}:{lineno}")

    def listing(self, host_dir: str) -> list[bytes]:
        """A directory's names, sorted bytewise, read once however often patterns ask."""
        names = self.listings.get(host_dir)
        if names is None:
            try:
                names = sorted(os.fsencode(n) for n in os.listdir(host_dir))
            except OSError:
                names = []
            self.listings[host_dir] = names
        return names

    def glob(self, pattern: str, where: str) -> list[str]:
        """Paths (inside the root) matching `pattern`, sorted bytewise like glob(3) in C.

        Component by component: a literal component is appended (its existence is checked
        when the next magic one lists it, or when the file is opened); a magic one filters the
        listing of each directory reached so far; intermediate matches must be directories.
        """
        comps = [c for c in pattern.split("/") if c]
        paths = ["/"]
        for position, comp in enumerate(comps):
            last = position == len(comps) - 1
            matcher = _compile_component(os.fsencode(comp))
            if isinstance(matcher, bytes):  # no magic: the name itself
                literal = os.fsdecode(matcher)
                paths = [os.path.join(p, literal) for p in paths]
                continue
            found: list[str] = []
            for parent in paths:
                host_dir = self.host(parent)
                if host_dir is None:
                    continue
                for name in self.listing(host_dir):
                    if name in (b".", b"..") or matcher is None or not matcher.matches(name):
                        continue
                    text = os.fsdecode(name)
                    if not last:
                        host = self.host(os.path.join(parent, text))
                        if host is None or not os.path.isdir(host):
                            continue
                    found.append(os.path.join(parent, text))
                    if len(found) > MAX_MATCHES:
                        self.problems.append(f"{where}: include pattern matches more than "
                                             f"{MAX_MATCHES} paths, the rest ignored")
                        break
                if len(found) > MAX_MATCHES:
                    found = found[:MAX_MATCHES]
                    break
            paths = found
            if not paths:
                return []
        return sorted(paths, key=lambda p: p.encode("utf-8", "surrogateescape"))
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
    reader.run(path)
    for directory in system_dirs:
        reader.add_path(directory.rstrip("/") or "/")
    return LdSoConf(
        tuple(reader.dirs), tuple(reader.files), tuple(reader.problems), tuple(reader.missing),
        tuple(reader.hwcap_lines), root,
    )
