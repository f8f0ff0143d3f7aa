"""Shared-memory accesses evaluated thread by thread over a block shape, and the barrier intervals they fall in.

An index expression is compiled (once) from the AST into a Python expression over the thread indices (`tx`,
`ty`, `tz`), the variables of enclosing `for` loops and kernel-uniform unknowns (parameters, blockIdx); blockDim
and template parameters are constants of the shape. Guards on the path to the access (enclosing `if`s, `&&`,
`?:`, earlier `if (...) return;`) are compiled the same way. For a known shape the accesses are then enumerated
exactly: every thread of the block, every iteration of the loops the index uses. That gives exact index ranges
(CP703) and exact address collisions between threads (CP702) for affine and non-affine (`%`, `&`, `?:`, min)
indices alike. What cannot be compiled (loads, calls, reassigned locals) or enumerated (loop bounds from kernel
arguments) is recorded, so rules can say "possible" instead of asserting."""
from __future__ import annotations

from dataclasses import dataclass, field

from porter.frontend.model import BARRIERS, FileModel, Function, Node

_CAP_ITER = 256            # iterations of one loop per thread (a bounded loop with more is "capped")
_CAP_UNBOUNDED = 8         # iterations tried for a loop whose bound is a kernel argument
_CAP_POINTS = 200_000      # evaluations per access and shape
_INT_TYPES = ("int", "unsigned", "long", "short", "char", "size_t", "uint", "int32", "int64", "uint32", "uint64",
              "ptrdiff_t", "bool")
_BLOCK_BARRIERS = BARRIERS | {"__syncwarp", "__barrier_sync", "barrier", "sync", "__builtin_amdgcn_s_barrier"}


class Opaque(Exception):
    """An expression the evaluator cannot follow (a load, a call, a reassigned local, a float)."""


@dataclass(frozen=True)
class Code:
    src: str
    threads: frozenset = frozenset()       # 'x' 'y' 'z'
    loops: frozenset = frozenset()         # Loop indices
    unknowns: frozenset = frozenset()      # kernel-uniform unknowns by name (parameters, blockIdx.x, ...)
    nonneg: bool = False                   # known >= 0 (then `/` and `%` are Python's // and %)


def _join(src, *codes) -> Code:
    t, lo, u = frozenset(), frozenset(), frozenset()
    for c in codes:
        t, lo, u = t | c.threads, lo | c.loops, u | c.unknowns
    return Code(src, t, lo, u)


@dataclass
class Loop:
    idx: int
    node: Node
    decl: Node
    name: str
    init: Code | None = None
    cond: Code | None = None
    step: Code | None = None
    barrier: bool = False
    error: str | None = None
    bound: tuple | None = None        # (op, Code) with the variable on the left: ('<', n) for `i < n`
    direction: int = 0                # +1 increasing, -1 decreasing, 0 unknown

    @property
    def var(self) -> str:
        return f"L{self.idx}"

    @property
    def bounded(self) -> bool:
        return self.cond is not None and not self.cond.unknowns

    def deps(self) -> frozenset:
        out = frozenset()
        for c in (self.init, self.cond, self.step):
            if c is not None:
                out |= c.loops
        return out - {self.idx}

    def thread_dependent(self) -> bool:
        return any(c is not None and c.threads for c in (self.init, self.cond, self.step))


@dataclass
class Guard:
    code: Code | None           # None: opaque
    node: Node
    negated: bool
    text: str

    @property
    def exact(self) -> bool:
        return self.code is not None and not self.code.unknowns


# --- barriers -----------------------------------------------------------------------------------------------------

@dataclass
class Facts:
    """What one walk of a function body finds (walking Python nodes is cheaper than asking libclang where
    every node of a kind starts)."""
    calls: list = field(default_factory=list)          # CALL_EXPR nodes
    fors: list = field(default_factory=list)           # FOR_STMT nodes
    writes: dict = field(default_factory=dict)         # id(decl) -> assignment / increment nodes
    refs: dict = field(default_factory=dict)           # spelling -> DECL_REF_EXPR nodes
    dims: int = 1                                      # thread dimensions used: 1 (x), 2 (y), 3 (z)
    jumps: list = field(default_factory=list)          # return / break / continue statements
    barriers: list | None = None                       # barrier calls (filled by barrier_calls)
    barrier_starts: list | None = None


_WRITE_OPS = ("++", "--", "post++", "post--", "&")


