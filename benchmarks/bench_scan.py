"""Benchmark `ldscope scan` against the tools people use instead (not a test).

For each input, on exactly the same files (those the scan reports as native):
  * `ldscope scan` as a whole process (`python -m ldscope scan … --format json`), default -j
    and -j 1; wall time and peak RSS (os.wait4's ru_maxrss: the largest process of the run);
  * a loop of `ldd -r FILE` (LD_PRELOAD=<libpython> for extension modules and for libraries
    under site-packages, as a Python process would have it), one file after another;
  * a loop of `nm -D FILE`.
and the ratios scan / ldd-loop and scan / nm-loop.

Inputs: the environment this interpreter runs in; the PyTorch CPU environment built from the
local wheel (/opt/wheels, cached venv, see tests/scan_support.py) when available; and, for
scaling with the number of files, the first N regular `*.so*` files under /usr/lib (N = 100,
300, 1000, all) given as file targets.

    python benchmarks/bench_scan.py [--repeat 3] [--inputs env,torch,tree]
                                    [--tree-sizes 100,300,1000,all] [--tree-repeat N] [--markdown FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import sysconfig
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


@dataclass
class Row:
    name: str
    files: int
    megabytes: float
    scan_s: float
    scan_j1_s: float
    scan_rss_mb: float
    scan_j1_rss_mb: float
    ldd_s: float
    nm_s: float

    @property
    def ldd_ratio(self) -> float:
        return self.scan_s / self.ldd_s if self.ldd_s else float("nan")

    @property
    def nm_ratio(self) -> float:
        return self.scan_s / self.nm_s if self.nm_s else float("nan")


def libpython() -> str | None:
    path = os.path.join(str(sysconfig.get_config_var("LIBDIR")),
                        str(sysconfig.get_config_var("INSTSONAME") or sysconfig.get_config_var("LDLIBRARY")))
    return os.path.realpath(path) if os.path.exists(path) else None


def timed_child(cmd: list[str], env: dict[str, str] | None = None) -> tuple[float, float, int]:
    """(wall seconds, peak RSS MiB, exit code) of one child process tree."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    return wall, usage.ru_maxrss / 1024, proc.returncode


def scan(targets: list[str], jobs: int | None, repeat: int, out: str | None = None) -> tuple[float, float]:
    """Best wall time and its peak RSS of `ldscope scan TARGETS`."""
    best = (float("inf"), 0.0)
    for _ in range(repeat):
        cmd = [sys.executable, "-m", "ldscope", "scan", *targets, "--format", "json", "-o", out or os.devnull]
        if jobs is not None:
            cmd += ["-j", str(jobs)]
        wall, rss, code = timed_child(cmd)
        if code not in (0, 1):
            raise SystemExit(f"scan failed ({code}): {' '.join(cmd[:8])} …")
        best = min(best, (wall, rss))
    return best


