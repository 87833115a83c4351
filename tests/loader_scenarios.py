"""Load scenarios for the ld.so oracle tests: spec, seeded generator, gcc builder, real-loader
observation and model prediction, normalised into comparable facts.

A `Scenario` describes shared libraries (each a gcc build: definitions, references, DT_NEEDED,
DT_RPATH/DT_RUNPATH, version nodes, link flags), where copies of them are placed at run time,
an executable or a dlopen host, and the environment (LD_LIBRARY_PATH, LD_PRELOAD).  Names
carry two placeholders: `{P}` (a per-scenario prefix, so scenarios can share one directory,
sysroot and ld.so.cache) and `{S}` (the scenario's root directory as the loader sees it).

Two worlds:
* "host": the scenario lives in a tmp directory and runs against the real /etc/ld.so.cache.
* "chroot": the scenario lives in a sysroot (copies of libc and ld.so, an ld.so.conf listing
  the scenario's cache directories, a cache built with `ldconfig -X -r ROOT`); it runs under
  chroot(2) (root only) and the model gets `make_environment(root=ROOT)`.  This is how cache
  hits, the default directories and DF_1_NODEFLIB are covered without touching the real
  /etc/ld.so.cache.  /proc is not mounted in the sysroot, so the executable's `$ORIGIN` is
  never used there (ld.so could not compute it).

Observation of an executable scenario (four runs of the real program):
* trace: LD_TRACE_LOADED_OBJECTS=1 LD_WARN=1 LD_BIND_NOW=1 LD_DEBUG=bindings (what `ldd -r`
  does, plus the binding log): chosen paths, missing libraries, every missing version and
  undefined symbol, every symbol binding.  The program does not run.
* plain: the program prints START, END (no calls) - load-time failures only.
* call: START, calls every referenced function and every library's `*_all` function (which
  uses every reference of that library), END - lazy failures surface at the call.
* now: as `call` with LD_BIND_NOW=1 - everything fails before START.
A dlopen scenario runs a small host program that dlopens libraries named on its command line
(RTLD_LOCAL / RTLD_GLOBAL first, then the target), prints `OK` or dlerror(), lists the loaded
objects (dl_iterate_phdr) after each dlopen and then calls the target's `*_all` functions.
"""

from __future__ import annotations

import functools
import os
import random
import re
import shutil
import subprocess
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ldscope.loader import (
    Host,
    HostKind,
    ImageCache,
    LoadEnvironment,
    LoaderModel,
    LoadReport,
    Problem,
    make_environment,
)
from ldscope.system import read_cpu_features
from ldscope.vocab import FoundVia, ProblemKind, When

RTLD = "/lib64/ld-linux-x86-64.so.2"
VDSO = "linux-vdso.so.1"

# --------------------------------------------------------------------------------- the spec


@dataclass(frozen=True)
class Def:
    """A symbol a library (or the executable) defines."""

    name: str
    kind: str = "func"  # "func" | "data"
    version: str | None = None  # version node (versioned libraries only; None: the first)
    default: bool = True  # False: `name@VERSION` (hidden, non-default) via .symver


@dataclass(frozen=True)
class Ref:
    """A symbol an object references, and how (which relocation it gets)."""

    name: str
    how: str = "call"  # "call" (PLT), "addr" (&function: GOT), "data" (variable), "weak"


@dataclass(frozen=True)
class Lib:
    """One gcc build of a shared library.  Several builds may share a soname (variants)."""

    key: str
    soname: str | None  # DT_SONAME and default file name; None: no DT_SONAME
    defs: tuple[Def, ...] = ()
    refs: tuple[Ref, ...] = ()
    needed: tuple[str, ...] = ()  # keys of the builds it is linked against (DT_NEEDED, verneed)
    rpath: tuple[str, ...] = ()  # DT_RPATH elements
    runpath: tuple[str, ...] = ()  # DT_RUNPATH elements
    versions: tuple[str, ...] = ()  # version nodes, each inheriting the previous
    now: bool = False  # -z now
    symbolic: bool = False  # -Bsymbolic
    nodeflib: bool = False  # -z nodefaultlib
    m32: bool = False  # a 32-bit (wrong ELFCLASS) build
    machine: int | None = None  # patch e_machine of the built file (wrong machine)
    junk: str | None = None  # not a library: "text" (invalid ELF header) or "empty"
    nostdlib: bool = False  # no libc: without versions it then has no DT_VERSYM at all

    @property
    def stem(self) -> str:
        """The soname without lib/.so (names its `*_all` function)."""
        base = self.soname or self.key
        base = base.removeprefix("lib")
        return base.split(".so")[0].replace("-", "_")


@dataclass(frozen=True)
class Place:
    """A run-time copy of a build (or a symlink) in a directory of the scenario."""

    key: str  # build key ("" with `symlink`)
    dir: str  # relative to the scenario root, or absolute (target side; chroot world only)
    file: str | None = None  # default: the build's soname
    symlink: str | None = None  # make a symlink with this target instead of a copy
    late: bool = False  # placed after ldconfig built the cache (chroot world)


@dataclass(frozen=True)
class Exe:
    """The executable (or, for dlopen scenarios, extra flags of the host program)."""

    refs: tuple[Ref, ...] = ()
    needed: tuple[str, ...] = ()
    rpath: tuple[str, ...] = ()
    runpath: tuple[str, ...] = ()
    defs: tuple[Def, ...] = ()  # exported with --export-dynamic-symbol (interposition)
    pie: bool = True
    now: bool = False
    nodeflib: bool = False


@dataclass(frozen=True)
class Dlopen:
    """A dlopen host run: earlier RTLD_LOCAL / RTLD_GLOBAL loads, then the target."""

    target: str  # "{S}/dir/file"
    now: bool = False
    local: tuple[str, ...] = ()  # dlopen'ed first with RTLD_LAZY|RTLD_LOCAL (paths or names)
    glob: tuple[str, ...] = ()  # then with RTLD_LAZY|RTLD_GLOBAL


@dataclass(frozen=True)
class Scenario:
    """A complete load scenario."""

    name: str
    libs: tuple[Lib, ...]
    place: tuple[Place, ...]
    exe: Exe = field(default_factory=Exe)
    llp: tuple[str, ...] | None = None  # LD_LIBRARY_PATH elements (None: unset)
    preload: tuple[str, ...] = ()  # LD_PRELOAD entries
    cache: tuple[str, ...] = ()  # ld.so.conf directories (chroot world)
    world: str = "host"  # "host" | "chroot"
    dlopen: Dlopen | None = None
    note: str = ""
    expect: tuple[str, ...] = ()  # facts the real loader must show (see check_expectations)

    @property
    def prefix(self) -> str:
        """Per-scenario name prefix for sonames and symbols."""
        return "z" + re.sub(r"[^a-z0-9]", "", self.name.lower())

    def lib(self, key: str) -> Lib:
        """The build with this key."""
        for lib in self.libs:
            if lib.key == key:
                return lib
        raise KeyError(key)


# ---------------------------------------------------------------------------- generation

_SYSTEM_DIRS = ("/usr/lib", "/lib/x86_64-linux-gnu")


