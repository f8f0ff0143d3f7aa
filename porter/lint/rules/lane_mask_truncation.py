"""A ballot, active-mask or match result stored in, returned as, passed as or cast to a 32-bit type.

## What it does
Follows the result of `__ballot_sync`, `__ballot`, `__activemask`, `__match_any_sync`, `__match_all_sync` (and
`__lanemask_*`), through parentheses, bitwise operators and `auto` / 64-bit locals, to the place where it is
narrowed: a variable, array element or member narrower than 64 bits (`unsigned`, `int`, `uint32_t`), a
`return` from a function returning such a type, an argument of a function of this file whose parameter is
one, or a cast to one. Arguments of the warp and bit intrinsics themselves are left to CP202 / CP203.

## Why is this bad?
On AMD GPUs HIP's `__ballot`, `__activemask` and `__match_*` return a 64-bit `unsigned long long`: one bit per
lane of a 64-wide wavefront. Stored in 32 bits, the votes of lanes 32..63 are silently dropped: counts come out
halved, compaction ranks collide, and a loop waiting for "all lanes done" can spin forever.

## Example
```cuda
unsigned mask = __ballot_sync(0xffffffff, pred);
int n = __popc(mask);
```

## Use instead
```cuda
unsigned long long mask = __ballot_sync(~0ull, pred);
int n = __popcll(mask);
```

## Fix safety
Safe when the mask lives in a local variable of the same function: its declared type becomes
`unsigned long long`, but only when every write stores a 32-bit unsigned value and every use reads the same
value in 64 bits (masking, `>> k`, comparisons, tests, conversions, the bit intrinsics; not `~m`, `-m`,
`m << k`, `m + 1` or an `auto` copy). Otherwise the same change is shown as a display-only suggestion.
Parameters, return types, casts, array elements and members get no fix. The `__popc` / `__ffs` calls on the
widened mask are CP202's fixes: both are needed (pytorch/FBGEMM#5830).

## References
- pytorch/FBGEMM#5830 (ballot stored in `unsigned`, then `__popc`: both had to change), ORNL/HeCBench#177 (a
  truncated mask made a wave64 loop hang), ROCm/hip#3667.
"""
from porter.diagnostics import Applicability, Fix
from porter.lint.context import fix, replace
from porter.lint.helpers import (BIT_INTRINSICS, MASK_SOURCES, declared_auto, function_by_call, in_device_code,
                                 int_value, is_lane_id, is_mask_value, is_unsigned_type, sync_intrinsics, use_parent,
                                 variable_writes, widening_keeps_value)

CODE = "CP201"
_CASTS = ("CSTYLE_CAST_EXPR", "CXX_STATIC_CAST_EXPR", "CXX_FUNCTIONAL_CAST_EXPR")
_QUALIFIERS = {"const", "volatile", "register"}


def _narrow(node) -> bool:
    """An integer type narrower than 64 bits (bool is a test, not a truncation)."""
    size = node.type_size()
    if size is None or size >= 8:
        return False
    try:
        sp = node.canonical_type.spelling
    except Exception:
        return False
    return sp != "bool" and not any(w in sp for w in ("float", "double", "*", "&", "("))


def _wide_variable(an, decl) -> bool:
    """A variable that is 64 bits wide, or `auto` (64 bits when it holds a HIP mask)."""
    cache = an.__dict__.setdefault("_cp201_wide", {})
    if id(decl) not in cache:
        cache[id(decl)] = (decl.type_size() or 0) >= 8 or declared_auto(decl)
    return cache[id(decl)]


def _wide_mask(an, node) -> bool:
    """An expression that is a 64-bit lane mask under HIP: a mask intrinsic call, or a variable that holds
    one and is itself 64 bits wide (or `auto`)."""
    n = node.strip
    if n.kind == "CALL_EXPR":
        return n.spelling in MASK_SOURCES
    if n.kind == "DECL_REF_EXPR" and n.ref is not None and n.ref.kind == "VAR_DECL":
        return _wide_variable(an, n.ref) and is_mask_value(an, n)
    if n.kind == "BINARY_OPERATOR" and n.op == "<<" and len(n.children) == 2:
        # `1ull << lane`: a 64-bit lane mask built the portable way
        v = int_value(n.children[0])
        return v is not None and (v == 1 or v == -1 or v == 0xffffffffffffffff) and \
            (n.children[0].type_size() or 0) >= 8 and is_lane_id(an, n.children[1])
    return False


