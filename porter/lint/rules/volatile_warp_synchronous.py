"""Unrolled `s[t] += s[t + K]` reduction steps on shared memory with no `__syncwarp()` between them.

## What it does
Finds two or more tree-reduction steps `s[i] += s[i + K]` (also `s[i] = s[i] + s[i + K]`,
`s[i] = fmaxf(s[i], s[i + K])`, each optionally behind a uniform `if (blockSize >= 64)`) on the same shared
array, on a pointer into one (`volatile float *vsmem = sdata;`) or on a `volatile` pointer parameter, with a
thread-dependent `i`, a constant `K` and no `__syncwarp()` / `__syncthreads()` between the steps: the
"last warp" tail of the classic shared-memory reduction. Also the loop form `for (int k = 16; k > 0; k >>= 1)
s[i] += s[i + k];` starting at a warp-sized offset without a barrier in the body. Steps separated by barriers
(the block-level part of the reduction) are not flagged.

## Why is this bad?
The tail relies on the 32 threads of a warp executing each step in lockstep, so that every lane reads its
partner before anyone overwrites it. Since Volta, independent thread scheduling gives no such guarantee, and
AMD's compiler does not promise it for a wavefront either: the reduction silently returns wrong sums
(kokkos/kokkos#9511 on gfx90a). On a 64-lane wavefront the step `s[t] += s[t + 32]` also reads elements
written by lanes of the same wavefront, and a `tid < 32` guard only covers half of it. Without `volatile`
the compiler may even keep `s[t]` in a register across steps.

## Example
```cuda
if (tid < 32) {
  volatile float *vsmem = sdata;
  vsmem[tid] += vsmem[tid + 32];
  vsmem[tid] += vsmem[tid + 16];
  vsmem[tid] += vsmem[tid + 8];
}
```

## Use instead
```cuda
if (tid < 32) {                       // or a __shfl_down_sync reduction over warpSize lanes
  volatile float *vsmem = sdata;
  { float partner = vsmem[tid + 32]; __syncwarp(); vsmem[tid] += partner; __syncwarp(); }
  { float partner = vsmem[tid + 16]; __syncwarp(); vsmem[tid] += partner; __syncwarp(); }
  { float partner = vsmem[tid + 8]; __syncwarp(); vsmem[tid] += partner; __syncwarp(); }
}
```

## Fix safety
Unsafe: it adds synchronisation. Each step becomes read partner / `__syncwarp()` / update / `__syncwarp()`
(a `__syncwarp()` only between the steps would still let lane `t + K` overwrite `s[t + K]` before lane `t` reads
it). Offered only when the steps are reached by whole warps (no guard, or `tid < 32`-style guards) and no step
has its own thread-dependent guard. The fixed code is still a 32-lane algorithm: on a wave64 the `tid < 32`
guard leaves half of each wavefront idle and the tail must cover `warpSize` lanes; a shuffle reduction over
`warpSize` is the real port.

## References
- kokkos/kokkos#9511 (silent wrong reduction on gfx90a: lockstep is no excuse), ORNL/HeCBench#91, GPUMD#36.
"""
import re

from porter.analysis.shared_access import shared_memory
from porter.lint.context import fix, replace
from porter.analysis.syntax import for_parts
from porter.lint.helpers import (contains_barrier, in_device_code, int_value, reduction_step, spelled,
                                 warp_index_kind)

CODE = "CP301"


def _base(an, sm, sub):
    """(declaration, volatile?) of a step's array when it is shared memory or a volatile pointer parameter."""
    b = sub.children[0].strip
    if b.kind != "DECL_REF_EXPR" or b.ref is None:
        return None
    decl = b.ref
    vol = "volatile" in decl.type
    ptr = sm.pointer(b)
    if ptr is not None:
        return decl, vol or ptr[0].volatile
    if decl.kind == "PARM_DECL" and vol and "*" in decl.type:
        return decl, True
    return None


def _step(an, sm, stmt):
    """A reduction step statement: dict(expr, info, base, volatile, guard) or None."""
    guard = None
    e = stmt
    if stmt.kind == "IF_STMT" and len(stmt.children) == 2:
        guard, e = stmt.children
        if e.kind == "COMPOUND_STMT":
            if len(e.children) != 1:
                return None
            e = e.children[0]
    if e.kind not in ("COMPOUND_ASSIGNMENT_OPERATOR", "BINARY_OPERATOR"):
        return None
    info = reduction_step(an, e)
    if info is None:
        return None
    base = _base(an, sm, info[0])
    if base is None:
        return None
    return {"expr": e, "info": info, "decl": base[0], "volatile": base[1], "guard": guard}


def _whole_warps(an, cond) -> bool:
    """A thread-dependent guard that keeps or drops whole 32-lane warps: `tid < 32`, `warp == 0`."""
    n = cond.strip
    if n.kind != "BINARY_OPERATOR" or len(n.children) != 2:
        return False
    a, b = n.children
    v = int_value(b)
    if n.op == "<" and (b.is_warp_size() or v is not None and v > 0 and v % 32 == 0):
        return True
    if n.op == "<=" and v is not None and v % 32 == 31:
        return True
    if n.op in ("==", "!="):
        k = warp_index_kind(an, a) or warp_index_kind(an, b)
        return k is not None and k[0] == "warp"
    return False


