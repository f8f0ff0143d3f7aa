"""Two threads access the same shared-memory element between the same two barriers, at least one of them writing.

## What it does
Splits each kernel (and device function) into barrier intervals: the code between two `__syncthreads()` (or
`__syncwarp()`, cooperative-groups `sync()`, a device function that calls one), following `if`/`else`, loops
(the end of one iteration and the start of the next share an interval unless a barrier separates them) and early
`return`s. For each pair of accesses to the same `__shared__` array that can fall in one interval, at least one
a write (an atomic counts as a write against plain accesses), it solves `f(t1) == g(t2), t1 != t2` exactly for
the kernel's block shape: every thread of the block, every iteration of the loops the indices use, guards on
thread indices (`if (tid < s)`, `if (tid % (2 * s) == 0)`) applied. A solution is reported with the two threads,
the element and the accesses.

Reported as "possible" (a warning) when the shape is not known (a representative block is tried), when a guard
or a loop bound depends on kernel arguments or loaded data, or when an index the analysis cannot follow (a load,
`s[idx[tid]]`) is written in the same interval as another access. Accesses in different device functions are
not paired.

## Why is this bad?
Without a barrier the order of the two accesses is whatever the scheduler does: a reader gets the old or the
new value. Code that happens to work on NVIDIA because the two threads sit in the same 32-lane warp breaks on
AMD (64-lane wavefronts are scheduled differently, LDS accesses are not ordered across waves) and on Vulkan
devices with other subgroup sizes. Races show up as wrong results that change from run to run.

## Example
```cuda
__shared__ float s[256];
s[threadIdx.x] = in[i];
out[i] = s[threadIdx.x + 1];        // reads the neighbour's element: nothing orders the two
```

## Use instead
```cuda
s[threadIdx.x] = in[i];
__syncthreads();
out[i] = s[(threadIdx.x + 1) % 256];
```

## Fix safety
Unsafe fix: insert `__syncthreads();` before the statement of the second access, offered only when both
accesses are in one block of statements reached by every thread of the block (no thread-dependent condition
or early return on the way): a barrier that not all threads reach deadlocks (CP701). It changes timing and is a
synchronisation change, so it is never applied without `--unsafe-fixes`.

## References
- GPUVerify (Betts, Chong, Donaldson, Qadeer, Thomson: "GPUVerify: a verifier for GPU kernels", OOPSLA 2012)
  and its benchmark kernels: the missing barrier in a tree reduction, neighbour reads in a shift, the
  transposed tile read before the barrier.
- kokkos/kokkos#9511 (silent wrong reduction on gfx90a: lockstep is no excuse), ORNL/HeCBench#91, GPUMD#36.
"""
from porter.lint.context import fix, insert

CODE = "CP702"
# Without a known shape: a small block, blockDim left unknown (code that depends on it is not evaluated). Its
# threads exist in any realistic block and access the same elements there, so a race found with it is a race
# for those shapes too; a bigger guess would invent races the kernel's own shape avoids (a 16 x 16 guess on a
# 32 x 8 transpose). 1-D kernels get two warps' worth, so that races across warps show.
_REPRESENTATIVE = {1: (64, 1, 1), 2: (2, 2, 1), 3: (2, 2, 2)}
_SAMPLES = (7919, 104729, 1299709, 15485863)


def check(ctx):
    model = ctx.model
    if not model.shared:
        return
    # the thread-space machinery is imported only for files with shared memory (start-up time matters)
    from porter.analysis.launch import function_shapes
    from porter.analysis.shared_access import shared_memory
    from porter.analysis.barriers import barrier_functions
    from porter.analysis.enumeration import scalar_accesses
    accs = shared_memory(model, ctx.analysis).accesses
    fns = []
    for f in model.functions:
        if f.is_device_code and f.body is not None:
            nodes = [a.node for a in accs if a.function is f] + [a.node for a in scalar_accesses(model, f)]
            if nodes and any(_writes_like(n) for n in nodes):
                fns.append((f, nodes))
    bfuncs = barrier_functions(model) if fns else set()
    for fn, nodes in fns:
        reported = set()
        for shape in function_shapes(model, fn, ctx.settings):
            _check_shape(ctx, fn, shape, nodes, bfuncs, reported)


