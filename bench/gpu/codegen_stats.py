"""What each compiler made of a kernel, side by side: the CUDA original through NVRTC and cuport's GLSL translation
through the NVIDIA Vulkan driver (docs/performance.md: where the GLSL gap comes from, measured, not guessed).

    python3 bench/gpu/codegen_stats.py --out DIR [--cases warp_reduce,sgemm_fixed,...]     (on the GPU)
    python3 bench/gpu/codegen_stats.py sass DIR path/to/nvdisasm     (then anywhere: the Vulkan SASS from the blobs;
        nvdisasm from the `nvidia-cuda-nvdisasm` wheel, zstd on the PATH)

Per case:
- CUDA: registers, local memory and shared memory of the NVRTC build (CuPy's kernel attributes), occupancy (blocks
  per SM at the case's block size), and the SASS of a cubin built for the device's arch (cuobjdump -sass, when
  cuobjdump is on the PATH) -> DIR/<case>.cuda.sass
- Vulkan: the pipeline's statistics (VK_KHR_pipeline_executable_properties: the driver's register count and
  whatever else it reports), its internal representations when the driver offers any, and the pipeline cache blob
  (DIR/<case>.vkcache); every ELF image found inside the blob is written out (DIR/<case>.vk<i>.elf) and
  disassembled with cuobjdump/nvdisasm when they read it -> DIR/<case>.vulkan.sass
Prints one table (also DIR/stats.json). Every step that fails says why and the others go on."""
from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

CASES = {
    "warp_reduce": "examples/warp_reduce/verify_spec.py",
    "warp_reduce_fixed": "examples/warp_reduce/verify_spec.py",
    "block_reduce_perwarp": "examples/block_reduce_perwarp/verify_spec.py",
    "sgemm_fixed": "examples/sgemm/verify_spec.py",
    "particle_step": "examples/struct_refs/verify_spec.py",
    "saxpy": "examples/saxpy/verify_spec.py",
}


VARIANTS: list = []


def _case(spec: str, cid: str):
    from porter.verify.spec import load_spec
    return next(c for c in load_spec(spec) if c.id == cid)


def _run(cmd: list[str]) -> str:
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    return p.stdout if p.returncode == 0 else f"# {' '.join(cmd)}: rc {p.returncode}\n{p.stderr[-2000:]}"


# -- CUDA -------------------------------------------------------------------------------------------------------

def cuda_stats(case, sizes, out: Path) -> dict:
    import cupy
    from porter.verify.backends.cuda import LIMITS
    from porter.verify.extract import device_code
    code = device_code(case.source_path.read_text())
    options = ("--std=c++17", *LIMITS, *case.define_flags())
    mod = cupy.RawModule(code=code, options=options, name_expressions=[case.name_expression])
    fn = mod.get_function(case.name_expression)
    attrs = dict(fn.attributes)
    grid, block = case.launch(sizes)
    nthreads = block[0] * block[1] * block[2]
    res = {"regs": attrs.get("num_regs"), "local_bytes": attrs.get("local_size_bytes"),
           "shared_bytes": attrs.get("shared_size_bytes"), "block": list(block)}
    try:
        res["blocks_per_sm"] = cupy.cuda.driver.occupancyMaxActiveBlocksPerMultiprocessor(
            fn.kernel.ptr, nthreads, case.shared_bytes(sizes))
    except Exception as e:
        res["blocks_per_sm"] = f"{e.__class__.__name__}: {e}"
    # its SASS: nvcc for this device's arch (CuPy's NVRTC cubin came back truncated), then cuobjdump
    if shutil.which("nvcc") and shutil.which("cuobjdump"):
        arch = f"sm_{cupy.cuda.Device().compute_capability}"
        src, cubin = out / f"{case.id}.cuda.cu", out / f"{case.id}.cuda.cubin"
        src.write_text(code)
        log = _run(["nvcc", "-cubin", f"-arch={arch}", "-O3", *options, "-o", str(cubin), str(src)])
        (out / f"{case.id}.cuda.sass").write_text(_run(["cuobjdump", "-sass", str(cubin)]) if cubin.exists()
                                                   else log)
    return res


# -- Vulkan -----------------------------------------------------------------------------------------------------

