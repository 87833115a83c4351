"""Record what every command prints on a fixed set of inputs, to prove a refactor changed nothing.

    python tools/snapshot_outputs.py --out /tmp/before     # on the old tree
    python tools/snapshot_outputs.py --out /tmp/after      # on the new tree
    diff -r /tmp/before /tmp/after

Inputs: small files built here with gcc/g++/ar into a fixed directory (built once and then
reused, so both runs read the same bytes), system libraries, the running Python environment,
the test suite's cached venvs when present, a wheel, link lines for all four linkers. Each
case records stdout, stderr and the exit status of `python -m ldscope ...` (run as its own
process, `-j 1`, `LC_ALL=C.UTF-8`), plus a few Python API calls.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

FIXTURES = Path("/tmp/ldscope-snapshot/fixtures")
CACHE = Path(os.environ.get("LDSCOPE_TEST_CACHE", "~/.cache/ldscope-tests")).expanduser()
LINKERS = ("bfd", "gold", "lld", "mold")
# gcc -### names temporary files at random (-fresolution=/tmp/ccXXXXXX.res).
_GCC_TEMP = re.compile(r"/tmp/cc[A-Za-z0-9]{6}\.")


def normalised(text: str) -> str:
    """Output with the driver's random temporary names made stable."""
    return _GCC_TEMP.sub("/tmp/ccXXXXXX.", text)


def sh(cmd: list[str], cwd: Path) -> None:
    """Run one build step, failing loudly."""
    proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed in {cwd}:\n{proc.stderr}")


def write(d: Path, files: dict[str, str]) -> None:
    """Write source files into d."""
    d.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (d / name).write_text(text)


