"""Demangle Itanium C++ and Rust (legacy and v0) symbol names the way binutils ``c++filt`` does.

Backends, chosen by measurement (see ``docs/demangling.md`` and
``benchmarks/bench_demangle.py``):

* C++ (Itanium ABI): ``cxxfilt``, a thin ctypes wrapper around libstdc++'s
  ``abi::__cxa_demangle``.  That is the same libiberty ``cp-demangle.c`` code that
  ``c++filt`` runs; the only differences are the option flags, which this module
  reproduces: ``c++filt`` never demangles bare types (``i`` -> ``int``), so only ``_Z``
  and ``_GLOBAL_[._$][DI]_`` names are passed, and ``c++filt`` runs with
  ``DMGL_VERBOSE``, which spells the four standard abbreviations ``std::string``,
  ``std::istream``, ``std::ostream`` and ``std::iostream`` in full.
* Rust: ``pyderust`` (bindings for the ``rustc-demangle`` crate, which libiberty's
  ``rust-demangle.c`` was ported from), with the hash kept as ``c++filt`` does.

Like ``c++filt`` the Rust demangler is tried first for ``_R`` names and for legacy names
(``_ZN...17h<16 hex digits>E``), and the C++ demangler is the fallback.  A GNU symbol
version (``name@VERSION`` / ``name@@VERSION``) is split off, the name demangled and the
suffix appended again, as ``c++filt`` does when it reads names on stdin.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Sequence

__all__ = ["backend_versions", "demangle", "demangle_many", "is_mangled"]

# Names c++filt hands to its demanglers; everything else it prints unchanged.
_RUST_LEGACY = re.compile(r"_ZN.*17h[0-9a-f]{16}E(?=\.|$)")
_GLOBAL_CTOR = re.compile(r"_GLOBAL_[._$][DI]_")

# c++filt runs with DMGL_VERBOSE; __cxa_demangle does not.  In cp-demangle.c that flag
# selects the full spelling of these standard substitutions (Ss, Si, So, Sd).
_VERBOSE_SPELLING = {
    "string": "std::basic_string<char, std::char_traits<char>, std::allocator<char> >",
    "istream": "std::basic_istream<char, std::char_traits<char> >",
    "ostream": "std::basic_ostream<char, std::char_traits<char> >",
    "iostream": "std::basic_iostream<char, std::char_traits<char> >",
}
_ABBREVIATION = re.compile(r"(?<![\w$:])std::(string|istream|ostream|iostream)(?![\w$])")


def _expand(match: re.Match[str]) -> str:
    full = _VERBOSE_SPELLING[match.group(1)]
    # cp-demangle separates a closing '>' from a spelling that already ends in '>'.
    return full + " " if match.string.startswith(">", match.end()) else full


def _load_cxx() -> Callable[[bytes], bytes] | None:
    """libstdc++'s __cxa_demangle through ctypes, as cxxfilt calls it.

    Bound here directly because importing cxxfilt locates libc and libstdc++ with
    ctypes.util.find_library, which runs `ldconfig -p` in a child process: 8 ms of every
    scan that reports a C++ symbol. cxxfilt stays the fallback where the sonames differ.
    """
    import ctypes

    try:
        libcxx = ctypes.CDLL("libstdc++.so.6")
        libc = ctypes.CDLL("libc.so.6")
    except OSError:
        return _load_cxxfilt()
    cxa_demangle = libcxx.__cxa_demangle
    cxa_demangle.restype = ctypes.c_void_p
    cxa_demangle.argtypes = [ctypes.c_char_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.POINTER(ctypes.c_int)]
    free = libc.free
    free.argtypes = [ctypes.c_void_p]
    free.restype = None

    def run(name: bytes) -> bytes:
        status = ctypes.c_int(0)
        result = cxa_demangle(name, None, None, ctypes.byref(status))
        if not result:
            return b""  # not a valid mangled name (status -2): no demangling
        try:
            return ctypes.string_at(result) if status.value == 0 else b""
        finally:
            free(result)

    run.source = "libstdc++.so.6 __cxa_demangle"  # type: ignore[attr-defined]
    return run


def _load_cxxfilt() -> Callable[[bytes], bytes] | None:
    try:
        import cxxfilt
    except Exception:  # pragma: no cover - dependency missing or libstdc++ unusable
        return None
    demangler = cxxfilt.default_demangler

    def run(name: bytes) -> bytes:
        result: bytes = demangler.demangleb(name, external_only=False)
        return result

    return run


def _load_rust() -> Callable[[str], str] | None:
    try:
        import pyderust
    except Exception:  # pragma: no cover - dependency missing
        return None

    def run(name: str) -> str:
        return pyderust.demangle(name, include_hash=True)

    return run


# Loaded on first use: cxxfilt opens libstdc++ through ctypes, which costs a scan that
# has nothing to demangle 10 ms of start-up.
_cxx_backend = functools.cache(_load_cxx)
_rust_backend = functools.cache(_load_rust)


def _cxx(name: str) -> str | None:
    backend = _cxx_backend()
    if backend is None or "\x00" in name:
        return None
    try:
        out = backend(name.encode("utf-8", "surrogateescape")).decode("utf-8", "replace")
    except Exception:
        return None
    if not out or out == name:
        return None
    if "std::string" in out or "stream" in out:
        out = _ABBREVIATION.sub(_expand, out)
    return out


def _rust(name: str) -> str | None:
    backend = _rust_backend()
    if backend is None:
        return None
    try:
        out = backend(name)
    except Exception:
        return None
    return out if out and out != name else None


def _demangle_bare(name: str) -> str | None:
    if name.startswith("_Z"):
        legacy = _RUST_LEGACY.match(name)
        if legacy is not None:
            # libiberty drops a '.suffix' (``.0``, ``.llvm.123``) after a Rust name.
            out = _rust(legacy.group(0))
            if out is not None:
                return out
        return _cxx(name)
    if name.startswith("_R"):
        dot = name.find(".")
        return _rust(name if dot < 0 else name[:dot])
    if name.startswith("_GLOBAL_") and _GLOBAL_CTOR.match(name):
        return _cxx(name)
    if name[:1] in (".", "$") and len(name) > 1:
        # c++filt skips one leading '.' or '$' (assembler decoration), re-printing the '.'.
        out = _demangle_bare(name[1:])
        if out is not None and name[0] == ".":
            return "." + out
        return out
    return None


def demangle(name: str) -> str | None:
    """Demangle one C++/Rust symbol name as ``c++filt`` does; None if it is not mangled."""
    try:
        at = name.find("@")
        if at < 0:
            return _demangle_bare(name)
        out = _demangle_bare(name[:at])
        return None if out is None else out + name[at:]
    except Exception:  # never raise, whatever the input
        return None


# The ABI's standard substitutions as c++filt spells them (DMGL_VERBOSE) and as the linkers
# do (bfd, gold, lld and mold demangle without it). A compiler always writes these types in
# their abbreviated form (Ss, Si, So, Sd), so the long spelling only ever comes from those.
_SHORT_FORMS = (
    ("std::basic_string<char, std::char_traits<char>, std::allocator<char> >", "std::string"),
    ("std::basic_iostream<char, std::char_traits<char> >", "std::iostream"),
    ("std::basic_istream<char, std::char_traits<char> >", "std::istream"),
    ("std::basic_ostream<char, std::char_traits<char> >", "std::ostream"),
)


def demangle_like_linkers(name: str) -> str | None:
    """Demangle as the linkers print names in their messages: c++filt's text with the
    standard substitutions short (`YAML::Load(std::istream&)`)."""
    out = demangle(name)
    if out is None:
        return None
    for long_form, short in _SHORT_FORMS:
        out = out.replace(long_form, short)
    return out


def demangle_many(names: Sequence[str]) -> list[str | None]:
    """Demangle a batch of names (the fast path); one result (or None) per input name."""
    out: list[str | None] = []
    append = out.append
    bare = _demangle_bare
    for name in names:
        try:
            if name.startswith(("_Z", "_R", "_GLOBAL_", ".", "$")):
                at = name.find("@")
                if at < 0:
                    append(bare(name))
                else:
                    res = bare(name[:at])
                    append(None if res is None else res + name[at:])
            else:
                append(None)
        except Exception:
            append(None)
    return out


def is_mangled(name: str) -> bool:
    """True if ``name`` demangles (i.e. it is a valid C++ or Rust mangled name)."""
    return demangle(name) is not None


def backend_versions() -> dict[str, str | None]:
    """The backend that demangles each language, with its version (None when unavailable)."""
    from importlib.metadata import PackageNotFoundError, version

    def installed(dist: str) -> str | None:
        try:
            return f"{dist} {version(dist)}"
        except PackageNotFoundError:  # pragma: no cover
            return None

    cxx = _cxx_backend()
    return {
        "c++": None if cxx is None else getattr(cxx, "source", None) or installed("cxxfilt"),
        "rust": installed("pyderust") if _rust_backend() is not None else None,
    }
