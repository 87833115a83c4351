"""`ldscope scan` on a real venv of PyPI binary wheels (numpy, scipy, kiwisolver): clean, then
with deliberate mismatches, each reported with its cause and checked against the real loader.

The venv is built once per machine (tests/scan_support.py) and never modified: the mismatch
environment is a hard-link copy of it with files added.
"""

from __future__ import annotations

import os
import re
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from tests.scan_support import (
    build_geo,
    build_needy_extension,
    build_py312_extension,
    clone_venv,
    compare_with_ldd,
    ext_suffix,
    files_by_path,
    findings_of,
    import_in,
    install_wheel,
    ldd_for_entry,
    make_wheel,
    real_venv,
    scan_json,
    scan_process,
    site_packages,
    venv_python,
)

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def env() -> Path:
    return real_venv()


@pytest.fixture(scope="module")
def clean(env: Path) -> dict[str, object]:
    code, doc, err = scan_json(str(env))
    assert code == 0, (err, doc.get("findings"))
    return doc


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("scanbuild")
    (d / "geo").mkdir()
    geo = build_geo(d / "geo")
    py312 = build_py312_extension(d)
    needy = build_needy_extension(d)
    wheels = d / "wheels"
    wheels.mkdir()
    w312 = make_wheel(wheels / "py312demo-1.0-cp312-cp312-linux_x86_64.whl", "py312demo", "1.0",
                      "cp312-cp312-linux_x86_64", {"py312demo/__init__.py": b"",
                                                   f"py312demo/{py312.name}": py312})
    wneedy = make_wheel(wheels / "needydemo-1.0-cp311-cp311-linux_x86_64.whl", "needydemo", "1.0",
                        "cp311-cp311-linux_x86_64", {"needydemo/__init__.py": b"",
                                                     f"needydemo/{needy.name}": needy},
                        requires=["numpy"])
    return {"geo_v1": geo.v1, "geo_v2": geo.v2, "geo_ext": geo.extension, "py312": py312,
            "needy": needy, "wheel312": w312, "wheel_needy": wneedy, "dir": d}


@pytest.fixture(scope="module")
def mismatched(env: Path, built: dict[str, Path], tmp_path_factory: pytest.TempPathFactory,
               ) -> tuple[Path, dict[str, Path], dict[str, object]]:
    """The real venv plus: geopkg (extension built against libgeo v1, v2 beside it), the cp312
    wheel and the wheel needing libneedy.so.3, both installed."""
    copy = clone_venv(env, tmp_path_factory.mktemp("mm") / "venv")
    site = site_packages(copy)
    pkg = site / "geopkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    ext = pkg / built["geo_ext"].name
    ext.write_bytes(built["geo_ext"].read_bytes())
    (pkg / "libgeo.so.1").write_bytes(built["geo_v2"].read_bytes())
    os.chmod(ext, 0o755)
    os.chmod(pkg / "libgeo.so.1", 0o755)
    install_wheel(built["wheel312"], site)
    install_wheel(built["wheel_needy"], site)
    paths = {
        "geo": ext,
        "geo_lib": pkg / "libgeo.so.1",
        "py312": site / "py312demo" / built["py312"].name,
        "needy": site / "needydemo" / built["needy"].name,
        "site": site,
    }
    code, doc, err = scan_json(str(copy))
    assert code == 1, err
    return copy, paths, doc


def _finding_for(doc: dict[str, object], path: Path) -> list[dict[str, object]]:
    return [f for f in findings_of(doc) if str(path) in f["files"]]  # type: ignore[operator]


# ---------------------------------------------------------------------------------- clean


def test_real_venv_scans_clean(env: Path, clean: dict[str, object]) -> None:
    assert clean["schema"] == "ldscope.scan/2"
    assert clean["findings"] == []
    assert clean["errors"] == []
    files = files_by_path(clean)
    site = site_packages(env)
    numpy_core = site / "numpy" / "_core" / f"_multiarray_umath{ext_suffix()}"
    kiwi = site / "kiwisolver" / f"_cext{ext_suffix()}"
    assert files[str(numpy_core)]["kind"] == "extension"
    assert files[str(kiwi)]["kind"] == "extension"
    scipy_ext = [p for p, f in files.items() if "/scipy/" in p and f["kind"] == "extension"]
    assert len(scipy_ext) >= 50, "scipy ships many extension modules"
    vendored = [p for p in files if "/scipy.libs/" in p or "/numpy.libs/" in p]
    assert any("openblas" in p for p in vendored) and any("gfortran" in p for p in vendored)
    assert all(f["loads"] for f in files.values())
    summary = clean["summary"]
    assert isinstance(summary, dict)
    assert summary["fails"] == 0 and summary["loads"] == len(files)
    # scipy requires numpy: its extensions are checked with numpy's already imported.
    ext = files[scipy_ext[0]]
    assert any("/numpy/" in a for a in ext["assumed_loaded"])  # type: ignore[union-attr]


