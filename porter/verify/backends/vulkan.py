"""Vulkan: GLSL -> SPIR-V with glslangValidator, run through the PyPI `vulkan` (cffi) bindings.

The host side follows the GLSL manifest (docs/translate-api.md): storage buffers at their bindings,
scalars in push constants at their offsets, the CUDA block shape in specialization constants 0/1/2
and the CUDA grid as the workgroup count. On lavapipe the subgroup size comes from
LP_NATIVE_VECTOR_WIDTH (128/256/512 bits -> 4/8/16 lanes), read when the driver starts, so each
subgroup size needs its own process: the runner sets it in the worker's environment.
Discrete GPUs get device-local buffers filled through staging copies; kernel time comes from
timestamp queries around the dispatch. Robust buffer access stays off so out-of-bounds accesses
are not hidden.

Lavapipe trap (Mesa 22.3 / LLVM 15, measured): llvmpipe stops an invocation after 65535 loop
iterations in all, silently, so a kernel whose threads loop longer (large K in a GEMM, grid-stride
loops over big arrays with few threads) gives wrong results there, not a hang: keep problem sizes
small on the CPU. On an NVIDIA GPU the loader also needs libglvnd (libGLdispatch) for the
driver's libGLX_nvidia.so.0.
"""
from __future__ import annotations

import hashlib
import os
import re
import struct
import subprocess
import tempfile
from pathlib import Path

import numpy as np

from . import (CompileError, RunOutput, Session, Skip, Variant, check_launch_contract, dynamic_shared_bytes, have_tool,
               run_session)

LAVAPIPE_ICD = "/usr/share/vulkan/icd.d/lvp_icd.x86_64.json"
LAVAPIPE_SUBGROUPS = (4, 8, 16)
PUSH_FORMATS = {"float": "f", "int": "i", "uint": "I", "double": "d", "int64_t": "q", "uint64_t": "Q",
                "bool": "I"}
_CTX = None


def ISOLATE_AFTER_FAILURE(info: dict) -> bool:
    """On a GPU a wrong or crashed kernel may leave the device lost: the next size gets a fresh worker."""
    return not info.get("lavapipe")


def available() -> tuple[bool, str]:
    if not have_tool("glslangValidator"):
        return False, "glslangValidator not found (Debian: glslang-tools)"
    try:
        import vulkan  # noqa: F401  (loads libvulkan through cffi)
    except ImportError as e:
        return False, f"Python package 'vulkan' not usable: {e}"
    except OSError as e:
        return False, f"no Vulkan loader (libvulkan.so.1): {e}"
    return True, ""


def variants(subgroups: list[int] | None) -> list[Variant]:
    """One worker per requested subgroup size; without a request: 4/8/16 on lavapipe, else native."""
    from porter.verify.worker import probe
    info = probe("vulkan")
    if info.get("error"):
        raise Skip(f"no usable Vulkan device: {info['error']}")
    if subgroups is None:
        if not info.get("lavapipe"):
            return [Variant(f"sg{info.get('subgroup_size', '?')}")]
        subgroups = list(LAVAPIPE_SUBGROUPS)
    # LP_NATIVE_VECTOR_WIDTH only matters on lavapipe; other drivers ignore it and prepare() skips.
    return [Variant(f"sg{n}", {"LP_NATIVE_VECTOR_WIDTH": str(32 * n)}, n) for n in subgroups]


def prepare(variant: Variant | None) -> dict:
    ctx = _context()
    info = {"device": ctx.device_name, "subgroup_size": ctx.subgroup_size, "lavapipe": ctx.is_lavapipe,
            "device_local": ctx.use_staging, "timestamps": ctx.has_timestamps}
    if variant is not None and variant.subgroup and variant.subgroup != ctx.subgroup_size:
        how = "LP_NATIVE_VECTOR_WIDTH" if ctx.is_lavapipe else "this driver (only lavapipe can change it here)"
        raise Skip(f"{ctx.device_name} runs subgroups of {ctx.subgroup_size}, {variant.subgroup} requested "
                   f"via {how}")
    return info


def probe_info() -> dict:
    ctx = _context()
    return {"device": ctx.device_name, "subgroup_size": ctx.subgroup_size, "lavapipe": ctx.is_lavapipe}


# ---------------------------------------------------------------------------------------------
# GLSL -> SPIR-V

