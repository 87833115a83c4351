"""Seeded random scenarios: every draw a valid scenario, the same seed the same scenario."""
from __future__ import annotations

import random
from collections.abc import Iterable, Sequence

from tests.loader_oracle.spec import Def, Dlopen, Exe, Lib, Place, Ref, Scenario

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
