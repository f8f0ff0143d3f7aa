"""Name-level rewrites of the HIP translation that a table lookup cannot decide alone: namespace aliases and
qualifiers, roc* value types, HIP names newer than the installed ROCm, `__CUDA_ARCH__`, cudaDeviceProp fields,
helper_math.h-style vector operators and builtin redefinitions compiled out on AMD. Mixed into the translator
(translator.py), whose state it reads."""
from __future__ import annotations

import re

from porter.translate.hip import handlers as H
from porter.translate.hip.handlers import UNSUPPORTED
from porter.translate.hip.includes import installed_hip_names


# floating-point overloads HIP declares that CUDA code often defines itself (CAS loops)
_HIP_FP_ATOMICS = frozenset({"atomicAdd", "atomicSub", "atomicMin", "atomicMax", "atomicExch"})
_COMPOUND_OPS = frozenset({"+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "<<=", ">>="})
_VECTOR_TYPES = frozenset(f"{b}{n}" for b in ("char", "uchar", "short", "ushort", "int", "uint", "long", "ulong",
                                                "longlong", "ulonglong", "float", "double") for n in (1, 2, 3, 4))
# value types under --roc: the type of the roc library the file's calls take (rocSOLVER uses rocBLAS' types;
# HIPIFY writes rocblas_* for rocSPARSE too, which rocsparse_* calls do not accept). Without such a library header
# they stay HIP's, which device code and cuCaddf & co. (-> hipCaddf) work with.
ROC_VALUE_TYPES = {                 # CUDA name: (rocBLAS/rocSOLVER, rocSPARSE)
    "cuComplex": ("rocblas_float_complex", "rocsparse_float_complex"),
    "cuFloatComplex": ("rocblas_float_complex", "rocsparse_float_complex"),
    "cuDoubleComplex": ("rocblas_double_complex", "rocsparse_double_complex"),
    "__half": ("rocblas_half", None),
    "__nv_bfloat16": ("rocblas_bfloat16", None),
}
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


class RewritePass:
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

    def _roc_value_type(self, key):
        blas, sparse = ROC_VALUE_TYPES[key]
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

    _HALF2_DECL = re.compile(rb"\b(?:__)?half2\s*[&*]?\s*(?:const\s+)?(\w+)\s*(?=[=;,)\[{(])")

    def _half2_members(self):
        """`h2.x` / `h2.y` of a half2: nvcc reads them as half, HIP declares them `unsigned short` (the raw bits),
        so `(float)h2.x` would convert the bit pattern. They become `reinterpret_cast<half&>(h2.x)` (hipify-clang's
        rewrite), which reads and writes the same bits as a half. Variables and parameters declared half2 /
        __half2 in this file, within the function that declares them; already-cast members are left alone."""
        if b"half2" not in self.data:
            return
        toks = self.tokens
        bodies = [(f.body.start, f.body.end) for f in self.model.functions if f.body is not None]
        scopes: dict[str, list[tuple[int, int]]] = {}
        for m in self._HALF2_DECL.finditer(self.data):
            name = m.group(1).decode()
            if name in ("operator", "const"):
                continue
            at = m.start(1)
            # the function whose body (or parameter list, up to its body's end) holds the declaration
            span = next(((at, e) for s, e in bodies if s <= at < e), None)
            if span is None and self.data[m.end():m.end() + 1] in (b")", b","):      # a parameter
                span = next(((at, e) for s, e in sorted(bodies) if s > at), None)
            elif span is None:                                                     # a file-scope variable
                span = (at, len(self.data))
            if span is not None:
                scopes.setdefault(name, []).append(span)
        if not scopes:
            return
        for i in range(len(toks) - 2):
            t = toks[i]
            if t.kind != "IDENTIFIER" or t.spelling not in scopes or toks[i + 1].spelling != "." \
                    or toks[i + 2].spelling not in ("x", "y"):
                continue
            if i > 0 and toks[i - 1].spelling in (".", "->", "::"):
                continue
            if not any(s <= t.start < e for s, e in scopes[t.spelling]):
                continue
            if i >= 6 and [x.spelling for x in toks[i - 6:i]] == ["reinterpret_cast", "<", "half", "&", ">", "("]:
                continue
            self.edit(t.start, t.start, "reinterpret_cast<half&>(")
            self.edit(toks[i + 2].end, toks[i + 2].end, ")")
            self.stats.add("half2::x/y", "device", True)
        # `h2 = {};`: HIP's __half2 has several assignments an empty braced list converts to (ambiguous, hipcc
        # fails: HeCBench quant3MatMul); a value-initialised __half2 is the same zero, assigned unambiguously
        for i in range(1, len(toks) - 3):
            t = toks[i]
            if t.kind == "IDENTIFIER" and t.spelling in scopes and toks[i - 1].spelling not in (".", "->", "::") \
                    and [x.spelling for x in toks[i + 1:i + 4]] == ["=", "{", "}"] \
                    and any(s <= t.start < e for s, e in scopes[t.spelling]):
                self.edit(toks[i + 2].start, toks[i + 2].start, "__half2")
                self.stats.add("half2 = {}", "device", True)

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
        # directives inside nest in the wrapper when their conditionals are balanced (lebesgue's atomicMax
        # has `#if CUDA_VERSION >= 12080 ... #endif` in its body); otherwise a human decides, told where
        depth = 0
        for k in range(b, e):
            if toks[k].kind == "PUNCTUATION" and toks[k].spelling == "#" and k + 1 < e:
                d = toks[k + 1].spelling
                depth += 1 if d in ("if", "ifdef", "ifndef") else -1 if d == "endif" else 0
                if depth < 0:
                    break
        if depth != 0:
            self._diag(UNSUPPORTED, toks[i].start, toks[i].end, f"{reason}; its conditional directives are not "
                       "balanced inside it, so it was not compiled out: guard it with "
                       "`#if !defined(__HIP_PLATFORM_AMD__)` by hand")
            return
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