def _sink(an, node):
    """Walk up from a 64-bit mask through mask-preserving operators to where it is narrowed:
    (kind, node narrowed at, target node) or None."""
    cur = node
    for _ in range(16):
        child, p = use_parent(cur)
        if p is None:
            return None
        k = p.kind
        if k == "BINARY_OPERATOR" and len(p.children) == 2:
            op = p.op
            if op in ("&", "|", "^") or (op in ("<<", ">>") and p.children[0] is child) or \
                    (op == "-" and int_value(p.children[1]) == 1):
                cur = p
                continue
            if op == "=" and p.children[1] is child:
                return ("stored in", p, p.children[0]) if _narrow(p.children[0]) else None
            return None
        if k == "COMPOUND_ASSIGNMENT_OPERATOR" and len(p.children) == 2 and p.children[1] is child:
            # `x &= mask` cannot hold more bits than `x` already had: the truncation is where `x` is declared
            if p.op in ("|=", "^=") and _narrow(p.children[0]):
                return "stored in", p, p.children[0]
            return None
        if k == "UNARY_OPERATOR" and p.op == "~":
            cur = p
            continue
        if k == "CONDITIONAL_OPERATOR" and len(p.children) == 3 and p.children[0] is not child:
            cur = p
            continue
        if k == "VAR_DECL":
            if declared_auto(p) or not _narrow(p):
                return None
            return "stored in", p, p
        if k in _CASTS:
            return ("cast to", p, p) if _narrow(p) else None
        if k == "RETURN_STMT":
            fn = p.enclosing("FUNCTION_DECL", "FUNCTION_TEMPLATE", "CXX_METHOD")
            size = fn.result_type_size() if fn is not None else None
            if size is None or size >= 8 or fn.type.startswith("bool"):
                return None
            return "returned as", p, fn
        if k == "CALL_EXPR":
            name = p.spelling
            if name in sync_intrinsics() or name in BIT_INTRINSICS or name in BIT_INTRINSICS.values() or \
                    name in MASK_SOURCES:
                return None
            args = p.args()
            i = next((j for j, a in enumerate(args) if a is child), None)
            f = function_by_call(p.model, p)
            if i is None or f is None or i >= len(f.params):
                return None
            prm = f.params[i].node
            return ("passed as", child, prm) if _narrow(prm) and not f.params[i].is_pointer else None
        return None
    return None


def _type_tokens(decl):
    """Tokens of the type specifier of a one-variable declaration, without qualifiers; None if unclear."""
    toks = decl.model.tokens_in(decl.start, decl.end)
    names = [i for i, t in enumerate(toks) if t.spelling == decl.spelling and t.kind == "IDENTIFIER"]
    if not names:
        return None
    head = toks[:names[0]]
    if any(t.spelling in ("static", "extern", "__shared__", "__device__", "__constant__", "*", "&", "[", "<",
                          "::", "auto") for t in head):
        return None
    body = [t for t in head if t.spelling not in _QUALIFIERS]
    return body or None


