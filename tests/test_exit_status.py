"""Exit statuses (issue 13, item 10; README "Exit status"): 2 for a nonexistent --root, for a
special file given as a target, for a report that cannot be written (stdout full or closed,
-o in a directory that does not exist), each with one line and no traceback; 141 for a pipe
whose reader went away, for every command."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pytest

SRC = str(Path(__file__).resolve().parents[1] / "src")
TIMEOUT = 120
EXE = os.path.realpath(sys.executable)
BIG = "/usr/lib/x86_64-linux-gnu/libstdc++.so.6"  # half a megabyte of `symbols` output


def _env(**extra: str) -> dict[str, str]:
    env = {**os.environ, "PYTHONPATH": SRC, **extra}
    env.pop("LD_LIBRARY_PATH", None)
    return env


@pytest.fixture(scope="module")
def work(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A directory with an object file (for `link`) and a small library tree (for `scan`)."""
    if shutil.which("gcc") is None:
        pytest.skip("needs gcc")
    d = tmp_path_factory.mktemp("exit")
    (d / "m.c").write_text("int main(void) { return 0; }\n")
    subprocess.run(["gcc", "-c", "-o", str(d / "m.o"), str(d / "m.c")], check=True, capture_output=True)
    (d / "tree").mkdir()
    (d / "l.c").write_text("int f(void) { return 1; }\n")
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(d / "tree" / "libl.so"), str(d / "l.c")],
                   check=True, capture_output=True)
    return d


def commands(work: Path) -> dict[str, list[str]]:
    """One clean invocation of every command (each exits 0 and writes a report on stdout)."""
    return {
        "info": ["info", EXE],
        "symbols": ["symbols", "-D", EXE],
        "load": ["load", EXE],
        "scan": ["scan", "-j", "1", str(work / "tree")],
        "link": ["link", "--no-driver", "--", "gcc", str(work / "m.o"), "-o", str(work / "app")],
    }


COMMANDS = ("info", "symbols", "load", "scan", "link")


def run(args: list[str], stdout: int | None = subprocess.PIPE, cwd: Path | None = None,
        **extra: str) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run([sys.executable, "-m", "ldscope", *args], stdout=stdout, stderr=subprocess.PIPE,
                          text=True, timeout=TIMEOUT, env=_env(**extra), cwd=cwd, stdin=subprocess.DEVNULL)
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc


def test_each_command_is_clean_to_start_with(work: Path) -> None:
    for name, args in commands(work).items():
        proc = run(args)
        assert proc.returncode == 0 and proc.stdout, (name, proc.stderr)


# ---------------------------------------------------------------------- input errors


@pytest.mark.parametrize("args", [["load", "--root", "/nonexistent/root", "/bin/true"],
                                  ["scan", "--root", "/nonexistent/root"]])
def test_nonexistent_root_is_an_input_error(args: list[str]) -> None:
    proc = run(args)
    assert proc.returncode == 2
    assert proc.stderr.splitlines() == ["ldscope: /nonexistent/root: --root: No such file or directory"]


@pytest.mark.parametrize("command", ["load", "scan"])
def test_nonexistent_python_is_an_input_error(command: str) -> None:
    """Not a verdict about a process that cannot exist (load), nor a scan of `/`, the parent
    of the parent of /nonexistent/python (scan)."""
    proc = run([command, "--python", "/nonexistent/python", *([EXE] if command == "load" else [])])
    assert proc.returncode == 2
    assert proc.stderr.splitlines() == ["ldscope: /nonexistent/python: --python: No such file or directory"]


def test_root_that_is_a_file_is_an_input_error(tmp_path: Path) -> None:
    (tmp_path / "f").write_text("x")
    proc = run(["load", "--root", str(tmp_path / "f"), "/bin/true"])
    assert proc.returncode == 2 and len(proc.stderr.splitlines()) <= 4  # click's usage error: file_okay=False


