"""Symbol binding and version checks, following glibc's dl-lookup.c and dl-version.c."""

from __future__ import annotations

import numpy as np

from ldscope.loader._image import Definition, ElfImage, Reference
from ldscope.loader._results import Binding, Problem
from ldscope.loader._search import LoadedObject
from ldscope.loader._symarrays import satisfied
from ldscope.vocab import ProblemKind, Severity, When


def match_in_object(
    image: ElfImage, defs: list[Definition], version: str | None, hidden_ref: bool, plt: bool
) -> Definition | None:
    """check_match over one object's candidates for a name, in dynsym (hash chain) order."""
    versioned: Definition | None = None
    num_versions = 0
    for d in defs:
        if d.plt_canonical and plt:
            continue  # a canonical PLT entry never satisfies a PLT lookup
        if version is not None:
            if not image.has_versym:
                return d  # unversioned library: any definition will do
            # check_match compares with map->l_versions[ndx], which _dl_check_map_versions
            # fills from verneed entries as well as non-base verdefs: an executable's
            # copy-relocated or canonical-PLT symbol carries the version it needs.
            defined_version = image.version_index_names.get(d.version_index)
            if defined_version != version and (hidden_ref or defined_version is not None or d.hidden):
                continue
            return d
        if image.has_versym and d.version_index >= 3:
            # Unversioned reference: later versions are used only if exactly one is visible.
            if not d.hidden:
                num_versions += 1
                if num_versions == 1:
                    versioned = d
            continue
        return d
    return versioned if version is None and num_versions == 1 else None


CHECK_MATCH_ASSERTION = (
    "Inconsistency detected by ld.so: dl-lookup.c: 107: check_match: Assertion "
    "`version->filename == NULL || ! _dl_name_match_p (version->filename, map)' failed!"
)


class CheckMatchAssertion(Exception):
    """ld.so aborts: a versioned reference met a same-named symbol in the very file its
    verneed entry names, and that file has no symbol versioning (no DT_VERSYM)."""

    def __init__(self, provider: LoadedObject) -> None:
        super().__init__(provider.path)
        self.provider = provider


def asserts_in_check_match(image: ElfImage, names_match: bool, ref: Reference,
                           defs: list[Definition]) -> bool:
    """dl-lookup.c check_match, glibc 2.36 built with assertions (Debian): for a versioned
    lookup in an object without l_versyms it asserts `version->filename == NULL ||
    !_dl_name_match_p (version->filename, map)` - the versioned object must not be the file
    the reference's verneed entry names.  Reached only by a candidate passing the earlier
    checks (here: a PLT lookup skips canonical PLT entries)."""
    if ref.version is None or image.has_versym or ref.version_file is None or not names_match:
        return False
    plt = not ref.at_load
    return any(not (d.plt_canonical and plt) for d in defs)


def lookup(
    ref: Reference, scopes: list[list[LoadedObject]], skip: LoadedObject | None
) -> tuple[LoadedObject, Definition] | None:
    """_dl_lookup_symbol_x: the first object in scope order that defines a matching symbol.

    Raises CheckMatchAssertion where ld.so would abort (see asserts_in_check_match)."""
    plt = not ref.at_load
    for scope in scopes:
        for obj in scope:
            if obj is skip:
                continue
            defs = obj.image.definitions.get(ref.name)
            if not defs:
                continue
            if ref.version_file is not None and asserts_in_check_match(
                    obj.image, obj.matches(ref.version_file), ref, defs):
                raise CheckMatchAssertion(obj)
            found = match_in_object(obj.image, defs, ref.version, False, plt)
            if found is not None:
                return obj, found
    return None


def _demangle(name: str) -> str | None:
    try:
        from ldscope.cxx import demangle
    except ImportError:  # pragma: no cover - the module ships with the package
        return None
    return demangle(name)


BindingCache = dict[tuple[object, ...], object]


def _satisfied(referrer: ElfImage, provider: ElfImage, cache: BindingCache) -> np.ndarray:
    """Which of referrer's failing references (reference_arrays) provider can satisfy
    (check_match), cached per pair.

    Whether a reference binds at all depends only on whether *some* file in scope matches
    it, so a scope's answer is the OR of these per-pair arrays: each pair is computed once
    per scan however many processes and scopes it appears in.
    """
    key = ("sat", id(referrer), id(provider))
    cached = cache.get(key)
    if cached is None:
        positions = referrer.reference_arrays.positions

        def match_many(entry: int, first: int, count: int) -> bool:
            ref = referrer.reference(int(positions[entry]))
            defs = provider.definition_run(first, count)
            return match_in_object(provider, defs, ref.version, False, not ref.at_load) is not None

        cached = satisfied(referrer.reference_arrays, provider.definition_arrays, provider.has_versym,
                           provider is referrer, match_many)
        cache[key] = cached
    assert isinstance(cached, np.ndarray)
    return cached


