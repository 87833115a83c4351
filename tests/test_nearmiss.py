"""Near-miss explanations, each from real compiled C/C++ (built against one library, run with another)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from ldscope.analysis._load import LoadOptions, simulate_load
from ldscope.loader._results import Problem
from tests.conftest import run


def build_pair(d: Path, name: str, built_src: str, installed_src: str, user_src: str,
               cxx: bool = True, built_flags: tuple[str, ...] = (), installed_flags: tuple[str, ...] = (),
               user_flags: tuple[str, ...] = ()) -> Path:
    """Build lib v(built) in built/, v(installed) in installed/, a program linked against the
    first whose RUNPATH points at the second."""
    cc = "g++" if cxx else "gcc"
    ext = "cpp" if cxx else "c"
    for sub, src, flags in (("built", built_src, built_flags), ("installed", installed_src, installed_flags)):
        (d / sub).mkdir(exist_ok=True)
        (d / sub / f"{name}.{ext}").write_text(src)
        run([cc, "-shared", "-fPIC", *flags, "-o", f"{sub}/lib{name}.so", f"{sub}/{name}.{ext}",
             f"-Wl,-soname,lib{name}.so"], cwd=d)
    (d / f"use_{name}.{ext}").write_text(user_src)
    exe = d / f"use_{name}"
    run([cc, *user_flags, "-o", exe.name, f"use_{name}.{ext}", "-Lbuilt", f"-l{name}",
         f"-Wl,-rpath,{d}/installed", "-Wl,-z,now"], cwd=d)
    return exe


def unresolved(report_problems: tuple[Problem, ...]) -> dict[str, Problem]:
    return {p.symbol or "": p for p in report_problems if p.kind == "unresolved-symbol"}


def real_error(exe: Path) -> str:
    return subprocess.run([str(exe)], capture_output=True, text=True, timeout=30).stderr


def test_parameter_type_changed(tmp_path: Path) -> None:
    exe = build_pair(
        tmp_path, "c10",
        "namespace c10 { namespace cuda { int check(int a, const char* f, int line, bool w) { return a + line + w + f[0]; } } }\n"
        "namespace c10 { int other(double x) { return (int)x; } }\n",
        "namespace c10 { namespace cuda { int check(int a, const char* f, unsigned line, bool w) { return a + (int)line + w + f[0]; } } }\n"
        "namespace c10 { int other(double x, int extra) { return (int)x + extra; } }\n",
        "namespace c10 { namespace cuda { int check(int, const char*, int, bool); } int other(double); }\n"
        "int main() { return c10::cuda::check(1, \"x\", 2, true) + c10::other(1.0); }\n",
    )
    report = simulate_load(str(exe))
    assert report.loads is False
    problems = unresolved(report.problems)
    assert set(problems) == {"_ZN3c104cuda5checkEiPKcib", "_ZN3c105otherEd"}
    check = problems["_ZN3c104cuda5checkEiPKcib"]
    assert check.demangled == "c10::cuda::check(int, char const*, int, bool)"
    best = check.near_misses[0]
    assert best.kind == "signature-changed"
    assert best.file == f"{tmp_path}/installed/libc10.so"
    assert "parameter 3: int → unsigned int" in best.explanation
    other = problems["_ZN3c105otherEd"].near_misses[0]
    assert other.kind == "signature-changed" and "parameter 2" in other.explanation and "added" in other.explanation
    # Both share one cause, said once: the program was built against another libc10.so.
    assert check.cause == problems["_ZN3c105otherEd"].cause
    assert check.cause_summary is not None and "another version of libc10.so" in check.cause_summary
    # The real loader stops at the first of them.
    err = real_error(exe)
    assert "undefined symbol: _ZN3c105otherEd" in err or "undefined symbol: _ZN3c104cuda5checkEiPKcib" in err


def test_cxx11_abi_mismatch(tmp_path: Path) -> None:
    src = "#include <string>\nint greet(const std::string& who) { return (int)who.size(); }\n"
    exe = build_pair(
        tmp_path, "greet", src, src,
        "#include <string>\nint greet(const std::string& who);\nint main() { return greet(\"x\"); }\n",
        built_flags=("-D_GLIBCXX_USE_CXX11_ABI=0",), installed_flags=("-D_GLIBCXX_USE_CXX11_ABI=1",),
        user_flags=("-D_GLIBCXX_USE_CXX11_ABI=0",),
    )
    report = simulate_load(str(exe))
    problems = unresolved(report.problems)
    wanted = "_Z5greetRKSs"
    assert set(problems) == {wanted}
    best = problems[wanted].near_misses[0]
    assert best.kind == "cxx11-abi"
    assert "_GLIBCXX_USE_CXX11_ABI" in best.explanation
    assert best.symbol == "_Z5greetRKNSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEEE"
    assert "undefined symbol: _Z5greetRKSs" in real_error(exe)


def test_type_moved_to_another_namespace(tmp_path: Path) -> None:
    exe = build_pair(
        tmp_path, "geo",
        "namespace geo { struct Point { int x; }; int norm(const Point& p) { return p.x; } }\n",
        "namespace geo { namespace v2 { struct Point { int x; }; } int norm(const v2::Point& p) { return p.x; } }\n",
        "namespace geo { struct Point { int x; }; int norm(const Point& p); }\n"
        "int main() { geo::Point p{1}; return geo::norm(p); }\n",
    )
    problems = unresolved(simulate_load(str(exe)).problems)
    best = problems["_ZN3geo4normERKNS_5PointE"].near_misses[0]
    assert best.kind == "signature-changed"
    assert "geo::Point const&" in best.explanation and "geo::v2::Point const&" in best.explanation


def test_symbol_present_but_hidden(tmp_path: Path) -> None:
    exe = build_pair(
        tmp_path, "hid",
        "int helper(int x) { return x; }\n",
        "__attribute__((visibility(\"hidden\"))) int helper(int x) { return x; }\nint keep(void) { return helper(1); }\n",
        "extern int helper(int);\nint main(void) { return helper(1); }\n",
        cxx=False,
    )
    problems = unresolved(simulate_load(str(exe)).problems)
    near = problems["helper"].near_misses
    assert near[0].kind == "not-exported"
    assert "does not export it" in near[0].explanation and "hidden" in near[0].explanation


def moved_symbol_scenario(d: Path, name: str) -> Path:
    """A program whose `moved_away` is gone from its library's new version but defined by
    extra/libmoved.so.2, which it does not load."""
    exe = build_pair(
        d, name,
        "int moved_away(void) { return 1; }\n",
        "int something_else(void) { return 2; }\n",
        "extern int moved_away(void);\nint main(void) { return moved_away(); }\n",
        cxx=False,
    )
    (d / "extra").mkdir()
    (d / "extra" / "m.c").write_text("int moved_away(void) { return 1; }\n")
    run(["gcc", "-shared", "-fPIC", "-o", "extra/libmoved.so.2", "extra/m.c", "-Wl,-soname,libmoved.so.2"], cwd=d)
    return exe


def test_defined_in_library_not_in_scope(tmp_path: Path) -> None:
    exe = moved_symbol_scenario(tmp_path, "split")
    report = simulate_load(str(exe), LoadOptions(also_search=(str(tmp_path / "extra"),)))
    near = unresolved(report.problems)["moved_away"].near_misses
    assert near[0].kind == "not-in-scope"
    assert near[0].file == f"{tmp_path}/extra/libmoved.so.2"
    assert "LD_LIBRARY_PATH or the RUNPATH" in near[0].explanation


def test_symbols_of_a_file_missing_a_library_get_no_system_wide_search(tmp_path: Path) -> None:
    """ld.so stops at the missing library: its requester's unresolved symbols (ldd -r lists
    them) are that library's consequence: counted under it, not listed or searched for."""
    exe = moved_symbol_scenario(tmp_path, "gone")
    (tmp_path / "installed" / "libgone.so").unlink()  # now the library itself is missing too
    report = simulate_load(str(exe), LoadOptions(also_search=(str(tmp_path / "extra"),)))
    (missing,) = [p for p in report.problems if p.kind == "missing-library" and p.library == "libgone.so"]
    assert missing.follow_on_symbols == 1 and "1 undefined symbol (1 of " in missing.message
    assert "moved_away" not in unresolved(report.problems)
    assert "cannot open shared object file" in real_error(exe)