def _writes_like(node) -> bool:
    from porter.analysis.enumeration import access_mode
    return access_mode(node) in ("write", "rw", "atomic", None)


def _dims_used(fn) -> int:
    from porter.analysis.barriers import facts
    return facts(fn).dims


def _check_shape(ctx, fn, shape, nodes, bfuncs, reported):
    from porter.analysis.intervals import Intervals, relations
    from porter.analysis.enumeration import always_enters, function_accesses
    if shape.exact and shape.dims:
        block, exact = shape.dims, True
    else:
        block, exact = _REPRESENTATIVE[_dims_used(fn)], False
    # an unknown shape leaves blockDim unknown: code that depends on it is not evaluated with a guess
    comp, infos = function_accesses(ctx.model, ctx.analysis, fn, block, shape.env, exact)
    iv = Intervals(fn, nodes, bfuncs, lambda loop: always_enters(comp, loop))
    # a warp-level sync (`__syncwarp()`, `tile.sync()`) orders the threads of one warp / tile only: accesses it
    # alone separates still race across warps (intervals of the block barriers, solved for two groups)
    from porter.analysis.barriers import barrier_functions, warp_sync_widths
    block_bfuncs = barrier_functions(ctx.model, block_only=True)
    widths = warp_sync_widths(fn, bfuncs, block_bfuncs)
    ivb = Intervals(fn, nodes, block_bfuncs, lambda loop: always_enters(comp, loop), block_only=True) \
        if widths else None
    spaces = {}
    for i, a in enumerate(infos):
        for b in infos[i:]:
            if a.acc.array is not b.acc.array or id(b.node) in reported:
                continue
            if not _conflicting(a, b):
                continue
            rels = relations(iv.tags.get(id(a.node), set()), iv.tags.get(id(b.node), set()))
            width = None
            if not rels and ivb is not None:
                rels = relations(ivb.tags.get(id(a.node), set()), ivb.tags.get(id(b.node), set()))
                width = min(widths)
            if not rels:
                continue
            if a.offset is None or b.offset is None:
                if width is not None:
                    continue      # no evidence across warps for an index the analysis cannot follow
                if not _benign(ctx.analysis, a, b):
                    _report_opaque(ctx, a, b, shape, block, reported)
                continue
            if a.acc.elem_size != b.acc.elem_size:
                continue
            hit = _solve(comp, a, b, rels, block, spaces, exact, width)
            if hit is None or _benign(ctx.analysis, a, b):
                continue
            later = b if b.node.start >= a.node.start else a
            if id(later.node) in reported:
                continue
            reported.add(id(later.node))
            possible = not exact or hit["inexact"]
            msg = _message(a, b, hit, shape, block, exact)
            f = None if possible and not exact else _fix(ctx, comp, a, b, hit)
            d = ctx.report(CODE, later.node, msg, fix=f)
            if possible:
                d.severity = "warning"


def _conflicting(a, b) -> bool:
    if a.mode is None and b.mode is None:
        return False
    if a is b:
        return a.mode in ("write", "rw")
    if a.mode == "atomic" and b.mode == "atomic":
        return False
    kinds = (a.mode, b.mode)
    return any(k in ("write", "rw", "atomic") for k in kinds) or (None in kinds)


def _stored_value(info):
    """The right-hand side of `x = value` for a plain store, else None."""
    child, p = info.node, info.node.parent
    while p is not None and p.kind in ("PAREN_EXPR", "UNEXPOSED_EXPR"):
        child, p = p, p.parent
    if p is not None and p.kind == "BINARY_OPERATOR" and p.op == "=" and len(p.children) == 2 and \
            p.children[0] is child:
        return p.children[1]
    return None


