"""Finding the failing link command in a build log.

- rustc's "linking with `cc` failed" note: quoted arguments, maybe after NAME="value"
  words; `<sysroot>` is rustc's sysroot (asked of the toolchain), "<N object files
  omitted>" are the codegen units next to the output (`OUT.*.rcgu.o`), `{a-*,b-*}.rlib`
  patterns are expanded;
- make / ninja / CMake verbose output: the last compiler-driver or linker command that
  links (`-o`, no `-c`) before the first linker error, with `cd DIR &&` and make's
  "Entering directory" giving the working directory.
"""

from __future__ import annotations

import glob
import os
import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass

from ldscope.elf import open_regular_text
from ldscope.linker.frontend._cmdline import (
    CommandLineError,
    linker_from_program,
    split_quoted,
    strip_env_assignments,
)
from ldscope.linker.frontend._driver import is_driver_name
from ldscope.system import environment_or_process, rust_sysroot

_RUST_NOTE = re.compile(r'note:\s+((?:[A-Za-z_][A-Za-z0-9_]*="(?:[^"\\]|\\.)*"\s+)*"(?:[^"\\]|\\.)*".*)$')
# `cargo rustc -- --print link-args` prints the same words with no `note:` in front.
_RUST_ARGS = re.compile(r'^\s*((?:[A-Za-z_][A-Za-z0-9_]*="(?:[^"\\]|\\.)*"\s+)*"[^"]*(?:cc|gcc|clang|ld|c\+\+|g\+\+|lld|mold)[^"]*"\s+".*)$')
_TOOLCHAIN = re.compile(r"(?:cargo|rustc)\s+\+([A-Za-z0-9._-]+)|RUSTUP_TOOLCHAIN=([A-Za-z0-9._-]+)")
_OMITTED = re.compile(r"^<(\d+) object files? omitted>$")
_BRACES = re.compile(r"\{([^{}]*)\}")
_ERROR_MARKERS = ("undefined reference to", "undefined symbol:", "multiple definition of",
                  "duplicate symbol:", "DSO missing", "cannot find -l", "ld returned",
                  "error: linking with", "unable to find library", "library not found")
_ENTERING = re.compile(r"Entering directory [`'\"](.+?)['\"]")
_PREFIX = re.compile(r"^(?:\[\d+/\d+\]\s+|:\s*&&\s*)")


@dataclass(frozen=True, slots=True)
class LogLink:
    """The link command found in a log, with where it ran and what the log reported."""

    argv: tuple[str, ...]
    cwd: str | None
    origin: str
    notes: tuple[str, ...]
    reported: tuple[str, ...]  # the linker's own error lines in the log

    def reported_symbols(self) -> set[str]:
        """Symbols the log says were undefined (any linker's wording)."""
        found: set[str] = set()
        for line in self.reported:
            for pat in (r"undefined reference to [`']([^'`]+)'", r"undefined symbol: (\S+)"):
                found.update(m.split("@", 1)[0] for m in re.findall(pat, line))
        return found


def _expand_braces(word: str) -> list[str]:
    m = _BRACES.search(word)
    if not m:
        return [word]
    out: list[str] = []
    for alt in m.group(1).split(","):
        out.extend(_expand_braces(word[: m.start()] + alt + word[m.end():]))
    return out


def toolchain_sysroot(name: str, env: Mapping[str, str]) -> str | None:
    """The sysroot of the rustup toolchain a log names (`cargo +nightly`, RUSTUP_TOOLCHAIN),
    found among rustup's installed toolchains (nothing is run for a name from a log)."""
    home = env.get("RUSTUP_HOME") or (os.path.join(env["HOME"], ".rustup") if env.get("HOME") else None)
    if home is None or not re.fullmatch(r"[A-Za-z0-9._-]+", name):
        return None
    found = sorted(glob.glob(os.path.join(glob.escape(os.path.join(home, "toolchains")), glob.escape(name) + "*")))
    exact = [f for f in found if os.path.basename(f) == name]
    chosen = exact or found
    return chosen[0] if chosen else None


_DEFAULT_TOOLCHAIN = re.compile(r'^\s*default_toolchain\s*=\s*"([A-Za-z0-9._-]+)"', re.MULTILINE)


