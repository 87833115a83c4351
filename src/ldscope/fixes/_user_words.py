"""A fix in the words of the command the user gave: a compiler-driver line gets `-l…` and
`-Wl,…` at its own positions, a rustc link gets `-C link-arg=…` / `cargo:rustc-link-arg=…`.
Each translated edit is simulated again (through the driver, for a driver line), so what the
user is told to type is what was checked."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass

from ldscope.fixes._results import Edit
from ldscope.linker import LinkLine, Simulation, simulate_argv
from ldscope.linker.frontend import CommandLineError, is_driver_name, resolve_link_line

# Driver options whose next word is their argument (never an input).
_WITH_ARGUMENT = frozenset(("-o", "-L", "-u", "-e", "-T", "-z", "-Xlinker", "-x", "-I", "-D", "-U", "-include",
                            "-isystem", "-iquote", "-idirafter", "-MF", "-MT", "-MQ", "-B", "--sysroot",
                            "-specs", "-target", "--target"))


@dataclass(frozen=True, slots=True)
class UserFix:
    """A fix as the user types it, and whether that exact command was simulated to link."""

    description: str
    argv: tuple[str, ...]
    form: str  # "driver" | "rustc"
    links: bool


def user_fix(sim: Simulation, edits: tuple[Edit, ...],
             resimulate: Callable[[LinkLine], Simulation] | None = None) -> UserFix | None:
    """The edits on the user's own command, re-simulated; None when they do not translate."""
    line = sim.line
    if _is_rustc(line):
        return _rustc_fix(sim, edits)
    if is_driver_name(os.path.basename(line.original[0])):
        return _driver_fix(sim, edits, resimulate)
    return None


def _is_rustc(line: LinkLine) -> bool:
    return any("rcgu.o" in w or w.endswith(".rlib") for w in line.argv)


def _anchors(user: tuple[str, ...], linker: tuple[str, ...]) -> dict[int, tuple[int, int]]:
    """user word index -> (linker argv index, words it became) for the words that keep their
    order on the way through the driver: input files, -l, -Wl, and -Xlinker."""
    found: dict[int, tuple[int, int]] = {}
    at = 1
    i = 1
    while i < len(user):
        start, w = i, user[i]
        produced: list[str] = []
        if w in _WITH_ARGUMENT:
            if w == "-Xlinker" and i + 1 < len(user):
                produced = [user[i + 1]]
            i += 2
        else:
            if w.startswith("-Wl,"):
                produced = [p for p in w[4:].split(",") if p]
            elif (w.startswith("-l") and len(w) > 2) or not w.startswith("-"):
                produced = [w]
            i += 1
        if not produced:
            continue
        for k in range(at, len(linker) - len(produced) + 1):
            if list(linker[k:k + len(produced)]) == produced:
                found[start] = (k, len(produced))
                at = k + len(produced)
                break
    return found


def _as_driver_words(args: tuple[str, ...]) -> list[str]:
    """Linker words as a driver takes them: -l and files as they are, options after -Wl,."""
    if all(a.startswith("-l") or not a.startswith("-") for a in args):
        return list(args)
    if any("," in a for a in args):
        return [x for a in args for x in ("-Xlinker", a)]
    return ["-Wl," + ",".join(args)]


def _driver_fix(sim: Simulation, edits: tuple[Edit, ...],
                resimulate: Callable[[LinkLine], Simulation] | None) -> UserFix | None:
    line = sim.line
    user = tuple(line.original)
    if any(w.startswith("@") for w in user[1:]):
        return None  # response files: the words to edit are in another file
    anchors = _anchors(user, line.argv)
    by_linker = {k: u for u, (k, _n) in anchors.items()}
    words = list(user)
    said: list[str] = []
    # Highest positions first, so earlier user indices stay valid.
    for e in sorted(edits, key=lambda e: e.at, reverse=True):
        if e.op == "insert":
            later = sorted(u for u, (k, _n) in anchors.items() if k >= e.at)
            new = _as_driver_words(e.args)
            if later:
                words[later[0]:later[0]] = new
                said.append(f"add {' '.join(new)} before {user[later[0]]} (word {later[0]} of your command)")
            else:
                words.extend(new)
                said.append(f"add {' '.join(new)} at the end of your command")
        elif e.op == "remove":
            u = by_linker.get(e.at)
            if u is None or anchors[u][1] != e.count:
                return None
            del words[u]
            said.append(f"remove {user[u]} (word {u} of your command)")
        else:
            return None
    argv = tuple(words)
    try:
        edited = resolve_link_line(list(argv), cwd=line.cwd, linker=sim.policy.name,
                                   use_driver=line.source != "driver-fallback", source=line.source,
                                   policy=line.policy)
    except CommandLineError:
        return None
    check = resimulate(edited) if resimulate else simulate_argv(edited, linker=sim.policy.name,
                                                                environment=sim.environment)
    return UserFix("; ".join(reversed(said)), argv, "driver", check.links)


def _rustc_fix(sim: Simulation, edits: tuple[Edit, ...]) -> UserFix | None:
    """rustc puts `-C link-arg` words at the end of its linker line: only additions translate,
    and they are checked there."""
    if not edits or any(e.op != "insert" for e in edits):
        return None
    args = [a for e in sorted(edits, key=lambda e: e.at) for a in e.args]
    appended = (*sim.line.argv, *(_as_driver_words(tuple(args))))
    check = simulate_argv(sim.line, appended, sim.policy.name, sim.environment)
    flags = " ".join(f"-C link-arg={a}" for a in _as_driver_words(tuple(args)))
    lines = " ".join(f'println!("cargo:rustc-link-arg={a}");' for a in _as_driver_words(tuple(args)))
    return UserFix(f'RUSTFLAGS="{flags}" (or in build.rs: {lines})', appended, "rustc", check.links)
