"""Running the real programs under the real ld.so (trace, plain, call, now; dlopen hosts) and reading back what happened."""
from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field

from tests.loader_oracle.build import Built
from tests.loader_oracle.spec import RTLD, VDSO, Dlopen, Scenario


@dataclass
class Outcome:
    """One real run: did main start / finish, exit status, the loader's error."""

    started: bool
    ended: bool
    rc: int
    error: tuple[str, ...] | None
    stderr: str


@dataclass
class Facts:
    """What a load comes to, in a form both sides can be normalised into."""

    libs: list[tuple[str, str]] = field(default_factory=list)  # (first name, path), load order
    missing: set[str] = field(default_factory=set)
    undefined: set[tuple[str, str]] = field(default_factory=set)  # (referrer, symbol)
    undefined_versions: set[tuple[str, str, str]] = field(default_factory=set)
    versions: set[tuple[str, str, str]] = field(default_factory=set)  # (version, file, requirer)
    noversion: set[tuple[str, str]] = field(default_factory=set)  # (file, requirer)
    bindings: set[tuple[str, str, str | None, str]] = field(default_factory=set)
    fatal: tuple[str, ...] | None = None  # a fatal loader error that stopped the trace
    asserted: bool = False  # ld.so died on an assertion
    crashed: bool = False  # the trace run died on a signal (trace mode without libc)


@dataclass
class Observation:
    """Everything observed of one scenario."""

    facts: Facts
    runs: dict[str, Outcome]
    dl_ok: bool | None = None  # dlopen scenarios: target dlopen succeeded
    dl_error: tuple[str, ...] | None = None
    dl_objects: list[str] = field(default_factory=list)  # new objects of the target dlopen
    dl_call: Outcome | None = None
    dl_prior_failed: bool = False  # an earlier (non-target) dlopen failed: outside the model
    dl_bind_ok: bool = False  # the LD_BIND_NOW=1 run got through the target dlopen


_BINDING = re.compile(
    r"^\s*\d+:\s+binding file (.+?) \[\d+\] to (.+?) \[\d+\]: (?:normal|protected) symbol "
    r"`(.+?)'(?: \[(.+?)\])?$"
)
_TRACE_FOUND = re.compile(r"^\t(\S+) => (\S+) \(0x[0-9a-f]+\)$")
_TRACE_MISSING = re.compile(r"^\t(\S+) => not found$")
_TRACE_DIRECT = re.compile(r"^\t(\S+) \(0x[0-9a-f]+\)$")
_UNDEF_TRACE = re.compile(r"^undefined symbol: (\S+?)(?:, version (\S+))?\t\((.+)\)$")
_VERSION = re.compile(r"^(?:.*?: )?(\S+): version `(.+?)' not found \(required by (.+?)\)$")
_NOVERSION = re.compile(r"^(?:.*?: )?(\S+): no version information available \(required by (.+?)\)$")


def classify_error(text: str) -> tuple[str, ...] | None:
    """The loader's (first) fatal error in stderr or a dlerror() string, normalised."""
    for line in text.splitlines():
        if re.match(r"^\s*\d+:\s", line) or line.startswith("ERROR: ld.so: object"):
            continue
        if "Inconsistency detected by ld.so" in line:
            return ("assert",)
        m = re.search(r"(?:error while loading shared libraries: |^)(\S+): cannot open shared "
                      r"object file(?:: .*)?$", line)
        if m:
            return ("missing-library", m.group(1))
        m = re.search(r"(?:error while loading shared libraries: |^)(\S+): wrong ELF class", line)
        if m:
            return ("missing-library", m.group(1))
        m = re.search(r"(?:error while loading shared libraries: |^)(\S+): "
                      r"(invalid ELF header|file too short)$", line)
        if m:
            return ("unreadable-file", m.group(1))
        m = re.search(r"(?:symbol lookup error: |^)(\S+): undefined symbol: (\S+?)"
                      r"(?:, version (\S+))?$", line)
        if m:
            return ("unresolved", m.group(1), m.group(2), m.group(3) or "")
        m = _VERSION.match(line)
        if m:
            return ("missing-version", m.group(2), m.group(1), m.group(3))
    return None


