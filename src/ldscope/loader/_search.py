"""Finding a library the way glibc's ld.so does (_dl_map_object), recording every path tried."""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass, field

from ldscope.elf import constants as C
from ldscope.elf import is_elf
from ldscope.errors import InputFormatError
from ldscope.loader._environment import LoadEnvironment
from ldscope.loader._image import ElfImage, ImageCache
from ldscope.loader._results import TriedPath
from ldscope.vocab import FoundVia

_UNSET = object()

OUTCOME_FOUND = "found"
OUTCOME_MISSING = "not found"
OUTCOME_WRONG_CLASS = "wrong ELF class"
OUTCOME_WRONG_MACHINE = "wrong machine"


@dataclass(eq=False)
class LoadedObject:
    """One object in the simulated process (a link_map): a path, an image, how it got there."""

    path: str  # l_name: the name the loader opened it by (target-side path)
    image: ElfImage
    loader: LoadedObject | None
    found_via: FoundVia
    names: set[str] = field(default_factory=set)  # names it matches (l_libname + soname)
    is_main: bool = False
    dlopened: bool = False  # l_type == lt_loaded
    searchlist: list[LoadedObject] = field(default_factory=list)  # its own BFS dependency list
    scope: list[list[LoadedObject]] = field(default_factory=list)
    bind_now: bool = False
    volatile: bool = False  # specific to one process (main program, dlopen root): never cached

    @property
    def display(self) -> str:
        """The path shown in reports."""
        return self.path

    def matches(self, name: str) -> bool:
        """_dl_name_match_p: the name it was opened by, or any name recorded for it."""
        return name == self.path or name in self.names


@dataclass(frozen=True, slots=True)
class SearchOutcome:
    """Where a name was found (or not), and every path tried."""

    host_path: str | None
    target_path: str | None
    found_via: FoundVia | None
    tried: tuple[TriedPath, ...]
    fatal: str | None = None  # an error ld.so raises on the spot (e.g. invalid ELF header)
    image: ElfImage | None = None
    other_class_seen: bool = False


