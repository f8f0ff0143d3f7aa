"""A `*_sync` warp intrinsic with a partial or run-time mask, or called under a thread-dependent branch.

## What it does
Flags calls of the mask-taking warp intrinsics (`__shfl_*_sync`, `__ballot_sync`, `__any_sync`, `__all_sync`,
`__match_*_sync`, `__reduce_*_sync`, `__syncwarp`) when
- the mask is a constant other than "all lanes" (`0xffff`, `0x0000ffff << 16`...), or is computed at run time
  (a variable, a parameter, a ballot) rather than being `__activemask()`; or
- the call sits under an `if`, loop, `?:` or `&&`/`||` whose condition differs between the threads of a warp
  (`lane < 16`, `tid < n`, a loop bounded by a lane-dependent value).
Conditions on `blockIdx`, `blockDim`, `gridDim`, kernel parameters, vote results (`__any_sync`, `__ballot_sync`),
`tid / warpSize`, `tid < warpSize` and `tid < 64 * k` are the same for every lane of a wavefront (32 or 64 wide)
and are not flagged; neither is a call whose
mask is `__activemask()` (directly or through a local), nor a plain `__syncwarp()` under a guard that keeps whole
32-lane warps (`tid < 32`).

## Why is this bad?
Every lane named in the mask must reach the same intrinsic with the same mask. A branch that only some lanes
take leaves the others out: undefined behaviour in CUDA, hangs or garbage shuffles in practice. Masks written for
32-lane warps go wrong on a 64-lane AMD wavefront: `0xffff` names lanes 0..15 while `lane = tid % 32` puts lanes
32..47 of the wave into the same branch, and `if (tid < 32)` is a whole warp on NVIDIA but half a wavefront on
AMD CDNA.

## Example
```cuda
if (lane < 16)
  v += __shfl_down_sync(0xffffffff, v, 8);
```

## Use instead
```cuda
float t = __shfl_down_sync(0xffffffff, v, 8);   // every lane takes part
if (lane < 16)
  v += t;
```

## Fix safety
No fix: moving the call out of the branch changes which values are exchanged; the code has to be restructured.

## References
- ORNL/HeCBench#177 (hang with a partial mask on a 64-lane wavefront), ROCm/hip#3667, pytorch/FBGEMM#5830.
"""
from porter.analysis.syntax import for_parts
from porter.lint.helpers import (call_target, in_device_code, int_value, is_lane_id, sync_intrinsics, sync_mask,
                                 variable_writes, warp_index_kind)

CODE = "CP203"
_VOTES = {"__any_sync", "__all_sync", "__ballot_sync", "__ballot", "__any", "__all", "__activemask",
          "__match_all_sync", "__syncthreads_count", "__syncthreads_and", "__syncthreads_or"}
_BROADCASTS = {"__shfl_sync", "__shfl"}
_DIVERGENT_CALLS = ("__shfl", "__match", "__lane", "atomic")


# masks that name exactly lanes which reach the call together with the caller: the active lanes, or the caller's
# match group (`__match_any_sync` returns the lanes with the caller's value, all of which executed it)
_SELF_GROUP = {"__activemask", "__match_any_sync", "__match_all_sync"}


def _is_activemask(an, node, depth=0) -> bool:
    n = node.strip
    if n.kind == "CALL_EXPR":
        return n.callee in _SELF_GROUP
    if n.kind == "DECL_REF_EXPR" and n.ref is not None and n.ref.kind == "VAR_DECL" and depth < 4:
        d = an.definition(n.ref)
        if d is not None:
            return _is_activemask(an, d, depth + 1)
        values = _assigned_values(an, n)
        return bool(values) and all(_is_activemask(an, v, depth + 1) for v in values)
    return False


def _values(an, ref):
    """The values a local mask can hold where `ref` reads it: its initialiser when never reassigned (or when the
    writes come later), else every plain `=` of it; None when unknown (`|=`, `++`, address taken)."""
    d = an.definition(ref.ref)
    if d is not None:
        return [d]
    d = _reaching_init(an, ref)
    if d is not None:
        return [d]
    values = _assigned_values(an, ref)
    return values or None


def _same(a, b) -> bool:
    return "".join(a.strip.text.split()).strip("()") == "".join(b.strip.text.split()).strip("()")


def _ballot(node):
    n = node.strip
    if n.kind == "CALL_EXPR" and n.callee in ("__ballot_sync", "__ballot"):
        args = n.args()
        return n, (args[0] if len(args) == 2 else None), args[-1] if args else None
    return None


