"""Counting dynamic symbols from DT_HASH / DT_GNU_HASH when section headers are gone."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ldscope.elf import constants as C
from ldscope.errors import InputFormatError

if TYPE_CHECKING:
    from ldscope.elf._file import ElfFile


def dynsym_count_from_hashes(elf: ElfFile) -> int | None:
    """Number of .dynsym entries: DT_HASH's nchain, or the end of DT_GNU_HASH's last chain."""
    word = elf.dtypes["word"]
    hash_off = elf.dynamic_offset(C.DT_HASH, "DT_HASH", 8)
    if hash_off is not None:
        return int(elf.array(hash_off, word, 2, "DT_HASH")[1])
    return gnu_hash_symbol_count(elf)


def gnu_hash_symbol_count(elf: ElfFile) -> int | None:
    """The end of DT_GNU_HASH's last chain (its symbol count), None without the table."""
    word = elf.dtypes["word"]
    gnu_off = elf.dynamic_offset(C.DT_GNU_HASH, "DT_GNU_HASH", 16)
    if gnu_off is None:
        return None
    nbuckets, symoffset, bloom_size, _shift = elf.array(gnu_off, word, 4, "DT_GNU_HASH").tolist()
    bloom_bytes = bloom_size * (8 if elf.is64 else 4)
    buckets_off = gnu_off + 16 + bloom_bytes
    buckets = elf.array(buckets_off, word, nbuckets, "DT_GNU_HASH buckets")
    if not len(buckets) or int(buckets.max()) < symoffset:
        return int(symoffset)
    last = int(buckets.max())
    chain_off = buckets_off + 4 * nbuckets
    # The last bucket's chain ends at the first word with bit 0 set. Scan it as numpy
    # views in blocks: a word-at-a-time loop takes seconds over megabytes of even words.
    start = chain_off + 4 * (last - symoffset)
    # The chain must end inside the segment holding it (ld.so sees nothing else), or inside
    # the file when there are no segments.
    room = elf.segment_room(elf.dynamic_tag(C.DT_GNU_HASH) or 0) if elf.has_load_segments else None
    limit = elf.size if room is None else min(elf.size, gnu_off + room)
    total = max(limit - start, 0) // 4
    for lo in range(0, total, _BLOCK):
        count = min(_BLOCK, total - lo)
        at = start + 4 * lo
        if elf.data_bytes(at, 4 * count) == 0:
            # A hole reads as zeros: an even word, no chain ends here. No linker writes a
            # chain that runs on through a whole block of zeros.
            raise InputFormatError(elf.name, f"GNU hash chain runs into {4 * count:,} bytes of holes "
                                   "(a sparse file) without ending", at)
        odd = np.flatnonzero(elf.array(at, word, count, "GNU hash chain") & 1)
        if odd.size:
            return last + lo + int(odd[0]) + 1
    raise InputFormatError(elf.name, "GNU hash chain does not terminate", chain_off)


_BLOCK = 1 << 16  # chain words scanned per numpy view
