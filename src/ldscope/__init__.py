"""ldscope: will native code on Linux link, and will it load? Answered by reading, never running.

The Python API (each name is also importable from its package; imported here on first use,
so `import ldscope` stays cheap):

    from ldscope import simulate_load, LoadOptions      # will this file load?
    from ldscope import link_report                     # will this link line link?
    from ldscope import run_scan, ScanSettings          # does everything in an environment load?
    from ldscope import ElfFile                         # read an ELF file

docs/architecture.md describes the packages and where each piece belongs.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

# public name -> the package that defines it
_API = {
    "simulate_load": "ldscope.analysis",
    "LoadOptions": "ldscope.analysis",
    "link_report": "ldscope.analysis",
    "LoadReport": "ldscope.loader",
    "LinkReport": "ldscope.analysis",
    "run_scan": "ldscope.scan",
    "ScanSettings": "ldscope.scan",
    "ScanResult": "ldscope.scan",
    "ElfFile": "ldscope.elf",
    "InputFormatError": "ldscope.errors",
}

if TYPE_CHECKING:
    from ldscope.analysis import LinkReport, LoadOptions, link_report, simulate_load
    from ldscope.elf import ElfFile
    from ldscope.errors import InputFormatError
    from ldscope.loader import LoadReport
    from ldscope.scan import ScanResult, ScanSettings, run_scan


def __getattr__(name: str) -> Any:
    """The API names, imported from their packages on first use."""
    module = _API.get(name)
    if module is None:
        raise AttributeError(f"module 'ldscope' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)


__all__ = [
    "ElfFile",
    "InputFormatError",
    "LinkReport",
    "LoadOptions",
    "LoadReport",
    "ScanResult",
    "ScanSettings",
    "__version__",
    "link_report",
    "run_scan",
    "simulate_load",
]
