"""Looking names up through a file's own DT_GNU_HASH / DT_HASH table, as ld.so does.

Asking "does this library export X?" of hundreds of libraries would otherwise mean
decoding every exported name of each; the hash tables answer it from a few words per
name (the GNU bloom filter rejects most names without touching the string table).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from ldscope.elf import constants as C
from ldscope.elf._symbols import is_exported
from ldscope.errors import InputFormatError

if TYPE_CHECKING:
    from ldscope.elf._file import ElfFile


def gnu_hash(name: bytes) -> int:
    """dl_new_hash: h = h * 33 + c, from 5381, modulo 2**32."""
    h = 5381
    for c in name:
        h = (h * 33 + c) & 0xFFFFFFFF
    return h


def sysv_hash(name: bytes) -> int:
    """_dl_elf_hash, the DT_HASH function."""
    h = 0
    for c in name:
        h = ((h << 4) + c) & 0xFFFFFFFF
        g = h & 0xF0000000
        if g:
            h ^= g >> 24
        h &= ~g & 0xFFFFFFFF
    return h


class HashedNames:
    """Names to look up, with both hash functions computed once for every file probed."""

    __slots__ = ("gnu", "names", "sysv", "text")

    def __init__(self, names: Sequence[str]) -> None:
        self.text = list(names)
        self.names = [n.encode("utf-8", "surrogateescape") for n in names]
        self.gnu = np.array([gnu_hash(n) for n in self.names], dtype=np.uint64)
        self.sysv = [sysv_hash(n) for n in self.names]


def lookup_exported(elf: ElfFile, wanted: HashedNames) -> list[int] | None:
    """Indices into `wanted` of names the file exports (SymbolTable.exported_mask).

    None when the file has no dynamic hash table to answer from (the caller then reads
    the symbol table itself). Malformed tables raise InputFormatError.
    """
    symtab = elf.dynamic_offset(C.DT_SYMTAB, "DT_SYMTAB")
    strtab = elf.dynamic_offset(C.DT_STRTAB, "DT_STRTAB")
    strsz = elf.dynamic_tag(C.DT_STRSZ)
    if symtab is None or strtab is None or strsz is None or not wanted.names:
        return None if symtab is None or strtab is None or strsz is None else []
    gnu = elf.dynamic_offset(C.DT_GNU_HASH, "DT_GNU_HASH", 16)
    if gnu is not None:
        candidates = _gnu_candidates(elf, gnu, wanted)
    else:
        sysv = elf.dynamic_offset(C.DT_HASH, "DT_HASH", 8)
        if sysv is None:
            return None
        candidates = _sysv_candidates(elf, sysv, wanted)
    sym_dtype = elf.dtypes["sym"]
    found: list[int] = []
    for w, indices in candidates:
        name = wanted.names[w]
        for index in indices:
            sym = elf.array(symtab + index * sym_dtype.itemsize, sym_dtype, 1, "dynamic symbol")[0]
            st_name = int(sym["st_name"])
            if st_name + len(name) >= strsz:
                continue
            if elf.read_bytes(strtab + st_name, len(name) + 1, "dynamic string") != name + b"\0":
                continue
            if is_exported(int(sym["st_info"]), int(sym["st_other"]), int(sym["st_shndx"])):
                found.append(w)
                break
    return found


def _gnu_candidates(elf: ElfFile, offset: int, wanted: HashedNames) -> list[tuple[int, list[int]]]:
    """(name index, symbol indices with a matching hash) from a DT_GNU_HASH table."""
    word = elf.dtypes["word"]
    nbuckets, symoffset, bloom_size, shift = elf.array(offset, word, 4, "DT_GNU_HASH").tolist()
    if nbuckets == 0:
        return []
    bloom_word = elf.dtypes["xword"]
    bits = bloom_word.itemsize * 8
    bloom = elf.array(offset + 16, bloom_word, bloom_size, "DT_GNU_HASH bloom filter")
    buckets_off = offset + 16 + bloom_size * bloom_word.itemsize
    buckets = elf.array(buckets_off, word, nbuckets, "DT_GNU_HASH buckets")
    chain_off = buckets_off + 4 * nbuckets
    # Every chain ends by the last bucket's chain end (gnu_hash_symbol_count checks it ends,
    # inside its segment and not in holes): no walk goes further.
    count = elf.gnu_hash_symbol_count
    chain_len = min(max(elf.size - chain_off, 0) // 4, max((count or 0) - symoffset, 0))
    hashes = wanted.gnu
    if bloom_size:
        # The bloom filter, vectorised over every wanted name: two bits must be set.
        words = bloom[(hashes // bits) & np.uint64(bloom_size - 1)].astype(np.uint64)
        one = np.uint64(1)
        mask = (one << (hashes % bits)) | (one << ((hashes >> np.uint64(shift)) % bits))
        maybe = np.flatnonzero((words & mask) == mask).tolist()
    else:
        maybe = list(range(len(hashes)))
    result: list[tuple[int, list[int]]] = []
    for w in maybe:
        h = int(hashes[w])
        index = int(buckets[h % nbuckets])
        if index < symoffset:
            continue
        hits: list[int] = []
        while index - symoffset < chain_len:
            entry = int(elf.array(chain_off + 4 * (index - symoffset), word, 1, "DT_GNU_HASH chain")[0])
            if (entry | 1) == (h | 1):
                hits.append(index)
            if entry & 1:
                break
            index += 1
        else:
            raise InputFormatError(elf.name, "GNU hash chain does not terminate", chain_off)
        if hits:
            result.append((w, hits))
    return result


def _sysv_candidates(elf: ElfFile, offset: int, wanted: HashedNames) -> list[tuple[int, list[int]]]:
    """(name index, symbol indices on the name's chain) from a DT_HASH table."""
    word = elf.dtypes["word"]
    nbucket, nchain = elf.array(offset, word, 2, "DT_HASH").tolist()
    if nbucket == 0:
        return []
    buckets = elf.array(offset + 8, word, nbucket, "DT_HASH buckets")
    chains = elf.array(offset + 8 + 4 * nbucket, word, nchain, "DT_HASH chains")
    result: list[tuple[int, list[int]]] = []
    for w, h in enumerate(wanted.sysv):
        index = int(buckets[h % nbucket])
        hits: list[int] = []
        steps = 0
        while index != 0 and index < nchain and steps <= nchain:  # a cycle cannot hang us
            hits.append(index)
            index = int(chains[index])
            steps += 1
        if hits:
            result.append((w, hits))
    return result
