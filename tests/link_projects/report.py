"""Print the corpus's per-project x per-linker agreement table; `--full FILE` writes every
disagreement (and every fix the real linker refused) as JSON.

    PYTHONPATH=src python3 -m tests.link_projects.report [--full FILE] [--record] [PROJECT...]

`--record` rewrites tests/link_projects/figures.json with the measured figures (the floor the
test tier holds the model to); do that only when a change has made the figures better.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from tests.link_projects.harness import LINKERS, Outcome, run_project, table, write_regressions
from tests.link_projects.sources import RECIPES, Unavailable, build

FIGURES = Path(__file__).resolve().parent / "figures.json"
TARGET = 0.995


def render(t: dict[str, dict[str, list[int]]]) -> str:
    """The table as text: agree/total and the percentage per cell."""
    rows = [f"{'project':<16}" + "".join(f"{ln:>18}" for ln in LINKERS)]
    for project, cells in sorted(t.items(), key=lambda kv: kv[0] == "all"):
        row = f"{project:<16}"
        for ln in LINKERS:
            a, n = cells.get(ln, [0, 0])
            row += f"{f'{a}/{n} {100 * a / n:.1f}%' if n else '-':>18}"
        rows.append(row)
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    """Run the corpus and print the table."""
    ap = argparse.ArgumentParser(prog="python -m tests.link_projects.report")
    ap.add_argument("projects", nargs="*", help="corpus projects (default: all)")
    ap.add_argument("--full", metavar="FILE", help="write every disagreement to FILE (JSON)")
    ap.add_argument("--record", action="store_true", help="record the figures in figures.json")
    args = ap.parse_args(argv)
    outcomes: list[Outcome] = []
    for recipe in RECIPES:
        if args.projects and recipe.name not in args.projects:
            continue
        try:
            project = build(recipe)
        except Unavailable as e:
            print(f"{recipe.name}: unavailable: {e}", file=sys.stderr)
            continue
        outcomes.extend(run_project(project))
    t = table(outcomes)
    print(render(t))
    checked = [o for o in outcomes if o.fix_links is not None]
    print(f"fixes run by the real linker: {sum(bool(o.fix_links) for o in checked)}/{len(checked)} link;"
          f" failures compared on verdict alone: {sum(o.verdict_only for o in outcomes)}")
    missing = [o for o in outcomes if o.missing_library]
    print(f"missing-library failures: {len(missing)}, a fix offered and linked by the real linker: "
          f"{sum(o.fix_links is True for o in missing)}, none offered: {sum(o.fix_links is None for o in missing)}")
    for o in missing:
        if o.fix_links is not True:
            print(f"  no verified fix: {o.key}: {o.fix or 'no fix offered'}")
    bad = [o for o in outcomes if not o.agree]
    for o in bad:
        print(f"  {o.key}: real rc={o.real_rc} {o.real_first[:1]} | ldscope "
              f"{'links' if o.predicted_links else 'fails'} {o.predicted_first[:1]}{' ' + o.error if o.error else ''}")
    if args.full:
        write_regressions(outcomes, Path(args.full))
    if args.record:
        FIGURES.write_text(json.dumps({p: c for p, c in t.items() if p != "all"}, indent=1, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
