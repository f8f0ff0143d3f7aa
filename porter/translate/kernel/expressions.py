"""Expressions: literals, names, members, subscripts, operators with C's conversions and precedence,
casts and constructors; each returns an E (target text, C type, precedence)."""
from __future__ import annotations

import math
import re
from porter.translate import warp_sizing
from porter.translate.kernel import array_pointers
from porter.translate.kernel import ctype as ct
from porter.translate.kernel import device_globals
from porter.translate.kernel import halfprec
from porter.translate.kernel import methods
from porter.translate.kernel import private_views
from porter.translate.kernel import refs
from porter.translate.kernel import struct_params
from porter.translate.kernel import traits
from porter.translate.kernel import warp32
from porter.translate.kernel.ctype import BOOL, I32, U32, U64
from porter.translate.kernel.target import (BINARY_PREC, PREC_ASSIGN, PREC_COMMA, PREC_COND, PREC_PRIMARY,
                                            PREC_UNARY, E, wrap)
from porter.translate.kernel.typeinfo import COMPARE, MODE_KINDS, NON_EXPR, element, ptrlike


class ExpressionsMixin:
    # ------------------------------------------------------------------ expressions
    def x(self, n, mode: str = "r") -> E:
        if self.hoisted and id(n) in self.hoisted:
            return self.hoisted[id(n)]
        if self.warp_plan is not None and (self.warp_plan.counts or self.warp_plan.subst):
            wc = warp_sizing.count(self, n)   # a warp count written for 32 lanes
            if wc is not None:
                return wc
        k = n.kind
        # a #define constant written as its name: keep the name
        if k not in ("DECL_REF_EXPR",) and n.children is not None:
            mc = self.macro_constant(n)
            if mc is not None:
                return mc
        m = getattr(self, "x_" + k, None)
        if m is None:
            self.fail(n, f"expression `{k.lower()}`")
        if k in MODE_KINDS:
            return self.t.place(self, n, m(n, mode))
        return m(n)

    def macro_constant(self, n) -> E | None:
        if not self.t.named_constants:
            return None
        if n.kind not in ("INTEGER_LITERAL", "FLOATING_LITERAL", "PAREN_EXPR", "BINARY_OPERATOR",
                          "UNARY_OPERATOR", "CSTYLE_CAST_EXPR"):
            return None
        mname = self.model.macro_at(n.start, n.end)
        if mname is None or self.model.source.slice(n.start, n.end) != mname:
            return None
        # every node of an expansion has the use's range: only the outermost one is the macro's whole body
        # (`#define F ((threadIdx.x / 32) + 4)`: its 32 is not F)
        p = n.parent
        while p is not None and p.kind == "UNEXPOSED_EXPR" and (p.start, p.end) == (n.start, n.end):
            p = p.parent
        if p is not None and (p.start, p.end) == (n.start, n.end):
            return None
        v = n.value
        if not isinstance(v, (int, float)) or isinstance(v, bool):
            return None
        t = self.ty(n).unqualified()
        if t.kind != "scalar":
            return None
        if isinstance(v, float) and not math.isfinite(v):
            # INFINITY / NAN: GLSL spells them with uintBitsToFloat (not a constant expression) and OpenCL's
            # own INFINITY macro must not be redefined: the literal inline
            return E(self.t.literal(v, t, self), t, lit=v)
        if isinstance(v, int):
            v = wrap(v, t) if t.is_int else v
        ident = self.t.ident(mname)
        prev = self.consts.get(ident)
        if prev is not None and (prev[1] != t or prev[2] != v):
            return E(self.t.literal(v, t, self), t, lit=v)
        if prev is None:
            if ident in self.idents:
                return E(self.t.literal(v, t, self), t, lit=v)
            self.consts[ident] = (self.t.literal(v, t, self), t, v)
        return E(ident, t, lit=None)

    def x_PAREN_EXPR(self, n, mode="r"):
        e = self.x(n.children[-1], mode)        # `(*p) = v`: the write reaches p's buffer
        return E(f"({e.text})", e.ct, PREC_PRIMARY, e.tt, e.lit)

    def x_INTEGER_LITERAL(self, n):
        t = self.ty(n)
        v = n.value
        if not isinstance(v, int):
            try:
                v = int(n.text.rstrip("uUlL"), 0)
            except ValueError:
                self.fail(n, f"integer literal `{n.text}`")
        return E(self.t.literal(v, t, self), t, lit=v)

    def x_FLOATING_LITERAL(self, n):
        t = self.ty(n)
        v = n.value
        if not isinstance(v, float):
            try:
                v = float(n.text.rstrip("fFlL"))
            except ValueError:
                self.fail(n, f"floating literal `{n.text}`")
        return E(self.t.literal(v, t, self), t, lit=v)

    def x_CXX_BOOL_LITERAL_EXPR(self, n):
        v = n.text.strip() == "true"
        return E("true" if v else "false", BOOL, lit=v)

    def x_CHARACTER_LITERAL(self, n):
        v = n.value if isinstance(n.value, int) else ord(n.text.strip("'")[-1])
        return E(self.t.literal(v, I32, self), I32, lit=v)

    def x_STRING_LITERAL(self, n):
        self.fail(n, "a string literal")

    def x_CXX_NULL_PTR_LITERAL_EXPR(self, n):
        self.fail(n, "a null pointer")

    def x_GNU_NULL_EXPR(self, n):
        self.fail(n, "a null pointer")

    def x_CXX_THIS_EXPR(self, n):
        self.fail(n, "`this` as a pointer value (a method may use its members and `*this`)")

    def x_UNEXPOSED_EXPR(self, n):
        if len(n.children) == 1:
            return self.x(n.children[0])
        self.fail(n, "an expression clang does not expose")

    def x_CXX_UNARY_EXPR(self, n):   # sizeof / alignof
        v = n.value
        if isinstance(v, int):
            t = U64 if self.t.size_t_64 else U32
            return E(self.t.literal(v, t, self), t, lit=v)
        m = re.match(r"sizeof\s*\(\s*([\w\s:]+?)\s*\)$", n.text)
        if m:
            operand = [c for c in n.children if c.kind not in NON_EXPR]
            # sizeof(v) of a value (a template-typed one too: sizeof(i) with T i): the size of its type here
            tt = self.ty(operand[0]) if operand and n.text.lstrip().startswith("sizeof") else \
                self.parse_type(m.group(1))
            if operand and not self.uses_double and "f32" in repr(tt) and self._demotes_doubles():
                # a double this kernel computes in float (no double in its signature): sizeof must still be 8
                self.fail(n, f"`{n.text}` of a value whose type may be a double computed in float here")
            s = ct.c_size(tt, {k: [(f, self.decl_type(fn)) for f, fn in v2] for k, v2 in self.u.structs.items()})
            if s is not None:
                t = U64 if self.t.size_t_64 else U32
                return E(self.t.literal(s, t, self), t, lit=s)
        self.fail(n, f"`{n.text}`")

    def _demotes_doubles(self) -> bool:
        """Double values (a `1.0` literal) this kernel computes in float: their sizeof would read 4, not 8."""
        if getattr(self, "_demotes", None) is None:
            self._demotes = any(nd.kind == "FLOATING_LITERAL" and "double" in (nd.type or "")
                                for f in self._reachable(self.fn).values() for nd in f.node.walk())
        return self._demotes

    def x_DECL_REF_EXPR(self, n, mode="r"):
        if n.is_warp_size():
            return warp32.warp_size() if self.warp32 is not None else self.t.warp_size(self)
        if "is_same" in n.text:
            return self._is_same(n)
        r = n.ref
        rk = n.ref_kind
        fr = self.frame
        if r is not None and id(r) in fr.consts:
            return fr.consts[id(r)]
        if r is not None and refs.bound(self, r):
            return refs.use(self, n, r, mode)
        if rk in ("TEMPLATE_NON_TYPE_PARAMETER", "NON_TYPE_TEMPLATE_PARAMETER"):
            name = n.spelling
            if name in fr.subst and isinstance(fr.subst[name], int):
                v = fr.subst[name]
                if fr.is_kernel and self.t.named_template_params:
                    ident = self.t.ident(name)
                    if ident not in self.consts:
                        self.consts[ident] = (self.t.literal(v, I32, self), I32, v)
                    return E(ident, I32)
                return E(self.t.literal(v, I32, self), I32, lit=v)
            self.fail(n, f"template parameter `{name}` without a value")
        if rk == "ENUM_CONSTANT_DECL":
            v = n.value
            if isinstance(v, int):
                return E(self.t.literal(v, I32, self), I32, lit=v)
        if r is None:
            if rk in ("VAR_DECL",):
                v = n.value
                if isinstance(v, (int, float)) and not isinstance(v, bool):
                    t = self.ty(n).unqualified()
                    return E(self.t.literal(v, t, self), t, lit=v)
            if not n.spelling:    # clang names nothing: a member of a dependent type (`Ktraits::kNThreads`)
                v = traits.member_value(fr.subst, n)
                if v is not None:
                    t = getattr(v, "ctype", I32)
                    return E(self.t.literal(int(v), t, self), t, lit=int(v))
                why = traits.why_not(self.u, fr.subst, n)
                self.fail(n, f"`{n.text}`{why}" if why else
                          f"`{n.text}` (a name clang could not resolve in this template instance)")
            self.fail(n, f"`{n.spelling}` (declared outside this file)")
        if r.kind == "VAR_DECL" and r.parent is not None and r.parent.kind in ("TRANSLATION_UNIT",) or \
                r.kind == "VAR_DECL" and self.model.function_of(r) is None:
            return self.global_var(n, r, mode)
        if r.kind in ("VAR_DECL", "PARM_DECL"):
            t = self.decl_type(r)
            if t.kind == "pointer" or (t.kind == "array" and id(r) in fr.ptrs):
                return self.t.pointer_value(self, n, self.ptr(n))
            if any(c.kind == "CUDASHARED_ATTR" for c in r.children) and self.name_of(r) not in self.shared:
                self.shared_decl(r)
            name = self.name_of(r)
            if r.kind == "PARM_DECL" and fr.is_kernel:
                return self.t.scalar_param(self, r, name, t)
            if id(r) in fr.ballots:
                return E(name, U32, tt=self.t.ballot_type)
            return E(name, t.unqualified() if t.kind != "array" else t)
        if r.kind in ("FUNCTION_DECL", "FUNCTION_TEMPLATE"):
            self.fail(n, f"a function pointer (`{n.spelling}` used as a value)")
        self.fail(n, f"a reference to `{n.spelling}` ({r.kind.lower()})")

    def _is_same(self, n) -> E:
        """`std::is_same<T, U>::value` / `std::is_same_v<T, U>`: true or false for this instantiation."""
        from porter.frontend.lexer import split_top_level
        m = re.fullmatch(r"\s*(?:std::)?is_same(_v)?\s*<(.*)>\s*(::\s*value)?\s*", n.text, re.S)
        parts = split_top_level(m.group(2)) if m and (m.group(1) or m.group(3)) else []
        if len(parts) != 2:
            self.fail(n, f"`{n.text}`")
        a, b = (self.parse_type(p.strip()) for p in parts)
        if "unknown" in (a.kind, b.kind) or (not self.uses_double and "double" in n.text):
            self.fail(n, f"`{n.text}` (a type cuport cannot compare here)")
        v = a == b    # cv-qualifiers count, as in C++
        return E("true" if v else "false", BOOL, lit=v)

    def global_var(self, n, r, mode) -> E:
        """File-scope variables: constants fold; initialised __constant__ arrays become target constants."""
        t = self.decl_type(r)
        if device_globals.is_device_global(self, r):
            name = device_globals.use(self, r, n)
            if t.kind == "array":
                self.fail(n, f"the device array `{r.spelling}` used as a value")
            root = self.buffers[name]["root"]
            text = self.t.deref(self, root, None, None, mode, n)
            return E(text, t.unqualified(), PREC_UNARY if text.startswith("*") else PREC_PRIMARY)
        v = n.value
        if t.kind == "scalar" and isinstance(v, (int, float)) and not isinstance(v, bool):
            return E(self.t.literal(v, t.unqualified(), self), t.unqualified(), lit=v)
        is_const = any(c.kind == "CUDACONSTANT_ATTR" for c in r.children) or t.const or \
            (t.kind == "array" and t.elem.const)
        init = self.init_of(r)
        if is_const and init is not None and mode == "r":
            name = self.t.ident(r.spelling)
            if name not in self.const_arrays:
                self.const_arrays[name] = ""   # reserve (recursion)
                tt = t.unqualified() if t.kind != "array" else ct.array(t.elem.unqualified(), t.dims)
                val = self.aggregate(init, tt) if init.kind == "INIT_LIST_EXPR" else self.conv(self.x(init), tt)
                self.const_arrays[name] = self.t.global_const(self, tt, name, val.text)
            return E(name, t)
        if any(c.kind == "CUDACONSTANT_ATTR" for c in r.children):
            self.fail(n, f"`__constant__` variable `{r.spelling}` set by the host (cudaMemcpyToSymbol)")
        self.fail(n, f"file-scope device variable `{r.spelling}`")

    def x_MEMBER_REF_EXPR(self, n, mode="r"):
        b = n.builtin()
        if b is not None:
            return self.t.thread_builtin(b[0], b[1], self)
        if methods.is_self_member(n):
            return methods.self_member(self, n, mode)
        flat = struct_params.lookup(self, n)
        if flat is not None:
            if flat[0] != "scalar":
                return self.t.pointer_value(self, n, self.ptr(n))
            return self.t.scalar_param(self, None, flat[1], flat[2])
        base_n = n.children[0]
        bt = self.ty(base_n)
        arrow = "->" in self.model.source.slice(base_n.end, n.end)
        if arrow:
            lv = self.ptr_lvalue(base_n, mode, deref=True)
            # OpenCL spells the element `*p`: `(*p).f`, never `*p.f`
            base = E(lv, element(bt), PREC_UNARY if lv.startswith("*") else PREC_PRIMARY)
        else:
            base = self.x(base_n, mode)
        t = self.ty(n)
        if bt.kind == "vector" or (arrow and element(bt).kind == "vector"):
            if n.spelling not in ("x", "y", "z", "w"):
                self.fail(n, f"vector member `{n.spelling}`")
            return E(f"{base.paren(PREC_PRIMARY)}.{n.spelling}", t.unqualified())
        st = element(bt) if arrow else bt
        if st.kind == "struct":
            from porter.translate.kernel.class_templates import member_name
            name = member_name(self.model, n)         # unnamed by clang when the base is dependent
            if not name:
                self.fail(n, f"member access `{n.text}`")
            return E(f"{base.paren(PREC_PRIMARY)}.{self.t.ident(name)}", t.unqualified())
        self.fail(n, f"member access `{n.text}`")

    def array_pointer_decl(self, d, name):
        """var_decl's `T (*p)[B][C]`: bound to the array it points into, else None (array_pointers.py)."""
        return array_pointers.decl(self, d, name)

    def x_ARRAY_SUBSCRIPT_EXPR(self, n, mode="r"):
        e = array_pointers.subscript(self, n, mode)       # `xchg[a][b][c]` through a pointer to an array
        if e is not None:
            return e
        base_n, idx_n = n.children
        bt = self.ty(base_n)
        if bt.kind == "pointer" or (bt.kind == "array" and self._decays_to_root(base_n)):
            text = self.ptr_index(base_n, idx_n, mode)
            return E(text, self.ty(n).unqualified() if self.ty(n).kind != "array" else self.ty(n))
        if bt.kind == "array":
            base = self.x(base_n, mode)
            idx = self.index(self.x(idx_n), idx_n)
            t = self.ty(n)
            return E(f"{base.paren(PREC_PRIMARY)}[{idx.text}]", t.unqualified() if t.kind != "array" else t)
        if bt.kind == "vector":
            v = idx_n.value
            if isinstance(v, int) and 0 <= v < bt.n:
                base = self.x(base_n, mode)
                return E(f"{base.paren(PREC_PRIMARY)}.{'xyzw'[v]}", bt.elem)
        self.fail(n, f"subscript of `{bt}`")

    def _decays_to_root(self, base_n) -> bool:
        """An array expression used through a pointer binding (an array parameter of a device function)."""
        s = base_n.strip
        if s.kind == "MEMBER_REF_EXPR":   # an array field of a flattened struct parameter: its own buffer
            return self.flat_field(s) is not None
        # a file-scope device array is a buffer (device_globals.py): indexed like one
        return s.kind == "DECL_REF_EXPR" and s.ref is not None and (id(s.ref) in self.frame.ptrs or
                                                                    self.is_device_global(s.ref))

    def index(self, e: E, n=None) -> E:
        t = e.ct
        if t.kind != "scalar" or not (t.is_int or t.is_bool):
            self.fail(n, f"an index of type `{t}`")
        if t.bits > 32 or t.bits < 32 or t.is_bool:
            return self.t.convert(e, U32 if not t.is_signed else I32, self, explicit=True)
        if e.tt.kind == "scalar" and e.tt != e.ct and e.tt.bits != 32:
            return self.t.convert(e, I32, self)
        return e

    def x_UNARY_OPERATOR(self, n, mode="r"):
        op = n.op
        c = n.children[0]
        t = self.ty(n)
        if methods.is_deref_this(n):
            return methods.self_value(self, n, mode)
        if op == "*":
            return E(self.ptr_lvalue(c, mode, deref=True), t.unqualified())
        if op == "&":
            self.fail(n, methods.address_refusal(self, n))
        if op in ("++", "--", "post++", "post--"):
            ctp = self.ty(c)
            if ctp.kind == "pointer":
                return self.t.pointer_step(self, n, c, op)
            e = self.x(c, "rw")
            if op.startswith("post"):
                return E(f"{e.paren(PREC_PRIMARY)}{op[4:]}", e.ct, PREC_PRIMARY)
            return E(f"{op}{e.paren(PREC_UNARY)}", e.ct, PREC_UNARY)
        if op == "!" and self.ty(c).kind == "pointer":
            return self.null_test(c, True)         # `!p`: p is null
        e = self.x(c)
        if op == "!":
            b = self.to_bool(e, c)
            return E(f"!{b.paren(PREC_UNARY)}", BOOL, PREC_UNARY)
        if op in ("-", "+", "~"):
            pt = ct.promote(e.ct)
            if pt.kind == "unknown":
                pt = e.ct
            e = self.conv(e, pt)
            if e.lit is not None and op == "-" and pt.kind == "scalar":
                v = -e.lit
                if pt.is_int:
                    v = wrap(v, pt)
                return E(self.t.literal(v, pt, self), pt, PREC_UNARY if (v < 0) else PREC_PRIMARY, lit=v)
            if op == "+":
                return e
            if op == "-" and pt.kind == "scalar" and pt.is_int and not pt.is_signed:
                return self.t.unsigned_negate(self, e)
            return E(f"{op}{e.paren(PREC_UNARY)}", pt, PREC_UNARY, tt=e.tt if e.tt.kind == "scalar" else None)
        if op in ("__extension__",):
            return e
        self.fail(n, f"unary operator `{op}`")

    def x_BINARY_OPERATOR(self, n, mode="r"):
        op = n.op
        a_n, b_n = n.children
        if methods.struct_operands(self, n):
            return methods.operator_call(self, n)
        if op == "=":
            return self.assign(n, a_n, b_n)
        if op == ",":
            a, b = self.x(a_n), self.x(b_n)
            return E(f"{a.paren(PREC_ASSIGN)}, {b.paren(PREC_ASSIGN)}", b.ct, PREC_COMMA)
        at, bt = self.ty(a_n), self.ty(b_n)
        if (ptrlike(at) or ptrlike(bt)) and op not in ("&&", "||"):     # `p && q`: two null tests
            if op in COMPARE:
                return self.pointer_compare(n, op, a_n, b_n)
            if op == "-" and ptrlike(at) and ptrlike(bt):
                self.fail(n, f"a pointer difference `{n.text}`")
            return self.t.pointer_value(self, n, self.ptr(n))
        if op in ("&&", "||"):
            a, b = self.cond(a_n), self.cond(b_n)
            p = BINARY_PREC[op]
            return E(f"{a.paren(p)} {op} {b.paren(p - 1)}", BOOL, p)
        # lane and warp ids written against warpSize map to the subgroup builtins
        if op in ("%", "/") and b_n.is_warp_size():
            special = self._lane_or_warp(a_n, op)
            if special is not None:
                return special
        a, b = self.x(a_n), self.x(b_n)
        return self.binary_value(op, a, b, n)

    def _lane_or_warp(self, a_n, op) -> E | None:
        p = self.an.poly(a_n)
        if p is None or self.warp32 is not None or not self._one_dimensional():
            return None             # emulated warps: the source's arithmetic is CUDA's lane / warp id
        if p.terms != {("threadIdx.x",): 1}:
            return None
        return self.t.lane_id(self) if op == "%" else self.t.warp_id(self)

    def _one_dimensional(self) -> bool:
        if getattr(self, "_1d", None) is None:
            blk = self.launch.block if self.launch is not None else None
            if blk is not None and blk[1] is not None and blk[2] is not None:
                self._1d = blk[1] == 1 and blk[2] == 1
            else:
                uses = set()
                for f in self._reachable(self.fn).values():
                    for nd in f.node.walk():
                        b = nd.builtin()
                        if b is not None and b[0] in ("threadIdx", "blockDim"):
                            uses.add(b[1])
                self._1d = not (uses & {"y", "z"})
        return self._1d

    def binary_value(self, op, a: E, b: E, n) -> E:
        p = BINARY_PREC[op]
        if op in ("<<", ">>"):
            lt = ct.promote(a.ct)
            rt = ct.promote(b.ct)
            a = self.conv(a, lt)
            b = self.conv(b, rt)
            if b.ct.bits != lt.bits and not self.t.c_conversions and b.lit is None:
                b = self.t.convert(b, U32 if not lt.is_signed else I32, self, explicit=True) \
                    if b.ct.bits > 32 or lt.bits > 32 else b
            return E(f"{a.paren(p)} {op} {b.paren(p - 1)}", lt, p)
        ca, cb = a.ct, b.ct
        if ca.kind == "vector" or cb.kind == "vector":
            if op in COMPARE or not (ca.kind == cb.kind == "vector" and ca.same(cb)):
                self.fail(n, f"vector arithmetic `{n.text}` (CUDA vector types have no operators)")
        c = ct.common(ca, cb)
        if op == "%" and c.kind == "scalar" and c.is_float:
            self.fail(n, "`%` on floating-point values")
        a = self.conv(a, c, implicit_ok=True)
        b = self.conv(b, c, implicit_ok=True)
        rt = BOOL if op in COMPARE else c
        if op == "%" and c.is_signed and not self._nonneg(n):
            return self.t.signed_remainder(self, a, b, c)
        k = self._pow2_divisor(n) if op in ("/", "%") and c.kind == "scalar" and c.is_int and c.is_signed \
            and c.bits == 32 else None
        if k is not None and self._nonneg(n):
            # a non-negative int over a power of two is a shift or a mask; written as `/` or `%` the NVIDIA Vulkan
            # driver emitted the signed-division fix-up (4 instructions each) and kept it in the loop
            # (docs/performance.md, round 4: +2% on the SGEMM)
            if op == "/":
                return E(f"{a.paren(BINARY_PREC['>>'])} >> {k}", c, BINARY_PREC[">>"])
            mask = self.t.literal((1 << k) - 1, c, self)
            return E(f"{a.paren(BINARY_PREC['&'])} & {mask}", c, BINARY_PREC["&"])
        if a.lit is not None and b.lit is not None and c.kind == "scalar" and op in ("+", "-", "*") and c.is_int:
            v = wrap({"+": a.lit + b.lit, "-": a.lit - b.lit, "*": a.lit * b.lit}[op], c)
            if a.text.lstrip("-").replace("u", "").isdigit() and b.text.lstrip("-").replace("u", "").isdigit():
                return E(self.t.literal(v, c, self), c, lit=v)
        tt = None
        if op not in COMPARE and a.tt == b.tt and a.tt != c:
            tt = a.tt
        return E(f"{a.paren(p)} {op} {b.paren(p - 1)}", rt, p, tt=tt)

    @staticmethod
    def _pow2_divisor(n) -> int | None:
        """log2 of the divisor of `n` (a `/` or `%`, or their compound assignment) when it is a constant power of
        two above 1."""
        if n is None or len(n.children) != 2 or isinstance(n.children[0].value, (int, float)) or \
                n.children[0].is_warp_size():
            return None             # a constant expression stays as written: the compiler folds it
        v = n.children[1].value
        if isinstance(v, bool) or not isinstance(v, int) or v < 2 or v & (v - 1):
            return None
        return v.bit_length() - 1

    def _nonneg(self, n) -> bool:
        """Both operands of a signed `%` are known to be non-negative (then `%` means the same everywhere)."""
        if n is None or n.kind not in ("BINARY_OPERATOR", "COMPOUND_ASSIGNMENT_OPERATOR"):
            return False
        return all(self.nonneg(c) for c in n.children[:2])

    def nonneg(self, node, depth: int = 0) -> bool:
        """The value is >= 0: thread indices, non-negative constants, and loop counters that start
        non-negative and only grow, halve or shift (`i++`, `i += 4`, `s >>= 1`, `o /= 2`)."""
        if depth > 6:
            return False
        v = node.value
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            return v >= 0
        p = self.an.poly(node)
        if p is None:
            s = node.strip
            if s.kind == "BINARY_OPERATOR" and s.op in ("/", "%", ">>", "&", "*", "+") and len(s.children) == 2:
                return all(self.nonneg(c, depth + 1) for c in s.children)
            return False
        if p.constant < 0 or any(c < 0 for c in p.terms.values()):
            return False
        for var in p.variables():
            if var.split(".")[0] in ("threadIdx", "blockIdx", "blockDim", "gridDim", "warpSize"):
                continue
            decl = self._local_named(node, var)
            if decl is None or not self._nonneg_var(decl, depth + 1):
                return False
        return True

    def _local_named(self, node, name):
        """The declaration of `name` visible at `node` (innermost scope first)."""
        for a in node.ancestors():
            for c in a.children:
                if c.start > node.start:
                    break
                if c.kind == "DECL_STMT":
                    for d in c.children:
                        if d.kind == "VAR_DECL" and d.spelling == name:
                            return d
                elif c.kind == "PARM_DECL" and c.spelling == name:
                    return c
        return None

    def _nonneg_var(self, decl, depth) -> bool:
        key = ("nonneg", id(decl))
        cache = self.frame.types
        if key in cache:
            return cache[key]
        cache[key] = False          # cycle guard
        ok = False
        if decl.kind == "VAR_DECL":
            init = self.init_of(decl)
            ok = init is not None and self.nonneg(init, depth)
            fn = decl.enclosing("FUNCTION_DECL", "FUNCTION_TEMPLATE")
            for w in (fn.walk() if fn is not None and ok else ()):
                if w.kind == "UNARY_OPERATOR" and w.op in ("--", "post--") or \
                        w.kind in ("BINARY_OPERATOR", "COMPOUND_ASSIGNMENT_OPERATOR"):
                    if not w.children:
                        continue
                    t = w.children[0].strip
                    if t.kind != "DECL_REF_EXPR" or t.ref is not decl:
                        continue
                    if w.kind == "UNARY_OPERATOR":
                        ok = False
                    elif w.kind == "BINARY_OPERATOR" and w.op == "=":
                        ok = self.nonneg(w.children[1], depth)
                    elif w.kind == "COMPOUND_ASSIGNMENT_OPERATOR":
                        ok = w.op in ("+=", "*=", "/=", ">>=", "<<=", "%=", "&=", "|=") and \
                            self.nonneg(w.children[1], depth)
                    if not ok:
                        break
        cache[key] = ok
        return ok

    def _half_store(self, a_n) -> bool:
        """`p[i]` / `*p` on a half pointer into memory the target stores halves in only by a call (OpenCL)."""
        s = a_n.strip
        if not (s.kind == "ARRAY_SUBSCRIPT_EXPR" or s.kind == "UNARY_OPERATOR" and s.op == "*") or \
                self.ty(s.children[0]).kind != "pointer":
            return False
        return halfprec.half_storage_root(self, a_n) is not None

    def assign(self, n, a_n, b_n) -> E:
        at = self.ty(a_n)
        if at.kind == "pointer":
            return self.t.pointer_assign(self, n, a_n, b_n, "=")
        if halfprec.is_half(at.unqualified()) and self._half_store(a_n):
            # `out[i] = h` a template keeps as a built-in `=` (its value is dependent): OpenCL stores halves
            return halfprec.assign(self, n, a_n, self.conv(self.x(b_n), at.unqualified()))
        pv = private_views.target_of(self, a_n)      # `((int4 *)priv)[k] = v`: stored lane by lane
        if pv is not None:
            return private_views.store(self, n, pv[0], self.x(pv[1]) if pv[1] is not None else None, a_n,
                                       self.x(b_n))
        lv = self.x(a_n, "w")
        if at.kind == "struct" and b_n.strip.kind == "INIT_LIST_EXPR":
            rv = self.aggregate(b_n.strip, at)
        else:
            rv = self.conv(self.x(b_n), at.unqualified(), implicit_ok=True)
        if lv.tt.kind == "struct" and at.kind != "struct":
            rv = self.conv(rv, lv.tt)       # stored in the target's representation of the place (Target.place)
        return E(f"{lv.paren(PREC_UNARY)} = {rv.paren(PREC_ASSIGN)}", at.unqualified(), PREC_ASSIGN)

    def x_COMPOUND_ASSIGNMENT_OPERATOR(self, n, mode="r"):
        a_n, b_n = n.children
        op = n.op
        at = self.ty(a_n).unqualified()
        if at.kind == "pointer":
            return self.t.pointer_assign(self, n, a_n, b_n, op)
        if halfprec.is_half(at) and self._half_store(a_n):
            return halfprec.operator(self, n, op, [a_n, b_n], [at, self.ty(b_n)])
        bop = op[:-1]
        b = self.x(b_n)
        if bop in ("<<", ">>"):
            lv = self.x(a_n, "rw")
            bt = ct.promote(b.ct)
            b = self.conv(b, bt)
            return E(f"{lv.paren(PREC_UNARY)} {op} {b.paren(PREC_ASSIGN)}", at, PREC_ASSIGN)
        c = ct.common(at, b.ct)
        if bop == "%" and at.is_signed and not self._nonneg(n):
            lv = self.x(a_n, "rw")
            if not self._pure(a_n):
                self.fail(n, f"`{n.text}` (signed remainder of an lvalue with side effects)")
            r = self.t.signed_remainder(self, self.conv(self.x(a_n), c), self.conv(b, c), c)
            return E(f"{lv.paren(PREC_UNARY)} = {self.conv(r, at).paren(PREC_ASSIGN)}", at, PREC_ASSIGN)
        if at.kind != "struct" and self.x(a_n, "rw").tt.kind == "struct":
            # a place the target represents otherwise (Target.place): a = A(a op b), read and stored through it
            if not self._pure(a_n):
                self.fail(n, f"`{n.text}` (compound assignment to an lvalue with side effects)")
            lv = self.x(a_n, "rw")
            val = self.binary_value(bop, self.conv(self.x(a_n), at), b, n)
            return E(f"{lv.paren(PREC_UNARY)} = {self.conv(self.conv(val, at), lv.tt).paren(PREC_ASSIGN)}", at,
                     PREC_ASSIGN)
        if c.same(at) or self.t.c_conversions:
            lv = self.x(a_n, "rw")
            b = self.conv(b, at, implicit_ok=True)
            return E(f"{lv.paren(PREC_UNARY)} {op} {b.paren(PREC_ASSIGN)}", at, PREC_ASSIGN)
        # a op= b with a wider common type: a = A(a op b)
        if not self._pure(a_n):
            self.fail(n, f"`{n.text}` (mixed-type compound assignment to an lvalue with side effects)")
        lv = self.x(a_n, "rw")
        val = self.binary_value(bop, self.x(a_n), b, n)
        return E(f"{lv.paren(PREC_UNARY)} = {self.conv(val, at).paren(PREC_ASSIGN)}", at, PREC_ASSIGN)

    def _pure(self, n) -> bool:
        for x in n.walk():
            if x.kind == "CALL_EXPR" or (x.kind == "UNARY_OPERATOR" and x.op in ("++", "--", "post++", "post--")):
                return False
            if x.kind in ("BINARY_OPERATOR", "COMPOUND_ASSIGNMENT_OPERATOR") and \
                    (x.kind == "COMPOUND_ASSIGNMENT_OPERATOR" or x.op == "="):
                return False
        return True

    def x_CONDITIONAL_OPERATOR(self, n):
        c_n, a_n, b_n = n.children
        t = self.ty(n)
        if t.kind == "pointer":
            return self.t.pointer_value(self, n, self.ptr(n))
        c = self.cond(c_n)
        a, b = self.x(a_n), self.x(b_n)
        if t.kind in ("scalar", "vector"):
            a, b = self.conv(a, t), self.conv(b, t)
        return E(f"{c.paren(PREC_COND - 1)} ? {a.paren(PREC_ASSIGN)} : {b.paren(PREC_COND)}", t.unqualified(),
                 PREC_COND)

    def _cast(self, n) -> E:
        t = self.ty(n)
        inner = [c for c in n.children if c.kind not in NON_EXPR]
        if not inner:
            self.fail(n, "an empty cast")
        src_n = inner[-1]
        st = self.ty(src_n)
        if t.kind == "pointer" or st.kind == "pointer":
            if t.kind == "pointer" and ptrlike(st) and element(st).unqualified() == t.elem.unqualified():
                return self.t.pointer_value(self, n, self.ptr(n))
            self.fail(n, f"a pointer cast `{n.text}` (reinterpreting memory)")
        if t.kind == "struct" and src_n.strip.kind == "INIT_LIST_EXPR":
            return self.aggregate(src_n.strip, t)
        if t.kind == "vector" and src_n.strip.kind == "INIT_LIST_EXPR":
            return self.aggregate(src_n.strip, t)
        if t.kind == "struct" and n.kind != "CXX_REINTERPRET_CAST_EXPR" and st.unqualified().same(t.unqualified()):
            return self.x(src_n)         # `Acc(1.f)`: a converting constructor (or a copy) of the struct itself
        if n.kind == "CXX_REINTERPRET_CAST_EXPR":
            self.fail(n, f"`{n.text}`")
        e = self.x(src_n)
        if t.kind == "void":
            return e
        if t.kind not in ("scalar", "vector"):
            self.fail(n, f"a cast to `{n.type}`")
        return self.t.convert(e, t.unqualified(), self, explicit=True)

    x_CSTYLE_CAST_EXPR = _cast
    x_CXX_STATIC_CAST_EXPR = _cast
    x_CXX_FUNCTIONAL_CAST_EXPR = _cast
    x_CXX_CONST_CAST_EXPR = _cast
    x_CXX_REINTERPRET_CAST_EXPR = _cast

    def x_INIT_LIST_EXPR(self, n):
        return self.aggregate(n, self.ty(n))

    def x_CXX_UNRESOLVED_CONSTRUCT_EXPR(self, n):   # T(x) in a template
        t = self.parse_type(n.type)
        args = [c for c in n.children if c.kind not in NON_EXPR]
        if t.kind == "scalar" and len(args) == 1:
            return self.t.convert(self.x(args[0]), t, self, explicit=True)
        if t.kind == "scalar" and not args:
            return self.zero(t)
        self.fail(n, f"`{n.text}`")

    def x_CXX_TEMPORARY_OBJECT_EXPR(self, n):
        return self.x_CALL_EXPR(n)

    def x_CXX_CONSTRUCT_EXPR(self, n):
        return self.x_CALL_EXPR(n)

