"""A lane mask built or consumed as 32 bits: `0xffffffff` sync masks, `__popc` on ballots, `1u << lane`.

## What it does
Flags three 32-bit spellings of a lane mask (constants folded through `#define`, `constexpr` and `const`):
- a full mask of 32 ones (`0xffffffff`, `0xFFFFFFFFu`, `~0u`, `-1`, a `FULL_MASK` macro equal to one of them) passed
  as the mask of a `*_sync` intrinsic (`__shfl_*_sync`, `__ballot_sync`, `__any_sync`, `__syncwarp`...);
- `__popc`, `__ffs`, `__clz` or `__brev` applied to a lane mask: a ballot / activemask / match result, a
  `1u << lane` mask, bitwise combinations of those, or a variable or parameter holding one;
- lane masks made from a 32-bit one: `1u << lane`, `(1u << lane) - 1`, `~0u << lane`,
  `0xffffffffu >> (32 - lane)`, where `lane` is a lane index (`threadIdx.x % 32`, `% warpSize`, `& 31`, a
  variable or parameter named `lane`/`laneId`). A `1u << (i % 32)` bit of a bitmap word (stored into an array
  element or passed to `atomicOr`, or with a grid-wide `i`) is not a lane mask and is not flagged.

## Why is this bad?
HIP's `*_sync` intrinsics take a 64-bit mask and refuse a 32-bit one at compile time ("The mask must be a 64-bit
integer", ROCm/hip#3667); a value of 32 ones would name only half of a wave64 anyway. `__popc` and `__ffs`
read the low 32 bits of a 64-bit ballot: lanes 32..63 are not counted or never elected. `1u << lane` is
undefined for lanes 32..63 and cannot name them.

## Example
```cuda
#define FULL_MASK 0xffffffff
unsigned long long m = __ballot_sync(FULL_MASK, x > 0);
int rank = __popc(m & ((1u << lane) - 1));
```

## Use instead
```cuda
#define FULL_MASK 0xffffffffffffffffull
unsigned long long m = __ballot_sync(FULL_MASK, x > 0);
int rank = __popcll(m & ((1ull << lane) - 1));
```

## Fix safety
Safe: a full-mask literal written at the call becomes `~0ull` (`0xffffffffffffffffull` for a hex literal);
CUDA's 32-bit mask parameter converts it back to `0xffffffff` (nvcc 13 warns #69 "integer conversion resulted
in truncation": a warning, not a change of meaning; checked on an H100). A `FULL_MASK` macro has its
definition rewritten only when every use of it in the file is the mask of a `*_sync` intrinsic. A const
variable gets no fix. `__popc` -> `__popcll` and `__ffs` -> `__ffsll` are safe (same result for a 32-bit value);
`31 - __clz(m)` -> `63 - __clzll(m)` (also `32 -`) is safe, a bare `__clz` -> `__clzll` (32 more leading zeros)
and `__brev` -> `__brevll` (bits land 32 places higher) are unsafe. `1u << lane` -> `1ull << lane` is safe when
every use of the mask reads the same value in 64 bits, unsafe otherwise (`~(1u << lane)`, a signed `1 << lane`);
`~0u << lane` -> `~0ull << lane` is unsafe; `0xffffffffu >> (32 - lane)` has no fix: write `(1ull << lane) - 1`.

## References
- ROCm/hip#3667 (`0xffffffff` mask rejected by HIP's static_assert), pytorch/FBGEMM#5830 (ballot in `unsigned`
  then `__popc`: needed the CP201 and the CP202 fix), ORNL/HeCBench#177.
"""
import re

from porter.lint.context import fix, replace
from porter.lint.helpers import (BIT_INTRINSICS, in_device_code, int_value, is_bitmap_store, is_mask_value,
                                 is_unsigned_type, lane_mask_shift, spelled, sync_intrinsics, sync_mask, use_parent,
                                 widening_keeps_value)

CODE = "CP202"


