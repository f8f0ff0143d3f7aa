"""Spec-less verify: a verify Case derived from a kernel's signature and its launch site in the host code.

What is read from the source:
- parameters: pointers become arrays (`const T*` in; written only: out; written and read: inout), integer and
  float scalars become scalars; other types (structs, half, char) cannot be derived;
- the first launch site `k<<<grid, block, shmem>>>(args)`: the block must fold to constants (launch.py), the
  grid and dynamic shared memory become expressions of size names, each pointer argument's length comes from
  its `cudaMalloc(&p, bytes)` (bytes / sizeof(element));
- size names: kernel integer parameters that receive a host variable directly, and host variables initialised
  with constants (`const int n = 1 << 20`); a variable read at run time (`atoi(argv[1])`) gets 1000, with a note.
  Without any launch site, a kernel with exactly one integer parameter is assumed 1-D (grid ceil(n / 256), block
  256, every array of n elements), with a note.
What cannot be derived (aliasing pointer arguments, an offset pointer, a buffer allocated out of sight, memory
indexed with values read from the kernel's inputs, template kernels) is a Problem: spec-less verify refuses the
kernel and points to `cuport verify --init`, whose skeleton marks it TODO with a placeholder that loads and runs.
"""
from __future__ import annotations

import re
import textwrap
from dataclasses import dataclass, field
from pathlib import Path

HEURISTIC_SIZE = 1000            # a size the program decides at run time
HEURISTIC_BLOCK = 256            # a block size the program decides at run time (argv, a wrapper's parameter)
DEVICE_PROPS = {"multiProcessorCount": 16}   # cudaDeviceProp fields read for a grid: a small device assumed
DIFF_TOL = {"f32": (1e-4, 1e-5), "f64": (1e-10, 1e-12),   # translations against each other (sum order differs)
            "f16": (1e-2, 1e-3)}                           # half: one rounding of 2^-11 apart
_COMM = re.compile(r"^(__shfl|__syncthreads|__syncwarp|atomic|__ballot|__any|__all|__reduce|__match|__activemask)")
_ALLOC = ("cudaMalloc", "cudaMallocManaged", "hipMalloc", "hipMallocManaged")


class Underivable(Exception):
    """One thing the source does not say (the message says what and where)."""


@dataclass
class Problem:
    what: str                  # parameter name, or "grid" / "block" / "template" / "launch"
    message: str


@dataclass
class PDesc:
    name: str
    dtype: str
    shape: str | None = None   # arrays: element count expression
    direction: str = ""        # arrays: in / out / inout
    default: str | None = None  # scalars: expression, None when the size of the same name gives it
    init: tuple | None = None  # (Init kind, args) for arrays

    def text(self) -> str:
        if self.shape is not None:
            return f"{self.name}: {self.dtype}[{self.shape}] {self.direction}"
        return f"{self.name}: {self.dtype}" + (f" = {self.default}" if self.default is not None else "")


@dataclass
class Derived:
    path: str
    kernel: str
    line: int
    params: list[PDesc] = field(default_factory=list)
    grid: str = "1"
    block: str = "1"
    shared: str = "0"
    sizes: dict = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    defined_in: str | None = None   # the header defining a kernel derived with the file that includes it

    @property
    def signature(self) -> str:
        return ", ".join(p.text() for p in self.params)

    def as_dict(self, portability_fixes: bool = False) -> dict:
        """The JSON a worker rebuilds the Case from (case_from_dict)."""
        return {"path": str(Path(self.path).resolve()), "kernel": self.kernel, "signature": self.signature,
                "grid": self.grid, "block": self.block, "shared_mem": self.shared, "sizes": [self.sizes],
                "init": {p.name: list(p.init) for p in self.params if p.init},
                "tol": {p.dtype: DIFF_TOL[p.dtype] for p in self.params if p.dtype in DIFF_TOL},
                "translate": {} if portability_fixes else {"portability_fixes": False}}


def case_from_dict(d: dict):
    """A differential Case (reference=None) from Derived.as_dict()."""
    from porter.verify.spec import Case, Init, Tol
    path = Path(d["path"])
    case = Case(source=path.name, kernel=d["kernel"], signature=d["signature"], grid=d["grid"], block=d["block"],
                reference=None, sizes=[dict(s) for s in d["sizes"]], shared_mem=d.get("shared_mem", 0),
                init={k: Init(v[0], tuple(v[1])) for k, v in d.get("init", {}).items()},
                tol={k: Tol(*v) for k, v in d.get("tol", {}).items()}, translate=dict(d.get("translate", {})))
    case.spec_path, case.index, case.derived = str(path), 0, d
    return case


# ---------------------------------------------------------------------------------------------------------------
# types

_DTYPES = {"float": "f32", "double": "f64", "int": "i32", "unsigned int": "u32", "long": "i64", "long long": "i64",
           "unsigned long": "u64", "unsigned long long": "u64",
           # buffers of half, short and char (hadamard's and vadd's __half, ldpc's char counts)
           "half": "f16", "__half": "f16", "short": "i16", "unsigned short": "u16", "char": "i8", "unsigned char": "u8",
           "int8_t": "i8", "uint8_t": "u8", "int16_t": "i16", "uint16_t": "u16", "int32_t": "i32", "uint32_t": "u32",
           "int64_t": "i64", "uint64_t": "u64"}
_BYTES = {"f32": 4, "f64": 8, "i32": 4, "u32": 4, "i64": 8, "u64": 8, "f16": 2, "i16": 2, "u16": 2, "i8": 1, "u8": 1}


def _dtype(ctype: str | None) -> str | None:
    t = re.sub(r"\b(const|volatile|__restrict__|__restrict|restrict|signed)\b", " ", ctype or "")
    t = " ".join(t.replace("*", " ").split())
    return _DTYPES.get(t)


# ---------------------------------------------------------------------------------------------------------------
# host expressions -> size expressions

