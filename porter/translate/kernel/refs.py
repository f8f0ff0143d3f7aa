"""C++ references in device code for the GLSL and OpenCL emitters.

OpenCL C has pointers, so a reference becomes one: `T&` -> `<space> T*` parameter, `&arg` at the call, `(*p)` at
each use; a `const T&` bound to a temporary is passed by value. That is C++'s semantics exactly.

GLSL has neither: a reference parameter the callee writes is `inout` (copy-in at the call, copy-out at the
return), one it only reads is a plain (`in`) parameter, a copy at the call. Copy-in/copy-out equals C++'s
reference semantics unless, during the call, the storage is also reached another way:
  * another argument of the same call overlaps it (a reference, or a pointer GLSL passes as a copied array or
    as the buffer/shared array itself) and the callee writes through one of them: the copies diverge and the
    copy-out order is undefined in GLSL. Overlap is decided on (storage, member/index path); indices are
    compared as `e + c` forms, anything unknown may overlap. A multi-dimensional array reached through a row
    pointer (`p = a[i]`, an element offset) is compared with its subscripts `a[i][j]` as flat element offsets:
    only constant subscripts convert, anything else may overlap;
  * another thread: the storage is shared or buffer memory and the callee synchronises (a barrier or fence
    makes other threads' writes visible in CUDA, not in a copy), or the callee declares an `extern __shared__`
    array (the same memory under another name).
Only those calls are refused (CP907, at the call). The callee cannot reach the caller's storage otherwise:
device functions see only their arguments (file-scope device variables are refused elsewhere).

A reference local `T& r = lv;` is an alias: GLSL re-evaluates `lv` at each use with its indices evaluated once
into temporaries at the declaration; OpenCL declares a pointer. Distinct kernel buffers are assumed not to
overlap, as everywhere else in these translations (they are distinct bindings)."""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, replace

from porter.translate.kernel import ctype as ct
from porter.translate.kernel.target import PREC_UNARY, E

_CASTS = ("CSTYLE_CAST_EXPR", "CXX_STATIC_CAST_EXPR", "CXX_FUNCTIONAL_CAST_EXPR", "CXX_CONST_CAST_EXPR",
          "CXX_REINTERPRET_CAST_EXPR")
_SYNC = re.compile(r"^(__syncthreads\w*|__syncwarp|__threadfence\w*|__barrier_sync|bar_sync)$")


@dataclass(frozen=True)
class Place:
    """Where an lvalue lives: storage identity (a Root key), address space and the member/index path."""
    key: tuple
    space: str                 # global | local | private | constant
    path: tuple = ()           # ("m", name) | ("i", index key) | ("f", flat element offset key)
    vector_part: bool = False  # a component of a vector (no address in OpenCL C)
    dims: tuple = ()           # the storage's array dimensions (to flatten subscripts)


@dataclass
class RefBinding:
    """A reference local or (OpenCL) reference parameter in the frame: `node` (GLSL alias, re-emitted at each
    use) or `text` (OpenCL `(*p)`), and the place it refers to."""
    place: Place
    node: object = None
    text: str = ""
    ctype: object = None


# ------------------------------------------------------------------ places
def _index_key(n, off=None):
    """`e + c` form of an index (for may-equal tests): ("c", v), ("e", text, c) or None (unknown)."""
    if off is not None and off.lit is None:
        return None
    base = off.lit if off is not None else 0
    if n is None:
        return ("c", base)
    s = n.strip
    v = s.value
    if isinstance(v, int) and not isinstance(v, bool):
        return ("c", base + v)
    if s.kind == "BINARY_OPERATOR" and s.op in ("+", "-") and len(s.children) == 2:
        a, b = s.children
        bv = b.strip.value
        if isinstance(bv, int) and not isinstance(bv, bool):
            return ("e", re.sub(r"\s+", "", a.text), base + (bv if s.op == "+" else -bv))
        av = a.strip.value
        if s.op == "+" and isinstance(av, int) and not isinstance(av, bool):
            return ("e", re.sub(r"\s+", "", b.text), base + av)
    return ("e", re.sub(r"\s+", "", s.text), base)


def _may_equal(a, b) -> bool:
    if a is None or b is None:
        return True
    if a[0] == "c" and b[0] == "c":
        return a[1] == b[1]
    if a[0] == "e" and b[0] == "e" and a[1] == b[1]:
        return a[2] == b[2]
    return True


