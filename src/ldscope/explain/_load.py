"""Near-misses: for each unresolved symbol, version or library, what is closest and why.

Order of search: the objects in the load scope first, then libraries on the search path and
in --also-search directories. Every near-miss carries a one-line explanation a person can
act on; problems that share one cause get the same `cause` key and a `cause_summary`.
"""

from __future__ import annotations

import difflib
import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import replace

import numpy as np

from ldscope.cxx import demangle
from ldscope.errors import InputFormatError
from ldscope.explain._causes import cause_of
from ldscope.explain._follow_on import fold_follow_on
from ldscope.explain._load_index import SharedIndex
from ldscope.loader import ElfImage, ImageCache, LoadEnvironment, LoadReport, Problem
from ldscope.system import Machine, home_directory, known_machine
from ldscope.vocab import NearMiss, NearMissKind, ProblemKind, Severity

__all__ = ["NearMissFinder", "SharedIndex", "explain"]

MAX_FILES_PER_DIR = 4000
_SIMILAR_NAME_LIMIT = 20
_PY_API = re.compile(r"^_?Py[A-Z_]")
_LIBPYTHON = re.compile(r"^libpython(\d+)\.(\d+)[a-z]*\.so")
_VERSION_FAMILY = re.compile(r"^(.*?)(\d+(?:\.\d+)*)$")
_UNSET = object()
_PYTHON_HOSTS = ("python extension imported by", "library loaded by ctypes.CDLL in")