def build(fx: Path) -> None:
    """Every fixture (once: the marker file says it is complete)."""
    if (fx / ".complete").exists():
        return
    shutil.rmtree(fx, ignore_errors=True)
    fx.mkdir(parents=True)
    # The README demo: an extension built against one libc10_cuda.so, shipped beside another.
    demo = fx / "demo"
    write(demo / "build", {"c10.cpp": "namespace c10 { namespace cuda { int c10_cuda_check_implementation(int e, const char*, const char*, int l, bool) { return e + l; } } }\n"})
    write(demo / "lib", {"c10.cpp": "namespace c10 { namespace cuda { int c10_cuda_check_implementation(int e, const char*, const char*, unsigned l, bool) { return e + (int)l; } } }\n"})
    write(demo, {"ext.cpp": "namespace c10 { namespace cuda { int c10_cuda_check_implementation(int, const char*, const char*, int, bool); } }\n"
                            'extern "C" int PyInit__C(void) { return c10::cuda::c10_cuda_check_implementation(0, "f", "g", 1, true); }\n'})
    sh(["g++", "-shared", "-fPIC", "-o", "build/libc10_cuda.so", "build/c10.cpp", "-Wl,-soname,libc10_cuda.so"], demo)
    sh(["g++", "-shared", "-fPIC", "-o", "lib/libc10_cuda.so", "lib/c10.cpp", "-Wl,-soname,libc10_cuda.so"], demo)
    sh(["g++", "-shared", "-fPIC", "-o", "_C.cpython-311-x86_64-linux-gnu.so", "ext.cpp", "-Lbuild",
        "-lc10_cuda", "-Wl,-rpath,$ORIGIN/lib"], demo)
    # Versioned library, C++ library, executable, archive, stripped and broken files.
    files = fx / "files"
    write(files, {
        "foo.c": "int foo_data = 42;\nint foo_new(int x) { return x + 1; }\nint foo_old(int x) { return x; }\n"
                 '__asm__(".symver foo_old,foo@FOO_1.0");\n__asm__(".symver foo_new,foo@@FOO_2.0");\n'
                 "extern int bar_missing(void) __attribute__((weak));\n"
                 "int call_bar(void) { return bar_missing ? bar_missing() : 0; }\n",
        "foo.map": "FOO_1.0 { global: foo_data; call_bar; foo; local: *; };\nFOO_2.0 { global: foo; } FOO_1.0;\n",
        "widget.cpp": "#include <string>\nnamespace ui { struct Widget { int resize(int w, unsigned h) const; };\n"
                      "int Widget::resize(int w, unsigned h) const { return w + (int)h; }\n"
                      'std::string label(const std::string& s) { return s + "!"; } }\n',
        "main.c": '#include <stdio.h>\nextern int foo(int);\nint main(void) { printf("%d\\n", foo(1)); return 0; }\n',
        "a.c": "int a_func(void) { return 1; }\nint a_common;\n",
        "b.c": "extern int a_func(void);\nint b_func(void) { return a_func() + 1; }\n",
    })
    sh(["gcc", "-shared", "-fPIC", "-o", "libfoo.so.1", "foo.c", "-Wl,-soname,libfoo.so.1",
        "-Wl,--version-script=foo.map", "-Wl,-rpath,/opt/foo/lib:$ORIGIN", "-Wl,--disable-new-dtags"], files)
    sh(["g++", "-shared", "-fPIC", "-o", "libwidget.so", "widget.cpp", "-Wl,-z,now", "-Wl,-rpath,/opt/w"], files)
    sh(["gcc", "-c", "-fPIC", "-fcommon", "a.c", "b.c"], files)
    sh(["ar", "rcs", "libab.a", "a.o", "b.o"], files)
    sh(["gcc", "-o", "main", "main.c", "-L.", "-l:libfoo.so.1"], files)
    shutil.copy(files / "libfoo.so.1", files / "libfoo-stripped.so")
    sh(["strip", "--strip-all", "libfoo-stripped.so"], files)
    (files / "garbage.so").write_bytes(b"\x7fELF\x02\x01\x01" + b"\xff" * 40)
    (files / "notelf.txt").write_text("hello\n")
    # Load failures: a missing library, a missing version, an undefined symbol, a Python API
    # symbol of another Python, a library defined elsewhere.
    broken = fx / "broken"
    write(broken / "gone", {"gone.c": "int gone(void) { return 1; }\n"})
    write(broken / "v2", {"v.c": "int v_new(void) { return 2; }\n", "v.map": "V_2 { global: v_new; local: *; };\n"})
    write(broken / "v1", {"v.c": "int v_old(void) { return 1; }\n", "v.map": "V_1 { global: v_old; local: *; };\n"})
    write(broken / "elsewhere", {"else.c": "int elsewhere_fn(void) { return 5; }\n"})
    write(broken, {
        "usegone.c": "extern int gone(void); int main(void) { return gone(); }\n",
        "usev.c": "extern int v_new(void); int main(void) { return v_new(); }\n",
        "undef.c": "extern int nowhere_at_all(void); extern int elsewhere_fn(void);\n"
                   "int call(void) { return nowhere_at_all() + elsewhere_fn(); }\n",
        "pyext.c": "extern void *PyUnicode_NotAFunction(void); extern void *PyFooBar_Thing(void);\n"
                   "void *PyInit_pyext(void) { PyFooBar_Thing(); return PyUnicode_NotAFunction(); }\n",
    })
    sh(["gcc", "-shared", "-fPIC", "-o", "gone/libgone.so", "gone/gone.c", "-Wl,-soname,libgone.so"], broken)
    sh(["gcc", "-o", "usegone", "usegone.c", "-Lgone", "-lgone", "-Wl,-rpath,$ORIGIN/nothere"], broken)
    for v in ("v1", "v2"):
        sh(["gcc", "-shared", "-fPIC", "-o", f"{v}/libv.so", f"{v}/v.c", "-Wl,-soname,libv.so",
            f"-Wl,--version-script={v}/v.map"], broken)
    sh(["gcc", "-o", "usev", "usev.c", "-Lv2", "-lv", "-Wl,-rpath,$ORIGIN/v1"], broken)
    sh(["gcc", "-shared", "-fPIC", "-o", "elsewhere/libelsewhere.so", "elsewhere/else.c"], broken)
    sh(["gcc", "-shared", "-fPIC", "-o", "libundef.so", "undef.c"], broken)
    sh(["gcc", "-shared", "-fPIC", "-o", "pyext.cpython-311-x86_64-linux-gnu.so", "pyext.c"], broken)
    # Link scenarios.
    link = fx / "link"
    write(link, {
        "main.c": "extern int top(void); int main(void) { return top(); }\n",
        "top.c": "extern int base(void); int top(void) { return base() + 1; }\n",
        "base.c": "int base(void) { return 41; }\n",
        "stackend.c": "extern void *__libc_stack_end;\nvoid *se_get(void) { return __libc_stack_end; }\n",
        "semain.c": "extern void *se_get(void);\nint main(void) { return se_get() != 0; }\n",
        "user.c": "extern int libf(void); int main(void) { return libf(); }\n",
        "libf.c": "int libf(void) { return 3; }\n",
        "dup1.c": "int dup(void) { return 1; } int main(void) { return dup(); }\n",
        "dup2.c": "int dup(void) { return 2; }\n",
        "greet.cc": '#include <string>\nnamespace demo {\nstd::string greet(const std::string& who) { return "hi " + who; }\n}\n',
        "use.cc": '#include <string>\nnamespace demo { std::string greet(const std::string& who); }\n'
                  'int main() { return (int)demo::greet("x").size(); }\n',
        "needs.c": "extern int dep_fn(void); int needs_fn(void) { return dep_fn(); }\n",
        "dep.c": "int dep_fn(void) { return 7; }\n",
        "usedep.c": "extern int needs_fn(void); extern int dep_fn(void); int main(void) { return needs_fn() + dep_fn(); }\n",
    })
    sh(["gcc", "-c", "-fPIC", "main.c", "top.c", "base.c", "stackend.c", "semain.c", "user.c", "libf.c",
        "dup1.c", "dup2.c", "needs.c", "dep.c", "usedep.c"], link)
    sh(["ar", "rcs", "libtop.a", "top.o"], link)
    sh(["ar", "rcs", "libbase.a", "base.o"], link)
    sh(["ar", "rcs", "libse.a", "stackend.o"], link)
    sh(["gcc", "-shared", "-o", "libf.so", "libf.o", "-Wl,-soname,libf.so"], link)
    sh(["g++", "-c", "-fPIC", "-D_GLIBCXX_USE_CXX11_ABI=0", "greet.cc"], link)
    sh(["g++", "-c", "-fPIC", "use.cc"], link)
    sh(["ar", "rcs", "libgreet.a", "greet.o"], link)
    (link / "deps").mkdir()
    sh(["gcc", "-shared", "-o", "deps/libdep.so", "dep.o", "-Wl,-soname,libdep.so"], link)
    sh(["gcc", "-shared", "-o", "libneeds.so", "needs.o", "-Wl,-soname,libneeds.so", "-Ldeps", "-ldep"], link)
    (link / "build.log").write_text(
        "make[1]: Entering directory '" + str(link) + "'\n"
        "gcc -c -fPIC main.c\n"
        "gcc -o app main.o libbase.a libtop.a\n"
        "/usr/bin/ld: libtop.a(top.o): in function `top':\n"
        "top.c:(.text+0x5): undefined reference to `base'\n"
        "collect2: error: ld returned 1 exit status\n")
    # A wheel: one extension that loads, one that needs a library the wheel does not ship.
    wheel = fx / "wheel"
    write(wheel, {"ok.c": "int PyInit_ok(void) { return 0; }\n",
                  "needy.c": "extern int gone(void); int PyInit_needy(void) { return gone(); }\n"})
    sh(["gcc", "-shared", "-fPIC", "-o", "ok.cpython-311-x86_64-linux-gnu.so", "ok.c"], wheel)
    sh(["gcc", "-shared", "-fPIC", "-o", "needy.cpython-311-x86_64-linux-gnu.so", "needy.c",
        f"-L{broken / 'gone'}", "-lgone"], wheel)
    with zipfile.ZipFile(wheel / "demo-1.0-cp311-cp311-linux_x86_64.whl", "w", zipfile.ZIP_DEFLATED) as zf:
        for member, source in (("demo/ok.cpython-311-x86_64-linux-gnu.so", wheel / "ok.cpython-311-x86_64-linux-gnu.so"),
                               ("demo/needy.cpython-311-x86_64-linux-gnu.so", wheel / "needy.cpython-311-x86_64-linux-gnu.so"),
                               ("demo/__init__.py", None)):
            info = zipfile.ZipInfo(member, (2020, 1, 1, 0, 0, 0))
            info.external_attr = 0o755 << 16
            zf.writestr(info, source.read_bytes() if source else b"")
        for member, text in (("demo-1.0.dist-info/METADATA", "Metadata-Version: 2.1\nName: demo\nVersion: 1.0\n"),
                             ("demo-1.0.dist-info/WHEEL", "Wheel-Version: 1.0\nRoot-Is-Purelib: false\nTag: cp311-cp311-linux_x86_64\n"),
                             ("demo-1.0.dist-info/RECORD", "")):
            zf.writestr(zipfile.ZipInfo(member, (2020, 1, 1, 0, 0, 0)), text)
    os.remove(broken / "gone" / "libgone.so")  # after the wheel's extension was linked with it
    # A foreign root: aarch64 libraries from the cross packages, one with a library missing.
    cross = Path("/usr/aarch64-linux-gnu/lib")
    if cross.is_dir():
        root = fx / "aarch64-root"
        libdir = root / "lib" / "aarch64-linux-gnu"
        libdir.mkdir(parents=True)
        for name in ("libc.so.6", "libm.so.6", "libgcc_s.so.1", "ld-linux-aarch64.so.1", "libstdc++.so.6"):
            if (cross / name).exists():
                shutil.copy(cross / name, libdir / name)
        (root / "lib" / "ld-linux-aarch64.so.1").symlink_to("aarch64-linux-gnu/ld-linux-aarch64.so.1")
        (root / "etc").mkdir()
        (root / "etc" / "ld.so.conf").write_text("/lib/aarch64-linux-gnu\n")
        os.remove(libdir / "libm.so.6")
    (fx / ".complete").write_text("ok\n")


