"""Host expressions as size expressions of the spec notation (derive.py): constants, host variables as
size names (1000 / 256 when the program decides them at run time, with a note), launch shapes, dim3
variables, buffer lengths from `cudaMalloc(&p, bytes)`, inputs zeroed by `cudaMemset`."""
from __future__ import annotations

import re

from porter.verify.derive_types import _BYTES, _dtype, _subst


_WRAPPERS = ("PAREN_EXPR", "UNEXPOSED_EXPR", "CSTYLE_CAST_EXPR", "CXX_STATIC_CAST_EXPR", "CXX_FUNCTIONAL_CAST_EXPR")
_INTEGRAL = re.compile(r"\b(int|long|short|unsigned|size_t|u?int\d+_t)\b")
_FLOATING = re.compile(r"\b(float|double)\b")

HEURISTIC_SIZE = 1000            # a size the program decides at run time
HEURISTIC_BLOCK = 256            # a block size the program decides at run time (argv, a wrapper's parameter)
DEVICE_PROPS = {"multiProcessorCount": 16}   # cudaDeviceProp fields read for a grid: a small device assumed
_ALLOC = ("cudaMalloc", "cudaMallocManaged", "hipMalloc", "hipMallocManaged")


class Underivable(Exception):
    """One thing the source does not say (the message says what and where)."""


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
        self.hosts = None                    # derive_units._Hosts: the program's other files (calls made there)

    def definition(self, decl, use=None):
        """The expression the local `decl` holds: its initialiser when it is never reassigned; at `use`, the
        plain assignment that reaches it on every path when it is (qrg's `szWorkgroup = 128;` before
        `localWorkSize[0] = szWorkgroup;`); None otherwise. Read in the file the declaration is in."""
        from porter.analysis.affine import analysis
        if decl is None or decl.kind != "VAR_DECL":
            return None
        d = analysis(decl.model).definition(decl)
        if d is None and use is not None:
            d = _reaching(decl, use)
        return d

    def allocation(self, decl, element: bool = False):
        """_allocation of `decl`, else the byte count of a host function that allocates it (_helper_allocation),
        its parameters bound to the call's arguments for the _elements that follows."""
        size = _allocation(self.model, decl, element)
        if size is None and not element:
            helper = _helper_allocation(decl)
            if helper is not None:
                size, binding = helper
                self.bound.update(binding)
        return size

    def where(self, node) -> str:
        """`line N` of the kernel's file (derive_units remaps it), `main.cu:N` of another file of the program."""
        from pathlib import Path
        row = node.model.source.position(node.start)[0]
        return f"line {row}" if node.model is self.model else f"{Path(node.model.path).name}:{row}"

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
        model = decl.model
        fn = model.function_of(decl)
        if fn is None or fn.is_kernel or fn is self.kernel or fn.node is not decl.parent:
            return None
        names = [p.name for p in fn.params]
        if decl.spelling not in names:
            return None
        if id(fn) not in self.calls:
            calls = [c for c in model.of_kind("CALL_EXPR") if c.spelling == fn.name and
                     len(c.args()) == len(names) and model.function_of(c) is not fn]
            elsewhere = not calls and self.hosts is not None
            if elsewhere:               # convolutionSeparable's conv.cu wrapper `convolutionRows(dst, ...)`
                calls = self.hosts.calls(fn.name, len(names), model)    # called in main.cu
            calls.sort(key=self._liveness)  # a call in main first, then in a called function; dead code last
            self.calls[id(fn)] = calls
            if elsewhere and calls:
                self.notes.append(f"`{fn.name}` is called in another file of the program: its call at "
                                  f"{self.where(calls[0])} gives its parameters")
            elif len(calls) > 1:
                self.notes.append(f"`{fn.name}` is called {len(calls)} times: the call at "
                                  f"{self.where(calls[0])} gives its parameters")
        calls = self.calls[id(fn)]
        return calls[0].args()[names.index(decl.spelling)] if calls else None

    def _liveness(self, call) -> int:
        caller = call.model.function_of(call)
        if caller is None or caller.name == "main":
            return 0
        return 1 if any(c.spelling == caller.name for c in call.model.of_kind("CALL_EXPR")) else 2

    def expr(self, node, depth: int = 0) -> str:
        """The spec notation of a host expression; a float converted to an integer (a cast or C's implicit
        conversion: cobahh's `const int _lio_1 = _timestep(0.003, dt)`) is trunc(...), as C converts it."""
        if node is None or depth > 12:
            raise Underivable("expression too deep")
        n, trunc = node, False
        v = node.value if node.kind in _WRAPPERS and node.kind != "UNEXPOSED_EXPR" else None
        if isinstance(v, int) and not isinstance(v, bool) and not _has_var_refs(node):
            return str(v)               # qrg's `(unsigned int)-1`: clang's value of the cast, not -1
        while n.kind in _WRAPPERS and n.children:
            trunc = trunc or (_INTEGRAL.search(n.type or "") is not None and
                              _FLOATING.search(n.children[-1].type or "") is not None)
            n = n.children[-1]
        text = self._expr(n, depth)
        return f"trunc({text})" if trunc and not re.fullmatch(r"-?\d+", text) else text

    def _expr(self, n, depth: int) -> str:
        from porter.analysis.launch import fold_int
        k = n.kind
        if k == "DECL_REF_EXPR" and n.ref is not None and n.ref.kind in ("VAR_DECL", "PARM_DECL"):
            return self.variable(n.ref, depth, use=n)
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
        if k == "CALL_EXPR" and n.spelling in ("min", "max") and len(n.args()) == 2:
            a, b = (self.expr(x, depth + 1) for x in n.args())     # moe-sum's `dim3 block(std::min(h, 1024))`
            return f"{n.spelling}({_tidy(a)}, {_tidy(b)})"
        if k == "ARRAY_SUBSCRIPT_EXPR":
            elem = _array_element(self, n)
            try:                        # `size_t local[2] = {16, 16};` ... `dim3 b(local[0], local[1])`
                if elem is not None:
                    return self.expr(elem, depth + 1)
            except Underivable:         # qrg's `{shrRoundUp(szWorkgroup, 128*128), 3}`: decided at run time
                pass
        if k in ("ARRAY_SUBSCRIPT_EXPR", "CALL_EXPR") and (k != "CALL_EXPR" or n.spelling == "operator[]"):
            name = self.element(n)
            if name is not None:
                return name
        if k == "BINARY_OPERATOR" and len(n.children) == 2 and n.op in ("+", "-", "*", "/", "%", "<<", ">>"):
            a, b = self.expr(n.children[0], depth + 1), self.expr(n.children[1], depth + 1)
            op = n.op
            if op in ("<<", ">>"):
                shift = fold_int(n.model, n.children[1], self.env)
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
        if k == "CALL_EXPR" and _round_up_fn(n, self.hosts) is not None:
            x, y = _round_up_fn(n, self.hosts)  # the OpenCL SDK's shrRoundUp(group, global) (qrg, tridiagonal)
            return f"round_up({_tidy(self.expr(x, depth + 1))}, {_tidy(self.expr(y, depth + 1))})"
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
        shown = " ".join(n.text.split()) or f"{n.spelling or n.kind} (in a macro's arguments)"
        raise Underivable(f"cannot express `{shown}` as a size")

    def element(self, n) -> str | None:
        """`v[0]` of a local array or container whose element the program decides at run time (allreduce's
        `segment_sizes[0]`, a vector it fills): a size of its own, as a variable decided at run time is; None
        for an index that does not fold."""
        from porter.analysis.launch import fold_int
        if len(n.children) not in (2, 3):  # a[i]; v[i] is [v, operator[], i]
            return None
        base, index = _bare(n.children[0]), n.children[-1]
        i = fold_int(index.model, index, self.env)
        if base.kind != "DECL_REF_EXPR" or base.ref is None or base.ref.kind not in ("VAR_DECL", "PARM_DECL") \
                or i is None or "*" in (base.ref.type or ""):
            return None                 # a pointer's element: memory, not a host value
        key = ("element", id(base.ref), i)
        if key not in self.names:
            self.size_name_key(key, f"{base.spelling}_{i}", self.fallback,
                               f"{{name}} is `{base.spelling}[{i}]`, decided at run time ({self.where(n)}): "
                               f"{self.fallback} assumed (--sizes {{name}}=N)")
        return self.names[key]

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

    def variable(self, decl, depth: int, use=None) -> str:
        from porter.analysis.affine import analysis
        from porter.analysis.launch import fold_int
        if id(decl) in self.bound:          # a parameter of a function being inlined: its argument
            arg = self.bound.pop(id(decl))
            try:
                text = self.expr(arg, depth + 1)
                return text if re.fullmatch(r"\w+", text) else f"({text})"
            finally:
                self.bound[id(decl)] = arg
        reached = None                      # a reassigned local: the assignment that reaches this use
        if use is not None and decl.kind == "VAR_DECL" and id(decl) in analysis(decl.model).assigned:
            reached = _reaching(decl, use)
        if reached is not None:
            const = fold_int(reached.model, reached, self.env)
            if const is not None:           # a value of this point, not of the variable: no size name
                return str(const)
            try:
                return self.expr(reached, depth + 1)
            except Underivable:
                pass
        if id(decl) in self.names:
            return self.names[id(decl)]
        if id(decl) in self.inline:         # makes up the block: the value the block was folded with
            v = _fold_decl(self, decl)
            if v is not None:
                return str(v)
        where = self.where(decl)
        init = self.definition(decl) if decl.kind == "VAR_DECL" else self.caller_arg(decl)
        if init is not None:
            const = fold_int(init.model, init, self.env)
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
    """The value of `a[i]` at this use: of a local array with a constant index, the plain assignment to `a[i]`
    that reaches the use on every path (qrg's `localWorkSize[0] = szWorkgroup;`, reassigned between two
    launches), else its initialiser list's element; None otherwise (an element assigned conditionally, with an
    index that does not fold, the array passed away)."""
    from porter.analysis.launch import fold_int
    if len(n.children) != 2:
        return None
    base, index = _bare(n.children[0]), n.children[1]
    i = fold_int(n.model, index, sym.env)
    if base.kind != "DECL_REF_EXPR" or base.ref is None or base.ref.kind != "VAR_DECL" or i is None:
        return None
    return _reaching(base.ref, n, i)