def facts(fn: Function) -> Facts:
    f = getattr(fn, "_facts", None)
    if f is not None:
        return f
    f = fn._facts = Facts()
    if fn.body is None:
        return f
    for n in fn.body.walk():
        k = n.kind
        if k == "CALL_EXPR":
            f.calls.append(n)
        elif k in ("RETURN_STMT", "BREAK_STMT", "CONTINUE_STMT"):
            f.jumps.append(n)
        elif k == "FOR_STMT":
            f.fors.append(n)
        elif k == "DECL_REF_EXPR":
            f.refs.setdefault(n.spelling, []).append(n)
        elif k == "MEMBER_REF_EXPR" and n.spelling in ("y", "z"):
            b = n.builtin()
            if b is not None and b[0] in ("threadIdx", "blockDim"):
                f.dims = max(f.dims, 2 if b[1] == "y" else 3)
        elif k in ("BINARY_OPERATOR", "COMPOUND_ASSIGNMENT_OPERATOR", "UNARY_OPERATOR") and n.children:
            t = n.children[0].strip
            if t.kind != "DECL_REF_EXPR":
                continue
            if k == "BINARY_OPERATOR" and n.op != "=" or k == "UNARY_OPERATOR" and n.op not in _WRITE_OPS:
                continue
            if t.ref is not None:
                f.writes.setdefault(id(t.ref), []).append(n)
    return f


def barrier_functions(model: FileModel) -> set:
    """Names of the file's functions that reach a block barrier (directly or through calls)."""
    cached = getattr(model, "_barrier_functions", None)
    if cached is not None:
        return cached
    fkinds = ("FUNCTION_DECL", "FUNCTION_TEMPLATE", "CXX_METHOD")
    calls = [(n, n.spelling) for n in model.of_kind("CALL_EXPR")]
    out: set = set()
    todo = _BLOCK_BARRIERS
    while todo:
        new = set()
        for n, name in calls:
            if name in todo:
                f = n.enclosing(*fkinds)
                if f is not None and f.spelling not in out:
                    new.add(f.spelling)
        out |= new
        todo = new
    model._barrier_functions = out
    return out


def is_barrier_call(node: Node, bfuncs: set) -> bool:
    return node.kind == "CALL_EXPR" and (node.spelling in _BLOCK_BARRIERS or node.spelling in bfuncs)


def barrier_calls(fn: Function, bfuncs: set) -> list:
    f = facts(fn)
    if f.barriers is None:
        f.barriers = [n for n in f.calls if is_barrier_call(n, bfuncs)]
        f.barrier_starts = [n.start for n in f.barriers]
    return f.barriers


def contains_barrier(node: Node, bfuncs: set, fn: Function | None = None) -> bool:
    if fn is not None:
        barrier_calls(fn, bfuncs)
        a, b = node.start, node.end
        return any(a <= x < b for x in facts(fn).barrier_starts)
    return any(is_barrier_call(n, bfuncs) for n in node.walk())


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


# --- interval arithmetic over the same compiled sources (a cheap, sound range before any enumeration) ----------

_INF = float("inf")


class Iv:
    """A closed integer interval; comparisons give [0, 1] unless decided."""
    __slots__ = ("lo", "hi")

    def __init__(self, lo, hi):
        self.lo, self.hi = lo, hi

    @staticmethod
    def of(x):
        return x if isinstance(x, Iv) else Iv(int(x), int(x))

    def __add__(self, o):
        o = Iv.of(o)
        return Iv(self.lo + o.lo, self.hi + o.hi)

    __radd__ = __add__

    def __sub__(self, o):
        o = Iv.of(o)
        return Iv(self.lo - o.hi, self.hi - o.lo)

    def __rsub__(self, o):
        return Iv.of(o) - self

    def __neg__(self):
        return Iv(-self.hi, -self.lo)

    def __pos__(self):
        return self

    def __mul__(self, o):
        o = Iv.of(o)
        ps = [0 if a == 0 or b == 0 else a * b for a in (self.lo, self.hi) for b in (o.lo, o.hi)]  # inf * 0 = 0
        return Iv(min(ps), max(ps))

    __rmul__ = __mul__

    def _shift(self, o, left):
        o = Iv.of(o)
        if o.lo < 0 or o.hi > 63 or self.lo < 0:
            return Iv(-_INF, _INF)
        if left:
            return Iv(self.lo << o.lo if self.lo != _INF else _INF, self.hi << o.hi if self.hi != _INF else _INF)
        return Iv(self.lo >> o.hi if self.lo != _INF else _INF, self.hi >> o.lo if self.hi != _INF else _INF)

    def __lshift__(self, o):
        return self._shift(o, True)

    def __rlshift__(self, o):
        return Iv.of(o)._shift(self, True)

    def __rshift__(self, o):
        return self._shift(o, False)

    def __rrshift__(self, o):
        return Iv.of(o)._shift(self, False)

    def __and__(self, o):
        o = Iv.of(o)
        if self.lo >= 0 and o.lo >= 0:
            return Iv(0, min(self.hi, o.hi))
        if self.lo >= 0:
            return Iv(0, self.hi)
        if o.lo >= 0:
            return Iv(0, o.hi)
        return Iv(-_INF, _INF)

    __rand__ = __and__

    def __or__(self, o):
        o = Iv.of(o)
        if self.lo >= 0 and o.lo >= 0 and self.hi != _INF and o.hi != _INF:
            return Iv(max(self.lo, o.lo), (1 << int(max(self.hi, o.hi)).bit_length()) - 1)
        return Iv(-_INF, _INF)

    __ror__ = __or__
    __xor__ = __or__
    __rxor__ = __or__

    def _cmp(self, o, fn):
        o = Iv.of(o)
        vals = {fn(a, b) for a in (self.lo, self.hi) for b in (o.lo, o.hi)}
        if len(vals) == 1 and (self.lo == self.hi or o.lo == o.hi or fn in (_lt, _le, _gt, _ge)):
            v = vals.pop()
            return Iv(int(v), int(v))
        return Iv(0, 1)

    def __lt__(self, o):
        return self._cmp(o, _lt)

    def __le__(self, o):
        return self._cmp(o, _le)

    def __gt__(self, o):
        return self._cmp(o, _gt)

    def __ge__(self, o):
        return self._cmp(o, _ge)

    def __eq__(self, o):
        o = Iv.of(o)
        if self.lo == self.hi == o.lo == o.hi:
            return Iv(1, 1)
        if self.hi < o.lo or o.hi < self.lo:
            return Iv(0, 0)
        return Iv(0, 1)

    def __ne__(self, o):
        e = self.__eq__(o)
        return Iv(1 - e.hi, 1 - e.lo)

    __hash__ = None

    def __bool__(self):
        raise TypeError("interval truth value")

    def union(self, o):
        o = Iv.of(o)
        return Iv(min(self.lo, o.lo), max(self.hi, o.hi))


