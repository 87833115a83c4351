"""Peer corpora: files other people made, read by ldscope and checked against readelf.

Corpora (tests/peer_corpora/sources.py): pyelftools' 123 test files (many machines, core
dumps, objects, files without section headers, compressed sections, corrupt ones), Debian
cross packages of 15 machines/ABIs the rest of the suite does not read (riscv64, mips64el,
mips, mipsn32, i386, armel, x32, powerpc, ppc64, sparc64, m68k, sh4, hppa, arc, alpha), and
libc6-dbg's separate debug files. For every file:

* (a) every ldscope command (info, info -v, symbols, symbols --all, symbols -D; load for
  ET_DYN/ET_EXEC) in text and JSON: exit status 0/1/2, nothing raised, no traceback,
  JSON that parses;
* (b) the fields readelf -W (LC_ALL=C) also shows agree: class, byte order, type, machine,
  NEEDED, SONAME, RPATH, RUNPATH, build-id, every symbol's value, size, type, bind,
  visibility, section index and (versioned) name;
* (c) no file readelf reads is rejected by ldscope.

Where ldscope falls short today, the case is in KNOWN_READER_GAPS (rejections) with the
error it gives; the test fails if a gap changes or a new one appears, and the strict xfail
test_known_reader_gap_is_fixed says when an entry can go. Where readelf cannot show what
ldscope reads (a readelf limitation, checked against pyelftools), the case is in
ORACLE_DIFFERENCES and must keep differing. `python -m tests.peer_corpora.report` prints
the figures.
"""

from __future__ import annotations

import fnmatch
import os
import shutil
from collections import Counter
from pathlib import Path

import pytest

from ldscope.elf import ElfFile
from ldscope.elf import constants as C
from ldscope.errors import InputFormatError
from tests.peer_corpora import cli as peer_cli
from tests.peer_corpora import probe
from tests.peer_corpora import sources as src

pytestmark = pytest.mark.skipif(shutil.which("readelf") is None,
                                reason="binutils readelf is needed as the oracle")

# corpus:relative path (fnmatch pattern) → the error ldscope gives today (probe.ldscope_error:
# "<what was read>: <InputFormatError reason>"), for files readelf reads. The reader is being
# fixed in parallel: when one reads, test_known_reader_gap_is_fixed XPASSes (strict) and the
# entry must go.
KNOWN_READER_GAPS: dict[str, str] = {
    # Empty: the separate debug files (pyelftools' three, all of libc6-dbg), corrupt_sh.elf,
    # section_header_bogus_size.elf and section_link_to_self.elf were rejected until issue 12
    # (debug files have a NOBITS .dynamic; broken section header tables are now a warning).
    # They are read now, and agree with readelf: test_formerly_rejected_files_are_read.
}

# (corpus:relative path, comparison kind) → why readelf shows something else. Each is
# checked against pyelftools in test_oracle_differences_are_readelf_limits.
ORACLE_DIFFERENCES: dict[tuple[str, str], str] = {
    **{(f"pyelftools:testfiles_for_unittests/{name}", ".dynsym.name"):
       "Solaris: readelf finds .SUNW_versym through DT_VERSYM, whose address is in no PT_LOAD "
       "(it warns 'Virtual address 0 not located'), and prints no versions; the section has them"
       for name in ("exe_solaris32_cc.elf", "exe_solaris32_cc.sparc.elf", "exe_solaris64_cc.elf",
                    "exe_solaris64_cc.sparc.elf")},
    **{(f"pyelftools:testfiles_for_unittests/{name}", ".dynsym.name"):
       "no PT_DYNAMIC segment: readelf finds symbol versions only through its DT_VERSYM; "
       "the .gnu.version and .gnu.version_r sections are there"
       for name in ("note_after_gnu_property/main.elf", "note_with_segment_padding/main.elf")},
    **{("pyelftools:testfiles_for_unittests/lib_with_two_dynstr_sections_reversed.so.elf", kind):
       "two .dynstr sections, the dynamic section's sh_link naming the second: readelf uses "
       "the one named .dynstr first and prints offsets (0xd2) instead of names, and no "
       "version definitions or requirements ('File contains multiple dynamic string tables')"
       for kind in ("dynamic.needed", "dynamic.soname", "verdef", "verneed")},
}

