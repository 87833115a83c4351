"""system._pyimports: the static import graph, checked by hand-written trees and against the real
importer: random package trees imported in a subprocess (extension modules stood in for by a
finder that records their loading, and can fail one on demand), importlib's PathFinder for
resolution, and the real-world tier's venvs (numpy, scipy, PIL, torch) when they are built."""

from __future__ import annotations

import importlib.machinery
import json
import os
import subprocess
import sys
import tempfile
import textwrap
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ldscope.system._pyimports import ImportClosure, ImportGraph
from tests.scan_support import CACHE_DIR

EXT = ".cpython-311-x86_64-linux-gnu.so"
SUFFIXES = (EXT, ".abi3.so", ".so")


def _tree(site: Path, files: dict[str, str]) -> None:
    """Write `files` (relative path -> source; extension files get empty contents) under `site`."""
    for rel, text in files.items():
        path = site / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("" if rel.endswith(".so") else textwrap.dedent(text))


def _rel(site: Path, paths: tuple[str, ...]) -> list[str]:
    return [os.path.relpath(p, site) for p in paths]


def _closure(site: Path, name: str) -> tuple[list[str], list[str]]:
    """(required, optional) of `import name`, as paths relative to `site`."""
    closure = ImportGraph((str(site),), SUFFIXES).closure(name)
    return _rel(site, closure.required), _rel(site, closure.optional)


# --------------------------------------------------------------------------- hand-written trees
def test_dotted_import_loads_every_parent_first(tmp_path: Path) -> None:
    _tree(tmp_path, {
        "main/__init__.py": "import a.b\n",
        f"a/_ia{EXT}": "", "a/__init__.py": "from . import _ia\n",
        f"a/_ib{EXT}": "", "a/b.py": "from a import _ib\n",
    })
    assert _closure(tmp_path, "main") == ([f"a/_ia{EXT}", f"a/_ib{EXT}"], [])
    # Importing a.b directly runs a/__init__ first as well.
    assert _closure(tmp_path, "a.b") == ([f"a/_ia{EXT}", f"a/_ib{EXT}"], [])
    # ... and `import a` alone does not run a.b.
    assert _closure(tmp_path, "a") == ([f"a/_ia{EXT}"], [])


def test_relative_imports_with_one_two_and_three_dots(tmp_path: Path) -> None:
    _tree(tmp_path, {
        "p/__init__.py": "",
        f"p/_top{EXT}": "",
        "p/q/__init__.py": "",
        f"p/q/_mid{EXT}": "",
        "p/q/helper.py": "from ._mid import thing\n",
        "p/q/r/__init__.py": "",
        f"p/q/r/_own{EXT}": "",
        "p/q/r/mod.py": textwrap.dedent("""\
            from . import _own
            from .. import helper
            from ... import _top
            """),
    })
    required, optional = _closure(tmp_path, "p.q.r.mod")
    assert required == [f"p/q/r/_own{EXT}", f"p/q/_mid{EXT}", f"p/_top{EXT}"]
    assert optional == []
    # Too many dots (beyond the top-level package) is an error in Python: nothing is followed.
    _tree(tmp_path, {"p/q/bad.py": "from .... import _top\n"})
    assert _closure(tmp_path, "p.q.bad") == ([], [])


def test_from_package_import_name_follows_submodules_not_attributes(tmp_path: Path) -> None:
    _tree(tmp_path, {
        "pkg/__init__.py": "helper = 1\n",
        f"pkg/_sub{EXT}": "",
        "user/__init__.py": "from pkg import helper, _sub\n",
        "attr_only/__init__.py": "from pkg import helper\n",
    })
    graph = ImportGraph((str(tmp_path),), SUFFIXES)
    assert graph.resolve("pkg.helper") is None  # an attribute: no file
    assert _rel(tmp_path, graph.closure("user").required) == [f"pkg/_sub{EXT}"]
    assert graph.closure("attr_only") == ImportClosure((), ())


def test_parenthesised_multi_line_from_import(tmp_path: Path) -> None:
    _tree(tmp_path, {
        f"p/_a{EXT}": "", f"p/_b{EXT}": "", f"p/_c{EXT}": "",
        "p/__init__.py": textwrap.dedent("""\
            from p import (
                _a,  # the first
                _b as bee,
                # a comment line
                _c,
            )
            """),
    })
    assert _closure(tmp_path, "p") == ([f"p/_a{EXT}", f"p/_b{EXT}", f"p/_c{EXT}"], [])


def test_backslash_continuations(tmp_path: Path) -> None:
    _tree(tmp_path, {
        f"p/_a{EXT}": "", f"p/_b{EXT}": "", f"p/_c{EXT}": "", f"p/_d{EXT}": "",
        "p/__init__.py": "from p import _a, \\\n    _b\nimport p._c, \\\n    p._d\n",
    })
    assert _closure(tmp_path, "p") == ([f"p/_a{EXT}", f"p/_b{EXT}", f"p/_c{EXT}", f"p/_d{EXT}"], [])


