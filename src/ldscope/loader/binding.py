"""Symbol binding and version checks, following glibc's dl-lookup.c and dl-version.c."""

from __future__ import annotations

from ldscope.loader import results as R
from ldscope.loader.image import Definition, ElfImage, Reference
from ldscope.loader.search import LoadedObject


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
            defined_version = image.verdefs.get(d.version_index)
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


def lookup(
    ref: Reference, scopes: list[list[LoadedObject]], skip: LoadedObject | None
) -> tuple[LoadedObject, Definition] | None:
    """_dl_lookup_symbol_x: the first object in scope order that defines a matching symbol."""
    plt = not ref.at_load
    for scope in scopes:
        for obj in scope:
            if obj is skip:
                continue
            defs = obj.image.definitions.get(ref.name)
            if not defs:
                continue
            found = match_in_object(obj.image, defs, ref.version, False, plt)
            if found is not None:
                return obj, found
    return None


def _demangle(name: str) -> str | None:
    try:
        from ldscope.demangle import demangle
    except ImportError:  # pragma: no cover - the module ships with the package
        return None
    return demangle(name)


def bind_object(
    obj: LoadedObject, main: LoadedObject | None
) -> tuple[list[R.Problem], list[R.Binding]]:
    """Resolve every relocation-referenced symbol of one object; problems for unresolved ones."""
    problems: list[R.Problem] = []
    bindings: list[R.Binding] = []
    scopes = obj.scope if obj.scope else [[obj]]
    if obj.image.symbolic:
        scopes = [[obj], *scopes]
    for ref in obj.image.references:
        skip = obj if ref.is_copy else None
        found = lookup(ref, scopes, skip)
        when = R.WHEN_LOAD if (ref.at_load or obj.bind_now) else R.WHEN_FIRST_CALL
        if found is not None:
            bindings.append(R.Binding(obj.path, ref.name, ref.version, found[0].path, when))
            continue
        if ref.weak or (not ref.undefined and not ref.is_copy):
            bindings.append(R.Binding(obj.path, ref.name, ref.version, None, R.WHEN_NEVER))
            continue
        version_text = f", version {ref.version}" if ref.version else ""
        prefix = "symbol lookup error: " if obj.is_main or not obj.dlopened else ""
        message = f"{prefix}{obj.path}: undefined symbol: {ref.name}{version_text}"
        problems.append(
            R.Problem(
                R.UNRESOLVED_SYMBOL, "error", obj.path, message, when,
                symbol=ref.name, demangled=_demangle(ref.name), version=ref.version,
                library=ref.version_file, cause=f"unresolved:{obj.path}",
            )
        )
    return problems, bindings


def check_versions(obj: LoadedObject, loaded: list[LoadedObject]) -> list[R.Problem]:
    """_dl_check_map_versions: every verneed entry must be defined by the file it names."""
    problems: list[R.Problem] = []
    warned: set[str] = set()
    for req in obj.image.version_requirements:
        provider = next((o for o in loaded if o.matches(req.file)), None)
        if provider is None:
            continue  # the library itself is missing: reported as missing-library
        image = provider.image
        if not image.has_verdef:
            if req.file not in warned:
                warned.add(req.file)
                problems.append(R.Problem(
                    R.NO_VERSION_INFORMATION, "warning", obj.path,
                    f"{provider.path}: no version information available (required by {obj.path})",
                    R.WHEN_NEVER, version=req.name, library=req.file,
                    cause=f"no-version-info:{provider.path}",
                ))
            continue
        if req.name in image.all_verdef_names:
            continue
        severity = "warning" if req.weak else "error"
        problems.append(R.Problem(
            R.MISSING_VERSION, severity, obj.path,
            f"{provider.path}: version `{req.name}' not found (required by {obj.path})",
            R.WHEN_LOAD if not req.weak else R.WHEN_NEVER,
            version=req.name, library=provider.path,
            cause=f"missing-version:{provider.path}:{req.name}",
        ))
    return problems
