"""Warp-uniform early returns in a kernel with emulated 32-lane warps (warp32.py).

HeCBench dpid gives each 32-thread warp one pixel and starts `if (PX >= w || PY >= h) return;` with
`PX = blockIdx.x * 4 + threadIdx.x / 32`: whole warps leave, the others go on to a warp reduction by shuffles.
The emulated shuffles wait at work-group barriers, which every thread of the block must reach, so the warps that
returned must still take part. Such a kernel is emitted predicated: a flag `live` is cleared where CUDA returns,
the statements after that run under `if (live)`, except those that shuffle (or call a function that does) or
hold `__syncthreads()`, which every thread runs. A warp that left computes on values it never initialised, but
its lanes only exchange among themselves (the helpers read the caller's own warp) and only its own private
variables change. So every live warp gets CUDA's values, and a warp that left writes nothing.

Taken only when all of these hold (else the kernel keeps refusing as before):
- the return is a top-level `if (C) return;` of the kernel body (or a bare top-level `return;`), and C is one
  value in each 32-lane warp: uniform in the block (warp32.uniform) except `threadIdx.x / 32k` (`>> 5+`), and
  threadIdx.y / .z where the block's x is a multiple of 32, with a block the launch gives;
- the statements every thread runs touch only private variables: no subscript, dereference, `->`, global or
  shared variable, and calls only of shuffles, barriers, pure math, constructors and device functions that
  obey the same; their control flow reads no variable written under `live` (nor one computed from such);
- the declarations run under `live` declare plain values (no pointer, reference or initialised array), split as
  `T x; if (live) { x = init; }`;
- any other return (and break / continue in the statements every thread runs) is at block-uniform control flow.
"""
from __future__ import annotations

import re

from porter.analysis.syntax import for_parts
from porter.translate.kernel.typeinfo import SIDE_EFFECT_FREE_CALLS

_CASTS = ("PAREN_EXPR", "UNEXPOSED_EXPR", "CSTYLE_CAST_EXPR", "CXX_STATIC_CAST_EXPR", "CXX_FUNCTIONAL_CAST_EXPR")
# pure arithmetic intrinsics (CUDA's rounding-mode and fast-math forms, conversions)
_PURE = re.compile(r"^make_\w+$|^__(f|d)(add|sub|mul|div|rcp|sqrt|fma)\w*_r[nzud]$|^__\w+2\w+(_r[nzud])?$|"
                   r"^__(fdividef|expf|exp10f|logf|log2f|log10f|powf|sinf|cosf|tanf|saturatef)$|"
                   r"^(fminf|fmaxf|fabsf|sqrtf|rsqrtf|floorf|ceilf|truncf|roundf|powf|expf|logf|copysignf)$")
_BARRIER = "__syncthreads"
# CUDA's vector types: `float4 v;` is a call of its (trivial) constructor
_VECTOR = re.compile(r"^(u?char|u?short|u?int|u?long|u?longlong|float|double)[1-4]$")


class Exits:
    def __init__(self, first, exits, everyone):
        self.first = first           # index of the first top-level exit among the kernel body's children
        self.exits = exits           # id -> condition node (None: a bare `return;`) of the top-level exits
        self.everyone = everyone     # ids of the later top-level statements every thread runs
        self.live = None             # the flag's name, chosen at emission


def _bare(n):
    while n is not None and n.kind in _CASTS and n.children:
        n = n.children[-1]
    return n


def _int(n):
    v = _bare(n).value if n is not None else None
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def _exit_cond(stmt):
    """(True, C) for `if (C) return;` / `if (C) { return; }` without else, (True, None) for a bare `return;`,
    else (False, None)."""
    if stmt.kind == "RETURN_STMT" and not stmt.children:
        return True, None
    if stmt.kind != "IF_STMT" or len(stmt.children) != 2:
        return False, None
    c, then = stmt.children
    if c.kind in ("DECL_STMT", "VAR_DECL"):
        return False, None
    if then.kind == "COMPOUND_STMT" and len(then.children) == 1:
        then = then.children[0]
    if then.kind == "RETURN_STMT" and not then.children:
        return True, c
    return False, None


