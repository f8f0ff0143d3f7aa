"""A private array read or written as vectors of its own element type straight through a pointer cast:
`reinterpret_cast<int4 *>(thread_data)[k]` of `int thread_data[4]` (issue 14 item 2).

GLSL has no pointers into private memory, and OpenCL may not cast them: the array is aligned for its element
type only. The vector is its lanes, elements o .. o+N-1 (o = the cast pointer's element offset + N*k):
- OpenCL C: `vloadN(k, p)` / `vstoreN(v, k, p)`, which need only the element type's alignment, in any address
  space.
- GLSL: a helper reads the N elements into a vector; another takes the vector first (C++17 sequences the right
  of `=` before its left), then the array `inout`, stores the lanes and returns the vector (the assignment's
  value). Copy-in / copy-out of a private array is exact: no other invocation sees it, and GLSL has no pointer
  that could alias it.
Only a direct read `V v = cast[k]` / `*cast` / `cast->x` and a whole store `cast[k] = v` are translated; the cast
kept in a variable, a compound assignment, an increment or a store to one lane stay refused (CP907) where they
are. Halves in private arrays are left to the existing refusal: OpenCL keeps private halves in floats
(halfprec.py).

A private scalar or vector lane seen as another type of the same size, `*reinterpret_cast<__half2 *>(&f4.x)`
(vadd), is a bit cast of its value (Bits): both targets reinterpret the 32 bits through a uint (GLSL
floatBitsToUint / unpackFloat2x16 ..., OpenCL as_uint / vload_half2 ...), and a store `*cast = v` assigns the
variable v's bits. OpenCL holds a half2 as the float2 of its values; vload_half2 / vstore_half2 convert them
exactly (every half is a float), a NaN's payload aside (PoCL gives a quiet NaN), as for every half it reads
(halfprec.py)."""
from __future__ import annotations

import math
from dataclasses import dataclass

from porter.translate.kernel import ctype as ct
from porter.translate.kernel import refs
from porter.translate.kernel.ctype import F32, I32, U32, CType
from porter.translate.kernel.target import PREC_ASSIGN, PREC_PRIMARY, E
from porter.translate.kernel.typeinfo import CASTS, NON_EXPR, element, ptrlike

# a vector's lanes: OpenCL's vloadN / vstoreN exist for N = 2, 3, 4, 8, 16; CUDA's 3-vectors differ in size
LANES = (2, 4)


@dataclass
class View:
    cast: object          # the cast node
    inner: object         # the pointer it casts
    root: object          # the private array (pointers.Root)
    off: E | None         # element offset of the cast pointer into it
    vec: CType            # the vector type read / written
    total: int | None     # elements of the array (all dimensions); None: unknown (OpenCL pointer parameter)


@dataclass
class Bits:
    cast: object          # the cast node
    var: object           # the variable (or vector lane) whose bits it reinterprets
    old: CType            # the variable's type
    new: CType            # the type it is read / written as (same size)


def _is_half(t: CType) -> bool:
    """halfprec.is_half (halfprec calls this module: no import back)."""
    return (t.kind == "scalar" and t.name == "f16") or (t.kind == "vector" and t.elem.name == "f16")


def _kids(n):
    return [c for c in n.children if c.kind not in NON_EXPR]


def _array_decl(em, n):
    """The declaration of the array `n` points into, found by syntax alone (no emission): `a`, `a + k`, `&a[j]`,
    `a[r]` (a row), or a pointer variable bound to a private array; else None."""
    s = n
    for _ in range(8):
        while s.kind in ("PAREN_EXPR", "UNEXPOSED_EXPR") and len(_kids(s)) == 1:
            s = _kids(s)[0]
        if s.kind == "DECL_REF_EXPR":
            return s.ref
        if s.kind == "BINARY_OPERATOR" and s.op in ("+", "-") and len(_kids(s)) == 2:
            a, b = _kids(s)
            s = a if ptrlike(em.ty(a)) else b
        elif s.kind == "UNARY_OPERATOR" and s.op == "&" and _kids(s):
            s = _kids(s)[0]
        elif s.kind == "ARRAY_SUBSCRIPT_EXPR":
            s = _kids(s)[0]
        else:
            return None
    return None


def _private_array(em, d) -> bool:
    """`d` declares an array in a function, neither `__shared__` nor a device global (pointers.root_of_decl's
    "local" root), told without registering anything."""
    return d.kind == "VAR_DECL" and em.decl_type(d).kind == "array" and em.model.function_of(d) is not None and \
        not any(c.kind == "CUDASHARED_ATTR" for c in d.children) and not em.is_device_global(d)