def test_function_bodies_are_not_followed(tmp_path: Path) -> None:
    _tree(tmp_path, {
        **{f"p/_{n}{EXT}": "" for n in ("plain", "async_", "sig", "one", "after", "method", "cls")},
        "p/__init__.py": textwrap.dedent("""\
            def plain():
                from . import _plain


            async def coroutine():
                from . import _async_


            def long_signature(
                a: int,
                b: str = "x",
            ) -> int:
                from . import _sig
                return 0


            def one_liner(): return 1
            from . import _after


            class Holder:
                from . import _cls

                def method(self):
                    from . import _method
            """),
    })
    # The torch case: the signature's `) -> int:` at column 0 must not end the function early.
    assert _closure(tmp_path, "p") == ([f"p/_after{EXT}", f"p/_cls{EXT}"], [])


def test_type_checking_blocks_are_not_followed(tmp_path: Path) -> None:
    _tree(tmp_path, {
        **{f"p/_{n}{EXT}": "" for n in ("tc", "typing_tc", "one", "runtime", "after")},
        "p/__init__.py": textwrap.dedent("""\
            import typing
            from typing import TYPE_CHECKING

            if TYPE_CHECKING:
                from . import _tc
            if typing.TYPE_CHECKING:  # a comment
                from . import _typing_tc
            else:
                from . import _runtime
            if TYPE_CHECKING: from . import _one
            from . import _after
            """),
    })
    assert _closure(tmp_path, "p") == ([f"p/_runtime{EXT}", f"p/_after{EXT}"], [])


def test_swallowing_try_makes_an_import_optional(tmp_path: Path) -> None:
    _tree(tmp_path, {
        f"p/_speedup{EXT}": "", f"p/_core{EXT}": "", f"p/_fin{EXT}": "", f"p/_handler{EXT}": "",
        "p/__init__.py": textwrap.dedent("""\
            try:
                from . import _speedup
            except ImportError:
                pass
            try:
                from . import _core
            except ImportError as e:
                raise ImportError("p's extension is broken") from e
            try:
                from . import _fin
            finally:
                pass
            try:
                import never_installed
            except ImportError:
                from . import _handler
            """),
    })
    # numpy's pattern (re-raised with a message) and try/finally keep the import required; an
    # import in a handler runs only sometimes but fails the module when it does.
    assert _closure(tmp_path, "p") == (
        [f"p/_core{EXT}", f"p/_fin{EXT}", f"p/_handler{EXT}"], [f"p/_speedup{EXT}"])


def test_dotted_import_under_a_swallowing_try_guards_its_parents_too(tmp_path: Path) -> None:
    _tree(tmp_path, {
        f"opt/_native{EXT}": "", "opt/__init__.py": "from . import _native\n", "opt/plot.py": "",
        "user/__init__.py": "try:\n    import opt.plot\nexcept ImportError:\n    pass\n",
        "strict/__init__.py": "import opt.plot\n",
    })
    # `import opt.plot` runs opt/__init__ first: its failure is swallowed by the same handler.
    assert _closure(tmp_path, "user") == ([], [f"opt/_native{EXT}"])
    assert _closure(tmp_path, "strict") == ([f"opt/_native{EXT}"], [])


def test_docstrings_are_not_code(tmp_path: Path) -> None:
    _tree(tmp_path, {
        **{f"p/_{n}{EXT}": "" for n in ("mod_doc", "cls_doc", "fn_doc", "real")},
        "p/__init__.py": textwrap.dedent('''\
            """The package.

            Example::

                from p import _mod_doc
            """


            class Thing:
                """A thing.

                Example:
                    from p import _cls_doc
                """

                x = 1


            def function():
                """Example:

                    from p import _fn_doc
                """


            from p import _real
            '''),
    })
    assert _closure(tmp_path, "p") == ([f"p/_real{EXT}"], [])


def test_cycles_terminate_and_load_both_sides(tmp_path: Path) -> None:
    _tree(tmp_path, {
        f"a/_ea{EXT}": "", f"b/_eb{EXT}": "",
        "a/__init__.py": "import b\nfrom . import _ea\n",
        "b/__init__.py": "import a\nfrom . import _eb\n",
    })
    # import a: a starts, imports b, b's `import a` finds a partially initialised (nothing more
    # to load), b loads _eb, then a loads _ea.
    assert _closure(tmp_path, "a") == ([f"b/_eb{EXT}", f"a/_ea{EXT}"], [])
    assert _closure(tmp_path, "b") == ([f"a/_ea{EXT}", f"b/_eb{EXT}"], [])


