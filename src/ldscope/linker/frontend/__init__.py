"""From what the user has to the linker's own argv: compiler-driver lines (asked with
`-###`, or documented defaults), response files, build logs, and the linker's options."""

from __future__ import annotations

from ldscope.linker.frontend._cmdline import (
    LINKERS,
    CommandLineError,
    CompilesFirstError,
    DriverRefusedError,
    LinkLine,
    NotALinkError,
    expand_response_files,
    linker_from_program,
    parse_driver_output,
    resolve_link_line,
    split_quoted,
)
from ldscope.linker.frontend._driver import fallback_linker_argv, is_driver_name
from ldscope.linker.frontend._logparse import LogLink, find_link_in_log, find_links_in_log
from ldscope.linker.frontend._options import (
    LineItem,
    LinkOptions,
    ParsedLine,
    output_kind,
    parse_linker_argv,
    unsupported_options,
)

__all__ = [
    "LINKERS",
    "CommandLineError",
    "CompilesFirstError",
    "DriverRefusedError",
    "LineItem",
    "LinkLine",
    "LinkOptions",
    "LogLink",
    "NotALinkError",
    "ParsedLine",
    "expand_response_files",
    "fallback_linker_argv",
    "find_link_in_log",
    "find_links_in_log",
    "is_driver_name",
    "linker_from_program",
    "output_kind",
    "parse_driver_output",
    "parse_linker_argv",
    "resolve_link_line",
    "split_quoted",
    "unsupported_options",
]
