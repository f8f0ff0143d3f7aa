"""Shuffle reduction or scan whose offsets cover exactly 32 lanes (first offset 16, `d < 32`, source lane 31).

## What it does
Flags warp shuffle code whose lane offsets are derived from a warp of 32 lanes:
- a shuffle loop whose first offset folds to 16 (`for (int o = 16; o > 0; o >>= 1)`, `o /= 2`,
  `WARP_SIZE / 2` with `WARP_SIZE` 32), reported at the start value;
- a scan or butterfly loop that stops at offset 16 (`for (int d = 1; d < 32; d <<= 1)`) or a loop over source
  lanes `i < 32`, reported at the bound;
- `__shfl_sync(mask, v, 31)`: the last lane of a 32-lane warp; likewise a lane id compared with 31
  (`if (lane == 31)`, `(tid & 31) != 31`: the lane that writes a warp's scan total), with or without shuffles;
- an unrolled sequence of shuffles with the constant offsets 16, 8, 4, 2, 1 (xor also 1, 2, 4, 8, 16), reported at
  the first one.

Shuffles with an explicit constant `width` argument work on segments of that width and are not flagged: that
is the portable way to say "32 lanes". Loops written with `warpSize` are not flagged.

## Why is this bad?
A 64-lane AMD CDNA wavefront needs a first step of 32: starting at 16 reduces each half of the wave separately,
so lane 0 ends with the sum of lanes 0..31 only and half the data is silently dropped. Vulkan subgroups of
4..16 lanes read lanes that do not exist. Lane 31 is the middle of a wave64, not its last lane.

## Example
```cuda
for (int offset = 16; offset > 0; offset /= 2)
  val += __shfl_down_sync(0xffffffff, val, offset);
```

## Use instead
```cuda
for (int offset = warpSize / 2; offset > 0; offset /= 2)
  val += __shfl_down_sync(0xffffffff, val, offset);
// or, to keep 32-lane segments on purpose:
for (int offset = 16; offset > 0; offset /= 2)
  val += __shfl_down_sync(0xffffffff, val, offset, 32);
```

## Fix safety
Safe: the start value becomes `warpSize / 2`, a bound `32` becomes `warpSize` (`16` in `<=` becomes
`warpSize / 2`) and source lane `31` (or the 31 a lane id is compared with) becomes `warpSize - 1`, all identical on a 32-lane warp. Only offered when
the offset is the loop variable itself and the replaced text is written in the file (not inside a macro body).
Unrolled steps get a fix only as exactly five consecutive statements `v += SHFL(v, c)` or `v = fmaxf(v, SHFL(v, c))`
(one variable, one operator, the same intrinsic `__shfl_down*` / `__shfl_xor*` and mask text, no width, literal
offsets 16..1, or 1..16 for xor) with nothing between them, not even a comment: they become one loop from
`warpSize / 2` (xor ascending: up to `warpSize`), the same five steps on a 32-lane warp. An in-file function named
like an intrinsic (HeCBench dpid's float4 `__shfl_down` with width 32) is read as a wrapper with its own width.

## References
- cupy/cupy#9977 (shuffle loop starting at 16 reduced half a wave64), pytorch/pytorch#186229 (softmax summed
  to 0.5), ROCm/bitsandbytes#93 (50% mismatches), ggml-org/llama.cpp#3630, ORNL/HeCBench#171.
"""
from porter.diagnostics import Edit
from porter.lint.context import fix, replace
from porter.analysis.syntax import for_parts
from porter.lint.helpers import SHUFFLES, function_by_call, int_value, is_lane_id, shuffle_operands, spelled

CODE = "CP103"
_CMP = {"<", "<=", ">", ">=", "!="}
_FLIP = {"<": ">", "<=": ">=", ">": "<", ">=": "<=", "!=": "!="}
_MAX_STEPS = 130


def _refs(node, var) -> bool:
    return any(n.ref is var for n in node.model.kind_in(node, "DECL_REF_EXPR"))