def test_real_venv_kiwisolver_is_cxx(env: Path, clean: dict[str, object]) -> None:
    """The C++ extension really needs libstdc++ (so the clean verdict covers C++ binding)."""
    kiwi = site_packages(env) / "kiwisolver" / f"_cext{ext_suffix()}"
    out = subprocess.run(["readelf", "-dW", str(kiwi)], capture_output=True, text=True).stdout
    assert "libstdc++.so.6" in out
    assert files_by_path(clean)[str(kiwi)]["loads"] is True


def test_real_venv_clean_as_a_process(env: Path) -> None:
    proc = scan_process(str(env))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "no findings: everything native in here loads" in proc.stdout
    assert re.search(r"\d+ extensions", proc.stdout)


def test_real_venv_every_verdict_matches_ldd(env: Path, clean: dict[str, object]) -> None:
    """Every file: `ldd -r` (libpython preloaded for what Python imports) agrees, and imports work."""
    entries = list(files_by_path(clean).values())
    tree = str(site_packages(env))

    def check(entry: dict[str, object]) -> list[str]:
        ldd = ldd_for_entry(entry, tree)
        return [str(d) for d in compare_with_ldd(entry, ldd)] + (
            [] if ldd.clean else [f"{entry['path']}: ldd -r is not clean:\n{ldd.raw}"])

    with ThreadPoolExecutor(4) as pool:
        problems = [p for ps in pool.map(check, entries) for p in ps]
    assert problems == []
    # ... and the real thing: importing the packages in the venv's interpreter.
    proc = subprocess.run([str(venv_python(env)), "-c",
                           "import numpy, scipy.linalg, scipy.special, kiwisolver; print('OK')"],
                          capture_output=True, text=True, timeout=120)
    assert proc.stdout.strip() == "OK", proc.stderr


# ------------------------------------------------------------------ (a) C++ rebuilt library


def test_cxx_extension_against_other_library_version(mismatched: tuple[Path, dict[str, Path], dict[str, object]]) -> None:
    copy, paths, doc = mismatched
    found = _finding_for(doc, paths["geo"])
    assert len(found) == 1, found
    f = found[0]
    assert f["severity"] == "error" and f["kind"] == "unresolved-symbol"
    assert f["files"] == [str(paths["geo"])]
    assert "built against another version of libgeo.so.1" in str(f["title"])
    problems = f["problems"]
    assert isinstance(problems, list)
    by_symbol = {p["symbol"]: p for p in problems}
    assert set(by_symbol) == {"_ZN3geo4areaEi", "_ZNK3geo5Shape5scaleEi"}
    area, scale = by_symbol["_ZN3geo4areaEi"], by_symbol["_ZNK3geo5Shape5scaleEi"]
    assert area["demangled"] == "geo::area(int)"
    assert area["when"] == "load"  # Python imports with RTLD_NOW
    for p, change, defined in ((area, "parameter 1: int → long", "geo::area(long)"),
                               (scale, "parameter 1: int → double", "geo::Shape::scale(double) const")):
        best = p["near_misses"][0]
        assert best["kind"] == "signature-changed"
        assert best["demangled"] == defined
        assert os.path.realpath(best["file"]) == os.path.realpath(paths["geo_lib"])
        assert change in best["explanation"]
    # The real loader: importing it fails on one of exactly these symbols.
    proc = import_in(venv_python(copy), paths["geo"], "_geoext")
    assert proc.returncode != 0
    assert re.search(r"undefined symbol: (_ZN3geo4areaEi|_ZNK3geo5Shape5scaleEi)", proc.stderr), proc.stderr


def test_cxx_extension_with_its_own_library_version_loads(env: Path, built: dict[str, Path], tmp_path: Path) -> None:
    """Positive control: the same extension beside v1 loads, in ldscope and for real."""
    pkg = tmp_path / "geopkg"
    pkg.mkdir()
    ext = pkg / built["geo_ext"].name
    ext.write_bytes(built["geo_ext"].read_bytes())
    (pkg / "libgeo.so.1").write_bytes(built["geo_v1"].read_bytes())
    code, doc, _ = scan_json(str(tmp_path), "--python", str(venv_python(env)))
    assert code == 0 and doc["findings"] == []
    files = files_by_path(doc)
    assert files[str(ext)]["kind"] == "extension" and files[str(ext)]["loads"] is True
    assert files[str(pkg / "libgeo.so.1")]["checked_as_part_of"] == str(ext)
    proc = import_in(venv_python(env), ext, "_geoext", "print(mod.area(4))")
    assert proc.stdout.strip() == str(4 * 4 + 3 * 2), proc.stderr


