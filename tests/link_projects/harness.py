"""Link every mutated project line with the four real linkers and with ldscope; compare.

For each (variant, linker): the real link runs as the driver command with `-fuse-ld=LINKER` and
its `-o` pointed into a temporary directory (the build tree is never written), in the command's
own directory; its stderr is read by tests/link_oracle.parse.  ldscope predicts the same command
(`resolve_link_line(argv, cwd, linker=LINKER)`, `build_report(..., fix=True)`).  They agree when
the verdicts match and so do the sets of (kind, symbol) facts for undefined references,
missing DSOs, shared-library undefineds, multiple definitions and missing inputs (symbols
demangled, versions stripped; referrers are recorded but not compared).  A real failure the
oracle cannot read (no such fact: a relocation or static-link error) is compared on its verdict
alone and counted as `verdict_only`.

When ldscope predicts failure with undefined references and offers a fix that links alone, the
fix's command (`user_argv`, else the linker `argv`) is run by the real linker too: `fix_links`.

The real linkers' results depend only on the toolchain, which is in the cache key, so they are
cached beside the builds (`real-PROJECT.json`); ldscope's predictions are made afresh each run.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path

from ldscope.analysis import build_report
from ldscope.cxx import demangle_like_linkers
from ldscope.linker.frontend import DriverRefusedError, resolve_link_line
from tests.link_oracle import parse
from tests.link_projects.mutations import Mutation, project_mutations
from tests.link_projects.sources import Project, _locked, cache_root

LINKERS = ("bfd", "gold", "lld", "mold")
COMPARED = ("undefined-reference", "dso-missing", "shlib-undefined", "multiple-definition", "missing-input")
FIRST_LINES = 3


@dataclass
class Outcome:
    """One (variant, linker) comparison."""

    project: str
    mutation: str
    command: int
    linker: str
    argv: list[str]  # as run (PROJECT = the project's root), -o into a temporary directory
    cwd: str  # relative to the project root
    real_rc: int
    real_first: list[str]
    real_facts: list[list[str]]  # [kind, symbol]
    predicted_links: bool
    predicted_first: list[str]
    predicted_facts: list[list[str]]
    agree: bool
    verdict_only: bool = False
    fix: str | None = None  # the fix ldscope offered (its description), run for real
    fix_argv: list[str] = field(default_factory=list)
    fix_links: bool | None = None
    fix_first: list[str] = field(default_factory=list)
    error: str | None = None  # ldscope raised: the exception, first line

    @property
    def missing_library(self) -> bool:
        """A library dropped or misplaced, and the real link failed on undefined symbols: the
        failures whose fix (add or move the library) the real linker must confirm."""
        return (self.mutation.startswith(("drop -l", "drop lib", "move ")) and self.real_rc != 0
                and any(k in ("undefined-reference", "dso-missing") for k, _ in self.real_facts))

    @property
    def key(self) -> str:
        """`project/command:mutation/linker`: the name of a known disagreement."""
        return f"{self.project}/{self.command}:{self.mutation}/{self.linker}"


def _as_compared(kind: str) -> str:
    """A hidden symbol left undefined is an undefined reference in every linker's words."""
    return "undefined-reference" if kind == "hidden-undefined" else kind


def _sym(s: str) -> str:
    s = s.split("@", 1)[0]
    if s.startswith("_Z"):
        return demangle_like_linkers(s) or s  # as the linkers print names (std::istream)
    return s