def match(em, n) -> View | Bits | None:
    """`n` is a reinterpreting cast of private memory this module reads and writes: a vector view of a private
    array (View) or a bit cast of a private variable (Bits); None for anything else."""
    return _array_view(em, n) or _bits(em, n)


def _array_view(em, n) -> View | None:
    """`n` is `(V *)p`, V a 2- or 4-vector of the element type of the private array p points into: the view;
    None for anything else (other casts keep their own checks in pointers.view)."""
    s = n
    while s.kind == "PAREN_EXPR" and len(_kids(s)) == 1:
        s = _kids(s)[0]
    if s.kind not in CASTS or em.ty(s).kind != "pointer" or not _kids(s):
        return None
    inner = _kids(s)[-1]
    it = em.ty(inner)
    vec = element(em.ty(s)).unqualified()
    if not ptrlike(it) or vec.kind != "vector":
        return None
    if element(it).unqualified() != vec.elem or _is_half(vec) or vec.elem.is_bool:
        return None
    d = _array_decl(em, inner)
    if d is None:
        return None
    if id(d) in em.frame.ptrs:
        b = em.frame.ptrs[id(d)]
        if b.root is None or b.root.space != "private" or b.root.kind not in ("local", "param_array", "param"):
            return None
    elif not _private_array(em, d):
        return None
    root, off = em.ptr(inner)
    if root.space != "private" or root.kind not in ("local", "param_array", "param"):
        return None
    if vec.n not in LANES:
        em.fail(s, f"a pointer cast `{s.text}` (reinterpreting private memory as `{ct.spell(vec)}`: only 2- and "
                   "4-vectors are read and written lane by lane)")
    known = bool(root.dims) and all(x is not None for x in root.dims)
    if not em.t.native_pointers and (not known or root.elem.unqualified() != vec.elem):
        em.fail(s, f"a pointer cast `{s.text}` (reinterpreting the private array `{root.name}` as "
                   f"`{ct.spell(vec)}`: only an array of known size, through a pointer to its elements)")
    # OpenCL: a pointer parameter's array is the caller's, of a size unknown here; vloadN reads what CUDA reads
    return View(s, inner, root, off, vec, math.prod(root.dims) if known else None)


# 32-bit types a bit cast goes through a uint between
BITS32 = (F32, I32, U32, ct.vector("f16", 2))


def _bits(em, n) -> Bits | None:
    """`n` is `(T *)&x`, x a private scalar variable or a lane of a private vector variable, T another type of
    its size (both in BITS32); OpenCL casts `&x` of a scalar itself, so there only where halves are involved."""
    s = n
    while s.kind == "PAREN_EXPR" and len(_kids(s)) == 1:
        s = _kids(s)[0]
    if s.kind not in CASTS or em.ty(s).kind != "pointer" or not _kids(s):
        return None
    a = _kids(s)[-1]
    while a.kind in ("PAREN_EXPR", "UNEXPOSED_EXPR") and len(_kids(a)) == 1:
        a = _kids(a)[0]
    if not (a.kind == "UNARY_OPERATOR" and a.op == "&" and _kids(a)):
        return None
    var = base = _kids(a)[0]
    while base.kind == "PAREN_EXPR" and len(_kids(base)) == 1:
        base = _kids(base)[0]
    lane = base.kind == "MEMBER_REF_EXPR"
    if lane and _kids(base):
        b = _kids(base)[0]
        if "->" in em.model.source.slice(b.end, base.end) or em.ty(b).kind != "vector" or \
                base.spelling not in ("x", "y", "z", "w"):
            return None
        base = b
        while base.kind in ("PAREN_EXPR", "UNEXPOSED_EXPR") and len(_kids(base)) == 1:
            base = _kids(base)[0]
    d = base.ref if base.kind == "DECL_REF_EXPR" else None
    if d is None or d.kind != "VAR_DECL" or em.model.function_of(d) is None or em.is_device_global(d) or \
            any(c.kind == "CUDASHARED_ATTR" for c in d.children) or refs.bound(em, d):
        return None
    old, new = em.ty(var).unqualified(), element(em.ty(s)).unqualified()
    if old == new or old not in BITS32 or new not in BITS32:
        return None
    if em.t.native_pointers and not (_is_half(old) or _is_half(new) or lane):
        return None         # OpenCL casts `&x` itself; a vector lane has no address there
    return Bits(s, var, old, new)


