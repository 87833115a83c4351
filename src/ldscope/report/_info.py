"""`info` summaries as text a person reads, and as the `ldscope.info/1` JSON document."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ldscope.inspection import ArchiveInfo, ElfInfo, FileInfo, ScriptInfo
from ldscope.report._json import to_jsonable
from ldscope.report._text_safe import sanitized

INFO_SCHEMA = "ldscope.info/1"


def info_json(infos: Sequence[FileInfo], errors: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The `ldscope.info/1` JSON document: one summary per file read, one entry per file not."""
    return {"schema": INFO_SCHEMA, "files": to_jsonable(list(infos)), "errors": [dict(e) for e in errors]}


def render_info(info: FileInfo, verbose: bool = False) -> str:
    """A block of `key: value` lines for one file (names and paths escaped: `\\xe9`)."""
    info = sanitized(info)
    if isinstance(info, ElfInfo):
        return _elf(info, verbose)
    if isinstance(info, ArchiveInfo):
        return _archive(info, verbose)
    return _script(info)


def _kv(lines: list[str], key: str, value: object) -> None:
    label = f"{key}:" if key else ""
    lines.append(f"  {label:<20} {value}")


def _elf(info: ElfInfo, verbose: bool = False) -> str:
    lines = [f"{info.path}"]
    kind = info.type + (" (PIE)" if info.pie and info.type == "DYN" else "")
    _kv(lines, "format", f"ELF{info.elf_class} {info.endian}-endian {info.machine}, {kind}")
    if info.separate_debug:
        _kv(lines, "separate debug file", f"for build-id {info.build_id or 'none'}; no code and no dynamic "
            "section (the loader cannot load it; symbols --all lists its .symtab)")
    if info.dynamic_section_unused:
        _kv(lines, "dynamic section", "a .dynamic section but no PT_DYNAMIC: the loader does not read it "
            "(ld.so: \"object file has no dynamic section\")")
        if info.dynamic_section_needed:
            _kv(lines, "  its NEEDED", " ".join(info.dynamic_section_needed) + " (never loaded)")
    if info.interpreter:
        _kv(lines, "interpreter", info.interpreter)
    if info.soname:
        _kv(lines, "soname", info.soname)
    for i, n in enumerate(info.needed):
        _kv(lines, "needed" if i == 0 else "", n)
    if info.rpath is not None:
        _kv(lines, "rpath", info.rpath)
    if info.runpath is not None:
        _kv(lines, "runpath", info.runpath)
    flags = list(info.flags) + [f"FLAGS_1:{f}" for f in info.flags_1]
    if flags:
        _kv(lines, "flags", " ".join(flags))
    if info.lazy_binding_applies:
        _kv(lines, "binding", "now (all at load)" if info.bind_now else "lazy (PLT at first call)")
    for req in info.versions_required:
        weak = f" (weak: {', '.join(req.weak)})" if req.weak else ""
        _kv(lines, "requires", f"{req.file}: {' '.join(req.versions)}{weak}")
    if info.versions_defined:
        _kv(lines, "defines versions", " ".join(info.versions_defined))
    _kv(
        lines,
        "dynamic symbols",
        f"{info.dynamic_symbols} ({info.dynamic_defined} defined, {info.dynamic_undefined} undefined)",
    )
    if info.symtab_symbols is None:
        _kv(lines, "symtab", "stripped (no .symtab)")
    else:
        _kv(lines, "symtab", f"{info.symtab_symbols} symbols (not stripped)")
    if info.sections == 0:
        _kv(lines, "sections", "no section headers (read from program headers)")
    _kv(lines, "build-id", info.build_id or "none")
    if info.debuglink:
        _kv(lines, "debuglink", info.debuglink)
    for w in info.warnings:
        _kv(lines, "warning", w)
    if verbose:
        for seg in info.segments:
            lines.append(f"    segment {seg.type:<14} offset {seg.offset:#010x} vaddr {seg.vaddr:#018x} "
                         f"filesz {seg.filesz:#x} memsz {seg.memsz:#x} {seg.flags}")
        for sec in info.section_list:
            lines.append(f"    [{sec.index:>2}] {sec.name:<24} {sec.type:<14} addr {sec.addr:#x} "
                         f"offset {sec.offset:#x} size {sec.size:#x}")
    return "\n".join(lines) + "\n"


def _archive(info: ArchiveInfo, verbose: bool) -> str:
    lines = [f"{info.path}"]
    elf_members = sum(1 for m in info.members if m.is_elf)
    _kv(lines, "format", f"ar archive ({info.format}), {len(info.members)} members, {elf_members} ELF")
    if info.has_index:
        _kv(lines, "symbol index", f"{info.index_format}, {info.index_symbols} symbols")
    else:
        _kv(lines, "symbol index", "none")
    if info.ld_refuses:
        _kv(lines, "warning", "GNU ld refuses this archive: archive has no index; run ranlib to add one")
    shown = info.members if verbose else info.members[:20]
    for m in shown:
        note = f"  skipped: {m.skip_reason}" if m.skip_reason else f"  {m.indexed_symbols} indexed symbols"
        lines.append(f"    {m.name} ({m.size} bytes){note}")
    if len(shown) < len(info.members):
        lines.append(f"    … {len(info.members) - len(shown)} more members (-v lists all)")
    return "\n".join(lines) + "\n"


def _script(info: ScriptInfo) -> str:
    lines = [f"{info.path}"]
    _kv(lines, "format", "GNU ld script")
    if info.output_format:
        _kv(lines, "output format", ", ".join(info.output_format))
    for i in info.inputs:
        tags = [t for t, on in (("GROUP", i.in_group), ("AS_NEEDED", i.as_needed)) if on]
        _kv(lines, "input", i.name + (f"  [{' '.join(tags)}]" if tags else ""))
    for d in info.search_dirs:
        _kv(lines, "search dir", d)
    for u in info.unknown_commands:
        _kv(lines, "not understood", u)
    return "\n".join(lines) + "\n"
