"""The same facts as pyelftools reads them."""

from __future__ import annotations

from ldscope.elf import constants as C
from tests.elf_oracle.facts import ElfFacts, SymFact


def _enum_maps() -> dict[str, dict[str, int]]:
    from elftools.elf import enums

    sh_types: dict[str, int] = {}
    for name in dir(enums):
        if name.startswith("ENUM_SH_TYPE"):
            sh_types.update({k: v for k, v in getattr(enums, name).items() if k != "_default_"})
    return {
        "sh_type": sh_types,
        "bind": {k: v for k, v in enums.ENUM_ST_INFO_BIND.items() if k != "_default_"},
        "type": {k: v for k, v in enums.ENUM_ST_INFO_TYPE.items() if k != "_default_"},
        "vis": {k: v for k, v in enums.ENUM_ST_VISIBILITY.items() if k != "_default_"},
        "shndx": {k: v for k, v in enums.ENUM_ST_SHNDX.items() if k != "_default_"},
        "e_type": {k: v for k, v in enums.ENUM_E_TYPE.items() if k != "_default_"},
        "e_machine": {k: v for k, v in enums.ENUM_E_MACHINE.items() if k != "_default_"},
        "d_tag": {k: v for k, v in enums.ENUM_D_TAG.items() if k != "_default_"},
        "vers": {k: v for k, v in enums.ENUM_VERSYM.items() if k != "_default_"},
    }


_ENUMS: dict[str, dict[str, int]] = {}


def _num(value: object, kind: str) -> int:
    """pyelftools gives enum names for known values and ints otherwise; make both ints."""
    if isinstance(value, int):
        return value
    if not _ENUMS:
        _ENUMS.update(_enum_maps())
    return _ENUMS[kind][str(value)]


def _latin1(text: str) -> bytes:
    return text.encode("latin-1")  # pyelftools decodes every string as latin-1


