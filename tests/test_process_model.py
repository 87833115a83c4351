"""The Python process model of `scan`, on a small real environment built here: a venv of the
interpreter running the tests, two distributions with real C extensions and libraries, and the
real import (in a subprocess of the venv's interpreter) as the oracle for every verdict.

* `core` 1.0: `core/__init__.py` imports `core._core` (NEEDs libcore.so, RUNPATH
  $ORIGIN/lib), and `core._extra` (needs nothing) is imported by nobody.
* `plugin` 1.0 requires `core==2.0` (a pin the installed core misses): `plugin/libplug.so`
  NEEDs libcore.so with no RUNPATH at all and no extension NEEDs it, the way torchvision's
  `_C.so` needs libc10.so: loaded by ctypes after `import core`, found again by SONAME.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from tests.scan_support import files_by_path, findings_of, scan_json

pytestmark = pytest.mark.skipif(
    not os.path.exists(os.path.join(sysconfig.get_paths()["include"], "Python.h")) or shutil.which("gcc") is None,
    reason="needs gcc and the running interpreter's Python.h")

SUFFIX = sysconfig.get_config_var("EXT_SUFFIX")


def _gcc(out: Path, source: str, *flags: str) -> Path:
    src = out.with_suffix(".c")
    src.write_text(source)
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(out), str(src), *flags], check=True, capture_output=True)
    src.unlink()
    return out


def _extension(path: Path, name: str, body: str, *flags: str) -> Path:
    source = ("#include <Python.h>\n" + body
              + f"\nstatic struct PyModuleDef d = {{PyModuleDef_HEAD_INIT, \"{name}\", 0, -1, 0}};\n"
              f"PyMODINIT_FUNC PyInit_{name}(void) {{ return PyModule_Create(&d); }}\n")
    return _gcc(path, source, "-I" + sysconfig.get_paths()["include"], *flags)


def _dist(site: Path, name: str, version: str, files: list[Path], requires: tuple[str, ...] = ()) -> None:
    info = site / f"{name}-{version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n"
                                   + "".join(f"Requires-Dist: {r}\n" for r in requires) + "\n")
    rows = [f"{p.relative_to(site)},," for p in files] + [f"{info.name}/METADATA,,", f"{info.name}/RECORD,,"]
    (info / "RECORD").write_text("\n".join(rows) + "\n")


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("procmodel")
    venv = root / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, capture_output=True)
    site = next((venv / "lib").glob("python3*/site-packages"))
    core = site / "core"
    (core / "lib").mkdir(parents=True)
    libcore = _gcc(core / "lib" / "libcore.so", "int core_value(void) { return 42; }\n", "-Wl,-soname,libcore.so")
    (core / "__init__.py").write_text("from . import _core\n")
    ext_core = _extension(core / f"_core{SUFFIX}", "_core", "extern int core_value(void);\n"
                          "int use(void) { return core_value(); }\n",
                          f"-L{core / 'lib'}", "-lcore", "-Wl,-rpath,$ORIGIN/lib", "-Wl,--enable-new-dtags")
    ext_extra = _extension(core / f"_extra{SUFFIX}", "_extra", "")
    _dist(site, "core", "1.0", [core / "__init__.py", libcore, ext_core, ext_extra])
    plugin = site / "plugin"
    plugin.mkdir()
    (plugin / "__init__.py").write_text("import core\n")
    libplug = _gcc(plugin / "libplug.so", "extern int core_value(void);\nint plug(void) { return core_value(); }\n",
                   f"-L{core / 'lib'}", "-lcore")
    _dist(site, "plugin", "1.0", [plugin / "__init__.py", libplug], ("core==2.0",))
    # A data file whose name contains ".so" but is no library (pyarrow ships such test files).
    (plugin / "v0.7.1.some-named-index.parquet").write_bytes(b"PAR1" + b"\0" * 60)
    return venv


def _python(venv: Path) -> str:
    return str(venv / "bin" / "python")


def _truth(venv: Path, code: str) -> subprocess.CompletedProcess[str]:
    """The real thing, in the venv's interpreter (no LD_LIBRARY_PATH)."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("LD_", "PYTHON"))}
    return subprocess.run([_python(venv), "-I", "-c", code], capture_output=True, text=True, timeout=60, env=clean)


def _site(venv: Path) -> Path:
    return next((venv / "lib").glob("python3*/site-packages"))


