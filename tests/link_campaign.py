"""Differential campaign: generated scenarios, real linkers vs. ldscope's prediction."""

from __future__ import annotations

import random
import time
from dataclasses import dataclass, field
from pathlib import Path

from ldscope.analysis._link import predict_link_facts
from tests.link_gen import Builder, Scenario, random_scenario, random_units
from tests.link_oracle import link_argv, parse, predicted_facts, run_real


@dataclass
class Disagreement:
    """One scenario where ldscope and a real linker differ."""

    linker: str
    scenario: Scenario
    argv: list[str]
    real_rc: int
    real: set[tuple[str, str, str]]
    predicted_links: bool
    predicted: set[tuple[str, str, str]]
    stderr: str

    def describe(self) -> str:
        """A readable account for the test log."""
        return (
            f"[{self.linker}] seed {self.scenario.seed}: real rc={self.real_rc}, "
            f"predicted {'links' if self.predicted_links else 'fails'}\n"
            f"  only real:      {sorted(self.real - self.predicted)}\n"
            f"  only predicted: {sorted(self.predicted - self.real)}\n"
            f"  line: {' '.join(self.argv)}\n  stderr:\n{self.stderr}\n  scenario: {self.scenario.to_json()}"
        )


@dataclass
class CampaignResult:
    """Counts per linker and the disagreements."""

    runs: dict[str, int] = field(default_factory=dict)
    agree: dict[str, int] = field(default_factory=dict)
    failing_links: dict[str, int] = field(default_factory=dict)
    disagreements: list[Disagreement] = field(default_factory=list)
    seconds_real: float = 0.0
    seconds_predict: float = 0.0


def compare(linker: str, sc: Scenario, argv: list[str], workdir: Path, result: CampaignResult) -> None:
    """Link one scenario with the real linker and with ldscope; record agreement."""
    t0 = time.perf_counter()
    rc, err = run_real(argv, str(workdir))
    t1 = time.perf_counter()
    links, errors = predict_link_facts(argv, str(workdir), linker)
    t2 = time.perf_counter()
    result.seconds_real += t1 - t0
    result.seconds_predict += t2 - t1
    real = parse(linker, err)
    pred = predicted_facts(errors)
    ok = (rc == 0) == links
    if ok:
        exact = {f for f in real.facts if f[1] not in real.truncated}
        pexact = {f for f in pred if f[1] not in real.truncated}
        cut = {f for f in real.facts if f[1] in real.truncated}
        pcut = {f for f in pred if f[1] in real.truncated}
        ok = exact == pexact and cut <= pcut
        if rc != 0 and not real.facts:
            ok = False  # a failure we could not read: never count it as agreement
    result.runs[linker] = result.runs.get(linker, 0) + 1
    result.failing_links[linker] = result.failing_links.get(linker, 0) + (rc != 0)
    if ok:
        result.agree[linker] = result.agree.get(linker, 0) + 1
    else:
        result.disagreements.append(Disagreement(linker, sc, argv, rc, real.facts, links, pred, err))


def run_scenarios(root: Path, scenarios: list[Scenario], linkers: list[str],
                  result: CampaignResult | None = None, builder: Builder | None = None) -> CampaignResult:
    """Build and compare given scenarios (e.g. the fixed regression cases)."""
    result = result or CampaignResult()
    builder = builder or Builder(root)
    for sc in scenarios:
        workdir = root / f"s{sc.seed}"
        user = builder.materialize(sc, workdir)
        for linker in linkers:
            argv = link_argv(linker, sc.shared, user, sc.flags, out=f"out-{linker}")
            compare(linker, sc, argv, workdir, result)
    return result


def run_campaign(root: Path, first_seed: int, count: int, linkers: list[str],
                 per_batch: int = 25, result: CampaignResult | None = None) -> CampaignResult:
    """`count` random scenarios from `first_seed`, in batches sharing a compiled unit pool."""
    result = result or CampaignResult()
    for start in range(first_seed, first_seed + count, per_batch):
        batch = start // per_batch
        rng = random.Random(1_000_003 * batch + 17)
        pool = random_units(rng, f"b{batch}", 36, 24, 6)
        bdir = root / f"batch{batch}"
        builder = Builder(bdir)
        scenarios = [random_scenario(random.Random(seed), seed, pool)
                     for seed in range(start, min(start + per_batch, first_seed + count))]
        run_scenarios(bdir, scenarios, linkers, result, builder)
    return result
