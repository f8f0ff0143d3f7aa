"""A named constant equal to 32 (`#define WARP_SIZE 32`, `constexpr`, `const`, enum) used as the warp size.

## What it does
Finds named constants that fold to 32 — object-like macros (also through other macros such as
`#define WARPS (BLOCK / WARP_SIZE)` or `#define LANE(t) ((t) % WARP_SIZE)`), `constexpr` / `const` integer
variables and enumerators — and follows their uses, through arithmetic, locals, loop variables and the parameters
of device functions in the same file. The constant is reported at its definition, naming one use, when it flows
into:
- a shuffle's offset, source lane or width argument, or a comparison with a ballot / active-mask value;
- a per-warp `__shared__` array (`partial[BLOCK / WARP_SIZE]`) indexed by a lane or warp id;
- lane / warp arithmetic on a thread index (`tid % WARP_SIZE`, `tid / WARP_SIZE`, `wid * WARP_SIZE`) or a
  comparison with a thread index, in a function that uses warp intrinsics;
- host launch math for a kernel with warp-level code.

A constant whose name says it is a warp size (`WARP_SIZE`, `kLanes`, `WAVE`...) is reported for lane arithmetic
and launch math even without warp intrinsics. A 32 used only as a tile width (`TILE` in a tiled matrix multiply),
a bit width (`bits[i / BITS] |= 1u << (i % BITS)`) or an alignment is not flagged, nor is code written with
`warpSize`.

## Why is this bad?
The constant bakes NVIDIA's warp of 32 into the algorithm. AMD CDNA GPUs run 64-lane wavefronts and Vulkan
subgroups have 4..128 lanes, so reductions skip half the wave, per-warp slots are half written and lane ids
wrap: silently wrong results. Changing the constant to 64 does not fix it either (ggml-org/llama.cpp#3630
printed garbage): it breaks the NVIDIA build and every 32-lane subgroup.

## Example
```cuda
#define WARP_SIZE 32
for (int o = WARP_SIZE / 2; o > 0; o >>= 1)
  v += __shfl_xor_sync(0xffffffff, v, o, WARP_SIZE);
```

## Use instead
```cuda
for (int o = warpSize / 2; o > 0; o >>= 1)
  v += __shfl_xor_sync(0xffffffff, v, o);
```
Where the size must be a compile-time constant (array bounds, templates), make it a template parameter and pick
the instantiation on the host from `cudaDeviceProp::warpSize` / `hipDeviceProp_t::warpSize`.

## Fix safety
Display-only, and only for a macro whose every use is a run-time expression in device code: `#define WARP_SIZE
warpSize`. It is not applied automatically because the algorithm around the constant (per-warp storage sizes,
masks, launch math) usually has to change too. No fix for variables and enumerators.

## References
- ggml-org/llama.cpp#3630 (WARP_SIZE 64 printed garbage), cupy/cupy#9977, vllm-project/vllm#12789,
  pytorch/pytorch#186229, ROCm/bitsandbytes#93, ORNL/HeCBench#171, ORNL/HeCBench#180, ORNL/HeCBench#167,
  apache/tvm#5727, kokkos/kokkos#3216, hypre-space/hypre#158.
"""
import bisect
import re

from porter.diagnostics import Applicability, Edit, Fix
from porter.frontend.model import WARP_INTRINSICS
from porter.analysis.syntax import array_dim_exprs
from porter.lint.helpers import (SHUFFLES, array_subscripts, function_by_call, header_kernel_is_warp_free, int_value,
                                 is_shift_count, shuffle_operands, warp_evidence, warp_index_kind)

CODE = "CP101"
_WARPISH = re.compile(r"warp|wave|lane|simd|subgroup", re.I)
_THROUGH = {"PAREN_EXPR", "CSTYLE_CAST_EXPR", "CXX_STATIC_CAST_EXPR", "CXX_FUNCTIONAL_CAST_EXPR",
            "UNEXPOSED_EXPR"}
