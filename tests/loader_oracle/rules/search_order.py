"""The search order for a DT_NEEDED name: DT_RPATH of the loader chain (only without DT_RUNPATH), LD_LIBRARY_PATH, the object's own DT_RUNPATH (not inherited), names already loaded."""

from __future__ import annotations

from tests.loader_oracle.spec import F, Place, Scenario, call, data, lib, lib_chain, program


def scenarios() -> tuple[Scenario, ...]:
    """The named scenarios of this rule family."""
    return (
        Scenario("chain_rpath", lib_chain(), tuple(Place(k, "rp") for k in "abcd"),
                 program(call("a_f"), rpath=("{S}/rp",)),
                 expect=("path:lib{P}d.so={S}/rp/lib{P}d.so", "call:ok",
                         "bind:{S}/rp/lib{P}c.so|{P}d_f|{S}/rp/lib{P}d.so")),
        Scenario("chain_runpath_not_inherited", lib_chain(), tuple(Place(k, "rp") for k in "abcd"),
                 program(call("a_f"), runpath=("{S}/rp",)),
                 expect=("missing:lib{P}b.so", "error:missing-library", "plain:load")),
        Scenario("diamond", (lib("a", needed=("c",), refs=(call("c_f"),)),
                             lib("b", needed=("c",), refs=(data("c_d"),)), lib("c")),
                 (Place("a", "d1"), Place("b", "d1"), Place("c", "d2"), Place("c", "d1")),
                 program(call("a_f"), call("b_f"), needed=("a", "b"), rpath=("{S}/d2", "{S}/d1")),
                 expect=("path:lib{P}c.so={S}/d2/lib{P}c.so", "call:ok")),
        Scenario("cycle", (lib("a", needed=("b",), refs=(call("b_f"),)),
                           lib("b", needed=("a",), refs=(call("a_f"), data("a_d")))),
                 (Place("a", "d"), Place("b", "d")), program(call("a_f"), runpath=("{S}/d",)),
                 llp=("{S}/d",), expect=("path:lib{P}b.so={S}/d/lib{P}b.so", "call:ok")),
        Scenario("rpath_beats_llp", (lib("a"),), (Place("a", "rp"), Place("a", "llp")),
                 program(call("a_f"), rpath=("{S}/rp",)), llp=("{S}/llp",),
                 expect=("path:lib{P}a.so={S}/rp/lib{P}a.so",)),
        Scenario("llp_beats_runpath", (lib("a"),), (Place("a", "rp"), Place("a", "llp")),
                 program(call("a_f"), runpath=("{S}/rp",)), llp=("{S}/llp",),
                 expect=("path:lib{P}a.so={S}/llp/lib{P}a.so",)),
        Scenario("lib_runpath_hides_exe_rpath",
                 (lib("a", needed=("b",), runpath=("{S}/nowhere",), refs=(call("b_f"),)),
                  lib("b")),
                 (Place("a", "rp"), Place("b", "rp")), program(call("a_f"), rpath=("{S}/rp",)),
                 expect=("missing:lib{P}b.so", "plain:load")),
        Scenario("rpath_chain_through_loader",
                 (lib("a", needed=("b",), rpath=("{S}/ra",), refs=(call("b_f"),)),
                  lib("b", needed=("c",), refs=(call("c_f"),)), lib("c")),
                 (Place("a", "re"), Place("b", "ra"), Place("c", "ra")),
                 program(call("a_f"), rpath=("{S}/re",)),
                 expect=("path:lib{P}c.so={S}/ra/lib{P}c.so", "call:ok")),
        Scenario("path_spelling", (lib("a"), lib("b")), (Place("a", "rp"), Place("b", "rq")),
                 program(call("a_f"), call("b_f"), needed=("a", "b"),
                      rpath=("{S}/./rp//", "{S}//rq")),
                 expect=("path:lib{P}a.so={S}/./rp/lib{P}a.so",
                         "path:lib{P}b.so={S}//rq/lib{P}b.so")),
        Scenario("same_file_two_names",
                 (lib("a", needed=("q", "qa"), refs=(call("q_f"),)), lib("q"),
                  lib("qa", F("q_f"), soname="lib{P}q-alias.so")),
                 (Place("a", "d"), Place("q", "d"),
                  Place("", "d", file="lib{P}q-alias.so", symlink="lib{P}q.so")),
                 program(call("a_f"), rpath=("{S}/d",)),
                 expect=("path:lib{P}q.so={S}/d/lib{P}q.so", "call:ok")),
        # ---- ld.so.cache, default directories, DF_1_NODEFLIB: in a sysroot under chroot,
    )