# (corpus:relative path, comparison kind) → the field ldscope gets wrong today: readelf is
# right. Checked like KNOWN_READER_GAPS (test_known_field_gap_is_fixed is a strict xfail).
KNOWN_FIELD_GAPS: dict[tuple[str, str], str] = {
    # Empty: note_after_gnu_property/main.elf and note_with_segment_padding/main.elf have
    # program headers but no PT_DYNAMIC; ldscope read their .dynamic section until issue 12,
    # and now, as ld.so and readelf, sees no dynamic table (test_formerly_rejected_files_are_read).
}

FAST_CORPORA = ("pyelftools",)  # the fast lane (-m "not slow") reads only this one


def corpus_params() -> list[object]:
    return [pytest.param(name, marks=() if name in FAST_CORPORA else pytest.mark.slow)
            for name in src.CORPUS_NAMES]


def corpus_or_skip(name: str) -> src.Corpus:
    found = src.corpus_by_name(name)
    if isinstance(found, src.Unavailable):
        pytest.skip(f"{name}: {found.reason}")
    if not found.files:
        pytest.skip(f"{name}: no ELF files under {found.root}")
    return found


def known_gap(name: str, rel: str) -> str | None:
    for pattern, error in KNOWN_READER_GAPS.items():
        if fnmatch.fnmatchcase(f"{name}:{rel}", pattern):
            return error
    return None


# --------------------------------------------- (c) nothing rejected, (b) fields agree
# One test per corpus for both, so that each corpus is read once (under pytest-xdist two
# tests would each read it in their own worker).
@pytest.mark.parametrize("name", corpus_params())
def test_corpus_against_readelf(name: str) -> None:
    corpus = corpus_or_skip(name)
    result = probe.evaluate(corpus.root, corpus.files)
    assert len(result.verdicts) == sum(1 for r in corpus.files if probe.is_elf(corpus.path(r)))
    problems = []
    for v in result.rejected_only_by_ldscope:
        expected = known_gap(name, v.rel)
        if expected is None:
            problems.append(f"{name}:{v.rel}: readelf reads it, ldscope says {v.ldscope_error!r}")
        elif v.ldscope_error != expected:
            problems.append(f"{name}:{v.rel}: the known gap changed: now {v.ldscope_error!r}, "
                            f"KNOWN_READER_GAPS says {expected!r}")
    assert not problems, "\n".join(problems)
    # A file both reject would be fine; there is none today, so say so if one appears.
    assert [v.rel for v in result.rejected_by_both] == []

    unexplained = [m for m in result.mismatches if (f"{name}:{m.rel}", m.kind) not in ORACLE_DIFFERENCES
                   and (f"{name}:{m.rel}", m.kind) not in KNOWN_FIELD_GAPS]
    assert not unexplained, "\n".join(map(str, unexplained[:30]))
    still = {(f"{name}:{m.rel}", m.kind) for m in result.mismatches}
    gone = [k for k in ORACLE_DIFFERENCES if k[0].startswith(f"{name}:") and k not in still]
    assert not gone, f"these now agree with readelf: remove from ORACLE_DIFFERENCES: {gone}"
    # Every file readelf reads and ldscope opens is compared (a known gap's other tables too).
    assert result.checked.get("header.machine", 0) == result.compared >= len(result.read)
    if result.compared:
        assert result.checked.get(".dynsym.symbol", 0) + result.checked.get(".symtab.symbol", 0) > 0


def test_oracle_differences_are_readelf_limits() -> None:
    """pyelftools (an independent reader) sees what ldscope sees where readelf cannot:
    the same NEEDED, SONAME, version definitions and requirements, and symbol versions."""
    from tests.elf_oracle import ldscope_facts, pyelftools_facts

    corpus = corpus_or_skip("pyelftools")
    files = sorted({key.split(":", 1)[1] for key, _kind in ORACLE_DIFFERENCES})
    assert len(files) == 7
    for rel in files:
        theirs = pyelftools_facts(corpus.path(rel))
        with ElfFile.open(corpus.path(rel)) as elf:
            ours = ldscope_facts(elf)
        kinds = {k for (f, k) in ORACLE_DIFFERENCES if f.endswith(":" + rel)}
        if kinds & {"dynamic.needed", "dynamic.soname"}:
            assert ours.has_dynamic and theirs.has_dynamic, rel
            assert (ours.needed, ours.soname) == (theirs.needed, theirs.soname), rel
        assert (ours.verdefs, ours.verneeds) == (theirs.verdefs, theirs.verneeds), rel
        assert ours.dynsym is not None and theirs.dynsym is not None
        assert [s.version for s in ours.dynsym] == [s.version for s in theirs.dynsym], rel
        assert any(s.version is not None for s in ours.dynsym), rel


