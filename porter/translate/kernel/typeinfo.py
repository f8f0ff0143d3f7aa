"""C types in the emitter: the type of each expression (clang's spelling parsed, templates substituted,
double demoted where the target lacks it), the usual conversions, and declarations (variables, shared
arrays, aggregate initialisers)."""
from __future__ import annotations

import re
from porter.translate import warp_sizing
from porter.translate.kernel import class_templates
from porter.translate.kernel import ctype as ct
from porter.translate.kernel import methods
from porter.translate.kernel import refs
from porter.translate.kernel import traits
from porter.translate.kernel.ctype import BOOL, NON_EXPR, CType, I32, I64, U32  # noqa: F401 (NON_EXPR re-exported)
from porter.translate.kernel.target import E


CASTS = ("CSTYLE_CAST_EXPR", "CXX_STATIC_CAST_EXPR", "CXX_FUNCTIONAL_CAST_EXPR", "CXX_CONST_CAST_EXPR",
          "CXX_REINTERPRET_CAST_EXPR")
COMPARE = ("<", ">", "<=", ">=", "==", "!=")
SIDE_EFFECT_FREE_CALLS = re.compile(r"^(__)?(sqrt|rsqrt|exp|exp2|log|log2|sin|cos|tan|fabs|fmin|fmax|fma|min|max|"
                                     r"abs|floor|ceil|pow)f?$")
MODE_KINDS = {"PAREN_EXPR", "DECL_REF_EXPR", "MEMBER_REF_EXPR", "ARRAY_SUBSCRIPT_EXPR", "UNARY_OPERATOR",
               "BINARY_OPERATOR", "COMPOUND_ASSIGNMENT_OPERATOR"}
def ptrlike(t: CType) -> bool:
    return t is not None and t.kind in ("pointer", "array")
def element(t: CType) -> CType:
    if t.kind == "pointer":
        return t.elem
    if t.kind == "array":
        if len(t.dims) > 1:
            return ct.array(t.elem, t.dims[1:])
        return t.elem
    return ct.UNKNOWN


