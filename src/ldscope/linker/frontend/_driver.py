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
