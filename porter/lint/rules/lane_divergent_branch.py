"""A branch that splits the lanes of every warp (`threadIdx.x % 2`), or a per-warp branch on `tid / 32`.

## What it does
Flags `if`, `while`, `do` and `switch` conditions in device code that
- test the thread index (or a lane id) for parity or a single bit (`threadIdx.x % 2 == 0`, `tid & 1`,
  `tid & 4`), or modulo a small number / under a small mask when both paths do work (an `else`, a `switch`, a
  loop: `switch (tid % 3)`), or modulo a loop-varying stride (`tid % (2 * s) == 0`, reported as possible):
  neighbouring lanes of one warp take different paths; or
- test a warp id computed with the literal 32 for one warp (`tid / 32 == 0`, `warp == 1`, `warp % 2`, with
  `warp = tid >> 5`): uniform per warp on NVIDIA, but a 64-lane AMD wavefront holds two such "warps", so it
  splits there.
Not flagged: conditions that are the same for the whole block, bounds checks (`tid < n`, `warp < num_warps`:
at most one warp is split, at the tail), one-lane-per-group tests without an `else` (`lane == 0`,
`tid % 32 == 0`, `lane % 8 == 0`), `tid / warpSize`, and `?:` (compiled to a select, not a branch).

## Why is this bad?
A SIMT warp (NVIDIA, 32 lanes) or wavefront (AMD, 64 lanes) executes both sides of a branch that splits its lanes,
one after the other, with the other lanes masked off: a parity branch halves the throughput of the code it
guards. A branch on `tid / 32` costs nothing on NVIDIA but splits every wave64 on AMD CDNA GPUs and every
64/128-wide Vulkan subgroup.

## Example
```cuda
if (threadIdx.x % 2 == 0)
  data[i] = sqrtf(data[i]);
else
  data[i] = -sqrtf(-data[i]);
```

## Use instead
```cuda
// give whole warps the same path: split on the warp index and remap which element j each thread handles
if ((threadIdx.x / warpSize) % 2 == 0)
  data[j] = sqrtf(data[j]);
else
  data[j] = -sqrtf(-data[j]);
```

## Fix safety
No fix: making a branch warp-uniform means changing which thread handles which element.

## References
- NVIDIA CUDA C++ Best Practices Guide, "Branching and Divergence"; M. Harris, "Optimizing Parallel Reduction in
  CUDA" (interleaved addressing with `tid % (2 * s) == 0`, kernel 1).
- ROCm/hip#1041 (a `dim3(32, 2)` block is one wave64: per-warp code written for 32 lanes splits it), the seed
  example `bad_branch`.
"""
from porter.lint.helpers import function_at, int_value, is_lane_id, use_parent, warp_index_kind

CODE = "CP801"
_STMTS = ("IF_STMT", "WHILE_STMT", "DO_STMT", "SWITCH_STMT")


def _condition(stmt):
    ch = stmt.children
    if stmt.kind == "DO_STMT":
        return ch[1] if len(ch) == 2 else None
    return ch[0] if len(ch) >= 2 else None


def _lane_stride(an, node):
    """How far apart neighbouring lanes' values are: the integer coefficient of threadIdx.x, 1 for a lane id;
    None when the value does not follow the lane."""
    p = an.poly(node)
    c = p.coeff("threadIdx.x") if p is not None else None
    if c:
        return abs(c.numerator) if c.denominator == 1 else None
    return 1 if is_lane_id(an, node) else None


def _loop_varying(an, node) -> bool:
    """A value (not thread dependent) that changes between iterations of an enclosing loop."""
    if an.thread_dependent(node):
        return False
    for n in node.model.kind_in(node, "DECL_REF_EXPR"):
        if n.ref is not None and id(n.ref) in an.assigned:
            return True
    return False


def _both_paths(stmt) -> bool:
    """Both sides of the split do work: an `else`, a `switch`, or a loop."""
    return stmt.kind != "IF_STMT" or len(stmt.children) >= 3


