"""A deterministic sample of real ELF files on this machine, and the oracles that read them.

Used by the differential and foreign-architecture tests (this is a helper, not a test):

* `sample(workdir)` picks ≥ 300 ELF files: system shared libraries, executables, crt `.o`
  files, members of system `.a` archives (extracted into `workdir`), the running Python's
  extension modules and a handful of gcc-built fixtures (symbol versions, RPATH/RUNPATH,
  -z now, copy relocations, TLS, static PIE, debuglink, COMDAT groups, and an object with
  more than 65,280 sections for extended section numbering). Candidates are sorted and
  picked with an even stride, so the sample is the same on every run on the same machine.
* `ldscope_facts` (facts.py), `pyelftools_facts` (pyelftools_oracle.py): the same normalised facts from ldscope and from
  pyelftools; `run_readelf` / `run_nm` (readelf_oracle.py) run the binutils oracles over many files with one
  process and split the output per file.
"""

from __future__ import annotations

from tests.elf_oracle.facts import ElfFacts, SymFact, ldscope_facts, ldscope_symbols
from tests.elf_oracle.fixtures import (
    FIX_CXX_CC,
    FIX_CXX_MAP,
    FIX_MAIN_C,
    FIX_STATIC_C,
    FIX_TINY_C,
    FIX_TINY_MAIN_C,
    FIX_TINY_MAP,
    FIX_VER_C,
    FIX_VER_MAP,
    FIXTURE_RECIPES,
    FIXTURE_SOURCES,
    MANY_SECTIONS,
    SMALL_PAGES,
    build_fixtures,
)
from tests.elf_oracle.pyelftools_oracle import parse_debuglink_bytes, pyelftools_facts
from tests.elf_oracle.readelf_oracle import (
    READELF_BINDS,
    READELF_MACHINES,
    READELF_NDX,
    READELF_OPTIONS,
    READELF_SYMTYPES,
    READELF_TYPES,
    READELF_VERFLAGS,
    READELF_VIS,
    ReadelfReport,
    RelocSection,
    bracketed,
    main,
    parse_readelf,
    readelf_flags,
    readelf_machine,
    readelf_number,
    run_nm_dynamic,
    run_readelf,
)
from tests.elf_oracle.sample import (
    ELF_MAGIC,
    MAX_FILE_BYTES,
    MIN_SAMPLE,
    QUOTAS,
    TARGET,
    ArchiveMember,
    CorpusFile,
    archive_candidates,
    archive_members,
    build_sample,
    executable_candidates,
    extension_candidates,
    fixture,
    listdir,
    locked,
    member_candidates,
    native_multiarch,
    object_candidates,
    regular_elf_files,
    sample,
    shared_library_candidates,
    shared_workdir,
    stride_pick,
)

__all__ = ["ELF_MAGIC", "FIXTURE_RECIPES", "FIXTURE_SOURCES", "FIX_CXX_CC", "FIX_CXX_MAP", "FIX_MAIN_C", "FIX_STATIC_C", "FIX_TINY_C", "FIX_TINY_MAIN_C", "FIX_TINY_MAP", "FIX_VER_C", "FIX_VER_MAP", "MANY_SECTIONS", "MAX_FILE_BYTES", "MIN_SAMPLE", "QUOTAS", "READELF_BINDS", "READELF_MACHINES", "READELF_NDX", "READELF_OPTIONS", "READELF_SYMTYPES", "READELF_TYPES", "READELF_VERFLAGS", "READELF_VIS", "SMALL_PAGES", "TARGET", "ArchiveMember", "CorpusFile", "ElfFacts", "ReadelfReport", "RelocSection", "SymFact", "archive_candidates", "archive_members", "bracketed", "build_fixtures", "build_sample", "executable_candidates", "extension_candidates", "fixture", "ldscope_facts", "ldscope_symbols", "listdir", "locked", "main", "member_candidates", "native_multiarch", "object_candidates", "parse_debuglink_bytes", "parse_readelf", "pyelftools_facts", "readelf_flags", "readelf_machine", "readelf_number", "regular_elf_files", "run_nm_dynamic", "run_readelf", "sample", "shared_library_candidates", "shared_workdir", "stride_pick"]
