"""Near-misses at link time: the same C++ function with another signature or ABI, or the
same name in another version. Signatures are compared with ldscope.cxx._signature, as the load
near-miss engine does."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from ldscope.cxx import DifferenceKind, compare_signatures, demangle, demangle_many, parse_signature
from ldscope.linker.inputs import ArchiveFacts, MemberProblem, ObjectFacts, SharedFacts
from ldscope.vocab import NearMiss, NearMissKind

MAX_MISSES = 5

Source = tuple[str, ObjectFacts | SharedFacts | ArchiveFacts]


def _names(facts: ObjectFacts | SharedFacts | ArchiveFacts) -> Iterable[str]:
    if isinstance(facts, SharedFacts):
        return facts.defs.keys()
    if isinstance(facts, ObjectFacts):
        return (*facts.strong, *facts.weak, *facts.common)
    if facts.has_gnu_index:
        return (s for s, _ in facts.index_entries)
    return facts.lazy_symbols().keys()


def _member_of(facts: ArchiveFacts, key: str, where: str) -> str:
    for s, m in facts.index_entries:
        if s == key:
            return f"{where}({facts.member_names[m]})"
    for m in facts.lazy_symbols().get(key, []):
        got = facts.member(m)
        if not isinstance(got, MemberProblem):
            return f"{where}({facts.member_names[m]})"
    return where


def cxx_near_misses(key: str, sources: list[Source]) -> tuple[NearMiss, ...]:
    """Definitions whose demangled name matches the wanted one but whose signature differs."""
    base_key = key.split("@", 1)[0]
    wanted_text = demangle(base_key)
    if wanted_text is None:
        return ()
    wanted = parse_signature(wanted_text)
    needle = wanted.base_name
    found: list[NearMiss] = []
    for where, facts in sources:
        cands = [n for n in _names(facts) if n.startswith("_Z") and n != base_key and needle in n]
        if not cands:
            continue
        for name, text in zip(cands, demangle_many(cands)):
            if text is None:
                continue
            sig = parse_signature(text.split("@", 1)[0])
            if sig.qualified_name != wanted.qualified_name and sig.base_name != wanted.base_name:
                continue
            diffs = compare_signatures(wanted, sig)
            if not diffs or any(d.kind == DifferenceKind.NAME_CHANGED for d in diffs):
                continue
            cxx11 = any(d.kind == DifferenceKind.CXX11_ABI for d in diffs)
            kind = NearMissKind.CXX11_ABI if cxx11 else NearMissKind(diffs[0].kind.value)
            place = _member_of(facts, name, where) if isinstance(facts, ArchiveFacts) else where
            described = tuple(d.describe() for d in diffs)
            found.append(NearMiss(name, text, place, "; ".join(described), kind, described))
            if len(found) >= MAX_MISSES:
                return tuple(found)
    return tuple(found)


def version_near_misses(key: str, sources: Sequence[Source]) -> tuple[NearMiss, ...]:
    """The name exists, but only in another (or a hidden) version."""
    base, _, want_ver = key.partition("@")
    out: list[NearMiss] = []
    for where, facts in sources:
        if not isinstance(facts, SharedFacts):
            continue
        for k in facts.defs:
            if not k.startswith(base + "@") or k == key:
                continue
            ver = k.split("@", 1)[1]
            default = facts.display.get(base) == f"{base}@@{ver}"
            kind = NearMissKind.OTHER_VERSION if want_ver or default else NearMissKind.HIDDEN_VERSION
            text = (f"{where} has {k} (a hidden, non-default version: only an explicit "
                    f"reference to {k} can bind to it)" if kind == NearMissKind.HIDDEN_VERSION
                    else f"{where} has {facts.shown(k) if default else k}, not the version wanted")
            out.append(NearMiss(k, demangle(base), where, text, kind, (text,)))
            if len(out) >= MAX_MISSES:
                return tuple(out)
    return tuple(out)