def compile_glsl(source: str, defines: list[str]) -> bytes:
    key = hashlib.sha256((source + "\0" + " ".join(defines)).encode()).hexdigest()[:24]
    cache = Path(tempfile.gettempdir()) / f"cuport-spv-{os.getuid()}"
    cache.mkdir(exist_ok=True)
    spv = cache / f"{key}.spv"
    if spv.exists():
        return spv.read_bytes()
    with tempfile.TemporaryDirectory() as tmp:
        comp = Path(tmp) / "kernel.comp"
        comp.write_text(source)
        out = Path(tmp) / "kernel.spv"
        cmd = ["glslangValidator", "-V", "--target-env", "vulkan1.1", "-S", "comp", *defines, str(comp), "-o", str(out)]
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
        if r.returncode != 0:
            raise CompileError("glslangValidator: " + _tidy(r.stdout + r.stderr, str(comp)))
        if have_tool("spirv-val"):
            # the scalar block layout (float3 buffers) is a device feature the context enables (Vulkan 1.2)
            relax = ["--scalar-block-layout"] if "GL_EXT_scalar_block_layout" in source else []
            v = subprocess.run(["spirv-val", "--target-env", "vulkan1.1", *relax, str(out)], capture_output=True,
                               text=True)
            if v.returncode != 0:
                raise CompileError("spirv-val: " + _tidy(v.stdout + v.stderr, str(out)))
        data = out.read_bytes()
    spv.write_bytes(data)
    return data


def _tidy(log: str, path: str) -> str:
    lines = [ln.replace(path, "kernel.comp") for ln in log.splitlines() if ln.strip() and not ln.endswith(".comp")]
    return "\n".join(lines[:20])


# ---------------------------------------------------------------------------------------------
# Device context

def _select_device(vk, instance):
    devices = vk.vkEnumeratePhysicalDevices(instance)
    if not devices:
        raise RuntimeError("no Vulkan physical device")
    wanted = os.environ.get("CUPORT_VULKAN_DEVICE", "").lower()
    rank = {vk.VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: 0, vk.VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: 1,
            vk.VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: 2, vk.VK_PHYSICAL_DEVICE_TYPE_CPU: 3}
    best = None
    for pd in devices:
        props = vk.vkGetPhysicalDeviceProperties(pd)
        name = vk.ffi.string(props.deviceName).decode() if not isinstance(props.deviceName, str) else props.deviceName
        if wanted and wanted not in name.lower():
            continue
        key = rank.get(props.deviceType, 4)
        if best is None or key < best[0]:
            best = (key, pd, props, name)
    if best is None:
        raise RuntimeError(f"no Vulkan device matches CUPORT_VULKAN_DEVICE={wanted!r}")
    return best[1], best[2], best[3]