def warp_uniform(em, n, block, uniform, depth=0) -> bool:
    """Whether expression n of the kernel has one value in each warp of 32 consecutive linear thread ids."""
    if depth > 8:
        return False
    if uniform(em, em.fn, n):
        return True
    x = _bare(n)
    if x is None:
        return False
    if x.kind == "DECL_REF_EXPR" and x.ref is not None and x.ref.kind == "VAR_DECL" and \
            em.model.function_of(x.ref) is em.fn:
        init = em.an.definition(x.ref)            # a local the kernel never reassigns: its initialiser
        return init is not None and warp_uniform(em, init, block, uniform, depth + 1)
    rows = block[1] * block[2] == 1 or block[0] % 32 == 0      # a warp lies within one row of the block
    b = x.builtin()
    if b is not None and b[0] == "threadIdx" and b[1] in ("y", "z"):
        return block[0] % 32 == 0
    k = x.kind
    if k == "BINARY_OPERATOR" and len(x.children) == 2 and x.op in ("/", ">>"):
        lb, c = _bare(x.children[0]).builtin(), _int(x.children[1])
        if x.op == "/" and x.children[1].is_warp_size():
            c = 32                                  # the emulated warps' warpSize (a portability fix's `/ warpSize`)
        if lb == ("threadIdx", "x") and c is not None and rows and \
                (x.op == "/" and c > 0 and c % 32 == 0 or x.op == ">>" and c >= 5):
            return True
    if k in ("BINARY_OPERATOR", "UNARY_OPERATOR", "CONDITIONAL_OPERATOR") and x.children:
        if k == "UNARY_OPERATOR" and x.op in ("++", "--", "post++", "post--", "&", "*"):
            return False
        if k == "BINARY_OPERATOR" and x.op in ("=", ","):
            return False
        return all(warp_uniform(em, c, block, uniform, depth + 1) for c in x.children)
    return False


def _private(em, node, fns, shuffles, uniform, fn=None, depth=0) -> bool:
    """Whether evaluating `node` touches only private variables (see the module doc); device functions called
    are checked the same way, their bodies once (ids in fns). A warp that left runs this on values it never set,
    so nothing may trap or run away on them either: no integer division by a variable (PoCL traps on zero), and
    in a device function (fn) no loop whose control reads its parameters or values computed from them."""
    if depth > 8:
        return False
    for x in node.walk():
        k = x.kind
        if k == "ARRAY_SUBSCRIPT_EXPR":
            return False
        if k in ("BINARY_OPERATOR", "COMPOUND_ASSIGNMENT_OPERATOR") and len(x.children) == 2 and \
                (x.op or "").rstrip("=") in ("/", "%") and _int(x.children[1]) is None:
            t = em.ty(x.children[0])
            if t is None or t.kind != "scalar" or not t.is_float:
                return False
        if fn is not None and k in ("FOR_STMT", "WHILE_STMT", "DO_STMT") and \
                not all(uniform(em, fn, p) for p in _control_parts(x) if p.kind != "DECL_STMT"):
            return False
        if k == "UNARY_OPERATOR" and x.op == "*":
            return False
        if k == "MEMBER_REF_EXPR" and "->" in (x.text or ""):
            return False
        if k in ("GOTO_STMT", "INDIRECT_GOTO_STMT", "ASM_STMT", "GCC_ASM_STMT"):
            return False
        if k == "DECL_REF_EXPR" and x.ref is not None and x.ref.kind == "VAR_DECL":
            r = x.ref
            if em.model.function_of(r) is None or any(
                    c.kind in ("CUDASHARED_ATTR", "CUDACONSTANT_ATTR", "CUDADEVICE_ATTR") for c in r.children):
                return False
        if k == "CALL_EXPR":
            callee = em._callee_fn(x)
            if callee is not None and callee.body is not None:
                if id(callee.node) not in fns:
                    fns.add(id(callee.node))
                    if not _private(em, callee.body, fns, shuffles, uniform, callee, depth + 1):
                        return False
                continue
            if callee is None and x.ref is not None and x.ref.kind == "CONSTRUCTOR":
                continue
            name = em.callee_name(x) or ""
            if name in shuffles or name == _BARRIER or name == "operator=" or SIDE_EFFECT_FREE_CALLS.match(name) or \
                    _PURE.match(name) or _VECTOR.match(name) or x.spelling in getattr(em.u, "struct_names", ()):
                continue                    # `operator=` without a body: a vector's or struct's own copy
            return False
    return True


