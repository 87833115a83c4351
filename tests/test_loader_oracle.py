"""Oracle tests: the loader model against the real ld.so of this machine (glibc 2.36, x86_64).

Every scenario is built for real with gcc, run under the real loader (an `ldd -r`-style trace
with LD_DEBUG=bindings, then the program itself lazily, with calls, and with LD_BIND_NOW=1;
or a dlopen host program), and compared with `LoaderModel` aspect by aspect:

* paths: every library's first name and the path ld.so opened it by, in load order
  (dlopen: the objects new with the target, from dl_iterate_phdr)
* missing: libraries not found;  loads: main() starts / dlopen succeeds
* unresolved: undefined symbols (and ld.so's check_match assertion);  versions: missing
  version nodes;  noversion: "no version information available" warnings
* timing: a lazy run with calls fails before main / at a call / not at all, and so does
  the LD_BIND_NOW=1 run;  first-error: the loader's error is one the model reports
* bindings: (referrer, symbol, version, provider) of every binding of the test objects
* scan: the binding path `ldscope scan` uses (cached array binding, `record_bindings=False`)
  with LD_BIND_NOW: the real LD_BIND_NOW run's outcome and undefined symbols (exec), the
  reference-at-a-time model's errors (dlopen, whose earlier dlopens the model takes as given)

Random scenarios come from `loader_oracle.generate.generate(seed)` (seeds SEED_BASE ..
SEED_BASE + CHUNKS * PER_CHUNK; LDSCOPE_ORACLE_SEED moves the window), hand-written ones
from `loader_oracle.rules.features()` (one module per rule family), fixed disagreements from `loader_oracle.regressions`.
Scenarios of the "chroot" world (ld.so.cache, default directories, DF_1_NODEFLIB in a
sysroot) need root; elsewhere they are skipped.  LDSCOPE_ORACLE_STATS=DIR writes per-test
agreement counts as JSON into DIR.
"""

from __future__ import annotations

import json
import os
import platform
import shutil
from collections import Counter
from pathlib import Path

import pytest

from tests.conftest import batches
from tests.loader_oracle.build import chroot_available
from tests.loader_oracle.compare import ASPECTS, Checked, describe, run_batch
from tests.loader_oracle.generate import generate
from tests.loader_oracle.observe import classify_error
from tests.loader_oracle.regressions import REGRESSIONS, Regression
from tests.loader_oracle.rules import features
from tests.loader_oracle.spec import Scenario

CHUNKS = 12
PER_CHUNK = 25
SEED_BASE = int(os.environ.get("LDSCOPE_ORACLE_SEED", "0"))

pytestmark = pytest.mark.skipif(
    shutil.which("gcc") is None or platform.machine() != "x86_64"
    or not os.path.exists("/lib64/ld-linux-x86-64.so.2"),
    reason="needs gcc and the x86_64 glibc loader",
)


def _record(name: str, results: list[Checked]) -> None:
    target = os.environ.get("LDSCOPE_ORACLE_STATS")
    if not target:
        return
    compared: Counter[str] = Counter()
    agreed: Counter[str] = Counter()
    for c in results:
        for aspect, problems in c.aspects.items():
            compared[aspect] += 1
            agreed[aspect] += not problems
    Path(target).mkdir(parents=True, exist_ok=True)
    (Path(target) / f"{name}.json").write_text(json.dumps({
        "scenarios": len(results), "compared": compared, "agreed": agreed,
        "failed": [c.built.scenario.name for c in results if c.failures()],
    }))


def _run(name: str, scenarios: list[Scenario], tmp_path: Path) -> list[Checked]:
    runnable = [s for s in scenarios if s.world == "host" or chroot_available()]
    if not runnable:
        pytest.skip("chroot(2) is not available (not root)")
    results = run_batch(runnable, tmp_path)
    _record(name, results)
    return results


