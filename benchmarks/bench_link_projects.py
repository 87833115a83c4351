"""Benchmark (not a test): `ldscope link` as a CI gate on real link lines, against the real
links it predicts, in one run.

    python benchmarks/bench_link_projects.py [--repeat N] [--projects bzip2,cjson,...] [--no-large]
                                             [--markdown FILE]

Three tables, every time the best of N (wall seconds; CPU = user + system of the child and
what it waited for, from os.wait4):

1. Real projects (tests/link_projects: pinned Debian sources, built once and cached): each
   unmodified link line linked for real by bfd, lld and mold (`gcc -fuse-ld=X`, the driver
   included, output into a temporary directory), summed over the project; against
   `ldscope link -q --linker bfd -- LINE` as one fresh process per line, and one
   `ldscope link -q --linker bfd --from-log LOG` process for all the project's links (a log
   of `cd DIR && LINE` lines): a build's gate.
2. A large real link: a program using LLVM's C API linked statically against Debian's LLVM 14
   archives (`llvm-config-14 --link-static --libs core analysis executionengine mcjit native`,
   about 1,200 members, 860 of them extracted), when llvm-14-dev is installed; ldscope with
   --no-cache, with an empty store (the first run) and with the store a first run left.
3. The floor under any Python gate on this machine: `python3 -c pass`, and `import numpy`.

ldscope's own bytecode is compiled first (an installed package has it; a run with
PYTHONDONTWRITEBYTECODE would otherwise compile every module every time). The store lives in a
temporary XDG_CACHE_HOME. Targets (issue 11): ≤ 1× the bfd link on small links, ≤ 0.5× on
large ones (≥ 1,000 members).
"""

from __future__ import annotations

import argparse
import compileall
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.link_projects import sources  # noqa: E402
from tests.link_projects.harness import link_env  # noqa: E402

_LLVM_PROGRAM = r"""
#include <llvm-c/Analysis.h>
#include <llvm-c/Core.h>
#include <llvm-c/ExecutionEngine.h>
#include <llvm-c/Target.h>
#include <stdio.h>
int main(void) {
    LLVMModuleRef mod = LLVMModuleCreateWithName("demo");
    LLVMTypeRef params[] = {LLVMInt32Type(), LLVMInt32Type()};
    LLVMValueRef sum = LLVMAddFunction(mod, "sum", LLVMFunctionType(LLVMInt32Type(), params, 2, 0));
    LLVMBuilderRef b = LLVMCreateBuilder();
    LLVMPositionBuilderAtEnd(b, LLVMAppendBasicBlock(sum, "entry"));
    LLVMBuildRet(b, LLVMBuildAdd(b, LLVMGetParam(sum, 0), LLVMGetParam(sum, 1), "s"));
    char *err = NULL;
    LLVMVerifyModule(mod, LLVMAbortProcessAction, &err);
    LLVMDisposeMessage(err);
    LLVMLinkInMCJIT();
    LLVMInitializeNativeTarget();
    LLVMInitializeNativeAsmPrinter();
    LLVMExecutionEngineRef ee;
    if (LLVMCreateExecutionEngineForModule(&ee, mod, &err)) { fprintf(stderr, "%s\n", err); return 1; }
    printf("%d\n", ((int (*)(int, int))LLVMGetFunctionAddress(ee, "sum"))(2, 3));
    return 0;
}
"""