class TypesMixin:
    # ------------------------------------------------------------------ types
    def parse_type(self, spelling: str, subst=None) -> CType:
        subst = subst if subst is not None else (self.frame.subst if self.frame else self.kernel_subst)
        # qualifiers go (`std::`), except a traits member's (`Ktraits::input_t`, in the substitution: traits.py)
        s = re.sub(r"\b((?:[A-Za-z_]\w*\s*::\s*)+)(\w+)", lambda m: re.sub(r"\s+", "", m.group(0))
                   if re.sub(r"\s+", "", m.group(0)) in subst else m.group(2), spelling or "")
        if "<" in s and getattr(self.u, "class_templates", None):
            s = class_templates.rewrite(self.u, s, subst)       # `TensorDims<index_t>` -> TensorDims_i64
        t = ct.parse(s, subst, self.u.struct_names)
        return self.demote(t)

    def demote(self, t: CType) -> CType:
        if self.uses_double or t is None:
            return t
        if t.kind == "scalar" and t.name == "f64":
            return CType("scalar", "f32", const=t.const, volatile=t.volatile)
        if t.kind in ("pointer", "array", "vector") and t.elem is not None:
            e = self.demote(t.elem)
            if e is not t.elem:
                return ct.with_elem(t, e)
        return t

    def decl_type(self, decl) -> CType:
        """Declared type of a VAR_DECL / PARM_DECL / FIELD_DECL node."""
        key = ("decl", id(decl))
        fr = self.frame
        if fr is not None and key in fr.types:
            return fr.types[key]
        if isinstance(decl, class_templates.FieldView):      # a field of a struct template's instance
            canon = decl.canonical_type.spelling or ""     # `uint` is a typedef the spelling does not resolve
            dep = not canon or "type-parameter" in canon or "dependent" in canon
            t = self.parse_type(decl.type if dep else canon, decl.subst)
            if fr is not None:
                fr.types[key] = t
            return t
        canon = decl.canonical_type.spelling
        if "type-parameter" in canon or "dependent" in canon:
            t = self.parse_type(decl.type)
        else:
            t = self.parse_type(canon)
            if t.kind == "pointer" and "__restrict" in decl.type:
                t = CType("pointer", elem=t.elem, const=t.const, restrict=True)
        if t.kind == "unknown" and re.fullmatch(r"(?:const\s+)?auto", decl.type.strip()) and fr is not None \
                and decl.kind == "VAR_DECL" and decl.children:
            # `auto v = dims.sizes[d];` in a template (clang leaves it undeduced): its initialiser's type here
            t = self.ty(decl.children[-1])
            if decl.type.strip().startswith("const") and t.kind == "scalar":
                t = CType("scalar", t.name, const=True)
        if t.kind == "array" and None in t.dims and decl.kind == "VAR_DECL":
            t = self._folded_dims(decl, t)
        if fr is not None:
            fr.types[key] = t
        return t

    def _folded_dims(self, decl, t: CType) -> CType:
        """`double a[rd2]` with `constexpr int rd2 = rd * rd` (rd a template parameter): the size folded."""
        names = re.findall(r"\[\s*([^\]]*?)\s*\]", decl.type)
        if len(names) != len(t.dims):
            return t
        kids = [c for c in decl.children if c.kind not in NON_EXPR and not c.kind.endswith("_ATTR")]
        dims = list(t.dims)
        for i, (d, text) in enumerate(zip(dims, names)):
            if d is None and text:
                node = next((c for c in kids if self.model.source.slice(c.start, c.end).strip() == text), None)
                v = self.const_int(node) if node is not None else None
                if v is None or v <= 0:
                    return t
                dims[i] = v
        return ct.array(t.elem, dims)

    def const_int(self, n, depth: int = 0) -> int | None:
        """An integer constant expression over literals, template parameters and const / constexpr locals."""
        if n is None or depth > 20:
            return None
        v = n.value
        if isinstance(v, int) and not isinstance(v, bool):
            return v
        k = n.kind
        if k in ("PAREN_EXPR", "UNEXPOSED_EXPR") and len(n.children) == 1:
            return self.const_int(n.children[0], depth + 1)
        if k == "DECL_REF_EXPR":
            fr = self.frame
            subst = fr.subst if fr is not None else self.kernel_subst
            if n.ref_kind in ("TEMPLATE_NON_TYPE_PARAMETER", "NON_TYPE_TEMPLATE_PARAMETER"):
                sv = subst.get(n.spelling)
                return sv if isinstance(sv, int) else None
            r = n.ref
            if r is None and not n.spelling:        # `Ktraits::kNThreads`: the traits instance's value
                return traits.member_value(subst, n)
            if r is not None and r.kind == "VAR_DECL" and re.search(r"\b(const|constexpr)\b",
                                                                    self.model.source.slice(r.start, r.end)):
                return self.const_int(self.init_of(r), depth + 1)
            return None
        if k == "CALL_EXPR":            # a constexpr function of constants (traits.fold_call)
            fn = self._callee_fn(n)
            return traits.fold_call(self, fn, n) if fn is not None and fn.body is not None else None
        if k == "CONDITIONAL_OPERATOR" and len(n.children) == 3:    # `kN < 32 ? kN : 32`
            c = self.const_int(n.children[0], depth + 1)
            return None if c is None else self.const_int(n.children[1 if c else 2], depth + 1)
        if k == "BINARY_OPERATOR" and len(n.children) == 2 and n.op in ("<", ">", "<=", ">=", "==", "!="):
            a, b = (self.const_int(c, depth + 1) for c in n.children)
            if a is None or b is None:
                return None
            return int({"<": a < b, ">": a > b, "<=": a <= b, ">=": a >= b, "==": a == b, "!=": a != b}[n.op])
        if k == "BINARY_OPERATOR" and len(n.children) == 2 and n.op in ("+", "-", "*", "/", "%", "<<", ">>"):
            a, b = (self.const_int(c, depth + 1) for c in n.children)
            if a is None or b is None or (n.op in ("/", "%") and b == 0) or (n.op in ("<<", ">>") and not 0 <= b < 63):
                return None
            if n.op in ("/", "%"):
                q = abs(a) // abs(b) * (1 if (a >= 0) == (b >= 0) else -1)   # C truncates toward zero
                return q if n.op == "/" else a - b * q
            return {"+": a + b, "-": a - b, "*": a * b, "<<": a << b, ">>": a >> b}[n.op]
        return None

    def ty(self, n) -> CType:
        fr = self.frame
        key = id(n)
        if key in fr.types:
            return fr.types[key]
        t = self._ty(n)
        fr.types[key] = t
        return t

    def _ty(self, n) -> CType:
        k = n.kind
        if k == "PAREN_EXPR" and n.children:
            return self.ty(n.children[-1])
        if k in ("INTEGER_LITERAL",):
            return self.parse_type(n.canonical_type.spelling)
        if k == "FLOATING_LITERAL":
            return self.demote(self.parse_type(n.canonical_type.spelling))
        if k == "CXX_BOOL_LITERAL_EXPR":
            return BOOL
        if k == "CHARACTER_LITERAL":
            return ct.scalar("i8")
        # builtin() sees through casts (pattern matching); a type must not: `(int64_t)blockIdx.x` is 64-bit
        if n.kind not in CASTS and n.builtin() is not None:
            return U32
        if n.kind not in CASTS and n.is_warp_size():
            return I32
        if k == "DECL_REF_EXPR":
            r = n.ref
            if r is not None and r.kind in ("VAR_DECL", "PARM_DECL"):
                return self.decl_type(r)
            if n.ref_kind in ("TEMPLATE_NON_TYPE_PARAMETER", "ENUM_CONSTANT_DECL", "NON_TYPE_TEMPLATE_PARAMETER"):
                return I32
            if r is None and not n.spelling:
                v = traits.member_value(self.frame.subst, n)      # `Ktraits::kNThreads`
                if v is not None:
                    return getattr(v, "ctype", I32)
        canon = ""
        try:
            canon = n.canonical_type.spelling
        except Exception:
            pass
        if canon and "type-parameter" not in canon and "dependent" not in canon and canon != "<overloaded function type>":
            t = self.parse_type(canon)
            if t.kind != "unknown":
                return t
        # dependent (template) expressions: compute structurally
        if k in ("UNEXPOSED_EXPR",) and len(n.children) == 1:
            return self.ty(n.children[0])
        if k == "DECL_REF_EXPR":
            t = self.parse_type(n.type)
            return t
        if k == "ARRAY_SUBSCRIPT_EXPR" and len(n.children) == 2:
            bt = self.ty(n.children[0])
            return element(bt)
        if k == "MEMBER_REF_EXPR" and (not n.children or n.children[0].strip.kind == "CXX_THIS_EXPR"):
            st = getattr(self.frame, "self_type", None)       # a member of a method's own object (methods.py)
            for fname, fnode in self.u.structs.get(st.name if st is not None else "", []):
                if fname == n.spelling:
                    return self.decl_type(fnode)
            return self.parse_type(n.type)
        if k == "UNARY_OPERATOR" and n.op == "*" and n.children and n.children[0].strip.kind == "CXX_THIS_EXPR" \
                and getattr(self.frame, "self_type", None) is not None:
            return self.frame.self_type
        if k == "MEMBER_REF_EXPR" and n.children:
            bt = self.ty(n.children[0])
            if bt.kind == "vector":
                return bt.elem
            if bt.kind == "struct" and bt.name in self.u.structs:
                member = class_templates.member_name(self.model, n)
                for fname, fnode in self.u.structs[bt.name]:
                    if fname == member:
                        return self.decl_type(fnode)
            return self.parse_type(n.type)
        if k == "CALL_EXPR":
            view = class_templates.dependent_operator(self, n)     # `a + b` on T: an unresolved operator call
            if view is not None:
                return self.ty(view)
        if k == "BINARY_OPERATOR" and len(n.children) == 2 and methods.struct_operands(self, n):
            return methods.result_type(self, methods.operator_fn(self, n, n.op, list(n.children)),
                                       self.ty(n.children[0]).unqualified())
        if k == "BINARY_OPERATOR" and len(n.children) == 2:
            op = n.op
            if op in COMPARE or op in ("&&", "||"):
                return BOOL
            a, b = self.ty(n.children[0]), self.ty(n.children[1])
            if op == "=":
                return a
            if op == ",":
                return b
            if op in ("<<", ">>"):
                return ct.promote(a)
            if a.kind == "pointer" or b.kind == "pointer" or a.kind == "array" or b.kind == "array":
                if op == "-" and ptrlike(a) and ptrlike(b):
                    return I64
                p = a if ptrlike(a) else b
                return ct.pointer(element(p)) if p.kind == "array" else p
            return ct.common(a, b)
        if k == "COMPOUND_ASSIGNMENT_OPERATOR" and n.children:
            return self.ty(n.children[0])
        if k == "UNARY_OPERATOR" and n.children:
            a = self.ty(n.children[0])
            op = n.op
            if op == "!":
                return BOOL
            if op in ("-", "+", "~"):
                return ct.promote(a)
            if op == "&":
                return ct.pointer(a)
            if op == "*":
                return element(a)
            return a
        if k == "CONDITIONAL_OPERATOR" and len(n.children) == 3:
            a, b = self.ty(n.children[1]), self.ty(n.children[2])
            if a.same(b):
                return a.unqualified()
            if a.is_arith and b.is_arith:
                return ct.common(a, b)
            return a
        if k in CASTS:
            return self.parse_type(n.type)
        if k == "CALL_EXPR":
            return self.call_type(n)
        return self.parse_type(n.type)

    # ------------------------------------------------------------------ conversions
    def conv(self, e: E, dst: CType, implicit_ok: bool = False) -> E:
        return self.t.convert(e, dst.unqualified(), self, explicit=False, implicit_ok=implicit_ok)

    def cond(self, n) -> E:
        """An expression used as a condition."""
        if self.ty(n).kind == "pointer":
            return self.null_test(n, False)        # `if (p)`: p is not null
        e = self.x(n)
        return self.to_bool(e, n)

    def to_bool(self, e: E, n=None) -> E:
        if e.ct.kind == "pointer":
            self.fail(n, "a pointer used as a truth value (pointer comparison)")
        return self.t.convert(e, BOOL, self)


    # ------------------------------------------------------------------ declarations
    def init_of(self, d):
        exprs = [c for c in d.children if c.kind not in NON_EXPR and not c.kind.endswith("_ATTR")]
        if not exprs:
            return None
        t = d.type
        if "[" in t and exprs[-1].kind not in ("INIT_LIST_EXPR", "STRING_LITERAL"):
            return None
        last = exprs[-1]
        # the array size expressions of `T a[N]` are children too: an initialiser follows `=`, `(` or `{`
        if last.start < d.start or last.kind == "INTEGER_LITERAL" and "[" in t:
            return None
        if last.kind in ("CXX_CONSTRUCT_EXPR", "CALL_EXPR") and not last.children and \
                any(c.kind in ("CUDACONSTANT_ATTR", "CUDADEVICE_ATTR") for c in d.children) and \
                not re.search(r"[=({]", self.model.source.slice(d.start, d.end).split(d.spelling, 1)[-1]):
            return None     # `__constant__ S s;`: clang's implicit construction is no initialiser (the host sets s)
        if last.kind in ("CXX_CONSTRUCT_EXPR", "CALL_EXPR") and not last.children and \
                isinstance((getattr(self.u, "class_templates", None) or {}).get(last.spelling), tuple) and \
                not re.search(r"[=({]", self.model.source.slice(d.start, d.end).split(d.spelling, 1)[-1]):
            return None     # `Dims<int, 2> d;` of a plain struct template (no constructor): no initialiser
        return last

    def var_decl(self, d) -> list[str]:
        if any(c.kind == "CUDASHARED_ATTR" for c in d.children):
            if self.decl_type(d).kind == "pointer":
                return self.t.shared_pointer_decl(self, d, self.decl_type(d), self.name_of(d))
            self.shared_decl(d)
            return []
        if any(c.kind == "CUDACONSTANT_ATTR" for c in d.children):
            self.fail(d, "a `__constant__` variable declared inside a function")
        t = self.decl_type(d)
        init = self.init_of(d)
        name = self.name_of(d)
        if "static" in d.text.split("=")[0].split():
            self.fail(d, f"a `static` local variable `{d.spelling}`")
        if t.kind == "pointer":
            return self.t.pointer_decl(self, d, t, name, init)
        if t.ref:
            return refs.ref_decl(self, d, t, name, init)
        if t.kind == "unknown" and "(*)[" in d.type.replace(" ", ""):
            bound = self.array_pointer_decl(d, name)      # `T (*p)[B][C]` over an array of T: element offsets
            if bound is not None:
                return bound
            self.fail(d, f"a pointer to an array `{d.spelling}` (of type `{d.type}`)")
        if t.kind == "unknown" and "(*)" in d.type:
            self.fail(d, f"a function pointer `{d.spelling}`")
        if t.kind == "unknown" or t.kind == "void":
            self.fail(d, f"a variable of type `{d.type}`{class_templates.why_not(self.u, d.type)}")
        if t.kind == "struct":
            self.use_struct(t.name, d)
        if t.kind == "array" and t.elem is not None and t.elem.kind == "struct":
            self.use_struct(t.elem.name, d)      # `U ux[2]`: U defined though no variable has its type
        if t.kind == "array":
            if any(x is None for x in t.dims):
                self.fail(d, f"a local array `{d.spelling}` without a constant size")
            if element(t).kind == "pointer" or t.elem.kind == "pointer":
                self.fail(d, f"an array of pointers `{d.spelling}`")
            text = self.t.array_decl(self, t, name)
            if init is not None:
                text += " = " + self.array_init(init, t).text
            return [text + ";"]
        # a ballot kept in a variable: keep the whole mask when every use reads it as a mask
        if init is not None and self.t.ballot_var(self, d, init):
            return self.t.ballot_decl(self, d, name, init)
        text = f"{self.t.type_name(t.unqualified(), self)} {name}"
        from porter.translate.kernel import ctors
        if t.kind == "struct" and ctors.user_ctors(self, t.name):
            # `Pair<T> p(a, b);` in a template: clang keeps the arguments as the declaration's children (the
            # template's own arguments `Dims<int, 2>` are children too: only what follows `name(` counts);
            # `Rec<T> r;` is the default constructor, never an uninitialised local
            src = self.model.source
            after = re.compile(r"\b" + re.escape(d.spelling) + r"\s*\(")
            args = [c for c in d.children if c.kind not in NON_EXPR and not c.kind.endswith("_ATTR")
                    and after.search(src.slice(d.start, c.start))]
            bare = init is None or init.kind in ("CALL_EXPR", "CXX_CONSTRUCT_EXPR") and not init.children and \
                not args and self.callee_name(init) in ("", t.name, ctors.struct_node(self, t.name).spelling)
            if args and (len(args) > 1 or self.ty(args[0]).kind in ("scalar", "vector")) or bare:
                e = ctors.construct(self, d, t.unqualified(), args)
                if e is None:
                    self.fail(d, f"the initialisation `{d.text}`")
                return [f"{text} = {e.text};"]
        if init is not None:
            if init.kind == "INIT_LIST_EXPR":
                e = self.aggregate(init, t)
            elif init.kind in ("CALL_EXPR", "CXX_CONSTRUCT_EXPR") and t.kind in ("vector", "struct") and \
                    self.callee_name(init) in ("", t.name) and t.kind == "struct" and not refs.copy_of(self, init, t):
                e = self.aggregate(init, t)
            else:
                e = self.conv(self.x(init), t, implicit_ok=True)
            text += f" = {e.text}"
            if t.const and t.kind == "scalar":
                text = "const " + text
        return [text + ";"]

    def shared_decl(self, d):
        t = self.decl_type(d)
        name = self.name_of(d)
        if self.init_of(d) is not None and t.kind != "array":
            self.fail(d, "an initialised `__shared__` variable")
        extern = "extern" in d.text.split(d.spelling)[0]
        # one array per declaration (per instance of a function template, as in CUDA): a second specialisation
        # of the function, or another frame referring to it, uses the array already made
        key = self.shared_key(d)
        found = next((s for s in self.shared.values() if s.get("key") == key), None)
        if found is not None:
            self.frame.names[id(d)] = found["name"]
            return
        if name in self.shared:
            # another function's (or template instance's) array of the same name: its own storage (fresh()
            # alone could give the name back when no local holds it, merging the two arrays)
            base = name
            while name in self.shared:
                self.idents.add(name)
                name = self.fresh(base)
            self.frame.names[id(d)] = name
        if extern:
            if len([s for s in self.shared.values() if s["extern"]]) >= 1:
                self.fail(d, "more than one `extern __shared__` array (they alias one another)")
            elem = element(t) if t.kind == "array" else t
            info = {"name": name, "type": t, "elem": elem, "extern": True, "node": d, "dims": (None,)}
        else:
            if t.kind == "array" and any(x is None for x in t.dims):
                self.fail(d, f"shared array `{d.spelling}` without a constant size")
            info = {"name": name, "type": t, "elem": element(t) if t.kind == "array" else t, "extern": False,
                    "node": d, "dims": t.dims if t.kind == "array" else ()}
        if info["elem"].kind == "struct":
            self.use_struct(info["elem"].name, d)
        info["key"] = key
        warp_sizing.resized(self, d, info)
        self.shared[name] = info
        self.t.shared_declared(self, info)

    def shared_key(self, d):
        """What identifies the storage of the `__shared__` declaration d: the declaration, and within a function
        the template arguments it is instantiated with (each instance has its own array in CUDA)."""
        fn = self.model.function_of(d)
        if fn is None or not fn.is_template:
            return (id(d), ())
        from porter.translate.templates import template_params
        own = {p for p, _k, _d in template_params(fn.node)}
        return (id(d), tuple(sorted((k, str(v)) for k, v in self.frame.subst.items() if k in own)))

    def array_init(self, init, t: CType) -> E:
        if init.kind != "INIT_LIST_EXPR":
            self.fail(init, "an array initialised from a non-list expression")
        return self.aggregate(init, t)

    def aggregate(self, init, t: CType) -> E:
        """An initialiser list (possibly partial: C zero-fills the rest) as a target constructor."""
        items = [c for c in init.children if c.kind not in NON_EXPR] if init.kind in ("INIT_LIST_EXPR",
                                                                                      "CALL_EXPR") else []
        if t.kind == "array":
            n = t.dims[0]
            sub = element(t) if len(t.dims) == 1 else ct.array(t.elem, t.dims[1:])
            if len(items) == 1 and items[0].kind != "INIT_LIST_EXPR" and len(t.dims) > 1:
                # {0.0f} for a 2-D array: brace elision; only the all-zero form is supported
                v = items[0].value
                if v not in (0, 0.0):
                    self.fail(init, "brace elision in a multi-dimensional initialiser")
                items = []
            parts = []
            for i in range(n):
                if i < len(items):
                    it = items[i]
                    if it.kind == "INIT_LIST_EXPR":
                        parts.append(self.aggregate(it, sub).text)
                    else:
                        parts.append(self.conv(self.x(it), sub).text)
                else:
                    parts.append(self.zero(sub).text)
            return E(self.t.array_constructor(self, t, parts), t)
        if t.kind == "vector":
            parts = [self.conv(self.x(i), t.elem).text for i in items]
            while len(parts) < t.n:
                parts.append(self.zero(t.elem).text)
            return E(self.t.vector_constructor(self, t, parts), t)
        if t.kind == "struct":
            # `T v(a, b)` and `T v = {a, b}` with constructors: a constructor, not the fields in order
            if init.kind in ("CALL_EXPR", "CXX_CONSTRUCT_EXPR", "CXX_TEMPORARY_OBJECT_EXPR", "INIT_LIST_EXPR"):
                from porter.translate.kernel import ctors   # (lazy: ctors is the heavier module)
                e = ctors.construct(self, init, t, items)   # `T v(a, b)`: its constructor, not field order
                if e is not None:
                    return e
            fields = self.u.structs[t.name]
            parts = []
            for i, (_fname, fnode) in enumerate(fields):
                ft = self.decl_type(fnode)
                if i < len(items):
                    it = items[i]
                    parts.append(self.aggregate(it, ft).text if it.kind == "INIT_LIST_EXPR"
                                 else self.conv(self.x(it), ft).text)
                else:
                    parts.append(self.zero(ft).text)
            return E(self.t.struct_constructor(self, t, parts), t)
        if len(items) == 1:
            return self.conv(self.x(items[0]), t)
        if not items:
            return self.zero(t)
        self.fail(init, f"an initialiser list for `{t}`")

    def zero(self, t: CType) -> E:
        if t.kind == "scalar":
            return E(self.t.literal(0, t, self), t, lit=0)
        if t.kind == "vector":
            return E(self.t.vector_constructor(self, t, [self.t.literal(0, t.elem, self)] * t.n), t)
        if t.kind == "array":
            sub = element(t) if len(t.dims) == 1 else ct.array(t.elem, t.dims[1:])
            z = self.zero(sub).text
            return E(self.t.array_constructor(self, t, [z] * t.dims[0]), t)
        if t.kind == "struct":
            parts = [self.zero(self.decl_type(fn)).text for _f, fn in self.u.structs[t.name]]
            return E(self.t.struct_constructor(self, t, parts), t)
        self.fail(None, f"a zero value of `{t}`")

