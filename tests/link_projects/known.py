"""Disagreements the corpus finds today, each with its diagnosis (the lead fixes the model
from this list; a key here that starts agreeing fails its strict xfail, so remove it then).

Keys are `project/command:mutation/linker` (command = index of the link command in the
project's captured build, see `python -m tests.link_projects.report --full FILE`)."""

from __future__ import annotations

KNOWN_DISAGREEMENTS: dict[str, str] = {
    # Empty since stop 21. Fixed from this list: the driver's "no input files" refusal, lld's
    # --error-limit (and its relocation-scan order of undefined symbols), C++ names demangled
    # as the linkers print them, AArch64 TLS local-exec and x86-64 PC32/TPOFF32 relocations in
    # -shared, bfd's executable-only __init_array_start & co., relocation errors hiding
    # undefined symbols (bfd, mold) or coming first (lld).
}

# Fixes ldscope offered that the real linker refused (key as above): none may be added silently.
# (Empty since stop 22: zstd's paramgrill with `-Wl,-Bstatic -lm` was offered a static `-lc`,
# libc.a in a dynamic link, which gold and mold refuse; the fix search no longer offers glibc's
# libc.a to a dynamic link, fixes/_link.py:_static_libc.)
KNOWN_BAD_FIXES: dict[str, str] = {}

# Missing-library failures (a library dropped or moved before its users, the real link failing
# on undefined symbols) for which ldscope offers no fix that the real linker confirms. Empty
# since the fix search looks in the link's own build tree too: the 88 that dropped a library
# named by its build-tree path (CMake's `../libcjson.so.1.7.15`, `lib/libgtest.a`,
# `libunity.a`, in no -L or default directory) now get `add PATH after ...`, which the real
# linker links.
KNOWN_NO_FIX: dict[str, str] = {}
