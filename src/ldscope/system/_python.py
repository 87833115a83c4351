"""Python environments read from disk (never by running their interpreter)."""

from __future__ import annotations

import glob
import os
import re
import sys
from dataclasses import dataclass

from ldscope.elf import NEVER_NATIVE, is_elf, open_regular_text, read_regular

_DIST_NAME = re.compile(r"[-_.]+")
_REQ_NAME = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)")


def normalize_name(name: str) -> str:
    """PEP 503 normalised distribution name."""
    return _DIST_NAME.sub("-", name).lower()


@dataclass(frozen=True, slots=True)
class Distribution:
    """An installed distribution: its name, files and unconditional requirements."""

    name: str
    files: tuple[str, ...]  # absolute paths from RECORD (native candidates only)
    requires: tuple[str, ...]  # normalised names, environment markers without `extra` only
    version: str | None = None
    top_level: tuple[str, ...] = ()  # the importable top-level names RECORD installs
    requirements: tuple[str, ...] = ()  # those Requires-Dist lines as written (specifiers, markers)
    site: str | None = None  # the site-packages directory it is installed in

    @property
    def label(self) -> str:
        """"torch 2.13.0": the name and version, for messages."""
        return f"{self.name} {self.version}" if self.version else self.name


@dataclass(frozen=True, slots=True)
class PythonEnvironment:
    """Where an environment's interpreter and packages are."""

    prefix: str
    interpreter: str | None  # the real ELF interpreter (symlinks resolved)
    version: str | None  # "3.11"
    site_packages: tuple[str, ...]
    scan_roots: tuple[str, ...]  # directories to scan: site-packages, prefix/bin, prefix/lib
    activation_scripts: tuple[str, ...]


def _version_from(path: str) -> str | None:
    m = re.search(r"python(\d+\.\d+)", os.path.basename(path))
    return m.group(1) if m else None


def find_interpreter(prefix: str) -> str | None:
    """The prefix's python executable, resolved to the real ELF file (pyvenv.cfg aware)."""
    candidates = sorted(glob.glob(os.path.join(prefix, "bin", "python3.*")))
    candidates += [os.path.join(prefix, "bin", n) for n in ("python3", "python")]
    for c in candidates:
        if os.path.isfile(c) and not c.endswith("-config"):
            real = os.path.realpath(c)
            try:
                if is_elf(read_regular(real, 4)):
                    return real
            except OSError:
                continue
    cfg = os.path.join(prefix, "pyvenv.cfg")
    try:
        with open_regular_text(cfg) as fh:
            lines = fh.read(1 << 20).splitlines()
    except OSError:
        lines = []
    for line in lines:
        key, _, value = line.partition("=")
        if key.strip() == "executable" and os.path.exists(value.strip()):
            return os.path.realpath(value.strip())
    return None


def _outermost(dirs: list[str]) -> list[str]:
    """Existing directories, by real path, without any that lie inside another (venv lib64 -> lib)."""
    real: list[str] = []
    for d in dirs:
        if not os.path.isdir(d):
            continue
        r = os.path.realpath(d)
        if r not in real:
            real.append(r)
    return [d for d in real if not any(d != o and d.startswith(o.rstrip("/") + "/") for o in real)]


def describe_environment(prefix: str, interpreter: str | None = None) -> PythonEnvironment:
    """Read an environment's layout from its prefix directory."""
    prefix = os.path.abspath(prefix)
    interp = os.path.realpath(interpreter) if interpreter else find_interpreter(prefix)
    version = _version_from(interp) if interp else None
    site = []
    pattern = f"python{version}" if version else "python3*"
    for lib in ("lib", "lib64"):
        site.extend(sorted(glob.glob(os.path.join(prefix, lib, pattern, "site-packages"))))
    roots = _outermost([*site, os.path.join(prefix, "bin"), os.path.join(prefix, "lib")])
    activation = sorted(glob.glob(os.path.join(prefix, "etc", "conda", "activate.d", "*.sh")))
    activation += [p for p in (os.path.join(prefix, "bin", "activate"),) if os.path.exists(p)]
    site_real = _outermost(site)
    return PythonEnvironment(prefix, interp, version, tuple(site_real), tuple(roots), tuple(activation))


def environment_of_interpreter(exe: str) -> PythonEnvironment:
    """The environment an interpreter path belongs to (prefix = parent of its bin/)."""
    exe_abs = os.path.abspath(exe)
    prefix = os.path.dirname(os.path.dirname(exe_abs))
    return describe_environment(prefix, exe_abs)