_ARITH = {"+", "-", "*", "/", "<<", ">>", "&", "|"}
_CMP = {"<", "<=", ">", ">=", "==", "!="}
_MASKS = {"__ballot_sync", "__ballot", "__activemask", "__any_sync", "__all_sync", "__match_any_sync",
          "__match_all_sync", "__lanemask_lt"}
_CONFIG = {"cudaConfigureCall", "__cudaPushCallConfiguration"}
_MAX_DEPTH = 3
_IDENT = re.compile(r"[A-Za-z_]\w*")
# a count of warps that happens to be 32 (`MAX_NUM_WARPS = 1024 / 32`), not a warp size
_WARP_COUNT = re.compile(r"(num|n|max|count|total)_?warps|warps_?(per|count|in)|warp_?(count|num)|nwarps", re.I)


def _warp_count(decl, init) -> bool:
    """A variable whose name says it counts warps, or whose value is a number of threads divided by 32."""
    if _WARP_COUNT.search(decl.spelling):
        return True
    e = init.strip
    return e.kind == "BINARY_OPERATOR" and e.op == "/" and int_value(e.children[1]) == 32


def _short(node, limit=60):
    t = " ".join(node.text.split())
    return t if len(t) <= limit else t[:limit - 3] + "..."


class _Flow:
    """Where the uses of one constant end up: (strength, what, node) with strength 'strong' or 'weak'."""

    def __init__(self, ctx, bit_bases):
        self.ctx = ctx
        self.an = ctx.analysis
        self.model = ctx.model
        self.bit_bases = bit_bases
        self._intrinsics = {}
        self._evidence = {}
        self._uses = {}

    def uses_intrinsics(self, fn, depth=2, seen=None):
        if fn is None or fn.body is None:
            return False
        if id(fn) in self._intrinsics:
            return self._intrinsics[id(fn)]
        seen = seen if seen is not None else set()
        seen.add(id(fn))
        r = False
        for n in fn.body.walk():
            if n.kind == "CALL_EXPR":
                if n.callee in WARP_INTRINSICS:
                    r = True
                    break
                if depth > 0:
                    f = function_by_call(self.model, n)
                    if f is not None and id(f) not in seen and self.uses_intrinsics(f, depth - 1, seen):
                        r = True
                        break
        self._intrinsics[id(fn)] = r
        return r

    def kernel_evidence(self, name):
        """(evidence node or None, whether the kernel's definition is in this file)."""
        if name not in self._evidence:
            kf = next((f for f in self.model.functions if f.name == name and f.is_kernel and f.body is not None),
                      None)
            self._evidence[name] = (warp_evidence(self.an, kf) if kf is not None else None, kf is not None)
        return self._evidence[name]

    def _maskish(self, node, depth=0):
        for n in node.walk():
            if n.kind == "CALL_EXPR" and n.callee in _MASKS:
                return True
            if n.kind == "DECL_REF_EXPR" and n.ref is not None and n.ref.kind == "VAR_DECL" and depth < 2:
                d = self.an.definition(n.ref)
                if d is not None and self._maskish(d, depth + 1):
                    return True
        return False

    def _var_uses(self, decl, depth, scope=None):
        key = (id(decl), id(scope))
        if key in self._uses:  # also breaks cycles (a = f(a))
            return self._uses[key]
        self._uses[key] = []
        out = []
        root = scope if scope is not None else decl.enclosing("FUNCTION_DECL", "FUNCTION_TEMPLATE", "CXX_METHOD")
        nodes = root.walk() if root is not None else self.model.of_kind("DECL_REF_EXPR")
        for n in nodes:
            if n.kind == "DECL_REF_EXPR" and n.ref is decl:
                out += self.sinks(n, depth + 1)
        self._uses[key] = out
        return out

    def sinks(self, x, depth=0):
        if depth > _MAX_DEPTH:
            return []
        an = self.an
        child, p = x, x.parent
        while p is not None:
            k = p.kind
            if k in _THROUGH:
                child, p = p, p.parent
                continue
            if k == "CALL_EXPR":
                return self._call_sink(p, child, depth)
            if k == "BINARY_OPERATOR" and len(p.children) == 2:
                op = p.op
                lhs, rhs = p.children
                other = lhs if child is rhs else rhs
                if op in _CMP or op in _ARITH:
                    if self._maskish(other):
                        return [("strong", "compared with a ballot / lane mask", p)]
                if op in _CMP:
                    o = other.strip
                    if o.kind == "DECL_REF_EXPR" and o.ref is not None and p.parent is not None and \
                            p.parent.kind == "FOR_STMT" and o.ref.enclosing("FOR_STMT") is p.parent:
                        return self._var_uses(o.ref, depth, scope=p.parent)
                    if int_value(other) is None and an.thread_dependent(other):
                        return [("weak", "compared with a thread index", p)]
                    return []
                if child is rhs and op in ("%", "/", ">>", "&") and int_value(lhs) is None and \
                        an.thread_dependent(lhs):
                    if op in ("%", "&") and is_shift_count(p):
                        return []  # a bit position
                    if op in ("/", ">>") and lhs.strip.text in self.bit_bases:
                        return []  # a bitmap word index
                    kind = "lane" if op in ("%", "&") else "warp"
                    return [("weak", f"{kind} id arithmetic", p)]
                if op == "*" and warp_index_kind(an, other) is not None and warp_index_kind(an, other)[0] == "warp":
                    return [("weak", "warp base arithmetic", p)]
                if op == "=" and child is rhs:
                    t = lhs.strip
                    if t.kind == "DECL_REF_EXPR" and t.ref is not None and t.ref.kind == "VAR_DECL":
                        return self._var_uses(t.ref, depth)
                    return []
                if op in _ARITH:
                    child, p = p, p.parent
                    continue
                return []
            if k == "VAR_DECL":
                if any(d is child for d in array_dim_exprs(p)):
                    return self._array_sink(p, child)
                return self._var_uses(p, depth)
            return []
        return []

    def _call_sink(self, call, child, depth):
        name = call.callee
        if name in SHUFFLES:
            ops = shuffle_operands(call)
            if ops is None:
                return []
            lane, width = ops
            if child is width:
                return [("strong", "shuffle width", call)]
            if child is lane:
                return [("strong", "shuffle source lane" if name in ("__shfl_sync", "__shfl") else "shuffle offset",
                         call)]
            return []
        if name == "dim3":
            return self.sinks(call, depth)
        if name in _CONFIG:
            launch = call.parent
            kernel = launch.spelling if launch is not None else ""
            ev, visible = self.kernel_evidence(kernel)
            if ev is None and (visible or header_kernel_is_warp_free(launch, kernel)):
                return []       # a kernel in view with no warp-level code: its block size is only a block size
            return [("strong" if ev is not None else "launch", f"launch configuration of `{kernel}`", launch)]
        f = function_by_call(self.model, call)
        if f is not None and f.body is not None and f.is_device_code:
            args = call.args()
            i = next((j for j, a in enumerate(args) if a is child), None)
            if i is not None and i < len(f.params):
                return self._var_uses(f.params[i].node, depth, scope=f.body)
        return []

    def _array_sink(self, decl, dim):
        if not any(c.kind == "CUDASHARED_ATTR" for c in decl.children):
            return []
        dims = array_dim_exprs(decl)
        d = next(i for i, e in enumerate(dims) if e is dim)
        for acc, idx in array_subscripts(self.model, decl):
            if len(idx) > d and warp_index_kind(self.an, idx[d]) is not None:
                return [("strong", f"per-warp array `{decl.spelling}` indexed by `{_short(idx[d], 30)}`", acc)]
        return []


