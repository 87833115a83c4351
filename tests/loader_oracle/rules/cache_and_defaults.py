"""ld.so.cache and the default directories, and DF_1_NODEFLIB skipping both for system directories."""

from __future__ import annotations

from tests.loader_oracle.spec import Place, Scenario, call, lib, program


def scenarios() -> tuple[Scenario, ...]:
    """The named scenarios of this rule family."""
    return (
        Scenario("cache_hit", (lib("a", needed=("b",), refs=(call("b_f"),)), lib("b")),
                 (Place("a", "d"), Place("b", "c")), program(call("a_f"), rpath=("{S}/d",)),
                 cache=("c",), world="chroot",
                 expect=("path:lib{P}b.so={S}/c/lib{P}b.so", "call:ok")),
        Scenario("default_dirs", (lib("a", needed=("b",), refs=(call("b_f"),)), lib("b")),
                 (Place("a", "d"), Place("b", "/usr/lib", late=True)),
                 program(call("a_f"), rpath=("{S}/d",)), world="chroot",
                 expect=("path:lib{P}b.so=/usr/lib/lib{P}b.so", "call:ok")),
        Scenario("cache_beats_default_dirs", (lib("a"),),
                 (Place("a", "c"), Place("a", "/lib/x86_64-linux-gnu", late=True)),
                 program(call("a_f")), cache=("c",), world="chroot",
                 expect=("path:lib{P}a.so={S}/c/lib{P}a.so",)),
        Scenario("nodeflib_skips_default_dirs",
                 (lib("a", needed=("b", "c"), refs=(call("b_f"), call("c_f")), nodeflib=True),
                  lib("b"), lib("c")),
                 (Place("a", "d"), Place("b", "/usr/lib", late=True), Place("c", "c")),
                 program(call("a_f"), rpath=("{S}/d",)), cache=("c",), world="chroot",
                 expect=("missing:lib{P}b.so", "path:lib{P}c.so={S}/c/lib{P}c.so")),
        Scenario("nodeflib_rejects_cache_hit_in_system_dir",
                 (lib("a", needed=("b",), refs=(call("b_f"),), nodeflib=True), lib("b")),
                 (Place("a", "d"), Place("b", "/usr/lib")),
                 program(call("a_f"), rpath=("{S}/d",)), world="chroot",
                 expect=("missing:lib{P}b.so",)),
        # ---- dlopen,
    )
