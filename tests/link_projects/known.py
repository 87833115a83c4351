"""Disagreements the corpus finds today, each with its diagnosis (the lead fixes the model
from this list; a key here that starts agreeing fails its strict xfail, so remove it then).

Keys are `project/command:mutation/linker` (command = index of the link command in the
project's captured build, see `python -m tests.link_projects.report --full FILE`)."""

from __future__ import annotations

KNOWN_DISAGREEMENTS: dict[str, str] = {
    'bzip2/1:drop object bzip2recover.o/bfd': (
        "the driver refuses a line with no input file ('gcc: fatal error: no input files', no link runs); `gcc -###` prints no linker line for it, and ldscope goes on with a fallback line (x86_64's Scrt1.o even for the aarch64 driver) and predicts `undefined reference to main`. Model: treat a driver command without inputs as the driver's fatal error."),
    'bzip2/1:drop object bzip2recover.o/gold': (
        "the driver refuses a line with no input file ('gcc: fatal error: no input files', no link runs); `gcc -###` prints no linker line for it, and ldscope goes on with a fallback line (x86_64's Scrt1.o even for the aarch64 driver) and predicts `undefined reference to main`. Model: treat a driver command without inputs as the driver's fatal error."),
    'bzip2/1:drop object bzip2recover.o/lld': (
        "the driver refuses a line with no input file ('gcc: fatal error: no input files', no link runs); `gcc -###` prints no linker line for it, and ldscope goes on with a fallback line (x86_64's Scrt1.o even for the aarch64 driver) and predicts `undefined reference to main`. Model: treat a driver command without inputs as the driver's fatal error."),
    'bzip2/1:drop object bzip2recover.o/mold': (
        "the driver refuses a line with no input file ('gcc: fatal error: no input files', no link runs); `gcc -###` prints no linker line for it, and ldscope goes on with a fallback line (x86_64's Scrt1.o even for the aarch64 driver) and predicts `undefined reference to main`. Model: treat a driver command without inputs as the driver's fatal error."),
    'bzip2-aarch64/1:drop object bzip2recover.o/bfd': (
        "the driver refuses a line with no input file ('aarch64-linux-gnu-gcc: fatal error: no input files', no link runs); `aarch64-linux-gnu-gcc -###` prints no linker line for it, and ldscope goes on with a fallback line (x86_64's Scrt1.o even for the aarch64 driver) and predicts `undefined reference to main`. Model: treat a driver command without inputs as the driver's fatal error."),
    'bzip2-aarch64/1:drop object bzip2recover.o/gold': (
        "the driver refuses a line with no input file ('aarch64-linux-gnu-gcc: fatal error: no input files', no link runs); `aarch64-linux-gnu-gcc -###` prints no linker line for it, and ldscope goes on with a fallback line (x86_64's Scrt1.o even for the aarch64 driver) and predicts `undefined reference to main`. Model: treat a driver command without inputs as the driver's fatal error."),
    'bzip2-aarch64/1:drop object bzip2recover.o/lld': (
        "the driver refuses a line with no input file ('aarch64-linux-gnu-gcc: fatal error: no input files', no link runs); `aarch64-linux-gnu-gcc -###` prints no linker line for it, and ldscope goes on with a fallback line (x86_64's Scrt1.o even for the aarch64 driver) and predicts `undefined reference to main`. Model: treat a driver command without inputs as the driver's fatal error."),
    'bzip2-aarch64/1:drop object bzip2recover.o/mold': (
        "the driver refuses a line with no input file ('aarch64-linux-gnu-gcc: fatal error: no input files', no link runs); `aarch64-linux-gnu-gcc -###` prints no linker line for it, and ldscope goes on with a fallback line (x86_64's Scrt1.o even for the aarch64 driver) and predicts `undefined reference to main`. Model: treat a driver command without inputs as the driver's fatal error."),
    'bzip2/2:duplicate object bzip2.o/lld': (
        "lld stops after its default --error-limit=20 ('too many errors emitted, stopping now'); ldscope lists every multiple definition (25 against lld's 20), so the symbol sets differ (same verdict, same first line). Model: cap lld's shown errors at 20, in lld's report order."),
    'bzip2-aarch64/2:duplicate object bzip2.o/lld': (
        "lld stops after its default --error-limit=20 ('too many errors emitted, stopping now'); ldscope lists every multiple definition (25 against lld's 20), so the symbol sets differ (same verdict, same first line). Model: cap lld's shown errors at 20, in lld's report order."),
    'lz4/0:drop object lz4io.o/lld': (
        "lld stops after its default --error-limit=20 ('too many errors emitted, stopping now'); ldscope lists every undefined symbol (23 against lld's 20), so the symbol sets differ (same verdict, same first line). Model: cap lld's shown errors at 20, in lld's report order."),
    'lz4/0:duplicate object lz4.o/lld': (
        "lld stops after its default --error-limit=20 ('too many errors emitted, stopping now'); ldscope lists every multiple definition (48 against lld's 20), so the symbol sets differ (same verdict, same first line). Model: cap lld's shown errors at 20, in lld's report order."),
    'cjson/0:duplicate object cJSON.c.o/lld': (
        "lld stops after its default --error-limit=20 ('too many errors emitted, stopping now'); ldscope lists every multiple definition (78 against lld's 20), so the symbol sets differ (same verdict, same first line). Model: cap lld's shown errors at 20, in lld's report order."),
    'bzip2/0:Bstatic -lc/gold': (
        "-shared with `-Wl,-Bstatic -lc`: both fail on libc.a's non-PIC members, but gold reports "
        "`libc.a(dl-support.o):function _dl_aux_init: error: undefined reference to '_start'` (nothing defines "
        "_start in a -shared link: no crt1) besides its relocation errors, where ldscope reports dl-support.o's "
        "reference to _start as one more 'requires dynamic R_X86_64_PC32 reloc against '_start'' error and "
        "predicts no undefined reference. Model: a reference to an undefined symbol is gold's undefined-reference "
        "error first, not a relocation-overflow one."),
    'bzip2-aarch64/0:Bstatic -lc/bfd': (
        "aarch64 -shared with `-Wl,-Bstatic -lc`: bfd fails (libc.a(libc-start.o) undefined __fini_array_start, __init_array_*, __preinit_array_* -- those are defined only in executables -- and R_AARCH64_ADR_PREL_PG_HI21 'can not be used when making a shared object'); ldscope predicts the link succeeds. On x86_64 it agrees on the same line: the aarch64 model misses both the linker-defined-symbol rule and non-PIC relocations into -shared."),
    'bzip2-aarch64/0:Bstatic -lc/gold': (
        "aarch64 -shared with static libc.a: gold fails 'libc.a(malloc.o): unsupported TLSLE reloc 549 in shared code'; ldscope predicts success: no aarch64 TLS local-exec / non-PIC relocation check for -shared."),
    'bzip2-aarch64/0:Bstatic -lc/lld': (
        "aarch64 -shared with static libc.a: lld fails 'relocation R_AARCH64_TLSLE_ADD_TPREL_HI12 against .LANCHOR4 cannot be used with -shared'; ldscope predicts success: no aarch64 relocation check for -shared."),
    'bzip2-aarch64/0:Bstatic -lc/mold': (
        "aarch64 -shared with static libc.a: mold fails 'libc.a(malloc.o):(.text): relocation R_AARCH64_TLSLE_ADD_TPREL_HI12 against `.LANCHOR4` can not be used when making a shared object'; ldscope predicts success: no aarch64 relocation check for -shared."),
    'yaml-cpp/2:drop libyaml-cpp.so.0.7.0/bfd': (
        "C++ names: the real linkers demangle without DMGL_VERBOSE, so the standard substitutions print short (`Si` = `std::istream`, `So` = `std::ostream`: `YAML::Load(std::istream&)`); ldscope's demangler expands them as c++filt does (`YAML::Load(std::basic_istream<char, std::char_traits<char> >&)`), so every message naming such a symbol differs. Model: demangle linker messages the linkers' way (Ss/Si/So/Sd as std::string/istream/ostream/iostream)."),
    'yaml-cpp/2:drop libyaml-cpp.so.0.7.0/gold': (
        "C++ names: the real linkers demangle without DMGL_VERBOSE, so the standard substitutions print short (`Si` = `std::istream`, `So` = `std::ostream`: `YAML::Load(std::istream&)`); ldscope's demangler expands them as c++filt does (`YAML::Load(std::basic_istream<char, std::char_traits<char> >&)`), so every message naming such a symbol differs. Model: demangle linker messages the linkers' way (Ss/Si/So/Sd as std::string/istream/ostream/iostream)."),
    'yaml-cpp/2:drop libyaml-cpp.so.0.7.0/lld': (
        "C++ names: the real linkers demangle without DMGL_VERBOSE, so the standard substitutions print short (`Si` = `std::istream`, `So` = `std::ostream`: `YAML::Load(std::istream&)`); ldscope's demangler expands them as c++filt does (`YAML::Load(std::basic_istream<char, std::char_traits<char> >&)`), so every message naming such a symbol differs. Model: demangle linker messages the linkers' way (Ss/Si/So/Sd as std::string/istream/ostream/iostream)."),
    'yaml-cpp/2:drop libyaml-cpp.so.0.7.0/mold': (
        "C++ names: the real linkers demangle without DMGL_VERBOSE, so the standard substitutions print short (`Si` = `std::istream`, `So` = `std::ostream`: `YAML::Load(std::istream&)`); ldscope's demangler expands them as c++filt does (`YAML::Load(std::basic_istream<char, std::char_traits<char> >&)`), so every message naming such a symbol differs. Model: demangle linker messages the linkers' way (Ss/Si/So/Sd as std::string/istream/ostream/iostream)."),
    'yaml-cpp/2:move libyaml-cpp.so.0.7.0 first/bfd': (
        "C++ names: the real linkers demangle without DMGL_VERBOSE, so the standard substitutions print short (`Si` = `std::istream`, `So` = `std::ostream`: `YAML::Load(std::istream&)`); ldscope's demangler expands them as c++filt does (`YAML::Load(std::basic_istream<char, std::char_traits<char> >&)`), so every message naming such a symbol differs. Model: demangle linker messages the linkers' way (Ss/Si/So/Sd as std::string/istream/ostream/iostream)."),
    'yaml-cpp/2:duplicate object parse.cpp.o/bfd': (
        "C++ names: the real linkers demangle without DMGL_VERBOSE, so the standard substitutions print short (`Si` = `std::istream`, `So` = `std::ostream`: `parse(std::istream&)`); ldscope's demangler expands them as c++filt does (`parse(std::basic_istream<char, std::char_traits<char> >&)`), so every message naming such a symbol differs. Model: demangle linker messages the linkers' way (Ss/Si/So/Sd as std::string/istream/ostream/iostream)."),
    'yaml-cpp/2:duplicate object parse.cpp.o/gold': (
        "C++ names: the real linkers demangle without DMGL_VERBOSE, so the standard substitutions print short (`Si` = `std::istream`, `So` = `std::ostream`: `parse(std::istream&)`); ldscope's demangler expands them as c++filt does (`parse(std::basic_istream<char, std::char_traits<char> >&)`), so every message naming such a symbol differs. Model: demangle linker messages the linkers' way (Ss/Si/So/Sd as std::string/istream/ostream/iostream)."),
    'yaml-cpp/2:duplicate object parse.cpp.o/lld': (
        "C++ names: the real linkers demangle without DMGL_VERBOSE, so the standard substitutions print short (`Si` = `std::istream`, `So` = `std::ostream`: `parse(std::istream&)`); ldscope's demangler expands them as c++filt does (`parse(std::basic_istream<char, std::char_traits<char> >&)`), so every message naming such a symbol differs. Model: demangle linker messages the linkers' way (Ss/Si/So/Sd as std::string/istream/ostream/iostream)."),
    'yaml-cpp/2:duplicate object parse.cpp.o/mold': (
        "C++ names: the real linkers demangle without DMGL_VERBOSE, so the standard substitutions print short (`Si` = `std::istream`, `So` = `std::ostream`: `parse(std::istream&)`); ldscope's demangler expands them as c++filt does (`parse(std::basic_istream<char, std::char_traits<char> >&)`), so every message naming such a symbol differs. Model: demangle linker messages the linkers' way (Ss/Si/So/Sd as std::string/istream/ostream/iostream)."),
    'googletest/7:drop libgtest.a/lld': (
        "lld stops after its default --error-limit=20 ('too many errors emitted, stopping now'); ldscope lists every undefined symbol (28 against lld's 20), so the symbol sets differ (same verdict). Model: cap lld's shown errors at 20, in lld's report order."),
    'googletest/9:drop libgtest.a/lld': (
        "lld stops after its default --error-limit=20 ('too many errors emitted, stopping now'); ldscope lists every undefined symbol (24 against lld's 20), so the symbol sets differ (same verdict). Model: cap lld's shown errors at 20, in lld's report order."),
    'googletest/0:drop libgtest.a/lld': (
        "lld stops after its default --error-limit=20 ('too many errors emitted, stopping now'); ldscope lists every undefined symbol (23 against lld's 20), so the symbol sets differ (same verdict). Model: cap lld's shown errors at 20, in lld's report order."),
    'googletest/5:drop libgtest.a/lld': (
        "lld stops after its default --error-limit=20 ('too many errors emitted, stopping now'); ldscope lists every undefined symbol (23 against lld's 20), so the symbol sets differ (same verdict). Model: cap lld's shown errors at 20, in lld's report order."),
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
