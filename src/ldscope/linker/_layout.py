"""An estimate of the output's sections from the inputs alone: each SHF_ALLOC input section
mapped by name as the default linker script maps it, in link order, aligned as the linker
aligns it. What the linker adds itself (headers, .plt, .got, .dynsym, veneers) is not in it,
nor what --gc-sections, --icf or merging of strings would remove."""

from __future__ import annotations

from dataclasses import dataclass

from ldscope.linker.engines import Unit
from ldscope.linker.inputs import ObjectFacts


@dataclass(frozen=True, slots=True)
class OutputSectionEstimate:
    """One output section as estimated from its inputs."""

    name: str
    size: int  # inputs with their alignment padding
    min_size: int  # the inputs' sizes alone: what the section takes at least
    align: int
    inputs: int  # input sections mapped into it
    code: bool


@dataclass(frozen=True, slots=True)
class Placement:
    """Where one object's share of an output section starts."""

    start: int  # estimated offset in the output section (padding included)
    min_start: int  # at least this far from the section's start (inputs before it, no padding)
    size: int  # the share's padded size
    min_size: int  # its inputs' sizes alone


@dataclass(frozen=True, slots=True)
class LayoutEstimate:
    """The estimated output sections (first-appearance order) and each object's place in them."""

    sections: tuple[OutputSectionEstimate, ...]
    placements: dict[tuple[int, str, int], Placement]  # (uid, output, rank) -> placement

    def section(self, name: str) -> OutputSectionEstimate | None:
        """The estimate of one output section, if any input maps to it."""
        return next((s for s in self.sections if s.name == name), None)


def estimate_layout(units: list[Unit]) -> LayoutEstimate:
    """Sum each object's section shares per output section in link order, a share aligned to
    its largest input alignment; ranks order the script's lines inside a section."""
    shares = [(u.uid, s) for u in units if isinstance(u.facts, ObjectFacts) for s in u.facts.shares]
    order: dict[str, None] = {}
    for _uid, s in shares:
        order.setdefault(s.output, None)
    placements: dict[tuple[int, str, int], Placement] = {}
    sections: list[OutputSectionEstimate] = []
    for name in order:
        members = sorted(((uid, s) for uid, s in shares if s.output == name), key=lambda m: m[1].rank)
        at = low = 0
        align = 1
        count = 0
        code = False
        for uid, s in members:
            at = -(-at // s.align) * s.align
            placements[(uid, name, s.rank)] = Placement(at, low, s.padded, s.size)
            at += s.padded
            low += s.size
            align = max(align, s.align)
            count += s.count
            code = code or s.code
        sections.append(OutputSectionEstimate(name, at, low, align, count, code))
    return LayoutEstimate(tuple(sections), placements)
