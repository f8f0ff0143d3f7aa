"""A global-memory access whose address moves by more than one element from one thread to the next.

## What it does
Looks at every load and store through a pointer parameter of a kernel (`a[i]`, `*(a + i)`, also through local
pointers such as `float *row = a + blockIdx.x * n;` and `reinterpret_cast<float4 *>(a)[i]`) and takes the
derivative of the index with respect to `threadIdx.x` (the index as a polynomial, constants folded,
single-assignment locals substituted). Neighbouring threads of a warp differ in `threadIdx.x`, so
- a derivative of 1 element (or -1) is coalesced, and 0 is a broadcast (`A[row * K + k]` with
  `row = blockIdx.y * TILE + threadIdx.y`): not flagged;
- a constant derivative `c` (`a[threadIdx.x * 4]`, `a[tid * STRIDE + k]`) is reported with the number of
  32-byte sectors one warp touches;
- a symbolic derivative (`a[tid * n + k]`, `odata[x * height + y]` with `x` from `threadIdx.x`) is reported as
  a possible uncoalesced access.
A thread that reads all `c` neighbouring elements of its chunk (`a[2 * tid]` and `a[2 * tid + 1]`) is not
flagged: the cache lines are fully used. Shared memory (CP401 covers its banks), local arrays and device
functions' pointer parameters are not checked.

## Why is this bad?
A warp's (or a 64-lane wavefront's) memory accesses are served in 32-byte sectors / 64- or 128-byte cache lines.
When consecutive threads read consecutive elements, 32 floats come from 4 sectors; with a stride of `c`
elements the same load needs up to 32 sectors, so most of every transferred byte is thrown away. This is
portable slowness: NVIDIA and AMD GPUs (and Vulkan / OpenCL devices) all coalesce the same way.

## Example
```cuda
int x = blockIdx.x * TILE + threadIdx.x;
int y = blockIdx.y * TILE + threadIdx.y;
odata[x * height + y] = idata[y * width + x];   // the write moves `height` elements per thread
```

## Use instead
```cuda
__shared__ float tile[TILE][TILE + 1];
tile[threadIdx.y][threadIdx.x] = idata[y * width + x];
__syncthreads();
x = blockIdx.y * TILE + threadIdx.x;              // swap the block offsets ...
y = blockIdx.x * TILE + threadIdx.y;
odata[y * height + x] = tile[threadIdx.x][threadIdx.y];   // ... so that threadIdx.x runs along the row
```

## Fix safety
No fix: coalescing means changing which thread handles which element (a transpose through shared memory,
a different thread mapping, or a structure-of-arrays layout).

## References
- NVIDIA CUDA C++ Best Practices Guide, "Coalesced Access to Global Memory"; M. Harris, "An Efficient Matrix
  Transpose in CUDA C/C++" (NVIDIA developer blog); AMD ROCm HIP performance guidelines ("Device memory
  access").
"""
from porter.analysis.affine import Poly
from porter.analysis.shared_access import pointee_size
from porter.analysis.syntax import for_parts
from porter.lint.helpers import int_value

CODE = "CP802"
_CASTS = ("PAREN_EXPR", "CSTYLE_CAST_EXPR", "CXX_STATIC_CAST_EXPR", "CXX_REINTERPRET_CAST_EXPR",
          "CXX_FUNCTIONAL_CAST_EXPR", "CXX_CONST_CAST_EXPR", "UNEXPOSED_EXPR")
_TX = "threadIdx.x"
_ACCESS_CALLS = ("atomic", "__ld", "__st")


def _strip(node):
    n = node
    while n.kind in _CASTS and n.children:
        n = n.children[-1]
    return n


def _is_pointer(node) -> bool:
    try:
        return node.canonical_type.kind.name == "POINTER"
    except Exception:
        return False


