"""Thread index combined with a hard-coded warp size of 32 (`% 32`, `& 31`, `>> 5`, `/ 32`).

## What it does
Flags lane and warp arithmetic that folds to the constant 32 (or 31 / 5) applied to a thread-dependent value:
`threadIdx.x % 32`, `tid & 31`, `tid & 0x1f`, `tid >> 5`, `tid / 32`, and `blockDim.x / 32` as a warp count.
Constants are folded through `#define`, `constexpr`, `const` and enums. A `% 32` whose result is a shift count
(a bit position in a 32-bit word) is not flagged, nor (without warp evidence) a `>> 5` masked to a bit field,
`(x >> 5) & 1`. Nor is a bitmap's pair: `x % 32` kept in a local (whatever its name) whose every use is the
count of a shift of a word read at an index holding `x / 32` of the same x, and that `x / 32`
(`(bits[x / 32 * w + j] >> bitLane) & 1`, `atomicOr(&bits[x / 32], 1u << pos)`).

## Why is this bad?
AMD CDNA GPUs (MI200/MI300, gfx9) run 64-wide wavefronts and Vulkan subgroups range from 4 to 128 lanes.
`threadIdx.x % 32` then names the wrong lane, `tid / 32` the wrong warp, and per-warp partial results are
combined incorrectly: silently wrong numbers, not a crash.

## Example
```cuda
int lane = threadIdx.x % 32;
int warp = threadIdx.x >> 5;
```

## Use instead
```cuda
int lane = threadIdx.x % warpSize;
int warp = threadIdx.x / warpSize;
```

A 32 that is a tile width is not a warp: `tile[threadIdx.x / 32][threadIdx.x % 32]` (the quotient and the
remainder of one index subscripting one array) is not flagged unless something says warp (below).

## Fix safety
Safe only with evidence that the value is a lane / warp id or count: it is named so (`lane`, `warp`, `wid`,
a `WARP_SIZE` / `LANES` constant, a `laneId()` function, a `LANE` macro), it feeds a warp intrinsic, or its
function (or one it calls) uses warp intrinsics. Then `% 32` and `/ 32` become `% warpSize` and `/ warpSize`;
`& 31` and `>> 5` become `% warpSize` and `/ warpSize`, which is the same for the non-negative thread indices
they apply to. Without evidence (or with tile indexing next to warp code) the fix is unsafe: the 32 may be a
tile width that must stay 32. When the expression comes
from a macro body (`#define LANE (threadIdx.x % WARP)`), the fix edits the definition once, and only when every
expansion of that macro in the file is flagged and its body holds one `% 32` / `/ 32`; the use sites are never
rewritten. Otherwise (`& 31`, `>> 5`, a macro argument) no fix.

## References
- ggml-org/llama.cpp#3630, cupy/cupy#9977, pytorch/pytorch#186229, ROCm/bitsandbytes#93, ORNL/HeCBench#171.
"""
import re

from porter.frontend.model import WARP_INTRINSICS
from porter.lint.context import fix, replace
from porter.lint.fixer import definition_token, expansions
from porter.lint.helpers import (call_target, function_at, in_device_code, int_value, is_shift_count,
                                 replace_binary, warp_index_kind)

CODE = "CP102"
# operator -> (constant that means "warp size 32", replacement operator)
_PATTERNS = {"%": (32, "%"), "&": (31, "%"), ">>": (5, "/"), "/": (32, "/")}


def _bit_bases(model):
    """Left operands of `% 32` / `& 31` used as shift counts: those values index bits, so `x >> 5` on the same
    value is a word index into a bitmap, not a warp id."""
    bases = set()
    for node in model.of_kind("BINARY_OPERATOR"):
        if node.op in ("%", "&") and len(node.children) == 2 \
                and int_value(node.children[1]) in (31, 32) and is_shift_count(node):
            bases.add(node.children[0].strip.text)
    return bases


