"""The public entry point of the loader model: choose the host, simulate, explain."""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from ldscope.elf import constants as C
from ldscope.errors import InputFormatError
from ldscope.loader import _results as R
from ldscope.loader._environment import LoadEnvironment, make_environment
from ldscope.loader._image import ElfImage, ImageCache
from ldscope.loader._simulate import Host, LoaderModel

_EXTENSION_SUFFIX = re.compile(r"\.(cpython-\d+[a-z]*-[^.]+|abi3|cpython-\d+[a-z]*)\.so$|module\.so$")


@dataclass(frozen=True, slots=True)
class LoadOptions:
    """What the user told `ldscope load` about the process."""

    python: str | None = None  # interpreter for extension modules (default: this one)
    host: str | None = None  # force a host kind: "executable", "python", "dlopen"
    preload: tuple[str, ...] = ()
    loaded: tuple[str, ...] = ()
    env: tuple[str, ...] = ()
    clear_env: bool = False
    root: str | None = None
    also_search: tuple[str, ...] = ()
    now: bool | None = None  # dlopen flags for plain libraries (None: RTLD_LAZY)
    near_misses: bool = True
    bindings: bool = False
    extra: dict[str, str] = field(default_factory=dict)


def is_python_extension(path: str, image: ElfImage) -> bool:
    """True for CPython extension modules: by file name suffix, or by exporting the init
    function the importer looks up for the file (PyInit_ + the name up to its first dot)."""
    if image.e_type != C.ET_DYN or image.interpreter is not None:
        return False
    base = os.path.basename(path)
    if _EXTENSION_SUFFIX.search(base):
        return True
    return image.defines("PyInit_" + base.split(".", 1)[0])


def choose_host(path: str, image: ElfImage, options: LoadOptions) -> Host:
    """Executables load as themselves, extensions in Python, other libraries in a minimal host."""
    kind = options.host
    if kind is None:
        if image.is_main_executable_type:
            kind = "executable"
        elif options.python is not None or is_python_extension(path, image):
            kind = "python"
        else:
            kind = "dlopen"
    if kind == "python":
        exe = options.python or sys.executable
        return Host("python", os.path.realpath(exe), options.preload, options.loaded, True)
    if kind == "executable":
        return Host("executable", None, options.preload, options.loaded)
    return Host("dlopen", None, options.preload, options.loaded, bool(options.now))


def simulate_load(
    path: str,
    options: LoadOptions | None = None,
    images: ImageCache | None = None,
    env: LoadEnvironment | None = None,
) -> R.LoadReport:
    """Simulate loading `path` (raises InputFormatError if the target itself is unreadable)."""
    options = options or LoadOptions()
    if env is None:
        env = make_environment(options.env, options.clear_env, options.root)
    images = images or ImageCache()
    # One load: bind reference by reference (bindings, interposition); -v shows bindings.
    model = LoaderModel(env, images, record_bindings=True)
    host_path = env.host_path(path) if options.root and os.path.isabs(path) else path
    if not os.path.exists(host_path):
        raise InputFormatError(path, "no such file")
    image = images.get(host_path)
    if image.e_type not in (C.ET_DYN, C.ET_EXEC):
        raise InputFormatError(path, f"cannot be loaded: ELF type {image.e_type} is not EXEC or DYN")
    host = choose_host(path, image, options)
    if host.kind == "executable":
        report = model.load_executable(path, host)
    else:
        report = model.load_dlopen(path, host)
    if options.near_misses and any(p.kind in (R.UNRESOLVED_SYMBOL, R.MISSING_VERSION, R.MISSING_LIBRARY) for p in report.problems):
        from ldscope.explain._load import explain

        report = replace(report, problems=explain(report, model, options.also_search))
    if not options.bindings:
        report = replace(report, bindings=())
    return report


def load_report_json(report: R.LoadReport) -> dict[str, object]:
    """The `ldscope.load/1` JSON document for one report."""
    from ldscope.report._json import to_jsonable

    return {
        "schema": "ldscope.load/1",
        "target": report.target,
        "host": report.host,
        "loads": report.loads,
        "libraries": [
            {
                "name": lib.name,
                "path": lib.path,
                "found_via": lib.found_via,
                "needed_by": list(lib.needed_by),
                "tried": [to_jsonable(t) for t in lib.tried],
            }
            for lib in report.libraries
        ],
        "problems": [problem_json(p) for p in report.problems],
        "load_order": list(report.load_order),
        "bindings": [to_jsonable(b) for b in report.bindings],
    }


def problem_json(p: R.Problem) -> dict[str, object]:
    """One problem as JSON (shared by load and scan)."""
    return {
        "kind": p.kind,
        "severity": p.severity,
        "file": p.file,
        "symbol": p.symbol,
        "demangled": p.demangled,
        "version": p.version,
        "library": p.library,
        "when": p.when,
        "message": p.message,
        "cause": p.cause,
        "cause_summary": p.cause_summary,
        "tried": [{"path": t.path, "source": t.source, "outcome": t.outcome} for t in p.tried],
        "near_misses": [
            {
                "symbol": n.symbol,
                "demangled": n.demangled,
                "file": n.file,
                "explanation": n.explanation,
                "kind": n.kind,
            }
            for n in p.near_misses
        ],
    }


def default_python() -> str:
    """The interpreter running ldscope (the default host for extension modules)."""
    return os.path.realpath(sys.executable)


__all__: Sequence[str] = ("LoadOptions", "load_report_json", "problem_json", "simulate_load")