# -------------------------------------------------------------- (b) cp312 extension wheel


def _not_importable(doc: dict[str, object], path: str) -> dict[str, object]:
    (entry,) = [f for f in doc["files"] if f["path"] == path]  # type: ignore[attr-defined, index]
    assert entry["kind"] == "extension" and entry["loads"] is False
    (problem,) = entry["problems"]
    assert problem["kind"] == "not-importable" and problem["library"] == "cpython-312-x86_64-linux-gnu"
    return dict(problem)


def test_cp312_wheel_in_place_with_env(env: Path, built: dict[str, Path]) -> None:
    """pip refuses a cp312 wheel for 3.11: one finding, the wheel's, naming both versions; its
    extension would never be imported (Python 3.11 looks for .cpython-311-… names)."""
    code, doc, _ = scan_json(str(built["wheel312"]), "--with-env", str(env))
    assert code == 1
    assert [t["kind"] for t in doc["targets"]] == ["wheel"]  # type: ignore[union-attr]
    member = site_packages(env) / "py312demo" / built["py312"].name
    problem = _not_importable(doc, str(member))
    (finding,) = findings_of(doc)
    assert finding["kind"] == "incompatible-wheel" and finding["cause"] == problem["cause"]
    assert "cp312" in str(finding["title"]) and "3.11" in str(finding["title"])
    assert sorted(finding["files"]) == sorted([str(built["wheel312"]), str(member)])  # type: ignore[type-var]
    # The real pip says the same: not a supported wheel on this platform.
    proc = subprocess.run([str(venv_python(env)), "-m", "pip", "install", "--dry-run", "--no-deps",
                           "--no-index", str(built["wheel312"])], capture_output=True, text=True, timeout=120)
    assert proc.returncode != 0 and "is not a supported wheel on this platform" in proc.stderr


def test_cp312_wheel_installed(mismatched: tuple[Path, dict[str, Path], dict[str, object]]) -> None:
    copy, paths, doc = mismatched
    problem = _not_importable(doc, str(paths["py312"]))
    assert "Python 3.11 never imports it" in str(problem["message"])
    # The real importer: no module spec names the file (it looks for _py312.cpython-311-….so).
    proc = subprocess.run([str(venv_python(copy)), "-c",
                           "import importlib.util as u; print(u.find_spec('py312demo._py312'))"],
                          capture_output=True, text=True, timeout=60)
    assert proc.stdout.strip() == "None", proc.stderr
    # Loaded by path regardless, it would fail too: built against 3.12's C-API.
    assert "undefined symbol: PyType_GetDict" in import_in(venv_python(copy), paths["py312"], "_py312").stderr


# ------------------------------------------------------------ (c) wheel missing a library


def _real_tries(python: Path, ext: Path, name: str, library: str) -> list[str]:
    """Every path ld.so tries for `library` while importing `ext` (LD_DEBUG=libs)."""
    env = {k: v for k, v in os.environ.items() if k not in ("LD_LIBRARY_PATH", "LD_PRELOAD")}
    env["LD_DEBUG"] = "libs"
    script = ("import importlib.machinery as m, importlib.util as u\n"
              f"l = m.ExtensionFileLoader({name!r}, {str(ext)!r})\n"
              f"s = u.spec_from_file_location({name!r}, {str(ext)!r}, loader=l)\n"
              "s.loader.exec_module(u.module_from_spec(s))\n")
    proc = subprocess.run([str(python), "-c", script], capture_output=True, text=True, env=env, timeout=60)
    tries, searching = [], False
    for line in proc.stderr.splitlines():
        body = line.split(":", 1)[-1].strip()
        if body.startswith("find library="):
            searching = body.startswith(f"find library={library} ")
        elif searching and body.startswith("trying file="):
            tries.append(body[len("trying file="):])
    assert f"{library}: cannot open shared object file" in proc.stderr
    return tries


