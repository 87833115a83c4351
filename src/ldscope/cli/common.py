"""Options and helpers shared by the subcommands (output destination, diagnostics)."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any, TypeVar

import click

F = TypeVar("F", bound=Callable[..., Any])

EXIT_CLEAN, EXIT_FINDINGS, EXIT_INPUT_ERROR = 0, 1, 2


def _set_quiet(ctx: click.Context, _param: click.Parameter, value: bool) -> None:
    if value:
        ctx.meta["ldscope.quiet"] = True


def is_quiet() -> bool:
    """True when -q was given: nothing on standard output, the exit status says it."""
    ctx = click.get_current_context(silent=True)
    return bool(ctx is not None and ctx.meta.get("ldscope.quiet"))


def output_options(formats: tuple[str, ...]) -> Callable[[F], F]:
    """--format, --output, -v and -q, the same on every command."""

    def decorate(func: F) -> F:
        func = click.option("-q", "--quiet", is_flag=True, expose_value=False, callback=_set_quiet,
                            help="Print nothing on standard output (--output still writes the "
                                 "report; errors still go to standard error); the exit status says it.")(func)
        func = click.option("-v", "--verbose", is_flag=True, help="More detail.")(func)
        func = click.option(
            "-o", "--output", type=click.Path(dir_okay=False, writable=True),
            help="Write the report to FILE instead of standard output.",
        )(func)
        return click.option(
            "--format", "output_format", type=click.Choice(formats), default=formats[0],
            show_default=True, help="Report format.",
        )(func)

    return decorate


def write_output(text: str, output: str | None) -> None:
    """Write the report to --output or stdout (nothing on stdout with -q)."""
    if output is None:
        if is_quiet():
            return
        sys.stdout.write(text)
        sys.stdout.flush()
        return
    try:
        with open(output, "w", encoding="utf-8") as fh:
            fh.write(text)
    except OSError as exc:
        diagnose(output, f"cannot write report: {exc.strerror or exc}")
        raise SystemExit(EXIT_INPUT_ERROR) from None


def diagnose(file: str, message: str) -> None:
    """One-line diagnostic on stderr: `ldscope: FILE: message`."""
    click.echo(f"ldscope: {file}: {message}", err=True)


def note(message: str) -> None:
    """An informational line on stderr."""
    click.echo(f"ldscope: {message}", err=True)


def check_env_assignments(env: tuple[str, ...]) -> None:
    """--env values must be NAME=VALUE (a usage error otherwise)."""
    for item in env:
        if "=" not in item or item.startswith("="):
            raise click.BadParameter(f"expected NAME=VALUE, got {item!r}", param_hint="--env")
