"""Thread index combined with a hard-coded warp size of 32 (`% 32`, `& 31`, `>> 5`, `/ 32`).

## What it does
Flags lane and warp arithmetic that folds to the constant 32 (or 31 / 5) applied to a thread-dependent value:
`threadIdx.x % 32`, `tid & 31`, `tid & 0x1f`, `tid >> 5`, `tid / 32`, and `blockDim.x / 32` as a warp count.
Constants are folded through `#define`, `constexpr`, `const` and enums. A `% 32` whose result is a shift count
(a bit position in a 32-bit word) is not flagged.

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

## Fix safety
Safe: `% 32` and `/ 32` become `% warpSize` and `/ warpSize`; `& 31` and `>> 5` become `% warpSize` and
`/ warpSize`, which is the same for the non-negative thread indices they apply to. When the expression comes
from a macro body (`#define LANE (threadIdx.x % WARP)`), the fix edits the definition once, and only when every
expansion of that macro in the file is flagged and its body holds one `% 32` / `/ 32`; the use sites are never
rewritten. Otherwise (`& 31`, `>> 5`, a macro argument) no fix.

## References
- ggml-org/llama.cpp#3630, cupy/cupy#9977, pytorch/pytorch#186229, ROCm/bitsandbytes#93, ORNL/HeCBench#171.
"""
from porter.lint.context import fix, replace
from porter.lint.fixer import definition_token, expansions
from porter.lint.helpers import in_device_code, int_value, is_shift_count, replace_binary

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


def _definition_fixes(model, in_macro):
    """`% 32` / `/ 32` found in a macro body: one edit of the definition, offered on every flagged expansion
    when they are all of its expansions in the file."""
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
                replace((rhs.start, rhs.end), "warpSize"))
        for d in diags:
            d.fix = f


def check(ctx):
    an = ctx.analysis
    bit_bases = _bit_bases(ctx.model)
    in_macro = []
    for node in ctx.model.of_kind("BINARY_OPERATOR"):
        if len(node.children) != 2:
            continue
        op = node.op
        pat = _PATTERNS.get(op)
        if pat is None:
            continue
        lhs, rhs = node.children
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
        what = "warp count" if warp_count else ("lane id" if op in ("%", "&") else "warp id")
        edit = replace_binary(node, pat[1], "warpSize")
        f = fix(f"Replace `{node.children[1].text}` with `warpSize`" if op in ("%", "/")
                else f"Use `{pat[1]} warpSize`", edit) if edit else None
        d = ctx.report(CODE, node, f"`{node.text}` assumes a warp of 32 lanes when computing a {what}; "
                                   f"wave64 and other subgroup sizes get the wrong {what}", fix=f)
        if f is None and op in ("%", "/") and node.macro is not None:
            in_macro.append((d, node))
    _definition_fixes(ctx.model, in_macro)