class NearMissFinder:
    """Looks for near-misses around one load report; caches directory scans and demangling."""

    def __init__(self, report: LoadReport, images: ImageCache, env: LoadEnvironment | None,
                 also_search: Iterable[str] = (), shared: SharedIndex | None = None) -> None:
        self.report = report
        self.shared = shared if shared is not None else SharedIndex()
        self.images = images
        self.env = env
        self.also_search = tuple(also_search)
        self._scope: list[tuple[str, ElfImage]] | None = None
        self._providers: dict[str, list[tuple[str, str | None]]] | None = None
        self._hidden: dict[str, list[tuple[str, str, str, str]]] | None = None
        self._machine: object = _UNSET
        self._suffixes: tuple[str, ...] | None = None
        # ld.so stops at a missing DT_NEEDED library: symbols of the file that needed it are
        # that library's consequence (see findings), so they get no system-wide search.
        self.missing_deps: set[str] = {
            p.file for p in report.problems if p.kind == ProblemKind.MISSING_LIBRARY and p.severity == Severity.ERROR
        }
        self.wanted: set[str] = {
            p.symbol for p in report.problems
            if p.kind == ProblemKind.UNRESOLVED_SYMBOL and p.symbol and p.file not in self.missing_deps
        }

    # ----------------------------------------------------------------- inputs
    def host_path(self, path: str) -> str:
        """Map a target path into the sysroot, if any."""
        return self.env.host_path(path) if self.env is not None else path

    def machine(self) -> Machine | None:
        """The machine the target is built for (its libraries are looked for where that
        machine keeps them), None if the target cannot be read or the machine is unknown."""
        if self._machine is _UNSET:
            image = self.image(self.report.target)
            self._machine = known_machine(image.machine, image.elf_class) if image is not None else None
        return self._machine  # type: ignore[return-value]

    def _hwcaps_suffixes(self) -> tuple[str, ...]:
        """The subdirectories ld.so tries inside each search-path directory for this machine
        (glibc-hwcaps/x86-64-v3, tls/haswell/x86_64, ...): not places libraries are kept."""
        if self._suffixes is None:
            found: tuple[str, ...] = ("/glibc-hwcaps",)
            m = self.machine()
            if m is not None and self.env is not None:
                found += tuple(d[len("/base"):] for d in self.env.subdirs("/base", m.elf_machine_name, m.elf_class)[:-1])
            self._suffixes = found
        return self._suffixes

    def scope(self) -> list[tuple[str, ElfImage]]:
        """(path, image) of every object in the simulated process, in load order."""
        if self._scope is None:
            found = []
            for path in self.report.load_order:
                if path.startswith("("):
                    continue
                try:
                    found.append((path, self.images.get(self.host_path(path))))
                except InputFormatError:
                    continue
            self._scope = found
        return self._scope

    def search_dirs(self) -> list[str]:
        """Directories on the search path (from where libraries were found or tried) plus extras."""
        dirs: list[str] = []
        suffixes = self._hwcaps_suffixes()
        for lib in self.report.libraries:
            for t in lib.tried:
                d = os.path.dirname(t.path)
                if "/glibc-hwcaps/" in d or d.endswith(suffixes):
                    continue
                if d and d not in dirs and not t.path.endswith(")"):
                    dirs.append(d)
            if lib.path:
                d = os.path.dirname(lib.path)
                if d not in dirs:
                    dirs.append(d)
        for d in self.also_search:
            if d not in dirs:
                dirs.append(d)
        return dirs

    def dir_libraries(self, directory: str) -> list[str]:
        """Shared-object-looking files in a directory (not recursive, bounded)."""
        cached = self.shared.dir_files.get(directory)
        if cached is not None:
            return cached
        files: list[str] = []
        host_dir = self.host_path(directory)
        fs = self.images.fs
        try:
            for name in fs.listdir(host_dir):
                if ".so" not in name or len(files) >= MAX_FILES_PER_DIR:
                    continue
                if fs.is_file(os.path.join(host_dir, name)):
                    files.append(os.path.join(directory, name))
        except OSError:
            files = []
        files.sort()
        self.shared.dir_files[directory] = files
        return files

    def image(self, path: str) -> ElfImage | None:
        """The image of a file, None if it is not a readable ELF file."""
        try:
            return self.images.get(self.host_path(path))
        except InputFormatError:
            return None

    def providers_elsewhere(self) -> dict[str, list[tuple[str, str | None]]]:
        """wanted name → [(path, soname)] of libraries on the search path and in
        --also-search (not in scope) that export it.

        Each candidate file answers from its own symbol hash table (see
        SharedIndex.exporters); answers are kept scan-wide for later reports.
        """
        if self._providers is not None:
            return self._providers
        found: dict[str, list[tuple[str, str | None]]] = {}
        fs = self.images.fs
        in_scope: set[object] = set()
        for path, _img in self.scope():
            try:
                in_scope.add(fs.key(self.host_path(path)))
            except OSError:
                continue
        wanted = sorted(self.wanted)
        seen: set[object] = set()
        for d in self.search_dirs():
            files = [(p, self.host_path(p)) for p in self.dir_libraries(d)]
            exporters = self.shared.exporters(fs, files, wanted)
            for name in wanted:
                for path, identity, soname in exporters.get(name, []):
                    if identity in in_scope or (identity, name) in seen:
                        continue
                    seen.add((identity, name))
                    found.setdefault(name, []).append((path, soname))
        self._providers = found
        return found

    def cxx_index(self, image: ElfImage, base_name: str) -> list[tuple[str, str]]:
        """[(mangled, demangled)] of an image's C++ definitions whose function is `base_name`."""
        return self.shared.cxx_definitions(image, base_name)

    # --------------------------------------------------------------- symbols
    def for_symbol(self, problem: Problem) -> list[NearMiss]:
        """Near-misses for one unresolved symbol, best first."""
        name = problem.symbol or ""
        found: list[NearMiss] = []
        found.extend(self._other_versions(name, problem.version))
        if name.startswith("_Z"):
            found.extend(self._cxx_signatures(name, problem.demangled, problem.file))
        if _PY_API.match(name):
            found.extend(self._python_api(name))
        found.extend(self._not_exported(name))
        if problem.file in self.missing_deps:
            found.sort(key=lambda n: -n.score)
            return found[:8]
        if not any(n.kind in (NearMissKind.OTHER_VERSION, NearMissKind.NOT_EXPORTED) for n in found):
            found.extend(self._elsewhere(name))
        if not found and not name.startswith("_Z") and len(self.wanted) <= _SIMILAR_NAME_LIMIT:
            # A typo-like near-miss helps for a handful of names, not for hundreds left
            # unresolved by one missing library (and difflib is costly over big scopes).
            found.extend(self._similar_names(name, problem.file))
        found.sort(key=lambda n: -n.score)
        return found[:8]

    def _other_versions(self, name: str, version: str | None) -> list[NearMiss]:
        result = []
        for path, img in self.scope():
            defs = img.definitions_named(name)
            if not defs:
                continue
            versions = sorted({img.verdefs.get(d.version_index, "") for d in defs})
            shown = ", ".join(f"{name}@{v}" if v else f"{name} (unversioned)" for v in versions)
            if version is None:
                why = f"{path} defines only versioned {shown}; none is visible to an unversioned reference"
            else:
                why = f"{path} defines {shown}, not version {version}"
            result.append(NearMiss(name, demangle(name), path, why, NearMissKind.OTHER_VERSION, score=0.95))
        return result

    def _cxx_signatures(self, name: str, demangled: str | None, referrer: str = "") -> list[NearMiss]:
        from ldscope.cxx import DifferenceKind, compare_signatures, parse_signature

        if demangled is None:
            return []
        wanted = parse_signature(demangled)
        if not wanted.base_name:
            return []
        result: list[NearMiss] = []
        # A file's own definitions are never "another version" of what it references.
        sources = [(p, i, True) for p, i in self.scope() if os.path.normpath(p) != os.path.normpath(referrer)]
        for path, img, in_scope in sources:
            for mangled, pretty in self.cxx_index(img, wanted.base_name):
                if mangled == name:
                    continue
                found = parse_signature(pretty)
                diffs = compare_signatures(wanted, found)
                if not diffs:
                    continue
                kinds = {d.kind for d in diffs}
                text = "; ".join(d.describe() for d in diffs[:4])
                same_entity = _strip_abi(found.qualified_name) == _strip_abi(wanted.qualified_name)
                if DifferenceKind.CXX11_ABI in kinds and same_entity:
                    why = (f"{path} defines {pretty}: _GLIBCXX_USE_CXX11_ABI mismatch "
                           f"(std::__cxx11 strings vs the old std::string ABI): {text}")
                    kind, score = NearMissKind.CXX11_ABI, 0.93
                elif found.qualified_name == wanted.qualified_name:
                    why = f"{path} defines {pretty}: {text}"
                    kind, score = NearMissKind.SIGNATURE_CHANGED, 0.9
                elif DifferenceKind.NAMESPACE_MOVED in kinds and _moved_with_evidence(wanted.scope, found.scope):
                    why = f"{path} defines {pretty}: {text}"
                    kind, score = NearMissKind.NAMESPACE_MOVED, 0.75
                else:
                    continue
                if not in_scope:
                    score -= 0.1
                result.append(NearMiss(mangled, pretty, path, why, kind, score=score))
        result.sort(key=lambda n: -n.score)
        return result[:5]

    def _python_api(self, name: str) -> list[NearMiss]:
        # "Built for another Python" needs a Python process that lacks the symbol and another
        # Python that has it; outside Python the missing libpython is the whole story.
        if not self.report.host.startswith(_PYTHON_HOSTS):
            return []
        in_scope = [p for p, img in self.scope() if img.defines(name)]
        if in_scope:
            return []
        defining: list[str] = []
        for path in self._python_libraries():
            img = self.image(path)
            if img is not None and img.defines(name):
                m = _LIBPYTHON.match(os.path.basename(path))
                defining.append(f"{m.group(1)}.{m.group(2)}" if m else path)
        if not defining:
            return []
        interpreter = self._interpreter()
        versions = ", ".join(sorted(set(defining), key=_version_key))
        why = (f"missing from {interpreter}; defined by CPython {versions}: "
               "built for another Python version")
        return [NearMiss(name, None, None, why, NearMissKind.PYTHON_API, score=0.9)]

    def _interpreter(self) -> str:
        """The interpreter of a Python host (its executable, the first object loaded)."""
        for path in self.report.load_order:
            if not path.startswith("("):
                return path
        return "this interpreter"

    def _python_libraries(self) -> list[str]:
        """libpython files of other Pythons: where the target's machine keeps libraries, the
        --also-search directories, and pyenv's versions under the simulated $HOME."""
        dirs = set(self.also_search)
        m = self.machine()
        dirs.update(m.usr_library_dirs if m is not None else ("/usr/lib", "/usr/local/lib"))
        home = home_directory(self.env.env) if self.env is not None else None
        if home:
            pyenv = os.path.join(home, ".pyenv", "versions")
            try:
                versions = sorted(self.images.fs.listdir(self.host_path(pyenv)))
            except OSError:
                versions = []
            for v in versions:
                dirs.add(os.path.join(pyenv, v, "lib"))
        found = []
        for d in sorted(dirs):
            for path in self.dir_libraries(d):
                if _LIBPYTHON.match(os.path.basename(path)):
                    found.append(path)
        return found

    def hidden_definitions(self) -> dict[str, list[tuple[str, str, str, str]]]:
        """wanted name → [(path, bind, visibility, table)] of scope files that define it
        without exporting it (local binding, hidden or internal visibility).

        One pass over each scope file for all wanted names at once.
        """
        if self._hidden is not None:
            return self._hidden
        from ldscope.elf import constants as C

        found: dict[str, list[tuple[str, str, str, str]]] = {}
        wanted = self.wanted
        for path, _img in self.scope():
            try:
                with self.images.fs.open_elf(self.host_path(path)) as elf:
                    for table_name, table in (("dynsym", elf.dynsym), ("symtab", elf.symtab)):
                        if table is None:
                            continue
                        mask = (table.section_index != C.SHN_UNDEF) & (
                            (table.bind == C.STB_LOCAL) | (table.visibility >= C.STV_INTERNAL)
                        )
                        indices = np.flatnonzero(mask)
                        names = table.strings.get_many(table.entries["st_name"][indices])
                        for i, n in zip(indices.tolist(), names):
                            if n in wanted and not any(e[0] == path for e in found.get(n, ())):
                                sym = table.symbol(i)
                                found.setdefault(n, []).append(
                                    (path, sym.bind.lower(), sym.visibility.lower(), table_name))
            except (InputFormatError, OSError):
                continue
        self._hidden = found
        return found

    def _not_exported(self, name: str) -> list[NearMiss]:
        return [
            NearMiss(
                name, demangle(name), path,
                f"{path} has {name} but does not export it ({bind} binding, {vis} visibility "
                f"in .{table}): it was built hidden",
                NearMissKind.NOT_EXPORTED, score=0.85,
            )
            for path, bind, vis, table in self.hidden_definitions().get(name, [])
        ]

    def _elsewhere(self, name: str) -> list[NearMiss]:
        result = []
        for path, soname in self.providers_elsewhere().get(name, [])[:3]:
            in_extra = any(path.startswith(d.rstrip("/") + "/") for d in self.also_search)
            where = os.path.dirname(path)
            if _PY_API.match(name) and _LIBPYTHON.match(os.path.basename(path)):
                # The C-API comes from the interpreter that imports the file, not from some
                # libpython on the system: linking or preloading that one is the wrong advice.
                why = (f"a Python C-API symbol ({path} defines it): the file is loaded by a Python "
                       "interpreter; check it inside one (--python INTERPRETER, or scan its environment)")
                result.append(NearMiss(name, demangle(name), path, why, NearMissKind.NOT_IN_SCOPE, score=0.8))
                continue
            how = (f"add {where} to LD_LIBRARY_PATH or the RUNPATH" if in_extra
                   else f"link with it (DT_NEEDED {soname or os.path.basename(path)}), "
                   f"or preload it (--preload {path})")
            why = f"defined in {path}, which is not loaded: {how}"
            result.append(NearMiss(name, demangle(name), path, why, NearMissKind.NOT_IN_SCOPE, score=0.8))
        return result

    def _similar_names(self, name: str, referrer: str) -> list[NearMiss]:
        """Close spellings among what the referrer's own DT_NEEDED libraries export: a
        renamed or misspelt symbol is one of the library it was linked against (and
        difflib over every object in scope - libc, libstdc++ - cost seconds in big scans)."""
        result = []
        direct = {lib.path for lib in self.report.libraries if lib.path and referrer in lib.needed_by}
        for path, img in self.scope():
            if direct and path not in direct:
                continue
            # difflib's ratio is at most 2*min(len)/(sum of lens): drop hopeless lengths first.
            length = len(name)
            candidates = [c for c in img.defined_name_list()
                          if 2 * min(length, len(c)) >= 0.85 * (length + len(c))]
            close = difflib.get_close_matches(name, candidates, n=2, cutoff=0.85)
            for c in close:
                result.append(NearMiss(c, demangle(c), path,
                                         f"{path} defines the similar name {c}", NearMissKind.SIMILAR_NAME, score=0.5))
        return result[:3]

    # -------------------------------------------------------------- versions
    def for_version(self, problem: Problem) -> list[NearMiss]:
        """Newest version of the family in the provider, and other copies that define it."""
        wanted = problem.version or ""
        provider = problem.library or ""
        result: list[NearMiss] = []
        img = self.image(provider) if provider else None
        m = _VERSION_FAMILY.match(wanted)
        if img is not None and m:
            family = m.group(1)
            same = [v for v in img.all_verdef_names if v.startswith(family) and _VERSION_FAMILY.match(v)]
            if same:
                newest = max(same, key=lambda v: _version_key(v[len(family):]))
                why = f"{provider} offers up to {newest}; {wanted} needs a newer {os.path.basename(provider)}"
                result.append(NearMiss(wanted, None, provider, why, NearMissKind.VERSION_FAMILY, score=0.9))
        base = os.path.basename(provider)
        soname = img.soname if img is not None else base
        for d in self.search_dirs():
            for path in self.dir_libraries(d):
                if os.path.basename(path) not in (base, soname) or path == provider:
                    continue
                other = self.image(path)
                if other is not None and wanted in other.all_verdef_names:
                    why = (f"{path} defines {wanted}: put {os.path.dirname(path)} first on the "
                           "search path (LD_LIBRARY_PATH or RUNPATH) or --preload it")
                    result.append(NearMiss(wanted, None, path, why, NearMissKind.OTHER_COPY, score=0.95))
        result.sort(key=lambda n: -n.score)
        return result

    # ------------------------------------------------------------- libraries
    def for_library(self, problem: Problem) -> list[NearMiss]:
        """Files with the same or a similar name elsewhere on the search path or in extras."""
        wanted = problem.library or ""
        stem = wanted.split(".so")[0]
        result: list[NearMiss] = []
        for d in self.search_dirs():
            for path in self.dir_libraries(d):
                base = os.path.basename(path)
                if base == wanted:
                    extra = any(path.startswith(x.rstrip("/") + "/") for x in self.also_search)
                    how = "add it to LD_LIBRARY_PATH or the RUNPATH" if extra else "it was not on the path searched"
                    result.append(NearMiss(wanted, None, path, f"{path} exists: {how}", NearMissKind.FOUND_ELSEWHERE, score=0.95))
                elif stem and base.startswith(stem + ".so") and base != wanted:
                    why = f"{path} is another version of {stem} (wanted {wanted}): the file was built against a different release"
                    result.append(NearMiss(wanted, None, path, why, NearMissKind.OTHER_RELEASE, score=0.7))
        result.sort(key=lambda n: -n.score)
        return result[:5]