def rustup_default_sysroot(env: Mapping[str, str]) -> str | None:
    """The sysroot of rustup's default toolchain, read from its settings.toml (for --no-exec:
    rustc is not asked)."""
    home = env.get("RUSTUP_HOME") or (os.path.join(env["HOME"], ".rustup") if env.get("HOME") else None)
    if home is None:
        return None
    try:
        with open_regular_text(os.path.join(home, "settings.toml")) as fh:
            m = _DEFAULT_TOOLCHAIN.search(fh.read(1 << 16))
    except OSError:
        return None
    return toolchain_sysroot(m.group(1), env) if m else None


def expand_rustc(words: list[str], notes: list[str], env: Mapping[str, str], toolchain: str | None = None,
                 ask: bool = True) -> list[str]:
    """Undo rustc's elisions: <sysroot>, omitted object files, {..}.rlib patterns. `ask`
    False (--no-exec): the sysroot is rustup's default toolchain, never asked of rustc."""
    sysroot = None
    if any("<sysroot>" in w for w in words):
        sysroot = toolchain_sysroot(toolchain, env) if toolchain else None
        if toolchain and sysroot is None:
            notes.append(f"the log's toolchain {toolchain!r} is not installed here; using the default one")
        elif sysroot is not None:
            notes.append(f"<sysroot> is the log's toolchain {toolchain}: {sysroot}")
        if sysroot is None and not ask:
            sysroot = rustup_default_sysroot(env)
            notes.append(f"<sysroot> assumed to be rustup's default toolchain: {sysroot} (--no-exec: "
                         "`rustc --print sysroot` not run)" if sysroot else
                         "--no-exec: `rustc --print sysroot` not run and rustup's default toolchain is unknown")
        sysroot = sysroot or (rust_sysroot(env) if ask else None)
    output = next((words[i + 1] for i, w in enumerate(words[:-1]) if w == "-o"), None)
    out: list[str] = []
    for w in words:
        m = _OMITTED.match(w)
        if m:
            want = int(m.group(1))
            found = sorted(glob.glob(glob.escape(output) + ".*.rcgu.o")) if output else []
            if len(found) > want:
                # A failed build before this one left its codegen units too: the newest are this link's.
                newest = sorted(found, key=lambda p: (os.path.getmtime(p), p), reverse=True)[:want]
                notes.append(f"rustc omitted {want} object file(s); {len(found)} codegen units lie next to "
                             f"{os.path.basename(output or '')} (stale ones of an earlier build among them): "
                             f"using the {want} newest")
                out.extend(sorted(newest))
            elif found:
                notes.append(f"rustc omitted {want} object file(s); using the {len(found)} codegen "
                             f"unit(s) next to {os.path.basename(output or '')}")
                out.extend(found)
            else:
                notes.append(f"rustc omitted {want} object file(s) and they are gone: the prediction "
                             "is partial (build with RUSTFLAGS=-Csave-temps to keep them)")
                out.append(f"<{want} object files omitted by rustc>")
            continue
        if "<sysroot>" in w:
            if sysroot is not None:
                w = w.replace("<sysroot>", sysroot)
            elif ask:  # (with --no-exec the note above says why it is unknown)
                notes.append("rustc's sysroot is unknown (rustc not found); its libraries are missing")
        if "{" in w and "*" in w:
            hits = [h for pat in _expand_braces(w) for h in sorted(glob.glob(pat))[:1]]
            if hits:
                out.extend(hits)
                continue
        out.append(w)
    return out


def _is_error(line: str) -> bool:
    return any(k in line for k in _ERROR_MARKERS)


def _shell_words(line: str) -> tuple[list[str], str | None]:
    """Words of one shell command line, and a `cd DIR &&` directory if any."""
    text = _PREFIX.sub("", line.strip())
    text = re.sub(r"\s*&&\s*:\s*$", "", text)
    cwd = None
    m = re.match(r"^cd\s+(\S+)\s*&&\s*(.*)$", text)
    if m:
        cwd, text = m.group(1), m.group(2)
    try:
        return shlex.split(text), cwd
    except ValueError:
        return [], cwd