def _local_fix(an, decl):
    """(Fix, safe) that widens a local mask variable, or None when its declaration cannot be edited."""
    fn = decl.enclosing("FUNCTION_DECL", "FUNCTION_TEMPLATE", "CXX_METHOD")
    stmt = decl.parent
    if fn is None or stmt is None or stmt.kind != "DECL_STMT" or \
            sum(1 for c in stmt.children if c.kind == "VAR_DECL") != 1:
        return None
    if decl.model.macro_at(decl.start, decl.end) is not None:
        return None
    toks = _type_tokens(decl)
    if toks is None:
        return None
    span = (toks[0].start, toks[-1].end)
    old = decl.model.source.slice(*span)
    signed = not is_unsigned_type(decl)
    safe = True
    for op, value in variable_writes(decl):
        if value is None:
            safe = False           # ++, --, address taken
        elif op.kind == "COMPOUND_ASSIGNMENT_OPERATOR" and op.op == "&=":
            continue
        elif op.kind == "COMPOUND_ASSIGNMENT_OPERATOR" and op.op == ">>=":
            safe = safe and not signed
        elif op.op in ("=", "|=", "^="):
            v = value.strip
            ok = (v.kind == "CALL_EXPR" and v.spelling in MASK_SOURCES) or \
                (int_value(value) is not None and int_value(value) >= 0) or \
                (is_unsigned_type(value) and (value.type_size() or 8) <= 4)
            safe = safe and ok
        else:
            safe = False
    if safe:
        for n in fn.model.kind_in(fn, "DECL_REF_EXPR"):
            if n.ref is decl and not widening_keeps_value(n, signed):
                safe = False
                break
    msg = f"Declare `{decl.spelling}` as `unsigned long long` (was `{old}`)"
    edit = replace(span, "unsigned long long")
    if safe:
        return fix(msg, edit), True
    return Fix(Applicability.DISPLAY_ONLY, msg + "; check its other uses first", (edit,)), False


def _target_fix(an, target):
    t = target.strip
    if t.kind == "VAR_DECL":
        decl = t
    elif t.kind == "DECL_REF_EXPR" and t.ref is not None and t.ref.kind == "VAR_DECL":
        decl = t.ref
    else:
        return None
    if decl.enclosing("FUNCTION_DECL", "FUNCTION_TEMPLATE", "CXX_METHOD") is None:
        return None
    r = _local_fix(an, decl)
    return r[0] if r else None


def _type_of(target) -> str:
    try:
        sp = target.canonical_type.spelling
    except Exception:
        sp = target.type
    shown = target.type
    return f"`{shown}`" if shown == sp else f"`{shown}` (`{sp}`)"


def check(ctx):
    # a 64-bit mask starts at a mask intrinsic or a `1ull << lane` shift (is_mask_value has no other base
    # case): without either in the file there is nothing to narrow
    model = ctx.model
    if not any(n.spelling in MASK_SOURCES for n in model.of_kind("CALL_EXPR")) and \
            not any(n.op in ("<<", ">>") for n in model.of_kind("BINARY_OPERATOR")):
        return
    an = ctx.analysis
    seen = set()
    cands = [n for n in ctx.model.of_kind("CALL_EXPR") if n.spelling in MASK_SOURCES]
    cands += [n for n in ctx.model.of_kind("DECL_REF_EXPR")
              if n.ref is not None and n.ref.kind == "VAR_DECL" and _wide_mask(an, n)]
    cands += [n for n in ctx.model.of_kind("BINARY_OPERATOR") if n.op == "<<" and _wide_mask(an, n)]
    for src in cands:
        if not in_device_code(src):
            continue
        s = _sink(an, src)
        if s is None:
            continue
        how, at, target = s
        if id(at) in seen:
            continue
        seen.add(id(at))
        what = f"`{src.text}`" if src.kind == "CALL_EXPR" else f"lane mask `{src.text}`"
        origin = "HIP returns a 64-bit lane mask" if src.kind == "CALL_EXPR" else "the mask is 64-bit"
        f = None
        if how == "stored in":
            name = target.spelling if target.kind == "VAR_DECL" else target.strip.text
            where = f"`{name}` of type {_type_of(target)}"
            f = _target_fix(an, target)
        elif how == "returned as":
            where = f"the {target.result_type_size() * 8}-bit return value of `{target.spelling}`"
        elif how == "passed as":
            where = f"parameter `{target.spelling}` of type {_type_of(target)}"
        else:
            where = _type_of(at)
        ctx.report(CODE, at, f"{what} is {how} {where}: {origin}, so the bits of lanes "
                             f"32..63 of a wave64 are lost", fix=f)
