"""HIP for AMD GPUs, compile-only (no AMD GPU here): hipcc for gfx90a (CDNA2, wave64) and gfx1030
(RDNA2, wave32), with the per-kernel resource use the compiler reports (registers, LDS, occupancy)."""
from __future__ import annotations

import os
import re
import subprocess
import tempfile
from pathlib import Path

from . import CompileError, RunOutput, Variant, have_tool

ARCHS = {"gfx90a": 64, "gfx1030": 32}      # what Debian's ROCm 5.2 device libs cover
REMARK = re.compile(r"remark:\s+(Function Name|SGPRs|VGPRs|AGPRs|ScratchSize \[bytes/lane\]|"
                    r"Occupancy \[waves/SIMD\]|LDS Size \[bytes/block\]):\s*(\S+)")
KEYS = {"SGPRs": "sgprs", "VGPRs": "vgprs", "AGPRs": "agprs", "ScratchSize [bytes/lane]": "scratch",
        "Occupancy [waves/SIMD]": "occupancy", "LDS Size [bytes/block]": "lds_bytes"}


def available() -> tuple[bool, str]:
    if not have_tool("hipcc"):
        return False, "hipcc not found (Debian: hipcc libamdhip64-dev rocm-device-libs)"
    return True, ""


def variants(subgroups) -> list[Variant]:
    archs = [a for a in os.environ.get("CUPORT_HIP_ARCHS", ",".join(ARCHS)).split(",") if a]
    return [Variant(f"{a}/w{ARCHS.get(a, '?')}", options={"arch": a}, subgroup=None) for a in archs]


def compile_only() -> bool:
    return True


def _resources(log: str, kernel: str) -> dict:
    """Resource remarks of the function whose (mangled) name is the kernel's."""
    current, found = None, {}
    for key, value in REMARK.findall(log):
        if key == "Function Name":
            current = value if (value == kernel or f"{len(kernel)}{kernel}" in value) else None
        elif current:
            found[KEYS[key]] = int(value) if value.isdigit() else value
    return found


def run(case, source_text, manifest, sizes, arrays, *, variant=None, repeat=1) -> RunOutput:
    arch = (variant.options.get("arch") if variant else None) or "gfx90a"
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "kernel.hip"
        src.write_text(source_text)
        cmd = ["hipcc", f"--offload-arch={arch}", "-O3", "-c", str(src), "-o", str(Path(tmp) / "kernel.o"),
               "-Rpass-analysis=kernel-resource-usage", *case.define_flags()]
        r = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, "HIP_PLATFORM": "amd"},
                           timeout=300)
    log = (r.stdout + r.stderr).replace(str(src), "kernel.hip")
    if r.returncode != 0:
        lines = [ln for ln in log.splitlines() if "remark:" not in ln]
        first = next((ln for ln in lines if "error" in ln), lines[0] if lines else "failed")
        raise CompileError(f"hipcc --offload-arch={arch}: {first.strip()}\n" + "\n".join(lines[:20]))
    info = {"arch": arch, "wave_size": ARCHS.get(arch), **_resources(log, case.kernel)}
    return RunOutput(None, None, info)
