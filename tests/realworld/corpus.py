"""The environments of the real-world tier, declared: pinned requirements and breakages.

Every requirement is pinned (`==`, the whole resolved set, so pip installs exactly this on a
fresh machine; versions checked with `pip index versions` / `pip install --dry-run --report`
for CPython 3.11 x86_64 binary wheels) and installed with `--only-binary=:all:`.  PyTorch is
the local CPU wheel `TORCH_WHEEL`, installed by path.

A breakage is applied after the installs and names the files it makes fail (globs relative to
site-packages) and what the root cause is about (`subject`: a string the first finding that
names such a file must contain).  They are made from real files only:

* `wrong-tag`: the whole pillow cp312 wheel unpacked into the 3.11 venv (as when a 3.12
  site-packages is copied over; pip itself refuses the wheel: not a supported tag).
  CPython 3.11 never imports `*.cpython-312-x86_64-linux-gnu.so`.
* `deleted-library`: one library auditwheel vendored deleted (pillow.libs' lcms2, needed by
  `PIL._imagingcms` only; numpy.libs' quadmath, needed by the vendored libgfortran, needed by
  OpenBLAS, needed by `numpy._core._multiarray_umath`: `import numpy` itself fails).
* `other-torch`: torchvision from PyPI (built against PyPI's CUDA torch 2.13.0) beside the
  local CPU torch 2.13.0+cpu.  pip accepts it without pulling CUDA torch (`torch==2.13.0` is
  satisfied by the local version `2.13.0+cpu`), so no `--no-deps` is needed.
* `newer-glibc`: longbridge 4.5.0, a real PyPI wheel tagged `cp311-cp311-manylinux_2_39_x86_64`
  whose extension requires `GLIBC_2.39` (readelf -V); pip refuses it on this glibc 2.36 host,
  so the wheel is unpacked as pip would on a glibc 2.39 machine (an environment copied from
  Ubuntu 24.04 or Debian 13).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

TORCH_WHEEL = Path("/opt/wheels/torch-2.13.0+cpu-cp311-cp311-manylinux_2_28_x86_64.whl")
BINARY_ONLY = ("--only-binary=:all:",)

NUMPY = "numpy==2.4.6"
PILLOW = "pillow==13.0.0"
TYPING_EXTENSIONS = "typing_extensions==4.16.0"


@dataclass(frozen=True)
class Install:
    """One `pip install` run in the venv: exact requirements (or a local wheel file)."""

    requirements: tuple[str, ...]
    pip_args: tuple[str, ...] = BINARY_ONLY
    local_files: tuple[Path, ...] = ()  # must exist on this machine (else the env is skipped)

    def spec(self) -> dict[str, object]:
        """The JSON form (part of the cache key)."""
        return {"requirements": list(self.requirements), "pip_args": list(self.pip_args),
                "local_files": [str(p) for p in self.local_files]}


@dataclass(frozen=True)
class DeleteFiles:
    """Delete the files matching `pattern` (a glob relative to site-packages; at least one)."""

    pattern: str

    def spec(self) -> dict[str, object]:
        """The JSON form (part of the cache key)."""
        return {"delete": self.pattern}


@dataclass(frozen=True)
class UnpackWheel:
    """`pip download` a wheel for another tag and unzip it into site-packages (modes kept)."""

    requirement: str
    python_version: str
    abi: str
    platform: str

    def download_args(self) -> list[str]:
        """The `pip download` options selecting exactly this wheel."""
        return ["--no-deps", "--only-binary=:all:", "--implementation", "cp",
                "--python-version", self.python_version, "--abi", self.abi,
                "--platform", self.platform, self.requirement]

    def spec(self) -> dict[str, object]:
        """The JSON form (part of the cache key)."""
        return {"unpack": self.requirement, "python": self.python_version, "abi": self.abi,
                "platform": self.platform}


Step = DeleteFiles | UnpackWheel


@dataclass(frozen=True)
class Breakage:
    """A deliberate, real-world failure: how it is made and which files it breaks."""

    name: str
    kind: str  # wrong-tag | deleted-library | other-torch | newer-glibc
    description: str
    files: tuple[str, ...]  # globs relative to site-packages: the files it makes fail
    subject: str  # the first finding naming such a file must mention this
    steps: tuple[Step, ...] = ()

    def spec(self) -> dict[str, object]:
        """The JSON form (part of the cache key: the steps; the rest is only expectation)."""
        return {"name": self.name, "steps": [s.spec() for s in self.steps]}


@dataclass(frozen=True)
class Environment:
    """One venv of the corpus."""

    name: str
    description: str
    installs: tuple[Install, ...]
    breakages: tuple[Breakage, ...] = field(default=())

    def spec(self) -> dict[str, object]:
        """Everything that determines the venv's contents (its cache key)."""
        return {"name": self.name, "installs": [i.spec() for i in self.installs],
                "breakages": [b.spec() for b in self.breakages]}

    def requirements(self) -> list[str]:
        """Every requirement of every install, in order (for reports)."""
        return [r for i in self.installs for r in i.requirements]


