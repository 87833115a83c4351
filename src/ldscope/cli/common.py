"""Options and helpers shared by the subcommands (output destination, diagnostics)."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from typing import IO, Any, TypeVar

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


class Sink:
    """Where a report goes, written piece by piece as it is produced (--output or stdout).

    Renderers hand over text that is already safe (report/_text_safe.py, report/_json.py);
    the bytes written are that text in the destination's encoding, with anything it cannot
    encode written as a backslash escape, so writing never raises on an ASCII or Latin-1
    stdout. A file is always UTF-8.
    """

    def __init__(self, output: str | None) -> None:
        self._output = output
        self._stream: IO[bytes] | None = None
        self._text: IO[str] | None = None
        self._encoding = "utf-8"
        if output is None:
            if is_quiet():
                return
            buffer = getattr(sys.stdout, "buffer", None)
            if buffer is None:  # a text-only stdout (tests replacing it): write text
                self._text = sys.stdout
            else:
                sys.stdout.flush()
                self._stream = buffer
                self._encoding = _encoding_of(sys.stdout)
            return
        try:
            self._stream = open(output, "wb")  # noqa: SIM115 - closed by close()
        except OSError as exc:
            diagnose(output, f"cannot write report: {exc.strerror or exc}")
            raise SystemExit(EXIT_INPUT_ERROR) from None

    def write(self, text: str) -> None:
        """Write one piece of the report."""
        try:
            if self._stream is not None:
                self._stream.write(text.encode(self._encoding, "backslashreplace"))
            elif self._text is not None:
                self._text.write(text)
        except BrokenPipeError:
            _stdout_gone()
        except OSError as exc:
            diagnose(self._output or "standard output", f"cannot write report: {exc.strerror or exc}")
            raise SystemExit(EXIT_INPUT_ERROR) from None

    def close(self) -> None:
        """Flush (stdout) or close (--output)."""
        try:
            if self._stream is not None:
                if self._output is None:
                    self._stream.flush()
                else:
                    self._stream.close()
            elif self._text is not None:
                self._text.flush()
        except BrokenPipeError:
            _stdout_gone()
        except OSError as exc:
            diagnose(self._output or "standard output", f"cannot write report: {exc.strerror or exc}")
            raise SystemExit(EXIT_INPUT_ERROR) from None


def _encoding_of(stream: IO[str]) -> str:
    """The stream's encoding if Python knows it, else UTF-8."""
    import codecs

    name = getattr(stream, "encoding", None) or "utf-8"
    try:
        return codecs.lookup(name).name
    except LookupError:
        return "utf-8"


def _stdout_gone() -> None:
    """The reader of stdout went away (`| head`): stop quietly (no traceback, no second
    error when Python flushes stdout at exit), exit status 2 like any unwritable report."""
    import os

    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    raise SystemExit(EXIT_INPUT_ERROR)


def write_output(text: str, output: str | None) -> None:
    """Write the report to --output or stdout (nothing on stdout with -q)."""
    sink = Sink(output)
    sink.write(text)
    sink.close()


def diagnose(file: str, message: str) -> None:
    """One-line diagnostic on stderr: `ldscope: FILE: message`, the file name and the message
    (which embeds names) escaped as every text report is: one line, whatever they hold."""
    from ldscope.report import safe

    click.echo(f"ldscope: {safe(file)}: {safe(message)}", err=True)


def note(message: str) -> None:
    """An informational line on stderr (escaped: one line)."""
    from ldscope.report import safe

    click.echo(f"ldscope: {safe(message)}", err=True)


def check_env_assignments(env: tuple[str, ...]) -> None:
    """--env values must be NAME=VALUE (a usage error otherwise)."""
    for item in env:
        if "=" not in item or item.startswith("="):
            raise click.BadParameter(f"expected NAME=VALUE, got {item!r}", param_hint="--env")


def cache_dir() -> str | None:
    """ldscope's cache directory: $XDG_CACHE_HOME/ldscope, else ~/.cache/ldscope."""
    from ldscope.system import home_directory, process_environment

    env = process_environment()
    base = env.get("XDG_CACHE_HOME") or (os.path.join(home, ".cache") if (home := home_directory(env)) else None)
    return os.path.join(base, "ldscope") if base else None
