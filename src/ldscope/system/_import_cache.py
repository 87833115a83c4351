"""A persistent cache of each Python file's import statements, for the static import graph.

Reading and line-scanning a package's Python sources is most of what the Python process model
costs (torch's import closure is ~1,800 files, ~50 MB). Their imports change only when the
file does: an entry is keyed by the file's path, size and mtime (nanoseconds) and by the
scanner's own source, so a changed file or a changed scanner is scanned afresh. One JSON
file per site-packages directory, written atomically; a cache that cannot be read or written
is ignored (the scan is only slower), never an error.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path

from ldscope.elf import open_regular_text

_FORMAT = 1


def scanner_fingerprint(*modules: str) -> str:
    """A digest of the scanner's source files: entries from another scanner are not used."""
    digest = hashlib.sha256(str(_FORMAT).encode())
    for path in modules:
        try:
            digest.update(Path(path).read_bytes())
        except OSError:
            digest.update(path.encode())
    return digest.hexdigest()[:16]


class ImportCache:
    """Cached import lists of the Python files under one site-packages directory."""

    def __init__(self, directory: str, site: str, fingerprint: str) -> None:
        key = hashlib.sha256(os.path.realpath(site).encode("utf-8", "surrogateescape")).hexdigest()[:24]
        self.path = os.path.join(directory, f"imports-{key}.json")
        self.fingerprint = fingerprint
        self._entries: dict[str, list[object]] | None = None
        self._dirty = False

    def _load(self) -> dict[str, list[object]]:
        if self._entries is None:
            self._entries = {}
            try:
                with open_regular_text(self.path, errors="strict") as fh:
                    doc = json.load(fh)
                if isinstance(doc, dict) and doc.get("fingerprint") == self.fingerprint:
                    files = doc.get("files")
                    if isinstance(files, dict):
                        self._entries = files
            except (OSError, ValueError, UnicodeDecodeError):
                pass
        return self._entries

    def get(self, path: str, stat: os.stat_result, package: str) -> list[tuple[str, str]] | None:
        """The cached (module, guard) list of `path`, if it is unchanged since it was stored."""
        entry = self._load().get(path)
        if not isinstance(entry, list) or len(entry) != 4:
            return None
        size, mtime, cached_package, imports = entry
        if size != stat.st_size or mtime != stat.st_mtime_ns or cached_package != package:
            return None
        if not isinstance(imports, list):
            return None
        try:  # one pass: a pair that is not two strings (a damaged file) is a miss
            if all(type(name) is str and type(guard) is str for name, guard in imports):
                return imports  # lists of two strings, checked
        except (TypeError, ValueError):
            pass
        return None

    def put(self, path: str, stat: os.stat_result, package: str, imports: list[tuple[str, str]]) -> None:
        """Remember the import list of `path` as it is now."""
        self._load()[path] = [stat.st_size, stat.st_mtime_ns, package, [list(i) for i in imports]]
        self._dirty = True

    def save(self) -> None:
        """Write the cache if anything was added (atomically; failures are ignored)."""
        if not self._dirty or self._entries is None:
            return
        try:
            os.makedirs(os.path.dirname(self.path), exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=".imports-", dir=os.path.dirname(self.path))
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                json.dump({"fingerprint": self.fingerprint, "files": self._entries}, fh, separators=(",", ":"))
            os.replace(tmp, self.path)
            self._dirty = False
        except OSError:
            try:
                os.unlink(tmp)
            except (OSError, UnboundLocalError):
                pass
