"""Per-warp shared storage or a final-warp stage sized for warps of 32 lanes.

## What it does
Flags two shapes of code that hard-wire "one warp = 32 threads" into shared memory and control flow:
- a `__shared__` array with a dimension of 32 indexed by a lane or warp id computed with 32
  (`partial[threadIdx.x / 32]`, `buf[tid & 31]`), or a dimension sized `[N / 32]` / `[N >> 5]` (one slot per
  32-lane warp) indexed by a lane or warp id; reported at the declaration;
- the final-warp stage `if (tid < 32)` (also `< WARP_SIZE` when that folds to 32) guarding warp-synchronous code:
  shuffles and other warp intrinsics, `volatile` shared-memory steps, or unrolled `s[tid] += s[tid + K]` steps
  without a barrier, directly or in a device function it calls; reported at the condition.

Arrays indexed by `/ warpSize` or `% warpSize`, tiles indexed by `threadIdx.x` / `threadIdx.y`, bitmaps
(`bits[i / 32] |= 1u << (i % 32)`) and `if (tid < 32)` around ordinary code are not flagged.

## Why is this bad?
On a 64-lane AMD wavefront a `[N / 32]` per-warp array gets only half its slots written, and the reader that
sums all N / 32 slots adds uninitialised memory (vllm-project/vllm#12789). A lane id computed with 32 leaves
lanes 32..63 writing over lanes 0..31. The stage `if (tid < 32)` runs a full-mask shuffle with half of a wave64
inactive, and on Vulkan subgroups of 4..16 lanes its unsynchronised steps span several subgroups and race.

## Example
```cuda
__shared__ float partial[BLOCK / 32];
if ((threadIdx.x & 31) == 0) partial[threadIdx.x >> 5] = v;
__syncthreads();
if (threadIdx.x < 32) {
  v = threadIdx.x < BLOCK / 32 ? partial[threadIdx.x] : 0.f;
  for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffff, v, o);
}
```

## Use instead
```cuda
__shared__ float partial[BLOCK / 4];          // enough slots for the smallest supported subgroup
if (threadIdx.x % warpSize == 0) partial[threadIdx.x / warpSize] = v;
__syncthreads();
if (threadIdx.x < warpSize) {                 // the whole first warp, whatever its width
  int nwarps = blockDim.x / warpSize;
  v = threadIdx.x < nwarps ? partial[threadIdx.x] : 0.f;
  for (int o = warpSize / 2; o > 0; o >>= 1) v += __shfl_down_sync(__activemask(), v, o);
}
```

## Fix safety
No automatic fix: resizing shared memory and re-deriving the final stage change occupancy and the algorithm's
shape. The message names the indices and the guarded code to change.

## References
- vllm-project/vllm#12789 (`shared_counts[32][8]` half uninitialized), ORNL/HeCBench#171, ORNL/HeCBench#167,
  hypre-space/hypre#158, pytorch/pytorch#186229, kokkos/kokkos#3216.
"""
from porter.frontend.model import WARP_INTRINSICS
from porter.lint.helpers import (array_dim_exprs, array_subscripts, function_by_call, int_value,
                                 is_shift_count, warp_index_kind)

CODE = "CP104"


def _short(node, limit=50):
    t = " ".join(node.text.split())
    return t if len(t) <= limit else t[:limit - 3] + "..."


def _bit_bases(model):
    """Left operands of `% 32` / `& 31` used as shift counts: `x / 32` on those indexes a bitmap word."""
    bases = set()
    for n in model.all_nodes():
        if n.kind == "BINARY_OPERATOR" and n.op in ("%", "&") and len(n.children) == 2 \
                and int_value(n.children[1]) in (31, 32) and is_shift_count(n):
            bases.add(n.children[0].strip.text)
    return bases