def _from_block_size(an, node, depth=0) -> bool:
    """`node` is computed from the block size (`blockDim`, a non-type template parameter such as `blockSize`)."""
    if depth > 4:
        return False
    for n in node.walk():
        b = n.builtin()
        if b is not None and b[0] == "blockDim":
            return True
        if n.kind == "DECL_REF_EXPR" and n.ref is not None:
            if n.ref.kind == "TEMPLATE_NON_TYPE_PARAMETER":
                return True
            if n.ref.kind == "VAR_DECL":
                # the initialiser and every value assigned
                vals = [c for c in n.ref.children if not c.kind.endswith("_ATTR") and c.kind != "TYPE_REF"][-1:]
                vals += [v for _, v in variable_writes(n.ref) if v is not None]
                if any(_from_block_size(an, v, depth + 1) for v in vals):
                    return True
    return False


def _block_prefix(an, node, depth=0) -> bool:
    """`0xffffffff >> s` with `s` the same on every thread and computed from the block size: the lanes of the
    first warp that exist in a block narrower than a warp (cuda-samples reduction). All of them reach the call."""
    n = node.strip
    if n.kind == "DECL_REF_EXPR" and n.ref is not None and n.ref.kind == "VAR_DECL" and depth < 4:
        vals = _values(an, n)
        return bool(vals) and all(_block_prefix(an, v, depth + 1) for v in vals)
    if n.kind == "BINARY_OPERATOR" and n.op == ">>" and len(n.children) == 2:
        v = int_value(n.children[0])
        s = n.children[1]
        return v is not None and v & 0xffffffff == 0xffffffff and not an.thread_dependent(s) and \
            _from_block_size(an, s)
    return False


def _guard_ballot(an, mask, site, depth):
    """`m = __ballot_sync(M, P); if (P) f(m, ...)`: the mask is exactly the lanes that take the branch (M itself
    fine). Returns that `if`'s condition (which then splits nothing), else None."""
    n = mask.strip
    if n.kind != "DECL_REF_EXPR" or n.ref is None or n.ref.kind != "VAR_DECL":
        return None
    d = an.definition(n.ref)
    b = _ballot(d) if d is not None else None
    if b is None or b[2] is None:
        return None
    call, inner, pred = b
    if inner is not None and not _mask_ok(an, inner, call, depth + 1)[0]:
        return None
    if _divergent_condition(an, call) is not None:
        return None
    for p in site.ancestors():
        if p.kind in ("FUNCTION_DECL", "FUNCTION_TEMPLATE", "CXX_METHOD", "LAMBDA_EXPR"):
            return None
        if p.kind == "IF_STMT" and p.children and p.children[0] is not site and \
                not an.model.contains(p.children[0], site) and _same(p.children[0], pred) and call.start < p.start:
            return p.children[0]
    return None


def _low_lanes_guard(an, mask, site):
    """`if (... && lane < K) { m = (1 << K) - 1; f(m, ...) }` with K the same on every thread and the other
    conjuncts wave-uniform (cuda-samples shfl_scan): the mask is exactly the lanes that take the branch. Returns
    that `if`'s condition, else None."""
    n = mask.strip
    if n.kind == "DECL_REF_EXPR" and n.ref is not None and n.ref.kind == "VAR_DECL":
        n = an.definition(n.ref)
        n = n.strip if n is not None else None
    if n is None or n.kind != "BINARY_OPERATOR" or n.op != "-" or len(n.children) != 2 or \
            int_value(n.children[1]) != 1:
        return None
    shift = n.children[0].strip
    if shift.kind != "BINARY_OPERATOR" or shift.op != "<<" or len(shift.children) != 2 or \
            int_value(shift.children[0]) != 1:
        return None
    k = shift.children[1]
    if an.thread_dependent(k):
        return None
    for p in site.ancestors():
        if p.kind in ("FUNCTION_DECL", "FUNCTION_TEMPLATE", "CXX_METHOD", "LAMBDA_EXPR"):
            return None
        if p.kind != "IF_STMT" or not p.children or an.model.contains(p.children[0], site):
            continue
        cond = p.children[0]
        parts, stack = [], [cond.strip]
        while stack:
            c = stack.pop()
            if c.kind == "BINARY_OPERATOR" and c.op == "&&" and len(c.children) == 2:
                stack.extend(x.strip for x in c.children)
            else:
                parts.append(c)
        bound = [c for c in parts if c.kind == "BINARY_OPERATOR" and c.op == "<" and len(c.children) == 2 and
                 _same(c.children[1], k) and is_lane_id(an, c.children[0])]
        if len(bound) == 1 and all(c is bound[0] or not an.thread_dependent(c) or _wave_uniform(an, c)
                                   for c in parts):
            return cond
        return None
    return None


