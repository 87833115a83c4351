"""From what the user has to the linker's own argv: drivers, response files, -Wl, linkers.

A compiler-driver command is turned into the real linker line by asking the driver
(`gcc -### …` is a dry run: nothing is compiled or linked). Without the driver, documented
defaults of Debian 12's gcc are used instead, and the result says so.

Which driver is asked follows the line's RunPolicy: the command's own for a command the user
gave, the same name found on PATH for a log's line (a path a log names is never run), the one
named with `--driver`, or none (`--no-exec`).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from ldscope.elf import NotRegularFileError, read_regular
from ldscope.linker.frontend._driver import (
    COMPILE_ONLY,
    DriverPlan,
    compile_commands,
    driver_plan,
    fallback_linker_argv,
    is_driver_name,
)
from ldscope.system import (
    Execution,
    RunPolicy,
    driver_dry_run,
    driver_query,
    environment_or_process,
    find_program,
    program_to_run,
    run_compiler,
)

LINKERS = ("bfd", "gold", "lld", "mold")
_MAX_RESPONSE_DEPTH = 16
_MAX_RESPONSE_BYTES = 16 << 20
_LINKER_NAMES = {
    "ld.bfd": "bfd", "ld.gold": "gold", "gold": "gold", "ld.lld": "lld", "lld": "lld",
    "ld64.lld": "lld", "mold": "mold", "ld.mold": "mold",
}  # fmt: skip


class CommandLineError(Exception):
    """A link line that cannot be understood at all."""


class NotALinkError(CommandLineError):
    """A driver command that stops before linking (-c, -S, -E, ...)."""


class DriverRefusedError(CommandLineError):
    """The compiler driver itself refuses the command before any link ("no input files"):
    a predicted failure, worded as the driver words it."""


class CompilesFirstError(CommandLineError):
    """A driver command that compiles sources and then links them: the objects the link
    step needs do not exist yet (`link --compile` makes them first)."""

    def __init__(self, message: str, sources: tuple[str, ...], link_step: tuple[str, ...]) -> None:
        super().__init__(message)
        self.sources = sources
        self.link_step = link_step  # the driver's own link step, temporary objects named by source


@dataclass(frozen=True, slots=True)
class LinkLine:
    """The linker argv ldscope simulates, where it came from, and what it chose."""

    argv: tuple[str, ...]  # argv[0] is the linker program
    original: tuple[str, ...]
    cwd: str
    linker: str  # bfd | gold | lld | mold
    linker_program: str
    source: str  # "linker" | "driver" | "driver-fallback" | "log"
    notes: tuple[str, ...]
    # The linker binary the line really runs, as an absolute path ldscope may run under the
    # line's policy: collect2's `ld` as the driver names it (`-print-prog-name`, e.g. a cross
    # toolchain's aarch64-linux-gnu/bin/ld), or the linker program itself (a log's by its name
    # on PATH); None when unknown.
    linker_path: str | None = None
    # What may be run for this line (kept, so a fix re-resolved from it asks the same programs).
    policy: RunPolicy = field(default_factory=RunPolicy)

    def program_for(self, linker: str) -> str:
        """The program that runs when this line is linked with `linker`: the line's own
        binary when it is that linker, else the line's program (its name decides): an
        absolute path, or a bare name to find on PATH when the line's paths are not trusted."""
        if self.linker_path is not None and linker_from_program(self.linker_path) == linker:
            return self.linker_path
        if self.policy.execution is Execution.BY_NAME:
            return os.path.basename(self.linker_program)
        if os.sep in self.linker_program and not os.path.isabs(self.linker_program):
            return os.path.join(self.cwd, self.linker_program)  # as the link runs it, never from ldscope's cwd
        return self.linker_program

    def message_program(self, linker: str) -> str:
        """How the linker names itself in its messages: its argv[0] as run (collect2 runs
        the binary by the driver's full path; a linker line by the word written)."""
        if os.path.basename(self.linker_program) == "collect2":
            return self.program_for(linker)
        return self.linker_program


