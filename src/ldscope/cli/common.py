"""Options and helpers shared by the subcommands (output destination, diagnostics)."""

from __future__ import annotations

import errno
import os
import sys
from collections.abc import Callable, Iterable
from typing import IO, Any, NoReturn, TypeVar

import click

F = TypeVar("F", bound=Callable[..., Any])

EXIT_CLEAN, EXIT_FINDINGS, EXIT_INPUT_ERROR = 0, 1, 2


def _set_quiet(ctx: click.Context, _param: click.Parameter, value: bool) -> None:
    if value:
        ctx.meta["ldscope.quiet"] = True


_PROCESS = {"one_command": False}


def ends_with_command() -> bool:
    """True when ldscope runs as its own process (`main()`), which exits once the command has
    run (a test's CliRunner runs commands in a process that goes on)."""
    return _PROCESS["one_command"]


def mark_one_command() -> None:
    """Say that this process ends with the command it runs (called by `main()`)."""
    _PROCESS["one_command"] = True


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

    A destination that cannot be written (stdout closed, /dev/full, a directory that does not
    exist) is one line on stderr and exit status 2; a pipe whose reader went away (`| head`)
    stops the command quietly with EXIT_BROKEN_PIPE.
    """

    def __init__(self, output: str | None) -> None:
        self._output = output
        self._stream: IO[bytes] | None = None
        self._text: IO[str] | None = None
        self._encoding = "utf-8"
        if output is None:
            if is_quiet():
                return
            if sys.stdout is None:  # started with stdout closed (`>&-`)
                output_failed(None, "standard output is closed")
            buffer = getattr(sys.stdout, "buffer", None)
            if buffer is None:  # a text-only stdout (tests replacing it): write text
                self._text = sys.stdout
            else:
                self._guarded(sys.stdout.flush)
                self._stream = buffer
                self._encoding = _encoding_of(sys.stdout)
            return
        self._stream = _open_output(output)

    def write(self, text: str) -> None:
        """Write one piece of the report."""
        if self._stream is not None:
            data = text.encode(self._encoding, "backslashreplace")
            self._guarded(lambda: _write_all(self._stream, data))
        elif self._text is not None:
            self._guarded(lambda: self._text.write(text))  # type: ignore[union-attr]

    def close(self) -> None:
        """Flush (stdout) or close (--output)."""
        if self._stream is not None:
            stream = self._stream
            self._guarded(lambda: _flush(stream) if self._output is None else stream.close())
        elif self._text is not None:
            self._guarded(self._text.flush)

    def _guarded(self, action: Callable[[], object]) -> None:
        try:
            action()
        except BrokenPipeError:
            stdout_gone()
        except (OSError, ValueError) as exc:  # ValueError: a stream closed under us
            output_failed(self._output, getattr(exc, "strerror", None) or str(exc))


# Standard output was a pipe whose reader went away before the report was written
# (`ldscope symbols big.so | head -1`): the status a shell gives a program killed by SIGPIPE
# (128 + 13), as `nm big.so | head -1` ends. Scripts running with `set -o pipefail` see a
# failure, and those that expect a closed pipe already recognise 141.
EXIT_BROKEN_PIPE = 141


def _open_output(path: str) -> IO[bytes]:
    """--output opened for writing; a FIFO nobody reads is an error, not a wait (O_NONBLOCK)."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY
    try:
        fd = os.open(path, flags, 0o666)
    except OSError as exc:
        reason = "a FIFO no process is reading" if exc.errno == errno.ENXIO else exc.strerror or str(exc)
        output_failed(path, reason)
    except ValueError as exc:  # a NUL byte in the name
        output_failed(path, str(exc))
    os.set_blocking(fd, True)
    return os.fdopen(fd, "wb")


def _write_all(stream: IO[bytes] | None, data: bytes) -> None:
    """Write every byte: an unbuffered stdout (PYTHONUNBUFFERED, -u) is a raw file whose
    write() may take part of the data, and one set O_NONBLOCK by another process may refuse it."""
    assert stream is not None
    view = memoryview(data)
    while view:
        try:
            n = stream.write(view)
        except BlockingIOError as exc:
            n = exc.characters_written
            _wait_writable(stream)
        if n is None:  # a non-blocking raw file that took nothing
            _wait_writable(stream)
            continue
        view = view[n:]


def _flush(stream: IO[bytes]) -> None:
    while True:
        try:
            stream.flush()
            return
        except BlockingIOError:
            _wait_writable(stream)


def _wait_writable(stream: IO[bytes]) -> None:
    import select

    select.select([], [stream.fileno()], [])