class _Context:
    def __init__(self):
        import vulkan as vk
        self.vk, ffi = vk, vk.ffi
        app = vk.VkApplicationInfo(pApplicationName="cuport", applicationVersion=1, pEngineName="cuport",
                                   engineVersion=1, apiVersion=vk.VK_MAKE_VERSION(1, 2, 0))
        self.instance = vk.vkCreateInstance(vk.VkInstanceCreateInfo(pApplicationInfo=app), None)
        self.pd, props, self.device_name = _select_device(vk, self.instance)
        self.is_lavapipe = "llvmpipe" in self.device_name.lower() or "lavapipe" in self.device_name.lower()
        lim = props.limits            # copy now: the cffi struct does not outlive this call's temporaries
        self.max_invocations = int(lim.maxComputeWorkGroupInvocations)
        self.max_group_size = [int(lim.maxComputeWorkGroupSize[i]) for i in range(3)]
        self.max_group_count = [int(lim.maxComputeWorkGroupCount[i]) for i in range(3)]
        self.max_shared = int(lim.maxComputeSharedMemorySize)
        self.timestamp_period = float(lim.timestampPeriod)
        self.api_version = int(props.apiVersion)

        sg = ffi.new("VkPhysicalDeviceSubgroupProperties*")
        sg.sType = vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES
        p2 = ffi.new("VkPhysicalDeviceProperties2*")
        p2.sType = vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2
        p2.pNext = sg
        vk.vkGetPhysicalDeviceProperties2(self.pd, p2)
        self.subgroup_size = int(sg.subgroupSize)

        families = vk.vkGetPhysicalDeviceQueueFamilyProperties(self.pd)
        self.qf = next(i for i, f in enumerate(families) if f.queueFlags & vk.VK_QUEUE_COMPUTE_BIT)
        self.has_timestamps = families[self.qf].timestampValidBits > 0

        self.device = self._create_device()
        self.queue = vk.vkGetDeviceQueue(self.device, self.qf, 0)
        self.pool = vk.vkCreateCommandPool(self.device, vk.VkCommandPoolCreateInfo(
            queueFamilyIndex=self.qf, flags=vk.VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT), None)
        mem = vk.vkGetPhysicalDeviceMemoryProperties(self.pd)
        self.mem_types = [mem.memoryTypes[i].propertyFlags for i in range(mem.memoryTypeCount)]
        dl, hv = vk.VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT, vk.VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT
        # A discrete GPU has device-local memory the host cannot map: stage through host memory.
        self.use_staging = any(f & dl and not f & hv for f in self.mem_types) and not self.is_lavapipe

    def _create_device(self):
        vk, ffi = self.vk, self.vk.ffi
        exts = {ffi.string(e.extensionName).decode() if not isinstance(e.extensionName, str) else e.extensionName
                for e in vk.vkEnumerateDeviceExtensionProperties(self.pd, None)}
        # Enable what the device supports (float64, int64, 16-bit storage, atomics, ...) except robust
        # buffer access, which would hide out-of-bounds accesses that verify must catch.
        chain = []
        f11 = ffi.new("VkPhysicalDeviceVulkan11Features*")
        f11.sType = vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES
        chain.append(f11)
        if self.api_version >= vk.VK_MAKE_VERSION(1, 2, 0):
            f12 = ffi.new("VkPhysicalDeviceVulkan12Features*")
            f12.sType = vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES
            chain.append(f12)
        enable = []
        # VK_EXT_subgroup_size_control: pipelines pin their subgroup size to the one the shaders' subgroup-size
        # spec constant is set to (a device may otherwise pick another size per pipeline, e.g. 32 or 64 on AMD)
        sc = None
        if "VK_EXT_subgroup_size_control" in exts:
            sc = ffi.new("VkPhysicalDeviceSubgroupSizeControlFeatures*")
            sc.sType = vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_SIZE_CONTROL_FEATURES
            chain.append(sc)
        if "VK_EXT_shader_atomic_float" in exts:
            af = ffi.new("VkPhysicalDeviceShaderAtomicFloatFeaturesEXT*")
            af.sType = vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_ATOMIC_FLOAT_FEATURES_EXT
            chain.append(af)
            enable.append("VK_EXT_shader_atomic_float")
        # VK_EXT_pipeline_robustness: pipelines ask for no bounds checks on buffers. Without it the NVIDIA driver
        # (580) checked every storage-buffer access although robustBufferAccess is off (SASS: a compare and a
        # predicated LDG/STG per access, docs/performance.md), which CUDA does not do and which would turn an
        # out-of-bounds read into a silent 0 instead of the fault or garbage verify should see.
        self.robustness_off = False
        if "VK_EXT_pipeline_robustness" in exts:
            pr = ffi.new("VkPhysicalDevicePipelineRobustnessFeaturesEXT*")
            pr.sType = vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PIPELINE_ROBUSTNESS_FEATURES_EXT
            chain.append(pr)
        f2 = ffi.new("VkPhysicalDeviceFeatures2*")
        f2.sType = vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2
        for a, b in zip([f2] + chain, chain):
            a.pNext = b
        vk.vkGetPhysicalDeviceFeatures2(self.pd, f2)
        f2.features.robustBufferAccess = 0
        if "VK_EXT_pipeline_robustness" in exts and pr.pipelineRobustness:
            enable.append("VK_EXT_pipeline_robustness")
            self.robustness_off = True
        self.required_subgroup = None
        if sc is not None and sc.subgroupSizeControl:
            sc.computeFullSubgroups = 0
            enable.append("VK_EXT_subgroup_size_control")
            self.required_subgroup = self._pinnable_subgroup()
        self._keep = (f2, chain)
        qinfo = vk.VkDeviceQueueCreateInfo(queueFamilyIndex=self.qf, queueCount=1, pQueuePriorities=[1.0])
        info = vk.VkDeviceCreateInfo(pNext=f2, queueCreateInfoCount=1, pQueueCreateInfos=[qinfo],
                                     enabledExtensionCount=len(enable), ppEnabledExtensionNames=enable or None)
        return vk.vkCreateDevice(self.pd, info, None)

    def _pinnable_subgroup(self):
        """The device's subgroup size if compute pipelines may require it, with the most subgroups per group."""
        vk, ffi = self.vk, self.vk.ffi
        p = ffi.new("VkPhysicalDeviceSubgroupSizeControlProperties*")
        p.sType = vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_SIZE_CONTROL_PROPERTIES
        p2 = ffi.new("VkPhysicalDeviceProperties2*")
        p2.sType = vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2
        p2.pNext = p
        vk.vkGetPhysicalDeviceProperties2(self.pd, p2)
        if not p.requiredSubgroupSizeStages & vk.VK_SHADER_STAGE_COMPUTE_BIT or \
                not p.minSubgroupSize <= self.subgroup_size <= p.maxSubgroupSize:
            return None
        self.max_group_subgroups = int(p.maxComputeWorkgroupSubgroups)
        return self.subgroup_size

    # -- memory ---------------------------------------------------------------------------------
    def memory_type(self, bits: int, want: int) -> int:
        for i, flags in enumerate(self.mem_types):
            if bits & (1 << i) and flags & want == want:
                return i
        raise RuntimeError(f"no Vulkan memory type with flags {want:#x}")

    def buffer(self, size: int, host: bool, uniform: bool = False):
        vk = self.vk
        usage = (vk.VK_BUFFER_USAGE_UNIFORM_BUFFER_BIT if uniform else vk.VK_BUFFER_USAGE_STORAGE_BUFFER_BIT) | \
            vk.VK_BUFFER_USAGE_TRANSFER_SRC_BIT | vk.VK_BUFFER_USAGE_TRANSFER_DST_BIT
        buf = vk.vkCreateBuffer(self.device, vk.VkBufferCreateInfo(
            size=size, usage=usage, sharingMode=vk.VK_SHARING_MODE_EXCLUSIVE), None)
        req = vk.vkGetBufferMemoryRequirements(self.device, buf)
        want = (vk.VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | vk.VK_MEMORY_PROPERTY_HOST_COHERENT_BIT if host
                else vk.VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT)
        mem = vk.vkAllocateMemory(self.device, vk.VkMemoryAllocateInfo(
            allocationSize=req.size, memoryTypeIndex=self.memory_type(req.memoryTypeBits, want)), None)
        vk.vkBindBufferMemory(self.device, buf, mem, 0)
        return buf, mem

    def free(self, buf, mem):
        self.vk.vkDestroyBuffer(self.device, buf, None)
        self.vk.vkFreeMemory(self.device, mem, None)

    def write(self, mem, data: bytes):
        ptr = self.vk.vkMapMemory(self.device, mem, 0, len(data), 0)
        ptr[0:len(data)] = data
        self.vk.vkUnmapMemory(self.device, mem)

    def read(self, mem, size: int) -> bytes:
        ptr = self.vk.vkMapMemory(self.device, mem, 0, size, 0)
        data = bytes(ptr[0:size])
        self.vk.vkUnmapMemory(self.device, mem)
        return data

    # -- commands -------------------------------------------------------------------------------
    def submit(self, record) -> None:
        vk = self.vk
        cmd = vk.vkAllocateCommandBuffers(self.device, vk.VkCommandBufferAllocateInfo(
            commandPool=self.pool, level=vk.VK_COMMAND_BUFFER_LEVEL_PRIMARY, commandBufferCount=1))[0]
        vk.vkBeginCommandBuffer(cmd, vk.VkCommandBufferBeginInfo(
            flags=vk.VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT))
        record(cmd)
        vk.vkEndCommandBuffer(cmd)
        fence = vk.vkCreateFence(self.device, vk.VkFenceCreateInfo(), None)
        vk.vkQueueSubmit(self.queue, 1, [vk.VkSubmitInfo(commandBufferCount=1, pCommandBuffers=[cmd])], fence)
        # No timeout here: a hung kernel is the runner's to kill (the worker is its own process).
        vk.vkWaitForFences(self.device, 1, [fence], vk.VK_TRUE, 0xFFFFFFFFFFFFFFFF)
        vk.vkDestroyFence(self.device, fence, None)
        vk.vkFreeCommandBuffers(self.device, self.pool, 1, [cmd])

    def copy(self, src, dst, size: int) -> None:
        vk = self.vk
        self.submit(lambda cmd: vk.vkCmdCopyBuffer(cmd, src, dst, 1, [vk.VkBufferCopy(0, 0, size)]))