def _full32(node, an):
    """(value, width in bytes, the node that carries the constant) when a mask argument is 32 ones."""
    v = int_value(node)
    carrier = node
    if v is None:
        s = node.strip
        if s.kind == "DECL_REF_EXPR" and s.ref is not None and s.ref.kind == "VAR_DECL":
            d = an.definition(s.ref)
            v = int_value(d) if d is not None else None
            carrier = s
    if v is None:
        return None
    size = carrier.type_size() or 4
    if v == 0xffffffff or (size <= 4 and v == -1):
        return v, size, carrier
    return None


def _literal(node) -> bool:
    """Written as a literal (`0xffffffff`, `~0u`, `-1`, `(unsigned)-1`), not through a name."""
    return all(n.kind in ("INTEGER_LITERAL", "UNARY_OPERATOR", "PAREN_EXPR", "CSTYLE_CAST_EXPR", "TYPE_REF",
                          "CXX_STATIC_CAST_EXPR", "CXX_FUNCTIONAL_CAST_EXPR") for n in node.walk())


def _wide_literal(text: str) -> str:
    """64-bit spelling of a 32-ones literal: hex stays hex (same case), anything else becomes `~0ull`."""
    t = text.strip()
    core = t.strip("()")
    if core.lower().startswith("0x"):
        digits = core[2:].rstrip("uUlL")
        upper = any(c.isupper() for c in digits)
        suffix = "ULL" if any(c.isupper() for c in core[2 + len(digits):]) else "ull"
        return ("0X" if core[1] == "X" else "0x") + ("F" if upper else "f") * 16 + suffix
    return "~0ull"


def _macro_fix(model, name, mask_starts):
    """Rewrite `#define NAME 0xffffffff` when every use of NAME in the file is a sync mask."""
    span = model.macro_defs.get(name)
    if span is None:
        return None
    data = model.source.data
    for m in re.finditer(rb"\b" + re.escape(name.encode()) + rb"\b", data):
        at = m.start()
        if span[0] <= at < span[1] or at in mask_starts:
            continue
        # a mention in a comment or a string is not a use
        line_start = data.rfind(b"\n", 0, at) + 1
        line_end = data.find(b"\n", at)
        toks = model.tokens_in(line_start, line_end if line_end >= 0 else len(data))
        if any(t.start == at and t.kind == "IDENTIFIER" for t in toks):
            return None
    body = [t for t in model.tokens_in(span[0], span[1]) if t.kind != "COMMENT"][1:]
    if not body:
        return None
    text = model.source.slice(body[0].start, body[-1].end)
    paren = text.startswith("(") and text.endswith(")")
    new = _wide_literal(text)
    if paren:
        new = f"({new})"
    return fix(f"Define `{name}` as `{new}`", replace((body[0].start, body[-1].end), new))


def _sync_masks(ctx, an):
    # callee, not spelling: a call with a dependent operand in a template (`__shfl_xor_sync(FULL, val, o)` with
    # `T val`) is unresolved, and its mask is no less a 32-bit constant (HeCBench rmsnorm WarpReduce)
    calls = [c for c in ctx.model.of_kind("CALL_EXPR") if c.callee in sync_intrinsics() and in_device_code(c)]
    found = []
    for call in calls:
        m = sync_mask(call)
        if m is None:
            continue
        r = _full32(m, an)
        if r is not None:
            found.append((call, m, r))
    mask_starts = {m.start for _, m, _ in found if m.macro is not None and m.text == m.macro}
    macro_fixes = {}
    for call, m, (v, size, carrier) in found:
        what = f"`{m.text}`"
        if carrier is not m:
            what += f" (= `{carrier.ref.spelling}` = {v & 0xffffffff:#x})"
        elif m.macro is not None or not _literal(m):
            what += f" (= {v & 0xffffffff:#x})"
        if size > 4:
            why = "names only lanes 0..31: on wave64 lanes 32..63 are left out of the mask"
        else:
            why = "is a 32-bit mask: HIP's `*_sync` intrinsics require a 64-bit mask (a static_assert fails) " \
                  "and 32 bits cannot name lanes 32..63 of a wave64"
        f = None
        if carrier is m:
            if m.macro is None and spelled(m) and _literal(m):
                new = _wide_literal(m.text)
                f = fix(f"Replace `{m.text}` with `{new}`", replace(m, new))
            elif m.macro is not None and m.text == m.macro:
                if m.macro not in macro_fixes:
                    macro_fixes[m.macro] = _macro_fix(ctx.model, m.macro, mask_starts)
                f = macro_fixes[m.macro]
        ctx.report(CODE, m, f"mask {what} of `{call.callee}` {why}", fix=f)