def _lt(a, b):
    return a < b


def _le(a, b):
    return a <= b


def _gt(a, b):
    return a > b


def _ge(a, b):
    return a >= b


def _iv_div(a, b):
    a, b = Iv.of(a), Iv.of(b)
    if b.lo > 0:
        ps = [x / y for x in (a.lo, a.hi) for y in (b.lo, b.hi)]
        return Iv(int(min(ps)) if min(ps) not in (_INF, -_INF) else min(ps),
                  int(max(ps)) if max(ps) not in (_INF, -_INF) else max(ps))
    return Iv(-_INF, _INF)


def _iv_mod(a, b):
    a, b = Iv.of(a), Iv.of(b)
    if b.lo > 0 and a.lo >= 0:
        if a.hi < b.lo:
            return a
        return Iv(0, min(a.hi, b.hi - 1))
    if b.lo > 0:
        return Iv(-(b.hi - 1), b.hi - 1)
    return Iv(-_INF, _INF)


def _iv_bool(a):
    a = Iv.of(a)
    if a.lo == a.hi == 0:
        return Iv(0, 0)
    if a.lo > 0 or a.hi < 0:
        return Iv(1, 1)
    return Iv(0, 1)


def _iv_and(a, b):
    a, b = _iv_bool(a), _iv_bool(b)
    return Iv(a.lo & b.lo, a.hi & b.hi)


def _iv_or(a, b):
    a, b = _iv_bool(a), _iv_bool(b)
    return Iv(a.lo | b.lo, a.hi | b.hi)


def _iv_not(a):
    a = _iv_bool(a)
    return Iv(1 - a.hi, 1 - a.lo)


def _iv_sel(c, a, b):
    c = _iv_bool(c)
    if c.lo == 1:
        return Iv.of(a)
    if c.hi == 0:
        return Iv.of(b)
    return Iv.of(a).union(b)


def _iv_min(*xs):
    xs = [Iv.of(x) for x in xs]
    return Iv(min(x.lo for x in xs), min(x.hi for x in xs))


def _iv_max(*xs):
    xs = [Iv.of(x) for x in xs]
    return Iv(max(x.lo for x in xs), max(x.hi for x in xs))


def _iv_abs(a):
    a = Iv.of(a)
    if a.lo >= 0:
        return a
    if a.hi <= 0:
        return -a
    return Iv(0, max(-a.lo, a.hi))