_LOOPS = ("FOR_STMT", "WHILE_STMT", "DO_STMT", "CXX_FOR_RANGE_STMT")
_FUNCTIONS = ("FUNCTION_DECL", "FUNCTION_TEMPLATE", "CXX_METHOD")


def _writes(scope, decl, index=None) -> list:
    """(node, value) of each write to the local `decl` (its element `decl[index]` when index is an int) in the
    function `scope`: value is the right-hand side of a plain `=`, None for a write whose value is not known
    (`+=`, `++`, `&x` handed to a call, an element with an index that does not fold, the array itself used)."""
    from porter.analysis.launch import fold_int
    out = []
    for w in scope.walk():
        if w.kind == "DECL_REF_EXPR" and w.ref is decl and index is not None:
            p = w.parent
            while p is not None and p.kind in _WRAPPERS:
                p = p.parent
            if p is None or p.kind != "ARRAY_SUBSCRIPT_EXPR" or _bare(p.children[0]) is not _bare(w):
                out.append((w, None))   # the array decays to a pointer: any element may be written through it
            continue
        if not ((w.kind == "BINARY_OPERATOR" and w.op == "=" or w.kind == "COMPOUND_ASSIGNMENT_OPERATOR" or
                 w.kind == "UNARY_OPERATOR" and w.op in ("++", "--", "post++", "post--", "&")) and w.children):
            continue
        t = _bare(w.children[0])
        if index is not None:
            if t.kind != "ARRAY_SUBSCRIPT_EXPR" or len(t.children) != 2 or _bare(t.children[0]).kind != \
                    "DECL_REF_EXPR" or _bare(t.children[0]).ref is not decl:
                continue
            j = fold_int(t.model, t.children[1])
            if j is not None and j != index:
                continue
            plain = j is not None
        else:
            if t.kind != "DECL_REF_EXPR" or t.ref is not decl:
                continue
            plain = True
        value = w.children[1] if plain and w.kind == "BINARY_OPERATOR" and len(w.children) == 2 else None
        out.append((w, value))
    return out


