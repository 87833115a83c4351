"""When a failure bites: data relocations at load, PLT slots at the first call, everything at load under -z now; weak references never fail."""

from __future__ import annotations

from tests.loader_oracle.spec import F, Place, Scenario, addr, call, data, lib, program, weak


def scenarios() -> tuple[Scenario, ...]:
    """The named scenarios of this rule family."""
    return (
        Scenario("weak_undefined_ok", (lib("a", F("a_f"), refs=(weak("ghost"),)),),
                 (Place("a", "d"),), program(call("a_f"), rpath=("{S}/d",)),
                 expect=("plain:ok", "call:ok", "now:ok", "nobind:{S}/d/lib{P}a.so|{P}ghost")),
        Scenario("unresolved_data_fails_at_load", (lib("a", F("a_f"), refs=(data("ghost"),)),),
                 (Place("a", "d"),), program(call("a_f"), rpath=("{S}/d",)),
                 expect=("plain:load", "error:unresolved")),
        Scenario("unresolved_function_address_fails_at_load",
                 (lib("a", F("a_f"), refs=(addr("ghost"),)),),
                 (Place("a", "d"),), program(call("a_f"), rpath=("{S}/d",)),
                 expect=("plain:load",)),
        Scenario("unresolved_plt_is_lazy", (lib("a", F("a_f"), refs=(call("ghost"),)),),
                 (Place("a", "d"),), program(call("a_f"), rpath=("{S}/d",)),
                 expect=("plain:ok", "call:call", "now:load")),
        Scenario("lib_z_now", (lib("a", F("a_f"), refs=(call("ghost"),), now=True),),
                 (Place("a", "d"),), program(call("a_f"), rpath=("{S}/d",)),
                 expect=("plain:load",)),
        Scenario("exe_z_now", (lib("a", F("a_f"), F("a_g")), lib("ar", F("a_f"),
                                                                soname="lib{P}a.so")),
                 (Place("ar", "d"),), program(call("a_f"), call("a_g"), rpath=("{S}/d",), now=True),
                 expect=("plain:load",)),
        Scenario("exe_lazy_missing_symbol", (lib("a", F("a_f"), F("a_g")),
                                             lib("ar", F("a_f"), soname="lib{P}a.so")),
                 (Place("ar", "d"),), program(call("a_f"), call("a_g"), rpath=("{S}/d",)),
                 expect=("plain:ok", "call:call", "now:load")),
    )
