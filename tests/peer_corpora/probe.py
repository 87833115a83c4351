"""What ldscope and readelf make of each peer-corpus file: read or rejected, and the fields
they both show (header, NEEDED/SONAME/RPATH/RUNPATH, build-id, symbols with versions).

readelf "reads" a file when `readelf -W -h -l -S -d -s -V -n` (the structures ldscope reads;
not -A or -u, whose attribute and unwind decoders fail on files whose ELF structure is
fine) exits 0. ldscope reads it when `ElfFile.open` and every table below raise no
InputFormatError.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ldscope.elf import ElfFile
from ldscope.elf import constants as C
from ldscope.errors import InputFormatError
from tests.elf_oracle.readelf_oracle import (
    READELF_BINDS,
    READELF_NDX,
    READELF_SYMTYPES,
    READELF_TYPES,
    READELF_VIS,
    ReadelfReport,
    bracketed,
    readelf_flags,
    readelf_machine,
    readelf_number,
    run_readelf,
)
from tests.peer_corpora.sources import ELF_MAGIC

READELF_CORE = ["-W", "-h", "-l", "-S", "-d", "-s", "-V", "-n"]
READELF_FIELDS = ["-W", "-h", "-S", "-d", "-s", "-V", "-n"]  # what compare_fields reads
READELF_IMAGE = ["-W", "-D", "-s"]  # the dynamic symbols of a file without section headers
CHUNK = 48  # files per readelf process for the exit-status pass

# The tables touched to call a file read (the brief's list: open, .dynamic, .dynsym,
# .symtab, sections, versions, notes), in this order.
TOUCHED: tuple[tuple[str, Callable[[ElfFile], object]], ...] = (
    ("sections", lambda e: e.sections),
    ("dynamic", lambda e: e.dynamic),
    ("dynsym", lambda e: e.dynsym),
    ("symtab", lambda e: e.symtab),
    ("versions", lambda e: (e.versions, e.version_definitions, e.version_requirements)),
    ("notes", lambda e: (e.notes, e.build_id)),
)


@dataclass(frozen=True, slots=True)
class Verdict:
    """One file: did ldscope read it (else where and why not), did readelf."""

    rel: str
    ldscope_error: str | None  # "<where>: <reason>" of the first InputFormatError
    readelf_rc: int
    readelf_error: str  # readelf's first `Error:` line, "" if none

    @property
    def ldscope_reads(self) -> bool:
        return self.ldscope_error is None

    @property
    def readelf_reads(self) -> bool:
        return self.readelf_rc == 0


def is_elf(path: str) -> bool:
    with open(path, "rb") as fh:
        return fh.read(4) == ELF_MAGIC


def ldscope_error(path: str) -> str | None:
    """None if ldscope reads the file and all its tables, else '<where>: <reason>'."""
    try:
        elf = ElfFile.open(path)
    except InputFormatError as exc:
        return f"open: {exc.reason}"
    try:
        for where, touch in TOUCHED:
            try:
                touch(elf)
            except InputFormatError as exc:
                return f"{where}: {exc.reason}"
    finally:
        elf.close()
    return None


def _readelf(paths: Sequence[str], options: Sequence[str]) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(["readelf", *options, *paths], capture_output=True,
                          env=dict(os.environ, LC_ALL="C"), timeout=600)


def _first_error(stderr: bytes) -> str:
    for line in stderr.decode("utf-8", "replace").splitlines():
        if "Error:" in line:
            return line.split("Error:", 1)[1].strip()
    return ""


def readelf_status(paths: Sequence[str]) -> dict[str, tuple[int, str]]:
    """(exit status, first error) of READELF_CORE per file: one process per chunk, and one
    per file only in a chunk that failed (the status is the chunk's)."""
    out: dict[str, tuple[int, str]] = {}
    for i in range(0, len(paths), CHUNK):
        chunk = list(paths[i : i + CHUNK])
        res = _readelf(chunk, READELF_CORE)
        if res.returncode == 0:
            out.update({p: (0, _first_error(res.stderr) if len(chunk) == 1 else "") for p in chunk})
            continue
        for p in chunk:
            one = _readelf([p], READELF_CORE)
            out[p] = (one.returncode, _first_error(one.stderr))
    return out


def verdicts(root: str, rels: Sequence[str]) -> list[Verdict]:
    """A Verdict for every ELF file among rels (archives are left to the CLI check)."""
    elf_rels = [r for r in rels if is_elf(os.path.join(root, r))]
    status = readelf_status([os.path.join(root, r) for r in elf_rels])
    return [Verdict(r, ldscope_error(os.path.join(root, r)), *status[os.path.join(root, r)])
            for r in elf_rels]


def readelf_reports(paths: Sequence[str], options: Sequence[str] = READELF_FIELDS) -> dict[str, ReadelfReport]:
    """One readelf process per file: readelf 2.40 carries state from one file to the next
    (after a file whose section headers are unavailable, the files after it in the same
    process print no symbol tables), and the peer corpora have such files."""
    reports: dict[str, ReadelfReport] = {}
    for path in paths:
        reports.update(run_readelf([path], options))
    return reports


# ------------------------------------------------------------------- field comparison
@dataclass(frozen=True, slots=True)
class Mismatch:
    rel: str
    kind: str  # header.machine, dynamic.needed, .dynsym.symbol, ...
    where: str  # the symbol index, or ""
    ours: str
    theirs: str

    def __str__(self) -> str:
        at = f"[{self.where}]" if self.where else ""
        return f"{self.rel}{at}: {self.kind}: ldscope={self.ours} readelf={self.theirs}"


def readelf_visible(name: str) -> str:
    """A name as `readelf -W` prints it under LC_ALL=C: control bytes as ^X (0x7f as ^?)."""
    out = []
    for ch in name:
        code = ord(ch)
        if code < 0x20:
            out.append("^" + chr(code + 0x40))
        elif code == 0x7F:
            out.append("^?")
        else:
            out.append(ch)
    return "".join(out)


def _decode(raw: str) -> str:
    """ldscope's str (surrogateescape for non-UTF-8 bytes) as readelf's Latin-1 bytes."""
    return raw.encode("utf-8", "surrogateescape").decode("latin-1")


def _readelf_text(text: str) -> str:
    return text.encode("utf-8", "surrogateescape").decode("latin-1")


def _symbol_name(elf: ElfFile, table_name: str, index: int) -> str:
    """What readelf prints in a symbol's Name column: the versioned name for .dynsym, with
    ` (N)` after a version required from another file."""
    table = elf.dynsym if table_name != ".symtab" else elf.symtab
    assert table is not None
    if table_name == ".symtab" or table.versions is None or table.versions.versym is None:
        return readelf_visible(_decode(table.name(index)))
    sym = table.symbol(index)
    shown = _decode(sym.versioned_name)
    if sym.version is not None and sym.version_file is not None:
        shown += f" ({int(table.versions.versym[index]) & 0x7FFF})"
    return readelf_visible(shown)


def compare_fields(rel: str, elf: ElfFile, rep: ReadelfReport, image: ReadelfReport | None,
                   checked: dict[str, int]) -> list[Mismatch]:
    """ldscope against readelf on one file; counts comparisons per kind in `checked`.

    `image`: `readelf -D -s` for a file whose dynamic symbols ldscope found through the
    dynamic segment alone (no SHT_DYNSYM section: see needs_image)."""
    found: list[Mismatch] = []

    def check(kind: str, ours: object, theirs: object, where: str = "") -> None:
        checked[kind] = checked.get(kind, 0) + 1
        if ours != theirs:
            found.append(Mismatch(rel, kind, where, repr(ours), repr(theirs)))

    h = rep.header
    check("header.class", f"ELF{64 if elf.is64 else 32}", h.get("Class"))
    check("header.data", elf.little_endian, "little endian" in h.get("Data", ""))
    check("header.type", elf.e_type, READELF_TYPES.get(h.get("Type", "").split(" ")[0], -1))
    check("header.machine", elf.machine, readelf_machine(h))

    def readable(what: str, read: Callable[[], object]) -> bool:
        """False (and counted as not compared) where ldscope rejects this part of a file:
        a known reader gap; the rest of the file is still compared."""
        try:
            read()
        except InputFormatError:
            key = f"not-read.{what.lstrip('.')}"
            checked[key] = checked.get(key, 0) + 1
            return False
        return True

    dynamic_read = readable("dynamic", lambda: elf.dynamic)
    dyn = elf.dynamic if dynamic_read else None
    if dyn is not None and rep.dynamic is not None:
        def values(tag: str) -> list[str]:
            return [_readelf_text(bracketed(v) or v) for k, v in rep.dynamic or [] if k == tag]

        check("dynamic.needed", [_decode(n) for n in dyn.needed], values("NEEDED"))
        for tag, ours in (("SONAME", dyn.soname), ("RPATH", dyn.rpath_raw), ("RUNPATH", dyn.runpath_raw)):
            got = values(tag)
            check(f"dynamic.{tag.lower()}", None if ours is None else _decode(ours), got[0] if got else None)
    elif dynamic_read:
        check("dynamic.present", dyn is not None, rep.dynamic is not None)

    if readable("notes", lambda: elf.build_id):
        check("build_id", elf.build_id, rep.build_ids[0] if rep.build_ids else None)
    # readelf -V lists version sections only; versions ldscope found through DT_VERNEED /
    # DT_VERDEF alone are checked in the symbol names (readelf -D -s shows them there).
    version_sections = {s.type for s in elf.sections} & {C.SHT_GNU_VERDEF, C.SHT_GNU_VERNEED}
    if version_sections and readable("versions", lambda: (elf.version_definitions, elf.version_requirements)):
        check("verdef", [(d.index, d.flags, _decode(d.name), [_decode(p) for p in d.parents])
                         for d in elf.version_definitions],
              [(i, readelf_flags(f), _readelf_text(n), [_readelf_text(p) for p in ps])
               for i, f, n, ps in rep.verdefs])
        check("verneed", [(_decode(r.file), _decode(r.name), r.index, r.flags)
                          for r in elf.version_requirements],
              [(_readelf_text(fi), _readelf_text(n), i, readelf_flags(fl))
               for fi, n, i, fl in rep.verneeds])

    tables: list[tuple[str, str, ReadelfReport]] = [(".dynsym", ".dynsym", rep), (".symtab", ".symtab", rep)]
    if image is not None:
        tables = [(".dynsym", "<image>", image)]
    for ours_name, theirs_name, source in tables:
        if not readable(ours_name, lambda n=ours_name: elf.dynsym if n == ".dynsym" else elf.symtab):
            continue
        table = elf.dynsym if ours_name == ".dynsym" else elf.symtab
        rows = source.symbols.get(theirs_name)
        check(f"{ours_name}.present", table is not None, rows is not None)
        if table is None or rows is None:
            continue
        check(f"{ours_name}.count", len(table), source.symbol_counts[theirs_name])
        values_ = table.value.tolist()
        sizes = table.size.tolist()
        types = table.type.tolist()
        binds = table.bind.tolist()
        vis = table.visibility.tolist()
        shndx = table.section_index.tolist()
        for num, value, size, stype, bind, svis, ndx, shown in rows:
            if num >= len(table):
                check(f"{ours_name}.index", len(table), num)
                continue
            ours_row = (values_[num], sizes[num], types[num], binds[num], vis[num], shndx[num])
            theirs_row = (value, size, readelf_number(stype, READELF_SYMTYPES),
                          readelf_number(bind, READELF_BINDS), READELF_VIS.get(svis, -1),
                          _readelf_ndx(ndx))
            check(f"{ours_name}.symbol", ours_row, theirs_row, str(num))
            expected = _symbol_name(elf, ours_name, num)
            if (expected == "" and types[num] == C.STT_SECTION and shown
                    and 0 < shndx[num] < len(elf.sections)):
                # readelf shows an unnamed section symbol under its section's name (the
                # split documented in docs/elf-fidelity.md): compare with that.
                expected = readelf_visible(_decode(elf.sections[shndx[num]].name))
            check(f"{ours_name}.name", expected, _readelf_text(shown), str(num))
    return found


def needs_image(elf: ElfFile) -> bool:
    """ldscope read .dynsym from DT_SYMTAB (no SHT_DYNSYM section): readelf shows that table
    only with -D."""
    try:
        return elf.dynsym is not None and not any(s.type == C.SHT_DYNSYM for s in elf.sections)
    except InputFormatError:
        return False


def _readelf_ndx(text: str) -> int:
    """The Ndx column: a number, a name (UND, ABS, COM), or a processor/OS-specific index."""
    if text in READELF_NDX:
        return READELF_NDX[text]
    if text.startswith(("PRC[", "OS [", "RSV[")):
        return int(text[4:].strip("[] "), 16)
    try:
        return readelf_number(text, READELF_NDX)
    except ValueError:
        return -1


@dataclass(frozen=True, slots=True)
class CorpusResult:
    """One corpus: every file's verdict, and the field comparison over the files both read."""

    verdicts: tuple[Verdict, ...]
    compared: int  # files compared field by field (those readelf reads that ldscope opens)
    checked: dict[str, int]
    mismatches: tuple[Mismatch, ...]

    @property
    def read(self) -> list[Verdict]:
        return [v for v in self.verdicts if v.ldscope_reads and v.readelf_reads]

    @property
    def rejected_by_both(self) -> list[Verdict]:
        return [v for v in self.verdicts if not v.ldscope_reads and not v.readelf_reads]

    @property
    def rejected_only_by_ldscope(self) -> list[Verdict]:
        return [v for v in self.verdicts if not v.ldscope_reads and v.readelf_reads]

    @property
    def rejected_only_by_readelf(self) -> list[Verdict]:
        return [v for v in self.verdicts if v.ldscope_reads and not v.readelf_reads]


def evaluate(root: str, rels: Sequence[str]) -> CorpusResult:
    """Verdicts for every ELF file, then ldscope against readelf on those both read."""
    found = verdicts(root, rels)
    # Files readelf reads, including those ldscope rejects after opening them (a known gap
    # in one table): their other tables are compared too.
    both = [v.rel for v in found if v.readelf_reads
            and (v.ldscope_error is None or not v.ldscope_error.startswith("open:"))]
    reports = readelf_reports([os.path.join(root, r) for r in both])
    checked: dict[str, int] = {}
    mismatches: list[Mismatch] = []
    for rel in both:
        path = os.path.join(root, rel)
        with ElfFile.open(path) as elf:
            image = readelf_reports([path], READELF_IMAGE)[path] if needs_image(elf) else None
            mismatches += compare_fields(rel, elf, reports[path], image, checked)
    return CorpusResult(tuple(found), len(both), checked, tuple(mismatches))
