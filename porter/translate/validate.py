"""Compile what the translators emit: GLSL through glslangValidator (-V --target-env vulkan1.1) and spirv-val,
OpenCL C through a PoCL (or any OpenCL) build via pyopencl. A missing tool gives a skipped result with the
reason, never a pass."""
from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field


@dataclass
class Validation:
    ok: bool
    skipped: bool = False
    reason: str = ""
    log: str = ""
    steps: list = field(default_factory=list)

    def as_dict(self) -> dict:
        return {"ok": self.ok, "skipped": self.skipped, "reason": self.reason, "log": self.log,
                "steps": list(self.steps)}


def tool(name: str) -> str | None:
    return shutil.which(name)


def validate_glsl(text: str, name: str = "kernel", target_env: str = "vulkan1.1", timeout: float = 60) -> Validation:
    glslang, spirv_val = tool("glslangValidator"), tool("spirv-val")
    if glslang is None:
        return Validation(False, True, "glslangValidator not found (Debian: glslang-tools)")
    safe = "".join(c if c.isalnum() or c in "_-" else "_" for c in name) or "kernel"
    with tempfile.TemporaryDirectory(prefix="cuport-glsl-") as d:
        src = os.path.join(d, safe + ".comp")
        spv = os.path.join(d, safe + ".spv")
        with open(src, "w", encoding="utf-8") as fh:
            fh.write(text)
        p = subprocess.run([glslang, "-V", "--target-env", target_env, src, "-o", spv], capture_output=True,
                           text=True, timeout=timeout)
        log = (p.stdout + p.stderr).replace(src, safe + ".comp")
        steps = ["glslangValidator"]
        if p.returncode != 0:
            return Validation(False, False, "glslangValidator failed", log, steps)
        if spirv_val is None:
            return Validation(True, False, "spirv-val not found (Debian: spirv-tools): SPIR-V not validated", log,
                              steps)
        q = subprocess.run([spirv_val, "--target-env", target_env, spv], capture_output=True, text=True,
                           timeout=timeout)
        steps.append("spirv-val")
        log += q.stdout + q.stderr
        if q.returncode != 0:
            return Validation(False, False, "spirv-val failed", log, steps)
        return Validation(True, False, "", log, steps)


def compile_glsl(text: str, target_env: str = "vulkan1.1") -> bytes:
    """SPIR-V words of a shader (raises RuntimeError with glslang's log on failure)."""
    glslang = tool("glslangValidator")
    if glslang is None:
        raise RuntimeError("glslangValidator not found")
    with tempfile.TemporaryDirectory(prefix="cuport-glsl-") as d:
        src, spv = os.path.join(d, "k.comp"), os.path.join(d, "k.spv")
        with open(src, "w", encoding="utf-8") as fh:
            fh.write(text)
        p = subprocess.run([glslang, "-V", "--target-env", target_env, src, "-o", spv], capture_output=True,
                           text=True)
        if p.returncode != 0:
            raise RuntimeError(p.stdout + p.stderr)
        with open(spv, "rb") as fh:
            return fh.read()


_cl_ctx = None


def opencl_context():
    """A context on the first OpenCL device (PoCL on a CPU machine); None when pyopencl or a platform is missing."""
    global _cl_ctx
    if _cl_ctx is None:
        try:
            import pyopencl as cl
            devs = [d for p in cl.get_platforms() for d in p.get_devices()]
        except Exception:
            return None
        if not devs:
            return None
        _cl_ctx = cl.Context([devs[0]])
    return _cl_ctx


def validate_opencl(text: str, options: str = "-cl-std=CL1.2") -> Validation:
    try:
        import pyopencl as cl
    except ImportError:
        return Validation(False, True, "pyopencl not installed (pip install pyopencl pocl-binary-distribution)")
    ctx = opencl_context()
    if ctx is None:
        return Validation(False, True, "no OpenCL platform (pip install pocl-binary-distribution)")
    dev = ctx.devices[0]
    try:
        prg = cl.Program(ctx, text).build(options=options)
    except cl.RuntimeError as exc:
        return Validation(False, False, f"OpenCL build failed on {dev.name}", str(exc), ["clBuildProgram"])
    log = prg.get_build_info(dev, cl.program_build_info.LOG) or ""
    return Validation(True, False, "", log.strip(), [f"clBuildProgram ({dev.platform.name})"])


def validate_result(result) -> dict:
    """{kernel or file: validation dict} for a TranslationResult of the glsl or opencl target."""
    out = {}
    if result.target == "glsl":
        for name, text in result.shaders.items():
            out[name] = validate_glsl(text, name).as_dict()
    elif result.target == "opencl" and result.text:
        out[os.path.basename(result.path)] = validate_opencl(result.text).as_dict()
    return out