def _sensitive_fns(em, shuffles):
    """ids of the reachable functions that shuffle or wait at a barrier, directly or through calls."""
    fns = em._reachable(em.fn)
    direct, calls = set(), {}
    for f in fns.values():
        if f.body is None:
            continue
        for x in em.model.kind_in(f.body, "CALL_EXPR"):
            callee = em._callee_fn(x)
            if callee is not None and callee.body is not None:
                calls.setdefault(id(f.node), set()).add(id(callee.node))
            elif em.callee_name(x) in shuffles or em.callee_name(x) == _BARRIER:
                direct.add(id(f.node))
    grew = True
    while grew:
        grew = False
        for f in fns.values():
            if id(f.node) not in direct and calls.get(id(f.node), set()) & direct:
                direct.add(id(f.node))
                grew = True
    return direct


def _runs_barrier(em, stmt, sensitive, shuffles) -> bool:
    for x in em.model.kind_in(stmt, "CALL_EXPR"):
        callee = em._callee_fn(x)
        if callee is not None and callee.body is not None:
            if id(callee.node) in sensitive:
                return True
        elif em.callee_name(x) in shuffles or em.callee_name(x) == _BARRIER:
            return True
    return False


def _base(n):
    """The variable an lvalue writes: through members and subscripts (`s.n`, `a[i]`, `a[i].n`)."""
    n = _bare(n)
    while n is not None and n.kind in ("MEMBER_REF_EXPR", "ARRAY_SUBSCRIPT_EXPR") and n.children:
        n = _bare(n.children[0])
    return n


def _base_decl(n):
    n = _base(n)
    return n.ref if n is not None and n.kind == "DECL_REF_EXPR" else None


def _written(em, stmt) -> set:
    """ids of the variables statement `stmt` declares or writes (also through a call's reference argument)."""
    out = set()
    for x in stmt.walk():
        k = x.kind
        if k == "VAR_DECL":
            out.add(id(x))
        elif k in ("BINARY_OPERATOR", "COMPOUND_ASSIGNMENT_OPERATOR") and len(x.children) == 2 and \
                (k != "BINARY_OPERATOR" or x.op == "="):
            d = _base_decl(x.children[0])
            if d is not None:
                out.add(id(d))
        elif k == "UNARY_OPERATOR" and x.children and x.op in ("++", "--", "post++", "post--", "&"):
            d = _base_decl(x.children[0])
            if d is not None:
                out.add(id(d))
        elif k == "CALL_EXPR":
            for a in em.call_args(x):
                d = _base_decl(a)
                if d is not None:
                    out.add(id(d))
    return out


def _reads(n, ids) -> bool:
    return any(x.kind == "DECL_REF_EXPR" and x.ref is not None and id(x.ref) in ids for x in n.walk())


def _control_parts(n):
    k = n.kind
    if k in ("IF_STMT", "SWITCH_STMT", "WHILE_STMT") and n.children:
        return [n.children[0]]
    if k == "DO_STMT" and n.children:
        return [n.children[-1]]
    if k == "FOR_STMT":
        init, cond, inc, _body = for_parts(n)
        return [p for p in (init, cond, inc) if p is not None]
    if k == "CONDITIONAL_OPERATOR" and len(n.children) == 3:
        return [n.children[0]]
    if k == "BINARY_OPERATOR" and n.op in ("&&", "||") and n.children:
        return [n.children[0]]
    return []


