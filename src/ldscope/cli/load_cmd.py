"""`ldscope load FILE`: will it load? The library tree, and every problem with its cause."""

from __future__ import annotations

import sys

import click

from ldscope.cli.common import (
    EXIT_CLEAN,
    EXIT_FINDINGS,
    EXIT_INPUT_ERROR,
    check_env_assignments,
    diagnose,
    is_terminal,
    output_options,
    refuse_special_files,
    require_directory,
    require_file,
    write_output,
)
from ldscope.errors import InputFormatError


@click.command()
@click.argument("file", type=click.Path())
@click.option("--python", "python", metavar="EXE",
              help="Interpreter that imports the file (default for extension modules: the one running ldscope).")
@click.option("--host", type=click.Choice(["executable", "python", "dlopen"]),
              help="Force how the file is loaded (default: executables as themselves, "
                   "extension modules by Python, other libraries dlopen'ed by a minimal host).")
@click.option("--preload", multiple=True, metavar="LIB",
              help="Library already dlopen'ed with RTLD_GLOBAL (repeatable), e.g. to model `import torch`.")
@click.option("--loaded", multiple=True, metavar="LIB",
              help="Library already in the process (found by SONAME, not global; repeatable).")
@click.option("--env", "env", multiple=True, metavar="NAME=VALUE",
              help="Set an environment variable for the simulated process (repeatable).")
@click.option("--clear-env", is_flag=True, help="Start from an empty environment instead of this one.")
@click.option("--root", type=click.Path(file_okay=False), metavar="DIR",
              help="Sysroot: absolute paths, ld.so.cache and ld.so.conf are taken inside DIR.")
@click.option("--also-search", multiple=True, metavar="DIR",
              help="Extra directories to look in for near-misses (repeatable).")
@click.option("--now/--lazy", "now", default=None,
              help="dlopen flags for plain libraries (default --lazy; extensions always --now).")
@output_options(("text", "json"))
def load(
    file: str, python: str | None, host: str | None, preload: tuple[str, ...],
    loaded: tuple[str, ...], env: tuple[str, ...], clear_env: bool, root: str | None,
    also_search: tuple[str, ...], now: bool | None, output_format: str, output: str | None,
    verbose: bool,
) -> None:
    """Predict whether FILE loads, without running it.

    Executables load as themselves; Python extension modules are imported by an interpreter
    (its libpython and exports in scope, RTLD_NOW); other libraries are dlopen'ed by a
    minimal host. Prints the library tree (how each was found; for missing ones every path
    tried, in order), then the problems grouped by cause, each with when it bites (`load` or
    `first-call`) and near-misses: the same symbol in another version or signature, a
    C++11 ABI mismatch, a library on the search path that defines it.

    Exit status: 0 it loads, 1 it would fail, 2 usage or input error.
    """
    from ldscope.analysis import LoadOptions, simulate_load
    from ldscope.loader import HostKind
    from ldscope.report import dumps, load_report_json, render_load_text

    check_env_assignments(env)
    require_directory(root, "--root")
    require_file(python, "--python", root)
    refuse_special_files(preload, "--preload", root)
    refuse_special_files(loaded, "--loaded", root)
    options = LoadOptions(
        python=python, host=HostKind(host) if host else None, preload=preload, loaded=loaded, env=env, clear_env=clear_env,
        root=root, also_search=also_search, now=now, bindings=verbose,
    )
    try:
        report = simulate_load(file, options)
    except InputFormatError as exc:
        at = f" (at offset {exc.offset:#x})" if exc.offset else ""
        diagnose(exc.file, exc.reason + at)
        raise SystemExit(EXIT_INPUT_ERROR) from None
    if output_format == "json":
        text = dumps(load_report_json(report))
    else:
        use_color = output is None and is_terminal(sys.stdout)
        text = render_load_text(report, verbose, use_color)
    write_output(text, output)
    raise SystemExit(EXIT_CLEAN if report.loads else EXIT_FINDINGS)
