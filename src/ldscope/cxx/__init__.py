"""Symbol names made readable and comparable: demangling (C++ and Rust, as c++filt does) and
C++ signatures parsed into parts, compared parameter by parameter."""

from __future__ import annotations

from ldscope.cxx._demangle import backend_versions, demangle, demangle_like_linkers, demangle_many, is_mangled
from ldscope.cxx._signature import (
    DIFFERENCE_KINDS,
    DifferenceKind,
    Signature,
    SignatureDifference,
    compare_signatures,
    parse_signature,
)

__all__ = [
    "DIFFERENCE_KINDS",
    "DifferenceKind",
    "Signature",
    "SignatureDifference",
    "backend_versions",
    "compare_signatures",
    "demangle",
    "demangle_like_linkers",
    "demangle_many",
    "is_mangled",
    "parse_signature",
]
