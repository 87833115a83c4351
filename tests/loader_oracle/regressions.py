"""Scenarios on which the loader model once disagreed with the real ld.so (glibc 2.36).

Each entry is an explicit scenario (random seeds change meaning whenever the generator
changes, so the seed that found it is only recorded in the description).  They run in
tests/test_loader_oracle.py like every other scenario: built with gcc, run under the real
loader, compared with the model, plus the listed expectations about the real loader.
"""

from __future__ import annotations

from dataclasses import dataclass

from tests.loader_oracle.spec import (
    D,
    Dlopen,
    Exe,
    F,
    Lib,
    Place,
    Scenario,
    call,
    data,
    lib,
)


@dataclass(frozen=True)
class Regression:
    """A fixed disagreement: what was wrong, where glibc decides it, and the scenario."""

    description: str
    glibc: str  # the glibc 2.36 function(s) that decide it
    fix: str  # what changed in the model
    scenario: Scenario


V1, V2 = "{P}V_1", "{P}V_2"

REGRESSIONS: tuple[Regression, ...] = (
    Regression(
        "A versioned reference (b's own common1@B_1) was bound to the executable's copy "
        "of common1, whose versym index names the verneed entry A_1: the model took a "
        "verneed index for 'unversioned'.  ld.so compares the name of l_versions[ndx], which "
        "also holds verneed entries, rejects the copy and binds b to itself.  Found by "
        "random seed 335 (chroot world) of the first generator.",
        "dl-lookup.c check_match; dl-version.c _dl_check_map_versions",
        "image.ElfImage.version_index_names (verneed + non-base verdef names by index), "
        "used by binding.match_in_object",
        Scenario(
            "reg_copy_reloc_verneed_version",
            (Lib("a", "lib{P}a.so", (F("a_f", "{P}A_1"), D("common1", "{P}A_1")),
                 versions=("{P}A_1",)),
             Lib("b", "lib{P}b.so", (F("b_f", "{P}B_1"), D("common1", "{P}B_1")),
                 refs=(data("common1"),), versions=("{P}B_1",))),
            (Place("a", "d"), Place("b", "d")),
            Exe(refs=(data("common1"), call("b_f")), needed=("a", "b"), rpath=("{S}/d",)),
            expect=("bind:{S}/d/lib{P}b.so|{P}common1|{S}/d/lib{P}b.so",
                    "bind:{S}/main|{P}common1|{S}/d/lib{P}a.so", "call:ok"),
        ),
    ),
    Regression(
        "A program linked against a versioned library, run with a build of it that has no "
        "symbol versioning at all (no DT_VERSYM: built without libc): Debian's ld.so is "
        "built with assertions and aborts with \"Inconsistency detected by ld.so: "
        "dl-lookup.c: 107: check_match: Assertion ... failed!\" at the lookup (at load "
        "with LD_BIND_NOW, at the first call when lazy).  The model bound the symbol.",
        "dl-lookup.c check_match (assert on version->filename)",
        "binding.asserts_in_check_match / CheckMatchAssertion -> problem kind "
        "'loader-assertion'",
        Scenario(
            "reg_unversioned_lib_without_versym",
            (lib("v", F("v_f", V1), D("v_d", V1), versions=(V1,)),
             Lib("vu", "lib{P}v.so", (F("v_f"), D("v_d")), nostdlib=True)),
            (Place("vu", "d"),),
            Exe(refs=(call("v_f"),), needed=("v",), rpath=("{S}/d",)),
            expect=("assert", "plain:ok", "call:call", "now:load"),
        ),
    ),
    Regression(
        "An LD_PRELOAD entry that cannot be found is skipped: ld.so prints \"ERROR: ld.so: "
        "object ... from LD_PRELOAD cannot be preloaded (...): ignored.\" and runs the "
        "program.  The model reported a load-time error.",
        "rtld.c do_preload / handle_preload_list",
        "simulate._ignore_preload_failure (LD_PRELOAD problems become warnings)",
        Scenario(
            "reg_preload_missing",
            (lib("a"),), (Place("a", "d"),),
            Exe(refs=(call("a_f"),), needed=("a",), rpath=("{S}/d",)),
            preload=("lib{P}nothere.so", "{S}/d/nothere.so"),
            expect=("plain:ok", "call:ok", "now:ok"),
        ),
    ),
    Regression(
        "dlopen in a sysroot: the host executable's target-side path was opened on this "
        "machine instead of inside the root, so the model fell back to a minimal host "
        "without ld.so and reported libc's dependency ld-linux-x86-64.so.2 missing.",
        "dl-open.c dl_open_worker (the caller's link map is the host program)",
        "simulate.LoaderModel._start_host maps Host.executable through the root",
        Scenario(
            "reg_dlopen_host_in_sysroot",
            (lib("a", F("a_f"), needed=("b",), refs=(call("b_f"),)), lib("b")),
            (Place("a", "d"), Place("b", "c")), cache=("c",), world="chroot",
            dlopen=Dlopen("{S}/d/lib{P}a.so"), expect=("dl:ok", "dlcall:ok"),
        ),
    ),
    Regression(
        "An empty LD_LIBRARY_PATH element searches the cwd with the bare file name: ld.so "
        "tries and names `libc.so`, the model said `./libc.so` (the name shows in "
        "l_name, LD_DEBUG, $ORIGIN and later name matches).",
        "dl-load.c fillin_rpath (empty element: empty directory name)",
        "environment.split_path_list keeps ''; LoadEnvironment.subdirs('') gives relative "
        "hwcaps subdirectories and ''",
        Scenario(
            "reg_llp_empty_element",
            (lib("a", needed=("c",), refs=(call("c_f"),)), lib("c")),
            (Place("a", "llp"), Place("c", ".")),
            Exe(refs=(call("a_f"),), needed=("a",)), llp=("{S}/llp", ""),
            expect=("path:lib{P}c.so=lib{P}c.so", "call:ok"),
        ),
    ),
    Regression(
        "$ORIGIN of a library opened under a relative name (found through a relative "
        "LD_LIBRARY_PATH element) is getcwd() + '/' + the name's directory; the model "
        "used the relative directory, so the library's RUNPATH $ORIGIN/dep gave a "
        "different (relative) path than ld.so.",
        "dl-object.c _dl_new_object (l_origin)",
        "search.Searcher.expand: relative l_name gets the cwd prepended (no sysroot)",
        Scenario(
            "reg_origin_of_relative_name",
            (lib("a", needed=("b",), runpath=("$ORIGIN/dep",), refs=(call("b_f"),)),
             lib("b")),
            (Place("a", "rel"), Place("b", "rel/dep")),
            Exe(refs=(call("a_f"),), needed=("a",)), llp=("rel",),
            expect=("path:lib{P}a.so=rel/lib{P}a.so",
                    "path:lib{P}b.so={S}/rel/dep/lib{P}b.so", "call:ok"),
        ),
    ),
    Regression(
        "LD_PRELOAD is split at ' ' and ':' only: 'libp.so<TAB>libq.so' is one (missing, "
        "ignored) name, so only the later libq.so is preloaded and interposes.  The model "
        "split at any white space and preloaded libp.so first.",
        "rtld.c handle_preload_list (strcspn (p, \" :\"))",
        "environment.split_preload splits at ' ' and ':' only",
        Scenario(
            "reg_preload_tab",
            (lib("a", F("a_f"), F("common0")), lib("p", F("p_f"), F("common0")),
             lib("q", F("q_f"), F("common0"))),
            (Place("a", "d"), Place("p", "d"), Place("q", "d")),
            Exe(refs=(call("common0"), call("a_f")), needed=("a",), rpath=("{S}/d",)),
            llp=("{S}/d",), preload=("lib{P}p.so\tlib{P}q.so", "lib{P}q.so"),
            expect=("bind:{S}/main|{P}common0|{S}/d/lib{P}q.so", "call:ok"),
        ),
    ),
)