IV_GLOBALS = {"_div": _iv_div, "_mod": _iv_mod, "_and": _iv_and, "_or": _iv_or, "_not": _iv_not, "_sel": _iv_sel,
              "min": _iv_min, "max": _iv_max, "abs": _iv_abs, "__builtins__": {}}


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
            from porter.frontend.coop_groups import rank_code      # block.thread_rank(), tile.meta_group_rank()
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
            from porter.frontend.launch import fold_int
            from porter.lint.helpers import array_dim_exprs
            exprs = array_dim_exprs(arr.node)
            if len(exprs) == len(dims):
                dims = [d if d is not None else fold_int(self.model, e, self.bindings) for d, e in zip(dims, exprs)]
            self._cache[key] = dims
        return self._cache[key]

    def always_enters(self, loop_node: Node) -> bool:
        """A uniform `for` loop whose condition holds for its initial value in every iteration of the loops
        around it (`for (j = k >> 1; j > 0; ...)` inside `for (k = 2; ...)`)."""
        import re
        lp = _loop_of_stmt(self, loop_node) if loop_node.kind == "FOR_STMT" else None
        if lp is None or lp.error is not None or lp.cond is None or lp.cond.unknowns or lp.init.unknowns or \
                lp.thread_dependent():
            return False
        src = re.sub(rf"\b{lp.var}\b", f"({lp.init.src})", lp.cond.src)
        probe = Code(f"_sel({src}, 1, 0)", frozenset(), (lp.cond.loops | lp.init.loops) - {lp.idx})
        sp = enumerate_access(self, [probe], [], "range")
        return sp.ok and not sp.capped and not sp.unbounded and sp.count > 0 and sp.lo[0] == 1

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


def for_parts(loop: Node):
    """helpers.for_parts, cached per loop (it lexes the loop header)."""
    cache = loop.model.__dict__.setdefault("_for_parts", {})
    r = cache.get(id(loop))
    if r is None:
        from porter.lint.helpers import for_parts as _fp
        r = cache[id(loop)] = _fp(loop)
    return r


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


# --- enumeration ---------------------------------------------------------------------------------------------------

@dataclass
class Space:
    """What one access evaluates to over a shape: per value code the (min, max) and witnesses, or a map
    value -> [first thread, a second thread or None] per scenario (iteration indices of barrier loops)."""
    ok: bool
    reason: str = ""
    capped: bool = False              # a bounded loop ran past the iteration cap: ranges are lower bounds
    unbounded: bool = False           # a loop bounded by a kernel argument was tried for a few iterations only
    lo: list = field(default_factory=list)
    hi: list = field(default_factory=list)
    wlo: list = field(default_factory=list)
    whi: list = field(default_factory=list)
    maps: dict = field(default_factory=dict)
    scen_loops: tuple = ()            # Loop indices whose iteration index keys `maps`
    threads: frozenset = frozenset()
    count: int = 0
    warps: set = field(default_factory=set)     # warps (linear id // 32) of the threads that ran the access


class _TooMany(Exception):
    pass