class VkStats:
    def __init__(self):
        import vulkan as vk
        self.vk = vk
        ffi = vk.ffi
        app = vk.VkApplicationInfo(pApplicationName="cuport-codegen", apiVersion=vk.VK_MAKE_VERSION(1, 3, 0))
        self.instance = vk.vkCreateInstance(vk.VkInstanceCreateInfo(pApplicationInfo=app), None)
        pds = vk.vkEnumeratePhysicalDevices(self.instance)
        self.pd = next((p for p in pds if "llvmpipe" not in vk.vkGetPhysicalDeviceProperties(p).deviceName), pds[0])
        props = vk.vkGetPhysicalDeviceProperties(self.pd)
        self.device_name = props.deviceName
        self.driver_version = props.driverVersion
        families = vk.vkGetPhysicalDeviceQueueFamilyProperties(self.pd)
        qf = next(i for i, f in enumerate(families) if f.queueFlags & vk.VK_QUEUE_COMPUTE_BIT)
        exts = {e.extensionName for e in vk.vkEnumerateDeviceExtensionProperties(self.pd, None)}
        self.has_exec_props = "VK_KHR_pipeline_executable_properties" in exts
        self.has_robustness = "VK_EXT_pipeline_robustness" in exts
        chain = []
        f12 = ffi.new("VkPhysicalDeviceVulkan12Features*")
        f12.sType = vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES
        chain.append(f12)
        f11 = ffi.new("VkPhysicalDeviceVulkan11Features*")
        f11.sType = vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES
        chain.append(f11)
        enable = []
        if self.has_exec_props:
            pe = ffi.new("VkPhysicalDevicePipelineExecutablePropertiesFeaturesKHR*")
            pe.sType = vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PIPELINE_EXECUTABLE_PROPERTIES_FEATURES_KHR
            chain.append(pe)
            enable.append("VK_KHR_pipeline_executable_properties")
        if self.has_robustness:
            pr = ffi.new("VkPhysicalDevicePipelineRobustnessFeaturesEXT*")
            pr.sType = vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PIPELINE_ROBUSTNESS_FEATURES_EXT
            chain.append(pr)
            enable.append("VK_EXT_pipeline_robustness")
        f2 = ffi.new("VkPhysicalDeviceFeatures2*")
        f2.sType = vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2
        for a, b in zip([f2] + chain, chain):
            a.pNext = b
        vk.vkGetPhysicalDeviceFeatures2(self.pd, f2)
        f2.features.robustBufferAccess = 0
        self._keep = (f2, chain)
        qinfo = vk.VkDeviceQueueCreateInfo(queueFamilyIndex=qf, queueCount=1, pQueuePriorities=[1.0])
        self.device = vk.vkCreateDevice(self.pd, vk.VkDeviceCreateInfo(
            pNext=f2, queueCreateInfoCount=1, pQueueCreateInfos=[qinfo], enabledExtensionCount=len(enable),
            ppEnabledExtensionNames=enable or None), None)

    def pipeline(self, spirv: bytes, manifest: dict, block, out: Path, cid: str, robust_off: bool = False) -> dict:
        vk, ffi, d = self.vk, self.vk.ffi, self.device
        import struct
        module = vk.vkCreateShaderModule(d, vk.VkShaderModuleCreateInfo(codeSize=len(spirv), pCode=spirv), None)
        bindings = [vk.VkDescriptorSetLayoutBinding(
            binding=b["binding"], descriptorType=vk.VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, descriptorCount=1,
            stageFlags=vk.VK_SHADER_STAGE_COMPUTE_BIT) for b in manifest.get("buffers", [])]
        set_layout = vk.vkCreateDescriptorSetLayout(d, vk.VkDescriptorSetLayoutCreateInfo(
            bindingCount=len(bindings), pBindings=bindings or None), None)
        push = int(manifest.get("push_constant_size") or 0)
        ranges = [vk.VkPushConstantRange(stageFlags=vk.VK_SHADER_STAGE_COMPUTE_BIT, offset=0, size=push)] \
            if push else []
        layout = vk.vkCreatePipelineLayout(d, vk.VkPipelineLayoutCreateInfo(
            setLayoutCount=1, pSetLayouts=[set_layout], pushConstantRangeCount=len(ranges),
            pPushConstantRanges=ranges or None), None)
        ids = manifest.get("local_size_spec_ids", [0, 1, 2])
        entries = [(ids[i], block[i]) for i in range(3)]
        for sc in manifest.get("spec_constants", []):
            if sc.get("value") == "subgroup_size":
                entries.append((sc["id"], 32))
        data = b"".join(struct.pack("<I", v) for _, v in entries)
        maps = [vk.VkSpecializationMapEntry(constantID=cid_, offset=4 * i, size=4) for i, (cid_, _) in
                enumerate(entries)]
        blob = ffi.new("char[]", data)
        spec = vk.VkSpecializationInfo(mapEntryCount=len(maps), pMapEntries=maps, dataSize=len(data), pData=blob)
        cache = vk.vkCreatePipelineCache(d, vk.VkPipelineCacheCreateInfo(), None)
        flags = 0
        if self.has_exec_props:
            flags = (vk.VK_PIPELINE_CREATE_CAPTURE_STATISTICS_BIT_KHR
                     | vk.VK_PIPELINE_CREATE_CAPTURE_INTERNAL_REPRESENTATIONS_BIT_KHR)
        # robust_off: VK_EXT_pipeline_robustness asks for no bounds checks on buffer accesses (what CUDA does)
        rb = vk.VkPipelineRobustnessCreateInfoEXT(
            storageBuffers=vk.VK_PIPELINE_ROBUSTNESS_BUFFER_BEHAVIOR_DISABLED_EXT,
            uniformBuffers=vk.VK_PIPELINE_ROBUSTNESS_BUFFER_BEHAVIOR_DISABLED_EXT,
            vertexInputs=vk.VK_PIPELINE_ROBUSTNESS_BUFFER_BEHAVIOR_DISABLED_EXT,
            images=vk.VK_PIPELINE_ROBUSTNESS_IMAGE_BEHAVIOR_DISABLED_EXT) if robust_off else None
        stage = vk.VkPipelineShaderStageCreateInfo(pNext=rb, stage=vk.VK_SHADER_STAGE_COMPUTE_BIT, module=module,
                                                   pName="main", pSpecializationInfo=spec)
        pipe = vk.vkCreateComputePipelines(d, cache, 1, [vk.VkComputePipelineCreateInfo(
            flags=flags, stage=stage, layout=layout)], None)[0]
        res: dict = {}
        if self.has_exec_props:
            res.update(self._exec_stats(pipe, out, cid))
        # the pipeline cache: NVIDIA keeps the compiled binary in it
        size = ffi.new("size_t*")
        vk.lib.vkGetPipelineCacheData(d, cache, size, ffi.NULL)
        buf = ffi.new("char[]", size[0])
        vk.lib.vkGetPipelineCacheData(d, cache, size, buf)
        raw = bytes(ffi.buffer(buf, size[0]))
        (out / f"{cid}.vkcache").write_bytes(raw)
        res["cache_bytes"] = len(raw)
        elves, start = [], raw.find(b"\x7fELF")
        while start >= 0:
            nxt = raw.find(b"\x7fELF", start + 4)
            elves.append(raw[start:nxt if nxt >= 0 else len(raw)])
            start = nxt
        sass = []
        for i, elf in enumerate(elves):
            p = out / f"{cid}.vk{i}.elf"
            p.write_bytes(elf)
            for tool in (["cuobjdump", "-sass"], ["nvdisasm", "-c"]):
                if shutil.which(tool[0]):
                    sass.append(f"### {' '.join(tool)} {p.name}\n" + _run(tool + [str(p)]))
        if sass:
            (out / f"{cid}.vulkan.sass").write_text("\n".join(sass))
        res["elf_images"] = len(elves)
        vk.vkDestroyPipeline(d, pipe, None)
        vk.vkDestroyPipelineCache(d, cache, None)
        vk.vkDestroyPipelineLayout(d, layout, None)
        vk.vkDestroyDescriptorSetLayout(d, set_layout, None)
        vk.vkDestroyShaderModule(d, module, None)
        return res

    def _exec_stats(self, pipe, out: Path, cid: str) -> dict:
        vk, ffi, d = self.vk, self.vk.ffi, self.device
        get_props = vk.vkGetDeviceProcAddr(d, "vkGetPipelineExecutablePropertiesKHR")
        get_stats = vk.vkGetDeviceProcAddr(d, "vkGetPipelineExecutableStatisticsKHR")
        res = {}
        for i, _ in enumerate(list(get_props(d, vk.VkPipelineInfoKHR(pipeline=pipe)))):
            info = vk.VkPipelineExecutableInfoKHR(pipeline=pipe, executableIndex=i)
            pinfo = ffi.addressof(info)
            for s in get_stats(d, info):
                f = s.format
                v = (s.value.b32 if f == vk.VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_BOOL32_KHR else
                     s.value.i64 if f == vk.VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_INT64_KHR else
                     s.value.u64 if f == vk.VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_UINT64_KHR else s.value.f64)
                res[str(s.name)] = v
            # internal representations: count, then sizes, then data (the binding's wrapper stops at sizes)
            raw = ffi.cast("PFN_vkGetPipelineExecutableInternalRepresentationsKHR",
                           vk.lib.vkGetDeviceProcAddr(d, b"vkGetPipelineExecutableInternalRepresentationsKHR"))
            n = ffi.new("uint32_t*")
            raw(d, pinfo, n, ffi.NULL)
            reps = ffi.new("VkPipelineExecutableInternalRepresentationKHR[]", n[0])
            for r in reps:
                r.sType = vk.VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_INTERNAL_REPRESENTATION_KHR
            raw(d, pinfo, n, reps)
            keep = []
            for r in reps:
                keep.append(ffi.new("char[]", r.dataSize))
                r.pData = keep[-1]
            raw(d, pinfo, n, reps)
            for j, r in enumerate(reps):
                name = ffi.string(r.name).decode(errors="replace")
                data = bytes(ffi.buffer(r.pData, r.dataSize))
                (out / f"{cid}.ir{i}_{j}.txt").write_bytes(name.encode() + b"\n" + data)
                res.setdefault("internal_representations", []).append(f"{name} ({r.dataSize} bytes)")
        return res


ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"