class _Sym:
    """Writes host expressions in the spec notation over size names."""

    def __init__(self, model, site, kernel, env: dict | None = None):
        from porter.analysis.affine import analysis
        self.model, self.site, self.kernel = model, site, kernel
        self.env = env or {}                 # a templated host function's parameters: name -> int / type
        self.types: dict = {}                # the kernel instance's template arguments: name -> int / type
        self.an = analysis(model)
        self.names: dict = {}                # id(decl) (or ("prop", field)) -> size name
        self.sizes: dict[str, int] = {}
        self.notes: list[str] = []
        self.inline: set[int] = set()        # decls folded to their value (block dimensions)
        self.taken = {p.name for p in kernel.params}
        self.calls: dict[int, list] = {}     # id(host function) -> its calls (caller_arg)
        self.bound: dict[int, object] = {}   # id(PARM_DECL) -> argument, while a one-line function is inlined
        self.fallback = HEURISTIC_SIZE       # the value a run-time variable is given (HEURISTIC_BLOCK in a block)
        self.visiting: set = set()           # dim3 variables whose member writes are being read

    def size_name_key(self, key, name: str, value, why: str) -> str:
        """A size name for something that is not a declaration (a struct field, a container's size)."""
        while name in self.sizes or name in self.taken:
            name += "_"
        self.names[key], self.sizes[name] = name, value
        self.notes.append(why.format(name=name))
        return name

    def size_name(self, decl, value, why: str | None = None, name: str | None = None) -> str:
        """The size name of a host variable (or the kernel parameter `name` it is passed to)."""
        if id(decl) not in self.names:
            cand = name or decl.spelling
            while cand in self.sizes or (name is None and cand in self.taken):
                cand += "_"                      # a host variable must not take a kernel parameter's name
            self.names[id(decl)] = cand
            self.sizes[cand] = value
            if why:
                self.notes.append(why.format(name=cand))
        return self.names[id(decl)]

    def caller_arg(self, decl):
        """The argument a host function's parameter receives at the function's first call in the file
        (`void run(int *d, int n) { k<<<...>>>(d, n); }` called as `run(d_v, n)`), or None. Every parameter of
        one function is read at the same call, so the launch is one the program makes."""
        if decl is None or decl.kind != "PARM_DECL" or decl.parent is None:
            return None
        fn = self.model.function_of(decl)
        if fn is None or fn.is_kernel or fn is self.kernel or fn.node is not decl.parent:
            return None
        names = [p.name for p in fn.params]
        if decl.spelling not in names:
            return None
        if id(fn) not in self.calls:
            calls = [c for c in self.model.of_kind("CALL_EXPR") if c.spelling == fn.name and
                     len(c.args()) == len(names) and self.model.function_of(c) is not fn]
            calls.sort(key=self._liveness)  # a call in main first, then in a called function; dead code last
            self.calls[id(fn)] = calls
            if len(calls) > 1:
                self.notes.append(f"`{fn.name}` is called {len(calls)} times: the call at line "
                                  f"{self.model.source.position(calls[0].start)[0]} gives its parameters")
        calls = self.calls[id(fn)]
        return calls[0].args()[names.index(decl.spelling)] if calls else None

    def _liveness(self, call) -> int:
        caller = self.model.function_of(call)
        if caller is None or caller.name == "main":
            return 0
        return 1 if any(c.spelling == caller.name for c in self.model.of_kind("CALL_EXPR")) else 2

    def expr(self, node, depth: int = 0) -> str:
        from porter.analysis.launch import fold_int
        if node is None or depth > 12:
            raise Underivable("expression too deep")
        n = node
        while n.kind in ("PAREN_EXPR", "UNEXPOSED_EXPR", "CSTYLE_CAST_EXPR", "CXX_STATIC_CAST_EXPR",
                         "CXX_FUNCTIONAL_CAST_EXPR") and n.children:
            n = n.children[-1]
        k = n.kind
        if k == "DECL_REF_EXPR" and n.ref is not None and n.ref.kind in ("VAR_DECL", "PARM_DECL"):
            return self.variable(n.ref, depth)
        if k == "DECL_REF_EXPR" and isinstance(self.env.get(n.spelling), int) and \
                n.ref_kind in ("TEMPLATE_NON_TYPE_PARAMETER", "NON_TYPE_TEMPLATE_PARAMETER"):
            return str(self.env[n.spelling])     # `BLOCK` of `template <int BLOCK> void run(...)`
        if k == "CXX_UNARY_EXPR" and _sizeof(self, n) is not None:
            return str(_sizeof(self, n))
        if k == "MEMBER_REF_EXPR" and n.children:
            text = self.member(n)
            if text is not None:
                return text
        if k == "CALL_EXPR" and not n.args() and n.children and (n.spelling == "size" or not n.spelling and
                                                                 re.search(r"\.\s*size$", n.children[0].text)):
            c = _bare(n.children[0])        # quicksort's `blocks.size()`: a container filled at run time
            c = _bare(c.children[0]) if c.kind == "MEMBER_REF_EXPR" and c.children else c
            if c.kind == "DECL_REF_EXPR" and c.ref is not None:
                key = ("size", id(c.ref))
                if key not in self.names:
                    self.size_name_key(key, f"{c.spelling}_size", self.fallback,
                                       f"{{name}} is `{c.spelling}.size()`, decided at run time: {self.fallback} "
                                       "assumed (--sizes {name}=N)")
                return self.names[key]
        if k == "CALL_EXPR" and n.spelling in ("ceil", "ceilf") and len(n.args()) == 1:
            q = _bare(n.args()[0])      # perlin's `std::ceil(WIN_WIDTH / 16.0)`: a float division of integers
            if q.kind == "BINARY_OPERATOR" and q.op == "/" and len(q.children) == 2:
                a, b = (self.integral(c, depth + 1) for c in q.children)
                if a is not None and b is not None:
                    return f"cdiv({a}, {b})"
        if k == "ARRAY_SUBSCRIPT_EXPR":
            elem = _array_element(self, n)
            if elem is not None:        # `size_t local[2] = {16, 16};` ... `dim3 b(local[0], local[1])`
                return self.expr(elem, depth + 1)
        if k == "BINARY_OPERATOR" and len(n.children) == 2 and n.op in ("+", "-", "*", "/", "%", "<<", ">>"):
            a, b = self.expr(n.children[0], depth + 1), self.expr(n.children[1], depth + 1)
            op = n.op
            if op in ("<<", ">>"):
                shift = fold_int(self.model, n.children[1], self.env)
                if shift is None or not 0 <= shift < 63:
                    raise Underivable(f"cannot express `{n.text}`")
                op, b = ("*" if op == "<<" else "//"), str(1 << shift)
            elif op == "/" and "float" not in (n.type or "") and "double" not in (n.type or ""):
                op = "//"
            return f"({a} {op} {b})"
        v = n.value if k.endswith(("_EXPR", "_LITERAL", "OPERATOR")) else None
        if isinstance(v, float) and v.is_integer() and (k == "CALL_EXPR" or re.search(
                r"int|long|short|char|unsigned|size_t", n.type or "") and not re.search(r"float|double", n.type or "")):
            return str(int(v))          # `std::ceil(61440 / 16.0)` folded by clang, pnpoly's `const int n = 2e7`
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            return repr(v)
        if k == "CONDITIONAL_OPERATOR":
            ab = _ceil_pattern(n)
            if ab is not None:          # hypterm's `#define ceil(a,b) ((a) % (b) == 0 ? (a) / (b) : (a) / (b) + 1)`
                return f"cdiv({self.expr(ab[0], depth + 1)}, {self.expr(ab[1], depth + 1)})"
        if k == "CALL_EXPR":
            body = _one_return(self.model, n)
            if body is not None:        # `int ceil_div(int a, int b) { return (a + b - 1) / b; }`
                fn, ret = body
                saved = dict(self.bound)
                self.bound.update({id(p.node): a for p, a in zip(fn.params, n.args())})
                try:
                    return f"({self.expr(ret, depth + 1)})"
                finally:
                    self.bound = saved
        raise Underivable(f"cannot express `{' '.join(n.text.split())}` as a size")

    def integral(self, node, depth: int) -> str | None:
        """An operand of a float division that is an integer: an integer expression, or a float literal with an
        integral value (`16.0`); None otherwise."""
        b = _bare(node)
        if b.kind == "FLOATING_LITERAL":
            return str(int(b.value)) if isinstance(b.value, float) and b.value.is_integer() else None
        t = b.type or ""
        if re.search(r"float|double|half", t) or not re.search(r"int|long|short|char|unsigned|size_t", t):
            return None
        try:
            return self.expr(b, depth)
        except Underivable:
            return None

    def member(self, n) -> str | None:
        """`block.x` of a dim3 that folds (ga's `(length + block_size.x - 1) / block_size.x`), and
        `prop.multiProcessorCount` (blockAccess's grid of 16 blocks per SM: DEVICE_PROPS assumed, a size of its
        own); None otherwise."""
        from porter.analysis.launch import fold_dim3
        base = _bare(n.children[0])
        if base.kind != "DECL_REF_EXPR" or base.ref is None:
            return None
        t = base.type or ""
        if "dim3" in t and n.spelling in ("x", "y", "z"):
            dims = fold_dim3(self.model, base, self.env)
            if dims is None and base.ref.kind == "VAR_DECL" and id(base.ref) not in self.visiting:
                exprs = [c for c in base.ref.children if c.kind not in ("TYPE_REF", "NAMESPACE_REF")
                         and not c.kind.endswith("_ATTR")]
                self.visiting.add(id(base.ref))
                try:                    # clenergy's `Gsz.x = volsize.x / (Bsz.x * UNROLLX)`
                    dims = _member_writes(self, base.ref, exprs[-1] if exprs else None)
                finally:
                    self.visiting.discard(id(base.ref))
            return str(dims["xyz".index(n.spelling)]) if dims is not None else None
        if base.ref.kind in ("VAR_DECL", "PARM_DECL") and "dim3" not in t and "cudaDeviceProp" not in t and \
                re.search(r"int|long|short|size_t|unsigned", n.type or ""):
            # lut-gemm's `nqW.mSize`, minibude's `params.wgSize`: a field the program fills at run time
            key = ("member", id(base.ref), n.spelling)
            if key not in self.names:
                self.size_name_key(key, f"{base.spelling}_{n.spelling}", self.fallback,
                                   f"{{name}} is `{base.spelling}.{n.spelling}`, decided at run time: "
                                   f"{self.fallback} assumed (--sizes {{name}}=N)")
            return self.names[key]
        if "cudaDeviceProp" in t and n.spelling in DEVICE_PROPS:
            key = ("prop", n.spelling)
            if key not in self.names:
                self.size_name_key(key, n.spelling, DEVICE_PROPS[n.spelling],
                                   f"{{name}} is the device's `{base.spelling}.{n.spelling}`: "
                                   f"{DEVICE_PROPS[n.spelling]} assumed (--sizes {{name}}=N)")
            return self.names[key]
        return None

    def variable(self, decl, depth: int) -> str:
        from porter.analysis.launch import fold_int
        if id(decl) in self.bound:          # a parameter of a function being inlined: its argument
            arg = self.bound.pop(id(decl))
            try:
                text = self.expr(arg, depth + 1)
                return text if re.fullmatch(r"\w+", text) else f"({text})"
            finally:
                self.bound[id(decl)] = arg
        if id(decl) in self.names:
            return self.names[id(decl)]
        if id(decl) in self.inline:         # makes up the block: the value the block was folded with
            v = _fold_decl(self, decl)
            if v is not None:
                return str(v)
        where = f"line {self.model.source.position(decl.start)[0]}"
        init = self.an.definition(decl) if decl.kind == "VAR_DECL" else self.caller_arg(decl)
        if init is not None:
            const = fold_int(self.model, init, self.env)
            v = _bare(init).value
            if const is None and isinstance(v, float) and v.is_integer() and \
                    re.search(r"int|long|short|size_t", decl.type or ""):
                const = int(v)          # pnpoly's `const int nPoints = 2e7;`
            if const is not None and id(decl) in self.inline:
                return str(const)
            if const is not None and not _has_var_refs(init):
                return self.size_name(decl, const)
            try:
                return self.expr(init, depth + 1)
            except Underivable:
                pass
        first = _loop_start(decl)
        if first is not None:           # `for (int t = 0; t < iters; t++) k<<<...>>>(t)`: a value it takes
            text = self.expr(first, depth + 1)
            self.notes.append(f"`{decl.spelling}` is the counter of the loop at {where}: its first value "
                              f"{text} taken")
            return text
        return self.size_name(decl, self.fallback, f"{{name}} is decided at run time ({where}): "
                                                   f"{self.fallback} assumed (--sizes {{name}}=N)")