def _per_warp_count(e):
    """`N / 32` or `N >> 5` with a thread-independent N (a warp count) as a dimension expression."""
    n = e.strip
    while n.kind == "PAREN_EXPR" and n.children:
        n = n.children[0].strip
    if n.kind != "BINARY_OPERATOR" or len(n.children) != 2:
        return False
    r = int_value(n.children[1])
    return (n.op == "/" and r == 32) or (n.op == ">>" and r == 5)


def _index_desc(an, ix, kind):
    t = _short(ix)
    d = an.definition(ix.strip.ref) if ix.strip.kind == "DECL_REF_EXPR" and ix.strip.ref is not None else None
    return f"the {kind} id `{t}`" + (f" (`{_short(d)}`)" if d is not None else "")


def _check_arrays(ctx, bit_bases):
    an, model = ctx.analysis, ctx.model
    for s in model.shared:
        if s.extern or (s.function is not None and not s.function.is_device_code):
            continue
        dims = array_dim_exprs(s.node)
        if not dims:
            continue
        subs = None
        for d, e in enumerate(dims):
            is32, count = int_value(e) == 32, _per_warp_count(e)
            if not is32 and not count:
                continue
            if subs is None:
                subs = array_subscripts(model, s.node)
            hit = None
            for acc, idx in subs:
                if len(idx) <= d:
                    continue
                k = warp_index_kind(an, idx[d])
                if k is None:
                    continue
                if is32 and int_value(k[1]) is None:
                    continue  # lane / warp id computed with warpSize: portable indexing
                dividend = _dividend(an, idx[d])
                if dividend is not None and dividend in bit_bases:
                    continue
                hit = (acc, idx[d], k[0])
                break
            if hit is None:
                continue
            acc, ix, kind = hit
            row = model.source.position(acc.start)[0]
            decl = f"`{s.name}[{e.text}]`" if len(dims) == 1 else f"`{s.name}` (dimension `[{e.text}]`)"
            if count:
                msg = (f"per-warp shared array {decl} has one slot per 32-lane warp and is indexed by "
                       f"{_index_desc(an, ix, kind)} on line {row}: on a 64-lane wavefront only half the slots are "
                       f"written and readers of all slots see uninitialised values; size it for the smallest "
                       f"supported warp and index with `/ warpSize`")
            else:
                msg = (f"per-warp shared array {decl} is indexed by {_index_desc(an, ix, kind)} on line {row}, "
                       f"which assumes 32-lane warps: on a 64-lane wavefront one wave spans two of these slots, "
                       f"so lanes 32..63 overwrite lanes 0..31 or per-warp results are split and counted twice; "
                       f"size it for the smallest supported warp and index with `% warpSize` / `/ warpSize`")
            ctx.report(CODE, s.node, msg)
            break


def _dividend(an, ix, depth=0):
    n = ix.strip
    if n.kind == "DECL_REF_EXPR" and n.ref is not None and depth < 4:
        d = an.definition(n.ref)
        return _dividend(an, d, depth + 1) if d is not None else None
    if n.kind == "BINARY_OPERATOR" and n.children:
        return n.children[0].strip.text
    return None


def _warp_sync_evidence(model, body, depth=2, seen=None):
    """A node in `body` (or a device function it calls) that only works as one warp in lockstep."""
    seen = seen if seen is not None else set()
    if any(n.callee.startswith("__syncthreads") for n in model.kind_in(body, "CALL_EXPR")):
        return None  # a block barrier inside: not a warp-synchronous stage (CP701 looks at the divergence)
    compound_steps = []
    calls = []
    for n in body.walk():
        if n.kind == "CALL_EXPR":
            if n.callee in WARP_INTRINSICS:
                return n, "intrinsic"
            calls.append(n)
        elif n.kind == "DECL_REF_EXPR" and n.ref is not None and n.ref.kind in ("VAR_DECL", "PARM_DECL") \
                and "volatile" in n.ref.type.split():
            p = n.parent
            if p is not None and p.kind in ("ARRAY_SUBSCRIPT_EXPR", "UNARY_OPERATOR"):
                return p.parent if p.parent is not None and p.parent.kind.endswith("OPERATOR") else p, "volatile"
        elif n.kind == "COMPOUND_ASSIGNMENT_OPERATOR" and n.children and \
                n.children[0].strip.kind == "ARRAY_SUBSCRIPT_EXPR":
            compound_steps.append(n)
    if depth > 0:
        for c in calls:
            f = function_by_call(model, c)
            if f is None or f.body is None or id(f) in seen:
                continue
            seen.add(id(f))
            r = _warp_sync_evidence(model, f.body, depth - 1, seen)
            if r is not None:
                return r[0], r[1] + "-call:" + c.callee
    if len(compound_steps) >= 2:
        return compound_steps[0], "steps"
    return None