def _links(words: list[str], env: Mapping[str, str]) -> bool:
    if not words:
        return False
    prog = os.path.basename(words[0])
    if not (is_driver_name(prog) or linker_from_program(words[0], env)):
        return False
    if linker_from_program(words[0], env) and not is_driver_name(prog):
        return True
    return "-o" in words and not any(w in ("-c", "-S", "-E") for w in words)


def _all_rustc(lines: list[str], env: Mapping[str, str], ask: bool) -> list[LogLink]:
    """Every rustc linker line in the log (a `cargo test --no-run` links each test)."""
    toolchain = next((m.group(1) or m.group(2) for line in lines for m in [_TOOLCHAIN.search(line)] if m), None)
    found: list[LogLink] = []
    starts: list[int] = []
    for i, line in enumerate(lines):
        m = _RUST_NOTE.search(line)
        origin = "rustc linker note"
        if not m:
            m = _RUST_ARGS.match(line)
            origin = "rustc --print link-args"
        if not m:
            continue
        words = strip_env_assignments(split_quoted(m.group(1)))
        if not words or not (is_driver_name(os.path.basename(words[0])) or linker_from_program(words[0], env)):
            continue
        notes: list[str] = []
        found.append(LogLink(tuple(expand_rustc(words, notes, env, toolchain, ask)), None, origin, tuple(notes), ()))
        starts.append(i)
    return _with_reports(found, starts, lines, strip_note=True)


def _all_build_tool(lines: list[str], cwd: str | None, env: Mapping[str, str]) -> list[LogLink]:
    """Every link command of a make/ninja/CMake log, each with its directory."""
    found: list[LogLink] = []
    starts: list[int] = []
    where = cwd
    for i, line in enumerate(lines):
        m = _ENTERING.search(line)
        if m:
            where = _relative_to(cwd, m.group(1))
            continue
        words, cd = _shell_words(line)
        if _links(words, env):
            found.append(LogLink(tuple(words), _relative_to(where, cd) if cd else where, "build-tool command", (), ()))
            starts.append(i)
    return _with_reports(found, starts, lines, strip_note=False)


def _with_reports(found: list[LogLink], starts: list[int], lines: list[str], strip_note: bool) -> list[LogLink]:
    """Each link with the linker error lines between it and the next link command."""
    out = []
    for k, link in enumerate(found):
        end = starts[k + 1] if k + 1 < len(starts) else len(lines)
        chunk = [x.strip() for x in lines[starts[k] + 1:end] if _is_error(x)]
        if strip_note:
            chunk = [x.removeprefix("= note:").strip() for x in chunk]
        out.append(LogLink(link.argv, link.cwd, link.origin, link.notes, tuple(chunk)))
    return out


def find_links_in_log(text: str, cwd: str | None = None, env: Mapping[str, str] | None = None,
                      ask: bool = True) -> list[LogLink]:
    """Every link command in a build log, in order (the failing one among them); [] if none.
    Nothing the log names is run; `ask` False (--no-exec) does not ask the user's rustc either."""
    lines = text.splitlines()
    variables = environment_or_process(env)
    return _all_rustc(lines, variables, ask) or _all_build_tool(lines, cwd, variables)


def _relative_to(base: str | None, directory: str) -> str:
    """`directory` as the build saw it, from `base` when it is relative."""
    if os.path.isabs(directory) or base is None:
        return directory
    return os.path.normpath(os.path.join(base, directory))


def find_link_in_log(text: str, cwd: str | None = None, env: Mapping[str, str] | None = None,
                     ask: bool = True) -> LogLink:
    """The failing link command in a build log (the first one the log reports errors
    after; else rustc's first or the build's last link); CommandLineError if there is none.
    `env` (default: the process environment) is where the toolchain it names is looked up."""
    links = find_links_in_log(text, cwd, env, ask)
    if not links:
        raise CommandLineError("no link command found in the log (looked for rustc's linker note "
                               "and for compiler/linker command lines with -o)")
    failing = next((link for link in links if link.reported), None)
    if failing is not None:
        return failing
    return links[0] if links[0].origin.startswith("rustc") else links[-1]
