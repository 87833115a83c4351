"""`scan`: resolve targets, discover native files, simulate each in its host, gather findings."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from ldscope import system
from ldscope.errors import InputFormatError
from ldscope.loader import ElfImage, ImageCache, LoadReport, Problem
from ldscope.scan._attribution import Attribution, Owner, provider_paths
from ldscope.scan._discover import Candidate, Discovery, Skipped, classify_head, named_like_library, walk_tree
from ldscope.scan._findings import Finding, collect_findings, environment_findings
from ldscope.scan._plugins import as_plugin, plugin_host, program_host, programs_by_needed
from ldscope.scan._process import PythonProcessModel
from ldscope.scan._python_checks import unsatisfied_requirements, wheel_problems
from ldscope.scan._runner import (
    FileResult,
    Job,
    NativeKind,
    ScanSettings,
    ScanState,
    library_job,
    make_state,
    plan_jobs,
    run_jobs,
)
from ldscope.scan._shadowing import Shadowing, relabel_shadowing
from ldscope.scan._targets import ScanTarget, TargetKind, batched, resolve_targets
from ldscope.system import OSFileSystem, WheelLimits, WheelOverlay
from ldscope.vocab import ProblemKind, Severity, When


@dataclass(frozen=True, slots=True)
class ScanResult:
    """Everything a scan found."""

    targets: tuple[ScanTarget, ...]
    files: tuple[FileResult, ...]
    findings: tuple[Finding, ...]
    skipped: tuple[Skipped, ...]
    errors: tuple[str, ...]  # targets that could not be scanned at all, wheel members not read (exit 2)
    files_seen: int = 0
    owners: tuple[tuple[str, Owner | None], ...] = ()  # every native file and provider, its owner

    def fails(self, fail_on: str) -> bool:
        """True if any finding is at or above the `--fail-on` severity ("never": never)."""
        if fail_on == "never":
            return False
        limit = Severity(fail_on)
        return any(Severity.rank_of(f.severity) <= limit.rank for f in self.findings)

    def summary(self) -> dict[str, object]:
        """Counts for the one-screen summary."""
        by_kind: dict[str, int] = {}
        for f in self.files:
            by_kind[f.kind] = by_kind.get(f.kind, 0) + 1
        problems_by_kind: dict[str, int] = {}
        for finding in self.findings:
            for p in finding.problems:
                problems_by_kind[p.kind] = problems_by_kind.get(p.kind, 0) + 1
        return {
            "files_seen": self.files_seen,
            "native_files": len(self.files),
            "by_kind": dict(sorted(by_kind.items())),
            "loads": sum(1 for f in self.files if f.loads),
            "fails": sum(1 for f in self.files if not f.loads),
            "problems_by_kind": dict(sorted(problems_by_kind.items())),
            "findings": len(self.findings),
            "skipped": len(self.skipped),
            "unreadable": sum(1 for s in self.skipped if s.is_problem),
        }


def _images(cache: ImageCache, candidates: list[Candidate], skipped: list[Skipped]) -> tuple[list[Candidate], dict[str, ElfImage]]:
    """Parse every candidate once; unreadable ones become skipped findings."""
    images: dict[str, ElfImage] = {}
    kept: list[Candidate] = []
    for c in candidates:
        try:
            image = cache.get(c.host_path)
        except InputFormatError as exc:
            skipped.append(Skipped(c.path, f"unreadable ELF file: {exc.reason}", True))
            continue
        if image.is_separate_debug:
            # objcopy --only-keep-debug output, -dbg packages: symbols for a debugger, no
            # code; nothing loads it, so nothing is wrong with it.
            skipped.append(Skipped(c.path, "separate debug file (no code, no dynamic section): not loaded by anything", False))
            continue
        images[c.path] = image
        kept.append(c)
    return kept, images


@dataclass(slots=True)
class _TargetFiles:
    """A target's native files as discovered, and the process context they load in."""

    discovery: Discovery = field(default_factory=Discovery)
    fs: OSFileSystem | None = None  # a wheel's overlay; None: the real filesystem
    python: str | None = None
    distributions: list[system.Distribution] = field(default_factory=list)
    activation: tuple[str, ...] = ()
    root: str | None = None
    site_packages: tuple[str, ...] = ()  # set for environments and wheels scanned with one


