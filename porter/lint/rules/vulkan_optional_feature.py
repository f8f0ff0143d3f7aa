"""Device code that needs an optional Vulkan feature: float or 64-bit atomics, double math, 16-bit types.

## What it does
When `vulkan` is among the target architectures (`target-arch`, on by default), flags in device code
- `atomicAdd` / `atomicSub` / `atomicExch` / `atomicMin` / `atomicMax` on `float`, `double` or `__half`
  (GL_EXT_shader_atomic_float / _float2: `shaderBufferFloat32AtomicAdd`, `shaderSharedFloat32AtomicAdd`,
  `shaderBufferFloat64AtomicAdd`, `...AtomicMinMax`, `shaderBufferFloat16AtomicAdd`), telling global from
  `__shared__` memory;
- atomics on 64-bit integers (`unsigned long long`: GL_EXT_shader_atomic_int64, `shaderBufferInt64Atomics` /
  `shaderSharedInt64Atomics`);
- double-precision arithmetic and math calls (`shaderFloat64`), once per function with the count, noting an
  unsuffixed literal (`x * 0.5`) that silently turns float code into double code;
- 16-bit types: `half` / `__half` / `__half2` and `__nv_bfloat16` (`shaderFloat16`, `storageBuffer16BitAccess`,
  VK_KHR_shader_bfloat16), once per function, and kernel buffers of `short` / `int16_t`
  (`storageBuffer16BitAccess`).

## Why is this bad?
A Vulkan device advertises these as optional features; a shader that uses one on a device without it is
rejected when the pipeline is created. Float atomics in shared memory are missing on many GPUs
(hanatos/vkdt#284), `shaderFloat64` on most mobile and some integrated GPUs, and 16-bit storage on older
drivers. CUDA code uses all of them freely because every NVIDIA GPU has them.

## Example
```cuda
__global__ void hist(const float *x, float *bins, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) atomicAdd(&bins[(int)(x[i] * 0.5)], 1.0f);   // float atomic, and double math from `0.5`
}
```

## Use instead
```cuda
__global__ void hist(const float *x, unsigned *bins, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) atomicAdd(&bins[(int)(x[i] * 0.5f)], 1u);     // integer atomic, float literal
}
```
(or keep the float atomic and require the feature: check `VkPhysicalDeviceShaderAtomicFloatFeaturesEXT` on
the host; or reduce within the subgroup first and emulate the add with an `atomicCompSwap` loop)

## Fix safety
No fix: the alternatives (integer or CAS-loop atomics, float math, 32-bit storage) change the code's
precision or structure.

## References
- hanatos/vkdt#284 (shared-memory float atomics missing on the device).
- Khronos GL_EXT_shader_atomic_float, GL_EXT_shader_atomic_float2, GL_EXT_shader_atomic_int64,
  VK_KHR_shader_float16_int8, VK_KHR_16bit_storage; the Vulkan `shaderFloat64` feature.
"""
import re

from porter.lint.helpers import function_at

CODE = "CP906"
_ATOMICS = {"atomicAdd", "atomicSub", "atomicExch", "atomicMin", "atomicMax", "atomicCAS", "atomicAnd", "atomicOr",
            "atomicXor", "atomicInc", "atomicDec", "atomicAdd_block", "atomicAdd_system"}
_INT64 = {"unsigned long long", "long long", "unsigned long", "long"}
_HALF = re.compile(rb"\b(half2?|__half2?|__nv_bfloat162?|nv_bfloat162?)\b")
_HALF_NAMES = {"half", "half2", "__half", "__half2", "__nv_bfloat16", "__nv_bfloat162", "nv_bfloat16", "nv_bfloat162"}
# an unsuffixed floating literal (`0.5`, `1e-3`): a double in C++
_DOUBLE_LIT = re.compile(rb"\d\.\d*[^\dfF]|\d[eE][+-]?\d")     # a cheap over-approximation
_ARITH = {"+", "-", "*", "/"}
_COMPARE = {"<", ">", "<=", ">=", "==", "!="}


def _vulkan(settings) -> bool:
    if settings is None:
        return True
    arch = getattr(settings, "target_arch", None)
    if arch is None:
        return True
    return any(str(a).lower().startswith("vulkan") for a in arch)