def _timed(argv: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, float, int]:
    """(wall seconds, CPU seconds, exit status) of one child."""
    start = time.perf_counter()
    proc = subprocess.Popen(argv, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _pid, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    return wall, usage.ru_utime + usage.ru_stime, os.waitstatus_to_exitcode(status)


def _best(argv: list[str], cwd: Path, env: dict[str, str], repeat: int) -> tuple[float, float, int]:
    runs = [_timed(argv, cwd, env) for _ in range(repeat)]
    return min(r[0] for r in runs), min(r[1] for r in runs), runs[-1][2]


def _with_output(argv: tuple[str, ...] | list[str], linker: str | None, out: str) -> list[str]:
    words = list(argv)
    words[words.index("-o") + 1] = out
    return [words[0], *([f"-fuse-ld={linker}"] if linker else []), *words[1:]]


def _gate(*args: str) -> list[str]:
    return [sys.executable, "-m", "ldscope", "link", "-q", "--linker", "bfd", *args]


def _ratio(a: float, b: float) -> str:
    return f"{a / b:.2f}×" if b > 0 else "—"


def _projects(names: list[str], repeat: int, tmp: str, env: dict[str, str]) -> list[str]:
    rows = ["| project | links | bfd (sum) | lld (sum) | mold (sum) | `ldscope` a process per line (sum) | "
            "÷ bfd | `ldscope --from-log`, one process | ÷ bfd (wall) | ÷ bfd (CPU) | ÷ mold |",
            "|" + "---|" * 11]
    for name in names:
        project = sources.build(sources.recipe(name))
        penv = {**link_env(project), **env}
        real = {"bfd": [0.0, 0.0], "lld": [0.0, 0.0], "mold": [0.0, 0.0]}
        per_line = [0.0, 0.0]
        log_lines = []
        for k, link in enumerate(project.links):
            cwd = project.root / link.cwd
            out = os.path.join(tmp, f"{name}-{k}.out")
            for linker, cell in real.items():
                wall, cpu, _status = _best(_with_output(link.argv, linker, out), cwd, penv, repeat)
                cell[0] += wall
                cell[1] += cpu
            wall, cpu, _status = _best(_gate("--", *_with_output(link.argv, None, out)), cwd, penv, repeat)
            per_line[0] += wall
            per_line[1] += cpu
            log_lines.append(f"cd {shlex.quote(str(cwd))} && {shlex.join(_with_output(link.argv, None, out))}")
        log = Path(tmp) / f"{name}.log"
        log.write_text("\n".join(log_lines) + "\n")
        _timed(_gate("--from-log", str(log)), Path(tmp), penv)  # fills the store: the timed runs are warm
        whole = _best(_gate("--from-log", str(log)), Path(tmp), penv, repeat)
        bfd = real["bfd"]
        rows.append(f"| {name} | {len(project.links)} | {bfd[0]:.3f} s | {real['lld'][0]:.3f} s | "
                    f"{real['mold'][0]:.3f} s | {per_line[0]:.3f} s | {_ratio(per_line[0], bfd[0])} | "
                    f"{whole[0]:.3f} s | {_ratio(whole[0], bfd[0])} | {_ratio(whole[1], bfd[1])} | "
                    f"{_ratio(whole[0], real['mold'][0])} |")
    return rows


def _large(repeat: int, tmp: str, env: dict[str, str]) -> list[str]:
    config = shutil.which("llvm-config-14")
    if config is None:
        return ["(llvm-config-14 not installed: no large link measured)"]
    work = Path(tmp) / "llvm"
    work.mkdir()
    (work / "jit.c").write_text(_LLVM_PROGRAM)
    cflags = subprocess.run([config, "--cflags"], capture_output=True, text=True, check=True).stdout.split()
    subprocess.run(["gcc", *cflags, "-c", "jit.c", "-o", "jit.o"], cwd=work, check=True)
    libs = subprocess.run([config, "--link-static", "--ldflags", "--libs", "core", "analysis", "executionengine",
                           "mcjit", "native"], capture_output=True, text=True, check=True).stdout.split()
    system = subprocess.run([config, "--link-static", "--system-libs"], capture_output=True, text=True,
                            check=True).stdout.split()
    line = ["g++", "jit.o", "-o", "jit", *libs, *system]
    libdir = subprocess.run([config, "--libdir"], capture_output=True, text=True, check=True).stdout.strip()
    members = sum(len(subprocess.run(["ar", "t", f"{libdir}/lib{w[2:]}.a"], capture_output=True, text=True,
                                     check=True).stdout.split()) for w in libs if w.startswith("-lLLVM"))
    real = {linker: _best(_with_output(line, linker, str(work / "out")), work, env, repeat)
            for linker in ("bfd", "lld", "mold")}
    shutil.rmtree(Path(env["XDG_CACHE_HOME"]) / "ldscope", ignore_errors=True)
    cold = _timed(_gate("--", *line), work, env)  # an empty store: the first run, which fills it
    warm = _best(_gate("--", *line), work, env, repeat)
    nocache = _best(_gate("--no-cache", "--", *line), work, env, repeat)
    bfd, mold = real["bfd"], real["mold"]
    rows = [f"LLVM 14 C API program, `{len(line)}` words, {members} members in the LLVM archives on the line:", "",
            "| run | wall | CPU | ÷ bfd (wall) | ÷ bfd (CPU) | ÷ mold (wall) |", "|---|---:|---:|---:|---:|---:|"]
    for label, cell in (("ld.bfd", bfd), ("ld.lld", real["lld"]), ("mold", mold), ("ldscope --no-cache", nocache),
                        ("ldscope, first run (empty store)", cold), ("ldscope, store from an earlier run", warm)):
        rows.append(f"| {label} | {cell[0]:.3f} s | {cell[1]:.3f} s | {_ratio(cell[0], bfd[0])} | "
                    f"{_ratio(cell[1], bfd[1])} | {_ratio(cell[0], mold[0])} |")
    return rows


def _floor(repeat: int, env: dict[str, str]) -> list[str]:
    here = Path.cwd()
    bare = _best([sys.executable, "-c", "pass"], here, env, repeat)
    numpy = _best([sys.executable, "-c", "import numpy"], here, env, repeat)
    return [f"`python3 -c pass`: {bare[0]:.3f} s wall, {bare[1]:.3f} s CPU; `python3 -c 'import numpy'`: "
            f"{numpy[0]:.3f} s wall, {numpy[1]:.3f} s CPU."]


def main() -> None:
    """Print the tables (and write them as markdown when asked)."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--projects", default="")
    parser.add_argument("--no-large", action="store_true")
    parser.add_argument("--markdown")
    args = parser.parse_args()
    compileall.compile_dir(str(ROOT / "src"), quiet=1)
    wanted = [p for p in args.projects.split(",") if p] or [r.name for r in sources.RECIPES]
    with tempfile.TemporaryDirectory(prefix="ldscope-bench-") as tmp:
        env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "XDG_CACHE_HOME": os.path.join(tmp, "xdg")}
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        parts = [_projects(wanted, args.repeat, tmp, env)]
        if not args.no_large:
            parts.append(_large(args.repeat, tmp, env))
        parts.append(_floor(args.repeat, env))
    text = "\n\n".join("\n".join(p) for p in parts)
    print(text)
    if args.markdown:
        Path(args.markdown).write_text(text + "\n")


if __name__ == "__main__":
    main()
