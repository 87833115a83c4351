"""`python -m tests.realworld.report [NAME…] [--full FILE]`: build every corpus environment (or
those named), compute its truth, scan it with ldscope and print the comparison: a markdown
table (with build, truth and scan times, and the scan command of each environment), the
disagreements grouped by apparent cause, and the breakages' checks.  `--full FILE` writes
every disagreement in full.  Run from the repository root.
"""

from __future__ import annotations

import argparse
import shlex
import sys
import time
from pathlib import Path

from tests.realworld.build import BuiltEnv, Unavailable, build
from tests.realworld.compare import (
    Comparison,
    breakage_failures,
    compare,
    full_listing,
    grouped,
    markdown_table,
    run_scan,
    scan_command,
)
from tests.realworld.corpus import ENVIRONMENTS, HEAVY_ENVIRONMENTS, environment
from tests.realworld.nearmiss import precision
from tests.realworld.truth import truth


def main(argv: list[str] | None = None) -> int:
    """Build, judge and compare; print the report.  Exit status 1 when anything disagrees."""
    parser = argparse.ArgumentParser(prog="python -m tests.realworld.report", description=__doc__.split("\n\n")[0])
    parser.add_argument("names", nargs="*", help="environments (default: all): "
                        + ", ".join(e.name for e in ENVIRONMENTS) + "; heavy, by name only: "
                        + ", ".join(e.name for e in HEAVY_ENVIRONMENTS))
    parser.add_argument("--full", type=Path, help="write every disagreement, in full, to this file")
    args = parser.parse_args(argv)
    envs = [environment(n) for n in args.names] if args.names else list(ENVIRONMENTS)
    comparisons: list[Comparison] = []
    extra: dict[str, dict[str, str]] = {}
    commands: list[str] = []
    breakage_lines: list[str] = []
    for env in envs:
        print(f"… {env.name}", file=sys.stderr, flush=True)
        try:
            built: BuiltEnv = build(env)
        except Unavailable as e:
            print(f"{env.name}: skipped: {e}", file=sys.stderr)
            continue
        doc_truth = truth(built)
        start = time.monotonic()
        scan = run_scan(built.path)
        scan_seconds = time.monotonic() - start
        comparison = compare(scan, doc_truth)
        comparisons.append(comparison)
        nm = precision(scan, str(doc_truth.get("python") or "") or None)
        extra[env.name] = {"near-miss precision": nm.describe(), "build s": f"{built.build_seconds:.0f}",
                           "truth s": f"{doc_truth['seconds']}", "scan s": f"{scan_seconds:.1f}"}
        commands.append(f"* {env.name}: `{shlex.join(['python3', *scan_command(built.path)[1:]])}`")
        for b in env.breakages:
            failures = breakage_failures(b, built.site, scan, doc_truth)
            breakage_lines.append(f"* {env.name} / {b.name} ({b.kind}): "
                                  + ("as expected" if not failures else "; ".join(failures)))
    print(markdown_table(comparisons, extra))
    print("\nScan commands:\n" + "\n".join(commands))
    if breakage_lines:
        print("\nBreakages:\n" + "\n".join(breakage_lines))
    print("\n" + grouped(comparisons))
    if args.full:
        args.full.write_text(full_listing(comparisons))
        print(f"every disagreement: {args.full}")
    disagree = any(c.disagreements or c.not_in_scan for c in comparisons)
    return 1 if disagree or any("as expected" not in line for line in breakage_lines) else 0


if __name__ == "__main__":
    sys.exit(main())
