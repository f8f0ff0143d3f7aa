"""Pointers as (root, offset): a pointer the target cannot keep (GLSL) becomes the buffer or array it points
into plus an element offset; roots, bindings, offsets and dereferences."""
from __future__ import annotations

import math
from dataclasses import dataclass, replace
from porter.translate.kernel import ctype as ct
from porter.translate.kernel import induction, private_views, refs, struct_views
from porter.translate.kernel.ctype import CType, I32
from porter.translate.kernel.target import BINARY_PREC, E, PREC_ASSIGN, PREC_COND, PREC_PRIMARY, TranslationError
from porter.translate.kernel.typeinfo import CASTS, NON_EXPR, element, ptrlike

NULLS = ("CXX_NULL_PTR_LITERAL_EXPR", "GNU_NULL_EXPR")
# GLSL: the element offset of a null pointer; no pointer CUDA defines (an element of its array, or one past
# its end) has a negative offset, so no valid pointer has this one
NULL_OFFSET = "(-2147483647 - 1)"


@dataclass
class Root:
    """Where a pointer points: a storage buffer (kernel pointer parameter), a shared array, a local array,
    a constant array, a local scalar (&x), or an array parameter of a specialised device function."""
    name: str
    kind: str                  # buffer | shared | local | constant | scalar | param_array
    elem: CType                # element type
    space: str                 # global | local | private | constant
    decl: object = None
    dims: tuple = ()
    of: str | None = None      # a typed view (GLSL): the buffer whose binding it aliases
    flat: bool = False         # a multi-dimensional array seen as its flattened elements (a row pointer `a[i]`)

    @property
    def key(self):
        return (self.kind, self.name)
@dataclass
class PtrBinding:
    root: Root
    off: E | None              # fixed offset expression (alias) or the offset variable