def _emulated_match(an, mask, depth) -> bool:
    """The match-any emulation (HeCBench atomicAggregate, pre-sm_70):
    `for (i...) { t = __shfl_sync(M, x, i); b = __ballot_sync(M, t == x); if (i == lane) mask = b; }`: lane i
    keeps the ballot of the lanes whose `x` equals its own, itself included, all of which reach the call."""
    n = mask.strip
    if n.kind != "DECL_REF_EXPR" or n.ref is None or n.ref.kind != "VAR_DECL":
        return False
    vals = _assigned_values(an, n) if an.definition(n.ref) is None else None
    if not vals:
        return False
    ok = False
    for v in vals:
        if _is_activemask(an, v):
            continue
        if not _self_ballot(an, v):
            return False
        ok = True
    return ok


def _self_ballot(an, value) -> bool:
    v = value.strip
    if v.kind == "DECL_REF_EXPR" and v.ref is not None and v.ref.kind == "VAR_DECL":
        d = an.definition(v.ref)
        if d is None:
            return False
        assign = value.parent
        b = _ballot(d)
    else:
        assign, b = value.parent, _ballot(v)
    if b is None or b[2] is None:
        return False
    pred = b[2].strip
    if pred.kind != "BINARY_OPERATOR" or pred.op != "==" or len(pred.children) != 2:
        return False
    lane_var = None
    for side, other in ((pred.children[0], pred.children[1]), (pred.children[1], pred.children[0])):
        sh = side.strip
        if sh.kind == "DECL_REF_EXPR" and sh.ref is not None and sh.ref.kind == "VAR_DECL":
            sh = an.definition(sh.ref).strip if an.definition(sh.ref) is not None else sh
        if sh.kind == "CALL_EXPR" and sh.callee == "__shfl_sync" and len(sh.args()) >= 3 and \
                _same(sh.args()[1], other):
            src = sh.args()[2].strip
            if src.kind == "DECL_REF_EXPR" and src.ref is not None:
                lane_var = src.ref
    if lane_var is None:
        return False
    # the assignment runs only on lane i: `if (i == lane) mask = b;`
    for p in assign.ancestors() if assign is not None else ():
        if p.kind == "IF_STMT" and p.children:
            c = p.children[0].strip
            if c.kind == "BINARY_OPERATOR" and c.op == "==" and len(c.children) == 2:
                refs = [x.strip for x in c.children]
                if any(r.kind == "DECL_REF_EXPR" and r.ref is lane_var for r in refs) and \
                        any(an.thread_dependent(r) for r in refs):
                    return True
            return False
    return False


def _param_ok(an, mask, depth) -> bool:
    """A mask parameter that every call of its function in the file passes a fine mask for (reduction's
    `warpReduceSum(mask, v)`)."""
    n = mask.strip
    if n.kind != "DECL_REF_EXPR" or n.ref is None or n.ref.kind != "PARM_DECL" or depth > 2:
        return False
    fn = an.model.function_of(n)
    if fn is None:
        return False
    params = [c for c in fn.node.children if c.kind == "PARM_DECL"]
    if n.ref not in params:
        return False
    k = params.index(n.ref)
    by_callee = getattr(an.model, "_cp203_calls", None)
    if by_callee is None:                    # calls by callee name, once per model (not a scan per mask)
        by_callee = an.model._cp203_calls = {}
        for c in an.model.of_kind("CALL_EXPR"):
            by_callee.setdefault(c.callee, []).append(c)
    sites = [c for c in by_callee.get(fn.name, ()) if call_target(an.model, c) in (fn, None)]
    if not sites:
        return False
    for c in sites:
        args = c.args()
        if len(args) <= k or not _mask_ok(an, args[k], c, depth + 1)[0]:
            return False
    return True


def _mask_ok(an, mask, site, depth=0):
    """(True, accepted guard or None) when the mask names exactly lanes that reach `site` together: the caller's
    group, the lanes of a narrow block, the ballot of the guard, an emulated match, a parameter every caller
    passes such a mask for."""
    if depth > 3:
        return False, None
    if _is_activemask(an, mask):
        return True, None
    v = int_value(mask)
    if v is not None:
        return v & 0xffffffff == 0xffffffff, None
    if _block_prefix(an, mask):
        return True, None
    g = _guard_ballot(an, mask, site, depth)
    if g is None:
        g = _low_lanes_guard(an, mask, site)
    if g is not None:
        return True, g
    if _emulated_match(an, mask, depth) or _param_ok(an, mask, depth):
        return True, None
    return False, None


