"""The persistent store of link facts (linker/inputs/_facts_store.py): what a run reads is
kept between runs, used only while its file is unchanged, decoded into known classes only, and
a broken store is ignored. Every comparison is against facts read afresh from the file."""

from __future__ import annotations

import dataclasses
import gc
import json
import marshal
import os
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from ldscope.cli import cli
from ldscope.linker.inputs import (
    DEFAULT_CACHE,
    ArchiveFacts,
    FactsCache,
    FactsStore,
    ObjectFacts,
    SharedFacts,
    read_facts,
)
from ldscope.linker.inputs._facts_store import decode, encode

pytestmark = pytest.mark.skipif(shutil.which("g++") is None or shutil.which("ar") is None,
                                reason="g++ and ar needed")

_SHAPE = """
struct Shape { virtual ~Shape(); virtual double area() const = 0; };
template <class T> T twice(T x) { return x + x; }
"""


def _same(a: object, b: object) -> None:
    """Field by field (numpy arrays by value)."""
    assert type(a) is type(b)
    for f in dataclasses.fields(a):  # type: ignore[arg-type]
        x, y = getattr(a, f.name), getattr(b, f.name)
        if f.name == "group_references":
            assert (x is None) == (y is None)
            if x is not None:
                for p, q in zip(x.state(), y.state()):
                    assert (np.array_equal(p, q) if isinstance(p, np.ndarray) else p == q), f.name
            continue
        assert x == y, f.name


def _cxx_archive(tmp_path: Path, body: str = "") -> Path:
    """libshape.a: two C++ members with COMDAT groups (inline templates, vtables)."""
    (tmp_path / "shape.h").write_text(_SHAPE)
    (tmp_path / "a.cc").write_text('#include "shape.h"\nShape::~Shape() {}\nint use_a() { return twice(2); }\n' + body)
    (tmp_path / "b.cc").write_text('#include "shape.h"\nstruct Sq : Shape { double area() const override { return 4; } };\n'
                                   'double use_b() { Sq s; return s.area() + twice(1.5); }\n')
    (tmp_path / "main.cc").write_text("int use_a(); double use_b();\nint main() { return use_a() + int(use_b()); }\n")
    for name in ("a", "b", "main"):
        subprocess.run(["g++", "-O1", "-c", f"{name}.cc"], cwd=tmp_path, check=True)
    archive = tmp_path / "libshape.a"
    archive.unlink(missing_ok=True)
    subprocess.run(["ar", "rcs", str(archive), "a.o", "b.o"], cwd=tmp_path, check=True)
    return archive


def test_facts_survive_encoding_exactly(tmp_path: Path) -> None:
    """Archive members (C++ with groups, libc.a's) and shared libraries round-trip unchanged."""
    paths = [str(_cxx_archive(tmp_path))]
    paths += [p for p in ("/usr/lib/x86_64-linux-gnu/libc.so.6", "/usr/lib/x86_64-linux-gnu/libstdc++.so.6",
                          "/usr/lib/x86_64-linux-gnu/libc_nonshared.a") if os.path.exists(p)]
    checked = 0
    for path in paths:
        facts = read_facts(path)
        items = [facts] if isinstance(facts, SharedFacts) else [
            facts.member(i) for i in range(len(facts.member_names))] if isinstance(facts, ArchiveFacts) else []
        for item in items:
            _same(item, decode(marshal.loads(marshal.dumps(encode(item)))))
            checked += 1
    assert checked >= 3
    with_groups = read_facts(paths[0])
    assert isinstance(with_groups, ArchiveFacts)
    member = with_groups.member(0)
    assert isinstance(member, ObjectFacts) and member.groups and member.group_references is not None


def test_decoding_builds_only_known_classes() -> None:
    """A crafted entry naming another class is refused, never constructed."""
    for crafted in (["D", "Popen", ("ls",)], ["E", "Path", "/"], ["X", 1]):
        with pytest.raises((KeyError, ValueError)):
            decode(crafted)
    with pytest.raises(TypeError):
        encode(Path("/"))


def test_stored_group_references_are_decoded_on_first_use(tmp_path: Path) -> None:
    """A member's GroupReferences is a blob of its own, decoded when the link first asks, to
    the same answers; a damaged blob answers that nothing is referenced only from groups."""
    facts = read_facts(str(_cxx_archive(tmp_path)))
    assert isinstance(facts, ArchiveFacts)
    fresh = facts.member(1)
    assert isinstance(fresh, ObjectFacts) and fresh.group_references is not None
    back = decode(marshal.loads(marshal.dumps(encode(fresh))))
    assert isinstance(back, ObjectFacts) and back.group_references is not None
    for groups in ([fresh.groups[0]], list(fresh.groups), []):
        assert back.group_references.only_from(groups) == fresh.group_references.only_from(groups)
    with pytest.raises(ValueError):
        decode(["G", "not a blob"])
    damaged = decode(["G", b"\x00 not marshal"])
    assert damaged.only_from(["anything"]) == frozenset()


def _cache_with_store(directory: Path) -> FactsCache:
    cache = FactsCache()
    cache.store = FactsStore(str(directory))
    return cache


def _stored_archive(tmp_path: Path) -> tuple[Path, Path, ArchiveFacts, list[object]]:
    """A C++ archive read once through a store (every member) and the store saved:
    (archive, store directory, its facts, the members' facts as parsed)."""
    archive = _cxx_archive(tmp_path)
    store = tmp_path / "store"
    cache = _cache_with_store(store)
    facts = cache.get(str(archive))
    assert isinstance(facts, ArchiveFacts)
    parsed: list[object] = [facts.member(i) for i in range(len(facts.member_names))]
    assert cache.store is not None
    cache.store.save()
    return archive, store, facts, parsed


