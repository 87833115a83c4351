"""ldscope link against the real GNU ld (bfd), gold, lld and mold on generated scenarios.

Each scenario is built with gcc/ar, linked by every installed linker (the driver's real
line, run directly), and predicted by ldscope from the same line: the verdict and the exact
set of (error kind, symbol, referrer) must agree. 200 random scenarios per linker run here
(8 batches of 25, spread over xdist workers), plus every disagreement found so far, kept
as a fixed case in tests/link_regressions.json. The big campaign (>= 2,000 per linker) is
benchmarks/link_campaign.py; its figures are in docs/fidelity.md.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.conftest import batches
from tests.link_campaign import CampaignResult, run_campaign, run_scenarios
from tests.link_gen import Scenario
from tests.link_oracle import available_linkers

LINKERS = available_linkers()
BATCHES = 8
PER_BATCH = 25
REGRESSIONS = Path(__file__).with_name("link_regressions.json")
# (linker, seed) -> why a difference is accepted (documented in docs/fidelity.md). None yet.
ACCEPTED: dict[tuple[str, int], str] = {}

pytestmark = [
    pytest.mark.skipif(shutil.which("gcc") is None or not LINKERS, reason="needs gcc and linkers"),
]


def check(result: CampaignResult) -> None:
    """No disagreement, except the accepted ones."""
    bad = [d for d in result.disagreements if (d.linker, d.scenario.seed) not in ACCEPTED]
    assert not bad, "\n\n".join(d.describe() for d in bad[:3])


@pytest.mark.parametrize("batch", batches(BATCHES))
def test_random_scenarios(tmp_path: Path, batch: int) -> None:
    result = run_campaign(tmp_path, batch * PER_BATCH, PER_BATCH, LINKERS, per_batch=PER_BATCH)
    for linker in LINKERS:
        assert result.runs[linker] == PER_BATCH
    check(result)


@pytest.mark.slow
def test_fixed_regressions(tmp_path: Path) -> None:
    cases = json.loads(REGRESSIONS.read_text())
    scenarios = [Scenario.from_json(json.dumps(c["scenario"])) for c in cases]
    result = run_scenarios(tmp_path, scenarios, LINKERS)
    check(result)


def test_generator_covers_the_features(tmp_path: Path) -> None:
    """The random scenarios exercise every feature the issue lists (counted, not assumed)."""
    import random

    from tests.link_gen import random_scenario, random_units

    seen: set[str] = set()
    for seed in range(BATCHES * PER_BATCH):
        batch = seed // PER_BATCH
        pool = random_units(random.Random(1_000_003 * batch + 17), f"b{batch}", 36, 24, 6)
        sc = random_scenario(random.Random(seed), seed, pool)
        kinds = {k for u in sc.units for _, k in u.defs}
        seen |= kinds
        seen |= {f for f in ("--start-group", "--whole-archive", "--as-needed",
                             "--copy-dt-needed-entries") if f in sc.line}
        seen |= {"weak-ref"} if any(w for u in sc.units for _, w in u.refs) else set()
        seen |= {"needed-chain"} if any(lib.needed for lib in sc.libs) else set()
        seen |= {"versioned"} if any(lib.version for lib in sc.libs) else set()
        seen |= {"script"} if sc.scripts else set()
        seen |= {"shared"} if sc.shared else {"exec"}
        seen |= {"-l:"} if any(t.startswith("-l:") for t in sc.line) else set()
    want = {"strong", "weak", "common", "data", "weakdata", "comdat", "inline", "--start-group",
            "--whole-archive", "--as-needed", "--copy-dt-needed-entries", "weak-ref", "needed-chain",
            "versioned", "script", "shared", "exec", "-l:"}
    assert want <= seen, want - seen
