"""Shared-memory subscript that leaves the declared extent for the kernel's block shape.

## What it does
For each `__shared__` array access, evaluates every subscript for every thread of the block shape the kernel is
launched with (launch site in the same file, `[tool.cuport.launch]`, or a `// cuport: launch block=(X, Y)`
annotation) and every iteration of the loops the subscript uses, and reports a dimension whose range leaves
`0 .. extent - 1`. The message gives the range, the extent, the shape and where the shape comes from, and a
thread that goes out of bounds.

Guards on thread indices are taken into account exactly (`if (threadIdx.x < 8) As[threadIdx.x][k]`). A guard
that compares the subscript itself with a kernel argument (`if (tid < n) s[tid]`), or one the analysis cannot
evaluate (a loaded value), makes the finding "possible" (a warning). Problem-size checks on other expressions
(`if (row < M && col < K)`) do not protect a shared tile and are not taken as bounds. Without a known shape
(only `__launch_bounds__(T)`, or nothing), an access is reported as possible only when it is out of bounds for
a block of T threads, or already for thread (0, 0, 0).

## Why is this bad?
Out-of-bounds shared memory is undefined behaviour on every target: on NVIDIA it corrupts the neighbouring
array or dies with `cudaErrorIllegalAddress`, on AMD the LDS access wraps or reads zeros silently, and Vulkan
drivers may clamp it. The seed's "optimized SGEMM" indexes `As[tx][...]` with tx in 0..15 on an 8-row tile
and dies with an illegal address on an H100.

## Example
```cuda
#define BK 8
__shared__ float As[BK][128 + 1];
As[threadIdx.x][threadIdx.y] = A[...];   // launched with dim3 block(16, 16)
```

## Use instead
```cuda
__shared__ float As[16][128 + 1];        // the tile covers every thread, or
if (threadIdx.x < BK) As[threadIdx.x][threadIdx.y] = A[...];   // only BK threads load
```

## Fix safety
No fix: resizing a tile or re-mapping threads to elements changes the algorithm.

## References
- The seed SGEMM (`sgemm_optimized`, BK = 8 rows loaded by 16 x 16 threads): `cudaErrorIllegalAddress` on H100.
- GPUVerify (Betts et al., OOPSLA 2012) and its benchmark kernels: races and bounds checked per block shape.
- pytorch/pytorch#136007, tile-ai/tilelang#1026 (shared-memory indexing that depends on the launch shape).
"""
CODE = "CP703"
_DIM_NAMES = {1: ["index"], 2: ["row index", "column index"], 3: ["first index", "second index", "third index"]}


def check(ctx):
    model = ctx.model
    if not model.shared:
        return
    from porter.analysis.launch import function_shapes     # imported only for files with shared memory
    from porter.analysis.shared_access import shared_memory
    accs = shared_memory(model, ctx.analysis).accesses
    fns, seen_fns = [], set()
    for a in accs:
        if a.function is not None and a.function.is_device_code and id(a.function) not in seen_fns:
            seen_fns.add(id(a.function))
            fns.append(a.function)
    for fn in fns:
        done = set()
        for shape in function_shapes(model, fn, ctx.settings):
            for d in _check_shape(ctx, fn, shape):
                if d[0] in done:
                    continue
                done.add(d[0])
                diag = ctx.report(CODE, d[1], d[2])
                if d[3]:
                    diag.severity = "warning"


def _check_shape(ctx, fn, shape):
    from porter.analysis.enumeration import enumerate_access, function_accesses
    model = ctx.model
    if shape.exact and shape.dims:
        block, known, mode = shape.dims, True, "exact"
    elif shape.source == "launch_bounds":
        block, known, mode = (shape.max_threads, 1, 1), False, "bounds"
    else:
        block, known, mode = (1, 1, 1), False, "any"
    comp, infos = function_accesses(model, ctx.analysis, fn, block, shape.env, known)
    for info in infos:
        arr = info.acc.array
        dims = comp.array_dims(arr)
        if arr.extern or not info.acc.direct or not info.acc.full or not dims or any(d is None for d in dims):
            continue
        if info.mode is None:
            continue
        if mode == "bounds" and any(s is not None and (s.threads - {"x"}) for s in info.subs):
            continue
        extra = tuple(lp.idx for lp in info.loops if lp.thread_dependent())
        for j, (sub, ext) in enumerate(zip(info.subs, dims)):
            if sub is None:
                continue
            iv = comp.interval(sub)
            if iv is not None and iv.lo >= 0 and iv.hi < ext:
                continue                      # in bounds for every thread even without the guards
            sp = enumerate_access(comp, [sub], info.guards, "range", extra_loops=extra)
            if not sp.ok or sp.count == 0:
                continue
            lo, hi = sp.lo[0], sp.hi[0]
            if lo >= 0 and hi < ext:
                continue
            if sp.unbounded:
                continue                      # the range depends on a loop bounded by a kernel argument
            possible = mode != "exact" or _uncertain(comp, info, sub)
            yield (id(info.node), j), info.acc.subs[j], _message(info, j, sub, lo, hi, ext, sp, shape, mode,
                                                                  possible, dims, block), possible