def _context() -> _Context:
    global _CTX
    if _CTX is None:
        _CTX = _Context()
    return _CTX


def _spec_overrides(case, manifest: dict, sizes) -> dict:
    """The specialization constants the host sets: the spec's defines, and the dynamic shared memory of the
    launch (SHARED_BYTES, whose default is only the launch's constant, else 1024): the case's bytes at these sizes
    (none: refused, dynamic_shared_bytes),
    as CUDA's launch gives them (tridiagonal's `(system_size + 1) * 5 * sizeof(float)` ran in 1024 bytes and read
    past its shared array: zeros on NVIDIA, a hang on lavapipe)."""
    out = dict(case.defines)
    for sc in manifest.get("spec_constants", []):
        if "launch_expr" in sc and sc["name"] not in out:
            out[sc["name"]] = dynamic_shared_bytes(case, sizes)
    return out


# ---------------------------------------------------------------------------------------------
# Pipelines and launches

class _Pipeline:
    def __init__(self, ctx: _Context, spirv: bytes, manifest: dict, block: tuple[int, int, int],
                 spec_overrides: dict):
        vk, ffi = ctx.vk, ctx.vk.ffi
        self.ctx = ctx
        buffers = manifest.get("buffers", [])
        if any(b.get("set", 0) != 0 for b in buffers):
            raise CompileError("manifest: only descriptor set 0 is supported")
        ub = manifest.get("uniform_block")
        if ub and ub.get("set", 0) != 0:
            raise CompileError("manifest: only descriptor set 0 is supported")
        self.module = vk.vkCreateShaderModule(ctx.device, vk.VkShaderModuleCreateInfo(
            codeSize=len(spirv), pCode=spirv), None)
        bindings = [vk.VkDescriptorSetLayoutBinding(
            binding=b["binding"], descriptorType=vk.VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, descriptorCount=1,
            stageFlags=vk.VK_SHADER_STAGE_COMPUTE_BIT) for b in buffers]
        if ub:                  # by-value parameters past the push-constant budget: a uniform block (cobahh's 25)
            bindings.append(vk.VkDescriptorSetLayoutBinding(
                binding=ub["binding"], descriptorType=vk.VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER, descriptorCount=1,
                stageFlags=vk.VK_SHADER_STAGE_COMPUTE_BIT))
        self.set_layout = vk.vkCreateDescriptorSetLayout(ctx.device, vk.VkDescriptorSetLayoutCreateInfo(
            bindingCount=len(bindings), pBindings=bindings or None), None)
        self.push_size = int(manifest.get("push_constant_size") or 0)
        ranges = [vk.VkPushConstantRange(stageFlags=vk.VK_SHADER_STAGE_COMPUTE_BIT, offset=0,
                                         size=self.push_size)] if self.push_size else []
        self.layout = vk.vkCreatePipelineLayout(ctx.device, vk.VkPipelineLayoutCreateInfo(
            setLayoutCount=1, pSetLayouts=[self.set_layout], pushConstantRangeCount=len(ranges),
            pPushConstantRanges=ranges or None), None)

        # Specialization: 0/1/2 = CUDA block shape, then the manifest's own constants; the subgroup size is the
        # device's, pinned for this pipeline where the device lets a pipeline require one.
        ids = manifest.get("local_size_spec_ids", [0, 1, 2])
        entries = [(ids[i], "I", block[i]) for i in range(3)]
        pin = ctx.required_subgroup
        if pin and block[0] * block[1] * block[2] > ctx.max_group_subgroups * pin:
            pin = None
        self.subgroup_pinned = bool(pin)
        for sc in manifest.get("spec_constants", []):
            value = spec_overrides.get(sc["name"], sc.get("default", 0))
            if sc.get("value") == "subgroup_size":
                value = ctx.subgroup_size
            entries.append((sc["id"], PUSH_FORMATS.get(sc.get("type", "uint"), "I"), value))
        data, map_entries = b"", []
        for cid, fmt, value in entries:
            packed = struct.pack("<" + fmt, value)
            map_entries.append(vk.VkSpecializationMapEntry(constantID=cid, offset=len(data), size=len(packed)))
            data += packed
        self._spec_data = ffi.new("char[]", data)
        spec = vk.VkSpecializationInfo(mapEntryCount=len(map_entries), pMapEntries=map_entries,
                                       dataSize=len(data), pData=self._spec_data)
        self._required = vk.VkPipelineShaderStageRequiredSubgroupSizeCreateInfo(requiredSubgroupSize=pin) \
            if pin else None
        stage = vk.VkPipelineShaderStageCreateInfo(pNext=self._required, stage=vk.VK_SHADER_STAGE_COMPUTE_BIT,
                                                   module=self.module, pName="main", pSpecializationInfo=spec)
        off = vk.VK_PIPELINE_ROBUSTNESS_BUFFER_BEHAVIOR_DISABLED_EXT
        self._robustness = vk.VkPipelineRobustnessCreateInfoEXT(
            storageBuffers=off, uniformBuffers=off, vertexInputs=off,
            images=vk.VK_PIPELINE_ROBUSTNESS_IMAGE_BEHAVIOR_DISABLED_EXT) if ctx.robustness_off else None
        self.pipeline = vk.vkCreateComputePipelines(ctx.device, None, 1, [vk.VkComputePipelineCreateInfo(
            pNext=self._robustness, stage=stage, layout=self.layout)], None)[0]
        self.buffers = buffers

    def destroy(self):
        vk, d = self.ctx.vk, self.ctx.device
        vk.vkDestroyPipeline(d, self.pipeline, None)
        vk.vkDestroyPipelineLayout(d, self.layout, None)
        vk.vkDestroyDescriptorSetLayout(d, self.set_layout, None)
        vk.vkDestroyShaderModule(d, self.module, None)


