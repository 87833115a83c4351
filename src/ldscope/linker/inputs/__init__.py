"""A link line's inputs as the linker resolves them: -l search, scripts, groups, positional
flags, and each file's symbol facts (read once, cached by identity)."""

from __future__ import annotations

from ldscope.linker.inputs._facts import (
    DEFAULT_CACHE,
    ArchiveFacts,
    BadInput,
    FactsCache,
    FileFacts,
    LongBranch,
    MemberProblem,
    NonPicRelocation,
    ObjectFacts,
    ScriptFacts,
    SharedFacts,
    object_facts,
    read_facts,
    shared_facts,
)
from ldscope.linker.inputs._facts_store import FactsStore, save_facts_store, use_facts_store
from ldscope.linker.inputs._pic_facts import PicFamily, PicRelocation
from ldscope.linker.inputs._resolve import GroupEnd, Input, ResolvedLine, library_flag, resolve_inputs
from ldscope.linker.inputs._searchdirs import (
    bfd_needed_search_path,
    default_dirs,
    expand_origin,
    with_sysroot,
)
from ldscope.linker.inputs._sections import BranchSite, SectionShare, output_section_of
from ldscope.linker.inputs._version_script import version_script_names

__all__ = [
    "DEFAULT_CACHE",
    "ArchiveFacts",
    "BadInput",
    "BranchSite",
    "FactsCache",
    "FactsStore",
    "FileFacts",
    "GroupEnd",
    "Input",
    "LongBranch",
    "MemberProblem",
    "NonPicRelocation",
    "ObjectFacts",
    "PicFamily",
    "PicRelocation",
    "ResolvedLine",
    "ScriptFacts",
    "SectionShare",
    "SharedFacts",
    "bfd_needed_search_path",
    "default_dirs",
    "expand_origin",
    "library_flag",
    "object_facts",
    "output_section_of",
    "read_facts",
    "resolve_inputs",
    "save_facts_store",
    "shared_facts",
    "use_facts_store",
    "version_script_names",
    "with_sysroot",
]
