"""Accesses to `__shared__` memory as byte offsets from the start of a known array, and the shared-memory
budget of a kernel. Accesses are found through direct subscripts (`tile[i][j]`), through casts
(`((float *)tile)[i]`) and through never-reassigned local pointers (`float *p = &tile[0][0]; p[i]`,
`float *b = (float *)smem + 1024`). Rules for bank conflicts, padding and shared-memory limits read these."""
from __future__ import annotations

from fractions import Fraction

from porter.analysis.affine import Poly
from porter.frontend.model import FileModel, Function, Node, SharedArray
from porter.record import Record

_CASTS = ("PAREN_EXPR", "CSTYLE_CAST_EXPR", "CXX_STATIC_CAST_EXPR", "CXX_REINTERPRET_CAST_EXPR",
          "CXX_FUNCTIONAL_CAST_EXPR", "CXX_CONST_CAST_EXPR", "UNEXPOSED_EXPR")
BUILTIN_PREFIXES = ("threadIdx.", "blockIdx.", "blockDim.", "gridDim.", "warpSize")


class SharedAccess(Record):
    """One load or store of shared memory whose array is known."""
    array: SharedArray
    node: Node                        # the ARRAY_SUBSCRIPT_EXPR (outermost) or the `*p` dereference
    subs: list[Node]                  # subscripts in source order
    direct: bool                      # subscripts applied to the array variable itself
    base_offset: Poly | None          # bytes from the array start to element 0 of the subscripted pointer
    elem_size: int | None             # bytes of the element read or written
    function: Function | None
    sub_polys: list[Poly | None]
    width: int | None                 # bytes one lane transfers: a member (`s[i].x`) is narrower than its struct
    expr: Node | None                 # what is read or written: the member expression `s[i].x`, else `node`

    def __init__(self, array, node, subs, direct, base_offset, elem_size, function, sub_polys=None, width=None,
                 expr=None):
        self.array = array
        self.node = node
        self.subs = subs
        self.direct = direct
        self.base_offset = base_offset
        self.elem_size = elem_size
        self.function = function
        self.sub_polys = [] if sub_polys is None else sub_polys
        self.width = width
        self.expr = expr
        self.__post_init__()

    def __post_init__(self):
        self.expr = self.node
        if self.width is None:
            self.width = self.elem_size
            p = self.node.parent
            while p is not None and p.kind == "PAREN_EXPR":
                p = p.parent
            if p is not None and p.kind == "MEMBER_REF_EXPR":
                self.width = p.type_size()
                self.expr = p

    def offset(self, dims=None) -> Poly | None:
        """Byte offset of the accessed element from the array start; `dims` overrides the declared extents
        (to evaluate a padded layout)."""
        if self.base_offset is None or self.elem_size is None or any(p is None for p in self.sub_polys):
            return None
        if not self.direct:
            if not self.sub_polys:
                return self.base_offset          # `*p`
            if len(self.sub_polys) != 1:
                return None
            return self.base_offset + self.sub_polys[0].scale(self.elem_size)
        strides = element_strides(dims if dims is not None else self.array.dims)
        if strides is None or len(strides) != len(self.sub_polys):
            return None
        total = Poly()
        for p, s in zip(self.sub_polys, strides):
            total = total + p.scale(s)
        return total.scale(self.elem_size)

    @property
    def full(self) -> bool:
        """A direct subscript of every dimension (`tile[i][j]` on a 2-D array)."""
        return self.direct and len(self.subs) == len(self.array.dims)


def element_strides(dims) -> list[int] | None:
    """Row-major strides in elements; the outermost extent may be unknown (extern `[]`)."""
    strides = [1] * len(dims)
    acc = 1
    for i in range(len(dims) - 1, 0, -1):
        if dims[i] is None:
            return None
        acc *= dims[i]
        strides[i - 1] = acc
    return strides


def strip(node: Node) -> Node:
    n = node
    while n.kind in _CASTS and n.children:
        n = n.children[-1]
    return n


