"""Process hygiene (issue 13 item 6): scan workers die with their parent; a file truncated or
rewritten while it is read is a one-line error, never a SIGBUS."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

SRC = str(Path(__file__).resolve().parents[1] / "src")

# A scan whose workers are certain to be forked and to stay busy: the fork threshold at zero
# (the runner forks once six jobs have run in the parent) and every job slowed down, in the
# workers too (they are forked, so they inherit the patched module).
SLOW_PARALLEL_SCAN = textwrap.dedent("""
    import sys, time
    from ldscope.scan import _runner
    _runner.PARALLEL_MIN_SECONDS = 0.0
    real, delay = _runner.simulate, float(sys.argv[2])
    def slow(state, job):
        time.sleep(delay)
        return real(state, job)
    _runner.simulate = slow
    sys.argv = ["ldscope", "scan", "-j", "2", "--no-cache", "--format", "json", sys.argv[1]]
    from ldscope.cli import main
    main()
""")


def _children(pid: int) -> list[int]:
    """Live (not zombie) processes whose parent is `pid`, from /proc."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        # pid (comm) state ppid ...: comm may hold spaces and parentheses.
        fields = stat[stat.rindex(")") + 2:].split()
        if fields[0] != "Z" and int(fields[1]) == pid:
            found.append(int(entry))
    return found


def _alive(pid: int) -> bool:
    """True while `pid` exists and is not a zombie (reparented zombies may wait for a reaper)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rindex(")") + 2:].split()[0] != "Z"


def _poll(predicate, polls: int = 300, interval: float = 0.1) -> bool:
    """True once predicate() holds; a hang guard of polls × interval, not a speed assertion."""
    for _ in range(polls):
        if predicate():
            return True
        time.sleep(interval)
    return predicate()


@pytest.fixture(scope="module")
def executables(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Forty distinct executables (copies of one small program): forty jobs."""
    tree = tmp_path_factory.mktemp("programs")
    source = shutil.which("true") or "/bin/true"
    for i in range(40):
        shutil.copy(source, tree / f"prog{i}")
    return tree


def _start_scan(tree: Path) -> tuple[subprocess.Popen[bytes], list[int]]:
    """A slow parallel scan of `tree`, once both its workers exist: (the parent, their PIDs)."""
    env = {k: v for k, v in os.environ.items() if k not in ("LD_LIBRARY_PATH", "LD_PRELOAD", "LD_AUDIT")}
    env["PYTHONPATH"] = SRC
    proc = subprocess.Popen([sys.executable, "-c", SLOW_PARALLEL_SCAN, str(tree), "0.25"], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    workers: list[int] = []

    def two_workers() -> bool:
        workers[:] = _children(proc.pid)
        return len(workers) >= 2 or proc.poll() is not None

    assert _poll(two_workers), "the scan never forked its workers"
    assert proc.poll() is None, proc.communicate()
    assert len(workers) == 2, workers
    return proc, workers


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP, signal.SIGINT])
def test_a_signal_to_the_parent_stops_every_worker(executables: Path, signum: int) -> None:
    proc, workers = _start_scan(executables)
    try:
        os.kill(proc.pid, signum)
        _out, err = proc.communicate(timeout=30)
        assert proc.returncode == 128 + signum, err
        assert b"Traceback" not in err, err
        assert _poll(lambda: not any(_alive(pid) for pid in workers)), \
            [pid for pid in workers if _alive(pid)]
    finally:
        for pid in [proc.pid, *workers]:
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)


def test_workers_die_when_the_parent_is_killed(executables: Path) -> None:
    proc, workers = _start_scan(executables)
    try:
        os.kill(proc.pid, signal.SIGKILL)  # no handler runs: only the parent-death signal remains
        proc.wait(timeout=30)
        assert _poll(lambda: not any(_alive(pid) for pid in workers)), \
            [pid for pid in workers if _alive(pid)]
    finally:
        for pid in workers:
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)


def test_an_uninterrupted_parallel_scan_still_finishes(executables: Path) -> None:
    env = {**os.environ, "PYTHONPATH": SRC}
    proc = subprocess.run([sys.executable, "-c", SLOW_PARALLEL_SCAN, str(executables), "0.02"], env=env,
                          capture_output=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.count(b'"path"') >= 40