def _lane_split(an, stmt, cond):
    """(sub-expression, description) when the condition splits the lanes of a warp."""
    for n in cond.walk():
        if n.kind != "BINARY_OPERATOR" or n.op not in ("%", "&") or len(n.children) != 2:
            continue
        lhs, rhs = n.children
        if int_value(lhs) is not None:
            continue
        stride = _lane_stride(an, lhs)
        if stride is None:
            continue
        v = int_value(rhs)
        if n.op == "%":
            if v is not None and 2 <= v < 32 and stride % v != 0 and (v == 2 or _both_paths(stmt)):
                return n, f"lanes with different `{n.text}` take different paths"
            if v is None and not rhs.strip.is_warp_size() and _loop_varying(an, rhs):
                return n, (f"possibly: while `{rhs.text}` is smaller than the warp, lanes with different "
                           f"`{n.text}` take different paths (interleaved addressing)")
        elif v is not None and 1 <= v < 31 and (stride & -stride) <= v and \
                ((v & (v - 1)) == 0 or _both_paths(stmt)):
            return n, f"lanes with different `{n.text}` take different paths"
    return None


def _splits_wave(use, p, n) -> bool:
    """The warp id `n` (used as `use` in parent `p`) selects single 32-lane warps: `w == k`, `w != k`, `w < k` with
    odd k, `w % 2`, `w & 1`, or the whole condition (`if (w)`)."""
    if p is None or p.kind in ("IF_STMT", "WHILE_STMT", "DO_STMT", "SWITCH_STMT") or \
            (p.kind == "UNARY_OPERATOR" and p.op == "!"):
        return True
    if p.kind != "BINARY_OPERATOR" or len(p.children) != 2:
        return False
    other = p.children[1] if p.children[0] is use else p.children[0]
    k = int_value(other)
    if k is None:
        return False                        # a bounds check against a run-time value
    op = p.op
    if p.children[1] is use:                # `k < w` is `w > k`
        op = {"<": ">", ">": "<", "<=": ">=", ">=": "<="}.get(op, op)
    if op in ("==", "!="):
        return True
    if op in ("<", ">="):
        return k % 2 == 1
    if op in (">", "<="):
        return k % 2 == 0
    if op == "%":
        return k % 2 == 0
    if op == "&":
        return k & 1 == 1
    return False


def _warp32_split(an, cond):
    """The sub-expression that is a warp id computed with 32 (`tid / 32`, `tid >> 5`, or a local holding one) and
    selects single 32-lane warps."""
    for n in cond.walk():
        if n.kind == "BINARY_OPERATOR" and n.op not in ("/", ">>") or n.kind not in ("BINARY_OPERATOR",
                                                                                      "DECL_REF_EXPR"):
            continue
        k = warp_index_kind(an, n)
        if k is None or k[0] != "warp" or k[1].strip.is_warp_size():
            continue
        use, p = use_parent(n)
        if _splits_wave(use, p, n):
            return n
    return None


def check(ctx):
    an = ctx.analysis
    for stmt in ctx.model.of_kind(*_STMTS):
        cond = _condition(stmt)
        if cond is None or not an.thread_dependent(cond):
            continue
        f = function_at(stmt)
        if f is None or not f.is_device_code:
            continue
        what = {"IF_STMT": "branch", "SWITCH_STMT": "switch"}.get(stmt.kind, "loop")
        hit = _lane_split(an, stmt, cond)
        if hit is not None:
            ctx.report(CODE, cond, f"{what} on `{cond.text}` splits the lanes of every warp: {hit[1]}, and the "
                                   f"warp runs both paths one after the other, each with the other lanes idle; make "
                                   f"the condition uniform per warp, e.g. on `threadIdx.x / warpSize`")
            continue
        w = _warp32_split(an, cond)
        if w is not None:
            name = f"`{w.text}`"
            s = w.strip
            if s.kind == "DECL_REF_EXPR" and s.ref is not None:
                d = an.definition(s.ref)
                if d is not None:
                    name += f" (`{d.text}`)"
            ctx.report(CODE, cond, f"{what} on `{cond.text}`: {name} is a warp id for 32-lane warps, uniform "
                                   f"on NVIDIA but a 64-lane AMD wavefront (and a 64/128-wide Vulkan subgroup) "
                                   f"holds two such warps and takes both paths; compute it with "
                                   f"`threadIdx.x / warpSize`")
