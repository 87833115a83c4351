"""The `ldscope` command: a thin click group whose subcommands are imported only when used."""

from __future__ import annotations

import errno
import importlib
import os
import signal
import sys
from collections.abc import Iterable

import click
import click.utils

from ldscope import __version__
from ldscope.errors import Interrupted

# name -> (module, attribute, one-line help). Kept here so `--help` needs no heavy imports.
COMMANDS: dict[str, tuple[str, str, str]] = {
    "info": ("ldscope.cli.info_cmd", "info", "Summarise ELF files, archives and linker scripts."),
    "link": ("ldscope.cli.link_cmd", "link", "Will it link? Predict and explain bfd/gold/lld/mold errors, with fixes."),
    "load": ("ldscope.cli.load_cmd", "load", "Will it load? Library tree, problems, near-misses."),
    "scan": ("ldscope.cli.scan_cmd", "scan", "Will everything native in an environment, wheel or tree load?"),
    "symbols": ("ldscope.cli.symbols_cmd", "symbols", "List symbols like nm, with versions and demangling."),
}


class LazyGroup(click.Group):
    """A group that lists commands from COMMANDS and imports one only when it runs."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        spec = COMMANDS.get(cmd_name)
        if spec is None:
            return None
        module = importlib.import_module(spec[0])
        command: click.Command = getattr(module, spec[1])
        return command

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = [(name, COMMANDS[name][2]) for name in self.list_commands(ctx)]
        with formatter.section("Commands"):
            formatter.write_dl(rows)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="ldscope")
def cli() -> None:
    """Will it link? Will it load? ldscope answers by reading ELF files, never running them.

    \b
    Examples:
      ldscope scan                            every native file in this Python environment
      ldscope load ./ext.cpython-311-x86_64-linux-gnu.so   will it import?
      ldscope info /usr/bin/python3           what the loader and linker see in a file
      ldscope symbols -D --grep GLIBCXX libfoo.so
      ldscope symbols --all --undefined libfoo.a

    Exit status: 0 clean, 1 findings (or nothing matched), 2 usage or input error (also a
    FIFO or device given as a file, a report that cannot be written), 141 stdout was a pipe
    closed before the report was written.
    """


# The loader variables that choose which code ld.so maps into a process. A simulation models
# them, but in ldscope's own process they can break its dependencies (an old libstdc++ on
# LD_LIBRARY_PATH fails `import numpy`), so main() runs ldscope again without them.
LOADER_VARIABLES = ("LD_LIBRARY_PATH", "LD_PRELOAD", "LD_AUDIT")
# Their original values, as a JSON object, for the re-executed ldscope; also the marker that it
# was re-executed. Read by system.process_environment(), which names it system.SIMULATED_LOADER_ENV
# (not imported from there: `ldscope.system` imports numpy).
SIMULATED_LOADER_ENV = "LDSCOPE_SIMULATED_LOADER_ENV"


def main() -> None:
    """Console-script entry point."""
    _reexec_without_loader_variables()
    _reopen_closed_standard_descriptors()
    # numpy's OpenBLAS starts a thread per core at import; ldscope does no linear algebra.
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    from ldscope.cli.common import EXIT_BROKEN_PIPE, mark_one_command, output_failed, stdout_gone

    mark_one_command()  # the process ends with the command (see link: the garbage collector)

    # Ctrl-C anywhere is the same as while workers run: exit 130, no "Aborted!", no traceback
    # (click turns a KeyboardInterrupt into "Aborted!" and status 1).
    signal.signal(signal.SIGINT, _interrupt)
    try:
        try:
            cli.main(prog_name="ldscope")
        except BrokenPipeError:
            # Output piped into `head` and closed early (help text, a line written by click).
            stdout_gone(EXIT_BROKEN_PIPE)
        except OSError as exc:
            # A write to stdout that click itself made (--help, --version) on a full disk or a
            # device error: the same one line as a report that cannot be written.
            if exc.filename is not None or exc.errno not in _OUTPUT_ERRORS:
                raise
            output_failed(None, exc.strerror or str(exc))
    except SystemExit as exc:
        code = exc.code
        if isinstance(sys.stdout, click.utils.PacifyFlushWrapper):
            # click met the broken pipe itself (--help, --version) and exits 1; say what it was.
            code = EXIT_BROKEN_PIPE
        _exit_now(code)
    except Interrupted as exc:
        # The workers were stopped; exit as the shell reports a process the signal stopped.
        _exit_now(128 + exc.signum)
    _exit_now(0)


def _interrupt(signum: int, _frame: object) -> None:
    raise Interrupted(signum)


# What writing to an open stdout can fail with (EBADF: a descriptor opened read-only).
_OUTPUT_ERRORS = frozenset({errno.ENOSPC, errno.EIO, errno.EDQUOT, errno.EFBIG, errno.EBADF, errno.EINVAL})


def _reopen_closed_standard_descriptors() -> None:
    """Descriptors 0, 1 and 2 closed at start (`>&-`) get /dev/null: otherwise the first file
    ldscope opens would become its stdout or stderr. Python already set sys.stdout (or
    sys.stderr) to None, so a report still finds stdout closed and says so."""
    for fd in (0, 1, 2):
        try:
            os.fstat(fd)
        except OSError:
            try:
                opened = os.open(os.devnull, os.O_RDWR)
            except OSError:
                return
            if opened != fd:
                os.dup2(opened, fd)
                os.close(opened)


def _exit_now(code: object) -> None:
    """Exit without tearing the interpreter down: after a scan that is freeing a few
    hundred thousand names and arrays one by one (tens of milliseconds) for nothing.
    What is still buffered for stdout is written first; if it cannot be, the status says so."""
    from ldscope.cli.common import EXIT_BROKEN_PIPE, EXIT_INPUT_ERROR

    if code is not None and not isinstance(code, int):
        _to_stderr(f"{code}\n")
        code = 1
    try:
        if sys.stdout is not None:
            sys.stdout.flush()
    except BrokenPipeError:
        code = EXIT_BROKEN_PIPE
    except (OSError, ValueError) as exc:
        _to_stderr(f"ldscope: cannot write output: {getattr(exc, 'strerror', None) or exc}\n")
        code = EXIT_INPUT_ERROR if code in (None, 0, 1) else code  # a report not written is no verdict
    _to_stderr("")
    os._exit(code or 0)


def _to_stderr(text: str) -> None:
    """Write (and flush) text on stderr, if there is one that can take it."""
    try:
        if sys.stderr is not None:
            sys.stderr.write(text)
            sys.stderr.flush()
    except (OSError, ValueError):
        pass


def _reexec_without_loader_variables() -> None:
    """Replace this process by ldscope without LD_LIBRARY_PATH, LD_PRELOAD and LD_AUDIT, their
    values carried in SIMULATED_LOADER_ENV; return (and go on here) when none is set or exec fails."""
    carried = {name: os.environ[name] for name in LOADER_VARIABLES if os.environ.get(name)}
    # An empty value changes nothing in ld.so; the marker means this is already the re-exec.
    if not carried or SIMULATED_LOADER_ENV in os.environ or not sys.executable:
        return
    import json

    env = {name: value for name, value in os.environ.items() if name not in carried}
    env[SIMULATED_LOADER_ENV] = json.dumps(carried)
    if "LD_LIBRARY_PATH" in carried:
        original, origin = carried["LD_LIBRARY_PATH"], _executable_origin()
        mapped = _mapped_files()
        if mapped is None:
            # No /proc: keep the directories that hold a libpython, so the interpreter still starts.
            mapped = _libpythons_in(original, origin)
        kept = interpreter_library_path(original, mapped, origin)
        if kept:
            env["LD_LIBRARY_PATH"] = kept
    if all(env.get(name) == os.environ.get(name) for name in LOADER_VARIABLES):
        return  # only what the interpreter itself needs is set: a re-exec would change nothing
    for stream in (sys.stdout, sys.stderr):
        try:
            if stream is not None:
                stream.flush()
        except (OSError, ValueError):
            pass
    try:
        os.execve(sys.executable, _child_argv(), env)
    except OSError:
        return  # go on in this process, as before


def interpreter_library_path(original: str, mapped: Iterable[str], origin: str = "") -> str:
    """The directories of LD_LIBRARY_PATH `original` from which a libpython*.so among `mapped`
    (paths as /proc/self/maps shows them) was loaded, in order, ':'-joined ('' when none)."""
    libpythons = {os.path.realpath(path) for path in mapped if _is_libpython(os.path.basename(path))}
    kept = []
    # ld.so splits LD_LIBRARY_PATH at ':' and ';'; an empty element is the working directory.
    for entry in original.replace(";", ":").split(":"):
        directory = entry.replace("${ORIGIN}", origin).replace("$ORIGIN", origin)
        # ld.so opened directory/NAME; the maps show where that resolved through symlinks.
        if any(os.path.realpath(os.path.join(directory, os.path.basename(lib))) == lib for lib in libpythons):
            kept.append(entry)
    return ":".join(kept)


def _is_libpython(name: str) -> bool:
    """libpython3.11.so.1.0, libpython3.12d.so, libpython3.so: what the interpreter may need to start."""
    return name.startswith("libpython") and ".so" in name


def _mapped_files() -> list[str] | None:
    """The files mapped into this process, from /proc/self/maps (None when it cannot be read)."""
    try:
        with open("/proc/self/maps", encoding=sys.getfilesystemencoding(), errors="surrogateescape") as maps:
            lines = maps.read().splitlines()
    except OSError:
        return None
    # address perms offset dev inode path: the path is the sixth field and may contain spaces.
    fields = (line.split(maxsplit=5) for line in lines)
    return [f[5].removesuffix(" (deleted)") for f in fields if len(f) == 6 and f[5].startswith("/")]


def _libpythons_in(library_path: str, origin: str) -> list[str]:
    """Every libpython*.so in the directories of `library_path` (when /proc/self/maps is unreadable)."""
    found = []
    for entry in library_path.replace(";", ":").split(":"):
        directory = entry.replace("${ORIGIN}", origin).replace("$ORIGIN", origin)
        try:
            names = os.listdir(directory or ".")
        except OSError:
            continue
        found += [os.path.join(directory, name) for name in names if _is_libpython(name)]
    return found


def _executable_origin() -> str:
    """What ld.so expands $ORIGIN to for the main program: the directory of /proc/self/exe."""
    try:
        return os.path.dirname(os.readlink("/proc/self/exe"))
    except OSError:
        return os.path.dirname(os.path.realpath(sys.executable))


def _child_argv() -> list[str]:
    """This command line again under sys.executable: `python -m ldscope ARGS` or the console
    script with the same interpreter options; `-m ldscope ARGS` when the line is not known."""
    args = sys.argv[1:]
    original = sys.orig_argv
    # orig_argv is [python, options..., -m ldscope | script | -c code, args...].
    if len(original) > len(args) and original[len(original) - len(args):] == args:
        return [sys.executable, *original[1:]]
    return [sys.executable, "-m", "ldscope", *args]