def _assigned_values(an, ref):
    """The values a local without an initialiser gets from plain `=` in its function (None if written any other
    way: `|=`, `++`, its address taken)."""
    fn = an.model.function_of(ref)
    if fn is None or fn.body is None or any(c.kind not in ("TYPE_REF",) and not c.kind.endswith("_ATTR")
                                            for c in ref.ref.children):
        return None
    values = []
    for kind in ("BINARY_OPERATOR", "COMPOUND_ASSIGNMENT_OPERATOR", "UNARY_OPERATOR"):
        for n in an.model.kind_in(fn.body, kind):
            if not n.children:
                continue
            t = n.children[0].strip
            if t.kind != "DECL_REF_EXPR" or t.ref is not ref.ref:
                continue
            if kind == "BINARY_OPERATOR" and n.op == "=" and len(n.children) == 2:
                values.append(n.children[1])
            elif kind != "BINARY_OPERATOR" and (kind == "COMPOUND_ASSIGNMENT_OPERATOR" or
                                                n.op in ("++", "--", "post++", "post--", "&")):
                return None
    return values


def _wave_uniform(an, node, depth=0, seen=None) -> bool:
    """True when a thread-dependent value is still the same on every lane of a wavefront of any width: it only
    depends on vote results, broadcasts from a constant lane, or `x / warpSize`."""
    seen = seen if seen is not None else set()
    stack = [node]
    while stack:
        n = stack.pop()
        if n.kind == "CALL_EXPR":
            if n.spelling in _VOTES:
                continue
            if n.spelling in _BROADCASTS:
                args = n.args()
                src = args[2] if n.spelling == "__shfl_sync" and len(args) > 2 else args[1] if len(args) > 1 \
                    else None
                if src is not None and int_value(src) is not None:
                    continue
            if n.spelling.startswith(_DIVERGENT_CALLS):
                return False
        if n.kind == "BINARY_OPERATOR" and n.op == "/" and len(n.children) == 2 and n.children[1].is_warp_size():
            continue
        if n.kind == "BINARY_OPERATOR" and _whole_waves(n):
            continue
        b = n.builtin()
        if b is not None and b[0] == "threadIdx":
            return False
        if n.kind == "DECL_REF_EXPR" and n.ref is not None and n.ref.kind == "VAR_DECL" and \
                an.thread_dependent(n):
            if id(n.ref) in seen or depth > 6:
                continue
            seen.add(id(n.ref))
            d = an.definition(n.ref)
            if d is None:
                d = _reaching_init(an, n)
            if d is None:
                return False
            if not _wave_uniform(an, d, depth + 1, seen):
                return False
            continue
        stack.extend(n.children)
    return True


_LOOPS = ("FOR_STMT", "WHILE_STMT", "DO_STMT", "CXX_FOR_RANGE_STMT")


def _reaching_init(an, ref):
    """The initialiser of the local `ref` names when that is the value it has there although the local is
    reassigned later: every write comes after `ref` in the text and no loop around `ref` contains one (quantAQLM:
    `bool pred = row < m;` before `row = row * stride + lane`). None otherwise."""
    decl = ref.ref
    exprs = [c for c in decl.children if not c.kind.endswith("_ATTR") and c.kind not in ("TYPE_REF", "NAMESPACE_REF")]
    if not exprs or decl.start > ref.start:
        return None
    writes = [w for w, _ in variable_writes(decl)]
    if any(w.start <= ref.start for w in writes):
        return None
    loops = [p for p in ref.ancestors() if p.kind in _LOOPS]
    if any(an.model.contains(loop, w) for loop in loops for w in writes):
        return None
    return exprs[-1]


def _whole_waves(cmp) -> bool:
    """`tid < 64`, `tid >= 128`, `tid < warpSize`: keeps or drops whole wavefronts of 32 and of 64 lanes."""
    if cmp.op not in ("<", ">=", "<=", ">") or len(cmp.children) != 2:
        return False
    b = cmp.children[1].strip
    if b.is_warp_size() or (b.kind == "BINARY_OPERATOR" and b.op == "*" and
                            any(c.is_warp_size() for c in b.children) and
                            any(int_value(c) is not None for c in b.children)):
        return cmp.op in ("<", ">=")
    v = int_value(b)
    if v is None or v <= 0:
        return False
    return v % 64 == 0 if cmp.op in ("<", ">=") else v % 64 == 63


