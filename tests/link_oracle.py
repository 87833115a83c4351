"""Run the real linkers and read their diagnostics back as (kind, symbol, referrer) facts.

The link lines are the real ones: `gcc -fuse-ld=L -###` gives the linker line around a
placeholder object (crt files, -L, -lgcc, -lc, --as-needed); the scenario's words replace
the placeholder; the real linker binary runs it directly (plugin options dropped).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from functools import lru_cache

from ldscope.cxx._demangle import demangle
from ldscope.linker.frontend._cmdline import parse_driver_output

PROGRAMS = {"bfd": "ld.bfd", "gold": "ld.gold", "lld": "ld.lld", "mold": "mold"}


def available_linkers() -> list[str]:
    """Linkers installed here (all four on CI)."""
    return [name for name, prog in PROGRAMS.items() if shutil.which(prog)]


@lru_cache(maxsize=16)
def template(linker: str, shared: bool) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(words before the user's inputs, words after) of the driver's real linker line."""
    cmd = ["gcc", f"-fuse-ld={linker}", "-###", "PLACEHOLDER.o", "-o", "OUT"]
    if shared:
        cmd.insert(1, "-shared")
    proc = subprocess.run(cmd, capture_output=True, text=True)
    words = parse_driver_output(proc.stderr)
    assert words is not None, proc.stderr
    keep: list[str] = [PROGRAMS[linker]]
    skip = False
    for w in words[1:]:
        if skip:
            skip = False
            continue
        if w == "-plugin":
            skip = True
            continue
        if w.startswith(("-plugin-opt", "-fuse-ld")):
            continue
        keep.append(w)
    at = keep.index("PLACEHOLDER.o")
    return tuple(keep[:at]), tuple(keep[at + 1 :])


def link_argv(linker: str, shared: bool, user: list[str], flags: tuple[str, ...] = (),
              out: str = "out.bin") -> list[str]:
    """The full real linker command for the scenario's words."""
    before, after = template(linker, shared)
    words = [w if w != "OUT" else out for w in before]
    extra = ["--error-limit=0"] if linker == "lld" else []
    if linker in ("lld", "mold"):
        user = [w for w in user if "copy-dt-needed" not in w]
    return [*words, *extra, *flags, *user, *after]


def run_real(argv: list[str], cwd: str) -> tuple[int, str]:
    """Run the real linker; (exit status, stderr)."""
    proc = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=120)
    return proc.returncode, proc.stderr


@dataclass
class Diagnostics:
    """What a linker printed, as comparable facts."""

    facts: set[tuple[str, str, str]]  # (kind, symbol, referrer basename form)
    truncated: set[str]  # symbols whose referrer list was cut ("referenced N more times")


def norm(ref: str) -> str:
    """Referrer as a comparable string: basenames, `lib.a(member)`."""
    ref = ref.strip()
    m = re.match(r"^(.*)\((.*)\)$", ref)
    if m:
        return f"{os.path.basename(m.group(1))}({m.group(2)})"
    return os.path.basename(ref)


_DISPLAY = r"(?:[^\s:()']+\([^()\s]+\)|[^\s:()']+)"


def parse(linker: str, text: str) -> Diagnostics:
    """Parse one linker's stderr."""
    return {"bfd": _bfd, "gold": _gold, "lld": _lld, "mold": _mold}[linker](text)


def _strip_version(sym: str) -> str:
    return sym.split("@", 1)[0]


def _bfd(text: str) -> Diagnostics:
    facts: set[tuple[str, str, str]] = set()
    context = ""
    for raw in text.splitlines():
        line = re.sub(r"^(?:\S*/)?ld(?:\.bfd)?: ", "", raw)
        m = re.match(rf"^({_DISPLAY}): in function `[^']*':$", line)
        if m:
            context = m.group(1)
            continue
        m = re.match(rf"^({_DISPLAY}): undefined reference to symbol '([^']+)'", line)
        if m:
            facts.add(("dso-missing", _strip_version(m.group(2)), norm(m.group(1))))
            continue
        m = re.match(r"^(.*?)undefined reference to `([^']+)'", line)
        if m:
            head = m.group(1)
            who = _referrer(head, context)
            kind = "shlib-undefined" if re.search(r"\.so(\.\d+)*$", who) and ":(" not in head else "undefined-reference"
            facts.add((kind, _strip_version(m.group(2)), norm(who)))
            continue
        m = re.match(r"^(.*?)multiple definition of `([^']+)'", line)
        if m:
            facts.add(("multiple-definition", m.group(2), norm(_referrer(m.group(1), context))))
            continue
        m = re.match(r"^cannot find (\S+)", line)
        if m:
            facts.add(("missing-input", "", m.group(1).rstrip(":")))
            continue
        if "archive has no index" in line:
            facts.add(("archive-no-index", "", norm(line.split(":", 1)[0])))
    return Diagnostics(facts, set())


def _referrer(head: str, context: str) -> str:
    """`a.o:(.text+0x1): ` or `src.c:(.text+0x1): ` (then the in-function context)."""
    m = re.match(rf"^({_DISPLAY}):", head)
    if m:
        who = m.group(1)
        if re.search(r"(\.o|\.a\([^)]*\)|\.so(\.\d+)*)$", who) or who.endswith(")"):
            return who
    return context