def enumerate_access(comp: Compiler, values: list, guards: list, mode: str, uniform_values: dict | None = None,
                     scen_loops: tuple = (), extra_loops: tuple = (), group_rows: bool = False) -> Space:
    """Evaluate `values` (Codes) for every thread of the block and every iteration of the loops they use (and of
    `extra_loops`), under the exact guards. mode 'range': min / max per value with witness threads; 'map':
    value -> [first thread, another thread, a thread of another warp (or row, with `group_rows`), first group]
    for values[0], keyed by the iteration indices of `scen_loops`."""
    if comp.block is None:
        return Space(False, "unknown block shape")
    exact_guards = [g.code for g in guards if g.exact]
    codes = list(values) + exact_guards
    U = dict(uniform_values or {})
    missing = sorted({u for c in codes for u in c.unknowns if u not in U})
    if missing:
        return Space(False, "depends on " + ", ".join(missing))
    threads = set()
    for c in codes:
        threads |= c.threads
    needed, todo = set(), set(extra_loops)
    for c in codes:
        todo |= c.loops
    while todo:
        i = todo.pop()
        if i in needed:
            continue
        needed.add(i)
        lp = comp.loops[i]
        if lp.error is not None:
            return Space(False, f"loop `{lp.name}`: {lp.error}")
        todo |= lp.deps()
        for c in (lp.init, lp.step):
            threads |= c.threads
            if any(u not in U for u in c.unknowns):
                return Space(False, f"loop `{lp.name}` starts or steps by a kernel argument")
        threads |= lp.cond.threads
    order = sorted(needed, key=lambda i: (comp.loops[i].node.start, -comp.loops[i].node.end))
    scen = tuple(i for i in order if i in scen_loops)
    order = list(scen) + [i for i in order if i not in scen]
    thr = "(" + ", ".join(f"t{d}" if d in threads else "0" for d in "xyz") + ",)"
    lines = ["def _f(U, _out):", " _n = 0"]
    ind = " "
    for d in "xyz":
        if d in threads:
            lines.append(f"{ind}for t{d} in range({comp.block['xyz'.index(d)]}):")
            ind += " "
    tails = []
    for i in order:
        lp = comp.loops[i]
        bounded = lp.bounded
        lines.append(f"{ind}{lp.var} = {lp.init.src}")
        lines.append(f"{ind}_c{i} = 0")
        lines.append(f"{ind}while {lp.cond.src if bounded else 'True'}:")
        ind += " "
        lines.append(f"{ind}if _c{i} >= {_CAP_ITER if bounded else _CAP_UNBOUNDED}:")
        lines.append(f"{ind} _out[{'capped' if bounded else 'unbounded'!r}] = True")
        lines.append(f"{ind} break")
        tails.append([f"{ind}{lp.var} = {lp.step.src}", f"{ind}_c{i} += 1"])
    bi = ind
    for g in exact_guards:
        lines.append(f"{bi}if {g.src}:")
        bi += " "
    lines.append(f"{bi}_n += 1")
    lines.append(f"{bi}if _n > {_CAP_POINTS}: raise _TooMany()")
    if mode == "range":
        for j, v in enumerate(values):
            lines.append(f"{bi}_v = {v.src}")
            lines.append(f"{bi}if _v < _out['lo'][{j}]: _out['lo'][{j}] = _v; _out['wlo'][{j}] = {thr}")
            lines.append(f"{bi}if _v > _out['hi'][{j}]: _out['hi'][{j}] = _v; _out['whi'][{j}] = {thr}")
    else:
        key = "(" + "".join(f"_c{i}, " for i in scen) + ")"
        lines.append(f"{bi}_m = _out['maps'].get({key})")
        lines.append(f"{bi}if _m is None: _m = _out['maps'][{key}] = {{}}")
        lines.append(f"{bi}_v = {values[0].src}")
        # [first thread, another thread, a thread of another group]; a group is a warp of 32 (and, for a guessed
        # block, a row: rows of a real block may well be other warps)
        bx, by = comp.block[0], comp.block[1]
        lin = f"(({'tx' if 'x' in threads else '0'}) + {bx} * (({'ty' if 'y' in threads else '0'}) + {by} * " \
              f"({'tz' if 'z' in threads else '0'}))) // 32"
        grp = lin if group_rows is False else \
            f"({lin}, {'ty' if 'y' in threads else '0'}, {'tz' if 'z' in threads else '0'})"
        lines.append(f"{bi}_out['groups'].add({lin})")
        lines.append(f"{bi}_e = _m.get(_v)")
        lines.append(f"{bi}if _e is None: _m[_v] = [{thr}, None, None, {grp}]")
        lines.append(f"{bi}elif _e[0] != {thr}:")
        lines.append(f"{bi} if _e[1] is None: _e[1] = {thr}")
        lines.append(f"{bi} if _e[2] is None and _e[3] != {grp}: _e[2] = {thr}")
    for t in reversed(tails):
        lines.extend(t)
    lines.append(" _out['n'] = _n")
    g = dict(GLOBALS)
    g["_TooMany"] = _TooMany
    n = len(values)
    out = {"lo": [float("inf")] * n, "hi": [float("-inf")] * n, "wlo": [None] * n, "whi": [None] * n,
           "maps": {}, "capped": False, "unbounded": False, "n": 0, "groups": set()}
    try:
        exec(_compiled("\n".join(lines), "exec"), g)   # noqa: S102 - generated from our own AST
        g["_f"](U, out)
    except _TooMany:
        return Space(False, "too many evaluations")
    except (ZeroDivisionError, TypeError, ValueError, OverflowError, RecursionError, SyntaxError) as exc:
        return Space(False, f"evaluation failed: {type(exc).__name__}")
    return Space(True, "", out["capped"], out["unbounded"], out["lo"], out["hi"], out["wlo"], out["whi"],
                 out["maps"], scen, frozenset(threads), out["n"], out["groups"])


# --- accesses of one function under one shape ---------------------------------------------------------------------

