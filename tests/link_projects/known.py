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
# on undefined symbols) for which ldscope offers no fix that the real linker confirms.
_BY_PATH = ("the dropped library was named on the line by its path in the build tree (CMake's style: "
            "`../libcjson.so.1.7.15`, `lib/libgtest.a`, `libunity.a`), in no -L or default directory and in no "
            "installed package; ldscope's fix search finds no provider of the undefined symbols and offers no fix "
            "(every dropped or moved `-l` gets a fix the real linker confirms). Model: also look for providers in "
            "the link's own directory tree (the output's and the inputs' directories) and suggest the path.")
KNOWN_NO_FIX: dict[str, str] = {
    # command numbers as sources.in_fixed_order numbers a project's link commands
    'cjson/0:drop libcjson.so.1.7.15/bfd': _BY_PATH,
    'cjson/0:drop libcjson.so.1.7.15/gold': _BY_PATH,
    'cjson/0:drop libcjson.so.1.7.15/lld': _BY_PATH,
    'cjson/0:drop libcjson.so.1.7.15/mold': _BY_PATH,
    'cjson/3:drop libcjson.so.1.7.15/bfd': _BY_PATH,
    'cjson/3:drop libcjson.so.1.7.15/gold': _BY_PATH,
    'cjson/3:drop libcjson.so.1.7.15/lld': _BY_PATH,
    'cjson/3:drop libcjson.so.1.7.15/mold': _BY_PATH,
    'cjson/4:drop libunity.a/bfd': _BY_PATH,
    'cjson/4:drop libunity.a/gold': _BY_PATH,
    'cjson/4:drop libunity.a/lld': _BY_PATH,
    'cjson/4:drop libunity.a/mold': _BY_PATH,
    'cjson/5:drop libunity.a/bfd': _BY_PATH,
    'cjson/5:drop libunity.a/gold': _BY_PATH,
    'cjson/5:drop libunity.a/lld': _BY_PATH,
    'cjson/5:drop libunity.a/mold': _BY_PATH,
    'cjson/6:drop libcjson_utils.so.1.7.15/bfd': _BY_PATH,
    'cjson/6:drop libcjson_utils.so.1.7.15/gold': _BY_PATH,
    'cjson/6:drop libcjson_utils.so.1.7.15/lld': _BY_PATH,
    'cjson/6:drop libcjson_utils.so.1.7.15/mold': _BY_PATH,
    'cjson/6:drop libunity.a/bfd': _BY_PATH,
    'cjson/6:drop libunity.a/gold': _BY_PATH,
    'cjson/6:drop libunity.a/lld': _BY_PATH,
    'cjson/6:drop libunity.a/mold': _BY_PATH,
    'cjson/9:drop libcjson_utils.so.1.7.15/bfd': _BY_PATH,
    'cjson/9:drop libcjson_utils.so.1.7.15/gold': _BY_PATH,
    'cjson/9:drop libcjson_utils.so.1.7.15/lld': _BY_PATH,
    'cjson/9:drop libcjson_utils.so.1.7.15/mold': _BY_PATH,
    'cjson/9:drop libunity.a/bfd': _BY_PATH,
    'cjson/9:drop libunity.a/gold': _BY_PATH,
    'cjson/9:drop libunity.a/lld': _BY_PATH,
    'cjson/9:drop libunity.a/mold': _BY_PATH,
    'googletest/0:drop libgtest.a/bfd': _BY_PATH,
    'googletest/0:drop libgtest.a/gold': _BY_PATH,
    'googletest/0:drop libgtest.a/lld': _BY_PATH,
    'googletest/0:drop libgtest.a/mold': _BY_PATH,
    'googletest/1:drop libgtest.a/bfd': _BY_PATH,
    'googletest/1:drop libgtest.a/gold': _BY_PATH,
    'googletest/1:drop libgtest.a/lld': _BY_PATH,
    'googletest/1:drop libgtest.a/mold': _BY_PATH,
    'googletest/1:drop libgtest_main.a/bfd': _BY_PATH,
    'googletest/1:drop libgtest_main.a/gold': _BY_PATH,
    'googletest/1:drop libgtest_main.a/lld': _BY_PATH,
    'googletest/1:drop libgtest_main.a/mold': _BY_PATH,
    'googletest/2:drop libgtest.a/bfd': _BY_PATH,
    'googletest/2:drop libgtest.a/gold': _BY_PATH,
    'googletest/2:drop libgtest.a/lld': _BY_PATH,
    'googletest/2:drop libgtest.a/mold': _BY_PATH,
    'googletest/2:drop libgtest_main.a/bfd': _BY_PATH,
    'googletest/2:drop libgtest_main.a/gold': _BY_PATH,
    'googletest/2:drop libgtest_main.a/lld': _BY_PATH,
    'googletest/2:drop libgtest_main.a/mold': _BY_PATH,
    'googletest/3:drop libgtest.a/bfd': _BY_PATH,
    'googletest/3:drop libgtest.a/gold': _BY_PATH,
    'googletest/3:drop libgtest.a/lld': _BY_PATH,
    'googletest/3:drop libgtest.a/mold': _BY_PATH,
    'googletest/3:drop libgtest_main.a/bfd': _BY_PATH,
    'googletest/3:drop libgtest_main.a/gold': _BY_PATH,
    'googletest/3:drop libgtest_main.a/lld': _BY_PATH,
    'googletest/3:drop libgtest_main.a/mold': _BY_PATH,
    'googletest/6:drop libgtest.a/bfd': _BY_PATH,
    'googletest/6:drop libgtest.a/gold': _BY_PATH,
    'googletest/6:drop libgtest.a/lld': _BY_PATH,
    'googletest/6:drop libgtest.a/mold': _BY_PATH,
    'googletest/6:drop libgtest_main.a/bfd': _BY_PATH,
    'googletest/6:drop libgtest_main.a/gold': _BY_PATH,
    'googletest/6:drop libgtest_main.a/lld': _BY_PATH,
    'googletest/6:drop libgtest_main.a/mold': _BY_PATH,
    'googletest/9:drop libgtest.a/bfd': _BY_PATH,
    'googletest/9:drop libgtest.a/gold': _BY_PATH,
    'googletest/9:drop libgtest.a/lld': _BY_PATH,
    'googletest/9:drop libgtest.a/mold': _BY_PATH,
    'jansson/0:drop libjansson.so.4.14.0/bfd': _BY_PATH,
    'jansson/0:drop libjansson.so.4.14.0/gold': _BY_PATH,
    'jansson/0:drop libjansson.so.4.14.0/lld': _BY_PATH,
    'jansson/0:drop libjansson.so.4.14.0/mold': _BY_PATH,
    'jansson/1:drop libjansson.so.4.14.0/bfd': _BY_PATH,
    'jansson/1:drop libjansson.so.4.14.0/gold': _BY_PATH,
    'jansson/1:drop libjansson.so.4.14.0/lld': _BY_PATH,
    'jansson/1:drop libjansson.so.4.14.0/mold': _BY_PATH,
    'pcre2/2:drop libpcre2-8.a/bfd': _BY_PATH,
    'pcre2/2:drop libpcre2-8.a/gold': _BY_PATH,
    'pcre2/2:drop libpcre2-8.a/lld': _BY_PATH,
    'pcre2/2:drop libpcre2-8.a/mold': _BY_PATH,
    'pcre2/3:drop libpcre2-8.a/bfd': _BY_PATH,
    'pcre2/3:drop libpcre2-8.a/gold': _BY_PATH,
    'pcre2/3:drop libpcre2-8.a/lld': _BY_PATH,
    'pcre2/3:drop libpcre2-8.a/mold': _BY_PATH,
    'pcre2/3:drop libpcre2-posix.a/bfd': _BY_PATH,
    'pcre2/3:drop libpcre2-posix.a/gold': _BY_PATH,
    'pcre2/3:drop libpcre2-posix.a/lld': _BY_PATH,
    'pcre2/3:drop libpcre2-posix.a/mold': _BY_PATH,
    'pcre2/4:drop libpcre2-8.a/bfd': _BY_PATH,
    'pcre2/4:drop libpcre2-8.a/gold': _BY_PATH,
    'pcre2/4:drop libpcre2-8.a/lld': _BY_PATH,
    'pcre2/4:drop libpcre2-8.a/mold': _BY_PATH,
    'pcre2/4:drop libpcre2-posix.a/bfd': _BY_PATH,
    'pcre2/4:drop libpcre2-posix.a/gold': _BY_PATH,
    'pcre2/4:drop libpcre2-posix.a/lld': _BY_PATH,
    'pcre2/4:drop libpcre2-posix.a/mold': _BY_PATH,
    'yaml-cpp/1:drop libyaml-cpp.so.0.7.0/bfd': _BY_PATH,
    'yaml-cpp/1:drop libyaml-cpp.so.0.7.0/gold': _BY_PATH,
    'yaml-cpp/1:drop libyaml-cpp.so.0.7.0/lld': _BY_PATH,
    'yaml-cpp/1:drop libyaml-cpp.so.0.7.0/mold': _BY_PATH,
    'yaml-cpp/2:drop libyaml-cpp.so.0.7.0/bfd': _BY_PATH,
    'yaml-cpp/2:drop libyaml-cpp.so.0.7.0/gold': _BY_PATH,
    'yaml-cpp/2:drop libyaml-cpp.so.0.7.0/lld': _BY_PATH,
    'yaml-cpp/2:drop libyaml-cpp.so.0.7.0/mold': _BY_PATH,
    'zstd/1:drop libzstd.a/bfd': _BY_PATH,
    'zstd/1:drop libzstd.a/gold': _BY_PATH,
    'zstd/1:drop libzstd.a/lld': _BY_PATH,
    'zstd/1:drop libzstd.a/mold': _BY_PATH,
    'zstd/2:drop libzstd.a/bfd': _BY_PATH,
    'zstd/2:drop libzstd.a/gold': _BY_PATH,
    'zstd/2:drop libzstd.a/lld': _BY_PATH,
    'zstd/2:drop libzstd.a/mold': _BY_PATH,
    'zstd/6:drop libzstd.a/bfd': _BY_PATH,
    'zstd/6:drop libzstd.a/gold': _BY_PATH,
    'zstd/6:drop libzstd.a/lld': _BY_PATH,
    'zstd/6:drop libzstd.a/mold': _BY_PATH,
}