def _eval(node, var, val):
    n = node.strip
    if n.kind == "DECL_REF_EXPR" and n.ref is var:
        return val
    v = int_value(n)
    if v is not None:
        return v
    if n.kind == "BINARY_OPERATOR" and len(n.children) == 2:
        a, b = _eval(n.children[0], var, val), _eval(n.children[1], var, val)
        if a is None or b is None:
            return None
        op = n.op
        try:
            return {"+": lambda: a + b, "-": lambda: a - b, "*": lambda: a * b, "/": lambda: int(a / b),
                    "%": lambda: a % b, "<<": lambda: a << b, ">>": lambda: a >> b, "^": lambda: a ^ b,
                    "&": lambda: a & b, "|": lambda: a | b}[op]()
        except (KeyError, ZeroDivisionError, ValueError):
            return None
    if n.kind == "UNARY_OPERATOR" and n.op == "-" and n.children:
        a = _eval(n.children[0], var, val)
        return None if a is None else -a
    return None


def _init(part):
    """(loop variable declaration, start expression) from `int o = 16` or `o = 16`."""
    if part is None:
        return None, None
    if part.kind == "DECL_STMT" and len(part.children) == 1 and part.children[0].kind == "VAR_DECL":
        decl = part.children[0]
        exprs = [c for c in decl.children if not c.kind.endswith("_ATTR") and c.kind != "TYPE_REF"]
        return (decl, exprs[-1]) if exprs else (None, None)
    if part.kind == "BINARY_OPERATOR" and part.op == "=" and len(part.children) == 2:
        t = part.children[0].strip
        if t.kind == "DECL_REF_EXPR" and t.ref is not None:
            return t.ref, part.children[1]
    return None, None


def _step(part, var):
    """('half' | 'double' | 'inc' | 'dec', function) for the loop increment."""
    if part is None:
        return None
    n = part.strip
    tgt = n.children[0].strip if n.children else None
    if tgt is None or tgt.kind != "DECL_REF_EXPR" or tgt.ref is not var:
        return None
    if n.kind == "UNARY_OPERATOR":
        return {"++": "inc", "post++": "inc", "--": "dec", "post--": "dec"}.get(n.op)
    if len(n.children) != 2:
        return None
    c = int_value(n.children[1])
    if n.kind == "COMPOUND_ASSIGNMENT_OPERATOR":
        return {(">>=", 1): "half", ("/=", 2): "half", ("<<=", 1): "double", ("*=", 2): "double",
                ("+=", 1): "inc", ("-=", 1): "dec"}.get((n.op, c))
    if n.kind == "BINARY_OPERATOR" and n.op == "=":
        r = n.children[1].strip
        if r.kind == "BINARY_OPERATOR" and len(r.children) == 2 and r.children[0].strip.kind == "DECL_REF_EXPR" \
                and r.children[0].strip.ref is var:
            return {(">>", 1): "half", ("/", 2): "half", ("<<", 1): "double", ("*", 2): "double",
                    ("+", 1): "inc", ("-", 1): "dec"}.get((r.op, int_value(r.children[1])))
    return None


def _cond(part, var):
    """(operator with the loop variable on the left, bound node, bound value) or None."""
    if part is None:
        return None
    n = part.strip
    if n.kind == "DECL_REF_EXPR" and n.ref is var:
        return "!=", None, 0
    if n.kind != "BINARY_OPERATOR" or n.op not in _CMP or len(n.children) != 2:
        return None
    a, b = n.children
    if a.strip.kind == "DECL_REF_EXPR" and a.strip.ref is var and int_value(b) is not None:
        return n.op, b, int_value(b)
    if b.strip.kind == "DECL_REF_EXPR" and b.strip.ref is var and int_value(a) is not None:
        return _FLIP[n.op], a, int_value(a)
    return None


def _holds(op, v, bound):
    return {"<": v < bound, "<=": v <= bound, ">": v > bound, ">=": v >= bound, "!=": v != bound}[op]


