"""dlopen: local vs global scope, RTLD_LAZY vs RTLD_NOW, the host's RPATH (not RUNPATH) for dependencies, already loaded targets, sysroots."""

from __future__ import annotations

from tests.loader_oracle.spec import Dlopen, Exe, F, Place, Scenario, call, data, lib, vlib_new, vlib_old


def scenarios() -> tuple[Scenario, ...]:
    """The named scenarios of this rule family."""
    return (
        Scenario("dlopen_local_not_visible",
                 (lib("a", F("a_f"), refs=(call("p_f"),)), lib("p")),
                 (Place("a", "d"), Place("p", "d")),
                 dlopen=Dlopen("{S}/d/lib{P}a.so", local=("{S}/d/lib{P}p.so",)),
                 expect=("dl:ok", "dlcall:call")),
        Scenario("dlopen_local_data_ref_fails",
                 (lib("a", F("a_f"), refs=(data("p_d"),)), lib("p")),
                 (Place("a", "d"), Place("p", "d")),
                 dlopen=Dlopen("{S}/d/lib{P}a.so", local=("{S}/d/lib{P}p.so",)),
                 expect=("dl:fail", "dlerr:unresolved")),
        Scenario("dlopen_global_visible",
                 (lib("a", F("a_f"), refs=(call("p_f"), data("p_d"))), lib("p")),
                 (Place("a", "d"), Place("p", "d")),
                 dlopen=Dlopen("{S}/d/lib{P}a.so", glob=("{S}/d/lib{P}p.so",)),
                 expect=("dl:ok", "dlcall:ok")),
        Scenario("dlopen_lazy_then_call_fails", (lib("a", F("a_f"), refs=(call("ghost"),)),),
                 (Place("a", "d"),), dlopen=Dlopen("{S}/d/lib{P}a.so"),
                 expect=("dl:ok", "dlcall:call")),
        Scenario("dlopen_now_fails", (lib("a", F("a_f"), refs=(call("ghost"),)),),
                 (Place("a", "d"),), dlopen=Dlopen("{S}/d/lib{P}a.so", now=True),
                 expect=("dl:fail", "dlerr:unresolved")),
        Scenario("dlopen_host_rpath",
                 (lib("a", F("a_f"), needed=("b",), refs=(call("b_f"),)), lib("b")),
                 (Place("a", "d"), Place("b", "hrp")),
                 Exe(rpath=("{S}/hrp",)), dlopen=Dlopen("{S}/d/lib{P}a.so"),
                 expect=("dl:ok", "dlcall:ok")),
        Scenario("dlopen_host_runpath_not_used_for_deps",
                 (lib("a", F("a_f"), needed=("b",), refs=(call("b_f"),)), lib("b")),
                 (Place("a", "d"), Place("b", "hrp")),
                 Exe(runpath=("{S}/hrp",)), dlopen=Dlopen("{S}/d/lib{P}a.so"),
                 expect=("dl:fail", "dlerr:missing-library")),
        Scenario("dlopen_missing_version", (vlib_old, vlib_new,
                                            lib("a", F("a_f"), needed=("vn",),
                                                refs=(call("v_new"),))),
                 (Place("a", "d"), Place("v", "d")), dlopen=Dlopen("{S}/d/lib{P}a.so"),
                 llp=("{S}/d",), expect=("dl:fail", "dlerr:missing-version")),
        Scenario("dlopen_target_already_loaded",
                 (lib("a", F("a_f"), needed=("b",), refs=(call("b_f"),)), lib("b")),
                 (Place("a", "d"), Place("b", "d")),
                 dlopen=Dlopen("{S}/d/lib{P}b.so", local=("{S}/d/lib{P}a.so",)),
                 llp=("{S}/d",), expect=("dl:ok",)),
        Scenario("dlopen_in_sysroot",
                 (lib("a", F("a_f"), needed=("b",), refs=(call("b_f"),)), lib("b")),
                 (Place("a", "d"), Place("b", "c")), cache=("c",), world="chroot",
                 dlopen=Dlopen("{S}/d/lib{P}a.so"), expect=("dl:ok", "dlcall:ok")),
    )
