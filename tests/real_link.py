"""One link line through a real linker and through ldscope, compared: the verdict, and for a
failure the first message line after the program name (collect2 runs the linker by path)."""

from __future__ import annotations

import subprocess
from pathlib import Path

from ldscope.analysis import LinkReport, build_report
from ldscope.linker.frontend import resolve_link_line


def agree_with_real_linker(words: list[str], cwd: Path, first_line: bool = True,
                           ) -> tuple[LinkReport, subprocess.CompletedProcess[str]]:
    """Link `words` for real in `cwd` and predict them; assert the verdicts agree (and, with
    `first_line`, a failure's first message line); both results."""
    real = subprocess.run(words, cwd=cwd, capture_output=True, text=True, timeout=120)
    report = build_report(resolve_link_line(words, cwd=str(cwd)))
    assert report.links == (real.returncode == 0), (words, real.stderr, [e.message for e in report.errors])
    if first_line and real.returncode != 0:
        first_real = real.stderr.splitlines()[0]
        first_predicted = report.errors[0].message.splitlines()[0]
        assert first_predicted.split(": ", 1)[1] == first_real.split(": ", 1)[1], (first_predicted, first_real)
    return report, real
