"""The load analysis: choose the host → simulate → explain, for `ldscope load` and every file
of a scan alike."""

from __future__ import annotations

import os
from dataclasses import dataclass, replace

from ldscope.elf import constants as C
from ldscope.errors import InputFormatError
from ldscope.explain import ReportExplainer
from ldscope.loader import (
    ElfImage,
    Host,
    HostKind,
    ImageCache,
    LoadEnvironment,
    LoaderModel,
    LoadReport,
    choose_host,
    make_environment,
)
from ldscope.system import OSFileSystem


@dataclass(frozen=True, slots=True)
class LoadOptions:
    """What the user told `ldscope load` about the process."""

    python: str | None = None  # interpreter for extension modules (default: this one)
    host: HostKind | None = None  # force how the file is loaded
    preload: tuple[str, ...] = ()
    loaded: tuple[str, ...] = ()
    env: tuple[str, ...] = ()
    clear_env: bool = False
    root: str | None = None
    also_search: tuple[str, ...] = ()
    now: bool | None = None  # dlopen flags for plain libraries (None: RTLD_LAZY)
    near_misses: bool = True
    bindings: bool = False


class LoadAnalysis:
    """Everything loads analysed together share: the environment, the parsed images, the
    loader model and the explainer (each distinct problem explained once).

    `record_bindings` makes the model bind reference by reference and keep every binding
    (one `load -v`); without it references are bound as arrays, cached across loads (a scan).
    """

    def __init__(self, env: LoadEnvironment, images: ImageCache, also_search: tuple[str, ...] = (),
                 near_misses: bool = True, record_bindings: bool = False) -> None:
        self.env = env
        self.images = images
        self.model = LoaderModel(env, images, record_bindings=record_bindings)
        self.explainer = ReportExplainer(images, env, also_search, near_misses)

    def run(self, path: str, host: Host) -> LoadReport:
        """Simulate loading `path` in `host` and explain what fails."""
        if host.kind == HostKind.EXECUTABLE:
            report = self.model.load_executable(path, host)
        else:
            report = self.model.load_dlopen(path, host)
        return self.explainer.explain(report)


def new_analysis(env_assignments: tuple[str, ...] = (), clear_env: bool = False, root: str | None = None,
                 also_search: tuple[str, ...] = (), near_misses: bool = True, record_bindings: bool = False,
                 fs: OSFileSystem | None = None) -> LoadAnalysis:
    """An analysis in the process environment (or an empty one) with NAME=VALUE assignments."""
    env = make_environment(env_assignments, clear_env, root)
    return LoadAnalysis(env, ImageCache(fs), also_search, near_misses, record_bindings)


def open_target(path: str, env: LoadEnvironment, images: ImageCache, root: str | None) -> ElfImage:
    """The image of a file to load; InputFormatError if it is missing or cannot be loaded."""
    host_path = env.host_path(path) if root and os.path.isabs(path) else path
    if not os.path.exists(host_path):
        raise InputFormatError(path, "no such file")
    image = images.get(host_path)
    if image.e_type not in (C.ET_DYN, C.ET_EXEC):
        raise InputFormatError(path, f"cannot be loaded: ELF type {image.e_type} is not EXEC or DYN")
    return image


def simulate_load(
    path: str,
    options: LoadOptions | None = None,
    images: ImageCache | None = None,
    env: LoadEnvironment | None = None,
) -> LoadReport:
    """Simulate loading `path` (raises InputFormatError if the target itself is unreadable)."""
    options = options or LoadOptions()
    if env is None:
        env = make_environment(options.env, options.clear_env, options.root)
    # One load: bind reference by reference (bindings, interposition); -v shows bindings.
    analysis = LoadAnalysis(env, images or ImageCache(), options.also_search, options.near_misses,
                            record_bindings=True)
    image = open_target(path, env, analysis.images, options.root)
    host = choose_host(path, image, options.host, options.python, options.preload, options.loaded,
                       options.now)
    report = analysis.run(path, host)
    if not options.bindings:
        report = replace(report, bindings=())
    return report
