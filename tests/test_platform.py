"""Platform facts checked against the running ld.so (glibc 2.36, Debian x86_64) and its LD_DEBUG."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from ldscope import system as P
from ldscope.system._ldcache import CacheLookupContext

LDSO = "/lib64/ld-linux-x86-64.so.2"
HOST_X86_64 = os.uname().machine == "x86_64" and os.path.exists(LDSO)
needs_host = pytest.mark.skipif(not HOST_X86_64, reason="needs an x86_64 glibc host")
needs_gcc = pytest.mark.skipif(shutil.which("gcc") is None, reason="needs gcc")


def _run(args: list[str], env: dict[str, str] | None = None, cwd: Path | None = None,
         ) -> subprocess.CompletedProcess[str]:
    full_env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LC_ALL": "C"}
    full_env.update(env or {})
    return subprocess.run(args, capture_output=True, text=True, env=full_env, cwd=cwd,
                          timeout=30, check=False)


def _diagnostics() -> dict[str, str]:
    out = _run([LDSO, "--list-diagnostics"]).stdout
    return {k: v.strip('"') for k, _, v in (line.partition("=") for line in out.splitlines())}


def _is_debian_multiarch() -> bool:
    return HOST_X86_64 and _diagnostics().get("path.system_dirs[0x0]") == "/lib/x86_64-linux-gnu/"


needs_debian = pytest.mark.skipif(not _is_debian_multiarch(), reason="needs Debian x86_64 ld.so")


@pytest.fixture(scope="module")
def cpu() -> P.CpuFeatures:
    return P.read_cpu_features()


@needs_debian
def test_system_dirs_match_ld_so_diagnostics() -> None:
    diag = _diagnostics()
    dirs = tuple(diag[f"path.system_dirs[{i:#x}]"].rstrip("/") for i in range(4))
    assert P.default_search_dirs("x86_64", 2) == dirs
    assert dirs == ("/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib", "/usr/lib")
    assert P.lib_expansion("x86_64") == diag["dl_dst_lib"] == "lib/x86_64-linux-gnu"


@needs_debian
def test_ld_so_help_search_path_and_hwcaps(cpu: P.CpuFeatures) -> None:
    text = _run([LDSO, "--help"]).stdout
    search = re.findall(r"^  (/\S*) \(system search path\)$", text, re.M)
    assert tuple(search) == P.default_search_dirs("x86_64", 2)
    section = text.split("Subdirectories of glibc-hwcaps directories, in priority order:")[1]
    section = section.split("\n\n")[0]
    listed = re.findall(r"^  (\S+)", section, re.M)
    searched = re.findall(r"^  (\S+) \(.*searched\)", section, re.M)
    assert tuple(listed) == P.all_hwcaps_subdirs("x86_64")
    assert tuple(searched) == P.hwcaps_subdirs("x86_64", cpu)
    legacy = text.split("Legacy HWCAP subdirectories under library search path directories:")[1]
    legacy_searched = re.findall(r"^  (\S+) \(.*searched\)", legacy, re.M)
    expected = [name for _, name in P.legacy_hwcap_bits("x86_64", cpu)]
    expected += [P.platform_expansion("x86_64", cpu) or "", "tls"]
    assert sorted(legacy_searched) == sorted(expected)


@needs_host
def test_cpu_level_platform_and_hwcap_match_ld_so(cpu: P.CpuFeatures) -> None:
    diag = _diagnostics()
    assert P.x86_isa_bits(cpu) == int(diag["x86.cpu_features.isa_1"], 16)
    assert P.platform_expansion("x86_64", cpu) == diag["dl_platform"]
    active = int(diag["dl_hwcaps_subdirs_active"], 16)
    assert len(P.hwcaps_subdirs("x86_64", cpu)) == bin(active).count("1")
    ctx = CacheLookupContext.for_machine("x86_64", 2, cpu)
    important = int(diag["dl_hwcap"], 16) & int(diag["dl_hwcap_important"], 16)
    assert ctx.legacy_hwcap == important
    string_platform = int(diag["dl_string_platform"], 16)
    expected_bit = None if string_platform == (1 << 64) - 1 else string_platform
    assert ctx.platform_bit == expected_bit


def _build_missing_dep_program(tmp: Path, rpath: str) -> Path:
    (tmp / "f.c").write_text("int ldscope_f(void){return 0;}\n")
    (tmp / "m.c").write_text("int ldscope_f(void);\nint main(void){return ldscope_f();}\n")
    lib = tmp / "libldscopemissing.so.1"
    subprocess.run(["gcc", "-shared", "-fPIC", "-Wl,-soname,libldscopemissing.so.1", "-o",
                    str(lib), str(tmp / "f.c")], check=True)
    prog = tmp / "prog"
    subprocess.run(["gcc", "-o", str(prog), str(tmp / "m.c"), str(lib),
                    f"-Wl,-rpath,{rpath}", "-Wl,--disable-new-dtags"], check=True)
    lib.unlink()
    return prog


def _search_paths(stderr: str) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for match in re.finditer(r"search path=(\S*)\t\t\((.*?)\)$", stderr, re.M):
        found.setdefault(match.group(2), []).append(match.group(1))
    return found


@needs_debian
@needs_gcc
def test_ld_debug_search_path_expansion(tmp_path: Path, cpu: P.CpuFeatures) -> None:
    rp = tmp_path / "rp"
    prog = _build_missing_dep_program(tmp_path, f"{rp}:$ORIGIN/o:/x/$LIB:/x/$PLATFORM")
    result = _run([str(prog)], env={"LD_DEBUG": "libs"})
    assert result.returncode == 127
    assert "libldscopemissing.so.1: cannot open shared object file" in result.stderr
    paths = _search_paths(result.stderr)
    rpath_line = paths[f"RPATH from file {prog}"][0].split(":")
    elements = [str(rp), f"{tmp_path}/o", f"/x/{P.lib_expansion('x86_64')}",
                f"/x/{P.platform_expansion('x86_64', cpu)}"]
    expected = [d for e in elements for d in P.search_subdirs(e, "x86_64", cpu)]
    assert rpath_line == expected
    system = paths["system search path"][0].split(":")
    expected_system = [d for e in P.default_search_dirs("x86_64", 2)
                       for d in P.search_subdirs(e, "x86_64", cpu)]
    assert system == expected_system
    tried = re.findall(r"trying file=(\S+)", result.stderr)
    assert tried[: len(expected)] == [f"{d}/libldscopemissing.so.1" for d in expected]


@needs_debian
def test_observed_legacy_subdirs_on_this_machine(cpu: P.CpuFeatures) -> None:
    subdirs = P.legacy_hwcap_subdirs("x86_64", cpu)
    if cpu.vendor != "GenuineIntel":  # what LD_DEBUG printed on the AMD test machine
        assert subdirs == ("tls/x86_64/x86_64", "tls/x86_64", "tls/x86_64", "tls",
                           "x86_64/x86_64", "x86_64", "x86_64")
    assert "tls" in subdirs and subdirs[0].startswith("tls/")


@needs_debian
@needs_gcc
def test_wrong_class_is_skipped_and_reported(tmp_path: Path) -> None:
    rp = tmp_path / "rp"
    rp.mkdir()
    prog = _build_missing_dep_program(tmp_path, str(rp))
    (tmp_path / "x.c").write_text("int ldscope_f(void){return 0;}\n")
    built = subprocess.run(["gcc", "-m32", "-shared", "-fPIC", "-nostdlib", "-o",
                            str(rp / "libldscopemissing.so.1"), str(tmp_path / "x.c")],
                           capture_output=True, check=False)
    if built.returncode != 0:
        pytest.skip("gcc -m32 cannot build")
    result = _run([str(prog)])
    assert "libldscopemissing.so.1: wrong ELF class: ELFCLASS32" in result.stderr
    good = tmp_path / "good"
    good.mkdir()
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(good / "libldscopemissing.so.1"),
                    str(tmp_path / "x.c")], check=True)
    assert _run([str(prog)], env={"LD_LIBRARY_PATH": str(good)}).returncode == 0


def test_synthetic_cpus() -> None:
    base = {"cmov", "cx8", "fpu", "fxsr", "mmx", "sse", "sse2"}
    v2 = base | {"cx16", "lahf_lm", "popcnt", "pni", "ssse3", "sse4_1", "sse4_2"}
    v3 = v2 | {"avx", "avx2", "f16c", "fma", "abm", "movbe", "bmi1", "bmi2"}
    v4 = v3 | {"avx512f", "avx512bw", "avx512cd", "avx512dq", "avx512vl"}
    for level, flags in enumerate((base, v2, v3, v4), start=1):
        cpu = P.CpuFeatures("x86_64", "AuthenticAMD", frozenset(flags))
        assert P.x86_64_level(cpu) == level
        assert len(P.hwcaps_subdirs("x86_64", cpu)) == level - 1
    intel = P.CpuFeatures("x86_64", "GenuineIntel", frozenset(v4))
    assert P.platform_expansion("x86_64", intel) == "haswell"
    legacy = P.legacy_hwcap_subdirs("x86_64", intel)
    assert len(legacy) == 15 and legacy[0] == "tls/haswell/avx512_1/x86_64"
    assert legacy[-1] == "x86_64"
    assert P.hwcaps_subdirs("x86_64", intel, mask=["x86-64-v2"]) == ("x86-64-v2",)
    assert P.hwcaps_subdirs("x86_64", None, prepend=["mine"]) == ("mine",)
    assert P.hwcaps_subdirs("aarch64", P.CpuFeatures("aarch64", "", frozenset({"atomics"}))) == ()
    z15 = P.CpuFeatures("s390x", "", frozenset({"vx", "vxd", "vxe", "gs", "vxe2", "vxp"}))
    assert P.hwcaps_subdirs("s390x", z15) == ("z15", "z14", "z13")
    p9 = P.parse_cpuinfo("cpu\t\t: POWER9 (architected), altivec supported\n", "ppc64le")
    assert p9.at_platform == "power9"
    assert P.hwcaps_subdirs("ppc64le", p9) == ("power9",)


def test_tables() -> None:
    assert P.default_search_dirs("aarch64", 2) == (
        "/lib/aarch64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/lib", "/usr/lib")
    assert P.default_search_dirs("x86_64", 2, flavor="generic") == ("/lib64", "/usr/lib64")
    assert P.default_search_dirs("x86_64", 1, flavor="generic") == ("/libx32", "/usr/libx32")
    assert P.default_search_dirs("i386", 1, flavor="generic") == ("/lib", "/usr/lib")
    assert P.lib_expansion("amd64", flavor="generic") == "lib64"
    assert P.multiarch_triplet("arm", 1, soft_float=True) == "arm-linux-gnueabi"
    assert P.normalize_machine("riscv", 2) == "riscv64"
    assert P.platform_expansion("riscv64") is None
    assert P.platform_expansion("aarch64") == "aarch64"
    assert P.search_subdirs("/", "aarch64")[-1] == "/"
    with pytest.raises(ValueError):
        P.default_search_dirs("pdp11", 1)
