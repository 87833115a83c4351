"""Benchmark: whole-process time of `ldscope --help` and `--version` (target < 0.2 s).

Not a test. Usage: python benchmarks/bench_startup.py
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import time


def best_of(cmd: list[str], runs: int = 15) -> float:
    """Fastest wall-clock time of `runs` executions."""
    best = float("inf")
    for _ in range(runs):
        t0 = time.perf_counter()
        subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
        best = min(best, time.perf_counter() - t0)
    return best


def main() -> None:
    """Print startup times for both entry points and a bare interpreter for reference."""
    bare = best_of([sys.executable, "-c", "pass"])
    print(f"bare python: {bare * 1000:.0f} ms")
    for arg in ("--help", "--version"):
        module = best_of([sys.executable, "-m", "ldscope", arg])
        line = f"python -m ldscope {arg}: {module * 1000:.0f} ms"
        script = shutil.which("ldscope")
        if script:
            line += f"; ldscope {arg}: {best_of([script, arg]) * 1000:.0f} ms"
        print(line)


if __name__ == "__main__":
    main()
