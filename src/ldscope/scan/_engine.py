"""`scan`: resolve targets, discover native files, simulate each in its host, gather findings."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from dataclasses import dataclass, field

from ldscope import system as pyenv
from ldscope.errors import InputFormatError
from ldscope.loader import ElfImage, Host, HostKind, ImageCache, LoadReport, Problem
from ldscope.scan._discover import Candidate, Discovery, Skipped, classify_head, walk_tree
from ldscope.scan._findings import Finding, collect_findings, environment_findings
from ldscope.scan._runner import (
    KIND_LIBRARY,
    FileResult,
    Job,
    ScanSettings,
    ScanState,
    make_state,
    plan_jobs,
    run_jobs,
)
from ldscope.system import OSFileSystem, WheelOverlay
from ldscope.vocab import ProblemKind, Severity, When


@dataclass(frozen=True, slots=True)
class ScanTarget:
    """One thing to scan, as resolved from the command line."""

    spec: str
    kind: str  # environment, directory, wheel, root, file; "files": several file targets at once
    path: str
    interpreter: str | None = None
    paths: tuple[str, ...] = ()  # the files of a "files" batch


@dataclass(frozen=True, slots=True)
class ScanResult:
    """Everything a scan found."""

    targets: tuple[ScanTarget, ...]
    files: tuple[FileResult, ...]
    findings: tuple[Finding, ...]
    skipped: tuple[Skipped, ...]
    errors: tuple[str, ...]  # targets that could not be scanned at all (exit 2)
    files_seen: int = 0

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


def resolve_targets(specs: tuple[str, ...], python: str | None, root: str | None) -> tuple[list[ScanTarget], list[str]]:
    """Turn command-line targets into ScanTargets; missing ones become errors."""
    targets: list[ScanTarget] = []
    errors: list[str] = []
    if not specs:
        if root is not None:
            return [ScanTarget(root, "root", os.path.abspath(root))], errors
        if python is not None:
            env = pyenv.environment_of_interpreter(python)
            return [ScanTarget(python, "environment", env.prefix, env.interpreter)], errors
        return [ScanTarget("(this environment)", "environment", os.path.abspath(sys.prefix),
                           os.path.realpath(sys.executable))], errors
    for spec in specs:
        path = os.path.abspath(spec)
        if root is not None and os.path.isabs(spec):
            path = os.path.join(os.path.abspath(root), spec.lstrip("/"))
        if not os.path.lexists(path):
            errors.append(f"{spec}: no such file or directory")
        elif spec.endswith(".whl") and os.path.isfile(path):
            targets.append(ScanTarget(spec, "wheel", path))
        elif os.path.isdir(path):
            if pyenv.looks_like_environment(path):
                env = pyenv.describe_environment(path)
                targets.append(ScanTarget(spec, "environment", path, env.interpreter))
            else:
                targets.append(ScanTarget(spec, "directory", path))
        else:
            targets.append(ScanTarget(spec, "file", path))
    return targets, errors


def _images(cache: ImageCache, candidates: list[Candidate], skipped: list[Skipped]) -> tuple[list[Candidate], dict[str, ElfImage]]:
    """Parse every candidate once; unreadable ones become skipped findings."""
    images: dict[str, ElfImage] = {}
    kept: list[Candidate] = []
    for c in candidates:
        try:
            images[c.path] = cache.get(c.host_path)
            kept.append(c)
        except InputFormatError as exc:
            skipped.append(Skipped(c.path, f"unreadable ELF file: {exc.reason}", True))
    return kept, images


def scan_target(target: ScanTarget, settings: ScanSettings, with_env: str | None = None,
                progress: Callable[[int], None] | None = None,
                states: dict[str | None, ScanState] | None = None,
                ) -> tuple[list[FileResult], list[Finding], Discovery, list[tuple[str, LoadReport]]]:
    """Scan one target: discover, plan hosts, simulate, gather per-file results, findings about
    the environment, and every load report (run_scan groups their problems across targets).

    `states` shares one parsed-image cache and binding cache between targets read from the
    same filesystem view (keyed by root), so a file is parsed once however many targets
    reach it; wheels get their own (their members overlay the filesystem).
    """
    discovery = Discovery()
    fs: OSFileSystem | None = None
    python = settings.python or target.interpreter
    distributions: list[pyenv.Distribution] = []
    activation: tuple[str, ...] = ()
    root = settings.root
    if target.kind == "environment":
        env = pyenv.describe_environment(target.path, target.interpreter)
        python = python or env.interpreter
        for top in env.scan_roots:
            walk_tree(top, discovery)
        distributions = pyenv.read_distributions(env.site_packages)
        activation = env.activation_scripts
    elif target.kind == "wheel":
        mount_env = pyenv.describe_environment(with_env) if with_env else None
        mount = mount_env.site_packages[0] if mount_env and mount_env.site_packages else f"/(wheel)/{os.path.basename(target.path)}"
        overlay = WheelOverlay(target.path, mount)
        fs = overlay
        if mount_env is not None:
            python = python or mount_env.interpreter
            distributions = pyenv.read_distributions(mount_env.site_packages)
        for vpath in overlay.virtual_files():
            info = overlay.members[vpath]
            discovery.files_seen += 1
            if ".so" not in vpath and not (info.external_attr >> 16) & 0o111:
                continue
            try:
                head = overlay.head(vpath, 64)
            except InputFormatError as exc:
                discovery.skipped.append(Skipped(vpath, exc.reason, True))
                continue
            parsed = classify_head(head)
            if parsed is None:
                if ".so" in vpath:
                    discovery.skipped.append(Skipped(vpath, "named like a library but not an ELF file", True))
                continue
            discovery.candidates.append(Candidate(vpath, vpath, parsed[0], False, parsed[2], parsed[3]))
    elif target.kind == "root":
        walk_tree(target.path, discovery, root=target.path)
        root = target.path
    elif target.kind == "files":
        for path in target.paths:
            walk_tree(path, discovery)
    else:
        walk_tree(target.path, discovery)
    if root != settings.root:
        from dataclasses import replace as dc_replace

        settings = dc_replace(settings, root=root)
    if fs is None and states is not None:
        state = states.get(root)
        if state is None:
            state = states[root] = make_state(settings, fs)
    else:
        state = make_state(settings, fs)
    if python is None:
        python = os.path.realpath(sys.executable)
    candidates, images = _images(state.images, discovery.candidates, discovery.skipped)
    jobs, libraries = plan_jobs(state, candidates, python, distributions, discovery.skipped, images)
    reports = run_jobs(state, jobs, progress)
    results: list[FileResult] = []
    covered: dict[str, str] = {}
    all_reports: list[tuple[str, LoadReport]] = []
    for job, report in zip(jobs, reports):
        if isinstance(report, str):
            discovery.skipped.append(Skipped(job.candidate.path, report, True))
            continue
        all_reports.append((job.candidate.path, report))
        for path in report.load_order:
            # ld.so keeps names like $ORIGIN/../lib/x.so unnormalised; files are compared by path.
            covered.setdefault(os.path.normpath(path), job.candidate.path)
        results.append(FileResult(job.candidate.path, job.kind, report.loads, report.problems,
                                  report.host, None, job.assumed))
    leftovers = [c for c in libraries if c.path not in covered]
    leftover_jobs = [Job(c, KIND_LIBRARY, Host(HostKind.DLOPEN, None, settings.preload, settings.loaded, False))
                     for c in leftovers]
    for job, report in zip(leftover_jobs, run_jobs(state, leftover_jobs, progress)):
        if isinstance(report, str):
            discovery.skipped.append(Skipped(job.candidate.path, report, True))
            continue
        all_reports.append((job.candidate.path, report))
        results.append(FileResult(job.candidate.path, KIND_LIBRARY, report.loads, report.problems,
                                  report.host))
    for c in libraries:
        if c.path in covered:
            own = _problems_of(c.path, all_reports)
            loads = not any(p.severity == Severity.ERROR for p in own)
            results.append(FileResult(c.path, KIND_LIBRARY, loads, own, None, covered[c.path]))
    # Files named one by one are separate targets: two of them sharing a SONAME is no
    # environment's duplicate.
    findings = environment_findings(candidates if target.kind != "files" else [], images, all_reports,
                                    activation, state.env)
    results.sort(key=lambda r: r.path)
    return results, findings, discovery, all_reports


def _problems_of(path: str, reports: list[tuple[str, LoadReport]]) -> tuple[Problem, ...]:
    seen: dict[tuple[object, ...], Problem] = {}
    for _target, report in reports:
        for p in report.problems:
            if os.path.normpath(p.file) == path:
                seen.setdefault((p.kind, p.symbol, p.version, p.library, p.message), p)
    return tuple(seen.values())


def _batched(targets: list[ScanTarget]) -> list[ScanTarget]:
    """File targets scanned together (one set of jobs, run in parallel like a directory's);
    other targets one by one, in order."""
    files = [t for t in targets if t.kind == "file"]
    if len(files) < 2:
        return targets
    batch = ScanTarget(f"({len(files)} files)", "files", files[0].path, None, tuple(t.path for t in files))
    return [t for t in targets if t.kind != "file"] + [batch]


def run_scan(specs: tuple[str, ...], settings: ScanSettings, with_env: str | None = None,
             progress: Callable[[int], None] | None = None) -> ScanResult:
    """Scan every target given (or this environment)."""
    targets, errors = resolve_targets(specs, settings.python, settings.root)
    files: list[FileResult] = []
    findings: list[Finding] = []
    skipped: list[Skipped] = []
    seen = 0
    states: dict[str | None, ScanState] = {}
    all_reports: list[tuple[str, LoadReport]] = []
    for target in _batched(targets):
        try:
            r, f, d, reports = scan_target(target, settings, with_env, progress, states)
        except InputFormatError as exc:
            errors.append(exc.one_line())
            continue
        files.extend(r)
        findings.extend(f)
        all_reports.extend(reports)
        skipped.extend(d.skipped)
        seen += d.files_seen
    # One finding per distinct problem, with every file it affects, whichever target it came from.
    findings[:0] = collect_findings(all_reports)
    for s in skipped:
        if s.is_problem:
            findings.append(Finding(
                cause=f"unreadable:{s.path}", severity=Severity.ERROR, kind=ProblemKind.UNREADABLE_FILE,
                title=f"{s.path}: {s.reason}", problems=(Problem(ProblemKind.UNREADABLE_FILE, Severity.ERROR, s.path, f"{s.path}: {s.reason}", When.NEVER),),
                files=(s.path,)))
    findings.sort(key=lambda f: (Severity.rank_of(f.severity), -len(f.files), f.title))
    return ScanResult(tuple(targets), tuple(files), tuple(findings), tuple(skipped), tuple(errors), seen)


__all__ = ["ScanResult", "ScanSettings", "ScanTarget", "field", "run_scan"]