def split_quoted(text: str) -> list[str]:
    """Split like libiberty's buildargv: blanks separate, quotes group, backslash escapes."""
    args: list[str] = []
    cur: list[str] = []
    have = False
    quote: str | None = None
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c == "\\" and i + 1 < n:
            cur.append(text[i + 1])
            have = True
            i += 2
            continue
        if quote is not None:
            if c == quote:
                quote = None
            else:
                cur.append(c)
        elif c in "\"'":
            quote = c
            have = True
        elif c.isspace():
            if have or cur:
                args.append("".join(cur))
                cur, have = [], False
        else:
            cur.append(c)
            have = True
        i += 1
    if have or cur:
        args.append("".join(cur))
    return args


def expand_response_files(argv: list[str], cwd: str, notes: list[str], depth: int = 0) -> list[str]:
    """Replace each `@file` by its words (recursively); an unreadable @file stays as written."""
    out: list[str] = []
    for k, word in enumerate(argv):
        if k == 0 or not word.startswith("@") or len(word) == 1:
            out.append(word)
            continue
        path = os.path.join(cwd, word[1:])
        try:
            data = read_regular(path, _MAX_RESPONSE_BYTES + 1)
        except NotRegularFileError as exc:
            # gcc would block on a FIFO or read a device for ever: not a line to predict.
            raise CommandLineError(f"response file {word[1:]} {exc.reason}") from None
        except OSError:
            out.append(word)  # as gcc does: an @file that cannot be opened is a plain word
            continue
        if len(data) > _MAX_RESPONSE_BYTES:
            raise CommandLineError(f"response file {word[1:]} is larger than 16 MiB")
        if depth >= _MAX_RESPONSE_DEPTH:
            raise CommandLineError(f"response file {word[1:]}: nested more than {depth} deep")
        words = split_quoted(data.decode("utf-8", "surrogateescape"))
        notes.append(f"expanded response file {word} ({len(words)} arguments)")
        out.extend(expand_response_files(["-", *words], cwd, notes, depth + 1)[1:])
    return out


def linker_from_program(program: str, env: Mapping[str, str] | None = None) -> str | None:
    """bfd/gold/lld/mold from a linker program name (following the `ld` symlink on the PATH
    of `env`, default the process environment)."""
    base = os.path.basename(program)
    if base in _LINKER_NAMES:
        return _LINKER_NAMES[base]
    if base == "ld" or base.endswith("-ld") or base == "collect2":
        found = find_program(program, environment_or_process(env))
        if found:
            real = os.path.basename(os.path.realpath(found))
            if real in _LINKER_NAMES:
                return _LINKER_NAMES[real]
        return "bfd"
    for suffix, name in (("-ld.bfd", "bfd"), ("-ld.gold", "gold"), ("-ld.lld", "lld")):
        if base.endswith(suffix):
            return name
    return None


def _fuse_ld(argv: list[str] | tuple[str, ...]) -> str | None:
    for word in reversed(argv):
        if word.startswith("-fuse-ld="):
            value = word.split("=", 1)[1]
            return _LINKER_NAMES.get(value, _LINKER_NAMES.get(f"ld.{value}", value))
    return None


def parse_driver_output(stderr: str) -> list[str] | None:
    """The linker command from `driver -###` output (the last collect2/ld/mold step)."""
    found: list[str] | None = None
    for line in stderr.splitlines():
        if not line.startswith(" "):
            continue
        words = split_quoted(line)
        if words and (linker_from_program(words[0]) is not None):
            found = words
    return found


def run_driver_dry(argv: list[str], cwd: str, env: Mapping[str, str]) -> tuple[list[str] | None, str]:
    """Ask the driver argv[0] (already chosen by the line's policy) for its linker line
    (`-###`); (argv or None, why not)."""
    program = argv[0]
    stderr, why = driver_dry_run(argv, cwd, env)
    if stderr is None:
        return None, why
    found = parse_driver_output(stderr)
    if found is None:
        tail = stderr.strip().splitlines()[-1:] if stderr.strip() else []
        why = f": {tail[0]}" if tail else ""
        return None, f"driver {program!r} printed no link step for these arguments{why}"
    return found, ""


def _program_kind(program: str, env: Mapping[str, str]) -> str:
    base = os.path.basename(program)
    if linker_from_program(program, env) is not None and base not in ("collect2",):
        return "linker"
    if base == "collect2":
        return "linker"
    if is_driver_name(base):
        return "driver"
    return "unknown"