def _strip_abi(qualified: str) -> str:
    """A qualified name without ABI tags or the std::__cxx11 inline namespace."""
    return re.sub(r"\[abi:[^\]]*\]", "", qualified).replace("__cxx11::", "")


def _scope_parts(scope: str) -> list[str]:
    """`a::B<x::y>::C` -> ["a", "B", "C"]: the components, template arguments dropped."""
    parts: list[str] = []
    depth = 0
    current = ""
    i = 0
    while i < len(scope):
        c = scope[i]
        if c == "<":
            depth += 1
        elif c == ">":
            depth -= 1
        elif depth == 0 and scope.startswith("::", i):
            parts.append(current.strip())
            current = ""
            i += 2
            continue
        elif depth == 0:
            current += c
        i += 1
    if current.strip():
        parts.append(current.strip())
    return [p for p in parts if p]


def _moved_with_evidence(wanted_scope: str, found_scope: str) -> bool:
    """A "moved to another namespace" near-miss needs more than an equal last name (`what`,
    `get`, `allocator` are everywhere): the enclosing class or namespace must be the same
    name, only the prefix before it differs; never a user symbol "moved" into std::."""
    w, f = _scope_parts(_strip_abi(wanted_scope)), _scope_parts(_strip_abi(found_scope))
    if not w or not f:
        return False
    if f[0] == "std" and w[0] != "std":
        return False
    return w[-1] == f[-1]