def _values(start, step, cond):
    """The loop variable's values, or [] when the loop does not terminate within a few steps."""
    if start <= 0 and step in ("half", "double"):
        return []
    vals, v = [], start
    for _ in range(_MAX_STEPS):
        if cond is None:
            if step != "half" or v <= 0:
                break
        elif not _holds(cond[0], v, cond[2]):
            break
        vals.append(v)
        v = {"half": v // 2, "double": v * 2, "inc": v + 1, "dec": v - 1}[step]
    else:
        return []
    return vals


class _Shuffles:
    """Shuffle intrinsics and in-file device functions that pass a parameter straight through as a shuffle's
    lane / offset argument (`WARP_SHFL_XOR(v, o)`): view(call) -> (source_lane, lane argument, width or None)."""

    def __init__(self, model):
        self.model = model
        self._wrappers = {}

    def _wrapper(self, fn):
        if id(fn) in self._wrappers:
            return self._wrappers[id(fn)]
        self._wrappers[id(fn)] = None
        params = [p.node for p in fn.params]
        for n in self.model.kind_in(fn.body, "CALL_EXPR"):
            ops = shuffle_operands(n)
            if ops is None:
                continue
            lane = ops[0].strip
            if lane.kind == "DECL_REF_EXPR" and lane.ref is not None and lane.ref in params:
                w = ops[1]
                wi = None
                if w is not None and w.strip.kind == "DECL_REF_EXPR" and w.strip.ref in params:
                    wi = params.index(w.strip.ref)
                self._wrappers[id(fn)] = (n.callee in ("__shfl_sync", "__shfl"), params.index(lane.ref), wi, w)
                break
        return self._wrappers[id(fn)]

    def view(self, call):
        if call.kind != "CALL_EXPR":
            return None
        fn = function_by_call(self.model, call)
        ops = shuffle_operands(call)
        # an in-file overload of an intrinsic's name (HeCBench dpid's float4 `__shfl_down`, width 32) is a wrapper
        # when the call resolves to it (by declaration: a float argument still calls the intrinsic)
        if ops is not None and (fn is None or fn.body is None or call.ref is None or fn.node is not call.ref):
            return call.callee in ("__shfl_sync", "__shfl"), ops[0], ops[1]
        if fn is None or fn.body is None or not fn.is_device_code:
            return None
        w = self._wrapper(fn)
        if w is None:
            return None
        source, li, wi, inner_width = w
        args = call.args()
        if li >= len(args):
            return None
        if wi is None:
            width = inner_width
        elif wi < len(args):
            width = args[wi]
        else:  # the wrapper's default width
            dflt = [c for c in fn.params[wi].node.children if c.kind not in ("TYPE_REF", "TEMPLATE_REF")]
            width = dflt[-1] if dflt else None
        return source, args[li], width


def _offset_expr(view, var, an):
    """(role, expression) of the var-dependent lane operand of a shuffle: role 'offset' for xor/up/down deltas and
    `lane ^ o`, 'lane' for a source lane."""
    source, arg, width = view
    if width is not None and int_value(width) is not None:
        return None  # explicit constant segment width: deliberate
    if not _refs(arg, var):
        return None
    a = arg.strip
    if source and a.kind == "BINARY_OPERATOR" and a.op == "^" and len(a.children) == 2:
        x, y = a.children
        if _refs(y, var) and not _refs(x, var) and an.thread_dependent(x):
            return "offset", y
        if _refs(x, var) and not _refs(y, var) and an.thread_dependent(y):
            return "offset", x
        return None
    if an.thread_dependent(arg):
        return None
    return ("lane" if source else "offset"), arg


def _check_loop(ctx, loop, shuffles):
    an = ctx.analysis
    init, cond_p, inc, body = for_parts(loop)
    var, start = _init(init)
    if var is None or body is None:
        return
    s = int_value(start)
    step = _step(inc, var)
    if s is None or step is None:
        return
    cond = _cond(cond_p, var)
    if cond_p is not None and cond is None:
        return
    vals = _values(s, step, cond)
    if not vals:
        return
    for call in body.model.kind_in(body, "CALL_EXPR"):      # view() is None for anything else
        view = shuffles.view(call)
        if view is None:
            continue
        oe = _offset_expr(view, var, an)
        if oe is None:
            continue
        role, expr = oe
        offs = [_eval(expr, var, v) for v in vals]
        if any(o is None for o in offs):
            continue
        top = max(offs)
        if (role == "offset" and top != 16) or (role == "lane" and top != 31):
            continue
        direct = expr.strip.kind == "DECL_REF_EXPR" and expr.strip.ref is var
        shfl = call.text if len(call.text) <= 60 else call.callee + "(...)"
        if offs[0] == top and role == "offset":
            f = None
            if direct and step == "half" and spelled(start):
                f = fix(f"Start at `warpSize / 2` instead of `{start.text}`", replace(start, "warpSize / 2"))
            first = f"`{start.text}`" if direct else f"`{expr.text}` with `{var.spelling} = {start.text}`"
            ctx.report(CODE, start, f"shuffle loop starts at offset 16 ({first}), so `{shfl}` combines only 32 "
                                    f"lanes: on a 64-lane wavefront lanes 32..63 are never reduced and half the "
                                    f"values are lost; start at `warpSize / 2`", fix=f)
        else:
            bound = cond[1] if cond is not None else None
            at = start if offs[0] == top else bound if bound is not None else loop
            f = None
            if direct and bound is not None and spelled(bound) and step in ("double", "inc"):
                new = {("<", 32): "warpSize", ("<=", 16): "warpSize / 2", ("<=", 31): "warpSize - 1"}.get(
                    (cond[0], cond[2]))
                if new is not None and (role == "offset") == (step == "double"):
                    f = fix(f"Bound the loop by `{new}` instead of `{bound.text}`", replace(bound, new))
            hdr = cond_p.text if cond_p is not None else at.text
            what = (f"reads source lanes 0..31 (`{hdr}`)" if role == "lane"
                    else f"stops at offset 16 (`{hdr}`)")
            ctx.report(CODE, at, f"shuffle loop {what}, so `{shfl}` covers only 32 lanes: on a 64-lane "
                                 f"wavefront lanes 32..63 are never combined; bound it by `warpSize`", fix=f)
        return


def _last_lane_compares(ctx):
    """`lane == 31` / `lane != 31` on a lane id: the last lane of a 32-lane warp, the middle of a wave64 and a lane
    that does not exist on subgroups of 4..16 (a scan's warp total then is never written: wrong, exit 0 before)."""
    an = None
    for n in ctx.model.of_kind("BINARY_OPERATOR"):
        if n.op not in ("==", "!=") or len(n.children) != 2:
            continue
        a, b = n.children
        lit, other = (a, b) if int_value(a) == 31 else (b, a) if int_value(b) == 31 else (None, None)
        if lit is None:
            continue
        fn = ctx.model.function_of(n)
        if fn is None or not fn.is_device_code:
            continue
        an = an or ctx.analysis
        if not is_lane_id(an, other):
            continue
        f = fix(f"Use `warpSize - 1` instead of `{lit.text}`", replace(lit, "warpSize - 1")) if spelled(lit) else None
        ctx.report(CODE, lit, f"`{n.text}` compares a lane id with 31, the last lane of a 32-lane warp: on a 64-lane "
                              f"wavefront that is the middle lane and on smaller subgroups no lane; use "
                              f"`warpSize - 1`", fix=f)


def _const_offset(view, an):
    """Constant offset of a shuffle outside loops: delta/laneMask, or `lane ^ c` for __shfl_sync."""
    source, arg, width = view
    if width is not None and int_value(width) is not None:
        return None
    if source:
        a = arg.strip
        if a.kind == "BINARY_OPERATOR" and a.op == "^" and len(a.children) == 2:
            x, y = a.children
            if int_value(y) is not None and an.thread_dependent(x):
                return int_value(y)
            if int_value(x) is not None and an.thread_dependent(y):
                return int_value(x)
        return None
    return int_value(arg)


def check(ctx):
    _last_lane_compares(ctx)
    # every other finding goes through a shuffle call (directly or inside a wrapper function of this file)
    if not any(c.callee in SHUFFLES for c in ctx.model.of_kind("CALL_EXPR")):
        return
    an = ctx.analysis
    shuffles = _Shuffles(ctx.model)
    for fn in ctx.model.functions:
        if not fn.is_device_code or fn.body is None:
            continue
        seq = []
        for n in ctx.model.kinds_in(fn.body, "FOR_STMT", "CALL_EXPR"):   # view() is None for the rest
            if n.kind == "FOR_STMT":
                _check_loop(ctx, n, shuffles)
                continue
            view = shuffles.view(n)
            if view is not None:
                off = _const_offset(view, an)
                if off is not None:
                    seq.append((n, off))
                source, arg, width = view
                if source and int_value(arg) == 31 and (width is None or int_value(width) is None):
                    f = fix(f"Use `warpSize - 1` instead of `{arg.text}`", replace(arg, "warpSize - 1")) \
                        if spelled(arg) else None
                    ctx.report(CODE, arg, f"`{n.text}` reads source lane 31, the last lane of a 32-lane warp: on "
                                          f"a 64-lane wavefront that is the middle lane; use `warpSize - 1`", fix=f)
        seq.sort(key=lambda c: c[0].start)
        for i, (call, off) in enumerate(seq):
            nxt = seq[i + 1][1] if i + 1 < len(seq) else None
            if off == 16 and nxt == 8:
                offs = [off]
                for _, o in seq[i + 1:]:
                    if o != offs[-1] // 2 or o == 0:
                        break
                    offs.append(o)
                f = _unrolled_fix(ctx, call, descending=True) if offs == _DOWN else None
                ctx.report(CODE, call, f"unrolled shuffle steps with offsets {', '.join(map(str, offs))} starting "
                                       f"at `{call.text}` cover only 32 lanes: on a 64-lane wavefront lanes 32..63 "
                                       f"are never combined; loop from `warpSize / 2` instead", fix=f)
            elif off == 1 and nxt == 2 and [o for _, o in seq[i:i + 5]] == _UP and \
                    all(_xor_like(c, shuffles.view(c)) for c, _ in seq[i:i + 5]) and \
                    (i + 5 == len(seq) or seq[i + 5][1] != 32) and (i == 0 or seq[i - 1][1] != 1):
                ctx.report(CODE, call, f"unrolled butterfly steps with offsets 1, 2, 4, 8, 16 starting at "
                                       f"`{call.text}` cover only 32 lanes: on a 64-lane wavefront lanes 32..63 are "
                                       f"never combined; loop up to `warpSize` instead",
                           fix=_unrolled_fix(ctx, call, descending=False))


# ---- unrolled steps: `v += SHFL(v, 16); ... v += SHFL(v, 1);` -> one loop over warpSize ----

_DOWN = [16, 8, 4, 2, 1]
_UP = [1, 2, 4, 8, 16]
_MINMAX = {"fmaxf", "fminf", "fmax", "fmin", "max", "min"}
_DOWN_OR_XOR = {"__shfl_down", "__shfl_down_sync", "__shfl_xor", "__shfl_xor_sync"}


def _xor_like(call, view) -> bool:
    """A butterfly step (`__shfl_xor*`, a wrapper named like one, `__shfl_sync(m, v, lane ^ c)`): its steps
    commute, so 1, 2, 4, 8, 16 is a reduction as much as 16 .. 1."""
    return view is not None and (view[0] or "xor" in call.callee.lower())


def _outer(n):
    while n.parent is not None and n.parent.kind in ("UNEXPOSED_EXPR", "PAREN_EXPR") and n.parent.children == [n]:
        n = n.parent
    return n


def _var_ref(n, var=None):
    n = n.strip
    if n.kind != "DECL_REF_EXPR" or n.ref is None or (var is not None and n.ref is not var):
        return None
    return n.ref


def _unrolled_step(model, call):
    """(statement, shape, variable, offset literal) when `call` is the shuffle of a statement of its own
    `v += SHFL(v, c)` or `v = fmaxf(v, SHFL(v, c))` (the intrinsic itself, no width argument, c a literal written
    in the file); else None. `shape` is what every step of one run must share: operator, function, mask text."""
    if call.callee not in _DOWN_OR_XOR or function_by_call(model, call) is not None:
        return None    # an in-file function of that name (HeCBench dpid's float4 __shfl_down) has its own width
    ops = shuffle_operands(call)
    args = call.args()
    sync = call.callee.endswith("_sync")
    if ops is None or ops[1] is not None or len(args) != (3 if sync else 2):
        return None
    var = _var_ref(args[1 if sync else 0])
    off = ops[0]
    if var is None or off.strip.kind != "INTEGER_LITERAL" or not spelled(off.strip):
        return None
    c = _outer(call)
    p = c.parent
    if p is None:
        return None
    if p.kind == "COMPOUND_ASSIGNMENT_OPERATOR" and p.op == "+=" and len(p.children) == 2 and p.children[1] is c:
        stmt, shape = p, ("+=",)
    elif p.kind == "CALL_EXPR" and p.callee in _MINMAX and len(p.args()) == 2 and \
            function_by_call(model, p) is None:
        a, b = p.args()
        if _outer(b) is c and _var_ref(a, var):
            order = 0
        elif _outer(a) is c and _var_ref(b, var):
            order = 1
        else:
            return None
        q = _outer(p).parent
        if q is None or q.kind != "BINARY_OPERATOR" or q.op != "=" or len(q.children) != 2 or \
                _outer(q.children[1].strip) is not _outer(p) and q.children[1].strip is not p:
            return None
        stmt, shape = q, (p.callee, order)
    else:
        return None
    if not _var_ref(stmt.children[0], var) or stmt.parent is None or stmt.parent.kind != "COMPOUND_STMT" or \
            model.macro_at(stmt.start, stmt.end) is not None:
        return None
    return stmt, shape + (call.callee, args[0].text if sync else None), var, off.strip


def _step_of(model, stmt):
    """_unrolled_step of the only shuffle call of a statement, when that statement is the step."""
    calls = [n for n in model.kind_in(stmt, "CALL_EXPR") if n.callee in SHUFFLES]
    if len(calls) != 1:
        return None
    st = _unrolled_step(model, calls[0])
    return st if st is not None and st[0] is stmt else None


def _fresh(model, base="cuport_o"):
    import re
    text = model.source.slice(0, len(model.source.data))
    name, k = base, 1
    while re.search(rf"\b{name}\b", text):
        k += 1
        name = f"{base}{k}"
    return name


def _unrolled_fix(ctx, first_call, descending: bool):
    """Safe fix for exactly five consecutive steps with the same variable, operator, shuffle and mask and nothing
    else between them (not even a comment): one loop that is the same five steps on a 32-lane warp."""
    model = ctx.model
    first = _unrolled_step(model, first_call)
    if first is None:
        return None
    stmt, shape, var, _ = first
    block = stmt.parent.children
    i = next(k for k, c in enumerate(block) if c is stmt)
    run = block[i:i + 5]
    steps = [_step_of(model, s) for s in run]
    want = _DOWN if descending else _UP
    if len(run) != 5 or any(st is None or st[1] != shape or st[2] is not var for st in steps) or \
            [int_value(st[3]) for st in steps] != want:
        return None
    if not descending and "xor" not in shape[-2]:
        return None
    for other in ([block[i - 1]] if i > 0 else []) + block[i + 5:i + 6]:    # the run is maximal
        st = _step_of(model, other)
        if st is not None and st[1] == shape and st[2] is var:
            return None
    src = model.source
    for a, b in zip(run, run[1:]):
        if src.slice(a.end, b.start).strip() != ";":
            return None
    o = _fresh(model)
    off = steps[0][3]
    body = src.slice(stmt.start, off.start) + o + src.slice(off.end, stmt.end)
    head = (f"for (int {o} = warpSize / 2; {o} > 0; {o} /= 2) " if descending
            else f"for (int {o} = 1; {o} < warpSize; {o} *= 2) ")
    old = src.slice(stmt.start, run[-1].end)
    return fix("Replace the unrolled steps by a loop over `warpSize`",
               Edit(stmt.start, run[-1].end, head + body, old))
