"""HIP on an NVIDIA GPU: the HIP translation's device code through NVRTC with our own kernel-side
compatibility header (HIP's own NVIDIA headers do not build with CUDA 13). The host side is ours."""
from __future__ import annotations

from pathlib import Path

from . import cuda

ISOLATE_AFTER_FAILURE = True
HEADER = Path(__file__).resolve().parent.parent / "hip_compat_nvrtc.h"


def available() -> tuple[bool, str]:
    return cuda.available()


def prepare(variant) -> dict:
    return cuda.prepare(variant)


def device_source(hip_text: str, drop=frozenset()) -> str:
    """The HIP file's device part after the compatibility header (`drop`: cuda.repaired's host lines)."""
    from porter.verify.extract import device_code
    # #line keeps NVRTC's line numbers pointing into the HIP file.
    return f'{HEADER.read_text()}\n#line 1 "kernel.hip"\n{device_code(hip_text, drop)}'


def run(case, source_text, manifest, sizes, arrays, *, variant=None, repeat=1):
    return cuda.run_nvrtc(case, source_text, sizes, arrays, repeat, extract=device_source)


def open_session(case, source_text, manifest, sizes, arrays, *, variant=None) -> cuda.NvrtcSession:
    return cuda.NvrtcSession(case, source_text, sizes, arrays, extract=device_source)