def _benign(an, a, b) -> bool:
    """Two plain stores of the same thread-independent value (`done = 1` by every thread): GPUVerify's benign
    write-write race, not reported."""
    if a.mode != "write" or b.mode != "write":
        return False
    va, vb = _stored_value(a), _stored_value(b)
    if va is None or vb is None or an.thread_dependent(va) or an.thread_dependent(vb):
        return False
    if any(n.kind in ("ARRAY_SUBSCRIPT_EXPR", "CALL_EXPR") or (n.kind == "UNARY_OPERATOR" and n.op == "*")
           for v in (va, vb) for n in v.walk()):
        return False              # a load may see another thread's store
    return " ".join(va.text.split()) == " ".join(vb.text.split())


def _uniform_values(a, b):
    """Values for kernel-uniform unknowns (blockIdx, arguments) in the two offsets, and whether they cancel
    exactly (same terms in both, not multiplied by a thread index or a loop variable)."""
    names = a.offset.unknowns | b.offset.unknowns
    if not names:
        return {}, True
    pa, pb = a.acc.offset(), b.acc.offset()
    exact = pa is not None and pb is not None
    if exact:
        ta = {k: v for k, v in pa.terms.items() if any(x in names for x in k)}
        tb = {k: v for k, v in pb.terms.items() if any(x in names for x in k)}
        exact = ta == tb and not any(
            x.startswith("threadIdx.") or (x not in names and not x.startswith(("blockDim.", "gridDim.")))
            for k in ta for x in k)
    if exact:
        return {u: 0 for u in names}, True
    return {u: _SAMPLES[i % len(_SAMPLES)] * (i + 1) for i, u in enumerate(sorted(names))}, False


def _space(comp, info, U, spaces, exact):
    from porter.analysis.enumeration import enumerate_access
    key = (id(info.node), tuple(sorted(U.items())))
    sp = spaces.get(key)
    if sp is None:
        scen = tuple(lp.idx for lp in comp.loops if lp.barrier and lp.error is None and not lp.thread_dependent())
        extra = tuple(lp.idx for lp in info.loops if lp.thread_dependent())
        sp = enumerate_access(comp, [info.offset], info.guards, "map", U, scen_loops=scen, extra_loops=extra,
                              group_rows=not exact)
        spaces[key] = sp
    return sp


def _injective(info, comp, block) -> bool:
    """The offset is affine in the thread indices alone and no two threads of the block share a value
    (`s[ty * 17 + tx]` on a 16 x 16 block): a mixed-radix check on the coefficients."""
    from porter.analysis.affine import Poly
    from porter.analysis.shared_access import substitute
    p = info.acc.offset()
    if p is None:
        return False
    for i, d in enumerate("xyz"):
        p = substitute(p, f"blockDim.{d}", Poly.const(block[i]))
    for name, v in comp.bindings.items():
        p = substitute(p, name, Poly.const(v))
    coef = {}
    for mono, c in p.terms.items():
        if mono == ():
            continue
        if len(mono) != 1 or not mono[0].startswith("threadIdx."):
            return False
        coef[mono[0][-1]] = abs(c)
    span = 0
    for c, n in sorted((coef.get(d, 0), block[i]) for i, d in enumerate("xyz") if block[i] > 1):
        if c <= span:
            return False
        span += c * (n - 1)
    return True


