"""Colour for terminals: the one place text is styled (the CLI decides whether to)."""

from __future__ import annotations


def styled(text: str, color: str | None, use_color: bool, bold: bool = False) -> str:
    """`text` in `color` when colour is on (a terminal, no NO_COLOR), else unchanged."""
    if not use_color or color is None:
        return text
    import click  # only when colouring: click.style is what the CLI uses everywhere

    return click.style(text, fg=color, bold=bold)
