"""Comparing observation and prediction aspect by aspect, checking hand-written expectations, and running batches."""
from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from tests.loader_oracle.build import Built, WorldBuilder
from tests.loader_oracle.observe import Facts, Observation, Outcome, observe
from tests.loader_oracle.predict import Prediction, predict
from tests.loader_oracle.spec import Scenario

ASPECTS = ("paths", "missing", "loads", "unresolved", "versions", "noversion", "timing",
           "bindings", "first-error", "scan")


def compare(obs: Observation, pred: Prediction) -> dict[str, list[str]]:
    """Per aspect, the disagreements (empty list: agreement; aspect absent: not compared)."""
    if pred.report.target and obs.runs:
        return _compare_exec(obs, pred)
    return _compare_dlopen(obs, pred)


def _diff(a: object, b: object, what: str) -> list[str]:
    if a == b:
        return []
    if isinstance(a, set) and isinstance(b, set):
        return [f"{what}: real-only {sorted(a - b, key=str)}; model-only {sorted(b - a, key=str)}"]
    return [f"{what}: real {a!r} != model {b!r}"]


def _compare_exec(obs: Observation, pred: Prediction) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    real, model = obs.facts, pred.facts
    plain = obs.runs["plain"]
    if real.crashed:
        pass  # ld.so's trace mode crashes when libc itself is missing: the runs below decide
    elif real.fatal is not None or model.fatal is not None:
        out["paths"] = _diff(real.fatal, model.fatal, "fatal error stopping the load")
    else:
        out["paths"] = _diff(real.libs, model.libs, "libraries (name, path) in load order")
        out["missing"] = _diff(real.missing, model.missing, "missing libraries")
        out["unresolved"] = _diff(real.asserted, model.asserted, "ld.so assertion in check_match")
        # Trace mode replaces a missing library by a fake map and then looks up the
        # references of its requesters without their versions (dl-version.c skips faked
        # maps): a normal run stops at the missing library, so leave those requesters out.
        faked = {r for name in real.missing for r in pred.requesters.get(name, ())}
        if faked:
            real = Facts(undefined={u for u in real.undefined if u[0] not in faked},
                         bindings={x for x in real.bindings if x[0] not in faked},
                         missing=real.missing, asserted=real.asserted)
            model = Facts(undefined={u for u in model.undefined if u[0] not in faked},
                          bindings={x for x in model.bindings if x[0] not in faked},
                          missing=model.missing, asserted=model.asserted)
        if not real.asserted:
            out["unresolved"] += _diff(real.undefined, model.undefined, "undefined symbols")
            if not real.missing:  # trace mode drops versions of references to faked maps
                out["unresolved"] += _diff(real.undefined_versions, model.undefined_versions,
                                           "undefined symbol versions")
            if real.missing:
                # A reference whose verneed names a library that trace mode faked as "not
                # found" is looked up without its version: compare providers only.
                out["bindings"] = _diff({x[:2] + x[3:] for x in real.bindings},
                                        {x[:2] + x[3:] for x in model.bindings}, "bindings")
            else:
                out["bindings"] = _diff(real.bindings, model.bindings, "bindings")
        # Version checks against a name that trace mode faked are skipped (dl-version.c).
        versions = {v for v in pred.facts.versions
                    if os.path.basename(v[1]) not in obs.facts.missing}
        out["versions"] = _diff(obs.facts.versions, versions, "missing versions")
        out["noversion"] = _diff(obs.facts.noversion, pred.facts.noversion,
                                 "no version information")
    out["loads"] = _diff(plain.started, not pred.load_errors, "main started")
    timing: list[str] = []
    call = obs.runs["call"]
    want_call = "load" if pred.load_errors else ("call" if pred.call_errors else "ok")
    got_call = "load" if not call.started else ("ok" if call.ended else "call")
    timing += _diff(got_call, want_call, "lazy run with calls fails at")
    now = obs.runs["now"]
    want_now = "load" if pred.now_errors else "ok"
    got_now = "load" if not now.started else ("ok" if now.ended else "call")
    timing += _diff(got_now, want_now, "LD_BIND_NOW run fails at")
    out["timing"] = timing
    # The scan binds through cached arrays, not reference by reference: the LD_BIND_NOW
    # run must agree with it too, and so must its undefined symbols (check_match's
    # assertion is only modelled reference by reference).
    if not real.asserted:
        out["scan"] = _diff(got_now, "load" if pred.scan_errors else "ok",
                            "LD_BIND_NOW run fails at (scan binding)")
        if not real.crashed and real.fatal is None and model.fatal is None and not real.missing:
            scan_undefined = {(e[1], e[2]) for e in pred.scan_errors if e[0] == "unresolved"}
            out["scan"] += _diff(real.undefined, scan_undefined, "undefined symbols (scan binding)")
    first: list[str] = []
    for label, run_, allowed in (("plain", plain, pred.load_errors),
                                 ("call", call, pred.load_errors | pred.call_errors),
                                 ("now", now, pred.now_errors)):
        if run_.ended:
            continue
        if run_.error is None or run_.error not in allowed:
            first.append(f"{label} run error {run_.error} not among model errors "
                         f"{sorted(allowed)} (stderr: {run_.stderr.strip()[-300:]!r})")
    out["first-error"] = first
    return out


