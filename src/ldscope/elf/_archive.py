"""Unix `ar` archives (GNU, BSD and thin), read lazily (into memory when small, else mapped:
see _snapshot) without running anything.

Layout: an 8-byte magic, then members, each a 60-byte header (name[16] mtime[12] uid[6]
gid[6] mode[8] size[10] "`\\n") and its data padded to an even offset.  GNU archives keep
the symbol index in a first member named `/` (or `/SYM64/`), long names in `//` and refer
to them as `/123`; BSD archives use `__.SYMDEF*` and `#1/NN` names stored before the data;
thin archives (`!<thin>`) keep only headers, the members' data stays in files named
relative to the archive's directory.

Symbol and member names are bytes on disk; they are decoded as UTF-8 with
`surrogateescape`, so they round-trip exactly and never raise.

GNU ld on ELF targets only understands the GNU index (`/`, `/SYM64/`): an archive whose
only index is BSD `__.SYMDEF` is refused like one without index ("archive has no index;
run ranlib to add one"); see `Archive.ld_reports_no_index`.
"""

from __future__ import annotations

import contextlib
import mmap
import os
import struct
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType, TracebackType

from ldscope.elf import constants as C
from ldscope.elf._extents import DataExtents, check_on_disk, path_extents
from ldscope.elf._regular import NotRegularFileError, open_regular_fd
from ldscope.elf._snapshot import COPY_LIMIT_BYTES, FileGuard, read_or_map
from ldscope.errors import InputFormatError

AR_MAGIC = b"!<arch>\n"
THIN_MAGIC = b"!<thin>\n"
HEADER_SIZE = 60
_FMAG = b"`\n"
_GNU_INDEX_FORMATS = ("gnu", "gnu64")


def _decode(raw: bytes) -> str:
    return raw.decode("utf-8", "surrogateescape")


def is_archive(first_bytes: bytes) -> bool:
    """True when the bytes start with the ar magic of a regular or thin archive."""
    return first_bytes[:8] in (AR_MAGIC, THIN_MAGIC)


@dataclass(frozen=True, slots=True)
class ArchiveMember:
    """One regular member: its name, where its data is, its header fields and what it holds.

    `offset` is where the data starts in the file that holds it: the archive itself, or
    for a thin archive the external file `path` (then `offset` is 0).  `mode` is the
    octal header field as an int.  `skip_reason` says why a member is not an ELF object
    that a linker could use (None for ELF members).
    """

    index: int
    name: str
    header_offset: int
    offset: int
    size: int
    mtime: int
    uid: int
    gid: int
    mode: int
    is_elf: bool
    skip_reason: str | None
    path: str | None = None


def _describe_non_elf(head: bytes, size: int, name: str) -> str:
    """Why a member whose data starts with `head` is not an ELF object."""
    if size == 0:
        return "empty member"
    if head.startswith(b"BC\xc0\xde") or head.startswith(b"\xde\xc0\x17\x0b"):
        return "LLVM bitcode, not an ELF object (needs LTO with the LLVM plugin)"
    if head.startswith(b"rust\0") or name.endswith(".rmeta"):
        return "Rust crate metadata (rmeta), not object code"
    if head.startswith(b"RUST_OBJECT"):
        return "compressed Rust bitcode (RUST_OBJECT), not object code"
    if head.startswith((AR_MAGIC, THIN_MAGIC)):
        return "nested archive, not an ELF object"
    if head.startswith((b"\xcf\xfa\xed\xfe", b"\xce\xfa\xed\xfe", b"\xfe\xed\xfa")):
        return "Mach-O object, not ELF"
    if head.startswith(b"\0asm"):
        return "WebAssembly object, not ELF"
    if head.startswith(b"go object "):
        return "Go object file, not ELF"
    if head[:2] in (b"\x64\x86", b"\x4c\x01", b"\x64\xaa", b"\xc4\x01"):
        return "COFF object, not ELF"
    if size < 4:
        return f"too small to be an ELF object ({size} bytes)"
    return f"not an ELF object (starts with {head[:4].hex()})"


