"""Where each linker looks: its built-in library directories and its DT_NEEDED search.

- bfd: the SEARCH_DIR lines of its default script (`ld.bfd [-m EMUL] --verbose` prints the
  script; nothing is linked), each `=` meaning the sysroot.
- gold: the directories compiled in (Debian: /lib/TRIPLET, /usr/lib/TRIPLET, /lib, /usr/lib).
- lld, mold: none (only -L).
bfd alone looks for the DT_NEEDED entries of input libraries, in this order (ld/ldelf.c):
-rpath-link, -rpath, LD_RUN_PATH (only without both), LD_LIBRARY_PATH, the library's own
DT_RUNPATH (else DT_RPATH), /etc/ld.so.conf, the default script's SEARCH_DIRs. Never -L.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Callable, Mapping
from functools import lru_cache

from ldscope.system._ldconf import read_ld_so_conf

_SEARCH_DIR = re.compile(r'SEARCH_DIR\("?([^")]*)"?\)')
_DEBIAN_BFD_X86_64 = (
    "=/usr/local/lib/x86_64-linux-gnu", "=/lib/x86_64-linux-gnu", "=/usr/lib/x86_64-linux-gnu",
    "=/usr/lib/x86_64-linux-gnu64", "=/usr/local/lib64", "=/lib64", "=/usr/lib64",
    "=/usr/local/lib", "=/lib", "=/usr/lib", "=/usr/x86_64-linux-gnu/lib64",
    "=/usr/x86_64-linux-gnu/lib",
)  # fmt: skip
_EMULATION_TRIPLET = {
    "elf_x86_64": "x86_64-linux-gnu", "elf_i386": "i386-linux-gnu", "elf32_x86_64": "x86_64-linux-gnux32",
    "aarch64linux": "aarch64-linux-gnu", "armelf_linux_eabi": "arm-linux-gnueabihf",
    "elf64lppc": "powerpc64le-linux-gnu", "elf64_s390": "s390x-linux-gnu",
    "elf64lriscv": "riscv64-linux-gnu",
}  # fmt: skip


@lru_cache(maxsize=16)
def bfd_script_search_dirs(program: str, emulation: str | None) -> tuple[tuple[str, ...], str]:
    """SEARCH_DIRs of bfd's default script (asked with --verbose) and where they came from."""
    exe = shutil.which(program) or shutil.which("ld.bfd") or shutil.which("ld")
    if exe is not None:
        cmd = [exe, "--verbose"] if not emulation else [exe, "-m", emulation, "--verbose"]
        try:
            out = subprocess.run(cmd, capture_output=True, text=True, timeout=20).stdout
        except (OSError, subprocess.TimeoutExpired):
            out = ""
        dirs = tuple(_SEARCH_DIR.findall(out))
        if dirs:
            return dirs, f"`{os.path.basename(exe)} --verbose` SEARCH_DIR lines"
    if emulation in (None, "elf_x86_64"):
        return _DEBIAN_BFD_X86_64, "documented Debian 12 binutils defaults (ld.bfd not found)"
    return (), f"no default directories known for emulation {emulation}"


def with_sysroot(path: str, sysroot: str | None) -> str:
    """Apply ld's `=` prefix rule (and `$SYSROOT`) to a directory name."""
    root = sysroot or ""
    if path.startswith("="):
        return root + path[1:]
    if path.startswith("$SYSROOT"):
        return root + path[len("$SYSROOT"):]
    return path


def default_dirs(linker: str, program: str, emulation: str | None, sysroot: str | None,
                 nostdlib: bool) -> tuple[tuple[str, ...], str]:
    """The linker's built-in library search directories (after -L), and the source."""
    if nostdlib:
        return (), "-nostdlib: only -L directories"
    if linker == "bfd":
        dirs, source = bfd_script_search_dirs(program if "bfd" in program else "ld.bfd", emulation)
        return tuple(with_sysroot(d, sysroot) for d in dirs), source
    if linker == "gold":
        triplet = _EMULATION_TRIPLET.get(emulation or "elf_x86_64", "x86_64-linux-gnu")
        root = sysroot or ""
        dirs = (f"/lib/{triplet}", f"/usr/lib/{triplet}", "/lib", "/usr/lib")
        return tuple(root + d for d in dirs), "gold's built-in directories (Debian 12 binutils)"
    return (), f"{linker} has no built-in directories: only -L"


@lru_cache(maxsize=4)
def ld_so_conf_dirs(sysroot: str | None) -> tuple[str, ...]:
    """Directories of /etc/ld.so.conf (inside the sysroot), as bfd reads them."""
    root = sysroot if sysroot not in (None, "", "/") else None
    try:
        return read_ld_so_conf("/etc/ld.so.conf", root).directories
    except (OSError, ValueError):
        return ()


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