def _loads(an, n, depth=0) -> list:
    """The array subscripts read by expression n, also through the definitions of single-assignment locals."""
    found = []
    for x in n.walk():
        if x.kind == "ARRAY_SUBSCRIPT_EXPR":
            found.append(x)
        elif x.kind == "DECL_REF_EXPR" and x.ref is not None and depth < 2:
            d = an.definition(x.ref)
            if d is not None:
                found.extend(_loads(an, d, depth + 1))
    return found


def _word_loads(an, shift) -> list:
    """The array elements whose bits the shift `shift` moves or selects: its shifted operand, what the result is
    combined with through & | ^ (`(w[k] >> b) & 1`, `w[k] & (1u << b)`), the word it is or-ed into
    (`w[k] |= 1u << b`), or an atomic bit operation's target (`atomicOr(&w[k], 1u << b)`)."""
    found = _loads(an, shift.children[0])
    cur, p = _up(shift)
    while p is not None:
        if p.kind == "BINARY_OPERATOR" and p.op in ("&", "|", "^", "==", "!=") and len(p.children) == 2:
            other = p.children[0] if p.children[1] is cur else p.children[1]
            found += _loads(an, other)
        elif p.kind == "COMPOUND_ASSIGNMENT_OPERATOR" and len(p.children) == 2 and p.children[1] is cur:
            found += _loads(an, p.children[0])
            break
        elif p.kind == "CALL_EXPR" and p.callee in ("atomicOr", "atomicAnd", "atomicXor"):
            found += [x for a in p.args()[:1] for x in _loads(an, a)]
            break
        elif not (p.kind == "UNARY_OPERATOR" and p.op == "~"):
            break
        cur, p = _up(p)
    return found


def _bitmap_quotients(an, model, node) -> list:
    """`node` is `x % 32` / `x & 31` stored in a local (`vecLane = i % 32`) whose every use is the count of a
    shift of a word read at an index holding `x / 32` / `x >> 5` of the same x (`(Cb[i / 32 * w + j] >> vecLane)
    & 1`): a bit position in a bitmap of 32-bit words, and the word index. Returns those quotient nodes ([]
    when not such a pair)."""
    decl = _target_decl(node)
    if decl is None or an.definition(decl) is None:
        return []
    uses = model.refs_to(decl)
    if not uses or not all(is_shift_count(u) for u in uses):
        return []
    base = " ".join(node.children[0].strip.text.split())
    quotients = []
    for u in uses:
        _c, shift = _up(u)
        mine = []
        for load in _word_loads(an, shift):
            for ix in _loads_index(an, load):
                for q in ix.walk():
                    if q.kind == "BINARY_OPERATOR" and len(q.children) == 2 and \
                            (q.op, int_value(q.children[1])) in (("/", 32), (">>", 5)) and \
                            " ".join(q.children[0].strip.text.split()) == base:
                        mine.append(q)
        if not mine:
            return []
        quotients += mine
    return quotients


def _loads_index(an, load, depth=0) -> list:
    """The index expression of subscript `load` and the definitions of the single-assignment locals in it."""
    ix = load.children[1] if len(load.children) == 2 else None
    out = [ix] if ix is not None else []
    for x in (ix.walk() if ix is not None else ()):
        if x.kind == "DECL_REF_EXPR" and x.ref is not None and depth < 2:
            d = an.definition(x.ref)
            if d is not None:
                out.append(d)
    return out


def _folds_to(model, tok, value, depth=0) -> bool:
    """A literal token, or an object-like macro of this file whose body is one (maybe parenthesised)."""
    if tok.kind == "LITERAL":
        try:
            return int(tok.spelling.rstrip("uUlL"), 0) == value
        except ValueError:
            return False
    if tok.kind != "IDENTIFIER" or tok.spelling not in model.macro_defs or depth > 4:
        return False
    from porter.lint.fixer import macro_body
    body = [t for t in macro_body(model, tok.spelling) if t.spelling not in "()"]
    return len(body) == 1 and _folds_to(model, body[0], value, depth + 1)


