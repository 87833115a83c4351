"""A persistent store of link facts: archive members' and shared libraries' symbol facts kept
between runs, so a gate that predicts the same toolchain's links again does not read the same
libLLVM*.a members, libstdc++.so and libc.so.6 again.

An entry belongs to one file, keyed by its real path, and is used only while the file's
device, inode, size and mtime (nanoseconds) and the fact readers' own source (a fingerprint)
are what they were when it was stored. The format is `marshal` of plain values, decoded into
a fixed list of classes: loading it never runs code (marshal itself is not hardened against
crafted bytes, so the store is trusted as the user's own cache directory is, like the import
cache of `ldscope scan`). A store that cannot be read or written is
ignored (the run is only slower), never an error; the directory is pruned to a bounded size.
Relocatable objects given directly (a build's own .o files) are not stored: they change with
every build and are cheap to read.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import marshal
import os
import tempfile
from enum import Enum
from pathlib import Path
from typing import Any

import numpy as np

from ldscope.elf import read_regular
from ldscope.linker.inputs import _facts, _pic_facts, _sections
from ldscope.linker.inputs._facts import (
    DEFAULT_CACHE,
    ArchiveFacts,
    GroupReferences,
    GroupState,
    LongBranch,
    MemberProblem,
    NonPicRelocation,
    ObjectFacts,
    SharedFacts,
)
from ldscope.linker.inputs._pic_facts import PicFamily, PicRelocation
from ldscope.linker.inputs._sections import BranchSite, SectionShare

_FORMAT = 2  # 2: a member's GroupReferences as a blob of its own
_MAX_ENTRIES = 2000  # files; the oldest are removed beyond this
_MAX_BYTES = 256 << 20

# Every class an entry may hold, by name: nothing else is ever constructed from a store.
_CLASSES: dict[str, type[Any]] = {c.__name__: c for c in (
    ObjectFacts, SharedFacts, MemberProblem, NonPicRelocation, LongBranch, PicRelocation, SectionShare,
    BranchSite)}
_ENUMS: dict[str, type[Enum]] = {PicFamily.__name__: PicFamily}
_SCALARS = frozenset((str, int, float, bool, bytes, type(None)))
_KEYS = frozenset((str, int))
# Tags (lists never occur in facts, so a list is always a tagged value).
_DATACLASS, _ENUM, _ARRAY, _GROUPS, _TUPLE, _DICT = "D", "E", "A", "G", "T", "M"


def facts_fingerprint() -> str:
    """A digest of the readers' sources: facts stored by other code are not used."""
    digest = hashlib.sha256(str(_FORMAT).encode())
    elf_dir = Path(_facts.__file__).resolve().parents[2] / "elf"
    kinds = Path(_facts.__file__).resolve().parents[1] / "_symbol_kinds.py"  # the stored kind numbers
    for path in (_facts.__file__, _pic_facts.__file__, _sections.__file__, __file__, str(kinds),
                 *sorted(map(str, elf_dir.glob("*.py")))):
        try:
            digest.update(Path(path).read_bytes())
        except OSError:
            digest.update(str(path).encode())
    return digest.hexdigest()[:16]


def encode(value: Any) -> Any:
    """A marshal-able form of a facts value (TypeError for anything not known here).

    Plain data (strings, numbers, tuples and dicts of them) is kept as it is; everything else
    becomes a tagged list, and a container holding one is itself tagged, so decoding walks
    only what needs it (a member's thousands of names are never looked at one by one)."""
    kind = type(value)
    if value is None or kind in _SCALARS:
        return value
    if kind is tuple and all(type(v) in _SCALARS for v in value):
        return value  # the common case, names: no call per item
    if kind is dict and all(type(k) in _KEYS for k in value) and all(type(v) in _SCALARS for v in value.values()):
        return value
    if isinstance(value, (str, int, float, bytes)) and not isinstance(value, Enum):
        return value
    if kind in (tuple, dict, frozenset) and _marshals(value):
        return value  # nested plain data (a symbol list's (name, kind) pairs): checked in C
    if isinstance(value, tuple):
        items = tuple(encode(v) for v in value)
        # Tagged only when an item is: an IntEnum stored as its int is plain (it compares equal).
        return [_TUPLE, items] if any(isinstance(v, list) for v in items) else items
    if isinstance(value, frozenset):
        return value if all(isinstance(v, (str, int)) and not isinstance(v, Enum) for v in value) else _unknown(value)
    if isinstance(value, dict):
        if not all(type(k) in (str, int) for k in value):
            return _unknown(value)
        items_of = {k: encode(v) for k, v in value.items()}
        return [_DICT, items_of] if any(isinstance(v, list) for v in items_of.values()) else items_of
    if isinstance(value, Enum):
        if type(value).__name__ not in _ENUMS:
            return value.value if isinstance(value, int) else _unknown(value)
        return [_ENUM, type(value).__name__, value.value]
    if isinstance(value, np.ndarray):
        return [_ARRAY, value.dtype.str, value.shape, value.tobytes()]
    if isinstance(value, GroupReferences):
        # A blob of its own, decoded only if the link asks (GroupReferences.deferred).
        codes, symbols, names, code_of = value.state()
        return [_GROUPS, marshal.dumps((encode(codes), encode(symbols), dict(names), dict(code_of)))]
    if dataclasses.is_dataclass(value) and type(value).__name__ in _CLASSES:
        return [_DATACLASS, type(value).__name__,
                tuple(encode(getattr(value, f.name)) for f in dataclasses.fields(value))]
    return _unknown(value)