def _driver_to_ask(program: str, policy: RunPolicy, cwd: str, env: Mapping[str, str],
                   notes: list[str]) -> tuple[str | None, str]:
    """The driver to run `-###` and `-print-prog-name` with under `policy`; (it or None, why not)."""
    if not policy.may_run:
        return None, "--no-exec: the driver was not asked (-###)"
    if policy.driver is not None:
        exe = find_program(policy.driver, env)
        if exe is None:
            raise CommandLineError(f"--driver {policy.driver!r} is not an executable program here")
        notes.append(f"asked the driver named with --driver ({exe}) instead of the line's {program!r}")
        return exe, ""
    exe = program_to_run(program, env, cwd, policy.execution)
    untrusted_path = policy.execution is Execution.BY_NAME and os.sep in program
    if exe is None:
        if untrusted_path:
            return None, (f"the log's driver {program!r} is not run (--trust-log runs a log's own programs, "
                          f"--driver names one) and no {os.path.basename(program)!r} is on PATH")
        return None, f"driver {program!r} is not installed here"
    if untrusted_path and exe != program:
        # A log is untrusted input: its driver's path is never run, the same name on PATH is.
        notes.append(f"the log's driver {program!r} is not run (--trust-log runs a log's own programs); "
                     f"asked {exe}, found on PATH by its name, instead")
    return exe, ""


def resolve_link_line(
    argv: list[str] | tuple[str, ...], cwd: str | None = None, linker: str | None = None,
    env: Mapping[str, str] | None = None, use_driver: bool = True, source: str | None = None,
    compile_into: str | None = None, policy: RunPolicy | None = None,
) -> LinkLine:
    """Turn a user command (driver or linker, with @files) into the linker argv to simulate.

    A driver command that compiles sources raises CompilesFirstError, unless `compile_into`
    names a directory: then the user's compiler makes the objects there first (`--compile`).
    `policy` says which programs may be asked (default: the command's own, or for
    `source="log"` its programs by name on PATH only: a log is untrusted input)."""
    if policy is None:
        policy = RunPolicy(Execution.BY_NAME) if source == "log" else RunPolicy()
    if not argv:
        raise CommandLineError("empty command line")
    where = os.path.abspath(cwd or os.getcwd())
    notes: list[str] = []
    words = expand_response_files(list(argv), where, notes)
    program = words[0]
    variables = environment_or_process(env)
    kind = _program_kind(program, variables)
    if kind == "unknown":
        raise CommandLineError(
            f"{program!r} is neither a compiler driver (gcc, g++, cc, clang, ...) nor a linker "
            "(ld, ld.bfd, ld.gold, ld.lld, mold, collect2)"
        )
    chosen_from = "linker"
    ld_argv: list[str]
    linker_path: str | None = None
    if kind == "driver":
        plan = driver_plan(words)
        if not plan.sources and not _has_link_input(words):
            raise DriverRefusedError(f"{os.path.basename(program)}: fatal error: no input files")
        if plan.stops_before_link is not None:
            raise NotALinkError(f"not a link: this command {COMPILE_ONLY[plan.stops_before_link]}; "
                                "there is no link step to predict")
        driver, why = _driver_to_ask(program, policy, where, variables, notes) if use_driver else (None, "")
        if plan.sources:
            if compile_into is None:
                step = _link_step([driver, *words[1:]], plan, where, variables) if driver else ()
                names = ", ".join(src for _, src in plan.sources)
                remedy = ("its objects were the compiler's temporary files: run the command yourself "
                          "with --compile" if source == "log" else
                          "--compile compiles them into a temporary directory and predicts the link")
                raise CompilesFirstError(
                    f"this command compiles {names} first: the link step's inputs don't exist yet ({remedy})",
                    tuple(src for _, src in plan.sources), step)
            if driver is None or not policy.may_run:
                raise CommandLineError(f"--compile: {why or 'the driver may not be run'}")
            words = _compiled([driver, *words[1:]], plan, compile_into, where, variables, notes, program)
        found: list[str] | None = None
        if driver is not None:
            found, why = run_driver_dry([driver, *words[1:]], where, variables)
        if found is not None:
            ld_argv = found
            chosen_from = "driver"
            notes.append(f"link line obtained from `{os.path.basename(driver or program)} -###` (dry run)")
            if os.path.basename(found[0]) == "collect2" and driver is not None:
                linker_path = _collect2_linker([driver, *words[1:]], linker or _fuse_ld(words), where, variables)
        else:
            ld_argv, fallback_notes = fallback_linker_argv(words)
            chosen_from = "driver-fallback"
            notes.append(f"{why or 'driver not used'}; using documented defaults instead")
            notes.extend(fallback_notes)
    else:
        ld_argv = words
        if policy.driver is not None:
            notes.append(f"--driver {policy.driver} not used: the line is a linker command, not a driver's")
        linker_path = (program_to_run(program, variables, where, policy.execution)
                       if os.path.basename(program) != "collect2" else None)
    name = linker or _fuse_ld(ld_argv) or _fuse_ld(words) or linker_from_program(ld_argv[0], variables) or "bfd"
    if name not in LINKERS:
        raise CommandLineError(f"unknown linker {name!r} (choose one of {', '.join(LINKERS)})")
    return LinkLine(
        argv=tuple(ld_argv), original=tuple(argv), cwd=where, linker=name,
        linker_program=ld_argv[0], source=source or chosen_from, notes=tuple(notes), linker_path=linker_path,
        policy=policy,
    )