def extract_sass(folder: Path, nvdisasm: str, arch: str = "SM90") -> None:
    """Here, after the run: the SASS of each pipeline from its cache blob. The NVIDIA driver (580) stores a zstd
    frame holding an `NVDA...` record whose u32 at 0x4c is the code size (the driver's "Binary Size" statistic) and
    whose u64 at 0x50 is the code's offset minus 8 (read off these blobs, not documented: checked by nvdisasm
    decoding the whole range without an illegal instruction, else the file says so)."""
    import struct
    for cache in sorted(folder.glob("*.vkcache")):
        raw = cache.read_bytes()
        at = raw.find(ZSTD_MAGIC)
        if at < 0:
            print(f"{cache.name}: no zstd frame (not an NVIDIA pipeline cache?)")
            continue
        blob = subprocess.run(["zstd", "-q", "-d", "-c"], input=raw[at:], capture_output=True).stdout
        size = struct.unpack_from("<I", blob, 0x4C)[0]
        off = struct.unpack_from("<Q", blob, 0x50)[0] + 8
        code = cache.with_suffix(".code")
        code.write_bytes(blob[off:off + size])
        p = subprocess.run([nvdisasm, "-b", arch, str(code)], capture_output=True, text=True)
        lines = [re.sub(r"/\*.*?\*/", "", ln).rstrip() for ln in p.stdout.splitlines()]
        lines = [ln for ln in lines if ln.strip()]
        bad = "Illegal instruction" in p.stderr or p.returncode
        cache.with_suffix(".vulkan.sass").write_text(
            ("# nvdisasm could not decode this range: the cache layout guess is wrong here\n" if bad else "")
            + "\n".join(lines) + "\n")
        code.unlink()
        print(f"{cache.stem}: {size} bytes of code, {len(lines)} lines{' (DECODE ERRORS)' if bad else ''}")