def _marshals(value: Any) -> bool:
    """True if marshal takes the value as it is (only exact built-in types inside)."""
    try:
        marshal.dumps(value)
    except ValueError:
        return False
    return True


def _unknown(value: object) -> Any:
    raise TypeError(f"not storable: {type(value).__name__}")


def decode(value: Any) -> Any:
    """The facts value an encoded form stands for (ValueError for a malformed one)."""
    if not isinstance(value, list):
        return value  # plain data, as stored
    tag = value[0]
    if tag == _DATACLASS:
        return _CLASSES[value[1]](*[decode(v) if isinstance(v, list) else v for v in value[2]])
    if tag == _TUPLE:
        return tuple(decode(v) if isinstance(v, list) else v for v in value[1])
    if tag == _DICT:
        return {k: decode(v) if isinstance(v, list) else v for k, v in value[1].items()}
    if tag == _ENUM:
        return _ENUMS[value[1]](value[2])
    if tag == _ARRAY:
        return np.frombuffer(value[3], dtype=np.dtype(value[1])).reshape(value[2]).copy()
    if tag == _GROUPS:
        if not isinstance(value[1], bytes):
            raise ValueError("group references: not a blob")
        return GroupReferences.deferred(functools.partial(_group_state, value[1]))
    raise ValueError(f"unknown tag {tag!r}")


def _group_state(blob: bytes) -> GroupState:
    """A stored GroupReferences' arrays and tables; a blob that does not decode (a damaged
    store) is taken as no references from groups: nothing is then held back as dead."""
    try:
        codes, symbols, names, code_of = marshal.loads(blob)
        codes, symbols = decode(codes), decode(symbols)
        if isinstance(codes, np.ndarray) and isinstance(symbols, np.ndarray) and codes.shape == symbols.shape \
                and isinstance(names, dict) and isinstance(code_of, dict):
            return codes, symbols, names, code_of
    except (KeyError, ValueError, TypeError, IndexError, EOFError):
        pass
    return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64), {}, {}


def use_facts_store(directory: str | None) -> None:
    """Keep link facts between runs under `directory` (None: stop keeping them)."""
    DEFAULT_CACHE.store = FactsStore(directory) if directory else None


def save_facts_store() -> None:
    """Write the facts this run read to the store in use, if any."""
    if DEFAULT_CACHE.store is not None:
        DEFAULT_CACHE.store.save()


