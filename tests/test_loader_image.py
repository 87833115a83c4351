"""ElfImage answers the same on its first question as on later ones.

Regression: `definitions_named` looked the name up in the interning table before the image's
own names were interned, so the first `defines()` of a fresh image said False. A `foo.so`
exporting `PyInit_foo` (no `cpython-*` suffix: triton's `libtriton.so`) was then taken for a
plain library and loaded without libpython.
"""

from __future__ import annotations

from pathlib import Path

from ldscope.loader import ImageCache, is_python_extension
from tests.conftest import run


def _build(d: Path) -> Path:
    (d / "foo.c").write_text("int foo_value = 1;\nint foo(void) { return foo_value; }\n"
                             "void *PyInit_foo(void) { return 0; }\n")
    run(["gcc", "-shared", "-fPIC", "-o", "foo.so", "foo.c"], cwd=d)
    return d / "foo.so"


def test_first_defines_of_a_fresh_image_is_right(tmp_path: Path) -> None:
    path = _build(tmp_path)
    image = ImageCache().get(str(path))
    assert image.defines("foo") is True  # the very first question
    assert image.defines("foo_value") is True
    assert image.defines("not_there") is False
    fresh = ImageCache().get(str(path))
    assert [d.index for d in fresh.definitions_named("foo")] == [d.index for d in image.definitions_named("foo")]
    assert fresh.definitions_named("foo")


def test_an_extension_without_a_cpython_suffix_is_recognised_first_time(tmp_path: Path) -> None:
    path = _build(tmp_path)
    assert is_python_extension(str(path), ImageCache().get(str(path)))