@dataclass(frozen=True, slots=True)
class TargetScan:
    """What scanning one target produced."""

    files: tuple[FileResult, ...]
    findings: tuple[Finding, ...]  # about the target as a whole (duplicate SONAMEs, LD_LIBRARY_PATH)
    discovery: Discovery
    reports: tuple[tuple[str, LoadReport], ...]  # every load, for grouping findings across targets
    distributions: tuple[system.Distribution, ...] = ()
    errors: tuple[str, ...] = ()  # a wheel's members that could not be read (exit 2; the rest is scanned)


def _discover(target: ScanTarget, settings: ScanSettings, with_env: str | None,
              limits: WheelLimits | None = None) -> _TargetFiles:
    """Walk a target for native files and learn the context they load in."""
    found = _TargetFiles(python=settings.python or target.interpreter, root=settings.root)
    if target.kind == TargetKind.ENVIRONMENT:
        env = system.describe_environment(target.path, target.interpreter)
        found.python = found.python or env.interpreter
        for top in env.scan_roots:
            walk_tree(top, found.discovery)
        found.distributions = system.read_distributions(env.site_packages)
        found.site_packages = env.site_packages
        found.activation = env.activation_scripts
    elif target.kind == TargetKind.WHEEL:
        _discover_wheel(target, with_env, found, limits)
    elif target.kind == TargetKind.ROOT:
        walk_tree(target.path, found.discovery, root=target.path)
        found.root = target.path
    elif target.kind == TargetKind.FILES:
        for path in target.paths:
            walk_tree(path, found.discovery)
    else:
        walk_tree(target.path, found.discovery)
    return found


def _discover_wheel(target: ScanTarget, with_env: str | None, found: _TargetFiles,
                    limits: WheelLimits | None = None) -> None:
    """A wheel's members, read in place and shown where they would be installed."""
    mount_env = system.describe_environment(with_env) if with_env else None
    mount = (mount_env.site_packages[0] if mount_env and mount_env.site_packages
             else f"/(wheel)/{os.path.basename(target.path)}")
    overlay = WheelOverlay(target.path, mount, limits)
    found.fs = overlay
    if mount_env is not None:
        found.python = found.python or mount_env.interpreter
        found.distributions = system.read_distributions(mount_env.site_packages)
        found.site_packages = mount_env.site_packages
        # The wheel's own distribution, as it would be once installed: its RECORD says which
        # files are its own, its Requires-Dist what is imported before them.
        own = _wheel_distribution(overlay, mount)
        if own is not None:
            found.distributions = [d for d in found.distributions if d.name != own.name] + [own]
    discovery = found.discovery
    for vpath in overlay.virtual_files():
        info = overlay.members[vpath]
        discovery.files_seen += 1
        if not named_like_library(os.path.basename(vpath)) and not (info.external_attr >> 16) & 0o111:
            continue
        try:
            head = overlay.head(vpath, 64)
        except InputFormatError:
            continue  # the overlay lists it among the wheel's errors
        parsed = classify_head(head)
        if parsed is None:
            if named_like_library(os.path.basename(vpath)):
                discovery.skipped.append(Skipped(vpath, "named like a library but not an ELF file", True))
            continue
        discovery.candidates.append(Candidate(vpath, vpath, parsed[0], parsed[2], parsed[3]))


def _wheel_distribution(overlay: WheelOverlay, mount: str) -> system.Distribution | None:
    """The distribution a wheel installs, from its .dist-info METADATA and RECORD members."""
    metadata = [v for v in overlay.virtual_files() if v.endswith(".dist-info/METADATA")
                and os.path.dirname(os.path.dirname(v)) == mount.rstrip("/")]
    if len(metadata) != 1:
        return None
    info = os.path.dirname(metadata[0])
    try:
        text = overlay.read(metadata[0], 1 << 20).decode("utf-8", "replace")
        record = overlay.read(os.path.join(info, "RECORD"), 16 << 20).decode("utf-8", "replace")
    except (InputFormatError, OSError, KeyError):
        return None
    return system.parse_distribution(text, record, mount, os.path.basename(info))


