"""`ldscope load` on small real scenarios built with gcc, checked against running them."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from ldscope.analysis._load import LoadOptions, simulate_load
from ldscope.cli import cli
from tests.conftest import run


def invoke(*args: str) -> tuple[int, dict[str, object]]:
    result = CliRunner().invoke(cli, ["load", "--format", "json", *args], catch_exceptions=False)
    return result.exit_code, json.loads(result.stdout) if result.stdout.strip() else {}


def real_run(exe: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(exe), *args], capture_output=True, text=True, env=env, timeout=30)


@pytest.fixture(scope="module")
def scenario(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """libv v1 (old/) and v2 (new/), a program built against v2 with its RUNPATH on old/."""
    d = tmp_path_factory.mktemp("load")
    (d / "libv.c").write_text(
        "int api_call(int x) { return x; }\n"
        "int helper_hidden(int x) __attribute__((visibility(\"hidden\")));\n"
        "int helper_hidden(int x) { return 2 * x; }\n"
        "int uses(void) { return helper_hidden(1); }\n"
        "int lazy_only(void) { return 7; }\nint data_var = 5;\n"
    )
    (d / "v1.map").write_text("V_1.0 { global: api_call; uses; lazy_only; data_var; local: *; };\n")
    (d / "v2.map").write_text(
        "V_1.0 { global: uses; lazy_only; data_var; local: *; };\nV_2.0 { global: api_call; } V_1.0;\n"
    )
    for sub, vmap in (("old", "v1.map"), ("new", "v2.map")):
        (d / sub).mkdir()
        run(["gcc", "-shared", "-fPIC", "-o", f"{sub}/libv.so.1", "libv.c", "-Wl,-soname,libv.so.1",
             f"-Wl,--version-script={vmap}"], cwd=d)
    (d / "main.c").write_text(
        "#include <stdio.h>\nextern int api_call(int);\n"
        "int main(void) { printf(\"OK\\n\"); return api_call(0); }\n"
    )
    run(["gcc", "-o", "main", "main.c", "-Lnew", "-l:libv.so.1", f"-Wl,-rpath,{d}/old"], cwd=d)
    run(["gcc", "-o", "main_ok", "main.c", "-Lnew", "-l:libv.so.1", f"-Wl,-rpath,{d}/new"], cwd=d)
    # A consumer of `gone` (lazy, PLT only) and `gone_data` (data reference), satisfied at link
    # time by a stub library that is then replaced by one without them.
    (d / "stub.c").write_text("int gone(void) { return 1; }\nint gone_data = 3;\nint kept(void) { return 0; }\n")
    (d / "real.c").write_text("int kept(void) { return 0; }\n")
    (d / "stub").mkdir()
    (d / "real").mkdir()
    run(["gcc", "-shared", "-fPIC", "-o", "stub/libg.so", "stub.c", "-Wl,-soname,libg.so"], cwd=d)
    run(["gcc", "-shared", "-fPIC", "-o", "real/libg.so", "real.c", "-Wl,-soname,libg.so"], cwd=d)
    (d / "lazy.c").write_text(
        "#include <stdio.h>\nextern int gone(void); extern int kept(void);\n"
        "int main(int argc, char **argv) { printf(\"STARTED\\n\"); fflush(stdout);\n"
        "  if (argc > 1) return gone(); return kept(); }\n"
    )
    (d / "data.c").write_text(
        "extern int gone_data;\nint main(void) { return gone_data; }\n"
    )
    run(["gcc", "-o", "lazy", "lazy.c", "-Lstub", "-lg", f"-Wl,-rpath,{d}/real"], cwd=d)
    run(["gcc", "-o", "data", "data.c", "-Lstub", "-lg", f"-Wl,-rpath,{d}/real"], cwd=d)
    run(["gcc", "-o", "lazy_now", "lazy.c", "-Lstub", "-lg", f"-Wl,-rpath,{d}/real", "-Wl,-z,now"], cwd=d)
    (d / "needs_missing.c").write_text("extern int nothing_here(void);\nint main(void) { return nothing_here(); }\n")
    (d / "libnothing.c").write_text("int nothing_here(void) { return 0; }\n")
    run(["gcc", "-shared", "-fPIC", "-o", "stub/libnothing.so.3", "libnothing.c", "-Wl,-soname,libnothing.so.3"], cwd=d)
    run(["gcc", "-o", "needs_missing", "needs_missing.c", "-Lstub", "-l:libnothing.so.3",
         f"-Wl,-rpath,{d}/nowhere"], cwd=d)
    return d


def test_loads_clean_and_agrees_with_running_it(scenario: Path) -> None:
    code, doc = invoke(str(scenario / "main_ok"))
    assert code == 0 and doc["loads"] is True
    assert doc["schema"] == "ldscope.load/1"
    libs = {lib["name"]: lib for lib in doc["libraries"]}  # type: ignore[union-attr]
    assert libs["libv.so.1"]["path"] == f"{scenario}/new/libv.so.1"
    assert libs["libv.so.1"]["found_via"] == "runpath"
    assert real_run(scenario / "main_ok").stdout == "OK\n"


def test_missing_version_with_newest_and_other_copy(scenario: Path) -> None:
    code, doc = invoke(str(scenario / "main"), "--also-search", str(scenario / "new"))
    assert code == 1 and doc["loads"] is False
    real = real_run(scenario / "main")
    assert real.returncode != 0 and "version `V_2.0' not found" in real.stderr
    problems = doc["problems"]
    mv = [p for p in problems if p["kind"] == "missing-version"]  # type: ignore[union-attr, index]
    assert len(mv) == 1
    assert mv[0]["version"] == "V_2.0" and mv[0]["when"] == "load"
    assert mv[0]["message"] in real.stderr  # worded like glibc's own message
    kinds = {n["kind"]: n for n in mv[0]["near_misses"]}
    assert "offers up to V_1.0" in kinds["version-family"]["explanation"]
    assert kinds["other-copy"]["file"] == f"{scenario}/new/libv.so.1"


def test_first_call_vs_load_timing(scenario: Path) -> None:
    # PLT-only reference: the program starts, then dies at the first call.
    code, doc = invoke(str(scenario / "lazy"))
    assert code == 1
    unresolved = [p for p in doc["problems"] if p["kind"] == "unresolved-symbol"]  # type: ignore[union-attr, index]
    assert [(p["symbol"], p["when"]) for p in unresolved] == [("gone", "first-call")]
    started = real_run(scenario / "lazy")
    assert started.returncode == 0 and "STARTED" in started.stdout  # loads; gone() never called
    dies = real_run(scenario / "lazy", "call")
    assert "STARTED" in dies.stdout and "undefined symbol: gone" in dies.stderr
    # The same program linked -z now fails before main.
    code, doc = invoke(str(scenario / "lazy_now"))
    assert [p["when"] for p in doc["problems"] if p["kind"] == "unresolved-symbol"] == ["load"]  # type: ignore[union-attr, index]
    now = real_run(scenario / "lazy_now")
    assert "STARTED" not in now.stdout and "undefined symbol: gone" in now.stderr
    # A data reference binds at load.
    code, doc = invoke(str(scenario / "data"))
    assert [(p["symbol"], p["when"]) for p in doc["problems"] if p["kind"] == "unresolved-symbol"] == [  # type: ignore[union-attr, index]
        ("gone_data", "load")
    ]
    assert "undefined symbol: gone_data" in real_run(scenario / "data").stderr


def test_ld_bind_now_env_changes_timing(scenario: Path) -> None:
    report = simulate_load(str(scenario / "lazy"), LoadOptions(env=("LD_BIND_NOW=1",)))
    assert [p.when for p in report.problems if p.kind == "unresolved-symbol"] == ["load"]


def test_missing_library_lists_every_path_tried(scenario: Path) -> None:
    code, doc = invoke(str(scenario / "needs_missing"), "--clear-env", "--also-search", str(scenario / "stub"))
    assert code == 1
    lib = next(x for x in doc["libraries"] if x["name"] == "libnothing.so.3")  # type: ignore[union-attr]
    assert lib["path"] is None
    tried = [t["path"] for t in lib["tried"]]
    assert tried[0].startswith(f"{scenario}/nowhere/glibc-hwcaps/")
    assert f"{scenario}/nowhere/libnothing.so.3" in tried
    assert "/lib/x86_64-linux-gnu/libnothing.so.3" in tried  # default path, after the cache
    sources = [t["source"] for t in lib["tried"]]
    assert sources.index("runpath") < sources.index("ld.so.cache") < sources.index("default path")
    problem = next(p for p in doc["problems"] if p["kind"] == "missing-library")  # type: ignore[union-attr]
    assert problem["near_misses"][0]["file"] == f"{scenario}/stub/libnothing.so.3"
    real = real_run(scenario / "needs_missing")
    assert "libnothing.so.3: cannot open shared object file" in real.stderr


def test_ld_library_path_env_finds_it(scenario: Path) -> None:
    code, doc = invoke(str(scenario / "needs_missing"), "--clear-env", "--env", f"LD_LIBRARY_PATH={scenario}/stub")
    assert code == 0
    lib = next(x for x in doc["libraries"] if x["name"] == "libnothing.so.3")  # type: ignore[union-attr]
    assert lib["found_via"] == "LD_LIBRARY_PATH"
    env = {"LD_LIBRARY_PATH": f"{scenario}/stub", "PATH": os.environ.get("PATH", "")}
    assert real_run(scenario / "needs_missing", env=env).returncode == 0


def test_text_report_tree(scenario: Path) -> None:
    result = CliRunner().invoke(cli, ["load", str(scenario / "needs_missing"), "--clear-env"])
    assert result.exit_code == 1
    assert "DOES NOT LOAD" in result.stdout
    assert "libnothing.so.3 not found" in result.stdout
    assert "tried, in order:" in result.stdout


def test_bad_input_is_one_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.so"
    bad.write_bytes(b"not an elf at all")
    result = CliRunner().invoke(cli, ["load", str(bad)])
    assert result.exit_code == 2
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr
    result = CliRunner().invoke(cli, ["load", str(tmp_path / "absent.so")])
    assert result.exit_code == 2 and "no such file" in result.stderr


def test_python_extension_has_no_c_api_false_positives() -> None:
    import sysconfig

    dest = sysconfig.get_config_var("DESTSHARED")
    exts = sorted(p for p in os.listdir(dest) if p.endswith(".so"))
    assert exts
    for name in exts[:40]:
        report = simulate_load(os.path.join(dest, name))
        assert "python extension" in report.host
        unresolved = [p.symbol for p in report.problems if p.kind == "unresolved-symbol"]
        assert unresolved == [], (name, unresolved)


@pytest.mark.skipif(not os.path.isdir("/root/.pyenv/versions/3.12.1/include/python3.12"),
                    reason="CPython 3.12 headers (pyenv) not on this machine")
def test_extension_for_another_python_names_the_versions(tmp_path: Path) -> None:
    # Built against 3.12, using an API 3.11 lacks (PyType_GetDict is new in 3.12).
    src = tmp_path / "mod.c"
    src.write_text(
        "#include <Python.h>\n"
        "static PyObject *f(PyObject *s, PyObject *a) { return PyType_GetDict(&PyLong_Type); }\n"
        "static PyMethodDef m[] = {{\"f\", f, METH_NOARGS, 0}, {0}};\n"
        "static struct PyModuleDef d = {PyModuleDef_HEAD_INIT, \"mod\", 0, -1, m};\n"
        "PyMODINIT_FUNC PyInit_mod(void) { return PyModule_Create(&d); }\n"
    )
    out = tmp_path / "mod.cpython-312-x86_64-linux-gnu.so"
    run(["gcc", "-shared", "-fPIC", "-I/root/.pyenv/versions/3.12.1/include/python3.12", "-o", str(out), str(src)])
    py311 = "/root/.pyenv/versions/3.11.7/bin/python3.11"
    if not os.path.exists(py311):
        pytest.skip("CPython 3.11 interpreter not present")
    report = simulate_load(str(out), LoadOptions(python=py311))
    assert report.loads is False
    problem = next(p for p in report.problems if p.symbol == "PyType_GetDict")
    assert problem.when == "load"  # Python imports with RTLD_NOW
    near = problem.near_misses[0]
    assert near.kind == "python-api"
    assert "3.12" in near.explanation and "3.11" not in near.explanation.split("defined by")[1]
    # The real interpreter agrees: importing it fails on that symbol.
    code = (
        "import importlib.machinery as m, importlib.util as u, sys; "
        f"l = m.ExtensionFileLoader('mod', {str(out)!r}); "
        "u.module_from_spec(u.spec_from_loader('mod', l))"
    )
    proc = subprocess.run([py311, "-c", code], cwd=tmp_path, capture_output=True, text=True)
    assert "undefined symbol: PyType_GetDict" in proc.stderr
    py312 = "/root/.pyenv/versions/3.12.1/bin/python3.12"
    if os.path.exists(py312):
        assert simulate_load(str(out), LoadOptions(python=py312)).loads is True


def test_interposition_is_reported_as_information(tmp_path: Path) -> None:
    (tmp_path / "a.c").write_text("int shared_fn(void) { return 1; }\n")
    (tmp_path / "b.c").write_text("int shared_fn(void) { return 2; }\nint only_b(void) { return 3; }\n")
    run(["gcc", "-shared", "-fPIC", "-o", "liba.so", "a.c", "-Wl,-soname,liba.so"], cwd=tmp_path)
    run(["gcc", "-shared", "-fPIC", "-o", "libb.so", "b.c", "-Wl,-soname,libb.so"], cwd=tmp_path)
    (tmp_path / "m.c").write_text("int shared_fn(void); int only_b(void);\nint main(void) { return shared_fn() + only_b(); }\n")
    run(["gcc", "-o", "m", "m.c", "-L.", "-lb", f"-Wl,-rpath,{tmp_path}"], cwd=tmp_path)
    report = simulate_load(str(tmp_path / "m"), LoadOptions(env=(f"LD_PRELOAD={tmp_path}/liba.so",), bindings=True))
    assert report.loads is True
    notes = [p for p in report.problems if p.kind == "interposition"]
    assert [(p.symbol, p.library, p.severity) for p in notes] == [("shared_fn", f"{tmp_path}/liba.so", "info")]
    binding = next(b for b in report.bindings if b.symbol == "shared_fn" and b.referrer == f"{tmp_path}/m")
    assert binding.provider == f"{tmp_path}/liba.so"
    # The real loader agrees: liba's shared_fn (1) + libb's only_b (3).
    env = {"LD_PRELOAD": f"{tmp_path}/liba.so", "PATH": os.environ.get("PATH", "")}
    assert real_run(tmp_path / "m", env=env).returncode == 4
    # Without the preload nothing is interposed.
    plain = simulate_load(str(tmp_path / "m"), LoadOptions(clear_env=True))
    assert not [p for p in plain.problems if p.kind == "interposition"]


def test_setuid_program_ignores_ld_library_path(scenario: Path, tmp_path: Path) -> None:
    import shutil
    import stat

    exe = tmp_path / "needs_missing_suid"
    shutil.copy(scenario / "needs_missing", exe)
    env = (f"LD_LIBRARY_PATH={scenario}/stub",)
    assert simulate_load(str(exe), LoadOptions(env=env, clear_env=True)).loads is True
    exe.chmod(exe.stat().st_mode | stat.S_ISUID)
    report = simulate_load(str(exe), LoadOptions(env=env, clear_env=True))
    assert report.loads is False
    assert any(p.kind == "secure-mode" for p in report.problems)
    missing = next(p for p in report.problems if p.kind == "missing-library")
    assert not any(t.source == "LD_LIBRARY_PATH" for t in missing.tried)


def test_library_found_only_because_already_loaded_says_so(tmp_path: Path) -> None:
    (tmp_path / "other").mkdir()
    (tmp_path / "d.c").write_text("int dep_fn(void) { return 1; }\n")
    run(["gcc", "-shared", "-fPIC", "-o", "other/libdep.so", "d.c", "-Wl,-soname,libdep.so"], cwd=tmp_path)
    (tmp_path / "m.c").write_text("int dep_fn(void);\nint PyInit_m(void) { return dep_fn(); }\n")
    ext = tmp_path / "m.cpython-311-x86_64-linux-gnu.so"
    run(["gcc", "-shared", "-fPIC", "-o", ext.name, "m.c", "-Lother", "-ldep"], cwd=tmp_path)
    alone = simulate_load(str(ext))
    assert alone.loads is False
    assert any(p.kind == "missing-library" and p.library == "libdep.so" for p in alone.problems)
    with_dep = simulate_load(str(ext), LoadOptions(loaded=(str(tmp_path / "other" / "libdep.so"),)))
    assert with_dep.loads is True
    notes = [p for p in with_dep.problems if p.kind == "assumed-loaded"]
    assert len(notes) == 1 and notes[0].severity == "info"
    assert notes[0].library == f"{tmp_path}/other/libdep.so" and "only because" in notes[0].message