def _check_tried(tried: list[dict[str, str]], real: list[str]) -> None:
    """ld.so tries exactly ldscope's paths, except in directories it already knows are absent
    (rtld marks a search directory `nonexisting` after the first miss in the process)."""
    predicted = [t["path"] for t in tried]
    it = iter(predicted)
    assert all(any(p == r for p in it) for r in real), (predicted, real)  # same order
    skipped = [p for p in predicted if p not in real]
    assert all(not os.path.isdir(os.path.dirname(p)) for p in skipped), skipped
    assert real, "ld.so tried something"


def test_wheel_missing_library_in_place(env: Path, built: dict[str, Path]) -> None:
    code, doc, _ = scan_json(str(built["wheel_needy"]), "--with-env", str(env))
    assert code == 1
    found = findings_of(doc)
    assert len(found) == 1
    f = found[0]
    assert f["kind"] == "missing-library" and f["severity"] == "error"
    member = site_packages(env) / "needydemo" / built["needy"].name
    assert f["files"] == [str(member)]
    (p,) = f["problems"]  # type: ignore[misc]
    assert p["kind"] == "missing-library" and p["library"] == "libneedy.so.3"
    # ldd -r also lists the symbol the missing library would have provided; ld.so itself stops
    # at the library: counted under it, not a problem of its own.
    assert p["follow_on_symbols"] == 1
    assert f["title"] == f"libneedy.so.3 is missing (needed by {member})"
    tried = [t["path"] for t in p["tried"]]
    # RUNPATH $ORIGIN/../needy.libs, expanded against where the wheel would be installed,
    # with its glibc-hwcaps subdirectories first; then the cache; then the default directories.
    runpath_dir = os.path.join(str(site_packages(env) / "needydemo"), "..", "needy.libs")
    assert os.path.join(runpath_dir, "libneedy.so.3") in tried
    assert tried.index(os.path.join(runpath_dir, "glibc-hwcaps", "x86-64-v2", "libneedy.so.3")) < \
        tried.index(os.path.join(runpath_dir, "libneedy.so.3"))
    sources = [t["source"] for t in p["tried"]]
    assert sources[0] == "runpath" and "ld.so.cache" in sources and sources[-1] == "default path"
    assert "/usr/lib/libneedy.so.3" in tried and "/lib/x86_64-linux-gnu/libneedy.so.3" in tried


def test_wheel_missing_library_installed(mismatched: tuple[Path, dict[str, Path], dict[str, object]]) -> None:
    copy, paths, doc = mismatched
    found = [f for f in findings_of(doc) if f["kind"] == "missing-library"]
    assert len(found) == 1 and found[0]["files"] == [str(paths["needy"])]
    (p,) = found[0]["problems"]  # type: ignore[misc]
    assert p["follow_on_symbols"] == 1
    assert p["message"].startswith(f"libneedy.so.3: cannot open shared object file: No such file or directory (needed by {paths['needy']})")
    real = _real_tries(venv_python(copy), paths["needy"], "_needy", "libneedy.so.3")
    _check_tried([t for t in p["tried"] if t["source"] != "ld.so.cache"], real)


# ------------------------------------------------------------------ the whole mismatch env


def test_mismatched_env_reports_exactly_the_three_causes(mismatched: tuple[Path, dict[str, Path], dict[str, object]]) -> None:
    copy, paths, doc = mismatched
    found = findings_of(doc)
    assert sorted(str(f["cause"]).split(":")[0] for f in found) == ["missing-library", "not-importable", "rebuilt"]
    affected = sorted(str(p) for f in found for p in f["files"])  # type: ignore[attr-defined]
    assert affected == sorted(str(paths[k]) for k in ("geo", "py312", "needy"))
    failing = sorted(p for p, f in files_by_path(doc).items() if not f["loads"])
    assert failing == affected
    summary = doc["summary"]
    assert isinstance(summary, dict)
    assert summary["problems_by_kind"] == {"missing-library": 1, "not-importable": 1, "unresolved-symbol": 2}
    # Each failing verdict agrees with ldd -r fact by fact (the cp312 file aside: Python never
    # loads it, ldd -r speaks of loading it by path); the unchanged files still load.
    for path in failing:
        if path == str(paths["py312"]):
            continue
        entry = files_by_path(doc)[path]
        ldd = ldd_for_entry(entry, str(paths["site"]))
        assert not ldd.clean
        assert compare_with_ldd(entry, ldd) == [], ldd.raw
    proc = scan_process(str(copy), "--format", "text")
    assert proc.returncode == 1
    assert "was built against another version of libgeo.so.1" in proc.stdout
    assert "are never imported by Python 3.11" in proc.stdout
    assert "libneedy.so.3 is missing" in proc.stdout