def test_namespace_packages(tmp_path: Path) -> None:
    _tree(tmp_path, {
        f"ns/_e{EXT}": "",
        "ns/mod.py": "from . import _e\n",
        "user/__init__.py": "import ns.mod\n",
    })
    graph = ImportGraph((str(tmp_path),), SUFFIXES)
    ns = graph.resolve("ns")
    assert ns is not None and ns.is_package and ns.path == str(tmp_path / "ns")
    assert graph.closure("ns") == ImportClosure((), ())
    assert _rel(tmp_path, graph.closure("ns.mod").required) == [f"ns/_e{EXT}"]
    assert _rel(tmp_path, graph.closure("user").required) == [f"ns/_e{EXT}"]


def test_another_package_guarding_a_module_makes_it_optional_everywhere(tmp_path: Path) -> None:
    _tree(tmp_path, {
        f"fast/_speed{EXT}": "", "fast/__init__.py": "",
        "app/__init__.py": "from . import compat, work\n",
        "app/compat.py": "try:\n    import fast._speed\nexcept ImportError:\n    pass\n",
        "app/work.py": "import fast._speed\n",
    })
    # app is prepared for fast._speed to fail (it guards it), so it is optional in all of app.
    assert _closure(tmp_path, "app") == ([], [f"fast/_speed{EXT}"])
    # `import app.work` runs app/__init__ first, which imported work already: the same answer.
    assert _closure(tmp_path, "app.work") == ([], [f"fast/_speed{EXT}"])
    # Imported on its own, work's unguarded import is required.
    _tree(tmp_path, {"solo/__init__.py": "", "solo/work.py": "import fast._speed\n"})
    assert _closure(tmp_path, "solo.work") == ([f"fast/_speed{EXT}"], [])


def test_a_package_guarding_its_own_module_keeps_it_required(tmp_path: Path) -> None:
    # torch: torch/__init__ imports torch._C; torch.cuda guards `import torch._C._nvtx` (a
    # submodule the extension creates); torch._C stays required.
    _tree(tmp_path, {
        f"t/_C{EXT}": "", f"t/_opt{EXT}": "",
        "t/__init__.py": "from t import _C\nfrom t import cuda\nfrom t import _opt\n",
        "t/cuda.py": textwrap.dedent("""\
            try:
                import t._C._nvtx
            except ImportError:
                pass
            try:
                from t import _opt
            except ImportError:
                pass
            """),
    })
    assert _closure(tmp_path, "t") == ([f"t/_C{EXT}", f"t/_opt{EXT}"], [])
    # `import t.cuda` runs t/__init__ first, which requires both.
    assert _closure(tmp_path, "t.cuda") == ([f"t/_C{EXT}", f"t/_opt{EXT}"], [])


def test_load_order_is_statement_order_depth_first(tmp_path: Path) -> None:
    _tree(tmp_path, {
        "main/__init__.py": "import a\nimport b\nfrom . import _em\n",
        f"main/_em{EXT}": "",
        "a/__init__.py": "from . import _ea1\nimport c\nfrom . import _ea2\n",
        f"a/_ea1{EXT}": "", f"a/_ea2{EXT}": "",
        "b/__init__.py": "import c\nfrom . import _eb\n",
        f"b/_eb{EXT}": "",
        "c/__init__.py": "from . import _ec\n",
        f"c/_ec{EXT}": "",
    })
    assert _closure(tmp_path, "main")[0] == [
        f"a/_ea1{EXT}", f"c/_ec{EXT}", f"a/_ea2{EXT}", f"b/_eb{EXT}", f"main/_em{EXT}"]


def test_required_keeps_load_order_when_an_optional_path_came_first(tmp_path: Path) -> None:
    _tree(tmp_path, {
        "main/__init__.py": "try:\n    from . import sub\nexcept ImportError:\n    pass\nimport b\nfrom . import sub\n",
        "main/sub.py": "from . import _es\n", f"main/_es{EXT}": "",
        "b/__init__.py": "from . import _eb\n", f"b/_eb{EXT}": "",
    })
    # The guarded import of main.sub loads _es first (when it can); the unguarded one after
    # `import b` makes it required (a failure the first time is retried there, and fails again).
    assert _closure(tmp_path, "main") == ([f"main/_es{EXT}", f"b/_eb{EXT}"], [])


def test_a_parents_optional_load_comes_first_in_a_submodules_closure(tmp_path: Path) -> None:
    _tree(tmp_path, {
        "p/__init__.py": "try:\n    from . import a\nexcept ImportError:\n    pass\n",
        "p/a.py": "from . import _e1\n", f"p/_e1{EXT}": "",
        "p/m.py": "from . import b\nfrom . import a\n",
        "p/b.py": "from . import _e2\n", f"p/_e2{EXT}": "",
    })
    # import p.m: p/__init__ runs first and loads _e1 (p.a) when it can; p.m requires both.
    assert _closure(tmp_path, "p") == ([], [f"p/_e1{EXT}"])
    assert _closure(tmp_path, "p.m") == ([f"p/_e1{EXT}", f"p/_e2{EXT}"], [])


