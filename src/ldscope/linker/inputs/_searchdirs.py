"""Where each linker looks: its built-in library directories and its DT_NEEDED search.

- bfd: the SEARCH_DIR lines of its default script (asked of the toolchain: ldscope.system),
  each `=` meaning the sysroot.
- gold: the directories compiled in (ldscope.system: /lib/TRIPLET, /usr/lib/TRIPLET, /lib, /usr/lib).
- lld, mold: none (only -L).
bfd alone looks for the DT_NEEDED entries of input libraries, in this order (ld/ldelf.c):
-rpath-link, -rpath, LD_RUN_PATH (only without both), LD_LIBRARY_PATH, the library's own
DT_RUNPATH (else DT_RPATH), /etc/ld.so.conf, the default script's SEARCH_DIRs. Never -L.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping

from ldscope.system import bfd_script_search_dirs, gold_search_dirs, ld_so_conf_dirs


def with_sysroot(path: str, sysroot: str | None) -> str:
    """Apply ld's `=` prefix rule (and `$SYSROOT`) to a directory name."""
    root = sysroot or ""
    if path.startswith("="):
        return root + path[1:]
    if path.startswith("$SYSROOT"):
        return root + path[len("$SYSROOT"):]
    return path


def default_dirs(linker: str, program: str, emulation: str | None, sysroot: str | None,
                 nostdlib: bool, env: Mapping[str, str], ask: bool = True) -> tuple[tuple[str, ...], str]:
    """The linker's built-in library search directories (after -L), and the source (`ask`
    False: bfd's are assumed, `ld --verbose` is not run)."""
    if nostdlib:
        return (), "-nostdlib: only -L directories"
    if linker == "bfd":
        # The line's own GNU ld (a cross toolchain's has its own SEARCH_DIRs), else the host's.
        own = os.path.basename(program) not in ("collect2",) and _is_gnu_ld(program)
        dirs, source = bfd_script_search_dirs(program if own else "ld.bfd", emulation, env, ask)
        return tuple(with_sysroot(d, sysroot) for d in dirs), source
    if linker == "gold":
        root = sysroot or ""
        return tuple(root + d for d in gold_search_dirs(emulation)), "gold's built-in directories (Debian 12 binutils)"
    return (), f"{linker} has no built-in directories: only -L"


def _is_gnu_ld(program: str) -> bool:
    """ld, ld.bfd, TARGET-ld, TARGET-ld.bfd (not gold, lld or mold)."""
    base = os.path.basename(program)
    return base in ("ld", "ld.bfd") or base.endswith(("-ld", "-ld.bfd"))


def expand_origin(path: str, origin_file: str) -> str:
    """$ORIGIN / ${ORIGIN} in an rpath entry, as bfd expands them ($LIB is lib64 on 64-bit)."""
    origin = os.path.dirname(os.path.abspath(origin_file))
    for token in ("${ORIGIN}", "$ORIGIN"):
        path = path.replace(token, origin)
    return path.replace("${LIB}", "lib64").replace("$LIB", "lib64")


def bfd_needed_search_path(
    name: str, by_path: str, by_runpath: tuple[str, ...], by_rpath: tuple[str, ...],
    rpath_link: list[str], rpath: list[str], env: Mapping[str, str], sysroot: str | None,
    script_dirs: tuple[str, ...],
) -> list[tuple[str, str]]:
    """(candidate file, which rule) in the order bfd tries them for DT_NEEDED `name`."""
    if "/" in name:
        return [(name, "path in DT_NEEDED")]
    out: list[tuple[str, str]] = []

    def add(dirs: list[str] | tuple[str, ...], rule: str, fix: Callable[[str], str] | None = None) -> None:
        for d in dirs:
            d = fix(d) if fix else d
            out.append((os.path.join(d or ".", name), rule))

    root = sysroot or ""
    add(rpath_link, "-rpath-link")
    add(rpath, "-rpath", lambda d: root + d if d.startswith("/") else d)
    if not rpath_link and not rpath:
        add([p for p in env.get("LD_RUN_PATH", "").split(":") if p], "LD_RUN_PATH")
    add([p for p in env.get("LD_LIBRARY_PATH", "").split(":") if p], "LD_LIBRARY_PATH")
    own = by_runpath or by_rpath
    rule = "DT_RUNPATH" if by_runpath else "DT_RPATH"
    add([expand_origin(d, by_path) for d in own], f"{rule} of {os.path.basename(by_path)}",
        lambda d: root + d if d.startswith("/") else d)
    add(ld_so_conf_dirs(sysroot), "/etc/ld.so.conf")
    add(script_dirs, "default search directory")
    return out
