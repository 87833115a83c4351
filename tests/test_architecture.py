"""The layout holds what docs/architecture.md promises: the pipeline packages and nothing else
at the top level, one capture of the process environment, one SARIF writer, a documented
public API per package, and the import-linter contracts of pyproject.toml."""

from __future__ import annotations

import ast
import importlib
import pkgutil
import re
from pathlib import Path

import pytest

import ldscope

SRC = Path(ldscope.__file__).parent
PACKAGES = ("analysis", "cli", "cxx", "elf", "explain", "fixes", "inspection", "linker", "loader", "report",
            "scan", "system", "vocab")


def _modules() -> list[Path]:
    return sorted(SRC.rglob("*.py"))


def test_import_contracts_are_kept(capsys: pytest.CaptureFixture[str]) -> None:
    """The import-linter contracts of pyproject.toml: the pipeline's layers, no cycles
    between siblings, private modules imported only from inside their package."""
    from importlinter.cli import lint_imports

    config = Path(__file__).resolve().parent.parent / "pyproject.toml"
    status = lint_imports(config_filename=str(config), no_cache=True, no_logo=True)
    out = capsys.readouterr().out
    assert status == 0, out
    assert "3 kept, 0 broken" in out


def test_only_the_pipeline_packages_and_three_modules_at_the_top() -> None:
    top = sorted(p.name for p in SRC.iterdir() if p.suffix == ".py")
    assert top == ["__init__.py", "__main__.py", "errors.py"]
    packages = sorted(p.name for p in SRC.iterdir() if (p / "__init__.py").exists())
    assert packages == sorted(PACKAGES)


def test_os_environ_is_read_in_one_place() -> None:
    """Nothing below the CLI reads os.environ: system/_environment.py captures it as the
    default (the CLI only sets a variable for numpy's thread pool before anything runs)."""
    readers = []
    for path in _modules():
        rel = path.relative_to(SRC).as_posix()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Attribute) and node.attr in ("environ", "getenv", "expanduser") and \
                    isinstance(node.value, (ast.Name, ast.Attribute)):
                readers.append(rel)
    assert sorted(set(readers)) == ["cli/__init__.py", "system/_environment.py"]


def test_one_sarif_writer() -> None:
    writers = [p.relative_to(SRC).as_posix() for p in _modules() if '"2.1.0"' in p.read_text()]
    assert writers == ["report/_sarif.py"]


def test_library_never_prints() -> None:
    """Only the CLI writes to the terminal; everything else returns what it found."""
    printing = []
    for path in _modules():
        rel = path.relative_to(SRC).as_posix()
        if rel.startswith("cli/"):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "print":
                printing.append(rel)
            if isinstance(node, ast.Attribute) and node.attr in ("stdout", "stderr") and \
                    isinstance(node.value, ast.Name) and node.value.id == "sys":
                printing.append(rel)
    assert printing == []


@pytest.mark.parametrize("package", PACKAGES)
def test_package_has_a_docstring_and_its_api_exists(package: str) -> None:
    module = importlib.import_module(f"ldscope.{package}")
    assert module.__doc__ and len(module.__doc__.strip()) > 40
    for name in getattr(module, "__all__", ()):
        assert hasattr(module, name), f"ldscope.{package}.__all__ names {name}, which it does not define"


def test_private_modules_are_marked() -> None:
    """Inside a package every module is private (`_name.py`) except the package's own
    `__init__` and a few that are themselves a public vocabulary."""
    public = {"elf/constants.py", "cli/common.py", "cli/info_cmd.py", "cli/link_cmd.py", "cli/load_cmd.py",
              "cli/scan_cmd.py", "cli/symbols_cmd.py"}
    unmarked = [p.relative_to(SRC).as_posix() for p in _modules()
                if p.parent != SRC and not p.name.startswith("_") and p.relative_to(SRC).as_posix() not in public]
    assert unmarked == []


def test_every_module_has_a_docstring_and_public_functions_too() -> None:
    missing = []
    for path in _modules():
        tree = ast.parse(path.read_text())
        rel = path.relative_to(SRC).as_posix()
        if not ast.get_docstring(tree):
            missing.append(rel)
        for node in tree.body:
            if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and not node.name.startswith("_") \
                    and not ast.get_docstring(node):
                missing.append(f"{rel}:{node.name}")
    assert missing == []


def test_top_level_api_is_lazy_and_complete() -> None:
    for name in ldscope.__all__:
        assert getattr(ldscope, name) is not None
    with pytest.raises(AttributeError):
        ldscope.not_a_name  # noqa: B018


def test_walk_packages_imports_cleanly() -> None:
    """Every module imports on its own (no hidden import cycle through a package __init__)."""
    names = [m.name for m in pkgutil.walk_packages([str(SRC)], "ldscope.") if m.name != "ldscope.__main__"]
    assert len(names) > 90
    for name in names:
        importlib.import_module(name)
    assert all(re.fullmatch(r"ldscope(\.[a-z_]+)+", n) for n in names)


def test_a_json_scan_never_imports_the_link_model(tmp_path: Path) -> None:
    """`scan --format json` imports only its renderer: SARIF's rule tables pull in the linker."""
    import subprocess
    import sys

    code = ("import sys\nfrom ldscope import cli\n"
            "try:\n    cli.cli.main(args=['scan', '--format', 'json', '-o', sys.argv[1], sys.argv[2]],"
            " standalone_mode=False)\nexcept SystemExit:\n    pass\n"
            "print(sorted(m for m in sys.modules if m.startswith(('ldscope.linker', 'ldscope.fixes'))))")
    (tmp_path / "empty").mkdir()
    done = subprocess.run([sys.executable, "-c", code, str(tmp_path / "out.json"), str(tmp_path / "empty")],
                          capture_output=True, text=True, env={"PYTHONPATH": str(SRC.parent), "HOME": str(tmp_path)},
                          check=True)
    assert done.stdout.strip() == "[]"
    assert (tmp_path / "out.json").read_text().startswith("{")
