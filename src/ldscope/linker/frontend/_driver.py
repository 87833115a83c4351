"""What a gcc/clang driver adds to a link when it cannot be asked (`-###` unavailable).

The defaults are those of Debian 12's gcc 12 on x86_64, observed with `gcc -###`:
`--as-needed` for the whole line, PIE by default, crt files from the multiarch directory and
gcc's own directory, then `-lgcc --push-state --as-needed -lgcc_s --pop-state -lc -lgcc
--push-state --as-needed -lgcc_s --pop-state` (C++ drivers add `-lstdc++ -lm` first).
"""

from __future__ import annotations

import glob
import os
import re

_DRIVER = re.compile(r"^(?:[\w.+-]+-)?(gcc|g\+\+|cc|c\+\+|clang|clang\+\+|gfortran)(?:-[\d.]+)?$")
_CXX = re.compile(r"(g\+\+|c\+\+|clang\+\+)(?:-[\d.]+)?$")
_SOURCE = re.compile(r"\.(c|cc|cp|cpp|cxx|c\+\+|C|m|mm|s|S|sx|f|f90|f95|for|F|F90|go|d|adb)$")
_WITH_ARG = frozenset((
    "-o", "-l", "-L", "-u", "-e", "-T", "-z", "-Xlinker", "-x", "-I", "-D", "-U", "-include",
    "-imacros", "-isystem", "-iquote", "-idirafter", "-MF", "-MT", "-MQ", "-B", "-Xassembler",
    "-Xpreprocessor", "--sysroot", "-specs", "-target", "--target", "-arch", "-aux-info",
))  # fmt: skip
_PASS_LINKER = frozenset(("-l", "-L", "-u", "-e", "-T", "-z"))
TRIPLET = "x86_64-linux-gnu"
GCC_VERSION_DEFAULT = "12"


def is_driver_name(base: str) -> bool:
    """gcc, g++, cc, c++, clang, clang++ (with a target prefix or version suffix)."""
    return _DRIVER.match(base) is not None


def _gcc_dir() -> str:
    found = sorted(
        glob.glob(f"/usr/lib/gcc/{TRIPLET}/*/crtbegin.o"),
        key=lambda p: [int(x) if x.isdigit() else 0 for x in p.split("/")[-2].split(".")],
    )
    return os.path.dirname(found[-1]) if found else f"/usr/lib/gcc/{TRIPLET}/{GCC_VERSION_DEFAULT}"


def fallback_linker_argv(words: list[str]) -> tuple[list[str], list[str]]:
    """A linker argv for driver `words`, built from Debian 12 gcc defaults; plus notes."""
    notes: list[str] = []
    program = os.path.basename(words[0])
    cxx = _CXX.search(program) is not None
    user: list[str] = []
    output = "a.out"
    flags = {"shared": False, "static": False, "pie": True, "nostdlib": False,
             "nodefaultlibs": False, "nostartfiles": False, "pthread": False}
    sysroot: str | None = None
    fuse_ld: str | None = None
    i = 1
    while i < len(words):
        w = words[i]
        i += 1
        if w.startswith("-Wl,"):
            user.extend(p for p in w[4:].split(",") if p)
        elif w == "-Xlinker" and i < len(words):
            user.append(words[i])
            i += 1
        elif w in _WITH_ARG:
            arg = words[i] if i < len(words) else ""
            i += 1
            if w == "-o":
                output = arg
            elif w in _PASS_LINKER:
                user.extend([w, arg])
            elif w == "--sysroot":
                sysroot = arg
        elif w.startswith(("-l", "-L", "-u")) and len(w) > 2:
            user.append(w)
        elif w.startswith("-o") and len(w) > 2:
            output = w[2:]
        elif w.startswith("--sysroot="):
            sysroot = w.split("=", 1)[1]
        elif w.startswith("-fuse-ld="):
            fuse_ld = w
        elif w in ("-shared", "-static", "-nostdlib", "-nodefaultlibs", "-nostartfiles", "-pthread"):
            flags[w[1:]] = True
        elif w == "-pie":
            flags["pie"] = True
        elif w == "-no-pie":
            flags["pie"] = False
        elif w == "-rdynamic":
            user.append("--export-dynamic")
        elif w in ("-s", "-r"):
            user.append(w)
        elif w.startswith("-"):
            continue
        elif _SOURCE.search(w):
            obj = os.path.splitext(os.path.basename(w))[0] + ".o"
            notes.append(f"{w} would be compiled first; its object ({obj}) is not available")
            user.append(f"<compiled {w}>")
        else:
            user.append(w)
    gcc = _gcc_dir()
    crt = f"/usr/lib/{TRIPLET}"
    argv = ["ld", "--build-id", "--eh-frame-hdr", "-m", "elf_x86_64", "--hash-style=gnu",
            "--as-needed"]
    if fuse_ld:
        argv.append(fuse_ld)
    if sysroot:
        argv.append(f"--sysroot={sysroot}")
    shared, static = flags["shared"], flags["static"]
    if static:
        argv.append("-static")
    elif not shared:
        argv.extend(["-dynamic-linker", "/lib64/ld-linux-x86-64.so.2"])
    if shared:
        argv.append("-shared")
    elif flags["pie"] and not static:
        argv.append("-pie")
    argv.extend(["-o", output])
    pic = shared or (flags["pie"] and not static)
    startfiles = not (flags["nostdlib"] or flags["nostartfiles"])
    if startfiles:
        if not shared:
            argv.append(f"{crt}/{'Scrt1.o' if pic else 'crt1.o'}")
        argv.append(f"{crt}/crti.o")
        argv.append(f"{gcc}/{'crtbeginT.o' if static else 'crtbeginS.o' if pic else 'crtbegin.o'}")
    argv.extend(f"-L{d}" for d in (gcc, crt, "/usr/lib/../lib", f"/lib/{TRIPLET}", "/lib/../lib",
                                   f"/usr/lib/{TRIPLET}", "/usr/lib/../lib"))
    argv.extend(user)
    if not (flags["nostdlib"] or flags["nodefaultlibs"]):
        if cxx:
            argv.extend(["-lstdc++", "-lm"])
        if flags["pthread"]:
            argv.append("-lpthread")
        if static:
            argv.extend(["--start-group", "-lgcc", "-lgcc_eh", "-lc", "--end-group"])
        else:
            gcc_s = ["-lgcc", "--push-state", "--as-needed", "-lgcc_s", "--pop-state"]
            argv.extend([*gcc_s, "-lc", *gcc_s])
    if startfiles:
        argv.append(f"{gcc}/{'crtend.o' if not pic else 'crtendS.o'}")
        argv.append(f"{crt}/crtn.o")
    notes.append("fallback defaults: Debian 12 gcc on x86_64 (PIE, --as-needed, crt files, "
                 "-lgcc/-lgcc_s/-lc); the real driver may differ")
    return argv, notes