def _array_element(sym: _Sym, n):
    """The initialiser of `a[i]`: a local array with an initialiser list, a constant index, and no element
    assigned anywhere in its function; None otherwise."""
    from porter.analysis.launch import fold_int
    if len(n.children) != 2:
        return None
    base, index = _bare(n.children[0]), n.children[1]
    i = fold_int(sym.model, index, sym.env)
    if base.kind != "DECL_REF_EXPR" or base.ref is None or base.ref.kind != "VAR_DECL" or i is None:
        return None
    init = next((c for c in base.ref.children if c.kind == "INIT_LIST_EXPR"), None)
    if init is None or not 0 <= i < len(init.children):
        return None
    scope = base.ref.parent
    while scope is not None and scope.kind not in ("FUNCTION_DECL", "FUNCTION_TEMPLATE", "CXX_METHOD"):
        scope = scope.parent
    for w in (scope.walk() if scope is not None else ()):
        if (w.kind == "BINARY_OPERATOR" and w.op == "=" or w.kind == "COMPOUND_ASSIGNMENT_OPERATOR" or
                w.kind == "UNARY_OPERATOR" and w.op in ("++", "--", "post++", "post--", "&")) and w.children:
            t = _bare(w.children[0])
            t = _bare(t.children[0]) if t.kind == "ARRAY_SUBSCRIPT_EXPR" and t.children else t
            if t.kind == "DECL_REF_EXPR" and t.ref is base.ref:
                return None
    return init.children[i]


def _loop_start(decl):
    """The initial value of a `for` loop's counter declared in its init (`for (int t = 0; ...)`), or None. Taking
    the run-time fallback (1000) for it indexed past the end of buffers sized by the loop's bound (d2q9-bgk's
    `Partial_Sum[... + tt * ...]`)."""
    stmt = decl.parent
    if stmt is None or stmt.kind != "DECL_STMT" or stmt.parent is None or stmt.parent.kind != "FOR_STMT" or \
            not stmt.parent.children or stmt.parent.children[0] is not stmt:
        return None
    exprs = [c for c in decl.children if not c.kind.endswith("_ATTR") and c.kind not in ("TYPE_REF",
                                                                                         "NAMESPACE_REF")]
    return exprs[-1] if exprs else None


def _one_return(model, call):
    """(Function, returned expression) of a called host function whose body is `return E;` alone, or None."""
    name = call.spelling
    fns = [f for f in model.functions if f.name == name and f.body is not None and not f.is_kernel]
    if len(fns) != 1 or len(fns[0].params) != len(call.args()):
        return None
    stmts = [c for c in fns[0].body.children]
    if len(stmts) != 1 or stmts[0].kind != "RETURN_STMT" or not stmts[0].children:
        return None
    return fns[0], stmts[0].children[-1]


def _ceil_pattern(node):
    """(a, b) of `a % b == 0 ? a / b : a / b + 1`, or None. Compared by tree, not text: inside a macro every
    node's text is the macro's call."""
    def key(x):
        x = _bare(x)
        return (x.kind, x.spelling, getattr(x, "op", None) if x.kind.endswith("OPERATOR") else None,
                x.value if x.kind.endswith("_LITERAL") else None, tuple(key(c) for c in x.children))

    def div(x):
        x = _bare(x)
        return (key(x.children[0]), key(x.children[1])) if x.kind == "BINARY_OPERATOR" and x.op == "/" and \
            len(x.children) == 2 else None
    if len(node.children) != 3:
        return None
    cond, yes, no = (_bare(c) for c in node.children)
    if cond.kind != "BINARY_OPERATOR" or cond.op != "==" or len(cond.children) != 2:
        return None
    mod, zero = (_bare(c) for c in cond.children)
    if mod.kind != "BINARY_OPERATOR" or mod.op != "%" or zero.value != 0 or len(mod.children) != 2:
        return None
    ab = (key(mod.children[0]), key(mod.children[1]))
    if div(yes) != ab or no.kind != "BINARY_OPERATOR" or no.op != "+" or len(no.children) != 2:
        return None
    q, one = (_bare(c) for c in no.children)
    if div(q) != ab or one.value != 1:
        return None
    return mod.children[0], mod.children[1]


def _fold_first(sym: _Sym, node, depth: int = 0):
    """An integer the expression takes on the program's first way through (a block size): constants, locals
    initialised once, a loop counter's first value (`for (int j = 32; ...)`, `for (int b : {64, 128})` over an
    array of constants), a host wrapper's parameter at its call. None otherwise; no size names are made."""
    from porter.analysis.launch import fold_int
    if node is None or depth > 8:
        return None
    v = fold_int(sym.model, node, sym.env)
    if v is not None:
        return v
    n = _bare(node)
    if n.kind != "DECL_REF_EXPR" or n.ref is None:
        return None
    return _fold_decl(sym, n.ref, depth)


def _fold_decl(sym: _Sym, d, depth: int = 0):
    """_fold_first of a reference to the variable or parameter `d`."""
    if d.kind == "PARM_DECL":
        return _fold_first(sym, sym.caller_arg(d), depth + 1)
    if d.kind != "VAR_DECL":
        return None
    rng = d.parent
    if rng is not None and rng.kind == "CXX_FOR_RANGE_STMT" and rng.children and rng.children[0] is d:
        seq = _bare(rng.children[1]) if len(rng.children) > 1 else None
        if seq is not None and seq.kind == "DECL_REF_EXPR" and seq.ref is not None and seq.ref.kind == "VAR_DECL":
            seq = next((c for c in seq.ref.children if c.kind == "INIT_LIST_EXPR"), None)
        if seq is not None and seq.kind == "INIT_LIST_EXPR" and seq.children:
            return _fold_first(sym, seq.children[0], depth + 1)
        return None
    first = _loop_start(d)
    if first is not None:
        return _fold_first(sym, first, depth + 1)
    init = sym.an.definition(d)
    return _fold_first(sym, init, depth + 1) if init is not None else None


def _through_wrappers(sym: _Sym, b):
    """`k<<<...>>>(d, n)` inside `void run(int *d, int n)` called as `run(d_v, 4096)`: the caller's argument
    (`d_v`, `4096`) for a parameter of the host function, up to 3 wrappers deep; `b` itself otherwise."""
    for _ in range(3):
        up = sym.caller_arg(b.ref) if b is not None and b.kind == "DECL_REF_EXPR" and b.ref is not None else None
        if up is None:
            break
        b = _bare(up)
    return b


def _has_var_refs(node) -> bool:
    return any(n.kind == "DECL_REF_EXPR" and n.ref is not None and n.ref.kind in ("VAR_DECL", "PARM_DECL")
               for n in node.walk())