def test_library_nothing_needs_is_loaded_after_the_distribution_providing_its_soname(env: Path) -> None:
    code, doc, _ = scan_json(str(env))
    site = _site(env)
    files = files_by_path(doc)
    plug = files[str(site / "plugin" / "libplug.so")]
    assert plug["kind"] == "library" and plug["loads"] is True, plug
    # Compact: the import, the distributions and how many native files, not every path.
    assert "library loaded by ctypes.CDLL in" in str(plug["host"])
    assert "after import core" in str(plug["host"]) and "core 1.0" in str(plug["host"])
    assert str(site / "core" / f"_core{SUFFIX}") in plug["assumed_loaded"]  # type: ignore[operator]
    assert plug["distribution"] == {"name": "plugin", "version": "1.0", "source": "RECORD"}
    # The oracle: after `import core`, ctypes finds libcore.so again by SONAME.
    real = _truth(env, f"import core, ctypes; ctypes.CDLL({str(site / 'plugin' / 'libplug.so')!r}); print('ok')")
    assert real.stdout.strip() == "ok", real.stderr
    # ... and without the process state, it would not: the library alone does not load.
    alone = _truth(env, f"import ctypes; ctypes.CDLL({str(site / 'plugin' / 'libplug.so')!r})")
    assert "libcore.so: cannot open shared object file" in alone.stderr
    assert code == 0  # everything loads; the unsatisfied pin is a warning (--fail-on error by default)


def test_unsatisfied_pin_is_a_warning_naming_both_versions(env: Path) -> None:
    _, doc, _ = scan_json(str(env))
    (pin,) = [f for f in findings_of(doc) if f["kind"] == "unsatisfied-requirement"]
    assert pin["severity"] == "warning"
    assert pin["title"].startswith("plugin 1.0 requires core==2.0; core 1.0 is installed")  # type: ignore[union-attr]


def test_data_file_with_so_in_its_name_is_not_a_library(env: Path) -> None:
    _, doc, _ = scan_json(str(env))
    assert not [s for s in doc["skipped"] if "parquet" in str(s["path"])]  # type: ignore[index, attr-defined]


def test_package_import_failing_first_fails_every_extension_of_it(env: Path, tmp_path: Path) -> None:
    broken = tmp_path / "venv"
    shutil.copytree(env, broken, symlinks=True)
    site = _site(broken)
    (site / "core" / "lib" / "libcore.so").unlink()
    code, doc, _ = scan_json(str(broken))
    assert code == 1
    files = files_by_path(doc)
    core_ext, extra = (files[str(site / "core" / f"{n}{SUFFIX}")] for n in ("_core", "_extra"))
    # `import core._extra` runs core/__init__ first, which imports _core: it fails first.
    assert core_ext["loads"] is False and extra["loads"] is False
    assert str(site / "core" / f"_core{SUFFIX}") in extra["assumed_loaded"]  # type: ignore[operator]
    for name in ("_core", "_extra"):
        real = _truth(broken, f"import core.{name}")
        assert "libcore.so: cannot open shared object file" in real.stderr, real.stderr
    (missing,) = [f for f in findings_of(doc) if f["kind"] == "missing-library"]
    assert missing["title"].startswith("libcore.so is missing")  # type: ignore[union-attr]
    # The file is in core's RECORD: the advice is to reinstall core, with the command.
    (advice,) = missing["advice"]  # type: ignore[misc]
    assert "listed in core 1.0's RECORD" in advice and "pip install --force-reinstall --no-deps core==1.0" in advice
    assert set(missing["files"]) >= {str(site / "core" / f"{n}{SUFFIX}") for n in ("_core", "_extra")}  # type: ignore[arg-type]


def test_extension_for_another_python_is_never_imported(env: Path, tmp_path: Path) -> None:
    other = tmp_path / "venv"
    shutil.copytree(env, other, symlinks=True)
    site = _site(other)
    version = f"{sys.version_info.major}{sys.version_info.minor + 1}"
    wrong = site / "core" / SUFFIX.replace(f"-{sys.version_info.major}{sys.version_info.minor}-", f"-{version}-").join(
        ("_extra", ""))
    (site / "core" / f"_extra{SUFFIX}").rename(wrong)
    _, doc, _ = scan_json(str(other))
    entry = files_by_path(doc)[str(wrong)]
    assert entry["loads"] is False
    (problem,) = entry["problems"]  # type: ignore[misc]
    assert problem["kind"] == "not-importable" and problem["library"] == f"cpython-{version}-" + SUFFIX.split("-", 2)[2][:-3]
    # The oracle: the importer finds no module for it.
    real = _truth(other, "import importlib.util as u; print(u.find_spec('core._extra'))")
    assert real.stdout.strip() == "None", real.stderr


