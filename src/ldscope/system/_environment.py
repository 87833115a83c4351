"""The one place that reads the process environment.

Everything below the CLI takes the environment it simulates as an argument (a mapping of
variable names to values) and never reads `os.environ` itself; when a caller gives none, the
default is this capture of the environment ldscope runs in. Tests and the Python API can
therefore simulate another environment exactly, the way `ldscope load --env/--clear-env` does.

The environment captured is the one ldscope was started in: when LD_LIBRARY_PATH, LD_PRELOAD
or LD_AUDIT were set, the CLI re-executed ldscope without them (they may break ldscope's own
imports) and carried their values in SIMULATED_LOADER_ENV; they are merged back here.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping

# Written by ldscope.cli (its SIMULATED_LOADER_ENV) when it re-executes: a JSON object of the
# loader variables of the environment ldscope was started in, which its own process runs without.
SIMULATED_LOADER_ENV = "LDSCOPE_SIMULATED_LOADER_ENV"


def process_environment() -> dict[str, str]:
    """A copy of the environment ldscope was started in (the default for every simulation)."""
    env = dict(os.environ)
    env.update(_carried_loader_variables(env.pop(SIMULATED_LOADER_ENV, None)))
    return env


def _carried_loader_variables(value: str | None) -> dict[str, str]:
    """The variables SIMULATED_LOADER_ENV carries ({} when unset or not a JSON object of strings)."""
    if not value:
        return {}
    try:
        carried = json.loads(value)
    except ValueError:
        return {}  # set by hand, and wrongly: simulate the environment as it is
    if not isinstance(carried, dict):
        return {}
    return {name: text for name, text in carried.items() if isinstance(text, str)}


def environment_or_process(env: Mapping[str, str] | None) -> Mapping[str, str]:
    """`env`, or the process environment when none was given."""
    return env if env is not None else process_environment()


def search_path(env: Mapping[str, str]) -> str:
    """PATH as `env` sets it (the shell's default path when unset), for finding programs."""
    value = env.get("PATH")
    return value if value is not None else os.defpath


def home_directory(env: Mapping[str, str]) -> str | None:
    """$HOME as `env` sets it (None when unset)."""
    return env.get("HOME") or None
