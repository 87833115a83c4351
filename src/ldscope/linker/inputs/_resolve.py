"""Input resolution as the linker does it: -l search, scripts, groups and positional flags.

`-lNAME` looks in each directory of the search path (-L in order, then the linker's
built-in directories) for libNAME.so, then libNAME.a, before moving to the next directory;
under -Bstatic/-static only libNAME.a. `-l:FILE` looks for FILE itself. A file that is
neither ELF nor an archive is read as a GNU ld script (glibc's libc.so): GROUP becomes a
group, AS_NEEDED marks its entries --as-needed, entries inherit the flags in effect at the
script's own position. Files of another machine found by -l are skipped as ld does
("skipping incompatible ... when searching for -lNAME").
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field

from ldscope.linker.frontend import LineItem, LinkOptions
from ldscope.linker.inputs._facts import (
    DEFAULT_CACHE,
    ArchiveFacts,
    BadInput,
    FactsCache,
    FileFacts,
    ObjectFacts,
    ScriptFacts,
    SharedFacts,
)
from ldscope.linker.inputs._searchdirs import with_sysroot
from ldscope.vocab import LinkErrorKind

_EMULATION_MACHINE = {
    "elf_x86_64": ("x86_64", 2), "elf_i386": ("i386", 1), "elf32_x86_64": ("x32", 1),
    "aarch64linux": ("aarch64", 2), "armelf_linux_eabi": ("arm", 1),
    "elf64lppc": ("ppc64le", 2), "elf64_s390": ("s390x", 2), "elf64lriscv": ("riscv64", 2),
}  # fmt: skip
_MAX_SCRIPT_DEPTH = 8


@dataclass(frozen=True, slots=True)
class Input:
    """One input as the linker will see it, with the positional flags in effect."""

    seq: int
    position: int  # argument index in the linker argv (a script's entries share its index)
    spec: str  # as written: "-lfoo", "libx.a", "-l:libx.so", or a script entry
    path: str | None
    facts: FileFacts | None
    as_needed: bool = False
    whole_archive: bool = False
    copy_dt_needed: bool = False
    static_only: bool = False
    groups: tuple[int, ...] = ()
    found_by_search: bool = False
    tried: tuple[str, ...] = ()
    problem: LinkErrorKind | None = None  # MISSING_INPUT, INCOMPATIBLE_INPUT, CORRUPT_INPUT, NOT_RECOGNIZED
    detail: str | None = None
    script_as_needed: bool = False  # inside a linker script's AS_NEEDED(...)

    @property
    def display(self) -> str:
        """The name a linker prints for it."""
        return self.path if self.path is not None else self.spec


@dataclass(frozen=True, slots=True)
class GroupEnd:
    """The end of a --start-group/GROUP(...): archives of the group are rescanned here."""

    group: int
    position: int


@dataclass(frozen=True, slots=True)
class ResolvedLine:
    """Inputs in link order with group ends, and the search path that was used."""

    events: tuple[Input | GroupEnd, ...]
    search_dirs: tuple[str, ...]
    default_dirs_source: str
    target: tuple[str, int] | None  # (machine, ELF class) the link is for
    warnings: tuple[str, ...]
    notes: tuple[str, ...]

    @property
    def inputs(self) -> tuple[Input, ...]:
        """Only the inputs, in order."""
        return tuple(e for e in self.events if isinstance(e, Input))


@dataclass(slots=True)
class _State:
    as_needed: bool = False
    whole_archive: bool = False
    copy_dt_needed: bool = False
    static_only: bool = False


@dataclass(slots=True)
class _Resolver:
    cwd: str
    options: LinkOptions
    search_dirs: list[str]
    cache: FactsCache
    target: tuple[str, int] | None
    events: list[Input | GroupEnd] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    groups: list[int] = field(default_factory=list)
    next_group: int = 0
    seq: int = 0

    def abs(self, path: str) -> str:
        return path if os.path.isabs(path) else os.path.normpath(os.path.join(self.cwd, path))

    def machine_of(self, facts: FileFacts) -> tuple[str, int] | None:
        if isinstance(facts, (ObjectFacts, SharedFacts)):
            return facts.machine, facts.elf_class
        if isinstance(facts, ArchiveFacts):
            for i in range(min(len(facts.member_names), 4)):
                m = facts.member(i)
                if isinstance(m, ObjectFacts):
                    return m.machine, m.elf_class
        return None

    def compatible(self, facts: FileFacts) -> bool:
        if self.target is None:
            return True
        found = self.machine_of(facts)
        return found is None or found == self.target

    def learn_target(self, facts: FileFacts) -> None:
        if self.target is None and isinstance(facts, ObjectFacts):
            self.target = (facts.machine, facts.elf_class)

    def search_library(self, name: str, static_only: bool, spec: str) -> tuple[str | None, list[str]]:
        """Find -lNAME / -l:FILE along the search path; (path or None, tried)."""
        tried: list[str] = []
        if name.startswith(":"):
            candidates = [name[1:]]
        elif static_only:
            candidates = [f"lib{name}.a"]
        else:
            candidates = [f"lib{name}.so", f"lib{name}.a"]
        for d in self.search_dirs:
            for cand in candidates:
                path = os.path.join(d, cand)
                tried.append(path)
                if not _searchable(self.abs(path)):
                    continue
                facts = self.cache.get(self.abs(path))
                if not self.compatible(facts):
                    self.warnings.append(f"skipping incompatible {path} when searching for {spec}")
                    continue
                return path, tried
        return None, tried

    def add(self, spec: str, path: str | None, position: int, state: _State, *, via: str | None = None,
            searched: bool = False, tried: tuple[str, ...] = (), as_needed: bool | None = None,
            depth: int = 0, script_as_needed: bool = False) -> None:
        """Add one input (expanding scripts in place)."""
        if path is None:
            self.emit(Input(self.seq, position, spec, None, None, problem=LinkErrorKind.MISSING_INPUT,
                            detail="cannot find " + spec, tried=tried,
                            groups=tuple(self.groups)), state)
            return
        facts = self.cache.get(self.abs(path))
        flagged_needed = state.as_needed if as_needed is None else as_needed
        if isinstance(facts, ScriptFacts):
            self.expand_script(facts, spec, path, position, state, flagged_needed, depth)
            return
        problem = detail = None
        if isinstance(facts, BadInput):
            problem = facts.kind
            detail = (f"cannot find {spec}" if facts.kind == LinkErrorKind.MISSING_INPUT
                      else f"{path}: file not recognized: {facts.reason}")
        elif not self.compatible(facts):
            found = self.machine_of(facts)
            problem = LinkErrorKind.INCOMPATIBLE_INPUT
            detail = (f"{path}: file in wrong format (built for {found[0]} {32 * found[1]}-bit, "
                      f"the link is for {self.target[0]} {32 * self.target[1]}-bit)"
                      if found and self.target else f"{path}: file in wrong format")
        else:
            self.learn_target(facts)
        self.emit(Input(self.seq, position, spec, path, facts, as_needed=flagged_needed,
                        whole_archive=state.whole_archive, copy_dt_needed=state.copy_dt_needed,
                        static_only=state.static_only, groups=tuple(self.groups),
                        found_by_search=searched, tried=tried, problem=problem, detail=detail,
                        script_as_needed=script_as_needed), state)

    def emit(self, item: Input, state: _State) -> None:
        self.events.append(item)
        self.seq += 1

    def expand_script(self, facts: ScriptFacts, spec: str, path: str, position: int, state: _State,
                      as_needed: bool, depth: int) -> None:
        script = facts.script
        if depth >= _MAX_SCRIPT_DEPTH:
            self.warnings.append(f"{path}: scripts nested more than {depth} deep; not expanded")
            return
        if script.rejected_by_ld:
            bad = next(u for u in script.unknown_details if not u.known_to_ld)
            self.emit(Input(self.seq, position, spec, path, facts, problem=LinkErrorKind.NOT_RECOGNIZED,
                            detail=f"{path}: file format not recognized; treating as linker script: "
                                   f"syntax error near {bad.text!r}", groups=tuple(self.groups)), state)
            return
        if script.unknown_commands:
            self.notes.append(f"{path}: script statements not modelled: "
                              + ", ".join(sorted(set(script.unknown_commands))[:6]))
        for d in script.search_dirs:
            self.search_dirs.append(with_sysroot(d, self.options.sysroot))
        script_dir_in_root = bool(self.options.sysroot) and self.abs(path).startswith(
            os.path.abspath(self.options.sysroot or "/") + os.sep)
        open_groups: dict[int, int] = {}
        for k, entry in enumerate(script.inputs):
            if entry.group is not None and entry.group not in open_groups:
                gid = self.next_group
                self.next_group += 1
                open_groups[entry.group] = gid
                self.groups.append(gid)
            entry_needed = True if entry.as_needed else as_needed
            label = f"{entry.name} (from {path})" if not entry.is_library_flag else f"-l{entry.name} (from {path})"
            if entry.is_library_flag:
                found, tried = self.search_library(entry.name, state.static_only, f"-l{entry.name}")
                self.add(label, found, position, state, via=path, searched=True, tried=tuple(tried),
                         as_needed=entry_needed, depth=depth + 1, script_as_needed=entry.as_needed)
            else:
                found_path, tried2 = self.script_entry(entry.name, script_dir_in_root)
                self.add(label, found_path, position, state, via=path, tried=tuple(tried2),
                         as_needed=entry_needed, depth=depth + 1, script_as_needed=entry.as_needed)
            nxt = script.inputs[k + 1] if k + 1 < len(script.inputs) else None
            if entry.group is not None and (nxt is None or nxt.group != entry.group):
                gid = open_groups[entry.group]
                self.groups.remove(gid)
                self.events.append(GroupEnd(gid, position))

    def script_entry(self, name: str, in_root: bool) -> tuple[str | None, list[str]]:
        """A file named in INPUT/GROUP: sysroot, then as written, then the search path."""
        tried: list[str] = []
        if name.startswith("/") and in_root:
            cand = (self.options.sysroot or "") + name
            tried.append(cand)
            if _searchable(cand):
                return cand, tried
        tried.append(name)
        if _searchable(self.abs(name)):
            return name, tried
        if "/" not in name:
            for d in self.search_dirs:
                cand = os.path.join(d, name)
                tried.append(cand)
                if _searchable(self.abs(cand)):
                    return cand, tried
        return None, tried


def _searchable(path: str) -> bool:
    """A hit of a -l search or of a script's INPUT/GROUP name: a regular file, or a FIFO, socket
    or device, which ld would open (and block on or read for ever) where ldscope reports it
    as an input that cannot be read."""
    try:
        return not stat.S_ISDIR(os.stat(path).st_mode)
    except (OSError, ValueError):
        return False


def _target_of(options: LinkOptions) -> tuple[str, int] | None:
    if options.emulation is None:
        return None
    return _EMULATION_MACHINE.get(options.emulation)


def resolve_inputs(
    items: tuple[LineItem, ...], options: LinkOptions, cwd: str, default_dirs: tuple[str, ...],
    default_source: str, cache: FactsCache | None = None,
) -> ResolvedLine:
    """Resolve the line's inputs in order, keeping positional flags and groups."""
    lpaths = [with_sysroot(d, options.sysroot) for d, _ in options.library_paths]
    r = _Resolver(cwd, options, [*lpaths, *default_dirs], cache or DEFAULT_CACHE, _target_of(options))
    state = _State()
    stack: list[_State] = []
    for item in items:
        if item.kind == "state":
            flag = item.value
            if flag == "push-state":
                stack.append(_State(state.as_needed, state.whole_archive, state.copy_dt_needed,
                                    state.static_only))
            elif flag == "pop-state":
                if stack:
                    state = stack.pop()
                else:
                    r.warnings.append(f"--pop-state at argument {item.position} without --push-state")
            elif flag == "start-group":
                r.groups.append(r.next_group)
                r.next_group += 1
            elif flag == "end-group":
                if r.groups:
                    r.events.append(GroupEnd(r.groups.pop(), item.position))
                else:
                    r.warnings.append(f"--end-group at argument {item.position} without --start-group")
            else:
                _set_flag(state, flag)
            continue
        if item.kind == "lib":
            spec = f"-l{item.value}"
            found, tried = r.search_library(item.value, state.static_only, spec)
            r.add(spec, found, item.position, state, searched=True, tried=tuple(tried))
        elif item.kind in ("file", "script"):
            path = item.value
            exists = os.path.exists(r.abs(path))
            r.add(path, path if exists else None, item.position, state, tried=(path,))
    while r.groups:
        gid = r.groups.pop()
        r.warnings.append("--start-group without --end-group: the group ends at the end of the line")
        r.events.append(GroupEnd(gid, len(items)))
    return ResolvedLine(tuple(r.events), tuple(r.search_dirs), default_source, r.target,
                        tuple(r.warnings), tuple(r.notes))


def _set_flag(state: _State, flag: str) -> None:
    if flag == "as-needed":
        state.as_needed = True
    elif flag == "no-as-needed":
        state.as_needed = False
    elif flag == "whole-archive":
        state.whole_archive = True
    elif flag == "no-whole-archive":
        state.whole_archive = False
    elif flag == "copy-dt-needed-entries":
        state.copy_dt_needed = True
    elif flag == "no-copy-dt-needed-entries":
        state.copy_dt_needed = False
    elif flag in ("Bstatic", "static"):
        state.static_only = True
    elif flag == "Bdynamic":
        state.static_only = False


def library_flag(path: str) -> str:
    """The -l option that finds `path` (`-lfoo` for libfoo.so/.a, else `-l:name`)."""
    base = os.path.basename(path)
    for suffix in (".so", ".a"):
        if base.startswith("lib") and base.endswith(suffix):
            return f"-l{base[3:-len(suffix)]}"
    return f"-l:{base}"