def _scopes(obj: LoadedObject) -> list[list[LoadedObject]]:
    scopes = obj.scope if obj.scope else [[obj]]
    if obj.image.symbolic:
        scopes = [[obj], *scopes]
    return scopes


def bind_object(
    obj: LoadedObject, main: LoadedObject | None, cache: BindingCache | None = None,
    scope_memo: ScopeMemo | None = None,
) -> tuple[list[Problem], list[Binding]]:
    """Resolve every relocation-referenced symbol of one object; problems for unresolved ones.

    With a cache, bindings are not recorded and work is shared between processes whose
    scopes hold the same files (see `_unresolved_cached`).
    """
    if cache is not None:
        image = obj.image
        return [_unresolved_problem(obj, image.reference(i))
                for i in _unresolved_cached(obj, cache, scope_memo)], []
    problems: list[Problem] = []
    bindings: list[Binding] = []
    scopes = _scopes(obj)
    deps: list[LoadedObject] | None = None
    for ref in obj.image.references:
        skip = obj if ref.is_copy else None
        when = When.LOAD if (ref.at_load or obj.bind_now) else When.FIRST_CALL
        try:
            found = lookup(ref, scopes, skip)
        except CheckMatchAssertion as exc:
            problems.append(_assertion_problem(obj, ref, exc.provider.path, when))
            continue
        if found is not None:
            bindings.append(Binding(obj.path, ref.name, ref.version, found[0].path, when))
            if ref.undefined and found[0] is not obj:
                if deps is None:
                    deps = _direct_dependencies(obj, scopes)
                note = _interposition(obj, ref, found[0], deps)
                if note is not None:
                    problems.append(note)
            continue
        if not _fails_unbound(ref):
            bindings.append(Binding(obj.path, ref.name, ref.version, None, When.NEVER))
            continue
        problems.append(_unresolved_problem(obj, ref))
    return problems, bindings


def _direct_dependencies(obj: LoadedObject, scopes: list[list[LoadedObject]]) -> list[LoadedObject]:
    """The loaded objects obj names in DT_NEEDED: what it was linked against."""
    in_scope = [o for scope in scopes for o in scope]
    deps: list[LoadedObject] = []
    for name in obj.image.needed:
        found = next((o for o in in_scope if o.matches(name)), None)
        if found is not None and found not in deps:
            deps.append(found)
    return deps


def _interposition(obj: LoadedObject, ref: Reference, winner: LoadedObject,
                   deps: list[LoadedObject]) -> Problem | None:
    """Info when a reference binds to another file than the one it was linked against
    (its verneed file, or a direct dependency that defines it)."""
    if ref.name in winner.image.copy_relocated_names:
        return None  # a copy relocation: the program's copy is meant to be the one everybody uses
    expected: LoadedObject | None = None
    if ref.version_file is not None:
        if winner.matches(ref.version_file):
            return None
        expected = next((d for d in deps if d.matches(ref.version_file)), None)
    elif winner not in deps:
        expected = next((d for d in deps if _matches(d.image, ref)), None)
    if expected is None or expected is winner:
        return None
    version = f"@{ref.version}" if ref.version else ""
    return Problem(
        ProblemKind.INTERPOSITION, Severity.INFO, obj.path,
        f"{obj.path}: {ref.name}{version} binds to {winner.path}, which comes first in the "
        f"lookup scope, not to {expected.path} that it was linked against",
        When.NEVER, symbol=ref.name, demangled=_demangle(ref.name), version=ref.version,
        library=winner.path, cause=f"interposition:{obj.path}:{winner.path}",
    )


def _fails_unbound(ref: Reference) -> bool:
    """An unbound reference fails unless weak, or a defined symbol's own (non-copy) use."""
    return not ref.weak and (ref.undefined or ref.is_copy)


def _matches(image: ElfImage, ref: Reference) -> bool:
    defs = image.definitions.get(ref.name)
    if not defs:
        return False
    return match_in_object(image, defs, ref.version, False, not ref.at_load) is not None


ScopeMemo = dict[tuple[int, ...], tuple[tuple[ElfImage, ...], tuple[ElfImage, ...], frozenset[int]]]


