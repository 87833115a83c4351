"""One simulated link: parse the line, resolve its inputs, run the chosen linker's engine."""

from __future__ import annotations

import os
from dataclasses import dataclass, replace

from ldscope.errors import InputFormatError
from ldscope.linker._environment import LinkEnvironment, link_environment
from ldscope.linker._symbol_kinds import SHARED, SHARED_WEAK
from ldscope.linker.engines import (
    POLICIES,
    Engine,
    EngineContext,
    LazyEngine,
    MoldEngine,
    OrderedEngine,
    Outcome,
    Policy,
    RawError,
)
from ldscope.linker.frontend import (
    LinkLine,
    LinkOptions,
    ParsedLine,
    output_kind,
    parse_linker_argv,
    unsupported_options,
)
from ldscope.linker.inputs import Input, ResolvedLine, SharedFacts, default_dirs, resolve_inputs
from ldscope.linker.inputs._version_script import version_script_names
from ldscope.vocab import LinkErrorKind


@dataclass(frozen=True, slots=True)
class Simulation:
    """Everything one simulated link produced (before explanations and wording)."""

    line: LinkLine
    parsed: ParsedLine
    resolved: ResolvedLine
    outcome: Outcome
    policy: Policy
    kind: str
    environment: LinkEnvironment
    missing_fatal: bool = True

    @property
    def links(self) -> bool:
        """True when no error (shown or not) was found (missing inputs of a log aside)."""
        ignore = (LinkErrorKind.UNDEFINED_WARNING,) if self.missing_fatal else (LinkErrorKind.UNDEFINED_WARNING, LinkErrorKind.MISSING_INPUT)
        return not any(e.kind not in ignore for e in self.outcome.errors)


def static_dynamic_objects(resolved: ResolvedLine, static_link: bool, policy: Policy) -> list[Input]:
    """Shared libraries on the line that this linker refuses in a static context: named by
    path (a -l under -Bstatic finds only libNAME.a) in a -Bstatic/-static region (bfd, lld),
    or anywhere in a -static link (gold)."""
    rule = policy.static_dynamic_object
    if rule == "accept" or (rule == "static-link" and not static_link):
        return []
    return [inp for inp in resolved.inputs if isinstance(inp.facts, SharedFacts)
            and (inp.static_only or rule == "static-link")]


def undefined_version_errors(opts: LinkOptions, policy: Policy, outcome: Outcome, cwd: str) -> list[RawError]:
    """--no-undefined-version: every exact name a version script exports must be defined by
    the link's objects (a shared library's definition does not count)."""
    rule = policy.undefined_version_error
    wanted = opts.undefined_version is False if rule == "opt-in" else opts.undefined_version is not True
    if rule == "never" or not wanted or not opts.version_scripts:
        return []
    defined = {key for key, (kind, _uid) in outcome.table.defs.items() if kind not in (SHARED, SHARED_WEAK)}
    errors: list[RawError] = []
    for script in opts.version_scripts:
        try:
            names = version_script_names(os.path.join(cwd, script))
        except InputFormatError:
            continue  # the linker's own "cannot open" is not modelled here
        errors.extend(RawError(LinkErrorKind.UNDEFINED_VERSION, name, None, None, node or "{anonymous}")
                      for node, name in names if name not in defined)
    return errors


def engine_class(policy: Policy) -> type[Engine]:
    """The engine implementing a policy."""
    if policy.ordered:
        return OrderedEngine
    return MoldEngine if policy.name == "mold" else LazyEngine


def simulate_argv(line: LinkLine, argv: tuple[str, ...] | None = None, linker: str | None = None,
                  environment: LinkEnvironment | None = None, missing_fatal: bool | None = None) -> Simulation:
    """Simulate `argv` (default: the line's own) with `linker` (default: the line's), in
    `environment` (default: the process environment and the shared facts cache)."""
    environment = environment if environment is not None else link_environment()
    policy = POLICIES[linker or line.linker]
    words = argv if argv is not None else line.argv
    parsed = parse_linker_argv(words)
    opts = parsed.options
    kind = output_kind(opts)
    dirs, source = default_dirs(policy.name, line.linker_program, opts.emulation, opts.sysroot,
                                opts.nostdlib, environment.variables)
    resolved = resolve_inputs(parsed.items, opts, line.cwd, dirs, source, environment.cache)
    script_dirs = dirs if policy.name == "bfd" else ()
    fatal = missing_fatal if missing_fatal is not None else line.source != "log"
    ctx = EngineContext(resolved, opts, kind, environment.variables, environment.cache,
                        line.linker_program, line.cwd, script_dirs, fatal, parsed.items)
    outcome = engine_class(policy)(ctx, policy).run()
    refused_objects = static_dynamic_objects(resolved, opts.static, policy)
    if refused_objects:
        # Fatal when the file is opened: what the link would have reported later never is.
        hidden = [replace(e, shown=False) for e in outcome.errors]
        outcome.errors = [RawError(LinkErrorKind.STATIC_DYNAMIC_OBJECT, None, None, None, inp.display,
                                   input_seq=inp.seq) for inp in refused_objects[:1]] + hidden
        outcome.fatal = True
    outcome.errors.extend(undefined_version_errors(opts, policy, outcome, line.cwd))
    refused = unsupported_options(opts, policy.name)
    if refused:
        hidden = [replace(e, shown=False) for e in outcome.errors]
        outcome.errors = [RawError(LinkErrorKind.UNKNOWN_OPTION, None, None, None, f"{text} (argument {pos})")
                          for text, pos in refused] + hidden
        outcome.fatal = True
    return Simulation(line, parsed, resolved, outcome, policy, kind, environment, fatal)
