"""Build the corpus environments: venvs of the interpreter running the tests, cached.

Each environment is built once per machine under `$LDSCOPE_TEST_CACHE` (default
`~/.cache/ldscope-tests`, shared with tests/scan_support.py) as `rw-NAME-KEY`, where KEY hashes
the interpreter, its version and the environment's spec (installs and breakage steps), under the
same lock-file pattern as `scan_support.cached_venv` (pytest-xdist workers build each venv
once).  When pip cannot install (PyPI unreachable, a local wheel absent) the build raises
`Unavailable` with pip's own last line; the tests skip with it.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from dataclasses import dataclass
from pathlib import Path

from tests.realworld.corpus import DeleteFiles, Environment, Install, Step, UnpackWheel
from tests.scan_support import CACHE_DIR, _locked, site_packages

BUILD_VERSION = 1  # bump when the way a venv is built changes
PIP_FAILURE_TTL = 3600.0  # seconds a pip failure is remembered (as scan_support does)


class Unavailable(Exception):
    """The environment cannot be built on this machine (the message says why, in pip's words)."""


@dataclass(frozen=True)
class BuiltEnv:
    """A built corpus environment."""

    env: Environment
    path: Path
    key: str
    build_seconds: float  # wall time of the build that made it (measured, never asserted)

    @property
    def site(self) -> Path:
        """Its site-packages directory."""
        return site_packages(self.path)

    @property
    def python(self) -> Path:
        """Its own interpreter (the venv's bin/python)."""
        return self.path / "bin" / "python"

    @property
    def stem(self) -> str:
        """`rw-NAME-KEY`: the venv's directory name, also the prefix of its cached truth."""
        return self.path.name


def env_key(env: Environment) -> str:
    """The cache key: the interpreter (path and version) and the environment's spec."""
    blob = json.dumps([os.path.realpath(sys.executable), sys.version, env.spec(), BUILD_VERSION],
                      sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:12]


def build(env: Environment) -> BuiltEnv:
    """The environment's venv, built (installs, then breakage steps) unless already cached."""
    for install in env.installs:
        for local in install.local_files:
            if not local.is_file():
                raise Unavailable(f"{local} is not on this machine")
    key = env_key(env)
    path = CACHE_DIR / f"rw-{env.name}-{key}"
    done = path / ".ldscope-realworld.json"
    failed = path.with_suffix(".pip-failed")
    with _locked(CACHE_DIR / f"rw-{env.name}-{key}.lock"):
        if done.exists():
            return BuiltEnv(env, path, key, float(json.loads(done.read_text())["build_seconds"]))
        if failed.exists() and failed.stat().st_mtime > time.time() - PIP_FAILURE_TTL:
            raise Unavailable(failed.read_text())
        start = time.monotonic()
        shutil.rmtree(path, ignore_errors=True)
        subprocess.run([sys.executable, "-m", "venv", str(path)], check=True, capture_output=True)
        python = path / "bin" / "python"
        try:
            for install in env.installs:
                _pip_install(python, install)
            for breakage in env.breakages:
                for step in breakage.steps:
                    _apply(python, site_packages(path), step)
        except Unavailable as e:
            failed.write_text(str(e))
            shutil.rmtree(path, ignore_errors=True)
            raise
        seconds = time.monotonic() - start
        done.write_text(json.dumps({"spec": env.spec(), "build_seconds": round(seconds, 1)}, indent=1) + "\n")
    return BuiltEnv(env, path, key, seconds)


def _pip(python: Path, args: list[str], what: str) -> None:
    proc = subprocess.run([str(python), "-m", "pip", *args, "--no-input", "-q", "--disable-pip-version-check"],
                          capture_output=True, text=True, timeout=1200)
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or proc.stdout.strip().splitlines() or ["no output"])[-1]
        raise Unavailable(f"pip could not {what} (is PyPI reachable?): {last}")


def _pip_install(python: Path, install: Install) -> None:
    _pip(python, ["install", *install.pip_args, *install.requirements],
         f"install {' '.join(install.requirements)}")


def _apply(python: Path, site: Path, step: Step) -> None:
    if isinstance(step, DeleteFiles):
        matches = sorted(site.glob(step.pattern))
        if not matches:
            raise AssertionError(f"breakage step {step}: nothing matches {step.pattern} in {site}")
        for m in matches:
            m.unlink()
    elif isinstance(step, UnpackWheel):
        with tempfile.TemporaryDirectory(prefix="rw-wheel-") as tmp:
            _pip(python, ["download", "-d", tmp, *step.download_args()], f"download {step.requirement}")
            wheels = sorted(Path(tmp).glob("*.whl"))
            if len(wheels) != 1:
                raise AssertionError(f"pip download {step.requirement} gave {wheels}")
            unpack_wheel(wheels[0], site)


def unpack_wheel(wheel: Path, site: Path) -> list[Path]:
    """Unzip a wheel into site-packages as pip lays it out (`*.data/purelib|platlib` into
    site-packages, `*.data/scripts` into bin; file modes kept); the paths written."""
    written = []
    scripts = site.parents[2] / "bin"
    with zipfile.ZipFile(wheel) as zf:
        for zi in zf.infolist():
            if zi.is_dir():
                continue
            parts = zi.filename.split("/")
            if parts[0].endswith(".data") and len(parts) > 2:
                if parts[1] in ("purelib", "platlib"):
                    target = site.joinpath(*parts[2:])
                elif parts[1] == "scripts":
                    target = scripts.joinpath(*parts[2:])
                else:
                    continue  # headers, data: not native files
            else:
                target = site / zi.filename
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(zf.read(zi))
            os.chmod(target, (zi.external_attr >> 16) & 0o777 or 0o644)
            written.append(target)
    return written
