"""CUDA -> HIP by edits on the parsed source.

1. Portability first: the linter's safe fixes of the warp-size families (CP1xx, CP2xx, CP3xx) are applied to
   the CUDA text, re-parsing after each round (`portability_fixes=False` skips this).
2. One pass over the file's identifier tokens (never comments or string literals) looks every name up in the
   mapping tables (porter.translate.hip_tables); `#include` lines go through the header table.
3. Handlers (porter.translate.hip_handlers) rewrite the arguments a rename cannot: HIP_SYMBOL, casts to
   const void*, hipHostMalloc flags, 64-bit lane masks, and launches when `launch_syntax="hip"`.
4. What needs a human gets a `// cuport: CPxxx ...` comment on its line and a diagnostic; unsupported APIs are
   diagnostics and counted as unconverted.
5. The HIP include (where hipify-clang puts it) and the small helpers the output calls are rendered from
   templates/hip/*.j2.
6. Whole programs: a CUDA library header names the ROCm library the output needs (a warning when its header
   is not installed, so a failing compile is explained); cuda-samples helper headers that are not in the
   project, inline PTX (CP901), wmma (CP902) and device-side launches (CP905) are reported; `__CUDA_ARCH__`
   device/host tests in function bodies become `__HIP_DEVICE_COMPILE__`; cudaDeviceProp fields HIP spells
   differently are renamed (those only HIP >= 6.0 has are reported); helper_math.h-style free compound
   assignments on vector types (ambiguous with HIP's own) are compiled out on AMD; math_constants.h gets a
   fallback for HIP versions without hip_math_constants.h.
Everything outside the edits is the input byte for byte."""
from __future__ import annotations

import bisect
import re
import importlib.util
import os
import time
from dataclasses import dataclass, field

from porter.diagnostics import Diagnostic
from porter.frontend.build import build_model
from porter.frontend.parse import ParseOptions
from porter.source import SourceFile, read_source
from porter.translate import hip_handlers as H
from porter.translate.api import TranslationResult
from porter.translate.stats import FileStats, changed_line_count

