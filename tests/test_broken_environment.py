"""ldscope survives the broken environment it diagnoses: LD_LIBRARY_PATH or LD_PRELOAD naming a
libstdc++.so.6 too old for ldscope's own numpy. The CLI re-executes itself without the loader
variables and still simulates them exactly as the user set them."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import ldscope.cli as cli_module
from ldscope import system
from ldscope.cli import LOADER_VARIABLES, SIMULATED_LOADER_ENV, interpreter_library_path
from ldscope.loader import make_environment
from tests.conftest import run

# The environment of every ldscope started here, before the variables a test sets.
CLEAN_ENV = {k: v for k, v in os.environ.items() if k not in (*LOADER_VARIABLES, SIMULATED_LOADER_ENV)}


@pytest.fixture(scope="module")
def broken(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A directory whose libstdc++.so.6 offers only GLIBCXX_3.4 and CXXABI_1.3: any newer
    user of libstdc++ (numpy's _multiarray_umath among them) fails with `version ... not found`."""
    if shutil.which("gcc") is None:
        pytest.skip("gcc is not installed")
    d = tmp_path_factory.mktemp("broken")
    (d / "fake.c").write_text("int ldscope_fake_libstdcxx(void) { return 0; }\n")
    (d / "fake.map").write_text("GLIBCXX_3.4 { global: ldscope_fake_libstdcxx; local: *; };\nCXXABI_1.3 { };\n")
    run(["gcc", "-shared", "-fPIC", "-o", "libstdc++.so.6", "fake.c", "-Wl,-soname,libstdc++.so.6",
         "-Wl,--version-script=fake.map"], cwd=d)
    # The premise: this directory on LD_LIBRARY_PATH really breaks ldscope's own dependencies.
    proc = subprocess.run([sys.executable, "-c", "import numpy"], capture_output=True, text=True,
                          env={**CLEAN_ENV, "LD_LIBRARY_PATH": str(d)})
    if proc.returncode == 0:
        pytest.skip("numpy does not load libstdc++.so.6 on this machine: the fake breaks nothing")
    assert "libstdc++.so.6: version" in proc.stderr and "not found" in proc.stderr, proc.stderr
    return d