def _state_for(found: _TargetFiles, settings: ScanSettings, states: dict[str | None, ScanState] | None) -> ScanState:
    """The shared state of the target's filesystem view (one per root; a wheel its own)."""
    if found.root != settings.root:
        settings = replace(settings, root=found.root)
    if found.fs is not None or states is None:
        return make_state(settings, found.fs)
    state = states.get(found.root)
    if state is None:
        state = states[found.root] = make_state(settings, None)
    return state


def scan_target(target: ScanTarget, settings: ScanSettings, with_env: str | None = None,
                progress: Callable[[int], None] | None = None,
                states: dict[str | None, ScanState] | None = None,
                limits: WheelLimits | None = None) -> TargetScan:
    """Scan one target: discover, plan hosts, simulate, gather per-file results, findings about
    the environment, and every load report (run_scan groups their problems across targets).

    `states` shares one parsed-image cache and binding cache between targets read from the
    same filesystem view (keyed by root), so a file is parsed once however many targets
    reach it; wheels get their own (their members overlay the filesystem).
    """
    found = _discover(target, settings, with_env, limits)
    state = _state_for(found, settings, states)
    discovery = found.discovery
    candidates, images = _images(state.images, discovery.candidates, discovery.skipped)
    python = found.python or system.running_interpreter()
    abi = system.interpreter_abi(python, root=found.root)
    model = _process_model(found, candidates, images, python, abi, settings.cache_dir)
    jobs, libraries, never_imported = plan_jobs(state, candidates, python, images, model, abi)
    results, reports, covered = _run(state, jobs, progress, discovery)
    wheel_level = wheel_problems(target.path, abi, python) if target.kind == TargetKind.WHEEL and abi else []
    if wheel_level:
        # pip refuses the wheel: that is the root cause; its never-imported extensions follow from it.
        reports.append((target.path, LoadReport(target.path, "pip install", False, (), tuple(wheel_level))))
        never_imported = [(job, replace(problem, cause=wheel_level[0].cause, cause_summary=wheel_level[0].cause_summary))
                          for job, problem in never_imported]
    for job, problem in never_imported:
        # Python never imports it: nothing is loaded, the suffix is the whole story.
        host = job.host.describe()
        results.append(FileResult(job.candidate.path, job.kind, False, (problem,), host, None, job.assumed))
        reports.append((job.candidate.path, LoadReport(job.candidate.path, host, False, (), (problem,))))
    leftovers = [library_job(state, c, images[c.path], python, model) for c in libraries if c.path not in covered]
    if model is not None:
        model.graph.save()  # every import closure is computed by now
    more, more_reports, _ = _run(state, leftovers, progress, discovery, record_covered=False)
    if model is None:
        # Outside a Python environment a library nothing loads may be a program's plugin.
        programs = {j.candidate.path: images[j.candidate.path] for j in jobs if j.kind == NativeKind.EXECUTABLE}
        more, more_reports = _plugins_in_their_program(state, leftovers, more, more_reports, programs)
    results += more
    reports += more_reports
    report_of = dict(reports)
    for c in libraries:
        if c.path in covered:
            # Its verdict is that of the load that checked it: its own and its dependencies' problems there.
            own = problems_within(os.path.normpath(c.host_path), report_of[covered[c.path]])
            loads = not any(p.severity == Severity.ERROR for p in own)
            results.append(FileResult(c.path, NativeKind.LIBRARY, loads, own, None, covered[c.path]))
    # Files named one by one are separate targets: two of them sharing a SONAME is no
    # environment's duplicate.
    from_option = any(a.startswith("LD_LIBRARY_PATH=") for a in settings.env)
    findings = environment_findings(candidates if target.kind != TargetKind.FILES else [], images, reports,
                                    found.activation, state.env, from_option)
    python_level = unsatisfied_requirements(found.distributions, abi) if target.kind == TargetKind.ENVIRONMENT else []
    findings += [Finding(p.cause or "", p.severity, p.kind, p.cause_summary or p.message, (p,), (p.file,))
                 for p in python_level]
    results.sort(key=lambda r: r.path)
    errors: tuple[str, ...] = ()
    if isinstance(found.fs, WheelOverlay):
        # A member that could not be decompressed is the wheel's input error (exit 2), not
        # also an unreadable-file finding.
        errors = tuple(found.fs.error_lines())
        discovery.skipped = [s for s in discovery.skipped if s.path not in found.fs.failed]
    return TargetScan(tuple(results), tuple(findings), discovery, tuple(reports), tuple(found.distributions), errors)


