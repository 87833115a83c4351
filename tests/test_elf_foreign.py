"""Other architectures and byte orders: Debian cross libraries against readelf and pyelftools.

The files come from libc6-{arm64,s390x,armhf,ppc64el}-cross and libstdc++6-{arm64,s390x}-cross
(/usr/<triplet>/lib). Each architecture is skipped, with the package to install named, only
when its directory is absent. Also: copies of a foreign and native libraries with their
section headers removed must read the same dynamic info, dynsym (counted from DT_HASH or
DT_GNU_HASH) and versions as the originals.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from ldscope.elf import ElfFile
from ldscope.elf import constants as C

try:  # tests/ as a package (tests/__init__.py) or as plain rootdir modules
    from tests import elf_oracle as ec
    from tests import test_elf_differential as diff
except ImportError:  # pragma: no cover
    import elf_oracle as ec  # type: ignore[no-redef]
    import test_elf_differential as diff  # type: ignore[no-redef]

# ldscope machine name → (directory, Debian package, class, endianness)
CROSS: dict[str, tuple[str, str, int, str]] = {
    "aarch64": ("/usr/aarch64-linux-gnu/lib", "libc6-arm64-cross", 64, "little"),
    "s390x": ("/usr/s390x-linux-gnu/lib", "libc6-s390x-cross", 64, "big"),
    "arm": ("/usr/arm-linux-gnueabihf/lib", "libc6-armhf-cross", 32, "little"),
    "ppc64le": ("/usr/powerpc64le-linux-gnu/lib", "libc6-ppc64el-cross", 64, "little"),
}
STDCXX = {"aarch64": "libstdc++6-arm64-cross", "s390x": "libstdc++6-s390x-cross"}

pytestmark = pytest.mark.skipif(
    shutil.which("readelf") is None, reason="binutils readelf is needed as the oracle"
)


def cross_files(machine: str) -> list[str]:
    """The ELF files of one cross architecture (skips the test if the package is absent)."""
    directory, package, _bits, _endian = CROSS[machine]
    if not os.path.isdir(directory):
        pytest.skip(f"{directory} absent: install {package} (apt-get install {package})")
    files = ec.regular_elf_files(ec.listdir(directory), max_bytes=8 * 1024 * 1024)
    if not files:
        pytest.skip(f"no ELF files in {directory}: install {package}")
    return files


@pytest.mark.parametrize("machine", sorted(CROSS))
def test_cross_libraries_agree_with_readelf(machine: str) -> None:
    files = cross_files(machine)
    _dir, _pkg, bits, endian = CROSS[machine]
    reports = ec.run_readelf(files)
    nm_rows = ec.run_nm_dynamic(files)
    t = diff.Tally()
    names = {Path(f).name for f in files}
    assert "libc.so.6" in names
    if machine in STDCXX:
        assert "libstdc++.so.6" in names or any(n.startswith("libstdc++") for n in names), (
            f"install {STDCXX[machine]}"
        )
    for path in files:
        cf = ec.CorpusFile(path, "foreign")
        with ElfFile.open(path) as elf:
            assert elf.machine == machine
            assert (64 if elf.is64 else 32, "little" if elf.little_endian else "big") == (bits, endian)
            facts = ec.ldscope_facts(elf)
            diff.compare_with_readelf(cf, elf, facts, reports[path], t)
            diff.compare_relocations(cf, elf, reports[path], t)
            diff.compare_with_nm(cf, elf, nm_rows[path], t)
    assert t.checked["header.machine"] == len(files)
    assert t.checked[".dynsym.symbol"] > 1000
    assert t.checked["verdef"] == len(files) and t.checked["reloc.kinds"] > 0
    assert not t.mismatches, t.report()


@pytest.mark.parametrize("machine", sorted(CROSS))
def test_cross_libraries_agree_with_pyelftools(machine: str) -> None:
    files = cross_files(machine)
    t = diff.Tally()
    for path in files:
        cf = ec.CorpusFile(path, "foreign")
        with ElfFile.open(path) as elf:
            facts = ec.ldscope_facts(elf)
        diff.compare_with_pyelftools(cf, facts, ec.pyelftools_facts(path), t)
    assert t.checked["dynsym.symbol"] > 1000
    assert not t.mismatches, t.report()


def test_reference_kinds_on_foreign_libc() -> None:
    """JUMP_SLOT/JMP_SLOT-only symbols are PLT-only; GLOB_DAT/TPREL/ABS symbols load-time."""
    seen = 0
    for machine, (directory, _pkg, _b, _e) in sorted(CROSS.items()):
        path = os.path.join(directory, "libc.so.6")
        if not os.path.exists(path):
            continue
        with ElfFile.open(path) as elf:
            assert elf.dynsym is not None
            kinds = elf.symbol_reference_kinds
            lazy = C.LAZY_RELOC_TYPES[elf.e_machine]
            plt_only: set[int] = set()
            load: set[int] = set()
            for table in elf.dynamic_relocations:
                for sym, rtype in zip(table.symbol_indices.tolist(), table.types.tolist()):
                    if sym == 0:
                        continue
                    (plt_only if table.is_plt and rtype in lazy else load).add(sym)
            assert plt_only or load, machine
            for sym in plt_only - load:
                assert kinds[sym] == 1, (machine, elf.dynsym.name(sym))
            for sym in load:
                assert kinds[sym] == 2, (machine, elf.dynsym.name(sym))
            seen += 1
    if not seen:
        pytest.skip("no cross libc installed: install libc6-arm64-cross and friends")


# ------------------------------------------------------------- section headers removed
def strip_section_headers(src: str, dest: Path) -> Path:
    """A copy of `src` with e_shoff, e_shnum and e_shstrndx zeroed (no section headers)."""
    data = bytearray(Path(src).read_bytes())
    is64 = data[4] == 2
    order = "little" if data[5] == 1 else "big"
    shoff_at, shnum_at = (0x28, 0x3C) if is64 else (0x20, 0x30)
    data[shoff_at : shoff_at + (8 if is64 else 4)] = bytes(8 if is64 else 4)
    data[shnum_at : shnum_at + 2] = (0).to_bytes(2, order)  # e_shnum
    data[shnum_at + 2 : shnum_at + 4] = (0).to_bytes(2, order)  # e_shstrndx
    dest.write_bytes(bytes(data))
    return dest


def headerless_candidates(corpus: tuple[ec.CorpusFile, ...]) -> list[tuple[str, str]]:
    """(label, path): native fixtures with DT_HASH only, DT_GNU_HASH only and both, native
    libc, and the foreign libraries that are installed."""
    out: list[tuple[str, str]] = []
    for name in ("libfix_ver.so", "libfix_sysv.so", "libfix_cxx.so", "fix_now"):
        f = ec.fixture(corpus, name)
        if f is not None:
            out.append((name, f.path))
    native = f"/usr/lib/{ec.native_multiarch()}/libc.so.6"
    if os.path.exists(native):
        out.append(("native-libc", native))
    for machine, (directory, _pkg, _b, _e) in sorted(CROSS.items()):
        for lib in ("libc.so.6", "libstdc++.so.6"):
            path = os.path.join(directory, lib)
            if os.path.exists(path):
                out.append((f"{machine}-{lib}", path))
    return out


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> tuple[ec.CorpusFile, ...]:
    return ec.sample(ec.shared_workdir(tmp_path_factory.getbasetemp()))


def test_section_headers_removed_reads_the_same(
    corpus: tuple[ec.CorpusFile, ...], tmp_path: Path
) -> None:
    candidates = headerless_candidates(corpus)
    hash_kinds: set[str] = set()
    foreign = 0
    for label, path in candidates:
        copy = strip_section_headers(path, tmp_path / f"{label}.noshdr")
        with ElfFile.open(path) as full, ElfFile.open(copy) as bare:
            assert bare.sections == () and full.sections != ()
            assert full.dynamic is not None and bare.dynamic == full.dynamic, label
            assert full.dynsym is not None and bare.dynsym is not None
            a, b = ec.ldscope_facts(full), ec.ldscope_facts(bare)
            assert b.dynsym == a.dynsym, label  # names, values, versions: count via hashes
            assert (b.verdefs, b.verneeds) == (a.verdefs, a.verneeds), label
            assert b.build_id == a.build_id, label
            assert b.symtab is None and b.stripped
            assert [len(t) for t in bare.dynamic_relocations] == [
                len(t) for t in full.dynamic_relocations
            ], label
            assert bare.symbol_reference_kinds.tolist() == full.symbol_reference_kinds.tolist()
            tags = full.dynamic.tags
            hash_kinds.add(
                "both" if C.DT_HASH in tags and C.DT_GNU_HASH in tags
                else "sysv" if C.DT_HASH in tags else "gnu"
            )
            foreign += full.e_machine != C.EM_X86_64
        # readelf -D reads the same table through the dynamic section only.
        rep = ec.run_readelf([str(copy)], ["-W", "-D", "-s"])[str(copy)]
        rows = rep.symbols["<image>"]
        t = diff.Tally()
        with ElfFile.open(copy) as bare:
            assert bare.dynsym is not None
            versym = bare.dynsym.versions.versym if bare.dynsym.versions is not None else None
            t.check("count", label, len(bare.dynsym), rep.symbol_counts["<image>"])
            for row in rows:
                num, value, size = row[0], row[1], row[2]
                sym = bare.dynsym.symbol(num)
                t.check("symbol", f"{label}[{num}]",
                        (sym.value, sym.size,
                         diff.readelf_symbol_name(bare.dynsym, num, True, versym)),
                        (value, size, row[7]))
        assert not t.mismatches, t.report()
    assert {"sysv", "gnu", "both"} <= hash_kinds or not candidates
    if not foreign:
        pytest.skip("headerless native files checked; no cross library installed for the "
                    "foreign copy (install libc6-s390x-cross)")