def _inside(outer, node) -> bool:
    return outer.start <= node.start and node.end <= outer.end


def _reaching(decl, use, index=None):
    """The expression the local `decl` (`decl[index]`) holds at `use`: the last plain assignment before it when
    that assignment is a statement of a block the use is in (so every path to the use runs it) and no write in
    a loop around the use can come between; the declaration's initialiser when no write comes before. None
    for anything else (a write in a branch, a compound assignment, a global)."""
    scope = decl.enclosing(*_FUNCTIONS)
    if scope is None:
        return None
    writes = [(w, v) for w, v in _writes(scope, decl, index) if not _inside(w, use)]
    before = [x for x in writes if x[0].start < use.start]
    last = max(before, key=lambda x: x[0].start) if before else None
    loops = [a for a in use.ancestors() if a.kind in _LOOPS and _inside(scope, a)]
    for w, _ in writes:                 # written later in a loop around the use: the next turn reads that
        if w.start > use.start and any(_inside(lp, w) and (last is None or not _inside(lp, last[0]))
                                       for lp in loops):
            return None
    if last is None:
        if index is None:
            exprs = [c for c in decl.children if not c.kind.endswith("_ATTR") and
                     c.kind not in ("TYPE_REF", "NAMESPACE_REF")]
            return exprs[-1] if exprs else None
        init = next((c for c in decl.children if c.kind == "INIT_LIST_EXPR"), None)
        return init.children[index] if init is not None and 0 <= index < len(init.children) else None
    w, value = last
    block = w.parent
    while block is not None and block.kind in _WRAPPERS:
        block = block.parent
    if value is None or block is None or block.kind != "COMPOUND_STMT" or not _inside(block, use):
        return None
    return value


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


