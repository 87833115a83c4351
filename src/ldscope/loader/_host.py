"""The process a file is loaded into, and how to choose it for a file."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

from ldscope.elf import constants as C
from ldscope.loader._image import ElfImage
from ldscope.system import running_interpreter
from ldscope.vocab import Words

_EXTENSION_SUFFIX = re.compile(r"\.(cpython-\d+[a-z]*-[^.]+|abi3|cpython-\d+[a-z]*)\.so$|module\.so$")


class HostKind(Words):
    """How a file comes into a process."""

    EXECUTABLE = "executable"  # exec'ed: the file is the main program
    PYTHON = "python"  # imported by a Python interpreter (RTLD_NOW)
    DLOPEN = "dlopen"  # dlopen'ed by a minimal host program
    CTYPES = "ctypes"  # dlopen'ed by ctypes.CDLL in a Python interpreter (RTLD_NOW | RTLD_LOCAL)


@dataclass(frozen=True, slots=True)
class Host:
    """The process a target is loaded into."""

    kind: HostKind
    executable: str | None = None  # python interpreter or other host program
    preload: tuple[str, ...] = ()  # dlopen'ed earlier with RTLD_GLOBAL
    loaded: tuple[str, ...] = ()  # dlopen'ed earlier with RTLD_LOCAL
    now: bool = False  # dlopen flags include RTLD_NOW
    context: str | None = None  # what `loaded` is, compactly ("after import torch (…: 9 files)")

    def describe(self) -> str:
        """One line naming the host, for reports."""
        if self.kind == HostKind.EXECUTABLE:
            base = "executable (loads as itself)"
        elif self.kind == HostKind.PYTHON:
            base = f"python extension imported by {self.executable} (RTLD_NOW)"
        elif self.kind == HostKind.CTYPES:
            base = f"library loaded by ctypes.CDLL in {self.executable} (RTLD_NOW|RTLD_LOCAL)"
        elif self.executable:
            base = f"shared library dlopen'ed by {self.executable}"
        else:
            base = f"shared library dlopen'ed by a minimal host ({'RTLD_NOW' if self.now else 'RTLD_LAZY'})"
        extras = [f"preload {p}" for p in self.preload]
        # The process state a scan assumes is summarised; paths given by hand are listed.
        extras += [self.context] if self.context else [f"loaded {p}" for p in self.loaded]
        return base + (f"; {', '.join(extras)}" if extras else "")


def is_python_extension(path: str, image: ElfImage) -> bool:
    """True for CPython extension modules: by file name suffix, or by exporting the init
    function the importer looks up for the file (PyInit_ + the name up to its first dot)."""
    if image.e_type != C.ET_DYN or image.interpreter is not None:
        return False
    base = os.path.basename(path)
    if _EXTENSION_SUFFIX.search(base):
        return True
    return image.defines("PyInit_" + base.split(".", 1)[0])


def choose_host(path: str, image: ElfImage, kind: HostKind | None = None, python: str | None = None,
                preload: tuple[str, ...] = (), loaded: tuple[str, ...] = (), now: bool | None = None) -> Host:
    """Executables load as themselves, extension modules in Python (`python`, default the
    interpreter running ldscope), other libraries in a minimal host; `kind` forces one."""
    if kind is None:
        if image.is_main_executable_type:
            kind = HostKind.EXECUTABLE
        elif python is not None or is_python_extension(path, image):
            kind = HostKind.PYTHON
        else:
            kind = HostKind.DLOPEN
    if kind in (HostKind.PYTHON, HostKind.CTYPES):
        exe = os.path.realpath(python) if python else running_interpreter()
        return Host(kind, exe, preload, loaded, True)
    if kind == HostKind.EXECUTABLE:
        return Host(HostKind.EXECUTABLE, None, preload, loaded)
    return Host(HostKind.DLOPEN, None, preload, loaded, bool(now))
