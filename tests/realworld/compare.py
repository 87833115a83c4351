"""ldscope's scan of a corpus environment beside the truth (truth.py): agreements and the rest.

A *false positive* is a file ldscope says does not load while its import (or dlopen) works; a
*false negative* is a file ldscope says loads while the truth fails.  Files are matched by real
path; executables (no truth: never run) and timeouts (`ok: null`) are not compared.  Each
disagreement carries the truth's error and ldscope's problems and finding titles, and an
*apparent cause* (`apparent_cause`) under which the report groups them.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from tests.realworld.corpus import Breakage

Doc = dict[str, object]

# What glibc's loader says when dlopen fails (a failure a loader model can predict).
LOADER_ERROR = re.compile(
    r"cannot open shared object file|undefined symbol|version `[^']+' not found|wrong ELF class"
    r"|invalid ELF header|file too short|cannot enable executable stack|static TLS block"
    r"|ELF load command|no version information available|symbol lookup error|cannot map zero-fill")


def scan_command(env_path: Path | str) -> list[str]:
    """The scan compared: `python3 -m ldscope scan ENV --format json -j 1`."""
    return [sys.executable, "-m", "ldscope", "scan", str(env_path), "--format", "json", "-j", "1"]


def run_scan(env_path: Path | str, timeout: float = 900) -> Doc:
    """ldscope's scan document for an environment (its own process, as a user runs it)."""
    proc = subprocess.run(scan_command(env_path), capture_output=True, text=True, timeout=timeout)
    if proc.returncode not in (0, 1) or not proc.stdout.lstrip().startswith("{"):
        raise AssertionError(f"ldscope scan {env_path} exited {proc.returncode}:\n{proc.stderr[-3000:]}")
    doc: Doc = json.loads(proc.stdout)
    return doc


def _list(doc: Doc, key: str) -> list[dict[str, object]]:
    value = doc.get(key, [])
    assert isinstance(value, list), f"{key} is not a list"
    return value


def _opt(entry: dict[str, object], key: str) -> str | None:
    value = entry.get(key)
    return None if value is None else str(value)


def first_line(text: object, limit: int = 240) -> str:
    """The first non-empty line of an error text, shortened."""
    for line in str(text or "").splitlines():
        if line.strip():
            line = line.strip()
            return line if len(line) <= limit else line[:limit - 1] + "…"
    return ""


@dataclass(frozen=True)
class Disagreement:
    """One file on which ldscope and the truth differ."""

    verdict: str  # false-positive | false-negative
    path: str
    rel: str
    ldscope_kind: str
    truth_kind: str | None
    dist: str | None
    truth_status: str
    truth_stage: str | None
    truth_test: str | None
    truth_error: str  # the root error, first line
    ldscope_problems: tuple[str, ...]  # its error problems' messages
    ldscope_findings: tuple[str, ...]  # titles of the findings naming the file
    cause: str

    def describe(self) -> str:
        """A few lines: the file, what the truth did and said, what ldscope said."""
        who = f"{self.dist} " if self.dist else ""
        lines = [f"{self.verdict}: {self.rel} ({who}{self.ldscope_kind}; truth {self.truth_kind})",
                 f"    truth: {self.truth_status} at {self.truth_stage} by `{self.truth_test}`"
                 + (f": {self.truth_error}" if self.truth_error else "")]
        if self.ldscope_findings:
            lines += [f"    ldscope finding: {t}" for t in self.ldscope_findings[:3]]
        elif self.ldscope_problems:
            lines += [f"    ldscope problem: {p}" for p in self.ldscope_problems[:3]]
        else:
            lines.append("    ldscope: loads, no problem")
        return "\n".join(lines)


@dataclass
class Comparison:
    """One environment: ldscope's verdicts against the truth."""

    env: str
    native_files: int  # reported by ldscope
    with_truth: int  # truth entries with a verdict (ok true or false)
    compared: int  # files with both
    agree: int
    false_positives: list[Disagreement] = field(default_factory=list)
    false_negatives: list[Disagreement] = field(default_factory=list)
    not_in_scan: list[str] = field(default_factory=list)  # truth has them, ldscope did not report them
    not_in_truth: list[str] = field(default_factory=list)  # ldscope's non-executables the truth never saw
    # ldscope says it loads; the import fails in Python code after dlopen succeeded (a circular
    # import, a missing Python dependency): not a loader failure, so not a false negative.
    python_level: list[Disagreement] = field(default_factory=list)

    @property
    def disagreements(self) -> list[Disagreement]:
        """False positives, then false negatives."""
        return [*self.false_positives, *self.false_negatives]


def normalise(text: str, roots: Sequence[str]) -> str:
    """`text` with the environment's paths written `$SITE/` and `$ENV/` (for grouping)."""
    for root, name in sorted(((r, n) for r, n in zip(roots, ("$SITE", "$ENV")) if r), key=lambda x: -len(x[0])):
        text = text.replace(root.rstrip("/") + "/", name + "/")
    return text


