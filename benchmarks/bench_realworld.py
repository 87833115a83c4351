"""Benchmark `ldscope scan` on the real-world corpus environments against an `ldd -r` loop.

For each environment of tests/realworld/corpus.py (built, or reused from the cache, by
tests.realworld.build), in one run:
  * `python -m ldscope scan ENV --format json -o /dev/null` as a child process, with -j 1 and
    with the default -j (the number of cores), REPEAT times each after one untimed run whose
    JSON gives the native files; medians of wall time, CPU time (user + sys, from os.wait4:
    the child and the workers it waited for) and peak RSS (ru_maxrss of os.wait4: the
    largest single process of the tree, not a sum);
  * a loop of `ldd -r FILE`, one child per file, one after another, over those same files
    (LD_PRELOAD=<libpython> for extension modules and for libraries under site-packages, as
    a Python process has it loaded), REPEAT times; medians of its total wall and CPU time;
and the ratios scan / loop.  Then `ldscope scan --with-env TORCH_ENV TORCHVISION_WHEEL`
(torchvision 0.28.0 cp311 manylinux x86_64 checked against the torch-cpu venv), the same way.

    python benchmarks/bench_realworld.py [NAME…] [--repeat 3] [--wheel WHL] [--markdown FILE]
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

WHEEL_GLOBS = ("/opt/pypi-more/files/torchvision-0.28.0-cp311-cp311-manylinux*_x86_64.whl",
               "~/.cache/ldscope-tests/wheels/torchvision-0.28.0-cp311-cp311-manylinux*_x86_64.whl")


@dataclass
class Run:
    wall: float  # seconds
    cpu: float  # seconds, user + sys of the child and its waited-for descendants
    rss_mb: float  # ru_maxrss: the largest single process
    code: int


def child(cmd: list[str], env: dict[str, str] | None = None) -> tuple[Run, bytes]:
    """One child process, measured with os.wait4; its output (stdout and stderr)."""
    start = time.perf_counter()
    with tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(cmd, stdout=err, stderr=err, env=env)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        err.seek(0)
        return Run(wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, proc.returncode), err.read()


def median(runs: list[Run]) -> Run:
    return Run(statistics.median(r.wall for r in runs), statistics.median(r.cpu for r in runs),
               statistics.median(r.rss_mb for r in runs), min(r.code for r in runs))


def scan(args: list[str], jobs: int | None, repeat: int, out: str = os.devnull) -> Run:
    """Median of `repeat` runs of `ldscope scan ARGS --format json`.  A run that exits 2+ or
    with a traceback (an uncaught exception also exits 1) is reported; its code becomes -1."""
    cmd = [sys.executable, "-m", "ldscope", "scan", *args, "--format", "json", "-o", out]
    if jobs is not None:
        cmd += ["-j", str(jobs)]
    runs = []
    for _ in range(repeat):
        run, err = child(cmd)
        if run.code not in (0, 1) or b"Traceback" in err:
            print(f"FAILED (exit {run.code}): {' '.join(cmd)}\n{err.decode(errors='replace')[-3000:]}",
                  file=sys.stderr)
            run.code = -1
        runs.append(run)
    return median(runs)


def libpython() -> str | None:
    """The interpreter's shared libpython (None for a static build)."""
    path = os.path.join(str(sysconfig.get_config_var("LIBDIR")), str(sysconfig.get_config_var("INSTSONAME")))
    return os.path.realpath(path) if sysconfig.get_config_var("Py_ENABLE_SHARED") and os.path.exists(path) else None


def ldd_loop(files: list[tuple[str, str | None]]) -> tuple[Run, int]:
    """Total wall and CPU of `ldd -r FILE` over the files; how many ldd reports a problem for."""
    base = {k: v for k, v in os.environ.items() if k not in ("LD_PRELOAD", "LD_LIBRARY_PATH")}
    wall = cpu = 0.0
    failing = 0
    for path, preload in files:
        run, out = child(["ldd", "-r", path], {**base, "LD_PRELOAD": preload} if preload else base)
        wall, cpu = wall + run.wall, cpu + run.cpu
        failing += b"undefined symbol" in out or b"not found" in out or run.code != 0
    return Run(wall, cpu, 0.0, 0), failing


@dataclass
class Row:
    name: str
    files: int
    j1: Run
    auto: Run
    loop: Run
    ldd_failing: int  # files ldd -r reports a missing library, version or symbol for