_CASTS = ("PAREN_EXPR", "CSTYLE_CAST_EXPR", "CXX_STATIC_CAST_EXPR", "CXX_REINTERPRET_CAST_EXPR",
          "CXX_FUNCTIONAL_CAST_EXPR", "CXX_CONST_CAST_EXPR")


def _canon(node) -> str:
    """Canonical type spelling without cv-qualifiers."""
    try:
        t = node.canonical_type.spelling
    except Exception:
        t = node.type or ""
    return t.replace("const ", "").replace("volatile ", "").strip()


def _in_shared(ctx, ptr, depth=0) -> bool:
    """The pointer points into a `__shared__` variable (`&s[i]`, `s + k`, `&s_count`, a local pointer to one)."""
    shared = getattr(ctx, "_cp906_shared", None)
    if shared is None:
        shared = ctx._cp906_shared = {id(s.node) for s in ctx.model.shared}
    n = ptr
    while depth < 6:
        while n.kind in _CASTS and n.children:
            n = n.children[-1]
        if n.kind == "UNARY_OPERATOR" and n.op == "&" and n.children:
            n = n.children[0]
        elif n.kind == "ARRAY_SUBSCRIPT_EXPR" and n.children:
            n = n.children[0]
        elif n.kind == "BINARY_OPERATOR" and n.op in ("+", "-") and n.children:
            n = n.children[0]
        elif n.kind == "DECL_REF_EXPR" and n.ref is not None:
            if id(n.ref) in shared:
                return True
            d = ctx.analysis.definition(n.ref) if n.ref.kind == "VAR_DECL" else None
            if d is None:
                return False
            n = d
        else:
            return False
        depth += 1
    return False


def _atomic(ctx, call):
    name = call.spelling
    args = call.args()
    if not args:
        return
    t = _canon(call)
    shared = bool(ctx.model.shared) and _in_shared(ctx, args[0])
    where, store = ("Shared", "shared memory") if shared else ("Buffer", "global memory")
    op = name.replace("_block", "").replace("_system", "")
    if t in ("float", "double", "__half", "half"):
        bits = {"float": "32", "double": "64"}.get(t, "16")
        if op in ("atomicAdd", "atomicSub"):
            feat, ext = f"shader{where}Float{bits}AtomicAdd", "GL_EXT_shader_atomic_float" + \
                ("" if bits != "16" else "2")
        elif op in ("atomicMin", "atomicMax"):
            feat, ext = f"shader{where}Float{bits}AtomicMinMax", "GL_EXT_shader_atomic_float2"
        elif op == "atomicExch":
            feat, ext = f"shader{where}Float{bits}Atomics", "GL_EXT_shader_atomic_float"
        else:
            return
        extra = " and `shaderFloat64`" if bits == "64" else ""
        ctx.report(CODE, call, f"`{name}` on a {t} in {store}: Vulkan needs {ext} and the optional feature "
                               f"`{feat}`{extra}, which many devices lack; without it emulate it with an "
                               f"`atomicCompSwap` loop on the bits, or reduce within the subgroup first and do "
                               f"one atomic per subgroup")
    elif t in _INT64 and (call.type_size() or 8) == 8:
        ctx.report(CODE, call, f"`{name}` on a 64-bit integer in {store}: Vulkan needs GL_EXT_shader_atomic_int64 "
                               f"and the optional feature `shader{where}Int64Atomics` (VK_KHR_shader_atomic_int64); "
                               f"without it use 32-bit atomics")


def _double_op(node) -> bool:
    k = node.kind
    if k == "BINARY_OPERATOR":
        op = node.op
        if op in _ARITH:
            return _canon(node) == "double"
        return op in _COMPARE and any(_canon(c) == "double" for c in node.children)
    if k == "COMPOUND_ASSIGNMENT_OPERATOR":
        return node.op in ("+=", "-=", "*=", "/=") and bool(node.children) and \
            (_canon(node.children[0]) == "double" or
             (len(node.children) == 2 and _canon(node.children[1]) == "double"))
    return False


def _literal_note(node) -> str:
    """Why a float expression became double: an unsuffixed floating literal next to a float operand."""
    for c in node.walk():
        if c.kind == "FLOATING_LITERAL" and c.text[-1:] not in ("f", "F") and _canon(c) == "double":
            p = c.parent
            while p is not None and p.kind in ("PAREN_EXPR", "CSTYLE_CAST_EXPR"):
                p = p.parent
            if p is not None and p.kind in ("BINARY_OPERATOR", "COMPOUND_ASSIGNMENT_OPERATOR") and \
                    any(_canon(o) == "float" for o in p.children if o is not c):
                return f" (the literal `{c.text}` is a double: write `{c.text}f`)"
    return ""