_MISSING = re.compile(r"(\S+): cannot open shared object file")


def apparent_cause(verdict: str, truth: dict[str, object], scan: dict[str, object],
                   findings: Sequence[dict[str, object]], roots: Sequence[str],
                   env_files: frozenset[str] = frozenset()) -> str:
    """A short grouping key for a disagreement: why, apparently, the two differ.  `env_files`:
    the base names of the environment's native files (a library missing from one's search
    path may be in the environment all the same)."""
    error = normalise(first_line(truth.get("root_error") or truth.get("error"), 160), roots)
    if verdict == "false-negative":
        stage = truth.get("stage")
        if truth.get("reason") == "suffix":
            return "wrong tag: no EXTENSION_SUFFIXES entry leaves a module name; Python never imports it"
        if stage == "crashed":
            return f"the import crashes: {error}"
        if stage == "package":
            return f"its package fails to import: {error}"
        loader = bool(LOADER_ERROR.search(error))
        missing = _MISSING.search(error)
        if truth.get("kind") == "library" and missing and not truth.get("already_loaded"):
            where = ("which is in the environment, but only on its loaders' RPATH, not its own search path"
                     if missing.group(1) in env_files else "which is nowhere in the environment")
            return (f"library fails when dlopen'ed by path (RTLD_NOW|RTLD_LOCAL) after importing its package: "
                    f"it needs {missing.group(1)}, {where}")
        if loader:
            return f"the loader refuses it: {error}"
        if truth.get("mapped"):
            return f"Python-level error in the module's init, after dlopen succeeded (not a loader failure): {error}"
        return f"Python-level error in the module's init (not a loader failure): {error}"
    host = str(scan.get("host") or "")
    covering = scan.get("checked_as_part_of")
    context = (f"checked as part of {os.path.basename(str(covering))}" if covering
               else host.split(";")[0] or "no host")
    if findings:
        title = normalise(str(findings[0].get("title")), roots)
        title = re.sub(r"\$(SITE|ENV)/[^\s)]+", "FILE", title)
        title = re.sub(r"\(\d+ symbols?\)", "(N symbols)", title)
        return f"ldscope: {findings[0].get('kind')}: {title} [{context}]"
    problems = [p for p in _list(scan, "problems") if p.get("severity") == "error"]
    if problems:
        return f"ldscope: {problems[0].get('kind')} [{context}]"
    return f"ldscope: does not load, no error problem given [{context}]"


def compare(scan: Doc, truth: Doc) -> Comparison:
    """Set ldscope's scan document beside the truth document of the same environment."""
    env_path = str(truth.get("path", ""))
    roots = (str(truth.get("site", "")), env_path)
    scanned = {os.path.realpath(str(f["path"])): f for f in _list(scan, "files")}
    findings = _list(scan, "findings")
    by_file: dict[str, list[dict[str, object]]] = defaultdict(list)
    for finding in findings:
        files = finding.get("files", [])
        assert isinstance(files, list)
        for p in files:
            by_file[os.path.realpath(str(p))].append(finding)
    truths = {os.path.realpath(str(t["path"])): t for t in _list(truth, "files")}
    env_files = frozenset(os.path.basename(p) for p in truths)
    judged = {p: t for p, t in truths.items() if t.get("ok") is not None}
    out = Comparison(str(truth.get("env", "?")), len(scanned), len(judged), 0, 0)
    out.not_in_scan = sorted(p for p in judged if p not in scanned)
    out.not_in_truth = sorted(p for p, f in scanned.items() if p not in truths and f.get("kind") != "executable")
    for path, t in sorted(judged.items()):
        s = scanned.get(path)
        if s is None:
            continue
        out.compared += 1
        if bool(s["loads"]) == bool(t["ok"]):
            out.agree += 1
            continue
        verdict = "false-negative" if s["loads"] else "false-positive"
        named = by_file.get(path, [])
        d = Disagreement(
            verdict=verdict, path=path, rel=str(t.get("rel")), ldscope_kind=str(s.get("kind")),
            truth_kind=_opt(t, "kind"), dist=_opt(t, "dist"), truth_status=str(t.get("status")),
            truth_stage=_opt(t, "stage"), truth_test=_opt(t, "test"),
            truth_error=normalise(first_line(t.get("root_error") or t.get("error")), roots),
            ldscope_problems=tuple(normalise(first_line(p.get("message")), roots)
                                   for p in _list(s, "problems") if p.get("severity") == "error"),
            ldscope_findings=tuple(normalise(str(f.get("title")), roots) for f in named),
            cause=apparent_cause(verdict, t, s, named, roots, env_files))
        if s["loads"] and t.get("mapped") and not LOADER_ERROR.search(str(t.get("root_error") or t.get("error"))):
            out.python_level.append(d)
            continue
        (out.false_negatives if s["loads"] else out.false_positives).append(d)
    return out


