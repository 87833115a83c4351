"""Kinds of load problems and link errors, when a load problem bites, how a library was found."""

from __future__ import annotations

from ldscope.vocab._words import Words


class ProblemKind(Words):
    """What went wrong (or is worth knowing) in a simulated load or an environment."""

    MISSING_LIBRARY = "missing-library"
    MISSING_VERSION = "missing-version"
    UNRESOLVED_SYMBOL = "unresolved-symbol"
    UNREADABLE_FILE = "unreadable-file"
    MISSING_INTERPRETER = "missing-interpreter"
    WRONG_ARCHITECTURE = "wrong-architecture"
    NO_VERSION_INFORMATION = "no-version-information"
    LOADER_ASSERTION = "loader-assertion"
    INTERPOSITION = "interposition"
    SECURE_MODE = "secure-mode"
    ASSUMED_LOADED = "assumed-loaded"
    DUPLICATE_SONAME = "duplicate-soname"
    FOUND_VIA_VARIABLE = "found-via-variable"
    NOT_IMPORTABLE = "not-importable"  # an extension whose suffix the interpreter never imports
    INCOMPATIBLE_WHEEL = "incompatible-wheel"  # no tag of the wheel fits the interpreter/platform
    UNSATISFIED_REQUIREMENT = "unsatisfied-requirement"  # Requires-Dist the installed version misses


class When(Words):
    """When a load problem bites: at load (or import), at the first call, or never."""

    LOAD = "load"
    FIRST_CALL = "first-call"
    NEVER = "never"


class FoundVia(Words):
    """How the loader found a library (the rule of a search step, as LD_DEBUG names it)."""

    MAIN = "main program"
    DIRECT = "direct path"
    RPATH = "rpath"
    LD_LIBRARY_PATH = "LD_LIBRARY_PATH"
    RUNPATH = "runpath"
    CACHE = "ld.so.cache"
    CONF_WITHOUT_CACHE = "ld.so.conf (no cache)"
    DEFAULT = "default path"
    ALREADY_LOADED = "already loaded"
    PRELOAD = "preload"
    HOST = "host process"
    INTERPRETER = "interpreter"


class LinkErrorKind(Words):
    """What a linker reports (or would, after a fatal error)."""

    UNDEFINED_REFERENCE = "undefined-reference"
    UNDEFINED_WARNING = "undefined-warning"
    SHLIB_UNDEFINED = "shlib-undefined"
    DSO_MISSING = "dso-missing"
    MULTIPLE_DEFINITION = "multiple-definition"
    REQUIRED_UNDEFINED = "required-undefined"
    MISSING_INPUT = "missing-input"
    INCOMPATIBLE_INPUT = "incompatible-input"
    NOT_RECOGNIZED = "not-recognized"
    CORRUPT_INPUT = "corrupt-input"
    ARCHIVE_NO_INDEX = "archive-no-index"
    UNKNOWN_OPTION = "unknown-option"
    BRANCH_OUT_OF_RANGE = "branch-out-of-range"  # a B/BL further than it reaches, no veneer possible
    RELOCATION_OVERFLOW = "relocation-overflow"  # a branch no linker adds a veneer for, out of reach
    HIDDEN_UNDEFINED = "hidden-undefined"  # a hidden reference nothing in a shared link defines
    NON_PIC_RELOCATION = "non-pic-relocation"  # recompile with -fPIC
    NON_PIC_CODE = "non-pic-code"  # AArch64 ADRP/MOVW/ABS32 of non-PIC code in a shared object or PIE
    TEXT_RELOCATION = "text-relocation"  # a dynamic relocation in a read-only section, refused
    TEXTREL_WARNING = "textrel-warning"  # the same, only warned about (the output links)
    UNDEFINED_VERSION = "undefined-version"  # a version script names a symbol nothing defines
    STATIC_DYNAMIC_OBJECT = "static-dynamic-object"  # a shared library where only archives may go
    UNSUPPORTED_OPTION = "unsupported-option"

    @property
    def is_warning(self) -> bool:
        """True for what a linker only warns about: the output is still written."""
        return self in (LinkErrorKind.UNDEFINED_WARNING, LinkErrorKind.TEXTREL_WARNING)