# ------------------------------------------------------------------ machine names
def test_no_corpus_machine_is_a_bare_number() -> None:
    """Item 6: every machine of the corpora has a name (no EM_<n>), readelf's among them."""
    corpus = corpus_or_skip("pyelftools")
    names: Counter[str] = Counter()
    for rel in corpus.files:
        try:
            with ElfFile.open(corpus.path(rel)) as elf:
                names[elf.machine] += 1
        except InputFormatError:
            continue  # rejections are test_corpus_against_readelf's
    assert not [n for n in names if n.startswith("EM_")], names
    # EM_<n> before: Sparc v8+ (18), Tricore, TMS320C2000, dsPIC; named by class: mips64, loongarch64.
    assert {"sparc", "tricore", "tic2000", "dspic30f", "mips64", "loongarch64"} <= set(names), names


@pytest.mark.parametrize(("e_machine", "elf_class", "little", "name"), [
    (C.EM_X86_64, C.ELFCLASS64, True, "x86_64"),
    (C.EM_X86_64, C.ELFCLASS32, True, "x32"),
    (18, C.ELFCLASS32, False, "sparc"),  # EM_SPARC32PLUS: the 32-bit sparc ABI
    (43, C.ELFCLASS64, False, "sparcv9"),
    (4, C.ELFCLASS32, False, "m68k"),
    (0x9026, C.ELFCLASS64, True, "alpha"),
    (41, C.ELFCLASS64, True, "alpha"),
    (164, C.ELFCLASS32, True, "hexagon"),
    (252, C.ELFCLASS32, True, "csky"),
    (15, C.ELFCLASS32, False, "hppa"),
    (195, C.ELFCLASS32, True, "arc_compact2"),
    (C.EM_PPC64, C.ELFCLASS64, False, "ppc64"),
    (C.EM_MIPS, C.ELFCLASS32, True, "mips"),
    (0x1234, C.ELFCLASS32, True, "EM_4660"),
])
def test_machine_names(e_machine: int, elf_class: int, little: bool, name: str) -> None:
    assert C.machine_name(e_machine, elf_class, little) == name


def test_every_binutils_machine_has_a_short_name() -> None:
    names = C.MACHINE_NAMES
    assert len(names) >= 200
    assert all(n == n.lower() and " " not in n for n in names.values())
    # The unofficial values binutils reads name the same machines as the official ones.
    assert (names[0x9026], names[0x9041], names[0xBEEF]) == ("alpha", "m32r", "mn10300")


# e_machine values binutils' common.h names that readelf 2.40 prints as <unknown> (old
# unofficial numbers bfd still reads), and those readelf names that are only reservations.
READELF_UNNAMED = {0x1059: "EM_MSP430_OLD", 0x9025: "EM_CYGNUS_POWERPC", 0xFEED: "EM_MOXIE_OLD"}
RESERVED = {182: "EM_INTEL182", 184: "EM_ARM184"}


def test_machine_table_matches_readelf(tmp_path: Path) -> None:
    """Every e_machine readelf names (0..399 and the unofficial ones) has a name in
    MACHINE_NAMES, and the table names nothing readelf does not know (bar READELF_UNNAMED);
    where the test's readelf-description map knows a description, the names agree."""
    import struct

    from tests.elf_oracle import READELF_MACHINES, run_readelf

    values = sorted(set(range(400)) | set(C.MACHINE_NAMES))
    paths = []
    for em in values:
        path = tmp_path / f"em{em}"
        # A bare ELF64 little-endian header: e_type REL, e_version 1, e_ehsize 64.
        path.write_bytes(b"\x7fELF\x02\x01\x01" + bytes(9)
                         + struct.pack("<HHIQQQIHHHHHH", 1, em, 1, 0, 0, 0, 0, 64, 0, 0, 0, 0, 0))
        paths.append(str(path))
    reports = run_readelf(paths, ["-h"])
    described = {em: reports[p].header.get("Machine", "") for em, p in zip(values, paths)}
    named = {em for em, d in described.items() if d and not d.startswith("<unknown")}
    assert named - set(C.MACHINE_NAMES) == set(RESERVED)
    assert set(C.MACHINE_NAMES) - named == set(READELF_UNNAMED)
    for em in named - set(RESERVED):
        if described[em] in READELF_MACHINES and em not in (C.EM_MIPS, C.EM_PPC64, C.EM_S390):
            # (class- and endian-dependent names are checked on real files in the corpora)
            assert C.machine_name(em) == READELF_MACHINES[described[em]], (em, described[em])


