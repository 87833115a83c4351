"""What a gcc/clang driver adds to a link when it cannot be asked (`-###` unavailable).

The defaults are those of Debian 12's gcc 12 on x86_64, observed with `gcc -###` and kept as
data (`linker/data/debian-gcc.json`): `--as-needed` for the whole line, PIE by default, crt
files from the multiarch directory and gcc's own directory, then `-lgcc --push-state
--as-needed -lgcc_s --pop-state -lc -lgcc --push-state --as-needed -lgcc_s --pop-state`
(C++ drivers add `-lstdc++ -lm` first).
"""

from __future__ import annotations

import glob
import json
import os
import re
from dataclasses import dataclass, field
from functools import lru_cache
from importlib.resources import files
from typing import Any

from ldscope.system import machine

_DRIVER = re.compile(r"^(?:[\w.+-]+-)?(gcc|g\+\+|cc|c\+\+|clang|clang\+\+|gfortran)(?:-[\d.]+)?$")
_CXX = re.compile(r"(g\+\+|c\+\+|clang\+\+)(?:-[\d.]+)?$")
_SOURCE = re.compile(r"\.(c|cc|cp|cpp|cxx|c\+\+|C|m|mm|s|S|sx|f|f90|f95|for|F|F90|go|d|adb)$")
_MODE_FLAGS = ("-shared", "-static", "-nostdlib", "-nodefaultlibs", "-nostartfiles", "-pthread")


# Driver options that stop before the link: the command produces no linked output at all.
COMPILE_ONLY = {
    "-c": "compiles to object files only (-c)", "-S": "compiles to assembly only (-S)",
    "-E": "preprocesses only (-E)", "-fsyntax-only": "checks syntax only (-fsyntax-only)",
    "-M": "lists dependencies only (-M)", "-MM": "lists dependencies only (-MM)",
}  # fmt: skip


@dataclass(frozen=True, slots=True)
class DriverPlan:
    """What a driver command does before linking: the source files it compiles first (argv
    index, path), or the option that makes it stop before the link."""

    sources: tuple[tuple[int, str], ...]
    stops_before_link: str | None  # a COMPILE_ONLY option given, or None


def driver_plan(words: list[str]) -> DriverPlan:
    """Read a driver command's words for sources and compile-only options (gcc's rules: a
    file is compiled by its suffix, or by the last `-x LANG` before it; `-x none` resets)."""
    with_arg = frozenset(driver_defaults()["driver_options_with_argument"])
    sources: list[tuple[int, str]] = []
    stop: str | None = None
    language: str | None = None
    i = 1
    while i < len(words):
        w = words[i]
        if w == "-x" and i + 1 < len(words):
            language = None if words[i + 1] == "none" else words[i + 1]
            i += 2
            continue
        if w.startswith("-x") and len(w) > 2:
            language = None if w[2:] == "none" else w[2:]
        elif w in COMPILE_ONLY and stop is None:
            stop = w
        elif w in with_arg:
            i += 1  # its argument is not an input
        elif w == "-" or (not w.startswith("-") and (language is not None or _SOURCE.search(w))):
            sources.append((i, w))
        i += 1
    return DriverPlan(tuple(sources), stop)


# Words that only matter to the link step: left out when compiling sources on their own.
_LINK_ONLY_FLAGS = frozenset(("-shared", "-static", "-pie", "-no-pie", "-rdynamic", "-s", "-static-libgcc",
                              "-static-libstdc++", "-static-pie", "-nostdlib", "-nodefaultlibs",
                              "-nostartfiles"))


def compile_commands(words: list[str], plan: DriverPlan, objects: list[str]) -> list[list[str]]:
    """One `DRIVER FLAGS -c SOURCE -o OBJECT` per source: the command's own compile flags
    (everything but inputs, -o and link-only options), in their order."""
    with_arg = frozenset(driver_defaults()["driver_options_with_argument"])
    source_at = {i for i, _ in plan.sources}
    flags: list[str] = []
    i = 1
    while i < len(words):
        w = words[i]
        if w in with_arg and i + 1 < len(words):
            if w not in ("-o", "-l", "-L", "-Xlinker", "-u", "-e", "-T", "-z"):
                flags.extend([w, words[i + 1]])
            i += 2
            continue
        if i in source_at or not w.startswith("-") or w.startswith(("-Wl,", "-l", "-L", "-o", "-fuse-ld=")):
            i += 1
            continue
        if w not in _LINK_ONLY_FLAGS:
            flags.append(w)
        i += 1
    return [[words[0], *flags, "-c", source, "-o", obj] for (_, source), obj in zip(plan.sources, objects)]


def is_driver_name(base: str) -> bool:
    """gcc, g++, cc, c++, clang, clang++ (with a target prefix or version suffix)."""
    return _DRIVER.match(base) is not None


@lru_cache(maxsize=1)
def driver_defaults() -> dict[str, Any]:
    """data/debian-gcc.json, read once."""
    data: dict[str, Any] = json.loads((files("ldscope.linker") / "data" / "debian-gcc.json").read_text(encoding="utf-8"))
    return data


