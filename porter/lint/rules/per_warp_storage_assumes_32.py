"""Per-warp shared storage or a final-warp stage sized for warps of 32 lanes.

## What it does
Flags two shapes of code that hard-wire "one warp = 32 threads" into shared memory and control flow:
- a `__shared__` array with a dimension of 32 indexed by a lane or warp id computed with 32
  (`partial[threadIdx.x / 32]`, `buf[tid & 31]`), or a dimension sized `[N / 32]` / `[N >> 5]` (one slot per
  32-lane warp) indexed by a lane or warp id; reported at the declaration;
- the final-warp stage `if (tid < 32)` (also `< WARP_SIZE` when that folds to 32) guarding warp-synchronous code:
  shuffles and other warp intrinsics, `volatile` shared-memory steps, or unrolled `s[tid] += s[tid + K]` steps
  without a barrier, directly or in a device function it calls; reported at the condition;
- a per-warp array sized by a constant that is not 32 (`part[8]`) indexed by a warp id computed with 32, and
  flattened per-warp rows (`bins[WARPS * BINS]` indexed `warp * BINS + b`); reported at the declaration;
- a loop or a read over the slots of a per-warp array bounded by a count of 32-lane warps (`w < 8`,
  `w < WARPS`, `lane < BLOCK / 32 ? part[lane] : 0`); reported at the bound;
- one warp reading one slot per lane (`if (warp == 0) v = part[lane]`): it covers at most as many warps as a
  warp has lanes (with 256 threads, not on subgroups of 4 or 8); reported at the read.

A 32-slot array indexed by a lane id computed with `% warpSize` is flagged too: lanes 32..63 of a wave64 index
past its end (`cuport translate --to hip` sizes it `[64]`).

Arrays indexed by `/ warpSize`, tiles indexed by `threadIdx.x` / `threadIdx.y` (a real 32, such
as `tile[32][33]` and `for (i = 0; i < 32; ++i) tile[i][tx]`), bitmaps (`bits[i / 32] |= 1u << (i % 32)`),
loops that fill slots, loops bounded by `blockDim.x / warpSize` and `if (tid < 32)` around ordinary code are not
flagged.

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
A warp count spelled `N / 32` or `N >> 5` in the file (not in a macro) that bounds a loop or read over the
slots gets a safe fix to `N / warpSize` (the same value on NVIDIA; the real count elsewhere). No automatic fix
for the rest: resizing shared memory and re-deriving the final stage change occupancy and the algorithm's shape.
The message names the indices and the guarded code to change. `cuport translate --to glsl|opencl` sizes per-warp
arrays for the narrowest subgroup, replaces 32-lane warp counts and folds the slots a single subgroup cannot
hold, or refuses the kernel with CP104. A final-warp stage `if (rank < 32)` whose shuffle loop steps constant
offsets (HeCBench graphExecution) is translated with its shuffles over a 32-slot shared array between work-group
barriers: CUDA's value in every lane at any subgroup size (the finding is then information).

## References
- vllm-project/vllm#12789 (`shared_counts[32][8]` half uninitialized), ORNL/HeCBench#171, ORNL/HeCBench#167,
  hypre-space/hypre#158, pytorch/pytorch#186229, kokkos/kokkos#3216.
"""
from porter.frontend.model import WARP_INTRINSICS
from porter.lint.context import fix
from porter.analysis.syntax import array_dim_exprs, for_parts
from porter.lint.helpers import (array_subscripts, function_by_call, int_value, is_shift_count, replace_binary, warp_index_kind)

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


def _per_warp_count(e, whole=False):
    """`N / 32` or `N >> 5` with a constant N (a warp count) as a dimension expression, or (not `whole`) a
    product with one (`WARPS * BINS`: a flattened array of per-warp rows)."""
    n = _bare(e)
    if n.kind != "BINARY_OPERATOR" or len(n.children) != 2:
        return False
    if n.op == "*" and not whole:
        return any(_per_warp_count(c, True) for c in n.children)
    r = int_value(n.children[1])
    return int_value(n.children[0]) is not None and ((n.op == "/" and r == 32) or (n.op == ">>" and r == 5))


def _bare(e):
    n = e.strip
    while n.kind in ("PAREN_EXPR", "UNEXPOSED_EXPR") and n.children:
        n = n.children[-1].strip
    return n


