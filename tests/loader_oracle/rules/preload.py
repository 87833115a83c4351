"""LD_PRELOAD: preloaded objects come first in the global scope; entries are split at spaces and colons; a missing entry is ignored with a message."""

from __future__ import annotations

from tests.loader_oracle.spec import F, Place, Scenario, call, lib, program


def scenarios() -> tuple[Scenario, ...]:
    """The named scenarios of this rule family."""
    return (
        Scenario("preload_interposes", (lib("a", F("a_f"), F("common0")),
                                        lib("p", F("p_f"), F("common0"))),
                 (Place("a", "d"), Place("p", "d")),
                 program(call("common0"), call("a_f"), rpath=("{S}/d",)), preload=("lib{P}p.so",),
                 llp=("{S}/d",),
                 expect=("bind:{S}/main|{P}common0|{S}/d/lib{P}p.so", "call:ok")),
        Scenario("preload_path_with_dependency",
                 (lib("a"), lib("p", needed=("q",), refs=(call("q_f"),)), lib("q")),
                 (Place("a", "d"), Place("p", "pl"), Place("q", "d")),
                 program(call("a_f"), rpath=("{S}/d",)), preload=("{S}/pl/lib{P}p.so",),
                 expect=("path:{S}/pl/lib{P}p.so={S}/pl/lib{P}p.so",
                         "path:lib{P}q.so={S}/d/lib{P}q.so", "call:ok")),
        Scenario("preload_tab_is_part_of_the_name",
                 (lib("a", F("a_f"), F("common0")), lib("p", F("p_f"), F("common0")),
                  lib("q", F("q_f"), F("common0"))),
                 (Place("a", "d"), Place("p", "d"), Place("q", "d")),
                 program(call("common0"), call("a_f"), rpath=("{S}/d",)), llp=("{S}/d",),
                 preload=("lib{P}p.so\tlib{P}q.so", "lib{P}q.so"),
                 expect=("bind:{S}/main|{P}common0|{S}/d/lib{P}q.so", "call:ok")),
        Scenario("preload_missing_ignored", (lib("a"),), (Place("a", "d"),),
                 program(call("a_f"), rpath=("{S}/d",)), preload=("lib{P}nothere.so",),
                 expect=("plain:ok", "call:ok")),
    )
