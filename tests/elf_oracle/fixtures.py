"""Small ELF files built with gcc that the system sample may lack: symbol versions, RPATH/RUNPATH, -z now, copy relocations, TLS, static PIE, debuglink, COMDAT groups, and an object with more than 65,280 sections."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterable
from pathlib import Path

FIX_VER_C = r"""
#include <stdio.h>
#include <string.h>
int fix_data = 42;
__thread int fix_tls = 7;
int foo_v1(void) { return 1; }
int foo_v2(void) { return 2; }
__asm__(".symver foo_v1,foo@VERS_1.0");
__asm__(".symver foo_v2,foo@@VERS_2.0");
int bar(void) { return 3; }
__attribute__((visibility("protected"))) int prot(void) { return 4; }
__attribute__((weak)) int weakfn(void) { return 5; }
int uses_libc(const char *s) { return (int)strlen(s) + puts(s); }
int get_tls(void) { return fix_tls; }
"""
FIX_VER_MAP = """
VERS_1.0 { global: foo; bar; fix_data; fix_tls; local: *; };
VERS_2.0 { global: foo; prot; weakfn; uses_libc; get_tls; } VERS_1.0;
"""
FIX_CXX_CC = r"""
#include <string>
#include <vector>
extern "C" int foo(void);
namespace fix {
struct Widget { virtual ~Widget(); int n = 0; };
Widget::~Widget() {}
std::string greet(const std::string& s) { return "hi " + s; }
template <class T> T twice(T x) { return x + x; }
int use() { std::vector<int> v{1, 2, 3}; return (int)twice(v.size()) + foo(); }
thread_local int counter = 3;
int bump() { return ++counter; }
}
"""
FIX_CXX_MAP = """CXXFIX_1 { global: extern "C++" { fix::*; }; local: *; };"""
FIX_MAIN_C = r"""
#include <stdio.h>
extern int foo(void);
extern int bar(void);
extern int fix_data;
int main(void) { printf("%d\n", foo() + bar() + fix_data); return 0; }
"""
FIX_STATIC_C = r"""
#include <stdio.h>
#include <string.h>
int main(int argc, char **argv) { printf("%zu\n", strlen(argv[0]) + (size_t)argc); return 0; }
"""
FIX_TINY_C = r"""
int tiny_data[4] = {1, 2, 3, 4};
int tiny_old(int x) { return x + 1; }
int tiny_new(int x) { return x + 2; }
__asm__(".symver tiny_old,tiny@TINY_1");
__asm__(".symver tiny_new,tiny@@TINY_2");
int tiny_value(void) { return tiny_data[2]; }
"""
FIX_TINY_MAP = """
TINY_1 { global: tiny; tiny_data; local: *; };
TINY_2 { global: tiny; tiny_value; } TINY_1;
"""
FIX_TINY_MAIN_C = r"""
extern int tiny(int);
extern int tiny_value(void);
extern int tiny_data[4];
int *p = &tiny_data[1];
void _start(void) { tiny(tiny_value() + *p); for (;;) {} }
"""
MANY_SECTIONS = 70_000


def _many_sections_asm() -> str:
    """> 65,280 sections: forces e_shnum = 0, e_shstrndx = SHN_XINDEX and SHT_SYMTAB_SHNDX."""
    parts = [
        "\t.section .group_sig_text,\"axG\",@progbits,grp_sig,comdat\n"
        "\t.globl grp_sig\n\t.type grp_sig,@function\ngrp_sig:\n\tret\n",
        "\t.comm common_sym,16,8\n\t.globl abs_sym\n\t.set abs_sym,0x1234\n",
        "\t.section .tbss,\"awT\",@nobits\n\t.globl tls_sym\n\t.type tls_sym,@object\n"
        "tls_sym:\n\t.zero 8\n\t.size tls_sym,8\n",
    ]
    for i in range(MANY_SECTIONS):
        vis = ("", "\t.hidden f{0}\n", "\t.protected f{0}\n", "\t.weak f{0}\n")[i % 4].format(i)
        # A call (hence a .rela section) in every 1000th function only: `readelf -r` is
        # quadratic in the number of relocation sections.
        call = f"\tcall f{(i * 7919) % MANY_SECTIONS}\n" if i % 1000 == 0 else ""
        parts.append(
            f"\t.section .text.f{i},\"ax\",@progbits\n\t.globl f{i}\n{vis}"
            f"\t.type f{i},@function\nf{i}:\n{call}\tret\n\t.size f{i},.-f{i}\n"
        )
    parts.append("\t.section .data.last,\"aw\"\nlocal_obj:\n\t.quad f0, abs_sym, common_sym\n")
    return "".join(parts)


# Tiny files (a few KB, little padding) make good fuzzing seeds.
SMALL_PAGES = ["-Wl,-z,noseparate-code", "-Wl,-z,max-page-size=0x10",
               "-Wl,-z,common-page-size=0x10"]

# (output name, [commands]); commands run in the fixture directory, `{cc}`/`{cxx}` expanded.
FIXTURE_RECIPES: list[tuple[str, list[list[str]]]] = [
    (
        "libfix_ver.so",
        [["{cc}", "-shared", "-fPIC", "-O1", "-o", "libfix_ver.so", "fix_ver.c",
          "-Wl,--version-script=fix_ver.map", "-Wl,-soname,libfix_ver.so.1",
          "-Wl,--disable-new-dtags", "-Wl,-rpath,/opt/fix/a:/opt/fix/b", "-Wl,--hash-style=both"]],
    ),
    (
        "libfix_sysv.so",
        [["{cc}", "-shared", "-fPIC", "-o", "libfix_sysv.so", "fix_ver.c",
          "-Wl,--version-script=fix_ver.map", "-Wl,-soname,libfix_sysv.so",
          "-Wl,--hash-style=sysv", "-Wl,-z,nodefaultlib", "-Wl,-z,nodelete", "-Wl,-z,origin"]],
    ),
    (
        "libfix_cxx.so",
        [["{cxx}", "-shared", "-fPIC", "-O1", "-o", "libfix_cxx.so", "fix_cxx.cc",
          "-Wl,--version-script=fix_cxx.map", "-Wl,--enable-new-dtags",
          "-Wl,-rpath,$ORIGIN/../lib:/opt/fix", "-L.", "-l:libfix_ver.so",
          "-Wl,--hash-style=gnu"]],
    ),
    ("fix_cxx.o", [["{cxx}", "-c", "-fPIC", "-O1", "-o", "fix_cxx.o", "fix_cxx.cc"]]),
    (
        "fix_now",
        [["{cc}", "-O1", "-o", "fix_now", "fix_main.c", "-L.", "-l:libfix_ver.so",
          "-Wl,-z,now", "-Wl,--enable-new-dtags", "-Wl,-rpath,$ORIGIN"]],
    ),
    (
        "fix_copyreloc",
        [["{cc}", "-O1", "-no-pie", "-fno-pic", "-o", "fix_copyreloc", "fix_main.c", "-L.",
          "-l:libfix_ver.so", "-Wl,-z,lazy", "-Wl,--disable-new-dtags", "-Wl,-rpath,/opt/r"]],
    ),
    ("fix_static_pie", [["{cc}", "-O1", "-static-pie", "-o", "fix_static_pie", "fix_static.c"]]),
    ("fix_static", [["{cc}", "-O1", "-static", "-o", "fix_static", "fix_static.c"]]),
    (
        "fix_dbglink",
        [["objcopy", "--only-keep-debug", "fix_now", "fix_now.debug"],
         ["objcopy", "--strip-debug", "--add-gnu-debuglink=fix_now.debug", "fix_now",
          "fix_dbglink"]],
    ),
    (
        "libfix_tiny.so",
        [["{cc}", "-nostdlib", "-shared", "-fPIC", "-Os", "-o", "libfix_tiny.so", "fix_tiny.c",
          "-Wl,--version-script=fix_tiny.map", "-Wl,-soname,libfix_tiny.so",
          "-Wl,--hash-style=both", "-Wl,--build-id=sha1", "-Wl,-z,norelro", *SMALL_PAGES]],
    ),
    (
        "fix_tiny_exe",
        [["{cc}", "-nostdlib", "-fPIE", "-pie", "-Os", "-o", "fix_tiny_exe", "fix_tiny_main.c",
          "-L.", "-l:libfix_tiny.so", "-Wl,-z,norelro", "-Wl,--hash-style=gnu", *SMALL_PAGES]],
    ),
    ("fix_tiny.o", [["{cc}", "-c", "-Os", "-o", "fix_tiny.o", "fix_tiny.c"]]),
    ("fix_many_sections.o", [["{cc}", "-c", "-o", "fix_many_sections.o", "fix_many.s"]]),
    (
        "libfix_m32.so",
        [["{cc}", "-m32", "-shared", "-fPIC", "-o", "libfix_m32.so", "fix_ver.c",
          "-Wl,--version-script=fix_ver.map"]],
    ),
]

FIXTURE_SOURCES: dict[str, str] = {
    "fix_ver.c": FIX_VER_C,
    "fix_ver.map": FIX_VER_MAP,
    "fix_cxx.cc": FIX_CXX_CC,
    "fix_cxx.map": FIX_CXX_MAP,
    "fix_main.c": FIX_MAIN_C,
    "fix_static.c": FIX_STATIC_C,
    "fix_tiny.c": FIX_TINY_C,
    "fix_tiny.map": FIX_TINY_MAP,
    "fix_tiny_main.c": FIX_TINY_MAIN_C,
}


def build_fixtures(dest: Path, only: Iterable[str] | None = None) -> list[Path]:
    """Compile the fixtures that exist on this machine's toolchain; skip the rest quietly.

    `only`: build just these outputs (their recipes must not need the others')."""
    cc = shutil.which("gcc") or shutil.which("cc")
    cxx = shutil.which("g++") or shutil.which("c++")
    if cc is None:
        return []
    dest.mkdir(parents=True, exist_ok=True)
    for name, text in FIXTURE_SOURCES.items():
        (dest / name).write_text(text)
    wanted = None if only is None else set(only)
    if wanted is None or "fix_many_sections.o" in wanted:
        (dest / "fix_many.s").write_text(_many_sections_asm())
    built: list[Path] = []
    env = dict(os.environ, LC_ALL="C")
    for output, commands in FIXTURE_RECIPES:
        if wanted is not None and output not in wanted:
            continue
        ok = True
        for cmd in commands:
            argv = [a.format(cc=cc, cxx=cxx or "") for a in cmd]
            if not argv[0]:
                ok = False
                break
            res = subprocess.run(argv, cwd=dest, capture_output=True, env=env, timeout=120)
            if res.returncode != 0:
                ok = False
                break
        if ok and (dest / output).exists():
            built.append(dest / output)
    return built
