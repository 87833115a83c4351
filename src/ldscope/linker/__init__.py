"""Link simulation: will this link line link with GNU ld (bfd), gold, lld or mold, and why not.

    from ldscope.linker import link_report
    report = link_report(["gcc", "main.o", "-L.", "-lfoo"], fix=True)
    report.links, [e.message for e in report.errors]
"""

from __future__ import annotations

from ldscope.linker.api import build_report, link_report, simulate_command
from ldscope.linker.results import SCHEMA, Fix, LinkError, LinkReport

__all__ = ["SCHEMA", "Fix", "LinkError", "LinkReport", "build_report", "link_report", "simulate_command"]