def _solve(comp, a, b, rels, block, spaces, exact=True, width=None):
    """A colliding pair of threads; with `width` (only a warp-level sync of groups of `width` threads separates
    the accesses) the two threads must be in different groups."""
    # cheap exits before any enumeration: disjoint ranges, or one injective offset written and read
    ia, ib = comp.interval(a.offset), comp.interval(b.offset)
    if ia is not None and ib is not None and (ia.hi < ib.lo or ib.hi < ia.lo):
        return None
    if a.offset.src == b.offset.src and not a.offset.loops and not a.offset.unknowns and \
            _injective(a, comp, block):
        return None
    U, cancel = _uniform_values(a, b)
    sa = _space(comp, a, U, spaces, exact)
    sb = sa if b is a else _space(comp, b, U, spaces, exact)
    if not sa.ok or not sb.ok:
        return None
    multa = any(block[i] > 1 for i, d in enumerate("xyz") if d not in sa.threads)
    multb = any(block[i] > 1 for i, d in enumerate("xyz") if d not in sb.threads)
    loop_node = {lp.idx: id(lp.node) for lp in comp.loops}
    # Prefer a witness pair in two warps (only __syncthreads() orders those; with a guessed block, threads of
    # different rows count as possibly different warps). Races inside one warp are reported too, unless the
    # code is warp-synchronous (volatile, confined to one warp, or indexed by lane / warp ids): that is
    # CP301's / CP302's, fixed with __syncwarp.
    group = width or 32

    def accept(t1, t2):
        if not exact and (t1[1] != t2[1] or t1[2] != t2[2]):
            return True
        return _lane_id(t1, block) // group != _lane_id(t2, block) // group
    ws = []

    def warp_sync():
        if width is not None:
            return True               # same-group pairs are ordered by the warp-level sync
        if not ws:
            ws.append((_volatile(a) and _volatile(b)) or len(sa.warps | sb.warps) <= 1 or
                      _warp_structured(comp.an, a) or _warp_structured(comp.an, b))
        return ws[0]
    names = a.offset.unknowns | b.offset.unknowns
    for rel in sorted(rels, key=len):
        if any(v != 0 for _, v in rel) and names & comp.mutable:
            continue                  # a reassigned uniform index differs between iterations: not comparable
        shift = dict(rel)
        for ka, ma in sa.maps.items():
            for kb, mb in sb.maps.items():
                if not _consistent(sa.scen_loops, ka, sb.scen_loops, kb, shift, loop_node):
                    continue
                hit = _collide(ma, mb, multa, multb, b is a, block, sa.threads, sb.threads, accept)
                if hit is None and not warp_sync():
                    hit = _collide(ma, mb, multa, multb, b is a, block, sa.threads, sb.threads)
                if hit is not None:
                    hit["rel"] = rel
                    hit["width"] = width
                    hit["sampled"] = bool(U)          # unknowns set to 0 or samples: not the real element
                    hit["inexact"] = (not cancel or sa.capped or sb.capped or sa.unbounded or sb.unbounded or
                                      _dropped(a, comp.an) or _dropped(b, comp.an))
                    return hit
    return None


def _consistent(la, ka, lb, kb, shift, loop_node) -> bool:
    """Iteration indices of the barrier loops both accesses use agree with the interval relation."""
    ia = dict(zip(la, ka))
    ib = dict(zip(lb, kb))
    if "any" in shift:
        return True
    for lp, va in ia.items():
        if lp in ib:
            d = shift.get(loop_node[lp], 0)
            if d is not None and ib[lp] - va != d:
                return False
    return True


def _other(thr, block, threads):
    """A thread that differs from `thr` only in dimensions the index does not use, as far away as possible
    (another warp when the block has one)."""
    t, changed = list(thr), False
    for i, d in enumerate("xyz"):
        if d not in threads and block[i] > 1:
            t[i] = block[i] - 1 if thr[i] == 0 else 0
            changed = True
    return tuple(t) if changed else None


def _collide(ma, mb, multa, multb, same, block, tha, thb, accept=None):
    """First element both maps reach from two different threads (for `same`: one map, two threads) that
    `accept` takes. Map entries: [first thread, another thread, a thread of another warp / row, group]."""
    def cands(e, mult, th):
        out = [t for t in e[:3] if t is not None]
        if mult:
            o = _other(e[0], block, th)
            if o is not None:
                out.append(o)
        return out

    if same:
        for v, e in ma.items():
            if e[1] is None and not multa:
                continue                      # one thread only
            cs = cands(e, multa, tha)
            for i, t1 in enumerate(cs):
                for t2 in cs[i + 1:]:
                    if t1 != t2 and (accept is None or accept(t1, t2)):
                        return {"value": v, "t1": t1, "t2": t2}
        return None
    small, large, swap = (ma, mb, False) if len(ma) <= len(mb) else (mb, ma, True)
    for v, ea in small.items():
        eb = large.get(v)
        if eb is None:
            continue
        if swap:
            ea, eb = eb, ea
        if ea[1] is None and eb[1] is None and not multa and not multb and ea[0] == eb[0]:
            continue                          # the same single thread on both sides
        for t1 in cands(ea, multa, tha):
            for t2 in cands(eb, multb, thb):
                if t1 != t2 and (accept is None or accept(t1, t2)):
                    return {"value": v, "t1": t1, "t2": t2}
    return None