def test_similar_c_name(tmp_path: Path) -> None:
    exe = build_pair(
        tmp_path, "sim",
        "int compute_total(int x) { return x; }\n",
        "int compute_totals(int x) { return x; }\n",
        "extern int compute_total(int);\nint main(void) { return compute_total(1); }\n",
        cxx=False,
    )
    near = unresolved(simulate_load(str(exe)).problems)["compute_total"].near_misses
    assert [n.kind for n in near] == ["similar-name"]
    assert near[0].symbol == "compute_totals"


@pytest.mark.parametrize("flags", [(), ("-Wl,-z,now",)])
def test_report_text_groups_by_cause(tmp_path: Path, flags: tuple[str, ...]) -> None:
    from ldscope.report._load_text import render_load_text

    exe = build_pair(
        tmp_path, "grp",
        "int f1(int a) { return a; }\nint f2(int a) { return a; }\nint f3(int a) { return a; }\n",
        "int f1(long a) { return (int)a; }\nint f2(long a) { return (int)a; }\nint f3(long a) { return (int)a; }\n",
        "int f1(int); int f2(int); int f3(int);\nint main() { return f1(1) + f2(2) + f3(3); }\n",
        user_flags=flags,
    )
    text = render_load_text(simulate_load(str(exe)))
    assert text.count("was built against another version of libgrp.so") == 1
    assert "(3 symbols)" in text
    assert text.count("parameter 1: int → long") == 3


def test_mangled_name_filter_keeps_every_definition_of_the_function() -> None:
    """The C++ near-miss search only parses mangled names containing the wanted function's
    <source-name> (or std::'s abbreviation): on every C++ export of libstdc++ and a sample
    of other system libraries, each name's parsed function is found by that filter."""
    import glob
    import random

    from ldscope.cxx._demangle import demangle_many
    from ldscope.cxx._signature import parse_signature
    from ldscope.elf import ElfFile
    from ldscope.explain._load_index import _mangled_tokens

    libs = sorted(glob.glob("/usr/lib/x86_64-linux-gnu/libstdc++.so.6*"))[-1:]
    others = sorted(glob.glob("/usr/lib/x86_64-linux-gnu/lib*.so.*"))
    libs += random.Random(5).sample(others, min(40, len(others)))
    checked = 0
    for path in libs:
        try:
            with ElfFile.open(path) as elf:
                table = elf.dynsym
                names = [n for n in (table.names() if table is not None else []) if n.startswith("_Z")]
        except Exception:
            continue
        for mangled, pretty in zip(names, demangle_many(names)):
            if pretty is None:
                continue
            base = parse_signature(pretty).base_name
            tokens = _mangled_tokens(base)
            assert tokens is None or any(t in mangled for t in tokens), (path, mangled, pretty, base)
            checked += 1
    assert checked > 5000