def _run(state: ScanState, jobs: list[Job], progress: Callable[[int], None] | None, discovery: Discovery,
         record_covered: bool = True) -> tuple[list[FileResult], list[tuple[str, LoadReport]], dict[str, str]]:
    """Simulate jobs: (file results, (file, report) pairs, library path -> the file whose load
    checked it). A job whose file cannot be read becomes a skipped entry."""
    results: list[FileResult] = []
    reports: list[tuple[str, LoadReport]] = []
    covered: dict[str, str] = {}
    for job, report in zip(jobs, run_jobs(state, jobs, progress)):
        if isinstance(report, str):
            discovery.skipped.append(Skipped(job.candidate.path, report, True))
            continue
        reports.append((job.candidate.path, report))
        if record_covered:
            for path in report.load_order:
                # ld.so keeps names like $ORIGIN/../lib/x.so unnormalised; files are compared by path.
                covered.setdefault(os.path.normpath(path), job.candidate.path)
        results.append(FileResult(job.candidate.path, job.kind, report.loads, report.problems,
                                  report.host, None, job.assumed))
    return results, reports, covered


def _plugins_in_their_program(state: ScanState, leftovers: list[Job], results: list[FileResult],
                              reports: list[tuple[str, LoadReport]], programs: dict[str, ElfImage],
                              ) -> tuple[list[FileResult], list[tuple[str, LoadReport]]]:
    """Libraries that fail in a minimal host only for symbols a library they do not link
    defines, tried again in the target's program that links it (see `_plugins`)."""
    if not programs:
        return results, reports
    hosts = programs_by_needed([(path, image.needed) for path, image in programs.items()])
    root = state.settings.root

    def exporting(names: list[str]) -> list[str]:
        return [path for path, image in programs.items() if all(image.defines(n) for n in names)]

    def soname_of(path: str) -> str | None:
        try:
            return state.images.get(_host_view(path, root)).soname
        except (InputFormatError, OSError):
            return None

    job_of = {j.candidate.path: j for j in leftovers}
    report_of = dict(reports)
    for i, result in enumerate(results):
        job = job_of.get(result.path)
        report = report_of.get(result.path)
        if job is None or report is None or result.loads:
            continue
        program = plugin_host(report, hosts, soname_of, exporting)
        if program is None:
            continue
        host = program_host(program, job.host)
        try:
            in_program = replace(state.analysis.run(job.candidate.path, host), bindings=())
        except InputFormatError:
            continue
        if not in_program.loads:
            continue  # it fails there too: the minimal-host report stands
        merged = as_plugin(report, in_program, program)
        report_of[result.path] = merged
        results[i] = replace(result, loads=True, problems=merged.problems, host=merged.host)
    return results, [(path, report_of[path]) for path, _ in reports]


def problems_within(library: str, report: LoadReport) -> tuple[Problem, ...]:
    """The problems of `report` that concern `library` or what it needs, directly or not
    (a missing dependency two levels down is the library's problem too)."""
    needs: dict[str, set[str | None]] = {}
    for lib in report.libraries:
        for needer in lib.needed_by:
            needs.setdefault(os.path.normpath(needer), set()).add(
                os.path.normpath(lib.path) if lib.path else None)
    within = {library}
    queue = [library]
    while queue:
        for dep in needs.get(queue.pop(), ()):
            if dep is not None and dep not in within:
                within.add(dep)
                queue.append(dep)
    seen: dict[tuple[object, ...], Problem] = {}
    for p in report.problems:
        if os.path.normpath(p.file) in within:
            seen.setdefault((p.kind, p.symbol, p.version, p.library, p.message), p)
    return tuple(seen.values())


