"""JSON rendering helpers shared by every command (versioned schemas, stable key order)."""

from __future__ import annotations

import dataclasses
import json
from typing import Any


def to_jsonable(value: Any) -> Any:
    """Dataclasses, tuples and enums to plain JSON values (recursively)."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: to_jsonable(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, (list, tuple)):
        return [to_jsonable(v) for v in value]
    if isinstance(value, dict):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if hasattr(value, "value") and hasattr(value, "name") and type(value).__module__ != "builtins":
        return value.value
    return value


def dumps(document: dict[str, Any]) -> str:
    """Serialise a document (ASCII-safe, indented, trailing newline)."""
    return json.dumps(document, indent=2, ensure_ascii=True) + "\n"
