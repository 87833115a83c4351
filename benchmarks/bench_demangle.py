#!/usr/bin/env python3
"""Measure demangling libraries against binutils ``c++filt`` (prints figures; not a test).

Usage::

    python benchmarks/bench_demangle.py                 # every ELF file under the default roots
    python benchmarks/bench_demangle.py --quick         # libstdc++.so.6 and a Rust crate only
    python benchmarks/bench_demangle.py --roots /opt/x  # other roots
    python benchmarks/bench_demangle.py --only ldscope  # just ldscope.cxx.demangle

Corpus: every ``_Z``/``_R`` name printed by ``nm -D --defined-only`` and ``nm`` for every
ELF file (shared object, executable, object, archive) under the roots, plus the symbols of
a tiny Rust crate compiled twice with ``rustc`` (legacy and v0 mangling).  The oracle is
``c++filt`` fed all names on stdin (which demangles the part before ``@`` and keeps the
version suffix).  A name that ``c++filt`` leaves unchanged is expected to give ``None``.

Each candidate runs in its own child process, so a segfault or a hang is recorded as a
crash instead of killing the measurement.  Candidates that are not installed are skipped;
install them with ``pip install cpp-demangle itanium-demangler demangle multi-demangle
llvm-demangle-fxti rust-demangler pycxxfilt pydemumble pyderust``.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import random
import re
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

Adapter = Callable[[str], "str | None"]

DEFAULT_ROOTS = ["/usr/lib", "/usr/bin", "/usr/sbin", "/usr/libexec", "/usr/local/lib"]
RUST_LEGACY = re.compile(r"^_ZN.*17h[0-9a-f]{16}E")
RUST_SRC = """
pub struct Wrapper<T>(pub T);
pub trait Shape { fn area(&self) -> f64; }
impl Shape for Wrapper<f64> { fn area(&self) -> f64 { self.0 * self.0 } }
impl<T: Clone> Wrapper<T> {
    #[inline(never)] pub fn get(&self) -> T { self.0.clone() }
}
#[inline(never)] pub fn generic<T: std::fmt::Debug>(x: T) -> String { format!("{:?}", x) }
#[inline(never)] pub fn with_closure(v: &[i32]) -> i32 { v.iter().map(|x| x * 2).sum() }
pub fn run() -> usize {
    let w = Wrapper(2.5f64);
    let d: &dyn Shape = &w;
    generic(1u8).len() + generic("s").len() + generic(vec![1u64]).len()
        + with_closure(&[1, 2]) as usize + d.area() as usize + Wrapper(3u32).get() as usize
}
"""


# --------------------------------------------------------------------------- corpus


def _is_elf_or_ar(path: Path) -> bool:
    try:
        with path.open("rb") as fh:
            head = fh.read(8)
    except OSError:
        return False
    return head.startswith(b"\x7fELF") or head.startswith(b"!<arch>\n")


def _nm_names(path: Path) -> set[str]:
    names: set[str] = set()
    for args in (["nm", "-D", "--defined-only"], ["nm"]):
        proc = subprocess.run(
            [*args, str(path)], capture_output=True, text=True, errors="replace", check=False
        )
        for line in proc.stdout.splitlines():
            parts = line.split()
            if parts and parts[-1].startswith(("_Z", "_R")):
                names.add(parts[-1])
    return names


def collect_corpus(roots: Sequence[str]) -> list[str]:
    """Return the sorted unique ``_Z``/``_R`` names of every ELF file under ``roots``."""
    files: list[Path] = []
    seen: set[tuple[int, int]] = set()
    for root in roots:
        for dirpath, _dirs, filenames in os.walk(root):
            for fname in filenames:
                p = Path(dirpath, fname)
                try:
                    st = p.stat()
                except OSError:
                    continue
                if not p.is_file() or st.st_size < 1024 or (st.st_dev, st.st_ino) in seen:
                    continue
                seen.add((st.st_dev, st.st_ino))
                if _is_elf_or_ar(p):
                    files.append(p)
    names: set[str] = set()
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        for found in pool.map(_nm_names, files):
            names |= found
    print(f"corpus: {len(files)} ELF files/archives scanned")
    return sorted(names)


def rust_names() -> list[str]:
    """Compile a tiny crate with legacy and v0 mangling and return its ``_Z``/``_R`` names."""
    if shutil.which("rustc") is None:
        print("rustc not found: no Rust names built")
        return []
    names: set[str] = set()
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp, "lib.rs")
        src.write_text(RUST_SRC)
        for i, extra in enumerate(([], ["-C", "symbol-mangling-version=v0"])):
            out = Path(tmp, f"lib{i}.o")
            cmd = ["rustc", "--crate-type=lib", "--emit=obj", "-O", *extra, "-o", str(out)]
            subprocess.run([*cmd, str(src)], check=True, capture_output=True)
            names |= _nm_names(out)
    return sorted(names)


def cxxfilt_oracle(names: Sequence[str]) -> list[str | None]:
    """Demangle ``names`` with one ``c++filt`` run; ``None`` where it left a name unchanged."""
    proc = subprocess.run(
        ["c++filt"], input="\n".join(names) + "\n", capture_output=True, text=True, check=True
    )
    out = proc.stdout.split("\n")[: len(names)]
    return [None if o == n else o for n, o in zip(names, out, strict=True)]


def category(name: str) -> str:
    """Classify a mangled name: rust-v0, rust-legacy, itanium or other."""
    if name.startswith("_R"):
        return "rust-v0"
    if RUST_LEGACY.match(name):
        return "rust-legacy"
    return "itanium" if name.startswith("_Z") else "other"


def junk_names(corpus: Sequence[str], count: int) -> list[str]:
    """Deterministic malformed names: truncations and mutations of real ones, and noise."""
    rng = random.Random(1234)
    alphabet = "_ZNKSt0123456789vEIiPRcdlmCDT$@.abcSsxyz \x00é"
    out = ["", "_Z", "_R", "_ZN", "_ZGVbN4v_sin", "_GLOBAL__sub_I_x", "_Z" + "P" * 5000]
    for _ in range(count):
        base = rng.choice(corpus) if corpus else "_Z3fooi"
        op = rng.randrange(4)
        if op == 0:
            out.append(base[: rng.randrange(len(base) + 1)])
        elif op == 1:
            pos = rng.randrange(len(base))
            out.append(base[:pos] + rng.choice(alphabet) + base[pos + 1 :])
        elif op == 2:
            out.append("_Z" + "".join(rng.choice(alphabet) for _ in range(rng.randrange(40))))
        else:
            out.append(base + base[2:])
    return out


# --------------------------------------------------------------------------- candidates


def _split_version(name: str) -> tuple[str, str]:
    at = name.find("@")
    return (name, "") if at < 0 else (name[:at], name[at:])


def _unchanged_is_none(fn: Callable[[str], str | None]) -> Adapter:
    def run(name: str) -> str | None:
        out = fn(name)
        return None if not out or out == name else out

    return run


def _catching(fn: Callable[[str], str | None], *errors: type[BaseException]) -> Adapter:
    def run(name: str) -> str | None:
        try:
            return fn(name)
        except errors:
            return None

    return run


def make_adapters() -> dict[str, Callable[[], Adapter]]:
    """Factories (imported lazily in the child process) for each candidate."""

    def cxxfilt_() -> Adapter:
        import cxxfilt

        return _unchanged_is_none(_catching(cxxfilt.demangle, cxxfilt.Error))

    def cpp_demangle_() -> Adapter:
        import cpp_demangle

        return _unchanged_is_none(_catching(cpp_demangle.demangle, ValueError))

    def itanium_demangler_() -> Adapter:
        import itanium_demangler

        def run(n: str) -> str | None:
            node = itanium_demangler.parse(n)
            return None if node is None else str(node)

        return run

    def demangle_gnu() -> Adapter:
        import demangle

        return _unchanged_is_none(lambda n: demangle.demangle(n, style="gnu"))

    def multi_demangle_() -> Adapter:
        import multi_demangle

        return _unchanged_is_none(multi_demangle.demangle_symbol)

    def llvmdemangle_() -> Adapter:
        import llvmdemangle

        return _unchanged_is_none(llvmdemangle.demangle)

    def pycxxfilt_() -> Adapter:
        import pycxxfilt

        return _unchanged_is_none(_catching(pycxxfilt.demangle, ValueError))

    def pydemumble_() -> Adapter:
        import pydemumble

        return _unchanged_is_none(pydemumble.demangle)

    def pyderust_() -> Adapter:
        import pyderust

        return _unchanged_is_none(
            _catching(lambda n: pyderust.demangle(n, include_hash=True), ValueError)
        )

    def rust_demangler_() -> Adapter:
        import rust_demangler

        return _unchanged_is_none(_catching(rust_demangler.demangle, Exception))

    def cxxfilt_plus_pyderust() -> Adapter:
        rust, cxx = pyderust_(), cxxfilt_()
        return lambda n: rust(n) if n.startswith("_R") or RUST_LEGACY.match(n) else cxx(n)

    def libbfd_reference() -> Adapter:
        # Not a PyPI package: binutils' own libiberty, exported by libbfd (reference only).
        import ctypes
        import glob

        libs = sorted(glob.glob("/usr/lib/*/libbfd*.so")) + sorted(glob.glob("/usr/lib/libbfd*.so"))
        if not libs:
            raise RuntimeError("no libbfd*.so found")
        bfd = ctypes.CDLL(libs[0])
        libc = ctypes.CDLL(None)
        fn = bfd.cplus_demangle
        fn.argtypes = [ctypes.c_char_p, ctypes.c_int]
        fn.restype = ctypes.c_void_p
        libc.free.argtypes = [ctypes.c_void_p]
        flags = 1 | 2 | 8  # DMGL_PARAMS | DMGL_ANSI | DMGL_VERBOSE, as c++filt

        def run(n: str) -> str | None:
            if "\x00" in n:
                return None
            ptr = fn(n.encode(), flags)
            if not ptr:
                return None
            try:
                return ctypes.string_at(ptr).decode("utf-8", "replace")
            finally:
                libc.free(ptr)

        return _unchanged_is_none(run)

    def ldscope_() -> Adapter:
        from ldscope.cxx import demangle

        return demangle

    return {
        "ldscope": ldscope_,
        "cxxfilt": cxxfilt_,
        "cpp-demangle": cpp_demangle_,
        "itanium-demangler": itanium_demangler_,
        "demangle[gnu style]": demangle_gnu,
        "multi-demangle": multi_demangle_,
        "llvm-demangle-fxti": llvmdemangle_,
        "pycxxfilt": pycxxfilt_,
        "pydemumble": pydemumble_,
        "pyderust": pyderust_,
        "rust-demangler": rust_demangler_,
        "cxxfilt+pyderust": cxxfilt_plus_pyderust,
        "libbfd (reference)": libbfd_reference,
    }


def _child(key: str, names: list[str], junk: list[str], conn: object) -> None:
    send = conn.send  # type: ignore[attr-defined]
    sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - some candidates print while working
    try:
        adapter = make_adapters()[key]()
        results: list[str | None] = []
        errors = 0
        t0 = time.perf_counter()
        for n in names:
            bare, suffix = _split_version(n)
            try:
                out = adapter(bare)
            except Exception:
                errors += 1
                out = None
            results.append(None if out is None else out + suffix)
        elapsed = time.perf_counter() - t0
        junk_errors = 0
        for j in junk:
            try:
                adapter(j)
            except Exception:
                junk_errors += 1
        send(("ok", results, elapsed, errors, junk_errors))
    except BaseException as exc:  # pragma: no cover - reported, not raised
        send(("error", repr(exc)))


def run_candidate(
    key: str, names: list[str], junk: list[str], timeout: float
) -> tuple[str, object]:
    """Run one candidate in a child process; returns (status, payload)."""
    ctx = mp.get_context("fork")
    parent, child = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_child, args=(key, names, junk, child))
    proc.start()
    child.close()
    if not parent.poll(timeout):
        proc.kill()
        proc.join()
        return "hang", None
    try:
        msg = parent.recv()
    except EOFError:
        proc.join()
        return "crash", f"child died (exit {proc.exitcode})"
    proc.join()
    if msg[0] == "error":
        return "unavailable", msg[1]
    return "ok", msg[1:]


# --------------------------------------------------------------------------- report


def main(argv: Sequence[str] | None = None) -> int:
    """Collect the corpus, run every candidate and print a table."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--roots", nargs="*", default=None, help="directories to scan")
    ap.add_argument("--quick", action="store_true", help="libstdc++.so.6 + Rust crate only")
    ap.add_argument("--only", nargs="*", default=None, help="candidate names to run")
    ap.add_argument("--show", type=int, default=8, help="disagreements to print per candidate")
    ap.add_argument("--timeout", type=float, default=600.0)
    ap.add_argument(
        "--corpus",
        type=Path,
        default=None,
        help="name list cache: read it if it exists, else collect and write it",
    )
    ns = ap.parse_args(argv)

    if ns.corpus is not None and ns.corpus.exists():
        names = ns.corpus.read_text().split("\n")
        names = [n for n in names if n]
    elif ns.quick:
        libdir = sysconfig.get_config_var("LIBDIR") or "/usr/lib"
        cands = [Path("/usr/lib/x86_64-linux-gnu/libstdc++.so.6"), Path(libdir, "libstdc++.so.6")]
        names_set: set[str] = set()
        for c in cands:
            if c.exists():
                names_set |= _nm_names(c.resolve())
                break
        names = sorted(names_set)
    else:
        roots = ns.roots or [*DEFAULT_ROOTS, sys.prefix]
        names = collect_corpus(roots)
    names = sorted(set(names) | set(rust_names()))
    if ns.corpus is not None and not ns.corpus.exists():
        ns.corpus.write_text("\n".join(names) + "\n")
    oracle = cxxfilt_oracle(names)
    cats = [category(n) for n in names]
    junk = junk_names(names, 20000)
    counts = {c: cats.count(c) for c in ("itanium", "rust-legacy", "rust-v0", "other")}
    print(
        f"corpus: {len(names)} unique names {counts}; "
        f"{sum(o is not None for o in oracle)} demangled by c++filt; "
        f"{sum('@' in n for n in names)} with a version suffix"
    )
    print(f"junk/malformed inputs: {len(junk)}")

    wanted = make_adapters()
    keys = [k for k in wanted if ns.only is None or k in ns.only]
    header = (
        f"{'candidate':22} {'itanium %':>10} {'rust-leg %':>10} {'rust-v0 %':>10} "
        f"{'all %':>8} {'names/s':>10} {'exc':>5} {'junk exc':>8} status"
    )
    print(header)
    print("-" * len(header))
    details: list[str] = []
    for key in keys:
        status, payload = run_candidate(key, names, junk, ns.timeout)
        if status != "ok":
            print(
                f"{key:22} {'':>10} {'':>10} {'':>10} {'':>8} {'':>10} {'':>5} {'':>8} "
                f"{status}: {payload}"
            )
            continue
        results, elapsed, errors, junk_errors = payload  # type: ignore[misc]
        agree = {c: 0 for c in counts}
        bad: list[tuple[str, str | None, str | None]] = []
        for n, c, want, got in zip(names, cats, oracle, results, strict=True):
            if want == got:
                agree[c] += 1
            else:
                bad.append((n, want, got))

        def pct(c: str, agree: dict[str, int] = agree) -> str:
            return f"{100.0 * agree[c] / counts[c]:.3f}" if counts[c] else "-"

        total = 100.0 * sum(agree.values()) / len(names)
        print(
            f"{key:22} {pct('itanium'):>10} {pct('rust-legacy'):>10} {pct('rust-v0'):>10} "
            f"{total:8.3f} {len(names) / elapsed:10.0f} {errors:5d} {junk_errors:8d} ok"
        )
        if bad:
            details.append(f"\n{key}: {len(bad)} disagreements, first {ns.show}:")
            for n, want, got in bad[: ns.show]:
                details.append(f"  {n}\n    c++filt: {want}\n    {key}: {got}")
    print("\n".join(details))
    _time_batch(names)
    return 0


def _time_batch(names: list[str]) -> None:
    """Throughput of ``ldscope.cxx.demangle_many`` (best of 3) on the corpus and libstdc++."""
    try:
        from ldscope.cxx import demangle_many
    except ImportError:
        return
    std = [n for n in names if "GLIBCXX" in n or "CXXABI" in n]
    for label, batch in (("whole corpus", names), ("libstdc++ versioned names x20", std * 20)):
        if not batch:
            continue
        best = 0.0
        for _ in range(3):
            t0 = time.perf_counter()
            demangle_many(batch)
            best = max(best, len(batch) / (time.perf_counter() - t0))
        print(f"demangle_many, {label}: {len(batch)} names, {best:,.0f} names/s")


if __name__ == "__main__":
    sys.exit(main())
