"""Reading installed distributions: METADATA headers and RECORD, checked against the stdlib."""

from __future__ import annotations

import glob
import os
import site
import sysconfig
from email.parser import HeaderParser
from pathlib import Path

import pytest

from ldscope.system._python import _metadata_headers, normalize_name, read_distributions


def _metadata_files() -> list[str]:
    dirs = {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"], *site.getsitepackages()}
    found: list[str] = []
    for d in sorted(dirs):
        found += sorted(glob.glob(os.path.join(d, "*.dist-info", "METADATA")))
    return found


def test_metadata_headers_agree_with_the_email_parser_on_every_installed_distribution() -> None:
    """Name and every Requires-Dist, as email.parser reads them, for each METADATA here."""
    files = _metadata_files()
    assert len(files) >= 10, "the test environment has pytest, numpy, click, ... installed"
    for path in files:
        text = Path(path).read_text(encoding="utf-8", errors="replace")
        reference = HeaderParser().parsestr(text)
        ours = _metadata_headers(text)
        assert ours.get("name") == [str(reference["Name"]).strip()], path
        expected = [" ".join(str(r).split()) for r in reference.get_all("Requires-Dist") or []]
        assert [" ".join(r.split()) for r in ours.get("requires-dist", [])] == expected, path


def test_folded_headers_blank_continuations_and_the_body() -> None:
    """A blank folded line continues the header; only an empty line ends the block."""
    text = ("Metadata-Version: 2.1\nName: Some_Pkg\nLicense: line one\n         \n  line two\n"
            "Requires-Dist: numpy>=1.23\nRequires-Dist: extra-thing; extra == 'x'\n"
            "\nRequires-Dist: in-the-body\n")
    headers = _metadata_headers(text)
    assert headers["name"] == ["Some_Pkg"]
    assert headers["license"] == ["line one  line two"]
    assert headers["requires-dist"] == ["numpy>=1.23", "extra-thing; extra == 'x'"]


def test_read_distributions_keeps_requirements_and_native_files(tmp_path: Path) -> None:
    """Unconditional requirements only; RECORD paths kept for native files, not sources."""
    site_dir = tmp_path / "site-packages"
    info = site_dir / "My_Pkg-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: My_Pkg\nDescription: a\n \n b\n"
        "Requires-Dist: Dep.One (>=2)\nRequires-Dist: opt; extra == \"x\"\n"
        "Requires-Dist: plat; sys_platform == \"linux\"\n\nbody\n")
    (info / "RECORD").write_text(
        "my_pkg/__init__.py,sha256=x,1\nmy_pkg/_ext.cpython-311-x86_64-linux-gnu.so,sha256=y,2\n"
        "my_pkg.libs/libfoo-1a2b.so.3,,\nbin/tool,,\nmy_pkg/include/a.h,,\n")
    [dist] = read_distributions((str(site_dir),))
    assert dist.name == normalize_name("My_Pkg") == "my-pkg"
    assert dist.requires == ("dep-one", "plat")
    assert dist.files == tuple(os.path.normpath(site_dir / p) for p in (
        "my_pkg/_ext.cpython-311-x86_64-linux-gnu.so", "my_pkg.libs/libfoo-1a2b.so.3", "bin/tool"))


@pytest.mark.parametrize("name,expected", [("Foo_Bar", "foo-bar"), ("a.b-c__d", "a-b-c-d")])
def test_normalize_name(name: str, expected: str) -> None:
    assert normalize_name(name) == expected
