"""`python -m tests.peer_corpora.report [NAME…]`: the peer corpora's figures, printed.

Per corpus: files, ELF files read by both ldscope and readelf, rejected by both, rejected
only by ldscope (each with ldscope's error and whether it is a KNOWN_READER_GAPS entry),
rejected only by readelf, comparisons and field mismatches (each: explained by
ORACLE_DIFFERENCES, a KNOWN_FIELD_GAPS entry, or neither). `--cli` also runs every command over every file (the slow
test's sweep) and prints the runs and problems.
"""

from __future__ import annotations

import os
import sys
from collections import Counter

from tests.peer_corpora import cli as peer_cli
from tests.peer_corpora import probe
from tests.peer_corpora import sources as src


def main(argv: list[str]) -> int:
    from tests.test_peer_corpora import KNOWN_FIELD_GAPS, ORACLE_DIFFERENCES, known_gap

    os.environ.setdefault("LC_ALL", "C")
    with_cli = "--cli" in argv
    wanted = [a for a in argv if not a.startswith("--")]
    corpora = [src.corpus_by_name(n) for n in wanted] if wanted else src.all_corpora()
    unexplained = 0
    print(f"{'corpus':28} {'files':>6} {'read':>6} {'both-rej':>8} {'ldscope-rej':>11} "
          f"{'readelf-rej':>11} {'checks':>9} {'mismatch':>8}")
    for corpus in corpora:
        if isinstance(corpus, src.Unavailable):
            print(f"{corpus.name:28} unavailable: {corpus.reason}")
            continue
        result = probe.evaluate(corpus.root, corpus.files)
        print(f"{corpus.name:28} {len(corpus.files):6} {len(result.read):6} "
              f"{len(result.rejected_by_both):8} {len(result.rejected_only_by_ldscope):11} "
              f"{len(result.rejected_only_by_readelf):11} {sum(result.checked.values()):9} "
              f"{len(result.mismatches):8}   [{corpus.origin}]")
        if result.compared > len(result.read):
            print(f"    {result.compared - len(result.read)} rejected files compared on the tables "
                  f"ldscope reads: {dict((k, v) for k, v in result.checked.items() if k.startswith('not-read.'))} not read")
        reasons = Counter((v.ldscope_error, known_gap(corpus.name, v.rel) == v.ldscope_error)
                          for v in result.rejected_only_by_ldscope)
        for (error, known), count in sorted(reasons.items(), key=lambda kv: -kv[1]):
            mark = "known gap" if known else "NEW"
            print(f"    rejected only by ldscope ({mark}) ×{count}: {error}")
            shown = [v.rel for v in result.rejected_only_by_ldscope if v.ldscope_error == error]
            print("        " + ", ".join(shown[:6]) + (f", … {len(shown) - 6} more" if len(shown) > 6 else ""))
        for v in result.rejected_by_both + result.rejected_only_by_readelf:
            print(f"    readelf exit {v.readelf_rc} ({v.readelf_error or 'no Error: line'}): {v.rel}"
                  f"; ldscope: {v.ldscope_error or 'reads it'}")
        for m in result.mismatches:
            key = (f"{corpus.name}:{m.rel}", m.kind)
            label = ("oracle difference" if key in ORACLE_DIFFERENCES
                     else "known field gap" if key in KNOWN_FIELD_GAPS else "MISMATCH")
            unexplained += label == "MISMATCH"
            print(f"    {label}: {m}"[:300])
        if with_cli:
            done = peer_cli.sweep([corpus.path(r) for r in corpus.files])
            print(f"    cli: {done.runs} runs, exit statuses {dict(sorted(done.exit_codes.items()))}, "
                  f"{len(done.problems)} problems")
            for problem in done.problems[:10]:
                print(f"        {problem}"[:300])
    return 1 if unexplained else 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main(sys.argv[1:]))