def _round_up_fn(call, hosts=None):
    """(x, y) arguments of a call of a host function that rounds x up to a multiple of y, written
    `r = x % y; if (r == 0) return x; else return x + y - r;` (the OpenCL SDK's shrRoundUp, with its parameters
    in either order; its body in this file or, declared only, in the one other file of the program that defines
    it: tridiagonal's shrUtils.cu); None otherwise. Compared by declaration, not by name."""
    fns = [f for f in call.model.functions if f.name == call.spelling and f.body is not None and not f.is_kernel]
    if not fns and hosts is not None and call.spelling:
        fns = hosts.defining(call.spelling)
    if len(fns) != 1 or len(fns[0].params) != len(call.args()) or len(call.args()) != 2:
        return None
    fn, stmts = fns[0], fns[0].body.children

    def ref(node):
        b = _bare(node)
        return b.ref if b is not None and b.kind == "DECL_REF_EXPR" else None

    def returned(stmt):
        while stmt is not None and stmt.kind == "COMPOUND_STMT" and len(stmt.children) == 1:
            stmt = stmt.children[0]
        return _bare(stmt.children[-1]) if stmt is not None and stmt.kind == "RETURN_STMT" and stmt.children \
            else None
    if len(stmts) != 2 or stmts[0].kind != "DECL_STMT" or len(stmts[0].children) != 1 or stmts[1].kind != "IF_STMT" \
            or len(stmts[1].children) != 3:
        return None
    r = stmts[0].children[0]
    mod = _bare(r.children[-1]) if r.children else None
    if mod is None or mod.kind != "BINARY_OPERATOR" or mod.op != "%" or len(mod.children) != 2:
        return None
    x, y = ref(mod.children[0]), ref(mod.children[1])
    params = [p.node for p in fn.params]
    if x is None or y is None or x is y or x not in params or y not in params:
        return None
    cond, yes, no = stmts[1].children
    cond = _bare(cond)
    if cond.kind != "BINARY_OPERATOR" or cond.op != "==" or len(cond.children) != 2 or \
            {ref(cond.children[0]) is r, ref(cond.children[1]) is r} != {True, False} or \
            0 not in (_bare(cond.children[0]).value, _bare(cond.children[1]).value):
        return None
    yes, no = returned(yes), returned(no)
    if yes is None or ref(yes) is not x or no is None or no.kind != "BINARY_OPERATOR" or no.op != "-" or \
            len(no.children) != 2 or ref(no.children[1]) is not r:
        return None
    add = _bare(no.children[0])
    if add.kind != "BINARY_OPERATOR" or add.op != "+" or len(add.children) != 2 or \
            {ref(add.children[0]), ref(add.children[1])} != {x, y}:
        return None
    args = call.args()
    return args[params.index(x)], args[params.index(y)]


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
    v = fold_int(node.model, node, sym.env)
    if v is not None:
        return v
    n = _bare(node)
    if n.kind != "DECL_REF_EXPR" or n.ref is None:
        return None
    return _fold_decl(sym, n.ref, depth, use=n)


def _fold_decl(sym: _Sym, d, depth: int = 0, use=None):
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
    init = sym.definition(d, use)
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