def _fixable_context(an, node) -> bool:
    child = node
    for p in node.ancestors():
        if p.kind in ("FUNCTION_DECL", "FUNCTION_TEMPLATE", "CXX_METHOD"):
            return True
        cond = None
        if p.kind in ("IF_STMT", "WHILE_STMT", "SWITCH_STMT") and p.children and p.children[0] is not child:
            cond = p.children[0]
        elif p.kind == "FOR_STMT" and p.children and p.children[-1] is child:
            cond = for_parts(p)[1]
        elif p.kind == "DO_STMT":
            cond = p.children[-1]
        if cond is not None and an.thread_dependent(cond) and not _whole_warps(an, cond):
            return False
        child = p
    return True


def _temp_name(fn_node) -> str:
    used = set(re.findall(r"\w+", fn_node.text))
    name, i = "partner", 1
    while name in used:
        name, i = f"partner{i}", i + 1
    return name


def _rewrite(model, step, name):
    """Edit that turns `s[i] += s[i + K];` into `{ T partner = s[i + K]; __syncwarp(); s[i] += partner;
    __syncwarp(); }`."""
    e = step["expr"]
    rd = step["info"][1]
    if not spelled(e) or model.macro_at(e.start, e.end) is not None:
        return None
    etype = re.sub(r"\b(volatile|const)\b\s*", "", rd.type).strip()
    if not etype or not re.fullmatch(r"[\w:<>, ]+", etype):
        return None
    data = model.source.data
    semi = e.end + len(data[e.end:e.end + 64]) - len(data[e.end:e.end + 64].lstrip(b" \t"))
    if data[semi:semi + 1] != b";":
        return None
    end = semi + 1
    text = model.source.slice(e.start, e.end)
    rs, re_ = rd.start - e.start, rd.end - e.start
    body = text[:rs] + name + text[re_:]
    return replace((e.start, end), f"{{ {etype} {name} = {rd.text}; __syncwarp(); {body}; __syncwarp(); }}")


def _report(ctx, an, steps, loop=None):
    first, last = steps[0], steps[-1]
    decl = first["decl"]
    ks = [int(s["info"][2].constant) for s in steps if s["info"][2].is_const()]
    desc = f"{len(steps)} warp-synchronous reduction steps" if loop is None else \
        "a warp-synchronous reduction loop"
    shown = f"`{first['expr'].text}`" + (f" ... `{last['expr'].text}`" if len(steps) > 1 else "")
    if decl.kind == "PARM_DECL":
        where = "volatile pointer parameter"
    else:
        where = ("volatile " if first["volatile"] else "") + "shared " + ("pointer" if "*" in decl.type else "array")
    between = "between them" if loop is None else "between iterations"
    msg = f"{desc} {shown} on {where} `{decl.spelling}` with no `__syncwarp()` {between}: the steps rely " \
          f"on the lanes of a warp running in lockstep, which Volta's independent scheduling and AMD's compiler " \
          f"do not guarantee"
    if any(abs(k) >= 32 for k in ks) or loop is not None:
        msg += f"; on a 64-lane wavefront the step `+= {decl.spelling}[... + 32]` reads lanes of the same " \
               f"wavefront, and a `tid < 32` guard covers only half of it"
    if not first["volatile"]:
        msg += "; without `volatile` the compiler may also keep the values in registers between steps"
    f = None
    if _fixable_context(an, first["expr"]) and all(
            s["guard"] is None or not an.thread_dependent(s["guard"]) for s in steps):
        fn = first["expr"].enclosing("FUNCTION_DECL", "FUNCTION_TEMPLATE", "CXX_METHOD")
        name = _temp_name(fn)
        edits = [_rewrite(ctx.model, s, name) for s in steps]
        if fn is not None and all(e is not None for e in edits):
            f = fix("Read the partner, `__syncwarp()`, update, `__syncwarp()` in every step", *edits, unsafe=True)
    ctx.report(CODE, (first["expr"].start, last["expr"].end), msg, fix=f)


def _loop_step(an, sm, loop):
    init, cond, inc, body = for_parts(loop)
    if body is None or init is None or contains_barrier(loop):
        return None
    stmt = body
    if body.kind == "COMPOUND_STMT":
        if len(body.children) != 1:
            return None
        stmt = body.children[0]
    st = _step(an, sm, stmt)
    if st is None or st["info"][2].is_const():
        return None
    var = next((n for n in init.walk() if n.kind == "VAR_DECL"), None)
    if var is None or st["info"][2].variables() != {var.spelling}:
        return None
    exprs = [c for c in var.children if not c.kind.endswith("_ATTR")]
    start = int_value(exprs[-1]) if exprs else None
    if start is None or not 0 < start <= 32:
        return None
    if cond is not None and an.thread_dependent(cond):
        return None
    return st


def check(ctx):
    an = ctx.analysis
    sm = shared_memory(ctx.model, an)
    for comp in ctx.model.of_kind("COMPOUND_STMT"):
        if not in_device_code(comp):
            continue
        run = []
        for stmt in comp.children + [None]:
            st = _step(an, sm, stmt) if stmt is not None else None
            if st is not None and not st["info"][2].is_const():
                st = None
            closes = stmt is None or (st is None and contains_barrier(stmt)) or \
                (st is not None and run and st["decl"] is not run[0]["decl"])
            if closes:
                if len(run) >= 2:
                    _report(ctx, an, run)
                run = []
            if st is not None:
                run.append(st)
    for loop in ctx.model.of_kind("FOR_STMT"):
        if not in_device_code(loop):
            continue
        st = _loop_step(an, sm, loop)
        if st is not None:
            _report(ctx, an, [st], loop=loop)