def _base(an, node, params, depth=0):
    """(parameter declaration, element offset Poly or None) when `node` points into a kernel's pointer parameter.
    The offset is None when a cast changes the element size on the way."""
    if depth > 6:
        return None
    n = _strip(node)
    k = n.kind
    if k == "DECL_REF_EXPR" and n.ref is not None:
        if id(n.ref) in params:
            return n.ref, Poly()
        if n.ref.kind == "VAR_DECL" and _is_pointer(n.ref):
            d = an.definition(n.ref)
            return _base(an, d, params, depth + 1) if d is not None else None
        return None
    if k == "BINARY_OPERATOR" and n.op in ("+", "-") and len(n.children) == 2:
        a, b = n.children
        if _is_pointer(a) and not _is_pointer(b):
            ptr, idx = a, b
        elif n.op == "+" and _is_pointer(b) and not _is_pointer(a):
            ptr, idx = b, a
        else:
            return None
        r = _base(an, ptr, params, depth + 1)
        p = an.poly(idx)
        if r is None:
            return None
        if r[1] is None or p is None:
            return r[0], None
        return r[0], r[1] + (p if n.op == "+" else -p)
    if k == "UNARY_OPERATOR" and n.op == "&" and n.children:
        inner = _strip(n.children[0])
        if inner.kind == "ARRAY_SUBSCRIPT_EXPR" and len(inner.children) == 2:
            r = _base(an, inner.children[0], params, depth + 1)
            p = an.poly(inner.children[1])
            if r is None:
                return None
            return r[0], (r[1] + p if r[1] is not None and p is not None else None)
    return None


def _rescaled(an, node, params):
    """_base() of a subscripted pointer expression, with the offset dropped (None) when a cast in between changes
    the element size."""
    r = _base(an, node, params)
    if r is None or r[1] is None or not r[1].terms:
        return r
    outer = pointee_size(node)
    inner = pointee_size(r[0])
    if outer is not None and inner is not None and outer != inner and r[1].terms:
        return r[0], None
    return r


def _derivative(p: Poly):
    """d p / d threadIdx.x as a Poly, or None when p is not linear in it."""
    out = {}
    for mono, c in p.terms.items():
        n = mono.count(_TX)
        if n == 0:
            continue
        if n > 1:
            return None
        rest = tuple(v for v in mono if v != _TX)
        out[rest] = out.get(rest, 0) + c
    return Poly(out)


def _address_only(node) -> bool:
    """`&a[i]` that only builds a pointer (not handed to an atomic or a load/store intrinsic)."""
    p = node.parent
    while p is not None and p.kind == "PAREN_EXPR":
        p = p.parent
    if p is None or p.kind != "UNARY_OPERATOR" or p.op != "&":
        return False
    q = p.parent
    while q is not None and q.kind in _CASTS:
        q = q.parent
    return not (q is not None and q.kind == "CALL_EXPR" and q.spelling.startswith(_ACCESS_CALLS))


def _accesses(model):
    for n in model.of_kind("ARRAY_SUBSCRIPT_EXPR"):
        if len(n.children) == 2:
            yield n, n.children[0], n.children[1]
    for n in model.of_kind("UNARY_OPERATOR"):
        if n.op == "*" and n.children:
            yield n, n.children[0], None