def test_x32_keeps_its_abi_facts() -> None:
    """x32 files are named x32: the machines table, linker emulation and loader directories
    still know them."""
    from ldscope.system._machines import known_machine

    m = known_machine(C.machine_name(C.EM_X86_64, C.ELFCLASS32), C.ELFCLASS32)
    assert m is not None and m.triplet == "x86_64-linux-gnux32" and m.bfd_emulation == "elf32_x86_64"
    assert m.elf_machine_name == "x32"


# ------------------------------------------------------------------ (a) the CLI
CLI_PARTS = {"pyelftools": 4, src.DBG_PACKAGE: 2}  # the big sweeps, split for pytest-xdist


@pytest.mark.slow
@pytest.mark.parametrize(("name", "part"), [(n, p) for n in src.CORPUS_NAMES for p in range(CLI_PARTS.get(n, 1))])
def test_every_command_runs_without_a_traceback(name: str, part: int) -> None:
    corpus = corpus_or_skip(name)
    paths = [corpus.path(r) for r in corpus.files[part :: CLI_PARTS.get(name, 1)]]
    if name == src.DBG_PACKAGE:
        # Debug files: all commands over all of them; `load` over a stride of them (the same
        # code path each time: a debug file ldscope cannot read today).
        loads = [p for p in paths if peer_cli.loadable(p)][::11]
    else:
        loads = None
    done = peer_cli.sweep(paths, loads)
    assert not done.problems, "\n".join(done.problems[:20])
    assert done.runs >= len(peer_cli.MULTI_FILE_COMMANDS) * 2
    assert set(done.exit_codes) <= {0, 1, 2}


def test_cli_sweep_on_the_pyelftools_corpus_sample() -> None:
    """The fast lane's share of (a): every command over a stride of the pyelftools files,
    including the known-rejected ones (they must fail with status 2, not a traceback)."""
    corpus = corpus_or_skip("pyelftools")
    rels = list(corpus.files[::6])
    rels += [k.split(":", 1)[1] for k in KNOWN_READER_GAPS if k.startswith("pyelftools:")]
    paths = [corpus.path(r) for r in dict.fromkeys(rels)]
    done = peer_cli.sweep(paths)
    assert not done.problems, "\n".join(done.problems[:20])
    # A file ldscope cannot open is reported (status 2), not hidden.
    if any((probe.ldscope_error(p) or "").startswith("open:") for p in paths):
        assert done.exit_codes.get(2, 0) > 0, done.exit_codes


def test_sources_are_named_and_located() -> None:
    assert set(src.CROSS_PACKAGES) <= set(src.CORPUS_NAMES) and src.CORPUS_NAMES[0] == "pyelftools"
    for package, (subdir, why) in src.CROSS_PACKAGES.items():
        assert subdir.startswith("usr/") and subdir.endswith("/lib") and why, package
    assert os.path.isabs(str(src.cache_root()))


# The files that were KNOWN_READER_GAPS / KNOWN_FIELD_GAPS before issue 12's reader fixes:
# each is read now, with nothing readelf disagrees with (a regression case each).
FORMERLY_REJECTED = (
    "pyelftools:testfiles_for_unittests/debug_info.so.elf",
    "pyelftools:testfiles_for_unittests/debuglink.debug",
    "pyelftools:testfiles_for_unittests/dwarf_v5_forms.debug",
    "pyelftools:testfiles_for_unittests/corrupt_sh.elf",
    "pyelftools:testfiles_for_unittests/section_header_bogus_size.elf",
    "pyelftools:testfiles_for_unittests/section_link_to_self.elf",
    "pyelftools:testfiles_for_unittests/note_after_gnu_property/main.elf",
    "pyelftools:testfiles_for_unittests/note_with_segment_padding/main.elf",
)


@pytest.mark.parametrize("key", FORMERLY_REJECTED)
def test_formerly_rejected_files_are_read(key: str) -> None:
    name, rel = key.split(":", 1)
    corpus = corpus_or_skip(name)
    assert rel in corpus.files
    assert probe.ldscope_error(corpus.path(rel)) is None
    result = probe.evaluate(corpus.root, [rel])
    unexplained = [m for m in result.mismatches if (key, m.kind) not in ORACLE_DIFFERENCES]
    assert not unexplained, "\n".join(map(str, unexplained))
