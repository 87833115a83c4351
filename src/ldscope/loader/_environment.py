"""The loader's environment: variables, sysroot, cache, CPU and default directories."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property

from ldscope import system as plat
from ldscope.errors import InputFormatError
from ldscope.system import CacheLookupContext, LdCache, load_ld_cache


def split_path_list(value: str | None) -> tuple[str, ...]:
    """Split LD_LIBRARY_PATH as ld.so does (':' or ';').

    An empty element stays "": dl-load.c fillin_rpath gives it an empty directory name, so
    the cwd is searched with the bare file name (ld.so tries and names `libx.so`, not
    `./libx.so`)."""
    if not value:
        return ()
    return tuple(value.replace(";", ":").split(":"))


def split_preload(value: str | None) -> tuple[str, ...]:
    """Split LD_PRELOAD as rtld.c handle_preload_list does: at ' ' and ':' only (a tab or
    newline is part of a name); empty elements dropped."""
    if not value:
        return ()
    return tuple(p for p in value.replace(":", " ").split(" ") if p)


@dataclass
class LoadEnvironment:
    """Everything outside the files themselves that decides where the loader looks.

    `root` maps every absolute path into a sysroot (container images, foreign
    architectures). The cache and ld.so.conf are read from inside it.
    """

    env: Mapping[str, str] = field(default_factory=plat.process_environment)
    root: str | None = None
    cpu: plat.CpuFeatures | None = None
    secure: bool = False
    problems: list[str] = field(default_factory=list)
    _cache_contexts: dict[tuple[str, int], CacheLookupContext] = field(default_factory=dict, repr=False)
    _subdirs: dict[tuple[str, str, int], tuple[str, ...]] = field(default_factory=dict, repr=False)

    # ------------------------------------------------------------ variables
    @property
    def ld_library_path(self) -> tuple[str, ...]:
        """LD_LIBRARY_PATH elements (ignored in secure mode)."""
        if self.secure:
            return ()
        return split_path_list(self.env.get("LD_LIBRARY_PATH"))

    @property
    def ld_preload(self) -> tuple[str, ...]:
        """LD_PRELOAD entries."""
        return split_preload(self.env.get("LD_PRELOAD"))

    @property
    def bind_now(self) -> bool:
        """LD_BIND_NOW set to a non-empty value."""
        return bool(self.env.get("LD_BIND_NOW"))

    # ------------------------------------------------------------- sysroot
    def host_path(self, path: str) -> str:
        """Where an absolute path of the target system lives on this machine."""
        if self.root is None or not os.path.isabs(path):
            return path
        return os.path.join(self.root, path.lstrip("/"))

    def target_path(self, host_path: str) -> str:
        """The reverse of host_path: how the target system names a file we opened."""
        if self.root is None:
            return host_path
        root = os.path.abspath(self.root)
        absolute = os.path.abspath(host_path)
        if absolute == root:
            return "/"
        if absolute.startswith(root + os.sep):
            return absolute[len(root):]
        return host_path

    # --------------------------------------------------------------- cache
    @cached_property
    def ld_cache(self) -> LdCache | None:
        """The parsed /etc/ld.so.cache of the (sys)root, None if absent or unreadable."""
        path = self.host_path("/etc/ld.so.cache")
        if not os.path.exists(path):
            return None
        try:
            cache = load_ld_cache(path)
        except InputFormatError as exc:
            self.problems.append(f"{exc.file}: {exc.reason} (cache ignored, as ld.so does)")
            return None
        except OSError as exc:
            self.problems.append(f"{path}: cannot read: {exc.strerror}")
            return None
        self.problems.extend(f"{path}: {problem} (ld.so still uses the cache, without the "
                             "glibc-hwcaps entries this affects)" for problem in cache.problems)
        return cache

    @cached_property
    def _conf_dirs(self) -> tuple[str, ...]:
        from ldscope.system import read_ld_so_conf

        conf = read_ld_so_conf("/etc/ld.so.conf", root=self.root)
        return conf.directories

    def conf_dirs_without_cache(self) -> tuple[str, ...]:
        """ld.so.conf directories, used in place of the cache when the root has none."""
        if self.ld_cache is not None:
            return ()
        if not os.path.exists(self.host_path("/etc/ld.so.conf")):
            return ()
        return self._conf_dirs

    def cache_context(self, machine: str, elf_class: int) -> CacheLookupContext:
        """What ld.so for this machine accepts from the cache (computed once per machine)."""
        key = (machine, elf_class)
        context = self._cache_contexts.get(key)
        if context is None:
            context = CacheLookupContext.for_machine(machine, elf_class, self.cpu)
            self._cache_contexts[key] = context
        return context

    # ------------------------------------------------------------ platform
    def system_dirs(self, machine: str, elf_class: int) -> tuple[str, ...]:
        """The built-in default directories for the machine."""
        try:
            return plat.default_search_dirs(machine, elf_class)
        except (KeyError, ValueError):
            return ("/lib", "/usr/lib")

    def subdirs(self, directory: str, machine: str, elf_class: int) -> tuple[str, ...]:
        """The directories tried for one search-path element (hwcaps first), memoised."""
        key = (directory, machine, elf_class)
        found = self._subdirs.get(key)
        if found is None:
            found = self._subdirs[key] = self._compute_subdirs(directory, machine, elf_class)
        return found

    def _compute_subdirs(self, directory: str, machine: str, elf_class: int) -> tuple[str, ...]:
        if directory == "":
            # The empty element (dl-load.c fillin_rpath): candidates are relative names,
            # "glibc-hwcaps/x86-64-v3/libx.so" ... "libx.so".
            return tuple("" if d == "." else d.removeprefix("./")
                         for d in self.subdirs(".", machine, elf_class))
        try:
            return plat.search_subdirs(directory, machine, self.cpu, elf_class)
        except (KeyError, ValueError):
            return (directory.rstrip("/") or "/",)

    def lib_expansion(self, machine: str, elf_class: int) -> str:
        """What $LIB means for the machine."""
        try:
            return plat.lib_expansion(machine, elf_class)
        except (KeyError, ValueError):
            return "lib"

    def platform_expansion(self, machine: str, elf_class: int) -> str | None:
        """What $PLATFORM means for the machine and CPU."""
        try:
            return plat.platform_expansion(machine, self.cpu, elf_class)
        except (KeyError, ValueError):
            return None


def make_environment(
    overrides: Sequence[str] = (),
    clear: bool = False,
    root: str | None = None,
    base: Mapping[str, str] | None = None,
    detect_cpu: bool = True,
) -> LoadEnvironment:
    """Build an environment from `base` (default: the process environment; nothing with
    `clear`) plus NAME=VALUE overrides."""
    env: dict[str, str] = {} if clear else dict(base if base is not None else plat.process_environment())
    for item in overrides:
        name, sep, value = item.partition("=")
        if not sep or not name:
            raise ValueError(f"--env expects NAME=VALUE, got {item!r}")
        env[name] = value
    cpu = None
    if detect_cpu and root is None:
        try:
            cpu = plat.read_cpu_features()
        except (OSError, ValueError):
            cpu = None
    return LoadEnvironment(env=env, root=root, cpu=cpu)
