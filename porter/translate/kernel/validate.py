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
        # the scalar block layout is a device feature (scalarBlockLayout) the manifest asks for
        relax = ["--scalar-block-layout"] if "GL_EXT_scalar_block_layout" in text else []
        q = subprocess.run([spirv_val, "--target-env", target_env, *relax, spv], capture_output=True, text=True,
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


# --- what the targets can express --------------------------------------------------------------------------------

@dataclass(frozen=True)
class Limits:
    """Hard limits (above them the output is refused) are the values common devices report and CUDA's own:
    an output past them would be rejected or fail at dispatch. `shared_portable` is what the API guarantees on
    every device: above it the output is kept with a warning naming the device limit it needs."""
    api: str
    invocations: int = 1024
    size: tuple = (1024, 1024, 64)
    shared_bytes: int = 49152
    shared_portable: int = 16384
    shared_limit_name: str = ""


LIMITS = {
    "glsl": Limits("Vulkan", shared_portable=16384, shared_limit_name="maxComputeSharedMemorySize"),
    "opencl": Limits("OpenCL", shared_portable=32768, shared_limit_name="CL_DEVICE_LOCAL_MEM_SIZE"),
}


def _dims(dims) -> str:
    return "".join(f"[{d}]" for d in dims)


def _warp_sized(em, dynamic, lim) -> str:
    """Why the static size grew, when per-warp arrays were given slots for the narrowest subgroup."""
    grown = [i for i in em.shared.values() if "cuda_type" in i]
    if not grown:
        return ""
    names = ", ".join(f"`{i['node'].spelling}` {_dims(i['cuda_type'].dims)} -> {_dims(i['dims'])}"
                      for i in grown[:4])
    more = f" and {len(grown) - 4} more" if len(grown) > 4 else ""
    cuda = em.shared_bytes(cuda=True) + dynamic
    return (f": the per-warp arrays ({names}{more}) have a slot for each warp of the narrowest subgroup "
            f"{lim.api} allows ({grown[0]['min_warp']} lane(s)); at 32-lane warps the kernel needs {cuda} bytes")


def limit_problems(target_name: str, em) -> list[tuple[str, object, str]]:
    """[(severity, node or None, message)] for what the target cannot run: a work-group size of 0 or past the
    limits, a zero-length array, shared memory past the limit."""
    lim = LIMITS.get(target_name)
    if lim is None:
        return []
    out = []
    shape = em.launch
    block = list(shape.block) if shape is not None else [None, None, None]
    where = f" (launch at line {shape.line})" if shape is not None and shape.line else ""
    if all(isinstance(v, int) for v in block):
        dims = " x ".join(str(v) for v in block)
        if any(v < 1 for v in block):
            out.append(("error", None, f"work-group size {dims}{where}: every dimension must be at least 1"))
        else:
            total = block[0] * block[1] * block[2]
            over = [f"{'xyz'[i]} = {v} > {lim.size[i]}" for i, v in enumerate(block) if v > lim.size[i]]
            if over or total > lim.invocations:
                why = ", ".join(over) if over else f"{total} invocations > {lim.invocations}"
                out.append(("error", None, f"work-group size {dims}{where} is past the {lim.api} limits ({why})"))
    shared = {id(info.get("node")) for info in em.shared.values()}
    for f in em._reachable(em.fn).values():
        for n in em.model.kinds_in(f.node, "VAR_DECL"):
            if _zero_length(n.type):
                what = "shared array" if id(n) in shared else "array"
                out.append(("error", n, f"zero-length {what} `{n.spelling}`: {lim.api} has no arrays of length 0"))
    static = em.shared_bytes()
    dynamic = shape.shmem if shape is not None and isinstance(shape.shmem, int) else 0
    total = static + (dynamic or 0)
    if total > lim.shared_bytes:
        out.append(("error", None, f"{total} bytes of shared memory ({static} static + {dynamic or 0} dynamic) "
                    f"are past the {lim.api} limit of {lim.shared_bytes} ({lim.shared_limit_name})"
                    f"{_warp_sized(em, dynamic or 0, lim)}"))
    elif total > lim.shared_portable:
        out.append(("warning", None, f"{total} bytes of shared memory need {lim.shared_limit_name} >= {total} "
                    f"({lim.api} guarantees {lim.shared_portable}): check the device's limit"))
    out += _subgroup_layout(em, block, where)
    return out


# GPU drivers (NVIDIA, AMD, Intel) form subgroups from consecutive linear ids, as CUDA forms warps; lavapipe forms
# them per row, 4 / 8 / 16 lanes wide: rows of a multiple of 16 fill its subgroups, which are then runs of linear ids
ROW_MULTIPLE = 16


def _subgroup_layout(em, block, where) -> list:
    """CUDA forms warps from consecutive linear thread ids (x fastest); the translations of warp code assume the
    target's subgroups are such runs too. Vulkan leaves the grouping of a multi-dimensional work-group to the
    implementation, and lavapipe makes each row its own subgroup: with an 8 x 8 block at subgroup 16 every
    subgroup is half empty and the shuffles read lanes that do not exist (wrong sums, exit 0 before). So warp code
    in a work-group that is not one row is refused unless its rows fill whole subgroups (ROW_MULTIPLE)."""
    uses = [op for op in em.subgroup_ops]
    if not uses and "cl_khr_subgroups" in em.extensions:
        # OpenCL sub-group functions: the mapping of work-items to sub-groups is the implementation's as well
        uses = ["sub-group functions"]
    if not uses or getattr(em, "cl_warp_size", None) == 1:
        return []
    if block[1:] == [1, 1]:
        return []
    if block[1] is None or block[2] is None:
        # no launch shape: multi-dimensional only where the kernel reads a y or z thread index or block size
        dims = {b[1] for f in em._reachable(em.fn).values() for n in f.node.walk()
                for b in [n.builtin()] if b is not None and b[0] in ("threadIdx", "blockDim")}
        if not dims & {"y", "z"}:
            return []
    x = block[0]
    if isinstance(x, int) and x % ROW_MULTIPLE == 0:
        return []
    shape = " x ".join(str(v) if v is not None else "?" for v in block)
    if not all(isinstance(v, int) for v in block):
        # the block is the host's choice: a launch contract in the manifest ("requires"), which the host checks
        em.block_contract = ROW_MULTIPLE
        return [("warning", None, f"warp operations in a {shape} block: translated for blockDim.x a multiple of "
                 f"{ROW_MULTIPLE} (or a 1-D block) only, where every implementation's subgroups are runs of CUDA's "
                 "consecutive thread ids; the manifest's \"requires\" makes the host refuse other launches")]
    return [("error", None, f"warp operations ({', '.join(uses)}) in a {shape} block{where}: CUDA's warps are runs "
             "of 32 consecutive thread ids across rows, but Vulkan / OpenCL implementations may form subgroups "
             f"per row (lavapipe does, up to 16 lanes), so lanes would not be CUDA's; use a 1-D block or blockDim.x "
             f"a multiple of {ROW_MULTIPLE}")]


def _zero_length(type_spelling: str) -> bool:
    import re
    return bool(re.search(r"\[\s*0+\s*\]", type_spelling or ""))


# --- a rejected output is refused, never written -----------------------------------------------------------------

TEST_REJECT_ENV = "CUPORT_TEST_REJECT"      # test hook: a kernel name whose output the validator is told to reject


def first_error_line(log: str) -> str:
    for line in (log or "").splitlines():
        s = line.strip()
        if s.startswith("ERROR:") or " error:" in s or s.startswith("error"):
            return s
    lines = [ln.strip() for ln in (log or "").splitlines() if ln.strip()]
    return lines[0] if lines else "no message"


def check_result(result) -> dict:
    """Validate every output of a glsl / opencl TranslationResult; an output a validator rejects is removed from
    the result (shader / file and manifests) and its kernels listed in failed_kernels. Returns
    {kernel or file: validation dict}."""
    hook = os.environ.get(TEST_REJECT_ENV)
    out = {}
    rejected = result.extra.setdefault("rejected_kernels", [])
    if result.target == "glsl":
        for name in list(result.shaders):
            text = result.shaders[name]
            if hook and hook == name:
                text += "\nthis line is not GLSL (" + TEST_REJECT_ENV + ")\n"
            v = validate_glsl(text, name)
            out[name] = v.as_dict()
            if not v.ok and not v.skipped:
                del result.shaders[name]
                result.manifests.pop(name, None)
                result.failed_kernels[name] = f"CP907: {v.reason}: {first_error_line(v.log)}"
                rejected.append(name)
    elif result.target == "opencl" and result.text:
        text = result.text
        if hook and hook in result.manifests:
            text += "\nthis line is not OpenCL C (" + TEST_REJECT_ENV + ");\n"
        key = os.path.basename(result.path)
        v = validate_opencl(text)
        out[key] = v.as_dict()
        if not v.ok and not v.skipped:
            result.text = ""
            for name in list(result.manifests):
                result.failed_kernels[name] = f"CP907: {v.reason}: {first_error_line(v.log)}"
                rejected.append(name)
            result.manifests.clear()
    return out