def _has_link_input(words: list[str]) -> bool:
    """Whether a driver command names anything to link: a file, a -l library, or words passed
    straight to the linker (gcc's "no input files" otherwise)."""
    with_arg = {"-o", "-L", "-u", "-e", "-T", "-z", "-x", "-I", "-D", "-U", "-include", "-isystem", "-iquote",
                "-idirafter", "-MF", "-MT", "-MQ", "-B", "--sysroot", "-specs", "-target", "--target"}
    i = 1
    while i < len(words):
        w = words[i]
        if w in with_arg:
            i += 2
            continue
        if w == "-Xlinker" or w.startswith(("-Wl,", "-l")) or not w.startswith("-") or w == "-":
            return True
        i += 1
    return False


def _collect2_linker(words: list[str], fuse: str | None, cwd: str, env: Mapping[str, str]) -> str | None:
    """The program collect2 runs for this driver: `DRIVER -print-prog-name=ld` (or ld.bfd,
    ld.gold, ... with -fuse-ld), a query like -###; a bare name is looked up on PATH."""
    if fuse not in (None, *LINKERS):
        return None  # -fuse-ld=PATH (clang) names a program of the line, not one to ask the driver for
    name = "ld" if fuse in (None, "bfd") and not any(w == "-fuse-ld=bfd" for w in words) else f"ld.{fuse}"
    answer = driver_query(words[0], f"-print-prog-name={name}", cwd, env)
    if not answer or (os.sep in answer and not os.path.isabs(answer)):
        return None
    return find_program(answer, env)  # the asked driver's answer: a path it runs, or a name on PATH


def _link_step(words: list[str], plan: DriverPlan, cwd: str, env: Mapping[str, str]) -> tuple[str, ...]:
    """The driver's link step for a compile-and-link command (from `-###`, a dry run), with
    its temporary objects named after the sources they come from, in order."""
    found, _why = run_driver_dry(words, cwd, env)
    if found is None:
        return ()
    sources = iter(src for _, src in plan.sources)
    step = []
    for word in found:
        if re.fullmatch(r".*/cc[A-Za-z0-9]{6}\.o", word):
            source = next(sources, None)
            word = f"<object of {source}>" if source is not None else word
        step.append(word)
    return tuple(step)


def _compiled(words: list[str], plan: DriverPlan, into: str, cwd: str, env: Mapping[str, str],
              notes: list[str], program: str) -> list[str]:
    """Compile each source with the chosen compiler (words[0]) into `into`; the command (its
    own `program` first again) with the objects in the sources' places."""
    objects = [os.path.join(into, f"{k}-{os.path.splitext(os.path.basename(src))[0]}.o")
               for k, (_, src) in enumerate(plan.sources)]
    for command in compile_commands(words, plan, objects):
        failure = run_compiler(command, cwd, env)
        if failure is not None:
            raise CommandLineError(f"--compile: {failure}")
    replaced = [program, *words[1:]]
    for (index, src), obj in zip(plan.sources, objects):
        replaced[index] = obj
        notes.append(f"compiled {src} first (--compile): {obj}")
    return replaced


_ENV_ASSIGN = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")


def strip_env_assignments(words: list[str]) -> list[str]:
    """Drop leading NAME=value words (as rustc prints before the command)."""
    k = 0
    while k < len(words) - 1 and _ENV_ASSIGN.match(words[k]):
        k += 1
    return words[k:]
