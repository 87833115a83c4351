"""The glibc ld.so model: map objects breadth first, check versions, bind every reference."""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field, replace

from ldscope.errors import InputFormatError
from ldscope.loader._binding import (
    BindingCache,
    ScopeMemo,
    bind_object,
    check_versions,
    loaded_by_name,
)
from ldscope.loader._environment import LoadEnvironment
from ldscope.loader._host import Host, HostKind
from ldscope.loader._image import ElfImage, ImageCache
from ldscope.loader._results import Binding, LibraryResult, LoadReport, Problem, TriedPath
from ldscope.loader._search import LoadedObject, Searcher
from ldscope.vocab import FoundVia, ProblemKind, Severity, When


@dataclass(slots=True)
class _LibraryRecord:
    """A LibraryResult while the simulation still adds requesters to it."""

    name: str
    path: str | None
    found_via: FoundVia | None
    needed_by: list[str]
    tried: tuple[TriedPath, ...]
    soname: str | None
    depth: int


@dataclass
class Process:
    """The simulated process: every loaded object, the global scope, the record of searches."""

    env: LoadEnvironment
    searcher: Searcher
    objects: list[LoadedObject] = field(default_factory=list)
    global_scope: list[LoadedObject] = field(default_factory=list)
    main: LoadedObject | None = None
    libraries: dict[tuple[str, str | None, FoundVia | None], _LibraryRecord] = field(default_factory=dict)
    problems: list[Problem] = field(default_factory=list)

    def find_loaded(self, name: str) -> LoadedObject | None:
        """An already loaded object matching `name` (by SONAME, requested name or path)."""
        for obj in self.objects:
            if name == obj.path or name in obj.names:  # LoadedObject.matches, inlined: hot
                return obj
        return None

    def record(self, name: str, path: str | None, via: FoundVia | None, requester: str,
               tried: tuple[TriedPath, ...], soname: str | None, depth: int) -> None:
        """Remember how a name was resolved (merged across requesters)."""
        key = (name, path, via)
        entry = self.libraries.get(key)
        if entry is None:
            self.libraries[key] = _LibraryRecord(name, path, via, [requester], tried, soname, depth)
        elif requester not in entry.needed_by:
            entry.needed_by.append(requester)  # in place: a scan records ~10,000 of these

    def map_object(self, name: str, loader: LoadedObject | None, via_override: FoundVia | None = None,
                   depth: int = 0, dlopened: bool = False) -> LoadedObject | None:
        """_dl_map_object: reuse a loaded object or search, open and add a new one."""
        requester = loader.display if loader is not None else "(host)"
        existing = self.find_loaded(name)
        if existing is not None:
            self.record(name, existing.path, FoundVia.ALREADY_LOADED, requester, (), existing.image.soname, depth)
            return existing
        outcome = self.searcher.search(name, loader, self.main)
        if outcome.image is None or outcome.target_path is None:
            self.record(name, None, None, requester, outcome.tried, None, depth)
            self._missing(name, loader, outcome.tried, outcome.fatal, outcome.other_class_seen)
            return None
        # The same file reached under another name: ld.so compares (dev, inode) and reuses it.
        for obj in self.objects:
            if obj.image is outcome.image:
                obj.names.add(name)
                self.record(name, obj.path, FoundVia.ALREADY_LOADED, requester, outcome.tried, obj.image.soname, depth)
                return obj
        via = via_override or outcome.found_via or FoundVia.DIRECT
        obj = LoadedObject(outcome.target_path, outcome.image, loader, via, dlopened=dlopened)
        obj.names.add(name)
        if outcome.image.soname:
            obj.names.add(outcome.image.soname)
        self.objects.append(obj)
        self.record(name, obj.path, via, requester, outcome.tried, outcome.image.soname, depth)
        return obj

    def _missing(self, name: str, loader: LoadedObject | None, tried: tuple[TriedPath, ...],
                 fatal: str | None, other_class: bool) -> None:
        requester = loader.display if loader is not None else "(host)"
        if fatal is not None:
            path = next((t.path for t in reversed(tried)), name)
            kind = ProblemKind.UNREADABLE_FILE if "unreadable" in fatal or "cannot open" in fatal else ProblemKind.WRONG_ARCHITECTURE
            if fatal in ("invalid ELF header", "file too short"):
                kind = ProblemKind.UNREADABLE_FILE
            message = f"{path}: {fatal} (needed by {requester}; ld.so stops here)"
            self.problems.append(Problem(kind, Severity.ERROR, requester, message, When.LOAD,
                                           library=name, tried=tried, cause=f"{kind}:{name}"))
            return
        reason = "wrong ELF class" if other_class else "cannot open shared object file: No such file or directory"
        message = f"{name}: {reason} (needed by {requester})"
        self.problems.append(Problem(ProblemKind.MISSING_LIBRARY, Severity.ERROR, requester, message, When.LOAD,
                                       library=name, tried=tried, cause=f"missing-library:{name}"))

    def load_dependencies(self, roots: list[LoadedObject], base_depth: int = 0) -> list[LoadedObject]:
        """_dl_map_object_deps: breadth-first over DT_NEEDED; returns the search list."""
        searchlist: list[LoadedObject] = []
        seen: set[int] = set()
        queue: list[tuple[LoadedObject, int]] = [(r, base_depth) for r in roots]
        for root in roots:
            if id(root) not in seen:
                seen.add(id(root))
                searchlist.append(root)
        index = 0
        while index < len(queue):
            obj, depth = queue[index]
            index += 1
            for needed in obj.image.needed:
                dep = self.map_object(needed, obj, depth=depth + 1, dlopened=obj.dlopened)
                if dep is None or id(dep) in seen:
                    continue
                seen.add(id(dep))
                searchlist.append(dep)
                queue.append((dep, depth + 1))
        return searchlist