def pointee_size(node: Node) -> int | None:
    """Bytes of what a pointer- or array-typed expression points at."""
    try:
        t = node.canonical_type
        k = t.kind.name
        if k == "POINTER":
            s = t.get_pointee().get_size()
        elif k in ("CONSTANTARRAY", "INCOMPLETEARRAY", "VARIABLEARRAY", "DEPENDENTSIZEDARRAY"):
            s = t.element_type.get_size()
        else:
            return None
    except Exception:
        return None
    return s if s and s > 0 else None


def is_array_typed(node: Node) -> bool:
    try:
        return node.canonical_type.kind.name in ("CONSTANTARRAY", "INCOMPLETEARRAY", "VARIABLEARRAY",
                                                 "DEPENDENTSIZEDARRAY")
    except Exception:
        return False


class SharedMemory:
    """Per-file index of shared arrays, pointers into them and their accesses (built once, cached on the model)."""

    def __init__(self, model: FileModel, analysis):
        self.model = model
        self.an = analysis
        self._by_decl = {id(s.node): s for s in model.shared}
        self._accesses: list[SharedAccess] | None = None
        self._ptr_cache: dict[int, tuple | None] = {}
        self._var_uniform: dict[tuple, bool] = {}
        self._refs: dict[int, list[Node]] | None = None

    def array_of(self, node: Node) -> SharedArray | None:
        """The shared array a DECL_REF_EXPR (possibly in parentheses, not cast) names."""
        n = node
        while n.kind in ("PAREN_EXPR", "UNEXPOSED_EXPR") and n.children:
            n = n.children[-1]
        if n.kind == "DECL_REF_EXPR" and n.ref is not None:
            return self._by_decl.get(id(n.ref))
        return None

    # --- pointers into shared memory ---
    def pointer(self, node: Node, depth: int = 0):
        """(array, byte offset Poly) when `node` evaluates to a pointer into a known shared array."""
        if node is None or depth > 8:
            return None
        key = id(node)
        if key in self._ptr_cache:
            return self._ptr_cache[key]
        self._ptr_cache[key] = None
        r = self._pointer(node, depth)
        self._ptr_cache[key] = r
        return r

    def _pointer(self, node: Node, depth: int):
        n = strip(node)
        k = n.kind
        if k == "DECL_REF_EXPR" and n.ref is not None:
            arr = self._by_decl.get(id(n.ref))
            if arr is not None:
                return arr, Poly()
            if n.ref.kind == "VAR_DECL":
                d = self.an.definition(n.ref)
                if d is not None and _is_pointer_decl(n.ref):
                    return self.pointer(d, depth + 1)
            return None
        if k == "UNARY_OPERATOR" and n.op == "&" and n.children:
            inner = strip(n.children[0])
            if inner.kind == "ARRAY_SUBSCRIPT_EXPR":
                return self._element_address(inner, depth)
            return self.pointer(inner, depth + 1) if inner.kind == "DECL_REF_EXPR" else None
        if k == "ARRAY_SUBSCRIPT_EXPR" and is_array_typed(n):
            # a partial subscript of a multi-dimensional array decays to a row pointer
            return self._element_address(n, depth)
        if k == "BINARY_OPERATOR" and n.op in ("+", "-") and len(n.children) == 2:
            a, b = n.children
            if pointee_size(a) is not None and pointee_size(b) is None:
                ptr, idx = a, b
            elif n.op == "+" and pointee_size(b) is not None and pointee_size(a) is None:
                ptr, idx = b, a
            else:
                return None
            base = self.pointer(ptr, depth + 1)
            p = self.index_poly(idx)
            es = pointee_size(ptr)
            if base is None or p is None or es is None:
                return None
            off = p.scale(es)
            return base[0], base[1] + (off if n.op == "+" else -off)
        return None

    def _element_address(self, sub: Node, depth: int):
        """Byte address of `x[i]...[k]` (a full or partial subscript chain) relative to its array."""
        subs, base = _chain(sub)
        arr = self.array_of(base)
        if arr is not None:
            strides = element_strides(arr.dims)
            if strides is None or arr.elem_size is None or len(subs) > len(arr.dims):
                return None
            total = Poly()
            for s, st in zip(subs, strides):
                p = self.index_poly(s)
                if p is None:
                    return None
                total = total + p.scale(st * arr.elem_size)
            return arr, total
        if len(subs) != 1:
            return None
        ptr = self.pointer(base, depth + 1)
        es = pointee_size(base)
        p = self.index_poly(subs[0])
        if ptr is None or es is None or p is None:
            return None
        return ptr[0], ptr[1] + p.scale(es)

    def index_poly(self, node: Node) -> Poly | None:
        """Polynomial of an index; an expression that is not polynomial but the same for every thread of the
        block (`blockIdx.x % 8`, `row[blockIdx.x]`) becomes one opaque uniform variable `{text}`."""
        p = self.an.poly(node)
        if p is None and not self.an.thread_dependent(node):
            p = Poly.var("{" + node.text + "}")
        return p

    # --- accesses ---
    @property
    def accesses(self) -> list[SharedAccess]:
        if self._accesses is None:
            self._accesses = self._collect()
        return self._accesses

    def accesses_of(self, function: Function | None) -> list[SharedAccess]:
        """`[a for a in self.accesses if a.function is function]`, from an index built once."""
        return self._grouped()[0].get(id(function), [])

    def accesses_to(self, array: SharedArray) -> list[SharedAccess]:
        """`[a for a in self.accesses if a.array is array]`, from an index built once."""
        return self._grouped()[1].get(id(array), [])

    def _grouped(self):
        g = getattr(self, "_groups", None)
        if g is None or g[2] is not self.accesses:
            by_fn: dict[int, list[SharedAccess]] = {}
            by_arr: dict[int, list[SharedAccess]] = {}
            for a in self.accesses:
                by_fn.setdefault(id(a.function), []).append(a)
                by_arr.setdefault(id(a.array), []).append(a)
            g = self._groups = (by_fn, by_arr, self.accesses)
        return g

    def _collect(self) -> list[SharedAccess]:
        out = []
        if not self.model.shared:
            return out
        # the candidates in source order, as a walk over all nodes would meet them
        for n in self.model.of_kind("ARRAY_SUBSCRIPT_EXPR", "UNARY_OPERATOR"):
            if n.kind == "ARRAY_SUBSCRIPT_EXPR":
                p = n.parent
                if p is not None and p.kind == "ARRAY_SUBSCRIPT_EXPR" and p.children and p.children[0] is n:
                    continue           # not the outermost subscript of a chain
                if is_array_typed(n):
                    continue           # a row (array-typed) value, not an element
                if _address_only(n):
                    continue           # `&s[i]` builds a pointer; the accesses through it are found there
                subs, base = _chain(n)
                arr = self.array_of(base)
                fn = self.model.function_of(n)
                if arr is not None:
                    out.append(SharedAccess(arr, n, subs, True, Poly(), arr.elem_size, fn,
                                            [self.index_poly(s) for s in subs]))
                    continue
                ptr = self.pointer(base)
                if ptr is not None:
                    out.append(SharedAccess(ptr[0], n, subs, False, ptr[1], n.type_size(), fn,
                                            [self.index_poly(s) for s in subs]))
            elif n.kind == "UNARY_OPERATOR" and n.op == "*" and n.children:
                ptr = self.pointer(n.children[0])
                if ptr is not None:
                    out.append(SharedAccess(ptr[0], n, [], False, ptr[1], n.type_size(),
                                            self.model.function_of(n), []))
        return out

    def uses(self, array: SharedArray) -> list[Node]:
        """Every DECL_REF_EXPR naming the array."""
        return self.references(array.node)

    def references(self, decl: Node) -> list[Node]:
        """Every DECL_REF_EXPR naming the declaration `decl` (indexed once per file)."""
        return self.model.refs_to(decl)

    # --- which free variables of an index are the same for every lane ---
    def lane_uniform(self, name: str, function: Function | None) -> bool:
        """A non-builtin variable of an index polynomial is uniform across a warp when no reference to it in the
        function is thread dependent (loop counters, parameters, accumulated uniform offsets)."""
        if name.startswith(BUILTIN_PREFIXES):
            return not name.startswith("threadIdx.")
        if name.startswith("{"):
            return True            # opaque block-uniform expression (index_poly)
        key = (name, id(function))
        if key in self._var_uniform:
            return self._var_uniform[key]
        root = function.node if function is not None else None
        nodes = self.model.kind_in(root, "DECL_REF_EXPR") if root is not None else \
            self.model.of_kind("DECL_REF_EXPR")
        ok = True
        for n in nodes:
            if n.spelling == name and self.an.thread_dependent(n):
                ok = False
                break
        self._var_uniform[key] = ok
        return ok

    def induction_poly(self, decl: Node | None, function: Function | None) -> Poly | None:
        """`for (int k = threadIdx.x; ...; k += blockDim.x)`: a local whose initialiser is a polynomial and
        whose only writes add lane-uniform amounts is its initial value plus a uniform unknown `k'`."""
        if function is None or function.body is None or decl is None or decl.kind != "VAR_DECL":
            return None
        name = decl.spelling
        exprs = [c for c in decl.children if not c.kind.endswith("_ATTR") and c.kind not in ("TYPE_REF",)]
        if not exprs:
            return None
        init = self.an.poly(exprs[-1])
        if init is None:
            return None
        for n in function.body.walk():
            if n.kind in ("COMPOUND_ASSIGNMENT_OPERATOR", "BINARY_OPERATOR", "UNARY_OPERATOR") and n.children:
                t = strip(n.children[0])
                if not (t.kind == "DECL_REF_EXPR" and t.ref is decl):
                    continue
                if n.kind == "UNARY_OPERATOR":
                    if n.op in ("++", "--", "post++", "post--"):
                        continue
                    if n.op == "&":
                        return None
                    continue
                if n.kind == "BINARY_OPERATOR" and n.op != "=":
                    continue
                if n.op in ("+=", "-=") and len(n.children) == 2 and not self.an.thread_dependent(n.children[1]):
                    continue
                return None
        return init + Poly.var(name + "'")


