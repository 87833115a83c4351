"""`ldscope link -- CMD...`: will it link? Errors worded like the linker, explained, fixed."""

from __future__ import annotations

import dataclasses
import gc
import os
import sys
import tempfile
from typing import TYPE_CHECKING, Any

import click

from ldscope.cli.common import (
    EXIT_CLEAN,
    EXIT_FINDINGS,
    EXIT_INPUT_ERROR,
    cache_dir,
    diagnose,
    ends_with_command,
    is_quiet,
    output_options,
    refuse_special_files,
    write_output,
)

if TYPE_CHECKING:
    from ldscope.system import RunPolicy


@click.command(context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False})
@click.argument("command", nargs=-1, type=click.UNPROCESSED)
@click.option("--linker", type=click.Choice(["bfd", "gold", "lld", "mold"]),
              help="Simulate this linker (default: the one the line would use).")
@click.option("--from-log", "from_log", type=click.Path(dir_okay=False, allow_dash=True), metavar="FILE",
              help="Read the failing link command from a build log (rustc note, make/ninja/CMake).")
@click.option("--cwd", "cwd", type=click.Path(file_okay=False), metavar="DIR",
              help="Directory the link runs in (default: the current one, or the log's).")
@click.option("--fix", is_flag=True, help="Find candidate fixes and verify each by simulation.")
@click.option("--ablate", is_flag=True, help="Print the table of every candidate fix and its effect.")
@click.option("--confirm", is_flag=True,
              help="Also run the REAL linker on the line and each candidate (into a temp dir).")
@click.option("--compile", "compile_first", is_flag=True,
              help="For a command that compiles sources and links them (gcc h.c -o h): run YOUR "
                   "compiler with -c on each source into a temporary directory first, then predict "
                   "the link. Without it such a command is reported, not predicted (exit 2).")
@click.option("--why", "why", multiple=True, metavar="SYMBOL",
              help="Trace SYMBOL (like ld -y): every input that defines or references it, which "
                   "definition wins and why, and how each library got into the link (command line, a "
                   "script's AS_NEEDED, another library's DT_NEEDED). Repeatable; also in JSON.")
@click.option("--no-driver", is_flag=True,
              help="Do not ask the compiler driver (-###); use documented defaults (ld --verbose is "
                   "still asked; --no-exec forbids everything).")
@click.option("--trust-log", is_flag=True,
              help="With --from-log: run the programs the log names (its driver for -###, its ld for "
                   "--verbose, and with --confirm/--compile). Without it a log's program paths are never "
                   "run: the same names are looked up on PATH instead.")
@click.option("--driver", "driver", metavar="PATH",
              help="Ask this compiler driver (-###, -print-prog-name) instead of the line's own (for a "
                   "log: instead of the same name on PATH). A bare name is looked up on PATH.")
@click.option("--no-exec", is_flag=True,
              help="Run nothing at all: no -###, -print-prog-name, ld --verbose or rustc --print sysroot; "
                   "built-in Debian 12 defaults are used and the output says each was assumed. "
                   "Not with --confirm, --compile, --trust-log or --driver.")
@click.option("--no-search", is_flag=True,
              help="Do not look through the search path for libraries that define missing symbols.")
@click.option("--no-cache", is_flag=True,
              help="Do not read or write the store of libraries' symbol facts kept between runs "
                   "($XDG_CACHE_HOME/ldscope, else ~/.cache/ldscope; an entry is used only while its "
                   "file's device, inode, size and mtime are unchanged).")
