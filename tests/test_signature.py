"""Tests for ldscope.cxx._signature: parsing c++filt output and explaining signature differences."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ldscope.cxx._demangle import demangle, demangle_many
from ldscope.cxx._signature import (
    DIFFERENCE_KINDS,
    Signature,
    SignatureDifference,
    compare_signatures,
    parse_signature,
)

STRING = "std::basic_string<char, std::char_traits<char>, std::allocator<char> >"
GXX = shutil.which("g++")
NM = shutil.which("nm")
LIBSTDCXX = Path("/usr/lib/x86_64-linux-gnu/libstdc++.so.6")


def kinds(wanted: str, found: str) -> list[tuple[str, int | None]]:
    return [(d.kind, d.index) for d in compare_signatures(parse_signature(wanted), parse_signature(found))]


# --------------------------------------------------------------------------- parsing


def test_plain_function() -> None:
    sig = parse_signature(
        "c10::cuda::c10_cuda_check_implementation(int, char const*, char const*, int, bool)"
    )
    assert sig.is_function
    assert sig.qualified_name == "c10::cuda::c10_cuda_check_implementation"
    assert sig.scope == "c10::cuda"
    assert sig.base_name == "c10_cuda_check_implementation"
    assert sig.parameters == ("int", "char const*", "char const*", "int", "bool")
    assert sig.return_type is None and sig.template_args == () and sig.qualifiers == ()


def test_member_of_class_template_keeps_its_args_in_the_name() -> None:
    sig = parse_signature("std::vector<int, std::allocator<int> >::push_back(int const&)")
    assert sig.qualified_name == "std::vector<int, std::allocator<int> >::push_back"
    assert sig.scope == "std::vector<int, std::allocator<int> >"
    assert sig.base_name == "push_back"
    assert sig.parameters == ("int const&",)


def test_template_function_has_return_type_and_template_args() -> None:
    sig = parse_signature("long S::conv<long, char>(long, void (*)(int, char), std::pair<int, int>)")
    assert sig.return_type == "long"
    assert sig.qualified_name == "S::conv"
    assert sig.template_args == ("long", "char")
    assert sig.parameters == ("long", "void (*)(int, char)", "std::pair<int, int>")


@pytest.mark.parametrize(
    ("text", "base", "params", "quals"),
    [
        ("S::operator()(int, char)", "operator()", ("int", "char"), ()),
        ("S::operator<(S const&) const", "operator<", ("S const&",), ("const",)),
        ("S::operator<<(int)", "operator<<", ("int",), ()),
        ("S::operator,(int)", "operator,", ("int",), ()),
        ("S::operator->() const", "operator->", (), ("const",)),
        ("S::operator bool() const", "operator bool", (), ("const",)),
        ("S::operator std::vector<int, std::allocator<int> >() const",
         "operator std::vector<int, std::allocator<int> >", (), ("const",)),
        ("operator new[](unsigned long)", "operator new[]", ("unsigned long",), ()),
        ('operator"" _km(unsigned long long)', 'operator"" _km', ("unsigned long long",), ()),
        ("S::operator void (S::*)()() const", "operator void (S::*)()", (), ("const",)),
        ("std::map<int, int>::operator[](int const&)", "operator[]", ("int const&",), ()),
        ("S::f(int) const &", "f", ("int",), ("const", "&")),
        ("S::g(int) &&", "g", ("int",), ("&&",)),
        ("S::h() volatile", "h", (), ("volatile",)),
        ("S::h() const noexcept", "h", (), ("const", "noexcept")),
        ("foo(int (&) [3], int (S::*)(int) const)", "foo", ("int (&) [3]", "int (S::*)(int) const"), ()),
        ("f(...)", "f", ("...",), ()),
    ],
)  # fmt: skip
def test_operators_and_qualifiers(
    text: str, base: str, params: tuple[str, ...], quals: tuple[str, ...]
) -> None:
    sig = parse_signature(text)
    assert sig.is_function
    assert sig.base_name == base
    assert sig.parameters == params
    assert sig.qualifiers == quals


def test_operator_less_with_template_args() -> None:
    sig = parse_signature(
        f"bool std::operator< <{STRING}, int>(std::pair<int, int> const&, std::pair<int, int> const&)"
    )
    assert sig.base_name == "operator<"
    assert sig.return_type == "bool"
    assert sig.template_args == (STRING, "int")
    assert sig.parameters == ("std::pair<int, int> const&", "std::pair<int, int> const&")


def test_lambdas_anonymous_namespaces_and_local_entities() -> None:
    lam = parse_signature("use()::{lambda(int, char)#1}::operator()(int, char) const")
    assert lam.scope == "use()::{lambda(int, char)#1}"
    assert lam.base_name == "operator()"
    assert lam.parameters == ("int", "char")
    assert lam.qualifiers == ("const",)
    anon = parse_signature("(anonymous namespace)::helper(int)")
    assert anon.scope == "(anonymous namespace)" and anon.base_name == "helper"
    assert anon.parameters == ("int",)
    local = parse_signature("use()::local_static")
    assert not local.is_function
    assert local.scope == "use()" and local.base_name == "local_static"
    ret = parse_signature(
        "use()::{lambda(int)#1} const& std::_Any_data::_M_access<use()::{lambda(int)#1}>() const"
    )
    assert ret.return_type == "use()::{lambda(int)#1} const&"
    assert ret.qualified_name == "std::_Any_data::_M_access"
    assert ret.template_args == ("use()::{lambda(int)#1}",)


def test_abi_tags_versions_and_clones() -> None:
    sig = parse_signature("ns::Foo[abi:v1]::bar[abi:cxx11](int) [clone .cold] [clone .isra.0]")
    assert sig.qualified_name == "ns::Foo::bar"
    assert sig.abi_tags == ("[abi:v1]", "[abi:cxx11]")
    assert sig.name_abi_tags == ("[abi:cxx11]",)
    assert sig.clones == (".cold", ".isra.0")
    ver = parse_signature("std::ios_base::Init::Init()@@GLIBCXX_3.4")
    assert ver.version == "@@GLIBCXX_3.4"
    assert ver.qualified_name == "std::ios_base::Init::Init" and ver.parameters == ()


@pytest.mark.parametrize(
    ("text", "special", "qualified"),
    [
        ("vtable for std::basic_ostream<char, std::char_traits<char> >", "vtable for ",
         "std::basic_ostream<char, std::char_traits<char> >"),
        ("typeinfo for Foo", "typeinfo for ", "Foo"),
        ("typeinfo name for int (char)", "typeinfo name for ", "int (char)"),
        ("guard variable for foo()::x", "guard variable for ", "foo()::x"),
        ("VTT for Bar", "VTT for ", "Bar"),
        ("reference temporary #0 for ns::x", "reference temporary #0 for ", "ns::x"),
        ("foo::bar", None, "foo::bar"),
    ],
)  # fmt: skip
def test_data_symbols_are_not_functions(text: str, special: str | None, qualified: str) -> None:
    sig = parse_signature(text)
    assert not sig.is_function
    assert sig.special == special
    assert sig.qualified_name == qualified
    assert sig.parameters == ()


def test_thunks_are_functions() -> None:
    sig = parse_signature("non-virtual thunk to Foo::bar(int) const")
    assert sig.is_function and sig.special == "non-virtual thunk to "
    assert sig.qualified_name == "Foo::bar" and sig.parameters == ("int",)


def test_signature_is_frozen() -> None:
    sig = parse_signature("f(int)")
    with pytest.raises(AttributeError):
        sig.base_name = "g"  # type: ignore[misc]


@given(st.text(alphabet="()<>[]{},:& *abcoperatnsd#0123456789-\"'", max_size=80))
@settings(max_examples=400, deadline=None)
def test_parse_never_raises_on_bracket_soup(text: str) -> None:
    sig = parse_signature(text)
    assert isinstance(sig, Signature)
    other = parse_signature(text[::-1])
    assert all(isinstance(d, SignatureDifference) for d in compare_signatures(sig, other))


@given(st.text(max_size=120))
@settings(max_examples=300, deadline=None)
def test_parse_never_raises_on_any_text(text: str) -> None:
    sig = parse_signature(text)
    assert isinstance(sig.qualified_name, str)
    assert isinstance(sig.format(), str)


@pytest.mark.skipif(NM is None or not LIBSTDCXX.exists(), reason="needs nm and libstdc++")
def test_round_trip_over_libstdcxx_exports() -> None:
    proc = subprocess.run([NM, "-D", "--defined-only", str(LIBSTDCXX)], capture_output=True, text=True)
    names = [line.split()[-1] for line in proc.stdout.splitlines() if "_Z" in line]
    texts = [t for t in demangle_many(names) if t]
    assert len(texts) > 3000

    def squash(s: str) -> str:  # scope tags are moved to abi_tags; c++filt's spacing varies
        return re.sub(r"\s+|\[abi:[^\]]*\]", "", s).replace("<>(", "(")

    for text in texts:
        sig = parse_signature(text)
        core = re.sub(r"@{1,2}[\w.]*$", "", text)
        core = re.sub(r"(\s*\[clone [^\]]*\])+$", "", core)
        assert squash(sig.format()) == squash(core), text
        assert set(sig.abi_tags) == set(re.findall(r"\[abi:[^\]]*\]", core)), text
        if sig.is_function and sig.special is None:
            assert "(" not in sig.base_name or sig.base_name.startswith("operator"), text


# --------------------------------------------------------------------------- comparing


def test_parameter_changed_describes_position_and_types() -> None:
    diffs = compare_signatures(
        parse_signature("api(int, char const*, long, int)"),
        parse_signature("api(int, char const*, long, unsigned int)"),
    )
    assert [(d.kind, d.index, d.wanted, d.found) for d in diffs] == [
        ("parameter-changed", 4, "int", "unsigned int")
    ]
    assert diffs[0].describe() == "parameter 4: int → unsigned int"


def test_added_removed_and_whitespace_only() -> None:
    assert kinds("f(int, char)", "f(int, long, char)") == [("parameter-added", 2)]
    assert kinds("f(int, long, char)", "f(int, char)") == [("parameter-removed", 2)]
    assert (
        kinds(
            "std::vector<int,std::allocator<int>>::push_back(int const &)",
            "std::vector<int, std::allocator<int> >::push_back(int const&)",
        )
        == []
    )


def test_qualifier_return_template_namespace_and_name() -> None:
    assert kinds("S::f(int) const", "S::f(int)") == [("qualifier-changed", None)]
    assert kinds("S::f() &", "S::f() &&") == [("qualifier-changed", None)]
    assert kinds("int f<int>(int)", "long f<long>(int)") == [
        ("template-changed", None),
        ("return-changed", None),
    ]
    assert kinds("a::b::f(int)", "a::c::f(int)") == [("namespace-moved", None)]
    assert kinds("a::f(int)", "a::g(int)") == [("name-changed", None)]
    assert kinds("vtable for Foo", "Foo::Foo()")[0] == ("kind-changed", None)


def test_cxx11_abi_is_recognised() -> None:
    new = f"f(std::__cxx11::{STRING[5:]} const&, std::__cxx11::list<int, std::allocator<int> >)"
    old = f"f({STRING} const&, std::list<int, std::allocator<int> >)"
    diffs = compare_signatures(parse_signature(new), parse_signature(old))
    assert [(d.kind, d.index) for d in diffs] == [("cxx11-abi", 1), ("cxx11-abi", 2)]
    assert "_GLIBCXX_USE_CXX11_ABI" in diffs[0].describe()
    assert kinds("name[abi:cxx11]()", "name()") == [("cxx11-abi", None)]
    assert kinds(f"std::__cxx11::{STRING[5:]}::size() const", f"{STRING}::size() const") == [
        ("cxx11-abi", None)
    ]
    assert kinds("f[abi:v2](int)", "f[abi:v1](int)") == [("abi-tag-changed", None)]


def test_all_kinds_are_declared() -> None:
    for wanted, found in [
        ("f(int)", "f(long)"),
        ("S::f(int) const", "S::f(int)"),
        ("foo[abi:cxx11](int)", "foo(int)"),
    ]:
        for d in compare_signatures(parse_signature(wanted), parse_signature(found)):
            assert d.kind in DIFFERENCE_KINDS


# --------------------------------------------------------------------------- real g++ builds


def _compile_names(tmp_path: Path, name: str, source: str, *flags: str) -> list[str]:
    assert GXX is not None and NM is not None
    src = tmp_path / f"{name}.cpp"
    src.write_text(source)
    obj = tmp_path / f"{name}.o"
    subprocess.run([GXX, "-c", "-O0", *flags, "-o", str(obj), str(src)], check=True)
    out = subprocess.run([NM, "--defined-only", str(obj)], capture_output=True, text=True).stdout
    return [line.split()[-1] for line in out.splitlines() if " T " in line or " W " in line]


def _parsed(names: list[str], base: str) -> Signature:
    sigs = [parse_signature(t) for t in (demangle(n) for n in names) if t]
    (match,) = [s for s in sigs if s.base_name == base]
    return match


@pytest.mark.skipif(GXX is None or NM is None, reason="needs g++ and nm")
def test_real_objects_parameter_qualifier_namespace_changes(tmp_path: Path) -> None:
    wanted = _compile_names(
        tmp_path, "wanted",
        "namespace lib { struct W { int size() const; };\n"
        "int W::size() const { return 1; }\n"
        "void api(int, char const*, long, int) {} }\n",
    )  # fmt: skip
    found = _compile_names(
        tmp_path, "found",
        "namespace lib2 { void api(int, char const*, long, unsigned int) {} }\n"
        "namespace lib { struct W { int size(); }; int W::size() { return 1; } }\n",
    )  # fmt: skip
    api = compare_signatures(_parsed(wanted, "api"), _parsed(found, "api"))
    assert [d.describe() for d in api] == [
        "scope: lib → lib2 (moved to another namespace/class)",
        "parameter 4: int → unsigned int",
    ]
    size = compare_signatures(_parsed(wanted, "size"), _parsed(found, "size"))
    assert [(d.kind, d.wanted, d.found) for d in size] == [("qualifier-changed", "const", "")]


@pytest.mark.skipif(GXX is None or NM is None, reason="needs g++ and nm")
def test_real_objects_glibcxx_use_cxx11_abi(tmp_path: Path) -> None:
    source = (
        "#include <string>\n#include <list>\n"
        "void take(std::string const& s, std::list<int> l, int n) { (void)s; (void)l; (void)n; }\n"
    )
    new = _compile_names(tmp_path, "new", source, "-D_GLIBCXX_USE_CXX11_ABI=1")
    old = _compile_names(tmp_path, "old", source, "-D_GLIBCXX_USE_CXX11_ABI=0")
    diffs = compare_signatures(_parsed(new, "take"), _parsed(old, "take"))
    assert [(d.kind, d.index) for d in diffs] == [("cxx11-abi", 1), ("cxx11-abi", 2)]
    assert diffs[0].wanted.startswith("std::__cxx11::basic_string<char")
    assert diffs[0].found.startswith("std::basic_string<char")


@pytest.mark.skipif(GXX is None or NM is None, reason="needs g++ and nm")
def test_real_objects_template_instantiations(tmp_path: Path) -> None:
    source = "template <class T> T twice(T t) { return t + t; }\ntemplate %s twice<%s>(%s);\n"
    a = _compile_names(tmp_path, "a", source % ("int", "int", "int"))
    b = _compile_names(tmp_path, "b", source % ("long", "long", "long"))
    wanted, found = _parsed(a, "twice"), _parsed(b, "twice")
    assert wanted.return_type == "int" and wanted.template_args == ("int",)
    diffs = compare_signatures(wanted, found)
    assert [d.kind for d in diffs] == ["template-changed", "return-changed", "parameter-changed"]
    assert diffs[2].describe() == "parameter 1: int → long"
