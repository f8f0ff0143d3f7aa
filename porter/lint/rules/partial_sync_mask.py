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
from porter.lint.helpers import in_device_code, int_value, sync_intrinsics, sync_mask, warp_index_kind

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
                return False
            if not _wave_uniform(an, d, depth + 1, seen):
                return False
            continue
        stack.extend(n.children)
    return True


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
                problems.append(f"its mask `{mask.text}` is computed at run time: possibly a partial mask that "
                                f"must match exactly the lanes that reach this call, which differ on a wave64")
        # a plain `__syncwarp()` is a wavefront barrier in HIP: a guard that keeps whole 32-lane warps is fine
        ignore = (lambda c: _splits_wave(an, c)) if call.spelling == "__syncwarp" and mask is None else None
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