def test_block_headers_over_several_lines(tmp_path: Path) -> None:
    # black's style: the closing bracket of a long header at the block's own indentation.
    _tree(tmp_path, {
        **{f"p/_{n}{EXT}": "" for n in ("if", "cls", "with", "doc", "not_tc")},
        "p/__init__.py": textwrap.dedent('''\
            import contextlib
            import sys
            from typing import TYPE_CHECKING
            if (
                sys.version_info >= (3, 8)
                and True
            ):
                from . import _if
            class Base(
                object,
            ):
                """A class.

                    from . import _doc
                """
                from . import _cls
            with (
                contextlib.nullcontext()
            ):
                from . import _with
            if not TYPE_CHECKING:
                from . import _not_tc
            '''),
    })
    assert _closure(tmp_path, "p") == (
        [f"p/_if{EXT}", f"p/_cls{EXT}", f"p/_with{EXT}", f"p/_not_tc{EXT}"], [])


def test_extension_beats_source_and_package_beats_both(tmp_path: Path) -> None:
    _tree(tmp_path, {
        f"p/m{EXT}": "", "p/m.py": "",
        "p/n.abi3.so": "", "p/n.so": "",
        "p/k.so": "", "p/k.py": "",
        "p/pk/__init__.py": "", f"p/pk{EXT}": "",
        "p/__init__.py": "",
    })
    graph = ImportGraph((str(tmp_path),), SUFFIXES)
    found = {leaf: graph.resolve(f"p.{leaf}") for leaf in ("m", "n", "k", "pk")}
    assert {leaf: (os.path.relpath(f.path, tmp_path) if f else None) for leaf, f in found.items()} == {
        "m": f"p/m{EXT}", "n": "p/n.abi3.so", "k": "p/k.so", "pk": "p/pk/__init__.py"}


@given(st.data())
@settings(max_examples=40, deadline=None)
def test_resolution_matches_importlib_file_finder(data: st.DataObject) -> None:
    """Any mix of `m.<suffix>`, `m.py`, `m/` and `m/__init__.py`: the file the graph resolves is
    the one importlib's FileFinder (with this interpreter's suffixes and loaders) finds."""
    suffixes = tuple(importlib.machinery.EXTENSION_SUFFIXES)
    kinds = data.draw(st.sets(st.sampled_from([*suffixes, ".py", "dir", "package"]), min_size=1))
    with tempfile.TemporaryDirectory() as tmp:
        for kind in kinds:
            if kind in ("dir", "package"):
                os.makedirs(os.path.join(tmp, "m"), exist_ok=True)
                if kind == "package":
                    Path(tmp, "m", "__init__.py").write_text("")
            else:
                Path(tmp, "m" + kind).write_text("")
        finder = importlib.machinery.FileFinder(
            tmp, (importlib.machinery.ExtensionFileLoader, list(suffixes)),
            (importlib.machinery.SourceFileLoader, importlib.machinery.SOURCE_SUFFIXES))
        spec = finder.find_spec("m")
        found = ImportGraph((tmp,), suffixes).resolve("m")
        assert spec is not None and found is not None
        if spec.origin in (None, "namespace"):  # a namespace package: no file
            assert found.is_package and found.path == os.path.join(tmp, "m")
        else:
            assert found.path == spec.origin
            assert found.is_package == (spec.submodule_search_locations is not None)
            assert found.is_extension == spec.origin.endswith(tuple(suffixes))


# --------------------------------------------------------------------------- the importer as oracle
STUB = ".stub.so"  # what the graph is told an extension suffix is; the oracle's finder loads these

