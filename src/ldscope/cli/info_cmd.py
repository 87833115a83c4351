"""`ldscope info FILE…`: what the loader and linker will see in each file."""

from __future__ import annotations

from typing import Any

import click

from ldscope.cli.common import EXIT_INPUT_ERROR, diagnose, output_options, write_output
from ldscope.errors import InputFormatError


@click.command()
@click.argument("files", nargs=-1, required=True, type=click.Path())
@output_options(("text", "json"))
def info(files: tuple[str, ...], output_format: str, output: str | None, verbose: bool) -> None:
    """Summarise FILES: ELF class, machine, type, interpreter, SONAME, NEEDED,
    RPATH/RUNPATH, flags, required and defined versions, stripped or not, build-id;
    for archives their members and symbol index; for linker scripts what they reference.

    -v adds every program header and section header (readelf -lS) and lists every archive
    member (not only the first 20). A part of a file that cannot be read (a corrupt section
    header table, a name outside its string table) is named on a `warning:` line and the rest
    is shown, as readelf does.

    A malformed or unreadable file gets a one-line diagnostic and exit status 2; the
    other files are still summarised.

    \b
    Examples:
      ldscope info /usr/bin/python3
      ldscope info -v --format json libfoo.so
      ldscope info /usr/lib/debug/.build-id/ab/cdef.debug   a separate debug file
    """
    from ldscope.inspection import describe
    from ldscope.report import dumps, info_json, render_info

    results: list[Any] = []
    errors: list[dict[str, Any]] = []
    for path in files:
        try:
            results.append(describe(path))
        except InputFormatError as exc:
            diagnose(exc.file, f"{exc.reason}" + (f" (at offset {exc.offset:#x})" if exc.offset else ""))
            errors.append({"file": exc.file, "offset": exc.offset, "reason": exc.reason})
    if output_format == "json":
        text = dumps(info_json(results, errors))
    else:
        text = "\n".join(render_info(r, verbose) for r in results)
    write_output(text, output)
    if errors:
        raise SystemExit(EXIT_INPUT_ERROR)
