"""Shared array padded against bank conflicts but indexed with the unpadded row stride.

## What it does
Finds `__shared__` arrays whose row width is padded (`T a[R][C + 1]`, any `[R][C + p]`, a literal width such as
`[32][33]`, or a 1-D array sized `R * (C + 1)`) and an access that flattens the index with the unpadded stride
`C`: through a pointer (`float *p = &tile[0][0]; p[ty * C + tx]`), a cast (`((float *)tile)[i * C + j]`), a
row-0 subscript (`tile[0][i * C + j]`) or a plain subscript of the 1-D array (`s[r * C + c]`). Constants are folded
through `#define`, `constexpr` and enums.

## Why is this bad?
The padding column exists so that a column of the tile spreads over all 32 banks (row stride `C + 1` words). With
stride `C` the padding is never touched: the bank conflicts it was meant to remove are all still there (the
transposed read is still 32-way on NVIDIA and on AMD LDS) and the memory is wasted. When the same array is also
read with 2-D subscripts, the two views disagree on where an element lives and the kernel computes wrong values.

## Example
```cuda
__shared__ float tile[TILE][TILE + 1];
float *p = &tile[0][0];
p[threadIdx.y * TILE + threadIdx.x] = in[i];
```

## Use instead
```cuda
__shared__ float tile[TILE][TILE + 1];
float *p = &tile[0][0];
p[threadIdx.y * (TILE + 1) + threadIdx.x] = in[i];
```

## Fix safety
Safe when the stride constant is written in the subscript itself (`ty * TILE`, a literal, macro or constant name)
and every use of the array in the file is understood: its 2-D subscripts and the flattened accesses that use the
unpadded stride, all of which the fix rewrites together, so that every view agrees on the padded layout (a flat
constant index beyond the first row, a pointer passed elsewhere or an index computed in another statement
disables the fix). It assumes, as the unpadded code did, that the column part of the index stays below `C`.

## References
- deepspeedai/DeepSpeed#8055 (padding declared, stride not used: 4-6% lost).
- iree-org/iree#10209.
"""
from porter.analysis.shared_access import as_int, shared_memory, strip
from porter.lint.context import fix, replace
from porter.analysis.syntax import array_dim_exprs
from porter.lint.helpers import int_value, spelled

CODE = "CP402"
_MAX_PAD = 16


def _padding(arr):
    """(padded width W, unpadded width C, text to write for W) or None when the array is not padded."""
    if not arr.dims or arr.extern or arr.elem_size is None or any(d is None for d in arr.dims):
        return None  # scalars, extern and unresolved extents carry no padding to check
    exts = array_dim_exprs(arr.node)
    if len(exts) != len(arr.dims):
        return None
    if len(arr.dims) >= 2:
        last = exts[-1]
        p = _plus_pad(last)
        if p is not None:
            return p
        w = arr.dims[-1]
        # a literal width one past a power of two ([32][33], [64][65]) is the classic padded tile
        if as_int(last.value) == w and w > 8 and (w - 1) & (w - 2) == 0 and strip(last).kind == "INTEGER_LITERAL":
            return w, w - 1, last.text if spelled(last) else str(w)
        return None
    # 1-D: an extent like R * (C + 1)
    for n in exts[0].walk():
        if n.kind == "BINARY_OPERATOR" and n.op == "*" and len(n.children) == 2:
            for f in n.children:
                p = _plus_pad(f)
                # only widths where padding is a bank-conflict fix (even, at least 8) count in a 1-D size
                if p is not None and p[1] >= 8 and p[1] % 2 == 0:
                    return p
    return None


def _plus_pad(node):
    n = strip(node)
    if n.kind != "BINARY_OPERATOR" or n.op != "+" or len(n.children) != 2:
        return None
    a, b = (int_value(c) for c in n.children)
    if a is None or b is None:
        return None
    c, pad = (a, b) if 0 < b <= _MAX_PAD and a > b else (b, a) if 0 < a <= _MAX_PAD and b > a else (None, None)
    if c is None:
        return None
    text = f"({strip(node).text})" if spelled(node) and spelled(strip(node)) else str(c + pad)
    return c + pad, c, text


def _element_offset(acc, arr):
    off = acc.offset()
    if off is None or acc.elem_size != arr.elem_size:
        return None
    terms = {}
    for mono, coef in off.terms.items():
        v = coef / arr.elem_size
        if v.denominator != 1:
            return None
        terms[mono] = int(v)
    return terms