ENVIRONMENTS: tuple[Environment, ...] = (
    Environment(
        "scientific",
        "C, C++, Fortran and Rust wheels; auditwheel-vendored numpy.libs, scipy.libs, pillow.libs; "
        "pyarrow's bundled libarrow*; cryptography's abi3 extension; cffi",
        (Install((NUMPY, "scipy==1.17.1", "pandas==3.1.1", "pyarrow==26.0.1", PILLOW, "lxml==6.1.3",
                  "cryptography==50.0.2", "cffi==2.1.1", "pycparser==3.12", "python-dateutil==4.0.0",
                  "tzdata==2026.6")),),
    ),
    Environment(
        "ml-runtime",
        "grpcio, onnxruntime, opencv-python-headless (abi3, vendored opencv_python_headless.libs), "
        "protobuf's abi3 upb extension",
        (Install(("grpcio==1.85.3", "onnxruntime==1.32.0", "opencv-python-headless==5.0.0.93", NUMPY,
                  "protobuf==7.36.2", "flatbuffers==25.12.19", "packaging==26.4", TYPING_EXTENSIONS)),),
    ),
    Environment(
        "torch-cpu",
        "the local PyTorch 2.13.0+cpu wheel, with torchvision 0.28.0 and triton 3.6.0 from PyPI "
        "beside it (triton/_C/libtriton.so is an extension module without a cpython suffix)",
        (Install((str(TORCH_WHEEL), "torchvision==0.28.0", "triton==3.6.0", NUMPY, PILLOW, "filelock==4.3.1",
                  "fsspec==2026.9.0", "jinja2==3.1.6", "markupsafe==3.0.4", "mpmath==1.3.0",
                  "networkx==3.6.1", "setuptools==84.2.1", "sympy==1.14.0", TYPING_EXTENSIONS),
                 local_files=(TORCH_WHEEL,)),),
        (Breakage(
            "torchvision-for-another-torch", "other-torch",
            "PyPI's torchvision 0.28.0 is built against PyPI's CUDA torch 2.13.0, not the CPU "
            "2.13.0+cpu installed here: its _C.so cannot be loaded and `import torchvision` fails "
            "with \"operator torchvision::nms does not exist\"",
            files=("torchvision/_C.so",), subject="libc10_cuda.so"),),
    ),
    Environment(
        "wrong-tag",
        "numpy, plus the pillow cp312 wheel unpacked into this 3.11 venv",
        (Install((NUMPY,)),),
        (Breakage(
            "pillow-cp312-in-py311", "wrong-tag",
            "pillow 13.0.0's cp312 wheel unpacked into a CPython 3.11 venv: every PIL extension is "
            "*.cpython-312-x86_64-linux-gnu.so, a suffix 3.11 never imports",
            files=("PIL/_imaging.cpython-312-x86_64-linux-gnu.so",), subject="cpython-312",
            steps=(UnpackWheel(PILLOW, "3.12", "cp312", "manylinux_2_28_x86_64"),)),),
    ),
    Environment(
        "deleted-pillow-lib",
        "pillow with one vendored library (pillow.libs/liblcms2-*.so.2.0.19) deleted",
        (Install((PILLOW,)),),
        (Breakage(
            "pillow-lcms2-deleted", "deleted-library",
            "pillow.libs/liblcms2-88eaba2f.so.2.0.19 deleted: PIL._imagingcms needs it",
            files=("PIL/_imagingcms.cpython-311-x86_64-linux-gnu.so",), subject="liblcms2",
            steps=(DeleteFiles("pillow.libs/liblcms2-*.so*"),)),),
    ),
    Environment(
        "deleted-numpy-lib",
        "numpy with one vendored library (numpy.libs/libquadmath-*.so.0.0.0) deleted",
        (Install((NUMPY,)),),
        (Breakage(
            "numpy-quadmath-deleted", "deleted-library",
            "numpy.libs/libquadmath-*.so.0.0.0 deleted: the vendored libgfortran needs it, OpenBLAS "
            "needs that, numpy._core._multiarray_umath needs OpenBLAS, and `import numpy` fails",
            files=("numpy/_core/_multiarray_umath.cpython-311-x86_64-linux-gnu.so",),
            subject="libquadmath",
            steps=(DeleteFiles("numpy.libs/libquadmath-*.so*"),)),),
    ),
    Environment(
        "newer-glibc",
        "longbridge 4.5.0 (manylinux_2_39: its extension needs GLIBC_2.39) unpacked on glibc 2.36",
        (),
        (Breakage(
            "longbridge-needs-glibc-2.39", "newer-glibc",
            "longbridge 4.5.0's cp311 manylinux_2_39 wheel: longbridge.cpython-311-x86_64-linux-gnu.so "
            "requires GLIBC_2.39 from libc.so.6; this host has glibc 2.36",
            files=("longbridge/longbridge.cpython-311-x86_64-linux-gnu.so",), subject="GLIBC_2.39",
            steps=(UnpackWheel("longbridge==4.5.0", "3.11", "cp311", "manylinux_2_39_x86_64"),)),),
    ),
)