def _encoding_of(stream: IO[str]) -> str:
    """The stream's encoding if Python knows it, else UTF-8."""
    import codecs

    name = getattr(stream, "encoding", None) or "utf-8"
    try:
        return codecs.lookup(name).name
    except LookupError:
        return "utf-8"


def output_failed(output: str | None, reason: str) -> NoReturn:
    """The report cannot be written: one line on stderr, exit status 2."""
    if output is None:
        note(f"cannot write output: {reason}")
    else:
        diagnose(output, f"cannot write report: {reason}")
    stdout_gone(EXIT_INPUT_ERROR)


def stdout_gone(status: int = EXIT_BROKEN_PIPE) -> NoReturn:
    """Stop writing to stdout for good: /dev/null goes over it, so nothing buffered fails
    again (and no second error) when Python flushes it at exit. Python's documented pattern."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 1)
        os.close(devnull)
    except OSError:
        pass
    raise SystemExit(status)


def is_terminal(stream: IO[str] | None) -> bool:
    """True when `stream` (sys.stdout, sys.stderr) is open and a terminal; None when started closed."""
    try:
        return stream is not None and stream.isatty()
    except (OSError, ValueError):
        return False


def write_output(text: str, output: str | None) -> None:
    """Write the report to --output or stdout (nothing on stdout with -q)."""
    sink = Sink(output)
    sink.write(text)
    sink.close()


def diagnose(file: str, message: str) -> None:
    """One-line diagnostic on stderr: `ldscope: FILE: message`, the file name and the message
    (which embeds names) escaped as every text report is: one line, whatever they hold."""
    from ldscope.report import safe

    _to_stderr(f"ldscope: {safe(file)}: {safe(message)}")


def note(message: str) -> None:
    """An informational line on stderr (escaped: one line)."""
    from ldscope.report import safe

    _to_stderr(f"ldscope: {safe(message)}")


def _to_stderr(line: str) -> None:
    # A diagnostic that cannot be written (stderr closed or full) must not become a traceback.
    try:
        click.echo(line, err=True)
    except (OSError, ValueError):
        pass


def _host_path(path: str, root: str | None) -> str:
    """Where a path an option names is on this machine: an absolute one outside `root` is
    taken inside it (as the commands do)."""
    if not root or not os.path.isabs(path):
        return path
    top = os.path.abspath(root)
    if path == top or path.startswith(top.rstrip("/") + "/"):
        return path
    return os.path.join(top, path.lstrip("/"))


def _mode(path: str, root: str | None) -> int:
    """The file's mode; inside a root a symlink is not followed here (its target is inside the
    root, which the command resolves, and reads through the same opener)."""
    host = _host_path(path, root)
    return (os.lstat(host) if root else os.stat(host)).st_mode


def refuse_special_files(paths: Iterable[str | None], option: str, root: str | None = None) -> None:
    """Exit 2, with one line naming it, if one of `paths` (given to `option`; absolute ones
    inside `root` when given) is a FIFO, socket or device: reading it would block for ever or
    never end. Missing paths are left to the command, which says so in its own words."""
    from ldscope.elf import special_kind

    for path in paths:
        if not path:
            continue
        try:
            kind = special_kind(_mode(path, root))
        except (OSError, ValueError):
            continue
        if kind is not None and kind != "directory":
            diagnose(path, f"{option}: is a {kind}, not a regular file (not read)")
            raise SystemExit(EXIT_INPUT_ERROR)


def require_file(path: str | None, option: str, root: str | None = None) -> None:
    """Exit 2, with one line, unless `path` (given to `option`) exists and is no special file."""
    if path is None:
        return
    try:
        _mode(path, root)
    except (OSError, ValueError) as exc:
        diagnose(path, f"{option}: {getattr(exc, 'strerror', None) or exc}")
        raise SystemExit(EXIT_INPUT_ERROR) from None
    refuse_special_files([path], option, root)


def require_directory(path: str | None, option: str) -> None:
    """Exit 2, with one line, unless `path` (given to `option`) is an existing directory."""
    if path is None:
        return
    try:
        mode = os.stat(path).st_mode
    except (OSError, ValueError) as exc:
        diagnose(path, f"{option}: {getattr(exc, 'strerror', None) or exc}")
        raise SystemExit(EXIT_INPUT_ERROR) from None
    from ldscope.elf import special_kind

    kind = special_kind(mode)
    if kind != "directory":
        diagnose(path, f"{option}: not a directory ({'a ' + kind if kind else 'a regular file'})")
        raise SystemExit(EXIT_INPUT_ERROR)


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