def measure(name: str, env: Path, repeat: int) -> Row | None:
    """The row of one environment; None (reported) when its first scan fails."""
    with tempfile.NamedTemporaryFile(suffix=".json") as tmp:
        if scan([str(env)], 1, 1, tmp.name).code < 0:
            print(f"{name}: the first scan failed; environment skipped", file=sys.stderr)
            return None
        doc = json.loads(Path(tmp.name).read_text())
    site = str(env / "lib")  # lib/pythonX.Y/site-packages
    lp = libpython()
    files = [(f["path"], lp if f["kind"] == "extension" or (f["kind"] == "library" and f["path"].startswith(site))
              else None) for f in doc["files"]]
    j1 = scan([str(env)], 1, repeat)
    auto = scan([str(env)], None, repeat)
    loops = [ldd_loop(files) for _ in range(repeat)]
    return Row(name, len(files), j1, auto, median([r for r, _ in loops]), loops[0][1])


def find_wheel(explicit: str | None) -> str | None:
    if explicit:
        return explicit
    found = [p for g in WHEEL_GLOBS for p in glob.glob(os.path.expanduser(g))]
    return found[0] if found else None


def secs(run: Run) -> str:
    return f"{run.wall:.2f}" + (" FAILED" if run.code < 0 else "")


def ratio(a: float, b: float) -> str:
    return f"{a / b:.2f}×" if b else "n/a"


def tables(rows: list[Row], wheel: tuple[str, Run, Run] | None) -> str:
    out = ["Targets: scan ≤ 0.25× the `ldd -r` loop; peak RSS < 300 MB. Cells: `-j 1` / default `-j`.", "",
           "| env | native files | scan wall (median) | scan CPU | peak RSS MB | `ldd -r` loop wall | loop CPU "
           "| ratio scan/loop (wall) | ratio (CPU) |", "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        out.append(f"| {r.name} | {r.files} | {secs(r.j1)} / {secs(r.auto)} s | {r.j1.cpu:.2f} / "
                   f"{r.auto.cpu:.2f} s | {r.j1.rss_mb:.0f} / {r.auto.rss_mb:.0f} | {r.loop.wall:.2f} s | "
                   f"{r.loop.cpu:.2f} s | {ratio(r.j1.wall, r.loop.wall)} / {ratio(r.auto.wall, r.loop.wall)} | "
                   f"{ratio(r.j1.cpu, r.loop.cpu)} / {ratio(r.auto.cpu, r.loop.cpu)} |")
    if wheel:
        name, j1, auto = wheel
        out += ["", "Target: under 2 s.", "",
                "| `ldscope scan --with-env` | -j | wall (median) | CPU | peak RSS MB |", "|---|---|---:|---:|---:|"]
        for jobs, run in (("1", j1), ("default", auto)):
            out.append(f"| rw-torch-cpu + {name} | {jobs} | {secs(run)} s | {run.cpu:.2f} s | {run.rss_mb:.0f} |")
    return "\n".join(out)


def main() -> None:
    from tests.realworld.build import build
    from tests.realworld.corpus import ENVIRONMENTS, environment

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("names", nargs="*", metavar="NAME", help="corpus environments (default: all)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--wheel", help="the torchvision 0.28.0 wheel (default: looked for in known places)")
    ap.add_argument("--markdown", metavar="FILE", help="also write the tables as Markdown")
    args = ap.parse_args()
    import compileall  # as an installed package has its bytecode (see bench_scan.py)

    import ldscope
    compileall.compile_dir(os.path.dirname(ldscope.__file__), quiet=1)
    lp = libpython()
    print(f"{os.cpu_count()} cores; python {sys.version.split()[0]}; ldd -r preloads {lp or 'nothing'}"
          + ("" if lp else " (static interpreter: ldd -r reports Py* symbols of extensions undefined)"), flush=True)
    rows = []
    for name in args.names or [e.name for e in ENVIRONMENTS]:
        built = build(environment(name))
        if (r := measure(name, built.path, args.repeat)) is None:
            continue
        rows.append(r)
        print(f"{name}: {r.files} files; scan -j1 {r.j1.wall:.2f} s (exit {r.j1.code}), default -j "
              f"{r.auto.wall:.2f} s; ldd -r loop {r.loop.wall:.2f} s, problems for {r.ldd_failing} files", flush=True)
    wheel_row = None
    if (wheel := find_wheel(args.wheel)) is None:
        print("torchvision 0.28.0 wheel not found: --with-env row skipped", file=sys.stderr)
    else:
        torch = build(environment("torch-cpu")).path
        targets = ["--with-env", str(torch), wheel]
        wheel_row = (os.path.basename(wheel), scan(targets, 1, args.repeat), scan(targets, None, args.repeat))
    print()
    text = tables(rows, wheel_row)
    print(text)
    if args.markdown:
        Path(args.markdown).write_text(text + "\n")


if __name__ == "__main__":
    main()
