"""String tables: the bulk decoder, the one-search-per-name decoder and a plain reference agree."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ldscope.elf._strings as strings_module
from ldscope.elf._strings import StringTable


def reference(table: bytes, offset: int) -> str:
    """The string at `offset`: up to the next NUL or the table end; "" outside the table."""
    if offset < 0 or offset >= len(table):
        return ""
    end = table.find(b"\0", offset)
    return table[offset: end if end >= 0 else len(table)].decode("utf-8", "surrogateescape")


tables = st.lists(st.binary(max_size=24).map(lambda b: b.replace(b"\0", b"")), max_size=40).flatmap(
    lambda parts: st.tuples(st.just(b"\0".join(parts)), st.booleans()))


@given(table_and_nul=tables, data=st.data(), chunk=st.sampled_from([1, 7, 64, 1 << 18]))
@settings(max_examples=400, deadline=None)
def test_bulk_and_per_name_decoding_agree(table_and_nul: tuple[bytes, bool], data: st.DataObject,
                                          chunk: int) -> None:
    """Any table (terminated or not, UTF-8 or not), any offsets (inside names, out of range)."""
    body, terminated = table_and_nul
    table = body + (b"\0" if terminated else b"")
    raw = b"HEAD" + table + b"TAIL"  # the table sits inside a larger buffer, as in a file
    strings = StringTable(raw, 4, len(table))
    offsets = np.array(data.draw(st.lists(st.integers(-3, len(table) + 3), max_size=60)), dtype=np.int64)
    expected = [reference(table, int(o)) for o in offsets]
    old = strings_module._BULK_CHUNK
    strings_module._BULK_CHUNK = chunk
    try:
        assert strings._get_many_bulk(offsets) == expected
    finally:
        strings_module._BULK_CHUNK = old
    assert strings._get_many_each(offsets) == expected


@pytest.mark.parametrize("count", [10, 10_000])
def test_get_many_takes_either_path_with_the_same_answer(count: int) -> None:
    """Few names from a big table go one by one, most of a table in bulk: same names."""
    names = [f"name_{i}_{'x' * (i % 13)}" for i in range(count)]
    table = b"\0" + b"\0".join(n.encode() for n in names) + b"\0"
    starts = np.cumsum([0] + [len(n) + 1 for n in names])[:-1] + 1
    strings = StringTable(table, 0, len(table))
    assert strings.get_many(starts) == names
