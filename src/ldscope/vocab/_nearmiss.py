"""A near-miss: something close to what was wanted, and why it did not count."""

from __future__ import annotations

from dataclasses import dataclass

from ldscope.vocab._words import Words


class NearMissKind(Words):
    """How the thing found differs from the one wanted."""

    # the same name in another (or a hidden) version
    OTHER_VERSION = "other-version"
    HIDDEN_VERSION = "hidden-version"
    VERSION_FAMILY = "version-family"  # the library offers older versions of the family
    OTHER_COPY = "other-copy"  # another copy of the library defines the version
    # the same C++ entity with another signature (kinds of cxx.DifferenceKind)
    SIGNATURE_CHANGED = "signature-changed"
    PARAMETER_CHANGED = "parameter-changed"
    PARAMETER_ADDED = "parameter-added"
    PARAMETER_REMOVED = "parameter-removed"
    QUALIFIER_CHANGED = "qualifier-changed"
    RETURN_CHANGED = "return-changed"
    TEMPLATE_CHANGED = "template-changed"
    NAMESPACE_MOVED = "namespace-moved"
    ABI_TAG_CHANGED = "abi-tag-changed"
    KIND_CHANGED = "kind-changed"
    CXX11_ABI = "cxx11-abi"
    # the symbol exists, but not where it can be used
    PYTHON_API = "python-api"
    NOT_EXPORTED = "not-exported"
    NOT_IN_SCOPE = "not-in-scope"
    SIMILAR_NAME = "similar-name"
    # the library exists, but not where the loader looked
    FOUND_ELSEWHERE = "found-elsewhere"
    OTHER_RELEASE = "other-release"


@dataclass(frozen=True, slots=True)
class NearMiss:
    """Something close to what was wanted, with a one-line explanation a person can act on.

    `file` is where it is (a library, or `archive(member)`); `differences` lists, for link
    near-misses, each way the found symbol differs; `score` orders the candidates of one
    problem, best first.
    """

    symbol: str
    demangled: str | None
    file: str | None
    explanation: str
    kind: NearMissKind
    differences: tuple[str, ...] = ()
    score: float = 0.0
