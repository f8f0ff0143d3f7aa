"""Buffer lengths (derive_sizes.py): the byte count of `cudaMalloc(&p, bytes)` (or of a host helper that
allocates the pointer) as elements of the kernel's type, a buffer passed from an offset, and an input the host
zeroes with cudaMemset before the launch. `sym` is the expression writer (derive_expr._Sym)."""
from __future__ import annotations

import re

from porter.verify.derive_host import Underivable, _bare, _has_var_refs, _tidy
from porter.verify.derive_launch import _through_wrappers
from porter.verify.derive_types import _BYTES, _dtype, _subst, named_type


_ALLOC = ("cudaMalloc", "cudaMallocManaged", "hipMalloc", "hipMallocManaged")


def _sizeof(sym, node):
    """`sizeof(float)` (clang's value), or `sizeof(T)` with T a template parameter the instance binds."""
    if isinstance(node.value, int) and not isinstance(node.value, bool):
        return node.value
    m = re.fullmatch(r"\s*sizeof\s*\(?\s*([\w\s]+?)\s*\)?\s*", node.text or "")
    ref = [c for c in node.children if c.kind == "TYPE_REF"]
    inst = _template_sizeof(sym, node) if m is None else None
    if inst is not None:
        return inst
    if m is None and not (node.text or "").strip() and len(ref) == 1:
        name = ref[0].spelling     # f8cast's `CUDA_CHECK(cudaMalloc(&src, n * sizeof(Ts)))`: no text in a macro
    elif m is None:
        return None
    else:
        name = m.group(1)
    dtype = _dtype(_subst(name, {**sym.env, **sym.types}))
    if dtype is None:                   # ert's `sizeof(T)` of run<half2>: the struct's size
        t = named_type(sym.model, _subst(name, {**sym.env, **sym.types}))
        return t.get_size() if t is not None and t.get_size() > 0 else None
    return _BYTES.get(dtype)


def _template_sizeof(sym, node):
    """sizeof(`block_record<T>`), T bound by the instance or the host template (quicksort's allocation
    `sizeof(block_record<T>) * blocks.size()`, in a macro's arguments where the node has no text): the size of
    the class template's fields with the arguments put in (derive_tmpl), or None."""
    from porter.verify.derive_tmpl import template_record_size
    text = " ".join((node.text or "").split())
    m = re.fullmatch(r"sizeof\s*\(\s*(\w+\s*<[\w\s,<>]*>)\s*\)", text)
    if m is not None:
        spelled = m.group(1)
    else:
        tref = [c for c in node.children if c.kind == "TEMPLATE_REF"]
        args = [c.spelling for c in node.children if c.kind == "TYPE_REF"]
        if text or len(tref) != 1 or not args:
            return None
        spelled = f"{tref[0].spelling}<{', '.join(args)}>"
    spelled = _subst(spelled, {**sym.env, **sym.types})
    if "<" not in spelled or re.search(r"\btype-parameter", spelled):
        return None
    return template_record_size(sym.model, spelled)


def _allocation(model, decl, element: bool = False):
    """The byte-count expression of `cudaMalloc(&p, bytes)` for the host pointer `decl`, or None; `element`:
    of `cudaMalloc(&p[k], bytes)`, one buffer of a table of them (metropolis's mdlat[k]). Searched in the file
    `decl` is declared in (main.cu's buffer behind a wrapper of conv.cu)."""
    model = getattr(decl, "model", None) or model
    for call in model.of_kind("CALL_EXPR"):
        name = call.spelling
        if not name and call.children:     # `cudaMalloc(&d_x, ...)` with `T *d_x` in a template: dependent
            name = next((c.spelling for c in call.children[0].walk() if c.kind == "OVERLOADED_DECL_REF"), "")
        if name not in _ALLOC:
            continue
        args = call.args()
        if len(args) < 2:
            continue
        a = _bare(args[0])
        if a.kind == "UNARY_OPERATOR" and a.op == "&" and a.children:
            target = _bare(a.children[0])
            if element and target.kind == "ARRAY_SUBSCRIPT_EXPR" and target.children:
                target = _bare(target.children[0])
            elif element:
                continue
            if target.kind == "DECL_REF_EXPR" and target.ref is decl:
                return args[1]
    return None