def _body_match(op):
    def match(model, body, i):
        nxt = body[i + 2].spelling if i + 2 < len(body) else ""
        return body[i].spelling == op and i + 1 < len(body) and _folds_to(model, body[i + 1], 32) and \
            nxt not in ("(", "[", ".", "->", "++", "--")
    return match


# names that say "lane / warp": variables, constants, macros and functions (`lane`, `warp_id`, `wid`, `LANES`)
_WARP_NAME = re.compile(r"(?i)lane|warp|wave|(?:^|_)wid(?:$|_)|^wid")
# cooperative groups members that exchange between lanes (`tile.shfl_down(v, 1)`)
_CG_WARP_OPS = {"shfl", "shfl_up", "shfl_down", "shfl_xor", "ballot", "match_any", "match_all"}
_PASS = ("PAREN_EXPR", "UNEXPOSED_EXPR", "CSTYLE_CAST_EXPR", "CXX_STATIC_CAST_EXPR", "CXX_FUNCTIONAL_CAST_EXPR")


def _up(node):
    """The first ancestor that is not a parenthesis or cast, and the child of it on the way."""
    cur, p = node, node.parent
    while p is not None and p.kind in _PASS:
        cur, p = p, p.parent
    return cur, p


def _bit_field(node) -> bool:
    """`E & 31` that is one bit field of a larger value: OR-ed / XOR-ed with other bits, or whose left operand
    is itself bit surgery (`(x << 1 | x >> 4) & 0x1F`)."""
    _cur, p = _up(node)
    if p is not None and p.kind == "BINARY_OPERATOR" and p.op in ("|", "^"):
        return True
    lhs = node.children[0].strip
    return lhs.kind == "BINARY_OPERATOR" and lhs.op in ("|", "^", "<<")


def _bit_extract(node) -> bool:
    """`(x >> 5) & 1`: the shift selects a bit of x (a masked bit field), not a warp id (HeCBench lut-gemm
    builds +-1 signs from bits 0..7 of a thread's index)."""
    _cur, p = _up(node)
    return p is not None and p.kind == "BINARY_OPERATOR" and p.op == "&" and len(p.children) == 2 and \
        int_value(p.children[1]) is not None


def _target_decl(node):
    """The VAR_DECL `node`'s value is stored in (`int lane = E;`, `lane = E;`), else None."""
    cur, p = _up(node)
    if p is None:
        return None
    if p.kind == "VAR_DECL":
        return p
    if p.kind == "BINARY_OPERATOR" and p.op == "=" and len(p.children) == 2 and p.children[1] is cur:
        lhs = p.children[0].strip
        if lhs.kind == "DECL_REF_EXPR" and lhs.ref is not None and lhs.ref.kind == "VAR_DECL":
            return lhs.ref
    return None


def _named_warp(model, node, decl) -> bool:
    """A name around `node` says lane / warp: the variable it is stored in, an identifier in the divisor
    (`WARP_SIZE`, `LANES - 1`), the macro it comes from, or the function it is returned from (`laneId()`)."""
    if decl is not None and _WARP_NAME.search(decl.spelling or ""):
        return True
    rhs = node.children[1]
    if any(t.kind == "IDENTIFIER" and _WARP_NAME.search(t.spelling) for t in model.tokens_in(rhs.start, rhs.end)):
        return True
    if node.macro is not None and _WARP_NAME.search(node.macro):
        return True
    fn = function_at(node)
    return fn is not None and node.enclosing("RETURN_STMT") is not None and bool(_WARP_NAME.search(fn.name))


def _is_warp_call(n) -> bool:
    if n.kind != "CALL_EXPR":
        return False
    c = n.callee
    return c in WARP_INTRINSICS or (c in _CG_WARP_OPS and any(k.kind == "MEMBER_REF_EXPR" for k in n.children[:1]))