def _flattened(acc, arr):
    """Accesses that compute a row-major index themselves rather than subscripting each dimension."""
    if len(arr.dims) == 1:
        return True
    if not acc.direct:
        return True
    return len(acc.subs) == len(arr.dims) and all(int_value(s) is not None for s in acc.subs[:-1])


def _stride_edit(acc, c_val, w_text):
    """The edit turning the single `x * C` of the subscript into `x * W`, or None."""
    if len(acc.subs) != 1 and not acc.direct:
        return None
    sub = acc.subs[-1] if acc.subs else None
    if sub is None:
        return None
    hits = []
    for n in sub.walk():
        if n.kind == "BINARY_OPERATOR" and n.op == "*" and len(n.children) == 2:
            for i, opnd in enumerate(n.children):
                other = n.children[1 - i]
                if int_value(opnd) == c_val and int_value(other) is None:
                    hits.append(opnd)
    if len(hits) != 1 or not spelled(hits[0]):
        return None
    return replace(hits[0], w_text)


_CLIMB = ("ARRAY_SUBSCRIPT_EXPR", "PAREN_EXPR", "CSTYLE_CAST_EXPR", "CXX_REINTERPRET_CAST_EXPR",
          "CXX_STATIC_CAST_EXPR", "UNARY_OPERATOR")


def _all_uses_understood(sm, arr, accs):
    """Every reference to the array is a modelled access, or builds a local pointer used only for modelled
    accesses (`float *p = &tile[0][0]; p[...]`)."""
    bases = {id(a.node) for a in accs}
    for use in sm.uses(arr):
        top = use
        while top.parent is not None and top.parent.kind in _CLIMB and top.parent.children and \
                top.parent.children[0] is top and (top.parent.kind != "UNARY_OPERATOR" or top.parent.op == "&"):
            top = top.parent
        if id(top) in bases:
            continue
        decl = top.parent
        if decl is None or decl.kind != "VAR_DECL":
            return False
        for r in sm.references(decl):
            p = r.parent
            while p is not None and p.kind == "PAREN_EXPR":
                p = p.parent
            if p is None or id(p) not in bases:
                return False
    return True


def check(ctx):
    model = ctx.model
    if not model.shared:
        return
    sm = shared_memory(model, ctx.analysis)
    by_array: dict[int, list] = {}
    for acc in sm.accesses:
        by_array.setdefault(id(acc.array), []).append(acc)
    for arr in model.shared:
        accs = by_array.get(id(arr))
        if not accs:
            continue
        pad = _padding(arr)
        if pad is None:
            continue
        w, c, w_text = pad
        flagged, blockers = [], False
        two_d = False
        for acc in accs:
            if not _flattened(acc, arr):
                two_d = two_d or acc.full
                continue
            terms = _element_offset(acc, arr)
            if terms is None:
                blockers = True
                continue
            coefs = [v for m, v in terms.items() if m]
            if c in coefs and w not in coefs:
                flagged.append(acc)
            elif w in coefs:
                two_d = True       # a flattened view that does use the padded stride
            elif coefs or terms.get((), 0) >= c:
                blockers = True    # some other flattened layout: leave it alone
        if not flagged:
            continue
        edits = [_stride_edit(a, c, w_text) for a in flagged]
        f = None
        if all(e is not None for e in edits) and not blockers and _all_uses_understood(sm, arr, accs):
            uniq = sorted({(e.start, e.end, e.content): e for e in edits}.values(), key=lambda e: e.start)
            f = fix(f"Use the padded row stride {w_text} in every flattened access of `{arr.name}`", *uniq)
        dims = "".join(f"[{x.text}]" for x in array_dim_exprs(arr.node))
        seen = set()
        for acc in flagged:
            key = (id(acc.function), acc.node.text)
            if key in seen:
                continue
            seen.add(key)
            what = (f"other accesses of `{arr.name}` use the padded rows, so the views disagree (wrong results); "
                    if two_d else "")
            ctx.report(CODE, acc.node,
                       f"`{acc.node.text}` indexes `{arr.name}` (declared `{arr.elem_type} {arr.name}{dims}`, rows "
                       f"of {w} elements) with row stride {c}: the padding is unused and prevents no bank conflict "
                       f"on NVIDIA or AMD LDS; {what}use stride {w_text}", fix=f)