def _bit_bases(model):
    bases = set()
    for n in model.of_kind("BINARY_OPERATOR"):
        if n.op in ("%", "&") and len(n.children) == 2 and int_value(n.children[1]) in (31, 32) \
                and is_shift_count(n):
            bases.add(n.children[0].strip.text)
    return bases


def _macro_body(model, name):
    if name not in model.macro_defs:     # defined in a header or on the command line: no body to read here
        return None, []
    s, e = model.macro_defs[name]
    toks = model.tokens_in(s, e)
    if not toks:
        return None, []
    body = toks[1:]
    function_like = len(body) > 0 and body[0].spelling == "(" and body[0].start == toks[0].end
    return function_like, body


def _literal_body(model, name):
    """Value of an object-like macro whose body is one integer literal, maybe parenthesised: `32`, `(32)`, `0x20u`."""
    function_like, body = _macro_body(model, name)
    if function_like:
        return None
    toks = [t.spelling for t in body]
    while len(toks) >= 3 and toks[0] == "(" and toks[-1] == ")":
        toks = toks[1:-1]
    if len(toks) != 1:
        return None
    try:
        return int(toks[0].rstrip("uUlL"), 0)
    except ValueError:
        return None


def _constants(model):
    """(name, definition span or None, kind, [(use node, macro it came through)]) for each named constant equal to
    32. Macros defined on the command line have no definition span."""
    out = []
    lits: dict[str, list] = {}
    spans: dict[str, list] = {}
    for lit in model.of_kind("INTEGER_LITERAL"):
        if int_value(lit) == 32:
            m = model.macro_at(lit.start, lit.end)
            if m is None and _IDENT.fullmatch(lit.text):
                # a macro from the command line: clang records no expansion for it
                m = lit.text
                spans.setdefault(m, []).append((lit.start, lit.end))
            if m is not None:
                lits.setdefault(m, []).append(lit)
    for s, e, nm in model.macro_uses:
        if nm in lits:
            spans.setdefault(nm, []).append((s, e))

    ordered = {}

    def span_of(lit, m):
        """The expansion of `m` holding `lit` (bisect over the sorted spans: a scan per literal was quadratic)."""
        if m not in ordered:
            srt = sorted(spans[m])
            ordered[m] = (srt, [sp[0] for sp in srt])
        srt, starts = ordered[m]
        k = bisect.bisect_right(starts, lit.start)
        if k and lit.end <= srt[k - 1][1]:
            return srt[k - 1]
        return next(((s, e) for s, e in spans[m] if s <= lit.start and lit.end <= e), (lit.start, lit.end))

    def top_of(lit, m):
        ms, me = span_of(lit, m)
        top = lit
        while top.parent is not None and top.parent.start >= ms and top.parent.end <= me and \
                top.parent.kind in _THROUGH and int_value(top.parent) == 32:
            top = top.parent
        return top

    def whole(lit, m):
        """The expansion of `m` as a whole folds to 32 (not just a part of it, as in `(256 / WARP_SIZE)`)."""
        ms, me = span_of(lit, m)
        top = lit
        while top.parent is not None and (top.parent.start, top.parent.end) == (ms, me):
            top = top.parent
        return (top.start, top.end) == (ms, me) and int_value(top) == 32

    # base macros expand to 32; derived ones mention a base macro in their body (WARPS, LANE(t))
    base = {m for m in model.macro_defs if _literal_body(model, m) == 32}
    for m, ls in lits.items():
        if m in base or (m in model.macro_defs and _macro_body(model, m)[0]):
            continue
        if any(whole(lit, m) for lit in ls):
            base.add(m)
    owners = {m: m for m in base}
    changed = True
    while changed:
        changed = False
        for m in model.macro_defs:
            if m in owners:
                continue
            for t in _macro_body(model, m)[1]:
                if t.spelling in owners:
                    owners[m] = owners[t.spelling]
                    changed = True
                    break
    uses: dict[str, list] = {m: [] for m in base}
    for m, ls in lits.items():
        if m in owners:
            for lit in ls:
                uses[owners[m]].append((top_of(lit, m), m))
    for m in sorted(base):
        span = None
        if m in model.macro_defs:
            s, _ = model.macro_defs[m]
            span = (s, s + len(m))
        out.append((m, span, "macro", uses[m]))
    # const / constexpr variables and enumerators
    cands = []
    for d in model.of_kind("VAR_DECL", "ENUM_CONSTANT_DECL"):
        exprs = [c for c in d.children if not c.kind.endswith("_ATTR") and c.kind != "TYPE_REF"]
        if d.kind == "VAR_DECL" and ("const" not in d.type.split() or
                                     any(c.kind == "CUDASHARED_ATTR" for c in d.children)):
            continue
        if exprs and int_value(exprs[-1]) == 32:
            if d.kind == "VAR_DECL" and _warp_count(d, exprs[-1]):
                continue
            cands.append(d)
        elif d.kind == "ENUM_CONSTANT_DECL" and not exprs:
            cands.append(d)  # implicit value: checked on a use
    if cands:
        names = {d.spelling for d in cands}
        refs_of: dict[int, list] = {}
        for r in model.of_kind("DECL_REF_EXPR"):
            if r.spelling in names and r.ref is not None:
                refs_of.setdefault(id(r.ref), []).append(r)
        for d in cands:
            refs = refs_of.get(id(d), [])
            if not refs or (d.kind == "ENUM_CONSTANT_DECL" and int_value(refs[0]) != 32):
                continue
            out.append((d.spelling, (d.start, d.end),
                        "enumerator" if d.kind == "ENUM_CONSTANT_DECL" else "variable", [(r, None) for r in refs]))
    return out


