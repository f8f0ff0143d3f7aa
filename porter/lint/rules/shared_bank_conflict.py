"""Shared-memory access whose lanes fall into the same bank (an N-way bank conflict).

## What it does
For every load or store of a `__shared__` array (direct subscripts, `extern __shared__` buffers, casts and
never-reassigned pointers into them, atomics) the index is linearised to a byte address: `T a[R][C]` at
`a[i][j]` is `(i * C + j) * sizeof(T)`. The address of each lane of a warp is evaluated from the coefficients of
`threadIdx.x`, and of `threadIdx.y` / `threadIdx.z` when the block shape is known (a launch in the file,
`[tool.cuport.launch]`, or a `// cuport: launch block=(X, Y)` comment before the kernel); otherwise a warp is
taken to be 32 consecutive `threadIdx.x`, i.e. a block at least 32 wide. The conflict degree is the largest
number of distinct 4-byte words that lanes send to one bank; for a plain stride of `s` words it is
`gcd(s, 32)`. Accesses of a degree above 1 are reported once per function and index, e.g.
`tile[threadIdx.x][k]` on `float tile[32][32]` is a 32-way conflict. Not flagged: a stride of one word
(`tile[k][threadIdx.x]`), padded rows (`[32][33]`), broadcasts (every lane reads one address,
`sA[threadIdx.y][k]`), and indices that are not affine in the thread index (no guess is made). 8-byte accesses
are counted per half-warp and 16-byte ones per quarter-warp (one wavefront each); for 1- and 2-byte elements
lanes that share a word are served together and the smallest degree over the possible alignments is reported.

## Why is this bad?
Shared memory on NVIDIA GPUs and the LDS of AMD CDNA GPUs (MI200/MI300) are split into 32 banks of 4 bytes.
Lanes that hit different words of the same bank are served one after another, so a 32-way conflict makes the
access 32 times slower. A row width that is a multiple of 32 words puts a whole column in one bank: reading a
tile column-wise (the transpose, the `A` operand of a matrix product) serialises the warp on every target, and
on wave64 hardware the conflicting access is issued for twice as many lanes. The degrees this rule computes
match the shared-memory wavefronts per instruction that Nsight Compute measured on an H100 for the patterns of
its fixtures (32-bit, 64-bit, 128-bit and byte accesses, 32- and 16-wide blocks).

## Example
```cuda
__shared__ float tile[32][32];
tile[threadIdx.y][threadIdx.x] = in[y * n + x];
__syncthreads();
out[x2 * n + y2] = tile[threadIdx.x][threadIdx.y];   // 32-way bank conflict
```

## Use instead
```cuda
__shared__ float tile[32][32 + 1];                  // one padding column: row stride 33 words
tile[threadIdx.y][threadIdx.x] = in[y * n + x];
__syncthreads();
out[x2 * n + y2] = tile[threadIdx.x][threadIdx.y];   // lanes hit 32 different banks
```

## Fix safety
Safe, and only offered when every use of the array in the file is a full multi-dimensional subscript
(`tile[i][j]`: no pointer, cast, `&tile[..]` or `sizeof`), the last extent is written in the declaration (a
literal, macro or constant name), padding makes every access of the array conflict-free and the extra bytes
keep the kernel within 48 KiB. The last extent `[N]` becomes `[N + 1]`; element addresses change but no
subscript does, so the program computes the same values.

## References
- deepspeedai/DeepSpeed#8055 (padding declared, stride not used: 4-6% lost).
- iree-org/iree#10209.
- NVIDIA CUDA C++ Programming Guide, "Shared Memory" (32 banks of 4 bytes); AMD CDNA ISA, "Local Data Share"
  (32 banks).
"""
from fractions import Fraction
from math import gcd

from porter.analysis.shared_access import (as_int, declaration_named, kernel_static_shared, kernels_using,
                                           shared_memory, substitute)
from porter.lint.context import fix, replace
from porter.analysis.syntax import array_dim_exprs
from porter.lint.helpers import launch_block, operand_text, spelled

