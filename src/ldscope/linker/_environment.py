"""What a link simulation reads besides its line and its input files."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from ldscope.linker.inputs import DEFAULT_CACHE, FactsCache
from ldscope.system import environment_or_process


@dataclass(frozen=True, slots=True)
class LinkEnvironment:
    """The environment variables a link sees (LD_LIBRARY_PATH and LD_RUN_PATH for bfd's
    DT_NEEDED search, PATH for the toolchain it asks) and the cache of per-file facts.

    A simulation keeps the one it was given, so re-simulating a candidate fix sees exactly
    what the first simulation saw.
    """

    variables: Mapping[str, str]
    cache: FactsCache


def link_environment(env: Mapping[str, str] | None = None, cache: FactsCache | None = None) -> LinkEnvironment:
    """The given variables (default: the process environment) and cache (default: shared)."""
    return LinkEnvironment(environment_or_process(env), cache if cache is not None else DEFAULT_CACHE)
