"""Benchmark: `ldscope symbols` listings against the real tools, on the same inputs, in one run.

Not a test. Prints wall time and peak RSS of each child process and the ratios:
  (a) `symbols --all --format json` of libtorch_cpu.so (530,000 .symtab entries) vs
      `readelf -sW` (targets: ≤ 1.5x readelf's wall time, peak RSS ≤ 200 MB);
      also `symbols --all` (text, and demangled with -C) vs `nm -p` (and `nm -p -C`);
  (b) one `symbols --format json` over the 150 largest shared libraries of
      /usr/lib/x86_64-linux-gnu vs a loop of `nm -D` over them (target ≤ 0.5x, moonshot 0.2x);
  (c) one `symbols --all` over every ELF file of the pyelftools test-file corpus vs a loop of
      `readelf -sW` over them (target ≤ 1x).

Every command writes to /dev/null. Wall and CPU (user + system) time are the best of --repeat
runs (CPU time is the steadier figure on a shared machine); peak RSS is the
child's ru_maxrss from os.wait4 (this script imports nothing heavy, so the high-water mark a
child inherits from it at exec, ~10 MB, is below anything measured). ldscope runs from this
checkout's src/ (PYTHONPATH) with bytecode caching on (a warm-up run writes __pycache__),
as an installed ldscope would.

Usage: python benchmarks/bench_symbols.py [--repeat N] [--torch PATH] [--corpus DIR] [--only a,b,c]
"""

from __future__ import annotations

import argparse
import glob
import os
import subprocess
import sys
import time
from pathlib import Path

SRC = str(Path(__file__).resolve().parents[1] / "src")
LIBDIR = "/usr/lib/x86_64-linux-gnu"
CORPUS = "/work/shared/corpora/pyelftools-testfiles"


def ldscope_env() -> dict[str, str]:
    """The environment ldscope runs in: this checkout's sources, bytecode cached."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPATH"] = SRC
    env["LC_ALL"] = "C"
    return env


Measured = tuple[float, int, float]  # wall seconds, peak RSS KB, CPU seconds (user + system)


def measure(cmd: list[str], env: dict[str, str] | None = None) -> Measured:
    """Wall time, peak RSS and CPU time of one child process, its output to /dev/null."""
    with open(os.devnull, "wb") as null:
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=null, stderr=subprocess.DEVNULL, env=env)
        _, _status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t0
    proc.returncode = 0  # reaped by wait4
    return wall, usage.ru_maxrss, usage.ru_utime + usage.ru_stime


def measure_loop(cmds: list[list[str]]) -> Measured:
    """The whole loop's wall and CPU time, and the largest peak RSS, of commands run in turn."""
    t0 = time.perf_counter()
    peak, cpu = 0, 0.0
    for cmd in cmds:
        _, rss, used = measure(cmd)
        peak, cpu = max(peak, rss), cpu + used
    return time.perf_counter() - t0, peak, cpu


def best(repeat: int, run: object) -> Measured:
    """Best wall and CPU time of `repeat` runs, with the largest peak RSS seen."""
    assert callable(run)
    results = [run() for _ in range(repeat)]
    return min(r[0] for r in results), max(r[1] for r in results), min(r[2] for r in results)


def ldscope(*args: str) -> list[str]:
    """The command line of `python -m ldscope ARGS`."""
    return [sys.executable, "-m", "ldscope", *args]


def report(label: str, ours: Measured, theirs: Measured, tool: str, target: str) -> None:
    """Both tools' figures and the ratios."""
    ratio = ours[0] / theirs[0] if theirs[0] else float("nan")
    cpu = ours[2] / theirs[2] if theirs[2] else float("nan")
    print(f"  {label}")
    print(f"    ldscope  {ours[0]:7.2f} s wall  {ours[2]:7.2f} s CPU  peak {ours[1] / 1024:7.1f} MB")
    print(f"    {tool:<8} {theirs[0]:7.2f} s wall  {theirs[2]:7.2f} s CPU  peak {theirs[1] / 1024:7.1f} MB")
    print(f"    ratio {ratio:.2f}x wall, {cpu:.2f}x CPU, {ours[1] / max(theirs[1], 1):.2f}x RSS   (target {target})")


def is_elf(path: str) -> bool:
    try:
        with open(path, "rb") as fh:
            return fh.read(4) == b"\x7fELF"
    except OSError:
        return False