def running_interpreter() -> str:
    """The interpreter running ldscope (the default host for extension modules), resolved."""
    return os.path.realpath(sys.executable)


def running_environment() -> PythonEnvironment:
    """The environment of the interpreter running ldscope."""
    return describe_environment(sys.prefix, sys.executable)


def looks_like_environment(path: str) -> bool:
    """True for a venv, conda env or Python installation prefix."""
    return (
        os.path.exists(os.path.join(path, "pyvenv.cfg"))
        or os.path.isdir(os.path.join(path, "conda-meta"))
        or bool(glob.glob(os.path.join(path, "lib", "python3*", "site-packages")))
    )


def read_distributions(site_packages: tuple[str, ...]) -> list[Distribution]:
    """Installed distributions with their RECORD files and Requires-Dist (no extras)."""
    dists = []
    for site in site_packages:
        for info in sorted(glob.glob(os.path.join(site, "*.dist-info"))):
            try:
                with open_regular_text(os.path.join(info, "METADATA")) as fh:
                    metadata = fh.read()
            except OSError:
                continue
            try:
                with open_regular_text(os.path.join(info, "RECORD")) as fh:
                    record = fh.read()
            except OSError:
                record = ""
            dists.append(parse_distribution(metadata, record, site, os.path.basename(info)))
    return dists


def parse_distribution(metadata: str, record: str, site: str, info_name: str = "") -> Distribution:
    """A distribution from its METADATA and RECORD texts, installed (or to be) in `site`."""
    headers = _metadata_headers(metadata)
    name = normalize_name(next(iter(headers.get("name", [])), info_name.split("-")[0]))
    requires = []
    requirements = []
    for req in headers.get("requires-dist", []):
        spec, _, marker = req.partition(";")
        if "extra" in marker:
            continue
        m = _REQ_NAME.match(spec)
        if m:
            requires.append(normalize_name(m.group(1)))
            requirements.append(req)
    files = []
    top: dict[str, None] = {}
    for line in record.splitlines():
        rel = line.split(",", 1)[0]
        base = rel.rpartition("/")[2]
        top_name = _top_level_name(rel)
        if top_name:
            top[top_name] = None
        # Only native files are looked up by owner: skip sources and bytecode.
        if rel and not ("." in base and base.rpartition(".")[2] in NEVER_NATIVE):
            files.append(os.path.normpath(os.path.join(site, rel)))
    version = next(iter(headers.get("version", [])), None)
    return Distribution(name, tuple(files), tuple(requires), version, tuple(top), tuple(requirements), site)


def _top_level_name(rel: str) -> str | None:
    """The top-level module a RECORD entry installs (`torch/nn/x.py` -> torch), if any."""
    first, slash, rest = rel.partition("/")
    if not first or first.startswith(".") or first == "__pycache__":
        return None
    if slash:
        if first.endswith((".dist-info", ".data", ".libs", ".egg-info")) or not first.isidentifier():
            return None
        return first if rest == "__init__.py" or rest.endswith(".py") or ".so" in rest else None
    stem = first.split(".", 1)[0]
    if first.endswith(".py") or (".so" in first and first.count(".") >= 1):
        return stem if stem.isidentifier() and stem != "__init__" else None
    return None


def _metadata_headers(text: str) -> dict[str, list[str]]:
    """The header block of a METADATA file (RFC 822 style: folded lines continue a header),
    lower-cased names to values; the body after the first blank line is ignored."""
    headers: dict[str, list[str]] = {}
    last: list[str] | None = None
    for line in text.split("\n"):
        if line in ("", "\r"):
            break  # only an empty line ends the headers: a blank folded line continues one
        if line[0] in " \t":
            if last is None:
                continue
            last[-1] += " " + line.strip()
            continue
        key, sep, value = line.partition(":")
        if not sep:
            continue
        last = headers.setdefault(key.strip().lower(), [])
        last.append(value.strip())
    return headers


def requirement_closure(dist: Distribution, by_name: dict[str, Distribution]) -> list[Distribution]:
    """Installed distributions `dist` requires, recursively (excluding itself), in BFS order."""
    seen = {dist.name}
    order: list[Distribution] = []
    queue = list(dist.requires)
    while queue:
        name = queue.pop(0)
        if name in seen:
            continue
        seen.add(name)
        dep = by_name.get(name)
        if dep is None:
            continue
        order.append(dep)
        queue.extend(dep.requires)
    return order
