"""What a scan's targets are: environments, directories, wheels, root filesystems, files."""

from __future__ import annotations

import os
from dataclasses import dataclass

from ldscope import system
from ldscope.elf import special_kind
from ldscope.vocab import Words


class TargetKind(Words):
    """What a command-line target turned out to be."""

    ENVIRONMENT = "environment"  # a venv, conda env or Python prefix
    DIRECTORY = "directory"
    WHEEL = "wheel"  # read in place
    ROOT = "root"  # a root filesystem (--root)
    FILE = "file"
    FILES = "files"  # several file targets scanned as one batch


@dataclass(frozen=True, slots=True)
class ScanTarget:
    """One thing to scan, as resolved from the command line."""

    spec: str
    kind: TargetKind
    path: str
    interpreter: str | None = None
    paths: tuple[str, ...] = ()  # the files of a FILES batch
    chosen_because: str | None = None  # why a default target (no TARGET given) is this one


def resolve_targets(specs: tuple[str, ...], python: str | None, root: str | None) -> tuple[list[ScanTarget], list[str]]:
    """Turn command-line targets into ScanTargets; missing ones become errors."""
    if not specs:
        return [_default_target(python, root)], []
    targets: list[ScanTarget] = []
    errors: list[str] = []
    for spec in specs:
        path = os.path.abspath(spec)
        if root is not None and os.path.isabs(spec):
            path = os.path.join(os.path.abspath(root), spec.lstrip("/"))
        if not os.path.lexists(path):
            errors.append(f"{spec}: no such file or directory")
        elif (special := _special_kind(path)) is not None:
            errors.append(f"{spec}: is a {special}, not a regular file (not read)")
        elif spec.endswith(".whl") and os.path.isfile(path):
            targets.append(ScanTarget(spec, TargetKind.WHEEL, path))
        elif os.path.isdir(path):
            if system.looks_like_environment(path):
                env = system.describe_environment(path)
                targets.append(ScanTarget(spec, TargetKind.ENVIRONMENT, path, env.interpreter))
            else:
                targets.append(ScanTarget(spec, TargetKind.DIRECTORY, path))
        else:
            targets.append(ScanTarget(spec, TargetKind.FILE, path))
    return targets, errors


def _special_kind(path: str) -> str | None:
    """"FIFO", "socket", "character device"... for a target that is none of file, directory,
    wheel (a FIFO would block the read, /dev/zero never end); None otherwise."""
    try:
        kind = special_kind(os.stat(path).st_mode)
    except (OSError, ValueError):
        return None  # a broken symlink: the scan says so in its own words
    return None if kind == "directory" else kind


def _default_target(python: str | None, root: str | None) -> ScanTarget:
    """No target given: the root filesystem, the --python's environment, the activated
    environment (VIRTUAL_ENV, then CONDA_PREFIX, as ruff and uv do), or the one ldscope runs in."""
    if root is not None:
        return ScanTarget(root, TargetKind.ROOT, os.path.abspath(root), chosen_because="--root given")
    if python is not None:
        env = system.environment_of_interpreter(python)
        return ScanTarget(python, TargetKind.ENVIRONMENT, env.prefix, env.interpreter,
                          chosen_because="the environment of --python")
    variables = system.process_environment()
    for variable in ("VIRTUAL_ENV", "CONDA_PREFIX"):
        prefix = variables.get(variable)
        if prefix and os.path.isdir(prefix) and system.looks_like_environment(prefix):
            env = system.describe_environment(os.path.abspath(prefix))
            return ScanTarget(prefix, TargetKind.ENVIRONMENT, env.prefix, env.interpreter,
                              chosen_because=f"no TARGET given: {variable} is set (the activated environment)")
    env = system.running_environment()
    return ScanTarget("(this environment)", TargetKind.ENVIRONMENT, env.prefix, system.running_interpreter(),
                      chosen_because="no TARGET given and neither VIRTUAL_ENV nor CONDA_PREFIX is set: "
                                     "the environment ldscope runs in")


def batched(targets: list[ScanTarget]) -> list[ScanTarget]:
    """File targets scanned together (one set of jobs, run in parallel like a directory's);
    other targets one by one, in order."""
    files = [t for t in targets if t.kind == TargetKind.FILE]
    if len(files) < 2:
        return targets
    batch = ScanTarget(f"({len(files)} files)", TargetKind.FILES, files[0].path, None, tuple(t.path for t in files))
    return [t for t in targets if t.kind != TargetKind.FILE] + [batch]
