"""The usual link-line mistakes, made on each real link command of a project.

From a driver command (`gcc ... -o OUT objs... -Lx -ly`): the line as built, each `-l` dropped
(one at a time), an object dropped, an archive (or a shared library named by path) dropped, an
archive or library moved before its users, an object and an archive duplicated,
`-Wl,--as-needed` at the front, a library wrapped in `-Wl,-Bstatic ... -Wl,-Bdynamic`, `-static`
and `-static-pie` (executables), `-Wl,-z,defs` (shared libraries).  A project contributes at most
MAX_LINES_PER_PROJECT variants from at most MAX_COMMANDS_PER_PROJECT link commands (at most
PER_SHAPE of one shape: the same non-object words), taken round-robin over the commands so that
every command gets its first mutations before any gets its later ones.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from tests.link_projects.sources import LinkCommand

MAX_LINES_PER_PROJECT = 60
MAX_COMMANDS_PER_PROJECT = 8
PER_SHAPE = 2  # commands of one shape kept (their objects differ, and so do their undefineds)

_SEPARATE = {"-o", "-L", "-Xlinker", "-T", "-u", "-e", "-z", "-include", "-x", "-MF", "-MT", "-I", "-D"}


@dataclass(frozen=True)
class Mutation:
    """One variant of a link command."""

    name: str  # "original", "drop -lbz2", "move libcjson.a first", ...
    argv: tuple[str, ...]
    cwd: str  # relative to the project root
    command: int  # index of the link command it came from
    shared: bool


@dataclass(frozen=True)
class Word:
    """A positional input or a -l word of the command."""

    at: int  # index in argv (of `-l` itself for a separated `-l NAME`)
    span: int  # how many words it takes (2 for `-l NAME`)
    kind: str  # object, archive, shared, lib
    text: str  # as shown in mutation names (`-lbz2`, `libcjson.a`)


def words(argv: tuple[str, ...]) -> list[Word]:
    """Inputs of a driver command, in order."""
    out: list[Word] = []
    i = 1
    while i < len(argv):
        w = argv[i]
        if w == "-l" and i + 1 < len(argv):
            out.append(Word(i, 2, "lib", f"-l{argv[i + 1]}"))
            i += 2
            continue
        if w.startswith("-l"):
            out.append(Word(i, 1, "lib", w))
        elif w in _SEPARATE:
            i += 2
            continue
        elif not w.startswith("-"):
            kind = ("archive" if w.endswith(".a") else
                    "shared" if re.search(r"\.so(\.\d+)*$", w) else "object")
            out.append(Word(i, 1, kind, w))
        i += 1
    return out


def _without(argv: tuple[str, ...], w: Word) -> list[str]:
    return [*argv[:w.at], *argv[w.at + w.span:]]


def _take(argv: tuple[str, ...], w: Word) -> list[str]:
    return list(argv[w.at:w.at + w.span])


def _short(w: Word) -> str:
    return w.text.rsplit("/", 1)[-1]


def mutate(cmd: LinkCommand, index: int) -> list[Mutation]:
    """Every variant of one link command, the original first."""
    argv = cmd.argv
    ws = words(argv)
    objs = [w for w in ws if w.kind == "object"]
    libs = [w for w in ws if w.kind in ("archive", "shared", "lib")]
    out: list[tuple[str, list[str]]] = [("original", list(argv))]
    for w in libs:
        out.append((f"drop {_short(w)}", _without(argv, w)))
    if objs:
        out.append((f"drop object {_short(objs[0])}", _without(argv, objs[0])))
        if len(objs) > 2:
            out.append((f"drop object {_short(objs[-1])}", _without(argv, objs[-1])))
    for w in libs:
        if objs and w.at > objs[0].at:
            moved = _without(argv, w)
            first = objs[0].at
            out.append((f"move {_short(w)} first", [*moved[:first], *_take(argv, w), *moved[first:]]))
    if objs:
        out.append((f"duplicate object {_short(objs[0])}", [*argv, objs[0].text]))
    for w in libs:
        if w.kind == "archive":
            out.append((f"duplicate archive {_short(w)}", [*argv, w.text]))
            break
    out.append(("as-needed", [argv[0], "-Wl,--as-needed", *argv[1:]]))
    for w in libs:
        if w.kind == "lib":
            out.append((f"Bstatic {w.text}",
                        [*argv[:w.at], "-Wl,-Bstatic", *_take(argv, w), "-Wl,-Bdynamic", *argv[w.at + w.span:]]))
    if cmd.shared:
        out.append(("z defs", [*argv, "-Wl,-z,defs"]))
    else:
        out.append(("static", [*argv, "-static"]))
        out.append(("static-pie", [*argv, "-static-pie"]))
    return [Mutation(name, tuple(a), cmd.cwd, index, cmd.shared) for name, a in out]


def _shape(cmd: LinkCommand) -> tuple[object, ...]:
    """Two commands of one shape (same non-object words) make the same mistakes."""
    return (cmd.cwd if "tests" not in cmd.cwd else "tests", cmd.shared,
            tuple(w.kind if w.kind == "object" else w.text for w in words(cmd.argv)
                  if w.kind != "object"), len([w for w in words(cmd.argv) if w.kind == "object"]) > 1)


def project_mutations(links: list[LinkCommand], cap: int = MAX_LINES_PER_PROJECT) -> list[Mutation]:
    """A project's variants: commands of distinct shapes (PER_SHAPE each), round-robin, capped."""
    chosen: list[tuple[int, LinkCommand]] = []
    shapes: dict[tuple[object, ...], int] = {}
    for i, cmd in enumerate(links):
        s = _shape(cmd)
        if shapes.get(s, 0) < PER_SHAPE and len(chosen) < MAX_COMMANDS_PER_PROJECT:
            shapes[s] = shapes.get(s, 0) + 1
            chosen.append((i, cmd))
    per = [mutate(cmd, i) for i, cmd in chosen]
    out: list[Mutation] = []
    depth = 0
    while len(out) < cap and any(depth < len(m) for m in per):
        for m in per:
            if depth < len(m) and len(out) < cap:
                out.append(m[depth])
        depth += 1
    return out