class AccessInfo:
    """One shared access compiled for one function and block: subscripts, byte offset, guards, loops. Computed
    on first use (a rule that rules an access out early never pays for compiling it)."""

    def __init__(self, comp, acc):
        self.comp = comp
        self.acc = acc                      # porter.frontend.shared_access.SharedAccess (or ScalarAccess)
        self.node = acc.node
        self.mode = access_mode(acc.node)   # read | write | rw | atomic | None (address taken / unknown use)
        self._done = False

    def _build(self):
        if not self._done:
            _fill(self.comp, self)
            self._done = True      # only once filled: a failure repeats as itself, not as a missing `_subs`

    @property
    def subs(self) -> list:                 # per-subscript Code or None (direct accesses)
        self._build()
        return self._subs

    @property
    def offset(self):                       # byte offset from the array start (Code) or None
        self._build()
        return self._offset

    @property
    def error(self) -> str:
        self._build()
        return self._error

    @property
    def guards(self) -> list:
        g = getattr(self, "_guards", None)
        if g is None:
            g = self._guards = self.comp.guards(self.node)
        return g

    @property
    def loops(self) -> list:                # enclosing Loops (innermost first) that could be followed
        self._loops_()
        return self._loops

    @property
    def opaque_loops(self) -> list:         # enclosing loops that could not be followed
        self._loops_()
        return self._opaque

    def _loops_(self):
        if getattr(self, "_loops", None) is None:
            self._loops, self._opaque = [], []
            for a in self.node.ancestors():
                if a is self.comp.fn.body:
                    break
                if a.kind == "FOR_STMT":
                    lp = _loop_of_stmt(self.comp, a)
                    if lp is None or lp.error is not None:
                        self._opaque.append(a)
                    else:
                        self._loops.append(lp)
                elif a.kind in ("WHILE_STMT", "DO_STMT"):
                    self._opaque.append(a)

    @property
    def writes(self) -> bool:
        return self.mode in ("write", "rw")


def access_mode(node: Node) -> str | None:
    child, p = node, node.parent
    while p is not None and (p.kind in ("PAREN_EXPR", "UNEXPOSED_EXPR", "MEMBER_REF_EXPR")):
        child, p = p, p.parent
    if p is None:
        return "read"
    if p.kind == "BINARY_OPERATOR" and p.children and p.children[0] is child and p.op == "=":
        return "write"
    if p.kind == "COMPOUND_ASSIGNMENT_OPERATOR" and p.children and p.children[0] is child:
        return "rw"
    if p.kind == "UNARY_OPERATOR":
        if p.op in ("++", "--", "post++", "post--"):
            return "rw"
        if p.op == "&":
            q = p.parent
            while q is not None and q.kind in ("PAREN_EXPR", "UNEXPOSED_EXPR", "CSTYLE_CAST_EXPR"):
                q = q.parent
            if q is not None and q.kind == "CALL_EXPR" and q.spelling.startswith("atomic"):
                return "atomic"
            return None
    return "read"


def function_accesses(model: FileModel, analysis, fn: Function, block: tuple | None, bindings: dict,
                      blockdim_known: bool = True):
    """(Compiler, [AccessInfo]) for the shared accesses of `fn`, threads ranging over `block` (blockDim = block
    unless `blockdim_known` is False)."""
    cache = model.__dict__.setdefault("_thread_accesses", {})
    # without a known blockDim the compiled code does not depend on the block: share it between blocks
    key = (id(fn), block if blockdim_known else None, tuple(sorted(bindings.items())))
    if key in cache:
        comp, out = cache[key]
        if comp.block != block:
            import copy
            comp = copy.copy(comp)
            comp.block = block
        return comp, out
    from porter.frontend.shared_access import shared_memory
    comp = Compiler(model, analysis, fn, block, bindings, blockdim_known)
    out = [AccessInfo(comp, acc) for acc in shared_memory(model, analysis).accesses_of(fn)]
    out.extend(AccessInfo(comp, acc) for acc in scalar_accesses(model, fn))
    out.sort(key=lambda i: i.node.start)
    cache[key] = (comp, out)
    return comp, out


@dataclass
class ScalarAccess:
    """A use of a scalar `__shared__` variable (`__shared__ int flag; flag = 1;`), shaped like a SharedAccess."""
    array: object
    node: Node
    function: Function
    subs: list = field(default_factory=list)
    direct: bool = True
    base_offset: object = None
    sub_polys: list = field(default_factory=list)

    @property
    def elem_size(self):
        return self.array.elem_size

    @property
    def full(self) -> bool:
        return True

    def offset(self, dims=None):
        from porter.frontend.affine import Poly
        return Poly()


def scalar_accesses(model: FileModel, fn: Function) -> list:
    cached = model.__dict__.get("_scalar_shared")      # the same for every function: built once per file
    if cached is None or cached[0] != len(model.shared):
        cached = model._scalar_shared = (len(model.shared), {
            id(s.node): s for s in model.shared if not s.dims and not s.extern and "[" not in (s.node.type or "")})
    scalars = cached[1]
    if not scalars or fn.body is None:
        return []
    refs = facts(fn).refs
    out = []
    for n in (n for s in scalars.values() for n in refs.get(s.name, ())):
        if n.ref is not None and id(n.ref) in scalars:
            p = n.parent
            if p is not None and p.kind in ("MEMBER_REF_EXPR", "ARRAY_SUBSCRIPT_EXPR"):
                continue                      # struct members, or an array whose extents did not resolve
            out.append(ScalarAccess(scalars[id(n.ref)], n, fn))
    return out