def _feeds_warp_call(model, node, decl) -> bool:
    """`node` (or the variable it is stored in) is an argument of a warp intrinsic."""
    if any(_is_warp_call(a) for a in node.ancestors()):
        return True
    return decl is not None and any(_is_warp_call(a) for r in model.refs_to(decl) for a in r.ancestors())


def _function_warp_ops(model, fn, depth=2, seen=None) -> bool:
    """`fn` (or an in-file function it calls, two levels deep) calls a warp intrinsic. Cached per function."""
    cache = model.__dict__.setdefault("_cp102_warp_ops", {})
    if id(fn) in cache and depth == 2:
        return cache[id(fn)]
    seen = seen if seen is not None else set()
    seen.add(id(fn))
    found = False
    calls = []
    for n in model.kinds_in(fn.body, "CALL_EXPR") if fn.body is not None else ():
        if _is_warp_call(n):
            found = True
            break
        calls.append(n)
    if not found and depth > 0:
        for c in calls:
            g = call_target(model, c)
            if g is not None and id(g) not in seen and _function_warp_ops(model, g, depth - 1, seen):
                found = True
                break
    if depth == 2:
        cache[id(fn)] = found
    return found


def _split(an, n, depth=0):
    """(kind, base text) for a lane / warp id `base % 32`, `base / 32`... (through single-assignment locals)."""
    if n is None or depth > 4:
        return None
    n = n.strip
    if n.kind == "DECL_REF_EXPR" and n.ref is not None:
        return _split(an, an.definition(n.ref), depth + 1)
    k = warp_index_kind(an, n)
    if k is None:
        return None
    return k[0], " ".join(n.children[0].strip.text.split())


def _subscript_chain(ix):
    """The indices of the whole `a[i][j]` chain when `ix` is one of its subscripts, else []."""
    cur, p = _up(ix)
    if p is None or p.kind != "ARRAY_SUBSCRIPT_EXPR" or len(p.children) != 2 or p.children[1] is not cur:
        return []
    top = p
    while True:
        _c, q = _up(top)
        if q is None or q.kind != "ARRAY_SUBSCRIPT_EXPR" or q.children[0] is not _c:
            break
        top = q
    idx, n = [], top
    while n.kind == "ARRAY_SUBSCRIPT_EXPR" and len(n.children) == 2:
        idx.append(n.children[1])
        n = n.children[0].strip
    return idx


def _tile_index(an, model, node, decl) -> bool:
    """`node` (or its variable) and the complementary `% 32` / `/ 32` of the same base subscript one array
    (`tile[t / 32][t % 32]`): coordinates in a 32-wide tile, not lane and warp ids."""
    mine = _split(an, node)
    if mine is None:
        return False
    uses = [node] + (list(model.refs_to(decl)) if decl is not None else [])
    for u in uses:
        for other in _subscript_chain(u):
            k = _split(an, other)
            if k is not None and k[1] == mine[1] and k[0] != mine[0]:
                return True
    return False


def _evidence(an, model, node, warp_count: bool) -> str:
    """'safe' when the value is shown to be a lane / warp id or count; 'unsafe' when nothing shows it (or a
    tile's coordinates sit in warp code); 'none' for tile coordinates in code without warp operations."""
    decl = _target_decl(node)
    if _named_warp(model, node, decl) or _feeds_warp_call(model, node, decl):
        return "safe"
    fn = function_at(node)
    warp_code = fn is not None and _function_warp_ops(model, fn)
    tile = not warp_count and _tile_index(an, model, node, decl)
    if tile:
        return "unsafe" if warp_code else "none"
    return "safe" if warp_code else "unsafe"