def real_facts(linker: str, stderr: str) -> set[tuple[str, str]]:
    """The oracle's (kind, symbol) facts from a real linker's stderr."""
    if linker == "lld":  # a cross link's lld names itself as run: `aarch64-linux-gnu-ld.lld: `
        stderr = re.sub(r"(?m)^\S*-ld\.lld: ", "ld.lld: ", stderr)
    facts = {(k, "" if k == "missing-input" else _sym(s)) for k, s, _ in parse(linker, stderr).facts
             if k in COMPARED}
    if linker in ("lld", "mold"):
        # lld and mold print the demangled name to the end of the headline, spaces and all
        # (`f(int, char)`), which the oracle's `\S+` cuts; and the oracle reads undefined
        # symbols only through the `>>>   file` lines, so one referenced only by a `>>>
        # referenced by FILE:(fn)` line (no debug info) is lost.  Here the headlines decide.
        facts = {f for f in facts if f[0] not in ("undefined-reference", "multiple-definition")}
        head = linker_prefix(linker)
        for sym in re.findall(rf"(?m)^{head}error: undefined symbol: (.+)$", stderr):
            facts.add(("undefined-reference", _sym(sym.strip())))
        for sym in re.findall(rf"(?m)^{head}error: duplicate symbol: (.+)$", stderr):
            if linker == "mold":  # `mold: error: duplicate symbol: a.o: b.o: SYM`
                sym = re.sub(r"^(?:[^:\s]+(?:\([^)]*\))?: ){2}", "", sym)
            facts.add(("multiple-definition", _sym(sym.strip())))
    return facts


def linker_prefix(linker: str) -> str:
    """How the linker starts its lines (`ld.lld: `, `mold: `)."""
    return {"lld": r"(?:\S*/)?ld\.lld: ", "mold": "mold: "}.get(linker, "")


def _first(text: str) -> list[str]:
    lines = [ln for ln in text.splitlines() if ln.strip() and not ln.startswith("collect2:")]
    return lines[:FIRST_LINES]


def _for_linker(m: Mutation, linker: str, out: str) -> list[str]:
    argv = list(m.argv)
    i = argv.index("-o")
    argv[i + 1] = out
    return [argv[0], f"-fuse-ld={linker}", *argv[1:]]


def link_env(project: Project) -> dict[str, str]:
    """The environment links run in: a cross driver's collect2 looks for `TARGET-ld.lld` and
    `TARGET-ld.mold` on PATH (never the native names), so a cross project's PATH starts with a
    directory of such symlinks, as a user of those linkers would set up."""
    env = {**os.environ, "LC_ALL": "C"}
    target = project.recipe.target
    if target:
        shim = cache_root() / f"shim-{target}"
        shim.mkdir(parents=True, exist_ok=True)
        for name, real in (("ld.lld", "ld.lld"), ("ld.mold", "mold")):
            link = shim / f"{target}-{name}"
            found = shutil.which(real)
            if found and not link.exists():
                link.symlink_to(found)
        env["PATH"] = f"{shim}:{env.get('PATH', '')}"
    return env


def _run(argv: list[str], cwd: Path, env: dict[str, str]) -> tuple[int, str]:
    proc = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=300, env=env)
    return proc.returncode, proc.stderr


def _display(argv: list[str], root: Path, tmp: str) -> list[str]:
    return [w.replace(tmp, "TMP").replace(str(root), "PROJECT") for w in argv]


def _real_cache(project: Project) -> Path:
    return cache_root() / f"real-{project.name}-v2.json"


def run_project(project: Project, linkers: tuple[str, ...] = LINKERS) -> list[Outcome]:
    """Every variant of the project through every linker."""
    cache_file = _real_cache(project)
    with _locked(cache_file.with_suffix(".lock")):
        cache: dict[str, list[object]] = json.loads(cache_file.read_text()) if cache_file.exists() else {}
        outcomes: list[Outcome] = []
        with tempfile.TemporaryDirectory(prefix="ldscope-lp-") as tmp:
            for m in project_mutations(project.links, project.recipe.max_lines):
                for linker in linkers:
                    outcomes.append(_compare(project, m, linker, tmp, cache))
        cache_file.write_text(json.dumps(cache, indent=0, sort_keys=True) + "\n")
    return outcomes


def _cached_run(argv: list[str], cwd: Path, root: Path, tmp: str, cache: dict[str, list[object]],
                env: dict[str, str]) -> tuple[int, str]:
    key = json.dumps([_display(argv, root, tmp), os.path.relpath(cwd, root)])
    if key not in cache:
        rc, err = _run(argv, cwd, env)
        cache[key] = [rc, err.replace(tmp, "TMP")]
    rc, err = cache[key]
    assert isinstance(rc, int) and isinstance(err, str)
    return rc, err