def _helper_allocation(decl):
    """(bytes, {id(parameter): argument}) of a buffer a host function allocates for the pointer `decl`: one that
    returns it (allreduce's `float *buffer = alloc(n)` with `cudaMalloc(&memory, sizeof(float) * size); return
    memory;`) or receives its address (`make(&d, n)` with `cudaMalloc(p, n * sizeof(float))`); None otherwise.
    The byte count is in the helper's parameters, bound to the call's arguments."""
    from porter.analysis.affine import analysis
    if decl is None or decl.kind != "VAR_DECL":
        return None
    model = decl.model
    calls = []
    init = analysis(model).definition(decl)
    if init is not None and _bare(init).kind == "CALL_EXPR":
        calls.append((_bare(init), None))
    for c in model.of_kind("CALL_EXPR"):
        for i, a in enumerate(c.args()):
            a = _bare(a)
            if a.kind == "UNARY_OPERATOR" and a.op == "&" and a.children and \
                    _bare(a.children[0]).kind == "DECL_REF_EXPR" and _bare(a.children[0]).ref is decl:
                calls.append((c, i))
    for call, i in calls:
        fns = [f for f in model.functions if f.name == call.spelling and f.body is not None and not f.is_kernel
               and len(f.params) == len(call.args())]
        if len(fns) != 1:
            continue
        fn = fns[0]
        for m in fn.body.walk():
            if m.kind != "CALL_EXPR" or m.spelling not in _ALLOC or len(m.args()) < 2:
                continue
            t = _bare(m.args()[0])
            if i is None and t.kind == "UNARY_OPERATOR" and t.op == "&" and t.children:
                local = _bare(t.children[0])
                if local.kind != "DECL_REF_EXPR" or local.ref is None or local.ref.kind != "VAR_DECL" or not any(
                        r.kind == "RETURN_STMT" and r.children and _bare(r.children[-1]).kind == "DECL_REF_EXPR"
                        and _bare(r.children[-1]).ref is local.ref for r in fn.body.walk()):
                    continue            # not the pointer it returns
            elif i is None or t.kind != "DECL_REF_EXPR" or t.ref is not fn.params[i].node:
                continue                # not the address it was given
            return m.args()[1], {id(p.node): a for p, a in zip(fn.params, call.args())}
    return None


def _offset_buffer(sym, b):
    """(base, offset, written) of a buffer passed from an element on: `p + k`, `k + p`, `&p[k]` (metropolis's
    `dE + k`, concurrentKernels' `&d_a[i]`): `base` the host pointer variable `p` is (through host wrappers),
    `written` the pointer as written there, whose elements the offset counts; None otherwise."""
    if b is None:
        return None
    if b.kind == "BINARY_OPERATOR" and b.op == "+" and len(b.children) == 2:
        x, y = b.children
        if "*" in (_bare(y).type or "") and "*" not in (_bare(x).type or ""):
            x, y = y, x
        base, off = _bare(x), y
    elif b.kind == "UNARY_OPERATOR" and b.op == "&" and b.children and \
            _bare(b.children[0]).kind == "ARRAY_SUBSCRIPT_EXPR" and len(_bare(b.children[0]).children) == 2:
        base, off = _bare(_bare(b.children[0]).children[0]), _bare(b.children[0]).children[1]
    else:
        return None
    written, base = base, _through_wrappers(sym, base)
    if base is None or base.kind != "DECL_REF_EXPR" or base.ref is None or \
            base.ref.kind not in ("VAR_DECL", "PARM_DECL") or "*" not in (base.ref.type or "") or \
            "*" not in (written.type or ""):
        return None
    return base, off, written


