"""The hand-written scenarios, one module per rule family (the scenario names say the rule:
`rpath_beats_llp`, `llp_beats_runpath`, `dlopen_host_runpath_not_used_for_deps`)."""

from __future__ import annotations

from tests.loader_oracle.rules import (
    binding_time,
    cache_and_defaults,
    dlopen,
    file_checks,
    interposition,
    origin,
    preload,
    search_order,
    subdirectories,
    versions,
)
from tests.loader_oracle.spec import Scenario

FAMILIES = (search_order, origin, preload, versions, binding_time, interposition, file_checks, subdirectories, cache_and_defaults, dlopen)


def features() -> tuple[Scenario, ...]:
    """One named scenario per loader feature the oracle must cover whatever the random draw."""
    return tuple(s for family in FAMILIES for s in family.scenarios())
