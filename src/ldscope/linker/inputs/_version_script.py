"""Version scripts (`--version-script`): which exact names each version node exports."""

from __future__ import annotations

import re

from ldscope.elf import read_regular
from ldscope.errors import InputFormatError

_MAX_BYTES = 4 << 20
_COMMENTS = re.compile(r"/\*.*?\*/|#[^\n]*|//[^\n]*", re.S)
_TOKEN = re.compile(r'"[^"]*"|[{};]|[^\s{};]+')


def version_script_names(path: str) -> list[tuple[str, str]]:
    """(version node, symbol name) for each exact global name of the script, in order.

    Patterns (`*`, `?`, `[...]`) and `extern "C++"`/`"Java"` blocks name no one symbol and are
    left out; the anonymous node is "" (InputFormatError if the file cannot be read)."""
    try:
        data = read_regular(path, _MAX_BYTES + 1)
    except OSError as exc:
        raise InputFormatError(path, f"cannot read version script: {exc.strerror or exc}") from None
    text = _COMMENTS.sub(" ", data[:_MAX_BYTES].decode("utf-8", "surrogateescape"))
    tokens = _TOKEN.findall(text)
    names: list[tuple[str, str]] = []
    node: str | None = None
    depth = 0
    scope = "global"
    extern = False
    pending = ""
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        i += 1
        if tok == "{":
            depth += 1
            if depth == 1:
                node, scope = pending, "global"
            pending = ""
            continue
        if tok == "}":
            depth -= 1
            extern = extern and depth > 1
            continue
        if tok == ";":
            if depth == 0:
                pending = ""  # after `} PARENT;`: the next node may be anonymous
            continue
        if depth == 0:
            pending = tok if tok not in ("VERSION",) else pending
            continue
        if tok in ("global:", "local:"):
            scope = tok[:-1]
        elif tok in ("global", "local") and i < len(tokens) and tokens[i] == ":":
            scope, i = tok, i + 1
        elif tok == "extern":
            extern = True
            i += 1  # the language
        elif scope == "global" and not extern and node is not None:
            name = tok.rstrip(";")
            if name.endswith(":"):
                scope = name[:-1]
                continue
            if name and not re.search(r"[*?\[]", name):
                names.append((node, name.strip('"')))
    return names