def plan(em, block, uniform, at_uniform, shuffles) -> Exits | None:
    """An Exits when the kernel's only thread-dependent exits are top-level warp-uniform returns that the
    predication above handles; None otherwise. `block`: the launch's block (three ints); uniform, at_uniform and
    shuffles: warp32's (which imports this module)."""
    body = em.fn.body
    if body is None or block is None:
        return None
    kids = list(body.children)
    exits, first = {}, None
    for i, c in enumerate(kids):
        ok, cond = _exit_cond(c)
        if not ok:
            continue
        # a block-uniform return clears the flag too: PoCL corrupted memory with a `return` before the barriers
        # of the predicated code (row_sums in tests/fixtures/breadth/warp32_exit at rows=10)
        if cond is not None and not warp_uniform(em, cond, block, uniform):
            return None
        if first is None:
            first = i
        exits[id(c)] = cond
    if first is None:
        return None
    sensitive = _sensitive_fns(em, shuffles)
    everyone, under_live = set(), set()
    later = kids[first + 1:]
    for c in later:
        if id(c) in exits:
            continue
        if _runs_barrier(em, c, sensitive, shuffles):
            everyone.add(id(c))
        else:
            under_live |= _written(em, c)
    # the kernel's parameters and locals written under `live`, and what every thread computes from them
    tainted = set(under_live)
    for c in later:
        if id(c) in everyone:
            for x in c.walk():
                if x.kind == "VAR_DECL":
                    init = em.init_of(x)
                    if init is not None and _reads(init, tainted):
                        tainted.add(id(x))
                elif x.kind in ("BINARY_OPERATOR", "COMPOUND_ASSIGNMENT_OPERATOR") and len(x.children) == 2 and \
                        (x.kind != "BINARY_OPERATOR" or x.op == "=") and _reads(x.children[1], tainted):
                    d = _base_decl(x.children[0])
                    if d is not None:
                        tainted.add(id(d))
    fns = set()
    for i, c in enumerate(kids):
        if i > first and id(c) in everyone:
            if not _private(em, c, fns, shuffles, uniform):
                return None
            for x in c.walk():
                if any(_reads(p, tainted) for p in _control_parts(x)):
                    return None
                if x.kind in ("RETURN_STMT", "BREAK_STMT", "CONTINUE_STMT") and not at_uniform(em, em.fn, x):
                    return None
        elif i > first and id(c) not in exits and c.kind == "DECL_STMT":
            for d in c.children:
                if d.kind != "VAR_DECL":
                    continue
                t = em.decl_type(d)
                if t.kind == "pointer" or t.ref or (t.kind == "array" and em.init_of(d) is not None):
                    return None
    # any other return: before the first exit at block-uniform control flow; after it, none
    for r in em.model.kind_in(body, "RETURN_STMT"):
        top = next((c for c in kids if c is r or any(a is c for a in r.ancestors())), None)
        if top is not None and id(top) in exits:
            continue
        idx = next(i for i, c in enumerate(kids) if c is top)
        if idx > first or not at_uniform(em, em.fn, r):
            return None
    return Exits(first, exits, everyone)


def emit_body(em, compound) -> bool:
    """Emit the kernel body with its warp-uniform exits predicated; False when this kernel has none."""
    w = em.warp32
    ex = getattr(w, "exits", None) if w is not None else None
    if ex is None or compound is not em.fn.body:
        return False
    prev_end = compound.start + 1
    for i, c in enumerate(compound.children):
        em._comments(prev_end, c.start)
        em.line_mark(c)
        if i < ex.first or id(c) in ex.everyone:
            em.stmt(c)
        elif id(c) in ex.exits:
            if ex.live is None:
                ex.live = em.fresh("cuport_w32_live")
                em.emit(f"bool {ex.live} = true;  // cleared where CUDA's warp returns: it still joins the shuffles")
            cond = ex.exits[id(c)]
            if cond is None:
                em.emit(f"{ex.live} = false;")
            else:
                e = em.cond(cond)
                em.emit(f"if ({ex.live} && ({e.text})) {{")
                em.emit(f"    {ex.live} = false;")
                em.emit("}")
        elif c.kind == "DECL_STMT":
            _predicated_decls(em, c, ex.live)
        else:
            em.emit(f"if ({ex.live}) {{")
            em.sub_block(c)
            em.emit("}")
        prev_end = max(prev_end, c.end)
    em._comments(prev_end, compound.end - 1)
    return True


def _predicated_decls(em, stmt, live):
    """`T x = init;` under the flag: `T x; if (live) { x = init; }` (x stays in the kernel's scope)."""
    for d in stmt.children:
        if d.kind != "VAR_DECL":
            continue                          # typedefs and the like: names clang resolved
        mark = len(em.lines)
        em.indent += 1
        lines = em.var_decl(d)
        em.indent -= 1
        pre = em.lines[mark:]
        del em.lines[mark:]
        if not pre and all("=" not in ln for ln in lines):
            for ln in lines:                  # `T x;` (or nothing: a shared array): no value to compute
                em.emit(ln)
            continue
        name = em.name_of(d)
        m = re.match(r"^(?:const\s+)?(.*?\b" + re.escape(name) + r")\s*=\s*(.*);$", lines[-1] if lines else "", re.S)
        if m is None or len(lines) != 1 or "[" in m.group(1):
            em.fail(d, f"the declaration of `{d.spelling}` after a warp-uniform return (predicated for the "
                       f"emulated 32-lane warps)")
        em.emit(f"{m.group(1)};")
        em.emit(f"if ({live}) {{")
        em.lines.extend(pre)
        em.emit(f"    {name} = {m.group(2)};")
        em.emit("}")
