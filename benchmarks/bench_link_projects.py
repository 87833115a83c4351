"""Benchmark (not a test): `ldscope link` as a CI gate on real projects' link lines, against
the real links it predicts, in one run.

    python benchmarks/bench_link_projects.py [--repeat N] [--projects bzip2,lz4,...] [--markdown FILE]

The lines are the unmodified link commands of the real-project corpus (tests/link_projects:
pinned Debian source packages, built once and cached). For each line: a fresh `ldscope link
-q -- LINE` process (Python start-up included: what a gate costs) against the same line
linked for real by GNU ld (bfd), lld and mold (`gcc -fuse-ld=X`, output into a temporary
directory), best of N (wall and CPU: user + system of the child, from os.wait4). Target
(issue 11): ≤ 1× the bfd link on small links, ≤ 0.5× on large ones (≥ 1,000 members).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.link_projects import sources  # noqa: E402
from tests.link_projects.harness import link_env  # noqa: E402


def _timed(argv: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, float, int]:
    """(wall seconds, CPU seconds, exit status) of one child."""
    start = time.perf_counter()
    proc = subprocess.Popen(argv, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _pid, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    return wall, usage.ru_utime + usage.ru_stime, proc.returncode


def _best(argv: list[str], cwd: Path, env: dict[str, str], repeat: int) -> tuple[float, float, int]:
    runs = [_timed(argv, cwd, env) for _ in range(repeat)]
    return min(r[0] for r in runs), min(r[1] for r in runs), runs[-1][2]


def _with_output(argv: tuple[str, ...], linker: str | None, out: str) -> list[str]:
    words = list(argv)
    words[words.index("-o") + 1] = out
    return [words[0], *([f"-fuse-ld={linker}"] if linker else []), *words[1:]]


def main() -> None:
    """Print the table (and write it as markdown when asked)."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--projects", default="")
    parser.add_argument("--markdown")
    args = parser.parse_args()
    wanted = [p for p in args.projects.split(",") if p] or [r.name for r in sources.RECIPES]
    rows = []
    with tempfile.TemporaryDirectory(prefix="ldscope-bench-") as tmp:
        for name in wanted:
            project = sources.build(sources.recipe(name))
            env = link_env(project)
            for k, link in enumerate(project.links):
                cwd = project.root / link.cwd
                cells: dict[str, tuple[float, float, int]] = {}
                for linker in ("bfd", "lld", "mold"):
                    cells[linker] = _best(_with_output(link.argv, linker, os.path.join(tmp, "out")), cwd, env,
                                          args.repeat)
                gate = [sys.executable, "-m", "ldscope", "link", "-q", "--linker", "bfd", "--",
                        *_with_output(link.argv, None, os.path.join(tmp, "out"))]
                cells["ldscope"] = _best(gate, cwd, {**env, "PYTHONPATH": str(Path(__file__).resolve().parents[1] / "src")},
                                         args.repeat)
                inputs = sum(1 for w in link.argv[1:] if not w.startswith("-"))
                rows.append((name, k, os.path.basename(link.argv[link.argv.index("-o") + 1]), inputs, cells))
    header = ("| project | link | output | inputs | ld.bfd | lld | mold | `ldscope link` | ÷ bfd (wall) | "
              "÷ bfd (CPU) | ÷ mold (wall) |")
    lines = [header, "|" + "---|" * 11]
    for name, k, out, inputs, c in rows:
        bfd, lld, mold, ours = c["bfd"], c["lld"], c["mold"], c["ldscope"]
        lines.append(f"| {name} | {k} | {out} | {inputs} | {bfd[0]:.3f} s | {lld[0]:.3f} s | {mold[0]:.3f} s | "
                     f"{ours[0]:.3f} s | {ours[0] / bfd[0]:.2f}× | {ours[1] / max(bfd[1], 1e-3):.2f}× | "
                     f"{ours[0] / mold[0]:.2f}× |")
    text = "\n".join(lines)
    print(text)
    if args.markdown:
        Path(args.markdown).write_text(text + "\n")


if __name__ == "__main__":
    main()