def test_system_providers_are_attributed_to_their_debian_package(env: Path) -> None:
    if not os.path.exists("/var/lib/dpkg/status") or shutil.which("dpkg-query") is None:
        pytest.skip("no dpkg database")
    _, doc, _ = scan_json(str(env))
    owners = doc["owners"]
    assert isinstance(owners, dict)
    libc = [p for p in owners if os.path.basename(p) == "libc.so.6"]
    assert libc, "libc.so.6 is a provider of every load"
    oracle = subprocess.run(["dpkg-query", "-S", os.path.realpath(libc[0])], capture_output=True, text=True)
    if oracle.returncode != 0:
        oracle = subprocess.run(["dpkg-query", "-S", libc[0]], capture_output=True, text=True)
    package = oracle.stdout.split(":", 1)[0]
    assert owners[libc[0]]["name"] == package and owners[libc[0]]["source"] == "dpkg"
    version = subprocess.run(["dpkg-query", "-W", "-f", "${Version}", package], capture_output=True, text=True).stdout
    assert owners[libc[0]]["version"] == version
    json.dumps(owners)  # serialisable as it is


def test_wheel_scanned_with_an_environment_loads_after_its_requirements(env: Path, tmp_path: Path) -> None:
    """A wheel read in place: its own RECORD and Requires-Dist say what is imported before its
    library (the wheel's METADATA, not an installed copy), as torchvision's wheel after torch."""
    from tests.scan_support import make_wheel

    site = _site(env)
    wheel = make_wheel(tmp_path / "addon-2.0-py3-none-linux_x86_64.whl", "addon", "2.0", "py3-none-linux_x86_64",
                       {"addon/__init__.py": b"import core\n", "addon/libaddon.so": site / "plugin" / "libplug.so"},
                       requires=("core>=1",))
    code, doc, _ = scan_json(str(wheel), "--with-env", str(env))
    entry = files_by_path(doc)[str(site / "addon" / "libaddon.so")]
    assert entry["loads"] is True and "after import addon (core 1.0: 1 native file)" in str(entry["host"]), entry
    assert entry["distribution"] is None or entry["distribution"]["name"] == "addon"  # type: ignore[index]
    assert code == 0


def test_the_import_cache_lives_under_xdg_cache_home_and_no_cache_writes_none(env: Path, tmp_path: Path) -> None:
    from tests.scan_support import scan_process

    base = {k: v for k, v in os.environ.items() if not k.startswith("LD_")}
    with_cache, without = tmp_path / "with", tmp_path / "without"
    first = scan_process(str(env), "--format", "json", env={**base, "XDG_CACHE_HOME": str(with_cache)})
    assert first.returncode == 0, first.stderr
    written = list((with_cache / "ldscope").glob("imports-*.json"))
    assert len(written) == 1 and "core/__init__.py" in written[0].read_text()
    # The second scan answers from it, and says the same.
    second = scan_process(str(env), "--format", "json", env={**base, "XDG_CACHE_HOME": str(with_cache)})
    assert json.loads(second.stdout)["files"] == json.loads(first.stdout)["files"]
    none = scan_process(str(env), "--no-cache", "--format", "json", env={**base, "XDG_CACHE_HOME": str(without)})
    assert none.returncode == 0 and not without.exists()
    assert json.loads(none.stdout)["files"] == json.loads(first.stdout)["files"]


def test_bundled_copy_advice_only_for_a_vendored_name_in_the_needers_own_directory(tmp_path: Path) -> None:
    """Right or silent: "a bundled copy belongs in DIR" only for an auditwheel-style name
    (hash-suffixed) whose DIR the needer's own distribution installs into; never for a driver
    library (libcuda.so.1) that an RPATH happens to point near."""
    from ldscope.loader import Problem, TriedPath
    from ldscope.scan._attribution import Attribution
    from ldscope.system import Distribution
    from ldscope.vocab import FoundVia, ProblemKind, Severity

    libs = tmp_path / "pkg.libs"
    libs.mkdir()
    (libs / "libz-0123abcd.so.1").write_bytes(b"")
    needer = str(tmp_path / "pkg" / "_ext.so")
    attribution = Attribution(str(tmp_path / "no-root"))
    attribution.add([Distribution("pkg", (needer, str(libs / "libz-0123abcd.so.1")), (), "1.0")])

    def advice(name: str) -> str:
        problem = Problem(ProblemKind.MISSING_LIBRARY, Severity.ERROR, needer, f"{name}: cannot open", library=name,
                          tried=(TriedPath(str(libs / name), FoundVia.RUNPATH, "not found"),))
        (line,) = attribution.advice_for_missing(problem)
        return line

    assert f"a bundled copy belongs in {libs}" in advice("libpng-89abcdef.so.16")
    assert advice("libcuda.so.1").startswith("provided by no installed distribution")