def _fill(comp: Compiler, info: AccessInfo) -> None:
    from porter.frontend.shared_access import element_strides
    acc = info.acc
    subs = [comp.try_compile(s) for s in acc.subs]
    offset, error = None, ""
    arr = acc.array
    es = acc.elem_size
    try:
        if acc.direct and not arr.dims:
            if acc.subs or "[" in (arr.node.type or ""):
                raise Opaque("layout")        # an array whose extents did not resolve
            offset = Code("0")
        elif acc.direct:
            dims = comp.array_dims(arr)
            if arr.extern and len(dims) == 1:
                dims = [None]
            strides = element_strides(dims)
            if strides is None or len(strides) < len(subs) or es is None:
                raise Opaque("layout")
            if len(subs) != len(dims):
                raise Opaque("partial subscript")
            for s_node, s_code in zip(acc.subs, subs):
                if s_code is None:
                    try:
                        comp.compile(s_node)
                    except Opaque as exc:
                        raise Opaque(f"index `{' '.join(s_node.text.split())}`: {exc}") from None
            terms = [f"{s.src} * {st}" if st != 1 else s.src for s, st in zip(subs, strides)]
            lin = _join("(" + " + ".join(terms) + ")", *subs)
            offset = _join(f"({lin.src} * {es})", lin)
        else:
            base = acc.base_offset
            if base is None or not base.is_const() or es is None:
                raise Opaque("pointer offset")
            b = int(base.constant)
            if len(subs) == 1 and subs[0] is not None:
                offset = _join(f"({subs[0].src} * {es} + {b})", subs[0])
            elif not acc.subs:
                offset = Code(str(b))
            else:
                raise Opaque(f"index `{' '.join(acc.subs[0].text.split())}`")
    except Opaque as exc:
        error = str(exc)
    info._subs, info._offset, info._error = subs, offset, error


def _loop_of_stmt(comp: Compiler, loop: Node):
    init = for_parts(loop)[0]
    decl = None
    if init is not None and init.kind == "DECL_STMT":
        decl = next((c for c in init.children if c.kind == "VAR_DECL"), None)
    elif init is not None and init.kind == "BINARY_OPERATOR" and init.op == "=" and init.children:
        t = init.children[0].strip
        decl = t.ref if t.kind == "DECL_REF_EXPR" else None
    if decl is None:
        return None
    return comp.loop_of(decl)


# --- barrier intervals -------------------------------------------------------------------------------------------

