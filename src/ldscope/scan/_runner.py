"""Run the loader model over every native file of a target, each in its real host context."""

from __future__ import annotations

import os
import signal
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace

from ldscope.analysis import LoadAnalysis, new_analysis
from ldscope.elf import constants as C
from ldscope.errors import InputFormatError, Interrupted
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


# The signals a parent forwards to its workers before it stops (a terminal's Ctrl-C reaches the
# whole process group; kill(1), a closed terminal or a CI timeout reach only the parent).
FORWARDED_SIGNALS = (signal.SIGTERM, signal.SIGHUP, signal.SIGINT)
PR_SET_PDEATHSIG = 1  # <linux/prctl.h>


def _die_with_parent(parent: int) -> None:
    """Worker initializer: SIGKILL when the parent dies, however it dies (even by SIGKILL, which
    it cannot forward), and the default dispositions the parent's handlers replaced."""
    for signum in FORWARDED_SIGNALS:
        # Inherited by fork: the parent's forwarding handler must not run here. Ctrl-C reaches the
        # workers too; the parent decides (and stops them), so they ignore it.
        signal.signal(signum, signal.SIG_IGN if signum == signal.SIGINT else signal.SIG_DFL)
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
    except (OSError, AttributeError):
        pass  # not Linux: the parent's forwarding still stops workers on SIGTERM/SIGHUP/SIGINT
    # The parent may have died between fork and prctl: then no signal comes, and this worker
    # was already reparented.
    if os.getppid() != parent:
        os._exit(1)


@contextmanager
def _forwarding_signals(processes: Callable[[], list[int]]) -> Iterator[None]:
    """While workers run: SIGTERM, SIGHUP or SIGINT sends SIGTERM to every worker, then raises
    Interrupted here (the caller exits with 128 + the signal's number)."""
    def forward(signum: int, _frame: object) -> None:
        for sig in FORWARDED_SIGNALS:
            signal.signal(sig, signal.SIG_DFL)  # a second signal stops this process outright
        for pid in processes():
            try:
                os.kill(pid, signal.SIGTERM)
            except OSError:
                pass  # already gone
        raise Interrupted(signum)

    previous = {signum: signal.getsignal(signum) for signum in FORWARDED_SIGNALS}
    try:
        for signum in FORWARDED_SIGNALS:
            signal.signal(signum, forward)
    except ValueError:
        previous = {}  # not the main thread: no handlers can be set (the workers still die with it)
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


def _worker_pids(pool: object) -> list[int]:
    """The pool's worker processes (forked so far)."""
    processes = getattr(pool, "_processes", None) or {}
    return [pid for pid in list(processes) if isinstance(pid, int)]


def _worker_run_chunk(jobs: list[Job]) -> list[LoadReport | str]:
    assert _WORKER_STATE is not None
    results: list[LoadReport | str] = []
    for job in jobs:
        try:
            results.append(simulate(_WORKER_STATE, job))
        except InputFormatError as exc:
            results.append(exc.one_line())
    return results


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
    pool = ProcessPoolExecutor(jobs_n, mp_context=ctx, initializer=_die_with_parent, initargs=(os.getpid(),))
    try:
        with _forwarding_signals(lambda: _worker_pids(pool)):
            # Chunks submitted by hand, not pool.map: map's iterator cancels what is pending when
            # a signal's exception passes through it, and the pool's manager thread, failing
            # those futures once the workers are gone, then dies on InvalidStateError (3.11).
            size = max(1, len(rest) // (jobs_n * 4))
            futures = [pool.submit(_worker_run_chunk, rest[at:at + size]) for at in range(0, len(rest), size)]
            for future in futures:
                for result in future.result():
                    results.append(result)
                    if progress:
                        progress(1)
    except Interrupted:
        # The workers were sent SIGTERM: reap them (briefly: SIGTERM's default action is
        # immediate) rather than leave zombies behind. No shutdown(): the pool's manager thread
        # sees them gone and fails the pending futures itself (cancelling them too races with
        # it in CPython 3.11: InvalidStateError in that thread).
        for process in list((getattr(pool, "_processes", None) or {}).values()):
            process.join(timeout=2.0)
        raise
    pool.shutdown(wait=True)
    return results