def _version_key(text: str) -> tuple[int, ...]:
    digits = re.findall(r"\d+", text)
    return tuple(int(x) for x in digits)


EXPLAINED_KINDS = frozenset({ProblemKind.UNRESOLVED_SYMBOL, ProblemKind.MISSING_VERSION, ProblemKind.MISSING_LIBRARY})


def explain(report: LoadReport, images: ImageCache, env: LoadEnvironment | None,
            also_search: Iterable[str] = (), shared: SharedIndex | None = None,
            only: Sequence[Problem] | None = None) -> tuple[Problem, ...]:
    """Near-misses (and shared causes) for the problems of a load report (or `only` those of
    them), each returned with them attached; `images` and `env` are those the report was
    simulated with. The search is planned from the whole report either way."""
    finder = NearMissFinder(report, images, env, also_search, shared)
    out = []
    for p in report.problems if only is None else only:
        misses: list[NearMiss] = []
        if p.kind == ProblemKind.UNRESOLVED_SYMBOL:
            misses = finder.for_symbol(p)
        elif p.kind == ProblemKind.MISSING_VERSION:
            misses = finder.for_version(p)
        elif p.kind == ProblemKind.MISSING_LIBRARY:
            misses = finder.for_library(p)
        cause, summary = cause_of(p, misses)
        out.append(replace(p, near_misses=tuple(misses), cause=cause, cause_summary=summary))
    return tuple(out)