def _process_model(found: _TargetFiles, candidates: list[Candidate], images: dict[str, ElfImage],
                   python: str, abi: system.InterpreterABI | None,
                   cache_dir: str | None = None) -> PythonProcessModel | None:
    """The Python process model of an environment (or a wheel scanned with one), else None."""
    if not found.site_packages:
        return None
    suffixes = abi.extension_suffixes if abi is not None else (".so",)
    graph = system.ImportGraph(found.site_packages, suffixes, cache_dir)
    owner_of: dict[str, system.Distribution] = {}
    for d in found.distributions:
        for f in d.files:
            owner_of[f] = d
    sonames: dict[str, list[str]] = {}
    for c in candidates:
        path = os.path.normpath(c.host_path)
        image = images[c.path]
        for name in {image.soname, os.path.basename(path)} - {None}:
            assert name is not None
            sonames.setdefault(name, []).append(path)
    return PythonProcessModel(found.distributions, graph, owner_of, sonames)


def run_scan(specs: tuple[str, ...], settings: ScanSettings, with_env: str | None = None,
             progress: Callable[[int], None] | None = None,
             wheel_limits: WheelLimits | None = None) -> ScanResult:
    """Scan every target given (or this environment); wheels within `wheel_limits`."""
    targets, errors = resolve_targets(specs, settings.python, settings.root)
    files: list[FileResult] = []
    findings: list[Finding] = []
    skipped: list[Skipped] = []
    seen = 0
    states: dict[str | None, ScanState] = {}
    all_reports: list[tuple[str, LoadReport]] = []
    distributions: list[list[system.Distribution]] = []
    attribution = Attribution(settings.root)
    for target in batched(targets):
        try:
            scanned = scan_target(target, settings, with_env, progress, states, wheel_limits)
        except InputFormatError as exc:
            errors.append(exc.one_line())
            continue
        errors.extend(scanned.errors)
        files.extend(scanned.files)
        findings.extend(scanned.findings)
        all_reports.extend(scanned.reports)
        distributions.append(list(scanned.distributions))
        skipped.extend(scanned.discovery.skipped)
        seen += scanned.discovery.files_seen
    state = states.get(settings.root)
    shadows: dict[str, Shadowing] = {}
    if state is not None:
        all_reports, shadows = relabel_shadowing(all_reports, state.env, state.images)
    # A shadowing copy is one cause already: no separate "found only via LD_LIBRARY_PATH".
    findings = [f for f in findings if not (f.kind == ProblemKind.FOUND_VIA_VARIABLE and f.problems[0].file in shadows)]
    # One finding per distinct problem, with every file it affects, whichever target it came from.
    findings[:0] = collect_findings(all_reports)
    for d in distributions:
        attribution.add(d)
    findings = [replace(f, advice=tuple(attribution.advice_for_missing(f.problems[0])))
                if f.kind == ProblemKind.MISSING_LIBRARY and f.severity == Severity.ERROR else f for f in findings]
    files = [replace(f, owner=attribution.owner_of(_host_view(f.path, settings.root))) for f in files]
    owners = {f.path: f.owner for f in files}
    for path in provider_paths(all_reports):
        if path not in owners:
            owners[path] = attribution.owner_of(_host_view(path, settings.root))
    findings.extend(_unreadable(s) for s in skipped if s.is_problem)
    findings.sort(key=lambda f: (Severity.rank_of(f.severity), -len(f.files), f.title))
    return ScanResult(tuple(targets), tuple(files), tuple(findings), tuple(skipped), tuple(errors), seen,
                      tuple(sorted(owners.items())))


def _host_view(path: str, root: str | None) -> str:
    """A target-side path as this machine sees it (under --root)."""
    return os.path.join(root, path.lstrip("/")) if root and os.path.isabs(path) and not path.startswith(root) else path


def _unreadable(s: Skipped) -> Finding:
    """A file that could not be read is a finding of its own."""
    message = f"{s.path}: {s.reason}"
    problem = Problem(ProblemKind.UNREADABLE_FILE, Severity.ERROR, s.path, message, When.NEVER)
    return Finding(f"unreadable:{s.path}", Severity.ERROR, ProblemKind.UNREADABLE_FILE, message, (problem,), (s.path,))