def _address_only(node: Node) -> bool:
    """`&s[i]` that only computes an address (not the operand of an atomic, which accesses it)."""
    p = node.parent
    while p is not None and p.kind == "PAREN_EXPR":
        p = p.parent
    if p is None or p.kind != "UNARY_OPERATOR" or p.op != "&":
        return False
    q = p.parent
    while q is not None and q.kind in _CASTS:
        q = q.parent
    return not (q is not None and q.kind == "CALL_EXPR" and q.spelling.startswith("atomic"))


def declaration_named(node: Node, name: str) -> Node | None:
    """The declaration a DECL_REF_EXPR called `name` inside `node` refers to."""
    for n in node.walk():
        if n.kind == "DECL_REF_EXPR" and n.spelling == name and n.ref is not None:
            return n.ref
    return None


def _is_pointer_decl(decl: Node) -> bool:
    try:
        return decl.canonical_type.kind.name == "POINTER"
    except Exception:
        return False


def _chain(node: Node) -> tuple[list[Node], Node]:
    """`a[i][j]` -> ([i, j], a)."""
    subs = []
    n = node
    while n.kind == "ARRAY_SUBSCRIPT_EXPR" and len(n.children) == 2:
        subs.append(n.children[1])
        n = n.children[0]
        while n.kind in ("PAREN_EXPR", "UNEXPOSED_EXPR") and n.children:
            n = n.children[-1]
    subs.reverse()
    return subs, n