_SIZES = {"float": 4, "double": 8, "int": 4, "unsigned int": 4, "unsigned": 4, "long": 8, "long long": 8,
          "unsigned long": 8, "unsigned long long": 8, "short": 2, "unsigned short": 2, "char": 1, "unsigned char": 1,
          "signed char": 1, "bool": 1, "int8_t": 1, "uint8_t": 1, "int16_t": 2, "uint16_t": 2, "int32_t": 4,
          "uint32_t": 4, "int64_t": 8, "uint64_t": 8, "size_t": 8, "half": 2, "__half": 2}


def _sizeof(sym: _Sym, node):
    """`sizeof(float)` (clang's value), or `sizeof(T)` with T a template parameter the instance binds."""
    if isinstance(node.value, int) and not isinstance(node.value, bool):
        return node.value
    m = re.fullmatch(r"\s*sizeof\s*\(?\s*([\w\s]+?)\s*\)?\s*", node.text or "")
    if m is None:
        return None
    t = _subst(m.group(1), {**sym.env, **sym.types})
    return _SIZES.get(" ".join(re.sub(r"\b(const|volatile)\b", " ", t).split()))


_LEAVES = {"FLOAT": "f32", "DOUBLE": "f64", "INT": "i32", "UINT": "u32", "LONG": "i64", "ULONG": "u64",
           "LONGLONG": "i64", "ULONGLONG": "u64", "SHORT": "i16", "USHORT": "u16", "CHAR_S": "i8", "SCHAR": "i8",
           "UCHAR": "u8", "CHAR_U": "u8"}


def _flat_pointee(p):
    """(dtype, scalars per element) of a pointer parameter to a struct made of one scalar type only and laid out
    without padding (cfd's Float3, linearprobing's KeyValue, sph's doubles and double3s); None otherwise."""
    try:
        t = p.node._cursor.type.get_canonical()
        return _flat_record(t.get_pointee() if t.kind.name == "POINTER" else t.element_type)
    except Exception:                   # no clang type behind the node (a shallow tree): not flattened
        return None


def _flat_record(t, depth: int = 0):
    t = t.get_canonical()
    k = t.kind.name
    if k in _LEAVES:
        return _LEAVES[k], 1
    if k == "CONSTANTARRAY" and depth < 6:
        inner = _flat_record(t.element_type, depth + 1)
        return (inner[0], inner[1] * t.element_count) if inner else None
    if k != "RECORD" or depth >= 6:
        return None
    leaves = []
    for f in t.get_fields():
        r = _flat_record(f.type, depth + 1)
        if r is None:
            return None
        leaves.append(r)
    if not leaves or len({dt for dt, _ in leaves}) != 1:
        return None
    dt, n = leaves[0][0], sum(c for _, c in leaves)
    return (dt, n) if n * _BYTES[dt] == t.get_size() else None      # padding or an alignment attribute: no


def _subst(ctype: str, env: dict) -> str:
    """A type spelled with template parameters, with the instance's types in (`const T *` -> `const float *`)."""
    return re.sub(r"\b\w+\b", lambda m: str(env[m.group(0)]) if isinstance(env.get(m.group(0)), str)
                  else m.group(0), ctype or "")


def _bare(node):
    """The node under parentheses and implicit / explicit casts."""
    while node is not None and node.kind in ("PAREN_EXPR", "UNEXPOSED_EXPR", "CSTYLE_CAST_EXPR",
                                             "CXX_STATIC_CAST_EXPR", "CXX_REINTERPRET_CAST_EXPR") and node.children:
        node = node.children[-1]
    return node


def _allocation(model, decl):
    """The byte-count expression of `cudaMalloc(&p, bytes)` for the host pointer `decl`, or None."""
    for call in model.of_kind("CALL_EXPR"):
        name = call.spelling
        if not name and call.children:     # `cudaMalloc(&d_x, ...)` with `T *d_x` in a template: dependent
            name = next((c.spelling for c in call.children[0].walk() if c.kind == "OVERLOADED_DECL_REF"), "")
        if name not in _ALLOC:
            continue
        args = call.args()
        if len(args) < 2:
            continue
        a = _bare(args[0])
        if a.kind == "UNARY_OPERATOR" and a.op == "&" and a.children:
            target = _bare(a.children[0])
            if target.kind == "DECL_REF_EXPR" and target.ref is decl:
                return args[1]
    return None


_MEMSET = ("cudaMemset", "cudaMemsetAsync", "hipMemset", "hipMemsetAsync")


def _zeroed(model, decl, site) -> str | None:
    """The text of a `cudaMemset(p, 0, bytes)` of the host pointer `decl` written before the launch (or in
    another function: main zeroing a buffer a wrapper then launches on), else None."""
    from porter.analysis.launch import fold_int
    for call in model.of_kind("CALL_EXPR"):
        if call.spelling not in _MEMSET or len(call.args()) < 3:
            continue
        a = _bare(call.args()[0])
        if a.kind != "DECL_REF_EXPR" or a.ref is not decl or fold_int(model, call.args()[1]) != 0:
            continue
        if site is not None and model.function_of(call) is model.function_of(site.node) and \
                call.start > site.node.start:
            continue                    # reset after the launch (for the next repetition): not the input
        return " ".join(call.text.split())
    return None