@pytest.mark.parametrize("chunk", batches(CHUNKS))
def test_random_scenarios_agree_with_ld_so(chunk: int, tmp_path: Path) -> None:
    """25 seeded random scenarios per chunk: every compared aspect agrees with ld.so."""
    seeds = range(SEED_BASE + chunk * PER_CHUNK, SEED_BASE + (chunk + 1) * PER_CHUNK)
    results = _run(f"random{chunk}", [generate(s) for s in seeds], tmp_path)
    failures = [describe(c) for c in results if c.failures()]
    assert not failures, "\n".join(failures)
    # Each scenario was really compared: the load outcome always, paths for most.
    assert all("loads" in c.aspects or c.observation.dl_prior_failed for c in results)
    assert sum("paths" in c.aspects for c in results) >= len(results) // 2


@pytest.mark.parametrize("scenario", features(), ids=lambda s: s.name)
def test_feature_scenario(scenario: Scenario, tmp_path: Path) -> None:
    """A hand-written scenario: the real loader does what it says, and the model agrees."""
    [checked] = _run(f"feature_{scenario.name}", [scenario], tmp_path)
    assert not checked.failures(), describe(checked)
    assert checked.aspects.get("loads") == [], describe(checked)
    assert scenario.expect, "a feature scenario states what the real loader does"


@pytest.mark.parametrize("regression", REGRESSIONS, ids=lambda r: r.scenario.name)
def test_regression_scenario(regression: Regression, tmp_path: Path) -> None:
    """A scenario the model once got wrong: it agrees with ld.so now."""
    [checked] = _run(regression.scenario.name, [regression.scenario], tmp_path)
    assert not checked.failures(), (describe(checked) + "\n" + regression.description
                                    + f"\n(decided by glibc's {regression.glibc}; the model's fix: {regression.fix})")
    assert regression.scenario.expect


def _graph_shape(s: Scenario) -> tuple[int, bool]:
    """(longest DT_NEEDED chain from the program, whether the graph has a cycle)."""
    needed = {x.key: [d for d in x.needed] for x in s.libs}
    cycle = False

    def depth(key: str, path: tuple[str, ...]) -> int:
        nonlocal cycle
        if key in path:
            cycle = True
            return 0
        return 1 + max((depth(d, (*path, key)) for d in needed.get(key, ())), default=0)

    roots = s.exe.needed or ((s.libs[0].key,) if s.libs else ())
    longest = max((depth(r, ()) for r in roots), default=0)
    return longest, cycle