def _flat_path(path: tuple, dims: tuple) -> tuple | None:
    """path with its leading subscripts (one per dimension of `dims`) as one flat element offset ("f"), or None
    when they are not all constants."""
    if not path or path[0][0] == "f":
        return path
    n = len(dims)
    run = path[:n]
    if n < 2 or len(run) < n or any(x[0] != "i" or x[1] is None or x[1][0] != "c" for x in run) or \
            any(d is None for d in dims):
        return None
    flat = sum(x[1][1] * math.prod(dims[k + 1:]) for k, x in enumerate(run))
    return (("f", ("c", flat)),) + path[n:]


def _is_flat(path: tuple) -> bool:
    return bool(path) and path[0][0] == "f"


def overlap(p: Place, q: Place) -> bool:
    if p.key != q.key:
        return False
    pp, qp = p.path, q.path
    if _is_flat(pp) != _is_flat(qp):            # a row pointer's element offset vs subscripts
        pp, qp = _flat_path(pp, p.dims or q.dims), _flat_path(qp, q.dims or p.dims)
        if pp is None or qp is None:
            return True
    for x, y in zip(pp, qp):
        if x[0] == "m" and y[0] == "m" and x[1] != y[1]:
            return False
        if x[0] == y[0] and x[0] in ("i", "f") and not _may_equal(x[1], y[1]):
            return False
    return True


def _ptr_place(root, off, idx_n=None) -> Place:
    """The element `idx_n` (None: 0) of pointer (root, off); a flattened root's offset counts its elements."""
    return Place(root.key, root.space, (("f" if root.flat else "i", _index_key(idx_n, off)),), dims=root.dims)


def _bare(n):
    while n.kind in ("PAREN_EXPR", "UNEXPOSED_EXPR") and len(n.children) == 1 or \
            n.kind == "PAREN_EXPR" and n.children:
        n = n.children[-1]
    return n


def place(em, n) -> Place | None:
    """The place of lvalue expression n, or None for an rvalue."""
    s = _bare(n)
    k = s.kind
    fr = em.frame
    if k == "DECL_REF_EXPR":
        r = s.ref
        if r is None or r.kind not in ("VAR_DECL", "PARM_DECL") or em.model.function_of(r) is None:
            return None
        b = _refs(fr).get(id(r))
        if b is not None:
            return b.place
        t = em.decl_type(r)
        if t.kind == "pointer":
            return None
        if id(r) in fr.ptrs:                       # an array parameter bound to a root
            root, _off = em.ptr(s)
            return Place(root.key, root.space, dims=root.dims)
        if t.kind == "array":
            root = em.root_of_decl(r, s)
            return Place(root.key, root.space, dims=root.dims)
        shared = any(c.kind == "CUDASHARED_ATTR" for c in r.children)
        if shared:
            if em.name_of(r) not in em.shared:
                em.shared_decl(r)
            return Place(("shared_scalar", em.name_of(r)), "local")
        return Place(("scalar", em.name_of(r)), "private")
    if k == "ARRAY_SUBSCRIPT_EXPR" and len(s.children) == 2:
        base_n, idx_n = s.children
        bt = em.ty(base_n)
        if bt.kind == "pointer" or (bt.kind == "array" and em._decays_to_root(base_n)):
            root, off = em.ptr(base_n)
            return _ptr_place(root, off, idx_n)
        base = place(em, base_n)
        if base is None:
            return None
        if bt.kind == "vector":
            return replace(base, path=base.path + (("m", str(idx_n.value)),), vector_part=True)
        return replace(base, path=base.path + (("i", _index_key(idx_n)),))
    if k == "MEMBER_REF_EXPR" and (not s.children or s.children[0].strip.kind == "CXX_THIS_EXPR"):
        base = self_place(em)                      # a member of the method's own object
        return replace(base, path=base.path + (("m", s.spelling),)) if base is not None else None
    if k == "UNARY_OPERATOR" and s.op == "*" and s.children and s.children[0].strip.kind == "CXX_THIS_EXPR":
        return self_place(em)
    if k == "MEMBER_REF_EXPR" and s.children:
        if s.builtin() is not None:
            return None
        base_n = s.children[0]
        arrow = "->" in em.model.source.slice(base_n.end, s.end)
        if arrow:
            root, off = em.ptr(base_n)
            base = _ptr_place(root, off)
            vec = em.ty(base_n).kind == "pointer" and em.ty(base_n).elem.kind == "vector"
        else:
            base = place(em, base_n)
            vec = em.ty(base_n).kind == "vector"
        if base is None:
            return None
        return replace(base, path=base.path + (("m", s.spelling),), vector_part=vec or base.vector_part)
    if k == "UNARY_OPERATOR" and s.op == "*":
        root, off = em.ptr(s.children[0])
        return _ptr_place(root, off)
    return None