def test_a_second_run_reads_members_from_the_store_and_a_changed_file_afresh(tmp_path: Path) -> None:
    """Run 1 parses and stores; run 2 decodes the same facts; after the archive is rebuilt
    without a symbol, run 3 sees the new contents (identity changed), not the stored ones."""
    archive, store, _facts, parsed = _stored_archive(tmp_path)
    assert any(name.startswith("facts-archive-") for name in os.listdir(store))

    second = _cache_with_store(store)
    again = second.get(str(archive))
    assert isinstance(again, ArchiveFacts) and again._stored is not None and len(again._stored) == len(parsed)
    for i, old in enumerate(parsed):
        _same(old, again.member(i))

    stat = archive.stat()
    _cxx_archive(tmp_path, body="int extra_symbol_only_in_the_new_build = 1;\n")
    os.utime(archive, ns=(stat.st_atime_ns, stat.st_mtime_ns + 10**9))
    third = _cache_with_store(store)
    fresh = third.get(str(archive))
    assert isinstance(fresh, ArchiveFacts) and not fresh._stored
    member = fresh.member(0)
    assert isinstance(member, ObjectFacts) and "extra_symbol_only_in_the_new_build" in member.strong


def test_shared_library_facts_come_back_named_as_given(tmp_path: Path) -> None:
    """A library stored under its real path answers a symlink's spelling with that spelling."""
    real = Path("/usr/lib/x86_64-linux-gnu/libm.so.6")
    if not real.exists():
        pytest.skip("no libm.so.6")
    store = tmp_path / "store"
    cache = _cache_with_store(store)
    first = cache.get(str(real))
    assert cache.store is not None
    cache.store.save()
    link = tmp_path / "libm-alias.so"
    link.symlink_to(real)
    again = _cache_with_store(store).get(str(link))
    assert isinstance(first, SharedFacts) and isinstance(again, SharedFacts)
    assert again.path == str(link) and again.defs == first.defs and again.needed == first.needed


def test_a_corrupt_store_is_ignored(tmp_path: Path) -> None:
    """Garbage in every entry: the facts are read from the files, as without a store."""
    archive, store, _facts, expected = _stored_archive(tmp_path)
    for entry in store.iterdir():
        entry.write_bytes(b"\x00not marshal" * 10)
    again = _cache_with_store(store).get(str(archive))
    assert isinstance(again, ArchiveFacts)
    for i, old in enumerate(expected):
        _same(old, again.member(i))


def _link_json(tmp_path: Path, *extra: str) -> dict[str, object]:
    DEFAULT_CACHE.clear()  # each run as a fresh process would see it: nothing read yet
    env = {"XDG_CACHE_HOME": str(tmp_path / "xdg")}
    result = CliRunner(env=env).invoke(cli, ["link", "--format", "json", *extra, "--cwd", str(tmp_path), "--",
                                             "g++", "main.o", "libshape.a", "-o", "app"])
    assert result.exit_code in (0, 1), result.output
    doc = json.loads(result.output)
    assert isinstance(doc, dict)
    return doc


def test_cli_runs_with_and_without_the_store_agree(tmp_path: Path) -> None:
    """The same prediction cold, warm and with --no-cache; the store is written only with it."""
    _cxx_archive(tmp_path)
    cold = _link_json(tmp_path, "--no-cache")
    assert not (tmp_path / "xdg").exists()
    stored = _link_json(tmp_path)
    entries = os.listdir(tmp_path / "xdg" / "ldscope")
    assert any(e.startswith("facts-archive-") for e in entries) and any(e.startswith("facts-shared-") for e in entries)
    warm = _link_json(tmp_path)
    for doc in (stored, warm):
        assert doc["links"] == cold["links"] is True
        assert doc["errors"] == cold["errors"] and doc["trace"] == cold["trace"]


def test_the_link_command_gives_the_garbage_collector_back(tmp_path: Path) -> None:
    """The cyclic collector is off while `link` runs (its facts are acyclic); a caller that goes
    on after the command (here a CliRunner) has it on again, and one that had it off keeps it off."""
    _cxx_archive(tmp_path)
    assert gc.isenabled()
    _link_json(tmp_path)
    assert gc.isenabled()
    gc.disable()
    try:
        _link_json(tmp_path)
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_an_archive_from_the_store_is_not_opened_and_a_thin_one_is_never_stored(tmp_path: Path) -> None:
    """A warm run answers from the stored member table without opening the archive; a thin
    archive (members are other files, which change on their own) is never stored."""
    archive, store, facts, expected = _stored_archive(tmp_path)
    warm = _cache_with_store(store).get(str(archive))
    assert isinstance(warm, ArchiveFacts) and warm.opened is None
    assert warm.member_names == facts.member_names and list(warm.index_entries) == list(facts.index_entries)
    for i, old in enumerate(expected):
        _same(old, warm.member(i))
    assert warm.opened is None  # every member came from the store

    thin = tmp_path / "libthin.a"
    subprocess.run(["ar", "rcsT", str(thin), "a.o", "b.o"], cwd=tmp_path, check=True)
    other = tmp_path / "store2"
    cache = _cache_with_store(other)
    thin_facts = cache.get(str(thin))
    assert isinstance(thin_facts, ArchiveFacts)
    thin_facts.member(0)
    assert cache.store is not None
    cache.store.save()
    assert not other.exists() or not any(n.startswith("facts-archive-") for n in os.listdir(other))
