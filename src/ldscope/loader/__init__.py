"""The glibc ld.so model: how a file is searched for, mapped breadth first, version-checked
and bound in the process it is loaded into, with every path tried recorded.

    from ldscope.loader import LoaderModel, make_environment, choose_host
"""

from __future__ import annotations

from ldscope.loader._binding import check_versions, lookup, match_in_object
from ldscope.loader._environment import LoadEnvironment, make_environment, split_path_list, split_preload
from ldscope.loader._host import Host, HostKind, choose_host, is_python_extension
from ldscope.loader._image import Definition, ElfImage, ImageCache, Reference
from ldscope.loader._results import Binding, LibraryResult, LoadReport, Problem, TriedPath
from ldscope.loader._search import LoadedObject, Searcher, SearchOutcome
from ldscope.loader._simulate import LoaderModel, Process

__all__ = [
    "Binding",
    "Definition",
    "ElfImage",
    "Host",
    "HostKind",
    "ImageCache",
    "LibraryResult",
    "LoadEnvironment",
    "LoadReport",
    "LoadedObject",
    "LoaderModel",
    "Problem",
    "Process",
    "Reference",
    "SearchOutcome",
    "Searcher",
    "TriedPath",
    "check_versions",
    "choose_host",
    "is_python_extension",
    "lookup",
    "make_environment",
    "match_in_object",
    "split_path_list",
    "split_preload",
]