def _check_launch(ctx: _Context, grid, block) -> None:
    if block[0] * block[1] * block[2] > ctx.max_invocations or any(
            b > ctx.max_group_size[i] for i, b in enumerate(block)):
        raise CompileError(f"block {block} exceeds this device's workgroup limits "
                           f"({ctx.max_invocations} invocations, {ctx.max_group_size})")
    if any(g > ctx.max_group_count[i] for i, g in enumerate(grid)):
        # a limit of this device (lavapipe: 65535 groups per dimension, NVIDIA: 2^31-1 in x), not of the
        # translation: no shader could run this size here, so the size is skipped with the reason, not failed
        raise Skip(f"grid {tuple(grid)} exceeds this device's maxComputeWorkGroupCount {ctx.max_group_count}: "
                   "this size cannot run here")


_SCALAR_TYPE = re.compile(r"^(?:u?int(?:8|16|32|64)?(?:_t)?|uint|float|double|half|bool|float(?:16|32|64)_t)$")


def _push_bytes(manifest: dict, arrays: dict) -> bytes:
    size = int(manifest.get("push_constant_size") or 0)
    out = bytearray(size)
    for pc in manifest.get("push_constants", []):
        if pc.get("same_memory"):
            # `a == b` of two pointer parameters (manifest "same_memory"): 1 when one buffer is bound to both
            a, b = pc["same_memory"]
            struct.pack_into("<I", out, pc["offset"], int(arrays[a] is arrays[b]))
            continue
        if pc["name"] not in arrays:
            raise CompileError(f"manifest push constant '{pc['name']}' is not a kernel parameter")
        value = arrays[pc["name"]]
        if isinstance(value, np.void):   # a struct or vector by value: its bytes, laid out as the block's
            out[pc["offset"]:pc["offset"] + pc["size"]] = _record_bytes(pc, value)
            continue
        if pc["type"] not in PUSH_FORMATS:
            raise CompileError(f"by-value parameter '{pc['name']}' is a `{pc['type']}`: the spec gives a "
                               f"{np.asarray(value).dtype} scalar (a struct in the spec's structs={{...}} is needed)")
        fmt = "<" + PUSH_FORMATS[pc["type"]]
        struct.pack_into(fmt, out, pc["offset"], arrays[pc["name"]].item())
    return bytes(out)