def generate(seed: int) -> Scenario:
    """A random but deterministic scenario for `seed`."""
    rng = random.Random(seed)
    world = "chroot" if rng.random() < 0.25 else "host"
    chroot = world == "chroot"
    n = rng.choice((1, 2, 2, 3, 3, 4, 4, 5))
    keys = [chr(ord("a") + i) for i in range(n)]
    dirs = ["d0", "d1", "d2", "d3"]

    def spell(d: str, where: str) -> str:
        """A directory as a search-path element, in one of several spellings."""
        roll = rng.random()
        if where == "exe" and not chroot and roll < 0.25:
            return f"$ORIGIN/{d}"
        if where == "lib" and roll < 0.35:
            return f"$ORIGIN/../{d}" if rng.random() < 0.5 else "${ORIGIN}/../" + d
        if roll < 0.45:
            return "{S}/" + d + "/"
        if roll < 0.5:
            return "{S}/./" + d
        return "{S}/" + d

    # Dependency graph: mostly forward edges (chains up to depth 4), some back edges (cycles)
    needed: dict[str, list[str]] = {k: [] for k in keys}
    for i, k in enumerate(keys):
        for j in range(i + 1, n):
            if rng.random() < (0.55 if j == i + 1 else 0.25):
                needed[k].append(keys[j])
        if i > 0 and rng.random() < 0.12:
            needed[k].append(keys[rng.randrange(0, i)])
    roots = [keys[0]] + [k for k in keys[1:] if rng.random() < 0.3]

    versioned = {k: rng.random() < 0.3 for k in keys}
    vnames = {k: (f"{{P}}{k.upper()}_1", f"{{P}}{k.upper()}_2") for k in keys}
    commons = [("{P}common0", "func"), ("{P}common1", "data")]
    defs: dict[str, list[Def]] = {}
    for k in keys:
        ver = vnames[k]
        items: list[Def] = []
        if versioned[k]:
            two = rng.random() < 0.5
            if rng.random() < 0.3:  # an old hidden version and a new default one
                items.append(Def(f"{{P}}{k}_f", version=ver[0], default=False))
                items.append(Def(f"{{P}}{k}_f", version=ver[1]))
            else:
                items.append(Def(f"{{P}}{k}_f", version=ver[1] if two else ver[0]))
            items.append(Def(f"{{P}}{k}_d", "data", version=ver[0]))
        else:
            items += [Def(f"{{P}}{k}_f"), Def(f"{{P}}{k}_d", "data")]
        for c, kind in commons:
            if rng.random() < 0.3:
                items.append(Def(c, kind, version=ver[0] if versioned[k] else None))
        defs[k] = items

    def refs_to(targets: Iterable[str], allow_ghost: bool) -> list[Ref]:
        out: list[Ref] = []
        for t in targets:
            for d in defs[t]:
                if d.default and rng.random() < 0.6:
                    how = {"func": rng.choice(("call", "call", "addr", "weak")),
                           "data": "data"}[d.kind]
                    if Ref(d.name, how) not in out:
                        out.append(Ref(d.name, how))
        if allow_ghost and rng.random() < 0.15:
            out.append(Ref(f"{{P}}ghost{rng.randrange(3)}",
                           rng.choice(("call", "call", "addr", "data", "weak"))))
        return out

    libs: list[Lib] = []
    variants: list[Lib] = []
    for k in keys:
        refs = refs_to(needed[k], True)
        if rng.random() < 0.15:  # a self reference (interposable)
            own = [d for d in defs[k] if d.default]
            d = rng.choice(own)
            refs.append(Ref(d.name, "call" if d.kind == "func" else "data"))
        # a reference into a library that is not a dependency (found only via the global scope)
        others = [o for o in keys if o != k and o not in needed[k]]
        if others and rng.random() < 0.15:
            d = rng.choice([d for d in defs[rng.choice(others)] if d.default])
            refs.append(Ref(d.name, "call" if d.kind == "func" else "data"))
        mode = rng.random()
        rp = tuple(spell(rng.choice(dirs), "lib") for _ in range(rng.randint(1, 2)))
        lib = Lib(
            key=k,
            soname=f"lib{{P}}{k}.so" + (".1" if rng.random() < 0.3 else ""),
            defs=tuple(defs[k]),
            refs=tuple(refs),
            needed=tuple(needed[k]),
            rpath=rp if mode < 0.2 else (),
            runpath=rp if 0.2 <= mode < 0.35 else (),
            versions=vnames[k] if versioned[k] else (),
            now=rng.random() < 0.1,
            symbolic=rng.random() < 0.05,
            nodeflib=chroot and rng.random() < 0.1,
        )
        libs.append(lib)
        roll = rng.random()
        if roll < 0.1:  # run-time variant lacking one symbol
            drop = rng.choice(lib.defs)
            variants.append(Lib(**{**lib.__dict__, "key": k + "r",
                                   "defs": tuple(d for d in lib.defs if d.name != drop.name)}))
        elif roll < 0.2 and versioned[k]:  # run-time variant lacking the second version node
            kept = tuple(d for d in lib.defs if d.version != vnames[k][1])
            if not kept:
                kept = (Def(f"{{P}}{k}_d", "data", version=vnames[k][0]),)
            variants.append(Lib(**{**lib.__dict__, "key": k + "r", "defs": kept,
                                   "versions": vnames[k][:1]}))
        elif roll < 0.25:  # run-time variant built without any versioning
            variants.append(Lib(**{**lib.__dict__, "key": k + "r", "versions": (),
                                   "nostdlib": rng.random() < 0.5,
                                   "defs": tuple({d.name: Def(d.name, d.kind)
                                                  for d in lib.defs}.values())}))
    lib_keys = {lib.key for lib in libs}

    # Placement: each library in one or two directories (or missing), decoys in front
    place: list[Place] = []
    used_dirs: list[str] = []
    for lib in libs:
        variant = next((v for v in variants if v.key == lib.key + "r"), None)
        roll = rng.random()
        if roll < 0.05:
            continue  # missing everywhere
        choices = list(dirs)
        rng.shuffle(choices)
        first = choices[0]
        if chroot and rng.random() < 0.15:
            first = rng.choice(_SYSTEM_DIRS)
        late = first in _SYSTEM_DIRS and rng.random() < 0.5
        key = variant.key if variant is not None and rng.random() < 0.7 else lib.key
        sub = rng.random()
        if sub < 0.05 and first not in _SYSTEM_DIRS:  # found through a symlink
            assert lib.soname is not None
            place.append(Place(key, "real"))
            place.append(Place("", first, file=lib.soname, symlink="../real/" + lib.soname))
        elif sub < 0.1:  # a glibc-hwcaps or legacy platform subdirectory of a search dir
            place.append(Place(key, first + rng.choice(("/glibc-hwcaps/x86-64-v2", "/x86_64")),
                               late=late))
        else:
            place.append(Place(key, first, late=late))
        if rng.random() < 0.3:
            second = choices[1]
            other = lib.key if key != lib.key or variant is None else variant.key
            place.append(Place(other, second))
        if rng.random() < 0.12:
            decoy_kind = rng.choice(("m32", "m32", "machine", "text"))
            decoy = Lib(key=lib.key + "x", soname=lib.soname, defs=lib.defs,
                        m32=decoy_kind == "m32",
                        machine=183 if decoy_kind == "machine" else None,
                        junk="text" if decoy_kind == "text" else None)
            variants.append(decoy)
            place.append(Place(decoy.key, choices[2]))
        used_dirs.append(first)
    all_libs = tuple(libs + variants)

    exe_mode = rng.random()
    erp = tuple(spell(d, "exe") for d in rng.sample(dirs, rng.randint(1, 3)))
    exe_defs = (Def(commons[0][0]),) if rng.random() < 0.1 else ()
    pie = rng.random() < 0.8
    exe_refs = [r for r in refs_to(roots, False) if r.name != commons[0][0] or not exe_defs]
    if not pie:
        # A weak function tested in a non-PIE executable gets a canonical PLT entry: `if (f)`
        # is always true and calling it crashes - a program bug, not a loader outcome.
        exe_refs = [Ref(r.name, "call") if r.how == "weak" else r for r in exe_refs]
    exe = Exe(
        refs=tuple(dict.fromkeys(exe_refs)),
        needed=tuple(roots),
        rpath=erp if exe_mode < 0.45 else (),
        runpath=erp if 0.45 <= exe_mode < 0.7 else (),
        defs=exe_defs,
        pie=pie,
        now=rng.random() < 0.1,
        nodeflib=chroot and rng.random() < 0.1,
    )
    llp: tuple[str, ...] | None = None
    if rng.random() < 0.5:
        elems = []
        for d in rng.sample(dirs, rng.randint(1, 3)):
            r = rng.random()
            if not chroot and r < 0.15:
                elems.append(d)  # relative to the cwd (the scenario root)
            elif not chroot and r < 0.3:
                elems.append(f"$ORIGIN/{d}")
            else:
                elems.append("{S}/" + d)
        if not chroot and rng.random() < 0.05:
            elems.insert(rng.randrange(len(elems) + 1), "")
        llp = tuple(elems)
    preload: tuple[str, ...] = ()
    if rng.random() < 0.15:
        pl = Lib(key="p", soname="lib{P}p.so",
                 defs=(Def("{P}p_f"),
                       *(Def(c, kind) for c, kind in commons if rng.random() < 0.6)))
        all_libs = (*all_libs, pl)
        pdir = rng.choice(dirs)
        place.append(Place("p", pdir))
        if rng.random() < 0.5:
            preload = ("{S}/" + pdir + "/lib{P}p.so",)
        else:
            preload = ("lib{P}p.so",)
        if rng.random() < 0.15:
            preload = (*preload, "lib{P}nothere.so")
    cache: tuple[str, ...] = ()
    if chroot:
        cache = tuple(rng.sample(dirs, rng.randint(1, 2)))

    dl: Dlopen | None = None
    if rng.random() < 0.3:
        target_place = next((p for p in place if p.key in (keys[0], keys[0] + "r")), None)
        if target_place is not None and not target_place.dir.startswith("/"):
            target = "{S}/" + target_place.dir + "/" + (all_libs_soname(all_libs, target_place))
            others = [p for p in place if p.key in lib_keys and p.key != keys[0]
                      and not p.dir.startswith("/")]
            local: list[str] = []
            glob: list[str] = []
            for p in others:
                if rng.random() < 0.35:
                    path = "{S}/" + p.dir + "/" + all_libs_soname(all_libs, p)
                    (glob if rng.random() < 0.5 else local).append(path)
            dl = Dlopen(target, now=rng.random() < 0.5, local=tuple(local), glob=tuple(glob))
            exe = Exe(rpath=erp if exe_mode < 0.3 else (), runpath=erp if exe_mode > 0.8 else ())
            preload = ()
    return Scenario(name=f"r{seed}", libs=all_libs, place=tuple(place), exe=exe, llp=llp,
                    preload=preload, cache=cache, world=world, dlopen=dl)


def all_libs_soname(libs: Sequence[Lib], p: Place) -> str:
    """The file name a placement gets."""
    if p.file is not None:
        return p.file
    lib = next(x for x in libs if x.key == p.key)
    assert lib.soname is not None
    return lib.soname


# ------------------------------------------------------------------------------- building


