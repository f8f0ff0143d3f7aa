"""Index and guard expressions compiled from the AST into Python over the thread indices (`tx`, `ty`, `tz`),
the variables of enclosing loops and kernel-uniform unknowns; what cannot be compiled raises Opaque."""
from __future__ import annotations

from porter.frontend.model import FileModel, Function, Node
from porter.analysis.barriers import barrier_functions, contains_barrier, facts
from porter.analysis.code import Code, Guard, Loop, Opaque, _join
from porter.analysis.ranges import IV_GLOBALS, Iv
from porter.analysis.syntax import array_dim_exprs, for_parts


_CAP_ITER = 256            # iterations of one loop per thread (a bounded loop with more is "capped")
_CAP_UNBOUNDED = 8         # iterations tried for a loop whose bound is a kernel argument
_CAP_POINTS = 200_000      # evaluations per access and shape
_INT_TYPES = ("int", "unsigned", "long", "short", "char", "size_t", "uint", "int32", "int64", "uint32", "uint64",
              "ptrdiff_t", "bool")


# --- compiling expressions -----------------------------------------------------------------------------------------

_BINOPS = {"+": "+", "-": "-", "*": "*", "<<": "<<", ">>": ">>", "&": "&", "|": "|", "^": "^", "<": "<", ">": ">",
           "<=": "<=", ">=": ">=", "==": "==", "!=": "!="}
_CASTS = ("PAREN_EXPR", "CSTYLE_CAST_EXPR", "CXX_STATIC_CAST_EXPR", "CXX_FUNCTIONAL_CAST_EXPR", "UNEXPOSED_EXPR")


def _div(a, b):
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


def _mod(a, b):
    return a - b * _div(a, b)


def _and(a, b):
    return bool(a) and bool(b)


def _or(a, b):
    return bool(a) or bool(b)


def _not(a):
    return not a


def _sel(c, a, b):
    return a if c else b


GLOBALS = {"_div": _div, "_mod": _mod, "_and": _and, "_or": _or, "_not": _not, "_sel": _sel, "min": min,
           "max": max, "abs": abs, "range": range, "__builtins__": {}}
_CODE_CACHE: dict = {}


def _compiled(src: str, mode: str):
    c = _CODE_CACHE.get((src, mode))
    if c is None:
        if len(_CODE_CACHE) > 2048:
            _CODE_CACHE.clear()
        c = _CODE_CACHE[(src, mode)] = compile(src, "<cuport-threads>", mode)
    return c