def find_torch() -> str | None:
    """libtorch_cpu.so of the real-world test environments, if one was built."""
    found = sorted(glob.glob(os.path.expanduser("~/.cache/ldscope-tests/*/lib/python3*/site-packages/torch/lib/libtorch_cpu.so")))
    cpu = [p for p in found if "/rw-torch-cpu-" in p]
    return (cpu or found or [None])[0]


def largest_libraries(count: int) -> list[str]:
    """The `count` largest regular ELF .so files directly under LIBDIR and its subdirectories."""
    found = []
    for root, _dirs, names in os.walk(LIBDIR):
        for name in names:
            path = os.path.join(root, name)
            if ".so" not in name or os.path.islink(path) or not os.path.isfile(path):
                continue
            if is_elf(path):
                found.append((os.path.getsize(path), path))
    return [p for _, p in sorted(found, reverse=True)[:count]]


def corpus_files(directory: str) -> list[str]:
    """Every ELF file under `directory`, sorted."""
    return sorted(
        os.path.join(root, n) for root, _d, names in os.walk(directory) for n in names
        if is_elf(os.path.join(root, n))
    )


def bench_torch(path: str, repeat: int) -> None:
    print(f"(a) {path} ({os.path.getsize(path) / 1e6:.0f} MB)")
    env = ldscope_env()
    measure(ldscope("symbols", "--all", "--format", "json", path), env)  # warm: page cache, __pycache__
    ours = best(repeat, lambda: measure(ldscope("symbols", "--all", "--format", "json", path), env))
    theirs = best(repeat, lambda: measure(["readelf", "-sW", path]))
    report("symbols --all --format json  vs  readelf -sW", ours, theirs, "readelf", "<= 1.5x wall, <= 200 MB")
    text = best(repeat, lambda: measure(ldscope("symbols", "--all", path), env))
    nm = best(repeat, lambda: measure(["nm", "-p", path]))
    report("symbols --all (text)  vs  nm -p", text, nm, "nm -p", "reference")
    demangled = best(repeat, lambda: measure(ldscope("symbols", "--all", "-C", path), env))
    nm_c = best(repeat, lambda: measure(["nm", "-p", "-C", path]))
    report("symbols --all -C (text)  vs  nm -p -C", demangled, nm_c, "nm -p -C", "reference")


def bench_libraries(repeat: int) -> None:
    files = largest_libraries(150)
    total = sum(os.path.getsize(p) for p in files)
    print(f"(b) the {len(files)} largest shared libraries of {LIBDIR} ({total / 1e6:.0f} MB)")
    env = ldscope_env()
    measure(ldscope("symbols", "--format", "json", *files), env)
    ours = best(repeat, lambda: measure(ldscope("symbols", "--format", "json", *files), env))
    theirs = best(repeat, lambda: measure_loop([["nm", "-D", p] for p in files]))
    report("one symbols --format json  vs  a loop of nm -D", ours, theirs, "nm -D", "<= 0.5x, moonshot 0.2x")


def bench_corpus(directory: str, repeat: int) -> None:
    files = corpus_files(directory)
    print(f"(c) {len(files)} ELF files of {directory}")
    env = ldscope_env()
    measure(ldscope("symbols", "--all", *files), env)
    ours = best(repeat, lambda: measure(ldscope("symbols", "--all", *files), env))
    theirs = best(repeat, lambda: measure_loop([["readelf", "-sW", p] for p in files]))
    report("one symbols --all  vs  a loop of readelf -sW", ours, theirs, "readelf", "<= 1x")


def main(argv: list[str]) -> None:
    """Run the three comparisons (those whose inputs exist)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--torch", default=None, help="libtorch_cpu.so (default: the test cache's)")
    parser.add_argument("--corpus", default=CORPUS)
    parser.add_argument("--only", default="a,b,c")
    args = parser.parse_args(argv)
    only = set(args.only.split(","))
    print(f"ldscope from {SRC}; python {sys.version.split()[0]}; best of {args.repeat}")
    if "a" in only:
        torch = args.torch or find_torch()
        if torch:
            bench_torch(torch, args.repeat)
        else:
            print("(a) skipped: no libtorch_cpu.so (build the real-world test environments, or --torch PATH)")
    if "b" in only:
        bench_libraries(args.repeat)
    if "c" in only:
        if os.path.isdir(args.corpus):
            bench_corpus(args.corpus, args.repeat)
        else:
            print(f"(c) skipped: {args.corpus} does not exist")


if __name__ == "__main__":
    main(sys.argv[1:])