# Runs in a fresh interpreter: a meta-path finder turns every `<leaf>.stub.so` into an empty module
# (with attribute v0), records each load and fails the one named; each run imports one root from
# scratch (the generated packages dropped from sys.modules) and reports the stand-ins loaded, in
# order, which generated modules failed (started, but not in sys.modules after) and which were
# imported while they were still initialising (a cycle: that import does not wait for the rest).
_ORACLE = r"""
import builtins, importlib, importlib.abc, importlib.util, json, os, sys
spec = json.load(sys.stdin)
site, tops = spec["site"], spec["tops"]
sys.path.insert(0, site)
LOADED, FAIL, STARTED, PARTIAL = [], set(), set(), set()
real_import = builtins.__import__

def recording_import(name, globals=None, locals=None, fromlist=(), level=0):
    if level:
        name = importlib.util.resolve_name("." * level + name, (globals or {}).get("__package__"))
    parts = name.split(".")
    for wanted in [".".join(parts[:i]) for i in range(1, len(parts) + 1)] + [name + "." + f for f in fromlist or ()]:
        module = sys.modules.get(wanted)
        if wanted.partition(".")[0] in tops and getattr(getattr(module, "__spec__", None), "_initializing", False):
            PARTIAL.add(wanted)
    return real_import(name, globals, locals, fromlist, 0)

builtins.__import__ = recording_import

class StubLoader(importlib.abc.Loader):
    def __init__(self, path):
        self.path = path
    def create_module(self, spec):
        return None
    def exec_module(self, module):
        LOADED.append(os.path.realpath(self.path))
        if os.path.realpath(self.path) in FAIL:
            raise ImportError("stand-in extension failed: " + self.path)
        module.v0 = 1

class StubFinder(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname, path, target=None):
        STARTED.add(fullname)
        leaf = fullname.rpartition(".")[2]
        for d in ([site] if path is None else list(path)):
            f = os.path.join(d, leaf + spec["suffix"])
            if os.path.isfile(f) and not os.path.isdir(os.path.join(d, leaf)):
                return importlib.util.spec_from_loader(fullname, StubLoader(f), origin=f)
        return None

sys.meta_path.insert(0, StubFinder())
out = []
for root, fail in spec["runs"]:
    for name in [m for m in sys.modules if m.partition(".")[0] in tops]:
        del sys.modules[name]
    LOADED.clear()
    FAIL.clear()
    STARTED.clear()
    PARTIAL.clear()
    if fail:
        FAIL.add(fail)
    try:
        importlib.import_module(root)
        out.append({"ok": True})
    except Exception as e:
        out.append({"ok": False, "error": f"{type(e).__name__}: {e}"})
    out[-1].update(loaded=list(LOADED), partial=sorted(PARTIAL),
                   failed=sorted(m for m in STARTED if m.partition(".")[0] in tops and m not in sys.modules))
print(json.dumps(out))
"""


@dataclass
class _Module:
    name: str
    kind: str  # package, namespace, module, stub

    @property
    def has_v0(self) -> bool:
        return self.kind != "namespace"

    @property
    def parent(self) -> str:
        return self.name.rpartition(".")[0]

    @property
    def leaf(self) -> str:
        return self.name.rpartition(".")[2]


@dataclass
class _Tree:
    modules: dict[str, _Module]
    files: dict[str, str] = field(default_factory=dict)
    # (top-level package of the file, a module a statement names) for the statements run under a
    # swallowing try: the graph's cross-package rule makes such a module optional everywhere.
    swallowed: list[tuple[str, str]] = field(default_factory=list)

    @property
    def tops(self) -> list[str]:
        return [m for m in self.modules if "." not in m]

    def path_of(self, module: _Module) -> str:
        rel = module.name.replace(".", "/")
        return {"package": f"{rel}/__init__.py", "module": f"{rel}.py", "stub": rel + STUB}.get(
            module.kind, rel)


def _universe(draw: st.DrawFn) -> dict[str, _Module]:
    modules: dict[str, _Module] = {}
    for i in range(draw(st.integers(2, 4))):
        top = f"ldsq{i}"
        modules[top] = _Module(top, "namespace" if i and draw(st.integers(0, 4)) == 0 else "package")
        packages = [top]
        if draw(st.booleans()):
            modules[f"{top}.s"] = _Module(f"{top}.s", "package")
            packages.append(f"{top}.s")
        for package in packages:
            for j in range(draw(st.integers(0, 2))):
                modules[f"{package}.m{j}"] = _Module(f"{package}.m{j}", "module")
            for j in range(draw(st.integers(1 if package == top else 0, 2))):
                modules[f"{package}.e{j}"] = _Module(f"{package}.e{j}", "stub")
    return modules


def _relative(target: str, package: str) -> str | None:
    """`from <this> import ...` naming `target` relatively from inside `package`, if near."""
    if target.partition(".")[0] != package.partition(".")[0]:
        return None
    if target == package:
        return "."
    if target.startswith(package + "."):
        return "." + target[len(package) + 1:]
    parent = package.rpartition(".")[0]
    if parent and target == parent:
        return ".."
    if parent and target.startswith(parent + "."):
        return ".." + target[len(parent) + 1:]
    return None


