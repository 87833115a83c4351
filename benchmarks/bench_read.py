"""Benchmark: ldscope reading dynamic symbols (names + versions) vs `nm -D` and `readelf`.

Not a test. Prints, in one run on the same files:
  * per large library: ldscope in-process CPU time vs `nm -D` and `readelf --dyn-syms -W`
    process CPU time, as ratios, and ldscope's peak Python allocation vs the size of the
    symbol tables it read (.dynsym + .dynstr + .gnu.version);
  * whole directory: one `python` process running ldscope over every ELF file vs a loop of
    `nm -D` over the same files (wall-clock), as a ratio.

Usage: python benchmarks/bench_read.py [DIR ...]
  DIR defaults to the machine's largest shared libraries' directory (/usr/lib/x86_64-linux-gnu).
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import time
import tracemalloc
from pathlib import Path

from ldscope.elf import ElfFile, is_elf


def read_all(path: str) -> tuple[int, int]:
    """Read every dynamic symbol's name and version; return (symbols, table bytes)."""
    with ElfFile.open(path) as elf:
        table = elf.dynsym
        if table is None:
            return 0, 0
        names = table.names()
        versions = elf.versions.version_names(len(table)) if table.versions else []
        assert len(names) == len(table)
        size = table.entries.nbytes + table.strings.size
        if table.versions is not None and table.versions.versym is not None:
            size += table.versions.versym.nbytes
        del versions
        return len(names), size


def child_cpu(cmd: list[str]) -> float:
    """CPU seconds (user+sys) used by a child process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def elf_files(directory: str) -> list[str]:
    """Regular ELF shared objects (and executables) under a directory, sorted."""
    found: list[str] = []
    for root, _dirs, files in os.walk(directory):
        for name in files:
            path = os.path.join(root, name)
            if os.path.islink(path) or not os.path.isfile(path):
                continue
            try:
                with open(path, "rb") as fh:
                    if is_elf(fh.read(4)):
                        found.append(path)
            except OSError:
                continue
    return sorted(found)


def dynsym_count(path: str) -> int:
    """Number of dynamic symbols (0 if none or unreadable)."""
    try:
        with ElfFile.open(path) as elf:
            return len(elf.dynsym) if elf.dynsym is not None else 0
    except Exception:
        return 0


def bench_single(path: str, repeat: int = 5) -> None:
    """One library: in-process CPU time vs nm -D / readelf CPU time, and peak memory."""
    best = float("inf")
    for _ in range(repeat):
        t0 = time.process_time()
        count, size = read_all(path)
        best = min(best, time.process_time() - t0)
    tracemalloc.start()
    read_all(path)
    _cur, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    nm = min(child_cpu(["nm", "-D", path]) for _ in range(repeat))
    readelf = min(child_cpu(["readelf", "--dyn-syms", "-W", path]) for _ in range(repeat))
    print(
        f"{Path(path).name:40} {count:>8} syms  ldscope {best * 1000:8.1f} ms  "
        f"nm -D {nm * 1000:8.1f} ms ({best / nm if nm else float('nan'):.2f}x)  "
        f"readelf {readelf * 1000:8.1f} ms ({best / readelf if readelf else float('nan'):.2f}x)  "
        f"peak {peak / 1e6:6.1f} MB / tables {size / 1e6:6.1f} MB ({peak / size if size else 0:.2f}x)"
    )


def bench_directory(files: list[str]) -> None:
    """Whole directory: one ldscope process vs a loop of nm -D (wall clock)."""
    script = (
        "import sys\n"
        f"sys.path.insert(0, {os.path.dirname(os.path.abspath(__file__))!r})\n"
        "from bench_read import read_all\n"
        "n = 0\n"
        "for p in sys.argv[1:]:\n"
        "    try:\n"
        "        n += read_all(p)[0]\n"
        "    except Exception:\n"
        "        pass\n"
        "print(n)\n"
    )
    t0 = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", script, *files], capture_output=True, text=True)
    ours = time.perf_counter() - t0
    t0 = time.perf_counter()
    for p in files:
        subprocess.run(["nm", "-D", p], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    nm_loop = time.perf_counter() - t0
    print(
        f"whole directory: {len(files)} ELF files, {out.stdout.strip()} symbols: "
        f"ldscope (one process) {ours:.2f} s, nm -D loop {nm_loop:.2f} s, "
        f"ratio {ours / nm_loop:.3f}x"
    )


def main(argv: list[str]) -> None:
    """Run both benchmarks on the given directories (or the system library directory)."""
    dirs = argv or ["/usr/lib/x86_64-linux-gnu"]
    for directory in dirs:
        files = elf_files(directory)
        print(f"== {directory}: {len(files)} ELF files")
        largest = sorted(files, key=dynsym_count, reverse=True)[:5]
        for path in largest:
            bench_single(path)
        bench_directory(files)


if __name__ == "__main__":
    main(sys.argv[1:])