class Intervals:
    """Which accesses can run between the same two barriers. Each access gets tags (segment, path): the segment
    is the barrier (or the function entry) it follows, the path the uniform decisions taken since at `if`s and
    loops that contain a barrier (every thread takes the same ones in well-formed code): ('in' | 'out', loop)
    at a loop head, ('back', loop) for a back edge, ('T' | 'E', if). Two accesses share an interval when their
    tags have the same segment and one path extends the other; the back edges in between tell how many
    iterations of a loop apart they are."""

    _CAP = 12

    def __init__(self, fn: Function, targets: list, bfuncs: set, enters=None):
        import bisect
        self._bisect = bisect
        self.fn = fn
        self.targets = {id(n) for n in targets}  # access nodes to tag
        self.bfuncs = bfuncs
        items = [(n.start, (n.start, 0), n) for n in targets]
        if fn.body is not None:
            items += [(n.start, (n.end, 1), n) for n in barrier_calls(fn, bfuncs)]
        items.sort(key=lambda e: e[0])
        self._items = items
        self._jumps = [n.start for n in facts(fn).jumps] if fn.body is not None else []
        self._barrier_starts = [e[0] for e in items if e[1][1] == 1]
        self._starts = [e[0] for e in items]
        self.enters = enters                     # loop node -> True when every run enters it at least once
        self.tags: dict[int, set] = {}
        self._loops: list = []                   # stack of [loop id, continue states, break states]
        self._has_barrier: dict[int, bool] = {}
        if fn.body is not None:
            self._stmt(fn.body, {("entry", ())})

    def _jumps_in(self, node) -> bool:
        a, b = node.start, node.end
        return any(a <= x < b for x in self._jumps)

    def _barrier_in(self, node) -> bool:
        v = self._has_barrier.get(id(node))
        if v is None:
            a, b = node.start, node.end
            v = self._has_barrier[id(node)] = any(a <= x < b for x in self._barrier_starts)
        return v

    def _step(self, state: set, event) -> set:
        out = set()
        for seg, path in state:
            if path and path[-1] == "many":
                out.add((seg, path))
            elif len(path) >= self._CAP:
                out.add((seg, path + ("many",)))
            else:
                out.add((seg, path + (event,)))
        return out

    def _events(self, node: Node | None, state: set) -> set:
        if node is None or not state:
            return state
        i = self._bisect.bisect_left(self._starts, node.start)
        j = self._bisect.bisect_left(self._starts, node.end, lo=i)
        evs = sorted(self._items[i:j], key=lambda e: e[1])
        for _, (_, kind), n in evs:
            if kind == 0:
                self.tags.setdefault(id(n), set()).update(state)
            else:
                state = {(id(n), ())}
        return state

    def _stmt(self, node: Node | None, state: set) -> set:
        if node is None or not state:
            return state
        k = node.kind
        if k not in ("RETURN_STMT", "CONTINUE_STMT", "BREAK_STMT") and not self._barrier_in(node) and \
                not self._jumps_in(node):
            return self._events(node, state)  # no barrier inside: one interval, whatever the control flow
        if k == "COMPOUND_STMT":
            for c in node.children:
                state = self._stmt(c, state)
            return state
        if k == "IF_STMT" and len(node.children) >= 2:
            s = self._events(node.children[0], state)
            st, se = s, s
            if self._barrier_in(node):
                st, se = self._step(s, ("T", id(node))), self._step(s, ("E", id(node)))
            a = self._stmt(node.children[1], set(st))
            b = self._stmt(node.children[2], set(se)) if len(node.children) > 2 else se
            return a | b
        if k in ("FOR_STMT", "WHILE_STMT", "DO_STMT"):
            return self._loop(node, state)
        if k == "RETURN_STMT":
            self._events(node, state)
            return set()
        if k in ("CONTINUE_STMT", "BREAK_STMT"):
            if self._loops:
                self._loops[-1][1 if k == "CONTINUE_STMT" else 2].update(state)
            return set()
        if k == "SWITCH_STMT" and len(node.children) >= 2:
            s = self._events(node.children[0], state)
            self._loops.append([id(node), set(), set()])
            out = self._stmt(node.children[1], set(s))
            _, _, breaks = self._loops.pop()
            return out | breaks | s
        if k in ("CASE_STMT", "DEFAULT_STMT"):
            for c in node.children:
                state = self._stmt(c, state)
            return state
        return self._events(node, state)

    def _loop(self, node: Node, state: set) -> set:
        k = node.kind
        if k == "FOR_STMT":
            init, cond, inc, body = for_parts(node)
        elif k == "WHILE_STMT":
            init, cond, inc, body = None, node.children[0] if node.children else None, None, \
                node.children[-1] if len(node.children) > 1 else None
        else:
            init, cond, inc, body = None, node.children[-1] if len(node.children) > 1 else None, None, \
                node.children[0] if node.children else None
        entry = self._events(init, state)
        lid = id(node)
        barrier = self._barrier_in(node)
        always = k == "DO_STMT" or (barrier and self.enters is not None and self.enters(node))
        s = self._events(cond, entry) if k != "DO_STMT" else entry
        exits = set() if always else (self._step(s, ("out", lid)) if barrier else set(s))
        seen = set(s)
        for _ in range(10):
            inside = self._step(s, ("in", lid)) if barrier and k != "DO_STMT" else set(s)
            self._loops.append([lid, set(), set()])
            out = self._stmt(body, inside)
            _, conts, breaks = self._loops.pop()
            out = self._events(inc, out | conts)
            exits |= breaks
            back = self._step(out, ("back", lid)) if barrier else out
            s = self._events(cond, back)
            exits |= self._step(s, ("out", lid)) if barrier else s
            new = s - seen
            if not new:
                break
            seen |= new
            s = seen if not barrier else new
        return exits


def _shifts(suffix: tuple, sign: int) -> frozenset | None:
    """Iteration distances per loop across a path suffix; a loop left and re-entered restarts (None)."""
    if "many" in suffix:
        return frozenset([("any", None)])
    shift, restarted = {}, set()
    for ev in suffix:
        kind, lp = ev
        if kind == "back":
            shift[lp] = shift.get(lp, 0) + sign
        elif kind == "out":
            restarted.add(lp)
    return frozenset([(lp, None) for lp in restarted] + [(lp, v) for lp, v in shift.items() if lp not in restarted])


def relations(tags_a: set, tags_b: set) -> set:
    """For two accesses that can share an interval: frozensets {(loop id, iterations B is after A | None)}
    (empty: same iterations). An empty result: they never share one."""
    out = set()
    by_seg: dict = {}
    for seg, path in tags_b:
        by_seg.setdefault(seg, []).append(path)
    for seg, pa in tags_a:
        for pb in by_seg.get(seg, ()):
            if pb[:len(pa)] == pa:
                out.add(_shifts(pb[len(pa):], 1))
            elif pa[:len(pb)] == pb:
                out.add(_shifts(pa[len(pb):], -1))
    return out
