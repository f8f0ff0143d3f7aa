"""`warpSize` used where a compile-time constant is required (array bound, template argument, `static_assert`).

## What it does
Flags `warpSize` in array bounds (`__shared__ float s[warpSize]`, `[1024 / warpSize]`), template arguments
(`reduce<warpSize>()`, `Tile<warpSize>`), `static_assert`, `constexpr` initializers, `if constexpr`, `case`
labels, enumerators, attribute arguments, and preprocessor conditions (`#if warpSize == 64`). Uses that clang
could not even represent in its syntax tree are found from the tokens and clang's own "not a constant
expression" errors on the same line.

## Why is this bad?
`warpSize` is a run-time value: CUDA never made it a constant expression and HIP >= 7 no longer does either
(older HIP headers did, which is where this code comes from). Such code stops compiling on a current ROCm, and
the usual workaround of hard-coding 32 or 64 is wrong on the other vendor. In `#if` the preprocessor does not know
`warpSize` at all and silently evaluates it as 0, so `#if warpSize == 64` is always false.

## Example
```cuda
__shared__ float partial[1024 / warpSize];
static_assert(warpSize == 32, "one warp per row");
```

## Use instead
```cuda
template <int WarpSize>
__global__ void k(...) { __shared__ float partial[1024 / WarpSize]; }
// host: pick the instantiation from cudaDeviceProp::warpSize / hipDeviceProp_t::warpSize
```
Or size per-warp storage for the smallest warp the code supports and use `warpSize` at run time.

## Fix safety
No fix: the constant has to come from a template parameter chosen on the host, which changes the kernel's
interface.

## References
- Platform fact (cuport rule catalog): `warpSize` is not a compile-time constant in HIP >= 7 and
  `__AMDGCN_WAVEFRONT_SIZE` is deprecated.
- Warp-size reports of the CP10x family: ggml-org/llama.cpp#3630, kokkos/kokkos#3216, apache/tvm#5727,
  ORNL/HeCBench#180.
"""
import re

from porter.analysis.syntax import array_dim_exprs

CODE = "CP106"
_CLIMB = {"PAREN_EXPR", "CSTYLE_CAST_EXPR", "CXX_STATIC_CAST_EXPR", "CXX_FUNCTIONAL_CAST_EXPR", "UNEXPOSED_EXPR",
          "BINARY_OPERATOR", "UNARY_OPERATOR", "CONDITIONAL_OPERATOR", "CXX_UNARY_EXPR", "CALL_EXPR"}