def _compare(project: Project, m: Mutation, linker: str, tmp: str, cache: dict[str, list[object]]) -> Outcome:
    root = project.root
    cwd = root / m.cwd
    out = os.path.join(tmp, f"out-{linker}")
    argv = _for_linker(m, linker, out)
    env = link_env(project)
    rc, err = _cached_run(argv, cwd, root, tmp, cache, env)
    real = real_facts(linker, err)
    shown = _display(argv, root, tmp)
    base = dict(project=project.name, mutation=m.name, command=m.command, linker=linker, argv=shown,
                cwd=m.cwd, real_rc=rc, real_first=_first(err), real_facts=sorted(map(list, real)))
    try:
        report = build_report(resolve_link_line(argv, cwd=str(cwd), linker=linker, env=env),
                              env=env, fix=True)
    except DriverRefusedError as e:  # predicted: the driver stops before any link
        verdict = rc != 0 and not real
        return Outcome(**base, predicted_links=False, predicted_first=[str(e)], predicted_facts=[],  # type: ignore[arg-type]
                       agree=verdict and _first(err)[:1] == [str(e)], verdict_only=verdict)
    except Exception as e:  # a crash is a disagreement, recorded with its message
        return Outcome(**base, predicted_links=False, predicted_first=[], predicted_facts=[],  # type: ignore[arg-type]
                       agree=False, error=f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}")
    shown_errors = [e for e in report.errors if e.shown]
    pred = {(_as_compared(str(e.kind)), "" if str(e.kind) == "missing-input" else _sym(e.symbol or ""))
            for e in shown_errors if _as_compared(str(e.kind)) in COMPARED}
    verdict = (rc == 0) == report.links
    verdict_only = rc != 0 and not real
    agree = verdict and (verdict_only or real == pred)
    if verdict_only and pred:
        agree = False  # ldscope names symbols the real linker never printed
    o = Outcome(**base, predicted_links=report.links,  # type: ignore[arg-type]
                predicted_first=[e.message.splitlines()[0] for e in shown_errors][:FIRST_LINES],
                predicted_facts=sorted(map(list, pred)), agree=agree, verdict_only=verdict_only and agree)
    if not report.links and any(str(e.kind) in ("undefined-reference", "dso-missing") for e in shown_errors):
        fix = next((f for f in report.fixes if f.fixes_alone), None)
        if fix is not None:
            fargv = list(fix.user_argv or fix.argv)
            if "-o" in fargv:
                fargv[fargv.index("-o") + 1] = out + "-fix"
            frc, ferr = _cached_run(fargv, cwd, root, tmp, cache, env)
            o.fix = fix.user_description or fix.description
            o.fix_argv = _display(fargv, root, tmp)
            o.fix_links = frc == 0
            o.fix_first = _first(ferr)
    return o


def table(outcomes: list[Outcome]) -> dict[str, dict[str, list[int]]]:
    """{project: {linker: [agree, total]}} and the `all` row."""
    t: dict[str, dict[str, list[int]]] = {}
    for o in outcomes:
        for row in (o.project, "all"):
            cell = t.setdefault(row, {}).setdefault(o.linker, [0, 0])
            cell[0] += o.agree
            cell[1] += 1
    return t


def write_regressions(outcomes: list[Outcome], path: Path) -> None:
    """Every disagreement, every fix that did not link and every missing-library failure
    without a verified fix, as JSON."""
    bad = [asdict(o) | {"key": o.key, "missing_library": o.missing_library} for o in outcomes
           if not o.agree or o.fix_links is False or (o.missing_library and o.fix_links is not True)]
    path.write_text(json.dumps(bad, indent=1) + "\n")


def run_case(project: Project, key: str) -> Outcome:
    """One (variant, linker) by its key `project/command:mutation/linker`, run again."""
    head, linker = key.rsplit("/", 1)
    command, mutation = head.split("/", 1)[1].split(":", 1)
    m = next(m for m in project_mutations(project.links, project.recipe.max_lines) if m.command == int(command) and m.name == mutation)
    cache_file = _real_cache(project)
    with _locked(cache_file.with_suffix(".lock")):
        cache: dict[str, list[object]] = json.loads(cache_file.read_text()) if cache_file.exists() else {}
    with tempfile.TemporaryDirectory(prefix="ldscope-lp-") as tmp:
        return _compare(project, m, linker, tmp, cache)