class ReportExplainer:
    """Explains load reports for one analysis (one `load`, one scan): each distinct problem
    is explained once (a library's problem seen in many loads, such as libjava.so inside
    every JDK plugin's load, gets its near-misses once), and the libraries near-miss searches
    look through are indexed once for all reports."""

    def __init__(self, images: ImageCache, env: LoadEnvironment | None, also_search: Iterable[str] = (),
                 enabled: bool = True) -> None:
        self.images = images
        self.env = env
        self.also_search = tuple(also_search)
        self.enabled = enabled
        self.index = SharedIndex()
        self._explained: dict[tuple[object, ...], Problem] = {}

    def explain(self, report: LoadReport) -> LoadReport:
        """The report with near-misses attached, when any problem is of a kind that has them
        (undefined symbols that follow from a missing library are counted under it first)."""
        report = fold_follow_on(report)
        if not self.enabled or not any(p.kind in EXPLAINED_KINDS for p in report.problems):
            return report
        todo = [p for p in report.problems if _identity(p) not in self._explained]
        if todo:
            done = explain(report, self.images, self.env, self.also_search, self.index, todo)
            for before, after in zip(todo, done):
                self._explained[_identity(before)] = after
        return replace(report, problems=tuple(self._explained.get(_identity(p), p) for p in report.problems))


def _identity(p: Problem) -> tuple[object, ...]:
    return (p.kind, p.file, p.symbol, p.version, p.library, p.message, p.tried)
