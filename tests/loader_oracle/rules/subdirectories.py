"""The glibc-hwcaps and legacy hwcap/platform subdirectories tried in each search directory."""

from __future__ import annotations

from tests.loader_oracle.spec import Place, Scenario, call, lib, program


def scenarios() -> tuple[Scenario, ...]:
    """The named scenarios of this rule family."""
    return (
        Scenario("hwcaps_subdirectory", (lib("a"),),
                 (Place("a", "rp"), Place("a", "rp/glibc-hwcaps/x86-64-v2")),
                 program(call("a_f"), rpath=("{S}/rp",)),
                 expect=("path:lib{P}a.so={S}/rp/glibc-hwcaps/x86-64-v2/lib{P}a.so",)),
        Scenario("legacy_platform_subdirectory", (lib("a"),),
                 (Place("a", "rp"), Place("a", "rp/x86_64")),
                 program(call("a_f"), rpath=("{S}/rp",)),
                 expect=("path:lib{P}a.so={S}/rp/x86_64/lib{P}a.so",)),
    )
