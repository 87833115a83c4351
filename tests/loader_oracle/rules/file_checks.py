"""Files ld.so skips (wrong class or machine) and files it refuses outright (invalid header, empty)."""

from __future__ import annotations

from tests.loader_oracle.spec import F, Lib, Place, Scenario, call, lib, program


def scenarios() -> tuple[Scenario, ...]:
    """The named scenarios of this rule family."""
    return (
        Scenario("wrong_class_skipped",
                 (lib("a"), Lib("ax", "lib{P}a.so", (F("a_f"),), m32=True)),
                 (Place("ax", "d1"), Place("a", "d2")),
                 program(call("a_f"), rpath=("{S}/d1", "{S}/d2")),
                 expect=("path:lib{P}a.so={S}/d2/lib{P}a.so", "call:ok")),
        Scenario("wrong_class_only",
                 (lib("a"), Lib("ax", "lib{P}a.so", (F("a_f"),), m32=True)),
                 (Place("ax", "d1"),), program(call("a_f"), rpath=("{S}/d1",)),
                 expect=("missing:lib{P}a.so", "error:missing-library")),
        Scenario("wrong_machine_skipped",
                 (lib("a"), Lib("ax", "lib{P}a.so", (F("a_f"),), machine=183)),
                 (Place("ax", "d1"), Place("a", "d2")),
                 program(call("a_f"), rpath=("{S}/d1", "{S}/d2")),
                 expect=("path:lib{P}a.so={S}/d2/lib{P}a.so",)),
        Scenario("invalid_elf_header_is_fatal",
                 (lib("a"), Lib("ax", "lib{P}a.so", junk="text")),
                 (Place("ax", "d1"), Place("a", "d2")),
                 program(call("a_f"), rpath=("{S}/d1", "{S}/d2")),
                 expect=("error:unreadable-file", "plain:load")),
        Scenario("empty_file_is_fatal",
                 (lib("a"), Lib("ax", "lib{P}a.so", junk="empty")),
                 (Place("ax", "d1"), Place("a", "d2")),
                 program(call("a_f"), rpath=("{S}/d1", "{S}/d2")),
                 expect=("error:unreadable-file",)),
    )
