"""Symbol versioning: a required version node must exist; hidden versions bind only explicit references; versioned references to unversioned libraries."""

from __future__ import annotations

from tests.loader_oracle.spec import (
    V1,
    V2,
    D,
    F,
    Lib,
    Place,
    Scenario,
    call,
    data,
    lib,
    program,
    vlib_new,
    vlib_old,
)


def scenarios() -> tuple[Scenario, ...]:
    """The named scenarios of this rule family."""
    return (
        Scenario("versions_old_binary_new_lib", (vlib_old, vlib_new),
                 (Place("vn", "d"),), program(call("v_f"), data("v_d"), needed=("v",),
                                           rpath=("{S}/d",)),
                 expect=("call:ok", "bind:{S}/main|{P}v_f|{S}/d/lib{P}v.so")),
        Scenario("versions_missing_node", (vlib_old, vlib_new),
                 (Place("v", "d"),), program(call("v_new"), needed=("vn",), rpath=("{S}/d",)),
                 expect=("error:missing-version", "plain:load")),
        Scenario("versions_hidden_only_for_unversioned_ref",
                 (lib("h"), Lib("hv", "lib{P}h.so", (D("h_d", V1), F("h_f", V2, default=False)),
                                versions=(V1, V2))),
                 (Place("hv", "d"),), program(call("h_f"), needed=("h",), rpath=("{S}/d",)),
                 expect=("plain:ok", "call:call", "now:load")),
        Scenario("versions_unversioned_lib_no_versym_asserts",
                 (vlib_old, Lib("vu", "lib{P}v.so", (F("v_f"), D("v_d")), nostdlib=True)),
                 (Place("vu", "d"),), program(call("v_f"), needed=("v",), rpath=("{S}/d",)),
                 expect=("assert", "plain:ok", "call:call", "now:load")),
        Scenario("versions_unversioned_lib_with_versym",
                 (vlib_old, Lib("vu", "lib{P}v.so", (F("v_f"), D("v_d")))),
                 (Place("vu", "d"),), program(call("v_f"), data("v_d"), needed=("v",),
                                           rpath=("{S}/d",)),
                 expect=("call:ok", "bind:{S}/main|{P}v_f|{S}/d/lib{P}v.so")),
    )