def self_place(em) -> Place | None:
    """The place of the object a method works on (methods.py's `self`): its reference binding (OpenCL), else the
    parameter or local `self` itself."""
    fr = em.frame
    d = getattr(fr, "self_decl", None)
    if d is None:
        return None
    b = _refs(fr).get(id(d))
    return b.place if b is not None else Place(("scalar", em.name_of(d)), "private")


def seed_self_writes(em, fn, decl, const: bool) -> None:
    """Record whether method fn writes its object `decl` (methods.SelfDecl), for writes(): a const method
    does not (C++ forbids it; `mutable` members are refused); otherwise a member of the object assigned,
    passed on by non-const reference, `*this` written or handed out, or a non-const method called on it."""
    memo = em.u.__dict__.setdefault("_ref_writes", {})
    key = (id(fn.node), id(decl))
    if key in memo:
        return
    memo[key] = None
    out = False
    if not const and fn.body is not None:
        for n in fn.body.walk():
            if n.kind == "MEMBER_REF_EXPR" and (not n.children or n.children[0].strip.kind == "CXX_THIS_EXPR"):
                if n.ref_kind == "CXX_METHOD":
                    callee = em._callee_fn(n.parent) if n.parent is not None else None
                    w = callee is None or not _const_method(callee)
                else:
                    w = _use_writes(em, fn, n)
            elif n.kind == "CXX_THIS_EXPR" and (n.parent is None or n.parent.kind != "MEMBER_REF_EXPR"):
                p = n.parent
                while p is not None and p.kind in ("PAREN_EXPR", "UNEXPOSED_EXPR"):
                    p = p.parent
                w = p is None or not (p.kind == "UNARY_OPERATOR" and p.op == "*") or _use_writes(em, fn, p)
            else:
                continue
            if w:
                out = True
                break
    memo[key] = out


def _const_method(fn) -> bool:
    try:
        return fn.node.kind == "CXX_METHOD" and bool(fn.node._cursor.is_const_method())
    except Exception:
        return False


def _refs(fr) -> dict:
    d = getattr(fr, "refs", None)
    if d is None:
        d = fr.refs = {}
    return d


# ------------------------------------------------------------------ who writes what
def _is_ptrlike(n) -> bool:
    t = n.type or ""
    return "(" not in t and ("*" in t or "[" in t)


def writes(em, fn, decl) -> bool:
    """Whether function fn may write the object `decl` names (a by-value variable, a reference) or, for a
    pointer, the memory it points to. Conservative: any use not known to be a read counts as a write."""
    memo = em.u.__dict__.setdefault("_ref_writes", {})
    key = (id(fn.node), id(decl))
    if key in memo:
        return memo[key] if memo[key] is not None else True   # in progress (recursion): assume written
    memo[key] = None
    out = False
    if fn.body is not None:
        for n in fn.body.walk():
            if n.kind == "DECL_REF_EXPR" and n.ref is decl and _use_writes(em, fn, n):
                out = True
                break
    memo[key] = out
    return out