def _past_offset(sym, elements: str, base, off, written, pointee: str, unit: tuple | None) -> str:
    """The elements of a buffer from `off` on: the allocation's `elements` less the offset, counted in the
    kernel's scalars (a struct element is `unit[1]` of them). The host pointer must point to the kernel's type:
    an offset counts the host's elements."""
    def plain(t):
        return re.sub(r"\b(const|volatile|struct|__restrict__|__restrict|restrict)\b|__cuport_shim::|\s", "", t)
    host = plain(_subst(re.sub(r"\*[^*]*$", "", written.type or ""), {**sym.env, **sym.types}))
    kern = plain(pointee or "")
    if host != kern and (_dtype(host) is None or _dtype(host) != _dtype(kern)):
        raise Underivable(f"`{written.spelling}` points to `{host}`, the kernel's parameter to `{kern}`: "
                          "the offset counts other elements")
    k = _tidy(sym.expr(off))
    if k == "0":
        return elements
    k = k if re.fullmatch(r"\w+", k) else f"({k})"
    return f"({elements}) - {k}" + (f" * {unit[1]}" if unit else "")


_MEMSET = ("cudaMemset", "cudaMemsetAsync", "hipMemset", "hipMemsetAsync")


def _zeroed(model, decl, site) -> str | None:
    """The text of a `cudaMemset(p, 0, bytes)` of the host pointer `decl` written before the launch (or in
    another function: main zeroing a buffer a wrapper then launches on), else None."""
    from porter.analysis.launch import fold_int
    model = getattr(decl, "model", None) or model
    for call in model.of_kind("CALL_EXPR"):
        if call.spelling not in _MEMSET or len(call.args()) < 3:
            continue
        a = _bare(call.args()[0])
        if a.kind != "DECL_REF_EXPR" or a.ref is not decl or fold_int(model, call.args()[1]) != 0:
            continue
        if site is not None and site.node.model is model and \
                model.function_of(call) is model.function_of(site.node) and call.start > site.node.start:
            continue                    # reset after the launch (for the next repetition): not the input
        return " ".join(call.text.split())
    return None


def _elements(sym, size_node, elem: int, unit: tuple | None = None) -> str:
    """Element count from a byte count: `n * sizeof(float)` -> n, anything else -> (bytes) // elem. `unit`:
    (bytes, scalars) of a struct element counted in scalars (`n * sizeof(Float3)` -> n * 3)."""
    from porter.analysis.launch import fold_int
    n = _bare(size_node)
    const = fold_int(n.model, n, sym.env) if not _has_var_refs(n) else None
    if const is None and n.kind == "CXX_UNARY_EXPR":
        const = _sizeof(sym, n)
    if isinstance(const, int):
        return str(max(1, const // elem))
    if n.kind == "DECL_REF_EXPR" and n.ref is not None and n.ref.kind == "VAR_DECL" and \
            id(n.ref) not in sym.names and id(n.ref) not in sym.consts:     # not _bind_cases's value
        d = sym.definition(n.ref, n)
        if d is not None and _has_var_refs(d):
            return _elements(sym, d, elem)         # `size_t bytes = n * sizeof(float)`
    if n.kind == "BINARY_OPERATOR" and n.op == "*" and len(n.children) == 2:
        factors = _factors(n)           # `sizeof(T) * 2 * n` is (sizeof(T) * 2) * n
        for i, f in enumerate(factors):
            if f.kind == "CXX_UNARY_EXPR" and _sizeof(sym, f) == (unit[0] if unit else elem):
                rest = [sym.expr(x) for x in factors[:i] + factors[i + 1:]] + ([str(unit[1])] if unit else [])
                return " * ".join(rest) if len(rest) > 1 else rest[0]
    if elem == 1:
        return sym.expr(size_node)
    return f"({sym.expr(size_node)} // {elem})"


def _factors(n) -> list:
    n = _bare(n)
    if n.kind == "BINARY_OPERATOR" and n.op == "*" and len(n.children) == 2:
        return _factors(n.children[0]) + _factors(n.children[1])
    return [n]
