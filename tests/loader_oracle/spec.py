"""The scenario vocabulary: libraries (definitions, references, DT_NEEDED, RPATH/RUNPATH, versions), where copies are placed, the program or dlopen host, the environment; and the helpers hand-written scenarios are spelt with."""
from __future__ import annotations

import re
from dataclasses import dataclass, field

RTLD = "/lib64/ld-linux-x86-64.so.2"
VDSO = "linux-vdso.so.1"


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


def lib_chain() -> tuple[Lib, ...]:
    return (lib("a", needed=("b",), refs=(call("b_f"),)),
            lib("b", needed=("c",), refs=(data("c_d"),)),
            lib("c", needed=("d",), refs=(addr("d_f"),)),
            lib("d"))


def program(*refs: Ref, needed: tuple[str, ...] = ("a",), **kw: object) -> Exe:
    return Exe(refs=refs, needed=needed, **kw)  # type: ignore[arg-type]


P = "{P}"


# Version node names several rule families share.
V1, V2 = "{P}V_1", "{P}V_2"
vlib_old = lib("v", F("v_f", V1), D("v_d", V1), versions=(V1,))
vlib_new = Lib("vn", "lib{P}v.so", (F("v_f", V1, default=False), F("v_f", V2), D("v_d", V1),
                                    F("v_new", V2)), versions=(V1, V2))
