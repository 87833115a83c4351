"""Peak memory and CPU time of `ldscope scan` on zip-bomb wheels (issue 13's figures).

    python3 tools/measure_wheel_bombs.py [--src DIR]

Builds, in a temporary directory, the 1 MB and 2 MB bombs (a real gcc-built library, then
1 GiB / 2047 MiB of zeros, deflated ~1030:1), a Fifield-style overlapping-files bomb (50
members running into one shared 1 GiB kernel) and a lying-header bomb (1 MiB claimed over
the 1 GiB stream), and runs `python3 -m ldscope scan -j 1 WHEEL` on each with PYTHONPATH=DIR
(default: this checkout's src; give another checkout's src for a before/after comparison).
Each run is measured in a wrapper process of its own: its child's ru_maxrss and user+system time.
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
sys.path.insert(0, str(ROOT))

from tests.wheel_support import build_zip, lying, metadata_members, overlapping_bomb, zero_bomb  # noqa: E402

WRAPPER = ("import json, resource, subprocess, sys\n"
           "p = subprocess.run([sys.executable, '-m', 'ldscope', 'scan', '-j', '1', sys.argv[1]],"
           " capture_output=True, text=True)\n"
           "r = resource.getrusage(resource.RUSAGE_CHILDREN)\n"
           "print(json.dumps([p.returncode, r.ru_maxrss, r.ru_utime + r.ru_stime, p.stderr.strip()[:160]]))\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--src", default=str(ROOT / "src"), help="the ldscope source tree to measure")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        (d / "g.c").write_text("int good(void) { return 1; }\n")
        subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(d / "libgood.so"), str(d / "g.c")], check=True)
        elf = (d / "libgood.so").read_bytes()
        bomb1 = zero_bomb("bomb/libbomb.so", 1024, elf, real_crc=False)
        cases = {
            "1 MB bomb (1 GiB)": build_zip([bomb1, *metadata_members("bomb", "1.0")]),
            "2 MB bomb (2047 MiB)": build_zip([zero_bomb("bomb/libbomb.so", 2047, elf, real_crc=False),
                                               *metadata_members("bomb", "1.0")]),
            "overlapping files (50 x 1 GiB)": overlapping_bomb(50, 1024, elf),
            "lying header (1 MiB claimed)": build_zip([lying(bomb1, 1 << 20), *metadata_members("bomb", "1.0")]),
        }
        env = dict(os.environ, PYTHONPATH=args.src)
        for label, data in cases.items():
            wheel = d / "bomb-1.0-py3-none-linux_x86_64.whl"
            wheel.write_bytes(data)
            proc = subprocess.run([sys.executable, "-c", WRAPPER, str(wheel)], capture_output=True, text=True, env=env)
            code, rss, cpu, err = json.loads(proc.stdout)
            print(f"{label:32} {len(data) / 1e6:5.1f} MB  exit {code}  peak RSS {rss / 1024:6.0f} MiB  "
                  f"CPU {cpu:5.1f} s  {err.splitlines()[0] if err else ''}"[:220])


if __name__ == "__main__":
    main()
