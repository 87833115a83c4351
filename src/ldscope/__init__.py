"""ldscope: will native code on Linux link, and will it load? Answered by reading, never running."""

from __future__ import annotations

__version__ = "0.1.0"

__all__ = ["__version__"]
