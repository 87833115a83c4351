"""Tests for ldscope.cxx._demangle: c++filt-compatible C++ and Rust demangling."""

from __future__ import annotations

import hashlib
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ldscope.cxx._demangle import backend_versions, demangle, demangle_many, is_mangled

CXXFILT = shutil.which("c++filt")
NM = shutil.which("nm")
LIBSTDCXX = Path("/usr/lib/x86_64-linux-gnu/libstdc++.so.6")
STRING = "std::basic_string<char, std::char_traits<char>, std::allocator<char> >"


def cxxfilt(names: list[str]) -> list[str | None]:
    """The oracle: one c++filt run over all names; None where it left a name unchanged."""
    assert CXXFILT is not None
    out = subprocess.run(
        [CXXFILT], input="\n".join(names) + "\n", capture_output=True, text=True, check=True
    ).stdout.split("\n")[: len(names)]
    return [None if o == n else o for n, o in zip(names, out, strict=True)]


def nm_names(*paths: Path, dynamic: bool) -> list[str]:
    """Symbol names of ELF files, one nm run (``-D`` names carry @VERSION suffixes)."""
    assert NM is not None
    args = [NM, "-D", "--defined-only"] if dynamic else [NM]
    proc = subprocess.run(
        [*args, *map(str, paths)], capture_output=True, text=True, errors="replace", check=False
    )
    return [line.split()[-1] for line in proc.stdout.splitlines() if line.split()]


@pytest.mark.parametrize(
    ("mangled", "expected"),
    [
        ("_Z3fooi", "foo(int)"),
        ("_ZNKSt6vectorIiSaIiEE4sizeEv", "std::vector<int, std::allocator<int> >::size() const"),
        ("_ZN3c104cuda29c10_cuda_check_implementationEiPKcS2_ib",
         "c10::cuda::c10_cuda_check_implementation(int, char const*, char const*, int, bool)"),
        ("_ZTV3Foo", "vtable for Foo"),
        ("_ZGVZ3foovE1x", "guard variable for foo()::x"),
        ("_Z3fooi.cold", "foo(int) [clone .cold]"),
        ("_GLOBAL__I_foo", "global constructors keyed to foo"),
        ("_ZN12_GLOBAL__N_13fooEv", "(anonymous namespace)::foo()"),
        ("_ZZ4mainENKUliE_clEi", "main::{lambda(int)#1}::operator()(int) const"),
        # c++filt runs with DMGL_VERBOSE: the std::string family is spelled in full ...
        ("_Z3fooSs", f"foo({STRING})"),
        ("_ZNKSi6gcountEv",
         "std::basic_istream<char, std::char_traits<char> >::gcount() const"),
        # ... and a '>' that follows such a spelling is separated from it.
        ("_ZNSt6vectorISsSaISsEE9push_backERKSs",
         f"std::vector<{STRING}, std::allocator<{STRING} > >::push_back({STRING} const&)"),
    ],
)  # fmt: skip
def test_known_cxx_names(mangled: str, expected: str) -> None:
    assert demangle(mangled) == expected


def test_version_suffix_is_kept() -> None:
    assert demangle("_ZNSt8ios_base4InitC1Ev@@GLIBCXX_3.4") == ("std::ios_base::Init::Init()@@GLIBCXX_3.4")
    assert demangle("_ZNKSs4sizeEv@GLIBCXX_3.4") == f"{STRING}::size() const@GLIBCXX_3.4"
    assert demangle("_ZGVbN2v_sin@@GLIBC_2.22") is None


@pytest.mark.parametrize(
    "name",
    [
        "_ZGVbN4v_sin",  # vector-ABI name: _Z prefix but not C++
        "_ZGVdN8v_logf",
        "_GLOBAL__sub_I_foo.cpp",
        "main",
        "i",  # a bare type: __cxa_demangle would say "int", c++filt leaves it alone
        "",
        "_Z",
        "_R",
        "_ZN",
        "_Z3foo\x00i",
        "_Z3foo\udc80",
        "_RAISE_SYNTAX_ERROR",
        "_ZN3foo3bar17h0123456789abcdefE$x",
    ],
)
def test_not_mangled_gives_none(name: str) -> None:
    assert demangle(name) is None
    assert not is_mangled(name)


