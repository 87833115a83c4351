"""The link model: will this link line link with GNU ld (bfd), gold, lld or mold? By stage:
`frontend` (command lines, drivers, logs → the linker's argv), `inputs` (-l search, scripts,
groups, per-file symbol facts), `engines` (each linker's resolution rules). The result is a
`Simulation` (raw findings); `ldscope.explain` words and explains them.

    from ldscope.linker import resolve_link_line, simulate_argv
    sim = simulate_argv(resolve_link_line(["gcc", "main.o", "-L.", "-lfoo"]))
"""

from __future__ import annotations

from ldscope.linker._branch_range import BranchFinding, BranchProblem, branch_findings, explain_branch
from ldscope.linker._environment import LinkEnvironment, link_environment
from ldscope.linker._layout import LayoutEstimate, OutputSectionEstimate, estimate_layout
from ldscope.linker._messages import lld_location, program_label, word
from ldscope.linker._simulate import Simulation, engine_class, simulate_argv
from ldscope.linker._symbol_kinds import COMMON, SHARED, SHARED_WEAK, STRONG, WEAK
from ldscope.linker.engines import POLICIES, Policy
from ldscope.linker.frontend import CommandLineError, LinkLine, find_link_in_log, resolve_link_line

__all__ = [
    "COMMON",
    "POLICIES",
    "SHARED",
    "SHARED_WEAK",
    "STRONG",
    "WEAK",
    "BranchFinding",
    "BranchProblem",
    "CommandLineError",
    "LayoutEstimate",
    "LinkEnvironment",
    "LinkLine",
    "OutputSectionEstimate",
    "Policy",
    "Simulation",
    "branch_findings",
    "engine_class",
    "estimate_layout",
    "explain_branch",
    "find_link_in_log",
    "link_environment",
    "lld_location",
    "program_label",
    "resolve_link_line",
    "simulate_argv",
    "word",
]