# clang errors that say a constant was required (others on the same line are unrelated to warpSize)
_CONST_ERROR = re.compile(r"constant|variable length array|array size|static assert|template argument", re.I)
_WORD = re.compile(rb"\bwarpSize\b")
_COMMENT_OR_STRING = re.compile(rb'//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'', re.S)
_WHY = "it is not a compile-time constant in HIP >= 7 (nor in CUDA); template the code on the warp size and " \
       "choose the instantiation on the host"


def _decl_has(decl, word, before):
    return any(t.spelling == word for t in decl.model.tokens_between(decl.start, before))


def _context(node):
    """What constant context `node` (a warpSize reference) sits in, or None for an ordinary run-time use."""
    top, p = node, node.parent
    while p is not None and p.kind in _CLIMB:
        if p.kind == "CALL_EXPR" and not p.callee.startswith("__builtin"):
            return None  # an argument of a function call is a run-time use
        top, p = p, p.parent
    if p is None:
        return None
    k = p.kind
    if k in ("VAR_DECL", "FIELD_DECL") and any(d is top for d in array_dim_exprs(p)):
        return f"as the array bound of `{p.spelling}`"
    if k in ("TYPE_ALIAS_DECL", "TYPEDEF_DECL"):
        return f"as an array bound in the type `{p.spelling}`"
    if k == "STATIC_ASSERT":
        return "in a `static_assert`"
    if k == "VAR_DECL" and _decl_has(p, "constexpr", top.start):
        return f"in the `constexpr` initializer of `{p.spelling}`"
    if k == "DECL_REF_EXPR" and p.children and p.children[0].kind in ("OVERLOADED_DECL_REF", "TEMPLATE_REF"):
        return f"as a template argument of `{p.children[0].spelling}`"
    if k in ("TEMPLATE_NON_TYPE_PARAMETER",):
        return f"as the default template argument of `{p.spelling}`"
    if k == "ENUM_CONSTANT_DECL":
        return f"in the enumerator `{p.spelling}`"
    if k == "CASE_STMT":
        return "as a `case` label"
    if k == "IF_STMT" and p.children and p.children[0] is top and _decl_has(p, "constexpr", top.start):
        return "in an `if constexpr` condition"
    return None


def _line_span(src, offset):
    text = src.data
    s = text.rfind(b"\n", 0, offset) + 1
    e = text.find(b"\n", offset)
    return s, (len(text) if e < 0 else e)


def _directive(src, offset):
    """The preprocessor directive keyword of the line holding `offset` (following `\\` continuations)."""
    data = src.data
    s, _ = _line_span(src, offset)
    while s >= 2 and data[s - 2:s] in (b"\\\n",):
        s = data.rfind(b"\n", 0, s - 2) + 1
    line = data[s:].split(b"\n", 1)[0].decode("utf-8", "replace").lstrip()
    if not line.startswith("#"):
        return None
    words = line[1:].split()
    return words[0] if words else None


def _token_context(toks, i):
    depth = 0
    for j in range(i - 1, max(-1, i - 40), -1):
        s = toks[j].spelling
        if s in (")", "]", ">"):
            depth += 1
        elif s in ("(", "[", "<"):
            if depth:
                depth -= 1
                continue
            prev = toks[j - 1].spelling if j > 0 else ""
            if s == "[":
                return "as an array bound"
            if s == "<":
                return f"as a template argument of `{prev}`"
            if prev in ("__launch_bounds__", "alignas", "__align__", "static_assert", "_Static_assert"):
                return f"in the argument of `{prev}`"
        elif s == "case" and depth == 0:
            return "as a `case` label"
        elif s == "{" and any(toks[k].spelling == "enum" for k in range(max(0, j - 3), j)):
            return "in an enumerator"
        elif s in (";", "{", "}"):
            break
    return "in a constant expression"


def check(ctx):
    model = ctx.model
    src = model.source
    seen = set()
    for n in model.of_kind("DECL_REF_EXPR"):
        if n.spelling != "warpSize" or not n.is_warp_size():
            continue
        seen.add(n.start)
        what = _context(n)
        if what is None:
            continue
        via = f" (through macro `{n.macro}`)" if n.macro and n.macro != "warpSize" else ""
        ctx.report(CODE, n, f"`warpSize` used {what}{via}: {_WHY}")
    # what clang could not keep in the tree: #if lines, and constant contexts it rejected
    data = src.data
    if b"warpSize" not in data:
        return
    skip = None
    for m in _WORD.finditer(data):
        off = m.start()
        if off in seen:
            continue
        if skip is None:
            skip = [(c.start(), c.end()) for c in _COMMENT_OR_STRING.finditer(data)]
        if any(a <= off < b for a, b in skip):
            continue
        d = _directive(src, off)
        if d in ("if", "elif"):
            ctx.report(CODE, (off, m.end()), f"`#{d}` tests `warpSize`, which is not a macro: the preprocessor "
                                             f"evaluates it as 0 on every target; use a template parameter or a "
                                             f"run-time check")
            continue
        if d is not None:
            continue
        ls, le = _line_span(src, off)
        errs = [e for e in model.errors if e.offset is not None and ls <= e.offset <= le and e.severity >= 3
                and _CONST_ERROR.search(e.message)]
        if not errs:
            continue
        toks = model.tokens_in(max(0, off - 600), m.end())
        i = next((j for j, t in enumerate(toks) if t.start == off), None)
        what = _token_context(toks, i) if i is not None else "in a constant expression"
        ctx.report(CODE, (off, m.end()), f"`warpSize` used {what} (clang: {errs[0].message}): {_WHY}")