def _small_guards(an, cond):
    """Comparisons `t < 32` / `t <= 31` / `32 > t` with thread-dependent t among the && conjuncts of `cond`."""
    n = cond.strip
    if n.kind == "BINARY_OPERATOR" and n.op == "&&" and len(n.children) == 2:
        return _small_guards(an, n.children[0]) + _small_guards(an, n.children[1])
    if n.kind != "BINARY_OPERATOR" or len(n.children) != 2:
        return []
    a, b = n.children
    if int_value(a) is None and an.thread_dependent(a) and \
            ((n.op == "<" and int_value(b) == 32) or (n.op == "<=" and int_value(b) == 31)):
        return [n]
    if int_value(b) is None and an.thread_dependent(b) and \
            ((n.op == ">" and int_value(a) == 32) or (n.op == ">=" and int_value(a) == 31)):
        return [n]
    return []


def _tree_loop_before(if_node):
    """A preceding `for (...; s > 32; ...)` tree-reduction loop in the same block."""
    p = if_node.parent
    if p is None or p.kind != "COMPOUND_STMT":
        return None
    for c in p.children:
        if c is if_node:
            break
        if c.kind == "FOR_STMT":
            for n in c.children[:3]:
                s = n.strip
                if s.kind == "BINARY_OPERATOR" and s.op in (">", ">=") and len(s.children) == 2 and \
                        int_value(s.children[1]) in (32, 31) and int_value(s.children[0]) is None:
                    return s
    return None


def _check_final_stage(ctx):
    an, model = ctx.analysis, ctx.model
    for fn in model.functions:
        if not fn.is_device_code or fn.body is None:
            continue
        for n in model.kind_in(fn.body, "IF_STMT"):
            if len(n.children) < 2:
                continue
            guards = _small_guards(an, n.children[0])
            if not guards:
                continue
            ev = _warp_sync_evidence(model, n.children[1])
            if ev is None:
                continue
            node, what = ev
            g = guards[0]
            via = f" through `{what.split(':', 1)[1]}()`" if ":" in what else ""
            if what.startswith("intrinsic"):
                why = (f"it runs `{_short(node)}`{via} with lanes 32..63 of a 64-lane wavefront inactive, and a "
                       f"reduction over `warpSize` lanes there reads lanes that skipped the stage")
            else:
                loop = _tree_loop_before(n)
                extra = f"; the tree loop above stops at `{loop.text}`" if loop is not None else ""
                why = (f"its unsynchronised steps (`{_short(node)}`{via}) rely on those 32 threads being one warp "
                       f"in lockstep: on subgroups smaller than 32 they race and on a 64-lane wavefront the stage "
                       f"must cover 64 threads{extra}")
            ctx.report(CODE, g, f"final-warp stage `if ({_short(n.children[0])})` assumes the first 32 threads are "
                                f"exactly one warp: {why}; guard with `warpSize` and reduce with shuffles from "
                                f"`warpSize / 2`")


def check(ctx):
    _check_arrays(ctx, _bit_bases(ctx.model))
    _check_final_stage(ctx)
