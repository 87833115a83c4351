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
KNOWN_BAD_FIXES: dict[str, str] = {}

# Missing-library failures (a library dropped or moved before its users, the real link failing
# on undefined symbols) for which ldscope offers no fix that the real linker confirms.
_BY_PATH = ("the dropped library was named on the line by its path in the build tree (CMake's style: "
            "`../libcjson.so.1.7.15`, `lib/libgtest.a`, `libunity.a`), in no -L or default directory and in no "
            "installed package; ldscope's fix search finds no provider of the undefined symbols and offers no fix "
            "(every dropped or moved `-l` gets a fix the real linker confirms). Model: also look for providers in "
            "the link's own directory tree (the output's and the inputs' directories) and suggest the path.")
KNOWN_NO_FIX: dict[str, str] = {
    'cjson/1:drop libcjson.so.1.7.15/bfd': _BY_PATH,
    'cjson/1:drop libcjson.so.1.7.15/gold': _BY_PATH,
    'cjson/1:drop libcjson.so.1.7.15/lld': _BY_PATH,
    'cjson/1:drop libcjson.so.1.7.15/mold': _BY_PATH,
    'cjson/22:drop libcjson_utils.so.1.7.15/bfd': _BY_PATH,
    'cjson/22:drop libcjson_utils.so.1.7.15/gold': _BY_PATH,
    'cjson/22:drop libcjson_utils.so.1.7.15/lld': _BY_PATH,
    'cjson/22:drop libcjson_utils.so.1.7.15/mold': _BY_PATH,
    'cjson/22:drop libunity.a/bfd': _BY_PATH,
    'cjson/22:drop libunity.a/gold': _BY_PATH,
    'cjson/22:drop libunity.a/lld': _BY_PATH,
    'cjson/22:drop libunity.a/mold': _BY_PATH,
    'cjson/23:drop libcjson_utils.so.1.7.15/bfd': _BY_PATH,
    'cjson/23:drop libcjson_utils.so.1.7.15/gold': _BY_PATH,
    'cjson/23:drop libcjson_utils.so.1.7.15/lld': _BY_PATH,
    'cjson/23:drop libcjson_utils.so.1.7.15/mold': _BY_PATH,
    'cjson/23:drop libunity.a/bfd': _BY_PATH,
    'cjson/23:drop libunity.a/gold': _BY_PATH,
    'cjson/23:drop libunity.a/lld': _BY_PATH,
    'cjson/23:drop libunity.a/mold': _BY_PATH,
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
    'googletest/0:drop libgtest.a/bfd': _BY_PATH,
    'googletest/0:drop libgtest.a/gold': _BY_PATH,
    'googletest/0:drop libgtest.a/lld': _BY_PATH,
    'googletest/0:drop libgtest.a/mold': _BY_PATH,
    'googletest/0:drop libgtest_main.a/bfd': _BY_PATH,
    'googletest/0:drop libgtest_main.a/gold': _BY_PATH,
    'googletest/0:drop libgtest_main.a/lld': _BY_PATH,
    'googletest/0:drop libgtest_main.a/mold': _BY_PATH,
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
    'googletest/5:drop libgtest.a/bfd': _BY_PATH,
    'googletest/5:drop libgtest.a/gold': _BY_PATH,
    'googletest/5:drop libgtest.a/lld': _BY_PATH,
    'googletest/5:drop libgtest.a/mold': _BY_PATH,
    'googletest/5:drop libgtest_main.a/bfd': _BY_PATH,
    'googletest/5:drop libgtest_main.a/gold': _BY_PATH,
    'googletest/5:drop libgtest_main.a/lld': _BY_PATH,
    'googletest/5:drop libgtest_main.a/mold': _BY_PATH,
    'googletest/7:drop libgtest.a/bfd': _BY_PATH,
    'googletest/7:drop libgtest.a/gold': _BY_PATH,
    'googletest/7:drop libgtest.a/lld': _BY_PATH,
    'googletest/7:drop libgtest.a/mold': _BY_PATH,
    'googletest/9:drop libgtest.a/bfd': _BY_PATH,
    'googletest/9:drop libgtest.a/gold': _BY_PATH,
    'googletest/9:drop libgtest.a/lld': _BY_PATH,
    'googletest/9:drop libgtest.a/mold': _BY_PATH,
    'jansson/1:drop libjansson.so.4.14.0/bfd': _BY_PATH,
    'jansson/1:drop libjansson.so.4.14.0/gold': _BY_PATH,
    'jansson/1:drop libjansson.so.4.14.0/lld': _BY_PATH,
    'jansson/1:drop libjansson.so.4.14.0/mold': _BY_PATH,
    'jansson/2:drop libjansson.so.4.14.0/bfd': _BY_PATH,
    'jansson/2:drop libjansson.so.4.14.0/gold': _BY_PATH,
    'jansson/2:drop libjansson.so.4.14.0/lld': _BY_PATH,
    'jansson/2:drop libjansson.so.4.14.0/mold': _BY_PATH,
    'yaml-cpp/1:drop libyaml-cpp.so.0.7.0/bfd': _BY_PATH,
    'yaml-cpp/1:drop libyaml-cpp.so.0.7.0/gold': _BY_PATH,
    'yaml-cpp/1:drop libyaml-cpp.so.0.7.0/lld': _BY_PATH,
    'yaml-cpp/1:drop libyaml-cpp.so.0.7.0/mold': _BY_PATH,
    'yaml-cpp/2:drop libyaml-cpp.so.0.7.0/bfd': _BY_PATH,
    'yaml-cpp/2:drop libyaml-cpp.so.0.7.0/gold': _BY_PATH,
    'yaml-cpp/2:drop libyaml-cpp.so.0.7.0/lld': _BY_PATH,
    'yaml-cpp/2:drop libyaml-cpp.so.0.7.0/mold': _BY_PATH,
}