def _elements(sym: _Sym, size_node, elem: int, unit: tuple | None = None) -> str:
    """Element count from a byte count: `n * sizeof(float)` -> n, anything else -> (bytes) // elem. `unit`:
    (bytes, scalars) of a struct element counted in scalars (`n * sizeof(Float3)` -> n * 3)."""
    from porter.analysis.launch import fold_int
    n = _bare(size_node)
    const = fold_int(sym.model, n, sym.env) if not _has_var_refs(n) else None
    if const is None and n.kind == "CXX_UNARY_EXPR":
        const = _sizeof(sym, n)
    if isinstance(const, int):
        return str(max(1, const // elem))
    if n.kind == "DECL_REF_EXPR" and n.ref is not None and n.ref.kind == "VAR_DECL" and \
            id(n.ref) not in sym.names:
        d = sym.an.definition(n.ref)
        if d is not None and _has_var_refs(d):
            return _elements(sym, d, elem)         # `size_t bytes = n * sizeof(float)`
    if n.kind == "BINARY_OPERATOR" and n.op == "*" and len(n.children) == 2:
        factors = _factors(n)           # `sizeof(T) * 2 * n` is (sizeof(T) * 2) * n
        for i, f in enumerate(factors):
            if f.kind == "CXX_UNARY_EXPR" and _sizeof(sym, f) == (unit[0] if unit else elem):
                rest = [sym.expr(x) for x in factors[:i] + factors[i + 1:]] + ([str(unit[1])] if unit else [])
                return " * ".join(rest) if len(rest) > 1 else rest[0]
    if elem == 1:
        return sym.expr(size_node)
    return f"({sym.expr(size_node)} // {elem})"


def _factors(n) -> list:
    n = _bare(n)
    if n.kind == "BINARY_OPERATOR" and n.op == "*" and len(n.children) == 2:
        return _factors(n.children[0]) + _factors(n.children[1])
    return [n]


# ---------------------------------------------------------------------------------------------------------------
# the kernel body: what each pointer does, and whether memory is indexed with loaded values

_CASTS = ("CSTYLE_CAST_EXPR", "CXX_REINTERPRET_CAST_EXPR", "CXX_STATIC_CAST_EXPR", "CXX_CONST_CAST_EXPR")


def _pointer_use(fn, decl) -> tuple[bool, bool]:
    """(written, read) through pointer parameter `decl`; a use that is not clearly one or the other is both."""
    written = read = False
    for n in fn.body.walk():
        if n.kind != "DECL_REF_EXPR" or n.ref is not decl:
            continue
        child, p = n, n.parent
        while p is not None and (p.kind in ("PAREN_EXPR", "UNEXPOSED_EXPR", "ARRAY_SUBSCRIPT_EXPR",
                                            "MEMBER_REF_EXPR") or (p.kind == "UNARY_OPERATOR" and p.op == "*") or
                                 p.kind in _CASTS and "*" in (p.type or "")):   # cbsfil's `(uchar*)image + y`
            if p.kind == "ARRAY_SUBSCRIPT_EXPR" and p.children and p.children[0] is not child:
                break
            child, p = p, p.parent
        if p is None:
            continue
        if p.kind == "BINARY_OPERATOR" and p.op == "=" and p.children and p.children[0] is child:
            written = True
        elif p.kind == "COMPOUND_ASSIGNMENT_OPERATOR" and p.children and p.children[0] is child:
            written = read = True
        elif p.kind == "UNARY_OPERATOR" and p.op in ("++", "--", "post++", "post--", "&"):
            written = read = True
        elif p.kind == "CALL_EXPR" or (p.kind == "BINARY_OPERATOR" and p.op in ("+", "-") and
                                       (child is n or "*" in (child.type or ""))):
            written = read = True                   # atomics, device functions, pointer arithmetic
        elif p.kind == "VAR_DECL" and ("*" in (p.type or "") or "&" in (p.type or "")):
            written = read = True                   # an alias
        else:
            read = True
    return written, read


def _data_indexing(model, fn, pointers: set) -> str | None:
    """`bins[in[i] % 16]`: an index computed from a value loaded through a pointer parameter. Returns the text."""
    def loads(node, tainted):
        for n in node.walk():
            if n.kind == "DECL_REF_EXPR" and n.ref is not None and (id(n.ref) in pointers or id(n.ref) in tainted):
                if id(n.ref) in tainted:
                    return True
                p = n.parent
                while p is not None and p.kind in ("PAREN_EXPR", "UNEXPOSED_EXPR"):
                    p = p.parent
                if p is not None and (p.kind == "ARRAY_SUBSCRIPT_EXPR" or
                                      (p.kind == "UNARY_OPERATOR" and p.op == "*")):
                    return True
        return False

    tainted: set[int] = set()
    local_vars = [v for v in fn.body.walk() if v.kind == "VAR_DECL"]
    # (target, value) of each assignment; a struct's `h = p[i]` is a call of its operator= (ldpc's h_element)
    writes = [(w.children[0], w.children[1]) for w in fn.body.walk() if len(w.children) == 2 and (
        (w.kind == "BINARY_OPERATOR" and w.op == "=") or w.kind == "COMPOUND_ASSIGNMENT_OPERATOR")]
    writes += [(w.children[0], w.children[-1]) for w in fn.body.walk()     # [lhs, operator=, rhs]
               if w.kind == "CALL_EXPR" and w.spelling == "operator=" and len(w.children) >= 2]
    changed = True
    while changed:                               # locals holding loaded values, to a fixed point
        changed = False
        for v in local_vars:
            if id(v) not in tainted and v.children and "*" not in (v.type or "") and loads(v, tainted):
                tainted.add(id(v))
                changed = True
        for target, value in writes:
            t = _bare(target)
            if t is not None and t.kind == "DECL_REF_EXPR" and t.ref is not None and id(t.ref) not in tainted \
                    and t.ref.kind == "VAR_DECL" and loads(value, tainted):
                tainted.add(id(t.ref))
                changed = True
    for n in fn.body.walk():
        if n.kind == "ARRAY_SUBSCRIPT_EXPR" and len(n.children) == 2 and loads(n.children[1], tainted):
            return " ".join(n.text.split())
    return None


def _communicates(model, fn, depth: int = 0) -> bool:
    """Threads exchange values (shuffles, barriers, atomics, shared memory) or loop, in the kernel or a device
    function it calls (cbsfil's recursive filter loops in ConvertToInterpolationCoefficients: inf and NaN inputs
    then end as inf in one target and NaN in another): no special values then."""
    if any(s.function is fn for s in model.shared):
        return True
    for n in fn.body.walk():
        if n.kind in ("FOR_STMT", "WHILE_STMT", "DO_STMT") or (n.kind == "CALL_EXPR" and _COMM.match(n.callee)):
            return True
        if n.kind == "CALL_EXPR" and n.spelling and depth < 4:
            callee = next((f for f in model.functions if f.name == n.spelling and f.body is not None and
                           f is not fn), None)
            if callee is not None and _communicates(model, callee, depth + 1):
                return True
    return False


# ---------------------------------------------------------------------------------------------------------------
# one kernel

MAX_INSTANCES = 4                # instantiations of one template kernel derived (the first ones found)


def derive_kernels(model, fn) -> list[Derived]:
    """A Derived for a kernel; for a template kernel, one per instantiation the program launches (the launch
    it comes from gives its sizes), or one with a "template" problem when none is found."""
    if not fn.is_template:
        return [derive_kernel(model, fn)]
    from porter.translate.templates import instances
    try:
        found = [i for i in instances(model, fn) if i.origin in ("launch", "host template")]
    except Exception:                   # the instance search met a tree it does not know: no instance
        found = []
    if not found:
        d = derive_kernel(model, fn)
        d.problems.insert(0, Problem("template", f"`{fn.name}` is a template launched with no template arguments "
                                                 "found: they are needed (Case(kernel=\"name<args>\"))"))
        return [d]
    return [derive_kernel(model, fn, i) for i in found[:MAX_INSTANCES]]


def derive_kernel(model, fn, inst=None, host=None) -> Derived:
    """One kernel (one instance `inst` of a template kernel, translate/templates.py's Instance). `host`: the
    model of another file of the program whose launch of the kernel gives the sizes (the kernel's own file has
    none); the kernel's body is still read from `model`."""
    from porter.analysis.launch import site_kernel
    name = f"{fn.name}<{inst.label}>" if inst is not None else fn.name
    d = Derived(model.path, name, _line(model, fn.node))
    kmodel, model = model, host or model
    sites = [s for s in model.launches if site_kernel(s) == fn.name and s.block is not None]
    if host is not None and sites:
        d.notes.append(f"launched in {Path(host.path).name}: its launch at line {_line(host, sites[0].node)} "
                       "gives the sizes")
    env = {}
    if inst is not None and inst.node is not None:
        sites = [s for s in sites if s.node is inst.node] or sites
    elif inst is None:                  # a launch in a templated host function is read with no parameters bound
        sites.sort(key=lambda s: s.function is not None and s.function.is_template)
    elif inst.host is not None:
        # the host template's arguments as written (`run<64>(`): integers as ints, types as their spelling
        sites = [inst.host[0]]
        env = {k: int(v) if isinstance(v, str) and re.fullmatch(r"-?\d+", v.strip()) else v
               for k, v in inst.host[1].items()}
    site = sites[0] if sites else None
    sym = _Sym(model, site, fn, env)
    if inst is not None:
        sym.types = dict(inst.args)
    args = list(site.args) if site is not None else []
    if site is not None and len(args) != len(fn.params):
        d.problems.append(Problem("launch", f"the launch at line {_line(model, site.node)} passes {len(args)} "
                                            f"arguments for {len(fn.params)} parameters (default arguments?)"))
        args = []
    if site is not None:
        _from_site(model, fn, site, args, sym, d)
        if len(sites) > 1:
            d.notes.append(f"{len(sites)} launch sites: the one at line {_line(model, site.node)} is used")
    else:
        _without_site(fn, sym, d)
    seen_buffers: dict[int, str] = {}
    elementwise = not _communicates(kmodel, fn) if fn.body is not None else False
    for i, p in enumerate(fn.params):
        a = args[i] if i < len(args) else None
        if p.is_pointer:
            d.params.append(_array(model, fn, sym, d, p, a, seen_buffers, elementwise))
        else:
            d.params.append(_scalar(sym, d, p, a))
    if fn.body is not None:
        why = _data_indexing(model, fn, {id(p.node) for p in fn.params if p.is_pointer})
        if why:
            d.problems.append(Problem("indexing", f"`{why}` indexes memory with a value loaded from the inputs: "
                                                  "their range must keep it in bounds (init=...)"))
    d.sizes = dict(sym.sizes)
    d.notes += sym.notes
    return d


def _is_int(p) -> bool:
    return not p.is_pointer and _dtype(_canon(p)) in ("i32", "u32", "i64", "u64")


def _from_site(model, fn, site, args, sym: _Sym, d: Derived) -> None:
    """Block, grid, dynamic shared memory and size names from the launch `k<<<grid, block, shmem>>>(args)`."""
    from porter.analysis.launch import fold_int, site_shapes
    sl = _line(model, site.node)
    shapes = site_shapes(model, site, fn)
    if sym.env:                         # the host template instantiation the kernel's instance comes from
        shapes = [s for s in shapes if all(s[1].get(k, v) == v for k, v in sym.env.items())]
    wrapped = _wrapper_block(model, sym, site.block)
    if wrapped:                         # the block the wrapper receives at the call the sizes come from
        d.block = _dims_text(wrapped)
        _mark_inline(sym, site.block)
    elif shapes and wrapped is None:
        d.block = _dims_text(shapes[0][0].dims)
        _mark_inline(sym, site.block)
    else:
        try:                            # decided at run time (argv, a wrapper's parameter): 256 assumed
            sym.fallback = HEURISTIC_BLOCK
            d.block = _grid_text(sym, site.block)
        except Underivable as e:
            d.problems.append(Problem("block", f"the block of the launch at line {sl} "
                                               f"(`{' '.join(site.block.text.split())}`) does not fold to "
                                               f"constants: {e}"))
        finally:
            sym.fallback = HEURISTIC_SIZE
    # an integer parameter that receives a host variable gives that variable's value a size name: its own
    for p, a in zip(fn.params, args):
        b = _bare(a)
        b = _through_wrappers(sym, b)
        if not _is_int(p) or b.kind != "DECL_REF_EXPR" or b.ref is None or id(b.ref) in sym.inline:
            continue
        init = sym.an.definition(b.ref) if b.ref.kind == "VAR_DECL" else sym.caller_arg(b.ref)
        const = fold_int(model, init, sym.env) if init is not None else None
        if const is not None and not _has_var_refs(init):
            sym.size_name(b.ref, const, name=p.name)
        elif init is None and _loop_start(b.ref) is not None:
            continue                    # a loop counter: _Sym.variable gives its first value
        elif init is None or not _expressible(sym, init):
            sym.size_name(b.ref, HEURISTIC_SIZE, f"{{name}} is decided at run time (line {_line(model, b.ref)}): "
                                                 f"{HEURISTIC_SIZE} assumed (--sizes {{name}}=N)", p.name)
    try:
        d.grid = _grid_text(sym, site.grid)
    except Underivable as e:
        d.problems.append(Problem("grid", f"grid of the launch at line {sl}: {e}"))
    if site.shmem is not None:
        try:
            d.shared = _tidy(sym.expr(site.shmem))
        except Underivable as e:
            d.problems.append(Problem("shared", f"dynamic shared memory at line {sl}: {e}"))


def _wrapper_block(model, sym: _Sym, block):
    """`k<<<g, threads>>>` / `dim3(threads)` with `threads` a host wrapper's parameter: the block folded from
    the argument at the call caller_arg reads (launch.py's site_shapes takes any call: the grid and sizes would
    come from one call and the block from another); () when it does not fold there; None for other blocks."""
    from porter.analysis.launch import fold_dim3
    b = _bare(block)
    while b is not None and b.kind in ("CXX_FUNCTIONAL_CAST_EXPR", "CALL_EXPR") and "dim3" in (b.type or "") \
            and len([c for c in b.children if c.kind != "TYPE_REF"]) == 1:
        b = _bare([c for c in b.children if c.kind != "TYPE_REF"][0])
    if b is None or b.kind != "DECL_REF_EXPR" or b.ref is None or sym.caller_arg(b.ref) is None:
        return None
    dims = fold_dim3(model, _through_wrappers(sym, b), sym.env)
    if dims is None:
        x = _fold_first(sym, b)
        dims = (x, 1, 1) if x is not None else None
    return dims if dims is not None and dims[0] * dims[1] * dims[2] > 0 else ()


def _without_site(fn, sym: _Sym, d: Derived) -> None:
    """No launch in this file: 1-D over the one integer parameter, or a problem when there is not exactly one."""
    ints = [p for p in fn.params if _is_int(p)]
    for p in ints:
        sym.sizes[p.name] = HEURISTIC_SIZE
    n = ints[0].name if ints else "1"
    d.grid, d.block = f"cdiv({n}, 256)", "256"
    if len(ints) == 1:
        d.notes.append(f"no launch site: assumed 1-D, grid cdiv({n}, 256), block 256, every array of {n} "
                       f"elements, {n}={HEURISTIC_SIZE} (--sizes {n}=N)")
    else:
        d.problems.append(Problem("launch", "no launch site in this file, and not exactly one integer "
                                            "parameter to take for the size: grid, block and sizes are needed"))


def _expressible(sym, node) -> bool:
    try:
        sym.expr(node)
        return True
    except Underivable:
        return False


def _canon(p, sym=None) -> str:
    t = p.node.canonical_type.spelling
    if sym is not None and sym.types and "type-parameter" in t:
        return _subst(p.type, sym.types)
    return t


def _line(model, node) -> int:
    return model.source.position(node.start)[0]


def _mark_inline(sym: _Sym, block) -> None:
    """Host variables that make up the block are constants, not sizes: the translations fix the block."""
    todo = [block]
    while todo:
        node = todo.pop()
        for n in node.walk():
            if n.kind == "DECL_REF_EXPR" and n.ref is not None and n.ref.kind == "PARM_DECL" and \
                    id(n.ref) not in sym.inline and sym.caller_arg(n.ref) is not None:
                sym.inline.add(id(n.ref))           # `run(d, n, 128)` with `k<<<g, threads>>>`
                todo.append(sym.caller_arg(n.ref))
            elif n.kind == "DECL_REF_EXPR" and n.ref is not None and n.ref.kind == "VAR_DECL" and \
                    id(n.ref) not in sym.inline:
                sym.inline.add(id(n.ref))
                d = sym.an.definition(n.ref)
                if d is not None:
                    todo.append(d)
                else:
                    todo.extend(c for c in n.ref.children if not c.kind.endswith("_ATTR"))


def _grid_text(sym: _Sym, grid) -> str:
    from porter.analysis.launch import _members_written
    n = _bare(grid)
    while n.kind == "CXX_FUNCTIONAL_CAST_EXPR" and "dim3" in (n.type or "") and n.children:
        n = _bare(n.children[-1])       # `dim3(g)` is a functional cast around the constructor call `dim3(g)`
    if n.kind == "DECL_REF_EXPR" and n.ref is not None and n.ref.kind == "VAR_DECL" and "dim3" in (n.type or ""):
        exprs = [c for c in n.ref.children if not c.kind.endswith("_ATTR") and c.kind not in ("TYPE_REF",
                                                                                             "NAMESPACE_REF")]
        if _members_written(n.ref):
            dims = _member_writes(sym, n.ref, exprs[-1] if exprs else None)
            if dims is None:
                raise Underivable(f"`{n.spelling}` is changed after its declaration")
            while len(dims) > 1 and dims[-1] == "1":
                dims.pop()
            return _tidy(dims[0]) if len(dims) == 1 else "(" + ", ".join(_tidy(x) for x in dims) + ")"
        if not exprs:
            raise Underivable(f"`{n.spelling}` has no initial value")
        return _grid_text(sym, exprs[-1])
    if n.kind in ("CALL_EXPR", "CXX_FUNCTIONAL_CAST_EXPR") and (n.spelling == "dim3" or not n.spelling and
                                                                 "dim3" in (n.type or "")) or \
            n.kind in ("INIT_LIST_EXPR",):      # (no spelling: `dim3(v.size())` in a template is dependent)
        parts = [a for a in (n.args() if n.kind == "CALL_EXPR" else n.children)
                 if a.kind not in ("TYPE_REF", "NAMESPACE_REF")]
        if len(parts) == 1 and "dim3" in (parts[0].type or ""):
            return _grid_text(sym, parts[0])
        if not 1 <= len(parts) <= 3:
            raise Underivable(f"cannot read `{' '.join(n.text.split())}`")
        dims = [sym.expr(a) for a in parts]
        while len(dims) > 1 and dims[-1] == "1":
            dims.pop()
        return _tidy(dims[0]) if len(dims) == 1 else "(" + ", ".join(_tidy(x) for x in dims) + ")"
    return _tidy(sym.expr(n))


def _member_writes(sym: _Sym, decl, init) -> list | None:
    """[x, y, z] of `dim3 b; b.x = E; b.y = F;` (moe-sum, clenergy): the declaration's values (1 where it gives
    none) with each member assigned once, before the launch, by a plain `=`; None for anything else (a
    compound assignment, a member assigned twice or after the launch, the whole variable assigned)."""
    fn = decl.enclosing("FUNCTION_DECL", "FUNCTION_TEMPLATE", "CXX_METHOD")
    if fn is None or sym.site is None:
        return None
    dims: list = ["1", "1", "1"]
    if init is not None and init.text.strip() in ("", decl.spelling):
        init = None                     # `dim3 volsize, Gsz, Bsz;`: the default constructor
    if init is not None:
        i = _bare(init)
        parts = [a for a in (i.args() if i.kind == "CALL_EXPR" else i.children)
                 if a.kind not in ("TYPE_REF", "NAMESPACE_REF")] if i.kind in ("CALL_EXPR", "INIT_LIST_EXPR") \
            else None
        if parts is None or len(parts) > 3:
            return None
        for j, a in enumerate(parts):
            dims[j] = sym.expr(a)
    seen = set()
    for m in fn.walk():
        if m.kind not in ("BINARY_OPERATOR", "COMPOUND_ASSIGNMENT_OPERATOR") or not m.children or \
                m.kind == "BINARY_OPERATOR" and m.op != "=":
            continue                    # reads (`Bsz.x * UNROLLX`) are not writes
        t = _bare(m.children[0])
        target = t.children[0].strip if t.kind == "MEMBER_REF_EXPR" and t.children else t
        if getattr(target, "ref", None) is not decl:
            continue
        if m.kind != "BINARY_OPERATOR" or t.kind != "MEMBER_REF_EXPR" or \
                t.spelling not in ("x", "y", "z") or t.spelling in seen or m.start > sym.site.node.start or \
                len(m.children) != 2:
            return None
        seen.add(t.spelling)
        dims["xyz".index(t.spelling)] = sym.expr(m.children[1])
    return dims


def _dims_text(dims) -> str:
    d = list(dims)
    while len(d) > 1 and d[-1] == 1:
        d.pop()
    return str(d[0]) if len(d) == 1 else "(" + ", ".join(map(str, d)) + ")"


def _array(model, fn, sym, d: Derived, p, arg, seen: dict, elementwise: bool) -> PDesc:
    pointee = p.pointee
    if "type-parameter" in (pointee or "") and sym.types:       # `const T *` of the instance: `const float`
        pointee = _subst(re.sub(r"\*\s*(__restrict__|__restrict|restrict|const)?\s*$", "", p.type), sym.types)
    dtype = _dtype(pointee)
    unit = None                         # (bytes, scalars) of a struct element read as a flat buffer
    if dtype is None:
        flat = _flat_pointee(p)
        if flat is not None:            # Float3, KeyValue: a buffer of structs of one scalar type, no padding
            dtype, count = flat
            unit = (count * _BYTES[dtype], count)
            shown = pointee.replace("__cuport_shim::", "")
            d.notes.append(f"'{p.name}' points to `{shown}`: {count} x {dtype} each, generated as a flat {dtype} "
                           "buffer")
    if dtype is None:
        d.problems.append(Problem(p.name, f"'{p.name}' points to `{pointee}`: only buffers of float, double, half, "
                                          "8- to 64-bit integers and structs of one of them are generated"))
        dtype = "f32"
    if p.const_pointee or fn.body is None:
        direction = "in" if p.const_pointee else "inout"
    else:
        written, read = _pointer_use(fn, p.node)
        direction = "inout" if written and read else "out" if written else "in"
    shape, zeroed = None, None
    first = next((q for q in fn.params if _is_int(q)), None)
    if sym.site is None:
        shape = first.name if first is not None else None
    elif arg is not None:
        b = _bare(arg)
        b = _through_wrappers(sym, b)
        if b.kind != "DECL_REF_EXPR" or b.ref is None or b.ref.kind not in ("VAR_DECL", "PARM_DECL"):
            d.problems.append(Problem(p.name, f"'{p.name}' receives `{' '.join(arg.text.split())}`, not a buffer "
                                              "variable: its size is not known"))
        elif id(b.ref) in seen:
            d.problems.append(Problem(p.name, f"'{p.name}' and '{seen[id(b.ref)]}' are the same buffer "
                                              f"`{b.spelling}` (aliasing): the translations may not keep it"))
        else:
            seen[id(b.ref)] = p.name
            zeroed = _zeroed(model, b.ref, sym.site)
            size = _allocation(model, b.ref)
            elem = _BYTES[dtype]
            if size is None:
                d.problems.append(Problem(p.name, f"no cudaMalloc of `{b.spelling}` in this file: the size of "
                                                  f"'{p.name}' is not known"))
            else:
                try:
                    shape = _elements(sym, size, elem, unit)
                except Underivable as e:
                    d.problems.append(Problem(p.name, f"size of '{p.name}': {e}"))
    if shape is None:
        shape = first.name if first is not None else "1"
        if not any(pr.what == p.name for pr in d.problems):
            d.problems.append(Problem(p.name, f"the size of '{p.name}' is not known"))
    init = None
    if direction != "out" and zeroed:   # filter's `nres` counter, set to 0 before the launch: not random
        init = ("full", (0,))
        d.notes.append(f"'{p.name}' is set to 0 by `{zeroed}` before the launch: its input is zeros")
    elif direction != "out":
        kind = "special" if elementwise and dtype in ("f32", "f64") else "uniform"
        init = (kind, (0.02,)) if kind == "special" else (kind, ((-1.0, 1.0) if dtype[0] == "f" else
                                                                 (0, 100) if dtype[0] == "u" else (-100, 100)))
    return PDesc(p.name, dtype, _tidy(shape), direction, init=init)


def _scalar(sym: _Sym, d: Derived, p, arg) -> PDesc:
    dtype = "bool" if re.sub(r"\bconst\b", "", _canon(p, sym)).strip() == "bool" else _dtype(_canon(p, sym))
    if dtype == "bool":                 # kalman's `intercept`, adjacent's `subtract_left`: the launch's value
        return _bool_scalar(sym, d, p, arg)
    if dtype not in ("f32", "f64", "i32", "u32", "i64", "u64"):
        d.problems.append(Problem(p.name, f"'{p.name}' is a `{p.type}`: only float, double and 32/64-bit "
                                          "integer scalars are generated"))
        return PDesc(p.name, "i32", default="0")
    if sym.site is None:
        if dtype[0] == "f":
            return PDesc(p.name, dtype, default="1.5")
        return PDesc(p.name, dtype) if p.name in sym.sizes else PDesc(p.name, dtype, default="1")
    b = _through_wrappers(sym, _bare(arg)) if arg is not None else None
    if b is not None and b.kind == "DECL_REF_EXPR" and id(b.ref) in sym.names and sym.names[id(b.ref)] == p.name:
        return PDesc(p.name, dtype)
    if arg is None:
        return PDesc(p.name, dtype, default="1")
    if dtype[0] == "f":
        v = b.value if b.kind.endswith(("_EXPR", "_LITERAL", "OPERATOR")) else None
        if v is None and b.kind == "DECL_REF_EXPR" and b.ref is not None and b.ref.kind == "VAR_DECL":
            init = sym.an.definition(b.ref)
            v = _bare(init).value if init is not None else None
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            return PDesc(p.name, dtype, default=format(float(v), ".7g"))
        d.notes.append(f"'{p.name}' = `{' '.join(arg.text.split())}` is not a constant: 1.5 assumed")
        return PDesc(p.name, dtype, default="1.5")
    try:
        return PDesc(p.name, dtype, default=_tidy(sym.expr(arg)))
    except Underivable as e:
        d.problems.append(Problem(p.name, f"'{p.name}': {e}"))
        return PDesc(p.name, dtype, default="1")


def _bool_scalar(sym: _Sym, d: Derived, p, arg) -> PDesc:
    """A bool parameter: the launch's constant (`true`, a const bool, an integer), else 1 with a note."""
    b = _through_wrappers(sym, _bare(arg)) if arg is not None else None
    if b is not None and b.kind == "DECL_REF_EXPR" and b.ref is not None and b.ref.kind == "VAR_DECL":
        init = sym.an.definition(b.ref)
        b = _bare(init) if init is not None else b
    v = b.value if b is not None and b.kind.endswith(("_EXPR", "_LITERAL", "OPERATOR")) else None
    if b is not None and b.kind == "CXX_BOOL_LITERAL_EXPR" and v is None:
        v = b.text.strip() == "true"
    if isinstance(v, (bool, int)):
        return PDesc(p.name, "bool", default=str(int(bool(v))))
    if arg is not None:
        d.notes.append(f"'{p.name}' = `{' '.join(arg.text.split())}` is not a constant: true assumed")
    return PDesc(p.name, "bool", default="1")


_CDIV = re.compile(r"\(\(\((\w+) \+ (\w+)\) - 1\) // (\w+)\)|\((\w+) \+ (\d+)\) // (\d+)")


def _tidy(expr: str) -> str:
    """`((n + 256) - 1) // 256` and `(n + 255) // 256` as cdiv(n, 256); outer parentheses dropped."""
    def cdiv(m):
        if m.group(1) and m.group(2) == m.group(3):
            return f"cdiv({m.group(1)}, {m.group(3)})"
        if m.group(4) and int(m.group(5)) + 1 == int(m.group(6)):
            return f"cdiv({m.group(4)}, {m.group(6)})"
        return m.group(0)
    expr = _CDIV.sub(cdiv, f"({expr})")
    while expr.startswith("(") and expr.endswith(")"):
        depth = 0
        for i, ch in enumerate(expr):
            depth += ch == "("
            depth -= ch == ")"
            if depth == 0 and i < len(expr) - 1:
                return expr
        expr = expr[1:-1]
    return expr


# ---------------------------------------------------------------------------------------------------------------
# a file

def derive_file(path: str) -> list[Derived]:
    """A Derived for each kernel with a body in the file (parse errors are left to the translators)."""
    from porter.analysis.launch import site_kernel
    model, lines = _unit_model(path)
    hosts = _Hosts(path)
    try:
        out = []
        for fn in model.kernels:
            if fn.body is None:
                continue
            host = None
            if not fn.is_template and not any(site_kernel(s) == fn.name for s in model.launches):
                host = hosts.launching(fn.name)
            if host is None:
                out += [_remapped(d, lines) for d in derive_kernels(model, fn)]
                continue
            unit = hosts.unit(host, path, fn.name)
            if unit is not None:            # ss's main.cu includes kernels.cu after the typedefs it needs: the
                umodel, ufn, ulines = unit  # kernel is read, and translated, in that file's context
                d = _remapped(derive_kernel(umodel, ufn), ulines)
                d.path, d.line, d.defined_in = host.path, _remapped_line(lines, _line(model, fn.node)), None
                d.notes.insert(0, f"{Path(path).name} is included by {Path(host.path).name}: verified "
                                  f"through {Path(host.path).name}")
            else:
                d = _remapped(derive_kernel(model, fn, host=host), lines)
            out.append(d)
        return out
    finally:
        model.release()
        hosts.release()


def _unit_model(path: str):
    """(model, LineMap or None) of a file with the project headers it includes inlined, as the translators read
    it (translate/kernel/units.py): kernels defined in `kernel.h` / `*.cuh` derive with the file that
    includes them (26 valid kernels of the HeCBench samples live in headers)."""
    from porter.frontend.build import build_model
    from porter.frontend.parse import ParseOptions
    from porter.source import read_source
    from porter.translate.kernel.units import inline_headers
    src, lines = inline_headers(read_source(path))
    return build_model(src, ParseOptions(full_model=True)), lines


def _remapped_line(lines, row: int) -> int:
    return lines.where(row)[1] if lines is not None else row


def _remapped(d: Derived, lines) -> Derived:
    """Lines of the combined text (a file with its headers inlined) as lines of the file they came from: the
    kernel's own line (with `defined_in` set for a kernel of a header), and `line N` in notes and problems."""
    if lines is None:
        return d
    where, row = lines.where(d.line)
    d.line = row
    if where != lines.main:
        d.defined_in = where
    fix = re.compile(r"\bline (\d+)\b")
    d.notes = [fix.sub(lambda m: lines._line_ref(m, None), n) for n in d.notes]
    for p in d.problems:
        p.message = fix.sub(lambda m: lines._line_ref(m, None), p.message)
    return d


_HOST_SUFFIXES = (".cu", ".cpp", ".cc", ".cxx", ".h", ".hpp", ".cuh")


class _Hosts:
    """The other source files beside a kernel's file, parsed when a kernel launched in none of its own file's
    code is looked for (HeCBench's kernel.cu launched from main.cu; a header of host wrappers)."""

    def __init__(self, path: str):
        self.path = Path(path).resolve()
        self.models: dict = {}
        self.lines: dict = {}

    def launching(self, name: str):
        """The model of the one sibling file with a launch of kernel `name`, or None (none, or several)."""
        from porter.analysis.launch import site_kernel
        pat = re.compile(r"(?<![\w.])" + re.escape(name) + r"\s*(?:<[^;{}]*?>)?\s*<<<")
        files = []
        for f in sorted(self.path.parent.iterdir()):
            if f == self.path or f.suffix not in _HOST_SUFFIXES or not f.is_file():
                continue
            try:
                if pat.search(f.read_text(errors="replace")):
                    files.append(f)
            except OSError:
                continue
        if len(files) != 1:
            return None
        model = self._model(files[0])
        if model is None or not any(site_kernel(s) == name and s.block is not None for s in model.launches):
            return None
        return model

    def unit(self, host, path: str, name: str):
        """(model, kernel, LineMap) of `name` in the host file with the project files it includes inlined (the
        translators' view: units.py), when the host includes `path`; None otherwise."""
        pat = r'^\s*#\s*include\s*"(?:[^"]*/)?' + re.escape(Path(path).name) + '"'
        if re.search(pat, host.source.text, re.M) is None:
            return None
        key = ("unit", host.path)
        if key not in self.models:
            try:
                self.models[key], self.lines[key] = _unit_model(host.path)
            except Exception:            # the unit does not parse: the kernel is read from its own file
                self.models[key] = None
        m = self.models[key]
        fn = next((f for f in m.kernels if f.name == name and f.body is not None), None) if m else None
        return (m, fn, self.lines.get(key)) if fn is not None else None

    def _model(self, f: Path):
        if f not in self.models:
            from porter.frontend.build import build_model
            from porter.frontend.parse import ParseOptions
            from porter.source import read_source
            try:
                self.models[f] = build_model(read_source(str(f)), ParseOptions(full_model=True))
            except Exception:            # the other file does not parse: no launch from it
                self.models[f] = None
        return self.models[f]

    def release(self) -> None:
        for m in self.models.values():
            if m is not None:
                m.release()


# ---------------------------------------------------------------------------------------------------------------
# `cuport verify --init`: the same, as an editable spec

_INIT_CODE = {"uniform": "uniform({}, {})", "special": "special({})", "full": "full({})"}


def skeleton(derived: list[Derived], spec_dir: Path, portability_fixes: bool = False) -> str:
    """verify_spec.py text for these kernels: what was derived filled in, TODO where a placeholder stands."""
    files = sorted({str(Path(d.path).name) for d in derived})
    out = [f'"""cuport verify spec for {", ".join(files)}, written by `cuport verify --init`.',
           "",
           "Derived from the kernel signatures and launch sites; edit it. Lines marked TODO hold placeholders",
           "for what the source does not say. With reference=None the targets are compared with each other;",
           "a NumPy reference (a function of the arguments returning {output: array}) checks the right answer.",
           '"""',
           "from porter.verify.spec import Case, Tol, full, special, uniform  # noqa: F401",
           "", "KERNELS = ["]
    for d in derived:
        rel = Path(d.path).resolve().relative_to(spec_dir.resolve()) if _inside(d.path, spec_dir) else d.path
        out.append(f"    # {d.kernel} (line {d.line} of {Path(d.path).name})")
        out += [f"    # note: {n}" for n in d.notes]
        for p in d.problems:
            out += textwrap.wrap(p.message, 110, initial_indent="    # TODO: ", subsequent_indent="    #       ")
        indexing = any(p.what == "indexing" for p in d.problems)
        inits = []
        for p in d.params:
            if not p.init:
                continue
            code = "full(0)" if indexing else _INIT_CODE[p.init[0]].format(*p.init[1])
            inits.append(f'"{p.name}": {code}')
        tol = sorted({p.dtype for p in d.params if p.dtype in DIFF_TOL})
        out += ["    Case(",
                f'        source="{rel}", kernel="{d.kernel}",',
                f'        signature="{d.signature}",',
                f'        grid="{d.grid}", block="{d.block}",']
        if d.shared != "0":
            out.append(f'        shared_mem="{d.shared}",')
        if inits:
            out.append(f"        init={{{', '.join(inits)}}},"
                       + ("  # TODO: values that keep the indices in bounds" if indexing else ""))
        out.append(f"        sizes=[{d.sizes!r}],")
        if tol:
            out.append("        tol={" + ", ".join(f'"{t}": Tol({DIFF_TOL[t][0]}, {DIFF_TOL[t][1]})' for t in tol)
                       + "},  # for comparing targets; a reference may need tighter")
        if not portability_fixes:
            out.append('        translate={"portability_fixes": False},  # verify the source as written')
        if any(p.what == "template" for p in d.problems):
            out.append("        template_args=(),  # TODO: the template arguments")
        out += ["        reference=None,  # TODO (optional): lambda **args: {\"output\": numpy expression}",
                "    ),"]
    out += ["]", ""]
    return "\n".join(out)


def _inside(path: str, folder: Path) -> bool:
    try:
        Path(path).resolve().relative_to(folder.resolve())
        return True
    except ValueError:
        return False