def run(cmd: Sequence[str], cwd: Path | None = None) -> None:
    """Run a build command, raising with its output on failure."""
    proc = subprocess.run(list(cmd), cwd=cwd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed:\n{proc.stdout}\n{proc.stderr}")


@functools.cache
def chroot_available() -> bool:
    """True when this process may chroot(2) (root) and gcc is present."""
    if os.geteuid() != 0 or shutil.which("gcc") is None:
        return False
    try:
        proc = subprocess.run(["true"], preexec_fn=lambda: os.chroot("/"), capture_output=True)
    except (OSError, subprocess.SubprocessError):
        return False
    return proc.returncode == 0


def _symver_names(lib: Lib) -> set[str]:
    counts: dict[str, int] = {}
    for d in lib.defs:
        counts[d.name] = counts.get(d.name, 0) + 1
    return {d.name for d in lib.defs if counts[d.name] > 1 or not d.default}


def _cid(name: str, version: str | None) -> str:
    return f"{name}__{version}" if version else name


def c_declarations(refs: Sequence[Ref], defined: set[str]) -> list[str]:
    """extern declarations for references (skipping names the unit defines)."""
    out = []
    seen: set[str] = set()
    for r in refs:
        if r.name in defined or r.name in seen:
            continue
        seen.add(r.name)
        if r.how == "data":
            out.append(f"extern int {r.name};")
        elif r.how == "weak":
            out.append(f"extern int {r.name}(void) __attribute__((weak));")
        else:
            out.append(f"extern int {r.name}(void);")
    return out


def c_uses(refs: Sequence[Ref]) -> list[str]:
    """Statements using every reference (inside a function with `volatile int s`)."""
    out = []
    for i, r in enumerate(refs):
        if r.how == "data":
            out.append(f"  s += {r.name};")
        elif r.how == "addr":
            out.append(f"  {{ int (*volatile p{i})(void) = &{r.name}; s += p{i}(); }}")
        elif r.how == "weak":
            out.append(f"  if ({r.name}) s += {r.name}();")
        else:
            out.append(f"  s += {r.name}();")
    return out


def lib_source(lib: Lib, versioned: bool) -> str:
    """C source of a library build: definitions, then `STEM_all` using every reference."""
    symver = _symver_names(lib) if versioned else set()
    lines = []
    defined = {d.name for d in lib.defs if d.name not in symver}
    lines += c_declarations(lib.refs, defined)
    defs = lib.defs if versioned else tuple({d.name: d for d in lib.defs}.values())
    for i, d in enumerate(defs):
        version = (d.version or lib.versions[0]) if versioned else None
        cid = _cid(d.name, version) if d.name in symver else d.name
        if d.kind == "data":
            lines.append(f"int {cid} = {i + 1};")
        else:
            lines.append(f"int {cid}(void) {{ return {i + 1}; }}")
        if d.name in symver:
            at = "@@" if d.default else "@"
            lines.append(f'__asm__(".symver {cid}, {d.name}{at}{version}");')
    lines.append(f"int {lib.stem}_all(void) {{")
    lines.append("  volatile int s = 0;")
    lines += c_uses(lib.refs)
    lines.append("  return s;")
    lines.append("}")
    return "\n".join(lines) + "\n"


def version_script(lib: Lib) -> str:
    """A version script giving every definition its node (`STEM_all` in the first)."""
    nodes: dict[str, list[str]] = {v: [] for v in lib.versions}
    nodes[lib.versions[0]].append(f"{lib.stem}_all")
    for d in lib.defs:
        v = d.version or lib.versions[0]
        if d.name not in nodes[v]:
            nodes[v].append(d.name)
    text = []
    prev: str | None = None
    for v in lib.versions:
        if not nodes[v]:
            continue
        body = " ".join(f"{n};" for n in nodes[v])
        local = " local: *;" if prev is None else ""
        text.append(f"{v} {{ global: {body}{local} }}" + (f" {prev};" if prev else ";"))
        prev = v
    return "\n".join(text) + "\n"


EXE_MAIN = """
int main(int argc, char **argv) {
  volatile int s = 0;
  puts("START"); fflush(stdout);
  if (argc > 1) {
%s
    for (int i = 2; i < argc; i++) {
      int (*f)(void) = (int (*)(void)) dlsym(RTLD_DEFAULT, argv[i]);
      if (f) s += f();
    }
  }
  puts("END"); fflush(stdout);
  return s == 12345;
}
"""

HOST_SOURCE = r"""
#define _GNU_SOURCE
#include <dlfcn.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
static char *old[256];
static int nold;
static int show(struct dl_phdr_info *info, size_t size, void *data) {
  (void) size; (void) data;
  printf("OBJ %s\n", info->dlpi_name);
  return 0;
}
static int remember(struct dl_phdr_info *info, size_t size, void *data) {
  (void) size; (void) data;
  if (nold < 256) old[nold++] = strdup(info->dlpi_name);
  return 0;
}
static int is_old(const char *name) {
  for (int i = 0; i < nold; i++) if (strcmp(old[i], name) == 0) return 1;
  return 0;
}
int main(int argc, char **argv) {
  void *h = NULL;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (a[0] == 'C') {
      int (*f)(void) = (int (*)(void)) dlsym(h, a + 2);
      if (f == NULL) { printf("NOSYM %s\n", a + 2); fflush(stdout); continue; }
      Dl_info info;
      if (dladdr((void *) f, &info) && is_old(info.dli_fname)) {
        printf("OLD %s\n", a + 2); fflush(stdout); continue;  /* loaded before the target */
      }
      printf("CALL %s\n", a + 2); fflush(stdout);
      f();
      printf("RET %s\n", a + 2); fflush(stdout);
      continue;
    }
    int mode = (a[0] == 'G' || a[0] == 'g') ? RTLD_GLOBAL : RTLD_LOCAL;
    mode |= (a[0] == 'n' || a[0] == 'g') ? RTLD_NOW : RTLD_LAZY;
    fprintf(stderr, "DLOPEN %s\n", a + 2);
    for (int j = 0; j < nold; j++) free(old[j]);
    nold = 0;
    dl_iterate_phdr(remember, NULL);
    h = dlopen(a + 2, mode);
    if (h == NULL) { printf("ERR %s\n", dlerror()); fflush(stdout); return 2; }
    printf("OK %s\n", a + 2);
    dl_iterate_phdr(show, NULL);
    puts("LIST"); fflush(stdout);
  }
  puts("END"); fflush(stdout);
  return 0;
}
"""


def exe_source(exe: Exe) -> str:
    """C source of the executable."""
    lines = ["#define _GNU_SOURCE", "#include <dlfcn.h>", "#include <stdio.h>"]
    defined = {d.name for d in exe.defs}
    lines += c_declarations(exe.refs, defined)
    for i, d in enumerate(exe.defs):
        if d.kind == "data":
            lines.append(f"int {d.name} = {100 + i};")
        else:
            lines.append(f"int {d.name}(void) {{ return {100 + i}; }}")
    uses = "\n".join("  " + u for u in c_uses(exe.refs))
    return "\n".join(lines) + (EXE_MAIN % uses)


@dataclass
class Built:
    """Where a scenario was built: host-side and loader-side (target) paths."""

    scenario: Scenario  # with {P} expanded
    world_root: Path  # sysroot (chroot world) or the host world directory
    host_root: Path  # the scenario directory on this machine
    root: str  # the scenario directory as the loader sees it ({S})
    chroot: bool
    program: str  # target path of the executable or dlopen host
    files: dict[str, Path] = field(default_factory=dict)  # build key -> built file
    problems: list[str] = field(default_factory=list)

    def host(self, target: str) -> str:
        """Host path of a loader-side path."""
        if self.chroot and target.startswith("/"):
            return str(self.world_root) + target
        return target


def expand(scn: Scenario, root: str) -> Scenario:
    """Replace {P} and {S} in every string of a scenario."""
    prefix = scn.prefix

    def sub(value: object) -> object:
        if isinstance(value, str):
            return value.replace("{P}", prefix).replace("{S}", root)
        if isinstance(value, tuple):
            return tuple(sub(v) for v in value)
        if hasattr(value, "__dataclass_fields__"):
            return type(value)(**{k: sub(v) for k, v in value.__dict__.items()})
        return value

    result = sub(scn)
    assert isinstance(result, Scenario)
    return result


def _rpath_flags(rpath: Sequence[str], runpath: Sequence[str]) -> list[str]:
    flags = []
    if rpath:
        flags += ["-Wl,--disable-new-dtags", "-Wl,-rpath," + ":".join(rpath)]
    if runpath:
        flags += ["-Wl,--enable-new-dtags", "-Wl,-rpath," + ":".join(runpath)]
    return flags


class WorldBuilder:
    """Builds a batch of scenarios in one world directory (one sysroot for chroot)."""

    def __init__(self, base: Path, chroot: bool) -> None:
        self.base = base
        self.chroot = chroot
        base.mkdir(parents=True, exist_ok=True)
        self.build_dir = base / ".build"
        self.build_dir.mkdir(exist_ok=True)
        if chroot:
            self._make_sysroot()
        self._host: str | None = None

    def _make_sysroot(self) -> None:
        for path in ("/lib/x86_64-linux-gnu/libc.so.6", RTLD):
            dest = Path(str(self.base) + path)
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(os.path.realpath(path), dest)
        (self.base / "etc").mkdir(exist_ok=True)
        for d in ("usr/lib", "usr/lib/x86_64-linux-gnu", "lib"):
            (self.base / d).mkdir(parents=True, exist_ok=True)

    def host_program(self) -> str:
        """Target path of the shared dlopen host (built once per world)."""
        if self._host is None:
            src = self.build_dir / "host.c"
            src.write_text(HOST_SOURCE)
            out = self.base / "dlhost"
            run(["gcc", "-O0", "-o", str(out), str(src)])
            self._host = "/dlhost" if self.chroot else str(out)
        return self._host

    def build(self, scenarios: Sequence[Scenario]) -> list[Built]:
        """Build and place every scenario; then (chroot) write ld.so.conf and the cache."""
        built = [self._build_one(s) for s in scenarios]
        if self.chroot:
            conf = [d for b in built for d in (self._dir_target(b, c) for c in b.scenario.cache)]
            (self.base / "etc" / "ld.so.conf").write_text("\n".join(conf) + "\n")
            run(["ldconfig", "-X", "-r", str(self.base)])
            for b in built:
                self._place(b, late=True)
        return built

    def _dir_target(self, b: Built, d: str) -> str:
        return d if d.startswith("/") else f"{b.root}/{d}"

    def _build_one(self, raw: Scenario) -> Built:
        host_root = self.base / raw.name
        host_root.mkdir()
        root = f"/{raw.name}" if self.chroot else str(host_root)
        scn = expand(raw, root)
        bdir = self.build_dir / raw.name
        bdir.mkdir()
        files: dict[str, Path] = {}
        stubs: dict[str, Path] = {}
        by_key = {lib.key: lib for lib in scn.libs}

        def stub(key: str) -> Path:
            """A definitions-only build to link against when `key` is not built yet (cycles)."""
            if key in files:
                return files[key]
            if key not in stubs:
                lib = by_key[key]
                stubs[key] = self._compile_lib(
                    Lib(key=key + ".stub", soname=lib.soname, defs=lib.defs,
                        versions=lib.versions), bdir, {}, stub_of=lib)
            return stubs[key]

        order = self._order(scn)
        for key in order:
            lib = by_key[key]
            deps = {k: stub(k) for k in lib.needed}
            files[key] = self._compile_lib(lib, bdir, deps)
        b = Built(scenario=scn, world_root=self.base, host_root=host_root, root=root,
                  chroot=self.chroot, program="", files=files)
        b_files = files
        # Executable or dlopen host
        exe = scn.exe
        if scn.dlopen is None:
            src = bdir / "main.c"
            src.write_text(exe_source(exe))
            out = host_root / "main"
            cmd = ["gcc", "-O0", "-o", str(out), str(src)]
            cmd += ["-fPIE", "-pie"] if exe.pie else ["-fno-pie", "-no-pie"]
            cmd += ["-Wl,--no-as-needed", "-Wl,--allow-shlib-undefined"]
            cmd += [str(b_files[k]) for k in exe.needed]
            cmd += _rpath_flags(exe.rpath, exe.runpath)
            cmd += ["-Wl,-z,now"] if exe.now else []
            cmd += ["-Wl,-z,nodefaultlib"] if exe.nodeflib else []
            cmd += [f"-Wl,--export-dynamic-symbol={d.name}" for d in exe.defs]
            run(cmd)
            b.program = f"{root}/main"
        elif exe.rpath or exe.runpath:
            src = bdir / "host.c"
            src.write_text(HOST_SOURCE)
            out = host_root / "dlhost"
            run(["gcc", "-O0", "-o", str(out), str(src), *_rpath_flags(exe.rpath, exe.runpath)])
            b.program = f"{root}/dlhost"
        else:
            b.program = self.host_program()
        self._place(b, late=False)
        if not self.chroot:
            self._place(b, late=True)
        return b

    @staticmethod
    def _order(scn: Scenario) -> list[str]:
        """Build order: dependencies first where possible (cycles fall back to stubs)."""
        keys = [lib.key for lib in scn.libs]
        deps = {lib.key: [d for d in lib.needed if d in keys] for lib in scn.libs}
        order: list[str] = []
        state: dict[str, int] = {}

        def visit(k: str) -> None:
            if state.get(k):
                return
            state[k] = 1
            for d in deps[k]:
                if not state.get(d):
                    visit(d)
            state[k] = 2
            order.append(k)

        for k in keys:
            visit(k)
        return order

    def _compile_lib(self, lib: Lib, bdir: Path, deps: dict[str, Path],
                     stub_of: Lib | None = None) -> Path:
        out_dir = bdir / lib.key
        out_dir.mkdir()
        out = out_dir / (lib.soname or f"lib{lib.key}.so")
        if lib.junk == "text":
            out.write_text("this is not an ELF file\n")
            return out
        if lib.junk == "empty":
            out.write_bytes(b"")
            return out
        versioned = bool(lib.versions) and not lib.m32
        src = out_dir / "lib.c"
        src.write_text(lib_source(lib, versioned))
        cmd = ["gcc", "-O0", "-shared", "-fPIC", "-o", str(out), str(src)]
        if lib.soname:
            cmd.append(f"-Wl,-soname,{lib.soname}")
        if lib.m32:
            cmd[1:1] = ["-m32", "-nostdlib"]
        if stub_of is not None or lib.nostdlib:
            cmd.append("-nostdlib")
        if versioned:
            vs = out_dir / "lib.map"
            vs.write_text(version_script(lib))
            cmd.append(f"-Wl,--version-script={vs}")
        cmd.append("-Wl,--no-as-needed")
        cmd += [str(deps[k]) for k in lib.needed if k in deps]
        cmd += _rpath_flags(lib.rpath, lib.runpath)
        cmd += ["-Wl,-z,now"] if lib.now else []
        cmd += ["-Wl,-Bsymbolic"] if lib.symbolic else []
        cmd += ["-Wl,-z,nodefaultlib"] if lib.nodeflib else []
        run(cmd)
        if lib.machine is not None:
            data = bytearray(out.read_bytes())
            data[18:20] = lib.machine.to_bytes(2, "little")
            out.write_bytes(bytes(data))
        return out

    def _place(self, b: Built, late: bool) -> None:
        scn = b.scenario
        files = b.files
        for p in scn.place:
            if p.late != late:
                continue
            target_dir = self._dir_target(b, p.dir)
            host_dir = Path(b.host(target_dir))
            host_dir.mkdir(parents=True, exist_ok=True)
            name = p.file or (scn.lib(p.key).soname if p.key else None)
            assert name is not None
            dest = host_dir / name
            if dest.exists() or dest.is_symlink():
                b.problems.append(f"placement collision at {dest}")
                continue
            if p.symlink is not None:
                dest.symlink_to(p.symlink)
            else:
                shutil.copy(files[p.key], dest)


# ------------------------------------------------------------------------------ observing


@dataclass
class Outcome:
    """One real run: did main start / finish, exit status, the loader's error."""

    started: bool
    ended: bool
    rc: int
    error: tuple[str, ...] | None
    stderr: str


@dataclass
class Facts:
    """What a load comes to, in a form both sides can be normalised into."""

    libs: list[tuple[str, str]] = field(default_factory=list)  # (first name, path), load order
    missing: set[str] = field(default_factory=set)
    undefined: set[tuple[str, str]] = field(default_factory=set)  # (referrer, symbol)
    undefined_versions: set[tuple[str, str, str]] = field(default_factory=set)
    versions: set[tuple[str, str, str]] = field(default_factory=set)  # (version, file, requirer)
    noversion: set[tuple[str, str]] = field(default_factory=set)  # (file, requirer)
    bindings: set[tuple[str, str, str | None, str]] = field(default_factory=set)
    fatal: tuple[str, ...] | None = None  # a fatal loader error that stopped the trace
    asserted: bool = False  # ld.so died on an assertion
    crashed: bool = False  # the trace run died on a signal (trace mode without libc)


@dataclass
class Observation:
    """Everything observed of one scenario."""

    facts: Facts
    runs: dict[str, Outcome]
    dl_ok: bool | None = None  # dlopen scenarios: target dlopen succeeded
    dl_error: tuple[str, ...] | None = None
    dl_objects: list[str] = field(default_factory=list)  # new objects of the target dlopen
    dl_call: Outcome | None = None
    dl_prior_failed: bool = False  # an earlier (non-target) dlopen failed: outside the model
    dl_bind_ok: bool = False  # the LD_BIND_NOW=1 run got through the target dlopen


_BINDING = re.compile(
    r"^\s*\d+:\s+binding file (.+?) \[\d+\] to (.+?) \[\d+\]: (?:normal|protected) symbol "
    r"`(.+?)'(?: \[(.+?)\])?$"
)
_TRACE_FOUND = re.compile(r"^\t(\S+) => (\S+) \(0x[0-9a-f]+\)$")
_TRACE_MISSING = re.compile(r"^\t(\S+) => not found$")
_TRACE_DIRECT = re.compile(r"^\t(\S+) \(0x[0-9a-f]+\)$")
_UNDEF_TRACE = re.compile(r"^undefined symbol: (\S+?)(?:, version (\S+))?\t\((.+)\)$")
_VERSION = re.compile(r"^(?:.*?: )?(\S+): version `(.+?)' not found \(required by (.+?)\)$")
_NOVERSION = re.compile(r"^(?:.*?: )?(\S+): no version information available \(required by (.+?)\)$")


def classify_error(text: str) -> tuple[str, ...] | None:
    """The loader's (first) fatal error in stderr or a dlerror() string, normalised."""
    for line in text.splitlines():
        if re.match(r"^\s*\d+:\s", line) or line.startswith("ERROR: ld.so: object"):
            continue
        if "Inconsistency detected by ld.so" in line:
            return ("assert",)
        m = re.search(r"(?:error while loading shared libraries: |^)(\S+): cannot open shared "
                      r"object file(?:: .*)?$", line)
        if m:
            return ("missing-library", m.group(1))
        m = re.search(r"(?:error while loading shared libraries: |^)(\S+): wrong ELF class", line)
        if m:
            return ("missing-library", m.group(1))
        m = re.search(r"(?:error while loading shared libraries: |^)(\S+): "
                      r"(invalid ELF header|file too short)$", line)
        if m:
            return ("unreadable-file", m.group(1))
        m = re.search(r"(?:symbol lookup error: |^)(\S+): undefined symbol: (\S+?)"
                      r"(?:, version (\S+))?$", line)
        if m:
            return ("unresolved", m.group(1), m.group(2), m.group(3) or "")
        m = _VERSION.match(line)
        if m:
            return ("missing-version", m.group(2), m.group(1), m.group(3))
    return None


def _runner(b: Built) -> Callable[[list[str], dict[str, str]], subprocess.CompletedProcess[str]]:
    def go(argv: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
        cwd = b.root
        if b.chroot:
            base = str(b.world_root)

            def enter() -> None:
                os.chroot(base)
                os.chdir(cwd)

            return subprocess.run(argv, env=env, preexec_fn=enter, capture_output=True,
                                  text=True, timeout=30)
        return subprocess.run(argv, env=env, cwd=cwd, capture_output=True, text=True,
                              timeout=30)
    return go


def base_env(scn: Scenario, extra: dict[str, str] | None = None) -> dict[str, str]:
    """The environment of the real process (also given to the model)."""
    env = {"PATH": "/usr/bin:/bin"}
    if scn.llp is not None:
        env["LD_LIBRARY_PATH"] = ":".join(scn.llp)
    if scn.preload:
        env["LD_PRELOAD"] = " ".join(scn.preload)
    env.update(extra or {})
    return env


def _outcome(proc: subprocess.CompletedProcess[str]) -> Outcome:
    out = proc.stdout.splitlines()
    return Outcome("START" in out, "END" in out, proc.returncode, classify_error(proc.stderr),
                   proc.stderr)


def _bindings(text: str, within: str) -> set[tuple[str, str, str | None, str]]:
    found = set()
    for line in text.splitlines():
        m = _BINDING.match(line)
        if m and m.group(1).startswith(within):
            found.add((m.group(1), m.group(3), m.group(4), m.group(2)))
    return found


def observe(b: Built) -> Observation:
    """Run the real loader on a built scenario."""
    scn = b.scenario
    go = _runner(b)
    if scn.dlopen is not None:
        return _observe_dlopen(b, go)
    calls = ["call", *sorted({f"{lib.stem}_all" for lib in scn.libs if lib.soname})]
    facts = Facts()
    proc = go([b.program], base_env(scn, {
        "LD_TRACE_LOADED_OBJECTS": "1", "LD_WARN": "1", "LD_BIND_NOW": "1",
        "LD_DEBUG": "bindings"}))
    for line in proc.stdout.splitlines():
        m = _TRACE_FOUND.match(line)
        if m:
            if m.group(2) != RTLD and m.group(1) != VDSO:
                facts.libs.append((m.group(1), m.group(2)))
            continue
        m = _TRACE_MISSING.match(line)
        if m:
            facts.missing.add(m.group(1))
            continue
        m = _TRACE_DIRECT.match(line)
        if m and m.group(1) not in (RTLD, VDSO):
            facts.libs.append((m.group(1), m.group(1)))
    for line in proc.stderr.splitlines():
        m = _UNDEF_TRACE.match(line)
        if m:
            facts.undefined.add((m.group(3), m.group(1)))
            if m.group(2):
                facts.undefined_versions.add((m.group(3), m.group(1), m.group(2)))
            continue
        m = _VERSION.match(line)
        if m:
            facts.versions.add((m.group(2), m.group(1), m.group(3)))
            continue
        m = _NOVERSION.match(line)
        if m:
            facts.noversion.add((m.group(1), m.group(2)))
            continue
        if "Inconsistency detected by ld.so" in line:
            facts.asserted = True
    facts.bindings = _bindings(proc.stderr, b.root + "/")
    facts.crashed = proc.returncode < 0
    if proc.returncode > 0 and not facts.libs and not facts.asserted:
        facts.fatal = classify_error(proc.stderr) or ("rc", str(proc.returncode))
    runs = {
        "plain": _outcome(go([b.program], base_env(scn))),
        "call": _outcome(go([b.program, *calls], base_env(scn))),
        "now": _outcome(go([b.program, *calls], base_env(scn, {"LD_BIND_NOW": "1"}))),
    }
    return Observation(facts, runs)


def _dl_args(d: Dlopen, now: bool) -> list[str]:
    args = [f"L:{p}" for p in d.local] + [f"G:{p}" for p in d.glob]
    args.append(("n:" if now else "l:") + d.target)
    return args


def _observe_dlopen(b: Built, go: Callable[..., subprocess.CompletedProcess[str]]) -> Observation:
    scn = b.scenario
    d = scn.dlopen
    assert d is not None
    calls = [f"C:{lib.stem}_all" for lib in scn.libs if lib.soname]
    obs = Observation(Facts(), {})
    proc = go([b.program, *_dl_args(d, d.now), *calls], base_env(scn))
    lines = proc.stdout.splitlines()
    lists: list[list[str]] = []
    current: list[str] = []
    for line in lines:
        if line.startswith("OBJ "):
            current.append(line[4:])
        elif line == "LIST":
            lists.append(current)
            current = []
    target_line = f"OK {d.target}"
    if target_line in lines:
        obs.dl_ok = True
        before = set(lists[-2]) if len(lists) >= 2 else set()
        obs.dl_objects = [o for o in lists[-1] if o not in before and o.startswith(b.root + "/")]
    else:
        err = next((ln[4:] for ln in lines if ln.startswith("ERR ")), None)
        obs.dl_prior_failed = sum(ln.startswith("OK ") for ln in lines) < len(d.local) + len(d.glob)
        obs.dl_ok = False
        obs.dl_error = classify_error(err) if err is not None else ("no-output", proc.stderr)
    call_lines = [ln for ln in lines if ln.startswith(("CALL ", "RET "))]
    called = [ln for ln in call_lines if ln.startswith("CALL ")]
    finished = "END" in lines
    obs.dl_call = Outcome(bool(called), finished, proc.returncode,
                          classify_error(proc.stderr), proc.stderr)
    if obs.dl_ok:
        obs.dl_bind_ok = False
        bind = go([b.program, *_dl_args(d, d.now)],
                  base_env(scn, {"LD_BIND_NOW": "1", "LD_DEBUG": "bindings"}))
        if f"OK {d.target}" in bind.stdout.splitlines():
            obs.dl_bind_ok = True
            marker = f"DLOPEN {d.target}"
            tail = bind.stderr[bind.stderr.rindex(marker):] if marker in bind.stderr else ""
            obs.facts.bindings = {x for x in _bindings(tail, b.root + "/")
                                  if x[0] in obs.dl_objects}
    return obs


# ----------------------------------------------------------------------------- predicting


@dataclass
class Prediction:
    """The model's reports, normalised."""

    facts: Facts
    load_errors: set[tuple[str, ...]]
    call_errors: set[tuple[str, ...]]
    now_errors: set[tuple[str, ...]]
    report: LoadReport
    dl_objects: list[str] = field(default_factory=list)
    requesters: dict[str, set[str]] = field(default_factory=dict)  # missing name -> requesters
    # The scan's binding path (record_bindings=False: cached array binding), LD_BIND_NOW=1.
    scan_errors: set[tuple[str, ...]] = field(default_factory=set)


_IMAGES = ImageCache()


def _problem_key(p: Problem) -> tuple[str, ...]:
    if p.kind == ProblemKind.MISSING_LIBRARY:
        return ("missing-library", p.library or "")
    if p.kind == ProblemKind.MISSING_VERSION:
        return ("missing-version", p.version or "", p.library or "", p.file)
    if p.kind == ProblemKind.LOADER_ASSERTION:
        return ("assert",)
    if p.kind == ProblemKind.UNRESOLVED_SYMBOL:
        return ("unresolved", p.file, p.symbol or "", p.version or "")
    if p.kind in (ProblemKind.UNREADABLE_FILE, ProblemKind.WRONG_ARCHITECTURE):
        return ("unreadable-file", p.tried[-1].path if p.tried else p.library or "")
    return (p.kind, p.message)


def model_env(b: Built, extra: dict[str, str] | None = None) -> LoadEnvironment:
    """The model's environment for a built scenario."""
    overrides = [f"{k}={v}" for k, v in base_env(b.scenario, extra).items()]
    env = make_environment(overrides=overrides, clear=True,
                           root=str(b.world_root) if b.chroot else None)
    if b.chroot:
        try:  # the sysroot runs on this CPU: same glibc-hwcaps subdirectories
            env.cpu = read_cpu_features()
        except (OSError, ValueError):
            env.cpu = None
    return env


def _errors(report: LoadReport, when: Iterable[str]) -> set[tuple[str, ...]]:
    wanted = set(when)
    return {_problem_key(p) for p in report.problems
            if p.severity == "error" and p.when in wanted}


def predict(b: Built) -> Prediction:
    """Run the model on a built scenario (cwd: the scenario root, as the real process)."""
    scn = b.scenario
    old = os.getcwd()
    os.chdir(b.host_root)
    try:
        if scn.dlopen is not None:
            return _predict_dlopen(b)
        report = LoaderModel(model_env(b), _IMAGES).load_executable(b.program)
        now_report = LoaderModel(model_env(b, {"LD_BIND_NOW": "1"}), _IMAGES).load_executable(
            b.program)
        scan_report = LoaderModel(model_env(b, {"LD_BIND_NOW": "1"}), _IMAGES,
                                  record_bindings=False).load_executable(b.program)
    finally:
        os.chdir(old)
    facts = Facts()
    for lib in report.libraries:
        if lib.path is not None and lib.found_via != FoundVia.ALREADY_LOADED and lib.path != RTLD:
            facts.libs.append((lib.name, lib.path))
    within = b.root + "/"
    for p in now_report.problems:
        if p.severity != "error":
            if p.kind == ProblemKind.NO_VERSION_INFORMATION:
                m = _NOVERSION.match(p.message)
                if m:
                    facts.noversion.add((m.group(1), m.group(2)))
            continue
        if p.kind == ProblemKind.MISSING_LIBRARY:
            facts.missing.add(p.library or "")
        elif p.kind == ProblemKind.MISSING_VERSION:
            facts.versions.add((p.version or "", p.library or "", p.file))
        elif p.kind == ProblemKind.UNRESOLVED_SYMBOL:
            facts.undefined.add((p.file, p.symbol or ""))
            if p.version:
                facts.undefined_versions.add((p.file, p.symbol or "", p.version))
        elif p.kind == ProblemKind.LOADER_ASSERTION:
            facts.asserted = True
        if (p.kind in (ProblemKind.UNREADABLE_FILE, ProblemKind.WRONG_ARCHITECTURE) and p.when == When.LOAD
                and facts.fatal is None):
            facts.fatal = _problem_key(p)  # ld.so stops at the first one
    facts.bindings = {(x.referrer, x.symbol, x.version, x.provider) for x in now_report.bindings
                      if x.provider is not None and x.referrer.startswith(within)}
    requesters: dict[str, set[str]] = {}
    for x in now_report.libraries:
        if x.path is None:
            requesters.setdefault(x.name, set()).update(x.needed_by)
    return Prediction(facts, _errors(report, [When.LOAD]),
                      _errors(report, [When.FIRST_CALL]),
                      _errors(now_report, [When.LOAD, When.FIRST_CALL]), report,
                      requesters=requesters,
                      scan_errors=_errors(scan_report, [When.LOAD, When.FIRST_CALL]))


def _predict_dlopen(b: Built) -> Prediction:
    scn = b.scenario
    d = scn.dlopen
    assert d is not None

    def host(now: bool) -> Host:
        return Host(HostKind.DLOPEN, executable=b.program, now=now, preload=d.glob, loaded=d.local)

    report = LoaderModel(model_env(b), _IMAGES).load_dlopen(d.target, host(d.now))
    now_report = LoaderModel(model_env(b, {"LD_BIND_NOW": "1"}), _IMAGES).load_dlopen(
        d.target, host(True))
    scan_report = LoaderModel(model_env(b, {"LD_BIND_NOW": "1"}), _IMAGES,
                              record_bindings=False).load_dlopen(d.target, host(True))
    facts = Facts()
    within = b.root + "/"
    facts.bindings = {(x.referrer, x.symbol, x.version, x.provider) for x in now_report.bindings
                      if x.provider is not None and x.referrer.startswith(within)}
    pred = Prediction(facts, _errors(report, [When.LOAD]),
                      _errors(report, [When.FIRST_CALL]),
                      _errors(now_report, [When.LOAD, When.FIRST_CALL]), report,
                      scan_errors=_errors(scan_report, [When.LOAD, When.FIRST_CALL]))
    prior = set()
    for name in (*d.local, *d.glob):
        lib = next((x for x in report.libraries if x.name == name and x.path), None)
        if lib is not None:
            prior.add(lib.path)
    # objects new with the target: everything after the last earlier dlopen's closure
    order = [p for p in report.load_order if p.startswith(within)]
    target_lib = next((x for x in report.libraries if x.name == d.target), None)
    if (target_lib is not None and target_lib.path in order
            and target_lib.found_via != FoundVia.ALREADY_LOADED):
        pred.dl_objects = order[order.index(target_lib.path):]
    return pred


# ------------------------------------------------------------------------------ comparing

ASPECTS = ("paths", "missing", "loads", "unresolved", "versions", "noversion", "timing",
           "bindings", "first-error", "scan")


def compare(obs: Observation, pred: Prediction) -> dict[str, list[str]]:
    """Per aspect, the disagreements (empty list: agreement; aspect absent: not compared)."""
    if pred.report.target and obs.runs:
        return _compare_exec(obs, pred)
    return _compare_dlopen(obs, pred)


def _diff(a: object, b: object, what: str) -> list[str]:
    if a == b:
        return []
    if isinstance(a, set) and isinstance(b, set):
        return [f"{what}: real-only {sorted(a - b, key=str)}; model-only {sorted(b - a, key=str)}"]
    return [f"{what}: real {a!r} != model {b!r}"]


def _compare_exec(obs: Observation, pred: Prediction) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    real, model = obs.facts, pred.facts
    plain = obs.runs["plain"]
    if real.crashed:
        pass  # ld.so's trace mode crashes when libc itself is missing: the runs below decide
    elif real.fatal is not None or model.fatal is not None:
        out["paths"] = _diff(real.fatal, model.fatal, "fatal error stopping the load")
    else:
        out["paths"] = _diff(real.libs, model.libs, "libraries (name, path) in load order")
        out["missing"] = _diff(real.missing, model.missing, "missing libraries")
        out["unresolved"] = _diff(real.asserted, model.asserted, "ld.so assertion in check_match")
        # Trace mode replaces a missing library by a fake map and then looks up the
        # references of its requesters without their versions (dl-version.c skips faked
        # maps): a normal run stops at the missing library, so leave those requesters out.
        faked = {r for name in real.missing for r in pred.requesters.get(name, ())}
        if faked:
            real = Facts(undefined={u for u in real.undefined if u[0] not in faked},
                         bindings={x for x in real.bindings if x[0] not in faked},
                         missing=real.missing, asserted=real.asserted)
            model = Facts(undefined={u for u in model.undefined if u[0] not in faked},
                          bindings={x for x in model.bindings if x[0] not in faked},
                          missing=model.missing, asserted=model.asserted)
        if not real.asserted:
            out["unresolved"] += _diff(real.undefined, model.undefined, "undefined symbols")
            if not real.missing:  # trace mode drops versions of references to faked maps
                out["unresolved"] += _diff(real.undefined_versions, model.undefined_versions,
                                           "undefined symbol versions")
            if real.missing:
                # A reference whose verneed names a library that trace mode faked as "not
                # found" is looked up without its version: compare providers only.
                out["bindings"] = _diff({x[:2] + x[3:] for x in real.bindings},
                                        {x[:2] + x[3:] for x in model.bindings}, "bindings")
            else:
                out["bindings"] = _diff(real.bindings, model.bindings, "bindings")
        # Version checks against a name that trace mode faked are skipped (dl-version.c).
        versions = {v for v in pred.facts.versions
                    if os.path.basename(v[1]) not in obs.facts.missing}
        out["versions"] = _diff(obs.facts.versions, versions, "missing versions")
        out["noversion"] = _diff(obs.facts.noversion, pred.facts.noversion,
                                 "no version information")
    out["loads"] = _diff(plain.started, not pred.load_errors, "main started")
    timing: list[str] = []
    call = obs.runs["call"]
    want_call = "load" if pred.load_errors else ("call" if pred.call_errors else "ok")
    got_call = "load" if not call.started else ("ok" if call.ended else "call")
    timing += _diff(got_call, want_call, "lazy run with calls fails at")
    now = obs.runs["now"]
    want_now = "load" if pred.now_errors else "ok"
    got_now = "load" if not now.started else ("ok" if now.ended else "call")
    timing += _diff(got_now, want_now, "LD_BIND_NOW run fails at")
    out["timing"] = timing
    # The scan binds through cached arrays, not reference by reference: the LD_BIND_NOW
    # run must agree with it too, and so must its undefined symbols (check_match's
    # assertion is only modelled reference by reference).
    if not real.asserted:
        out["scan"] = _diff(got_now, "load" if pred.scan_errors else "ok",
                            "LD_BIND_NOW run fails at (scan binding)")
        if not real.crashed and real.fatal is None and model.fatal is None and not real.missing:
            scan_undefined = {(e[1], e[2]) for e in pred.scan_errors if e[0] == "unresolved"}
            out["scan"] += _diff(real.undefined, scan_undefined, "undefined symbols (scan binding)")
    first: list[str] = []
    for label, run_, allowed in (("plain", plain, pred.load_errors),
                                 ("call", call, pred.load_errors | pred.call_errors),
                                 ("now", now, pred.now_errors)):
        if run_.ended:
            continue
        if run_.error is None or run_.error not in allowed:
            first.append(f"{label} run error {run_.error} not among model errors "
                         f"{sorted(allowed)} (stderr: {run_.stderr.strip()[-300:]!r})")
    out["first-error"] = first
    return out


def _compare_dlopen(obs: Observation, pred: Prediction) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    if obs.dl_prior_failed:
        return out  # the model takes earlier dlopens as given: nothing to compare
    want_ok = not pred.load_errors
    out["loads"] = _diff(obs.dl_ok, want_ok, "dlopen succeeded")
    if obs.dl_ok and want_ok:
        out["paths"] = _diff(obs.dl_objects, pred.dl_objects, "new objects in load order")
        if obs.dl_bind_ok:
            out["bindings"] = _diff(obs.facts.bindings, pred.facts.bindings,
                                    "bindings (RTLD_NOW)")
        # LD_BIND_NOW also binds the earlier dlopens, which the model takes as given: compare
        # the scan's binding with the reference-at-a-time model (checked above) instead.
        out["scan"] = _diff(pred.now_errors, pred.scan_errors, "RTLD_NOW errors (scan binding)")
        call = obs.dl_call
        assert call is not None
        want = "call" if pred.call_errors else "ok"
        got = "ok" if call.ended else "call"
        out["timing"] = _diff(got, want, "calls after dlopen fail")
        if not call.ended:
            out["first-error"] = ([] if call.error in pred.call_errors else
                                  [f"call error {call.error} not among {sorted(pred.call_errors)}"])
    elif not obs.dl_ok:
        out["first-error"] = ([] if obs.dl_error in pred.load_errors else
                              [f"dlerror {obs.dl_error} not among {sorted(pred.load_errors)}"])
    return out


# --------------------------------------------------------------------------- expectations


def _run_state(o: Outcome) -> str:
    return "load" if not o.started else ("ok" if o.ended else "call")


def check_expectations(b: Built, obs: Observation) -> list[str]:
    """What a hand-written scenario says the real loader does, checked against the observation.

    Forms ({P}/{S} already expanded): `path:NAME=PATH`, `missing:NAME`, `plain|call|now:STATE`
    (STATE: ok, load = dies before main, call = dies at a call), `error:KIND` (plain run),
    `bind:REFERRER|SYMBOL|PROVIDER`, `nobind:REFERRER|SYMBOL`, `dl:ok|fail`, `dlerr:KIND`,
    `dlcall:ok|call`, `assert`.
    """
    failures = []
    real = obs.facts
    for item in b.scenario.expect:
        what, _, arg = item.partition(":")
        ok = True
        if what == "path":
            name, _, path = arg.partition("=")
            ok = (name, path) in real.libs or (what == "path" and path in obs.dl_objects)
        elif what == "missing":
            ok = arg in real.missing
        elif what in ("plain", "call", "now"):
            ok = _run_state(obs.runs[what]) == arg
        elif what == "error":
            err = obs.runs["plain"].error
            ok = err is not None and err[0] == arg
        elif what in ("bind", "nobind"):
            ref, sym, prov = [*arg.split("|"), ""][:3]
            hits = {x[3] for x in real.bindings if x[0] == ref and x[1] == sym}
            ok = prov in hits if what == "bind" else not hits
        elif what == "dl":
            ok = obs.dl_ok is (arg == "ok")
        elif what == "dlerr":
            ok = obs.dl_error is not None and obs.dl_error[0] == arg
        elif what == "dlcall":
            ok = obs.dl_call is not None and (obs.dl_call.ended == (arg == "ok"))
        elif what == "assert":
            ok = real.asserted or any(o.error == ("assert",) for o in obs.runs.values())
        else:
            raise ValueError(f"unknown expectation {item!r}")
        if not ok:
            failures.append(f"expected {item}")
    return failures


# --------------------------------------------------------------------- hand-written scenarios


def F(name: str, version: str | None = None, default: bool = True) -> Def:
    """A function definition named {P}name."""
    return Def("{P}" + name, "func", version, default)


def D(name: str, version: str | None = None) -> Def:
    """A data definition named {P}name."""
    return Def("{P}" + name, "data", version)


def call(name: str) -> Ref:
    """A PLT call of {P}name."""
    return Ref("{P}" + name, "call")


def addr(name: str) -> Ref:
    """Taking the address of function {P}name (GLOB_DAT)."""
    return Ref("{P}" + name, "addr")


def data(name: str) -> Ref:
    """Reading variable {P}name (GLOB_DAT, or a copy relocation in an executable)."""
    return Ref("{P}" + name, "data")


def weak(name: str) -> Ref:
    """A weak reference to function {P}name."""
    return Ref("{P}" + name, "weak")


def lib(key: str, *defs: Def, **kw: object) -> Lib:
    """Library `key` with soname lib{P}key.so; `defs` default to {P}key_f and {P}key_d."""
    soname = kw.pop("soname", f"lib{{P}}{key}.so")
    return Lib(key=key, soname=soname,  # type: ignore[arg-type]
               defs=defs or (F(key + "_f"), D(key + "_d")), **kw)  # type: ignore[arg-type]


def _chain() -> tuple[Lib, ...]:
    return (lib("a", needed=("b",), refs=(call("b_f"),)),
            lib("b", needed=("c",), refs=(data("c_d"),)),
            lib("c", needed=("d",), refs=(addr("d_f"),)),
            lib("d"))


def _exe(*refs: Ref, needed: tuple[str, ...] = ("a",), **kw: object) -> Exe:
    return Exe(refs=refs, needed=needed, **kw)  # type: ignore[arg-type]


P = "{P}"


def features() -> tuple[Scenario, ...]:
    """One named scenario per loader feature the oracle must cover whatever the random draw."""
    V1, V2 = "{P}V_1", "{P}V_2"
    vlib_old = lib("v", F("v_f", V1), D("v_d", V1), versions=(V1,))
    vlib_new = Lib("vn", "lib{P}v.so", (F("v_f", V1, default=False), F("v_f", V2), D("v_d", V1),
                                        F("v_new", V2)), versions=(V1, V2))
    out = [
        Scenario("chain_rpath", _chain(), tuple(Place(k, "rp") for k in "abcd"),
                 _exe(call("a_f"), rpath=("{S}/rp",)),
                 expect=("path:lib{P}d.so={S}/rp/lib{P}d.so", "call:ok",
                         "bind:{S}/rp/lib{P}c.so|{P}d_f|{S}/rp/lib{P}d.so")),
        Scenario("chain_runpath_not_inherited", _chain(), tuple(Place(k, "rp") for k in "abcd"),
                 _exe(call("a_f"), runpath=("{S}/rp",)),
                 expect=("missing:lib{P}b.so", "error:missing-library", "plain:load")),
        Scenario("diamond", (lib("a", needed=("c",), refs=(call("c_f"),)),
                             lib("b", needed=("c",), refs=(data("c_d"),)), lib("c")),
                 (Place("a", "d1"), Place("b", "d1"), Place("c", "d2"), Place("c", "d1")),
                 _exe(call("a_f"), call("b_f"), needed=("a", "b"), rpath=("{S}/d2", "{S}/d1")),
                 expect=("path:lib{P}c.so={S}/d2/lib{P}c.so", "call:ok")),
        Scenario("cycle", (lib("a", needed=("b",), refs=(call("b_f"),)),
                           lib("b", needed=("a",), refs=(call("a_f"), data("a_d")))),
                 (Place("a", "d"), Place("b", "d")), _exe(call("a_f"), runpath=("{S}/d",)),
                 llp=("{S}/d",), expect=("path:lib{P}b.so={S}/d/lib{P}b.so", "call:ok")),
        Scenario("rpath_beats_llp", (lib("a"),), (Place("a", "rp"), Place("a", "llp")),
                 _exe(call("a_f"), rpath=("{S}/rp",)), llp=("{S}/llp",),
                 expect=("path:lib{P}a.so={S}/rp/lib{P}a.so",)),
        Scenario("llp_beats_runpath", (lib("a"),), (Place("a", "rp"), Place("a", "llp")),
                 _exe(call("a_f"), runpath=("{S}/rp",)), llp=("{S}/llp",),
                 expect=("path:lib{P}a.so={S}/llp/lib{P}a.so",)),
        Scenario("lib_runpath_hides_exe_rpath",
                 (lib("a", needed=("b",), runpath=("{S}/nowhere",), refs=(call("b_f"),)),
                  lib("b")),
                 (Place("a", "rp"), Place("b", "rp")), _exe(call("a_f"), rpath=("{S}/rp",)),
                 expect=("missing:lib{P}b.so", "plain:load")),
        Scenario("rpath_chain_through_loader",
                 (lib("a", needed=("b",), rpath=("{S}/ra",), refs=(call("b_f"),)),
                  lib("b", needed=("c",), refs=(call("c_f"),)), lib("c")),
                 (Place("a", "re"), Place("b", "ra"), Place("c", "ra")),
                 _exe(call("a_f"), rpath=("{S}/re",)),
                 expect=("path:lib{P}c.so={S}/ra/lib{P}c.so", "call:ok")),
        Scenario("origin_rpath",
                 (lib("a", needed=("b",), rpath=("$ORIGIN/../dep",), refs=(call("b_f"),)),
                  lib("b")),
                 (Place("a", "lib"), Place("b", "dep")), _exe(call("a_f"), rpath=("{S}/lib",)),
                 expect=("path:lib{P}b.so={S}/lib/../dep/lib{P}b.so", "call:ok")),
        Scenario("origin_through_symlink",
                 (lib("a", needed=("b",), runpath=("$ORIGIN/dep",), refs=(call("b_f"),)),
                  lib("b")),
                 (Place("a", "real"), Place("", "link", file="lib{P}a.so",
                                            symlink="../real/lib{P}a.so"),
                  Place("b", "link/dep")),
                 _exe(call("a_f"), rpath=("{S}/link",)),
                 expect=("path:lib{P}a.so={S}/link/lib{P}a.so",
                         "path:lib{P}b.so={S}/link/dep/lib{P}b.so")),
        Scenario("exe_origin_rpath", (lib("a"),), (Place("a", "lib"),),
                 _exe(call("a_f"), rpath=("$ORIGIN/lib",)),
                 expect=("path:lib{P}a.so={S}/lib/lib{P}a.so",)),
        Scenario("llp_origin_relative_empty", (lib("a", needed=("b", "c"),
                                                   refs=(call("b_f"), call("c_f"))),
                                               lib("b"), lib("c")),
                 (Place("a", "llp"), Place("b", "rel"), Place("c", ".")),
                 _exe(call("a_f")), llp=("$ORIGIN/llp", "rel", ""),
                 expect=("path:lib{P}a.so={S}/llp/lib{P}a.so", "path:lib{P}b.so=rel/lib{P}b.so",
                         "path:lib{P}c.so=lib{P}c.so")),
        Scenario("origin_of_relative_name",
                 (lib("a", needed=("b",), runpath=("$ORIGIN/dep",), refs=(call("b_f"),)),
                  lib("b")),
                 (Place("a", "rel"), Place("b", "rel/dep")), _exe(call("a_f")), llp=("rel",),
                 expect=("path:lib{P}a.so=rel/lib{P}a.so",
                         "path:lib{P}b.so={S}/rel/dep/lib{P}b.so")),
        Scenario("path_spelling", (lib("a"), lib("b")), (Place("a", "rp"), Place("b", "rq")),
                 _exe(call("a_f"), call("b_f"), needed=("a", "b"),
                      rpath=("{S}/./rp//", "{S}//rq")),
                 expect=("path:lib{P}a.so={S}/./rp/lib{P}a.so",
                         "path:lib{P}b.so={S}//rq/lib{P}b.so")),
        Scenario("preload_interposes", (lib("a", F("a_f"), F("common0")),
                                        lib("p", F("p_f"), F("common0"))),
                 (Place("a", "d"), Place("p", "d")),
                 _exe(call("common0"), call("a_f"), rpath=("{S}/d",)), preload=("lib{P}p.so",),
                 llp=("{S}/d",),
                 expect=("bind:{S}/main|{P}common0|{S}/d/lib{P}p.so", "call:ok")),
        Scenario("preload_path_with_dependency",
                 (lib("a"), lib("p", needed=("q",), refs=(call("q_f"),)), lib("q")),
                 (Place("a", "d"), Place("p", "pl"), Place("q", "d")),
                 _exe(call("a_f"), rpath=("{S}/d",)), preload=("{S}/pl/lib{P}p.so",),
                 expect=("path:{S}/pl/lib{P}p.so={S}/pl/lib{P}p.so",
                         "path:lib{P}q.so={S}/d/lib{P}q.so", "call:ok")),
        Scenario("preload_tab_is_part_of_the_name",
                 (lib("a", F("a_f"), F("common0")), lib("p", F("p_f"), F("common0")),
                  lib("q", F("q_f"), F("common0"))),
                 (Place("a", "d"), Place("p", "d"), Place("q", "d")),
                 _exe(call("common0"), call("a_f"), rpath=("{S}/d",)), llp=("{S}/d",),
                 preload=("lib{P}p.so\tlib{P}q.so", "lib{P}q.so"),
                 expect=("bind:{S}/main|{P}common0|{S}/d/lib{P}q.so", "call:ok")),
        Scenario("preload_missing_ignored", (lib("a"),), (Place("a", "d"),),
                 _exe(call("a_f"), rpath=("{S}/d",)), preload=("lib{P}nothere.so",),
                 expect=("plain:ok", "call:ok")),
        Scenario("versions_old_binary_new_lib", (vlib_old, vlib_new),
                 (Place("vn", "d"),), _exe(call("v_f"), data("v_d"), needed=("v",),
                                           rpath=("{S}/d",)),
                 expect=("call:ok", "bind:{S}/main|{P}v_f|{S}/d/lib{P}v.so")),
        Scenario("versions_missing_node", (vlib_old, vlib_new),
                 (Place("v", "d"),), _exe(call("v_new"), needed=("vn",), rpath=("{S}/d",)),
                 expect=("error:missing-version", "plain:load")),
        Scenario("versions_hidden_only_for_unversioned_ref",
                 (lib("h"), Lib("hv", "lib{P}h.so", (D("h_d", V1), F("h_f", V2, default=False)),
                                versions=(V1, V2))),
                 (Place("hv", "d"),), _exe(call("h_f"), needed=("h",), rpath=("{S}/d",)),
                 expect=("plain:ok", "call:call", "now:load")),
        Scenario("versions_unversioned_lib_no_versym_asserts",
                 (vlib_old, Lib("vu", "lib{P}v.so", (F("v_f"), D("v_d")), nostdlib=True)),
                 (Place("vu", "d"),), _exe(call("v_f"), needed=("v",), rpath=("{S}/d",)),
                 expect=("assert", "plain:ok", "call:call", "now:load")),
        Scenario("versions_unversioned_lib_with_versym",
                 (vlib_old, Lib("vu", "lib{P}v.so", (F("v_f"), D("v_d")))),
                 (Place("vu", "d"),), _exe(call("v_f"), data("v_d"), needed=("v",),
                                           rpath=("{S}/d",)),
                 expect=("call:ok", "bind:{S}/main|{P}v_f|{S}/d/lib{P}v.so")),
        Scenario("weak_undefined_ok", (lib("a", F("a_f"), refs=(weak("ghost"),)),),
                 (Place("a", "d"),), _exe(call("a_f"), rpath=("{S}/d",)),
                 expect=("plain:ok", "call:ok", "now:ok", "nobind:{S}/d/lib{P}a.so|{P}ghost")),
        Scenario("unresolved_data_fails_at_load", (lib("a", F("a_f"), refs=(data("ghost"),)),),
                 (Place("a", "d"),), _exe(call("a_f"), rpath=("{S}/d",)),
                 expect=("plain:load", "error:unresolved")),
        Scenario("unresolved_function_address_fails_at_load",
                 (lib("a", F("a_f"), refs=(addr("ghost"),)),),
                 (Place("a", "d"),), _exe(call("a_f"), rpath=("{S}/d",)),
                 expect=("plain:load",)),
        Scenario("unresolved_plt_is_lazy", (lib("a", F("a_f"), refs=(call("ghost"),)),),
                 (Place("a", "d"),), _exe(call("a_f"), rpath=("{S}/d",)),
                 expect=("plain:ok", "call:call", "now:load")),
        Scenario("lib_z_now", (lib("a", F("a_f"), refs=(call("ghost"),), now=True),),
                 (Place("a", "d"),), _exe(call("a_f"), rpath=("{S}/d",)),
                 expect=("plain:load",)),
        Scenario("exe_z_now", (lib("a", F("a_f"), F("a_g")), lib("ar", F("a_f"),
                                                                soname="lib{P}a.so")),
                 (Place("ar", "d"),), _exe(call("a_f"), call("a_g"), rpath=("{S}/d",), now=True),
                 expect=("plain:load",)),
        Scenario("exe_lazy_missing_symbol", (lib("a", F("a_f"), F("a_g")),
                                             lib("ar", F("a_f"), soname="lib{P}a.so")),
                 (Place("ar", "d"),), _exe(call("a_f"), call("a_g"), rpath=("{S}/d",)),
                 expect=("plain:ok", "call:call", "now:load")),
        Scenario("interposition_first_in_scope",
                 (lib("a", F("a_f"), F("common0")),
                  lib("b", F("b_f"), F("common0"), refs=(call("common0"),))),
                 (Place("a", "d"), Place("b", "d")),
                 _exe(call("a_f"), call("b_f"), needed=("a", "b"), rpath=("{S}/d",)),
                 expect=("bind:{S}/d/lib{P}b.so|{P}common0|{S}/d/lib{P}a.so",)),
        Scenario("exe_interposes", (lib("a", F("a_f"), F("common0"), refs=(call("common0"),)),),
                 (Place("a", "d"),),
                 _exe(call("a_f"), rpath=("{S}/d",), defs=(F("common0"),)),
                 expect=("bind:{S}/d/lib{P}a.so|{P}common0|{S}/main",)),
        Scenario("symbolic_binds_locally",
                 (lib("a", F("a_f"), F("common0"), refs=(call("common0"),), symbolic=True),),
                 (Place("a", "d"),), _exe(call("a_f"), rpath=("{S}/d",), defs=(F("common0"),)),
                 expect=("call:ok", "nobind:{S}/d/lib{P}a.so|{P}common0")),
        Scenario("copy_reloc_nonpie", (lib("a", F("a_f"), D("a_d"), refs=(data("a_d"),)),),
                 (Place("a", "d"),), _exe(data("a_d"), call("a_f"), rpath=("{S}/d",), pie=False),
                 expect=("bind:{S}/d/lib{P}a.so|{P}a_d|{S}/main",
                         "bind:{S}/main|{P}a_d|{S}/d/lib{P}a.so")),
        Scenario("copy_reloc_pie", (lib("a", F("a_f"), D("a_d"), refs=(data("a_d"),)),),
                 (Place("a", "d"),), _exe(data("a_d"), call("a_f"), rpath=("{S}/d",)),
                 expect=("bind:{S}/d/lib{P}a.so|{P}a_d|{S}/main",)),
        Scenario("copy_reloc_versioned_skips_other_version",
                 (Lib("a", "lib{P}a.so", (F("a_f", "{P}A_1"), D("common1", "{P}A_1")),
                      versions=("{P}A_1",)),
                  Lib("b", "lib{P}b.so", (F("b_f", "{P}B_1"), D("common1", "{P}B_1")),
                      refs=(data("common1"),), versions=("{P}B_1",))),
                 (Place("a", "d"), Place("b", "d")),
                 _exe(data("common1"), call("b_f"), needed=("a", "b"), rpath=("{S}/d",)),
                 expect=("bind:{S}/d/lib{P}b.so|{P}common1|{S}/d/lib{P}b.so",
                         "bind:{S}/main|{P}common1|{S}/d/lib{P}a.so")),
        Scenario("canonical_plt_nonpie",
                 (lib("a", F("a_f")), lib("b", F("b_f"), refs=(addr("a_f"), call("a_f")),
                                          needed=("a",))),
                 (Place("a", "d"), Place("b", "d")),
                 _exe(addr("a_f"), call("b_f"), needed=("a", "b"), rpath=("{S}/d",), pie=False),
                 # GNU ld gives b one GOT slot for both uses (.plt.got): no JUMP_SLOT
                 expect=("call:ok", "bind:{S}/d/lib{P}b.so|{P}a_f|{S}/main",
                         "bind:{S}/main|{P}a_f|{S}/d/lib{P}a.so")),
        Scenario("canonical_plt_only_definition",
                 (lib("a", F("a_f"), F("a_g")), lib("ar", F("a_g"), soname="lib{P}a.so"),
                  lib("b", F("b_f"), refs=(addr("a_f"), call("a_f")), needed=("a",))),
                 (Place("ar", "d"), Place("b", "d")),
                 _exe(addr("a_f"), call("b_f"), needed=("a", "b"), rpath=("{S}/d",), pie=False),
                 expect=("bind:{S}/d/lib{P}b.so|{P}a_f|{S}/main", "call:call", "now:load")),
        Scenario("wrong_class_skipped",
                 (lib("a"), Lib("ax", "lib{P}a.so", (F("a_f"),), m32=True)),
                 (Place("ax", "d1"), Place("a", "d2")),
                 _exe(call("a_f"), rpath=("{S}/d1", "{S}/d2")),
                 expect=("path:lib{P}a.so={S}/d2/lib{P}a.so", "call:ok")),
        Scenario("wrong_class_only",
                 (lib("a"), Lib("ax", "lib{P}a.so", (F("a_f"),), m32=True)),
                 (Place("ax", "d1"),), _exe(call("a_f"), rpath=("{S}/d1",)),
                 expect=("missing:lib{P}a.so", "error:missing-library")),
        Scenario("wrong_machine_skipped",
                 (lib("a"), Lib("ax", "lib{P}a.so", (F("a_f"),), machine=183)),
                 (Place("ax", "d1"), Place("a", "d2")),
                 _exe(call("a_f"), rpath=("{S}/d1", "{S}/d2")),
                 expect=("path:lib{P}a.so={S}/d2/lib{P}a.so",)),
        Scenario("invalid_elf_header_is_fatal",
                 (lib("a"), Lib("ax", "lib{P}a.so", junk="text")),
                 (Place("ax", "d1"), Place("a", "d2")),
                 _exe(call("a_f"), rpath=("{S}/d1", "{S}/d2")),
                 expect=("error:unreadable-file", "plain:load")),
        Scenario("empty_file_is_fatal",
                 (lib("a"), Lib("ax", "lib{P}a.so", junk="empty")),
                 (Place("ax", "d1"), Place("a", "d2")),
                 _exe(call("a_f"), rpath=("{S}/d1", "{S}/d2")),
                 expect=("error:unreadable-file",)),
        Scenario("hwcaps_subdirectory", (lib("a"),),
                 (Place("a", "rp"), Place("a", "rp/glibc-hwcaps/x86-64-v2")),
                 _exe(call("a_f"), rpath=("{S}/rp",)),
                 expect=("path:lib{P}a.so={S}/rp/glibc-hwcaps/x86-64-v2/lib{P}a.so",)),
        Scenario("legacy_platform_subdirectory", (lib("a"),),
                 (Place("a", "rp"), Place("a", "rp/x86_64")),
                 _exe(call("a_f"), rpath=("{S}/rp",)),
                 expect=("path:lib{P}a.so={S}/rp/x86_64/lib{P}a.so",)),
        Scenario("same_file_two_names",
                 (lib("a", needed=("q", "qa"), refs=(call("q_f"),)), lib("q"),
                  lib("qa", F("q_f"), soname="lib{P}q-alias.so")),
                 (Place("a", "d"), Place("q", "d"),
                  Place("", "d", file="lib{P}q-alias.so", symlink="lib{P}q.so")),
                 _exe(call("a_f"), rpath=("{S}/d",)),
                 expect=("path:lib{P}q.so={S}/d/lib{P}q.so", "call:ok")),
        # ---- ld.so.cache, default directories, DF_1_NODEFLIB: in a sysroot under chroot
        Scenario("cache_hit", (lib("a", needed=("b",), refs=(call("b_f"),)), lib("b")),
                 (Place("a", "d"), Place("b", "c")), _exe(call("a_f"), rpath=("{S}/d",)),
                 cache=("c",), world="chroot",
                 expect=("path:lib{P}b.so={S}/c/lib{P}b.so", "call:ok")),
        Scenario("default_dirs", (lib("a", needed=("b",), refs=(call("b_f"),)), lib("b")),
                 (Place("a", "d"), Place("b", "/usr/lib", late=True)),
                 _exe(call("a_f"), rpath=("{S}/d",)), world="chroot",
                 expect=("path:lib{P}b.so=/usr/lib/lib{P}b.so", "call:ok")),
        Scenario("cache_beats_default_dirs", (lib("a"),),
                 (Place("a", "c"), Place("a", "/lib/x86_64-linux-gnu", late=True)),
                 _exe(call("a_f")), cache=("c",), world="chroot",
                 expect=("path:lib{P}a.so={S}/c/lib{P}a.so",)),
        Scenario("nodeflib_skips_default_dirs",
                 (lib("a", needed=("b", "c"), refs=(call("b_f"), call("c_f")), nodeflib=True),
                  lib("b"), lib("c")),
                 (Place("a", "d"), Place("b", "/usr/lib", late=True), Place("c", "c")),
                 _exe(call("a_f"), rpath=("{S}/d",)), cache=("c",), world="chroot",
                 expect=("missing:lib{P}b.so", "path:lib{P}c.so={S}/c/lib{P}c.so")),
        Scenario("nodeflib_rejects_cache_hit_in_system_dir",
                 (lib("a", needed=("b",), refs=(call("b_f"),), nodeflib=True), lib("b")),
                 (Place("a", "d"), Place("b", "/usr/lib")),
                 _exe(call("a_f"), rpath=("{S}/d",)), world="chroot",
                 expect=("missing:lib{P}b.so",)),
        # ---- dlopen
        Scenario("dlopen_local_not_visible",
                 (lib("a", F("a_f"), refs=(call("p_f"),)), lib("p")),
                 (Place("a", "d"), Place("p", "d")),
                 dlopen=Dlopen("{S}/d/lib{P}a.so", local=("{S}/d/lib{P}p.so",)),
                 expect=("dl:ok", "dlcall:call")),
        Scenario("dlopen_local_data_ref_fails",
                 (lib("a", F("a_f"), refs=(data("p_d"),)), lib("p")),
                 (Place("a", "d"), Place("p", "d")),
                 dlopen=Dlopen("{S}/d/lib{P}a.so", local=("{S}/d/lib{P}p.so",)),
                 expect=("dl:fail", "dlerr:unresolved")),
        Scenario("dlopen_global_visible",
                 (lib("a", F("a_f"), refs=(call("p_f"), data("p_d"))), lib("p")),
                 (Place("a", "d"), Place("p", "d")),
                 dlopen=Dlopen("{S}/d/lib{P}a.so", glob=("{S}/d/lib{P}p.so",)),
                 expect=("dl:ok", "dlcall:ok")),
        Scenario("dlopen_lazy_then_call_fails", (lib("a", F("a_f"), refs=(call("ghost"),)),),
                 (Place("a", "d"),), dlopen=Dlopen("{S}/d/lib{P}a.so"),
                 expect=("dl:ok", "dlcall:call")),
        Scenario("dlopen_now_fails", (lib("a", F("a_f"), refs=(call("ghost"),)),),
                 (Place("a", "d"),), dlopen=Dlopen("{S}/d/lib{P}a.so", now=True),
                 expect=("dl:fail", "dlerr:unresolved")),
        Scenario("dlopen_host_rpath",
                 (lib("a", F("a_f"), needed=("b",), refs=(call("b_f"),)), lib("b")),
                 (Place("a", "d"), Place("b", "hrp")),
                 Exe(rpath=("{S}/hrp",)), dlopen=Dlopen("{S}/d/lib{P}a.so"),
                 expect=("dl:ok", "dlcall:ok")),
        Scenario("dlopen_host_runpath_not_used_for_deps",
                 (lib("a", F("a_f"), needed=("b",), refs=(call("b_f"),)), lib("b")),
                 (Place("a", "d"), Place("b", "hrp")),
                 Exe(runpath=("{S}/hrp",)), dlopen=Dlopen("{S}/d/lib{P}a.so"),
                 expect=("dl:fail", "dlerr:missing-library")),
        Scenario("dlopen_missing_version", (vlib_old, vlib_new,
                                            lib("a", F("a_f"), needed=("vn",),
                                                refs=(call("v_new"),))),
                 (Place("a", "d"), Place("v", "d")), dlopen=Dlopen("{S}/d/lib{P}a.so"),
                 llp=("{S}/d",), expect=("dl:fail", "dlerr:missing-version")),
        Scenario("dlopen_target_already_loaded",
                 (lib("a", F("a_f"), needed=("b",), refs=(call("b_f"),)), lib("b")),
                 (Place("a", "d"), Place("b", "d")),
                 dlopen=Dlopen("{S}/d/lib{P}b.so", local=("{S}/d/lib{P}a.so",)),
                 llp=("{S}/d",), expect=("dl:ok",)),
        Scenario("dlopen_in_sysroot",
                 (lib("a", F("a_f"), needed=("b",), refs=(call("b_f"),)), lib("b")),
                 (Place("a", "d"), Place("b", "c")), cache=("c",), world="chroot",
                 dlopen=Dlopen("{S}/d/lib{P}a.so"), expect=("dl:ok", "dlcall:ok")),
    ]
    return tuple(out)


# ------------------------------------------------------------------------------- batches


@dataclass
class Checked:
    """One scenario built, observed, predicted and compared."""

    built: Built
    observation: Observation
    aspects: dict[str, list[str]]  # aspect -> disagreements (absent: not compared)
    expectations: list[str]  # unmet expectations of a hand-written scenario

    def failures(self) -> list[str]:
        """Every disagreement and unmet expectation, one line each."""
        out = [f"{k}: {m}" for k, v in self.aspects.items() for m in v]
        out += self.expectations + self.built.problems
        return out


def run_batch(scenarios: Sequence[Scenario], base: Path) -> list[Checked]:
    """Build every scenario (one directory per world), run the real loader and the model."""
    host = [s for s in scenarios if s.world == "host"]
    chroot = [s for s in scenarios if s.world == "chroot"]
    built: list[Built] = []
    if host:
        built += WorldBuilder(base / "host", chroot=False).build(host)
    if chroot:
        built += WorldBuilder(base / "root", chroot=True).build(chroot)
    checked = []
    for b in built:
        obs = observe(b)
        pred = predict(b)
        checked.append(Checked(b, obs, compare(obs, pred), check_expectations(b, obs)))
    return checked


def describe(c: Checked) -> str:
    """A failure report for one scenario."""
    s = c.built.scenario
    lines = [f"scenario {s.name} ({s.world}, {'dlopen' if s.dlopen else 'exec'}) in "
             f"{c.built.host_root}"]
    lines += [f"  {f}"[:2000] for f in c.failures()]
    return "\n".join(lines)