# Environments too big for CI's time and disk (5.5 GB, ~1.5 min to install, minutes of truth):
# run by `python -m tests.realworld.report NAME` or with LDSCOPE_TEST_HEAVY=1.
HEAVY_ENVIRONMENTS: tuple[Environment, ...] = (
    Environment(
        "torch-cuda",
        "PyPI's CUDA 13 torch 2.14.1 with torchvision 0.29.1 built for it, and everything pip "
        "resolves for them (triton, nvidia-* wheels, cuda-bindings): a working environment "
        "(`import torch, torchvision` and torchvision's ops load) on a machine without a GPU",
        (Install(("torch==2.14.1", "torchvision==0.29.1", "triton==3.8.0", "cuda-bindings==13.5.0",
                  "cuda-pathfinder==1.9.1", "cuda-toolkit==13.0.3.0", "nvidia-cublas==13.1.1.3",
                  "nvidia-cuda-cupti==13.0.85", "nvidia-cuda-nvrtc==13.0.88", "nvidia-cuda-runtime==13.0.96",
                  "nvidia-cudnn-cu13==9.24.0.43", "nvidia-cufft==12.0.0.61", "nvidia-cufile==1.15.1.6",
                  "nvidia-curand==10.4.0.35", "nvidia-cusolver==12.0.4.66", "nvidia-cusparse==12.6.3.3",
                  "nvidia-cusparselt-cu13==0.8.1", "nvidia-nccl-cu13==2.30.7", "nvidia-nvjitlink==13.5.37",
                  "nvidia-nvshmem-cu13==3.4.5", "nvidia-nvtx==13.0.85", NUMPY, PILLOW, "filelock==4.3.1",
                  "fsspec==2026.9.0", "jinja2==3.1.6", "markupsafe==3.0.4", "mpmath==1.3.0",
                  "networkx==3.6.1", "sympy==1.14.0", TYPING_EXTENSIONS)),),
    ),
)


def environment(name: str) -> Environment:
    """The corpus environment called `name` (the heavy ones included)."""
    for env in (*ENVIRONMENTS, *HEAVY_ENVIRONMENTS):
        if env.name == name:
            return env
    raise KeyError(f"no corpus environment {name!r}; known: {', '.join(e.name for e in ENVIRONMENTS)}")
