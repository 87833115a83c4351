"""One simulated link: parse the line, resolve its inputs, run the chosen linker's engine."""

from __future__ import annotations

from dataclasses import dataclass, replace

from ldscope.linker._branch_range import add_layout_branch_errors
from ldscope.linker._environment import LinkEnvironment, link_environment
from ldscope.linker._output_checks import (
    add_long_branch_errors,
    add_non_pic_errors,
    static_dynamic_objects,
    undefined_version_errors,
)
from ldscope.linker._pic_checks import add_pic_relocation_errors
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
from ldscope.linker.frontend import LinkLine, ParsedLine, output_kind, parse_linker_argv, unsupported_options
from ldscope.linker.inputs import ResolvedLine, default_dirs, resolve_inputs
from ldscope.vocab import LinkErrorKind

# lld's undefined-symbol diagnostics: one a symbol, with every reference under it.
_MERGED_BY_SYMBOL = frozenset({LinkErrorKind.UNDEFINED_REFERENCE, LinkErrorKind.HIDDEN_UNDEFINED})


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
        ignore = () if self.missing_fatal else (LinkErrorKind.MISSING_INPUT,)
        return not any(not e.kind.is_warning and e.kind not in ignore for e in self.outcome.errors)


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
    dirs, source = default_dirs(policy.name, line.program_for(policy.name), opts.emulation, opts.sysroot,
                                opts.nostdlib, environment.variables, line.policy.may_run)
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
    add_non_pic_errors(outcome, policy, kind, opts)
    add_pic_relocation_errors(outcome, policy, kind, opts)
    add_long_branch_errors(outcome, policy)
    add_layout_branch_errors(outcome, policy, kind, opts)
    limit = opts.error_limit if opts.error_limit is not None and policy.error_limit else policy.error_limit
    if limit:
        shown = 0
        # lld reports an undefined symbol once, every object referring to it listed under it
        # (`>>> referenced by`): one error of the limit however many objects refer to it.
        merged: dict[tuple[LinkErrorKind, str | None], bool] = {}
        for n, e in enumerate(outcome.errors):
            if e.shown and not e.kind.is_warning:
                one = (e.kind, e.key) if e.kind in _MERGED_BY_SYMBOL else None
                if one is not None and one in merged:
                    keep = merged[one]
                else:
                    shown += 1
                    keep = shown <= limit
                    if one is not None:
                        merged[one] = keep
                if not keep:
                    outcome.errors[n] = replace(e, shown=False)  # lld: "too many errors emitted"
    refused = unsupported_options(opts, policy.name)
    if refused:
        hidden = [replace(e, shown=False) for e in outcome.errors]
        outcome.errors = [RawError(LinkErrorKind.UNKNOWN_OPTION, None, None, None, f"{text} (argument {pos})")
                          for text, pos in refused] + hidden
        outcome.fatal = True
    return Simulation(line, parsed, resolved, outcome, policy, kind, environment, fatal)