def _divergent_condition(an, call, ignore=None):
    """(condition node, statement kind) of the innermost thread-dependent condition guarding `call` (skipping
    those `ignore(cond)` accepts)."""
    child = call
    for p in call.ancestors():
        if p.kind in ("FUNCTION_DECL", "FUNCTION_TEMPLATE", "CXX_METHOD", "LAMBDA_EXPR"):
            return None
        cond = None
        if p.kind in ("IF_STMT", "SWITCH_STMT", "WHILE_STMT") and p.children and p.children[0] is not child:
            cond = p.children[0]
        elif p.kind == "DO_STMT" and len(p.children) == 2 and p.children[0] is child:
            cond = p.children[1]
        elif p.kind == "FOR_STMT" and p.children and p.children[-1] is child:
            init, c, inc, body = for_parts(p)
            if body is child:
                cond = c
        elif p.kind == "CONDITIONAL_OPERATOR" and len(p.children) == 3 and p.children[0] is not child:
            cond = p.children[0]
        elif p.kind == "BINARY_OPERATOR" and p.op in ("&&", "||") and len(p.children) == 2 and \
                p.children[1] is child:
            cond = p.children[0]
        if cond is not None and an.thread_dependent(cond) and not _wave_uniform(an, cond) and \
                not (ignore is not None and ignore(cond)):
            return cond, p.kind
        child = p
    return None


def _lanes(v: int) -> str:
    v &= 0xffffffffffffffff
    bits = [i for i in range(64) if v >> i & 1]
    if not bits:
        return "no lane"
    if bits == list(range(bits[0], bits[-1] + 1)):
        return f"lanes {bits[0]}..{bits[-1]}" if len(bits) > 1 else f"lane {bits[0]}"
    return f"{len(bits)} scattered lanes"


def _splits_wave(an, cond) -> bool:
    """`tid < 32`, `tid / 32 == w`: uniform per 32-lane warp, not per 64-lane wavefront."""
    for n in cond.walk():
        if n.kind == "DECL_REF_EXPR":
            k = warp_index_kind(an, n)
            if k is not None and k[0] == "warp" and not k[1].is_warp_size():
                return True
        if n.kind == "BINARY_OPERATOR" and len(n.children) == 2:
            if n.op in ("<", "<=", ">", ">=", "==", "!="):
                v = int_value(n.children[1])
                if v is not None and v != 0 and v % 32 in (0, 31) and an.thread_dependent(n.children[0]):
                    return True
            k = warp_index_kind(an, n)
            if k is not None and k[0] == "warp" and not k[1].is_warp_size():
                return True
    return False


def check(ctx):
    an = ctx.analysis
    names = sync_intrinsics()
    for call in ctx.model.of_kind("CALL_EXPR"):
        if call.spelling not in names or not in_device_code(call):
            continue
        mask = sync_mask(call)
        problems = []
        accepted = None
        if mask is not None:
            if _is_activemask(an, mask):
                continue
            v = int_value(mask)
            if v is None:
                s = mask.strip
                if s.kind == "DECL_REF_EXPR" and s.ref is not None and s.ref.kind == "VAR_DECL":
                    d = an.definition(s.ref)
                    v = int_value(d) if d is not None else None
            if v is not None:
                if v & 0xffffffff != 0xffffffff:
                    problems.append(f"its constant mask `{mask.text}` ({v & 0xffffffffffffffff:#x}) names only "
                                    f"{_lanes(v)}: lanes outside it that reach the call, or lanes 32..63 of a "
                                    f"wave64 that compute the same lane index, make it undefined")
            else:
                ok, accepted = _mask_ok(an, mask, call)
                if not ok:
                    problems.append(f"its mask `{mask.text}` is computed at run time: possibly a partial mask "
                                    f"that must match exactly the lanes that reach this call, which differ on a "
                                    f"wave64")
        # a plain `__syncwarp()` is a wavefront barrier in HIP: a guard that keeps whole 32-lane warps is fine
        ignore = (lambda c: _splits_wave(an, c)) if call.spelling == "__syncwarp" and mask is None else None
        if accepted is not None:
            ignore = lambda c, g=accepted: c is g      # noqa: E731 (the mask is the ballot of this guard)
        dc = _divergent_condition(an, call, ignore)
        if dc is not None:
            cond, kind = dc
            row = ctx.source.position(cond.start)[0]
            what = {"IF_STMT": "branch", "SWITCH_STMT": "switch", "CONDITIONAL_OPERATOR": "`?:`",
                    "BINARY_OPERATOR": "short-circuit operand"}.get(kind, "loop")
            note = "; uniform per 32-lane warp, but it splits a 64-lane wavefront" if _splits_wave(an, cond) else ""
            problems.append(f"it runs under the thread-dependent {what} condition `{cond.text}` (line {row}): "
                            f"lanes named in the mask that do not take it never arrive{note}")
        if problems:
            ctx.report(CODE, call, f"`{call.spelling}`: " + "; ".join(problems))
