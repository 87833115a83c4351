"""Benchmark (not a test): `ldscope link` prediction time vs. the real ld.bfd and mold links.

    python benchmarks/bench_link.py [--sizes 100,500,2000,4000] [--syms 50] [--style c|asm] [--write FILE]

Generated links: N archive members (split over 4 archives, in a group) defining S functions
each and calling functions of other members (forward and backward), plus a main object.
Every link succeeds. `--style c` compiles C with `gcc -O2 -g` (what real builds link);
`--style asm` assembles one-instruction functions (the linker has almost nothing to do). Times are the best of 3 runs each, all files in the OS
cache; ldscope is timed in-process with a cold facts cache (parsing every member again) and
as a fresh `ldscope link` process (Python start-up included).
"""

from __future__ import annotations

import argparse
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from ldscope.linker import link_environment, resolve_link_line, simulate_argv
from ldscope.linker.inputs import FactsCache

ARCHIVES = 4


def _c_member(rng: random.Random, m: int, members: int, syms: int) -> str:
    """A C file with `syms` small functions, a table, and calls into other members."""
    lines = [f"static int tab{m}[16] = {{{', '.join(str(rng.randrange(100)) for _ in range(16))}}};"]
    calls = [f"f{t}_{rng.randrange(syms)}" for t in ([m + 1] if m + 1 < members else [])
             + [rng.randrange(members) for _ in range(2)] if t != m]
    lines += [f"extern int {c}(int);" for c in calls]
    for j in range(syms):
        tail = f" + {calls[j % len(calls)]}(x - 1)" if calls and j < len(calls) else ""
        lines.append(f"int f{m}_{j}(int x) {{ int s = 0; for (int i = 0; i < x; i++) "
                     f"s += tab{m}[(i + {j}) & 15] * i; return s{tail}; }}")
    return "\n".join(lines) + "\n"


def _asm_member(rng: random.Random, m: int, members: int, syms: int) -> str:
    """A minimal assembly file: `syms` one-instruction functions and a few calls."""
    lines = ["\t.text"]
    for j in range(syms):
        name = f"f{m}_{j}"
        lines += [f"\t.globl {name}", f"\t.type {name}, @function", f"{name}:"]
        if j == 0:
            targets = ([m + 1] if m + 1 < members else []) + [rng.randrange(members) for _ in range(2)]
            lines += [f"\tcall f{t}_{rng.randrange(syms)}" for t in targets if t != m]
        lines.append("\tret")
    return "\n".join(lines) + "\n"


def generate(root: Path, members: int, syms: int, style: str = "c", seed: int = 1) -> list[str]:
    """Write and build the inputs; the link line's inputs (main.o then the archives).

    style "c": C compiled with gcc -O2 -g (code, relocations, debug info: what builds have);
    style "asm": one-instruction functions, no debug info (the linker has almost no work)."""
    rng = random.Random(seed)
    src = root / "src"
    src.mkdir(parents=True, exist_ok=True)
    files: list[str] = []
    suffix = ".c" if style == "c" else ".s"
    for m in range(members):
        text = _c_member(rng, m, members, syms) if style == "c" else _asm_member(rng, m, members, syms)
        (src / f"m{m}{suffix}").write_text(text)
        files.append(f"m{m}{suffix}")
    if style == "c":
        (src / "main.c").write_text("extern int f0_0(int);\nint main(void) { return f0_0(3); }\n")
        procs = [subprocess.Popen(["gcc", "-O2", "-g", "-c", *files[i::2]], cwd=src) for i in range(2)]
        procs.append(subprocess.Popen(["gcc", "-O2", "-g", "-c", "main.c"], cwd=src))
        for p in procs:
            if p.wait() != 0:
                raise RuntimeError("compilation failed")
    else:
        (src / "main.s").write_text("\t.text\n\t.globl main\nmain:\n\tcall f0_0\n\tret\n")
        for f in [*files, "main.s"]:
            subprocess.run(["as", "-o", f[:-2] + ".o", f], cwd=src, check=True)
    per = (members + ARCHIVES - 1) // ARCHIVES
    libs = []
    for a in range(ARCHIVES):
        chunk = [f"m{m}.o" for m in range(a * per, min(members, (a + 1) * per))]
        if not chunk:
            continue
        lib = f"lib{a}.a"
        subprocess.run(["ar", "rcs", str(root / lib), *chunk], cwd=src, check=True)
        libs.append(lib)
    shutil.copy(src / "main.o", root / "main.o")
    # Archives in order, then again in a group so every backward reference resolves for bfd.
    return ["main.o", "--start-group", *libs, "--end-group"]


RUNS = 5