def substitute(poly: Poly, name: str, value: Poly) -> Poly:
    out = Poly()
    for mono, c in poly.terms.items():
        rest = tuple(v for v in mono if v != name)
        term = Poly({rest: c})
        for _ in range(len(mono) - len(rest)):
            term = term * value
        out = out + term
    return out


def shared_memory(model: FileModel, analysis) -> SharedMemory:
    sm = getattr(model, "_shared_memory", None)
    if sm is None:
        sm = SharedMemory(model, analysis)
        model._shared_memory = sm
    return sm


# --- shared-memory budget of a kernel ---
def callees(model: FileModel, fn: Function) -> list[Function]:
    """`fn` and the functions of this file it calls, transitively."""
    cache = model.__dict__.get("_callees")
    if cache is None or cache[0] != len(model.functions):
        by_node = {id(f.node): f for f in model.functions}
        by_name: dict[str, list[Function]] = {}
        for f in model.functions:
            if f.body is not None:
                by_name.setdefault(f.name, []).append(f)
        cache = model._callees = (len(model.functions), by_node, by_name, {})
    _, by_node, by_name, done = cache
    hit = done.get(id(fn))
    if hit is not None and hit[0] is fn:
        return list(hit[1])
    seen = [fn]
    seen_ids = {id(fn)}
    todo = [fn]
    while todo:
        f = todo.pop()
        if f.body is None:
            continue
        for n in model.kind_in(f.body, "CALL_EXPR"):
            g = by_node.get(id(n.ref)) if n.ref is not None else None
            if g is None or g.body is None:
                cands = [c for c in by_name.get(n.spelling, []) if c.is_device_code]
                g = cands[0] if len(cands) == 1 else g
            if g is not None and g.body is not None and id(g) not in seen_ids:
                seen.append(g)
                seen_ids.add(id(g))
                todo.append(g)
    done[id(fn)] = (fn, seen)
    return list(seen)


