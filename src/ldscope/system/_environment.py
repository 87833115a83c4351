"""The one place that reads the process environment.

Everything below the CLI takes the environment it simulates as an argument (a mapping of
variable names to values) and never reads `os.environ` itself; when a caller gives none, the
default is this capture of the environment ldscope runs in. Tests and the Python API can
therefore simulate another environment exactly, the way `ldscope load --env/--clear-env` does.
"""

from __future__ import annotations

import os
from collections.abc import Mapping


def process_environment() -> dict[str, str]:
    """A copy of the environment ldscope itself runs in (the default for every simulation)."""
    return dict(os.environ)


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
