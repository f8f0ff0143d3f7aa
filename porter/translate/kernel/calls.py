"""Calls: builtins and intrinsics go to the target (Target.call), user __device__ functions are
specialised per argument binding (pointer roots, template arguments) and emitted once per specialisation."""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from porter.frontend.lexer import split_top_level
from porter.frontend.model import result_type_spelling
from porter.translate.kernel import asserts
from porter.translate.kernel import coop
from porter.translate.kernel import ctors
from porter.translate.kernel import halfprec
from porter.translate.kernel import methods
from porter.translate.kernel import ctype as ct
from porter.translate.kernel import refs
from porter.translate.kernel import returned_pointers
from porter.translate.kernel import static_members
from porter.translate.kernel import struct_params
from porter.translate.kernel import traits
from porter.translate.kernel import warp32
from porter.translate.kernel.ctype import CType, I32
from porter.translate.kernel.pointers import Root
from porter.translate.kernel.target import E
from porter.translate.kernel.typeinfo import NON_EXPR, element, ptrlike

_SHUFFLES = {"__shfl_sync", "__shfl_up_sync", "__shfl_down_sync", "__shfl_xor_sync", "__shfl", "__shfl_up",
             "__shfl_down", "__shfl_xor"}


@dataclass
class Frame:
    fn: object                 # porter.frontend.model.Function
    subst: dict                # template parameter -> CType | int
    is_kernel: bool
    names: dict = field(default_factory=dict)    # id(decl) -> identifier
    ptrs: dict = field(default_factory=dict)     # id(decl) -> PtrBinding (GLSL) / Root (OpenCL)
    consts: dict = field(default_factory=dict)   # id(decl) -> E
    ballots: set = field(default_factory=set)    # id(decl) of locals holding a subgroup ballot
    pending: dict = field(default_factory=dict)  # id(decl) -> (decl, placeholder): pointers declared without a
    #                                              value, bound (and typed) at their first assignment
    ret: CType = ct.VOID
    types: dict = field(default_factory=dict)
    globals: list = field(default_factory=list)  # buffers of file-scope device variables it uses (in order)


