"""The `ldscope` command: a thin click group whose subcommands are imported only when used."""

from __future__ import annotations

import importlib
import os
import sys

import click

from ldscope import __version__

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

    Exit status: 0 clean, 1 findings (or nothing matched), 2 usage or input error.
    """


def main() -> None:
    """Console-script entry point."""
    # numpy's OpenBLAS starts a thread per core at import; ldscope does no linear algebra.
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    try:
        cli.main(prog_name="ldscope")
    except BrokenPipeError:
        # Output piped into `head` and closed early: not an error worth a traceback.
        sys.stderr.close()
        raise SystemExit(1) from None
    except SystemExit as exc:
        _exit_now(exc.code)
    _exit_now(0)


def _exit_now(code: object) -> None:
    """Exit without tearing the interpreter down: after a scan that is freeing a few
    hundred thousand names and arrays one by one (tens of milliseconds) for nothing."""
    if code is not None and not isinstance(code, int):
        print(code, file=sys.stderr)
        code = 1
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except BrokenPipeError:
        code = 1
    os._exit(code or 0)