def _compare_dlopen(obs: Observation, pred: Prediction) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    if obs.dl_prior_failed:
        return out  # the model takes earlier dlopens as given: nothing to compare
    want_ok = not pred.load_errors
    out["loads"] = _diff(obs.dl_ok, want_ok, "dlopen succeeded")
    if obs.dl_ok and want_ok:
        out["paths"] = _diff(obs.dl_objects, pred.dl_objects, "new objects in load order")
        if obs.dl_bind_ok:
            out["bindings"] = _diff(obs.facts.bindings, pred.facts.bindings,
                                    "bindings (RTLD_NOW)")
        # LD_BIND_NOW also binds the earlier dlopens, which the model takes as given: compare
        # the scan's binding with the reference-at-a-time model (checked above) instead.
        out["scan"] = _diff(pred.now_errors, pred.scan_errors, "RTLD_NOW errors (scan binding)")
        call = obs.dl_call
        assert call is not None
        want = "call" if pred.call_errors else "ok"
        got = "ok" if call.ended else "call"
        out["timing"] = _diff(got, want, "calls after dlopen fail")
        if not call.ended:
            out["first-error"] = ([] if call.error in pred.call_errors else
                                  [f"call error {call.error} not among {sorted(pred.call_errors)}"])
    elif not obs.dl_ok:
        out["first-error"] = ([] if obs.dl_error in pred.load_errors else
                              [f"dlerror {obs.dl_error} not among {sorted(pred.load_errors)}"])
    return out


# --------------------------------------------------------------------------- expectations


def _run_state(o: Outcome) -> str:
    return "load" if not o.started else ("ok" if o.ended else "call")


def check_expectations(b: Built, obs: Observation) -> list[str]:
    """What a hand-written scenario says the real loader does, checked against the observation.

    Forms ({P}/{S} already expanded): `path:NAME=PATH`, `missing:NAME`, `plain|call|now:STATE`
    (STATE: ok, load = dies before main, call = dies at a call), `error:KIND` (plain run),
    `bind:REFERRER|SYMBOL|PROVIDER`, `nobind:REFERRER|SYMBOL`, `dl:ok|fail`, `dlerr:KIND`,
    `dlcall:ok|call`, `assert`.
    """
    failures = []
    real = obs.facts
    for item in b.scenario.expect:
        what, _, arg = item.partition(":")
        ok = True
        if what == "path":
            name, _, path = arg.partition("=")
            ok = (name, path) in real.libs or (what == "path" and path in obs.dl_objects)
        elif what == "missing":
            ok = arg in real.missing
        elif what in ("plain", "call", "now"):
            ok = _run_state(obs.runs[what]) == arg
        elif what == "error":
            err = obs.runs["plain"].error
            ok = err is not None and err[0] == arg
        elif what in ("bind", "nobind"):
            ref, sym, prov = [*arg.split("|"), ""][:3]
            hits = {x[3] for x in real.bindings if x[0] == ref and x[1] == sym}
            ok = prov in hits if what == "bind" else not hits
        elif what == "dl":
            ok = obs.dl_ok is (arg == "ok")
        elif what == "dlerr":
            ok = obs.dl_error is not None and obs.dl_error[0] == arg
        elif what == "dlcall":
            ok = obs.dl_call is not None and (obs.dl_call.ended == (arg == "ok"))
        elif what == "assert":
            ok = real.asserted or any(o.error == ("assert",) for o in obs.runs.values())
        else:
            raise ValueError(f"unknown expectation {item!r}")
        if not ok:
            failures.append(f"expected {item}")
    return failures


# ------------------------------------------------------------------------------- batches


@dataclass
class Checked:
    """One scenario built, observed, predicted and compared."""

    built: Built
    observation: Observation
    aspects: dict[str, list[str]]  # aspect -> disagreements (absent: not compared)
    expectations: list[str]  # unmet expectations of a hand-written scenario

    def failures(self) -> list[str]:
        """Every disagreement and unmet expectation, one line each."""
        out = [f"{k}: {m}" for k, v in self.aspects.items() for m in v]
        out += self.expectations + self.built.problems
        return out


def run_batch(scenarios: Sequence[Scenario], base: Path) -> list[Checked]:
    """Build every scenario (one directory per world), run the real loader and the model."""
    host = [s for s in scenarios if s.world == "host"]
    chroot = [s for s in scenarios if s.world == "chroot"]
    built: list[Built] = []
    if host:
        built += WorldBuilder(base / "host", chroot=False).build(host)
    if chroot:
        built += WorldBuilder(base / "root", chroot=True).build(chroot)
    checked = []
    for b in built:
        obs = observe(b)
        pred = predict(b)
        checked.append(Checked(b, obs, compare(obs, pred), check_expectations(b, obs)))
    return checked


def describe(c: Checked) -> str:
    """A failure report for one scenario."""
    s = c.built.scenario
    lines = [f"scenario {s.name} ({s.world}, {'dlopen' if s.dlopen else 'exec'}) in "
             f"{c.built.host_root}"]
    lines += [f"  {f}"[:2000] for f in c.failures()]
    return "\n".join(lines)