class StaticShared(Record):
    """A kernel's static shared memory: total bytes and the arrays."""
    bytes: int                      # sum of the known sizes
    arrays: list[SharedArray]
    unknown: list[SharedArray]      # sizes that do not fold (template-dependent extents)

    def __init__(self, bytes, arrays, unknown):
        self.bytes = bytes
        self.arrays = arrays
        self.unknown = unknown


def kernel_static_shared(model: FileModel, kernel: Function) -> StaticShared:
    """Static `__shared__` bytes of a kernel: the arrays referenced in it or in the device functions it calls in
    this file (their own arrays and file-scope ones). Unreferenced arrays are left out (the compiler drops them);
    `extern __shared__` arrays are dynamic and not counted."""
    cache = model.__dict__.setdefault("_static_shared", {})
    hit = cache.get(id(kernel))
    if hit is not None and hit[0] is kernel:
        st = hit[1]
        return StaticShared(st.bytes, list(st.arrays), list(st.unknown))
    if not model.shared:
        st = StaticShared(0, [], [])
    else:
        funcs = callees(model, kernel)
        ids = {id(f) for f in funcs}
        used = set()
        for f in funcs:
            if f.body is None:
                continue
            for n in model.kind_in(f.body, "DECL_REF_EXPR"):
                if n.ref is not None:
                    used.add(id(n.ref))
        # the arrays among the referenced declarations, in model.shared order (without a scan of all the
        # file's arrays per kernel: files with thousands of kernels stay linear)
        pos = model.__dict__.get("_shared_pos")
        if pos is None or pos[0] != len(model.shared):
            pos = model._shared_pos = (len(model.shared), {id(s.node): i for i, s in enumerate(model.shared)})
        picked = sorted(pos[1][u] for u in used if u in pos[1])
        arrays = [s for s in (model.shared[i] for i in picked) if not s.extern
                  and (s.function is None or id(s.function) in ids)]
        known = [s for s in arrays if s.size_bytes is not None]
        st = StaticShared(sum(s.size_bytes for s in known), arrays, [s for s in arrays if s.size_bytes is None])
    cache[id(kernel)] = (kernel, st)
    return StaticShared(st.bytes, list(st.arrays), list(st.unknown))


def kernels_using(model: FileModel, arr: SharedArray) -> list[Function]:
    """The kernels whose static `__shared__` arrays (kernel_static_shared) include `arr`, in model.kernels order.
    One index per model instead of a scan of every kernel per array: files with thousands of kernels stay linear.
    Keyed by the array's node: equal SharedArrays have the same node (Node compares by identity)."""
    idx = model.__dict__.get("_kernels_using")
    if idx is None:
        idx = {}
        for k in model.kernels:
            for s in kernel_static_shared(model, k).arrays:
                lst = idx.setdefault(id(s.node), [])
                if not lst or lst[-1] is not k:
                    lst.append(k)
        model._kernels_using = idx
    return [k for k in idx.get(id(arr.node), ()) if arr in kernel_static_shared(model, k).arrays]


def as_int(v) -> int | None:
    if isinstance(v, bool):
        return None
    if isinstance(v, int):
        return v
    if isinstance(v, Fraction) and v.denominator == 1:
        return int(v)
    return None