def _slot(an, ix):
    """(node, stride) for the part of subscript `ix` that picks a warp's row: `s`, `s * K`, `K * s`, or one of
    those `+ r` (`bins[warp * BINS + b]`), preferring a warp id; (ix, 1) otherwise."""
    n = _bare(ix)
    cands = [n.children[0], n.children[1]] if n.kind == "BINARY_OPERATOR" and n.op == "+" and \
        len(n.children) == 2 else [n]
    out = []
    for c in cands:
        c = _bare(c)
        if c.kind == "BINARY_OPERATOR" and c.op == "*" and len(c.children) == 2:
            a, b = c.children
            if int_value(b) is not None and int_value(a) is None:
                out.append((_bare(a), int_value(b)))
            elif int_value(a) is not None and int_value(b) is None:
                out.append((_bare(b), int_value(a)))
        elif len(cands) == 1 or c.kind == "DECL_REF_EXPR":
            out.append((c, 1))
    for c, k in out:
        w = warp_index_kind(an, c)
        if w is not None and w[0] == "warp":
            return c, k
    scaled = [(c, k) for c, k in out if k > 1]
    return out[0] if len(out) == 1 else scaled[0] if len(scaled) == 1 else (n, 1)


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
            fixed = not is32 and not count and int_value(e) is not None   # `part[8]`: one slot per warp of 32?
            if not is32 and not count and not fixed:
                continue
            if subs is None:
                subs = array_subscripts(model, s.node)
            hit = None
            for acc, idx in subs:
                if len(idx) <= d:
                    continue
                k = warp_index_kind(an, idx[d])
                if k is None and count:
                    k = warp_index_kind(an, _slot(an, idx[d])[0])   # `bins[warp * BINS + b]`
                if k is None:
                    continue
                if (is32 or fixed) and int_value(k[1]) is None and not (is32 and k[0] == "lane"):
                    continue  # warp id computed with warpSize: portable indexing (fewer warps on wave64)
                if fixed and k[0] != "warp":
                    continue
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
            if is32 and kind == "lane" and int_value(warp_index_kind(an, ix)[1]) is None:
                msg = (f"shared array {decl} has one slot per lane and is indexed by {_index_desc(an, ix, kind)} "
                       f"on line {row}: lanes 32..63 of a 64-lane wavefront index past its end (Vulkan subgroups "
                       f"reach 128 lanes); size it for the widest warp (`[64]` for HIP, 128 for any subgroup)")
            elif count or fixed:
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


def _bound(cond, slot):
    """C when `cond` (or one of its && conjuncts) is `slot < C` / `C > slot`."""
    n = _bare(cond)
    if n.kind == "BINARY_OPERATOR" and n.op == "&&" and len(n.children) == 2:
        return _bound(n.children[0], slot) or _bound(n.children[1], slot)
    if n.kind == "BINARY_OPERATOR" and len(n.children) == 2:
        a, b = _bare(n.children[0]), _bare(n.children[1])
        if n.op == "<" and _same(a, slot):
            return n.children[1]
        if n.op == ">" and _same(b, slot):
            return n.children[0]
    return None


def _same(a, b) -> bool:
    if a.kind == "DECL_REF_EXPR" and b.kind == "DECL_REF_EXPR":
        return a.ref is not None and a.ref is b.ref
    return " ".join(a.text.split()) == " ".join(b.text.split())


def _bounds_of(acc, slot):
    """(C, 'loop' | 'read') for the loop over `slot` or the `?:` / `if` guard on it around subscript `acc`."""
    cur, p = acc, acc.parent
    while p is not None and p.kind not in ("FUNCTION_DECL", "FUNCTION_TEMPLATE"):
        if p.kind == "FOR_STMT" and slot.kind == "DECL_REF_EXPR":
            init, cond, _inc, _body = for_parts(p)
            if init is not None and cond is not None and any(c is slot.ref for c in init.walk()):
                return _bound(cond, slot), "loop"
        if (p.kind == "CONDITIONAL_OPERATOR" and len(p.children) == 3 and cur is p.children[1]) or \
                (p.kind == "IF_STMT" and len(p.children) >= 2 and cur is p.children[1]):
            c = _bound(p.children[0], slot)
            if c is not None:
                return c, "read" if p.kind == "CONDITIONAL_OPERATOR" else "if"
        cur, p = p, p.parent
    return None, None


