"""CUDA -> HIP by edits on the parsed source.

1. Portability first: the linter's safe fixes of the warp-size families (CP1xx, CP2xx, CP3xx) are applied to
   the CUDA text, re-parsing after each round (`portability_fixes=False` skips this).
2. One pass over the file's identifier tokens (never comments or string literals) looks every name up in the
   mapping tables (porter.translate.hip.tables); `#include` lines go through the header table.
3. Handlers (porter.translate.hip.handlers) rewrite the arguments a rename cannot: HIP_SYMBOL, casts to
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
import time
from dataclasses import dataclass, field

from porter.diagnostics import Diagnostic
from porter.lint.registry import diagnostic
from porter.frontend.parse import ParseOptions
from porter.source import SourceFile, read_source
from porter.textdiff import changed_line_count
from porter.translate.api import TranslationResult
from porter.translate.hip import handlers as H
from porter.translate.hip.handlers import LAUNCH_KEPT, UNSUPPORTED
from porter.translate.hip.includes import HIP_HEADER_AREAS, MATH_CONSTANTS_FALLBACK_NAMES, IncludePass
from porter.translate.hip.rewrites import ROC_VALUE_TYPES, DEVICE_PROP_HIP6, DEVICE_PROP_RENAMES, RewritePass
from porter.translate.hip.macro_launches import MacroLaunchPass
from porter.translate.hip.stats import FileStats
from porter.translate.hip.tables import SCOPED_AREAS
from porter.translate.portability import HARD_CODES, PORTABILITY_FAMILIES, lint_and_fix

WARP_SIZE_MACRO = "CUPORT_WARP_SIZE"      # warpSize in device code, as a compile-time constant
# intrinsics that exist in HIP only from 6.2 on (fallbacks rendered from templates/hip/portability.hip.j2)
SYNC_HELPERS = ("__activemask", "__syncwarp", "__ballot_sync", "__any_sync", "__all_sync", "__shfl_sync",
                "__shfl_up_sync", "__shfl_down_sync", "__shfl_xor_sync", "__reduce_add_sync", "__reduce_min_sync",
                "__reduce_max_sync", "__reduce_and_sync", "__reduce_or_sync", "__reduce_xor_sync",
                "__match_any_sync", "__match_all_sync")
LANEMASK_TYPE = "cuport_lanemask_t"


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

# --- the translator ---------------------------------------------------------------------------------------------

class _Translator(IncludePass, RewritePass, MacroLaunchPass, H.HandlerContext):
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
        self._scopes: dict[str, bool] = {}
        self._cublas_handles: bool | None = None

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

    def translated(self, first_tok, last_tok):
        """The text of tokens first..last with the renames made so far."""
        toks = self.tokens
        out, pos = [], toks[first_tok].start
        for k in range(first_tok, last_tok + 1):
            if k in self.renames:
                out.append(self.source.slice(pos, toks[k].start))
                out.append(self.renames[k])
                pos = toks[k].end
        out.append(self.source.slice(pos, toks[last_tok].end))
        return "".join(out)

    def drop_renames(self, start, end):
        for k in [k for k in self.renames if start <= self.tokens[k].start < end]:
            del self.renames[k]

    def hip_version_code(self):
        from porter.translate.hip.tables import hip_version_code
        return hip_version_code(self.opts.hip_version)

    def call_node(self, call):
        if self._call_nodes is None:
            self._call_nodes = {}
            for n in self.model.calls(set(H.HANDLERS)):
                self._call_nodes.setdefault(n.start, n)
        n = self._call_nodes.get(self.tokens[call.name_tok].start)
        return n if n is not None and n.spelling == call.name else None

    def _diag(self, code, start, end, message, severity="error"):
        self.diagnostics.append(diagnostic(code, message, self.original.path, start, end, severity=severity,
                                           source=self.source))

    # the passes
    def run(self) -> TranslationResult:
        from porter.translate.hip import tables as hip_tables
        self.maps = hip_tables.all_mappings(roc=self.opts.roc, miopen=self.opts.miopen,
                                            cuda_version=self.opts.cuda_version, hip_version=self.opts.hip_version)
        self.header_maps = hip_tables.headers(self.opts.hip_version, self.opts.miopen)
        self.model, lint_diags, fixed, _ = lint_and_fix(self.original, self.opts)
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
        self._half2_members()
        self._builtin_redefinitions()
        if self.opts.portability_fixes:       # cuport's own rewrite: hipify-clang keeps warpSize
            self._warp_size_constant()
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
        if file_errs and reason is None and not self._has_device_code():
            # host code only: every edit is a token rename or an argument rewrite, which need no AST; the error
            # is reported, the file is written
            e = file_errs[0]
            self._diag("CP000", e.offset or 0, e.offset or 0, f"clang could not parse line {e.line} ({e.message}); "
                       "the file has no device code and its names were translated token by token", "warning")
            return None
        if file_errs and reason is None:
            e = file_errs[0]
            reason = f"clang error outside any declaration (line {e.line}: {e.message}): the file is not written"
            self._diag("CP000", e.offset or 0, e.offset or 0, reason)
        return reason

    def _has_device_code(self) -> bool:
        if self.model.kernels or any(f.is_device_code for f in self.model.functions):
            return True
        return any(t.spelling in ("__global__", "__device__", "__shared__", "__constant__", "<<<")
                   for t in self.tokens)

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
    # -- identifiers

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
            if m is not None and m.area == "cublas" and self._legacy_cublas(i, key):
                continue
            if m is None or (m.area in SCOPED_AREAS and not self._in_scope(m.area)):
                if name in SYNC_HELPERS:
                    self.hip_names.add(name)
                continue
            target = m.target(roc)
            if roc and key in ROC_VALUE_TYPES:
                target = self._roc_value_type(key) or m.hip
            elif key == "cudaStream_t" and self.opts.miopen and any(h.startswith("cudnn") for h in self.cuda_headers):
                target = "miopenAcceleratorQueue_t"      # MIOpen's name of hipStream_t (hipify-clang --miopen)
            if m.unsupported and target in MATH_CONSTANTS_FALLBACK_NAMES and self.math_fallback:
                pass                        # newer than the chosen HIP, but the output defines it itself
            elif m.unsupported or not target:
                self.stats.add(key, m.area, False)
                msg = f"`{key}` is not supported by {'ROCm libraries' if roc else 'HIP'}; left unchanged"
                if m.note:
                    msg += f" ({m.note})"
                self._diag(UNSUPPORTED, t.start, t.end, msg)
                self.notes.append((UNSUPPORTED, t.start, f"`{key}` has no HIP equivalent"))
                continue
            self.stats.add(key, m.area, True)
            if target != name and m.area in HIP_HEADER_AREAS and "::" not in target:
                self._check_installed(t, key, target)
            target = target.rsplit("::", 1)[-1] if key != name else target
            self.hip_names.add(target)
            if target != name:
                self.renames[i] = target

    def _legacy_cublas(self, i, name) -> bool:
        """A call of the legacy cuBLAS API (cublas.h without cublas_v2.h: `cublasSscal(n, alpha, x, incx)`, no
        handle): hipBLAS has only the handle API of cublas_v2, whose function of that name takes other arguments.
        The call is kept and reported (HIPIFY keeps it too); helpers without a handle (cublasSetMatrix) exist in
        both APIs and are renamed."""
        if "cublas.h" not in self.cuda_headers or "cublas_v2.h" in self.cuda_headers \
                or f"{name}_v2" not in self.maps:
            return False
        if self._cublas_handles is None:        # a file that has a handle uses the v2 API (cublas_api.h)
            self._cublas_handles = any(t.kind == "IDENTIFIER" and t.spelling in ("cublasHandle_t", "cublasCreate",
                                       "cublasCreate_v2") for t in self.tokens)
        if self._cublas_handles:
            return False
        t = self.tokens[i]
        self.stats.add(name, "cublas", False)
        self._diag(UNSUPPORTED, t.start, t.end, f"`{name}` of the legacy cuBLAS API (cublas.h) has no hipBLAS "
                   f"counterpart (hipBLAS has the handle API of cublas_v2.h only); left unchanged: port the call to "
                   f"cublas_v2.h first")
        self.notes.append((UNSUPPORTED, t.start, f"legacy cuBLAS `{name}` has no hipBLAS counterpart"))
        return True

    def _in_scope(self, area):
        """caffe2's names apply in files that name caffe2 (its namespace, or an include under caffe2/)."""
        if area not in self._scopes:
            self._scopes[area] = any(t.kind == "IDENTIFIER" and t.spelling == area for t in self.tokens) or \
                any(inc.startswith(area + "/") for inc in self.included_names)
        return self._scopes[area]

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
                if mp is None or mp.unsupported or mp.area in SCOPED_AREAS:
                    continue
                target = mp.target(self.opts.roc)
                if not target or target == m.group(0) or "::" in target:
                    continue
                s = t.start + len(t.spelling[:m.start()].encode("utf-8"))
                self.edit(s, s + len(m.group(0).encode("utf-8")), target)
                self.stats.add(m.group(0), mp.area, True)

    # -- calls with handlers
    def _calls(self):
        from porter.translate.hip.tables import arg_rewrites
        toks = self.tokens
        handlers = dict(H.HANDLERS)
        roc, miopen = self.opts.roc, self.opts.miopen
        # HIPIFY's argument rewrites (rules/hip/arguments.csv) where no hand-written handler covers the call
        for name in {t.spelling for t in toks if t.kind == "IDENTIFIER"} - handlers.keys():
            rows = arg_rewrites(name, roc, miopen)
            if rows and self.maps.get(name) is not None and not self.maps[name].unsupported:
                handlers[name] = H.table_rewrites(rows)
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
        self._macro_launches(templates)
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

    def _warp_size_constant(self):
        """warpSize in device code -> CUPORT_WARP_SIZE, a compile-time constant per platform (32 on NVIDIA, the
        wave size on AMD): on NVIDIA warpSize is a run-time value, so loops over it (the shuffle loops the
        portability fixes write) were not unrolled and `% warpSize` was a division (docs/performance.md)."""
        spans = [(f.node.start, f.node.end) for f in self.model.functions if f.is_device_code]
        toks = self.tokens
        for i, t in enumerate(toks):
            if t.kind == "IDENTIFIER" and t.spelling == "warpSize" and i not in self.renames and \
                    (i == 0 or toks[i - 1].spelling not in (".", "->", "::")) and \
                    any(a <= t.start < b for a, b in spans):
                self.renames[i] = WARP_SIZE_MACRO
                self.helpers.add(WARP_SIZE_MACRO)

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
        warp_size = WARP_SIZE_MACRO in self.helpers and WARP_SIZE_MACRO not in present
        helpers = render("hip/portability.hip.j2", lanemask_t=lanemask, sync_fallbacks=sync, warp_size=warp_size) \
            if (sync or lanemask or warp_size) else ""
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
                self.diagnostics.append(diagnostic(UNSUPPORTED, f"internal: overlapping edit at byte {s} dropped",
                                                   self.original.path, s, e, severity="warning", source=self.source))
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

def _short(msg: str, limit: int = 160) -> str:
    m = " ".join(msg.split())
    for sep in ("; ", ". "):
        k = m.find(sep)
        if 20 < k:
            m = m[:k]
            break
    return m if len(m) <= limit else m[:limit - 3].rsplit(" ", 1)[0].rstrip(",;:") + "..."