@output_options(("text", "json", "sarif"))
def link(command: tuple[str, ...], linker: str | None, from_log: str | None, cwd: str | None,
         fix: bool, ablate: bool, confirm: bool, compile_first: bool, why: tuple[str, ...], no_driver: bool,
         trust_log: bool, driver: str | None, no_exec: bool, no_search: bool, no_cache: bool,
         output_format: str, output: str | None, verbose: bool) -> None:
    """Predict whether a link succeeds, without linking.

    \b
    ldscope link -- gcc main.o -L. -lfoo -o app
    ldscope link --linker lld --fix -- ld.bfd @link.rsp
    ldscope link --from-log build.log --format json
    ldscope link --compile -- gcc main.c util.c -lm -o app
    ldscope link --why __stack_chk_guard -- aarch64-linux-gnu-gcc main.o -lc libx.a -o app
    ldscope link --from-log ci.log --driver /opt/cross/bin/aarch64-linux-gnu-gcc
    ldscope link --no-exec --from-log ci.log

    A command that only compiles (-c, -S, -E) is not a link (exit 2). One that compiles
    sources and links them is reported with the driver's link step (exit 2): its objects do
    not exist yet; --compile makes them with your compiler first and predicts the link.

    Errors are worded like the chosen linker's, with the symbol (mangled and demangled),
    the referencing input and its argument position, and where a definition exists.

    What runs: for a command you give, its own driver (`-###` and `-print-prog-name`, dry
    runs) and GNU ld (`--verbose`, its search directories); `rustc --print sysroot` (your
    rustc) for a rustc log; the real linker only with --confirm, your compiler only with
    --compile. A log is untrusted: a program path it names is never run (the same name on
    PATH is, or --driver), unless --trust-log. --no-exec runs nothing.

    Exit status: 0 predicted to link, 1 predicted to fail, 2 usage or input error.
    """
    if gc.isenabled():
        # A link's facts are plain acyclic data (names, tuples, dicts) made by the hundred
        # thousand, and the cyclic collector would only walk them again and again: a quarter
        # of the LLVM static link's prediction (benchmarks/bench_link_projects.py). Off for the
        # command, and for the rest of the process when it ends with the command: turned on
        # again, its first collection would walk everything made meanwhile (0.03-0.05 s there).
        gc.disable()
        if not ends_with_command():
            click.get_current_context().call_on_close(gc.enable)
    from ldscope.analysis import build_report
    from ldscope.linker.frontend import CommandLineError, resolve_link_line
    from ldscope.report import dumps, render_link_text

    if bool(command) == bool(from_log):
        raise click.UsageError("give either a command after `--` or --from-log FILE")
    if no_exec:
        clash = [name for name, given in (("--confirm", confirm), ("--compile", compile_first),
                                          ("--trust-log", trust_log), ("--driver", driver)) if given]
        if clash:
            raise click.UsageError(f"--no-exec runs nothing; {clash[0]} would run a program")
    if compile_first and from_log and not trust_log:
        # Never run a program named by a log: it is not the user's own command line.
        raise click.UsageError("--compile runs the compiler of a command you give, not one from a log "
                               "(unless --trust-log)")
    if trust_log and not from_log:
        raise click.UsageError("--trust-log applies to --from-log: a command you give is always your own")
    from ldscope.system import Execution, RunPolicy

    named = os.path.abspath(driver) if driver is not None and os.sep in driver else driver
    execution = (Execution.NONE if no_exec else Execution.OWN if trust_log or not from_log
                 else Execution.BY_NAME)
    policy = RunPolicy(execution, named)
    from ldscope.linker.frontend import CompilesFirstError, DriverRefusedError
    from ldscope.linker.inputs import save_facts_store, use_facts_store

    use_facts_store(None if no_cache else cache_dir())
    scratch = tempfile.TemporaryDirectory(prefix="ldscope-compile-") if compile_first else None
    try:
        if from_log:
            from ldscope.linker.frontend import find_link_in_log

            text = _read_log(from_log)
            # The directory the build ran in: --cwd, else the log's own directory. Directories
            # the log names (`ninja -C build`, `cd sub &&`) are taken from there.
            base = os.path.abspath(cwd) if cwd else (os.path.dirname(os.path.abspath(from_log))
                                                     if from_log != "-" else os.getcwd())
            from ldscope.linker.frontend import find_links_in_log

            every = find_links_in_log(text, base, ask=policy.may_run)
            if len(every) > 1:
                _every_link(every, base, cwd, linker, no_driver, fix or ablate, search=not no_search, why=why,
                            output_format=output_format, output=output, verbose=verbose, ablate=ablate,
                            policy=policy, scratch=scratch.name if scratch is not None else None)
            found = find_link_in_log(text, base, ask=policy.may_run)
            where = found.cwd or base
            if cwd and found.cwd and os.path.isabs(found.cwd) and not os.path.isdir(found.cwd):
                where = base  # the log's absolute directory is another machine's: --cwd stands for it
            line = resolve_link_line(list(found.argv), cwd=where, linker=linker,
                                     use_driver=not no_driver, source="log", policy=policy,
                                     compile_into=scratch.name if scratch is not None else None)
            line = dataclasses.replace(line, notes=(*found.notes, *line.notes, *_log_notes(found)))
        else:
            line = resolve_link_line(list(command), cwd=cwd, linker=linker, use_driver=not no_driver,
                                     compile_into=scratch.name if scratch is not None else None, policy=policy)
        report = build_report(line, fix=fix or ablate, confirm=confirm, search=not no_search, why=why)
    except DriverRefusedError as exc:
        # The command fails before any linker runs: a prediction (exit 1), not a usage error.
        if not is_quiet():
            from ldscope.report import message_lines  # the driver's words embed the command's names

            said = "\n".join(f"  | {m}" for m in message_lines(str(exc), [w for w in command if "\n" in w]))
            click.echo(f"ldscope link: the driver refuses the command — the link FAILS\n{said}")
        raise SystemExit(EXIT_FINDINGS) from None
    except CompilesFirstError as exc:
        diagnose("link", str(exc))
        if exc.link_step:
            from ldscope.report import safe

            click.echo("ldscope: the driver's link step: " + " ".join(map(safe, exc.link_step)), err=True)
        raise SystemExit(EXIT_INPUT_ERROR) from None
    except CommandLineError as exc:
        diagnose("link", str(exc))
        raise SystemExit(EXIT_INPUT_ERROR) from None
    finally:
        save_facts_store()  # also after a log's every link (_every_link exits from in here)
        use_facts_store(None)
        if scratch is not None:
            scratch.cleanup()
    if not report.inputs:
        diagnose("link", "the line has no inputs: nothing to simulate")
        raise SystemExit(EXIT_INPUT_ERROR)
    _refuse_special_inputs([report])
    if from_log:
        _refuse_if_inputs_absent([report])
    if output_format == "json":
        from ldscope.report import link_json  # the JSON writer imports the explainers' types

        text_out = dumps(link_json(report))
    elif output_format == "sarif":
        from ldscope.report import link_sarif  # the SARIF writer imports the scan's tables

        text_out = dumps(link_sarif(report))
    else:
        text_out = render_link_text(report, verbose=verbose, ablate=ablate)
    write_output(text_out, output)
    raise SystemExit(EXIT_CLEAN if report.links else EXIT_FINDINGS)