@pytest.mark.parametrize("target", ["/dev/zero", "fifo"])
@pytest.mark.parametrize("command", COMMANDS)
def test_special_file_target_is_an_input_error(command: str, target: str, work: Path, tmp_path: Path) -> None:
    path = target
    if target == "fifo":
        path = str(tmp_path / "fifo")
        os.mkfifo(path)
    args = {"info": ["info", path], "symbols": ["symbols", path], "load": ["load", path],
            "scan": ["scan", path], "link": ["link", "--no-driver", "--", "gcc", str(work / "m.o"), path]}[command]
    proc = run(args, cwd=tmp_path)
    assert proc.returncode == 2
    assert len(proc.stderr.splitlines()) == 1 and path in proc.stderr and "not a regular file" in proc.stderr


# ---------------------------------------------------------------------- write errors


@pytest.mark.parametrize("command", COMMANDS)
def test_stdout_on_a_full_device(command: str, work: Path) -> None:
    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full")
    with open("/dev/full", "w") as full:
        proc = run(commands(work)[command], stdout=full.fileno())
    assert proc.returncode == 2
    assert proc.stderr.splitlines() == ["ldscope: cannot write output: No space left on device"]


@pytest.mark.parametrize("unbuffered", ["0", "1"])
def test_help_on_a_full_device(unbuffered: str) -> None:
    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full")
    with open("/dev/full", "w") as full:
        proc = run(["--help"], stdout=full.fileno(), PYTHONUNBUFFERED=unbuffered)
    assert proc.returncode == 2
    assert proc.stderr.splitlines() == ["ldscope: cannot write output: No space left on device"]


@pytest.mark.parametrize("command", COMMANDS)
def test_output_file_in_a_missing_directory(command: str, work: Path) -> None:
    proc = run([*commands(work)[command][:1], "-o", "/nonexistent/dir/x", *commands(work)[command][1:]])
    assert proc.returncode == 2
    assert proc.stderr.splitlines() == ["ldscope: /nonexistent/dir/x: cannot write report: No such file or directory"]


def test_output_file_on_a_full_device(work: Path) -> None:
    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full")
    proc = run(["info", "-o", "/dev/full", EXE])
    assert proc.returncode == 2
    assert proc.stderr.splitlines() == ["ldscope: /dev/full: cannot write report: No space left on device"]


def test_output_fifo_without_a_reader_is_an_error_not_a_wait(tmp_path: Path) -> None:
    fifo = tmp_path / "out"
    os.mkfifo(fifo)
    proc = run(["info", "-o", str(fifo), EXE])
    assert proc.returncode == 2
    assert proc.stderr.splitlines() == [f"ldscope: {fifo}: cannot write report: a FIFO no process is reading"]


def test_output_fifo_with_a_reader_gets_the_report(tmp_path: Path) -> None:
    """`-o FIFO` (or `-o >(gzip > x)`) still works when something reads it."""
    fifo = tmp_path / "out"
    os.mkfifo(fifo)
    received: list[bytes] = []

    def reader() -> None:
        fd = os.open(fifo, os.O_RDONLY)  # blocks until ldscope opens it: that is the point
        with os.fdopen(fd, "rb") as fh:
            received.append(fh.read())

    thread = threading.Thread(target=reader, daemon=True)
    thread.start()
    # The reader may not have opened the FIFO yet when ldscope does: retry on that one error.
    for _ in range(200):
        proc = run(["info", "-o", str(fifo), EXE])
        if proc.returncode == 0 or "no process is reading" not in proc.stderr:
            break
        threading.Event().wait(0.05)
    thread.join(TIMEOUT)
    assert proc.returncode == 0, proc.stderr
    assert received and received[0].startswith(EXE.encode())


@pytest.mark.parametrize("command", COMMANDS)
def test_stdout_closed(command: str, work: Path) -> None:
    proc = _closed_stdout(commands(work)[command])
    assert proc.returncode == 2
    assert proc.stderr.splitlines() == ["ldscope: cannot write output: standard output is closed"]


def _closed_stdout(args: list[str]) -> subprocess.CompletedProcess[str]:
    """Run ldscope with descriptor 1 closed, as `ldscope ... >&-` in a shell does."""
    proc = subprocess.run([sys.executable, "-c", "import os, subprocess, sys\n"
                           "os.close(1)\n"
                           "sys.exit(subprocess.run([sys.executable, '-m', 'ldscope', *sys.argv[1:]]).returncode)\n",
                           *args], stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True,
                          timeout=TIMEOUT, env=_env())
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc


