"""`ldscope symbols FILE…`: list symbols like nm, never silently empty."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from typing import Any

import click

from ldscope.cli.common import (
    EXIT_CLEAN,
    EXIT_FINDINGS,
    EXIT_INPUT_ERROR,
    Sink,
    diagnose,
    output_options,
)
from ldscope.errors import InputFormatError


@click.command()
@click.argument("files", nargs=-1, required=True, type=click.Path())
@click.option("-D", "--dynamic", "table", flag_value="dynsym",
              help="The dynamic symbol table (default for shared objects and executables).")
@click.option("-a", "--all", "table", flag_value="symtab",
              help="The full .symtab (default for .o files and archive members).")
@click.option("--defined", "defined_only", is_flag=True, help="Only defined symbols.")
@click.option("--undefined", "undefined_only", is_flag=True, help="Only undefined symbols.")
@click.option("-C", "--demangle", is_flag=True, help="Show C++ and Rust names demangled.")
@click.option("--grep", "grep", metavar="REGEX",
              help="Only symbols whose mangled or demangled name matches REGEX.")
@click.option("--special-syms", is_flag=True,
              help="Also list ARM/AArch64/RISC-V mapping symbols ($x, $d, $a, $t, ...), which nm hides.")
@click.option("--pretty", is_flag=True, help="Indented JSON (the default is compact).")
@output_options(("text", "json", "ndjson"))
def symbols(
    files: tuple[str, ...],
    table: str | None,
    defined_only: bool,
    undefined_only: bool,
    demangle: bool,
    grep: str | None,
    special_syms: bool,
    pretty: bool,
    output_format: str,
    output: str | None,
    verbose: bool,
) -> None:
    """List the symbols of FILES (ELF files and ar archives, member by member).

    Each line: value, nm letter (U undefined, T text, D data, B bss, R read-only, N debug,
    W/V weak, w/v weak undefined, i ifunc, u unique), name with its version (`@@` default,
    `@` hidden or required). Archive members print as `archive(member): …` like `nm -A`.
    Names are printed with undecodable bytes and control characters escaped (`\\xe9`).

    Output is written as it is read, one table at a time. --format json is one compact
    document (--pretty indents it); --format ndjson is one JSON object per line (a table
    header, then each symbol). See docs/json.md.

    Nothing is ever silently empty: a stripped file asked for --all, an archive member that
    is not ELF, or a filter that matched nothing is said on stderr. Exit status: 0 symbols
    listed, 1 nothing listed, 2 a file could not be read.
    """
    if defined_only and undefined_only:
        raise click.UsageError("--defined and --undefined exclude each other")
    pattern: re.Pattern[str] | None = None
    if grep is not None:
        try:
            pattern = re.compile(grep)
        except re.error as exc:
            raise click.BadParameter(f"not a valid regular expression: {exc}", param_hint="--grep") from None
    import dataclasses
    import functools

    from ldscope.inspection import ListingOptions, RowChunk, TableListing, iter_listings
    from ldscope.report import symbols_json_stream, symbols_ndjson_stream, symbols_text

    options = ListingOptions(table, defined_only, undefined_only, demangle, pattern, special_syms)
    errors: list[dict[str, Any]] = []
    listed = searched = 0
    any_ok = False

    def counted(chunks: Iterator[RowChunk]) -> Iterator[RowChunk]:
        nonlocal listed
        try:
            for chunk in chunks:
                listed += len(chunk)
                yield chunk
        except InputFormatError as exc:  # found while reading rows: what was listed stays
            failed(exc)

    def counting(source: Callable[[], Iterator[RowChunk]]) -> Iterator[RowChunk]:
        return counted(source())

    def failed(exc: InputFormatError) -> None:
        at = f" (at offset {exc.offset:#x})" if exc.offset else ""
        diagnose(exc.file, exc.reason + at)
        errors.append({"file": exc.file, "offset": exc.offset, "reason": exc.reason})

    def listings() -> Iterator[TableListing]:
        # One file, one table at a time: each listing's rows are read while it is written.
        nonlocal searched, any_ok
        for path in files:
            try:
                for listing in iter_listings(path, options):
                    if listing.status != "ok" and listing.reason:
                        diagnose(listing.display_name, listing.reason)
                    any_ok = any_ok or listing.status == "ok"
                    searched += listing.searched
                    yield dataclasses.replace(listing, source=functools.partial(counting, listing.source))
            except InputFormatError as exc:
                failed(exc)

    several = len(files) > 1
    sink = Sink(output)
    if output_format == "json":
        pieces: Iterator[str] = symbols_json_stream(listings(), errors, pretty)
    elif output_format == "ndjson":
        pieces = symbols_ndjson_stream(listings(), errors)
    else:
        pieces = (p for x in listings() for p in symbols_text(x, several or x.member is not None, demangle, verbose))
    for piece in pieces:
        sink.write(piece)
    sink.close()
    if listed == 0 and any_ok:
        what = "matched the filters" if (pattern or defined_only or undefined_only) else "listed"
        click.echo(f"ldscope: no symbols {what} ({searched} symbols searched)", err=True)
    if errors:
        raise SystemExit(EXIT_INPUT_ERROR)
    raise SystemExit(EXIT_CLEAN if listed else EXIT_FINDINGS)
