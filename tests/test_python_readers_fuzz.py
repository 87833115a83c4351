"""Bad input for the readers the Python process model added: Python sources, METADATA/RECORD,
dpkg's database and sysconfigdata files made of random or hostile bytes never raise, never
hang, and stay within a CPU-time bound (never wall clock)."""

from __future__ import annotations

import os
import shutil
import sys
import time
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ldscope.system import DebianOwners, ImportGraph, interpreter_abi, parse_distribution
from ldscope.system._pyimports import _scan_imports

EXT = ".cpython-311-x86_64-linux-gnu.so"
# Fragments that steer random text into the scanner's branches.
_PIECES = st.sampled_from([
    "import ", "from ", " import ", "(", ")", "\\\n", "\n", "    ", "\t", ":", "#", '"""', "'''",
    "try:", "except ImportError:", "finally:", "raise", "def f(", "async def g():", "class C(",
    "if TYPE_CHECKING:", "else:", "elif x:", "with y:", ".", "..", "a", "b.c", ",", "as z", ";",
])
_SOURCES = st.lists(st.one_of(_PIECES, st.text(max_size=8)), max_size=60).map("".join)
_FUZZ = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@_FUZZ
@given(_SOURCES)
def test_the_import_scanner_takes_any_text(source: str) -> None:
    start = time.process_time()
    found = _scan_imports(source, "pkg.sub")
    assert time.process_time() - start < 1.0
    assert all(isinstance(name, str) and name for name, _ in found)


@_FUZZ
@given(st.binary(max_size=2000), _SOURCES)
def test_an_import_graph_over_garbage_files_answers(garbage: bytes, source: str) -> None:
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        site = Path(d)
        (site / "pkg" / "sub").mkdir(parents=True)
        (site / "pkg" / "__init__.py").write_bytes(garbage)
        (site / "pkg" / "sub" / "__init__.py").write_text(source, errors="surrogateescape")
        (site / "pkg" / f"_ext{EXT}").write_bytes(b"")
        (site / "pkg" / "loop").symlink_to(site / "pkg" / "loop")  # a symlink loop in the tree
        graph = ImportGraph((str(site),), (EXT, ".abi3.so", ".so"))
        closure = graph.closure("pkg.sub")
        assert set(closure.required) | set(closure.optional) <= {str(site / "pkg" / f"_ext{EXT}")}


@_FUZZ
@given(st.text(max_size=3000), st.text(max_size=3000))
def test_any_metadata_and_record_make_a_distribution(metadata: str, record: str) -> None:
    dist = parse_distribution(metadata, record, "/site", "x-1.0.dist-info")
    assert dist.name and all(os.path.isabs(f) for f in dist.files)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.binary(max_size=4000), st.binary(max_size=4000))
def test_a_garbage_dpkg_database_owns_nothing_and_never_raises(tmp_path: Path, status: bytes, listing: bytes) -> None:
    root = tmp_path / "root"
    shutil.rmtree(root, ignore_errors=True)
    info = root / "var" / "lib" / "dpkg" / "info"
    info.mkdir(parents=True)
    (root / "var" / "lib" / "dpkg" / "status").write_bytes(status)
    (info / "pkg:amd64.list").write_bytes(listing)
    (info / "weird\xff.list".encode("utf-8", "surrogateescape").decode("utf-8", "surrogateescape")).write_bytes(listing)
    owners = DebianOwners(str(root))
    for path in ("/usr/lib/x86_64-linux-gnu/libc.so.6", "/lib/x\0y", "", "relative/path"):
        owner = owners.owner_of(path)
        assert owner is None or owner.name


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.binary(max_size=3000))
def test_a_garbage_sysconfigdata_never_raises(tmp_path: Path, content: bytes) -> None:
    prefix = tmp_path / "py"
    shutil.rmtree(prefix, ignore_errors=True)
    (prefix / "bin").mkdir(parents=True)
    lib = prefix / "lib" / "python3.12"
    lib.mkdir(parents=True)
    (lib / "_sysconfigdata__linux_x86_64-linux-gnu.py").write_bytes(content)
    exe = prefix / "bin" / "python3.12"
    shutil.copy(sys.executable if os.path.isfile(sys.executable) else "/bin/true", exe)
    abi = interpreter_abi(str(exe), str(prefix))
    assert abi is None or (abi.version == (3, 12) and abi.extension_suffixes)