def _refuse_if_inputs_absent(reports: list[Any]) -> None:
    """Exit 2 when none of a log's own (relative) input files is there: a prediction from
    files that are not there would be a confident wrong answer."""
    files = [i for r in reports for i in r.inputs
             if not i.spec.startswith(("-", "<", "/")) and " (from " not in i.spec]
    if files and all(i.problem == "missing-input" for i in files):
        diagnose("link", f"none of the log's {len(files)} input files is found from {reports[0].cwd} "
                         f"(first: {files[0].spec}): pass --cwd DIR, the directory the build ran in")
        raise SystemExit(EXIT_INPUT_ERROR)


def _refuse_special_inputs(reports: list[Any]) -> None:
    """Exit 2 when an input (a file on the line, a -l search hit, a script's member) is a FIFO,
    socket or device: the real linker would block on it or read it for ever, so there is no
    link to predict."""
    refuse_special_files([os.path.join(r.cwd, i.path) for r in reports for i in r.inputs if i.path], "link input")


def _every_link(every: list[Any], base: str, cwd: str | None, linker: str | None, no_driver: bool, fix: bool,
                search: bool, why: tuple[str, ...], output_format: str, output: str | None, verbose: bool,
                ablate: bool, policy: RunPolicy, scratch: str | None) -> None:
    """A log with several link steps (`cargo test --no-run`, a make of a library and its
    tools): one prediction per link, and each fix tried on the other links too. Exits."""
    from ldscope.analysis import build_report, check_fixes_across
    from ldscope.linker.frontend import CommandLineError, resolve_link_line
    from ldscope.report import dumps, render_link_text, safe

    lines: list[Any] = []
    reports: list[Any] = []
    for n, found in enumerate(every):
        where = found.cwd or base
        if cwd and found.cwd and os.path.isabs(found.cwd) and not os.path.isdir(found.cwd):
            where = base
        into = None
        if scratch is not None:  # --compile --trust-log: each link's objects in a directory of their own
            into = os.path.join(scratch, str(n))
            os.makedirs(into, exist_ok=True)
        try:
            line = resolve_link_line(list(found.argv), cwd=where, linker=linker, use_driver=not no_driver,
                                     source="log", policy=policy, compile_into=into)
        except CommandLineError as exc:
            diagnose("link", f"a link step of the log is skipped: {exc}")
            continue
        line = dataclasses.replace(line, notes=(*found.notes, *line.notes, *_log_notes(found)))
        lines.append(line)
        reports.append(build_report(line, fix=fix, search=search, why=why))
    _refuse_special_inputs(reports)
    _refuse_if_inputs_absent(reports)
    checks = check_fixes_across(lines, reports)
    if output_format == "json":
        from ldscope.report import link_json

        document = {"schema": "ldscope.link-log/1", "links": [link_json(r) for r in reports],
                    "fix_checks": [{"fix_of": c.fix_of, "fix": c.fix_id, "on": c.on, "added": list(c.added),
                                    "links_before": c.links_before, "links_after": c.links_after}
                                   for c in checks]}
        write_output(dumps(document), output)
    else:
        parts = []
        for k, report in enumerate(reports):
            target = next((report.original[i + 1] for i, w in enumerate(report.original[:-1]) if w == "-o"), "?")
            parts.append(f"== link {k + 1} of {len(reports)} in the log: {safe(os.path.basename(target))}\n"
                         + render_link_text(report, verbose=verbose, ablate=ablate))
        for c in checks:
            effect = ("still links" if c.links_after else "FAILS with it") if c.links_before else (
                "links with it" if c.links_after else "still fails")
            parts.append(f"{'fix of link ' + str(c.fix_of + 1)} ({c.fix_id}, adds {' '.join(map(safe, c.added))}) on link "
                         f"{c.on + 1}: {effect}\n")
        write_output("\n".join(parts), output)
    raise SystemExit(EXIT_CLEAN if reports and all(r.links for r in reports) else EXIT_FINDINGS)


def _read_log(path: str) -> str:
    try:
        if path == "-":
            if sys.stdin is None:  # started with `<&-`
                raise OSError(0, "standard input is closed")
            return sys.stdin.read()
        from ldscope.elf import open_regular_text

        with open_regular_text(path) as fh:  # a FIFO or /dev/zero named as the log: an error
            return fh.read(64 << 20)
    except (OSError, ValueError) as exc:
        diagnose(path, f"cannot read the log: {getattr(exc, 'strerror', None) or exc}")
        raise SystemExit(EXIT_INPUT_ERROR) from None


def _log_notes(found: object) -> tuple[str, ...]:
    reported = getattr(found, "reported", ())
    if not reported:
        return ()
    syms = sorted(found.reported_symbols()) if hasattr(found, "reported_symbols") else []
    text = f"the log reports {len(reported)} linker error line(s)"
    if syms:
        text += ": undefined " + ", ".join(syms[:10])
    return (text,)
