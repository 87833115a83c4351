"""Run the loader model over every native file of a target, each in its real host context."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field

from ldscope.analysis._load import is_python_extension
from ldscope.elf import constants as C
from ldscope.errors import InputFormatError
from ldscope.explain._load import SharedIndex
from ldscope.loader import _results as R
from ldscope.loader._environment import LoadEnvironment, make_environment
from ldscope.loader._image import ElfImage, ImageCache
from ldscope.loader._simulate import Host, LoaderModel
from ldscope.scan._discover import Candidate, Skipped
from ldscope.system import Distribution, OSFileSystem, requirement_closure

# Forking workers, and sending their reports back, costs about a tenth of a second: jobs run
# in this process unless what remains is estimated to take at least this long.
PARALLEL_MIN_SECONDS = 1.0

KIND_EXECUTABLE = "executable"
KIND_EXTENSION = "extension"
KIND_LIBRARY = "library"


@dataclass(frozen=True, slots=True)
class ScanSettings:
    """How files are simulated: the interpreter, extra process state, environment."""

    python: str | None = None
    preload: tuple[str, ...] = ()
    loaded: tuple[str, ...] = ()
    env: tuple[str, ...] = ()
    clear_env: bool = False
    root: str | None = None
    also_search: tuple[str, ...] = ()
    jobs: int = 1
    near_misses: bool = True


@dataclass(frozen=True, slots=True)
class FileResult:
    """One scanned file: what it is, whether it loads, its problems."""

    path: str
    kind: str
    loads: bool
    problems: tuple[R.Problem, ...]
    host: str | None
    checked_as_part_of: str | None = None  # libraries verified inside another file's load
    assumed_loaded: tuple[str, ...] = ()  # libraries treated as loaded by Requires-Dist


@dataclass
class Job:
    """What to simulate for one file."""

    candidate: Candidate
    kind: str
    host: Host | None
    assumed: tuple[str, ...] = ()


def looks_like_library(path: str, image: ElfImage) -> bool:
    """Shared libraries with a PT_INTERP (libc.so.6, ld.so) are still libraries here."""
    return image.soname is not None and ".so" in os.path.basename(path)


def classify(candidate: Candidate, image: ElfImage) -> str:
    """executable, extension or library."""
    if image.is_main_executable_type and not looks_like_library(candidate.path, image):
        return KIND_EXECUTABLE
    if image.e_type == C.ET_DYN and is_python_extension(candidate.path, image):
        return KIND_EXTENSION
    return KIND_LIBRARY


@dataclass
class ScanState:
    """Shared per-process state: one image cache, one loader model."""

    settings: ScanSettings
    env: LoadEnvironment
    images: ImageCache
    model: LoaderModel = field(init=False)
    # Problems already explained (near-misses attached), by identity: a library's problem seen
    # in many loads (libjava.so inside every JDK plugin's load) is explained once.
    explained: dict[tuple[object, ...], R.Problem] = field(default_factory=dict)
    # Exported-name hashes of the libraries near-miss searches look through, for all reports.
    nearmiss_index: SharedIndex = field(default_factory=SharedIndex)

    def __post_init__(self) -> None:
        self.model = LoaderModel(self.env, self.images, record_bindings=False)


def make_state(settings: ScanSettings, fs: OSFileSystem | None = None) -> ScanState:
    """A fresh state (environment, cache) for one worker."""
    env = make_environment(settings.env, settings.clear_env, settings.root)
    return ScanState(settings, env, ImageCache(fs))


def simulate(state: ScanState, job: Job) -> R.LoadReport:
    """Simulate one job; the report carries near-misses when anything fails."""
    from dataclasses import replace

    c = job.candidate
    if job.host is None or job.host.kind == "executable":
        report = state.model.load_executable(c.path, job.host)
    else:
        report = state.model.load_dlopen(c.path, job.host)
    if state.settings.near_misses and any(p.severity == "error" for p in report.problems):
        report = replace(report, problems=_explain_once(state, report))
    return replace(report, bindings=())


def _explain_once(state: ScanState, report: R.LoadReport) -> tuple[R.Problem, ...]:
    """Near-misses for the report's problems, each distinct problem explained once per scan."""
    from dataclasses import replace

    from ldscope.explain._load import explain

    def key(p: R.Problem) -> tuple[object, ...]:
        return (p.kind, p.file, p.symbol, p.version, p.library, p.message, p.tried)

    todo = [p for p in report.problems if key(p) not in state.explained]
    if todo:
        done = explain(replace(report, problems=tuple(todo)), state.model, state.settings.also_search,
                       state.nearmiss_index)
        for before, after in zip(todo, done):
            state.explained[key(before)] = after
    return tuple(state.explained.get(key(p), p) for p in report.problems)


