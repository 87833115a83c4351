"""`ldscope symbols FILE…`: list symbols like nm, never silently empty."""

from __future__ import annotations

import re
from typing import Any

import click

from ldscope.cli.common import (
    EXIT_CLEAN,
    EXIT_FINDINGS,
    EXIT_INPUT_ERROR,
    diagnose,
    output_options,
    write_output,
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
@output_options(("text", "json"))
def symbols(
    files: tuple[str, ...],
    table: str | None,
    defined_only: bool,
    undefined_only: bool,
    demangle: bool,
    grep: str | None,
    output_format: str,
    output: str | None,
    verbose: bool,
) -> None:
    """List the symbols of FILES (ELF files and ar archives, member by member).

    Each line: value, nm letter (U undefined, T text, D data, B bss, R read-only, W/V weak,
    w/v weak undefined, i ifunc, u unique), name with its version (`@@` default, `@` hidden
    or required). Archive members print as `archive(member): …` like `nm -A`.

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
    from ldscope.inspection import ListingOptions, TableListing, collect_listings
    from ldscope.report import dumps, render_symbols_text, symbols_json

    options = ListingOptions(table, defined_only, undefined_only, demangle, pattern)
    listings: list[TableListing] = []
    errors: list[dict[str, Any]] = []
    for path in files:
        try:
            listings.extend(collect_listings(path, options))
        except InputFormatError as exc:
            at = f" (at offset {exc.offset:#x})" if exc.offset else ""
            diagnose(exc.file, exc.reason + at)
            errors.append({"file": exc.file, "offset": exc.offset, "reason": exc.reason})
    for listing in listings:
        if listing.status != "ok" and listing.reason:
            diagnose(listing.display_name, listing.reason)
    listed = sum(len(x.rows) for x in listings)
    searched = sum(x.searched for x in listings)
    if output_format == "json":
        write_output(dumps(symbols_json(listings, errors)), output)
    else:
        several = len(files) > 1 or any(x.member for x in listings)
        write_output(render_symbols_text(listings, several, demangle, verbose), output)
    if listed == 0 and any(x.status == "ok" for x in listings):
        what = "matched the filters" if (pattern or defined_only or undefined_only) else "listed"
        click.echo(f"ldscope: no symbols {what} ({searched} symbols searched)", err=True)
    if errors:
        raise SystemExit(EXIT_INPUT_ERROR)
    raise SystemExit(EXIT_CLEAN if listed else EXIT_FINDINGS)