@pytest.fixture(scope="module")
def program(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A C++ executable (std::string, iostream) in a directory of its own."""
    if shutil.which("g++") is None:
        pytest.skip("g++ is not installed")
    d = tmp_path_factory.mktemp("program")
    (d / "prog.cpp").write_text(
        "#include <iostream>\n#include <string>\n"
        "int main(int, char** argv) { std::string s(argv[0]); std::cout << s.size() << std::endl; }\n"
    )
    run(["g++", "-o", "prog", "prog.cpp"], cwd=d)
    (d / "prog.cpp").unlink()
    return d / "prog"


def ldscope(*args: str, **variables: str) -> subprocess.CompletedProcess[str]:
    """`python -m ldscope ARGS` in the clean environment plus `variables`."""
    return subprocess.run([sys.executable, "-m", "ldscope", *args], capture_output=True, text=True,
                          env={**CLEAN_ENV, **variables})


def clean_json(proc: subprocess.CompletedProcess[str], status: int) -> Any:
    """The JSON document of a run that ended with `status` and no traceback."""
    assert "Traceback" not in proc.stderr, proc.stderr
    assert proc.returncode == status, proc.stderr
    return json.loads(proc.stdout)


def test_without_the_reexec_the_broken_directory_breaks_ldscope(broken: Path, program: Path) -> None:
    # The marker already set: no re-exec, so ldscope's own `import numpy` meets the fake.
    proc = ldscope("load", "--format", "json", str(program), LD_LIBRARY_PATH=str(broken),
                   **{SIMULATED_LOADER_ENV: "{}"})
    assert proc.returncode == 1
    assert "Traceback" in proc.stderr and "not found" in proc.stderr
    assert proc.stdout == ""


def test_load_simulates_the_ld_library_path_it_runs_without(broken: Path, program: Path) -> None:
    doc = clean_json(ldscope("load", "--format", "json", str(program), LD_LIBRARY_PATH=str(broken)), 1)
    assert doc["schema"] == "ldscope.load/1" and doc["loads"] is False
    libstdcxx = next(lib for lib in doc["libraries"] if lib["name"] == "libstdc++.so.6")
    assert libstdcxx["path"] == str(broken / "libstdc++.so.6")
    assert libstdcxx["found_via"] == "LD_LIBRARY_PATH"
    assert any(p["kind"] == "missing-version" and p["library"] == libstdcxx["path"] for p in doc["problems"])
    # What it predicts is what happens.
    real = subprocess.run([str(program)], capture_output=True, text=True,
                          env={**CLEAN_ENV, "LD_LIBRARY_PATH": str(broken)})
    assert real.returncode != 0 and "not found" in real.stderr


def test_load_of_a_file_that_loads_exits_clean(broken: Path) -> None:
    doc = clean_json(ldscope("load", "--format", "json", "/bin/ls", LD_LIBRARY_PATH=str(broken)), 0)
    assert doc["loads"] is True
    tried = [t for lib in doc["libraries"] for t in lib["tried"]]
    assert any(t["source"] == "LD_LIBRARY_PATH" and t["path"].startswith(f"{broken}/") for t in tried)


def test_scan_simulates_the_ld_library_path_it_runs_without(broken: Path, program: Path) -> None:
    doc = clean_json(ldscope("scan", "--format", "json", str(program.parent), LD_LIBRARY_PATH=str(broken)), 1)
    assert doc["schema"] == "ldscope.scan/2"
    (file,) = doc["files"]
    assert file["path"] == str(program) and file["loads"] is False
    fake = str(broken / "libstdc++.so.6")
    assert any(p["kind"] == "missing-version" and p["library"] == fake for p in file["problems"])
    # The modelled environment has the variable, and its bad entry is the one root cause: the
    # old copy shadows the system's (no separate "found only via LD_LIBRARY_PATH" warning, and
    # none of the symbols the old copy lacks is a cause of its own, with near-miss advice).
    (finding,) = doc["findings"]
    assert finding["cause"] == f"shadowed:{fake}" and finding["severity"] == "error"
    assert finding["title"].startswith(f"LD_LIBRARY_PATH entry {broken} shadows ")
    assert "with an older copy (offers up to GLIBCXX_3.4, 1 file needs GLIBCXX_3.4." in finding["title"]
    assert all(p["near_misses"] == [] for p in finding["problems"])
    assert {p["kind"] for p in finding["problems"]} == {"missing-version", "unresolved-symbol"}


def test_a_broken_preload_is_simulated_not_suffered(broken: Path, program: Path) -> None:
    fake = str(broken / "libstdc++.so.6")
    # The premise: preloaded, the fake is the libstdc++.so.6 numpy gets.
    assert subprocess.run([sys.executable, "-c", "import numpy"], capture_output=True,
                          env={**CLEAN_ENV, "LD_PRELOAD": fake}).returncode != 0
    doc = clean_json(ldscope("load", "--format", "json", str(program), LD_PRELOAD=fake), 1)
    assert doc["libraries"][0]["path"] == fake and doc["libraries"][0]["found_via"] == "preload"
    assert any(p["kind"] == "missing-version" and p["library"] == fake for p in doc["problems"])


def test_a_missing_preload_is_simulated(tmp_path: Path) -> None:
    missing = str(tmp_path / "libnothere.so")
    doc = clean_json(ldscope("load", "--format", "json", "/bin/true", LD_PRELOAD=missing), 0)
    assert doc["loads"] is True
    assert any(lib["name"] == missing and lib["path"] is None for lib in doc["libraries"])


def test_the_console_script_reexecutes_too(broken: Path, program: Path) -> None:
    script = Path(sys.executable).parent / "ldscope"
    if not script.is_file():
        pytest.skip("no ldscope console script next to this interpreter")
    proc = subprocess.run([str(script), "load", "--format", "json", str(program)], capture_output=True,
                          text=True, env={**CLEAN_ENV, "LD_LIBRARY_PATH": str(broken)})
    doc = clean_json(proc, 1)
    assert doc["libraries"][0]["found_via"] == "LD_LIBRARY_PATH"


# Run before main(): what this process's environment is, one line per process that runs it.
SHOW_ENV = ("import json, os, ldscope.cli\n"
            "print(json.dumps([os.environ.get('LD_LIBRARY_PATH'), os.environ.get('LD_PRELOAD'),\n"
            "                  os.environ.get('" + SIMULATED_LOADER_ENV + "')]), flush=True)\n"
            "ldscope.cli.main()\n")


def started(variables: dict[str, str]) -> list[list[str | None]]:
    """For `python -c SHOW_ENV --version` started with `variables`: each process's loader
    variables and carrier, in order (the re-executed one second)."""
    proc = subprocess.run([sys.executable, "-c", SHOW_ENV, "--version"], capture_output=True, text=True,
                          env={**CLEAN_ENV, **variables})
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[-1].startswith("ldscope, version ")
    return [json.loads(line) for line in lines[:-1]]


def test_no_reexec_when_no_loader_variable_is_set() -> None:
    assert started({}) == [[None, None, None]]
    assert started({"LD_PRELOAD": ""}) == [[None, "", None]]  # empty: nothing for ld.so to load


def test_reexec_once_without_the_variables_carrying_them() -> None:
    variables = {"LD_LIBRARY_PATH": "/nonexistent/ldscope-test", "LD_PRELOAD": "libnothere-ldscope.so"}
    first, second = started(variables)
    assert first == [variables["LD_LIBRARY_PATH"], variables["LD_PRELOAD"], None]
    assert second[:2] == [None, None]
    assert second[2] is not None and json.loads(second[2]) == variables


def test_reexec_keeps_the_directory_libpython_was_loaded_from(broken: Path) -> None:
    libpython = [p for p in cli_module._mapped_files() or [] if Path(p).name.startswith("libpython")]
    if not libpython:
        pytest.skip("this interpreter is linked statically with libpython")
    keep = str(Path(libpython[0]).parent)
    original = f"{broken}:{keep}"
    first, second = started({"LD_LIBRARY_PATH": original})
    assert first == [original, None, None]
    assert second[:2] == [keep, None]
    assert second[2] is not None and json.loads(second[2]) == {"LD_LIBRARY_PATH": original}
    # Only the interpreter's own directory: nothing to take away, so no re-exec at all.
    assert started({"LD_LIBRARY_PATH": keep}) == [[keep, None, None]]


def test_interpreter_library_path_keeps_only_libpython_directories(tmp_path: Path) -> None:
    mapped = ["/opt/py/lib/libpython3.11.so.1.0", "/broken/libstdc++.so.6", "/usr/lib/x86_64-linux-gnu/libc.so.6"]
    assert interpreter_library_path("/broken:/opt/py/lib;/other", mapped) == "/opt/py/lib"
    assert interpreter_library_path("/opt/py/lib/:/broken:/opt/py/lib", mapped) == "/opt/py/lib/:/opt/py/lib"
    # libpython found through RUNPATH, or not mapped at all (a static interpreter): keep nothing.
    assert interpreter_library_path("/broken:/opt/other/lib", mapped) == ""
    assert interpreter_library_path("/broken:/opt/py/lib", mapped[1:]) == ""
    assert interpreter_library_path("$ORIGIN/../lib:/broken", mapped, origin="/opt/py/bin") == "$ORIGIN/../lib"
    # A directory reached through a symlink: the maps show the resolved path.
    (tmp_path / "real" / "lib").mkdir(parents=True)
    (tmp_path / "real" / "lib" / "libpython3.12.so.1.0").write_bytes(b"")
    (tmp_path / "py").symlink_to(tmp_path / "real")
    assert interpreter_library_path(f"/broken:{tmp_path}/py/lib", [f"{tmp_path}/real/lib/libpython3.12.so.1.0"]) \
        == f"{tmp_path}/py/lib"


def test_process_environment_merges_the_carried_values_back(monkeypatch: pytest.MonkeyPatch) -> None:
    assert system.SIMULATED_LOADER_ENV == SIMULATED_LOADER_ENV  # the CLI writes what system reads
    monkeypatch.setenv(SIMULATED_LOADER_ENV, json.dumps({"LD_LIBRARY_PATH": "/broken:/opt/py/lib",
                                                         "LD_PRELOAD": "libfake.so"}))
    monkeypatch.setenv("LD_LIBRARY_PATH", "/opt/py/lib")  # what the re-executed process kept
    monkeypatch.delenv("LD_PRELOAD", raising=False)
    env = system.process_environment()
    assert env["LD_LIBRARY_PATH"] == "/broken:/opt/py/lib" and env["LD_PRELOAD"] == "libfake.so"
    assert SIMULATED_LOADER_ENV not in env
    assert env["PATH"] == os.environ["PATH"]
    assert make_environment(detect_cpu=False).ld_library_path == ("/broken", "/opt/py/lib")


@pytest.mark.parametrize("carried", ["", "not json", "[1, 2]", '{"LD_PRELOAD": 3}'])
def test_a_malformed_carrier_is_dropped(monkeypatch: pytest.MonkeyPatch, carried: str) -> None:
    monkeypatch.setenv(SIMULATED_LOADER_ENV, carried)
    monkeypatch.setenv("LD_LIBRARY_PATH", "/as/it/is")
    monkeypatch.delenv("LD_PRELOAD", raising=False)
    env = system.process_environment()
    assert SIMULATED_LOADER_ENV not in env and "LD_PRELOAD" not in env
    assert env["LD_LIBRARY_PATH"] == "/as/it/is"


def test_when_exec_fails_ldscope_goes_on_in_process(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[tuple[str, list[str], dict[str, str]]] = []

    def failing_execve(path: str, argv: list[str], env: dict[str, str]) -> None:
        calls.append((path, argv, env))
        raise OSError("exec refused")

    monkeypatch.setattr(os, "execve", failing_execve)
    monkeypatch.delenv(SIMULATED_LOADER_ENV, raising=False)
    monkeypatch.setenv("LD_PRELOAD", "libfake.so")
    monkeypatch.setattr(sys, "argv", ["/venv/bin/ldscope", "scan", "--format", "json"])
    monkeypatch.setattr(sys, "orig_argv", ["/venv/bin/python", "-I", "/venv/bin/ldscope", "scan", "--format", "json"])
    cli_module._reexec_without_loader_variables()
    (path, argv, env), = calls
    assert path == sys.executable and argv == [sys.executable, "-I", "/venv/bin/ldscope", "scan", "--format", "json"]
    assert "LD_PRELOAD" not in env and json.loads(env[SIMULATED_LOADER_ENV])["LD_PRELOAD"] == "libfake.so"
    assert os.environ["LD_PRELOAD"] == "libfake.so" and SIMULATED_LOADER_ENV not in os.environ


def test_child_argv(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "argv", ["/src/ldscope/__main__.py", "load", "x"])
    monkeypatch.setattr(sys, "orig_argv", ["python3", "-X", "utf8", "-m", "ldscope", "load", "x"])
    assert cli_module._child_argv() == [sys.executable, "-X", "utf8", "-m", "ldscope", "load", "x"]
    # Started some way orig_argv does not show: `-m ldscope` with the same arguments.
    monkeypatch.setattr(sys, "orig_argv", ["python3"])
    assert cli_module._child_argv() == [sys.executable, "-m", "ldscope", "load", "x"]