def _use_writes(em, fn, n) -> bool:   # noqa: C901 (one case per parent kind)
    while True:
        p = n.parent
        if p is None:
            return True
        k = p.kind
        if k in ("PAREN_EXPR", "UNEXPOSED_EXPR"):
            n = p
            continue
        if k in _CASTS:
            if "*" in (p.type or "") or "&" in (p.type or ""):
                n = p
                continue
            return False
        if k == "MEMBER_REF_EXPR":
            if p.children and p.children[0] is n:
                if p.parent is not None and p.parent.kind == "CALL_EXPR" and p.parent.children and \
                        p.parent.children[0] is p:
                    callee = em._callee_fn(p.parent)   # a method call on the object: a const one only reads
                    return callee is None or not _const_method(callee)
                n = p
                continue
            return False
        if k == "ARRAY_SUBSCRIPT_EXPR":
            if p.children and p.children[0] is n:
                n = p
                continue
            return False
        if k == "UNARY_OPERATOR":
            if p.op == "*":
                n = p
                continue
            if p.op in ("++", "--", "post++", "post--", "&"):
                return True
            return False
        if k == "BINARY_OPERATOR":
            if p.op == "=":
                return p.children[0] is n or _is_ptrlike(n)
            if p.op in ("+", "-") and _is_ptrlike(n):
                n = p
                continue
            if p.op == ",":
                if p.children[-1] is n:
                    n = p
                    continue
                return False
            return False
        if k == "COMPOUND_ASSIGNMENT_OPERATOR":
            return p.children[0] is n
        if k == "CONDITIONAL_OPERATOR":
            if p.children and p.children[0] is n:
                return False
            n = p                                  # `(c ? a : b) = v` is an lvalue
            continue
        if k in ("IF_STMT", "WHILE_STMT", "DO_STMT", "FOR_STMT", "SWITCH_STMT", "RETURN_STMT",
                 "CXX_UNARY_EXPR", "INIT_LIST_EXPR", "CASE_STMT"):
            return False if k != "RETURN_STMT" or not _is_ptrlike(n) else True
        if k in ("COMPOUND_STMT", "DECL_STMT"):
            return False                           # a discarded expression statement
        if k == "VAR_DECL":
            t = p.type or ""
            if "&" in t or "*" in t:
                return writes(em, fn, p)           # an alias: writes through it count
            return False
        if k == "CALL_EXPR":
            return _call_use_writes(em, fn, p, n)
        if k in ("CXX_CONSTRUCT_EXPR", "CXX_TEMPORARY_OBJECT_EXPR", "CXX_FUNCTIONAL_CAST_EXPR"):
            return False                           # copied into a new object
        return True


def _call_use_writes(em, fn, call, n) -> bool:
    if call.spelling == "operator=":
        return call.children[0] is n
    if call.children and call.children[0] is n:
        return True                                # called through (a function object)
    callee = em._callee_fn(call)
    args = em.call_args(call)
    idx = next((i for i, a in enumerate(args) if a is n), None)
    if callee is None:
        if em.parse_type(call.spelling or "").kind == "struct":
            return False                           # a copy constructor
        return _is_ptrlike(n)                      # builtins take values; a pointer may be written through
    if callee.node.kind == "CXX_METHOD" and idx is not None and len(args) == len(callee.params) + 1:
        if idx == 0:                               # a member operator's object
            return not _const_method(callee)
        idx -= 1
    if idx is None or idx >= len(callee.params):
        return True
    prm = callee.params[idx].node
    pt = prm.type or ""
    if "&" in pt or "*" in pt or "[" in pt:
        if "&" in pt and re.match(r"^\s*const\b", pt) and "*" not in pt:
            return False
        return writes(em, callee, prm)
    return False


def _syncs(em, fn, seen=None) -> str | None:
    """The first synchronising construct fn reaches (barrier, fence, extern shared array), or None."""
    seen = seen if seen is not None else set()
    if id(fn.node) in seen or fn.body is None:
        return None
    seen.add(id(fn.node))
    for n in fn.body.walk():
        if n.kind == "CALL_EXPR":
            name = em.callee_name(n)
            if _SYNC.match(name or ""):
                return f"`{name}`"
            callee = em._callee_fn(n)
            if callee is not None:
                r = _syncs(em, callee, seen)
                if r:
                    return r
        if n.kind == "VAR_DECL" and any(c.kind == "CUDASHARED_ATTR" for c in n.children) and \
                "extern" in n.text.split(n.spelling)[0]:
            return f"the `extern __shared__` array `{n.spelling}`"
    return None


# ------------------------------------------------------------------ calls
def ref_arg(em, fn, p, pt: ct.CType, a):
    """(key part, bind) for argument a of reference parameter p. bind is ("ref", p, E, Place, pt, a) or, for a
    `const T&` bound to a temporary, ("val", p, E, None, pt, a)."""
    pl = place(em, a)
    written = not pt.const and writes(em, fn, p.node)
    if pl is None:
        if written:
            em.fail(a, f"a temporary bound to the reference parameter `{p.name}` that `{fn.name}` writes")
        e = em.conv(em.x(a), pt.unqualified())
        # GLSL: the same `in` parameter as for an object (one specialisation); OpenCL: by value, not a pointer
        return ("val",) if em.t.native_pointers else ("ref", False), ("val", p, e, None, pt, a)
    if pt.volatile and pl.space in ("global", "local") and not em.t.native_pointers:
        em.fail(a, f"a `volatile` reference to shared or global memory (`{a.text}`) passed to `{fn.name}` "
                "(a GLSL parameter is a copy)")
    if pt.const and not written and em.t.ref_copy(em, a, pl):
        e = em.conv(em.x(a), pt.unqualified())
        return ("val",), ("val", p, e, None, pt, a)
    lv = em.x(a, "rw" if written else "r")
    if em.t.native_pointers:
        if pl.vector_part:
            em.fail(a, f"a reference to the vector component `{a.text}` (OpenCL C cannot take its address)")
        return ("ref", pl.space, written), ("ref", p, E(f"&{lv.paren(PREC_UNARY)}", ct.pointer(pt)), pl, pt, a)
    return ("ref", written), ("ref", p, lv, pl, pt, a)