def cases(fx: Path) -> list[tuple[str, list[str]]]:
    """(name, ldscope arguments) for every recorded case."""
    demo, files, broken, link = fx / "demo", fx / "files", fx / "broken", fx / "link"
    libdir = "/usr/lib/x86_64-linux-gnu"
    out: list[tuple[str, list[str]]] = []
    # info and symbols
    info_targets = [f"{libdir}/libstdc++.so.6", f"{libdir}/libc.so.6", f"{libdir}/libc.so",
                    f"{libdir}/libc_nonshared.a", os.path.realpath(sys.executable), str(files / "libfoo.so.1"),
                    str(files / "libab.a"), str(files / "a.o"), str(files / "libfoo-stripped.so"),
                    str(files / "garbage.so"), str(files / "notelf.txt"), "/nonexistent",
                    "/usr/aarch64-linux-gnu/lib/libc.so.6"]
    out.append(("info-text", ["info", *info_targets]))
    out.append(("info-text-v", ["info", "-v", *info_targets]))
    out.append(("info-json", ["info", "--format", "json", *info_targets]))
    out.append(("symbols-D-grep", ["symbols", "-D", "--grep", "GLIBCXX_3.4.2", f"{libdir}/libstdc++.so.6"]))
    out.append(("symbols-foo", ["symbols", str(files / "libfoo.so.1")]))
    out.append(("symbols-foo-json", ["symbols", "--format", "json", str(files / "libfoo.so.1")]))
    out.append(("symbols-archive", ["symbols", "--all", "--undefined", str(files / "libab.a")]))
    out.append(("symbols-widget-C-v", ["symbols", "-C", "-v", "--defined", str(files / "libwidget.so")]))
    out.append(("symbols-stripped-all", ["symbols", "--all", str(files / "libfoo-stripped.so")]))
    out.append(("symbols-bad", ["symbols", str(files / "garbage.so"), str(files / "notelf.txt")]))
    out.append(("symbols-nomatch", ["symbols", "--grep", "zzzz_nothing", str(files / "libfoo.so.1")]))
    # load
    loads = {
        "demo": str(demo / "_C.cpython-311-x86_64-linux-gnu.so"),
        "main": str(files / "main"),
        "usegone": str(broken / "usegone"),
        "usev": str(broken / "usev"),
        "libundef": str(broken / "libundef.so"),
        "pyext": str(broken / "pyext.cpython-311-x86_64-linux-gnu.so"),
        "python": os.path.realpath(sys.executable),
        "libwidget": str(files / "libwidget.so"),
        "foreign": "/usr/aarch64-linux-gnu/lib/libstdc++.so.6",
    }
    for name, target in loads.items():
        out.append((f"load-{name}", ["load", target]))
        out.append((f"load-{name}-v", ["load", "-v", target]))
        out.append((f"load-{name}-json", ["load", "--format", "json", target]))
    out.append(("load-libundef-also", ["load", "--also-search", str(broken / "elsewhere"), str(broken / "libundef.so")]))
    out.append(("load-libundef-also-json", ["load", "--format", "json", "--also-search", str(broken / "elsewhere"),
                                            str(broken / "libundef.so")]))
    out.append(("load-usev-env", ["load", "--env", f"LD_LIBRARY_PATH={broken / 'v2'}", str(broken / "usev")]))
    out.append(("load-usev-clear", ["load", "--clear-env", str(broken / "usev")]))
    out.append(("load-demo-preload", ["load", "--preload", str(demo / "build" / "libc10_cuda.so"),
                                      str(demo / "_C.cpython-311-x86_64-linux-gnu.so")]))
    out.append(("load-now", ["load", "--now", str(broken / "libundef.so")]))
    out.append(("load-host-dlopen", ["load", "--host", "dlopen", str(demo / "_C.cpython-311-x86_64-linux-gnu.so")]))
    if (fx / "aarch64-root").is_dir():
        out.append(("load-root", ["load", "--root", str(fx / "aarch64-root"), "/lib/aarch64-linux-gnu/libstdc++.so.6"]))
        out.append(("load-root-json", ["load", "--format", "json", "--root", str(fx / "aarch64-root"),
                                       "/lib/aarch64-linux-gnu/libstdc++.so.6"]))
    out.append(("load-bad", ["load", str(files / "garbage.so")]))
    out.append(("load-object", ["load", str(files / "a.o")]))
    # scan
    wheel = str(fx / "wheel" / "demo-1.0-cp311-cp311-linux_x86_64.whl")
    scans = {
        "env": [],
        "broken": [str(broken)],
        "files": [str(broken / "usegone"), str(broken / "libundef.so"), str(files / "main")],
        "wheel": [wheel],
        "all-fixtures": [str(fx)],
    }
    for venv in sorted(CACHE.glob("*-*")):
        if venv.is_dir() and (venv / ".ldscope-complete").exists():
            scans[f"venv-{venv.name.split('-')[0]}"] = [str(venv)]
    for name, args in scans.items():
        for fmt in ("text", "json", "sarif", "junit"):
            out.append((f"scan-{name}-{fmt}", ["scan", "-j", "1", "--format", fmt, *args]))
        out.append((f"scan-{name}-v", ["scan", "-j", "1", "-v", *args]))
    out.append(("scan-wheel-with-env", ["scan", "-j", "1", "--format", "json", "--with-env", sys.prefix, wheel]))
    out.append(("scan-fail-on-warning", ["scan", "-j", "1", "--fail-on", "warning", str(broken)]))
    if (fx / "aarch64-root").is_dir():
        out.append(("scan-root", ["scan", "-j", "1", "--root", str(fx / "aarch64-root")]))
        out.append(("scan-root-json", ["scan", "-j", "1", "--format", "json", "--root", str(fx / "aarch64-root")]))
    out.append(("scan-missing", ["scan", "/nonexistent/target"]))
    # link
    lines = {
        "order": ["gcc", "main.o", "libbase.a", "libtop.a"],
        "order-ok": ["gcc", "main.o", "libtop.a", "libbase.a"],
        "dso-missing": ["gcc", "semain.o", "libse.a"],
        "as-needed": ["gcc", "-Wl,--as-needed", "-L.", "-lf", "user.o"],
        "dup": ["gcc", "dup1.o", "dup2.o"],
        "missing-l": ["gcc", "main.o", "-L.", "-lnothere", "libtop.a", "libbase.a"],
        "cxx11": ["g++", "use.o", "libgreet.a"],
        "dt-needed": ["gcc", "usedep.o", "-L.", "-lneeds", "-Wl,-rpath-link,deps"],
        "shared": ["gcc", "-shared", "-o", "libx.so", "top.o"],
    }
    for name, words in lines.items():
        for linker in LINKERS:
            base = ["link", "--cwd", str(link), "--linker", linker]
            out.append((f"link-{name}-{linker}", [*base, "--fix", "--ablate", "--", *words]))
            out.append((f"link-{name}-{linker}-json", [*base, "--fix", "--format", "json", "--", *words]))
        out.append((f"link-{name}-v", ["link", "--cwd", str(link), "-v", "--fix", "--", *words]))
        out.append((f"link-{name}-sarif", ["link", "--cwd", str(link), "--format", "sarif", "--", *words]))
    out.append(("link-no-driver", ["link", "--cwd", str(link), "--no-driver", "--fix", "--", "gcc", "main.o", "libbase.a", "libtop.a"]))
    out.append(("link-no-search", ["link", "--cwd", str(link), "--no-search", "--", "gcc", "usedep.o", "-L.", "-lneeds"]))
    out.append(("link-from-log", ["link", "--from-log", str(link / "build.log"), "--fix"]))
    out.append(("link-from-log-json", ["link", "--from-log", str(link / "build.log"), "--format", "json"]))
    out.append(("link-raw-ld", ["link", "--cwd", str(link), "--fix", "--", "ld.bfd", "-o", "x", "main.o", "libbase.a", "libtop.a"]))
    out.append(("link-usage", ["link"]))
    out.append(("link-unknown", ["link", "--", "python3", "x"]))
    return out