def _open_readonly(path: str, what: str) -> tuple[bytes | mmap.mmap, FileGuard | None] | None:
    """A regular file's bytes without blocking on FIFOs: read when small, else mapped with a
    guard (see `_snapshot`); None for an empty file."""
    try:
        fd = open_regular_fd(path)
    except NotRegularFileError as exc:
        raise InputFormatError(path, f"{what} {exc.reason}") from None
    except (OSError, ValueError) as exc:  # ValueError: NUL byte in the path
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
        raise InputFormatError(path, f"cannot open {what}: {reason}") from None
    try:
        st = os.fstat(fd)
        if st.st_size == 0:
            return None
        try:
            return read_or_map(fd, path, st)
        except (OSError, ValueError) as exc:
            raise InputFormatError(path, f"cannot map {what}: {exc}") from None
    finally:
        os.close(fd)


def _probe(path: str) -> tuple[bytes, str | None]:
    """First bytes of a thin archive's member file, or why it can't be read."""
    try:
        fd = open_regular_fd(path)
    except FileNotFoundError:
        return b"", f"thin archive member file not found: {path}"
    except ValueError:
        return b"", f"thin archive member name is not a valid path: {path!r}"
    except NotRegularFileError as exc:
        return b"", f"thin archive member is not a regular file: {path} ({exc.kind})"
    except OSError as exc:
        return b"", f"thin archive member file unreadable: {path}: {exc.strerror or exc}"
    try:
        return os.read(fd, 16), None
    except OSError as exc:
        return b"", f"thin archive member file unreadable: {path}: {exc.strerror or exc}"
    finally:
        os.close(fd)