def loop(tool: list[str], files: list[tuple[str, str | None]]) -> float:
    """Wall time of running `tool FILE` for every file, one after another."""
    base = {k: v for k, v in os.environ.items() if k not in ("LD_PRELOAD", "LD_LIBRARY_PATH")}
    with_py = dict(base)
    start = time.perf_counter()
    for path, preload in files:
        env = base
        if preload:
            with_py["LD_PRELOAD"] = preload
            env = with_py
        subprocess.run([*tool, path], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    return time.perf_counter() - start


def measure(name: str, targets: list[str], repeat: int, python_tree: str | None) -> Row:
    with tempfile.NamedTemporaryFile(suffix=".json") as tmp:
        scan_s, rss = scan(targets, None, repeat, tmp.name)
        doc = json.loads(Path(tmp.name).read_text())
    scan_j1_s, rss_j1 = scan(targets, 1, repeat)
    lp = libpython()
    files = []
    for f in doc["files"]:
        in_python = f["kind"] == "extension" or (
            f["kind"] == "library" and python_tree is not None and f["path"].startswith(python_tree))
        files.append((f["path"], lp if in_python else None))
    size = sum(os.path.getsize(p) for p, _ in files) / 1e6
    ldd_s = min(loop(["ldd", "-r"], files) for _ in range(max(1, repeat - 1)))
    nm_s = min(loop(["nm", "-D"], files) for _ in range(max(1, repeat - 1)))
    return Row(name, len(files), size, scan_s, scan_j1_s, rss, rss_j1, ldd_s, nm_s)


def system_libraries() -> list[str]:
    found = []
    for dirpath, dirnames, filenames in os.walk("/usr/lib"):
        dirnames.sort()
        for n in sorted(filenames):
            p = os.path.join(dirpath, n)
            if ".so" in n and not os.path.islink(p) and os.path.isfile(p):
                with open(p, "rb") as fh:
                    if fh.read(4) == b"\x7fELF":
                        found.append(p)
    return found


def torch_env() -> str | None:
    """The cached venv with the local torch wheel (built on first use), or None."""
    try:
        from tests.scan_support import torch_venv
    except ImportError:
        return None
    try:
        return str(torch_venv())
    except BaseException as exc:  # pytest.skip: the wheel is absent or pip failed
        if type(exc).__name__ == "Skipped":
            print(f"torch environment skipped: {exc}", file=sys.stderr)
            return None
        raise


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--skip-torch", action="store_true")
    ap.add_argument("--inputs", default="env,torch,tree", help="comma-separated: env, torch, tree")
    ap.add_argument("--tree-sizes", default="100,300,1000,all",
                    help="numbers of /usr/lib libraries for the scaling rows (all: every one)")
    ap.add_argument("--tree-repeat", type=int, default=None, help="--repeat for the tree rows")
    ap.add_argument("--markdown", metavar="FILE", help="also write the table as Markdown")
    args = ap.parse_args()
    # An installed package has its bytecode compiled at install time; a checkout run with
    # PYTHONDONTWRITEBYTECODE would otherwise recompile every module in every timed run.
    import compileall

    import ldscope
    compileall.compile_dir(os.path.dirname(ldscope.__file__), quiet=1)
    rows = []
    prefix = os.path.abspath(sys.prefix)
    print(f"ldscope scan benchmark on {os.cpu_count()} cores; python {sys.version.split()[0]}", flush=True)
    inputs = set(args.inputs.split(","))
    if "env" in inputs:
        rows.append(measure("test-suite environment (no argument)", [prefix], args.repeat, prefix))
        print(rows[-1], flush=True)
    if "torch" in inputs and not args.skip_torch and (env := torch_env()):
        rows.append(measure("torch 2.13.0 CPU environment", [env], args.repeat, env))
        print(rows[-1], flush=True)
    if "tree" in inputs:
        libs = system_libraries()
        for size in args.tree_sizes.split(","):
            n = len(libs) if size == "all" else int(size)
            if n > len(libs):
                continue
            rows.append(measure(f"/usr/lib, first {n} libraries", libs[:n], args.tree_repeat or args.repeat, None))
            print(rows[-1], flush=True)
    header = ("| input | ELF files | MB | scan (-j default) s | scan -j1 s | peak RSS MB (default / -j1) "
              "| ldd -r loop s | nm -D loop s | scan / ldd -r | scan / nm -D |")
    lines = [header, "|" + "---|" * 10]
    for r in rows:
        lines.append(f"| {r.name} | {r.files} | {r.megabytes:.0f} | {r.scan_s:.2f} | {r.scan_j1_s:.2f} | "
                     f"{r.scan_rss_mb:.0f} / {r.scan_j1_rss_mb:.0f} | {r.ldd_s:.2f} | {r.nm_s:.2f} | "
                     f"{r.ldd_ratio:.2f}× | {r.nm_ratio:.2f}× |")
    table = "\n".join(lines)
    print()
    print(table)
    if args.markdown:
        Path(args.markdown).write_text(table + "\n")


if __name__ == "__main__":
    main()
