"""`cuport report FILE --arch sm_90,gfx90a,gfx1030,vulkan`: per kernel the block shape, the shared memory, the
registers (from nvcc / hipcc when they are installed, else a stated default) and the occupancy estimate per
target, with the resource that limits it. The formula and the per-target limits are in docs/occupancy.md:

    blocks per SM/CU = min(wave slots / waves per block, block slots, shared memory / shared per block,
                           register file / registers per block)
    occupancy        = blocks x waves per block / wave slots
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field

DEFAULT_REGISTERS = 32          # per thread, when no compiler output is available (stated in the output)
ASSUMED_THREADS = 256           # block size used when a kernel's shape is unknown (stated in the output)
COMPILE_TIMEOUT = 120


@dataclass(frozen=True)
class Target:
    name: str
    device: str
    vendor: str                  # nvidia | amd
    wave: int                    # warp / wavefront size
    unit: str                    # SM | CU | WGP
    simds: int                   # sub-partitions (NVIDIA) / SIMDs (AMD) per unit; registers are per SIMD
    waves_per_simd: int          # wave slots per SIMD
    max_blocks: int              # resident blocks per unit (multi-wave blocks on AMD: barrier resources)
    max_blocks_one_wave: int     # resident single-wave blocks per unit
    regs_per_simd: int           # NVIDIA: 32-bit registers per sub-partition; AMD: VGPRs per lane per SIMD
    reg_granule: int             # NVIDIA: registers per warp allocation unit; AMD: VGPRs per allocation block
    max_regs: int                # per thread
    shared_per_unit: int         # bytes
    shared_per_block: int        # bytes one block may use (NVIDIA: with the opt-in)
    shared_static_max: int       # bytes of static __shared__ one block may declare
    shared_granule: int
    shared_reserved: int         # bytes the runtime reserves per block
    max_threads: int = 1024
    reg_name: str = "registers"
    sgpr_table: tuple = ()       # (max SGPRs, waves per SIMD) steps (gfx9)
    proxy: str | None = None     # registers taken from this target's compile (vulkan: the sm_90 count)

    @property
    def max_waves(self) -> int:
        return self.simds * self.waves_per_simd


TARGETS = {
    # CUDA C++ Programming Guide, "Technical Specifications per Compute Capability" (9.0) and the occupancy
    # calculator in cuda_occupancy.h (CUDA 13): 4 sub-partitions, 256-register warp allocation unit, 128 B
    # shared allocation unit, 1 KiB shared memory reserved per block, 228 KiB carve-out.
    "sm_90": Target("sm_90", "NVIDIA H100 (compute capability 9.0)", "nvidia", 32, "SM", 4, 16, 32, 32, 16384, 256,
                    255, 233472, 232448, 49152, 128, 1024),
    # AMD CDNA2 ISA guide and LLVM AMDGPU (AMDGPUBaseInfo: getMaxWavesPerEU = 8 on gfx90a, 512 unified VGPRs
    # per lane, granule 8, getMaxWorkGroupsPerCU = 16 with barriers); AMDGPUUsage: LDS allocated in 512 B
    # granules; 64 KiB LDS per CU and per work-group.
    "gfx90a": Target("gfx90a", "AMD MI200 / MI250X (CDNA2)", "amd", 64, "CU", 4, 8, 16, 32, 512, 8, 512, 65536, 65536,
                     65536, 512, 0, reg_name="VGPRs", sgpr_table=((80, 10), (88, 9), (100, 8), (10 ** 9, 7))),
    # RDNA2 ISA guide and LLVM AMDGPU for gfx10.3 in wave32 and WGP mode (the default): a work-group runs on a
    # WGP of 4 SIMD32 with 16 wave slots each, 1024 VGPRs per lane per SIMD (granule 16), 32 work-groups per WGP,
    # 128 KiB LDS per WGP of which one work-group may use 64 KiB.
    "gfx1030": Target("gfx1030", "AMD RX 6800/6900 (RDNA2, WGP mode, wave32)", "amd", 32, "WGP", 4, 16, 32, 64, 1024,
                      16, 256, 131072, 65536, 65536, 512, 0, reg_name="VGPRs"),
    # Vulkan on the H100 of the verification machine: subgroup size 32, maxComputeSharedMemorySize 48 KiB (the
    # NVIDIA driver does not expose the CUDA opt-in), the same SM otherwise. SPIR-V carries no register count:
    # the sm_90 count is used as a proxy. The portable limit (lavapipe: 32 KiB) is checked separately.
    "vulkan": Target("vulkan", "Vulkan on NVIDIA H100 (subgroup 32)", "nvidia", 32, "SM", 4, 16, 32, 32, 16384, 256,
                     255, 233472, 49152, 49152, 128, 1024, proxy="sm_90"),
}


@dataclass
class Registers:
    count: int
    source: str                   # "nvcc" | "hipcc" | "default" | "given" | "nvcc sm_90, proxy"
    sgprs: int | None = None
    agprs: int = 0
    spills: int = 0
    scratch: int = 0
    compiler_occupancy: int | None = None
    lds: int | None = None


@dataclass
class Occupancy:
    target: str
    waves_per_block: int
    limits: dict                  # name -> blocks per unit allowed by that resource
    blocks: int
    waves: int
    max_waves: int
    limited_by: list
    fits: bool
    explanation: list = field(default_factory=list)

    @property
    def percent(self) -> float:
        return 100.0 * self.waves / self.max_waves if self.max_waves else 0.0


_LABELS = {"nvidia": {"waves": "warp slots", "blocks": "block slots", "shared": "shared memory",
                      "registers": "registers"},
           "amd": {"waves": "wave slots", "blocks": "block slots", "shared": "LDS", "registers": "VGPRs"}}


def label(t: Target, key: str) -> str:
    return _LABELS[t.vendor][key]


def _roundup(x, g):
    return -(-x // g) * g if g else x


def occupancy(t: Target, threads: int, shared: int, regs: Registers) -> Occupancy:
    """Blocks and waves resident per SM / CU / WGP for one block size, shared memory and register count."""
    wpb = -(-threads // t.wave)
    unit, wv = t.unit, ("warps" if t.vendor == "nvidia" else "waves")
    limits, why = {}, []
    fits = threads <= t.max_threads
    # wave slots and block slots
    limits["waves"] = t.max_waves // wpb if fits else 0
    why.append(f"{label(t, 'waves')}: {t.max_waves} {wv} per {unit} / {wpb} per block = {limits['waves']}")
    cap = t.max_blocks_one_wave if (t.vendor == "amd" and wpb == 1) else t.max_blocks
    limits["blocks"] = cap
    why.append(f"block slots: at most {cap} resident blocks per {unit}"
               + (" (work-groups of more than one wave need a barrier resource)" if t.vendor == "amd" else ""))
    # shared memory
    if shared + t.shared_reserved > 0 and shared > 0:
        alloc = _roundup(shared + t.shared_reserved, t.shared_granule)
        ok = shared <= t.shared_per_block
        limits["shared"] = t.shared_per_unit // alloc if ok else 0
        why.append(f"{label(t, 'shared')}: {t.shared_per_unit} B per {unit} / {alloc} B per block "
                   f"({shared} B{f' + {t.shared_reserved} B reserved' if t.shared_reserved else ''}, "
                   f"{t.shared_granule} B granules) = {limits['shared']}"
                   + ("" if ok else f" (over the {t.shared_per_block} B a block may use)"))
        fits = fits and ok
    # registers
    if t.vendor == "nvidia":
        per_warp = _roundup(regs.count * t.wave, t.reg_granule)
        per_simd = t.regs_per_simd // per_warp if per_warp else t.waves_per_simd
        ok = regs.count <= t.max_regs and per_warp * _roundup(wpb, t.simds) <= t.regs_per_simd * t.simds
        reg_waves = min(per_simd, t.waves_per_simd) * t.simds
        limits["registers"] = reg_waves // wpb if ok else 0
        why.append(f"{label(t, 'registers')}: {regs.count} x {t.wave} lanes = {per_warp} per warp "
                   f"({t.reg_granule}-register units); {t.regs_per_simd} per sub-partition hold {per_simd} warps, "
                   f"x {t.simds} = {reg_waves} warps = {limits['registers']} blocks")
    else:
        total = _roundup(regs.count, 4) + regs.agprs if regs.agprs else regs.count
        alloc = _roundup(max(total, 1), t.reg_granule)
        per_simd = min(t.waves_per_simd, t.regs_per_simd // alloc)
        sg = ""
        if regs.sgprs is not None and t.sgpr_table:
            s_waves = next(w for m, w in t.sgpr_table if regs.sgprs <= m)
            if s_waves < per_simd:
                per_simd, sg = s_waves, f"; {regs.sgprs} SGPRs allow {s_waves}"
        reg_waves = per_simd * t.simds
        limits["registers"] = reg_waves // wpb
        why.append(f"{label(t, 'registers')}: {total} per lane ({alloc} allocated in blocks of {t.reg_granule}); "
                   f"{t.regs_per_simd} per SIMD hold {per_simd} waves{sg}, x {t.simds} SIMDs = {reg_waves} waves = "
                   f"{limits['registers']} blocks")
    blocks = min(limits.values()) if fits else 0
    waves = blocks * wpb
    low = [k for k, v in limits.items() if v == blocks] if blocks else [k for k, v in limits.items() if v == 0]
    return Occupancy(t.name, wpb, limits, blocks, waves, t.max_waves, low, fits, why)


# --- register counts from the compilers ------------------------------------------------------------------------

def _demangle(name: str) -> str:
    m = re.match(r"_Z(?:N\d+\w+?)?(\d+)", name)
    if m:
        n = int(m.group(1))
        return name[m.end():m.end() + n]
    return name


def parse_nvcc(text: str) -> dict:
    """`nvcc --resource-usage` (ptxas info) -> {kernel: Registers}."""
    out, current, spills = {}, None, {}
    for line in text.splitlines():
        m = re.search(r"(?:Compiling entry function|Function properties for) '?([\w$]+)'?", line)
        if m:
            current = _demangle(m.group(1))
            continue
        m = re.search(r"(\d+) bytes spill stores", line)
        if m and current:
            spills[current] = max(spills.get(current, 0), int(m.group(1)))
        m = re.search(r"Used (\d+) registers", line)
        if m and current:
            regs = out.get(current)
            if regs is None or int(m.group(1)) > regs.count:     # template instances: the largest
                out[current] = Registers(int(m.group(1)), "nvcc")
    for name, r in out.items():
        r.spills = spills.get(name, 0)
    return out


def parse_hipcc(text: str) -> dict:
    """`-Rpass-analysis=kernel-resource-usage` remarks -> {kernel: Registers}."""
    out, cur = {}, None
    for line in text.splitlines():
        m = re.search(r"remark:\s+Function Name: (\S+)", line)
        if m:
            cur = Registers(0, "hipcc")
            out[_demangle(m.group(1))] = cur
            continue
        if cur is None:
            continue
        for key, attr in (("VGPRs", "count"), ("SGPRs", "sgprs"), ("AGPRs", "agprs"),
                          ("ScratchSize \\[bytes/lane\\]", "scratch"), ("VGPRs Spill", "spills"),
                          ("Occupancy \\[waves/SIMD\\]", "compiler_occupancy"),
                          ("LDS Size \\[bytes/block\\]", "lds")):
            m = re.search(rf"remark:\s+{key}: (\d+)", line)
            if m:
                setattr(cur, attr, int(m.group(1)))
    return out


def _hip_source(path: str, text: str, parse_args: list) -> tuple[str, str]:
    """HIP text for hipcc: cuport's own translation (a faithful rename, no portability fixes), else the device
    code with the HIP runtime header."""
    try:
        from porter.translate.api import translate_file
        res = translate_file(path, "hip", text=text, portability_fixes=False, notes=False)
        if res.text and not res.parse_errors:
            return res.text, "HIP translation made by cuport (no portability fixes)"
    except Exception:  # the translator is optional here
        pass
    from porter.verify.extract import device_code
    return "#include <hip/hip_runtime.h>\n" + device_code(text), "device code only"


def compile_registers(path: str, text: str, archs: list, flags: list, timeout: int = COMPILE_TIMEOUT,
                      log=None) -> tuple[dict, list]:
    """{arch: {kernel: Registers}} from nvcc (sm_*) and hipcc (gfx*), run in parallel; and notes."""
    notes, procs = [], {}
    tmp = tempfile.mkdtemp(prefix="cuport-report-")
    try:
        nv = [a for a in archs if a.startswith("sm_")]
        amd = [a for a in archs if a.startswith("gfx")]
        nvcc = shutil.which("nvcc")
        for a in nv:
            if nvcc is None:
                notes.append(f"{a}: nvcc not found, registers assumed")
                continue
            cmd = [nvcc, "--resource-usage", "-c", f"-arch={a}", path, "-o", os.devnull, *flags]
            procs[a] = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        hipcc = shutil.which("hipcc")
        if amd and hipcc is None:
            notes.append("hipcc not found: AMD registers assumed")
        elif amd:
            src, how = _hip_source(path, text, flags)
            hip = os.path.join(tmp, os.path.splitext(os.path.basename(path))[0] + ".hip")
            with open(hip, "w") as fh:
                fh.write(src)
            notes.append(f"hipcc compiled the {how}")
            env = dict(os.environ, HIP_PLATFORM="amd")
            for a in amd:
                cmd = [hipcc, f"--offload-arch={a}", "--cuda-device-only", "-c",
                       "-Rpass-analysis=kernel-resource-usage", hip, "-o", os.devnull,
                       *[f for f in flags if f.startswith(("-I", "-D"))]]
                procs[a] = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                            env=env, cwd=os.path.dirname(os.path.abspath(path)))
        out = {}
        for a, p in procs.items():
            try:
                text_out, _ = p.communicate(timeout=timeout)
            except subprocess.TimeoutExpired:
                p.kill()
                p.communicate()
                notes.append(f"{a}: compiler timed out after {timeout} s, registers assumed")
                continue
            regs = parse_nvcc(text_out) if a.startswith("sm_") else parse_hipcc(text_out)
            if p.returncode != 0 or not regs:
                first = next((ln for ln in text_out.splitlines() if "error" in ln), text_out.strip()[:200])
                notes.append(f"{a}: compile failed ({first.strip()}), registers assumed")
                continue
            out[a] = regs
        return out, notes
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


# --- the report ------------------------------------------------------------------------------------------------

def kernel_reports(path: str, archs: list, settings=None, registers: str = "auto", timeout: int = COMPILE_TIMEOUT,
                   parse_options=None) -> dict:
    from porter.frontend.build import build_model
    from porter.analysis.launch import block_shapes, launch_bounds
    from porter.analysis.shared_access import kernel_static_shared
    from porter.source import read_source
    src = read_source(path)
    model = build_model(src, parse_options)
    unknown = [a for a in archs if a not in TARGETS]
    if unknown:
        raise ValueError(f"unknown target(s) {', '.join(unknown)} (known: {', '.join(TARGETS)})")
    notes, compiled = [], {}
    flags = [f"-I{d}" for d in (getattr(parse_options, "include_dirs", None) or [])] + \
        [f"-D{d}" for d in (getattr(parse_options, "defines", None) or [])]
    if path == "-" and registers in ("auto", "compile"):
        registers = "default"
        notes.append("standard input is not compiled: registers assumed")
    if registers == "auto" or registers == "compile":
        need = sorted({TARGETS[a].proxy or a for a in archs})
        compiled, cnotes = compile_registers(path, src.text, need, flags, timeout)
        notes += cnotes
    given = int(registers) if registers.isdigit() else None
    from porter.analysis.annotations import annotations
    notes += [f"line {a.line}: launch annotation ignored: {a.error}" for a in annotations(model) if a.error]
    kernels = []
    for fn in model.kernels:
        if fn.body is None:
            continue
        st = kernel_static_shared(model, fn)
        for shape in block_shapes(model, fn, settings):
            threads = shape.threads or (shape.max_threads if shape.source == "launch_bounds" else ASSUMED_THREADS)
            dyn = shape.dynamic_shared or 0
            shared = st.bytes + dyn
            line = model.source.position(fn.node.start)[0]
            k = {"kernel": fn.name, "file": src.path, "line": line,
                 "block": {"dims": list(shape.dims) if shape.dims else None, "threads": threads,
                           "source": shape.source, "exact": shape.exact, "line": shape.line,
                           "description": shape.describe(),
                           "bindings": dict(shape.bindings)},
                 "shared": {"static": st.bytes, "dynamic": dyn, "total": shared,
                            "arrays": [{"name": s.name, "bytes": s.size_bytes} for s in st.arrays],
                            "unknown": [s.name for s in st.unknown]},
                 "targets": {}}
            if not shape.dims:
                k["block"]["assumed"] = True
            vk_max = getattr(settings, "vulkan_max_shared", 32768) if settings is not None else 32768
            for a in archs:
                t = TARGETS[a]
                regs = _registers(fn.name, t, compiled, given)
                occ = occupancy(t, threads, shared, regs)
                entry = {"device": t.device, "wave": t.wave, "unit": t.unit,
                         "registers": {"count": regs.count, "source": regs.source, "spills": regs.spills,
                                       **({"sgprs": regs.sgprs} if regs.sgprs is not None else {}),
                                       **({"agprs": regs.agprs} if regs.agprs else {}),
                                       **({"compiler_occupancy": regs.compiler_occupancy}
                                          if regs.compiler_occupancy is not None else {})},
                         "waves_per_block": occ.waves_per_block, "limits": occ.limits,
                         "blocks": occ.blocks, "waves": occ.waves, "max_waves": occ.max_waves,
                         "occupancy": round(occ.percent, 1), "limited_by": occ.limited_by, "fits": occ.fits,
                         "explanation": occ.explanation}
                if t.vendor == "amd" and regs.spills and regs.source == "hipcc" and launch_bounds(model, fn) is None:
                    entry["register_note"] = (f"{regs.spills} VGPRs spilled: without __launch_bounds__ hipcc compiles "
                                              f"for up to 1024 threads per block and caps the VGPRs per thread "
                                              f"(see CP602); __launch_bounds__({threads}) would let it use more")
                if a == "vulkan" and shared > vk_max:
                    entry["portable_note"] = (f"{shared} B of shared memory exceeds vulkan-max-shared = {vk_max} B "
                                              f"(lavapipe's maxComputeSharedMemorySize)")
                if t.vendor == "nvidia" and st.bytes > t.shared_static_max and a != "vulkan":
                    entry["static_note"] = (f"{st.bytes} B of static __shared__ is over the {t.shared_static_max} B "
                                            f"static limit: nvcc rejects it (use dynamic shared memory and "
                                            f"cudaFuncSetAttribute)")
                k["targets"][a] = entry
            kernels.append(k)
    assumptions = []
    errors = _model_errors(model)
    if any(k["block"].get("assumed") for k in kernels):
        assumptions.append(f"kernels without a known block shape are computed for {ASSUMED_THREADS} threads "
                           f"(or their __launch_bounds__); give [tool.cuport.launch] or `// cuport: launch block=...`")
    srcs = {e["registers"]["source"] for k in kernels for e in k["targets"].values()}
    if "default" in srcs:
        assumptions.append(f"registers marked 'default' are an assumed {DEFAULT_REGISTERS} per thread "
                           f"(no compiler output; use --registers N or install nvcc / hipcc)")
    return {"file": src.path, "kernels": kernels, "errors": errors, "notes": notes, "assumptions": assumptions,
            "formula": FORMULA}


FORMULA = ("blocks = min(wave slots / waves per block, block slots, shared per unit / shared per block, register "
           "file / registers per block); occupancy = blocks x waves per block / wave slots")


def _model_errors(model) -> list[str]:
    """What makes the report incomplete, as CP000 lines: clang syntax errors (a kernel may have lost code) and
    bodies nested too deep to model (their kernels are left out). Either makes `report` exit 1."""
    from porter.frontend import clang_errors
    from porter.frontend.model import MAX_NESTING
    out, shown = [], 10
    syntax = [e for e in model.errors if clang_errors.is_syntax(e)]
    for e in syntax[:shown]:
        out.append(f"{model.source.path}:{e.line}:{e.column}: CP000 parse error: {e.message}")
    if len(syntax) > shown:
        out.append(f"{model.source.path}:1:1: CP000 {len(syntax)} parse errors in all ({shown} shown)")
    for owner, at in model.too_deep:
        row, col = model.source.position(at)
        name = getattr(owner, "spelling", "") or "code"
        out.append(f"{model.source.path}:{row}:{col}: CP000 nesting deeper than {MAX_NESTING} levels: `{name}` "
                   f"is not analysed and not reported")
    return out


def _registers(name: str, t: Target, compiled: dict, given: int | None) -> Registers:
    if given is not None:
        return Registers(given, "given")
    arch = t.proxy or t.name
    r = compiled.get(arch, {}).get(name)
    if r is None:
        return Registers(DEFAULT_REGISTERS, "default")
    if t.proxy:
        return Registers(r.count, f"nvcc {arch}, proxy", spills=r.spills)
    return r


def render_table(rep: dict) -> str:
    lines = []
    for k in rep["kernels"]:
        b = k["block"]
        dims = list(b["dims"] or [])
        while len(dims) > 1 and dims[-1] == 1:
            dims.pop()
        shape = "(" + ", ".join(str(x) for x in dims) + ")" if dims else "unknown"
        origin = b["description"]
        assumed = f" (computed for {b['threads']} threads)" if b.get("assumed") else ""
        sh = k["shared"]
        arrays = ", ".join(f"{a['name']} {a['bytes']} B" for a in sh["arrays"] if a["bytes"] is not None)
        lines.append(f"{k['kernel']}  ({k['file']}:{k['line']})")
        lines.append(f"  block {shape} = {b['threads']} threads: {origin}{assumed}")
        dyn = f", {sh['dynamic']} B dynamic" if sh["dynamic"] else ""
        lines.append(f"  shared memory: {sh['static']} B static{f' ({arrays})' if arrays else ''}{dyn}")
        head = f"  {'target':<9}{'registers':<34}{'per block':<11}{'blocks':>7}  {'occupancy':<22}limited by"
        lines.append(head)
        for a, e in k["targets"].items():
            r = e["registers"]
            unit = "warps" if TARGETS[a].vendor == "nvidia" else "waves"
            reg = f"{r['count']} {TARGETS[a].reg_name if TARGETS[a].vendor == 'amd' else 'regs'} ({r['source']}"
            reg += f", {r['spills']} B spilled" if r.get("spills") and TARGETS[a].vendor == "nvidia" else \
                (f", {r['spills']} spilled" if r.get("spills") else "")
            reg += ")"
            occ = f"{e['waves']}/{e['max_waves']} {unit} {e['occupancy']:.0f}%"
            per_unit = f"{e['blocks']}/{e['unit']}"
            names = [label(TARGETS[a], x) for x in e["limited_by"]]
            lim = ", ".join(names) if e["fits"] else "does not fit: " + ", ".join(names)
            lines.append(f"  {a:<9}{reg:<34}{str(e['waves_per_block']) + ' ' + unit:<11}{per_unit:>7}  {occ:<22}{lim}")
        for a, e in k["targets"].items():
            lines.append(f"  {a}: {TARGETS[a].device}: blocks per {e['unit']} = min("
                         + ", ".join(f"{label(TARGETS[a], n)} {v}" for n, v in e["limits"].items())
                         + f") = {e['blocks']}, limited by {', '.join(label(TARGETS[a], x) for x in e['limited_by'])}")
            for w in e["explanation"]:
                lines.append(f"      {w}")
            for note in ("static_note", "register_note", "portable_note"):
                if note in e:
                    lines.append(f"      note: {e[note]}")
        lines.append("")
    if not rep["kernels"]:
        lines.append(f"{rep['file']}: no kernels")
    for n in rep["notes"]:
        lines.append(f"note: {n}")
    for n in rep["assumptions"]:
        lines.append(f"assumed: {n}")
    lines.append(f"formula: {rep['formula']} (docs/occupancy.md)")
    return "\n".join(lines) + "\n"