def _sectors(stride_bytes: int, elem: int) -> tuple[int, int]:
    """32-byte sectors one 32-thread warp touches at this stride, and when coalesced."""
    ideal = max(1, -(-32 * elem // 32))
    return min(32 * max(1, -(-elem // 32)), max(ideal, stride_bytes)), ideal


def _counted_range(node, name):
    """(lo, hi) of `for (int name = lo; name < hi; ++name)` around `node` with constant bounds, else None."""
    for loop in node.ancestors():
        if loop.kind in ("FUNCTION_DECL", "FUNCTION_TEMPLATE", "CXX_METHOD"):
            return None
        if loop.kind != "FOR_STMT":
            continue
        init, cond, inc, _ = for_parts(loop)
        var = next((v for v in init.walk() if v.kind == "VAR_DECL" and v.spelling == name), None) \
            if init is not None else None
        if var is None:
            continue
        exprs = [c for c in var.children if not c.kind.endswith("_ATTR") and c.kind != "TYPE_REF"]
        lo = int_value(exprs[-1]) if exprs else None
        c = cond.strip if cond is not None else None
        if lo is None or c is None or c.kind != "BINARY_OPERATOR" or c.op not in ("<", "<=") or \
                len(c.children) != 2 or c.children[0].strip.spelling != name:
            return None
        hi = int_value(c.children[1])
        step = inc.strip if inc is not None else None
        if hi is None or step is None or not (step.kind == "UNARY_OPERATOR" and step.op in ("++", "post++") or
                                              step.kind == "COMPOUND_ASSIGNMENT_OPERATOR" and step.op == "+=" and
                                              int_value(step.children[-1]) == 1):
            return None
        return lo, hi + (1 if c.op == "<=" else 0)
    return None


def _chunk(node, rest: Poly, c: int):
    """(residues mod c of the index offsets one thread covers, grouping key) for the part of an index that does
    not move with threadIdx.x: its constant, plus the range of at most one counted loop variable."""
    const = rest.constant
    if const.denominator != 1:
        return set(), None
    others = {m: v for m, v in rest.terms.items() if m}
    loop_var = None
    for m, v in others.items():
        if len(m) == 1 and v == 1 and loop_var is None:
            rng = _counted_range(node, m[0])
            if rng is not None:
                loop_var = (m, rng)
    if loop_var is None:
        return {int(const) % c}, (repr(Poly(others)),)
    (m, (lo, hi)) = loop_var
    del others[m]
    return {(int(const) + i) % c for i in range(lo, min(hi, lo + c))}, (repr(Poly(others)),)


def check(ctx):
    model, an = ctx.model, ctx.analysis
    kernels = [f for f in model.kernels if f.body is not None]
    params = {id(p.node): f for f in kernels for p in f.params if p.is_pointer}
    if not params:
        return
    found = []
    for node, ptr, idx in _accesses(model):
        r = _rescaled(an, ptr, params)
        if r is None or r[1] is None or _address_only(node):
            continue
        fn = params[id(r[0])]
        if (idx is None or not an.thread_dependent(idx)) and _derivative(r[1]) == Poly():
            continue          # the same address for every thread of a warp
        p = an.poly(idx) if idx is not None else Poly()
        if p is None:
            continue
        total = r[1] + p
        d = _derivative(total)
        if d is None or not d.terms:
            continue
        if d.is_const() and abs(d.constant) == 1:
            continue
        found.append((node, fn, r[0], total, d))
    # a thread that covers every residue of its chunk (`a[2 * t]` and `a[2 * t + 1]`, or `a[8 * t + j]` in a loop
    # `for (j = 0; j < 8; ++j)`) uses whole sectors: not flagged
    groups, keys = {}, {}
    for item in found:
        node, fn, decl, total, d = item
        if not (d.is_const() and d.constant.denominator == 1):
            continue
        c = abs(int(d.constant))
        residues, key = _chunk(node, total.without(_TX), c)
        if key is None:
            continue
        key = (id(fn), id(decl), c) + key
        keys[id(node)] = (key, c)
        groups.setdefault(key, set()).update(residues)
    seen = set()
    for node, fn, decl, total, d in found:
        k = keys.get(id(node))
        if k is not None and len(groups[k[0]]) >= k[1]:
            continue
        dedupe = (id(fn), id(decl), node.text)
        if dedupe in seen:
            continue
        seen.add(dedupe)
        elem = node.type_size()
        if d.is_const():
            c = abs(d.constant)
            if c.denominator != 1:
                continue
            c = int(c)
            if elem:
                got, ideal = _sectors(c * elem, elem)
                cost = f" ({c * elem} B): a 32-thread warp touches {got} 32-byte sectors instead of {ideal} " \
                       f"({got // ideal}x the memory traffic, the same on a 64-lane wavefront)"
            else:
                cost = f": a warp touches up to {c}x the memory segments of a coalesced access"
            ctx.report(CODE, node, f"uncoalesced global access `{node.text}`: neighbouring threads (threadIdx.x) "
                                   f"access elements {c} apart{cost}; let threadIdx.x run along the contiguous "
                                   f"dimension, or stage the data through shared memory")
        else:
            ctx.report(CODE, node, f"possible uncoalesced global access `{node.text}`: neighbouring threads "
                                   f"(threadIdx.x) access elements `{d!r}` apart, so unless that is 1 a warp's "
                                   f"accesses spread over up to 32 memory segments instead of a few; let "
                                   f"threadIdx.x run along the contiguous dimension, or stage the data through "
                                   f"shared memory")