def _sizeof(sym: _Sym, node):
    """`sizeof(float)` (clang's value), or `sizeof(T)` with T a template parameter the instance binds."""
    if isinstance(node.value, int) and not isinstance(node.value, bool):
        return node.value
    m = re.fullmatch(r"\s*sizeof\s*\(?\s*([\w\s]+?)\s*\)?\s*", node.text or "")
    ref = [c for c in node.children if c.kind == "TYPE_REF"]
    if m is None and not (node.text or "").strip() and len(ref) == 1:
        name = ref[0].spelling     # f8cast's `CUDA_CHECK(cudaMalloc(&src, n * sizeof(Ts)))`: no text in a macro
    elif m is None:
        return None
    else:
        name = m.group(1)
    dtype = _dtype(_subst(name, {**sym.env, **sym.types}))
    return _BYTES.get(dtype) if dtype else None


def _bare(node):
    """The node under parentheses and implicit / explicit casts."""
    while node is not None and node.kind in ("PAREN_EXPR", "UNEXPOSED_EXPR", "CSTYLE_CAST_EXPR",
                                             "CXX_STATIC_CAST_EXPR", "CXX_REINTERPRET_CAST_EXPR") and node.children:
        node = node.children[-1]
    return node


def _allocation(model, decl, element: bool = False):
    """The byte-count expression of `cudaMalloc(&p, bytes)` for the host pointer `decl`, or None; `element`:
    of `cudaMalloc(&p[k], bytes)`, one buffer of a table of them (metropolis's mdlat[k]). Searched in the file
    `decl` is declared in (main.cu's buffer behind a wrapper of conv.cu)."""
    model = getattr(decl, "model", None) or model
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
            if element and target.kind == "ARRAY_SUBSCRIPT_EXPR" and target.children:
                target = _bare(target.children[0])
            elif element:
                continue
            if target.kind == "DECL_REF_EXPR" and target.ref is decl:
                return args[1]
    return None


def _helper_allocation(decl):
    """(bytes, {id(parameter): argument}) of a buffer a host function allocates for the pointer `decl`: one that
    returns it (allreduce's `float *buffer = alloc(n)` with `cudaMalloc(&memory, sizeof(float) * size); return
    memory;`) or receives its address (`make(&d, n)` with `cudaMalloc(p, n * sizeof(float))`); None otherwise.
    The byte count is in the helper's parameters, bound to the call's arguments."""
    from porter.analysis.affine import analysis
    if decl is None or decl.kind != "VAR_DECL":
        return None
    model = decl.model
    calls = []
    init = analysis(model).definition(decl)
    if init is not None and _bare(init).kind == "CALL_EXPR":
        calls.append((_bare(init), None))
    for c in model.of_kind("CALL_EXPR"):
        for i, a in enumerate(c.args()):
            a = _bare(a)
            if a.kind == "UNARY_OPERATOR" and a.op == "&" and a.children and \
                    _bare(a.children[0]).kind == "DECL_REF_EXPR" and _bare(a.children[0]).ref is decl:
                calls.append((c, i))
    for call, i in calls:
        fns = [f for f in model.functions if f.name == call.spelling and f.body is not None and not f.is_kernel
               and len(f.params) == len(call.args())]
        if len(fns) != 1:
            continue
        fn = fns[0]
        for m in fn.body.walk():
            if m.kind != "CALL_EXPR" or m.spelling not in _ALLOC or len(m.args()) < 2:
                continue
            t = _bare(m.args()[0])
            if i is None and t.kind == "UNARY_OPERATOR" and t.op == "&" and t.children:
                local = _bare(t.children[0])
                if local.kind != "DECL_REF_EXPR" or local.ref is None or local.ref.kind != "VAR_DECL" or not any(
                        r.kind == "RETURN_STMT" and r.children and _bare(r.children[-1]).kind == "DECL_REF_EXPR"
                        and _bare(r.children[-1]).ref is local.ref for r in fn.body.walk()):
                    continue            # not the pointer it returns
            elif i is None or t.kind != "DECL_REF_EXPR" or t.ref is not fn.params[i].node:
                continue                # not the address it was given
            return m.args()[1], {id(p.node): a for p, a in zip(fn.params, call.args())}
    return None


