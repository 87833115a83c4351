"""Which definition wins: the first in scope order, the program's own, DT_SYMBOLIC, copy relocations and canonical PLT entries."""

from __future__ import annotations

from tests.loader_oracle.spec import D, F, Lib, Place, Scenario, addr, call, data, lib, program


def scenarios() -> tuple[Scenario, ...]:
    """The named scenarios of this rule family."""
    return (
        Scenario("interposition_first_in_scope",
                 (lib("a", F("a_f"), F("common0")),
                  lib("b", F("b_f"), F("common0"), refs=(call("common0"),))),
                 (Place("a", "d"), Place("b", "d")),
                 program(call("a_f"), call("b_f"), needed=("a", "b"), rpath=("{S}/d",)),
                 expect=("bind:{S}/d/lib{P}b.so|{P}common0|{S}/d/lib{P}a.so",)),
        Scenario("exe_interposes", (lib("a", F("a_f"), F("common0"), refs=(call("common0"),)),),
                 (Place("a", "d"),),
                 program(call("a_f"), rpath=("{S}/d",), defs=(F("common0"),)),
                 expect=("bind:{S}/d/lib{P}a.so|{P}common0|{S}/main",)),
        Scenario("symbolic_binds_locally",
                 (lib("a", F("a_f"), F("common0"), refs=(call("common0"),), symbolic=True),),
                 (Place("a", "d"),), program(call("a_f"), rpath=("{S}/d",), defs=(F("common0"),)),
                 expect=("call:ok", "nobind:{S}/d/lib{P}a.so|{P}common0")),
        Scenario("copy_reloc_nonpie", (lib("a", F("a_f"), D("a_d"), refs=(data("a_d"),)),),
                 (Place("a", "d"),), program(data("a_d"), call("a_f"), rpath=("{S}/d",), pie=False),
                 expect=("bind:{S}/d/lib{P}a.so|{P}a_d|{S}/main",
                         "bind:{S}/main|{P}a_d|{S}/d/lib{P}a.so")),
        Scenario("copy_reloc_pie", (lib("a", F("a_f"), D("a_d"), refs=(data("a_d"),)),),
                 (Place("a", "d"),), program(data("a_d"), call("a_f"), rpath=("{S}/d",)),
                 expect=("bind:{S}/d/lib{P}a.so|{P}a_d|{S}/main",)),
        Scenario("copy_reloc_versioned_skips_other_version",
                 (Lib("a", "lib{P}a.so", (F("a_f", "{P}A_1"), D("common1", "{P}A_1")),
                      versions=("{P}A_1",)),
                  Lib("b", "lib{P}b.so", (F("b_f", "{P}B_1"), D("common1", "{P}B_1")),
                      refs=(data("common1"),), versions=("{P}B_1",))),
                 (Place("a", "d"), Place("b", "d")),
                 program(data("common1"), call("b_f"), needed=("a", "b"), rpath=("{S}/d",)),
                 expect=("bind:{S}/d/lib{P}b.so|{P}common1|{S}/d/lib{P}b.so",
                         "bind:{S}/main|{P}common1|{S}/d/lib{P}a.so")),
        Scenario("canonical_plt_nonpie",
                 (lib("a", F("a_f")), lib("b", F("b_f"), refs=(addr("a_f"), call("a_f")),
                                          needed=("a",))),
                 (Place("a", "d"), Place("b", "d")),
                 program(addr("a_f"), call("b_f"), needed=("a", "b"), rpath=("{S}/d",), pie=False),
                 # GNU ld gives b one GOT slot for both uses (.plt.got): no JUMP_SLOT
                 expect=("call:ok", "bind:{S}/d/lib{P}b.so|{P}a_f|{S}/main",
                         "bind:{S}/main|{P}a_f|{S}/d/lib{P}a.so")),
        Scenario("canonical_plt_only_definition",
                 (lib("a", F("a_f"), F("a_g")), lib("ar", F("a_g"), soname="lib{P}a.so"),
                  lib("b", F("b_f"), refs=(addr("a_f"), call("a_f")), needed=("a",))),
                 (Place("ar", "d"), Place("b", "d")),
                 program(addr("a_f"), call("b_f"), needed=("a", "b"), rpath=("{S}/d",), pie=False),
                 expect=("bind:{S}/d/lib{P}b.so|{P}a_f|{S}/main", "call:call", "now:load")),
    )