# Set in the parent before forking workers: they inherit the already parsed images
# copy-on-write, so every file parsed by the parent is parsed once in all.
_WORKER_STATE: ScanState | None = None


def _worker_run(job: Job) -> R.LoadReport | str:
    assert _WORKER_STATE is not None
    try:
        return simulate(_WORKER_STATE, job)
    except InputFormatError as exc:
        return exc.one_line()


def plan_jobs(
    state: ScanState,
    candidates: list[Candidate],
    host_python: str | None,
    distributions: list[Distribution],
    skipped: list[Skipped],
    images_by_path: dict[str, ElfImage],
) -> tuple[list[Job], list[Candidate]]:
    """Decide the host of every file; returns (jobs for executables/extensions, libraries)."""
    by_name = {d.name: d for d in distributions}
    owner: dict[str, Distribution] = {}
    for d in distributions:
        for f in d.files:
            owner[f] = d
    ext_by_dist: dict[str, list[str]] = {}
    jobs: list[Job] = []
    libraries: list[Candidate] = []
    kinds: dict[str, str] = {}
    for c in candidates:
        image = images_by_path[c.path]
        kind = classify(c, image)
        kinds[c.path] = kind
        if kind == KIND_EXTENSION:
            dist = owner.get(os.path.normpath(c.host_path))
            if dist is not None:
                ext_by_dist.setdefault(dist.name, []).append(c.path)
    for c in candidates:
        kind = kinds[c.path]
        if kind == KIND_EXECUTABLE:
            jobs.append(Job(c, kind, Host("executable", None, state.settings.preload, state.settings.loaded)))
        elif kind == KIND_EXTENSION:
            assumed: list[str] = []
            dist = owner.get(os.path.normpath(c.host_path))
            if dist is not None:
                for dep in requirement_closure(dist, by_name):
                    assumed.extend(ext_by_dist.get(dep.name, []))
            python = host_python or state.settings.python
            host = Host("python", python, state.settings.preload,
                        tuple(state.settings.loaded) + tuple(assumed), True)
            jobs.append(Job(c, kind, host, tuple(assumed)))
        else:
            libraries.append(c)
    return jobs, libraries


def run_jobs(state: ScanState, jobs: list[Job], progress: Callable[[int], None] | None = None,
             ) -> list[R.LoadReport | str]:
    """Simulate jobs serially or across worker processes (-j)."""
    import time

    jobs_n = max(1, state.settings.jobs)
    results: list[R.LoadReport | str] = []
    durations: list[float] = []
    for job in jobs:
        if jobs_n > 1 and len(durations) >= 6:
            # The median of the latest jobs says what one costs (the first ones also parse
            # what every load shares); fork workers only when what is left would repay them.
            per_job = sorted(durations[-5:])[2]
            if per_job * (len(jobs) - len(results)) >= PARALLEL_MIN_SECONDS:
                break
        start = time.perf_counter()
        try:
            results.append(simulate(state, job))
        except InputFormatError as exc:
            results.append(exc.one_line())
        durations.append(time.perf_counter() - start)
        if progress:
            progress(1)
    if len(results) == len(jobs):
        return results
    # What every load shares (the host's libraries, their symbol tables and binding arrays)
    # was built here before forking, and every worker inherits it.
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    global _WORKER_STATE
    _WORKER_STATE = state
    ctx = multiprocessing.get_context("fork")
    rest = jobs[len(results):]
    with ProcessPoolExecutor(jobs_n, mp_context=ctx) as pool:
        for result in pool.map(_worker_run, rest, chunksize=max(1, len(rest) // (jobs_n * 4))):
            results.append(result)
            if progress:
                progress(1)
    return results
