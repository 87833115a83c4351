"""Python-level checks: what the interpreter will import at all, which wheels fit it, and
whether installed distributions satisfy each other's requirements."""

from __future__ import annotations

import os

from packaging.markers import (
    InvalidMarker,
    UndefinedComparison,
    UndefinedEnvironmentName,
    default_environment,
)
from packaging.requirements import InvalidRequirement, Requirement
from packaging.version import InvalidVersion, Version

from ldscope import system
from ldscope.loader import Problem
from ldscope.system import Distribution, InterpreterABI
from ldscope.vocab import ProblemKind, Severity, When


def unimportable_extension(path: str, abi: InterpreterABI, interpreter: str) -> Problem | None:
    """A problem if no suffix the interpreter imports leaves a module name for the file."""
    base = os.path.basename(path)
    if system.module_name_for(base, abi) is not None:
        return None
    tag = system.extension_tag_of(base) or "another interpreter"
    suffixes = ", ".join(abi.extension_suffixes)
    version = ".".join(map(str, abi.version))
    summary = (f"extensions built for {tag} are never imported by Python {version} "
               f"({interpreter} imports only files ending in {suffixes})")
    message = f"{path} is built for {tag}: Python {version} never imports it"
    return Problem(ProblemKind.NOT_IMPORTABLE, Severity.ERROR, path, message, When.LOAD,
                   library=tag, cause=f"not-importable:{tag}", cause_summary=summary)


def wheel_problems(wheel: str, abi: InterpreterABI, interpreter: str) -> list[Problem]:
    """Problems if pip would refuse the wheel for the interpreter and this platform."""
    reasons = system.wheel_tag_problems(os.path.basename(wheel), abi)
    if not reasons:
        return []
    message = f"{os.path.basename(wheel)} does not fit {interpreter}: " + "; ".join(reasons)
    return [Problem(ProblemKind.INCOMPATIBLE_WHEEL, Severity.ERROR, wheel, message, When.NEVER,
                    cause=f"incompatible-wheel:{wheel}", cause_summary=message)]


def _marker_environment(abi: InterpreterABI | None) -> dict[str, str]:
    env = {k: str(v) for k, v in default_environment().items()}
    if abi is not None:
        env.update(python_version=".".join(map(str, abi.version)),
                   python_full_version=".".join(map(str, abi.version)) + ".0",
                   platform_machine=abi.machine, sys_platform="linux", platform_system="Linux",
                   os_name="posix", implementation_name=abi.implementation,
                   platform_python_implementation="CPython" if abi.implementation == "cpython" else "PyPy")
    return env


def unsatisfied_requirements(distributions: list[Distribution], abi: InterpreterABI | None) -> list[Problem]:
    """A warning per Requires-Dist whose installed version does not satisfy it (pip check's
    "has requirement X, but you have Y"), with markers evaluated for the target interpreter."""
    by_name = {d.name: d for d in distributions}
    environment = _marker_environment(abi)
    problems: list[Problem] = []
    for dist in distributions:
        for text in dist.requirements:
            try:
                req = Requirement(text)
                if req.marker is not None and not req.marker.evaluate(environment):
                    continue
            except (InvalidRequirement, InvalidMarker, UndefinedComparison, UndefinedEnvironmentName):
                continue
            dep = by_name.get(system.normalize_name(req.name))
            if dep is None or dep.version is None or not str(req.specifier):
                continue  # not installed is pip's business; only version pins are checked here
            try:
                ok = req.specifier.contains(Version(dep.version), prereleases=True)
            except InvalidVersion:
                continue
            if ok:
                continue
            message = (f"{dist.label} requires {req.name}{req.specifier}; {dep.label} is installed: "
                       f"{dist.name}'s native files were built against another {dep.name}")
            problems.append(Problem(ProblemKind.UNSATISFIED_REQUIREMENT, Severity.WARNING,
                                    dist.site or dist.name, message, When.NEVER, library=dep.label,
                                    cause=f"requirement:{dist.name}:{dep.name}", cause_summary=message))
    return problems