def test_demangle_many_matches_demangle() -> None:
    names = ["_Z3fooi", "main", "_ZGVbN4v_sin", "_ZNSsC1Ev@@GLIBCXX_3.4", "_RNvC6_123foo3bar"]
    assert demangle_many(names) == [demangle(n) for n in names]
    assert demangle_many(names)[1] is None
    assert demangle_many([]) == []


def test_backends_are_installed() -> None:
    versions = backend_versions()
    assert versions["c++"] == "libstdc++.so.6 __cxa_demangle"
    assert versions["rust"] is not None and versions["rust"].startswith("pyderust ")


@given(st.text(max_size=200))
@settings(max_examples=300, deadline=None)
def test_never_raises_on_any_text(text: str) -> None:
    for name in (text, "_Z" + text, "_ZN" + text, "_R" + text, "_GLOBAL__I_" + text):
        out = demangle(name)
        assert out is None or isinstance(out, str)
    assert len(demangle_many([text, "_Z" + text])) == 2


@given(st.text(alphabet="_ZNKSt0123456789vEIiPRcdlmCDTS$@.abxyz", max_size=60))
@settings(max_examples=300, deadline=None)
def test_never_raises_on_mangled_looking_text(text: str) -> None:
    out = demangle("_Z" + text)
    assert out is None or isinstance(out, str)


# --------------------------------------------------------------------------- differential

# Known engine skew between this machine's libstdc++ (GCC 12 libiberty, behind
# __cxa_demangle) and binutils 2.40's c++filt; see docs/demangling.md.
KNOWN_SKEW = re.compile(r"DF16_|DF32_|DF64_|DF128_|DF\d+x|DB\d|DU\d")


def _sample(names: list[str], keep: int) -> list[str]:
    """A deterministic sample: the names whose hash is smallest."""
    return sorted(names, key=lambda n: hashlib.sha1(n.encode()).digest())[:keep]


@pytest.mark.skipif(CXXFILT is None or NM is None, reason="binutils not installed")
def test_agrees_with_cxxfilt_on_system_cxx_libraries() -> None:
    libdir = LIBSTDCXX.parent
    if not LIBSTDCXX.exists():
        pytest.skip("libstdc++.so.6 not found")
    names = [n for n in nm_names(LIBSTDCXX, dynamic=True) if n.startswith("_Z")]
    libs = [p for p in sorted(libdir.glob("lib*.so.*")) if p.is_file() and not p.is_symlink()]
    others = [n for n in nm_names(*libs, dynamic=True) if n.startswith("_Z")]
    sample = sorted(set(names) | set(_sample(sorted(set(others)), 20000)))
    assert len(sample) > 5000
    expected = cxxfilt(sample)
    got = demangle_many(sample)
    wrong = [
        (n, e, g)
        for n, e, g in zip(sample, expected, got, strict=True)
        if e != g and not (KNOWN_SKEW.search(n) or (e and "decltype" in e))
    ]
    assert wrong == []
    # libstdc++'s own exports must agree exactly, with no exception at all.
    exact = dict(zip(sample, zip(expected, got, strict=True), strict=True))
    assert all(exact[n][0] == exact[n][1] for n in names)


@pytest.mark.skipif(CXXFILT is None or shutil.which("g++") is None, reason="needs g++ and c++filt")
def test_agrees_with_cxxfilt_on_fresh_cxx_object(tmp_path: Path) -> None:
    src = tmp_path / "t.cpp"
    src.write_text(
        "#include <string>\n#include <map>\n#include <functional>\n#include <iostream>\n"
        "namespace { int anon(int x) { return x; } }\n"
        "struct S { int f(int) const & { return 1; } bool operator<(const S&) const "
        "{ return true; } operator bool() const { return true; } };\n"
        "std::string tag(std::map<std::string, int> const& m) { return m.begin()->first; }\n"
        "void print(std::ostream& o, std::istream& i) { o << i.rdbuf(); }\n"
        "template <class T> T twice(T t) { return t + t; }\n"
        "int use() { auto l = [](int a) { return a; }; std::function<int(int)> f = l; S s;\n"
        "  return anon(1) + s.f(1) + (s < s) + bool(s) + f(2) + twice(3) + (int)twice(4.0); }\n"
    )
    obj = tmp_path / "t.o"
    subprocess.run(["g++", "-c", "-O0", "-o", str(obj), str(src)], check=True)
    names = sorted({n for n in nm_names(obj, dynamic=False) if n.startswith("_Z")})
    assert len(names) > 50
    assert demangle_many(names) == cxxfilt(names)


