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
_STATIC_LIBC_IN_DYNAMIC = (
    "`-Wl,-Bstatic -lm` makes libm.a's e_log.o refer to `_dl_x86_cpu_features` (ld.so's; libc.a defines it "
    "for static programs), and ldscope's fix adds `-lc` there: libc.a mixed into a dynamic executable, whose "
    "members refer to libc internals with hidden visibility (`__read` GLOBAL HIDDEN UND in gconv_cache.o, "
    "fileops.o; `__call_tls_dtors` WEAK HIDDEN UND in exit.o, pthread_create.o) that libc.so.6, later on the "
    "line, also defines. bfd and lld link the fix (hidden references bind inside the output: read.o is "
    "extracted, the weak one stays 0). gold binds the weak hidden `__call_tls_dtors` to libc.so.6's "
    "GLIBC_PRIVATE definition and refuses: \"hidden symbol '__call_tls_dtors' is not defined locally\"; mold "
    "lets libc.so.6's `__read` win over the not yet extracted archive member and then cannot bind a hidden "
    "reference to a shared library: \"undefined symbol: __read\". Model: gold's and mold's treatment of "
    "hidden-visibility references that resolve to a shared library's definition in an executable (and the "
    "fix search should not offer a static libc.a in a dynamic link).")
KNOWN_BAD_FIXES: dict[str, str] = {
    'zstd/6:Bstatic -lm/gold': _STATIC_LIBC_IN_DYNAMIC,
    'zstd/6:Bstatic -lm/mold': _STATIC_LIBC_IN_DYNAMIC,
}

# Missing-library failures (a library dropped or moved before its users, the real link failing
# on undefined symbols) for which ldscope offers no fix that the real linker confirms. Empty
# since the fix search looks in the link's own build tree too: the 88 that dropped a library
# named by its build-tree path (CMake's `../libcjson.so.1.7.15`, `lib/libgtest.a`,
# `libunity.a`, in no -L or default directory) now get `add PATH after ...`, which the real
# linker links.
KNOWN_NO_FIX: dict[str, str] = {}
