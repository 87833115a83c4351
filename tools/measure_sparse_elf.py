"""Peak memory and CPU time of `load`, `symbols`, `info` and `scan` on sparse ELF files and
archives (issue 13's figures, item 5).

    python3 tools/measure_sparse_elf.py [--src DIR] [--gib N]

Builds, in a temporary directory, a small gcc-built library (both hash tables, versions)
and from it files of N GiB apparent size (default 1) holding a few KB on disk: `.dynsym`
stretched to the end (44.7 M entries for 1 GiB), `.symtab` stretched, a directory holding
the first (for `scan`), and two ar archives, one whose symbol index and one whose member
claims the whole file. Each command runs as `python3 -m ldscope ...` with PYTHONPATH=DIR
(default: this checkout's src; give another checkout's src for a before/after comparison)
in a wrapper process of its own: its child's ru_maxrss and user+system time.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "src")]  # the crafting helpers live in the tests

import tests.test_memory_bounds as mb  # noqa: E402

WRAPPER = ("import json, resource, subprocess, sys\n"
           "p = subprocess.run([sys.executable, '-m', 'ldscope', *sys.argv[1:]], capture_output=True, text=True)\n"
           "r = resource.getrusage(resource.RUSAGE_CHILDREN)\n"
           "print(json.dumps([p.returncode, r.ru_maxrss, r.ru_utime + r.ru_stime, p.stderr.strip()[:200]]))\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--src", default=str(ROOT / "src"), help="the ldscope source tree to measure")
    parser.add_argument("--gib", type=int, default=1, help="apparent size of each file, GiB")
    args = parser.parse_args()
    mb.APPARENT = args.gib << 30
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        (d / "s.c").write_text("#include <stdio.h>\nint s_data = 42;\n"
                               "int s_one(int x) { printf(\"%d\\n\", x); return x + 1; }\n")
        (d / "s.map").write_text("S_1.0 { global: s_data; s_one; local: *; };\n")
        subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(d / "libs.so"), str(d / "s.c"),
                        "-Wl,--hash-style=both", f"-Wl,--version-script={d / 's.map'}"], check=True)
        (d / "m.c").write_text("int m_func(void) { return 7; }\n")
        subprocess.run(["gcc", "-c", "-o", str(d / "m.o"), str(d / "m.c")], check=True)
        small, obj = (d / "libs.so").read_bytes(), (d / "m.o").read_bytes()
        files = {}
        for case in ("dynsym", "symtab"):
            img = mb.Image(small)
            mb.CASES[case][0](img)
            files[case] = img.write(d / f"sparse-{case}.so")
        (d / "tree").mkdir()
        os.link(d / "sparse-dynsym.so", d / "tree" / "libsparse.so.1")
        index_size = mb.APPARENT - 8 - 60 - 60 - len(obj)
        index = (1).to_bytes(4, "big") + (8 + 60 + index_size).to_bytes(4, "big") + b"m_func\0"
        index_ar = mb._sparse_archive(d / "sparse-index.a", b"!<arch>\n" + mb._ar_header("/", index_size) + index,
                                      mb._ar_header("m.o/", len(obj)) + obj)
        big = index_size + (index_size & 1)
        head = b"!<arch>\n" + mb._ar_header("m.o/", len(obj)) + obj
        head += b"\n" * (len(head) & 1)
        member_ar = mb._sparse_archive(d / "sparse-member.a", head + mb._ar_header("big.o/", big) + obj)
        runs: list[tuple[str, list[str]]] = []
        for case, path in files.items():
            for command in (["load"], ["symbols"], ["symbols", "--all"], ["info"]):
                runs.append((f"{' '.join(command)} {case}", [*command, str(path)]))
        runs += [("scan DIR (dynsym)", ["scan", str(d / "tree")]),
                 ("symbols index.a", ["symbols", str(index_ar)]), ("symbols member.a", ["symbols", str(member_ar)])]
        on_disk = os.stat(files["dynsym"]).st_blocks * 512
        print(f"each file {mb.APPARENT >> 20} MiB apparent, {on_disk / 1024:.0f} KiB on disk")
        env = dict(os.environ, PYTHONPATH=args.src, OPENBLAS_NUM_THREADS="1")
        for label, argv in runs:
            proc = subprocess.run([sys.executable, "-c", WRAPPER, *argv], capture_output=True, text=True, env=env)
            code, rss, cpu, err = json.loads(proc.stdout)
            print(f"{label:24} exit {code}  peak RSS {rss / 1024:6.0f} MiB  CPU {cpu:6.1f} s  "
                  f"{err.splitlines()[0] if err else ''}"[:230])


if __name__ == "__main__":
    main()
