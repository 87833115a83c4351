"""The Python process model: what a process has already loaded when it loads a native file.

An extension module is imported after its parent packages' `__init__` and everything their
imports load, and after the packages its distribution requires; a library that no extension
NEEDs is loaded by `ctypes.CDLL` or a plugin loader (`torch.ops.load_library`) after its own
package is imported, and after the distribution that provides a SONAME it needs (libc10.so
<- torch). Those native files are in the process first and are found again by SONAME; when
one of them cannot load, the import that needed it fails first.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from ldscope.system import Distribution, ImportGraph, requirement_closure


@dataclass(frozen=True, slots=True)
class ProcessContext:
    """Native files a process has loaded before a file, and which distributions loaded them."""

    loaded: tuple[str, ...]
    distributions: tuple[str, ...]  # "torch 2.13.0", in the order they are imported
    imports: tuple[str, ...]  # the import statements that loaded them, e.g. "import torchvision"

    def summary(self) -> str | None:
        """Compact: "after import torchvision (torch 2.13.0, pillow 11.0: 4 native files)"."""
        if not self.imports:
            return None
        where = ", ".join(self.distributions)
        count = len(self.loaded)
        files = f"{count} native file{'s' if count != 1 else ''}"
        return f"after {'; '.join(self.imports)} ({where + ': ' if where else ''}{files})"


def main_module(dist: Distribution) -> str | None:
    """The top-level module a user imports for `dist` (torch for torch, PIL for pillow)."""
    wanted = dist.name.replace("-", "_")
    for top in dist.top_level:
        if top.lower() == wanted:
            return top
    tops = [t for t in dist.top_level if not t.startswith("_")] or list(dist.top_level)
    return tops[0] if tops else None


class PythonProcessModel:
    """Process contexts for the native files of one Python environment."""

    def __init__(self, distributions: list[Distribution], graph: ImportGraph,
                 owner_of: dict[str, Distribution], sonames: dict[str, list[str]]) -> None:
        self.by_name = {d.name: d for d in distributions}
        self.graph = graph
        self.owner_of = owner_of
        self.sonames = sonames  # SONAME (or file name) -> native files of the target with it
        self._dist_closure: dict[str, tuple[str, ...]] = {}

    def module_of(self, path: str) -> str | None:
        """The dotted module name an extension file is imported as (None: not importable)."""
        for site in self.graph.site_packages:
            prefix = site.rstrip("/") + "/"
            if not path.startswith(prefix):
                continue
            directory, _, base = path[len(prefix):].rpartition("/")
            for suffix in self.graph.extension_suffixes:
                stem = base[: -len(suffix)]
                if base.endswith(suffix) and stem and "." not in stem:
                    parts = [p for p in directory.split("/") if p] + [stem]
                    if all(p.isidentifier() for p in parts):
                        return ".".join(parts)
            return None
        return None

    def _imports_of_distribution(self, dist: Distribution) -> tuple[str, ...]:
        """Native files `import` of the main module of `dist` loads (required ones)."""
        cached = self._dist_closure.get(dist.name)
        if cached is None:
            # `import torch`, not every top-level name torch installs (torchgen, functorch):
            # what a dependent package imports is the distribution's main module.
            top = main_module(dist)
            cached = self._dist_closure[dist.name] = self.graph.closure(top).required if top else ()
        return cached

    def for_extension(self, path: str, dist: Distribution | None) -> ProcessContext:
        """An extension: its package's import closure and its requirements' imports first."""
        module = self.module_of(path)
        loaded: dict[str, None] = {}
        dists: list[str] = []
        imports: list[str] = []
        if dist is not None:
            for dep in requirement_closure(dist, self.by_name):
                before = len(loaded)
                loaded.update(dict.fromkeys(self._imports_of_distribution(dep)))
                if len(loaded) > before:
                    dists.append(dep.label)
        if module is not None:
            closure = self.graph.closure(module).required
            own = [p for p in closure if p != path and p not in loaded]
            loaded.update(dict.fromkeys(closure))
            parent = module.rpartition(".")[0]
            if own and parent:
                imports.append(f"import {parent}")
            owners = self._owners(own)
            dists = owners + [d for d in dists if d not in owners]
        if dist is not None and dists and not imports:
            imports.append(f"import of {dist.name}'s requirements")
        loaded.pop(path, None)
        return ProcessContext(tuple(loaded), tuple(dists), tuple(imports))

    def for_library(self, path: str, dist: Distribution | None, needed: tuple[str, ...]) -> ProcessContext:
        """A library nothing NEEDs: loaded after its package's import, and after that of each
        distribution that provides a SONAME it needs."""
        loaded: dict[str, None] = {}
        dists: list[str] = []
        imports: list[str] = []
        providers: list[Distribution] = []
        for name in needed:
            for provider_path in self.sonames.get(name, ()):
                provider = self.owner_of.get(provider_path)
                if provider is not None and provider is not dist and provider not in providers:
                    providers.append(provider)
        chain: list[Distribution] = []
        for d in providers + ([dist] if dist is not None else []):
            for dep in [*requirement_closure(d, self.by_name), d]:
                if dep not in chain:
                    chain.append(dep)
        for d in chain:
            before = len(loaded)
            loaded.update(dict.fromkeys(self._imports_of_distribution(d)))
            if len(loaded) > before:
                dists.append(d.label)
        for d in [*providers, *([dist] if dist is not None else [])]:
            top = main_module(d)
            if top and f"import {top}" not in imports:  # nvidia-* distributions share `nvidia`
                imports.append(f"import {top}")
        loaded.pop(path, None)
        return ProcessContext(tuple(loaded), tuple(dists), tuple(imports))

    def _owners(self, paths: list[str]) -> list[str]:
        labels: list[str] = []
        for p in paths:
            d = self.owner_of.get(os.path.normpath(p))
            if d is not None and d.label not in labels:
                labels.append(d.label)
        return labels