def test_stdout_closed_with_quiet_or_output_file_is_fine(tmp_path: Path) -> None:
    assert _closed_stdout(["info", "-q", EXE]).returncode == 0
    proc = _closed_stdout(["info", "-o", str(tmp_path / "r.txt"), EXE])
    assert proc.returncode == 0 and (tmp_path / "r.txt").read_text().startswith(EXE)


def test_stdout_and_stderr_closed_still_no_crash() -> None:
    proc = subprocess.run([sys.executable, "-c", "import os, subprocess, sys\n"
                           "os.close(1); os.close(2)\n"
                           "sys.exit(subprocess.run([sys.executable, '-m', 'ldscope', 'info', sys.argv[1]]).returncode)\n",
                           EXE], capture_output=True, timeout=TIMEOUT, env=_env())
    assert proc.returncode == 2


# ---------------------------------------------------------------------- broken pipes


def _into_closed_pipe(args: list[str], **extra: str) -> subprocess.CompletedProcess[str]:
    """Run ldscope with stdout a pipe whose reader is already gone: every write fails."""
    r, w = os.pipe()
    os.close(r)
    try:
        return run(args, stdout=w, **extra)
    finally:
        os.close(w)


@pytest.mark.parametrize("unbuffered", ["0", "1"])
@pytest.mark.parametrize("command", [*COMMANDS, "help", "version"])
def test_broken_pipe_exits_141_for_every_command(command: str, unbuffered: str, work: Path) -> None:
    args = {"help": ["--help"], "version": ["--version"]}.get(command) or commands(work)[command]
    proc = _into_closed_pipe(args, PYTHONUNBUFFERED=unbuffered)
    assert proc.returncode == 141
    assert proc.stderr == ""  # like a program killed by SIGPIPE: nothing to say


@pytest.mark.parametrize("unbuffered", ["0", "1"])
def test_head_closing_the_pipe_early(unbuffered: str) -> None:
    """`ldscope symbols BIG | head -1`: the reader goes away mid-report. With PYTHONUNBUFFERED
    stdout is a raw file whose write() takes part of the data: that is not success either."""
    if not os.path.exists(BIG):
        pytest.skip(f"no {BIG}")
    proc = subprocess.Popen([sys.executable, "-m", "ldscope", "symbols", BIG], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=_env(PYTHONUNBUFFERED=unbuffered))
    assert proc.stdout is not None and proc.stderr is not None
    first = proc.stdout.readline()
    proc.stdout.close()
    err = proc.stderr.read()
    assert proc.wait(TIMEOUT) == 141
    assert first.strip() and err == b""


def test_quiet_never_meets_the_pipe(work: Path) -> None:
    proc = _into_closed_pipe(["info", "-q", EXE])
    assert proc.returncode == 0


def test_log_from_a_closed_standard_input() -> None:
    proc = subprocess.run([sys.executable, "-c", "import os, subprocess, sys\n"
                           "os.close(0)\n"
                           "sys.exit(subprocess.run([sys.executable, '-m', 'ldscope', 'link', '--from-log', '-']).returncode)\n"],
                          capture_output=True, text=True, timeout=TIMEOUT, env=_env())
    assert proc.returncode == 2
    assert proc.stderr.splitlines() == ["ldscope: -: cannot read the log: standard input is closed"]


def test_a_scan_whose_target_cannot_be_read_does_not_say_everything_loads(tmp_path: Path) -> None:
    fifo = tmp_path / "p"
    os.mkfifo(fifo)
    proc = subprocess.run([sys.executable, "-m", "ldscope", "scan", str(fifo)], capture_output=True,
                          text=True, env=_env(), timeout=TIMEOUT)
    assert proc.returncode == 2
    assert "everything native in here loads" not in proc.stdout
    assert "1 input error (on standard error): not everything was scanned" in proc.stdout
    assert proc.stderr.count("\n") == 1 and "is a FIFO" in proc.stderr
