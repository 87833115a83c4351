"""Near-miss precision: every near-miss a corpus scan shows, checked by a rule of its own
against the files themselves (read with pyelftools and c++filt, not with ldscope).

A near-miss is *right* when its rule confirms the claim it makes, *wrong* when the rule
refutes it, *unchecked* when no rule covers its kind (counted apart, never as right).
"""

from __future__ import annotations

import glob
import os
import re
import subprocess
from dataclasses import dataclass, field
from functools import lru_cache

_FAMILY = re.compile(r"^(.*?)(\d+(?:\.\d+)*)$")


@lru_cache(maxsize=256)
def _dynamic(path: str) -> tuple[frozenset[str], frozenset[str], dict[str, frozenset[str]]]:
    """(version definitions, defined dynamic names, name -> versions defined) of a file."""
    from elftools.common.exceptions import ELFError
    from elftools.elf.elffile import ELFFile
    from elftools.elf.gnuversions import GNUVerDefSection, GNUVerSymSection

    verdefs: set[str] = set()
    names: set[str] = set()
    versions: dict[str, set[str]] = {}
    try:
        with open(path, "rb") as fh:
            elf = ELFFile(fh)
            index_names: dict[int, str] = {}
            for section in elf.iter_sections():
                if isinstance(section, GNUVerDefSection):
                    for verdef, aux in section.iter_versions():
                        name = next(aux).name
                        verdefs.add(name)
                        index_names[verdef["vd_ndx"]] = name
            dynsym = elf.get_section_by_name(".dynsym")
            versym = next((s for s in elf.iter_sections() if isinstance(s, GNUVerSymSection)), None)
            if dynsym is not None:
                for i, sym in enumerate(dynsym.iter_symbols()):
                    if sym["st_shndx"] == "SHN_UNDEF" or not sym.name:
                        continue
                    names.add(sym.name)
                    if versym is not None:
                        ndx = versym.get_symbol(i)["ndx"]
                        if isinstance(ndx, int) and ndx & 0x7FFF in index_names:
                            versions.setdefault(sym.name, set()).add(index_names[ndx & 0x7FFF])
    except (OSError, ELFError, ValueError):
        pass
    return frozenset(verdefs), frozenset(names), {k: frozenset(v) for k, v in versions.items()}


def _key(version: str) -> tuple[int, ...]:
    return tuple(int(x) for x in re.findall(r"\d+", version))


def _demangle(name: str) -> str:
    out = subprocess.run(["c++filt", name], capture_output=True, text=True).stdout.strip()
    return out or name


def check(near_miss: dict[str, object], problem: dict[str, object], interpreter: str | None) -> bool | None:
    """True if the near-miss's rule confirms it, False if refuted, None if no rule covers it."""
    kind = near_miss.get("kind")
    path = str(near_miss.get("file") or "")
    wanted_version = str(problem.get("version") or "")
    if kind == "version-family":
        verdefs, _, _ = _dynamic(path)
        m = _FAMILY.match(wanted_version)
        if m is None:
            return False
        family = [v for v in verdefs if v.startswith(m.group(1)) and _FAMILY.match(v)]
        stated = re.search(r"offers up to (\S+?);", str(near_miss.get("explanation")))
        newest = max(family, key=_key, default=None)
        return bool(stated and newest == stated.group(1) and wanted_version not in verdefs
                    and _key(newest) < _key(wanted_version))
    if kind in ("other-version", "not-in-scope", "other-copy"):
        verdefs, names, versions = _dynamic(path)
        if kind == "other-copy":
            return wanted_version in verdefs
        symbol = str(near_miss.get("symbol") or "")
        if kind == "not-in-scope":
            return symbol in names
        return symbol in names and (wanted_version not in versions.get(symbol, frozenset()))
    if kind in ("found-elsewhere", "other-release"):
        # A missing library: the file named exists, is not where the loader looked, and is
        # that library (same name) or another release of it (same stem before ".so").
        wanted = str(problem.get("library") or "")
        tried = {str(t.get("path")) for t in problem.get("tried", []) if isinstance(t, dict)}  # type: ignore[attr-defined]
        if not os.path.isfile(path) or path in tried:
            return False
        base = os.path.basename(path)
        if kind == "found-elsewhere":
            return base == wanted
        return base != wanted and base.split(".so")[0] == wanted.split(".so")[0]
    if kind == "python-api":
        if interpreter is None:
            return None
        # Absent from the interpreter: its executable and the libpython beside it (a shared build).
        symbol = str(problem.get("symbol") or "")
        libdir = os.path.join(os.path.dirname(os.path.dirname(os.path.realpath(interpreter))), "lib")
        own = [interpreter, *glob.glob(os.path.join(libdir, "libpython3*.so*"))]
        return all(symbol not in _dynamic(f)[1] for f in own)
    if kind in ("signature-changed", "namespace-moved", "cxx11-abi"):
        wanted = _demangle(str(problem.get("symbol") or ""))
        found = _demangle(str(near_miss.get("symbol") or ""))
        w_name, f_name = wanted.split("(", 1)[0], found.split("(", 1)[0]
        if kind == "signature-changed":
            return w_name == f_name and wanted != found
        if kind == "namespace-moved":
            w_parts, f_parts = w_name.split("::"), f_name.split("::")
            return len(w_parts) > 2 and len(f_parts) > 2 and w_parts[-2:] == f_parts[-2:] and w_name != f_name
        return wanted.replace("__cxx11::", "") == found.replace("__cxx11::", "") and wanted != found
    return None


@dataclass
class Precision:
    """Near-misses shown by one scan, by verdict of their rules."""

    right: int = 0
    wrong: list[str] = field(default_factory=list)
    unchecked: list[str] = field(default_factory=list)

    @property
    def shown(self) -> int:
        """Every near-miss the scan shows."""
        return self.right + len(self.wrong) + len(self.unchecked)

    def describe(self) -> str:
        """"1/1 (100%)", or "0 shown"."""
        checked = self.right + len(self.wrong)
        if not self.shown:
            return "0 shown"
        ratio = f"{self.right}/{checked} ({100 * self.right / checked:.0f}%)" if checked else "none checked"
        return ratio + (f", {len(self.unchecked)} unchecked" if self.unchecked else "")


def precision(scan: dict[str, object], interpreter: str | None) -> Precision:
    """Check every near-miss of every finding's problems in a scan document."""
    out = Precision()
    findings = scan.get("findings") or []
    assert isinstance(findings, list)
    for finding in findings:
        for problem in finding.get("problems", []):
            for near_miss in problem.get("near_misses", []):
                verdict = check(near_miss, problem, interpreter)
                label = f"{problem.get('file')}: {near_miss.get('kind')}: {near_miss.get('explanation')}"
                if verdict is True:
                    out.right += 1
                elif verdict is False:
                    out.wrong.append(label)
                else:
                    out.unchecked.append(label)
    return out