RUST_SRC = """
pub struct Wrapper<T>(pub T);
pub trait Shape { fn area(&self) -> f64; }
impl Shape for Wrapper<f64> { fn area(&self) -> f64 { self.0 * self.0 } }
impl<T: Clone> Wrapper<T> { #[inline(never)] pub fn get(&self) -> T { self.0.clone() } }
#[inline(never)] pub fn generic<T: std::fmt::Debug>(x: T) -> String { format!("{:?}", x) }
#[inline(never)] pub fn with_closure(v: &[i32]) -> i32 { v.iter().map(|x| x * 2).sum() }
pub fn run() -> usize {
    let w = Wrapper(2.5f64);
    let d: &dyn Shape = &w;
    generic(1u8).len() + generic("s").len() + with_closure(&[1, 2]) as usize
        + d.area() as usize + Wrapper(3u32).get() as usize
}
"""


@pytest.fixture(scope="module")
def rust_names(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[str]]:
    """Symbols of a tiny crate built with legacy and with v0 mangling."""
    if shutil.which("rustc") is None or NM is None:
        pytest.skip("rustc or nm not installed")
    d = tmp_path_factory.mktemp("rust")
    (d / "lib.rs").write_text(RUST_SRC)
    found: dict[str, list[str]] = {}
    for scheme, extra in (("legacy", []), ("v0", ["-C", "symbol-mangling-version=v0"])):
        out = d / f"{scheme}.o"
        cmd = ["rustc", "--crate-type=lib", "--emit=obj", "-O", *extra, "-o", str(out)]
        subprocess.run([*cmd, str(d / "lib.rs")], check=True, capture_output=True)
        found[scheme] = sorted({n for n in nm_names(out, dynamic=False) if n[:2] in ("_Z", "_R")})
    return found


@pytest.mark.skipif(CXXFILT is None, reason="c++filt not installed")
@pytest.mark.parametrize("scheme", ["legacy", "v0"])
def test_rust_names_agree_with_cxxfilt(rust_names: dict[str, list[str]], scheme: str) -> None:
    names = rust_names[scheme]
    assert names, f"no {scheme} symbols built"
    got = demangle_many(names)
    assert got == cxxfilt(names)
    texts = [g for g in got if g]
    assert any("lib" in g and "with_closure" in g for g in texts)
    own = [n for n in names if "with_closure" in n]
    assert own
    if scheme == "legacy":
        assert all(n.startswith("_ZN") for n in own)
        assert any(re.search(r"::h[0-9a-f]{16}$", g) for g in texts)  # hash kept, as c++filt
    else:
        assert all(n.startswith("_R") for n in own)
        assert any(re.search(r"lib\[[0-9a-f]+\]::", g) for g in texts)  # crate disambiguator


def test_rust_suffixes_are_dropped_like_cxxfilt() -> None:
    base = "_ZN3foo3bar17h0123456789abcdefE"
    assert demangle(base) == "foo::bar::h0123456789abcdef"
    assert demangle(base + ".llvm.1234") == "foo::bar::h0123456789abcdef"
    assert demangle("_RNvC6_123foo3bar.0") == "123foo::bar"


def test_demangle_many_matches_demangle_one_by_one() -> None:
    # Speed is measured in benchmarks/bench_demangle.py, never asserted here.
    names = [
        "_ZNKSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEE4findEPKcmm@@GLIBCXX_3.4.21",
        "_ZNSt6vectorISsSaISsEE9push_backERKSs",
        "_ZN3c104cuda29c10_cuda_check_implementationEiPKcS2_ib",
        "memcpy@GLIBC_2.14",
    ]
    out = demangle_many(names)
    assert out == [demangle(n) for n in names]
    assert out[-1] is None and out[2] == (
        "c10::cuda::c10_cuda_check_implementation(int, char const*, char const*, int, bool)"
    )