class Searcher:
    """Library search for one simulated process."""

    def __init__(
        self, env: LoadEnvironment, images: ImageCache, machine: int, elf_class: int, little: bool,
        memo: dict[tuple[object, ...], object] | None = None,
    ) -> None:
        self.env = env
        self.images = images
        self.e_machine = machine
        self.elf_class = elf_class
        self.little = little
        self.machine_name = C.machine_name(machine, elf_class, little)
        # Results of file probes and directory-list searches, shared by every process one
        # model simulates (a scan): files do not change during a run, and the 120 test
        # programs of a wheel search the same RUNPATH for the same libraries.
        self.memo: dict[tuple[object, ...], object] = memo if memo is not None else {}
        self._kind = (machine, elf_class, little)
        self._origins: dict[int, str | None] = {}

    # ------------------------------------------------------------ expansion
    def expand(self, element: str, obj: LoadedObject | None) -> str | None:
        """Expand $ORIGIN, $LIB, $PLATFORM (and ${...}) in one path element; None drops it."""
        if "$" not in element:
            return element
        origin = self._origin(obj)
        key = ("expand", element, origin, self.env.secure, self._kind)
        if key in self.memo:
            return self.memo[key]  # type: ignore[return-value]
        expanded = self._expand(element, origin)
        self.memo[key] = expanded
        return expanded

    def _origin(self, obj: LoadedObject | None) -> str | None:
        """$ORIGIN of an object (the main program's through its real path), once per object."""
        if obj is None:
            return None
        cached = self._origins.get(id(obj), _UNSET)
        if cached is not _UNSET:
            return cached  # type: ignore[return-value]
        origin: str | None = os.path.dirname(obj.path)
        if not os.path.isabs(obj.path) and self.env.root is None:
            # dl-object.c _dl_new_object: a relative l_name gets getcwd() + "/" prepended
            # before its last component is cut off (no normalisation).
            cwd = os.getcwd()
            origin = os.path.dirname(cwd + ("" if cwd.endswith("/") else "/") + obj.path)
        if obj.is_main:
            origin = os.path.dirname(os.path.realpath(self.env.host_path(obj.path)))
            origin = self.env.target_path(origin)
        self._origins[id(obj)] = origin
        return origin

    def _expand(self, element: str, origin: str | None) -> str | None:
        values = {
            "ORIGIN": origin,
            "LIB": self.env.lib_expansion(self.machine_name, self.elf_class),
            "PLATFORM": self.env.platform_expansion(self.machine_name, self.elf_class),
        }
        out = []
        i = 0
        while i < len(element):
            ch = element[i]
            if ch != "$":
                out.append(ch)
                i += 1
                continue
            rest = element[i + 1 :]
            matched = None
            for key in values:
                if rest.startswith("{" + key + "}"):
                    matched, length = key, len(key) + 2
                    break
                if rest.startswith(key) and (len(rest) == len(key) or not (rest[len(key)].isalnum() or rest[len(key)] == "_")):
                    matched, length = key, len(key)
                    break
            if matched is None:
                out.append(ch)
                i += 1
                continue
            value = values[matched]
            if value is None or (matched == "ORIGIN" and self.env.secure):
                return None  # unknown or unsafe expansion: the element is dropped
            out.append(value)
            i += 1 + length
        return "".join(out)

    def expand_list(self, elements: Iterable[str], obj: LoadedObject | None) -> list[str]:
        """Expand a search path list, dropping elements that cannot be expanded."""
        result = []
        for element in elements:
            expanded = self.expand(element, obj)
            if expanded is not None:
                result.append(expanded)
        return result

    # ------------------------------------------------------------- checking
    def verify(self, target_path: str) -> tuple[str, ElfImage | None, str | None]:
        """open_verify: (outcome, image, fatal error) for one candidate file."""
        key = ("verify", target_path, self._kind)
        cached = self.memo.get(key)
        if cached is None:
            cached = self.memo[key] = self._verify(target_path)
        return cached  # type: ignore[return-value]

    def _verify(self, target_path: str) -> tuple[str, ElfImage | None, str | None]:
        host = self.env.host_path(target_path)
        try:
            head = self.images.fs.head(host, 64)
        except FileNotFoundError:
            return OUTCOME_MISSING, None, None
        except IsADirectoryError:
            return OUTCOME_MISSING, None, None
        except NotADirectoryError:
            return OUTCOME_MISSING, None, None
        except OSError as exc:
            if exc.errno in (40,):  # ELOOP: a symlink loop acts like a missing file
                return OUTCOME_MISSING, None, None
            return f"unreadable: {exc.strerror}", None, f"cannot open shared object file: {exc.strerror}"
        minimum = 52 if self.elf_class == C.ELFCLASS32 else 64
        if len(head) < minimum:
            return "file too short", None, "file too short"
        if not is_elf(head):
            return "invalid ELF header", None, "invalid ELF header"
        if head[4] != self.elf_class:
            return OUTCOME_WRONG_CLASS, None, None
        little = head[5] == C.ELFDATA2LSB
        if little != self.little:
            return "wrong byte order", None, "ELF file data encoding not " + (
                "little-endian" if self.little else "big-endian"
            )
        e_machine = int.from_bytes(head[18:20], "little" if little else "big")
        if e_machine != self.e_machine:
            return OUTCOME_WRONG_MACHINE, None, None
        try:
            image = self.images.get(host)
        except InputFormatError as exc:
            return f"unreadable: {exc.reason}", None, exc.reason
        if image.e_type not in (C.ET_DYN, C.ET_EXEC):
            return "not a shared object", None, "only ET_DYN and ET_EXEC can be loaded"
        # dl-load.c, after mapping: no PT_LOAD at all, or a shared object without PT_DYNAMIC
        # (a `.dynamic` section alone is never read), is refused on the spot.
        if image.is_separate_debug:
            # Its PT_DYNAMIC has no file data; ld.so says so in these words (checked).
            return "separate debug file", None, "object file has no dynamic section"
        if not image.has_load_segments:
            return "no loadable segments", None, "object file has no loadable segments"
        if image.e_type == C.ET_DYN and not image.has_pt_dynamic:
            return "no dynamic section", None, "object file has no dynamic section"
        return OUTCOME_FOUND, image, None

    # -------------------------------------------------------------- search
    def _try_dirs(
        self, name: str, dirs: Iterable[str], source: FoundVia, tried: list[TriedPath]
    ) -> SearchOutcome | None:
        dir_list = tuple(dirs)
        key = ("dirs", name, dir_list, source, self._kind)
        cached = self.memo.get(key)
        if cached is None:
            cached = self.memo[key] = self._probe_dirs(name, dir_list, source)
        probed: tuple[TriedPath, ...]
        hit: tuple[str, str | None, ElfImage | None] | None
        probed, hit = cached  # type: ignore[misc]
        tried.extend(probed)
        if hit is None:
            return None
        candidate, fatal, image = hit
        return SearchOutcome(self.env.host_path(candidate), candidate, source, tuple(tried), fatal, image)

    def _probe_dirs(
        self, name: str, dirs: tuple[str, ...], source: FoundVia
    ) -> tuple[tuple[TriedPath, ...], tuple[str, str | None, ElfImage | None] | None]:
        """(paths tried, (path, fatal error, image) of the hit or None) for one directory list."""
        tried: list[TriedPath] = []
        for directory in dirs:
            for candidate_dir in self.env.subdirs(directory, self.machine_name, self.elf_class):
                candidate = os.path.join(candidate_dir, name)
                outcome, image, fatal = self.verify(candidate)
                tried.append(TriedPath(candidate, source, outcome))
                if fatal is not None:
                    return tuple(tried), (candidate, fatal, None)
                if image is not None:
                    return tuple(tried), (candidate, None, image)
        return tuple(tried), None

    def search(self, name: str, loader: LoadedObject | None, main: LoadedObject | None) -> SearchOutcome:
        """Search for DT_NEEDED (or dlopen) `name` requested by `loader`, as _dl_map_object does."""
        tried: list[TriedPath] = []
        if "/" in name:
            path = self.expand(name, loader)
            if path is None:
                return SearchOutcome(None, None, None, (), "cannot expand dynamic string tokens")
            outcome, image, fatal = self.verify(path)
            tried.append(TriedPath(path, FoundVia.DIRECT, outcome))
            if image is None and fatal is None and outcome in (OUTCOME_WRONG_CLASS, OUTCOME_WRONG_MACHINE):
                fatal = outcome
            return SearchOutcome(self.env.host_path(path), path, FoundVia.DIRECT, tuple(tried), fatal, image)
        found: SearchOutcome | None = None
        if loader is None or not loader.image.has_runpath:
            did_main = False
            chain = loader
            while chain is not None and found is None:
                if chain.image.has_rpath and not chain.image.has_runpath:
                    dirs = self.expand_list(chain.image.rpath, chain)
                    found = self._try_dirs(name, dirs, FoundVia.RPATH, tried)
                    did_main |= chain is main
                chain = chain.loader
            if (
                found is None
                and not did_main
                and main is not None
                and not main.dlopened
                and main.image.has_rpath
                and not main.image.has_runpath
            ):
                found = self._try_dirs(name, self.expand_list(main.image.rpath, main), FoundVia.RPATH, tried)
        if found is None and self.env.ld_library_path:
            dirs = self.expand_list(self.env.ld_library_path, main)
            found = self._try_dirs(name, dirs, FoundVia.LD_LIBRARY_PATH, tried)
        if found is None and loader is not None and loader.image.has_runpath:
            dirs = self.expand_list(loader.image.runpath, loader)
            found = self._try_dirs(name, dirs, FoundVia.RUNPATH, tried)
        nodeflib_obj = loader if loader is not None else main
        nodeflib = nodeflib_obj is not None and nodeflib_obj.image.nodeflib
        system_dirs = self.env.system_dirs(self.machine_name, self.elf_class)
        if found is None:
            found = self._try_cache(name, nodeflib, system_dirs, tried)
        if found is None and not nodeflib:
            found = self._try_dirs(name, system_dirs, FoundVia.DEFAULT, tried)
        if found is not None:
            return found
        other = any(t.outcome == OUTCOME_WRONG_CLASS for t in tried)
        return SearchOutcome(None, None, None, tuple(tried), None, None, other)

    def _try_cache(
        self, name: str, nodeflib: bool, system_dirs: tuple[str, ...], tried: list[TriedPath]
    ) -> SearchOutcome | None:
        cache = self.env.ld_cache
        if cache is None:
            conf_dirs = self.env.conf_dirs_without_cache()
            if conf_dirs:
                return self._try_dirs(name, conf_dirs, FoundVia.CONF_WITHOUT_CACHE, tried)
            return None
        key = ("ld.so.cache", name, self._kind)
        entries = self.memo.get(key)
        if entries is None:
            context = self.env.cache_context(self.machine_name, self.elf_class)
            entries = self.memo[key] = cache.lookup(name, context)
        assert isinstance(entries, list)
        if not entries:
            tried.append(TriedPath(f"{name} (not in {cache.name or 'ld.so.cache'})", FoundVia.CACHE, OUTCOME_MISSING))
            return None
        path = entries[0].path
        if nodeflib and any(path.startswith(d.rstrip("/") + "/") for d in system_dirs):
            tried.append(TriedPath(path, FoundVia.CACHE, "skipped: DF_1_NODEFLIB"))
            return None
        outcome, image, fatal = self.verify(path)
        tried.append(TriedPath(path, FoundVia.CACHE, outcome))
        if fatal is not None:
            return SearchOutcome(self.env.host_path(path), path, FoundVia.CACHE, tuple(tried), fatal)
        if image is None:
            return None
        return SearchOutcome(self.env.host_path(path), path, FoundVia.CACHE, tuple(tried), None, image)
