"""SARIF 2.1.0, the one writer: scan findings and link errors become results of rules taken
from one table per vocabulary (every ProblemKind and every LinkErrorKind has its rule)."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ldscope import __version__
from ldscope.analysis import LinkReport
from ldscope.report._json import has_raw_bytes, readable
from ldscope.report._link_json import LINK_SCHEMA
from ldscope.scan import ScanResult
from ldscope.vocab import LinkErrorKind, ProblemKind, Severity

SARIF_SCHEMA_URI = "https://json.schemastore.org/sarif-2.1.0.json"

# What each kind of finding means, as a rule's short description.
PROBLEM_RULES: dict[ProblemKind, str] = {
    ProblemKind.MISSING_LIBRARY: "A DT_NEEDED library is not found on the loader's search path.",
    ProblemKind.MISSING_VERSION: "A required symbol version node is not defined by the library found.",
    ProblemKind.UNRESOLVED_SYMBOL: "A referenced symbol is defined by no object in the load scope.",
    ProblemKind.UNREADABLE_FILE: "A file could not be read or is not a valid ELF file.",
    ProblemKind.MISSING_INTERPRETER: "The program interpreter (PT_INTERP) does not exist.",
    ProblemKind.WRONG_ARCHITECTURE: "A library of the wrong class, byte order or machine.",
    ProblemKind.NO_VERSION_INFORMATION: "A library required with versions defines none.",
    ProblemKind.LOADER_ASSERTION: "ld.so aborts with an assertion (a versioned reference to a library without symbol versioning).",
    ProblemKind.INTERPOSITION: "A reference binds to another library than the one it was linked against.",
    ProblemKind.SECURE_MODE: "A set-user-ID or set-group-ID program: ld.so ignores LD_LIBRARY_PATH and $ORIGIN.",
    ProblemKind.ASSUMED_LOADED: "A library is found only because another one is loaded first.",
    ProblemKind.DUPLICATE_SONAME: "Two different files share one SONAME.",
    ProblemKind.FOUND_VIA_VARIABLE: "A library is found only through LD_LIBRARY_PATH.",
    ProblemKind.NOT_IMPORTABLE: "An extension module's suffix is not one the interpreter imports.",
    ProblemKind.INCOMPATIBLE_WHEEL: "No tag of the wheel fits the target interpreter and platform.",
    ProblemKind.UNSATISFIED_REQUIREMENT: "An installed version does not satisfy a distribution's requirement.",
}
LINK_RULES: dict[LinkErrorKind, str] = {
    LinkErrorKind.UNDEFINED_REFERENCE: "A symbol an object references is defined nowhere in the link.",
    LinkErrorKind.UNDEFINED_WARNING: "An undefined reference the line turns into a warning.",
    LinkErrorKind.SHLIB_UNDEFINED: "A symbol an input shared library references is defined nowhere in the link.",
    LinkErrorKind.DSO_MISSING: "A symbol is defined only in a library reached through another library's DT_NEEDED.",
    LinkErrorKind.MULTIPLE_DEFINITION: "A symbol is defined strongly more than once.",
    LinkErrorKind.REQUIRED_UNDEFINED: "A --require-defined symbol is defined nowhere.",
    LinkErrorKind.MISSING_INPUT: "An input file or -l library is not found.",
    LinkErrorKind.INCOMPATIBLE_INPUT: "An input is built for another machine or class.",
    LinkErrorKind.NOT_RECOGNIZED: "An input is not an object, archive, shared library or linker script.",
    LinkErrorKind.CORRUPT_INPUT: "An input (or an archive member) cannot be read.",
    LinkErrorKind.ARCHIVE_NO_INDEX: "An archive has no symbol index (run ranlib).",
    LinkErrorKind.UNKNOWN_OPTION: "The linker does not accept an option on the line.",
    LinkErrorKind.BRANCH_OUT_OF_RANGE: "A branch is further from its target than it reaches, and this linker cannot place a veneer for it.",
    LinkErrorKind.RELOCATION_OVERFLOW: "A branch no linker adds a veneer for (CONDBR19, TSTBR14) is further from its target than it reaches.",
    LinkErrorKind.HIDDEN_UNDEFINED: "A symbol referenced with hidden visibility is defined nowhere in a shared link.",
    LinkErrorKind.NON_PIC_RELOCATION: "An object compiled without -fPIC is linked into a shared object or PIE.",
    LinkErrorKind.NON_PIC_CODE: "AArch64 code compiled without -fPIC addresses a symbol a shared object or PIE "
                                "cannot reach that way.",
    LinkErrorKind.TEXT_RELOCATION: "An absolute address in a read-only section needs a text relocation the "
                                   "linker refuses.",
    LinkErrorKind.TEXTREL_WARNING: "The output has text relocations (DT_TEXTREL): it links, with a warning.",
    LinkErrorKind.UNDEFINED_VERSION: "A version script names a symbol that nothing in the link defines.",
    LinkErrorKind.STATIC_DYNAMIC_OBJECT: "A shared library is on a static link (or in a -Bstatic region).",
    LinkErrorKind.UNSUPPORTED_OPTION: "The linker accepts an option but cannot do what it asks here.",
}
_LEVELS = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "note"}


@dataclass(frozen=True, slots=True)
class SarifResult:
    """One result: the rule (a kind), its level, a message and where."""

    rule: str
    level: str  # error | warning | note
    message: str
    locations: tuple[dict[str, Any], ...]
    fingerprints: Mapping[str, str] = field(default_factory=dict)
    properties: Mapping[str, Any] = field(default_factory=dict)


def level_of(severity: str) -> str:
    """The SARIF level of a severity (info is a note)."""
    try:
        return _LEVELS[Severity(severity)]
    except ValueError:
        return "note"


def rule_name(kind: str) -> str:
    """`missing-library` -> `MissingLibrary` (SARIF's reportingDescriptor.name)."""
    return "".join(part.capitalize() for part in kind.split("-"))


def sarif_document(results: Sequence[SarifResult], descriptions: Mapping[Any, str],
                   uri_bases: Sequence[tuple[str, str]] = (), run_properties: Mapping[str, Any] | None = None,
                   ) -> dict[str, Any]:
    """A SARIF 2.1.0 log with one run: one rule per kind the results use (described from
    `descriptions`), each result pointing at its rule; `uri_bases` are (id, directory)."""
    kinds = sorted({r.rule for r in results})
    rules = [{"id": k, "name": rule_name(k), "shortDescription": {"text": descriptions.get(k, k)}} for k in kinds]
    out_results = []
    for r in results:
        item: dict[str, Any] = {"ruleId": r.rule, "ruleIndex": kinds.index(r.rule), "level": r.level,
                                "message": {"text": r.message}, "locations": list(r.locations)}
        if r.fingerprints:
            item["partialFingerprints"] = dict(r.fingerprints)
        if r.properties:
            item["properties"] = dict(r.properties)
        out_results.append(item)
    run: dict[str, Any] = {"tool": {"driver": {"name": "ldscope", "version": __version__, "rules": rules}}}
    if uri_bases:
        run["originalUriBaseIds"] = {base_id: {"uri": "file://" + base.rstrip("/") + "/"} for base_id, base in uri_bases}
    run["results"] = out_results
    if run_properties:
        run["properties"] = dict(run_properties)
    return _without_raw_bytes({"$schema": SARIF_SCHEMA_URI, "version": "2.1.0", "runs": [run]})


def _uri_char(c: str) -> str:
    """A character of a URI: an undecodable byte or a control character percent-encoded."""
    o = ord(c)
    if 0xDC80 <= o <= 0xDCFF:
        return f"%{o - 0xDC00:02X}"
    if c.isprintable():
        return c
    return "".join(f"%{b:02X}" for b in c.encode("utf-8", "surrogatepass"))


def _without_raw_bytes(value: Any, key: str = "") -> Any:
    """The log with undecodable bytes (surrogateescape) written as SARIF can carry them: in a
    `uri`, percent-encoded with control characters (byte 0xE9 is %E9, ESC %1B); elsewhere readable
    (`\\xe9`). SARIF objects have fixed properties, so no `_bytes` siblings are added."""
    if isinstance(value, str):
        if key == "uri" and not value.isprintable():
            return "".join(_uri_char(c) for c in value)
        return readable(value) if has_raw_bytes(value) else value
    if isinstance(value, list):
        return [_without_raw_bytes(v, key) for v in value]
    if isinstance(value, dict):
        return {k: _without_raw_bytes(v, k) for k, v in value.items()}
    return value


def file_uri(path: str, cwd: str) -> str:
    """An absolute file:// URI for a path (relative ones against `cwd`)."""
    full = path if os.path.isabs(path) else os.path.normpath(os.path.join(cwd, path))
    return "file://" + full


# ------------------------------------------------------------------ scan
def _uri_bases(result: ScanResult) -> list[tuple[str, str]]:
    """(uriBaseId, directory) per distinct target base: TARGET, TARGET_2, ..."""
    bases: list[str] = []
    for t in result.targets:
        base = (t.path if os.path.isdir(t.path) else os.path.dirname(t.path)).rstrip("/") or "/"
        if base not in bases:
            bases.append(base)
    return [("TARGET" if i == 0 else f"TARGET_{i + 1}", b) for i, b in enumerate(bases)]


def _artifact(path: str, bases: list[tuple[str, str]]) -> dict[str, str]:
    """An artifactLocation relative to the (deepest) target base holding the path; a path
    outside every target (a system library a finding names) keeps its absolute file URI."""
    best: tuple[str, str] | None = None
    for base_id, base in bases:
        prefix = base.rstrip("/") + "/"
        if path.startswith(prefix) and (best is None or len(base) > len(best[1])):
            best = (base_id, base)
    if best is None:
        return {"uri": "file://" + path}
    return {"uri": path[len(best[1].rstrip("/")) + 1:], "uriBaseId": best[0]}


def _wheel_members(result: ScanResult) -> list[tuple[str, str]]:
    """(wheel path, member name) of every wheel target, longest names first."""
    import zipfile

    from ldscope.elf import open_regular

    out: list[tuple[str, str]] = []
    for t in result.targets:
        if t.kind != "wheel":
            continue
        try:
            with open_regular(t.path) as fh, zipfile.ZipFile(fh) as zf:
                out.extend((t.path, n) for n in zf.namelist() if not n.endswith("/"))
        except (zipfile.BadZipFile, OSError, ValueError, EOFError, NotImplementedError):
            continue  # the scan reported it: "not a valid wheel (zip)"
    return sorted(out, key=lambda m: -len(m[1]))


def _location(path: str, bases: list[tuple[str, str]], members: list[tuple[str, str]]) -> dict[str, Any]:
    """A SARIF location: a file of a target, or for a wheel member (read in place and shown
    where it would be installed) the wheel file itself, the member as a logical location."""
    for wheel, member in members:
        if path.endswith("/" + member):
            return {"physicalLocation": {"artifactLocation": _artifact(wheel, bases)},
                    "logicalLocations": [{"fullyQualifiedName": member}]}
    return {"physicalLocation": {"artifactLocation": _artifact(path, bases)}}


def scan_sarif(result: ScanResult) -> dict[str, Any]:
    """One result per finding and file affected, at the file (or the wheel holding it)."""
    members = _wheel_members(result)
    bases = _uri_bases(result)
    results = []
    for f in result.findings:
        details = "; ".join((p.symbol or p.library or p.message) for p in f.problems[:10])
        near = next((n.explanation for p in f.problems for n in p.near_misses), None)
        text = f.title + (f" — {details}" if details and details != f.title else "")
        if near:
            text += f" — near-miss: {near}"
        for path in f.files[:50]:
            results.append(SarifResult(f.kind, level_of(f.severity), text, (_location(path, bases, members),),
                                       {"ldscopeCause": f.cause}))
    return sarif_document(results, PROBLEM_RULES, bases or [("TARGET", "/")])


# ------------------------------------------------------------------ link
def link_sarif(report: LinkReport) -> dict[str, Any]:
    """One result per error the linker would print, at the referencing input."""
    results = []
    for e in report.errors:
        if not e.shown:
            continue
        target = e.referenced_by or (e.defined_in[0].where if e.defined_in else None)
        loc: dict[str, Any] = {}
        if target:
            path = target.split("(", 1)[0] if target.endswith(")") else target
            loc["physicalLocation"] = {"artifactLocation": {"uri": file_uri(path, report.cwd)}}
        if e.symbol:
            loc["logicalLocations"] = [{"name": e.symbol, "fullyQualifiedName": e.demangled or e.symbol,
                                        "kind": "function"}]
        level = "warning" if e.kind.is_warning else "error"
        results.append(SarifResult(e.kind, level, f"{e.message}\n{e.explanation}".strip(), (loc,) if loc else (),
                                   properties={"argument_index": e.argument_index, "linker": report.linker}))
    return sarif_document(results, LINK_RULES,
                          run_properties={"links": report.links, "partial": report.partial, "schema": LINK_SCHEMA})