def main(argv=None) -> int:
    if argv is None:
        argv = sys.argv[1:]
    if argv[:1] == ["sass"]:          # sass DIR NVDISASM: after the run, on any machine with zstd and nvdisasm
        extract_sass(Path(argv[1]), argv[2])
        return 0
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--cases", default=",".join(CASES))
    a = ap.parse_args(argv)
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    from porter.verify.backends.vulkan import compile_glsl
    sys.path.insert(0, str(Path(__file__).parent))
    import glsl_variants
    global VARIANTS
    VARIANTS = [(cid, name, fn) for _, cid, vs in glsl_variants.CASES for name, fn in vs]
    from porter.verify.worker import translation
    vks = VkStats()
    report = {"vulkan_device": vks.device_name, "vulkan_driver": vks.driver_version, "cases": {}}
    for cid in a.cases.split(","):
        case = _case(CASES[cid], cid)
        sizes = case.bench_sizes or case.sizes[0]
        row: dict = {}
        try:
            row["cuda"] = cuda_stats(case, sizes, out)
        except Exception as e:
            row["cuda"] = f"{e.__class__.__name__}: {str(e)[:300]}"
        try:
            text, manifest = translation(case, "vulkan")
            (out / f"{cid}.comp").write_text(text)
            _, block = case.launch(sizes)
            row["vulkan"] = vks.pipeline(compile_glsl(text, case.define_flags()), manifest, block, out, cid)
            lanes = [(f"{cid}.robust_off", text, True)] if vks.has_robustness else []
            lanes += [(f"{cid}.{name.replace(' ', '_').replace('+', 'and')}", fn(text), False)
                      for c, name, fn in VARIANTS if c == cid]
            for lid, vtext, off in lanes:
                (out / f"{lid}.comp").write_text(vtext)
                try:
                    row[lid] = vks.pipeline(compile_glsl(vtext, case.define_flags()), manifest, block, out, lid, off)
                except Exception as e:
                    row[lid] = f"{e.__class__.__name__}: {str(e)[:300]}"
        except Exception as e:
            row["vulkan"] = f"{e.__class__.__name__}: {str(e)[:300]}"
        report["cases"][cid] = row
        print(cid, json.dumps(row), flush=True)
    (out / "stats.json").write_text(json.dumps(report, indent=1, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