def _statement(draw: st.DrawFn, tree: _Tree, package: str, init: bool,
               may_fail: bool) -> tuple[str, list[str]]:
    """One import statement run from inside `package`: its text, and the modules it names (it
    imports a module that is not installed only where that is allowed to fail)."""
    modules = list(tree.modules.values())
    target = draw(st.sampled_from(modules))
    parent = tree.modules.get(target.parent)
    form = draw(st.sampled_from(["import", "import-as", "import-two", "import-backslash", "from",
                                 "from-as", "from-v0", "from-paren", "from-backslash", "relative",
                                 "missing"]))
    relative = _relative(target.parent, package) if parent else None
    if form in ("from", "from-as", "from-paren", "from-backslash", "relative") and parent is None:
        form = "import"
    if form == "relative" and relative is None:
        form = "from"
    if form == "missing" and not may_fail:
        form = "import"
    if form == "from-v0" and not target.has_v0:
        form = "import-as"
    other = draw(st.sampled_from(modules)).name
    source = (relative or target.parent) if form == "relative" else target.parent
    siblings = [m.leaf for m in modules if m.parent == target.parent and m.name != target.name]
    extra = draw(st.sampled_from(siblings)) if siblings else None
    # `from Q import L` binds L in this module: in a package's __init__ that would shadow a
    # submodule L of its own (Python then never imports it), so there the name is aliased.
    plain = not init or target.parent == package
    bind = "" if plain else f" as _{target.leaf}"
    if form == "import":
        return f"import {target.name}", [target.name]
    if form == "import-as":
        return f"import {target.name} as _alias", [target.name]
    if form == "import-two":
        return f"import {target.name}, {other}", [target.name, other]
    if form == "import-backslash":
        return f"import {target.name}, \\\n    {other}", [target.name, other]
    if form in ("from", "relative"):
        return f"from {source} import {target.leaf}{bind}", [target.parent, target.name]
    if form == "from-as":
        return f"from {source} import {target.leaf} as _alias", [target.parent, target.name]
    if form == "from-v0":
        return f"from {target.name} import v0", [target.name]
    if form == "missing":
        return "import ldsq_not_installed", ["ldsq_not_installed"]
    names = [target.leaf] + ([extra] if extra else []) + (["v0"] if parent and parent.has_v0 else [])
    named = [target.parent] + [f"{target.parent}.{n}" for n in names if n != "v0"]
    names = [n if plain or n == "v0" else f"{n} as _{n}" for n in names]
    if form == "from-backslash":
        if len(names) == 1:
            return f"from {source} import \\\n    {names[0]}", named
        return f"from {source} import {', '.join(names[:-1])}, \\\n    {names[-1]}", named
    comment = draw(st.booleans())
    body = "".join(f"    {n},{'  # note (x)' if comment and k == 0 else ''}\n" for k, n in enumerate(names))
    return f"from {source} import (\n{body})", named


# The contexts a statement can be placed in: whether it runs on import, whether a failure there
# is swallowed, and how to write it around an indented body.
_CONTEXTS = {
    "module": (True, False),
    "if-true": (True, False),
    "if-black": (True, False),
    "for": (True, False),
    "with": (True, False),
    "class": (True, False),
    "class-black": (True, False),
    "try-swallow": (True, True),
    "try-swallow-tuple": (True, True),
    "try-else": (True, False),
    "elif": (True, False),
    "while": (True, False),
    "try-reraise": (True, False),
    "try-finally": (True, False),
    "handler": (True, False),
    "tc-else": (True, False),
    "def": (False, False),
    "async-def": (False, False),
    "def-long": (False, False),
    "decorated-def": (False, False),
    "type-checking": (False, False),
    "typing-type-checking": (False, False),
}


def _wrap(kind: str, body: str, draw: st.DrawFn, n: int) -> str:
    """`body` (already indented one level) inside a context of `kind`."""
    if kind == "module":
        return textwrap.dedent(body)
    doc = '    """Example::\n\n        import ldsq0\n    """\n' if draw(st.booleans()) else ""
    return {
        "if-true": f"if True:\n{body}",
        "if-black": f"if (\n    True\n    and 1\n):\n{body}",
        "for": f"for _i in range(1):\n{body}",
        "with": f"with contextlib.nullcontext():\n{body}",
        "class": f"class C{n}:\n{doc}{body}    pass\n",
        "class-black": f"class C{n}(\n    object,\n):\n{doc}{body}    pass\n",
        "try-swallow": f"try:\n{body}except ImportError:\n    pass\n",
        "try-swallow-tuple": f"try:\n{body}except (ImportError, AttributeError):  # optional\n    _x = None\n",
        "try-else": f"try:\n    pass\nexcept ImportError:\n    pass\nelse:\n{body}",
        "elif": f"if False:\n    pass\nelif True:\n{body}",
        "while": f"while True:\n{body}    break\n",
        "decorated-def": f"@typing.no_type_check\ndef f{n}():\n{body}    pass\n",
        "try-reraise": f"try:\n{body}except ImportError as e:\n    raise ImportError('broken') from e\n",
        "try-finally": f"try:\n{body}finally:\n    pass\n",
        "handler": f"try:\n    raise ImportError\nexcept ImportError:\n{body}",
        "tc-else": f"if TYPE_CHECKING:\n    import ldsq0\nelse:\n{body}",
        "def": f"def f{n}():\n{doc}{body}    pass\n",
        "async-def": f"async def f{n}():\n{body}    pass\n",
        "def-long": f"def f{n}(\n    a: int = 0,\n    b: str = ':',\n) -> int:\n{body}    return 0\n",
        "type-checking": f"if TYPE_CHECKING:\n{body}",
        "typing-type-checking": f"if typing.TYPE_CHECKING:  # only for checkers\n{body}",
    }[kind]