def _cpu_children() -> float:
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def best(fn: Callable[[], None], children: bool) -> tuple[float, float]:
    """(best wall time, best CPU time) of RUNS calls; CPU of child processes if `children`."""
    walls, cpus = [], []
    for _ in range(RUNS):
        c0 = _cpu_children() if children else time.process_time()
        t0 = time.perf_counter()
        fn()
        walls.append(time.perf_counter() - t0)
        cpus.append((_cpu_children() if children else time.process_time()) - c0)
    return min(walls), min(cpus)


def real(program: str, inputs: list[str], cwd: Path) -> tuple[float, float]:
    """Time one real link (must succeed)."""
    def go() -> None:
        proc = subprocess.run([program, "-o", "out.bin", "-e", "main", *inputs], cwd=cwd,
                              capture_output=True, text=True)
        if proc.returncode != 0:
            raise RuntimeError(proc.stderr[-2000:])
    return best(go, True)


def predict(inputs: list[str], cwd: Path) -> tuple[float, float]:
    """Time ldscope's prediction in-process, with a cold facts cache each run."""
    def go() -> None:
        line = resolve_link_line(["ld.bfd", "-o", "out.bin", "-e", "main", *inputs], cwd=str(cwd))
        sim = simulate_argv(line, environment=link_environment(cache=FactsCache()))
        if not sim.links:
            raise RuntimeError("predicted failure")
    return best(go, False)


def cli(inputs: list[str], cwd: Path) -> tuple[float, float]:
    """Time a fresh `ldscope link` process."""
    def go() -> None:
        subprocess.run([sys.executable, "-m", "ldscope", "link", "--no-search", "--", "ld.bfd",
                        "-o", "out.bin", "-e", "main", *inputs], cwd=cwd, capture_output=True, check=True)
    return best(go, True)


def main() -> int:
    """Run the sizes and print (and optionally append to FILE) the table."""
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--sizes", default="100,500,2000,4000")
    ap.add_argument("--syms", type=int, default=50)
    ap.add_argument("--style", choices=("c", "asm"), default="c")
    ap.add_argument("--cache", metavar="DIR", help="keep generated inputs here between runs")
    ap.add_argument("--write", metavar="FILE")
    ns = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory(prefix="ldscope-bench-") as tmp:
        base = Path(ns.cache) if ns.cache else Path(tmp)
        for n in (int(x) for x in ns.sizes.split(",")):
            root = base / f"{ns.style}-{n}-{ns.syms}"
            if not (root / "main.o").exists():
                shutil.rmtree(root, ignore_errors=True)
                root.mkdir(parents=True)
                generate(root, n, ns.syms, ns.style)
            inputs = ["main.o", "--start-group", *sorted(p.name for p in root.glob("lib*.a")), "--end-group"]
            bfd = real("ld.bfd", inputs, root)
            mold = real("mold", inputs, root) if shutil.which("mold") else (float("nan"), float("nan"))
            pred = predict(inputs, root)
            proc = cli(inputs, root)
            rows.append((n, n * ns.syms, bfd, mold, pred, proc))
            print(f"[{ns.style}] members {n:5d} symbols {n * ns.syms:7d}: "
                  f"wall ld.bfd {bfd[0]:.3f} mold {mold[0]:.3f} ldscope {pred[0]:.3f} "
                  f"({pred[0] / bfd[0]:.2f}x bfd, {pred[0] / mold[0]:.2f}x mold) | "
                  f"cpu ld.bfd {bfd[1]:.3f} mold {mold[1]:.3f} ldscope {pred[1]:.3f} "
                  f"({pred[1] / bfd[1]:.2f}x bfd) | process {proc[0]:.3f}s ({proc[0] / bfd[0]:.2f}x bfd)",
                  flush=True)
    if ns.write:
        table = ["| members | defined symbols | ld.bfd | mold | ldscope | ÷ ld.bfd | ÷ mold | "
                 "ld.bfd CPU | ldscope CPU | CPU ÷ ld.bfd | `ldscope link` process | ÷ ld.bfd |",
                 "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
        for n, sy, b, m, p, c in rows:
            table.append(f"| {n} | {sy} | {b[0]:.3f} s | {m[0]:.3f} s | {p[0]:.3f} s | {p[0] / b[0]:.2f}× | "
                         f"{p[0] / m[0]:.2f}× | {b[1]:.3f} s | {p[1]:.3f} s | {p[1] / b[1]:.2f}× | "
                         f"{c[0]:.3f} s | {c[0] / b[0]:.2f}× |")
        with open(ns.write, "a", encoding="utf-8") as fh:
            kind = "gcc -O2 -g C" if ns.style == "c" else "one-instruction assembly functions"
            fh.write(f"\nInputs: {kind}, {ns.syms} functions per member.\n\n" + "\n".join(table) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