def _warp_structured(an, info) -> bool:
    """A subscript built from a lane or warp id (`buf[warp * 32 + lane]`, `s[tid & 31]`)."""
    from porter.lint.helpers import warp_index_kind
    for sub in info.acc.subs:
        for n in sub.walk():
            if n.kind in ("BINARY_OPERATOR", "DECL_REF_EXPR") and warp_index_kind(an, n) is not None:
                return True
    return False


def _lane_id(t, block):
    return t[0] + block[0] * (t[1] + block[1] * t[2])


def _volatile(info) -> bool:
    return info.acc.array.volatile or "volatile" in (info.node.type or "")


def _dropped(info, an) -> bool:
    """A guard or an enclosing loop the enumeration could not use decides which threads run the access."""
    from porter.analysis.syntax import for_parts
    if any(not g.exact for g in info.guards):
        return True
    for lp in info.opaque_loops:
        parts = for_parts(lp)[:3] if lp.kind == "FOR_STMT" else lp.children[:1]
        if any(x is not None and an.thread_dependent(x) for x in parts):
            return True
    return False


def _element(arr, value, elem_size):
    if not arr.dims and value == 0:
        return arr.name
    if elem_size is None or value % elem_size:
        return f"byte {value} of {arr.name}"
    idx = value // elem_size
    dims = list(arr.dims)
    if not dims or any(d is None for d in dims[1:]):
        return f"{arr.name}[{idx}]"
    subs = []
    for d in reversed(dims[1:]):
        subs.append(idx % d)
        idx //= d
    subs.append(idx)
    return arr.name + "".join(f"[{s}]" for s in reversed(subs))


def _fmt_thread(t, block):
    n = 3 if block[2] > 1 else 2 if block[1] > 1 else 1
    return "(" + ", ".join(str(x) for x in t[:n]) + ")" if n > 1 else f"{t[0]}"


def _verb(info):
    return {"write": "writes", "rw": "updates", "atomic": "atomically updates"}.get(info.mode, "reads")


def _short(node, limit=50):
    t = " ".join(node.text.split())
    return t if len(t) <= limit else t[:limit - 3] + "..."


def _line(info):
    return info.node.model.source.position(info.node.start)[0]


def _message(a, b, hit, shape, block, exact):
    arr = a.acc.array
    el = _element(arr, hit["value"], a.acc.elem_size) if not hit.get("sampled") else \
        f"the same element of {arr.name}"
    t1, t2 = _fmt_thread(hit["t1"], block), _fmt_thread(hit["t2"], block)
    lead = "possible shared-memory race" if (not exact or hit["inexact"]) else "shared-memory race"
    if a is b:
        body = f"threads {t1} and {t2} both {_verb(a).rstrip('s')} {el} through `{_short(a.node)}` (line {_line(a)})"
    else:
        body = (f"thread {t1} {_verb(a)} {el} through `{_short(a.node)}` (line {_line(a)}) and thread {t2} "
                f"{_verb(b)} it through `{_short(b.node)}` (line {_line(b)})")
    when = "with no barrier in between"
    if hit.get("width"):
        when = (f"with only a warp-level sync in between (it orders the threads of one group of {hit['width']}, "
                f"not two warps)")
    elif any(v != 0 for _, v in hit["rel"]):
        when = "in consecutive iterations of a loop whose barrier does not separate them"
    if exact:
        shp = f"for {shape.describe()}"
    else:
        d = list(block)
        while len(d) > 1 and d[-1] == 1:
            d.pop()
        lbl = "(" + ", ".join(str(x) for x in d) + ")"
        shp = f"with a block of {lbl} tried for {shape.describe()}"
    tail = ""
    if exact and hit["inexact"]:
        tail = "; a guard or loop bound the analysis cannot evaluate may rule it out"
    return f"{lead} on `{arr.name}`: {body} {when}, {shp}{tail}"