def _block(draw: st.DrawFn, tree: _Tree, package: str, init: bool, top: str, depth: int,
           runs: bool, swallowed: bool, counter: list[int]) -> str:
    """A random statement in a random context (nested up to `depth`), as source at column 0."""
    counter[0] += 1
    kind = draw(st.sampled_from(list(_CONTEXTS) if depth else ["module"]))
    here_runs, here_swallows = _CONTEXTS[kind]
    runs, swallowed = runs and here_runs, swallowed or here_swallows
    if kind == "module" or depth == 0 or draw(st.booleans()):
        text, named = _statement(draw, tree, package, init, swallowed or not runs)
        if runs and swallowed:
            tree.swallowed.extend((top, name) for name in named)
        inner = text + "\n"
    else:
        inner = _block(draw, tree, package, init, top, depth - 1, runs, swallowed, counter)
    if kind == "module":
        return inner
    return _wrap(kind, textwrap.indent(inner, "    "), draw, counter[0])


_NOISE = [
    "def _one_liner(): return 1\n",
    "if TYPE_CHECKING: import ldsq0\n",
    "_table = {\n    'a': 1,\n}\n",
    "import os, sys as _sys  # the standard library: not in site-packages\n",
]


@st.composite
def _trees(draw: st.DrawFn) -> _Tree:
    tree = _Tree(_universe(draw))
    for module in tree.modules.values():
        if module.kind not in ("package", "module"):
            continue
        package = module.name if module.kind == "package" else module.parent
        parts = ['"""A generated module.\n\n    import ldsq0\n"""\n'] if draw(st.booleans()) else []
        parts.append("v0 = 1\nimport contextlib\nimport typing\nfrom typing import TYPE_CHECKING\n")
        for _ in range(draw(st.integers(0, 4))):
            if draw(st.integers(0, 5)) == 0:
                parts.append(draw(st.sampled_from(_NOISE)))
            parts.append(_block(draw, tree, package, module.kind == "package", module.name.partition(".")[0],
                                2, True, False, [0]))
        tree.files[tree.path_of(module)] = "".join(parts)
    for module in tree.modules.values():
        if module.kind == "stub":
            tree.files[tree.path_of(module)] = ""
        elif module.kind == "namespace":
            tree.files[module.name + "/.keep"] = ""
    return tree


def _cross_package_rule(tree: _Tree, failed: list[str]) -> bool:
    """Whether the cross-package rule explains an optional extension whose failure is fatal: a
    module that failed with it is named, or is in a package named, under a swallowing try in
    another top-level package (the graph takes it, and what is reached through it, as optional)."""
    return any((module == name or module.startswith(name + ".")) and file_top != module.partition(".")[0]
               for module in failed for file_top, name in tree.swallowed)


def _failed_in_a_cycle(failing: dict[str, Any]) -> bool:
    """Whether a module failed that something had imported while it was still initialising (in
    a cycle: that import finished without waiting for the rest of it)."""
    return bool(set(failing["partial"]) & set(failing["failed"]))


def _subsequence(short: list[str], long: list[str]) -> bool:
    it = iter(long)
    return all(item in it for item in short)


@given(_trees())
@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_closure_matches_the_real_importer(tree: _Tree) -> None:
    _check_against_the_importer(tree)


@pytest.mark.slow
@given(_trees())
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_closure_matches_the_real_importer_thoroughly(tree: _Tree) -> None:
    _check_against_the_importer(tree)


def _check_against_the_importer(tree: _Tree) -> None:
    """For each top-level package of a random tree (and two of its modules): the graph's required
    + optional are exactly the stand-in extensions `import` really loads, required ones in the
    order they load; making a required one fail fails the import (but in a cycle), making an
    optional one fail does not (but for the cross-package rule's deliberate over-approximation)."""
    with tempfile.TemporaryDirectory() as tmp:
        site = os.path.realpath(tmp)
        for rel, text in tree.files.items():
            path = Path(site, rel)
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
        graph = ImportGraph((site,), (STUB,))
        roots = tree.tops + [m.name for m in tree.modules.values() if m.kind == "module"][:2]
        closures = {root: graph.closure(root) for root in roots}
        runs: list[tuple[str, str | None]] = []
        for root, closure in closures.items():
            runs += [(root, None)] + [(root, path) for path in closure.all]
        proc = subprocess.run([sys.executable, "-I", "-B", "-c", _ORACLE], capture_output=True, text=True,
                              input=json.dumps({"site": site, "tops": tree.tops, "suffix": STUB, "runs": runs}),
                              timeout=60)
        assert proc.returncode == 0, proc.stderr
        results = dict(zip(runs, json.loads(proc.stdout)))
        for root, closure in closures.items():
            real = results[(root, None)]
            assert real["ok"], f"the generated tree does not import: {real['error']}"
            loaded = real["loaded"]
            assert len(loaded) == len(set(loaded))
            assert set(closure.all) == set(loaded), root
            assert _subsequence(list(closure.required), loaded), (root, closure.required, loaded)
            for path in closure.required:
                # (A module imported while it initialises does not wait for it: a cycle can make
                # a failure the graph calls fatal survived; the oracle sees that happen.)
                failing = results[(root, path)]
                assert not failing["ok"] or _failed_in_a_cycle(failing), \
                    f"{root}: {path} is not required: {failing}"
            for path in closure.optional:
                failing = results[(root, path)]
                assert failing["ok"] or _cross_package_rule(tree, failing["failed"]), \
                    f"{root}: {path} is required: {failing}"