def _count_32(c, slots) -> bool:
    """`c` counts warps of 32 lanes: `N / 32`, `N >> 5` (N constant or blockDim), or the number of slots."""
    n = _bare(c)
    if n.kind == "BINARY_OPERATOR" and len(n.children) == 2:
        a, r = n.children[0], int_value(n.children[1])
        b = a.builtin()
        if (int_value(a) is not None or (b is not None and b[0] == "blockDim")) and \
                ((n.op == "/" and r == 32) or (n.op == ">>" and r == 5)):
            return True
    return slots is not None and int_value(c) == slots


def _check_counts(ctx):
    """Loops and guards over the slots of a per-warp array bounded by a count of 32-lane warps, and a single
    warp reading one slot per lane (it covers at most as many warps as it has lanes)."""
    an, model = ctx.analysis, ctx.model
    seen = set()
    for s in model.shared:
        if s.extern or (s.function is not None and not s.function.is_device_code):
            continue
        dims = array_dim_exprs(s.node)
        subs = None
        for d, e in enumerate(dims):
            if subs is None:
                subs = array_subscripts(model, s.node)
            slots = [(acc, _slot(an, idx[d])) for acc, idx in subs if len(idx) > d]
            kinds = [(acc, sl, k, warp_index_kind(an, sl)) for acc, (sl, k) in slots]
            warp = [x for x in kinds if x[3] is not None and x[3][0] == "warp"]
            if not warp:
                continue
            stride = warp[0][2]
            size = int_value(e)
            nslots = size // stride if size is not None and stride else None
            lane_read = False
            for acc, sl, k, kind in kinds:
                if kind is not None and kind[0] == "warp":
                    continue
                if _written(acc):
                    continue      # filling slots (`if (tid < 32) s[tid] = 0`) reads nothing uninitialised
                c, what = _bounds_of(acc, sl)
                if what == "if" and int_value(c) == 32:
                    continue      # `if (tid < 32)`: the final-warp stage check above covers it
                if c is not None and id(c) not in seen and _count_32(c, nslots):
                    seen.add(id(c))
                    _report_count(ctx, s, c, what)
                if kind is not None and kind[0] == "lane" and what != "loop" and not lane_read:
                    lane_read = True
                    msg = (f"one warp reads `{_short(acc)}`, one slot of per-warp array `{s.name}` per lane: it "
                           f"covers at most as many warps as a warp has lanes, so a block with more warps than that "
                           f"(256 threads on subgroups of 4 or 8, 1024 on 16) loses the other warps' values; fold "
                           f"the slots with a strided loop `for (w = lane; w < nwarps; w += warpSize)` first")
                    # shape: HIP's 64-lane wavefronts always have as many lanes as warps (translate/hip/translator.py)
                    ctx.report(CODE, acc, msg, shape="lane-read", portable=int_value(kind[1]) is None)


def _written(acc) -> bool:
    cur, p = acc, acc.parent
    while p is not None and p.kind in ("PAREN_EXPR", "UNEXPOSED_EXPR"):
        cur, p = p, p.parent
    return p is not None and p.kind == "BINARY_OPERATOR" and p.op == "=" and p.children[0] is cur


def _report_count(ctx, s, c, what):
    n = _bare(c)
    edit = replace_binary(n, "/", "warpSize") if n.kind == "BINARY_OPERATOR" and int_value(n) is not None \
        and len(n.children) == 2 and int_value(n.children[1]) in (32, 5) else None
    f = fix(f"Count warps with `{_short(n.children[0])} / warpSize`", edit) if edit is not None else None
    where = "the loop over" if what == "loop" else "the reads of"
    ctx.report(CODE, c, f"`{_short(c)}` counts warps of 32 lanes and bounds {where} the slots of per-warp array "
                        f"`{s.name}`: on a 64-lane wavefront it reaches slots no warp wrote (uninitialised), on "
                        f"subgroups narrower than 32 it misses warps; count them with `warpSize`", fix=f)


def check(ctx):
    _check_arrays(ctx, _bit_bases(ctx.model))
    _check_final_stage(ctx)
    _check_counts(ctx)