def _uncertain(comp, info, sub) -> bool:
    """A guard the analysis could not use might keep the subscript in bounds."""
    for g in info.guards:
        if g.code is None:
            return True
        if g.code.unknowns and _bounds_directly(comp, g, sub):
            return True
    from porter.analysis.syntax import for_parts
    for lp in info.opaque_loops:       # a loop the analysis cannot follow, entered by some threads only?
        parts = for_parts(lp)[:3] if lp.kind == "FOR_STMT" else lp.children[:1] if lp.kind == "WHILE_STMT" \
            else lp.children[-1:]
        if any(x is not None and comp.an.thread_dependent(x) for x in parts):
            return True
    return False


def _bounds_directly(comp, guard, sub) -> bool:
    """`tid < n` guarding `s[tid]`: one side uses exactly the subscript's thread / loop variables, the other
    only kernel arguments."""
    want = (sub.threads, sub.loops)
    stack = [guard.node]
    while stack:
        n = stack.pop().strip
        if n.kind == "UNARY_OPERATOR" and n.op == "!" and n.children:
            stack.append(n.children[0])
            continue
        if n.kind != "BINARY_OPERATOR" or len(n.children) != 2:
            continue
        if n.op in ("&&", "||"):
            stack.extend(n.children)
            continue
        if n.op not in ("<", "<=", ">", ">=", "!=", "=="):
            continue
        a, b = (comp.try_compile(c) for c in n.children)
        if a is None or b is None:
            continue
        for x, y in ((a, b), (b, a)):
            if not x.unknowns and (x.threads, x.loops) == want and y.unknowns and not y.threads and not y.loops:
                return True
    return False


def _short(text, limit=60):
    t = " ".join(text.split())
    return t if len(t) <= limit else t[:limit - 3] + "..."


def _thread_name(sub):
    return {"tx": "threadIdx.x", "ty": "threadIdx.y", "tz": "threadIdx.z"}.get(sub.src)


def _fmt_thread(t, block):
    n = 3 if block[2] > 1 else 2 if block[1] > 1 else 1
    return "(" + ", ".join(str(x) for x in t[:n]) + ")" if n > 1 else f"{t[0]}"


def _message(info, j, sub, lo, hi, ext, sp, shape, mode, possible, dims, block):
    arr = info.acc.array
    nd = len(dims)
    names = _DIM_NAMES.get(nd, [f"index {i}" for i in range(nd)])
    tname = _thread_name(sub)
    raw = [_short(s.text, 30) for s in info.acc.subs]
    shown = [(tname or raw[i]) if i == j else "..." for i in range(nd)]
    quoted = f"`{arr.name}" + "".join(f"[{s}]" for s in shown) + "`"
    written = f"`{arr.name}" + "".join(f"[{s}]" for s in raw) + "`"
    if written.replace("...", "") != quoted:
        quoted += f" (written {written})"
    what = tname or f"`{raw[j]}`"
    if nd == 1:
        extent = f"{arr.name} has {ext} elements"
    elif nd == 2:
        extent = f"{arr.name} has {ext} rows" if j == 0 else f"rows of {arr.name} have {ext} columns"
    else:
        extent = f"dimension {j} of {arr.name} has {ext} entries"
    verb = {"write": "write", "rw": "update", "atomic": "update"}.get(info.mode, "read")
    if hi >= ext:
        bad, witness = hi, _fmt_thread(sp.whi[0], block)
        tail = f"threads with {tname} >= {ext} {verb} past the end of {arr.name}" if tname else \
            f"thread {witness} reaches {hi} and {verb}s past the end"
    else:
        bad, witness = lo, _fmt_thread(sp.wlo[0], block)
        tail = f"thread {witness} reaches {lo} and {verb}s before the start"
    del bad
    rng = f"{lo}..{hi}"
    ranges = f"is {lo}" if lo == hi else f"ranges {rng}"
    if mode == "exact":
        where = f"for {shape.describe()}"
    elif mode == "bounds":
        where = f"for a block of {shape.max_threads} threads, which `__launch_bounds__({shape.max_threads})` allows,"
    else:
        where = "already for thread (0, 0, 0), whatever the block shape,"
    lead = "possible out-of-bounds shared access: " if possible else ""
    note = ""
    if possible and mode == "exact":
        note = " (a guard the analysis cannot evaluate may prevent it)"
    if sp.capped:
        note += f" (loop iterations were cut off; the range is at least {rng})"
    return f"{lead}{quoted}: {names[j]} {what} {ranges} {where} but {extent}; {tail}{note}"