def _ignore_preload_failure(process: Process, before: int, name: str) -> None:
    """rtld.c do_preload: an LD_PRELOAD entry that cannot be mapped is skipped with
    "ERROR: ld.so: object 'NAME' from LD_PRELOAD cannot be preloaded (...): ignored." and
    the program still runs, so its problems are warnings."""
    for i in range(before, len(process.problems)):
        p = process.problems[i]
        process.problems[i] = Problem(
            p.kind, Severity.WARNING, p.file,
            f"ERROR: ld.so: object '{name}' from LD_PRELOAD cannot be preloaded: ignored ("
            + p.message + ")", When.NEVER, library=p.library, tried=p.tried, cause=p.cause)


class LoaderModel:
    """Entry point: simulate loading a target in a host, producing a LoadReport."""

    def __init__(self, env: LoadEnvironment | None = None, images: ImageCache | None = None,
                 record_bindings: bool = True) -> None:
        self.env = env if env is not None else LoadEnvironment()
        self.images = images if images is not None else ImageCache()
        # Without binding records, lookups are cached across simulations (scan).
        self.binding_cache: BindingCache | None = None if record_bindings else {}
        self._search_memo: dict[tuple[object, ...], object] = {}

    def _process(self, image: ElfImage) -> Process:
        searcher = Searcher(self.env, self.images, image.e_machine, image.elf_class, image.little_endian,
                            self._search_memo)
        return Process(self.env, searcher)

    def _report(self, target: str, host: Host, process: Process,
                bindings: list[Binding]) -> LoadReport:
        libraries = tuple(LibraryResult(r.name, r.path, r.found_via, tuple(r.needed_by), r.tried, r.soname, r.depth)
                          for r in process.libraries.values())
        env_problems = tuple(
            Problem(ProblemKind.UNREADABLE_FILE, Severity.WARNING, "ld.so.cache", text, When.NEVER)
            for text in self.env.problems
        )
        problems = tuple(process.problems) + env_problems
        loads = not any(p.severity == Severity.ERROR for p in problems)
        return LoadReport(
            target=target, host=host.describe(), loads=loads, libraries=libraries,
            problems=problems, bindings=tuple(bindings),
            load_order=tuple(o.path for o in process.objects),
            global_scope=tuple(o.path for o in process.global_scope),
        )

    def _open_target(self, path: str) -> ElfImage:
        return self.images.get(self.env.host_path(path) if os.path.isabs(path) and self.env.root else path)

    # ------------------------------------------------------------ executables
    def load_executable(self, path: str, host: Host | None = None) -> LoadReport:
        """Simulate exec'ing `path`: interpreter, LD_PRELOAD, NEEDED breadth first, binding.

        A set-user-ID or set-group-ID program runs in secure-execution mode (AT_SECURE):
        LD_LIBRARY_PATH and $ORIGIN are ignored, LD_PRELOAD names with '/' are dropped.
        """
        secure = _is_setuid(self.env.host_path(path) if self.env.root and os.path.isabs(path) else path)
        previous = self.env.secure
        self.env.secure = previous or secure
        try:
            report = self._load_executable(path, host)
        finally:
            self.env.secure = previous
        if secure:
            note = Problem(
                ProblemKind.SECURE_MODE, Severity.INFO, report.target,
                f"{report.target} is set-user-ID/set-group-ID: run by any other user than its "
                "owner, ld.so is in secure-execution mode (LD_LIBRARY_PATH, $ORIGIN and "
                "LD_PRELOAD paths containing '/' are ignored); simulated that way",
                When.NEVER, cause="secure-mode")
            report = replace(report, problems=(*report.problems, note))
        return report

    def _load_executable(self, path: str, host: Host | None = None) -> LoadReport:
        host = host or Host(HostKind.EXECUTABLE)
        image = self._open_target(path)
        process = self._process(image)
        target = os.path.abspath(path) if not self.env.root else path
        main = LoadedObject(target, image, None, FoundVia.MAIN, is_main=True, volatile=True)
        main.names.add(target)
        process.main = main
        process.objects.append(main)
        if not image.is_dynamic:
            return self._report(target, host, process, [])
        self._add_interpreter(process, image, target)
        preloads: list[LoadedObject] = []
        env_preload = [n for n in self.env.ld_preload if not (self.env.secure and "/" in n)]
        for name in env_preload + list(host.preload):
            before = len(process.problems)
            obj = process.map_object(name, main, via_override=FoundVia.PRELOAD)
            if obj is not None and obj not in preloads:
                preloads.append(obj)
            if name in self.env.ld_preload:
                _ignore_preload_failure(process, before, name)
        process.global_scope = process.load_dependencies([main, *preloads])
        main.searchlist = process.global_scope
        for obj in process.objects:
            obj.scope = [process.global_scope]
        bindings = self._check_and_bind(process, list(process.objects), now=False)
        return self._report(target, host, process, bindings)

    def _add_interpreter(self, process: Process, image: ElfImage, requester: str) -> None:
        interp = image.interpreter
        if interp is None:
            return
        outcome, interp_image, _fatal = process.searcher.verify(interp)
        if interp_image is None:
            message = (
                f"interpreter {interp} not found ({outcome}): the kernel refuses to run "
                f"{requester} (\"No such file or directory\")"
            )
            process.problems.append(Problem(ProblemKind.MISSING_INTERPRETER, Severity.ERROR, requester, message,
                                              When.LOAD, library=interp, cause=f"interp:{interp}"))
            return
        rtld = LoadedObject(interp, interp_image, None, FoundVia.INTERPRETER)
        rtld.names.add(interp)
        if interp_image.soname:
            rtld.names.add(interp_image.soname)
        process.objects.append(rtld)

    # ------------------------------------------------------------ dlopen hosts
    def load_dlopen(self, path: str, host: Host) -> LoadReport:
        """Simulate dlopen(path) inside a host process (Python interpreter or minimal host)."""
        image = self._open_target(path)
        process = self._process(image)
        target = os.path.abspath(path) if not self.env.root else path
        call_map = self._start_host(process, host, image)
        before_assumed = set(map(id, process.objects))
        for extra in host.loaded:
            obj = process.map_object(extra, call_map, dlopened=True)
            if obj is not None:
                obj.dlopened = True
                obj.searchlist = process.load_dependencies([obj])
        for extra in host.preload:
            obj = process.map_object(extra, call_map, dlopened=True)
            if obj is not None:
                obj.searchlist = process.load_dependencies([obj])
                for member in obj.searchlist:
                    if member not in process.global_scope:
                        process.global_scope.append(member)
        for obj in process.objects:
            if not obj.scope:
                obj.scope = [process.global_scope] + ([obj.searchlist] if obj.dlopened and obj.searchlist else [])
        assumed = [o for o in process.objects if id(o) not in before_assumed]
        before = set(map(id, process.objects))
        root = process.map_object(target, call_map, via_override=FoundVia.DIRECT, dlopened=True)
        if root is None:
            return self._report(target, host, process, [])
        root.dlopened = True
        root.volatile = True
        root.searchlist = process.load_dependencies([root])
        new_objects = [o for o in process.objects if id(o) not in before]
        for obj in new_objects:
            obj.dlopened = True
            obj.scope = [process.global_scope, root.searchlist]
        bindings = self._check_and_bind(process, new_objects, now=host.now)
        if assumed:
            process.problems.extend(_found_only_as_loaded(process, root.searchlist, assumed))
        return self._report(target, host, process, bindings)

    def _start_host(self, process: Process, host: Host, target: ElfImage) -> LoadedObject:
        """Load the host program (and its dependencies); return the object calling dlopen."""
        if host.executable is not None:
            try:
                # A target-side path, like the dlopen target: map it into the sysroot.
                host_image = self._open_target(host.executable)
            except InputFormatError as exc:
                process.problems.append(Problem(
                    ProblemKind.UNREADABLE_FILE, Severity.WARNING, host.executable,
                    f"host {host.executable}: {exc.reason}; using a minimal host instead",
                    When.NEVER))
                host_image = None
        else:
            host_image = None
        if host_image is None:
            host_image = ElfImage.synthetic(("libc.so.6",), target)
            main_path = "(minimal host)"
        else:
            main_path = host.executable or "(host)"
        main = LoadedObject(main_path, host_image, None, FoundVia.HOST, is_main=True, volatile=True)
        process.main = main
        process.objects.append(main)
        self._add_interpreter(process, host_image, main_path)
        host_problems_before = len(process.problems)
        preloads = []
        for name in self.env.ld_preload:
            obj = process.map_object(name, main, via_override=FoundVia.PRELOAD)
            if obj is not None:
                preloads.append(obj)
        process.global_scope = process.load_dependencies([main, *preloads])
        main.searchlist = process.global_scope
        for obj in process.objects:
            obj.scope = [process.global_scope]
        # Problems of the host itself are not the target's: keep them as warnings.
        for i in range(host_problems_before, len(process.problems)):
            p = process.problems[i]
            process.problems[i] = Problem(p.kind, Severity.WARNING, p.file, "host: " + p.message,
                                            When.NEVER, library=p.library, tried=p.tried)
        # The dlopen call site: libpython when the interpreter links it, else the program.
        for obj in process.global_scope:
            if obj.image.soname and obj.image.soname.startswith("libpython"):
                return obj
        return main

    # ---------------------------------------------------------------- common
    def _check_and_bind(self, process: Process, objects: list[LoadedObject], now: bool) -> list[Binding]:
        bindings: list[Binding] = []
        by_name = loaded_by_name(process.objects)
        for obj in objects:
            if obj.image.is_dynamic:
                process.problems.extend(check_versions(obj, by_name))
        scope_memo: ScopeMemo = {}
        for obj in objects:
            obj.bind_now = now or obj.image.now or self.env.bind_now
            problems, obj_bindings = bind_object(obj, process.main, self.binding_cache, scope_memo)
            process.problems.extend(problems)
            bindings.extend(obj_bindings)
        return bindings


def _is_setuid(path: str) -> bool:
    """True for set-user-ID or set-group-ID files (read from the mode bits only)."""
    try:
        return bool(os.stat(path).st_mode & (stat.S_ISUID | stat.S_ISGID))
    except OSError:
        return False


def _found_only_as_loaded(process: Process, closure: list[LoadedObject],
                          assumed: list[LoadedObject]) -> list[Problem]:
    """Info for each library the target gets only because --loaded/--preload (or a declared
    dependency imported first) put it in the process: searched for afresh, it is not found."""
    notes: list[Problem] = []
    assumed_ids = {id(o) for o in assumed}
    for obj in closure:
        for name in obj.image.needed:
            dep = process.find_loaded(name)
            if dep is None or id(dep) not in assumed_ids:
                continue
            if process.searcher.search(name, obj, process.main).image is not None:
                continue
            notes.append(Problem(
                ProblemKind.ASSUMED_LOADED, Severity.INFO, obj.path,
                f"{obj.path} finds {name} only because {dep.path} is already loaded "
                "(a library imported first); loaded on its own it would not find it",
                When.NEVER, library=dep.path, cause=f"assumed-loaded:{obj.path}:{name}"))
    return notes
