"""What ldscope's loader model says of the same scenario, in the same terms."""
from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass, field

from ldscope.loader import (
    Host,
    HostKind,
    ImageCache,
    LoadEnvironment,
    LoaderModel,
    LoadReport,
    Problem,
    make_environment,
)
from ldscope.system import read_cpu_features
from ldscope.vocab import FoundVia, ProblemKind, When
from tests.loader_oracle.build import Built
from tests.loader_oracle.observe import _NOVERSION, Facts, base_env
from tests.loader_oracle.spec import RTLD


@dataclass
class Prediction:
    """The model's reports, normalised."""

    facts: Facts
    load_errors: set[tuple[str, ...]]
    call_errors: set[tuple[str, ...]]
    now_errors: set[tuple[str, ...]]
    report: LoadReport
    dl_objects: list[str] = field(default_factory=list)
    requesters: dict[str, set[str]] = field(default_factory=dict)  # missing name -> requesters
    # The scan's binding path (record_bindings=False: cached array binding), LD_BIND_NOW=1.
    scan_errors: set[tuple[str, ...]] = field(default_factory=set)


_IMAGES = ImageCache()


def _problem_key(p: Problem) -> tuple[str, ...]:
    if p.kind == ProblemKind.MISSING_LIBRARY:
        return ("missing-library", p.library or "")
    if p.kind == ProblemKind.MISSING_VERSION:
        return ("missing-version", p.version or "", p.library or "", p.file)
    if p.kind == ProblemKind.LOADER_ASSERTION:
        return ("assert",)
    if p.kind == ProblemKind.UNRESOLVED_SYMBOL:
        return ("unresolved", p.file, p.symbol or "", p.version or "")
    if p.kind in (ProblemKind.UNREADABLE_FILE, ProblemKind.WRONG_ARCHITECTURE):
        return ("unreadable-file", p.tried[-1].path if p.tried else p.library or "")
    return (p.kind, p.message)


def model_env(b: Built, extra: dict[str, str] | None = None) -> LoadEnvironment:
    """The model's environment for a built scenario."""
    overrides = [f"{k}={v}" for k, v in base_env(b.scenario, extra).items()]
    env = make_environment(overrides=overrides, clear=True,
                           root=str(b.world_root) if b.chroot else None)
    if b.chroot:
        try:  # the sysroot runs on this CPU: same glibc-hwcaps subdirectories
            env.cpu = read_cpu_features()
        except (OSError, ValueError):
            env.cpu = None
    return env


def _errors(report: LoadReport, when: Iterable[str]) -> set[tuple[str, ...]]:
    wanted = set(when)
    return {_problem_key(p) for p in report.problems
            if p.severity == "error" and p.when in wanted}


def predict(b: Built) -> Prediction:
    """Run the model on a built scenario (cwd: the scenario root, as the real process)."""
    scn = b.scenario
    old = os.getcwd()
    os.chdir(b.host_root)
    try:
        if scn.dlopen is not None:
            return _predict_dlopen(b)
        report = LoaderModel(model_env(b), _IMAGES).load_executable(b.program)
        now_report = LoaderModel(model_env(b, {"LD_BIND_NOW": "1"}), _IMAGES).load_executable(
            b.program)
        scan_report = LoaderModel(model_env(b, {"LD_BIND_NOW": "1"}), _IMAGES,
                                  record_bindings=False).load_executable(b.program)
    finally:
        os.chdir(old)
    facts = Facts()
    for lib in report.libraries:
        if lib.path is not None and lib.found_via != FoundVia.ALREADY_LOADED and lib.path != RTLD:
            facts.libs.append((lib.name, lib.path))
    within = b.root + "/"
    for p in now_report.problems:
        if p.severity != "error":
            if p.kind == ProblemKind.NO_VERSION_INFORMATION:
                m = _NOVERSION.match(p.message)
                if m:
                    facts.noversion.add((m.group(1), m.group(2)))
            continue
        if p.kind == ProblemKind.MISSING_LIBRARY:
            facts.missing.add(p.library or "")
        elif p.kind == ProblemKind.MISSING_VERSION:
            facts.versions.add((p.version or "", p.library or "", p.file))
        elif p.kind == ProblemKind.UNRESOLVED_SYMBOL:
            facts.undefined.add((p.file, p.symbol or ""))
            if p.version:
                facts.undefined_versions.add((p.file, p.symbol or "", p.version))
        elif p.kind == ProblemKind.LOADER_ASSERTION:
            facts.asserted = True
        if (p.kind in (ProblemKind.UNREADABLE_FILE, ProblemKind.WRONG_ARCHITECTURE) and p.when == When.LOAD
                and facts.fatal is None):
            facts.fatal = _problem_key(p)  # ld.so stops at the first one
    facts.bindings = {(x.referrer, x.symbol, x.version, x.provider) for x in now_report.bindings
                      if x.provider is not None and x.referrer.startswith(within)}
    requesters: dict[str, set[str]] = {}
    for x in now_report.libraries:
        if x.path is None:
            requesters.setdefault(x.name, set()).update(x.needed_by)
    return Prediction(facts, _errors(report, [When.LOAD]),
                      _errors(report, [When.FIRST_CALL]),
                      _errors(now_report, [When.LOAD, When.FIRST_CALL]), report,
                      requesters=requesters,
                      scan_errors=_errors(scan_report, [When.LOAD, When.FIRST_CALL]))


def _predict_dlopen(b: Built) -> Prediction:
    scn = b.scenario
    d = scn.dlopen
    assert d is not None

    def host(now: bool) -> Host:
        return Host(HostKind.DLOPEN, executable=b.program, now=now, preload=d.glob, loaded=d.local)

    report = LoaderModel(model_env(b), _IMAGES).load_dlopen(d.target, host(d.now))
    now_report = LoaderModel(model_env(b, {"LD_BIND_NOW": "1"}), _IMAGES).load_dlopen(
        d.target, host(True))
    scan_report = LoaderModel(model_env(b, {"LD_BIND_NOW": "1"}), _IMAGES,
                              record_bindings=False).load_dlopen(d.target, host(True))
    facts = Facts()
    within = b.root + "/"
    facts.bindings = {(x.referrer, x.symbol, x.version, x.provider) for x in now_report.bindings
                      if x.provider is not None and x.referrer.startswith(within)}
    pred = Prediction(facts, _errors(report, [When.LOAD]),
                      _errors(report, [When.FIRST_CALL]),
                      _errors(now_report, [When.LOAD, When.FIRST_CALL]), report,
                      scan_errors=_errors(scan_report, [When.LOAD, When.FIRST_CALL]))
    prior = set()
    for name in (*d.local, *d.glob):
        lib = next((x for x in report.libraries if x.name == name and x.path), None)
        if lib is not None:
            prior.add(lib.path)
    # objects new with the target: everything after the last earlier dlopen's closure
    order = [p for p in report.load_order if p.startswith(within)]
    target_lib = next((x for x in report.libraries if x.name == d.target), None)
    if (target_lib is not None and target_lib.path in order
            and target_lib.found_via != FoundVia.ALREADY_LOADED):
        pred.dl_objects = order[order.index(target_lib.path):]
    return pred