_GLSL_TO = {"f32": "floatBitsToUint({})", "i32": "uint({})", "u32": "{}", "f16": "packFloat2x16({})"}
_GLSL_FROM = {"f32": "uintBitsToFloat({})", "i32": "int({})", "u32": "{}", "f16": "unpackFloat2x16({})"}
_CL_TO = {"f32": "as_uint({})", "i32": "as_uint({})", "u32": "{}", "f16": "cuport_h2_bits({})"}
_CL_FROM = {"f32": "as_float({})", "i32": "as_int({})", "u32": "{}", "f16": "cuport_h2_from_bits({})"}
_CL_HELPERS = {
    "cuport_h2_bits": "uint cuport_h2_bits(float2 v)\n{\n    /* a half2's 32 bits: its two halves, x low */\n"
                      "    uint u;\n    vstore_half2_rte(v, 0, (__private half *)&u);\n    return u;\n}",
    "cuport_h2_from_bits": "float2 cuport_h2_from_bits(uint u)\n{\n    /* the half2 of 32 bits, x low */\n"
                           "    return vload_half2(0, (__private const half *)&u);\n}",
}


def _recast(em, e: E, old: CType, new: CType) -> E:
    """The value e of type old, its bits read as type new (the same size)."""
    key = lambda t: "f16" if _is_half(t) else t.name     # noqa: E731
    to, frm = (_CL_TO, _CL_FROM) if em.t.native_pointers else (_GLSL_TO, _GLSL_FROM)
    for t in (old, new):
        em.t.type_name(t, em)           # GLSL: the 16-bit types' extension
        if _is_half(t) and em.t.native_pointers:
            name = to[key(t)] if t is old else frm[key(t)]
            name = name.split("(")[0]
            em.helper(name, _CL_HELPERS[name])
    u = to[key(old)].format(e.text)
    return E(frm[key(new)].format(u), new, PREC_PRIMARY)


def _bits_index(em, v: Bits, k: E | None, node):
    if k is not None and k.lit != 0:
        em.fail(node, f"`{node.text}` (past the variable `{v.var.text}` whose bits the cast reinterprets)")


def _offset(em, v: View, k: E | None, node) -> E:
    """Element offset of vector k: the cast pointer's offset + N*k, checked against the array's end."""
    n = v.vec.n
    o = v.off
    if k is not None:
        k = em.conv(em.index(k, node), I32)
        kk = E(em.t.literal(k.lit * n, I32, em), I32, lit=k.lit * n) if isinstance(k.lit, int) else \
            em.binary_value("*", k, E(em.t.literal(n, I32, em), I32, lit=n), None)
        o = kk if o is None else em.binary_value("+", em.conv(o, I32), kk, None)
    if o is None:
        o = E(em.t.literal(0, I32, em), I32, lit=0)
    o = em.conv(o, I32)
    if v.total is None:
        return o
    if isinstance(o.lit, int) and not isinstance(o.lit, bool):
        if o.lit < 0 or o.lit + n > v.total:
            em.fail(node, f"`{node.text}` (the {ct.spell(v.vec)} at element {o.lit} runs past the end of the "
                          f"{v.total}-element private array `{v.root.name}`)")
    elif v.total % n:
        em.fail(node, f"`{node.text}` (a {ct.spell(v.vec)} of the private array `{v.root.name}` of {v.total} "
                      f"elements, not a multiple of {n}: a vector at an unknown index may run past its end)")
    return o


def _glsl_param(em, v: View, name: str, inout: bool) -> str:
    dims = "".join(f"[{x}]" for x in v.root.dims)
    return f"{'inout ' if inout else ''}{em.t.type_name(v.root.elem.unqualified(), em)} {name}{dims}"


def _glsl_lane(v: View, j: int) -> str:
    """Element o + j of the array `a` (flattened when it has several dimensions)."""
    idx = "o" if j == 0 else f"o + {j}"
    dims = v.root.dims
    if len(dims) == 1:
        return f"a[{idx}]"
    out = []
    for d in range(len(dims)):
        inner = math.prod(dims[d + 1:])
        e = idx if inner == 1 else f"({idx}) / {inner}" if j else f"{idx} / {inner}"
        out.append(f"[{e}]" if d == 0 else f"[({e}) % {dims[d]}]" if inner != 1 or j else f"[{e} % {dims[d]}]")
    return "a" + "".join(out)


def _helper_name(em, v: View, what: str) -> str:
    return f"cuport_{what}_{em.t.type_name(v.vec, em)}_{'x'.join(str(x) for x in v.root.dims)}"