_RANK = {"strong": 0, "weak": 1, "launch": 2}


def _runtime_only(model, use):
    """The use is a run-time expression in device code (so the macro could expand to `warpSize`)."""
    f = model.function_of(use)
    if f is None or not f.is_device_code:
        return False
    c, p = use, use.parent
    while p is not None and (p.kind in _THROUGH or p.kind in ("BINARY_OPERATOR", "UNARY_OPERATOR")):
        c, p = p, p.parent
    if p is None:
        return False
    if p.kind == "VAR_DECL" and (any(d is c for d in array_dim_exprs(p)) or "const" in p.type.split()):
        return False
    return p.kind not in ("STATIC_ASSERT", "CASE_STMT", "ENUM_CONSTANT_DECL", "TEMPLATE_NON_TYPE_PARAMETER") and \
        not (p.kind == "DECL_REF_EXPR" and p.children and p.children[0].kind == "OVERLOADED_DECL_REF")


def check(ctx):
    model = ctx.model
    flow = _Flow(ctx, _bit_bases(model))
    for name, span, kind, uses in _constants(model):
        if not uses:
            continue
        warpish = _WARPISH.search(name) is not None
        found = []
        for use, via in uses:
            for strength, what, node in flow.sinks(use):
                if strength == "weak" and not warpish and not flow.uses_intrinsics(model.function_of(node)):
                    continue
                if strength == "launch" and not warpish:
                    continue
                found.append((_RANK[strength], node.start, what, node, via, use))
        if not found:
            continue
        found.sort(key=lambda f: (f[0], f[1]))
        _, _, what, node, via, first_use = found[0]
        row = model.source.position(node.start)[0]
        through = f" through `{via}`" if via and via != name else ""
        more = len({f[1] for f in found}) - 1
        more_txt = f" (and {more} more use{'s' if more > 1 else ''})" if more > 0 else ""
        fix = None
        if kind == "macro" and all(_runtime_only(model, u) for u, _ in uses) and \
                sum(1 for _, _, n in model.macro_uses if n == name) == len(uses):
            _, body = _macro_body(model, name)
            if body:
                fix = Fix(Applicability.DISPLAY_ONLY, f"Define `{name}` as `warpSize`",
                          (Edit(body[0].start, body[-1].end, "warpSize"),))
        at = span if span is not None else (first_use.start, first_use.end)
        where = "" if span is not None else " (defined outside this file or on the command line)"
        if name == "warpSize":   # a header's `#define warpSize 32` hides the built-in variable
            where += ", shadowing the built-in `warpSize`,"
        ctx.report(CODE, at, f"{kind} `{name}` = 32{where} is used as the warp size: {what}{through} on line {row} "
                             f"(`{_short(node)}`){more_txt}; a 64-lane AMD wavefront or a Vulkan subgroup of "
                             f"another width does not match it; use `warpSize` in device code, or a template "
                             f"parameter chosen on the host from the device's warp size", fix=fix)