CODE = "CP401"
BANKS = 32
_THREAD = ("threadIdx.x", "threadIdx.y", "threadIdx.z")
_NVIDIA_STATIC_LIMIT = 49152


_WARPS_CACHE: dict = {}
_ADDR_CACHE: dict = {}
_DEGREE_CACHE: dict = {}


def _cached(cache: dict, key, compute):
    try:
        return cache[key]
    except KeyError:
        pass
    except TypeError:          # an unhashable shape: do not cache
        return compute()
    if len(cache) > 4096:
        cache.clear()
    v = cache[key] = compute()
    return v


def _warps(shape):
    """Lists of {threadIdx.*: value} per warp. Unknown shape: one warp along x (a block at least 32 wide).
    Shared between calls (read only)."""
    return _cached(_WARPS_CACHE, shape, lambda: _make_warps(shape))


def _make_warps(shape):
    if shape is None:
        return [[{"threadIdx.x": lane, "threadIdx.y": 0, "threadIdx.z": 0} for lane in range(BANKS)]]
    bx, by, bz = shape
    total = bx * by * bz
    warps = []
    for w in range(0, min(total, 1024), BANKS):
        warps.append([{"threadIdx.x": i % bx, "threadIdx.y": (i // bx) % by, "threadIdx.z": i // (bx * by)}
                      for i in range(w, min(w + BANKS, total))])
    return warps


def _env(shape):
    if shape is None:
        return {}
    return {"blockDim.x": shape[0], "blockDim.y": shape[1], "blockDim.z": shape[2]}


def _lane_address(poly, lane, known):
    """Lane-dependent part of a byte address (terms without a thread index are the same for every lane)."""
    total = 0
    for mono, c in poly.terms.items():
        if not any(v in _THREAD for v in mono):
            continue
        val = c
        zero = False
        unknown = False
        for v in mono:
            if v in lane:
                val *= lane[v]
                zero = zero or lane[v] == 0
            elif v in known:
                val *= known[v]
            else:
                unknown = True
        if zero:
            continue
        if unknown:
            return None
        total += val
    return as_int(total)


def addresses(poly, shape):
    """Per warp, the lane-dependent byte address of each lane; None when not computable. Memoised by value
    (the result is shared: read only)."""
    return _cached(_ADDR_CACHE, (poly, shape), lambda: _addresses(poly, shape))


def _addresses(poly, shape):
    """_lane_address for every lane, in exact integer arithmetic: each lane-dependent term is
    c * (known factors) * (thread indices); scaled by the common denominator D of those coefficients the sum is
    an integer, and the address is that sum / D when D divides it (else not an integer: None, as as_int)."""
    known = _env(shape)
    terms = []           # (numerator over D, thread variables, unknown)
    facs = []
    for mono, c in poly.terms.items():
        if not any(v in _THREAD for v in mono):
            continue
        f = Fraction(c)
        unknown = False
        tv = []
        for v in mono:
            if v in _THREAD:           # every lane dict has exactly the three thread indices
                tv.append(v)
            elif v in known:
                f *= known[v]
            else:
                unknown = True
        facs.append(f)
        terms.append((tv, unknown))
    den = 1
    for f in facs:
        den = den * f.denominator // gcd(den, f.denominator)
    nums = [f.numerator * (den // f.denominator) for f in facs]
    out = []
    for warp in _warps(shape):
        addrs = []
        for lane in warp:
            total = 0
            for (tv, unknown), num in zip(terms, nums):
                val = num
                zero = False
                for v in tv:
                    x = lane[v]
                    if x == 0:
                        zero = True
                        break
                    val *= x
                if zero:
                    continue
                if unknown:
                    return None
                total += val
            if den != 1:
                if total % den:
                    return None
                total //= den
            addrs.append(total)
        out.append(addrs)
    return out


def _degree_of_group(addrs, elem_size, align=0):
    banks: dict[int, set] = {}
    for a in addrs:
        first = (a + align) // 4
        last = (a + align + max(elem_size, 1) - 1) // 4
        for word in range(first, last + 1):
            banks.setdefault(word % BANKS, set()).add(word)
    return max((len(s) for s in banks.values()), default=1)


def degree(poly, elem_size, shape):
    """Worst bank-conflict degree of an access over the warps of a block, or None when unknown."""
    if poly is None or elem_size not in (1, 2, 4, 8, 16):
        return None
    return _cached(_DEGREE_CACHE, (poly, elem_size, shape), lambda: _degree(poly, elem_size, shape))


def _degree(poly, elem_size, shape):
    per_warp = addresses(poly, shape)
    if per_warp is None:
        return None
    phase = BANKS // max(1, elem_size // 4)    # 64-bit: half-warps, 128-bit: quarter-warps
    worst = 1
    for addrs in per_warp:
        for start in range(0, len(addrs), phase):
            group = addrs[start:start + phase]
            if elem_size % 4 == 0:
                d = _degree_of_group(group, elem_size)
            else:
                d = min(_degree_of_group(group, elem_size, o) for o in range(0, 4, elem_size))
            worst = max(worst, d)
    return worst


def banks_used(poly, shape):
    """Distinct banks the first warp's lanes touch (first word of each element)."""
    per_warp = addresses(poly, shape)
    return len({(a // 4) % BANKS for a in per_warp[0]}) if per_warp else None


def lane_stride_words(poly, elem_size, shape):
    """Words between consecutive lanes when the first warp is an arithmetic progression, else None."""
    per_warp = addresses(poly, shape)
    if not per_warp or len(per_warp[0]) < 2:
        return None
    a = per_warp[0]
    d = a[1] - a[0]
    if any(a[i + 1] - a[i] != d for i in range(len(a) - 1)) or d % 4:
        return None
    return d // 4


def resolve_lanes(sm, acc, dims=None):
    """The access's byte-offset polynomial with its non-builtin variables checked: uniform across a warp, or an
    induction variable rewritten as start value + uniform step. None when some variable varies unpredictably."""
    off = acc.offset(dims)
    if off is None:
        return None
    fn = acc.function
    for v in sorted(off.variables()):
        if v in _THREAD or sm.lane_uniform(v, fn):
            continue
        q = sm.induction_poly(declaration_named(acc.node, v), fn)
        if q is None or not all(w.endswith("'") or w in _THREAD or sm.lane_uniform(w, fn)
                                 for w in q.variables()):
            return None
        off = substitute(off, v, q)
    return off


def _decl_text(arr):
    dims = "".join(f"[{d}]" if d is not None else "[]" for d in arr.dims)
    return f"{arr.elem_type} {arr.name}{dims}"


def _shape_of(ctx, fn):
    if fn is None:
        return None
    if fn.is_kernel:
        return launch_block(ctx.model, fn.name, ctx.settings)
    return None


def _padding_fix(ctx, sm, arr, shapes):
    """Edit padding the last extent of `arr` when that is safe and removes every conflict, else None."""
    if arr.extern or len(arr.dims) < 2 or any(d is None for d in arr.dims) or arr.elem_size is None:
        return None
    exts = array_dim_exprs(arr.node)
    if len(exts) != len(arr.dims):
        return None
    last = exts[-1]
    if not spelled(last) or as_int(last.value) != arr.dims[-1]:
        return None
    accs = sm.accesses_to(arr)
    bases = {id(a.node) for a in accs if a.full}
    for use in sm.uses(arr):
        top = use
        while top.parent is not None and top.parent.kind in ("ARRAY_SUBSCRIPT_EXPR", "PAREN_EXPR") and \
                top.parent.children and top.parent.children[0] is top:
            top = top.parent
        if id(top) not in bases:
            return None
        p = top.parent
        if p is not None and p.kind == "UNARY_OPERATOR" and p.op == "&":
            return None
    for pad in range(1, 5):
        dims = list(arr.dims[:-1]) + [arr.dims[-1] + pad]
        ok = True
        for a in accs:
            off = resolve_lanes(sm, a, dims)
            d = degree(off, a.width, shapes.get(id(a.function))) if off is not None else None
            if d is not None and d > 1:
                ok = False
                break
        if not ok:
            continue
        extra = arr.size_bytes // arr.dims[-1] * pad
        for k in kernels_using(ctx.model, arr):
            st = kernel_static_shared(ctx.model, k)
            if arr in st.arrays and st.bytes <= _NVIDIA_STATIC_LIMIT < st.bytes + extra:
                return None
        new = f"{operand_text(last, '+')} + {pad}"
        return new, fix(f"Pad the rows of `{arr.name}`: `[{last.text}]` -> `[{new}]`", replace(last, new))
    return None


def _only_last_varies(acc):
    """The thread index appears in the last subscript only (a column stride, which padding cannot change)."""
    polys = acc.sub_polys
    thread = [p is None or any(v in _THREAD for v in p.variables()) for p in polys]
    return thread[-1] and not any(thread[:-1])


def check(ctx):
    model = ctx.model
    if not model.shared:
        return
    sm = shared_memory(model, ctx.analysis)
    shapes: dict[int, tuple | None] = {}
    for acc in sm.accesses:
        if id(acc.function) not in shapes:
            shapes[id(acc.function)] = _shape_of(ctx, acc.function)
    seen = set()
    fixes: dict[int, tuple | None] = {}
    for acc in sm.accesses:
        fn = acc.function
        if fn is None or not fn.is_device_code or acc.width is None:
            continue
        off = resolve_lanes(sm, acc)
        if off is None:
            continue
        shape = shapes.get(id(fn))
        d = degree(off, acc.width, shape)
        if d is None or d <= 1:
            continue
        key = (id(fn), acc.array.name, acc.expr.text)
        if key in seen:
            continue
        seen.add(key)
        arr = acc.array
        if id(arr) not in fixes:
            fixes[id(arr)] = _padding_fix(ctx, sm, arr, shapes)
        pf = fixes[id(arr)]
        stride = lane_stride_words(off, acc.width, shape)
        where = f"consecutive lanes are {stride} words ({stride * 4} B) apart in `{_decl_text(arr)}`" \
            if stride is not None else \
            f"the lanes of a warp start in only {banks_used(off, shape)} of the 32 banks in `{_decl_text(arr)}`"
        if shape is None:
            assume = " (for a block at least 32 threads wide)" if any("threadIdx.x" in m for m in off.terms) else ""
        else:
            assume = f" (block {shape[0]}x{shape[1]}{'x' + str(shape[2]) if shape[2] != 1 else ''})"
        size_note = ""
        if acc.width < 4:
            size_note = f"; with {acc.width}-byte elements lanes that share a word are served together"
        elif acc.width > 4:
            size_note = f"; {acc.width}-byte accesses are counted per {BANKS * 4 // acc.width}-lane phase"
        if pf is not None:
            advice = f"pad the row: `{arr.name}{''.join(f'[{x.text}]' for x in array_dim_exprs(arr.node)[:-1])}" \
                     f"[{pf[0]}]`"
        elif acc.full and len(arr.dims) >= 2 and _only_last_varies(acc):
            advice = "let consecutive lanes access consecutive words of the row (e.g. `tx + n * blockDim.x` " \
                     "instead of `tx * N + n`) or load vectors"
        elif acc.full and len(arr.dims) >= 2:
            advice = "pad the rows so that the rows one warp touches start in different banks"
        else:
            advice = "use an odd row stride in words (e.g. 33 instead of 32)"
        ctx.report(CODE, acc.expr,
                   f"`{acc.expr.text}`: {d}-way bank conflict{assume}: {where}; NVIDIA shared memory and AMD LDS "
                   f"(CDNA) have 32 banks of 4 B, so {d} lanes queue on one bank{size_note}; {advice}",
                   fix=pf[1] if pf is not None else None)