class PointersMixin:
    # ------------------------------------------------------------------ pointers
    def root_of_decl(self, decl, at=None) -> Root | None:
        """Root for an array declaration (shared, local, constant); `at`: the use (where a refusal points)."""
        t = self.decl_type(decl)
        if t.kind != "array":
            return None
        if any(c.kind == "CUDASHARED_ATTR" for c in decl.children):
            if self.name_of(decl) not in self.shared:
                self.shared_decl(decl)
            name = self.name_of(decl)
            return Root(name, "shared", element(t) if len(t.dims) == 1 else ct.array(t.elem, t.dims[1:]),
                        "local", decl, t.dims)
        if self.is_device_global(decl):
            return self.buffers[self.device_global(decl, at or decl)]["root"]
        if self.model.function_of(decl) is None:
            e = self.global_var_ref(decl)
            return Root(e, "constant", element(t) if len(t.dims) == 1 else ct.array(t.elem, t.dims[1:]),
                        "constant", decl, t.dims)
        return Root(self.name_of(decl), "local", element(t) if len(t.dims) == 1 else ct.array(t.elem, t.dims[1:]),
                    "private", decl, t.dims)

    def global_var_ref(self, decl, at=None) -> str:
        if self.is_device_global(decl):
            return self.device_global(decl, at or decl)
        t = self.decl_type(decl)
        is_const = any(c.kind == "CUDACONSTANT_ATTR" for c in decl.children) or t.const or \
            (t.kind == "array" and t.elem.const)
        init = self.init_of(decl)
        if not (is_const and init is not None):
            self.fail(decl, f"file-scope device variable `{decl.spelling}`")
        name = self.t.ident(decl.spelling)
        if name not in self.const_arrays:
            self.const_arrays[name] = ""
            tt = ct.array(t.elem.unqualified(), t.dims)
            val = self.aggregate(init, tt)
            self.const_arrays[name] = self.t.global_const(self, tt, name, val.text)
        return name

    def is_null(self, n) -> bool:
        """n is a null pointer constant (`nullptr`, `NULL`, `0`, through parentheses and casts)."""
        s = n
        while True:
            kids = [c for c in s.children if c.kind not in NON_EXPR]
            if s.kind in ("PAREN_EXPR", "UNEXPOSED_EXPR") + CASTS and kids:
                s = kids[-1]
                continue
            if s.kind in NULLS:
                return True
            return s.kind == "INTEGER_LITERAL" and self._literal(s) == 0

    def null_offset(self) -> E:
        return E(NULL_OFFSET, I32, PREC_PRIMARY)

    def null_test(self, n, is_null: bool) -> E:
        """`p == nullptr` (is_null) or `p != nullptr`, `if (p)`: CUDA's answer. GLSL: a pointer is null when its
        offset is NULL_OFFSET, or when it points into a kernel buffer parameter the host passed as null: the
        manifest requires that one not null (a pointer derived from a null one is null only at offset 0, and no
        binding tells it apart)."""
        op = "==" if is_null else "!="
        p = BINARY_PREC[op]
        if self.t.native_pointers:
            e = self.t.native(self, n)
            return E(f"{e.paren(p)} {op} 0", ct.BOOL, p)
        s = n.strip
        b = self.frame.ptrs.get(id(s.ref)) if s.kind == "DECL_REF_EXPR" and s.ref is not None else None
        root, off = (b.root, b.off) if b is not None else self.ptr(n)
        if root is not None and root.kind == "buffer_field":
            self.fail(n, f"comparing `{n.text}` with a null pointer (a field of a buffer element)")
        if root is not None and root.kind == "buffer":
            info = self.buffers.get(root.of or root.name)
            for prm in self.params:
                if prm["kind"] == "buffer" and prm["info"] is info:
                    self.not_null.setdefault(prm["name"], n)
        if off is None or off.lit is not None:
            return E("false" if is_null else "true", ct.BOOL, lit=not is_null)
        return E(f"{off.paren(p)} {op} {NULL_OFFSET}", ct.BOOL, p)

    def ptr(self, n):
        """Resolve a pointer-valued expression to (root, offset E or None)."""
        if self.is_null(n):
            self.fail(n, "a null pointer (only a pointer variable, a choice with `?:` and a comparison may be "
                         "null: nothing else tells which array it stands for)")
        s = n
        while s.kind == "PAREN_EXPR" or (s.kind in CASTS and self.ty(s).kind == "pointer"):
            inner = [c for c in s.children if c.kind not in NON_EXPR]
            if s.kind in CASTS:
                if not ptrlike(self.ty(inner[-1])):
                    self.fail(s, f"a pointer cast `{s.text}` (reinterpreting memory)")
                # compared with what the memory holds, not the operand's static type: `(T *)voidp` is no view
                new = element(self.ty(s))
                root, off = self.ptr(inner[-1])
                if new.kind == "void" or root.elem.unqualified() == new.unqualified():
                    return root, off
                return self.view(s, inner[-1], root, off, new)
            s = inner[-1]
        k = s.kind
        fr = self.frame
        if k == "UNEXPOSED_EXPR" and len(s.children) == 1:
            return self.ptr(s.children[0])
        if k == "MEMBER_REF_EXPR":
            flat = self.flat_field(s)
            if flat is not None:
                return self.t.binding_value(self, flat[1])
            space = self._field_space(s) if self.t.native_pointers and self.ty(s).kind == "array" else None
            if space is not None:
                # an array field decayed (`f(r->n)`): C keeps the pointer, in the space of the element it is in
                t = self.ty(s)
                return Root(self.x(s).text, "field_array", element(t) if len(t.dims) == 1 else
                            ct.array(t.elem, t.dims[1:]), space), None
        if k == "DECL_REF_EXPR":
            r = s.ref
            if r is None:
                self.fail(s, f"pointer `{s.spelling}` declared outside this file")
            b = fr.ptrs.get(id(r))
            if b is not None:
                if b.root is None:
                    self.fail(s, f"the pointer `{s.spelling}` used before a value is assigned to it")
                return self.t.binding_value(self, b)
            root = self.root_of_decl(r, s)
            if root is not None:
                return root, None
            self.fail(s, f"pointer `{s.spelling}` whose target is unknown")
        if k == "BINARY_OPERATOR" and s.op in ("+", "-"):
            a_n, b_n = s.children
            if ptrlike(self.ty(a_n)):
                root, off = self.ptr(a_n)
                d = self.x(b_n)
                return root, self.add_offset(off, d, s.op)
            if s.op == "+" and ptrlike(self.ty(b_n)):
                root, off = self.ptr(b_n)
                return root, self.add_offset(off, self.x(a_n), "+")
        if k == "UNARY_OPERATOR" and s.op == "&":
            c = s.children[0].strip
            if c.kind == "ARRAY_SUBSCRIPT_EXPR":
                base_n, idx_n = c.children
                bt = self.ty(base_n)
                if ptrlike(bt) and (bt.kind == "pointer" or len(bt.dims) == 1 or self._decays_to_root(base_n)):
                    root, off = self.ptr(base_n)
                    return root, self.add_offset(off, self.x(idx_n), "+")
                if bt.kind == "array":
                    self.fail(s, f"a pointer into the multi-dimensional array `{base_n.text}`")
            if c.kind == "UNARY_OPERATOR" and c.op == "*":
                return self.ptr(c.children[0])
            if c.kind == "DECL_REF_EXPR" and c.ref is not None:
                r = c.ref
                t = self.decl_type(r)
                if refs.bound(self, r):
                    self.fail(s, f"the address of the reference `{r.spelling}`")
                if self.is_device_global(r) and t.kind != "array":
                    return self.buffers[self.device_global(r, c)]["root"], None
                if r.kind == "VAR_DECL" and self.model.function_of(r) is None:
                    # not a private scalar: one variable of the whole device, which no binding carries yet
                    self.fail(s, f"the address of the file-scope device variable `{r.spelling}` (file-scope "
                                 "`__device__` variables are not translated)")
                if t.kind in ("scalar", "vector", "struct"):
                    if any(x.kind == "CUDASHARED_ATTR" for x in r.children):
                        if self.name_of(r) not in self.shared:
                            self.shared_decl(r)
                        return Root(self.name_of(r), "shared_scalar", t.unqualified(), "local", r), None
                    return Root(self.name_of(r), "scalar", t.unqualified(), "private", r), None
            if c.kind == "MEMBER_REF_EXPR":
                lv = self.x(c, "rw")
                base = self._member_base_root(c)
                if base is not None and base.space in ("global", "local"):
                    # a field of a buffer or shared element (`&table[i].key`): atomics address it in place
                    kind = "buffer_field" if base.space == "global" else "shared_scalar"
                    return Root(lv.text, kind, self.ty(c).unqualified(), base.space, None), None
                return Root(lv.text, "scalar", self.ty(c).unqualified(), "private", None), None
            self.fail(s, f"the address `{s.text}`")
        if k == "UNARY_OPERATOR" and s.op in ("++", "--", "post++", "post--"):
            return self.t.pointer_step_value(self, s)
        if k == "CONDITIONAL_OPERATOR":
            c_n, a_n, b_n = s.children
            na, nb = self.is_null(a_n), self.is_null(b_n)
            if na or nb:
                # `c ? d + k : nullptr`: where the other one points, at the null offset when it is chosen
                root, off = self.ptr(b_n if na else a_n)
                c = self.cond(c_n)
                off = self.conv(off, I32) if off is not None else E(self.t.literal(0, I32, self), I32, lit=0)
                oa, ob = (self.null_offset(), off) if na else (off, self.null_offset())
                return root, E(f"{c.paren(PREC_COND - 1)} ? {oa.paren(PREC_ASSIGN)} : {ob.paren(PREC_COND)}", I32,
                               PREC_COND)
            ra, oa = self.ptr(a_n)
            rb, ob = self.ptr(b_n)
            if ra.key != rb.key:
                self.fail(s, f"`{s.text}` selects between pointers into different arrays")
            c = self.cond(c_n)
            z = E(self.t.literal(0, I32, self), I32, lit=0)
            oa, ob = oa or z, ob or z
            t = ct.common(oa.ct, ob.ct)
            oa, ob = self.conv(oa, t), self.conv(ob, t)
            return ra, E(f"{c.paren(PREC_COND - 1)} ? {oa.paren(PREC_ASSIGN)} : {ob.paren(PREC_COND)}", t, PREC_COND)
        if k == "ARRAY_SUBSCRIPT_EXPR":
            return self.row_ptr(s)
        if k == "CALL_EXPR":
            from porter.translate.kernel.class_templates import dependent_operator
            view = dependent_operator(self, s)      # `(T *)p + k` kept as an unresolved operator call
            if view is not None and view.kind == "BINARY_OPERATOR":
                return self.ptr(view)
            fn = self._callee_fn(s)
            if fn is not None and fn.body is not None and not fn.is_kernel and fn.node.kind != "CXX_METHOD":
                from porter.translate.kernel import returned_pointers
                return returned_pointers.call(self, fn, s)    # the offset it returns (returned_pointers.py)
            self.fail(s, f"a pointer returned by `{self.callee_name(s)}`")
        if k in ("INTEGER_LITERAL", "CXX_NULL_PTR_LITERAL_EXPR", "GNU_NULL_EXPR"):
            self.fail(s, "a null pointer")
        self.fail(s, f"the pointer expression `{s.text}`")

    # ------------------------------------------------------------------ pointers declared without a value
    def pending_pointer(self, d, placeholder: str, off=None):
        """`T *p;`: bound by its first assignment (in emission order: a use before it is refused), every later
        one checked against it by the target; `placeholder` in the emitted lines stands for what the binding
        decides (OpenCL: the pointer's type with its address space)."""
        if id(d) not in self.an.assigned:
            self.fail(d, f"the uninitialised pointer `{d.spelling}`")
        self.frame.ptrs[id(d)] = PtrBinding(None, off)
        self.frame.pending[id(d)] = (d, placeholder, None)

    def bind_pending(self, a_n, root: Root, text: str = "") -> PtrBinding | None:
        """The first assignment `p = ...` of a pending pointer p: bind it to `root`; None when a_n is not one."""
        s = a_n.strip
        if s.kind != "DECL_REF_EXPR" or s.ref is None:
            return None
        b = self.frame.ptrs.get(id(s.ref))
        if b is None or b.root is not None:
            return None
        d, placeholder, _ = self.frame.pending[id(s.ref)]
        b.root = root
        self.frame.pending[id(s.ref)] = (d, placeholder, text)
        return b

    def resolve_pending(self, fr):
        """End of a function: the pointers declared without a value get what their first assignment decided."""
        for d, placeholder, text in fr.pending.values():
            if text is None:
                self.fail(d, f"the uninitialised pointer `{d.spelling}` (no assignment to it is translated)")
            self.lines[:] = [ln.replace(placeholder, text) for ln in self.lines]
            if fr.is_kernel and hasattr(self, "local_decls"):     # an OpenCL `__local` pointer (kernel scope)
                self.local_decls[:] = [ln.replace(placeholder, text) for ln in self.local_decls]

    def row_ptr(self, s):
        """`a[i]` of a multi-dimensional array, decayed to a pointer to its first element: the array flattened
        (C lays rows out contiguously) at element offset i * (elements per row)."""
        base_n, idx_n = s.children
        t, bt = self.ty(s), self.ty(base_n)
        if t.kind != "array" or bt.kind != "array" or any(d is None for d in t.dims):
            self.fail(s, f"a pointer into a multi-dimensional array `{s.text}`")
        root, off = self.ptr(base_n)
        if not root.flat:
            if root.elem.kind != "array" or root.kind not in ("shared", "local", "constant", "param_array") or \
                    any(d is None for d in root.dims):
                self.fail(s, f"a pointer into a multi-dimensional array `{s.text}`")
            if off is not None:      # off counts rows of the root (an array parameter bound to `a + k`)
                off = self._scaled(off, math.prod(root.elem.dims))
            root = replace(root, elem=root.elem.elem, flat=True)
        return root, self.add_offset(off, self._scaled(self.x(idx_n), math.prod(t.dims)), "+")

    def _scaled(self, e: E, k: int) -> E:
        if k == 1:
            return e
        dt = ct.promote(e.ct)
        if isinstance(e.lit, int) and not isinstance(e.lit, bool):
            return E(self.t.literal(e.lit * k, dt, self), dt, lit=e.lit * k)
        return self.binary_value("*", self.conv(e, dt), E(self.t.literal(k, dt, self), dt, lit=k), None)

    # ------------------------------------------------------------------ reinterpreting casts
    def view(self, s, inner_n, root: Root, off, new: CType):
        """`(T *)p` where p points at memory of another element type: OpenCL casts the pointer itself; GLSL
        declares a typed view of the same storage buffer binding and converts the element offset."""
        old, new = root.elem.unqualified(), new.unqualified()
        if not self.t.native_pointers and root.kind != "buffer":
            self.fail(s, f"a pointer cast `{s.text}` (reinterpreting {root.space} memory: GLSL can give another "
                         "element type only to a storage buffer)")
        while old.kind == "array" and self.t.native_pointers:
            old = old.elem         # `(float *)tile` of `float tile[32][33]`: C flattens it
        # a struct of k `old` scalars over a buffer of them (struct_views.py): the same bytes in both targets
        flat = struct_views.over_scalars(self, s, old, new) if root.space in ("global", "constant") and \
            not (old.kind == "scalar" and old.name == "f16") else None
        if flat:
            self.use_struct(new.name, s)
        for t in (old, new):
            if flat and t is new:
                continue
            why = None
            if t.kind == "struct":
                why = "between unrelated struct layouts" if old.kind == new.kind == "struct" else f"of `{t}`"
            elif t.kind not in ("scalar", "vector") or (t.kind == "scalar" and t.is_bool):
                why = f"of `{t}`"
            elif t.kind == "vector" and t.n == 3 and not (
                    # OpenCL: three elements of a buffer of the vector's scalar, read and written as CUDA's
                    # packed layout (opencl_vec3.py: a global place of the 3-vector type is packed)
                    self.t.native_pointers and root.space == "global" and t is new and
                    old.kind == "scalar" and new.elem.unqualified() == old):
                why = f"as `{t}`, a 3-vector whose size differs between CUDA and the target"
            if why:
                self.fail(s, f"a pointer cast `{s.text}` (reinterpreting memory {why})")
        if self.t.native_pointers:
            from porter.translate.kernel import halfprec
            if root.space not in ("global", "constant") and (halfprec.is_half(old) or halfprec.is_half(new)):
                # OpenCL keeps halves in buffers only (vload_half / vstore_half): a private or local half value is
                # a float, so a cast between halves and other types there would reinterpret the wrong bytes
                self.fail(s, f"a pointer cast `{s.text}` (reinterpreting {root.space} memory as or from halves: "
                             "OpenCL computes halves in float registers, their bytes are not CUDA's)")
            extern = root.kind == "shared" and (self.shared.get(root.name) or {}).get("extern")
            if root.space in ("private", "local") and not extern and ct.c_size(new) > ct.c_size(old):
                # buffers (and dynamic __local arguments) are allocated aligned; an array declared of `old` is
                # aligned for `old` only
                self.fail(s, f"a pointer cast `{s.text}` (reinterpreting {root.space} memory as `{ct.spell(new)}`: "
                             f"the array is declared of `{ct.spell(old)}` and aligned for it only)")
            return replace(root, elem=new), off      # same root: accesses still mark the kernel parameter
        so, sn = ct.c_size(old), (flat * ct.c_size(old) if flat else ct.c_size(new))
        if off is not None and so != sn:
            dt = ct.promote(off.ct)
            if so % sn == 0:
                r = so // sn
                off = self.binary_value("*", off, E(self.t.literal(r, dt, self), dt, lit=r), None)
            elif sn % so == 0:
                r = sn // so
                if not (isinstance(off.lit, int) and off.lit % r == 0) and not self._aligned(inner_n, r):
                    self.fail(s, f"a pointer cast `{s.text}` (reinterpreting memory at an offset not provably a "
                                 f"multiple of `{new}`'s {sn} bytes)")
                if isinstance(off.lit, int):
                    off = E(self.t.literal(off.lit // r, dt, self), dt, lit=off.lit // r)
                else:    # exact: the offset is a multiple of r
                    off = self.binary_value("/", off, E(self.t.literal(r, dt, self), dt, lit=r), None)
            else:
                self.fail(s, f"a pointer cast `{s.text}` (reinterpreting `{old}` as `{new}`: neither size divides "
                             "the other)")
        elif so != sn and so % sn and sn % so:
            self.fail(s, f"a pointer cast `{s.text}` (reinterpreting `{old}` as `{new}`: neither size divides "
                         "the other)")
        base = root.of or root.name
        info = self.buffers.get(base)
        if info is not None and info["elem"].unqualified() == new:
            return info["root"], off     # a view cast back to the buffer's own type: the buffer itself
        return self.typed_view(base, new, s, root.decl), off

    def typed_view(self, base: str, new: CType, node, decl=None) -> Root:
        """GLSL: the storage buffer `base` seen with element type `new` (declared at its binding by end_kernel)."""
        views = self.__dict__.setdefault("buffer_views", {})    # (buffer, element type) -> view name
        key = (base, ct.spell(new))
        if key not in views:
            # `out_` (renamed) + float4 -> `out_vec4`: no `__` (reserved in GLSL)
            # (named without `self`: a view never dereferenced, `(uchar *)p + pitch`, needs no 8-bit types)
            views[key] = (self.fresh(f"{base.rstrip('_')}_{self.t.type_name(new)}"), new, node)
        if decl is None:
            decl = self.buffers[base]["root"].decl
        return Root(views[key][0], "buffer", new, "global", decl, (), base)

    def _aligned(self, n, m: int, depth: int = 0) -> bool:
        """The pointer expression `n` provably points at an element index that is a multiple of m (in units
        of its own element type) from the start of its buffer."""
        if m == 1:
            return True
        if depth > 12:
            return False
        s = n          # not .strip: a C-style cast changes the unit of the offset (handled below)
        while s.kind in ("PAREN_EXPR", "UNEXPOSED_EXPR") and len([c for c in s.children if c.kind not in NON_EXPR]) == 1:
            s = [c for c in s.children if c.kind not in NON_EXPR][0]
        if s.kind in CASTS:
            p = [c for c in s.children if c.kind not in NON_EXPR][-1]
            st, sp = element(self.ty(s)), element(self.ty(p)) if ptrlike(self.ty(p)) else None
            a, b = ct.c_size(st.unqualified()) if st.kind in ("scalar", "vector") else None, \
                ct.c_size(sp.unqualified()) if sp is not None and sp.kind in ("scalar", "vector") else None
            if not a or not b:
                return False
            return self._aligned(p, m * a // math.gcd(m * a, b), depth + 1)
        if s.kind == "DECL_REF_EXPR" and s.ref is not None:
            r = s.ref
            b = self.frame.ptrs.get(id(r))
            if r.kind == "PARM_DECL" and b is not None and b.off is None and b.root is not None and \
                    b.root.kind == "buffer" and \
                    b.root.decl is r:
                return True                  # a kernel buffer parameter never re-pointed
            if r.kind == "VAR_DECL" and id(r) not in self.an.assigned:
                init = self.init_of(r)
                return init is not None and self._aligned(init, m, depth + 1)
            return False
        if s.kind == "UNARY_OPERATOR" and s.op == "&" and s.children and \
                s.children[0].strip.kind == "ARRAY_SUBSCRIPT_EXPR":
            base_n, idx_n = s.children[0].strip.children       # `&p[i]` is `p + i`
            if self.ty(base_n).kind == "pointer":
                return self._aligned(base_n, m, depth + 1) and self._multiple(idx_n, m, depth + 1)
        if s.kind == "BINARY_OPERATOR" and s.op in ("+", "-"):
            a_n, b_n = s.children
            if ptrlike(self.ty(a_n)):
                return self._aligned(a_n, m, depth + 1) and self._multiple(b_n, m, depth + 1)
            if s.op == "+" and ptrlike(self.ty(b_n)):
                return self._aligned(b_n, m, depth + 1) and self._multiple(a_n, m, depth + 1)
        return False

    def _multiple(self, n, m: int, depth: int = 0) -> bool:
        """The integer expression `n` is provably a multiple of m, possibly under requirements on parameters
        (kept only when the proof succeeds): a kernel parameter becomes a launch contract in the manifest, a
        device function parameter a demand every call's argument must meet (calls.user_call)."""
        req = self._multiple_req(n, m, depth)
        if req is None:
            return False
        for kind, decl, k, node in req:
            if kind == "kernel":
                old = self.contracts.get(decl.spelling)
                self.contracts[decl.spelling] = (math.lcm(k, old[0]) if old else k, old[1] if old else node)
            else:
                d = self.frame.__dict__.setdefault("demands", {})
                d[id(decl)] = math.lcm(k, d.get(id(decl), 1))
        return True

    def _multiple_req(self, n, m: int, depth: int = 0):   # noqa: C901 (one case per expression kind)
        """None, or the requirements (kind, parameter, multiple, node) under which n is a multiple of m."""
        if depth > 16:
            return None
        s = n.strip
        kids = [c for c in s.children if c.kind not in NON_EXPR]
        if s.kind in ("PAREN_EXPR", "UNEXPOSED_EXPR") + CASTS and len(kids) >= 1 and s.kind != "INTEGER_LITERAL":
            if s.kind in CASTS and not self.ty(s).is_int:
                return None
            return self._multiple_req(kids[-1], m, depth + 1)
        if s.kind == "BINARY_OPERATOR":
            a_n, b_n = s.children
            if s.op == "*":
                # a proof without requirements first: `4 * pitch` needs nothing of pitch
                ra, rb = self._multiple_req(a_n, m, depth + 1), self._multiple_req(b_n, m, depth + 1)
                got = [r for r in (ra, rb) if r is not None]
                return min(got, key=len) if got else None
            if s.op in ("+", "-"):
                ra = self._multiple_req(a_n, m, depth + 1)
                rb = self._multiple_req(b_n, m, depth + 1) if ra is not None else None
                return ra + rb if rb is not None else None
            if s.op == "<<":
                k = self._literal(b_n)
                if k is not None and 0 <= k < 63 and (1 << k) % m == 0:
                    return []
                return self._multiple_req(a_n, m, depth + 1)
            return None
        if s.kind == "DECL_REF_EXPR" and s.ref is not None:
            r = s.ref
            if r.kind == "VAR_DECL" and id(r) not in self.an.assigned and self.model.function_of(r) is not None \
                    and induction.only_read(self, r):          # not through a reference (`bump(m)`) either
                init = self.init_of(r)
                if init is not None:
                    got = self._multiple_req(init, m, depth + 1)
                    if got is not None:
                        return got
            if r.kind == "VAR_DECL" and id(r) in self.an.assigned and self.model.function_of(r) is not None:
                # a counter: each value it is given a multiple (`m = start; ...; m += step`)
                got = induction.multiple_req(self, r, m, depth, lambda e: self._multiple_req(e, m, depth + 1))
                if got is not None:
                    return got
            t = self.decl_type(r) if r.kind == "PARM_DECL" else None
            if t is not None and t.kind == "scalar" and t.is_int and id(r) not in self.an.assigned and \
                    (not self.t.native_pointers or self.__dict__.get("_param_contracts")):    # half2_atomics
                if any(p.node is r for p in self.fn.params):
                    return [("kernel", r, m, n)]
                if not self.frame.is_kernel and any(p.node is r for p in self.frame.fn.params):
                    return [("param", r, m, n)]
        v = self._literal(s)
        return [] if v is not None and v % m == 0 else None

    def _literal(self, n):
        """The integer value of a constant expression (literal, macro, template parameter), else None."""
        if n.kind not in ("INTEGER_LITERAL", "DECL_REF_EXPR", "CXX_UNARY_EXPR", "PAREN_EXPR", "UNEXPOSED_EXPR"):
            return None
        if n.kind == "DECL_REF_EXPR" and n.ref_kind in ("TEMPLATE_NON_TYPE_PARAMETER", "NON_TYPE_TEMPLATE_PARAMETER"):
            v = (self.frame.subst if self.frame else self.kernel_subst).get(n.spelling)   # GLSL names it: its value
            if isinstance(v, int) and not isinstance(v, bool):
                return v
        try:
            e = self.x(n)
        except TranslationError:
            return None
        return e.lit if isinstance(e.lit, int) and not isinstance(e.lit, bool) else None

    def pointer_compare(self, n, op, a_n, b_n) -> E:
        """`p != end`: C (OpenCL) compares pointers into one array; GLSL has no pointer values. `d_out == d_in`
        of two kernel pointer parameters (an in-place check): the host knows whether it bound the same memory
        to both, so the answer is a launch input (target.same_memory); the two are then never `restrict`."""
        if op in ("==", "!=") and (self.is_null(a_n) or self.is_null(b_n)):
            if self.is_null(a_n) and self.is_null(b_n):
                self.fail(n, f"a comparison of two null pointers `{n.text}`")
            return self.null_test(b_n if self.is_null(a_n) else a_n, op == "==")
        pa, pb = self._param_buffer(a_n), self._param_buffer(b_n)
        if pa is not None and pb is not None and pa is not pb and op in ("==", "!="):
            order = [p["info"] for p in self.params if p["kind"] == "buffer"]
            pa, pb = sorted((pa, pb), key=lambda i: next(k for k, x in enumerate(order) if x is i))
            flag = f"cuport_same_{pa['name']}_{pb['name']}"
            self.same_memory.setdefault(flag, (pa, pb))
            return self.t.same_memory(self, n, op, flag, a_n, b_n)
        if not self.t.native_pointers or not (ptrlike(self.ty(a_n)) and ptrlike(self.ty(b_n))):
            self.fail(n, f"a pointer comparison `{n.text}` (only `==` / `!=` of two pointer parameters of the "
                         "kernel itself, without offsets, become a launch input)")
        ra, rb = self.ptr(a_n)[0], self.ptr(b_n)[0]
        if ra.key != rb.key or ra.space != rb.space:
            self.fail(n, f"a pointer comparison `{n.text}` between different arrays (only `==` / `!=` of two "
                         "pointer parameters of the kernel itself, without offsets, compare there)")
        a, b = self.t.native(self, a_n), self.t.native(self, b_n)
        p = BINARY_PREC[op]
        return E(f"{a.paren(p)} {op} {b.paren(p - 1)}", ct.BOOL, p)

    def _param_buffer(self, n) -> dict | None:
        """The buffer info of a kernel pointer parameter named as it is (`d_in`, `(const T *)d_in`), never
        re-pointed; None for anything else (an offset `p + k`, a local pointer, a device function's parameter)."""
        s = n
        while s.kind in ("PAREN_EXPR", "CSTYLE_CAST_EXPR", "CXX_STATIC_CAST_EXPR", "CXX_CONST_CAST_EXPR",
                         "CXX_REINTERPRET_CAST_EXPR", "UNEXPOSED_EXPR") and s.children:
            s = [c for c in s.children if c.kind not in NON_EXPR][-1]
        if s.kind != "DECL_REF_EXPR" or s.ref is None or s.ref.kind != "PARM_DECL" or not self.frame.is_kernel:
            return None
        if id(s.ref) in self.an.assigned or not any(p.node is s.ref for p in self.fn.params):
            return None
        return next((p["info"] for p in self.params if p["kind"] == "buffer" and p["info"]["node"] is s.ref), None)

    def _member_base_root(self, c) -> Root | None:
        """The root of the element whose field `c` names (`p[i].f`, `p->f`, `p[i].a.b`), or None."""
        s = c
        while s.kind == "MEMBER_REF_EXPR" and s.children:
            b = s.children[0].strip
            if "->" in self.model.source.slice(b.end, s.end):
                return self._try_root(b)
            s = b
        if s.kind == "ARRAY_SUBSCRIPT_EXPR" and ptrlike(self.ty(s.children[0])):
            return self._try_root(s.children[0])
        return None

    def _field_space(self, c) -> str | None:
        """The address space of the struct whose field `c` names: where the pointer it is reached through points
        (`r->n`, `p[i].n`), private for a local or by-value parameter struct (`s.n`); None otherwise."""
        base = self._member_base_root(c)
        if base is not None:
            return base.space
        s = c
        while s.kind == "MEMBER_REF_EXPR" and s.children:
            s = s.children[0].strip
        while s.kind == "ARRAY_SUBSCRIPT_EXPR" and self.ty(s.children[0]).kind == "array":
            s = s.children[0].strip
        r = s.ref if s.kind == "DECL_REF_EXPR" else None
        if r is None or r.kind not in ("VAR_DECL", "PARM_DECL") or self.model.function_of(r) is None or \
                any(x.kind == "CUDASHARED_ATTR" for x in r.children) or refs.bound(self, r) or \
                self.decl_type(r).kind not in ("struct", "array"):
            return None
        return "private"

    def _try_root(self, n) -> Root | None:
        try:
            return self.ptr(n)[0]
        except TranslationError:
            return None

    def _root_for_expr(self, n) -> Root:
        s = n.strip
        while s.kind == "ARRAY_SUBSCRIPT_EXPR":
            s = s.children[0].strip
        if s.kind == "DECL_REF_EXPR" and s.ref is not None:
            r = self.root_of_decl(s.ref, s)
            if r is not None:
                return r
        self.fail(n, f"the array `{n.text}`")

    def add_offset(self, off: E | None, d: E, op: str) -> E:
        dt = ct.promote(d.ct)
        if not dt.is_int:
            self.fail(None, f"pointer arithmetic with `{dt}`")
        d = self.conv(d, dt)
        if off is None:
            if op == "-":
                return self.binary_value("-", E(self.t.literal(0, dt, self), dt, lit=0), d, None)
            return d
        return self.binary_value(op, off, d, None)

    def ptr_index(self, base_n, idx_n, mode) -> str:
        """`p[i]` for a pointer p."""
        v = private_views.match(self, base_n)       # `((int4 *)priv)[i]`: read lane by lane
        if v is not None:
            if mode != "r":
                private_views.refuse_change(self, base_n.parent or base_n)
            return private_views.load(self, v, self.x(idx_n), base_n.parent or base_n)
        root, off = self.ptr(base_n)
        self._flat_pure(root, base_n, idx_n)
        i = self.x(idx_n)
        return self.t.deref(self, root, off, i, mode, base_n)

    def _flat_pure(self, root, *ns):
        """GLSL spells an element of a flattened array with its offset once per dimension: it must have no
        side effects."""
        if root.flat and not self.t.native_pointers:
            for n in ns:
                if not self._pure(n):
                    self.fail(n, f"`{n.text}` (an index with side effects through a pointer into a multi-dimensional"
                                 " array)")

    def ptr_lvalue(self, n, mode, deref=True) -> str:
        """`*p` (deref) for a pointer-valued expression n."""
        v = private_views.match(self, n)            # `*(int4 *)priv`: read lane by lane
        if v is not None:
            if mode != "r":
                private_views.refuse_change(self, n.parent or n)
            return private_views.load(self, v, None, n.parent or n)
        root, off = self.ptr(n)
        self._flat_pure(root, n)
        return self.t.deref(self, root, off, None, mode, n)