class FactsStore:
    """Stored facts under one directory (one file per archive or shared library)."""

    def __init__(self, directory: str, fingerprint: str | None = None) -> None:
        self.directory = directory
        self.fingerprint = fingerprint or facts_fingerprint()
        self._archives: list[tuple[str, tuple[int, int, int, int], ArchiveFacts, int]] = []
        self._shared: list[tuple[str, tuple[int, int, int, int], SharedFacts]] = []

    def _entry_path(self, real: str, kind: str) -> str:
        key = hashlib.sha256(real.encode("utf-8", "surrogateescape")).hexdigest()[:24]
        return os.path.join(self.directory, f"facts-{kind}-{key}.marshal")

    def _read(self, real: str, identity: tuple[int, int, int, int], kind: str) -> dict[str, Any] | None:
        try:
            data = read_regular(self._entry_path(real, kind))
            doc = marshal.loads(data)  # marshal.load(fh) reads piece by piece: ten times slower
        except (OSError, EOFError, ValueError, TypeError):
            return None
        if not isinstance(doc, dict) or doc.get("fingerprint") != self.fingerprint \
                or doc.get("path") != real or doc.get("identity") != identity:
            return None
        return doc

    def attach_archive(self, path: str, st: os.stat_result, facts: ArchiveFacts) -> None:
        """Give a freshly opened archive the members stored for it; remember it for save()."""
        if _is_thin(path):
            return  # its members are other files, which can change while the archive does not
        real = os.path.realpath(path)
        identity = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)
        doc = self._read(real, identity, "archive")
        members = doc.get("members") if doc is not None else None
        stored = members if isinstance(members, dict) else {}
        facts.attach_stored(stored, self._decode_member)
        # Stored with its table (names, index) too when its table was not stored before.
        self._archives.append((real, identity, facts, len(stored) if doc is not None and "table" in doc else -1))

    def load_archive(self, path: str, st: os.stat_result) -> ArchiveFacts | None:
        """An archive whose table (member names, index) and members were stored: the file is
        opened only if a member the store lacks is needed."""
        real = os.path.realpath(path)
        identity = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)
        doc = self._read(real, identity, "archive")
        table = doc.get("table") if doc is not None else None
        members = doc.get("members") if doc is not None else None
        if not (isinstance(table, tuple) and len(table) == 3 and isinstance(members, dict)):
            return None
        names, index, has_gnu_index = table
        if not (isinstance(names, tuple) and isinstance(index, tuple) and isinstance(has_gnu_index, bool)):
            return None
        facts = ArchiveFacts(path=path, opened=None, member_names=names, index_entries=index,
                             has_gnu_index=has_gnu_index)
        facts.attach_stored(members, self._decode_member)
        self._archives.append((real, identity, facts, len(members)))
        return facts

    def _decode_member(self, stored: Any, display: str) -> ObjectFacts | MemberProblem | None:
        try:
            # Each member is its own marshal blob: loading an archive's entry makes bytes
            # objects only, and a member is decoded when the link first needs it.
            encoded = marshal.loads(stored)
            if isinstance(encoded, list) and encoded[:2] == [_DATACLASS, "ObjectFacts"]:
                # Named as this line spells the archive's path (the store is keyed by real path).
                encoded = [_DATACLASS, "ObjectFacts", (display, *encoded[2][1:])]
            found = decode(encoded)
        except (KeyError, ValueError, TypeError, IndexError, EOFError):
            return None
        return found if isinstance(found, (ObjectFacts, MemberProblem)) else None

    def load_shared(self, path: str, st: os.stat_result) -> SharedFacts | None:
        """The stored facts of a shared library, if unchanged (None otherwise)."""
        real = os.path.realpath(path)
        doc = self._read(real, (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns), "shared")
        if doc is None:
            return None
        try:
            found = decode(doc.get("shared"))
        except (KeyError, ValueError, TypeError, IndexError):
            return None
        return dataclasses.replace(found, path=path) if isinstance(found, SharedFacts) else None

    def remember_shared(self, path: str, st: os.stat_result, facts: SharedFacts) -> None:
        """Store a shared library's facts at save()."""
        self._shared.append((os.path.realpath(path), (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns), facts))

    def save(self) -> None:
        """Write what this run read that was not stored yet (atomically; failures ignored)."""
        writes: list[tuple[str, str, dict[str, Any]]] = []
        for real, identity, facts, stored_count in self._archives:
            members = facts.stored_and_parsed(encode_member)
            if len(members) > stored_count:
                table = (facts.member_names, tuple(facts.index_entries), facts.has_gnu_index)
                writes.append((real, "archive", {"identity": identity, "members": members, "table": table}))
        for real, identity, shared in self._shared:
            try:
                writes.append((real, "shared", {"identity": identity, "shared": encode(shared)}))
            except TypeError:
                continue
        self._archives.clear()
        self._shared.clear()
        if not writes:
            return
        try:
            os.makedirs(self.directory, exist_ok=True)
        except OSError:
            return
        for real, kind, doc in writes:
            self._write(real, kind, {"fingerprint": self.fingerprint, "path": real, **doc})
        self._prune()

    def _write(self, real: str, kind: str, doc: dict[str, Any]) -> None:
        tmp = None
        try:
            fd, tmp = tempfile.mkstemp(prefix=".facts-", dir=self.directory)
            with os.fdopen(fd, "wb") as fh:
                marshal.dump(doc, fh)
            os.replace(tmp, self._entry_path(real, kind))
        except (OSError, ValueError):
            if tmp is not None:
                try:
                    os.unlink(tmp)
                except OSError:
                    pass

    def _prune(self) -> None:
        """Keep the directory within _MAX_ENTRIES files and _MAX_BYTES, oldest out first."""
        try:
            entries = [(e.stat().st_mtime, e.stat().st_size, e.path) for e in os.scandir(self.directory)
                       if e.name.startswith("facts-")]
        except OSError:
            return
        entries.sort(reverse=True)
        total = 0
        for k, (_mtime, size, path) in enumerate(entries):
            total += size
            if k >= _MAX_ENTRIES or total > _MAX_BYTES:
                try:
                    os.unlink(path)
                except OSError:
                    pass


def _is_thin(path: str) -> bool:
    try:
        return read_regular(path, 8) == b"!<thin>\n"
    except OSError:
        return True  # unreadable now: store nothing for it


def encode_member(facts: ObjectFacts | MemberProblem) -> bytes:
    """A member's facts in stored form (TypeError if something in them cannot be stored)."""
    try:
        return marshal.dumps(encode(facts))
    except ValueError as exc:  # marshal: an unmarshallable object slipped through
        raise TypeError(str(exc)) from exc