def _gold(text: str) -> Diagnostics:
    facts: set[tuple[str, str, str]] = set()
    lines_per_symbol: dict[str, int] = {}
    for raw in text.splitlines():
        line = re.sub(r"^(?:\S*/)?ld\.gold: ", "", raw)
        m = re.match(rf"^({_DISPLAY})(?::[^:]*)*: error: undefined reference to '([^']+)'", line)
        if m:
            who = m.group(1)
            kind = "shlib-undefined" if re.search(r"\.so(\.\d+)*$", who) else "undefined-reference"
            facts.add((kind, m.group(2), norm(who)))
            lines_per_symbol[m.group(2)] = lines_per_symbol.get(m.group(2), 0) + 1
            continue
        m = re.match(rf"^error: ({_DISPLAY}): multiple definition of '([^']+)'", line)
        if m:
            facts.add(("multiple-definition", m.group(2), norm(m.group(1))))
            continue
        m = re.match(r"^error: cannot (?:find|open) (\S+?)(?::|$)", line)
        if m:
            facts.add(("missing-input", "", m.group(1)))
            continue
        m = re.match(rf"^error: ({_DISPLAY}): no archive symbol table", line)
        if m:
            facts.add(("archive-no-index", "", norm(m.group(1))))
            continue
        m = re.match(r"^error: --copy-dt-needed-entries is not supported but is required for \S+ in (\S+)", line)
        if m:
            facts.add(("unsupported-option", "", norm(m.group(1))))
    # gold prints at most 4 undefined-reference lines per symbol (one per relocation), silently.
    return Diagnostics(facts, {s for s, n in lines_per_symbol.items() if n >= 4})


def _lld_ref(loc: str) -> str:
    m = re.search(r"(\S+?):\(.*?\)(?: in archive (\S+))?\s*$", loc)
    if not m:
        return loc.strip()
    return f"{m.group(2)}({m.group(1)})" if m.group(2) else m.group(1)


def _lld(text: str) -> Diagnostics:
    facts: set[tuple[str, str, str]] = set()
    truncated: set[str] = set()
    blocks = re.split(r"(?m)^ld\.lld: ", text)
    for block in blocks:
        m = re.match(r"error: undefined symbol: (\S+)", block)
        if m:
            sym = m.group(1)
            for loc in re.findall(r">>>\s{10,}(.*)", block):
                facts.add(("undefined-reference", sym, norm(_lld_ref(loc))))
            if re.search(r">>> referenced \d+ more times", block):
                truncated.add(sym)
            continue
        m = re.match(r"error: duplicate symbol: (\S+)", block)
        if m:
            locs = re.findall(r">>>\s{8,}(.*)", block)
            if len(locs) >= 2:
                facts.add(("multiple-definition", m.group(1), norm(_lld_ref(locs[1]))))
            continue
        m = re.match(r"error: (\S+): undefined reference to (\S+) \[--no-allow-shlib-undefined\]", block)
        if m:
            facts.add(("shlib-undefined", m.group(2), norm(m.group(1))))
            continue
        m = re.match(r"error: undefined reference due to --no-allow-shlib-undefined: (\S+)\n>>> referenced by (\S+)", block)
        if m:
            facts.add(("shlib-undefined", m.group(1), norm(m.group(2))))
            continue
        m = re.match(r"error: (?:unable to find library |cannot open )(\S+?)(?::|\s|$)", block)
        if m:
            facts.add(("missing-input", "", m.group(1)))
    return Diagnostics(facts, truncated)


def _mold(text: str) -> Diagnostics:
    facts: set[tuple[str, str, str]] = set()
    truncated: set[str] = set()
    blocks = re.split(r"(?m)^mold: ", text)
    for block in blocks:
        m = re.match(r"error: undefined symbol: (\S+)", block)
        if m:
            sym = m.group(1)
            for loc in re.findall(r">>>\s{10,}(\S+?)(?::\(|>>>|$|\s)", block, flags=re.M):
                facts.add(("undefined-reference", sym, norm(loc)))
            if re.search(r">>> referenced \d+ more times", block):
                truncated.add(sym)
            continue
        m = re.match(rf"error: duplicate symbol: ({_DISPLAY}): ({_DISPLAY}): (\S+)", block)
        if m:
            facts.add(("multiple-definition", m.group(3), norm(m.group(1))))
            continue
        m = re.match(r"fatal: library not found: (\S+)", block)
        if m:
            facts.add(("missing-input", "", f"-l{m.group(1)}"))
            continue
        m = re.match(r"fatal: cannot open (\S+?):", block)
        if m:
            facts.add(("missing-input", "", m.group(1)))
    return Diagnostics(facts, truncated)


def predicted_facts(errors: list[tuple[str, str | None, str | None, str]],
                    demangled: bool = False) -> set[tuple[str, str, str]]:
    """ldscope's shown errors as the same facts: (kind, symbol, referrer)."""
    out: set[tuple[str, str, str]] = set()
    for kind, raw_sym, ref, spec in errors:
        sym = raw_sym
        if demangled and raw_sym:
            sym = demangle(raw_sym) or raw_sym
        if kind == "missing-input":
            out.add((kind, "", spec))
        elif kind in ("undefined-reference", "dso-missing", "multiple-definition", "shlib-undefined"):
            out.add((kind, _strip_version(sym or ""), norm(ref or "")))
        elif kind == "archive-no-index":
            out.add((kind, "", norm(spec)))
        elif kind == "unsupported-option":
            out.add((kind, "", norm(ref or "")))
    return out