def _definition_fixes(model, in_macro, unsafe=()):
    """`% 32` / `/ 32` found in a macro body: one edit of the definition, offered on every flagged expansion
    when they are all of its expansions in the file (unsafe when one of them lacks warp evidence)."""
    groups = {}
    for d, node in in_macro:
        site = definition_token(model, node.macro, _body_match(node.op))
        if site is not None:
            groups.setdefault((site[0], site[2][site[1]].start), (site, []))[1].append(d)
    for (name, _), ((_, i, body), diags) in groups.items():
        if expansions(model, name) != len(diags):
            continue
        rhs = body[i + 1]
        line = model.source.position(rhs.start)[0]
        f = fix(f"Use `{body[i].spelling} warpSize` in the definition of `{name}` (line {line})",
                replace((rhs.start, rhs.end), "warpSize"), unsafe=any(any(d is u for u in unsafe) for d in diags))
        for d in diags:
            d.fix = f


def check(ctx):
    an = ctx.analysis
    bit_bases = _bit_bases(ctx.model)
    # `i % 32` kept in a local that is only a shift count of words read at `i / 32`: bitmap arithmetic (both)
    bitmap = set()
    for node in ctx.model.of_kind("BINARY_OPERATOR"):
        if node.op in ("%", "&") and len(node.children) == 2 and int_value(node.children[1]) in (31, 32) and \
                (node.op == "%") == (int_value(node.children[1]) == 32) and in_device_code(node):
            qs = _bitmap_quotients(an, ctx.model, node)
            if qs:
                bitmap.update(id(x) for x in [node] + qs)
    in_macro, unsafe = [], []
    for node in ctx.model.of_kind("BINARY_OPERATOR"):
        if len(node.children) != 2:
            continue
        op = node.op
        pat = _PATTERNS.get(op)
        if pat is None:
            continue
        lhs, rhs = node.children
        swapped = op == "&" and int_value(lhs) == pat[0] and int_value(rhs) is None
        if swapped:
            lhs, rhs = rhs, lhs         # `(WARP_SIZE - 1) & tid` (HeCBench sptrsv): no fix, the edit is for `t & 31`
        if int_value(rhs) != pat[0] or int_value(lhs) is not None:
            continue
        if not in_device_code(node):
            continue
        b = lhs.builtin()
        warp_count = b is not None and b[0] == "blockDim" and op in ("/", ">>")
        if not warp_count and not an.thread_dependent(lhs):
            continue
        if op in ("%", "&") and is_shift_count(node):
            continue
        if op in (">>", "/") and lhs.strip.text in bit_bases:
            continue
        if id(node) in bitmap:
            continue      # a bit position / word index pair of a bitmap of 32-bit words
        ev = _evidence(an, ctx.model, node, warp_count)
        if ev == "none":
            continue      # tile coordinates (`tile[t / 32][t % 32]`) in code without warp operations
        if ev == "unsafe" and op == "&" and _bit_field(node):
            continue      # `(x & ~31) | (perm(x) & 0x1F)`: low bits of a permuted index, not a lane id
        if ev == "unsafe" and op == ">>" and _bit_extract(node):
            continue      # `(x >> 5) & 1`: bit 5 of x, not a warp id
        what = "warp count" if warp_count else ("lane id" if op in ("%", "&") else "warp id")
        edit = replace_binary(node, pat[1], "warpSize") if not swapped else None
        f = fix(f"Replace `{node.children[1].text}` with `warpSize`" if op in ("%", "/")
                else f"Use `{pat[1]} warpSize`", edit, unsafe=ev == "unsafe") if edit else None
        doubt = ("; nothing here shows it is a warp (no warp intrinsic, no lane / warp name): if 32 is a tile "
                 "width, keep it and suppress this" if ev == "unsafe" else "")
        d = ctx.report(CODE, node, f"`{node.text}` assumes a warp of 32 lanes when computing a {what}; "
                                   f"wave64 and other subgroup sizes get the wrong {what}{doubt}", fix=f)
        if ev == "unsafe" and d is not None:
            # no warp evidence: the translators keep such a literal as written (right if it is a tile width)
            d.extra = dict(d.extra or {}, warp_evidence=False)
        if f is None and op in ("%", "/") and node.macro is not None:
            in_macro.append((d, node))
            if ev == "unsafe":
                unsafe.append(d)
    _definition_fixes(ctx.model, in_macro, unsafe)