UNSUPPORTED = "CP907"          # unsupported-in-hip: a CUDA API with no HIP equivalent (left as is)
LAUNCH_KEPT = UNSUPPORTED        # a launch left in <<<...>>> form under --launch-syntax hip (a warning)
LIBRARY = UNSUPPORTED            # a ROCm library the translation needs (info; warning when it is not installed)
_NAMES = {UNSUPPORTED: "unsupported-in-hip"}
# floating-point overloads HIP declares that CUDA code often defines itself (CAS loops)
_HIP_FP_ATOMICS = frozenset({"atomicAdd", "atomicSub", "atomicMin", "atomicMax", "atomicExch"})
_COMPOUND_OPS = frozenset({"+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "<<=", ">>="})
_VECTOR_TYPES = frozenset(f"{b}{n}" for b in ("char", "uchar", "short", "ushort", "int", "uint", "long", "ulong",
                                                "longlong", "ulonglong", "float", "double") for n in (1, 2, 3, 4))
MATH_CONSTANTS = "hip/hip_math_constants.h"
# value types under --roc: the type of the roc library the file's calls take (rocSOLVER uses rocBLAS' types;
# HIPIFY writes rocblas_* for rocSPARSE too, which rocsparse_* calls do not accept). Without such a library header
# they stay HIP's, which device code and cuCaddf & co. (-> hipCaddf) work with.
_ROC_VALUE_TYPES = {                 # CUDA name: (rocBLAS/rocSOLVER, rocSPARSE)
    "cuComplex": ("rocblas_float_complex", "rocsparse_float_complex"),
    "cuFloatComplex": ("rocblas_float_complex", "rocsparse_float_complex"),
    "cuDoubleComplex": ("rocblas_double_complex", "rocsparse_double_complex"),
    "__half": ("rocblas_half", None),
    "__nv_bfloat16": ("rocblas_bfloat16", None),
}
# the values of CUDA's math_constants.h, under the HIP names the tables give them
MATH_CONSTANTS_FALLBACK = "".join(f"#define {k} {v}\n" for k, v in (
    ("HIP_INF_F", "__builtin_huge_valf()"), ("HIP_NAN_F", "__builtin_nanf(\"\")"),
    ("HIP_INF", "__builtin_huge_val()"), ("HIP_NAN", "__builtin_nan(\"\")"),
    ("HIP_MIN_DENORM_F", "1.40129846e-45f"), ("HIP_MAX_NORMAL_F", "3.40282347e+38f"),
    ("HIP_ZERO_F", "0.0f"), ("HIP_ONE_F", "1.0f"), ("HIP_SQRT_HALF_F", "0.707106781f"),
    ("HIP_SQRT_2_F", "1.414213562f"), ("HIP_PI_F", "3.141592654f"), ("HIP_PIO2_F", "1.570796327f"),
    ("HIP_2_OVER_PI_F", "0.636619772f"), ("HIP_L2E_F", "1.442695041f"), ("HIP_LN2_F", "0.693147181f"),
    ("HIP_PI", "3.1415926535897931e+0")))
# cuda-samples' Common/ helpers: programs include them with quotes but they belong to no project
CUDA_SAMPLES_HELPERS = frozenset({"helper_cuda.h", "helper_functions.h", "helper_math.h", "helper_string.h",
                                  "helper_timer.h", "helper_image.h", "helper_cuda_drvapi.h", "helper_gl.h",
                                  "helper_multiprocess.h", "exception.h", "nvrtc_helper.h", "cuda_drvapi_dynlink.h"})
# ROCm libraries by the directory of their headers: (name, link flag; "" for header-only libraries)
LIBRARIES = {
    "hipblas": ("hipBLAS", "-lhipblas"), "hipblaslt": ("hipBLASLt", "-lhipblaslt"),
    "hiprand": ("hipRAND", "-lhiprand"), "hipfft": ("hipFFT", "-lhipfft"),
    "hipsparse": ("hipSPARSE", "-lhipsparse"), "hipsolver": ("hipSOLVER", "-lhipsolver"),
    "hipcub": ("hipCUB", ""), "rocblas": ("rocBLAS", "-lrocblas"), "rocrand": ("rocRAND", "-lrocrand"),
    "rocsparse": ("rocSPARSE", "-lrocsparse"), "rocsolver": ("rocSOLVER", "-lrocsolver"),
    "rccl": ("RCCL", "-lrccl"), "roctracer": ("roctracer (roctx)", "-lroctx64"), "miopen": ("MIOpen", "-lMIOpen"),
    "hipDNN.h": ("hipDNN", "-lhipDNN"), "thrust": ("rocThrust", ""),
}
PORTABILITY_FAMILIES = ("CP1", "CP2", "CP3")
HIP_RUNTIME = "hip/hip_runtime.h"
# directives whose text is not code: nothing in them is renamed
_OPAQUE_DIRECTIVES = {"include", "include_next", "import", "error", "warning", "pragma", "line", "ident"}
# intrinsics that exist in HIP only from 6.2 on (fallbacks rendered from templates/hip/portability.hip.j2)
SYNC_HELPERS = ("__activemask", "__syncwarp", "__ballot_sync", "__any_sync", "__all_sync", "__shfl_sync",
                "__shfl_up_sync", "__shfl_down_sync", "__shfl_xor_sync", "__reduce_add_sync", "__reduce_min_sync",
                "__reduce_max_sync", "__reduce_and_sync", "__reduce_or_sync", "__reduce_xor_sync",
                "__match_any_sync", "__match_all_sync")
LANEMASK_TYPE = "cuport_lanemask_t"
# cudaDeviceProp fields spelled differently in hipDeviceProp_t (every HIP version has the new name)
DEVICE_PROP_RENAMES = {"sharedMemPerMultiprocessor": "maxSharedMemoryPerMultiProcessor"}
# cudaDeviceProp fields hipDeviceProp_t has only from HIP 6.0 on (the R0600 layout)
DEVICE_PROP_HIP6 = frozenset({
    "unifiedAddressing", "deviceOverlap", "asyncEngineCount", "regsPerMultiprocessor", "sharedMemPerBlockOptin",
    "persistingL2CacheMaxSize", "streamPrioritiesSupported", "globalL1CacheSupported", "localL1CacheSupported",
    "maxBlocksPerMultiProcessor", "uuid", "luid", "luidDeviceNodeMask", "surfaceAlignment", "multiGpuBoardGroupID",
    "hostNativeAtomicSupported", "singleToDoublePrecisionPerfRatio", "computePreemptionSupported",
    "canUseHostPointerForRegisteredMem", "accessPolicyMaxWindowSize", "reservedSharedMemPerBlock",
    "memoryPoolsSupported", "maxTexture1DMipmap", "maxTexture1DLayered", "maxTexture2DMipmap", "maxTexture2DLinear",
    "maxTexture2DGather", "maxTexture2DLayered", "maxTexture3DAlt", "maxTextureCubemap", "maxTextureCubemapLayered",
    "maxSurface1D", "maxSurface2D", "maxSurface3D", "maxSurface1DLayered", "maxSurface2DLayered",
    "maxSurfaceCubemap", "maxSurfaceCubemapLayered", "gpuDirectRDMASupported", "gpuDirectRDMAFlushWritesOptions",
    "gpuDirectRDMAWritesOrdering", "memoryPoolSupportedHandleTypes", "hostRegisterSupported",
    "sparseCudaArraySupported", "hostRegisterReadOnlySupported", "timelineSemaphoreInteropSupported",
    "clusterLaunch", "unifiedFunctionPointers",
    "ipcEventSupported", "deferredMappingCudaArraySupported"})
# the warp-size rules look at device code and launches; a file with neither skips them
_DEVICE_OR_LAUNCH = re.compile(rb"__global__|__device__|__shared__|<<<|cudaLaunch|__shfl|__ballot")


@dataclass
class HipOptions:
    launch_syntax: str = "cuda"          # cuda: keep <<<...>>>; hip: hipLaunchKernelGGL(...)
    portability_fixes: bool = True
    notes: bool = True                   # `// cuport: CPxxx` comments where a human must look
    roc: bool = False                    # library names of the roc* libraries instead of hip*
    miopen: bool = False                 # cuDNN -> MIOpen instead of hipDNN (HIPIFY's --miopen)
    cuda_version: str | None = None      # names removed in this CUDA are reported, not renamed
    hip_version: str | None = None       # names newer than this HIP are reported; its header layout
    parse_options: ParseOptions = field(default_factory=ParseOptions)
    settings: object = None


_portability_codes: set | None = None
# rules for what HIP cannot compile at all (inline PTX, nvcuda::wmma, device-side launches): always run, so a
# translation that will not compile says where and why
HARD_CODES = ("CP901", "CP902", "CP905")
_HARD_HINT = re.compile(rb"\basm\b|\bwmma\b|<<<")
_hard_codes: set | None = None


def hard_codes() -> set[str]:
    global _hard_codes
    if _hard_codes is None:
        from porter.lint.registry import RULES
        _hard_codes = {c for c in HARD_CODES if c in RULES
                       and importlib.util.find_spec(f"porter.lint.rules.{RULES[c].slug}") is not None}
    return _hard_codes


def portability_codes() -> set[str]:
    """Codes of the CP1xx/CP2xx/CP3xx rules that exist (rules land independently)."""
    global _portability_codes
    if _portability_codes is None:
        from porter.lint.registry import RULES
        _portability_codes = {c for c, r in RULES.items() if c.startswith(PORTABILITY_FAMILIES)
                              and importlib.util.find_spec(f"porter.lint.rules.{r.slug}") is not None}
    return _portability_codes


def translate(path: str, text: str | None = None, *, launch_syntax: str = "cuda", portability_fixes: bool = True,
              notes: bool = True, roc: bool = False, include_dirs=(), defines=(), extra_args=(),
              compile_commands: str | None = None, header_mode: str = "light",
              parse_options: ParseOptions | None = None, settings=None, miopen: bool = False,
              cuda_version: str | None = None, hip_version: str | None = None) -> TranslationResult:
    """Translate one CUDA file (its contents given as `text`, or read from `path`)."""
    t0 = time.perf_counter()
    if launch_syntax not in ("cuda", "hip"):
        raise ValueError(f"launch_syntax must be 'cuda' or 'hip', not {launch_syntax!r}")
    source = SourceFile(path, text) if text is not None else read_source(path)
    if parse_options is None:
        extra = settings is not None
        parse_options = ParseOptions(
            include_dirs=list(include_dirs) + (list(getattr(settings, "include_dirs", []) or []) if extra else []),
            defines=list(defines) + (list(getattr(settings, "defines", []) or []) if extra else []),
            extra_args=list(extra_args) + (list(getattr(settings, "extra_args", []) or []) if extra else []),
            compile_commands=compile_commands, header_mode=header_mode)
    popts = parse_options
    opts = HipOptions(launch_syntax, portability_fixes, notes and portability_fixes, roc, miopen, cuda_version,
                      hip_version, popts, settings)
    return _Translator(source, opts, t0).run()


# --- lint + fix on the CUDA text --------------------------------------------------------------------------------

def _model(source, opts):
    return build_model(source, opts.parse_options)


def _lint(model, enabled, settings):
    from porter.lint.checker import run_rules
    from porter.lint.suppress import Suppressions
    diags = run_rules(model, enabled, settings)
    for d in diags:
        model.source.locate(d)
    if any(d.code != "CP000" for d in diags):
        sup = Suppressions.parse(model.source.text)
        diags = [d for d in diags if not sup.is_suppressed(d.code, d.row)]
    diags.sort(key=Diagnostic.sort_key)
    return diags


def lint_and_fix(source: SourceFile, opts: HipOptions):
    """(model, diagnostics, fixed-counts) for the text after the safe portability fixes: the fix engine's loop
    (lint/fixer.py), keeping the last model so the translator does not parse again."""
    from porter.lint.checker import syntax_error_count
    from porter.lint.fixer import Round, fix_loop
    enabled = {"CP000"}
    if _DEVICE_OR_LAUNCH.search(source.data) or _HARD_HINT.search(source.data):
        enabled |= hard_codes()
    if opts.portability_fixes and _DEVICE_OR_LAUNCH.search(source.data):
        codes = portability_codes()
        if opts.settings is not None:
            codes = codes & opts.settings.enabled_codes(source.path)
        enabled |= codes

    def analyze(src):
        model = _model(src, opts)
        return Round(src, _lint(model, enabled, opts.settings), syntax_error_count(model), model)
    first = analyze(source)
    if not opts.portability_fixes:
        return first.model, first.diagnostics, {}
    out = fix_loop(source, analyze, first=first)
    return out.final.model, out.final.diagnostics, out.fixed


# --- the translator ---------------------------------------------------------------------------------------------

class _Translator(H.HandlerContext):
    def __init__(self, original: SourceFile, opts: HipOptions, t0: float):
        self.original = original
        self.opts = opts
        self.t0 = t0
        self.edits: list[tuple[int, int, str, int]] = []       # (start, end, text, seq)
        self.renames: dict[int, str] = {}                      # token index -> new spelling
        self.notes: list[tuple[str, int, str]] = []            # (code, offset, message)
        self.diagnostics: list[Diagnostic] = []
        self.helpers: set[str] = set()
        self.stats = FileStats(original.path)
        self._call_nodes = None
        self._prop_vars = None
        self._reported_missing: set[str] = set()
        self.libraries: list[dict] = []                        # ROCm libraries the output needs

    # HandlerContext
    def edit(self, start, end, text):
        self.edits.append((start, end, text, len(self.edits)))

    def rename(self, tok, text):
        self.renames[tok] = text

    def note(self, code, start, end, message):
        self.notes.append((code, start, _short(message)))
        self._diag(code, start, end, message, "warning")

    def need_helper(self, name):
        self.helpers.add(name)

    def call_node(self, call):
        if self._call_nodes is None:
            self._call_nodes = {}
            for n in self.model.calls(set(H.HANDLERS)):
                self._call_nodes.setdefault(n.start, n)
        n = self._call_nodes.get(self.tokens[call.name_tok].start)
        return n if n is not None and n.spelling == call.name else None

    def _diag(self, code, start, end, message, severity="error"):
        d = Diagnostic(code=code, message=message, filename=self.original.path, start=start, end=end,
                       severity=severity, name=_NAMES.get(code, ""))
        self.source.locate(d)
        self.diagnostics.append(d)

    # the passes
    def run(self) -> TranslationResult:
        from porter.translate import hip_tables
        self.maps = hip_tables.all_mappings(roc=self.opts.roc, miopen=self.opts.miopen,
                                            cuda_version=self.opts.cuda_version, hip_version=self.opts.hip_version)
        self.header_maps = hip_tables.headers(self.opts.hip_version, self.opts.miopen)
        self.model, lint_diags, fixed = lint_and_fix(self.original, self.opts)
        self.source = self.model.source
        self.tokens = self.model.tokens
        self.data = self.source.data
        self.stats.fixes.update(fixed)
        self.stats.parse_errors = sum(1 for d in lint_diags if d.code == "CP000")
        sizing_refused = self._wave64_sizing(lint_diags) if self.opts.portability_fixes else None

        self._directives()
        self._identifiers()
        self._string_literals()
        self._calls()
        self._vector_compound_operators()
        self._builtin_redefinitions()
        if self.opts.launch_syntax == "hip":
            self._launches()
        for tok, text in self.renames.items():
            t = self.tokens[tok]
            self.edit(t.start, t.end, text)
        self._prologue()
        if self.opts.notes:
            self._lint_notes(lint_diags)
        self._place_notes()
        text, applied = self._apply()

        st = self.stats
        st.total_bytes = len(self.original.data)
        st.total_lines = self.original.text.count("\n") + (0 if self.original.text.endswith("\n") else 1)
        st.replaced_bytes = sum(e - s for s, e, _, _ in applied)
        st.changed_lines = changed_line_count(self.original.text, text) if fixed else self._changed_lines(applied)
        st.seconds = time.perf_counter() - self.t0
        refused = self._refusal() or sizing_refused
        diags = [d for d in lint_diags] + self.diagnostics
        diags.sort(key=Diagnostic.sort_key)
        return TranslationResult(self.original.path, "hip", text=text, diagnostics=diags, stats=st,
                                 includes=self.includes,
                                 extra={"fixed": fixed, "fixed_text": self.source.text if fixed else None,
                                        "libraries": self.libraries, "refused": refused})

    def _refusal(self) -> str | None:
        """A syntax error in a kernel, in what a kernel uses, or where no declaration owns it: the file is not
        written (its device code lost statements in clang's AST, so fixes and checks may have missed them).
        Semantic errors do not refuse HIP: its output is the source text with token edits, and names from
        headers cuport does not have (cuRAND, cuBLAS...) are expected."""
        from porter.frontend import clang_errors as CE
        from porter.translate import integrity
        integ = integrity.analyze(self.model)
        if not any(CE.is_syntax(e) for e in integ.errors):
            return None
        file_errs = [e for e in integ.file_errors if CE.is_syntax(e)]
        reason = None
        for f in self.model.kernels:
            errs = file_errs or [e for e in integ.kernel_errors(self.model, f) if CE.is_syntax(e)]
            if not errs:
                continue
            e = errs[0]
            where = f"line {e.line}" if e.offset is not None else f"{e.file}:{e.line}"
            msg = (f"kernel `{f.name}` not translated: it uses code clang could not parse ({where}: {e.message}); "
                   "the file is not written")
            at = f.node.start
            self._diag("CP000", at, at, msg)
            reason = reason or msg
        if file_errs and reason is None:
            e = file_errs[0]
            reason = f"clang error outside any declaration (line {e.line}: {e.message}): the file is not written"
            self._diag("CP000", e.offset or 0, e.offset or 0, reason)
        return reason

    def _wave64_sizing(self, lint_diags) -> str | None:
        """Lane-indexed shared arrays of 32 slots become 64 (lanes 32..63 of a wave64); their CP104 findings,
        and those of per-warp arrays indexed by `/ warpSize` (fewer warps on wave64), become info. A lane array
        cuport cannot resize refuses the file (CP104)."""
        from porter.translate import warp_sizing
        plan = warp_sizing.hip_plan(self.model)
        for d in lint_diags:
            if d.code == "CP104" and d.row in plan.sized_rows:
                d.severity = "info"
                d.message = ("HIP output sized it for 64-lane wavefronts: " if plan.edits_at(d.row) else
                             "kept for HIP (a 64-lane wavefront has fewer warps, the slots suffice): ") + d.message
            elif d.code == "CP104" and (d.extra or {}).get("shape") == "lane-read" and d.extra.get("portable"):
                d.severity = "info"      # one 64-lane wave reads a slot per lane: 1024 threads are 16 warps
                d.message = "fine for HIP (a 64-lane wavefront has a lane for each of up to 16 warps): " + d.message
            elif d.code == "CP105" and (d.extra or {}).get("arg") == "shmem" and \
                    d.extra.get("role") == "a count of 32-thread warps":
                d.severity = "info"      # bytes per 32-lane warp: a 64-lane wavefront has fewer warps
                d.message = "fine for HIP (64-lane wavefronts are fewer warps than the bytes were sized for): " + \
                    d.message
        flagged = {d.row for d in lint_diags if d.code == "CP104"}
        for start, end, text, name in plan.edits:
            self.edit(start, end, text)
            if self.source.position(start)[0] not in flagged:
                self._diag("CP104", start, end, f"shared array `{name}` has one slot per lane: sized [{text}] "
                                                f"for 64-lane wavefronts", "info")
        for node, msg in plan.refused:
            self._diag("CP104", node.start, node.end, msg + "; the file is not written")
        return plan.refused[0][1] if plan.refused else None

    # -- directives: find them, map #include lines, remember where hipify-clang would insert its include
    def _directives(self):
        toks, data = self.tokens, self.data
        self.opaque: list[tuple[int, int]] = []       # token index ranges inside non-code directives
        self.includes: list[str] = []
        self.cuda_headers: set[str] = set()         # the CUDA headers (of the tables) the file includes
        self.hip_runtime_at: int | None = None       # offset of the #include that is (now) hip_runtime.h
        self.first_include: int | None = None
        self.guard_end: int | None = None
        seen_targets: set[str] = set()
        # clang's controlling macro (what hipify-clang inserts after): a first `#ifndef X` whose `#endif` ends the
        # file, only comments outside; `#pragma once` counts too, the earlier of the two wins
        conds: list[int | None] = []          # open conditionals; the guard candidate's #ifndef line end
        guard_at = pragma_at = None
        code_before = False
        n = len(toks)
        i = 0
        while i < n:
            t = toks[i]
            if t.kind != "PUNCTUATION" or t.spelling != "#" or not self._at_line_start(t.start):
                if t.kind != "COMMENT":
                    code_before = True
                    if guard_at is not None and not conds:
                        guard_at = None           # code after the guard's #endif: no controlling macro
                i += 1
                continue
            end = self._directive_end(t.start)
            j = i + 1
            while j < n and toks[j].start < end:
                j += 1
            name = toks[i + 1].spelling if i + 1 < j else ""
            if guard_at is not None and not conds:
                guard_at = None                   # a directive after the guard's #endif
            if name in _OPAQUE_DIRECTIVES:
                self.opaque.append((i, j))
            if name in ("include", "include_next", "import"):
                self._include(t.start, end, seen_targets)
            elif name == "pragma" and j > i + 2 and toks[i + 2].spelling == "once":
                pragma_at = self._line_end(t.start) if pragma_at is None else pragma_at
            elif name in ("if", "ifdef", "ifndef"):
                first = name == "ifndef" and not code_before and guard_at is None and not conds and j > i + 2
                conds.append(self._line_end(t.start) if first else None)
            elif name == "endif" and conds:
                closed = conds.pop()
                if closed is not None:
                    guard_at = closed
            if name not in ("pragma",):
                code_before = True
            i = j
        if conds:
            guard_at = None                     # unbalanced conditionals: clang would not see a guard either
        cands = [o for o in (guard_at, pragma_at) if o is not None]
        self.guard_end = min(cands) if cands else None

    def _at_line_start(self, off):
        k = off - 1
        data = self.data
        while k >= 0 and data[k] in b" \t":
            k -= 1
        return k < 0 or data[k] in b"\n\r"

    def _line_end(self, off):
        e = self.data.find(b"\n", off)
        if e < 0:
            return len(self.data)
        return e - 1 if e > 0 and self.data[e - 1:e] == b"\r" else e

    def _directive_end(self, off):
        data = self.data
        while True:
            e = data.find(b"\n", off)
            if e < 0:
                return len(data)
            k = e - 1
            if k >= 0 and data[k:k + 1] == b"\r":
                k -= 1
            if k >= 0 and data[k:k + 1] == b"\\":
                off = e + 1
                continue
            return e

    def _include(self, start, end, seen_targets):
        line = self.data[start:end].decode("utf-8", "replace")
        m = re.match(r'#\s*(?:include|include_next|import)\s*([<"])([^>"\n]+)([>"])', line)
        if not m:
            return
        if self.first_include is None:
            self.first_include = start
        name = m.group(2).strip()
        span_end = start + len(line[:m.end()].encode("utf-8"))
        if name not in self.header_maps:
            found = self._resolve_project_header(name, quoted=m.group(1) == '"')
            if not found and os.path.basename(name) in CUDA_SAMPLES_HELPERS:
                self._diag(UNSUPPORTED, start, span_end,
                           f"`{name}` is a CUDA samples helper header (cuda-samples/Common), not found in the "
                           f"project: copy it next to the sources (its CUDA calls are then translated with "
                           f"--include-headers) or replace its helpers", "warning")
                self.notes.append((UNSUPPORTED, start, f"`{name}` (CUDA samples helper) not found"))
            elif not found and name.split("/", 1)[0] == "thrust":
                self._library_note(name, name, start, span_end)
        if name == HIP_RUNTIME:
            if self.hip_runtime_at is None:
                self.hip_runtime_at = start
            seen_targets.add(name)
            return
        mp = self.header_maps.get(name)
        if mp is None:
            return
        self.cuda_headers.add(os.path.basename(name))
        area = mp.area
        if mp.unsupported:
            self.stats.add(name, area, False)
            self._diag(UNSUPPORTED, start, span_end, f"`{name}` has no HIP equivalent; the include is kept")
            self.notes.append((UNSUPPORTED, start, f"`{name}` has no HIP equivalent"))
            return
        target = mp.target(self.opts.roc)
        self.stats.add(name, area, True)
        if not target or target in seen_targets:
            # no counterpart needed, or a second CUDA main header: hipify-clang deletes the directive
            self.edit(start, span_end, "")
            return
        seen_targets.add(target)
        self._library_note(name, target, start, span_end)
        if target == HIP_RUNTIME and self.hip_runtime_at is None:
            self.hip_runtime_at = start
        # only the header name changes (hipify-clang): `#include<x>` / `#  include "x"` keep their spelling
        name_start = start + len(line[:m.start(1)].encode("utf-8"))
        self.edit(name_start, span_end, f"{m.group(1)}{target}{m.group(3)}")
        if target == MATH_CONSTANTS and self._at_line_start(start) and not self.data[span_end:end].strip():
            # HIP before 6.1 has no hip_math_constants.h: the constants the tables map to are defined here then
            self.edit(start, start, f"#if !defined(__has_include) || __has_include(<{target}>)\n")
            self.edit(span_end, span_end, "\n#else\n" + MATH_CONSTANTS_FALLBACK + "#endif")

    def _library_note(self, name, target, start, end):
        """A CUDA library header becomes a ROCm library's header: say which library the program now needs and,
        when that library's header is not installed where hipcc looks, that compiling will fail for that reason
        (rather than leaving an unexplained `file not found`)."""
        lib = library_of(target)
        if lib is None:
            if target.startswith("hip/") and target != MATH_CONSTANTS and find_system_header(HIP_RUNTIME, self.opts.parse_options.include_dirs) \
                    and not find_system_header(target, self.opts.parse_options.include_dirs):
                self._diag(LIBRARY, start, end, f"`{name}` -> `{target}`: this HIP installation has no `{target}` "
                           f"(it comes with a newer ROCm); the program will not compile against it", "warning")
            return
        title, link = lib
        found = find_system_header(target, self.opts.parse_options.include_dirs)
        self.libraries.append({"library": title, "header": target, "link": link, "installed": bool(found)})
        how = f"link {link}" if link else "header-only"
        what = f"`{name}` -> `{target}`" if name != target else f"`{name}`"
        if found:
            msg = f"{what}: the program needs {title} ({how})"
            self._diag(LIBRARY, start, end, msg, "info")
        else:
            msg = (f"{what}: the program needs {title} ({how}), whose header `{target}` is not "
                   f"installed (searched {', '.join(system_include_dirs(self.opts.parse_options.include_dirs))}); "
                   f"it will not compile until {title} is installed")
            self._diag(LIBRARY, start, end, msg, "warning")

    def _resolve_project_header(self, name, quoted):
        here = os.path.dirname(os.path.abspath(self.original.path))
        for d in ([here] if quoted else []) + list(self.opts.parse_options.include_dirs):
            p = os.path.normpath(os.path.join(d, name))
            if os.path.isfile(p):
                self.includes.append(p)
                return True
        return False

    # -- identifiers
    def _namespace_aliases(self):
        """`namespace cg = cooperative_groups;` -> {"cg": "cooperative_groups"}."""
        toks = self.tokens
        aliases = {}
        for i, t in enumerate(toks):
            if t.spelling == "namespace" and i + 3 < len(toks) and toks[i + 2].spelling == "=":
                j, parts = i + 3, []
                while j < len(toks) and toks[j].kind == "IDENTIFIER":
                    parts.append(toks[j].spelling)
                    if j + 1 < len(toks) and toks[j + 1].spelling == "::":
                        j += 2
                    else:
                        break
                if parts:
                    aliases[toks[i + 1].spelling] = "::".join(parts)
        return aliases

    def _qualifier(self, i, aliases):
        """`a::b::` in front of token i, aliases resolved; None when there is none; "" for a leading `::`."""
        toks = self.tokens
        parts = []
        k = i
        while k >= 1 and toks[k - 1].spelling == "::":
            if k >= 2 and toks[k - 2].kind == "IDENTIFIER":
                parts.append(toks[k - 2].spelling)
                k -= 2
            else:
                break
        if not parts:
            return "" if i >= 1 and toks[i - 1].spelling == "::" else None
        parts.reverse()
        parts[0] = aliases.get(parts[0], parts[0])
        return "::".join(parts)

    def _identifiers(self):
        toks = self.tokens
        opaque = self.opaque
        oi = 0
        maps = self.maps
        roc = self.opts.roc
        aliases = self._namespace_aliases() if any(t.spelling == "namespace" for t in toks) else {}
        self.hip_names: set[str] = set()
        for i, t in enumerate(toks):
            if t.kind != "IDENTIFIER":
                continue
            while oi < len(opaque) and opaque[oi][1] <= i:
                oi += 1
            if oi < len(opaque) and opaque[oi][0] <= i:
                continue
            name = t.spelling
            if name == LANEMASK_TYPE:
                self.helpers.add(LANEMASK_TYPE)
            prev = toks[i - 1].spelling if i > 0 else ""
            if prev in (".", "->"):
                if (name in DEVICE_PROP_RENAMES or name in DEVICE_PROP_HIP6) and self._device_prop_base(i - 1):
                    self._device_prop_member(i, name)
                continue                    # a member that happens to share a CUDA name
            if name == "__CUDA_ARCH__":
                self._cuda_arch(i)
                continue
            key = name
            if prev == "::":
                q = self._qualifier(i, aliases)
                if q:
                    key = f"{q}::{name}"
                    if key not in maps:
                        continue            # a member of some other namespace or class
            m = maps.get(key)
            if m is None:
                if name in SYNC_HELPERS:
                    self.hip_names.add(name)
                continue
            target = m.target(roc)
            if roc and key in _ROC_VALUE_TYPES:
                target = self._roc_value_type(key) or m.hip
            elif key == "cudaStream_t" and self.opts.miopen and any(h.startswith("cudnn") for h in self.cuda_headers):
                target = "miopenAcceleratorQueue_t"      # MIOpen's name of hipStream_t (hipify-clang --miopen)
            if m.unsupported or not target:
                self.stats.add(key, m.area, False)
                msg = f"`{key}` is not supported by {'ROCm libraries' if roc else 'HIP'}; left unchanged"
                if m.note:
                    msg += f" ({m.note})"
                self._diag(UNSUPPORTED, t.start, t.end, msg)
                self.notes.append((UNSUPPORTED, t.start, f"`{key}` has no HIP equivalent"))
                continue
            self.stats.add(key, m.area, True)
            if target != name and m.area in _HIP_HEADER_AREAS and "::" not in target:
                self._check_installed(t, key, target)
            target = target.rsplit("::", 1)[-1] if key != name else target
            self.hip_names.add(target)
            if target != name:
                self.renames[i] = target

    _CUDA_WORD = re.compile(r"(?<![\w$])(?:cu|CU)\w+")

    def _string_literals(self):
        """CUDA names inside ordinary string literals (messages, NVRTC sources) are renamed as hipify-clang does:
        a whole word that is a supported table name; #include names and other directives are not literals here."""
        opaque = {k for a, b in self.opaque for k in range(a, b)} if self.opaque else set()
        for i, t in enumerate(self.tokens):
            if t.kind != "LITERAL" or not t.spelling.startswith('"') or i in opaque or "cu" not in t.spelling.lower():
                continue
            for m in self._CUDA_WORD.finditer(t.spelling):
                mp = self.maps.get(m.group(0))
                if mp is None or mp.unsupported:
                    continue
                target = mp.target(self.opts.roc)
                if not target or target == m.group(0) or "::" in target:
                    continue
                s = t.start + len(t.spelling[:m.start()].encode("utf-8"))
                self.edit(s, s + len(m.group(0).encode("utf-8")), target)
                self.stats.add(m.group(0), mp.area, True)

    def _roc_value_type(self, key):
        blas, sparse = _ROC_VALUE_TYPES[key]
        if any(h.startswith(("cublas", "cusolver")) for h in self.cuda_headers):
            return blas
        if any(h.startswith("cusparse") for h in self.cuda_headers):
            return sparse
        return None

    def _check_installed(self, tok, key, target):
        """A HIP name the installed HIP headers do not declare (an API newer than this ROCm): say so, once
        per name and file, so that the compile error it causes is explained."""
        known = installed_hip_names(tuple(self.opts.parse_options.include_dirs))
        if known is None or target in known or target in self._reported_missing:
            return
        self._reported_missing.add(target)
        msg = (f"`{key}` -> `{target}`: this HIP installation ({known.where}) does not declare `{target}` "
               f"(it comes with a newer ROCm); the program will not compile against it")
        self._diag(UNSUPPORTED, tok.start, tok.end, msg, "warning")
        if self.opts.notes:
            self.notes.append((UNSUPPORTED, tok.start, f"`{target}` needs a newer ROCm than the installed one"))

    def _cuda_arch(self, i):
        """HIP-Clang defines no __CUDA_ARCH__. Where it only tells device from host compilation (`#ifdef`,
        `#ifndef`, `defined(...)`) inside a function body it becomes __HIP_DEVICE_COMPILE__, which means exactly
        that (file-scope guards stay: clang's device pass must see the host declarations); a comparison with
        a compute capability has no AMD counterpart (the macro reads as 0 there, so `__CUDA_ARCH__ < 600` holds
        on every AMD device, in device code too): a note asks a human to look."""
        toks = self.tokens
        prev = toks[i - 1].spelling if i > 0 else ""
        prev2 = toks[i - 2].spelling if i > 1 else ""
        nxt = toks[i + 1].spelling if i + 1 < len(toks) else ""
        t = toks[i]
        if prev in ("ifdef", "ifndef", "defined") or (prev == "(" and prev2 == "defined" and nxt == ")"):
            if not self._in_function_body(t.start):
                # at file scope: clang parses host code in the device pass too, so the declarations must be
                # the same in both passes; HIP's undefined __CUDA_ARCH__ keeps the host ones everywhere
                return
            self.renames[i] = "__HIP_DEVICE_COMPILE__"
            self.stats.add("__CUDA_ARCH__", "device", True)
            return
        msg = ("`__CUDA_ARCH__` compared with a compute capability: HIP defines no __CUDA_ARCH__ (it reads as 0, "
               "so `__CUDA_ARCH__ < N` is true on AMD, in device code too); guard on __HIP_DEVICE_COMPILE__ or "
               "a gfx feature macro instead")
        self._diag(UNSUPPORTED, t.start, t.end, msg, "warning")
        self.notes.append((UNSUPPORTED, t.start, "HIP defines no __CUDA_ARCH__ (reads as 0 here)"))

    def _in_function_body(self, off):
        for f in self.model.functions:
            b = f.body
            if b is not None and b.start < off < b.end:
                return True
        return False

    def _device_prop_base(self, dot):
        """Is the object before the `.`/`->` at token `dot` a cudaDeviceProp (declared so in this file)?"""
        toks = self.tokens
        k = dot - 1
        if k >= 0 and toks[k].spelling == "]":          # props[i].field
            depth = 0
            while k >= 0:
                if toks[k].spelling == "]":
                    depth += 1
                elif toks[k].spelling == "[":
                    depth -= 1
                    if depth == 0:
                        break
                k -= 1
            k -= 1
        if k < 0 or toks[k].kind != "IDENTIFIER":
            return False
        base = toks[k].spelling
        if self._prop_vars is None:
            self._prop_vars = set(re.findall(rb"\b(?:cudaDeviceProp|hipDeviceProp_t)\s*[&*]?\s*(?:const\s+)?(\w+)",
                                             self.data))
        return base.encode() in self._prop_vars

    def _device_prop_member(self, i, name):
        t = self.tokens[i]
        if name in DEVICE_PROP_RENAMES:
            self.renames[i] = DEVICE_PROP_RENAMES[name]
            self.stats.add(f"cudaDeviceProp::{name}", "types", True)
            return
        msg = (f"`cudaDeviceProp::{name}` exists in hipDeviceProp_t only from HIP 6.0 on; older ROCm "
               f"(e.g. 5.x) has no such field")
        self._diag(UNSUPPORTED, t.start, t.end, msg, "warning")
        self.notes.append((UNSUPPORTED, t.start, f"`cudaDeviceProp::{name}` needs HIP >= 6.0"))

    def _vector_compound_operators(self):
        """`operator+=(float3 &a, float3 b)` (helper_math.h style): HIP's vector types already have member
        compound assignments, so a free one is ambiguous at every use. Such definitions are compiled out on AMD
        (HIP's operators do the same, element-wise)."""
        toks = self.tokens
        n = len(toks)
        for i, t in enumerate(toks):
            if t.spelling != "operator" or i + 2 >= n:
                continue
            op = toks[i + 1].spelling
            if op not in _COMPOUND_OPS or toks[i + 2].spelling != "(":
                continue
            r = H.split_args(toks, i + 2)
            if r is None or len(r[1]) != 2:
                continue
            rparen, args = r
            types = []
            for a, b in args:
                names = [toks[k].spelling for k in range(a, b + 1) if toks[k].spelling in _VECTOR_TYPES]
                types.append((names[0] if names else None, any(toks[k].spelling == "&" for k in range(a, b + 1))))
            (t0, ref0), (t1, _) = types
            if t0 is None or t0 != t1 or not ref0:
                continue
            self._compile_out(i, rparen, f"HIP's {t0} has operator{op} already (this one would be ambiguous)",
                              f"operator{op}({t0}&, {t0})")

    def _builtin_redefinitions(self):
        """`__device__ double atomicAdd(double *address, double val) {...}` (the CAS loop older CUDA code defines
        for GPUs before sm_60), `__device__ float atomicMax(float *address, float val) {...}` (CUDA has no
        floating-point atomicMin/Max): HIP declares these overloads itself, so such a definition is a
        redefinition there and is compiled out on AMD (HIP's does the same operation)."""
        toks = self.tokens
        for i, t in enumerate(toks):
            if t.spelling not in _HIP_FP_ATOMICS or t.kind != "IDENTIFIER" or i + 1 >= len(toks) \
                    or toks[i + 1].spelling != "(" or (i > 0 and toks[i - 1].spelling in (".", "->", "::")):
                continue
            r = H.split_args(toks, i + 1)
            if r is None or len(r[1]) != 2:
                continue
            rparen, args = r
            a0 = [toks[k].spelling for k in range(args[0][0], args[0][1] + 1)]
            a1 = [toks[k].spelling for k in range(args[1][0], args[1][1] + 1)]
            fp = next((x for x in ("float", "double") if x in a0), None)
            if fp is None or "*" not in a0 or fp not in a1 or "*" in a1 or a0.count("*") != 1:
                continue
            sig = f"{t.spelling}({fp}*, {fp})"
            self._compile_out(i, rparen, f"HIP defines {sig} itself (a second definition is a redefinition)", sig)

    def _compile_out(self, i, rparen, reason, what):
        """Wrap the function definition whose name is token i (parameters end at `rparen`) in
        `#if !defined(__HIP_PLATFORM_AMD__)` ... `#endif`."""
        toks = self.tokens
        n = len(toks)
        k = rparen + 1
        while k < n and toks[k].spelling not in ("{", ";"):
            k += 1
        if k >= n or toks[k].spelling != "{":
            return
        depth, e = 0, k
        while e < n:
            if toks[e].spelling == "{":
                depth += 1
            elif toks[e].spelling == "}":
                depth -= 1
                if depth == 0:
                    break
            e += 1
        if e >= n:
            return
        # the declaration's first token: after the previous `;`, `{`, `}` or directive; comments inside or
        # before it go with it (`__device__ /* c */ double f(...)` is not split)
        b = i
        while b > 0 and toks[b - 1].spelling not in (";", "{", "}") and not self._in_directive(b - 1) \
                and not (toks[b - 1].kind == "PUNCTUATION" and toks[b - 1].spelling == "#"):
            b -= 1
        if any(s <= toks[b].start < e2 for s, e2, _, _ in self.edits if e2 > s and s < toks[b].start):
            return
        if any(toks[k].kind == "PUNCTUATION" and toks[k].spelling == "#" for k in range(b, e)):
            return                  # a directive inside: leave it to a human
        start, end = toks[b].start, toks[e].end
        pre = "" if self._at_line_start(start) else "\n"
        self.edit(start, start, f"{pre}#if !defined(__HIP_PLATFORM_AMD__)  // cuport: {reason}\n")
        after = self.data[end:self._line_end(end)].strip()
        self.edit(end, end, "\n#endif" + ("\n" if after else ""))
        self.stats.add(what, "device", True)

    def _in_directive(self, k):
        for a, b in self.opaque:
            if a <= k < b:
                return True
        t = self.tokens[k]
        line_start = self.data.rfind(b"\n", 0, t.start) + 1
        return self.data[line_start:t.start].lstrip().startswith(b"#")

    # -- calls with handlers
    def _calls(self):
        toks = self.tokens
        handlers = H.HANDLERS
        opaque_toks = {k for a, b in self.opaque for k in range(a, b)} if self.opaque else set()
        for i, t in enumerate(toks):
            if t.kind != "IDENTIFIER" or t.spelling not in handlers or i in opaque_toks:
                continue
            if i > 0 and toks[i - 1].spelling in (".", "->"):
                continue
            k = i + 1
            while k < len(toks) and toks[k].kind == "COMMENT":
                k += 1
            if k >= len(toks) or toks[k].spelling != "(":
                if t.spelling in SYNC_HELPERS:
                    self.helpers.add(t.spelling)
                continue
            r = H.split_args(toks, k)
            if r is None:
                continue
            handlers[t.spelling](self, H.Call(t.spelling, i, k, r[0], r[1]))

    # -- launches
    def _launches(self):
        toks = self.tokens
        text_of = self.source.slice
        templates = {f.name for f in self.model.functions if f.is_template and f.is_kernel}
        for ln in H.find_launches(toks):
            name = toks[ln.callee[1]].spelling
            # k<<<...>>>(x) with deduced template arguments: HIP-Clang's hipLaunchKernelGGL is a macro that
            # expands to the same chevron launch, so they are still deduced (hipcc 5.2 checked)
            edits = H.hip_launch_edits(toks, text_of, ln, template_kernel=name in templates
                                       or self._template_id_macro(ln, name))
            if edits is None:
                s = toks[ln.lt].start
                self._diag(LAUNCH_KEPT, s, toks[ln.gt].end, "launch configuration not understood; kept as "
                           "<<<...>>>", "warning")
                continue
            for s, e, txt in edits:
                self.edit(s, e, txt)
            self.stats.add("<<<...>>>", "launch", True)

    def _template_id_macro(self, ln, name) -> bool:
        """`K<<<...>>>` where K is an object-like macro for `k<float, 4>`: HIP_KERNEL_NAME(K) keeps its commas
        out of hipLaunchKernelGGL's argument list."""
        if ln.callee[0] != ln.callee[1] or name not in self.model.macro_defs:
            return False
        s, e = self.model.macro_defs[name]
        # libclang's span of a definition starts at the macro's name
        body = re.match(rf"\s*(?:#\s*define\s+)?{re.escape(name)}(?![\w(])(.*)", self.source.slice(s, e), re.S)
        return bool(body and "<" in body.group(1))

    # -- the HIP include and the helpers
    def _prologue(self):
        from porter.translate.render import render
        present = {t.spelling for t in self.tokens if t.kind == "IDENTIFIER" and t.spelling.startswith(
            ("cuport_", "CUPORT_", "HIP_ENABLE_WARP_SYNC_BUILTINS"))}        # translated before: keep it once
        sync = [h for h in SYNC_HELPERS if (h in self.helpers or h in self.hip_names)
                and "cuport_" + h[2:] not in present]
        lanemask = LANEMASK_TYPE in self.helpers and not self._declares(LANEMASK_TYPE) \
            and "CUPORT_LANEMASK_T" not in present
        builtins = bool(sync) and "HIP_ENABLE_WARP_SYNC_BUILTINS" not in present
        helpers = render("hip/portability.hip.j2", lanemask_t=lanemask, sync_fallbacks=sync) \
            if (sync or lanemask) else ""
        if self.hip_runtime_at is not None:
            if builtins:
                pre = render("hip/prologue.hip.j2", warp_sync_builtins=True, include_runtime=False)
                self.edit(self.hip_runtime_at, self.hip_runtime_at, pre)
            if helpers:
                at = self._line_end(self.hip_runtime_at)
                self.edit(at, at, "\n" + helpers.rstrip("\n"))
            return
        # nvcc includes cuda_runtime.h into every .cu file by itself: such a file needs the HIP runtime even when
        # it names nothing from it (hipify-clang inserts it there too)
        if not self._uses_cuda() and not self.original.path.endswith((".cu", ".cuh")):
            return
        text = render("hip/prologue.hip.j2", warp_sync_builtins=builtins, include_runtime=True) + helpers
        # hipify-clang: after `#pragma once` / the include guard, else before the first #include, else at the top
        if self.guard_end is not None:
            at = self.guard_end
        elif self.first_include is not None:
            at = self.first_include
        else:
            at = 3 if self.data.startswith(b"\xef\xbb\xbf") else 0      # a BOM stays at byte 0
        # first among the insertions at that offset: a `#if` guard placed there must not enclose the include
        self.edits.append((at, at, "\n" + text.rstrip("\n") + "\n", -1))
        self.stats.add('#include "hip/hip_runtime.h"', "include", True)

    def _declares(self, name):
        return re.search(rf"\btypedef\b[^;{{}}]*\b{name}\s*;|\busing\s+{name}\s*=", self.source.text) is not None

    def _uses_cuda(self):
        if self.stats.converted_refs or self.stats.unconverted_refs or self.model.launches:
            return True
        if any(f.is_device_code for f in self.model.functions):
            return True
        return any(t.kind == "IDENTIFIER" and t.spelling in ("__global__", "__device__", "__shared__",
                                                                "__constant__", "threadIdx", "blockIdx")
                   or t.spelling == "<<<" for t in self.tokens)

    # -- notes for what needs a human
    def _lint_notes(self, diags):
        for d in diags:
            if d.code.startswith(PORTABILITY_FAMILIES) or d.code in HARD_CODES:
                msg = _short(d.message)
                if d.fix is not None and d.fix.applicability.value == "unsafe":
                    msg += f" (unsafe fix: {_short(d.fix.message, 80)})"
                self.notes.append((d.code, d.start, msg))
                self.stats.notes[d.code] += 1

    def _place_notes(self):
        if not self.notes:
            return
        by_line: dict[int, list[tuple[str, str]]] = {}
        order = []
        for code, off, msg in self.notes:
            if code != UNSUPPORTED and not self.opts.notes:
                continue
            eol = self._line_end(off)
            items = by_line.setdefault(eol, [])
            if eol not in order:
                order.append(eol)
            line = self.data[self.data.rfind(b"\n", 0, eol) + 1:eol]
            if all(c != code for c, _ in items) and f"cuport: {code}".encode() not in line:
                items.append((code, msg))       # (a line translated before keeps its one note)
        spans = sorted((s, e) for s, e, _, _ in self.edits if e > s)
        starts = [s for s, _ in spans]
        tok_starts = [t.start for t in self.tokens]
        for eol in order:
            if not by_line[eol]:
                continue
            body = "; ".join(f"{c} {m}" for c, m in by_line[eol])
            line_start = self.data.rfind(b"\n", 0, eol) + 1
            if self._inside(spans, starts, eol) or self._inside_token(tok_starts, eol):
                if self._inside(spans, starts, line_start):
                    continue
                indent = self.data[line_start:eol]
                indent = indent[:len(indent) - len(indent.lstrip(b" \t"))].decode()
                self.edit(line_start, line_start, f"{indent}// cuport: {body}\n")
            elif eol > 0 and self.data[eol - 1:eol] == b"\\":
                self.edit(eol - 1, eol - 1, f"/* cuport: {body.replace('*/', '* /')} */ ")
            else:
                self.edit(eol, eol, f" // cuport: {body}")

    @staticmethod
    def _inside(spans, starts, off):
        k = bisect.bisect_left(starts, off) - 1
        while k >= 0:
            s, e = spans[k]
            if s < off < e:
                return True
            if e <= off and k < len(spans) - 1:
                break
            k -= 1
        return False

    def _inside_token(self, tok_starts, off):
        k = bisect.bisect_left(tok_starts, off) - 1
        if k < 0:
            return False
        t = self.tokens[k]
        return t.start < off < t.end

    # -- output
    def _apply(self):
        edits = sorted(self.edits, key=lambda e: (e[0], e[1] > e[0], e[3]))
        out, pos, applied = [], 0, []
        data = self.data
        for s, e, txt, _ in edits:
            if s < pos:
                d = Diagnostic(code=UNSUPPORTED, message=f"internal: overlapping edit at byte {s} dropped",
                               filename=self.original.path, start=s, end=e, severity="warning")
                self.source.locate(d)
                self.diagnostics.append(d)
                continue
            out.append(data[pos:s])
            out.append(txt.encode("utf-8"))
            pos = e
            applied.append((s, e, txt, 0))
        out.append(data[pos:])
        return b"".join(out).decode("utf-8"), applied

    def _changed_lines(self, applied) -> int:
        starts = self.source.line_starts
        lines = set()
        for s, e, _, _ in applied:
            a = bisect.bisect_right(starts, s)
            b = bisect.bisect_right(starts, max(s, e - 1))
            lines.update(range(a, b + 1))
        return len(lines)


_HIP_HEADER_AREAS = frozenset({"runtime_api", "driver_api", "types", "device", "cooperative_groups", "nvrtc"})


class _Names(frozenset):
    where = ""


_installed_cache: dict = {}


def installed_hip_names(include_dirs=()):
    """Every identifier the installed HIP headers (hip/**, and clang's __clang_hip_* headers) spell; None when
    no HIP installation is found. Computed once per process."""
    if include_dirs in _installed_cache:
        return _installed_cache[include_dirs]
    import glob
    runtime = find_system_header(HIP_RUNTIME, include_dirs)
    result = None
    if runtime:
        hip_dir = os.path.dirname(runtime)
        files = glob.glob(os.path.join(hip_dir, "**", "*.h"), recursive=True) + \
            glob.glob(os.path.join(hip_dir, "**", "*.hpp"), recursive=True)
        for pat in ("/usr/lib/llvm-*/lib/clang/*/include/__clang_hip*.h", "/usr/lib/clang/*/include/__clang_hip*.h",
                    "/opt/rocm*/llvm/lib/clang/*/include/__clang_hip*.h"):
            files += glob.glob(pat)
        names: set[bytes] = set()
        ident = re.compile(rb"\b[A-Za-z_]\w*\b")
        for f in files:
            try:
                with open(f, "rb") as fh:
                    names.update(ident.findall(fh.read()))
            except OSError:
                pass
        result = _Names(n.decode("ascii", "replace") for n in names)
        result.where = hip_dir
    _installed_cache[include_dirs] = result
    return result


def library_of(header: str):
    """(library name, link flag) of a ROCm library header such as `hipblas/hipblas.h`; None for HIP's own."""
    head = header.split("/", 1)[0]
    return LIBRARIES.get(head)


def system_include_dirs(extra=()) -> list[str]:
    """Where hipcc finds ROCm library headers: -I directories, $ROCM_PATH/include, /opt/rocm/include, /usr/include,
    /usr/local/include (those that exist)."""
    dirs = list(extra)
    rocm = os.environ.get("ROCM_PATH") or os.environ.get("HIP_PATH")
    if rocm:
        dirs.append(os.path.join(rocm, "include"))
    dirs += ["/opt/rocm/include", "/usr/include", "/usr/local/include"]
    out = []
    for d in dirs:
        if d not in out and os.path.isdir(d):
            out.append(d)
    return out


def find_system_header(header: str, extra=()) -> str | None:
    for d in system_include_dirs(extra):
        p = os.path.join(d, header)
        if os.path.isfile(p):
            return p
    return None


def _short(msg: str, limit: int = 160) -> str:
    m = " ".join(msg.split())
    for sep in ("; ", ". "):
        k = m.find(sep)
        if 20 < k:
            m = m[:k]
            break
    return m if len(m) <= limit else m[:limit - 3].rsplit(" ", 1)[0].rstrip(",;:") + "..."