def _offset_buffer(sym: _Sym, b):
    """(base, offset, written) of a buffer passed from an element on: `p + k`, `k + p`, `&p[k]` (metropolis's
    `dE + k`, concurrentKernels' `&d_a[i]`): `base` the host pointer variable `p` is (through host wrappers),
    `written` the pointer as written there, whose elements the offset counts; None otherwise."""
    if b is None:
        return None
    if b.kind == "BINARY_OPERATOR" and b.op == "+" and len(b.children) == 2:
        x, y = b.children
        if "*" in (_bare(y).type or "") and "*" not in (_bare(x).type or ""):
            x, y = y, x
        base, off = _bare(x), y
    elif b.kind == "UNARY_OPERATOR" and b.op == "&" and b.children and \
            _bare(b.children[0]).kind == "ARRAY_SUBSCRIPT_EXPR" and len(_bare(b.children[0]).children) == 2:
        base, off = _bare(_bare(b.children[0]).children[0]), _bare(b.children[0]).children[1]
    else:
        return None
    written, base = base, _through_wrappers(sym, base)
    if base is None or base.kind != "DECL_REF_EXPR" or base.ref is None or \
            base.ref.kind not in ("VAR_DECL", "PARM_DECL") or "*" not in (base.ref.type or "") or \
            "*" not in (written.type or ""):
        return None
    return base, off, written


def _past_offset(sym: _Sym, elements: str, base, off, written, pointee: str, unit: tuple | None) -> str:
    """The elements of a buffer from `off` on: the allocation's `elements` less the offset, counted in the
    kernel's scalars (a struct element is `unit[1]` of them). The host pointer must point to the kernel's type:
    an offset counts the host's elements."""
    def plain(t):
        return re.sub(r"\b(const|volatile|struct|__restrict__|__restrict|restrict)\b|__cuport_shim::|\s", "", t)
    host = plain(_subst(re.sub(r"\*[^*]*$", "", written.type or ""), {**sym.env, **sym.types}))
    kern = plain(pointee or "")
    if host != kern and (_dtype(host) is None or _dtype(host) != _dtype(kern)):
        raise Underivable(f"`{written.spelling}` points to `{host}`, the kernel's parameter to `{kern}`: "
                          "the offset counts other elements")
    k = _tidy(sym.expr(off))
    if k == "0":
        return elements
    k = k if re.fullmatch(r"\w+", k) else f"({k})"
    return f"({elements}) - {k}" + (f" * {unit[1]}" if unit else "")


_MEMSET = ("cudaMemset", "cudaMemsetAsync", "hipMemset", "hipMemsetAsync")


def _zeroed(model, decl, site) -> str | None:
    """The text of a `cudaMemset(p, 0, bytes)` of the host pointer `decl` written before the launch (or in
    another function: main zeroing a buffer a wrapper then launches on), else None."""
    from porter.analysis.launch import fold_int
    model = getattr(decl, "model", None) or model
    for call in model.of_kind("CALL_EXPR"):
        if call.spelling not in _MEMSET or len(call.args()) < 3:
            continue
        a = _bare(call.args()[0])
        if a.kind != "DECL_REF_EXPR" or a.ref is not decl or fold_int(model, call.args()[1]) != 0:
            continue
        if site is not None and site.node.model is model and \
                model.function_of(call) is model.function_of(site.node) and call.start > site.node.start:
            continue                    # reset after the launch (for the next repetition): not the input
        return " ".join(call.text.split())
    return None


def _elements(sym: _Sym, size_node, elem: int, unit: tuple | None = None) -> str:
    """Element count from a byte count: `n * sizeof(float)` -> n, anything else -> (bytes) // elem. `unit`:
    (bytes, scalars) of a struct element counted in scalars (`n * sizeof(Float3)` -> n * 3)."""
    from porter.analysis.launch import fold_int
    n = _bare(size_node)
    const = fold_int(n.model, n, sym.env) if not _has_var_refs(n) else None
    if const is None and n.kind == "CXX_UNARY_EXPR":
        const = _sizeof(sym, n)
    if isinstance(const, int):
        return str(max(1, const // elem))
    if n.kind == "DECL_REF_EXPR" and n.ref is not None and n.ref.kind == "VAR_DECL" and \
            id(n.ref) not in sym.names:
        d = sym.definition(n.ref, n)
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
                d = sym.definition(n.ref, n)
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


def _expressible(sym, node) -> bool:
    try:
        sym.expr(node)
        return True
    except Underivable:
        return False


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