def _half_type(toks, variables):
    """The first token that names a 16-bit float type (`half x`, `__half *p`, `(half)v`, `<__half2>`)."""
    for i, t in enumerate(toks):
        if t.kind != "IDENTIFIER" or t.spelling not in _HALF_NAMES or t.spelling in variables:
            continue
        if t.spelling != "half":
            return t
        nxt = toks[i + 1] if i + 1 < len(toks) else None
        after = toks[i + 2] if i + 2 < len(toks) else None
        prev = toks[i - 1].spelling if i > 0 else ""
        if nxt is None:
            continue
        if nxt.kind == "IDENTIFIER" or (nxt.spelling in ("*", "&") and after is not None and
                                        after.kind == "IDENTIFIER") or \
                (prev in ("(", "<", ",") and nxt.spelling in (")", ">", ",")):
            return t
    return None


def check(ctx):
    if not _vulkan(ctx.settings):
        return
    model = ctx.model
    dev = [f for f in model.functions if f.is_device_code and f.body is not None]
    if not dev:
        return
    def fn_at(node):
        f = function_at(node)
        return f if f is not None and f.is_device_code and f.body is not None else None

    for call in model.of_kind("CALL_EXPR"):
        if call.spelling in _ATOMICS:
            f = function_at(call)
            if f is not None and f.is_device_code:
                _atomic(ctx, call)
    # double precision: the first operation per function, with the count
    data = ctx.source.data
    if b"double" in data or _DOUBLE_LIT.search(data) is not None:
        doubles: dict = {}
        for node in model.of_kind("BINARY_OPERATOR", "COMPOUND_ASSIGNMENT_OPERATOR"):
            f = fn_at(node)
            if f is not None and _double_op(node):
                doubles.setdefault(id(f), (f, []))[1].append(node)
        for call in model.of_kind("CALL_EXPR"):
            if call.ref is None and call.spelling and not call.spelling.startswith("atomic"):
                f = fn_at(call)
                if f is not None and _canon(call) == "double":
                    doubles.setdefault(id(f), (f, []))[1].append(call)
        for f, nodes in doubles.values():
            nodes.sort(key=lambda n: n.start)
            ids = {id(n) for n in nodes}
            first = nodes[0]
            while first.parent is not None and id(first.parent) in ids:
                first = first.parent       # the outermost double expression of the first statement
            more = len(nodes) - 1
            tail = f"; {more} more double operation{'s' if more != 1 else ''} in `{f.name}`" if more else ""
            ctx.report(CODE, first, f"`{first.text}` computes in double precision{_literal_note(first)}: Vulkan "
                                    f"needs the optional feature `shaderFloat64`, missing on most mobile and some "
                                    f"integrated GPUs (and slow on consumer GPUs){tail}")
    # 16-bit types
    if (b"half" in data or b"bfloat16" in data) and _HALF.search(data) is not None:
        variables = {n.spelling for n in model.of_kind("VAR_DECL") + model.of_kind("PARM_DECL")} & _HALF_NAMES
        for f in dev:
            tok = _half_type(model.tokens_between(f.node.start, f.body.end), variables)
            if tok is None:
                continue
            name = tok.spelling
            if "bfloat" in name:
                need = "the VK_KHR_shader_bfloat16 extension (`shaderBFloat16Type`), which few devices have"
            else:
                need = ("the optional features `shaderFloat16` (arithmetic, VK_KHR_shader_float16_int8) and "
                        "`storageBuffer16BitAccess` (16-bit values in buffers, VK_KHR_16bit_storage)")
            ctx.report(CODE, (tok.start, tok.end), f"`{name}` in `{f.name}`: 16-bit floating point in Vulkan "
                                                   f"needs {need}")
    for f in dev:
        if not f.is_kernel:
            continue
        for p in f.params:
            if p.is_pointer and (p.pointee or "").replace("const ", "").strip() in ("short", "unsigned short"):
                ctx.report(CODE, p.node, f"`{p.node.text}`: a buffer of 16-bit integers needs the optional Vulkan "
                                         f"features `storageBuffer16BitAccess` (VK_KHR_16bit_storage) and "
                                         f"`shaderInt16` for arithmetic")