def _bit_intrinsics(ctx, an):
    for call in ctx.model.of_kind("CALL_EXPR"):
        name = call.spelling
        if name not in BIT_INTRINSICS or not in_device_code(call):
            continue
        args = call.args()
        if len(args) != 1 or not is_mask_value(an, args[0]):
            continue
        new = BIT_INTRINSICS[name]
        callee = call.children[0] if call.children and call.children[0].spelling == name else None
        f = None
        extra = ""
        if callee is not None and spelled(callee) and callee.text == name and spelled(call):
            edits = [replace(callee, new)]
            unsafe = name in ("__clz", "__brev")
            if name == "__clz":
                child, p = use_parent(call)
                if p is not None and p.kind == "BINARY_OPERATOR" and p.op == "-" and p.children[1] is child and \
                        int_value(p.children[0]) in (31, 32) and p.children[0].kind == "INTEGER_LITERAL" and \
                        spelled(p.children[0]) and p.children[0].macro is None:
                    c = int_value(p.children[0])
                    edits.append(replace(p.children[0], str(c + 32)))
                    unsafe = False
                else:
                    extra = "; `__clzll` counts 32 more leading zeros for the same 32-bit value, adjust the " \
                            "arithmetic around it"
            elif name == "__brev":
                extra = "; `__brevll` puts bit 0 at bit 63, not 31"
            f = fix(f"Use `{new}`" + extra, *edits, unsafe=unsafe)
        ctx.report(CODE, call, f"`{call.text}` reads only the low 32 bits of a lane mask: HIP masks are 64-bit, "
                               f"so lanes 32..63 of a wave64 are ignored; use `{new}`", fix=f)


def _shifts(ctx, an):
    for node in ctx.model.of_kind("BINARY_OPERATOR"):
        if node.op not in ("<<", ">>"):
            continue
        kind = lane_mask_shift(an, node)
        if kind is None or not in_device_code(node) or is_bitmap_store(node):
            continue
        lhs = node.children[0]
        lit = lhs.strip
        editable = lit.kind in ("INTEGER_LITERAL", "UNARY_OPERATOR") and lit.macro is None and spelled(node)
        f = None
        shown = node.text
        child, p = use_parent(node)
        if kind == "bit" and p is not None and p.kind == "BINARY_OPERATOR" and p.op == "-" and \
                int_value(p.children[1]) == 1:
            shown = p.text
        if kind == "bit":
            if editable and lit.kind == "INTEGER_LITERAL":
                t = lit.text
                new = "1ULL" if any(c in "UL" for c in t) else "1ull"
                safe = is_unsigned_type(lit) and widening_keeps_value(node)
                f = fix(f"Use `{new} << ...`" + ("" if safe else " (the mask's uses read its upper bits)"),
                        replace(lit, new), unsafe=not safe)
            msg = f"`{shown}` builds a 32-bit lane mask: for lanes 32..63 of a wave64 the shift is undefined and " \
                  f"the mask cannot name them; use `1ull << {node.children[1].text}`"
        elif kind == "above":
            if editable:
                new = _wide_literal(lit.text)
                f = fix(f"Use `{new} << ...` (sets bits 32..63 as well)", replace(lhs.strip, new), unsafe=True)
            msg = f"`{shown}` builds a 32-bit mask of the lanes from `{node.children[1].text}` up: lanes 32..63 " \
                  f"of a wave64 are never included; use `~0ull << {node.children[1].text}`"
        else:
            msg = f"`{shown}` builds a 32-bit mask of the lanes below `{node.children[1].strip.children[1].text}`" \
                  f": it assumes 32 lanes and cannot name lanes 32..63 of a wave64; use " \
                  f"`(1ull << {node.children[1].strip.children[1].text}) - 1`"
        ctx.report(CODE, node, msg, fix=f)


def check(ctx):
    an = ctx.analysis
    _sync_masks(ctx, an)
    _bit_intrinsics(ctx, an)
    _shifts(ctx, an)
