"""`scan`: every native file of a Python environment, wheel, directory or root filesystem,
each loaded in the process it really goes into, findings grouped by root cause.

    from ldscope.scan import ScanSettings, run_scan
    result = run_scan(("/path/to/venv",), ScanSettings())
"""

from __future__ import annotations

from ldscope.scan._attribution import Owner, OwnerSource
from ldscope.scan._engine import ScanResult, TargetScan, run_scan, scan_target
from ldscope.scan._findings import Finding
from ldscope.scan._runner import FileResult, NativeKind, ScanSettings
from ldscope.scan._targets import ScanTarget, TargetKind, resolve_targets

__all__ = [
    "FileResult",
    "Finding",
    "NativeKind",
    "Owner",
    "OwnerSource",
    "ScanResult",
    "ScanSettings",
    "ScanTarget",
    "TargetKind",
    "TargetScan",
    "resolve_targets",
    "run_scan",
    "scan_target",
]
