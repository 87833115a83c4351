"""$ORIGIN: of the loading object, through symlinks, of the program, of relative names, in LD_LIBRARY_PATH."""

from __future__ import annotations

from tests.loader_oracle.spec import Place, Scenario, call, lib, program


def scenarios() -> tuple[Scenario, ...]:
    """The named scenarios of this rule family."""
    return (
        Scenario("origin_rpath",
                 (lib("a", needed=("b",), rpath=("$ORIGIN/../dep",), refs=(call("b_f"),)),
                  lib("b")),
                 (Place("a", "lib"), Place("b", "dep")), program(call("a_f"), rpath=("{S}/lib",)),
                 expect=("path:lib{P}b.so={S}/lib/../dep/lib{P}b.so", "call:ok")),
        Scenario("origin_through_symlink",
                 (lib("a", needed=("b",), runpath=("$ORIGIN/dep",), refs=(call("b_f"),)),
                  lib("b")),
                 (Place("a", "real"), Place("", "link", file="lib{P}a.so",
                                            symlink="../real/lib{P}a.so"),
                  Place("b", "link/dep")),
                 program(call("a_f"), rpath=("{S}/link",)),
                 expect=("path:lib{P}a.so={S}/link/lib{P}a.so",
                         "path:lib{P}b.so={S}/link/dep/lib{P}b.so")),
        Scenario("exe_origin_rpath", (lib("a"),), (Place("a", "lib"),),
                 program(call("a_f"), rpath=("$ORIGIN/lib",)),
                 expect=("path:lib{P}a.so={S}/lib/lib{P}a.so",)),
        Scenario("llp_origin_relative_empty", (lib("a", needed=("b", "c"),
                                                   refs=(call("b_f"), call("c_f"))),
                                               lib("b"), lib("c")),
                 (Place("a", "llp"), Place("b", "rel"), Place("c", ".")),
                 program(call("a_f")), llp=("$ORIGIN/llp", "rel", ""),
                 expect=("path:lib{P}a.so={S}/llp/lib{P}a.so", "path:lib{P}b.so=rel/lib{P}b.so",
                         "path:lib{P}c.so=lib{P}c.so")),
        Scenario("origin_of_relative_name",
                 (lib("a", needed=("b",), runpath=("$ORIGIN/dep",), refs=(call("b_f"),)),
                  lib("b")),
                 (Place("a", "rel"), Place("b", "rel/dep")), program(call("a_f")), llp=("rel",),
                 expect=("path:lib{P}a.so=rel/lib{P}a.so",
                         "path:lib{P}b.so={S}/rel/dep/lib{P}b.so")),
    )