def _record_bytes(pc: dict, value: np.void) -> bytes:
    """A by-value struct's bytes for its slot of the parameter block: the spec's C layout, which must be the
    block's (size, and each field's offset where the manifest lists them), else the run is refused."""
    data = value.tobytes()
    if len(data) != pc["size"]:
        raise CompileError(f"by-value parameter '{pc['name']}' ({pc['type']}): the spec's struct has {len(data)} "
                           f"bytes, the translation's parameter block {pc['size']}")
    fields = value.dtype.fields
    for f in pc.get("fields") or []:        # the manifest's offsets are the block's: the struct's own plus its slot's
        at = (f["offset"] - pc["offset"], f["size"])
        if f["name"] in fields and (fields[f["name"]][1], fields[f["name"]][0].itemsize) != at:
            raise CompileError(f"by-value parameter '{pc['name']}': field '{f['name']}' is at offset "
                               f"{fields[f['name']][1]} ({fields[f['name']][0].itemsize} bytes) in C, at {at[0]} "
                               f"({at[1]} bytes) in the translation's block")
    return data


class VkSession(Session):
    """The pipeline with its buffers and descriptor set; launch() is timed with timestamp queries."""

    def __init__(self, case, source_text, manifest, sizes, arrays):
        if manifest is None:
            raise CompileError("no GLSL manifest for this kernel")
        self.ctx = ctx = _context()
        vk = ctx.vk
        self.grid, block = case.launch(sizes)
        _check_launch(ctx, self.grid, block)
        spirv = compile_glsl(source_text, case.define_flags())
        if manifest.get("assert"):
            # device asserts: the hidden buffer, zeroed, bound at its binding and read back with the outputs
            from porter.verify import asserts
            arrays = {**arrays, asserts.KEY: asserts.zeroed()}
        by_name = {b["name"]: b for b in manifest.get("buffers", [])}
        for g in manifest.get("device_globals", []):
            # a file-scope device variable: the spec gives its buffer (an array of its element count)
            if g["name"] not in arrays or np.asarray(arrays[g["name"]]).size != g["count"]:
                raise CompileError(f"device variable '{g['name']}' ({g['type']}[{g['count']}]) is not in the "
                                   "signature (manifest \"device_globals\")")
        for name, b in by_name.items():
            if name not in arrays or not isinstance(arrays[name], np.ndarray):
                raise CompileError(f"manifest buffer '{name}' is not an array parameter of the kernel")
            # a buffer of vectors (float4 *, float3 *) is given as its components (f32[4 * n]), a buffer of structs
            # of one scalar type (Float3, KeyValue) as its scalars
            t = str(b.get("type", ""))
            if arrays[name].dtype.names and b.get("elem_size") != arrays[name].itemsize:
                # a struct buffer: the translation's element (std430 / scalar layout) must be C's, byte for byte
                raise CompileError(f"buffer '{name}': the translation's `{t}` is {b.get('elem_size')} bytes, the "
                                   f"spec's struct {arrays[name].itemsize} (C's layout)")
            components = (t[-1:].isdigit() or not _SCALAR_TYPE.match(t)) and \
                b.get("elem_size", 0) % arrays[name].itemsize == 0 and arrays[name].nbytes % b["elem_size"] == 0
            if b.get("elem_size") and b["elem_size"] != arrays[name].itemsize and not components:
                raise CompileError(f"buffer '{name}': manifest element size {b['elem_size']} but the signature "
                                   f"says {arrays[name].dtype} ({arrays[name].itemsize} bytes)")
        need = manifest.get("min_subgroup_size")
        if need and ctx.subgroup_size < int(need):
            # a shuffle with an explicit width (or a constant lane distance) is right only on subgroups this wide
            raise CompileError(f"launch refused: the translation needs subgroups of at least {need} lanes "
                               f"(manifest \"min_subgroup_size\"), this device has {ctx.subgroup_size}")
        check_launch_contract(manifest, block, arrays)
        self.push = _push_bytes(manifest, arrays)
        ub = manifest.get("uniform_block")
        # the uniform block's members packed as push constants are (the manifest gives their offsets)
        self.uniform = (ub["binding"], _push_bytes({"push_constant_size": ub["size"],
                                                    "push_constants": ub["members"]}, arrays)) if ub else None
        self.pipe, self.ubuf = None, None
        self.pipe = _Pipeline(ctx, spirv, manifest, block, _spec_overrides(case, manifest, sizes))
        self.arrays, self.bufs, self.dpool, self.qpool = arrays, {}, None, None
        try:
            self._setup(by_name)
        except BaseException:
            self.close()
            raise
        self.info = {"device": ctx.device_name, "subgroup_size": ctx.subgroup_size,
                     "subgroup_pinned": self.pipe.subgroup_pinned,
                     "timer": "timestamps" if self.qpool is not None else "wall"}

    def _setup(self, by_name: dict) -> None:
        ctx, vk = self.ctx, self.ctx.vk
        # Buffers: host-visible on lavapipe and integrated GPUs; device-local + staging on discrete ones.
        for name in by_name:
            first = next(n for n in by_name if self.arrays[n] is self.arrays[name])
            if first != name:      # bound to another parameter's memory (spec alias): one buffer, two bindings
                self.bufs[name] = self.bufs[first]
                continue
            data = self.arrays[name].tobytes() or b"\0" * 4
            if ctx.use_staging:
                dev = ctx.buffer(len(data), host=False)
                self.bufs[name] = (dev, None, len(data))      # recorded first: close() frees it if staging fails
                stage = ctx.buffer(len(data), host=True)
                self.bufs[name] = (dev, stage, len(data))
                ctx.write(stage[1], data)
                ctx.copy(stage[0], dev[0], len(data))
            else:
                host = ctx.buffer(len(data), host=True)
                self.bufs[name] = (host, None, len(data))
                ctx.write(host[1], data)
        sizes = [vk.VkDescriptorPoolSize(type=vk.VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                                         descriptorCount=max(1, len(self.bufs)))]
        if self.uniform:
            sizes.append(vk.VkDescriptorPoolSize(type=vk.VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER, descriptorCount=1))
        self.dpool = vk.vkCreateDescriptorPool(ctx.device, vk.VkDescriptorPoolCreateInfo(
            maxSets=1, poolSizeCount=len(sizes), pPoolSizes=sizes), None)
        self.dset = vk.vkAllocateDescriptorSets(ctx.device, vk.VkDescriptorSetAllocateInfo(
            descriptorPool=self.dpool, descriptorSetCount=1, pSetLayouts=[self.pipe.set_layout]))[0]
        writes = [vk.VkWriteDescriptorSet(
            dstSet=self.dset, dstBinding=by_name[name]["binding"], descriptorCount=1,
            descriptorType=vk.VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
            pBufferInfo=[vk.VkDescriptorBufferInfo(buffer=dev[0], offset=0, range=size)])
            for name, (dev, _, size) in self.bufs.items()]
        if self.uniform:
            binding, data = self.uniform
            self.ubuf = ctx.buffer(len(data), host=True, uniform=True)
            ctx.write(self.ubuf[1], data)
            writes.append(vk.VkWriteDescriptorSet(
                dstSet=self.dset, dstBinding=binding, descriptorCount=1,
                descriptorType=vk.VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER,
                pBufferInfo=[vk.VkDescriptorBufferInfo(buffer=self.ubuf[0], offset=0, range=len(data))]))
        if writes:
            vk.vkUpdateDescriptorSets(ctx.device, len(writes), writes, 0, None)
        self.push_c = vk.ffi.new("char[]", self.push) if self.push else None
        if ctx.has_timestamps:
            self.qpool = vk.vkCreateQueryPool(ctx.device, vk.VkQueryPoolCreateInfo(
                queryType=vk.VK_QUERY_TYPE_TIMESTAMP, queryCount=2), None)

    def _record(self, cmd) -> None:
        vk, pipe, qpool = self.ctx.vk, self.pipe, self.qpool
        if qpool is not None:
            vk.vkCmdResetQueryPool(cmd, qpool, 0, 2)
            vk.vkCmdWriteTimestamp(cmd, vk.VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, qpool, 0)
        vk.vkCmdBindPipeline(cmd, vk.VK_PIPELINE_BIND_POINT_COMPUTE, pipe.pipeline)
        vk.vkCmdBindDescriptorSets(cmd, vk.VK_PIPELINE_BIND_POINT_COMPUTE, pipe.layout, 0, 1, [self.dset], 0, None)
        if self.push:
            vk.vkCmdPushConstants(cmd, pipe.layout, vk.VK_SHADER_STAGE_COMPUTE_BIT, 0, len(self.push), self.push_c)
        vk.vkCmdDispatch(cmd, *self.grid)
        if qpool is not None:
            vk.vkCmdWriteTimestamp(cmd, vk.VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, qpool, 1)

    def launch(self) -> float:
        import time
        ctx, vk = self.ctx, self.ctx.vk
        t0 = time.perf_counter()
        ctx.submit(self._record)
        wall = (time.perf_counter() - t0) * 1e3
        if self.qpool is None:
            return wall
        stamps = vk.ffi.new("uint64_t[2]")
        vk.vkGetQueryPoolResults(ctx.device, self.qpool, 0, 2, 16, stamps, 8,
                                 vk.VK_QUERY_RESULT_64_BIT | vk.VK_QUERY_RESULT_WAIT_BIT)
        return (stamps[1] - stamps[0]) * ctx.timestamp_period / 1e6

    def outputs(self) -> dict:
        ctx, outputs = self.ctx, {}
        for name, (dev, stage, size) in self.bufs.items():
            a = self.arrays[name]
            if stage is not None:
                ctx.copy(dev[0], stage[0], size)
                raw = ctx.read(stage[1], size)
            else:
                raw = ctx.read(dev[1], size)
            outputs[name] = np.frombuffer(raw[:a.nbytes], dtype=a.dtype).reshape(a.shape).copy()
        return outputs

    def close(self) -> None:
        ctx, vk = self.ctx, self.ctx.vk
        if self.qpool is not None:
            vk.vkDestroyQueryPool(ctx.device, self.qpool, None)
            self.qpool = None
        if self.dpool is not None:
            vk.vkDestroyDescriptorPool(ctx.device, self.dpool, None)
            self.dpool = None
        for name, (dev, stage, _) in self.bufs.items():
            if any(self.bufs[n][0] is dev for n in list(self.bufs)[:list(self.bufs).index(name)]):
                continue           # a second binding of one buffer (spec alias): freed once
            ctx.free(*dev)
            if stage:
                ctx.free(*stage)
        self.bufs = {}
        if self.ubuf is not None:
            ctx.free(*self.ubuf)
            self.ubuf = None
        if self.pipe is not None:
            self.pipe.destroy()
            self.pipe = None


def open_session(case, source_text, manifest, sizes, arrays, *, variant=None) -> VkSession:
    return VkSession(case, source_text, manifest, sizes, arrays)


def run(case, source_text, manifest, sizes, arrays, *, variant=None, repeat=1) -> RunOutput:
    return run_session(VkSession(case, source_text, manifest, sizes, arrays), repeat)
