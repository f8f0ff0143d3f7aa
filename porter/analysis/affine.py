"""Index expressions as polynomials over named variables (threadIdx.x, blockIdx.y, blockDim.x, warpSize, loop
variables, parameters), after folding constants and substituting single-assignment locals. Affine forms are the
degree-1 case; rules read coefficients of the thread indices from them."""
from __future__ import annotations

from fractions import Fraction

from porter.frontend.model import FileModel, Node

THREAD_VARS = ("threadIdx.x", "threadIdx.y", "threadIdx.z")
# kinds whose Node.builtin() can be non-None (it strips parentheses and casts down to a MEMBER_REF_EXPR)
_BUILTIN_KINDS = frozenset({"MEMBER_REF_EXPR", "PAREN_EXPR", "CSTYLE_CAST_EXPR", "CXX_STATIC_CAST_EXPR",
                            "CXX_FUNCTIONAL_CAST_EXPR"})
_TAINT_CALLS = ("__shfl", "__ballot", "__activemask", "__match", "__lane", "atomic",
                # cooperative groups: g.thread_rank(), tile.meta_group_rank(), tile.shfl_*(), tile.ballot()...
                "thread_rank", "meta_group_rank", "thread_index", "shfl", "ballot", "match_any", "match_all")
_MAX_DEPTH = 12


class Poly:
    __slots__ = ("terms",)

    def __init__(self, terms=None):
        self.terms: dict[tuple, Fraction] = {k: v for k, v in (terms or {}).items() if v != 0}

    @classmethod
    def const(cls, c):
        return cls({(): Fraction(c)})

    @classmethod
    def var(cls, name):
        return cls({(name,): Fraction(1)})

    def __add__(self, o):
        t = dict(self.terms)
        for k, v in o.terms.items():
            t[k] = t.get(k, 0) + v
        return Poly(t)

    def __neg__(self):
        return Poly({k: -v for k, v in self.terms.items()})

    def __sub__(self, o):
        return self + (-o)

    def __mul__(self, o):
        t: dict = {}
        for k1, v1 in self.terms.items():
            for k2, v2 in o.terms.items():
                k = tuple(sorted(k1 + k2))
                t[k] = t.get(k, 0) + v1 * v2
        return Poly(t)

    def scale(self, c):
        return Poly({k: v * c for k, v in self.terms.items()})

    @property
    def constant(self):
        return self.terms.get((), Fraction(0))

    def is_const(self) -> bool:
        return all(k == () for k in self.terms)

    def coeff(self, var: str):
        """Coefficient of the linear term `var`; None when var also appears in a product (not affine in var)."""
        for k in self.terms:
            if var in k and k != (var,):
                return None
        return self.terms.get((var,), Fraction(0))

    def variables(self) -> set:
        return {v for k in self.terms for v in k}

    def depends_on(self, prefix: str) -> bool:
        return any(v.startswith(prefix) for v in self.variables())

    def without(self, *vars_) -> "Poly":
        return Poly({k: v for k, v in self.terms.items() if not any(x in k for x in vars_)})

    def __eq__(self, o):
        return isinstance(o, Poly) and self.terms == o.terms

    def __hash__(self):
        return hash(frozenset(self.terms.items()))

    def __repr__(self):
        if not self.terms:
            return "0"
        parts = []
        for k, v in sorted(self.terms.items(), key=lambda kv: (len(kv[0]), kv[0])):
            mono = "*".join(k)
            vs = str(v) if v.denominator != 1 else str(v.numerator)
            parts.append(vs if not mono else (mono if v == 1 else f"{vs}*{mono}"))
        return " + ".join(parts).replace("+ -", "- ")