class Compiler:
    """Compiles index expressions of one function for one block shape (blockDim and template parameters fixed)."""

    def __init__(self, model: FileModel, analysis, fn: Function, block: tuple | None, bindings: dict,
                 blockdim_known: bool = True):
        self.model = model
        self.an = analysis
        self.fn = fn
        self.block = block                  # threads enumerated: range(block[0]) x range(block[1]) x ...
        self.bindings = bindings
        self.blockdim_known = blockdim_known and block is not None
        self._cache: dict[int, Code | Opaque] = {}
        self.loops: list[Loop] = []
        self._loop_by_decl: dict[int, Loop | None] = {}
        self._guards: dict[int, list] = {}
        self.mutable: set = set()           # unknowns that are reassigned locals (uniform, but change over time)

    # public
    def compile(self, node: Node) -> Code:
        key = id(node)
        c = self._cache.get(key)
        if c is None:
            try:
                c = self._compile(node)
            except Opaque as exc:
                c = exc
            except RecursionError:
                c = Opaque("too deep")
            self._cache[key] = c
        if isinstance(c, Opaque):
            raise c
        return c

    def try_compile(self, node: Node) -> Code | None:
        try:
            return self.compile(node)
        except Opaque:
            return None

    # internals
    def _compile(self, node: Node) -> Code:
        n = node
        while n.kind in _CASTS and n.children:
            if n.kind != "PAREN_EXPR" and n.kind != "UNEXPOSED_EXPR" and not _integral(n.type):
                raise Opaque(f"cast to {n.type}")
            n = n.children[-1]
        k = n.kind
        if k == "INTEGER_LITERAL" or k == "CXX_BOOL_LITERAL_EXPR":
            v = n.value
            if isinstance(v, int):
                return Code(str(int(v)), nonneg=v >= 0)
            raise Opaque("literal")
        if k in ("FLOATING_LITERAL", "STRING_LITERAL", "CHARACTER_LITERAL"):
            raise Opaque("not an integer")
        b = n.builtin()
        if b is not None:
            return self._builtin(*b)
        if n.is_warp_size():
            return Code("32")            # the CUDA meaning; other widths are the CP10x rules' concern
        if k == "DECL_REF_EXPR":
            return self._decl_ref(n)
        if k == "BINARY_OPERATOR" and len(n.children) == 2:
            op = n.op
            try:
                a = self.compile(n.children[0])
                c = self.compile(n.children[1])
            except Opaque:
                v = n.value                  # sizeof and friends: clang may still fold the whole expression
                if isinstance(v, int) and not isinstance(v, bool):
                    return Code(str(v), nonneg=v >= 0)
                raise
            both = a.nonneg and c.nonneg
            if op in ("<<", ">>") and not 0 <= (_const(c) if _const(c) is not None else 0) < 64:
                raise Opaque("shift by a negative amount or past 64 bits")   # undefined in C; 32 << 2**32 bits
            if op in _BINOPS:
                r = _join(f"({a.src} {_BINOPS[op]} {c.src})", a, c)
                if both and op in ("+", "*", "<<", ">>", "&", "|", "^"):
                    r = Code(r.src, r.threads, r.loops, r.unknowns, True)
            elif op in ("/", "%") and both and _const(c) not in (None, 0):
                r = _join(f"({a.src} {'//' if op == '/' else '%'} {c.src})", a, c)
                r = Code(r.src, r.threads, r.loops, r.unknowns, True)
            elif op == "/":
                r = _join(f"_div({a.src}, {c.src})", a, c)
            elif op == "%":
                r = _join(f"_mod({a.src}, {c.src})", a, c)
            elif op == "&&":
                r = _join(f"_and({a.src}, {c.src})", a, c)
            elif op == "||":
                r = _join(f"_or({a.src}, {c.src})", a, c)
            elif op == ",":
                return c
            else:
                raise Opaque(f"operator {op}")
            v = _const(r)
            if v is not None and not -2 ** 63 <= v < 2 ** 64:
                raise Opaque("constant outside 64 bits")     # C wraps or is undefined there; Python ints do not
            return Code(str(int(v)), nonneg=v >= 0) if v is not None else r
        if k == "UNARY_OPERATOR" and n.children:
            op = n.op
            a = self.compile(n.children[0])
            if op in ("-", "+", "~"):
                return _join(f"({op}{a.src})", a)
            if op == "!":
                return _join(f"_not({a.src})", a)
            raise Opaque("a load through a pointer" if op == "*" else f"unary {op}")
        if k == "CONDITIONAL_OPERATOR" and len(n.children) == 3:
            c, a, d = (self.compile(x) for x in n.children)
            return _join(f"_sel({c.src}, {a.src}, {d.src})", c, a, d)
        if k == "CALL_EXPR" and n.spelling in ("__umul24", "__mul24") and len(n.args()) == 2:
            a, c = (self.compile(x) for x in n.args())           # exact for the 24-bit operands they are for
            r = _join(f"({a.src} * {c.src})", a, c)
            return Code(r.src, r.threads, r.loops, r.unknowns, a.nonneg and c.nonneg)
        if k == "CALL_EXPR" and n.spelling in ("min", "max", "umin", "umax", "imin", "imax", "abs", "__umin",
                                               "__umax"):
            args = [self.compile(a) for a in n.args()]
            f = {"umin": "min", "imin": "min", "__umin": "min", "umax": "max", "imax": "max",
                 "__umax": "max"}.get(n.spelling, n.spelling)
            if not args:
                raise Opaque("call")
            return _join(f"{f}({', '.join(a.src for a in args)})", *args)
        v = n.value if k.endswith(("_EXPR", "_LITERAL", "OPERATOR")) else None
        if isinstance(v, int) and not isinstance(v, bool):
            return Code(str(v), nonneg=v >= 0)
        if k == "ARRAY_SUBSCRIPT_EXPR":
            raise Opaque("a value loaded from memory")
        if k == "CALL_EXPR":
            from porter.analysis.coop_groups import rank_code      # block.thread_rank(), tile.meta_group_rank()
            cg = rank_code(self, n)
            if cg is not None:
                return cg
            raise Opaque(f"a call to `{n.spelling}`")
        if k == "MEMBER_REF_EXPR":
            raise Opaque("a struct member")
        raise Opaque(k.lower().replace("_", " "))

    def _builtin(self, base: str, comp: str) -> Code:
        i = "xyz".index(comp) if comp in ("x", "y", "z") else None
        if i is None:
            raise Opaque("builtin")
        if base == "threadIdx":
            return Code(f"t{comp}", frozenset({comp}), nonneg=True)
        if base == "blockDim":
            if not self.blockdim_known:
                return Code(f"U['blockDim.{comp}']", unknowns=frozenset({f"blockDim.{comp}"}))
            return Code(str(self.block[i]), nonneg=True)
        return Code(f"U['{base}.{comp}']", unknowns=frozenset({f"{base}.{comp}"}))

    def _decl_ref(self, n: Node) -> Code:
        rk = n.ref_kind
        if rk != "VAR_DECL" or n.ref is None or id(n.ref) in self.an.assigned or \
                self.an.definition(n.ref) is None:
            v = n.value
            if isinstance(v, int) and not isinstance(v, bool):
                return Code(str(v), nonneg=v >= 0)
        if rk in ("TEMPLATE_NON_TYPE_PARAMETER", "NON_TYPE_TEMPLATE_PARAMETER"):
            if n.spelling in self.bindings:
                v = self.bindings[n.spelling]
                return Code(str(v), nonneg=v >= 0)
            return Code(f"U[{n.spelling!r}]", unknowns=frozenset({n.spelling}))
        decl = n.ref
        if decl is None:
            raise Opaque(f"`{n.spelling}`")
        if decl.kind == "PARM_DECL":
            if self.fn.is_kernel and _integral(n.type):
                return Code(f"U[{n.spelling!r}]", unknowns=frozenset({n.spelling}))
            raise Opaque(f"parameter `{n.spelling}`")
        if decl.kind != "VAR_DECL":
            raise Opaque(f"`{n.spelling}`")
        loop = self.loop_of(decl)
        if loop is not None and loop.node.start <= n.start < loop.node.end:
            return Code(loop.var, loops=frozenset({loop.idx}))
        d = self.an.definition(decl)
        if d is not None:
            if not _integral(decl.type):
                raise Opaque(f"`{n.spelling}` is not an integer")
            return self.compile(d)
        if _integral(decl.type) and not self.an.thread_dependent(n):
            # a reassigned local that every thread holds the same value of (a ping-pong buffer index):
            # the same unknown for all threads at one point, but not across iterations
            self.mutable.add(n.spelling)
            return Code(f"U[{n.spelling!r}]", unknowns=frozenset({n.spelling}))
        raise Opaque(f"`{n.spelling}` is reassigned")

    # loops
    def loop_of(self, decl: Node) -> Loop | None:
        key = id(decl)
        if key in self._loop_by_decl:
            return self._loop_by_decl[key]
        self._loop_by_decl[key] = None
        loop = self._find_loop(decl)
        self._loop_by_decl[key] = loop
        return loop

    def _find_loop(self, decl: Node) -> Loop | None:
        p = decl.parent
        cand = None
        if p is not None and p.kind == "DECL_STMT" and p.parent is not None and p.parent.kind == "FOR_STMT":
            cand = p.parent
        else:
            # `int i; for (i = 0; ...)`: the first loop whose init assigns the variable
            for f in facts(self.fn).fors:
                init = for_parts(f)[0]
                if init is not None and init.kind == "BINARY_OPERATOR" and init.op == "=" and \
                        init.children and init.children[0].strip.ref is decl:
                    cand = f
                    break
        if cand is None:
            return None
        init, cond, inc, body = for_parts(cand)
        loop = Loop(len(self.loops), cand, decl, decl.spelling)
        self.loops.append(loop)
        self._loop_by_decl[id(decl)] = loop        # the condition and step refer to the variable itself
        loop.barrier = body is not None and contains_barrier(body, barrier_functions(self.model), self.fn)
        try:
            if init is None:
                raise Opaque("no init")
            if init.kind == "DECL_STMT":
                vd = next((c for c in init.children if c.kind == "VAR_DECL" and c is decl), None)
                exprs = [c for c in vd.children if not c.kind.endswith("_ATTR") and c.kind != "TYPE_REF"] \
                    if vd is not None else []
                if not exprs or len(init.children) != 1:
                    raise Opaque("init")
                loop.init = self.compile(exprs[-1])
            else:
                loop.init = self.compile(init.children[1])
            if _written_in(body, decl, self.fn) or _written_in(cond, decl, self.fn):
                raise Opaque(f"`{decl.spelling}` is modified in the loop body")
            loop.step = self._step(inc, decl, loop)
            loop.cond = self.compile(cond) if cond is not None else None
            if loop.cond is None:
                raise Opaque("no condition")
            loop.bound = self._bound(cond, decl)
            loop.direction = self._direction(inc, decl)
        except Opaque as exc:
            loop.error = str(exc)
        return loop

    _FLIP = {"<": ">", "<=": ">=", ">": "<", ">=": "<=", "!=": "!="}

    def _bound(self, cond: Node, decl: Node):
        n = cond.strip
        if n.kind != "BINARY_OPERATOR" or len(n.children) != 2 or n.op not in self._FLIP:
            return None
        a, b = n.children
        if a.strip.kind == "DECL_REF_EXPR" and a.strip.ref is decl:
            c = self.try_compile(b)
            return (n.op, c) if c is not None else None
        if b.strip.kind == "DECL_REF_EXPR" and b.strip.ref is decl:
            c = self.try_compile(a)
            return (self._FLIP[n.op], c) if c is not None else None
        return None

    def _direction(self, inc: Node, decl: Node) -> int:
        if inc.kind == "UNARY_OPERATOR":
            return 1 if inc.op in ("++", "post++") else -1
        if inc.kind == "COMPOUND_ASSIGNMENT_OPERATOR" and len(inc.children) == 2:
            op = inc.op.rstrip("=")
            c = self.try_compile(inc.children[1])
            v = _const(c)
            if op in ("+", "-") and v is not None and v != 0:
                return (1 if v > 0 else -1) * (1 if op == "+" else -1)
            if op in ("*", "<<") and v is not None and v >= (2 if op == "*" else 1):
                return 1
            if op in (">>", "/") and v is not None and v >= (1 if op == ">>" else 2):
                return -1
        return 0

    # intervals
    def interval(self, code: Code | None):
        """A sound range of `code` over the block and the loops it uses (guards ignored), or None."""
        if code is None or code.unknowns or self.block is None:
            return None
        env = {f"t{d}": Iv(0, self.block["xyz".index(d)] - 1) for d in code.threads}
        for i in code.loops:
            iv = self.loop_interval(self.loops[i])
            if iv is None:
                return None
            env[self.loops[i].var] = iv
        try:
            return Iv.of(eval(_compiled(code.src, "eval"), IV_GLOBALS, env))  # noqa: S307 - our own source
        except (TypeError, ValueError, ZeroDivisionError, OverflowError):
            return None

    def loop_interval(self, lp: Loop):
        key = ("loop-iv", lp.idx, self.block)
        if key in self._cache:
            return self._cache[key]
        self._cache[key] = None                 # cycle guard
        iv = None
        if lp.error is None and lp.bound is not None and lp.direction:
            op, bound = lp.bound
            init, b = self.interval(lp.init), self.interval(bound)
            if init is not None and b is not None:
                if lp.direction > 0 and op in ("<", "<=", "!="):
                    iv = Iv(init.lo, b.hi - (0 if op == "<=" else 1))
                elif lp.direction < 0 and op in (">", ">="):
                    iv = Iv(b.lo + (0 if op == ">=" else 1), init.hi)
                if iv is not None and lp.direction > 0 and op == "!=" and init.lo > b.hi:
                    iv = None
        self._cache[key] = iv
        return iv

    def _step(self, inc: Node | None, decl: Node, loop: Loop) -> Code:
        if inc is None:
            raise Opaque("no increment")
        var = Code(loop.var, loops=frozenset({loop.idx}))
        if inc.kind == "UNARY_OPERATOR" and inc.children and inc.children[0].strip.ref is decl:
            if inc.op in ("++", "post++"):
                return _join(f"({var.src} + 1)", var)
            if inc.op in ("--", "post--"):
                return _join(f"({var.src} - 1)", var)
            raise Opaque("increment")
        if inc.kind == "COMPOUND_ASSIGNMENT_OPERATOR" and len(inc.children) == 2 and \
                inc.children[0].strip.ref is decl:
            op = inc.op.rstrip("=")
            c = self.compile(inc.children[1])
            if op in ("+", "-", "*", "<<", ">>", "&", "|", "^"):
                return _join(f"({var.src} {op} {c.src})", var, c)
            if op == "/":
                return _join(f"_div({var.src}, {c.src})", var, c)
            raise Opaque("increment")
        if inc.kind == "BINARY_OPERATOR" and inc.op == "=" and len(inc.children) == 2 and \
                inc.children[0].strip.ref is decl:
            return self.compile(inc.children[1])
        raise Opaque("increment")

    def array_dims(self, arr) -> list:
        """Declared extents with template parameters of this shape substituted (`__shared__ float s[BS]`)."""
        dims = list(arr.dims)
        if arr.extern or all(d is not None for d in dims):
            return dims
        key = ("dims", id(arr))
        if key not in self._cache:
            from porter.analysis.launch import fold_int
            exprs = array_dim_exprs(arr.node)
            if len(exprs) == len(dims):
                dims = [d if d is not None else fold_int(self.model, e, self.bindings) for d, e in zip(dims, exprs)]
            self._cache[key] = dims
        return self._cache[key]

    # guards
    def guards(self, node: Node) -> list[Guard]:
        """Conditions that hold whenever `node` executes, innermost first, up to the function body."""
        out = []
        child = node
        body = self.fn.body
        for p in node.ancestors():
            if p is None:
                break
            if p is body:
                out.extend(self._exits_before(p, child))
                break
            k = p.kind
            if k == "IF_STMT" and len(p.children) >= 2:
                cond = p.children[0]
                if child is p.children[1]:
                    out.append(self._guard(cond, False))
                elif len(p.children) > 2 and child is p.children[2]:
                    out.append(self._guard(cond, True))
            elif k == "CONDITIONAL_OPERATOR" and len(p.children) == 3:
                if child is p.children[1]:
                    out.append(self._guard(p.children[0], False))
                elif child is p.children[2]:
                    out.append(self._guard(p.children[0], True))
            elif k == "BINARY_OPERATOR" and len(p.children) == 2 and child is p.children[1] and p.op in ("&&", "||"):
                out.append(self._guard(p.children[0], p.op == "||"))
            elif k in ("WHILE_STMT", "DO_STMT") and p.children:
                cond = p.children[0] if k == "WHILE_STMT" else p.children[-1]
                if child is not cond:
                    out.append(self._guard(cond, False))
            elif k == "COMPOUND_STMT":
                out.extend(self._exits_before(p, child))
            child = p
        return out

    def _exits_before(self, compound: Node, child: Node) -> list[Guard]:
        """`if (c) return;` / `continue;` / `break;` earlier in the same block: `!c` holds afterwards."""
        out = []
        for s in compound.children:
            if s is child:
                break
            if s.kind == "IF_STMT" and len(s.children) == 2 and _ends_in_exit(s.children[1]):
                g = self._guard(s.children[0], True)
                if _ends_in_exit(s.children[1]) == "break":
                    g = Guard(None, g.node, True, g.text)
                out.append(g)
            elif s.kind in ("RETURN_STMT", "CONTINUE_STMT", "BREAK_STMT"):
                out.append(Guard(Code("False"), s, False, s.text))
        return out

    def _conjuncts(self, cond: Node, negated: bool, exact_only: bool = False) -> Code | None:
        """`a && b` (or a negated `a || b`) with an opaque part: the parts that compile still hold
        (`index > 0 && threadIdx.x == 0` with `index` from a load keeps `threadIdx.x == 0`)."""
        n = cond.strip
        op = "||" if negated else "&&"
        if n.kind != "BINARY_OPERATOR" or n.op != op or len(n.children) != 2:
            return None
        parts = []
        for side in n.children:
            c = self.try_compile(side)
            if c is None or (exact_only and c.unknowns):
                c = self._conjuncts(side, negated, exact_only)
            elif negated:
                c = _join(f"_not({c.src})", c)
            if c is not None and not (exact_only and c.unknowns):
                parts.append(c)
        if not parts:
            return None
        r = parts[0]
        for c in parts[1:]:
            r = _join(f"_and({r.src}, {c.src})", r, c)
        return r

    def _guard(self, cond: Node, negated: bool) -> Guard:
        key = (id(cond), negated)
        g = self._guards.get(key)
        if g is None:
            c = self.try_compile(cond)
            if c is None or c.unknowns:
                # an opaque or inexact guard is dropped: keep the conjuncts that are exact
                alt = self._conjuncts(cond, negated, exact_only=c is not None)
                if alt is not None:
                    c = alt
                elif c is not None and negated:
                    c = _join(f"_not({c.src})", c)
            elif negated:
                c = _join(f"_not({c.src})", c)
            g = Guard(c, cond, negated, " ".join(cond.text.split()))
            self._guards[key] = g
        return g


def _const(c: Code | None):
    if c is None or c.threads or c.loops or c.unknowns:
        return None
    try:
        v = eval(_compiled(c.src, "eval"), GLOBALS, {})  # noqa: S307 - our own source
    except Exception:
        return None
    return v if isinstance(v, int) else None



def _integral(t: str | None) -> bool:
    if not t:
        return True
    t = t.replace("const ", "").replace("volatile ", "").strip()
    if "*" in t or "[" in t or "float" in t or "double" in t or "half" in t:
        return False
    return any(w in t for w in _INT_TYPES) or t in ("dim3",)


def _written_in(node: Node | None, decl: Node, fn: Function) -> bool:
    if node is None:
        return False
    return any(node.start <= w.start < node.end for w in facts(fn).writes.get(id(decl), ()))


def _ends_in_exit(stmt: Node):
    s = stmt
    while s.kind == "COMPOUND_STMT" and s.children:
        s = s.children[-1]
    return {"RETURN_STMT": "return", "CONTINUE_STMT": "continue", "BREAK_STMT": "break"}.get(s.kind)