def _report_opaque(ctx, a, b, shape, block, reported):
    """An index the analysis cannot follow written in the same interval as another access."""
    x = a if a.offset is None else b
    if not x.error.startswith("index") or not any(w in x.error for w in ("loaded", "a load", "a call")):
        return      # only data-dependent (indirect) indices: a layout or a local the model does not follow is no sign
    if x.mode not in ("write", "rw") and (a.offset is None) == (b.offset is None):
        return
    if x.mode not in ("write", "rw") and (a if x is b else b).mode not in ("write", "rw", "atomic"):
        return
    if id(x.node) in reported:
        return
    reported.add(id(x.node))
    other = b if x is a else a
    why = x.error.split(": ", 1)[-1] if ": " in x.error else "not affine in the thread index"
    extra = "" if x is other else f" and `{_short(other.node)}` (line {_line(other)})"
    d = ctx.report(CODE, x.node, f"possible shared-memory race on `{x.acc.array.name}`: `{_short(x.node)}` "
                                 f"(line {_line(x)}) uses an index the analysis cannot follow ({why}){extra} "
                                 f"in the same barrier interval; threads may touch the same element")
    d.severity = "warning"


def _fix(ctx, comp, a, b, hit):
    """Insert `__syncthreads();` before the statement of the later access when every thread reaches it."""
    from porter.analysis.syntax import for_parts
    if a is b or any(v != 0 for _, v in hit["rel"]):
        return None
    first, second = (a, b) if a.node.start <= b.node.start else (b, a)
    fn = comp.fn
    # the innermost block of statements that holds both accesses
    block_stmt, stmt = None, None
    for p in second.node.ancestors():
        if p.kind == "COMPOUND_STMT" and p.start <= first.node.start and first.node.end <= p.end:
            block_stmt = p
            break
    if block_stmt is None:
        return None
    for c in block_stmt.children:
        if c.start <= second.node.start and second.node.end <= c.end:
            stmt = c
            break
    if stmt is None or stmt.start <= first.node.start:
        return None
    an = ctx.analysis
    node = block_stmt
    while node is not None and node is not fn.body:
        p = node.parent
        if p is None:
            return None
        if p.kind in ("IF_STMT", "WHILE_STMT", "DO_STMT", "SWITCH_STMT", "CONDITIONAL_OPERATOR"):
            cond = p.children[0] if p.kind != "DO_STMT" else p.children[-1]
            if an.thread_dependent(cond):
                return None
        elif p.kind == "FOR_STMT":
            init, cond, inc, _ = for_parts(p)
            if any(x is not None and an.thread_dependent(x) for x in (init, cond, inc)):
                return None
        elif p.kind not in ("COMPOUND_STMT",):
            return None
        node = p
    # an early exit under a thread-dependent condition before the insertion point: a barrier would deadlock
    for r in fn.body.walk():
        if r.kind == "RETURN_STMT" and r.start < stmt.start:
            for q in r.ancestors():
                if q is fn.body:
                    break
                if q.kind == "IF_STMT" and q.children and an.thread_dependent(q.children[0]):
                    return None
    model = ctx.model
    if model.macro_at(stmt.start, stmt.start) is not None:
        return None
    src = model.source
    row, col = src.position(stmt.start)
    line = src.line(row)
    indent = line[:len(line) - len(line.lstrip())]
    prefix = line[:col - 1] if col >= 1 else ""
    text = f"__syncthreads();\n{indent}" if prefix.strip() == "" else "__syncthreads(); "
    return fix("Insert `__syncthreads()` between the two accesses", insert(stmt.start, text), unsafe=True)