_WRITES = {"=", "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "<<=", ">>=", "++", "--"}


class Analysis:
    """Per-file facts shared by rules: which locals are reassigned, their definitions, index polynomials."""

    def __init__(self, model: FileModel):
        self.model = model
        self._assigned: set[int] | None = None
        self._poly_cache: dict[int, Poly | None] = {}
        self._taint_cache: dict[int, bool] = {}
        self._def_cache: dict[int, Node | None] = {}
        self._write_index: dict[int, list] | None = None

    @property
    def assigned(self) -> set[int]:
        """ids of declaration nodes written after their initialisation (loop counters, accumulators)."""
        if self._assigned is None:
            s = set()
            by_kind = self.model.by_kind
            for kind in ("BINARY_OPERATOR", "COMPOUND_ASSIGNMENT_OPERATOR", "UNARY_OPERATOR"):
                for n in by_kind.get(kind, ()):
                    target = None
                    if kind == "BINARY_OPERATOR" and n.op == "=" or kind == "COMPOUND_ASSIGNMENT_OPERATOR":
                        target = n.children[0] if n.children else None
                    elif kind == "UNARY_OPERATOR" and n.op in ("++", "--", "post++", "post--", "&"):
                        target = n.children[0] if n.children else None
                    if target is not None:
                        t = target.strip
                        if t.kind == "DECL_REF_EXPR" and t.ref is not None:
                            s.add(id(t.ref))
            for n in by_kind.get("CALL_EXPR", ()):
                oc = n.operator_call()      # `x += y` / `p += k` on a template type: an unresolved operator call
                if oc is not None and oc[0] in _WRITES and oc[1]:
                    t = oc[1][0].strip
                    if t.kind == "DECL_REF_EXPR" and t.ref is not None:
                        s.add(id(t.ref))
            self._assigned = s
        return self._assigned

    def definition(self, decl: Node) -> Node | None:
        """The initialiser of a local that is never reassigned."""
        if decl is None or decl.kind != "VAR_DECL" or id(decl) in self.assigned:
            return None
        key = id(decl)
        d = self._def_cache.get(key, False)
        if d is False:
            exprs = [c for c in decl.children if not c.kind.endswith("_ATTR") and c.kind not in ("TYPE_REF",
                                                                                                    "NAMESPACE_REF")]
            d = self._def_cache[key] = exprs[-1] if exprs else None
        return d

    def poly(self, node: Node | None, depth: int = 0) -> Poly | None:
        if node is None or depth > _MAX_DEPTH:
            return None
        key = id(node)
        if key in self._poly_cache:
            return self._poly_cache[key]
        p = self._poly(node, depth)
        self._poly_cache[key] = p
        return p

    def _poly(self, node: Node, depth: int) -> Poly | None:
        n = node.strip
        k = n.kind
        if k in ("INTEGER_LITERAL",):
            v = n.value
            return Poly.const(v) if isinstance(v, int) else None
        b = n.builtin()
        if b is not None:
            return Poly.var(f"{b[0]}.{b[1]}")
        if n.is_warp_size():
            return Poly.var("warpSize")
        if k == "DECL_REF_EXPR":
            v = n.value
            if isinstance(v, int) and n.ref_kind in ("ENUM_CONSTANT_DECL", "VAR_DECL", "NON_TYPE_TEMPLATE_PARAMETER",
                                                     "TEMPLATE_NON_TYPE_PARAMETER"):
                return Poly.const(v)
            d = self.definition(n.ref)
            if d is not None:
                p = self.poly(d, depth + 1)
                if p is not None:
                    return p
            return Poly.var(n.spelling)
        if k == "BINARY_OPERATOR" and len(n.children) == 2:
            v = n.value
            if isinstance(v, int):
                return Poly.const(v)
            op = n.op
            a = self.poly(n.children[0], depth + 1)
            if a is None:
                return None
            b_ = self.poly(n.children[1], depth + 1)
            if b_ is None:
                return None
            if op == "+":
                return a + b_
            if op == "-":
                return a - b_
            if op == "*":
                return a * b_
            if op == "<<" and b_.is_const():
                return a.scale(2 ** int(b_.constant))
            if op == "/" and b_.is_const() and b_.constant != 0:
                c = b_.constant
                if all((v / c).denominator == 1 for v in a.terms.values()):
                    return a.scale(Fraction(1) / c)
            return None
        if k == "UNARY_OPERATOR" and n.children:
            a = self.poly(n.children[0], depth + 1)
            if a is None:
                return None
            if n.op == "-":
                return -a
            if n.op == "+":
                return a
            return None
        v = n.value
        if isinstance(v, int):
            return Poly.const(v)
        return None

    def thread_dependent(self, node: Node | None, depth: int = 0) -> bool:
        """Whether the value may differ between threads of one block (threadIdx, lane ids, shuffles, loads)."""
        if node is None or depth > _MAX_DEPTH:
            return False
        key = id(node)
        if key in self._taint_cache:
            return self._taint_cache[key]
        self._taint_cache[key] = False  # cycle guard
        r = self._taint(node, depth)
        self._taint_cache[key] = r
        return r

    def _taint(self, node: Node, depth: int) -> bool:
        for n in node.walk():
            k = n.kind
            if k in _BUILTIN_KINDS:
                b = n.builtin()
                if b is not None and b[0] == "threadIdx":
                    return True
            elif k == "CALL_EXPR":
                if n.spelling.startswith(_TAINT_CALLS):
                    return True
            elif k == "DECL_REF_EXPR":
                r = n.ref
                if r is not None and r.kind == "VAR_DECL" and self._var_tainted(r, depth):
                    return True
        return False

    def _var_tainted(self, decl: Node, depth: int) -> bool:
        if self.thread_dependent(decl, depth + 1):
            return True
        if id(decl) in self.assigned:
            # any write to the variable with a thread-dependent value taints it
            for w in self._writes(decl):
                if self.thread_dependent(w, depth + 1):
                    return True
        return False

    def _writes(self, decl: Node):
        fn = decl.enclosing("FUNCTION_DECL", "FUNCTION_TEMPLATE", "CXX_METHOD")
        model = self.model
        ok = model._preorder_ok
        if ok is None:
            ok = model._preorder()
        if ok and (fn is None or fn._lo >= 0):
            # the same right-hand sides, in the same order, from an index of all assignments built once
            idx = self._write_index
            if idx is None:
                idx = self._write_index = {}
                for n in model.flat:
                    k = n.kind
                    if (k == "BINARY_OPERATOR" and n.op == "=") or k == "COMPOUND_ASSIGNMENT_OPERATOR":
                        t = n.children[0].strip if n.children else None
                        if t is not None and t.kind == "DECL_REF_EXPR" and len(n.children) > 1:
                            r = t.ref
                            if r is not None:
                                idx.setdefault(id(r), []).append(n)
            for n in idx.get(id(decl), ()):
                if fn is None or fn._lo <= n._lo < fn._hi:
                    yield n.children[1]
            return
        root = fn if fn is not None else None
        nodes = root.walk() if root is not None else self.model.all_nodes()
        for n in nodes:
            if (n.kind == "BINARY_OPERATOR" and n.op == "=") or n.kind == "COMPOUND_ASSIGNMENT_OPERATOR":
                t = n.children[0].strip if n.children else None
                if t is not None and t.kind == "DECL_REF_EXPR" and t.ref is decl and len(n.children) > 1:
                    yield n.children[1]


def analysis(model: FileModel) -> Analysis:
    a = getattr(model, "_analysis", None)
    if a is None:
        a = Analysis(model)
        model._analysis = a
    return a