def pyelftools_facts(path: str) -> ElfFacts:
    """The facts as pyelftools reads them."""
    from elftools.elf.dynamic import DynamicSection, DynamicSegment
    from elftools.elf.elffile import ELFFile
    from elftools.elf.gnuversions import GNUVerDefSection, GNUVerNeedSection, GNUVerSymSection
    from elftools.elf.sections import NoteSection, SymbolTableIndexSection, SymbolTableSection

    f = ElfFacts()
    with open(path, "rb") as fh:
        elf = ELFFile(fh)
        h = elf.header
        f.elf_class = elf.elfclass
        f.little_endian = elf.little_endian
        f.e_type = _num(h["e_type"], "e_type")
        f.e_machine = _num(h["e_machine"], "e_machine")
        f.shnum = elf.num_sections() if h["e_shoff"] else 0
        f.phnum = elf.num_segments()
        f.entry = h["e_entry"]
        sections = list(elf.iter_sections()) if f.shnum else []
        for s in sections:
            f.sections.append((
                _latin1(s.name), _num(s["sh_type"], "sh_type"), s["sh_addr"], s["sh_offset"],
                s["sh_size"], s["sh_link"], s["sh_info"], s["sh_entsize"],
            ))
        dynamic: DynamicSection | DynamicSegment | None = None
        for s in sections:
            if isinstance(s, DynamicSection) and s["sh_type"] == "SHT_DYNAMIC":
                dynamic = s
                break
        if not sections:
            for seg in elf.iter_segments():
                if isinstance(seg, DynamicSegment):
                    dynamic = seg
        if dynamic is not None:
            f.has_dynamic = True
            needed: list[bytes] = []
            count = 0
            for tag in dynamic.iter_tags():
                name = tag.entry.d_tag
                if name == "DT_NULL":
                    break
                count += 1
                if name == "DT_NEEDED":
                    needed.append(_latin1(tag.needed))
                elif name == "DT_SONAME" and f.soname is None:
                    f.soname = _latin1(tag.soname)
                elif name == "DT_RPATH" and f.rpath is None:
                    f.rpath = _latin1(tag.rpath)
                elif name == "DT_RUNPATH" and f.runpath is None:
                    f.runpath = _latin1(tag.runpath)
                elif name == "DT_FLAGS" and not f.dt_flags:
                    f.dt_flags = tag.entry.d_val
                elif name == "DT_FLAGS_1" and not f.dt_flags_1:
                    f.dt_flags_1 = tag.entry.d_val
                elif name == "DT_BIND_NOW":
                    f.bind_now = True
            f.needed = tuple(needed)
            f.dynamic_count = count
        verdef_names: dict[int, bytes] = {}
        verneed_names: dict[int, bytes] = {}
        versym: GNUVerSymSection | None = None
        for s in sections:
            if isinstance(s, GNUVerDefSection):
                for vd, aux_iter in s.iter_versions():
                    names = [_latin1(a.name) for a in aux_iter]
                    f.verdefs.append((vd["vd_ndx"], vd["vd_flags"], names[0], tuple(names[1:])))
                    verdef_names.setdefault(vd["vd_ndx"], names[0])
            elif isinstance(s, GNUVerNeedSection):
                for vn, aux_iter in s.iter_versions():
                    for a in aux_iter:
                        f.verneeds.append((_latin1(vn.name), _latin1(a.name), a["vna_other"],
                                           a["vna_flags"]))
                        verneed_names.setdefault(a["vna_other"], _latin1(a.name))
            elif isinstance(s, GNUVerSymSection):
                versym = s
        for index, s in enumerate(sections):
            if not isinstance(s, SymbolTableSection):
                continue
            xindex: SymbolTableIndexSection | None = None
            for x in sections:
                if isinstance(x, SymbolTableIndexSection) and x["sh_link"] == index:
                    xindex = x
            is_dyn = s["sh_type"] == "SHT_DYNSYM"
            syms: list[SymFact] = []
            for i, sym in enumerate(s.iter_symbols()):
                shndx = _num(sym["st_shndx"], "shndx")
                if shndx == C.SHN_XINDEX and xindex is not None:
                    shndx = xindex.get_section_index(i)
                version: bytes | None = None
                hidden = False
                from_verneed = False
                vindex = 0
                if is_dyn and versym is not None and i < versym.num_symbols():
                    raw = _num(versym.get_symbol(i)["ndx"], "vers")
                    hidden = bool(raw & 0x8000)
                    vindex = raw & 0x7FFF
                    if vindex >= 2:
                        if vindex in verdef_names:
                            version = verdef_names[vindex]
                        elif vindex in verneed_names:
                            version = verneed_names[vindex]
                            from_verneed = True
                info = sym["st_info"]
                syms.append(SymFact(
                    _latin1(sym.name), sym["st_value"], sym["st_size"],
                    _num(info["bind"], "bind"), _num(info["type"], "type"),
                    _num(sym["st_other"]["visibility"], "vis"), shndx,
                    version, hidden, from_verneed, vindex,
                ))
            if is_dyn and f.dynsym is None:
                f.dynsym = syms
            elif not is_dyn and f.symtab is None:
                f.symtab = syms
        for s in sections:
            if isinstance(s, NoteSection) and f.build_id is None:
                for note in s.iter_notes():
                    if note["n_type"] == "NT_GNU_BUILD_ID" and note["n_name"] == "GNU":
                        f.build_id = note["n_desc"]
                        break
            if s.name == ".gnu_debuglink" and s["sh_type"] != "SHT_NOBITS":
                f.debuglink = parse_debuglink_bytes(s.data(), elf.little_endian)
        f.stripped = not any(s["sh_type"] == "SHT_SYMTAB" for s in sections)
    return f


def parse_debuglink_bytes(data: bytes, little: bool) -> tuple[bytes, int] | None:
    """(file name, CRC32) from .gnu_debuglink contents, independently of ldscope."""
    nul = data.find(b"\0")
    if nul <= 0:
        return None
    crc_at = (nul + 4) & ~3
    if crc_at + 4 > len(data):
        return data[:nul], 0
    return data[:nul], int.from_bytes(data[crc_at : crc_at + 4], "little" if little else "big")
