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


# ----------------------------------------------------------------------------------------------
# A file truncated or rewritten while it is read.

LIBRARY = Path("/usr/lib/x86_64-linux-gnu/libstdc++.so.6")


def _run_script(script: str, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """Run `script` in a fresh interpreter (a SIGBUS kills it, not pytest)."""
    env = {**os.environ, "PYTHONPATH": SRC, "XDG_CACHE_HOME": args[-1] if args else "/nonexistent"}
    return subprocess.run([sys.executable, "-c", textwrap.dedent(script), *args], env=env,
                          capture_output=True, text=True, timeout=timeout)


@pytest.fixture
def library_copy(tmp_path: Path) -> Path:
    if not LIBRARY.exists():
        pytest.skip(f"{LIBRARY} is not installed")
    copy = tmp_path / "libcopy.so"
    shutil.copy(LIBRARY, copy)
    return copy


def test_a_mapped_file_truncated_before_its_tables_are_read_is_one_line(library_copy: Path) -> None:
    # Mapping forced (threshold 0); truncated after the headers were read, before the symbols.
    proc = _run_script("""
        import os, sys
        from ldscope.elf import ElfFile, _snapshot
        from ldscope.errors import InputFormatError
        _snapshot.SMALL_FILE_BYTES = 0
        elf = ElfFile.open(sys.argv[1])
        os.truncate(sys.argv[1], 4096)
        try:
            print(len(elf.dynsym.names()))
        except InputFormatError as exc:
            print(exc.one_line())
    """, str(library_copy))
    assert proc.returncode == 0, (proc.returncode, proc.stderr)  # -7 (SIGBUS) before the change
    assert proc.stdout.strip() == f"{library_copy}: changed while being read"


def test_a_mapped_files_tables_are_copies_a_later_truncation_cannot_fault(library_copy: Path) -> None:
    proc = _run_script("""
        import os, sys
        from ldscope.elf import ElfFile, _snapshot
        _snapshot.SMALL_FILE_BYTES = 0
        elf = ElfFile.open(sys.argv[1])
        table = elf.dynsym
        before = len(table.names())
        os.truncate(sys.argv[1], 4096)
        print(before == len(table.names()) > 1000, int(table.entries["st_value"].sum()) > 0)
    """, str(library_copy))
    assert proc.returncode == 0, (proc.returncode, proc.stderr)
    assert proc.stdout.split() == ["True", "True"]


def test_a_small_file_is_a_snapshot(library_copy: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from ldscope.elf import ElfFile, _snapshot
    from ldscope.errors import InputFormatError

    monkeypatch.setattr(_snapshot, "SMALL_FILE_BYTES", 1 << 30)  # read into memory
    elf = ElfFile.open(library_copy)
    os.truncate(library_copy, 4096)
    assert len(elf.dynsym.names()) > 1000  # read into memory: the truncation changes nothing here
    elf.close()

    # A rewrite during the read itself (between the read and the fstat after it) is seen.
    shutil.copy(LIBRARY, library_copy)
    real_pread = os.pread

    def pread_then_rewrite(fd: int, n: int, offset: int) -> bytes:
        data = real_pread(fd, n, offset)
        with open(library_copy, "r+b") as fh:
            fh.truncate(len(data) // 2)
        return data

    monkeypatch.setattr(_snapshot.os, "pread", pread_then_rewrite)
    with pytest.raises(InputFormatError) as caught:
        ElfFile.open(library_copy)
    assert caught.value.one_line() == f"{library_copy}: changed while being read"


def _write_archive(path: Path, members: dict[str, bytes]) -> None:
    """A GNU ar archive without an index (member names of at most 15 bytes)."""
    with open(path, "wb") as fh:
        fh.write(b"!<arch>\n")
        for name, data in members.items():
            fh.write(f"{name + '/':<16}{0:<12}{0:<6}{0:<6}{644:<8}{len(data):<10}`\n".encode())
            fh.write(data + (b"\n" if len(data) % 2 else b""))


def test_a_mapped_archive_truncated_before_a_member_is_read_is_one_line(tmp_path: Path) -> None:
    if not LIBRARY.exists():
        pytest.skip(f"{LIBRARY} is not installed")
    archive = tmp_path / "libbig.a"
    _write_archive(archive, {"first.so": LIBRARY.read_bytes(), "second.so": LIBRARY.read_bytes()})
    proc = _run_script("""
        import os, sys
        from ldscope.elf import ElfFile, IndexedArchive, _snapshot
        from ldscope.errors import InputFormatError
        _snapshot.SMALL_FILE_BYTES = 0
        ar = IndexedArchive.open(sys.argv[1])
        first = ElfFile(ar.member_data(0), "first")  # read with pread: survives what follows
        os.truncate(sys.argv[1], 4096)
        print(len(first.dynsym.names()) > 1000)
        try:
            ElfFile(ar.member_data(1), "second").dynsym.names()
        except InputFormatError as exc:
            print(exc.one_line())
    """, str(archive))
    assert proc.returncode == 0, (proc.returncode, proc.stderr)
    assert proc.stdout.splitlines() == ["True", f"{archive}: changed while being read"]


@pytest.fixture
def link_with_archive(tmp_path: Path) -> Path:
    if not shutil.which("gcc"):
        pytest.skip("no gcc")
    (tmp_path / "main.c").write_text("int foo(void); int main(void) { return foo(); }\n")
    (tmp_path / "foo.c").write_text("int foo(void) { return 0; }\n")
    # Enough code that the archive is mapped at the default threshold too.
    (tmp_path / "big.c").write_text("char big_table[8 << 20] = {1};\nint big(void) { return big_table[0]; }\n")
    for name in ("main", "foo", "big"):
        subprocess.run(["gcc", "-c", "-o", f"{name}.o", f"{name}.c"], cwd=tmp_path, check=True)
    subprocess.run(["ar", "rcs", "libfoo.a", "big.o", "foo.o"], cwd=tmp_path, check=True)
    return tmp_path


def test_an_archive_truncated_during_a_link_is_one_line(link_with_archive: Path) -> None:
    tree = link_with_archive
    from ldscope.elf import _snapshot

    assert (tree / "libfoo.a").stat().st_size > _snapshot.SMALL_FILE_BYTES
    # Truncated once the archive is open, before its members are read (the facts store empty).
    proc = _run_script("""
        import os, sys
        from ldscope.elf import _archive
        real = _archive.Archive.member_data
        def truncating(self, member):
            if self.name.endswith("libfoo.a") and os.path.getsize(self.name) > 4096:
                os.truncate(self.name, 4096)
            return real(self, member)
        _archive.Archive.member_data = truncating
        os.chdir(sys.argv[1])
        sys.argv = ["ldscope", "link", "--", "gcc", "main.o", "-L.", "-lfoo", "-o", "app"]
        from ldscope.cli import main
        main()
    """, str(tree), str(tree / "cache"))
    # The member read through the old mapping is "changed while being read"; the link model
    # then reads the archive again and reports it as ld would a truncated one (exit 1).
    assert proc.returncode == 1, (proc.returncode, proc.stdout, proc.stderr)  # -7 before the change
    assert "Traceback" not in proc.stderr
    assert "./libfoo.a: file not recognized: member size" in proc.stdout, proc.stdout
    assert "runs past the end of the file (4096 bytes)" in proc.stdout, proc.stdout


@pytest.mark.slow
def test_a_real_race_never_ends_in_sigbus(tmp_path: Path) -> None:
    big = Path("/usr/lib/x86_64-linux-gnu/libLLVM-15.so.1")
    if not big.exists():
        pytest.skip(f"{big} is not installed")
    victim = tmp_path / "libvictim.so"
    data = big.read_bytes()
    outcomes = set()
    for attempt in range(6):
        victim.write_bytes(data)
        env = {**os.environ, "PYTHONPATH": SRC}
        proc = subprocess.Popen([sys.executable, "-m", "ldscope", "symbols", "-D", str(victim)], env=env,
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        time.sleep(0.3 + 0.15 * attempt)  # at different points of the reading
        with open(victim, "r+b") as fh:  # rewritten in place, as `cp new old` does
            fh.truncate(0)
            fh.write(data[: len(data) // 3])
        _out, err = proc.communicate(timeout=120)
        assert proc.returncode not in (-7, 135), err
        assert "Traceback" not in err, err
        outcomes.add(proc.returncode)
        if proc.returncode != 0:
            assert err.strip().startswith(f"ldscope: {victim}: "), err  # one line naming the file
            assert len(err.strip().splitlines()) == 1, err
    assert outcomes <= {0, 2}, outcomes


def test_mapped_and_read_files_read_the_same(library_copy: Path, tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    from ldscope.elf import ElfFile, IndexedArchive, _snapshot

    def facts(path: Path) -> tuple[object, ...]:
        with ElfFile.open(path) as elf:
            table = elf.dynsym
            assert table is not None and table.versions is not None
            return (table.names(), table.versions.version_names(len(table)), elf.version_requirements,
                    elf.version_definitions, elf.build_id, [len(t) for t in elf.dynamic_relocations],
                    elf.dynamic.needed if elf.dynamic else None, elf.notes, elf.warnings)

    archive = tmp_path / "lib.a"
    _write_archive(archive, {"one.so": library_copy.read_bytes(), "odd": b"xyz"})

    def members() -> list[bytes]:
        with IndexedArchive.open(archive) as ar:
            return [bytes(ar.member_data(i)) for i in range(len(ar.members))]

    read = facts(library_copy), members()
    monkeypatch.setattr(_snapshot, "SMALL_FILE_BYTES", 0)  # everything mapped, tables by pread
    assert (facts(library_copy), members()) == read
    assert read[1][1] == b"xyz"


SLOW_SERIAL_SCAN = textwrap.dedent("""
    import sys, time
    from ldscope.scan import _runner
    real = _runner.simulate
    def slow(state, job):
        print("job", file=sys.stderr, flush=True)
        time.sleep(0.5)
        return real(state, job)
    _runner.simulate = slow
    sys.argv = ["ldscope", "scan", "-j", "1", "--no-cache", sys.argv[1]]
    from ldscope.cli import main
    main()
""")


def test_ctrl_c_during_a_serial_scan_exits_130_without_aborted_or_traceback(executables: Path) -> None:
    env = {**os.environ, "PYTHONPATH": SRC}
    proc = subprocess.Popen([sys.executable, "-c", SLOW_SERIAL_SCAN, str(executables)], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        # Sent once the first job is under way (the handler is installed by then).
        assert proc.stderr is not None
        assert proc.stderr.readline() == b"job\n"
        os.kill(proc.pid, signal.SIGINT)
        _out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, err
    assert b"Traceback" not in err and b"Aborted" not in err, err
