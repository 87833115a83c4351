"""Symbol listings for any path: an ELF file, or every member of an archive."""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Iterator

from ldscope.elf import ElfFile, FileKind, detect_kind
from ldscope.errors import InputFormatError
from ldscope.inspection._listing import ListingOptions, TableListing, list_symbols


def iter_listings(path: str, options: ListingOptions) -> Iterator[TableListing]:
    """Listings for `path` (one for an ELF file, one per member for an archive), one at a
    time: each listing's rows can be read only until the next listing is asked for."""
    kind = detect_kind(path)
    if kind is FileKind.ELF:
        try:
            elf = ElfFile.open(path)
        except OSError as exc:
            raise InputFormatError(path, f"cannot read: {exc.strerror or exc}") from None
        with elf:
            yield list_symbols(elf, options, path)
        return
    if kind is FileKind.ARCHIVE:
        yield from _archive_listings(path, options)
        return
    if kind is FileKind.LINKER_SCRIPT:
        raise InputFormatError(path, "a GNU ld script, not an object: it has no symbols (see `ldscope info`)")
    raise InputFormatError(path, "not an ELF file or ar archive", 0)


def collect_listings(path: str, options: ListingOptions) -> list[TableListing]:
    """Listings for `path` with their rows read (usable after the file is closed)."""
    results = []
    for listing in iter_listings(path, options):
        chunks = tuple(listing.chunks())
        results.append(dataclasses.replace(listing, source=functools.partial(iter, chunks)))
    return results


def _archive_listings(path: str, options: ListingOptions) -> Iterator[TableListing]:
    from ldscope.elf import Archive

    with Archive.open(path) as archive:
        for member in archive.members:
            table = options.table or "symtab"
            if not member.is_elf:
                reason = f"skipped: {member.skip_reason or 'not an ELF object'}"
                yield TableListing(path, member.name, table, "skipped", reason, 0)
                continue
            display = f"{path}({member.name})"
            try:
                elf = ElfFile(archive.member_data(member), display)
                listing = list_symbols(elf, options, path, member.name)
            except InputFormatError as exc:
                yield TableListing(path, member.name, table, "error", exc.reason, 0)
                continue
            yield listing
