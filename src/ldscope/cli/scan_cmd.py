"""`ldscope scan [TARGET…]`: will everything native in here load?"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Callable

import click

from ldscope.cli.common import (
    EXIT_CLEAN,
    EXIT_FINDINGS,
    EXIT_INPUT_ERROR,
    cache_dir,
    check_env_assignments,
    diagnose,
    is_quiet,
    is_terminal,
    output_options,
    refuse_special_files,
    require_directory,
    require_file,
    write_output,
)


class _Size(click.ParamType):  # type: ignore[type-arg]
    """A byte count: 123, 512K, 2G, 2GiB (powers of 1024)."""

    name = "size"
    def convert(self, value: object, param: click.Parameter | None, ctx: click.Context | None) -> int:
        if isinstance(value, int):
            return value
        match = re.fullmatch(r"\s*(\d+)\s*([kKmMgGtT]?)(?:i?[bB])?\s*", str(value))
        if match is None or int(match[1]) == 0:
            self.fail(f"{value!r} is not a size (e.g. 512M, 2G, 2GiB)", param, ctx)
        return int(match[1]) << {"": 0, "k": 10, "m": 20, "g": 30, "t": 40}[match[2].lower()]


_SIZE = _Size()


@click.command()
@click.argument("targets", nargs=-1, type=click.Path())
@click.option("--python", "python", metavar="EXE",
              help="Interpreter whose environment to scan (no TARGET), or that imports extension modules.")
@click.option("--root", type=click.Path(file_okay=False), metavar="DIR",
              help="Scan a root filesystem (e.g. an unpacked container image) with its own loader config and cache.")
@click.option("--with-env", type=click.Path(file_okay=False), metavar="ENV",
              help="Check wheels as if installed into this Python environment.")
@click.option("--preload", multiple=True, metavar="LIB", help="Library dlopen'ed RTLD_GLOBAL first (repeatable).")
@click.option("--loaded", multiple=True, metavar="LIB", help="Library already in every process (repeatable).")
@click.option("--env", "env", multiple=True, metavar="NAME=VALUE", help="Environment variable for the simulated processes.")
@click.option("--clear-env", is_flag=True, help="Simulate processes started with an empty environment.")
@click.option("--also-search", multiple=True, metavar="DIR", help="Extra directories for near-misses.")
@click.option("--no-cache", is_flag=True,
              help="Do not read or write the cache of Python files' import statements "
                   "($XDG_CACHE_HOME/ldscope, else ~/.cache/ldscope; entries are keyed by path, size and mtime).")
@click.option("--fail-on", type=click.Choice(["error", "warning", "info", "never"]), default="error",
              show_default=True, help="Lowest finding severity that makes the exit status 1.")
@click.option("-j", "--jobs", type=int, default=0, metavar="N",
              help="Worker processes (default: the number of cores). Workers are forked only "
                   "once the remaining files would take a second or more in one process.")
@click.option("--max-member-size", type=_SIZE, default="2GiB", show_default=True, metavar="SIZE",
              help="Largest a wheel member may decompress to (K, M, G suffixes, powers of 1024).")
@click.option("--max-wheel-size", type=_SIZE, default="8GiB", show_default=True, metavar="SIZE",
              help="Most one wheel's members may decompress to together.")
@click.option("--max-ratio", type=click.FloatRange(min=1.0), default=100.0, show_default=True, metavar="N",
              help="Highest compression ratio of a wheel member over 16 MiB (zip bombs reach 1000:1 and more).")
@output_options(("text", "json", "sarif", "junit"))
def scan(
    targets: tuple[str, ...], python: str | None, root: str | None, with_env: str | None,
    preload: tuple[str, ...], loaded: tuple[str, ...], env: tuple[str, ...], clear_env: bool,
    also_search: tuple[str, ...], no_cache: bool, fail_on: str, jobs: int, max_member_size: int,
    max_wheel_size: int, max_ratio: float, output_format: str, output: str | None, verbose: bool,
) -> None:
    """Check that every native file in TARGETs loads, each in its real host context.

    With no TARGET: the activated environment (VIRTUAL_ENV, then CONDA_PREFIX), else the
    Python environment ldscope runs in (site-packages, bin, lib), its interpreter as host;
    the first line says which and why. A TARGET may be a Python environment (venv, conda env, prefix),
    a directory tree, a wheel (.whl, read in place), or a single file; --root scans a root
    filesystem. Executables load as themselves. In an environment (or a wheel with --with-env)
    each file is loaded as the Python process really loads it: an extension module is imported
    by the environment's interpreter (RTLD_NOW) after what its package's imports load (a static
    import graph of its Python files, read, never run) and what its Requires-Dist load; a
    library no extension NEEDs is loaded by ctypes.CDLL (RTLD_NOW|RTLD_LOCAL) after its package
    and after the distribution providing a SONAME it needs (libc10.so <- torch); a library an
    extension NEEDs gets the verdict of that load. Outside Python, libraries are dlopen'ed by
    a minimal host. Extensions whose suffix the interpreter never imports (a cpython-312 file
    under 3.11), wheels pip would refuse, and installed versions that miss a Requires-Dist pin
    are findings too. Every file and provider carries its distribution (RECORD, dpkg).

    LD_LIBRARY_PATH and LD_PRELOAD are simulated as set; ldscope itself runs without them.

    A wheel is an untrusted container: a member with a bad name ('..', absolute, '//', './',
    empty, NUL, backslash), a duplicate name, overlapping data, or that cannot be decompressed,
    lies about its size or is over a budget (--max-member-size, --max-wheel-size, --max-ratio)
    is one line naming the wheel and the member (exit status 2); the other members are scanned.

    Prints a one-screen summary, then findings grouped by root cause, most severe first,
    each with its evidence and near-misses. Nothing is executed.

    \b
    Examples:
      ldscope scan                                  the activated environment
      ldscope scan ~/venvs/ml --format json -o scan.json
      ldscope scan --with-env .venv dist/pkg-1.0-cp311-cp311-manylinux_2_28_x86_64.whl
      ldscope scan --root ./rootfs --fail-on warning
      LD_LIBRARY_PATH=/opt/old/lib ldscope scan     is that entry breaking anything?
      ldscope scan --max-member-size 4G --max-ratio 400 huge-1.0-py3-none-linux_x86_64.whl

    Exit status: 0 nothing at or above --fail-on, 1 findings, 2 usage or input error
    (a target that does not exist, a corrupt wheel or wheel member).
    """
    from ldscope.scan import ScanSettings, run_scan
    from ldscope.system import WheelLimits

    check_env_assignments(env)
    require_directory(root, "--root")
    require_directory(with_env, "--with-env")
    require_file(python, "--python", root)
    refuse_special_files(preload, "--preload", root)
    refuse_special_files(loaded, "--loaded", root)
    settings = ScanSettings(
        python=python, preload=preload, loaded=loaded, env=env, clear_env=clear_env, root=root,
        also_search=also_search, jobs=jobs if jobs > 0 else (os.cpu_count() or 1),
        cache_dir=None if no_cache else cache_dir(),
    )
    progress = _progress_bar() if is_terminal(sys.stderr) and output_format == "text" and not is_quiet() else None
    limits = WheelLimits(member_bytes=max_member_size, wheel_bytes=max_wheel_size, ratio=max_ratio)
    result = run_scan(targets, settings, with_env, progress, limits)
    if progress is not None:
        click.echo("\r\033[K", nl=False, err=True)
    for error in result.errors:
        file, _, reason = error.partition(": ")
        diagnose(file, reason or error)
    # Only the chosen renderer is imported: SARIF's rule tables import the link model.
    if output_format == "json":
        from ldscope.report import dumps, scan_json

        text = dumps(scan_json(result))
    elif output_format == "sarif":
        from ldscope.report import dumps, scan_sarif

        text = dumps(scan_sarif(result))
    elif output_format == "junit":
        from ldscope.report import scan_junit

        text = scan_junit(result)
    else:
        from ldscope.report import render_scan_text

        text = render_scan_text(result, verbose, output is None and is_terminal(sys.stdout))
    write_output(text, output)
    if result.errors:
        raise SystemExit(EXIT_INPUT_ERROR)
    raise SystemExit(EXIT_FINDINGS if result.fails(fail_on) else EXIT_CLEAN)


def _progress_bar() -> Callable[[int], None]:
    """A minimal stderr counter for long scans (only on a terminal)."""
    done = [0]

    def tick(n: int) -> None:
        done[0] += n
        if done[0] % 10 == 0:
            click.echo(f"\rldscope: {done[0]} files simulated", nl=False, err=True)

    return tick
