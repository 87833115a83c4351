"""The big differential campaign (not run by pytest): N scenarios per linker, figures printed.

    python -m tests.link_fidelity_campaign --count 2000 --first 10000 --jobs 2

Prints, per linker: scenarios, agreement (verdict and exact error facts), failing links,
and time spent in the real linker vs. in ldscope; then every disagreement in full.
"""

from __future__ import annotations

import argparse
import multiprocessing
import sys
import tempfile
import time
from pathlib import Path

from tests.link_campaign import CampaignResult, run_campaign
from tests.link_oracle import available_linkers

PER_BATCH = 25


def _batch(args: tuple[str, int, list[str]]) -> CampaignResult:
    root, start, linkers = args
    path = Path(root) / f"b{start}"
    path.mkdir(parents=True, exist_ok=True)
    return run_campaign(path, start, PER_BATCH, linkers, per_batch=PER_BATCH)


def main(argv: list[str] | None = None) -> int:
    """Run the campaign; exit 1 if any linker agrees on fewer than 99.5% of scenarios."""
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--count", type=int, default=2000)
    ap.add_argument("--first", type=int, default=10_000, help="first seed (CI uses 0..199)")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--linkers", default=",".join(available_linkers()))
    ns = ap.parse_args(argv)
    linkers = [x for x in ns.linkers.split(",") if x]
    t0 = time.perf_counter()
    total = CampaignResult()
    with tempfile.TemporaryDirectory(prefix="ldscope-campaign-") as root:
        work = [(root, s, linkers) for s in range(ns.first, ns.first + ns.count, PER_BATCH)]
        with multiprocessing.Pool(ns.jobs) as pool:
            for res in pool.imap_unordered(_batch, work):
                for k, v in res.runs.items():
                    total.runs[k] = total.runs.get(k, 0) + v
                for k, v in res.agree.items():
                    total.agree[k] = total.agree.get(k, 0) + v
                for k, v in res.failing_links.items():
                    total.failing_links[k] = total.failing_links.get(k, 0) + v
                total.disagreements += res.disagreements
                total.seconds_real += res.seconds_real
                total.seconds_predict += res.seconds_predict
    wall = time.perf_counter() - t0
    print(f"seeds {ns.first}..{ns.first + ns.count - 1}, wall {wall:.0f} s, "
          f"real linkers {total.seconds_real:.0f} s, ldscope {total.seconds_predict:.0f} s")
    ok = True
    print(f"{'linker':6} {'scenarios':>9} {'agree':>6} {'rate':>8} {'failing':>8}")
    for linker in linkers:
        runs, agree = total.runs.get(linker, 0), total.agree.get(linker, 0)
        rate = agree / runs if runs else 0.0
        ok &= rate >= 0.995
        print(f"{linker:6} {runs:9d} {agree:6d} {100 * rate:7.2f}% {total.failing_links.get(linker, 0):8d}")
    for d in total.disagreements:
        print("\n" + d.describe())
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