def _runner(b: Built) -> Callable[[list[str], dict[str, str]], subprocess.CompletedProcess[str]]:
    def go(argv: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
        cwd = b.root
        if b.chroot:
            base = str(b.world_root)

            def enter() -> None:
                os.chroot(base)
                os.chdir(cwd)

            return subprocess.run(argv, env=env, preexec_fn=enter, capture_output=True,
                                  text=True, timeout=30)
        return subprocess.run(argv, env=env, cwd=cwd, capture_output=True, text=True,
                              timeout=30)
    return go


def base_env(scn: Scenario, extra: dict[str, str] | None = None) -> dict[str, str]:
    """The environment of the real process (also given to the model)."""
    env = {"PATH": "/usr/bin:/bin"}
    if scn.llp is not None:
        env["LD_LIBRARY_PATH"] = ":".join(scn.llp)
    if scn.preload:
        env["LD_PRELOAD"] = " ".join(scn.preload)
    env.update(extra or {})
    return env


def _outcome(proc: subprocess.CompletedProcess[str]) -> Outcome:
    out = proc.stdout.splitlines()
    return Outcome("START" in out, "END" in out, proc.returncode, classify_error(proc.stderr),
                   proc.stderr)


def _bindings(text: str, within: str) -> set[tuple[str, str, str | None, str]]:
    found = set()
    for line in text.splitlines():
        m = _BINDING.match(line)
        if m and m.group(1).startswith(within):
            found.add((m.group(1), m.group(3), m.group(4), m.group(2)))
    return found


def observe(b: Built) -> Observation:
    """Run the real loader on a built scenario."""
    scn = b.scenario
    go = _runner(b)
    if scn.dlopen is not None:
        return _observe_dlopen(b, go)
    calls = ["call", *sorted({f"{lib.stem}_all" for lib in scn.libs if lib.soname})]
    facts = Facts()
    proc = go([b.program], base_env(scn, {
        "LD_TRACE_LOADED_OBJECTS": "1", "LD_WARN": "1", "LD_BIND_NOW": "1",
        "LD_DEBUG": "bindings"}))
    for line in proc.stdout.splitlines():
        m = _TRACE_FOUND.match(line)
        if m:
            if m.group(2) != RTLD and m.group(1) != VDSO:
                facts.libs.append((m.group(1), m.group(2)))
            continue
        m = _TRACE_MISSING.match(line)
        if m:
            facts.missing.add(m.group(1))
            continue
        m = _TRACE_DIRECT.match(line)
        if m and m.group(1) not in (RTLD, VDSO):
            facts.libs.append((m.group(1), m.group(1)))
    for line in proc.stderr.splitlines():
        m = _UNDEF_TRACE.match(line)
        if m:
            facts.undefined.add((m.group(3), m.group(1)))
            if m.group(2):
                facts.undefined_versions.add((m.group(3), m.group(1), m.group(2)))
            continue
        m = _VERSION.match(line)
        if m:
            facts.versions.add((m.group(2), m.group(1), m.group(3)))
            continue
        m = _NOVERSION.match(line)
        if m:
            facts.noversion.add((m.group(1), m.group(2)))
            continue
        if "Inconsistency detected by ld.so" in line:
            facts.asserted = True
    facts.bindings = _bindings(proc.stderr, b.root + "/")
    facts.crashed = proc.returncode < 0
    if proc.returncode > 0 and not facts.libs and not facts.asserted:
        facts.fatal = classify_error(proc.stderr) or ("rc", str(proc.returncode))
    runs = {
        "plain": _outcome(go([b.program], base_env(scn))),
        "call": _outcome(go([b.program, *calls], base_env(scn))),
        "now": _outcome(go([b.program, *calls], base_env(scn, {"LD_BIND_NOW": "1"}))),
    }
    return Observation(facts, runs)


def _dl_args(d: Dlopen, now: bool) -> list[str]:
    args = [f"L:{p}" for p in d.local] + [f"G:{p}" for p in d.glob]
    args.append(("n:" if now else "l:") + d.target)
    return args


def _observe_dlopen(b: Built, go: Callable[..., subprocess.CompletedProcess[str]]) -> Observation:
    scn = b.scenario
    d = scn.dlopen
    assert d is not None
    calls = [f"C:{lib.stem}_all" for lib in scn.libs if lib.soname]
    obs = Observation(Facts(), {})
    proc = go([b.program, *_dl_args(d, d.now), *calls], base_env(scn))
    lines = proc.stdout.splitlines()
    lists: list[list[str]] = []
    current: list[str] = []
    for line in lines:
        if line.startswith("OBJ "):
            current.append(line[4:])
        elif line == "LIST":
            lists.append(current)
            current = []
    target_line = f"OK {d.target}"
    if target_line in lines:
        obs.dl_ok = True
        before = set(lists[-2]) if len(lists) >= 2 else set()
        obs.dl_objects = [o for o in lists[-1] if o not in before and o.startswith(b.root + "/")]
    else:
        err = next((ln[4:] for ln in lines if ln.startswith("ERR ")), None)
        obs.dl_prior_failed = sum(ln.startswith("OK ") for ln in lines) < len(d.local) + len(d.glob)
        obs.dl_ok = False
        obs.dl_error = classify_error(err) if err is not None else ("no-output", proc.stderr)
    call_lines = [ln for ln in lines if ln.startswith(("CALL ", "RET "))]
    called = [ln for ln in call_lines if ln.startswith("CALL ")]
    finished = "END" in lines
    obs.dl_call = Outcome(bool(called), finished, proc.returncode,
                          classify_error(proc.stderr), proc.stderr)
    if obs.dl_ok:
        obs.dl_bind_ok = False
        bind = go([b.program, *_dl_args(d, d.now)],
                  base_env(scn, {"LD_BIND_NOW": "1", "LD_DEBUG": "bindings"}))
        if f"OK {d.target}" in bind.stdout.splitlines():
            obs.dl_bind_ok = True
            marker = f"DLOPEN {d.target}"
            tail = bind.stderr[bind.stderr.rindex(marker):] if marker in bind.stderr else ""
            obs.facts.bindings = {x for x in _bindings(tail, b.root + "/")
                                  if x[0] in obs.dl_objects}
    return obs
