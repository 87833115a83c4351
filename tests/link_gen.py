"""Random link scenarios for the differential tests: sources, objects, archives, libraries, lines.

A batch shares one pool of translation units (random symbol graphs over one namespace),
compiled once; each scenario arranges some of them into objects on the line, archives,
shared libraries (with DT_NEEDED chains, SONAMEs, version scripts) and linker scripts, and
writes a random link line (order, groups, --whole-archive, --as-needed and
--copy-dt-needed-entries positions, -l vs paths, -rpath-link, -shared / executables).
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import subprocess
from dataclasses import asdict, dataclass, field
from pathlib import Path

FUNC_KINDS = ("strong", "weak", "comdat", "inline")
DATA_KINDS = ("data", "weakdata", "common")


def is_data(sym: str) -> bool:
    """Data symbols are named ...dN, functions ...sN."""
    return sym.rstrip("0123456789").endswith("d")


@dataclass(frozen=True)
class UnitSpec:
    """One translation unit: what it defines and what it references."""

    name: str
    defs: tuple[tuple[str, str], ...]  # (symbol, kind in FUNC_KINDS or DATA_KINDS)
    refs: tuple[tuple[str, bool], ...]  # (symbol, weak?)

    def source(self) -> tuple[str, str]:
        """(file suffix, source text); C++ only when it defines an inline function."""
        cxx = any(k == "inline" for _, k in self.defs)
        lines = ['extern "C" {'] if cxx else []
        uses: list[str] = []
        for sym, weak in self.refs:
            attr = " __attribute__((weak))" if weak else ""
            if is_data(sym):
                lines.append(f"extern int {sym}{attr};")
                uses.append(f"(&{sym} ? {sym} : 0)" if weak else sym)
            else:
                lines.append(f"extern int {sym}(void){attr};")
                uses.append(f"({sym} ? {sym}() : 0)" if weak else f"{sym}()")
        body = " + ".join(uses) or "0"
        used = False
        for sym, kind in self.defs:
            if kind == "data":
                lines.append(f"int {sym} = 1;")
                continue
            if kind == "weakdata":
                lines.append(f"__attribute__((weak)) int {sym} = 2;")
                continue
            if kind == "common":
                lines.append(f"int {sym} __attribute__((common));")
                continue
            use, used = (body if not used else "0"), True
            if kind == "strong":
                lines.append(f"int {sym}(void) {{ return {use}; }}")
            elif kind == "weak":
                lines.append(f"__attribute__((weak)) int {sym}(void) {{ return {use}; }}")
            elif kind == "comdat":
                sec = f'.text.{sym},\\"axG\\",@progbits,{sym},comdat#'
                lines.append(f'__attribute__((section("{sec}"))) int {sym}(void) {{ return {use}; }}')
            elif kind == "inline":
                lines.append(f"inline int {sym}(void) {{ return {use}; }}")
                lines.append(f"int (*{self.name}_keep_{sym})(void) = {sym};")
        if not used:
            lines.append(f"int {self.name}_anchor(void) {{ return {body}; }}")
        if cxx:
            lines.append("}")
        return (".cc" if cxx else ".c"), "\n".join(lines) + "\n"


@dataclass(frozen=True)
class LibSpec:
    """A shared library built from units, depending on other libraries."""

    name: str  # "libx" -> libx.so
    units: tuple[str, ...]
    needed: tuple[str, ...] = ()
    soname: bool = True
    version: str | None = None  # version node for all its symbols


@dataclass(frozen=True)
class Scenario:
    """A complete link: pool units, how they are packaged, and the line."""

    seed: int
    units: tuple[UnitSpec, ...]
    archives: tuple[tuple[str, tuple[str, ...]], ...]  # (libname, units)
    libs: tuple[LibSpec, ...]
    scripts: tuple[tuple[str, str], ...]  # (file name, text)
    line: tuple[str, ...]  # tokens: "obj:U", "ar:NAME", "lib:NAME", "-lNAME", "script:F", flags
    shared: bool = False
    flags: tuple[str, ...] = ()  # global linker flags (-z defs, --no-allow-shlib-undefined, ...)
    rpath_link: bool = True

    def to_json(self) -> str:
        """The scenario as JSON (regression cases are stored this way)."""
        return json.dumps(asdict(self), sort_keys=True)

    @staticmethod
    def from_json(text: str) -> Scenario:
        """Inverse of to_json."""
        d = json.loads(text)
        return Scenario(
            seed=d["seed"],
            units=tuple(UnitSpec(u["name"], tuple(map(tuple, u["defs"])), tuple(map(tuple, u["refs"])))
                        for u in d["units"]),
            archives=tuple((a[0], tuple(a[1])) for a in d["archives"]),
            libs=tuple(LibSpec(x["name"], tuple(x["units"]), tuple(x["needed"]), x["soname"], x["version"])
                       for x in d["libs"]),
            scripts=tuple((s[0], s[1]) for s in d["scripts"]),
            line=tuple(d["line"]), shared=d["shared"], flags=tuple(d["flags"]),
            rpath_link=d["rpath_link"],
        )


def random_units(rng: random.Random, prefix: str, count: int, nfuncs: int, ndata: int) -> list[UnitSpec]:
    """A pool of units over {prefix}sN functions and {prefix}dN data: cycles, duplicates,
    weak definitions and references, common symbols, COMDAT groups."""
    funcs = [f"{prefix}s{i}" for i in range(nfuncs)]
    datas = [f"{prefix}d{i}" for i in range(ndata)]
    units = []
    for i in range(count):
        defs: list[tuple[str, str]] = []
        for s in rng.sample(funcs, rng.choice((0, 1, 1, 2, 2, 3))):
            defs.append((s, rng.choices(FUNC_KINDS, weights=(14, 2, 1, 1))[0]))
        if rng.random() < 0.3:
            defs.append((rng.choice(datas), rng.choices(DATA_KINDS, weights=(3, 1, 2))[0]))
        own = {s for s, _ in defs}
        pool = [s for s in funcs + datas[: max(1, ndata // 2)] if s not in own]
        refs = tuple((s, rng.random() < 0.12) for s in rng.sample(pool, rng.choice((0, 0, 1, 1, 1, 2, 2, 3))))
        units.append(UnitSpec(f"{prefix}u{i}", tuple(defs), refs))
    return units


def random_scenario(rng: random.Random, seed: int, pool: list[UnitSpec]) -> Scenario:
    """Arrange some pool units into a link."""
    chosen = _pick_units(rng, pool)
    rng.shuffle(chosen)
    mains: list[UnitSpec] = []
    archives: list[tuple[str, tuple[str, ...]]] = []
    libs: list[LibSpec] = []
    rest = list(chosen)
    nmain = rng.randint(1, max(1, len(rest) // 3))
    mains, rest = rest[:nmain], rest[nmain:]
    k = 0
    while rest:
        take = rest[: rng.randint(1, 3)]
        rest = rest[len(take):]
        if rng.random() < 0.65:
            archives.append((f"ar{seed}_{k}", tuple(u.name for u in take)))
        else:
            libs.append(LibSpec(f"sh{seed}_{k}", tuple(u.name for u in take),
                                soname=rng.random() < 0.9,
                                version=f"V{seed}_{k}" if rng.random() < 0.2 else None))
        k += 1
    # DT_NEEDED chains: a library may depend on libraries made before it.
    linked_libs: list[LibSpec] = []
    for lib in libs:
        deps = tuple(x.name for x in linked_libs if rng.random() < 0.45)
        linked_libs.append(LibSpec(lib.name, lib.units, deps, lib.soname or bool(deps), lib.version))
    libs = linked_libs
    entries: list[str] = [f"obj:{u.name}" for u in mains]
    entries += [f"ar:{a}" for a, _ in archives]
    for lib in libs:
        if rng.random() < 0.8 or not entries:
            entries.append(f"lib:{lib.name}")
    scripts: list[tuple[str, str]] = []
    if len(entries) > 2 and rng.random() < 0.2:
        pick = rng.sample([e for e in entries if not e.startswith("obj:")] or entries[-1:], 1)[0]
        kind, name = pick.split(":", 1)
        fname = f"libscr{seed}.so" if rng.random() < 0.5 else f"scr{seed}.ld"
        target = f"lib{name}.a" if kind == "ar" else f"lib{name}.so" if kind == "lib" else f"{name}.o"
        verb = rng.choice(("GROUP", "INPUT", "GROUP_AS_NEEDED"))
        body = f"GROUP ( {target} AS_NEEDED ( {target} ) )" if verb == "GROUP_AS_NEEDED" else f"{verb} ( {target} )"
        if verb == "GROUP_AS_NEEDED":
            body = f"GROUP ( {target} )" if kind != "lib" else f"INPUT ( AS_NEEDED ( {target} ) )"
        scripts.append((fname, f"/* GNU ld script */\n{body}\n"))
        entries[entries.index(pick)] = f"script:{fname}"
    rng.shuffle(entries)
    if rng.random() < 0.5:
        mains_first = [e for e in entries if e.startswith("obj:")]
        entries = mains_first + [e for e in entries if not e.startswith("obj:")]
    line: list[str] = []
    for e in entries:
        if e.startswith(("ar:", "lib:")) and rng.random() < 0.5:
            kind, name = e.split(":", 1)
            e = f"-l{name}" if rng.random() < 0.8 else f"-l:lib{name}.{'a' if kind == 'ar' else 'so'}"
        line.append(e)
    _sprinkle(rng, line)
    shared = rng.random() < 0.25
    flags: list[str] = []
    if shared and rng.random() < 0.5:
        flags.append(rng.choice(("-zdefs", "--no-undefined")))
    if rng.random() < 0.1:
        flags.append(rng.choice(("--allow-shlib-undefined", "--no-allow-shlib-undefined")))
    units = list(chosen)
    if not shared:
        near = sorted({s for u in chosen for s, _ in u.defs if not is_data(s)})
        far = sorted({s for u in pool for s, _ in u.defs if not is_data(s)} or {"main"})
        picks = [rng.choice(near if near and rng.random() < 0.85 else far) for _ in range(rng.randint(1, 3))]
        refs = tuple((s, False) for s in dict.fromkeys(picks))
        main = UnitSpec(f"main{seed}", (("main", "strong"),), refs)
        units.append(main)
        line.insert(0 if rng.random() < 0.8 else rng.randrange(len(line) + 1), f"obj:{main.name}")
    return Scenario(seed, tuple(units), tuple(archives), tuple(libs), tuple(scripts), tuple(line),
                    shared, tuple(flags), rng.random() < 0.6)


def _pick_units(rng: random.Random, pool: list[UnitSpec], most: int = 11) -> list[UnitSpec]:
    """A few seed units plus, mostly, units defining what they reference (a closure)."""
    definers: dict[str, list[UnitSpec]] = {}
    for u in pool:
        for sym, _ in u.defs:
            definers.setdefault(sym, []).append(u)
    chosen = rng.sample(pool, rng.randint(2, 4))
    names = {u.name for u in chosen}
    i = 0
    while i < len(chosen) and len(chosen) < most:
        for sym, weak in chosen[i].refs:
            if sym in definers and rng.random() < (0.5 if weak else 0.96):
                cand = rng.choice(definers[sym])
                if cand.name not in names:
                    chosen.append(cand)
                    names.add(cand.name)
        i += 1
    return chosen


def _sprinkle(rng: random.Random, line: list[str]) -> None:
    """Insert positional flags: groups, whole-archive, as-needed, copy-dt-needed."""
    n = len(line)
    if n >= 2 and rng.random() < 0.3:
        a = rng.randrange(n)
        b = rng.randrange(a, n)
        line.insert(b + 1, "--end-group")
        line.insert(a, "--start-group")
    for flag, off in (("--whole-archive", "--no-whole-archive"), ("--as-needed", "--no-as-needed"),
                      ("--copy-dt-needed-entries", "--no-copy-dt-needed-entries")):
        if rng.random() < 0.3:
            at = rng.randrange(len(line) + 1)
            line.insert(at, flag)
            # --whole-archive is always closed: left open it would swallow the driver's -lgcc.
            if flag == "--whole-archive" or rng.random() < 0.6:
                line.insert(rng.randrange(at + 1, len(line) + 1), off)
    if rng.random() < 0.2:
        line.insert(0, "--no-as-needed")


@dataclass
class Builder:
    """Builds scenario files in one directory, compiling each distinct source once."""

    root: Path
    objects: dict[str, Path] = field(default_factory=dict)

    def run(self, cmd: list[str], cwd: Path) -> None:
        """Run a build step; raise with its output on failure."""
        proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)
        if proc.returncode != 0:
            raise RuntimeError(f"{' '.join(cmd)}\n{proc.stderr}")

    def compile_all(self, units: list[UnitSpec]) -> None:
        """Compile units not built yet (one gcc process per language)."""
        objdir = self.root / "obj"
        objdir.mkdir(exist_ok=True)
        todo: dict[str, list[str]] = {".c": [], ".cc": []}
        for u in units:
            suffix, text = u.source()
            digest = hashlib.sha1(text.encode()).hexdigest()[:12]
            key = f"{u.name}-{digest}"
            if key in self.objects:
                continue
            src = objdir / f"{key}{suffix}"
            src.write_text(text)
            self.objects[key] = objdir / f"{key}.o"
            todo[suffix].append(src.name)
        for suffix, files in todo.items():
            if files:
                cc = "g++" if suffix == ".cc" else "gcc"
                self.run([cc, "-c", "-fPIC", "-O0", *files], objdir)

    def object_for(self, u: UnitSpec) -> Path:
        """The compiled object of a unit."""
        _, text = u.source()
        return self.objects[f"{u.name}-{hashlib.sha1(text.encode()).hexdigest()[:12]}"]

    def materialize(self, sc: Scenario, workdir: Path) -> list[str]:
        """Build the scenario's files in `workdir`; the user part of the link line."""
        workdir.mkdir(parents=True, exist_ok=True)
        self.compile_all(list(sc.units))
        by_name = {u.name: u for u in sc.units}
        for u in sc.units:
            link = workdir / f"{u.name}.o"
            if not link.exists():
                os.symlink(self.object_for(u), link)
        for name, members in sc.archives:
            self.run(["ar", "rcs", f"lib{name}.a", *[f"{m}.o" for m in members]], workdir)
        for lib in sc.libs:
            cmd = ["gcc", "-shared", "-Wl,--allow-multiple-definition", "-o", f"lib{lib.name}.so",
                   *[f"{m}.o" for m in lib.units]]
            if lib.soname:
                cmd.append(f"-Wl,-soname,lib{lib.name}.so")
            if lib.version:
                syms = [s for m in lib.units for s, _ in by_name[m].defs]
                body = f"global: {'; '.join(syms)}; local: *;" if syms else "global: *;"
                (workdir / f"{lib.name}.map").write_text(f"{lib.version} {{ {body} }};\n")
                cmd.append(f"-Wl,--version-script={lib.name}.map")
            if lib.needed:
                cmd += ["-L.", "-Wl,--no-as-needed", *[f"-l{n}" for n in lib.needed]]
            self.run(cmd, workdir)
        for fname, text in sc.scripts:
            (workdir / fname).write_text(text)
        words: list[str] = ["-L."]
        if sc.rpath_link:
            words.append("-rpath-link=.")
        for tok in sc.line:
            kind, _, name = tok.partition(":")
            if kind == "obj":
                words.append(f"{name}.o")
            elif kind == "ar":
                words.append(f"lib{name}.a")
            elif kind == "lib":
                words.append(f"lib{name}.so")
            elif kind == "script":
                words.append(name)
            else:
                words.append(tok)
        return words