def check_call(em, fn, call, binds):
    """GLSL: refuse the calls where copy-in/copy-out differs from reference semantics (see the module doc)."""
    if em.t.native_pointers:
        return
    items = []
    for kind, p, v, off, pt, a in binds:
        if kind == "ref":
            items.append((a, off, True, not pt.const and writes(em, fn, p.node)))
        elif kind == "ptr":
            copied = v.kind in ("local", "param_array", "scalar")
            items.append((a, Place(v.key, v.space), copied,
                          not (pt.elem is not None and pt.elem.const) and writes(em, fn, p.node)))
    for i, (a, pa, ca, wa) in enumerate(items):
        for b, pb, cb, wb in items[i + 1:]:
            if (ca or cb) and (wa or wb) and overlap(pa, pb):
                em.fail(call, f"`{a.text}` and `{b.text}` may be the same storage and `{fn.name}` writes through "
                        "one of them: GLSL passes references by copy-in/copy-out, which differs from CUDA's "
                        "references when arguments alias (pass distinct objects or a value)")
    for kind, p, v, off, pt, a in binds:
        if kind == "ref" and off.space in ("global", "local"):
            sync = _syncs(em, fn)
            if sync:
                em.fail(call, f"a reference to shared or global memory (`{a.text}`) passed to `{fn.name}`, which "
                        f"synchronises ({sync}): a GLSL parameter is a copy that other threads' writes do not "
                        "reach (pass a pointer or index instead)")


def check_return(em, fn, ret: ct.CType):
    if ret.ref:
        em.fail(fn.node, f"device function `{fn.name}` returning a reference")


def ref_param(em, fr, p, pt: ct.CType, pname: str, v: E, pl: Place) -> str:
    """The parameter declaration of a reference parameter (and, for OpenCL, its `(*p)` binding)."""
    written = not pt.const and writes(em, fr.fn, p.node)
    t = pt.unqualified()
    if t.kind == "struct":
        em.use_struct(t.name, p.node)
    if t.kind not in ("scalar", "vector", "struct"):
        em.fail(p.node, f"a reference parameter `{p.name}` of type `{p.type}`")
    if em.t.native_pointers:
        _refs(fr)[id(p.node)] = RefBinding(Place(("ref", pname, id(fr)), pl.space), text=f"(*{pname})", ctype=t)
    return em.t.ref_param(em, t, pname, written, pl.space, pt.const or not written, pt.volatile)


def use(em, n, r, mode) -> E:
    """A use of a reference local / OpenCL reference parameter."""
    b = _refs(em.frame)[id(r)]
    if b.node is not None:
        e = em.x(b.node, mode)
        return E(e.text, b.ctype, e.prec, e.tt if e.tt.kind != "unknown" else None)
    return E(b.text, b.ctype)


def bound(em, r) -> bool:
    fr = em.frame
    return fr is not None and id(r) in _refs(fr)