# ------------------------------------------------------------------------------ breakages


def breakage_failures(breakage: Breakage, site: Path, scan: Doc, truth: Doc) -> list[str]:
    """What is wrong with ldscope's report of a breakage (empty: all as expected).

    Each file the breakage names must exist and really fail (the truth: else the breakage is
    not one), must be reported as not loading, and the first finding naming it must mention
    the breakage's subject (its title or one of its problems: message, library, version or
    symbol).
    """
    files = sorted({p for pattern in breakage.files for p in site.glob(pattern)})
    if not files:
        return [f"{breakage.name}: no file matches {breakage.files} in {site}"]
    scanned = {os.path.realpath(str(f["path"])): f for f in _list(scan, "files")}
    truths = {os.path.realpath(str(t["path"])): t for t in _list(truth, "files")}
    out = []
    for path in files:
        real = os.path.realpath(path)
        rel = path.relative_to(site)
        t = truths.get(real)
        if t is None or t.get("ok") is not False:
            out.append(f"{rel}: the truth does not fail ({t and t.get('status')}): the breakage broke nothing")
            continue
        s = scanned.get(real)
        if s is None:
            out.append(f"{rel}: not in ldscope's scan at all")
            continue
        if s.get("loads") is not False:
            out.append(f"{rel}: ldscope says it loads; the truth: {first_line(t.get('root_error') or t.get('error'))}")
            continue
        named = [f for f in _list(scan, "findings") if _names(f, real)]
        if not named:
            out.append(f"{rel}: no finding names it")
            continue
        first = named[0]
        said = [str(first.get("title"))] + [str(p.get(k)) for p in _list(first, "problems")
                                           for k in ("message", "library", "version", "symbol")]
        if not any(breakage.subject in s for s in said):
            out.append(f"{rel}: its first finding does not concern {breakage.subject!r}: {first.get('title')}")
    return out


def _names(finding: dict[str, object], real: str) -> bool:
    files = finding.get("files", [])
    assert isinstance(files, list)
    return any(os.path.realpath(str(p)) == real for p in files)


# ------------------------------------------------------------------------------- rendering


def markdown_table(comparisons: Iterable[Comparison], extra: dict[str, dict[str, str]] | None = None) -> str:
    """One row per environment: counts, and any extra columns given per environment name."""
    rows = list(comparisons)
    extra = extra or {}
    columns = list(next(iter(extra.values()), {}).keys())
    head = ["env", "native files (ldscope)", "with truth", "compared", "agree", "FP", "FN",
            "Python-level", "not in scan", "not in truth", *columns]
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for c in rows:
        cells = [c.env, c.native_files, c.with_truth, c.compared, c.agree, len(c.false_positives),
                 len(c.false_negatives), len(c.python_level), len(c.not_in_scan), len(c.not_in_truth),
                 *(extra.get(c.env, {}).get(col, "") for col in columns)]
        out.append("| " + " | ".join(str(x) for x in cells) + " |")
    return "\n".join(out)


def grouped(comparisons: Iterable[Comparison], examples: int = 3) -> str:
    """Disagreements grouped by apparent cause (count, then `examples` of each)."""
    out = []
    for c in comparisons:
        if not c.disagreements and not c.not_in_scan:
            continue
        out.append(f"## {c.env}: {len(c.false_positives)} false positives, {len(c.false_negatives)} false negatives")
        groups: dict[tuple[str, str], list[Disagreement]] = defaultdict(list)
        for d in c.disagreements:
            groups[(d.verdict, d.cause)].append(d)
        for (verdict, cause), ds in sorted(groups.items(), key=lambda kv: (kv[0][0], -len(kv[1]), kv[0][1])):
            out.append(f"\n### {len(ds)} × {verdict}: {cause}")
            out += [d.describe() for d in ds[:examples]]
            if len(ds) > examples:
                out.append(f"    … and {len(ds) - examples} more: " + ", ".join(d.rel for d in ds[examples:examples + 12])
                           + (" …" if len(ds) > examples + 12 else ""))
        if c.not_in_scan:
            out.append(f"\n### {len(c.not_in_scan)} files with a truth that ldscope did not report")
            out += [f"    {p}" for p in c.not_in_scan]
        out.append("")
    for c in comparisons:
        if c.python_level:
            out.append(f"## {c.env}: {len(c.python_level)} Python-level import failures (not loader failures; not counted)")
            out += [d.describe() for d in c.python_level]
            out.append("")
    return "\n".join(out)


def full_listing(comparisons: Iterable[Comparison]) -> str:
    """Every disagreement, in full, environment by environment."""
    out = []
    for c in comparisons:
        out.append(f"# {c.env}")
        out += [f"[{d.cause}]\n{d.describe()}\n" for d in c.disagreements]
        out += [f"not in scan: {p}" for p in c.not_in_scan]
        out += [f"not in truth: {p}" for p in c.not_in_truth]
        out.append("")
    return "\n".join(out)
