"""Building a scenario's world with gcc (a tmp directory, or a sysroot with its own ld.so.cache for chroot runs)."""
from __future__ import annotations

import functools
import os
import shutil
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from tests.loader_oracle.spec import RTLD, Exe, Lib, Ref, Scenario


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
