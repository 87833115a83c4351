"""Run the loader model over every native file of a target, each in its real host context."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, replace

from ldscope.analysis import LoadAnalysis, new_analysis
from ldscope.elf import constants as C
from ldscope.errors import InputFormatError
from ldscope.loader import (
    ElfImage,
    Host,
    HostKind,
    ImageCache,
    LoadEnvironment,
    LoadReport,
    Problem,
    choose_host,
    is_python_extension,
)
from ldscope.scan._attribution import Owner
from ldscope.scan._discover import Candidate, named_like_library
from ldscope.scan._process import PythonProcessModel
from ldscope.scan._python_checks import unimportable_extension
from ldscope.system import InterpreterABI, OSFileSystem
from ldscope.vocab import Words

# Forking workers, and sending their reports back, costs about a tenth of a second: jobs run
# in this process unless what remains is estimated to take at least this long.
PARALLEL_MIN_SECONDS = 1.0



class NativeKind(Words):
    """What a native file found in a target is, which decides how it is loaded."""

    EXECUTABLE = "executable"  # exec'ed as itself
    EXTENSION = "extension"  # a Python extension module, imported
    LIBRARY = "library"  # checked inside the loads that need it, or dlopen'ed


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
    cache_dir: str | None = None  # where the import graph keeps its per-file cache (None: none)


@dataclass(frozen=True, slots=True)
class FileResult:
    """One scanned file: what it is, whether it loads, its problems."""

    path: str
    kind: NativeKind
    loads: bool
    problems: tuple[Problem, ...]
    host: str | None
    checked_as_part_of: str | None = None  # libraries verified inside another file's load
    assumed_loaded: tuple[str, ...] = ()  # native files the process model loads first
    owner: Owner | None = None  # the distribution that installed it (RECORD, dpkg)


@dataclass
class Job:
    """What to simulate for one file."""

    candidate: Candidate
    kind: NativeKind
    host: Host
    assumed: tuple[str, ...] = ()


def looks_like_library(path: str, image: ElfImage) -> bool:
    """Shared libraries with a PT_INTERP (libc.so.6, ld.so) are still libraries here."""
    return image.soname is not None and named_like_library(os.path.basename(path))


def classify(candidate: Candidate, image: ElfImage) -> NativeKind:
    """executable, extension or library."""
    if image.is_main_executable_type and not looks_like_library(candidate.path, image):
        return NativeKind.EXECUTABLE
    if image.e_type == C.ET_DYN and is_python_extension(candidate.path, image):
        return NativeKind.EXTENSION
    return NativeKind.LIBRARY


@dataclass
class ScanState:
    """Shared per-process state: the settings and one load analysis (environment, parsed
    images, loader model binding as arrays, explainer)."""

    settings: ScanSettings
    analysis: LoadAnalysis

    @property
    def env(self) -> LoadEnvironment:
        """The simulated environment."""
        return self.analysis.env

    @property
    def images(self) -> ImageCache:
        """The parsed images every load of this state shares."""
        return self.analysis.images


def make_state(settings: ScanSettings, fs: OSFileSystem | None = None) -> ScanState:
    """A fresh state (environment, cache) for one worker."""
    return ScanState(settings, new_analysis(settings.env, settings.clear_env, settings.root, settings.also_search,
                                            settings.near_misses, record_bindings=False, fs=fs))


def simulate(state: ScanState, job: Job) -> LoadReport:
    """Simulate one job; the report carries near-misses when anything fails."""
    return replace(state.analysis.run(job.candidate.path, job.host), bindings=())


# Set in the parent before forking workers: they inherit the already parsed images
# copy-on-write, so every file parsed by the parent is parsed once in all.
_WORKER_STATE: ScanState | None = None


def _worker_run(job: Job) -> LoadReport | str:
    assert _WORKER_STATE is not None
    try:
        return simulate(_WORKER_STATE, job)
    except InputFormatError as exc:
        return exc.one_line()


def plan_jobs(
    state: ScanState,
    candidates: list[Candidate],
    host_python: str | None,
    images_by_path: dict[str, ElfImage],
    model: PythonProcessModel | None = None,
    abi: InterpreterABI | None = None,
) -> tuple[list[Job], list[Candidate], list[tuple[Job, Problem]]]:
    """Decide the host of every file; returns (jobs for executables/extensions, libraries,
    extensions the interpreter never imports with the problem saying so).

    With a Python process model, an extension is imported after what its package's import
    and its distribution's requirements load (see `_process`)."""
    jobs: list[Job] = []
    libraries: list[Candidate] = []
    never_imported: list[tuple[Job, Problem]] = []
    settings = state.settings
    for c in candidates:
        image = images_by_path[c.path]
        kind = classify(c, image)
        if kind == NativeKind.EXECUTABLE:
            host = choose_host(c.path, image, HostKind.EXECUTABLE, None, settings.preload, settings.loaded)
            jobs.append(Job(c, kind, host))
        elif kind == NativeKind.EXTENSION:
            context = model.for_extension(os.path.normpath(c.host_path), model.owner_of.get(
                os.path.normpath(c.host_path))) if model is not None else None
            assumed = context.loaded if context is not None else ()
            host = choose_host(c.path, image, HostKind.PYTHON, host_python or settings.python,
                               settings.preload, tuple(settings.loaded) + assumed)
            if context is not None and context.summary():
                host = replace(host, context=context.summary())
            wrong_tag = unimportable_extension(c.path, abi, host.executable or "") if abi else None
            if wrong_tag is not None:
                never_imported.append((Job(c, kind, host, assumed), wrong_tag))
            else:
                jobs.append(Job(c, kind, host, assumed))
        else:
            libraries.append(c)
    return jobs, libraries, never_imported


def library_job(state: ScanState, candidate: Candidate, image: ElfImage, host_python: str | None,
                model: PythonProcessModel | None) -> Job:
    """A library no scanned file loads: ctypes.CDLL in the environment's interpreter after
    its package (with a process model), else dlopen by a minimal host."""
    settings = state.settings
    if model is None:
        return Job(candidate, NativeKind.LIBRARY,
                   Host(HostKind.DLOPEN, None, settings.preload, settings.loaded, False))
    path = os.path.normpath(candidate.host_path)
    context = model.for_library(path, model.owner_of.get(path), image.needed)
    host = choose_host(candidate.path, image, HostKind.CTYPES, host_python or settings.python,
                       settings.preload, tuple(settings.loaded) + context.loaded)
    if context.summary():
        host = replace(host, context=context.summary())
    return Job(candidate, NativeKind.LIBRARY, host, context.loaded)


def run_jobs(state: ScanState, jobs: list[Job], progress: Callable[[int], None] | None = None,
             ) -> list[LoadReport | str]:
    """Simulate jobs serially or across worker processes (-j)."""
    import time

    jobs_n = max(1, state.settings.jobs)
    results: list[LoadReport | str] = []
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
