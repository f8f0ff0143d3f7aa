"""Execution backends of `cuport verify`, one module per target, all with the same interface:

    available() -> (bool, reason)            cheap check, imports nothing heavy at module import
    variants(subgroups) -> list[Variant]     optional: one worker per variant (e.g. subgroup size)
    prepare(variant) -> dict                 optional: device info once per worker ("device",
                                             "subgroup_size"); raise Skip if the variant is impossible
    run(case, source_text, manifest, sizes, arrays, *, variant, repeat) -> RunOutput
    open_session(case, source_text, manifest, sizes, arrays, *, variant) -> Session   (timing backends: the
                                             compiled kernel and its device buffers, launched on demand;
                                             `cuport verify --bench` interleaves launches of several)

`arrays` holds every kernel argument in CUDA parameter order (ndarrays and numpy scalars); `run`
returns the out/inout arrays after one launch and the median kernel time of `repeat` launches.
A compile-only backend returns outputs=None. Optional module attributes: wrap_command(cmd, env) (run the
worker inside a tool), SMALLEST_SIZE_ONLY, EXPECT_AS (a target whose spec expectations apply), TRANSLATE_OPTIONS;
info["sanitizer"] (a list of reports) fails the case whatever the numbers.
"""
from __future__ import annotations

import importlib
import shutil
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

# target name -> (module, translation target of porter.translate.api or None for the original .cu)
TARGETS: dict[str, tuple[str, str | None]] = {
    "cuda": ("porter.verify.backends.cuda", None),
    "hip-nvidia": ("porter.verify.backends.hip_nvidia", "hip"),
    "hip-amd": ("porter.verify.backends.hip_amd", "hip"),
    "vulkan": ("porter.verify.backends.vulkan", "glsl"),
    "opencl": ("porter.verify.backends.opencl", "opencl"),
    "oclgrind": ("porter.verify.backends.oclgrind", "opencl"),     # --sanitize: OpenCL under a simulator
}


class CompileError(Exception):
    """The kernel source did not compile (or a translation is missing): the case fails."""


def check_launch_contract(manifest, block, arrays) -> None:
    """A translation's launch contract (manifest "requires"): a launch outside it would run code that is right
    only inside it, so the host refuses it (CompileError) before anything runs. Every host calls this."""
    for req in (manifest or {}).get("requires", []):
        if "block_x_multiple_of" in req:
            # warp code in a block of the host's choosing: subgroups are runs of linear ids only with whole rows
            k = int(req["block_x_multiple_of"])
            if (block[1] > 1 or block[2] > 1) and block[0] % k:
                raise CompileError(f"launch refused: the translation requires blockDim.x to be a multiple of "
                                   f"{k} in a block of more than one row (manifest \"requires\"), got "
                                   f"{block[0]} x {block[1]} x {block[2]}")
            continue
        v = arrays.get(req["param"])
        if req.get("not_null"):
            if v is None:
                raise CompileError(f"launch refused: the translation requires `{req['param']}` not null (manifest "
                                   "\"requires\")")
            continue
        if v is None or int(np.asarray(v).item()) % int(req["multiple_of"]):
            raise CompileError(f"launch refused: the translation requires `{req['param']}` to be a multiple of "
                               f"{req['multiple_of']} (manifest \"requires\"), got {v}")


def dynamic_shared_bytes(case, sizes) -> int:
    """The bytes of `extern __shared__` memory the case launches with (CUDA gets exactly these). A kernel that
    declares such memory under a case that gives none is refused: CUDA would run it with 0 bytes, while the
    translations' defaults (Vulkan's specialization constant, OpenCL's local argument) would silently give it some."""
    from porter.verify.spec import SpecError
    n = int(case.shared_bytes(sizes)) if case.shared_mem else 0
    if n <= 0:
        raise SpecError(f"{case.kernel} declares `extern __shared__` memory, but the case gives no shared_mem (CUDA "
                        "would launch it with 0 bytes): give shared_mem= the launch's third argument")
    return n


class Skip(Exception):
    """This case cannot run here (e.g. the requested subgroup size is not selectable)."""


@dataclass(frozen=True)
class Variant:
    label: str = "-"                               # shown in the subgroup column
    env: dict[str, str] = field(default_factory=dict)   # set in the worker's environment
    subgroup: int | None = None                    # requested subgroup size, checked after prepare()
    options: dict[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict:
        return {"label": self.label, "env": self.env, "subgroup": self.subgroup, "options": self.options}

    @classmethod
    def from_dict(cls, d: dict) -> "Variant":
        return cls(d.get("label", "-"), d.get("env", {}), d.get("subgroup"), d.get("options", {}))


@dataclass
class RunOutput:
    outputs: dict[str, np.ndarray] | None
    kernel_ms: float | None = None
    info: dict[str, Any] = field(default_factory=dict)


def load(target: str):
    if target not in TARGETS:
        raise KeyError(f"unknown target '{target}' (known: {', '.join(TARGETS)})")
    return importlib.import_module(TARGETS[target][0])


def translation_target(target: str) -> str | None:
    return TARGETS[target][1]


def have_tool(name: str) -> str | None:
    return shutil.which(name)


def median(values: list[float]) -> float | None:
    return float(np.median(values)) if values else None


def timed_runs(launch, repeat: int, warmup_s: float = 0.5) -> list[float]:
    """Kernel times (ms) of `repeat` launches after warm-up launches filling `warmup_s` seconds
    (clocks ramp up, caches and lazy driver work settle). `launch()` returns one kernel time."""
    if repeat <= 1:
        return []
    start, n = time.perf_counter(), 0
    while time.perf_counter() - start < warmup_s and n < 1000:
        launch()
        n += 1
    return [launch() for _ in range(repeat)]


class Session:
    """A compiled kernel with its device buffers: launch() runs it once and returns the GPU time in ms
    (CUDA events, Vulkan timestamp queries, OpenCL profiling events); outputs() reads the out/inout arrays."""
    info: dict[str, Any] = {}

    def launch(self) -> float:
        raise NotImplementedError

    def outputs(self) -> dict[str, np.ndarray]:
        raise NotImplementedError

    def close(self) -> None:
        pass


def run_session(session: Session, repeat: int) -> RunOutput:
    """What run() returns: the outputs after one launch and the median time of `repeat` further launches."""
    try:
        first = session.launch()
        outputs = session.outputs()
        times = timed_runs(session.launch, repeat) or [first]
    finally:
        session.close()
    return RunOutput(outputs, median(times), dict(session.info))
