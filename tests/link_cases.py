"""Builders for the named link cases (real files made with gcc/g++/ar in a temp dir)."""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.link_oracle import template


def sh(cmd: list[str], cwd: Path) -> None:
    """Run a build step, failing loudly."""
    proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise AssertionError(f"{' '.join(cmd)}\n{proc.stderr}")


def write(d: Path, files: dict[str, str]) -> None:
    """Write source files."""
    for name, text in files.items():
        (d / name).write_text(text)


def raw_line(linker: str, user: list[str], after_lc: list[str] | None = None, shared: bool = False,
             out: str = "app") -> list[str]:
    """The driver's real linker line for `linker` with `user` inputs (and some after -lc)."""
    before, after = template(linker, shared)
    tail = list(after)
    if after_lc:
        at = tail.index("-lc") + 1
        tail[at:at] = after_lc
    words = [w if w != "OUT" else out for w in before]
    return [*words, *user, *tail]


def dso_missing_case(d: Path) -> None:
    """An archive member referencing __libc_stack_end, which only ld.so defines."""
    write(d, {
        "stackend.c": "extern void *__libc_stack_end;\nvoid *se_get(void) { return __libc_stack_end; }\n",
        "main.c": "extern void *se_get(void);\nint main(void) { return se_get() != 0; }\n",
    })
    sh(["gcc", "-c", "-fPIC", "stackend.c", "main.c"], d)
    sh(["ar", "rcs", "libse.a", "stackend.o"], d)


def cycle_case(d: Path) -> None:
    """Three archives that need each other (a -> b -> c -> a) and a main using a."""
    write(d, {
        "main.c": "extern int a1(void); int main(void) { return a1(); }\n",
        "a1.c": "extern int b1(void); int a1(void) { return b1() + 1; }\n",
        "a2.c": "extern int b2(void); int a2(void) { return b2(); }\n",
        "b1.c": "extern int c1(void); extern int a2(void); int b1(void) { return c1() + a2(); }\n",
        "b2.c": "extern int c2(void); int b2(void) { return c2(); }\n",
        "c1.c": "int c1(void) { return 3; }\n",
        "c2.c": "extern int a3(void); int c2(void) { return a3(); }\n",
        "a3.c": "int a3(void) { return 4; }\n",
    })
    sh(["gcc", "-c", "-fPIC", "main.c", "a1.c", "a2.c", "a3.c", "b1.c", "b2.c", "c1.c", "c2.c"], d)
    sh(["ar", "rcs", "liba.a", "a1.o", "a2.o", "a3.o"], d)
    sh(["ar", "rcs", "libb.a", "b1.o", "b2.o"], d)
    sh(["ar", "rcs", "libc_.a", "c1.o", "c2.o"], d)


def order_case(d: Path) -> None:
    """libtop.a needs libbase.a: correct order top then base; reversed fails for bfd/gold."""
    write(d, {
        "main.c": "extern int top(void); int main(void) { return top(); }\n",
        "top.c": "extern int base(void); int top(void) { return base() + 1; }\n",
        "base.c": "int base(void) { return 41; }\n",
    })
    sh(["gcc", "-c", "-fPIC", "main.c", "top.c", "base.c"], d)
    sh(["ar", "rcs", "libtop.a", "top.o"], d)
    sh(["ar", "rcs", "libbase.a", "base.o"], d)


def as_needed_case(d: Path) -> None:
    """A shared library named before the object that uses it, under --as-needed."""
    write(d, {
        "user.c": "extern int libf(void); int main(void) { return libf(); }\n",
        "libf.c": "int libf(void) { return 3; }\n",
    })
    sh(["gcc", "-c", "-fPIC", "user.c", "libf.c"], d)
    sh(["gcc", "-shared", "-o", "libf.so", "libf.o", "-Wl,-soname,libf.so"], d)


def cxx11_abi_case(d: Path) -> None:
    """A library built with the old std::string ABI, used from code built with the new one."""
    write(d, {
        "greet.cc": '#include <string>\nnamespace demo {\n'
                    'std::string greet(const std::string& who) { return "hi " + who; }\n}\n',
        "use.cc": '#include <string>\nnamespace demo { std::string greet(const std::string& who); }\n'
                  'int main() { return (int)demo::greet("x").size(); }\n',
    })
    sh(["g++", "-c", "-fPIC", "-D_GLIBCXX_USE_CXX11_ABI=0", "greet.cc"], d)
    sh(["g++", "-c", "-fPIC", "use.cc"], d)
    sh(["ar", "rcs", "libgreet.a", "greet.o"], d)
