"""Symbol listings for any path: an ELF file, or every member of an archive."""

from __future__ import annotations

from ldscope.elf import ElfFile, FileKind, detect_kind
from ldscope.errors import InputFormatError
from ldscope.inspection._listing import ListingOptions, TableListing, list_symbols


def collect_listings(path: str, options: ListingOptions) -> list[TableListing]:
    """Listings for `path` (one for an ELF file, one per member for an archive)."""
    kind = detect_kind(path)
    if kind is FileKind.ELF:
        try:
            with ElfFile.open(path) as elf:
                return [list_symbols(elf, options, path)]
        except OSError as exc:
            raise InputFormatError(path, f"cannot read: {exc.strerror or exc}") from None
    if kind is FileKind.ARCHIVE:
        return _archive_listings(path, options)
    if kind is FileKind.LINKER_SCRIPT:
        raise InputFormatError(path, "a GNU ld script, not an object: it has no symbols (see `ldscope info`)")
    raise InputFormatError(path, "not an ELF file or ar archive", 0)


def _archive_listings(path: str, options: ListingOptions) -> list[TableListing]:
    from ldscope.elf import Archive

    results: list[TableListing] = []
    with Archive.open(path) as archive:
        for member in archive.members:
            table = options.table or "symtab"
            if not member.is_elf:
                reason = f"skipped: {member.skip_reason or 'not an ELF object'}"
                results.append(TableListing(path, member.name, table, "skipped", reason, 0, ()))
                continue
            display = f"{path}({member.name})"
            try:
                elf = ElfFile(archive.member_data(member), display)
                results.append(list_symbols(elf, options, path, member.name))
            except InputFormatError as exc:
                results.append(TableListing(path, member.name, table, "error", exc.reason, 0, ()))
    return results