def load(em, v: View, k: E | None, node) -> str:
    """The vector k of the view, read (the variable's bits as the cast's type, Bits)."""
    if isinstance(v, Bits):
        _bits_index(em, v, k, node)
        return _recast(em, em.x(v.var), v.old, v.new).text
    o = _offset(em, v, k, node)
    if em.t.native_pointers:
        p = em.t.native(em, v.inner)
        q = k if k is not None else E("0", I32, lit=0)
        q = em.index(q, node)
        return f"vload{v.vec.n}({q.text}, {p.text})"
    name = _helper_name(em, v, "vld")
    vt = em.t.type_name(v.vec, em)
    lanes = ", ".join(_glsl_lane(v, j) for j in range(v.vec.n))
    em.helper(name, f"{vt} {name}({_glsl_param(em, v, 'a', False)}, int o)\n{{\n"
                    f"    return {vt}({lanes});\n}}")
    return f"{name}({v.root.name}, {o.text})"


def _value_unused(n) -> bool:
    """The assignment `n` is a statement of its own (its value is not used)."""
    p = n.parent
    while p is not None and p.kind in ("UNEXPOSED_EXPR", "PAREN_EXPR") and len(_kids(p)) == 1:
        n, p = p, p.parent      # `(a = b);`, clang's cleanups around a call of `operator=`
    if p is None:
        return False
    kids = _kids(p)
    if p.kind == "COMPOUND_STMT":
        return True
    if p.kind == "IF_STMT":
        return bool(kids) and kids[0] is not n
    if p.kind in ("WHILE_STMT", "FOR_STMT"):
        return bool(kids) and kids[-1] is n
    if p.kind == "DO_STMT":
        return bool(kids) and kids[0] is n
    return False


def store(em, n, v: View, k: E | None, lhs_n, rhs: E) -> E:
    """`cast[k] = rhs` (n the assignment): the vector rhs stored into its lanes; the assignment's value is it."""
    if isinstance(v, Bits):
        # `*(T *)&x = v`: x = v's bits read as x's type; that value is x's, not the assignment's (of type T)
        _bits_index(em, v, k, lhs_n)
        if not _value_unused(n):
            em.fail(n, f"`{n.text}` (the value of a store that reinterprets the bits of `{v.var.text}`)")
        rhs = em.conv(rhs, v.new, implicit_ok=True)
        lv = em.x(v.var, "w")
        return E(f"{lv.text} = {_recast(em, rhs, v.new, v.old).text}", v.old, PREC_ASSIGN)
    rhs = em.conv(rhs, v.vec, implicit_ok=True)
    if em.t.native_pointers:
        if not _value_unused(n):
            em.fail(n, f"`{n.text}` (the value of a vector store into private memory through a reinterpreting "
                       "cast: vstore gives none)")
        _offset(em, v, k, lhs_n)
        p = em.t.native(em, v.inner)
        q = em.index(k if k is not None else E("0", I32, lit=0), lhs_n)
        return E(f"vstore{v.vec.n}({rhs.text}, {q.text}, {p.text})", ct.scalar("void"), PREC_PRIMARY)
    o = _offset(em, v, k, lhs_n)
    name = _helper_name(em, v, "vst")
    vt = em.t.type_name(v.vec, em)
    body = "".join(f"    {_glsl_lane(v, j)} = v.{'xyzw'[j]};\n" for j in range(v.vec.n))
    em.helper(name, f"{vt} {name}({vt} v, {_glsl_param(em, v, 'a', True)}, int o)\n{{\n{body}    return v;\n}}")
    return E(f"{name}({rhs.text}, {v.root.name}, {o.text})", v.vec, PREC_PRIMARY)


def target_of(em, a_n):
    """`cast[k]` / `*cast` (the left of an assignment, or an lvalue) over a private array view: (view, k node or
    None); else None."""
    s = a_n
    while s.kind == "PAREN_EXPR" and len(_kids(s)) == 1:
        s = _kids(s)[0]
    if s.kind == "ARRAY_SUBSCRIPT_EXPR" and len(_kids(s)) == 2:
        base, idx = _kids(s)
        if em.ty(base).kind == "pointer":
            v = match(em, base)
            return (v, idx) if v is not None else None
    if s.kind == "UNARY_OPERATOR" and s.op == "*" and _kids(s):
        v = match(em, _kids(s)[0])
        return (v, None) if v is not None else None
    return None


def refuse_change(em, node):
    """A view used otherwise than read whole or assigned whole (`+=`, `++`, a lane stored, a reference bound)."""
    em.fail(node, f"`{node.text}` (a vector in private memory through a reinterpreting cast is only read whole or "
                  "assigned whole; this changes it otherwise)")