# ------------------------------------------------------------------ reference locals
def ref_decl(em, d, t: ct.CType, name: str, init) -> list[str]:
    """`T& r = lv;` (and `const T& r = value;`)."""
    if init is None:
        em.fail(d, f"the reference `{d.spelling}` without an initialiser")
    base = t.unqualified()
    if base.kind not in ("scalar", "vector", "struct"):
        em.fail(d, f"a reference variable `{d.spelling}` of type `{d.type}`")
    if base.kind == "struct":
        em.use_struct(base.name, d)
    pl = place(em, init)
    if pl is None:
        if not t.const:
            em.fail(d, f"the reference `{d.spelling}` bound to a temporary")
        e = em.conv(em.x(init), base)          # lifetime extension: a constant copy is the same thing
        return [f"{em.t.type_name(base, em)} {name} = {e.text};"]
    written = not t.const and writes(em, em.frame.fn, d)
    if t.const and em.t.ref_copy(em, init, pl):
        e = em.conv(em.x(init), base)
        return [f"{em.t.type_name(base, em)} {name} = {e.text};"]
    # OpenCL cannot point into CUDA's 12-byte 3-vectors of a buffer (opencl_vec3): such a reference is an alias
    # of its element, as in GLSL (its indices evaluated once, below)
    packed = em.t.name == "opencl" and pl.space == "global" and base.kind == "vector" and base.n == 3
    if em.t.native_pointers and not packed:
        if pl.vector_part:
            em.fail(d, f"a reference to the vector component `{init.text}` (OpenCL C cannot take its address)")
        lv = em.x(init, "rw" if written else "r")
        _refs(em.frame)[id(d)] = RefBinding(pl, text=f"(*{name})", ctype=base)
        ptype = em.t.ref_pointer_type(em, base, pl.space, t.const or not written, t.volatile)
        return [f"{ptype} {name} = &{lv.paren(PREC_UNARY)};"]
    lines = _hoist(em, init, d)
    em.x(init, "rw" if written else "r")      # record the access once, as a use would
    _refs(em.frame)[id(d)] = RefBinding(pl, node=init, ctype=base)
    if em.t.keep_comments:
        lines.append(f"// {d.spelling} -> {init.text}")
    return lines


def _hoist(em, n, d) -> list[str]:
    """Evaluate the indices of lvalue n once (C++ binds a reference once; GLSL re-evaluates the alias)."""
    lines = []
    s = _bare(n)
    while True:
        if s.kind == "ARRAY_SUBSCRIPT_EXPR" and len(s.children) == 2:
            base_n, idx_n = s.children
            v = idx_n.value
            if not isinstance(v, int) or isinstance(v, bool):
                em.hoisted.pop(id(idx_n), None)    # from another specialisation of the same function
                e = em.index(em.x(idx_n), idx_n)
                var = em.fresh(f"cuport_{em.t.ident(d.spelling)}_i")
                lines.append(f"{em.t.type_name(e.tt if e.tt.kind == 'scalar' else e.ct, em)} {var} = {e.text};")
                em.hoisted[id(idx_n)] = E(var, e.ct, tt=e.tt)
            s = _bare(base_n)
            if em.ty(base_n).kind == "pointer" or em._decays_to_root(base_n):
                return lines + _stable_pointer(em, s, d)
            continue
        if s.kind == "MEMBER_REF_EXPR" and s.children:
            base_n = s.children[0]
            if "->" in em.model.source.slice(base_n.end, s.end):
                return lines + _stable_pointer(em, _bare(base_n), d)
            s = _bare(base_n)
            continue
        if s.kind == "UNARY_OPERATOR" and s.op == "*":
            return lines + _stable_pointer(em, _bare(s.children[0]), d)
        return lines


def _stable_pointer(em, p, d) -> list[str]:
    """GLSL: the alias goes through a pointer; its offset must not change while the reference lives."""
    if p.kind == "DECL_REF_EXPR" and p.ref is not None:
        b = em.frame.ptrs.get(id(p.ref))
        if b is None or getattr(b, "off", None) is None or b.off.lit is not None or id(p.ref) not in em.an.assigned:
            return []
    em.fail(d, f"the reference `{d.spelling}` into `{p.text}` (a pointer expression that may change)")


def struct_assign(em, n) -> E:
    """`a = b` for structs (clang: a call of the implicit `operator=`)."""
    kids = [c for c in n.children if not (c.kind == "DECL_REF_EXPR" and c.spelling == "operator=")]
    if len(kids) != 2:
        em.fail(n, f"the assignment `{n.text}`")
    return em.assign(n, kids[0], kids[1])


def is_copy(em, n) -> bool:
    """A struct's implicit copy (clang: a call of its constructor with the source object as the argument)."""
    name = em.callee_name(n)
    return bool(name) and em._callee_fn(n) is None and em.parse_type(name).kind in ("struct", "vector")


def copy_of(em, init, t: ct.CType) -> bool:
    """`T b = a;` with a of struct type T: clang shows a constructor call with one argument, a copy."""
    args = [c for c in init.children if c.kind not in ("TYPE_REF", "NAMESPACE_REF", "TEMPLATE_REF")]
    return len(args) == 1 and args[0].kind != "INIT_LIST_EXPR" and em.ty(args[0]).same(t)