class Archive:
    """A parsed ar archive: members, symbol index, and zero-copy access to member data."""

    def __init__(
        self, name: str, buf: memoryview, mm: mmap.mmap | None, base_dir: str | None,
        guard: FileGuard | None = None, extents: DataExtents | None = None,
    ) -> None:
        self.name = name
        self._extents = extents  # which bytes are really on disk (None: all); see elf._extents
        self._mm = mm
        self._guard = guard  # a mapped archive's identity, checked before members are handed out
        self._view: memoryview | None = buf
        self._base_dir = base_dir if base_dir is not None else os.path.dirname(name)
        self._thin_maps: dict[int, tuple[mmap.mmap | None, memoryview, FileGuard | None]] = {}
        self.kind = "gnu"
        self.members: list[ArchiveMember] = []
        self.has_index = False
        self.index_format: str | None = None
        self.index_entries: tuple[tuple[str, int], ...] = ()
        self.index: Mapping[str, tuple[int, ...]] = MappingProxyType({})
        self._symbols_by_member: dict[int, tuple[str, ...]] | None = None
        self._nested: set[int] = set()
        try:
            self._parse(buf)
            if guard is not None:
                guard.check()  # the headers just walked are one state of the file
        except BaseException:
            self.close()
            raise

    # ---- construction -------------------------------------------------------------------
    @classmethod
    def open(cls, path: str | os.PathLike[str]) -> Archive:
        """Map the archive at `path` read-only and parse its headers and index."""
        name = os.fspath(path)
        opened = _open_readonly(name, "archive")
        if opened is None:
            raise InputFormatError(name, "empty file, not an ar archive", 0)
        raw, guard = opened
        return cls(name, memoryview(raw), raw if isinstance(raw, mmap.mmap) else None, None, guard,
                   path_extents(name))

    @classmethod
    def from_buffer(
        cls, buf: bytes | bytearray | memoryview, name: str, base_dir: str | None = None
    ) -> Archive:
        """Parse an archive held in memory; thin members resolve against `base_dir`."""
        view = memoryview(buf)
        if view.ndim != 1 or view.itemsize != 1 or view.format != "B":
            view = view.cast("B")
        return cls(name, view, None, base_dir)

    # ---- parsing ------------------------------------------------------------------------
    def _error(self, reason: str, offset: int | None = None) -> InputFormatError:
        return InputFormatError(self.name, reason, offset)

    def _field(self, raw: bytes, what: str, offset: int, base: int = 10) -> int:
        text = raw.rstrip(b" ")
        if not text:
            return 0
        digits = b"01234567" if base == 8 else b"0123456789"
        if text.lstrip(digits):
            raise self._error(f"member header field {what} is not a number: {raw!r}", offset)
        return int(text, base)

    def _parse(self, buf: memoryview) -> None:
        total = len(buf)
        magic = bytes(buf[:8])
        if magic not in (AR_MAGIC, THIN_MAGIC):
            raise self._error("not an ar archive (bad magic)", 0)
        thin = magic == THIN_MAGIC
        longnames: bytes | None = None
        index_raw: tuple[str, int, int] | None = None  # (format, data offset, size)
        gnu_marks = bsd_marks = 0
        offset_to_member: dict[int, int] = {}
        pos = 8
        first = True
        while pos < total:
            if total - pos < HEADER_SIZE:
                if not bytes(buf[pos:]).strip(b"\n\0"):
                    break
                raise self._error("truncated member header", pos)
            hdr = bytes(buf[pos : pos + HEADER_SIZE])
            if hdr[58:60] != _FMAG:
                raise self._error("bad member header terminator (corrupt archive)", pos + 58)
            size = self._field(hdr[48:58], "size", pos + 48)
            data = pos + HEADER_SIZE
            stripped = hdr[0:16].rstrip(b" ")
            special = stripped in (b"/", b"/SYM64/", b"//") or stripped.startswith(b"/<")
            inline = not thin or special
            if inline and size > total - data:
                raise self._error(
                    f"member size {size} runs past the end of the file ({total} bytes)", pos
                )
            header_offset = pos
            pos = data + size + (size & 1) if inline else data
            if special:
                gnu_marks += 1
                if stripped == b"//":
                    if longnames is not None:
                        raise self._error("second long-name table '//'", header_offset)
                    check_on_disk(self._extents, self.name, "long-name table '//'", data, size, size, data)
                    longnames = bytes(buf[data : data + size])
                elif first and stripped in (b"/", b"/SYM64/"):
                    index_raw = ("gnu" if stripped == b"/" else "gnu64", data, size)
                first = False
                continue
            name, data, size, thin_path, nested = self._member_name(
                buf, stripped, longnames, header_offset, data, size, thin
            )
            if stripped.startswith(b"#1/"):
                bsd_marks += 1
            elif stripped.endswith(b"/") or stripped.startswith(b"/"):
                gnu_marks += 1
            else:
                bsd_marks += 1
            if first and not thin and name.startswith("__.SYMDEF"):
                first = False
                index_raw = ("bsd64" if name.startswith("__.SYMDEF_64") else "bsd", data, size)
                continue
            first = False
            self._add_member(buf, name, hdr, header_offset, data, size, thin_path, nested)
            offset_to_member[header_offset] = len(self.members) - 1
        self.kind = "thin" if thin else ("bsd" if bsd_marks > gnu_marks else "gnu")
        if index_raw is not None:
            fmt, start, size = index_raw
            self._read_index(buf, fmt, start, size, offset_to_member)

    def _member_name(
        self,
        buf: memoryview,
        stripped: bytes,
        longnames: bytes | None,
        header_offset: int,
        data: int,
        size: int,
        thin: bool,
    ) -> tuple[str, int, int, str | None, int | None]:
        """Resolve the member's name; return (name, data offset, data size, path, nested)."""
        nested: int | None = None
        if stripped.startswith(b"#1/"):
            length = self._field(stripped[3:], "#1/ name length", header_offset)
            if length > size:
                raise self._error(
                    f"BSD long name length {length} exceeds member size {size}", header_offset
                )
            if thin:
                raise self._error("BSD '#1/' name in a thin archive", header_offset)
            raw = bytes(buf[data : data + length]).split(b"\0", 1)[0]
            return _decode(raw), data + length, size - length, None, None
        if stripped[:1] == b"/" and stripped[1:2].isdigit():
            ref, _, origin = stripped[1:].partition(b":")
            where = self._field(ref, "long name offset", header_offset)
            if origin:
                nested = self._field(origin, "nested member offset", header_offset)
            if longnames is None:
                raise self._error("long name reference without a '//' table", header_offset)
            if where >= len(longnames):
                raise self._error(
                    f"long name offset {where} outside the '//' table ({len(longnames)} bytes)",
                    header_offset,
                )
            end = longnames.find(b"\n", where)
            raw = longnames[where : end if end >= 0 else len(longnames)]
            raw = raw[:-1] if raw.endswith(b"/") else raw
        else:
            raw = stripped[:-1] if stripped.endswith(b"/") else stripped
        name = _decode(raw)
        if not thin:
            return name, data, size, None, None
        path = _decode(raw.replace(b"\\", b"/"))
        if not os.path.isabs(path):
            path = os.path.normpath(os.path.join(self._base_dir, path))
        return name, 0, size, path, nested

    def _view_or_fail(self) -> memoryview:
        if self._view is None:
            raise ValueError(f"{self.name}: archive is closed")
        return self._view

    def _add_member(
        self,
        buf: memoryview,
        name: str,
        hdr: bytes,
        header_offset: int,
        data: int,
        size: int,
        thin_path: str | None,
        nested: int | None,
    ) -> None:
        mtime = self._field(hdr[16:28], "mtime", header_offset + 16)
        uid = self._field(hdr[28:34], "uid", header_offset + 28)
        gid = self._field(hdr[34:40], "gid", header_offset + 34)
        mode = self._field(hdr[40:48], "mode", header_offset + 40, base=8)
        reason: str | None
        if thin_path is None:
            head = bytes(buf[data : data + min(size, 16)])
            reason = None
            try:
                # A member is read whole: one that is mostly holes claims bytes nobody wrote.
                check_on_disk(self._extents, self.name, f"member {name!r}", data, size, size, data)
            except InputFormatError as exc:
                reason = exc.reason
        elif nested is not None:
            self._nested.add(len(self.members))
            head = b""
            reason = (
                f"member at offset {nested} of nested archive {thin_path} "
                "(nested thin archives are not supported)"
            )
        else:
            head, reason = _probe(thin_path)
        is_elf = reason is None and head.startswith(C.ELF_MAGIC)
        if reason is None and not is_elf:
            reason = _describe_non_elf(head, size, name)
        self.members.append(
            ArchiveMember(
                index=len(self.members),
                name=name,
                header_offset=header_offset,
                offset=data,
                size=size,
                mtime=mtime,
                uid=uid,
                gid=gid,
                mode=mode,
                is_elf=is_elf,
                skip_reason=reason,
                path=thin_path,
            )
        )

    def _read_index(
        self, buf: memoryview, fmt: str, start: int, size: int, offset_to_member: dict[int, int]
    ) -> None:
        check_on_disk(self._extents, self.name, "symbol index", start, size, size, start)
        table = bytes(buf[start : start + size])
        if fmt in _GNU_INDEX_FORMATS:
            pairs = self._gnu_index(table, 8 if fmt == "gnu64" else 4, start)
        else:
            pairs = self._bsd_index(table, 8 if fmt == "bsd64" else 4, start)
        entries: list[tuple[str, int]] = []
        by_name: dict[str, dict[int, None]] = {}  # ordered sets: index order, no repeats
        for sym, hdr_off in pairs:
            member = offset_to_member.get(hdr_off)
            if member is None:
                raise self._error(
                    f"symbol index entry {sym!r} points at offset {hdr_off:#x}, "
                    "which is not a member header",
                    start,
                )
            entries.append((sym, member))
            by_name.setdefault(sym, {})[member] = None
        self.has_index = True
        self.index_format = fmt
        self.index_entries = tuple(entries)
        self.index = MappingProxyType({k: tuple(v) for k, v in by_name.items()})

    def _gnu_index(self, table: bytes, width: int, start: int) -> list[tuple[str, int]]:
        """GNU `/` or `/SYM64/`: big-endian count, offsets, NUL-terminated names."""
        code = ">Q" if width == 8 else ">I"
        if len(table) < width:
            raise self._error("symbol index too short for its count", start)
        (count,) = struct.unpack_from(code, table, 0)
        if count > (len(table) - width) // width:
            raise self._error(f"symbol index count {count} larger than the index", start)
        offs = struct.unpack_from(f">{count}{code[1]}", table, width)
        names = table[width + count * width :].split(b"\0", count)
        if len(names) <= count:
            raise self._error(f"symbol index has fewer than {count} names", start)
        return [(_decode(names[i]), offs[i]) for i in range(count)]

    def _bsd_index(self, table: bytes, width: int, start: int) -> list[tuple[str, int]]:
        """BSD `__.SYMDEF`: ranlib array size, (strx, off) pairs, string table size, strings."""
        for order in ("<", ">"):
            code = order + ("Q" if width == 8 else "I")
            if len(table) < width:
                break
            (nbytes,) = struct.unpack_from(code, table, 0)
            if nbytes % (2 * width) or nbytes > len(table) - 2 * width:
                continue
            (strsize,) = struct.unpack_from(code, table, width + nbytes)
            strtab_at = 2 * width + nbytes
            if strsize > len(table) - strtab_at:
                continue
            strtab = table[strtab_at : strtab_at + strsize]
            count = nbytes // (2 * width)
            flat = struct.unpack_from(f"{order}{2 * count}{code[1]}", table, width)
            pairs: list[tuple[str, int]] = []
            for i in range(count):
                strx, off = flat[2 * i], flat[2 * i + 1]
                if strx >= len(strtab):
                    raise self._error(f"symbol name offset {strx} outside the string table", start)
                end = strtab.find(b"\0", strx)
                pairs.append((_decode(strtab[strx : end if end >= 0 else len(strtab)]), off))
            return pairs
        raise self._error("BSD symbol index (__.SYMDEF) sizes do not fit the member", start)

    # ---- queries ------------------------------------------------------------------------
    @property
    def ld_reports_no_index(self) -> bool:
        """True when GNU ld would refuse this archive: members but no GNU symbol index."""
        return bool(self.members) and self.index_format not in _GNU_INDEX_FORMATS

    def members_defining(self, symbol: str) -> tuple[ArchiveMember, ...]:
        """The members the index says define `symbol`, in index order."""
        return tuple(self.members[i] for i in self.index.get(symbol, ()))

    def symbols_defined_by(self, member: ArchiveMember | int) -> tuple[str, ...]:
        """The symbols the index attributes to `member`, in index order."""
        if self._symbols_by_member is None:
            acc: dict[int, list[str]] = {}
            for sym, idx in self.index_entries:
                acc.setdefault(idx, []).append(sym)
            self._symbols_by_member = {k: tuple(v) for k, v in acc.items()}
        idx = member if isinstance(member, int) else member.index
        return self._symbols_by_member.get(idx, ())

    def member_data(self, member: ArchiveMember | int) -> memoryview:
        """The member's bytes: a slice of the archive's bytes or a thin member's, read with
        pread when the file is mapped (see `_safe_slice`)."""
        view = self._view_or_fail()
        if isinstance(member, int):
            if not 0 <= member < len(self.members):
                raise ValueError(f"{self.name}: no member number {member}")
            m = self.members[member]
        else:
            m = member
            if not (0 <= m.index < len(self.members) and self.members[m.index] == m):
                raise ValueError(f"{self.name}: member {m.name!r} is not from this archive")
        if m.path is None:
            return self._safe_slice(view, m.offset, m.size, self._guard)
        cached = self._thin_maps.get(m.index)
        if cached is None:
            if m.index in self._nested:
                raise self._error(m.skip_reason or "nested thin archive member")
            opened = _open_readonly(m.path, "thin archive member")
            if opened is None:
                cached = (None, memoryview(b""), None)
            else:
                raw, guard = opened
                cached = (raw if isinstance(raw, mmap.mmap) else None, memoryview(raw), guard)
            self._thin_maps[m.index] = cached
        return self._safe_slice(cached[1], 0, len(cached[1]), cached[2])

    @staticmethod
    def _safe_slice(view: memoryview, offset: int, size: int, guard: FileGuard | None) -> memoryview:
        """A member's bytes that a truncation of a mapped archive cannot fault on: read with
        pread after a fresh fstat (a member is parsed right away, and mostly read: the copy
        costs about what parsing it touches). Members over COPY_LIMIT_BYTES stay views of the
        mapping: the window of `_snapshot` remains for them. An archive read into memory
        (small ones are) needs neither."""
        if guard is None:
            return view[offset : offset + size]
        if size <= COPY_LIMIT_BYTES:
            return memoryview(guard.read(offset, size))
        guard.check()
        return view[offset : offset + size]

    # ---- lifetime -----------------------------------------------------------------------
    def close(self) -> None:
        """Release the mappings; views already handed out keep theirs alive until dropped."""
        views = [v for _, v, _ in self._thin_maps.values()]
        maps = [mm for mm, _, _ in self._thin_maps.values()]
        for _, _, guard in self._thin_maps.values():
            if guard is not None:
                guard.close()
        self._thin_maps.clear()
        if self._guard is not None:
            self._guard.close()
            self._guard = None
        if self._view is not None:
            views.append(self._view)
            self._view = None
        if self._mm is not None:
            maps.append(self._mm)
            self._mm = None
        for v in views:
            v.release()
        for mm in maps:
            if mm is None:
                continue
            # If callers still hold slices the mapping stays until they drop them.
            with contextlib.suppress(BufferError):
                mm.close()

    def __enter__(self) -> Archive:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return (
            f"Archive({self.name!r}, kind={self.kind!r}, members={len(self.members)}, "
            f"index={self.index_format!r})"
        )