def test_generator_is_deterministic_and_covers_the_features() -> None:
    """Seeds give the same scenario every time, and the CI window draws every feature."""
    assert generate(SEED_BASE + 7) == generate(SEED_BASE + 7)
    assert generate(SEED_BASE + 7) != generate(SEED_BASE + 8)
    scenarios = [generate(s) for s in range(SEED_BASE, SEED_BASE + CHUNKS * PER_CHUNK)]
    seen: Counter[str] = Counter()
    for s in scenarios:
        libs = s.libs
        seen["chroot"] += s.world == "chroot"
        seen["dlopen"] += s.dlopen is not None
        seen["preload"] += bool(s.preload)
        seen["llp"] += s.llp is not None
        seen["cache"] += bool(s.cache)
        seen["exe rpath"] += bool(s.exe.rpath)
        seen["exe runpath"] += bool(s.exe.runpath)
        seen["lib rpath"] += any(x.rpath for x in libs)
        seen["lib runpath"] += any(x.runpath for x in libs)
        seen["$ORIGIN"] += any("ORIGIN" in e for x in libs for e in (*x.rpath, *x.runpath))
        seen["versions"] += any(x.versions for x in libs)
        seen["hidden version"] += any(not d.default for x in libs for d in x.defs)
        seen["no versym"] += any(x.nostdlib and not x.versions for x in libs)
        seen["m32"] += any(x.m32 for x in libs)
        seen["wrong machine"] += any(x.machine for x in libs)
        seen["junk"] += any(x.junk for x in libs)
        depth, cycle = _graph_shape(s)
        seen["cycle"] += cycle
        seen["depth 4"] += depth >= 4
        seen["diamond"] += any(len([x for x in libs if k in x.needed]) >= 2
                               for k in {y.key for y in libs})
        seen["weak"] += any(r.how == "weak" for x in libs for r in x.refs)
        seen["addr"] += any(r.how == "addr" for x in (*libs, s.exe) for r in x.refs)
        seen["data"] += any(r.how == "data" for x in (*libs, s.exe) for r in x.refs)
        seen["ghost"] += any("ghost" in r.name for x in libs for r in x.refs)
        seen["now"] += s.exe.now or any(x.now for x in libs)
        seen["non-PIE"] += not s.exe.pie and s.dlopen is None
        seen["symbolic"] += any(x.symbolic for x in libs)
        seen["nodeflib"] += s.exe.nodeflib or any(x.nodeflib for x in libs)
        seen["symlink"] += any(p.symlink for p in s.place)
        seen["hwcaps dir"] += any("glibc-hwcaps" in p.dir or p.dir.endswith("x86_64")
                                  for p in s.place)
        seen["system dir"] += any(p.dir.startswith("/") for p in s.place)
        seen["exe defines"] += bool(s.exe.defs)
        seen["dlopen global"] += bool(s.dlopen and s.dlopen.glob)
        seen["dlopen local"] += bool(s.dlopen and s.dlopen.local)
        seen["dlopen now"] += bool(s.dlopen and s.dlopen.now)
    missing = sorted(k for k, v in seen.items() if v < 3)
    assert not missing, f"features drawn fewer than 3 times: {missing} ({dict(seen)})"
    assert len(scenarios) >= 300


@pytest.mark.parametrize(("text", "expected"), [
    ("/x/main: error while loading shared libraries: libq.so.1: cannot open shared object "
     "file: No such file or directory", ("missing-library", "libq.so.1")),
    ("/x/main: error while loading shared libraries: libq.so: cannot open shared object file",
     ("missing-library", "libq.so")),
    ("/x/main: error while loading shared libraries: libq.so: wrong ELF class: ELFCLASS32",
     ("missing-library", "libq.so")),
    ("/x/main: error while loading shared libraries: /x/d/libq.so: invalid ELF header",
     ("unreadable-file", "/x/d/libq.so")),
    ("/x/main: /x/d/libv.so: version `V_2' not found (required by /x/main)",
     ("missing-version", "V_2", "/x/d/libv.so", "/x/main")),
    ("/x/main: symbol lookup error: /x/d/liba.so: undefined symbol: g, version V_1",
     ("unresolved", "/x/d/liba.so", "g", "V_1")),
    ("/x/d/liba.so: undefined symbol: g", ("unresolved", "/x/d/liba.so", "g", "")),
    ("Inconsistency detected by ld.so: dl-lookup.c: 107: check_match: Assertion `x' failed!",
     ("assert",)),
    ("     123:\tbinding file a [0] to b [0]: normal symbol `g'\n"
     "ERROR: ld.so: object 'libp.so' from LD_PRELOAD cannot be preloaded (cannot open shared "
     "object file): ignored.", None),
])
def test_loader_messages_are_classified(text: str, expected: tuple[str, ...] | None) -> None:
    """The real loader's error lines normalise to the keys the model's problems map to."""
    assert classify_error(text) == expected


def test_every_aspect_is_compared_somewhere(tmp_path: Path) -> None:
    """A small mixed batch (exec, lazy failure, dlopen) exercises every compared aspect."""
    names = {"chain_rpath", "unresolved_plt_is_lazy", "dlopen_global_visible"}
    scenarios = [s for s in features() if s.name in names]
    results = _run("aspects", scenarios, tmp_path)
    compared = {aspect for c in results for aspect in c.aspects}
    assert compared == set(ASPECTS)
    assert not [describe(c) for c in results if c.failures()]
