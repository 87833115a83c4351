"""Facts about a machine or sysroot, read without running anything analysed: the machines
table, the CPU and what ld.so derives from it (default directories, hwcaps), ld.so.conf and
ld.so.cache, the file-system view (with wheels read in place), Python environments and their
installed distributions, what the toolchain says about itself, and the one capture of the
process environment (`process_environment`).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ldscope.system._dpkg import DebianOwners, PackageOwner
    from ldscope.system._environment import (
        SIMULATED_LOADER_ENV,
        environment_or_process,
        home_directory,
        process_environment,
        search_path,
    )
    from ldscope.system._filesystem import RATIO_EXEMPT_BYTES, OSFileSystem, WheelLimits, WheelOverlay
    from ldscope.system._ldcache import (
        CacheEntry,
        CacheLookupContext,
        LdCache,
        cache_flags_for,
        load_ld_cache,
        parse_ld_cache,
    )
    from ldscope.system._ldconf import LdSoConf, read_ld_so_conf, resolve_in_root
    from ldscope.system._machines import (
        MACHINES,
        Machine,
        abi_name,
        by_emulation,
        known_machine,
        machine,
        multiarch_triplet,
        normalize_machine,
    )
    from ldscope.system._platform import (
        X86_ISA_BASELINE,
        CpuFeatures,
        all_hwcaps_subdirs,
        default_search_dirs,
        hwcaps_subdirs,
        legacy_hwcap_bits,
        legacy_hwcap_subdirs,
        lib_expansion,
        parse_cpuinfo,
        platform_expansion,
        read_cpu_features,
        search_subdirs,
        x86_64_level,
        x86_isa_bits,
    )
    from ldscope.system._pyabi import (
        InterpreterABI,
        extension_tag_of,
        interpreter_abi,
        module_name_for,
        wheel_tag_problems,
    )
    from ldscope.system._pyimports import ImportClosure, ImportGraph
    from ldscope.system._python import (
        Distribution,
        PythonEnvironment,
        describe_environment,
        environment_of_interpreter,
        find_interpreter,
        looks_like_environment,
        normalize_name,
        parse_distribution,
        read_distributions,
        requirement_closure,
        running_environment,
        running_interpreter,
    )
    from ldscope.system._toolchain import (
        bfd_script_search_dirs,
        driver_dry_run,
        driver_query,
        find_program,
        gold_search_dirs,
        ld_so_conf_dirs,
        run_compiler,
        rust_sysroot,
    )

# name -> module, imported on first use: `ldscope link` needs the toolchain facts, not the
# Python-environment readers (packaging, the import graph) that scans use.
_WHERE = {
    "CacheEntry": "_ldcache",
    "CacheLookupContext": "_ldcache",
    "CpuFeatures": "_platform",
    "DebianOwners": "_dpkg",
    "Distribution": "_python",
    "ImportClosure": "_pyimports",
    "ImportGraph": "_pyimports",
    "InterpreterABI": "_pyabi",
    "LdCache": "_ldcache",
    "LdSoConf": "_ldconf",
    "MACHINES": "_machines",
    "RATIO_EXEMPT_BYTES": "_filesystem",
    "Machine": "_machines",
    "OSFileSystem": "_filesystem",
    "PackageOwner": "_dpkg",
    "PythonEnvironment": "_python",
    "SIMULATED_LOADER_ENV": "_environment",
    "WheelLimits": "_filesystem",
    "WheelOverlay": "_filesystem",
    "X86_ISA_BASELINE": "_platform",
    "abi_name": "_machines",
    "all_hwcaps_subdirs": "_platform",
    "bfd_script_search_dirs": "_toolchain",
    "by_emulation": "_machines",
    "cache_flags_for": "_ldcache",
    "default_search_dirs": "_platform",
    "describe_environment": "_python",
    "driver_dry_run": "_toolchain",
    "driver_query": "_toolchain",
    "environment_of_interpreter": "_python",
    "environment_or_process": "_environment",
    "extension_tag_of": "_pyabi",
    "find_interpreter": "_python",
    "find_program": "_toolchain",
    "gold_search_dirs": "_toolchain",
    "home_directory": "_environment",
    "hwcaps_subdirs": "_platform",
    "interpreter_abi": "_pyabi",
    "known_machine": "_machines",
    "ld_so_conf_dirs": "_toolchain",
    "legacy_hwcap_bits": "_platform",
    "legacy_hwcap_subdirs": "_platform",
    "lib_expansion": "_platform",
    "load_ld_cache": "_ldcache",
    "looks_like_environment": "_python",
    "machine": "_machines",
    "module_name_for": "_pyabi",
    "multiarch_triplet": "_machines",
    "normalize_machine": "_machines",
    "normalize_name": "_python",
    "parse_cpuinfo": "_platform",
    "parse_distribution": "_python",
    "parse_ld_cache": "_ldcache",
    "platform_expansion": "_platform",
    "process_environment": "_environment",
    "read_cpu_features": "_platform",
    "read_distributions": "_python",
    "read_ld_so_conf": "_ldconf",
    "requirement_closure": "_python",
    "resolve_in_root": "_ldconf",
    "run_compiler": "_toolchain",
    "running_environment": "_python",
    "running_interpreter": "_python",
    "rust_sysroot": "_toolchain",
    "search_path": "_environment",
    "search_subdirs": "_platform",
    "wheel_tag_problems": "_pyabi",
    "x86_64_level": "_platform",
    "x86_isa_bits": "_platform",
}


def __getattr__(name: str) -> Any:
    """The package's names, each imported from its own module on first use."""
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'ldscope.system' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"ldscope.system.{module}"), name)
    globals()[name] = value  # later lookups skip this function
    return value


__all__ = [
    "MACHINES",
    "RATIO_EXEMPT_BYTES",
    "SIMULATED_LOADER_ENV",
    "X86_ISA_BASELINE",
    "CacheEntry",
    "CacheLookupContext",
    "CpuFeatures",
    "DebianOwners",
    "Distribution",
    "ImportClosure",
    "ImportGraph",
    "InterpreterABI",
    "LdCache",
    "LdSoConf",
    "Machine",
    "OSFileSystem",
    "PackageOwner",
    "PythonEnvironment",
    "WheelLimits",
    "WheelOverlay",
    "abi_name",
    "all_hwcaps_subdirs",
    "bfd_script_search_dirs",
    "by_emulation",
    "cache_flags_for",
    "default_search_dirs",
    "describe_environment",
    "driver_dry_run",
    "driver_query",
    "environment_of_interpreter",
    "environment_or_process",
    "extension_tag_of",
    "find_interpreter",
    "find_program",
    "gold_search_dirs",
    "home_directory",
    "hwcaps_subdirs",
    "interpreter_abi",
    "known_machine",
    "ld_so_conf_dirs",
    "legacy_hwcap_bits",
    "legacy_hwcap_subdirs",
    "lib_expansion",
    "load_ld_cache",
    "looks_like_environment",
    "machine",
    "module_name_for",
    "multiarch_triplet",
    "normalize_machine",
    "normalize_name",
    "parse_cpuinfo",
    "parse_distribution",
    "parse_ld_cache",
    "platform_expansion",
    "process_environment",
    "read_cpu_features",
    "read_distributions",
    "read_ld_so_conf",
    "requirement_closure",
    "resolve_in_root",
    "run_compiler",
    "running_environment",
    "running_interpreter",
    "rust_sysroot",
    "search_path",
    "search_subdirs",
    "wheel_tag_problems",
    "x86_64_level",
    "x86_isa_bits",
]