def _unresolved_cached(obj: LoadedObject, cache: BindingCache, scope_memo: ScopeMemo | None = None,
                       ) -> list[int]:
    """Indices of obj's references that bind nowhere, sharing work across processes.

    The scope is split into per-process objects (the main program, the dlopen'ed root:
    `volatile`) and the rest. What the rest leaves unbound is cached by the set of files in
    it (order does not change whether some file matches); then any per-process object
    that defines a reference binds it (which object wins does not matter for failing).
    """
    scopes = _scopes(obj)
    # Every object of a process shares its scope lists: split them once per process (the
    # memo lives for one bind pass, while the lists it is keyed by are alive).
    scope_key = tuple(id(scope) for scope in scopes)
    split = scope_memo.get(scope_key) if scope_memo is not None else None
    if split is None:
        flat = [o for scope in scopes for o in scope]
        stable_images = tuple(dict.fromkeys(o.image for o in flat if not o.volatile))
        volatile_images = tuple(dict.fromkeys(o.image for o in flat if o.volatile))
        split = (stable_images, volatile_images, frozenset(map(id, stable_images)))
        if scope_memo is not None:
            scope_memo[scope_key] = split
    stable, volatile, stable_ids = split
    key = ("unbound", id(obj.image), stable_ids)
    cached = cache.get(key)
    if cached is None:
        unbound = np.ones(obj.image.reference_arrays.positions.size, dtype=bool)
        for image in stable:
            unbound &= ~_satisfied(obj.image, image, cache)
        cache[key] = cached = unbound
    assert isinstance(cached, np.ndarray)
    unbound = cached
    if volatile and unbound.any():
        unbound = unbound.copy()
        for image in volatile:
            unbound &= ~_satisfied(obj.image, image, cache)
    return obj.image.reference_arrays.positions[np.flatnonzero(unbound)].tolist()


def _assertion_problem(obj: LoadedObject, ref: Reference, provider: str, when: When) -> Problem:
    message = (f"{CHECK_MATCH_ASSERTION} ({obj.path} needs {ref.name}@{ref.version} from "
               f"{ref.version_file}, but {provider} has no symbol versioning)")
    return Problem(
        ProblemKind.LOADER_ASSERTION, Severity.ERROR, obj.path, message, when, symbol=ref.name,
        demangled=_demangle(ref.name), version=ref.version, library=provider,
        cause=f"check-match-assertion:{provider}",
    )


def _unresolved_problem(obj: LoadedObject, ref: Reference) -> Problem:
    when = When.LOAD if (ref.at_load or obj.bind_now) else When.FIRST_CALL
    version_text = f", version {ref.version}" if ref.version else ""
    prefix = "symbol lookup error: " if obj.is_main or not obj.dlopened else ""
    message = f"{prefix}{obj.path}: undefined symbol: {ref.name}{version_text}"
    return Problem(
        ProblemKind.UNRESOLVED_SYMBOL, Severity.ERROR, obj.path, message, when,
        symbol=ref.name, demangled=_demangle(ref.name), version=ref.version,
        library=ref.version_file, cause=f"unresolved:{obj.path}",
    )


def check_versions(obj: LoadedObject, loaded: list[LoadedObject] | dict[str, LoadedObject]) -> list[Problem]:
    """_dl_check_map_versions: every verneed entry must be defined by the file it names.

    `loaded` is the process's objects in load order, or `loaded_by_name` of them."""
    problems: list[Problem] = []
    warned: set[str] = set()
    by_name = loaded if isinstance(loaded, dict) else loaded_by_name(loaded)
    for req in obj.image.version_requirements:
        provider = by_name.get(req.file)
        if provider is None:
            continue  # the library itself is missing: reported as missing-library
        image = provider.image
        if not image.has_verdef:
            if req.file not in warned:
                warned.add(req.file)
                problems.append(Problem(
                    ProblemKind.NO_VERSION_INFORMATION, Severity.WARNING, obj.path,
                    f"{provider.path}: no version information available (required by {obj.path})",
                    When.NEVER, version=req.name, library=req.file,
                    cause=f"no-version-info:{provider.path}",
                ))
            continue
        if req.name in image.all_verdef_names:
            continue
        severity = Severity.WARNING if req.weak else Severity.ERROR
        problems.append(Problem(
            ProblemKind.MISSING_VERSION, severity, obj.path,
            f"{provider.path}: version `{req.name}' not found (required by {obj.path})",
            When.LOAD if not req.weak else When.NEVER,
            version=req.name, library=provider.path,
            cause=f"missing-version:{provider.path}:{req.name}",
        ))
    return problems


def loaded_by_name(loaded: list[LoadedObject]) -> dict[str, LoadedObject]:
    """Every name an object matches (_dl_name_match_p) to the first such object in order."""
    by_name: dict[str, LoadedObject] = {}
    for obj in loaded:
        by_name.setdefault(obj.path, obj)
        for name in obj.names:
            by_name.setdefault(name, obj)
    return by_name