# --------------------------------------------------------------------------- real environments
def _built_venv(prefix: str) -> Path:
    found = sorted(p for p in CACHE_DIR.glob(f"{prefix}*") if (p / ".ldscope-realworld.json").is_file())
    if not found:
        pytest.skip(f"no built {prefix}* venv in {CACHE_DIR} (the real-world tier builds it)")
    return found[-1]


def _venv_graph(venv: Path) -> tuple[ImportGraph, str]:
    site = sorted(venv.glob("lib/python3*/site-packages"))
    assert site, f"no site-packages in {venv}"
    python = venv / "bin" / "python"
    suffixes = json.loads(subprocess.run(
        [str(python), "-I", "-c", "import importlib.machinery as m, json; print(json.dumps(m.EXTENSION_SUFFIXES))"],
        capture_output=True, text=True, check=True, timeout=60).stdout)
    return ImportGraph((str(site[0]),), tuple(suffixes)), str(site[0])


_REAL_LOADS = (
    "import importlib, json, os, sys; importlib.import_module(sys.argv[1]);"
    "print(json.dumps(sorted({os.path.realpath(m.__file__) for m in list(sys.modules.values())"
    " if (getattr(m, '__file__', None) or '').endswith('.so')})))"
)


@pytest.mark.parametrize("name", ["numpy", "scipy", "PIL.Image"])
def test_required_extensions_really_load_in_the_scientific_venv(name: str) -> None:
    venv = _built_venv("rw-scientific-")
    graph, site = _venv_graph(venv)
    proc = subprocess.run([str(venv / "bin" / "python"), "-I", "-c", _REAL_LOADS, name],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    real = {p for p in json.loads(proc.stdout) if p.startswith(os.path.realpath(site) + os.sep)}
    closure = graph.closure(name)
    required = {os.path.realpath(p) for p in closure.required}
    print(f"{name}: required {len(required)}, optional {len(closure.optional)}, really loaded {len(real)}")
    assert required, f"import {name} loads extensions; the graph finds none required"
    assert required <= real, f"claimed required but not loaded: {sorted(required - real)}"


def test_torch_closure_is_fast() -> None:
    venv = _built_venv("rw-torch-cpu-")
    graph, _ = _venv_graph(venv)
    start = time.process_time()
    closure = graph.closure("torch")
    spent = time.process_time() - start
    assert any(os.path.basename(p).startswith("_C.") for p in closure.required), closure.required
    assert spent < 2.0, f"torch's import closure took {spent:.2f} s of CPU"


def test_the_persistent_cache_answers_unchanged_files_and_rescans_changed_ones(tmp_path: Path,
                                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    import ldscope.system._pyimports as module

    site = tmp_path / "site"
    _tree(site, {f"p/_a{EXT}": "", f"p/_b{EXT}": "", "p/__init__.py": "from . import _a\n"})
    cache = tmp_path / "cache"
    first = ImportGraph((str(site),), SUFFIXES, str(cache))
    assert _rel(site, first.closure("p").required) == [f"p/_a{EXT}"]
    first.save()
    (written,) = cache.iterdir()
    assert written.name.startswith("imports-") and written.suffix == ".json"

    def no_scanning(source: str, package: str) -> list[tuple[str, object]]:
        raise AssertionError("an unchanged file was scanned again")

    monkeypatch.setattr(module, "_scan_imports", no_scanning)
    again = ImportGraph((str(site),), SUFFIXES, str(cache))
    assert _rel(site, again.closure("p").required) == [f"p/_a{EXT}"]
    monkeypatch.undo()
    # A changed file (size and mtime) is scanned afresh.
    init = site / "p" / "__init__.py"
    init.write_text("from . import _a, _b\n")
    os.utime(init, ns=(init.stat().st_atime_ns, init.stat().st_mtime_ns + 10**9))
    changed = ImportGraph((str(site),), SUFFIXES, str(cache))
    assert _rel(site, changed.closure("p").required) == [f"p/_a{EXT}", f"p/_b{EXT}"]
    # A cache file that is garbage, or a cache directory that cannot be written, is no error.
    written.write_bytes(b"\0not json")
    garbage = ImportGraph((str(site),), SUFFIXES, str(cache))
    assert _rel(site, garbage.closure("p").required) == [f"p/_a{EXT}", f"p/_b{EXT}"]
    garbage.save()
    blocked = tmp_path / "file-not-dir"
    blocked.write_text("")
    unwritable = ImportGraph((str(site),), SUFFIXES, str(blocked / "sub"))
    assert unwritable.closure("p").required
    unwritable.save()