API_SCRIPT = r"""
import json, sys
try:
    from ldscope.analysis import link_report
except ImportError:  # before the architecture change
    from ldscope.linker import link_report
link = sys.argv[1]
for env in (None, {"LD_LIBRARY_PATH": link + "/deps", "PATH": "/usr/bin:/bin"}):
    r = link_report(["gcc", "usedep.o", "-L.", "-lneeds", "libbase.a", "top.o"], cwd=link, env=env, fix=True)
    print(json.dumps({"env": env is not None, "links": r.links,
                      "errors": [e.message for e in r.errors],
                      "fixes": [(f.description, f.fixes_alone, f.reason) for f in r.fixes]}, indent=1))
"""


def main() -> None:
    """Build the fixtures if needed and record every case."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, type=Path)
    parser.add_argument("--fixtures", type=Path, default=FIXTURES)
    parser.add_argument("--only", default=None, help="record only cases whose name contains this")
    args = parser.parse_args()
    build(args.fixtures)
    args.out.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "LC_ALL": "C.UTF-8", "NO_COLOR": "1", "COLUMNS": "100"}
    env.pop("LD_LIBRARY_PATH", None)
    summary: dict[str, int] = {}
    for name, argv in cases(args.fixtures):
        if args.only and args.only not in name:
            continue
        proc = subprocess.run([sys.executable, "-m", "ldscope", *argv], capture_output=True, text=True,
                              env=env, cwd=str(args.fixtures), timeout=600)
        (args.out / f"{name}.out").write_text(normalised(proc.stdout))
        (args.out / f"{name}.err").write_text(normalised(proc.stderr))
        summary[name] = proc.returncode
    if not args.only or "api" in args.only:
        proc = subprocess.run([sys.executable, "-c", API_SCRIPT, str(args.fixtures / "link")], capture_output=True,
                              text=True, env=env, timeout=600)
        (args.out / "api-link-env.out").write_text(normalised(proc.stdout + proc.stderr))
        summary["api-link-env"] = proc.returncode
    (args.out / "exit-status.json").write_text(json.dumps(summary, indent=1, sort_keys=True) + "\n")
    print(f"{len(summary)} cases recorded in {args.out}")


if __name__ == "__main__":
    main()