class CallsMixin:
    # ------------------------------------------------------------------ calls
    def callee_name(self, n) -> str:
        if n.spelling:
            return n.spelling
        q = static_members.member_name(self, n)      # `C<T, V>::f(...)` in a template
        if q:
            return q
        for c in n.children:            # `-beta` of a dependent T in a template: [beta, `-` (operator-)]
            if c.kind == "DECL_REF_EXPR" and not c.spelling:
                op = next((x.spelling for x in c.walk() if x.kind == "OVERLOADED_DECL_REF"), "")
                if op.startswith("operator"):
                    return op
        for c in n.children[:1]:
            for x in c.walk():
                if x.kind in ("DECL_REF_EXPR", "OVERLOADED_DECL_REF", "MEMBER_REF_EXPR") and x.spelling:
                    return x.spelling
        return ""

    def call_args(self, n) -> list:
        if n.kind in ("CXX_CONSTRUCT_EXPR", "CXX_TEMPORARY_OBJECT_EXPR"):
            return [c for c in n.children if c.kind not in NON_EXPR]
        ch = n.children
        name = n.spelling
        if n.kind == "CALL_EXPR" and not name and ch and ch[0].kind == "MEMBER_REF_EXPR" and not ch[0].spelling:
            return ch[1:]                   # `obj.f(args)` left unresolved in a template
        if name.startswith("operator") and n.kind == "CALL_EXPR":
            # `a + b` through an overload: clang puts the operator's reference between the operands
            return [c for c in ch if not (c.kind in ("DECL_REF_EXPR", "UNEXPOSED_EXPR") and c.spelling == name)]
        if ch and ch[0].kind in ("DECL_REF_EXPR", "MEMBER_REF_EXPR", "OVERLOADED_DECL_REF", "UNEXPOSED_EXPR") and \
                (ch[0].spelling == n.spelling or not ch[0].spelling) and \
                (ch[0].start <= n.start or ch[0].kind != "DECL_REF_EXPR"):
            first = ch[0]
            if first.kind in ("DECL_REF_EXPR", "OVERLOADED_DECL_REF", "UNEXPOSED_EXPR") and \
                    self.model.source.slice(first.start, first.end).split("<")[0].strip() == self.callee_name(n):
                return ch[1:]
        return n.args()

    def _callee_fn(self, n):
        """The user function (model Function) a call resolves to, or None for builtins / unknown."""
        st = static_members.resolve(self, n) if self.frame is not None else None   # `C<args>::f(...)`
        if st is not None:
            return st[0]
        r = n.ref
        if r is not None and id(r) in self.u.fn_by_node:
            f = self.u.fn_by_node[id(r)]
            # clang's pick, unless the arguments cannot be its parameters (clang had no better overload in the
            # light stubs: `fminf(a.x, b.x)` inside helper_math's float3 fminf is CUDA's builtin, not recursion)
            if f.body is None:    # clang refers to a prototype (metropolis): the definition further down
                f = next((d for d in self.u.fns_by_name.get(f.name, [])
                          if d.body is not None and len(d.params) == len(f.params)), f)
            if n.kind != "CALL_EXPR" or \
                    self._overload_score(f, methods.param_args(self, f, n, self.call_args(n))) is not None:
                return f
        dep = methods.dependent_method(self, n)
        if dep is not None:
            return dep
        name = self.callee_name(n)
        # constructors are picked by ctors.construct (by clang's reference or argument count), never by name:
        # `return r;` is the implicit copy constructor, not a user one with a default argument
        cands = [f for f in self.u.fns_by_name.get(name, []) if f.body is not None and f.node.kind != "CONSTRUCTOR"]
        if not cands:
            return None
        if n.kind != "CALL_EXPR":
            return cands[0]
        # device code calls device overloads (a host `fminf(float, float)` beside CUDA's builtin is not one)
        dev = [f for f in cands if f.is_device_code]
        if not dev:
            return cands[0]
        args = self.call_args(n)
        same = [f for f in dev if len(f.params) == len(args)]
        if same:     # overloads by type (helper_math.h): the one whose parameters the arguments have
            scored = [(sc, -i, f) for i, f in enumerate(same) if (sc := self._overload_score(f, args)) is not None]
            return max(scored)[2] if scored else None
        # fewer arguments: a default argument; more than any overload takes: not one of these overloads
        # (helper_math.h's one-argument make_float4 beside the builtin four-argument one)
        return next((f for f in dev if len(f.params) > len(args)), None)

    def _overload_score(self, f, args) -> int | None:
        """How well call arguments fit f's parameters: higher is closer, None when they cannot be passed."""
        if len(args) > len(f.params):
            return None
        total = 0
        for p, a in zip(f.params, args):
            t = self.ty(a) if self.frame is not None else self.parse_type(a.type)   # no frame: a pre-scan
            pt, t = self.parse_type(p.node.canonical_type.spelling).unqualified(), t.unqualified()
            if pt.kind == "unknown" or t.kind == "unknown" or pt.same(t):
                total += 2
            elif pt.kind in ("pointer", "array") and t.kind in ("pointer", "array"):
                total += 1
            elif pt.kind == "pointer" and self.frame is not None and self.is_null(a):
                total += 1     # `f(&x, 0)`: a null pointer constant passed for a pointer
            elif pt.kind != t.kind or (pt.kind == "vector" and pt.n != t.n) or pt.kind == "struct":
                return None
            else:
                total += 1     # arithmetic conversion
        return total

    def call_type(self, n) -> CType:
        ft = self._functional_cast_type(n)
        if ft is not None:
            return ft
        name = self.callee_name(n)
        fn = self._callee_fn(n)
        if fn is not None:
            subst = self._deduce(fn, n)
            if methods.is_method(fn):       # a struct template's method returns its instance's types
                subst = methods.class_subst(self, fn, methods.object_type(self, fn, n), subst)
            rs = result_type_spelling(fn.node, canonical=False) or "void"
            cs = result_type_spelling(fn.node) or rs
            return self.parse_type(cs if "type-parameter" not in cs else rs, subst)
        sig = self.signature(n)
        if sig is not None and sig[0].kind != "unknown":
            return sig[0]
        t = self.t.builtin_type(self, name, n)
        if t is not None:
            return t
        t = self.parse_type(n.type)
        if t.kind == "unknown" and name in _SHUFFLES:
            # `__shfl_xor_sync(m, v, k)` with `T v` is left unresolved in a template: every overload returns v's type
            args = self.call_args(n)
            i = 1 if name.endswith("_sync") else 0
            if len(args) > i:
                return self.ty(args[i]).unqualified()
        return t

    def signature(self, n):
        """(return type, [param types]) from the callee reference's function type spelling."""
        if not n.children:
            return None
        c = n.children[0]
        ts = c.type if c.kind in ("DECL_REF_EXPR", "UNEXPOSED_EXPR") else ""
        m = re.match(r"^(.*?)\s*\((.*)\)\s*$", ts or "")
        if not m or "dependent" in ts:
            return None
        params = [p.strip() for p in split_top_level(m.group(2))] if m.group(2).strip() not in ("", "void") else []
        return self.parse_type(m.group(1)), [self.parse_type(p) for p in params]

    def _deduce(self, fn, n) -> dict:
        """Template arguments of a call to a device function template: explicit `<...>` or deduced."""
        st = static_members.resolve(self, n) if self.frame is not None else None
        if st is not None and st[0] is fn:          # a static member of a class template: its class's arguments
            return traits.expand(self.u, dict(st[1])) if not fn.is_template else \
                traits.expand(self.u, {**st[1], **self._deduce_own(fn, n)})
        if not fn.is_template:
            return dict(self.frame.subst) if self.frame else {}
        return self._deduce_own(fn, n)

    def _deduce_own(self, fn, n) -> dict:
        """A function template's own arguments at call n: explicit `<...>` or deduced."""
        from porter.translate.templates import template_params
        params = template_params(fn.node)
        subst = {}
        text = self.model.source.slice(n.start, n.end)
        m = re.match(r"^\s*[\w:]+\s*<(.*?)>\s*\(", text)
        if m and not methods.is_method(fn):     # `Loader<4>(t).Load(p)`: the object's arguments, not Load's
            for (pname, kind, _d), a in zip(params, split_top_level(m.group(1))):
                if kind == "type":
                    subst[pname] = self.parse_type(a)
                else:
                    v = {"true": 1, "false": 0}.get(a.strip())
                    try:
                        v = int(a, 0) if v is None else v
                    except ValueError:
                        v = self.model.macro_value(a)
                        if v is None and self.frame and a.strip() in self.frame.subst:
                            v = self.frame.subst[a.strip()]     # `Ktraits::kN` too (traits.py)
                        if v is None and self.frame:
                            v = traits.local_constant(self, a.strip())
                    subst[pname] = v
        args = self.call_args(n)
        for p, a in zip(fn.params, args):
            pt = p.node.type
            for pname, kind, _d in params:
                if kind == "type" and pname not in subst:
                    at = self.ty(a)
                    if re.fullmatch(rf"(const\s+)?{pname}(\s*&)?", pt.strip()):
                        subst[pname] = at.unqualified()
                    elif re.fullmatch(rf"(const\s+)?{pname}\s*\*.*", pt.strip()) and ptrlike(at):
                        subst[pname] = element(at).unqualified()
            for pname, v in static_members.deduce_from_instance(self, pt, self.ty(a)).items():
                subst.setdefault(pname, v)      # `const Info<T, I> &info` from an Info<int64_t, int64_t>
        for pname, kind, d in params:
            if pname not in subst and d is not None:
                subst[pname] = self.parse_type(d.spelling) if kind == "type" else \
                    (int(d.text.strip() == "true") if d.kind == "CXX_BOOL_LITERAL_EXPR" else d.value)
        return traits.expand(self.u, subst)

    def _functional_cast_type(self, n) -> CType | None:
        """`T(x)` in a template body: a CALL_EXPR whose first child is the type."""
        if n.kind == "CALL_EXPR" and n.children and n.children[0].kind == "TYPE_REF":
            return self.parse_type(n.children[0].spelling)
        return None

    def x_CALL_EXPR(self, n):
        from porter.translate.kernel.class_templates import dependent_operator
        view = dependent_operator(self, n)       # `a + b` on T kept as an unresolved operator call
        if view is not None:
            types = [self.ty(c) for c in view.children]
            if any(halfprec.is_half(t) for t in types):
                # cuda_fp16.h's operator on a half, as halfprec lowers the resolved call (OpenCL half stores)
                return halfprec.operator(self, n, view.op, list(view.children), types)
            return getattr(self, "x_" + view.kind)(view)
        ft = self._functional_cast_type(n)
        if ft is not None:
            args = [c for c in n.children[1:] if c.kind not in NON_EXPR]
            if ft.kind == "scalar" and len(args) == 1:
                return self.t.convert(self.x(args[0]), ft, self, explicit=True)
            if ft.kind == "scalar" and not args:
                return self.zero(ft)
            if ft.kind == "vector":
                parts = [self.conv(self.x(a), ft.elem).text for a in args]
                return E(self.t.vector_constructor(self, ft, parts), ft)
            if ft.kind == "struct":
                e = ctors.construct(self, n, ft, args)
                if e is not None:
                    return e
            self.fail(n, f"the constructor `{n.text}`")
        v = traits.fold_static_call(self, n)     # `Ktraits::twice(3)`
        if v is not None:
            return E(self.t.literal(v, I32, self), I32, lit=v)
        e = halfprec.call(self, n)               # __half / __half2 and fp8 (cuda_fp16.h, cuda_fp8.h)
        if e is not None:
            return e
        name = self.callee_name(n)
        if name == "operator=" and self._callee_fn(n) is None:
            return refs.struct_assign(self, n)
        if n.kind == "CALL_EXPR" and n.children and n.children[0].kind == "DECL_REF_EXPR" and \
                n.children[0].ref_kind in ("VAR_DECL", "PARM_DECL") and not refs.is_copy(self, n) and \
                not name.startswith("operator"):
            self.fail(n, f"a call through the function pointer `{name}`")
        if name == "dim3" or n.kind in ("CXX_CONSTRUCT_EXPR", "CXX_TEMPORARY_OBJECT_EXPR") or \
                (name and self.parse_type(name).kind in ("vector", "struct")) or \
                (name and re.match(rf"\s*{re.escape(name)}\s*<", n.type or "") and
                 self.parse_type(n.type).kind == "struct"):       # `Loader<4>(t)`: a class template's instance
            t = self.ty(n)
            args = self.call_args(n)
            if t.kind == "vector":
                if len(args) == 1 and self.ty(args[0]).same(t):
                    return self.x(args[0])
                parts = [self.conv(self.x(a), t.elem).text for a in args]
                while len(parts) < t.n:
                    parts.append(self.t.literal(1, t.elem, self))
                return E(self.t.vector_constructor(self, t, parts), t)
            if t.kind == "struct" and len(args) == 1 and self.ty(args[0]).same(t):
                return self.x(args[0])
            if t.kind == "struct":
                e = ctors.construct(self, n, t, args)
                if e is not None:
                    return e
            if t.kind in ("struct", "vector") and not args:
                return self.zero(t)
            if t.kind in ("scalar",) and len(args) == 1:
                return self.conv(self.x(args[0]), t)
            self.fail(n, f"the constructor call `{n.text}`")
        fn = self._callee_fn(n)
        if fn is not None:
            if not fn.is_device_code:
                self.fail(n, f"a call to host function `{name}` from device code")
            return self.user_call(fn, n)
        args = self.call_args(n)
        if self.warp32 is not None and name in warp32.SHUFFLES:
            return warp32.shuffle(self, name, n, args)     # CUDA's warps emulated in shared memory
        if name in asserts.FAIL_CALLS:      # statements are checked (asserts.py); inside an expression it is not
            self.fail(n, "an `assert` inside an expression (cuport checks an assert written as a statement)")
        # cooperative groups and CUB collectives as coop.lower wrote them
        e = coop.call(self, name, n, args) if name.startswith("__cuport_") else self.t.call(self, name, n, args)
        if e is not None:
            return e
        if name in ("printf", "fprintf", "puts"):
            self.fail(n, "`printf` in device code")
        if name in ("malloc", "free", "cudaMalloc", "cudaFree"):
            self.fail(n, f"`{name}` in device code")
        if name.startswith("cuda") or name.startswith("cublas"):
            self.fail(n, f"a CUDA runtime call `{name}` in device code (dynamic parallelism)", "CP905")
        self.fail(n, f"a call to `{name}` (no device definition in this file and no target equivalent)")

    def check_mask(self, n, mask_n):
        """Full-mask *_sync intrinsics only: a partial mask selects lanes no target can select."""
        if mask_n is None:
            return
        s = mask_n.strip
        if s.kind == "CALL_EXPR" and self.callee_name(s) == "__activemask":
            return
        v = mask_n.value
        if isinstance(v, int) and (v & 0xffffffff) == 0xffffffff:
            return
        self.fail(mask_n, f"a partial or non-constant lane mask `{mask_n.text}`")

    def user_call(self, fn, n, args=None, ctor=None, ret=None) -> E:
        """A call of device function fn; `ctor`: fn is a constructor of that struct type (ctors.py), n its call."""
        if ctor is None and args is None and fn.body is not None:
            v = traits.fold_call(self, fn, n)       # a constexpr function of constants (`cilog2(kNElts)`)
            rt = self.parse_type(result_type_spelling(fn.node) or "")
            if v is not None and rt.kind == "scalar" and (rt.is_int or rt.name == "bool"):
                return E(self.t.literal(v, rt.unqualified(), self), rt.unqualified(), lit=v)
        if any(f is fn for f, _k in self.stack) or fn is self.fn:
            self.fail(n, f"recursion (`{fn.name}` calls itself)")
        subst = self._deduce(fn, n)
        args = self.call_args(n) if args is None else args
        key_parts, binds = [], []
        if methods.is_method(fn):       # the object is the first argument
            kp, bind, args = methods.self_arg(self, fn, n, args)
            key_parts.append(kp)
            binds.append(bind)
            subst = methods.class_subst(self, fn, bind[4].unqualified(), subst)
        elif ctor is not None:
            subst = methods.class_subst(self, fn, ctor, subst)
        # default arguments
        params = fn.params
        if len(args) > len(params):
            self.fail(n, f"a variadic call to `{fn.name}`")
        for i, p in enumerate(params):
            pt = self.parse_type(p.node.type if "type-parameter" in p.node.canonical_type.spelling or
                                 p.node.type.strip() in subst else p.node.canonical_type.spelling, subst)
            if i < len(args):
                a = args[i]
            else:
                d = [c for c in p.node.children if c.kind not in NON_EXPR and not c.kind.endswith("_ATTR")]
                if not d:
                    self.fail(n, f"a call to `{fn.name}` with missing arguments")
                a = d[-1]
            flat = struct_params.whole_arg(self, fn, p, pt, a)     # a struct parameter holding pointers
            if flat is not None:
                key_parts.append(flat[0])
                binds.append(flat[1])
            elif pt.kind == "pointer" or pt.kind == "array":
                # a null pointer constant: C passes it (OpenCL); GLSL has no null to bind (ptr refuses it)
                root, off = (Root("0", "null", element(pt), "private", None), None) \
                    if pt.kind == "pointer" and self.t.native_pointers and self.is_null(a) else self.ptr(a)
                key_parts.append(self.t.pointer_param_key(self, root))
                binds.append(("ptr", p, root, off, pt, a))
            elif pt.ref:
                kp, bind = refs.ref_arg(self, fn, p, pt, a)
                key_parts.append(kp)
                binds.append(bind)
            else:
                e = self.conv(self.x(a), pt.unqualified())
                key_parts.append(("val",))
                binds.append(("val", p, e, None, pt, a))
        refs.check_call(self, fn, n, binds)
        key = (id(fn.node), tuple(sorted((k, str(v)) for k, v in subst.items())), tuple(key_parts), str(ctor))
        if key not in self.functions:
            self.specialize(fn, key, subst, binds, n, ctor)
        for kind, p, v, off, pt, a in binds:
            need = self.fn_demands.get(key, {}).get(id(p.node))
            if need and not self._multiple(a, need):
                # the callee converted a byte offset with it (pointers.view): exact only for multiples
                self.fail(a, f"`{a.text}` passed as `{p.name}` of `{fn.name}`, which offsets a pointer by it in "
                             f"bytes: not provably a multiple of {need}")
        fname = self.functions[key][0]
        call_args = []
        for kind, p, v, off, pt, a in binds:
            if kind == "ptr":
                call_args += self.t.pointer_arg(self, v, off, a)
            elif kind == "flat":
                call_args += struct_params.flat_args(self, v, a)
            else:
                call_args.append(v.text)
        for g in self.fn_globals.get(key, ()):      # file-scope device variables the callee touches
            if not self.frame.is_kernel and g not in self.frame.globals:
                self.frame.globals.append(g)
            call_args += self.t.device_global_args(self, self.buffers[g])
        # then the target's own (OpenCL: __local arrays passed down; function_head puts them last as well)
        call_args += self.t.call_extra_args(self, key)
        rt = ctor if ctor is not None else ret if ret is not None else self.call_type(n)
        return E(f"{fname}({', '.join(call_args)})", rt.unqualified())

    def specialize(self, fn, key, subst, binds, call_node, ctor=None):
        self.functions[key] = (None, None)   # placeholder (callees first)
        saved = (self.frame, self.lines, self.indent)
        self.stack.append((fn, key))
        fr = Frame(fn, dict(subst), False)
        self.frame = fr
        traits.local_aliases(self, fn)
        rs = result_type_spelling(fn.node, canonical=False) or "void"
        cs = result_type_spelling(fn.node) or rs
        fr.ret = self.parse_type(cs if "type-parameter" not in cs else rs, subst) if ctor is None else ctor
        if fr.ret.kind == "pointer":
            if not returned_pointers.wanted(self, fn):
                self.fail(fn.node, f"device function `{fn.name}` returning a pointer")
            fr.returns_pointer, fr.ret = True, I32       # the offset into the parameter it returns

        refs.check_return(self, fn, fr.ret)
        params = []
        for kind, p, v, off, pt, _a in binds:
            pname = self.name_of(p.node)
            if kind == "ptr":
                params += self.t.pointer_param(self, fr, p.node, pname, v, pt)
            elif kind == "ref":
                params.append(refs.ref_param(self, fr, p, pt, pname, v, off))
            elif kind == "flat":
                params += struct_params.flat_params(self, fr, p, pname, v)
            else:
                t = pt.unqualified()
                if t.kind == "struct":
                    self.use_struct(t.name, p.node)
                params.append(f"{self.t.type_name(t, self)} {pname}")
        methods.enter(self, fn, fr, binds)
        fname = self.t.function_name(self, methods.name(fn, fr, ctor), key, subst, binds)
        self.functions[key] = (fname, None)
        self.lines, self.indent = [], 1
        if fn.body is None:
            self.fail(call_node, f"`{fn.name}` has no body in this file")
        if ctor is not None:
            ctors.body_prologue(self, fn, fr, ctor)
        self.block_children(fn.body)
        self.resolve_pending(fr)
        self.fn_demands[key] = getattr(fr, "demands", {})
        if ctor is not None:
            self.emit(f"return {self.name_of(fr.self_decl)};")
        self.fn_globals[key] = list(fr.globals)
        for g in fr.globals:
            params += self.t.device_global_params(self, self.buffers[g])
        body = self.lines
        head = self.t.function_head(self, fr.ret, fname, params)
        text = "\n".join([head + " {"] + body + ["}"])
        self.stack.pop()
        self.frame, self.lines, self.indent = saved
        # keep callees before callers
        del self.functions[key]
        self.functions[key] = (fname, text)