@dataclass(slots=True)
class _DriverRequest:
    """What a driver command asks of the link, read from its words."""

    cxx: bool
    output: str = "a.out"
    user: list[str] = field(default_factory=list)  # linker arguments, in order
    modes: set[str] = field(default_factory=set)  # shared, static, nostdlib, nodefaultlibs, nostartfiles, pthread
    pie: bool = True
    sysroot: str | None = None
    fuse_ld: str | None = None
    notes: list[str] = field(default_factory=list)


def _read_driver_words(words: list[str], defaults: dict[str, Any]) -> _DriverRequest:
    """The driver's options that matter to the link, its inputs in order, and what it would
    compile first (whose objects do not exist yet)."""
    with_arg = frozenset(defaults["driver_options_with_argument"])
    to_linker = frozenset(defaults["passed_to_linker"])
    req = _DriverRequest(cxx=_CXX.search(os.path.basename(words[0])) is not None)
    i = 1
    while i < len(words):
        w = words[i]
        i += 1
        if w.startswith("-Wl,"):
            req.user.extend(p for p in w[4:].split(",") if p)
        elif w == "-Xlinker" and i < len(words):
            req.user.append(words[i])
            i += 1
        elif w in with_arg:
            arg = words[i] if i < len(words) else ""
            i += 1
            if w == "-o":
                req.output = arg
            elif w in to_linker:
                req.user.extend([w, arg])
            elif w == "--sysroot":
                req.sysroot = arg
        else:
            _read_single_word(w, req)
    return req


def _read_single_word(w: str, req: _DriverRequest) -> None:
    """One driver word that takes no separate argument."""
    if w.startswith(("-l", "-L", "-u")) and len(w) > 2:
        req.user.append(w)
    elif w.startswith("-o") and len(w) > 2:
        req.output = w[2:]
    elif w.startswith("--sysroot="):
        req.sysroot = w.split("=", 1)[1]
    elif w.startswith("-fuse-ld="):
        req.fuse_ld = w
    elif w in _MODE_FLAGS:
        req.modes.add(w[1:])
    elif w in ("-pie", "-no-pie"):
        req.pie = w == "-pie"
    elif w == "-rdynamic":
        req.user.append("--export-dynamic")
    elif w in ("-s", "-r"):
        req.user.append(w)
    elif w.startswith("-"):
        return
    elif _SOURCE.search(w):
        obj = os.path.splitext(os.path.basename(w))[0] + ".o"
        req.notes.append(f"{w} would be compiled first; its object ({obj}) is not available")
        req.user.append(f"<compiled {w}>")
    else:
        req.user.append(w)


def _gcc_dir(triplet: str, version: str) -> str:
    found = sorted(
        glob.glob(f"/usr/lib/gcc/{triplet}/*/crtbegin.o"),
        key=lambda p: [int(x) if x.isdigit() else 0 for x in p.split("/")[-2].split(".")],
    )
    return os.path.dirname(found[-1]) if found else f"/usr/lib/gcc/{triplet}/{version}"


def fallback_linker_argv(words: list[str]) -> tuple[list[str], list[str]]:
    """A linker argv for driver `words`, built from Debian 12 gcc defaults; plus notes."""
    d = driver_defaults()
    req = _read_driver_words(words, d)
    target = machine(d["machine"])
    places = {"triplet": target.triplet, "emulation": target.bfd_emulation or "",
              "crt": f"/usr/lib/{target.triplet}", "gcc": _gcc_dir(target.triplet, d["gcc_version"])}

    def fill(template: str) -> str:
        return template.format(**places)

    shared, static = "shared" in req.modes, "static" in req.modes
    pic = shared or (req.pie and not static)
    variant = "static" if static else "pic" if pic else "plain"
    argv = [d["linker"], *map(fill, d["leading"])]
    if req.fuse_ld:
        argv.append(req.fuse_ld)
    if req.sysroot:
        argv.append(f"--sysroot={req.sysroot}")
    if static:
        argv.append("-static")
    elif not shared:
        argv.extend(["-dynamic-linker", d["dynamic_linker"]])
    if shared:
        argv.append("-shared")
    elif req.pie and not static:
        argv.append("-pie")
    argv.extend(["-o", req.output])
    startfiles = not ({"nostdlib", "nostartfiles"} & req.modes)
    if startfiles:
        start = d["start_files"]
        if not shared:
            argv.append(fill(start["program"][variant]))
        argv.extend(map(fill, start["all"]))
        argv.append(fill(start["crtbegin"][variant]))
    argv.extend("-L" + fill(x) for x in d["library_dirs"])
    argv.extend(req.user)
    if not ({"nostdlib", "nodefaultlibs"} & req.modes):
        libs = d["libraries"]
        argv.extend(libs["c++"] if req.cxx else [])
        argv.extend(libs["pthread"] if "pthread" in req.modes else [])
        argv.extend(libs["static"] if static else libs["dynamic"])
    if startfiles:
        end = d["end_files"]
        argv.append(fill(end["crtend"]["pic" if pic else "plain"]))
        argv.extend(map(fill, end["all"]))
    notes = [*req.notes, "fallback defaults: Debian 12 gcc on x86_64 (PIE, --as-needed, crt files, "
             "-lgcc/-lgcc_s/-lc); the real driver may differ"]
    return argv, notes
