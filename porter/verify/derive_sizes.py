"""Host expressions as size expressions of the spec notation (derive.py): constants, host variables as
size names (1000 / 256 when the program decides them at run time, with a note), launch shapes, dim3
variables, buffer lengths from `cudaMalloc(&p, bytes)`, inputs zeroed by `cudaMemset`."""
from __future__ import annotations

import math
import re

from porter.verify.derive_types import _BYTES, _dtype, _subst, named_type


_WRAPPERS = ("PAREN_EXPR", "UNEXPOSED_EXPR", "CSTYLE_CAST_EXPR", "CXX_STATIC_CAST_EXPR", "CXX_FUNCTIONAL_CAST_EXPR")
_INTEGRAL = re.compile(r"\b(int|long|short|unsigned|size_t|u?int\d+_t)\b")
_FLOATING = re.compile(r"\b(float|double)\b")

_MATH = {"log2": "log2", "log2f": "log2", "sqrt": "sqrt", "sqrtf": "sqrt", "floor": "floor", "floorf": "floor",
         "min": "min", "max": "max", "abs": "abs"}     # host calls the notation has
HEURISTIC_SIZE = 1000            # a size the program decides at run time
HEURISTIC_BLOCK = 256            # a block size the program decides at run time (argv, a wrapper's parameter)
DEVICE_PROPS = {"multiProcessorCount": 16}   # cudaDeviceProp fields read for a grid: a small device assumed
_ALLOC = ("cudaMalloc", "cudaMallocManaged", "hipMalloc", "hipMallocManaged")


class Underivable(Exception):
    """One thing the source does not say (the message says what and where)."""


class Unknown(Underivable):
    """A value no run-time guess may stand for: read back from the device, or computed by the program's own
    functions from other sizes (hogbom's `rx = idxToPos(peakPos, residualWidth).x`); passed up through the
    fallbacks that would give it 1000 of its own."""


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
        self.consts: dict[int, int] = {}     # id(loop counter) -> the value it has in the trip being unrolled
        self._kernel_reads: set | None = None
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
            calls = [c for c in model.of_kind("CALL_EXPR") if _callee(c) == fn.name and
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
        if k == "CALL_EXPR" and n.spelling in _MATH and 1 <= len(n.args()) <= 2:
            # tridiagonal's `int iterations = log2(system_size / 2)` (trunc(...) by expr's conversion)
            return f"{_MATH[n.spelling]}({', '.join(_tidy(self.expr(a, depth + 1)) for a in n.args())})"
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
        if k == "BINARY_OPERATOR" and len(n.children) == 2 and n.op == "&":
            # ert's `nsize & (~(ERT_ALIGN - 1))`: rounded down to a multiple of a power of two (x & (2^k - 1): x % 2^k)
            for x, m in (n.children, n.children[::-1]):
                mask = fold_int(n.model, m, self.env)
                if isinstance(mask, int) and mask < 0 and (-mask) & (-mask - 1) == 0:
                    a = self.expr(x, depth + 1)
                    return f"(({a} // {-mask}) * {-mask})"
                if isinstance(mask, int) and mask > 0 and (mask + 1) & mask == 0:
                    return f"({self.expr(x, depth + 1)} % {mask + 1})"
        if k == "BINARY_OPERATOR" and len(n.children) == 2 and n.op in ("+", "-", "*", "/", "%", "<<", ">>"):
            a, b = self.expr(n.children[0], depth + 1), self.expr(n.children[1], depth + 1)
            op = n.op
            if op in ("<<", ">>"):
                shift = fold_int(n.model, n.children[1], self.env)
                if shift is not None and not 0 <= shift < 63:
                    raise Underivable(f"cannot express `{n.text}`")
                # bitpermute's `(size_t)1 << lg_domain_size`, lg a size: a power of two of it
                op, b = ("*" if op == "<<" else "//"), str(1 << shift) if shift is not None else f"2 ** {b}"
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
        except Unknown:
            raise
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
            fixed = _field_constant(self, _struct_name(base.type), n.spelling) if key not in self.names else None
            if fixed is not None:       # backprop's `net->hidden_n`, 16 wherever the program creates a net
                self.size_name_key(key, f"{base.spelling}_{n.spelling}", fixed[0],
                                   f"{{name}} is `{base.spelling}.{n.spelling}`: {fixed[0]}, what every write "
                                   f"the program makes stores ({self.where(fixed[1])}: "
                                   f"`{' '.join(fixed[1].text.split())}`) (--sizes {{name}}=N)")
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

    def kernel_reads(self, decl) -> bool:
        """A constant at namespace scope that the kernel reads too (directly, through the device functions it
        calls, or through another such constant's initialiser: marchingCubes's `gridXLv1` is `(N - 1) / ...`):
        a size fixed at compile time, not one to choose (meanshift's N: halved, the kernel still read N rows)."""
        if decl.kind != "VAR_DECL" or decl.enclosing("FUNCTION_DECL", "FUNCTION_TEMPLATE", "CXX_METHOD",
                                                     "COMPOUND_STMT") is not None:
            return False
        if self._kernel_reads is None:
            reads, seen, todo = set(), set(), [self.kernel.node]
            while todo:
                node = todo.pop()
                for n in node.walk():
                    r = n.ref if n.kind in ("DECL_REF_EXPR", "CALL_EXPR") else None
                    if r is None or id(r) in seen:
                        continue
                    seen.add(id(r))
                    if r.kind == "VAR_DECL" and r.enclosing("FUNCTION_DECL", "FUNCTION_TEMPLATE", "CXX_METHOD",
                                                            "COMPOUND_STMT") is None:
                        reads.add(id(r))
                        todo.append(r)          # its initialiser's constants
                    elif r.kind in ("FUNCTION_DECL", "FUNCTION_TEMPLATE") and n.kind == "CALL_EXPR":
                        fn = next((f for f in self.model.functions if (f.node is r or f.name == r.spelling) and
                                   f.body is not None), None)
                        if fn is not None and not fn.is_kernel:
                            todo.append(fn.body)
            self._kernel_reads = reads
        return id(decl) in self._kernel_reads

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
        if id(decl) in self.consts:
            return str(self.consts[id(decl)])
        back = _read_back(self, decl) if decl.kind == "VAR_DECL" else None
        if back is not None and back[0] == "device":
            raise Unknown(back[2])
        reached = None                      # a reassigned local: the assignment that reaches this use
        if back is None and use is not None and decl.kind == "VAR_DECL" and \
                id(decl) in analysis(decl.model).assigned:
            reached = _reaching(decl, use)
        if reached is not None:
            _first_launch_note(self, decl, use, reached)
            const = fold_int(reached.model, reached, self.env)
            if const is not None:           # a value of this point, not of the variable: no size name
                return str(const)
            try:
                return self.expr(reached, depth + 1)
            except Unknown:
                raise
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
        # what no reaching plain assignment gives: a clamp, a loop product, the command-line default, a loop
        # counter's first value, a stream read (run time)
        reach = back if back is not None else \
            _at_launch(self, decl, use) if decl.kind == "VAR_DECL" and init is None else None
        if reach is not None:
            kind, init, note = reach
            if note and note not in self.notes:
                self.notes.append(note)
            if kind == "text":
                return init
        if init is not None:
            const = fold_int(init.model, init, self.env)
            v = _bare(init).value
            if const is None and isinstance(v, float) and v.is_integer() and \
                    re.search(r"int|long|short|size_t", decl.type or ""):
                const = int(v)          # pnpoly's `const int nPoints = 2e7;`
            if const is not None and (id(decl) in self.inline or self.kernel_reads(decl)):
                return str(const)
            if const is not None and not _has_var_refs(init):
                return self.size_name(decl, const)
            try:
                text = self.expr(init, depth + 1)
                if _INTEGRAL.search(decl.type or "") and _FLOATING.search(_bare(init).type or "") and \
                        not text.startswith("trunc("):
                    text = f"trunc({text})"     # tridiagonal's `int iterations = log2(system_size / 2)`
                return text
            except Unknown:
                raise
            except Underivable:
                # a block the program computes (cbsfil's `std::min(PowTwoDivider(height), 64)`) is a policy, not
                # an extent: the run-time block stands for it
                tied = _computed(self, decl, init) if id(decl) not in self.inline and \
                    self.fallback == HEURISTIC_SIZE else None
                if tied:
                    raise Unknown(tied) from None
        lost = _lost_write(self, decl) if init is None and reach is None else None
        if lost:                        # said, not refused: a kernel that guards its size still verifies
            return self.size_name(decl, self.fallback, f"{{name}}: {lost}: {self.fallback} assumed "
                                                       "(--sizes {name}=N)")
        first = _loop_start(decl, use)
        if first is not None:           # `for (int t = 0; t < iters; t++) k<<<...>>>(t)`: a value it takes
            text = self.expr(first, depth + 1)
            self.notes.append(f"`{decl.spelling}` is the counter of the loop at {where}: its first value "
                              f"{text} taken")
            return text
        value, words = _run_time_value(self, decl, self.fallback)
        return self.size_name(decl, value, f"{{name}} is decided at run time ({where}): {words} "
                                           "(--sizes {name}=N)")


_EXITS = ("exit", "abort", "_exit", "quick_exit")


def _exits(stmt) -> bool:
    """A statement that leaves the program or the function: `return`, `exit(1)`, `throw`, or a block ending so."""
    while stmt is not None and stmt.kind == "COMPOUND_STMT" and stmt.children:
        stmt = stmt.children[-1]
    if stmt is None:
        return False
    if stmt.kind in ("RETURN_STMT", "CXX_THROW_EXPR"):
        return True
    b = _bare(stmt)
    return b.kind == "CALL_EXPR" and b.spelling in _EXITS


def _refusals(decl) -> list:
    """(op, constant, if statement) for each `if (v OP C) return / exit` (or `C OP v`, joined by `||`) that runs
    unconditionally in a function of `decl`'s file and refuses values of `decl` (tissue's `if (dim > 32) { ...
    return 1; }`); `%` for `if (v % C)` / `if (v % C != 0)`."""
    from porter.analysis.launch import fold_int
    model = decl.model
    scope = decl.enclosing(*_FUNCTIONS)
    ifs = [n for n in (scope.walk() if scope is not None else model.of_kind("IF_STMT")) if n.kind == "IF_STMT"]
    flip = {">": "<", ">=": "<=", "<": ">", "<=": ">="}
    out = []
    for s in ifs:
        if len(s.children) != 2 or not _exits(s.children[1]) or any(
                a.kind in _BRANCHES or a.kind == "CASE_STMT" for a in s.ancestors()
                if a.kind not in _FUNCTIONS and a.enclosing(*_FUNCTIONS) is not None):
            continue                    # under a branch or in a loop: not every run passes it
        todo = [s.children[0].strip]
        while todo:
            c = _bare(todo.pop())
            if c.kind != "BINARY_OPERATOR" or len(c.children) != 2:
                continue
            if c.op == "||":
                todo += c.children
                continue
            a, b = (_bare(k) for k in c.children)
            if c.op == "!=" and a.kind == "BINARY_OPERATOR" and a.op == "%" and fold_int(model, b) == 0:
                c, a, b = a, *(_bare(k) for k in a.children)
            if c.op == "%" and a.kind == "DECL_REF_EXPR" and a.ref is decl:
                k = fold_int(model, b)
                if isinstance(k, int) and k > 1:
                    out.append(("%", k, s))
                continue
            op = c.op
            if b.kind == "DECL_REF_EXPR" and b.ref is decl and op in flip:
                a, b, op = b, a, flip[op]
            if op in flip and a.kind == "DECL_REF_EXPR" and a.ref is decl:
                k = fold_int(model, b)
                if isinstance(k, int) and not isinstance(k, bool):
                    out.append((op, k, s))
    return out


def _run_time_value(sym: _Sym, decl, fallback: int) -> tuple[int, str]:
    """(value, words) for a size the program decides at run time: `fallback`, brought inside the values the
    program accepts (its refusals: `if (dim > 32) return 1;` makes 1000 into 32), and "N assumed, ..."."""
    if decl is None or decl.kind != "VAR_DECL":
        return fallback, f"{fallback} assumed"
    lo, hi, mult, why = None, None, 1, []
    for op, k, s in _refusals(decl):
        if op == ">":
            hi = k if hi is None else min(hi, k)
        elif op == ">=":
            hi = k - 1 if hi is None else min(hi, k - 1)
        elif op == "<":
            lo = k if lo is None else max(lo, k)
        elif op == "<=":
            lo = k + 1 if lo is None else max(lo, k + 1)
        else:
            mult = mult * k // math.gcd(mult, k)
        why.append(sym.where(s))
    v = fallback
    if hi is not None and v > hi:
        v = hi
    if lo is not None and v < lo:
        v = lo
    if mult > 1:
        v = max(mult, v // mult * mult)
    if v == fallback or (hi is not None and v > hi) or (lo is not None and v < lo) or v <= 0:
        return fallback, f"{fallback} assumed"   # nothing refused it, or no value is left: the plain guess
    return v, f"{v} assumed, the program refusing {fallback} ({', '.join(dict.fromkeys(why))})"


def _struct_name(t: str) -> str:
    return re.sub(r"\b(const|volatile|struct|class)\b|[*&\s]", "", t or "")


def _program_models(sym: _Sym, pat):
    """The kernel's host model and the program's other files whose text matches `pat`."""
    yield sym.model
    if sym.hosts is not None:
        from pathlib import Path
        yield from sym.hosts._mentioning(pat, skip=str(Path(sym.model.path).resolve()))


def _field_constant(sym: _Sym, struct: str, field: str):
    """(value, where) when every write `x->field = E` / `x.field = E` to a `struct` the program makes stores one
    constant: E folds, or E is a parameter of a function every live call of which passes that constant, followed
    through the calls in the program's files (backprop's `newnet->hidden_n = n_hidden` in
    `bpnn_internal_create(n_in, n_hidden, n_out)`, called by `bpnn_create(layer_size, 16, 1)`); Unknown when the
    writes store different constants; None when no write is found, the field's address is taken, or a write's
    value is decided at run time (the field then is a run-time size)."""
    pat = re.compile(r"(?:->|\.)\s*" + re.escape(field) + r"\s*=[^=]")
    # `&p.field`, `std::ref(p.field)`: written through a reference too (minibude's command-line parser)
    away = re.compile(r"(?:&|\bref\s*\()\s*[\w\[\]().]*?(?:->|\.)\s*" + re.escape(field) + r"\b(?!\s*\()")
    if any(away.search(m.source.text) for m in _program_models(sym, away)):
        return None
    models = list(_program_models(sym, pat))
    values, where = set(), None
    for m in models:
        for n in m.of_kind("MEMBER_REF_EXPR"):
            p = n.parent
            if n.spelling != field or not n.children or _struct_name(n.children[0].type) != struct or \
                    p is None or p.kind != "BINARY_OPERATOR" or p.op != "=" or len(p.children) != 2 or \
                    _bare(p.children[0]) is not n:
                continue
            got = _passed_constants(sym, p.children[1], 0)
            if not got:
                return None
            values |= got
            where = where or p
    if len(values) > 1:
        raise Unknown(f"`{field}` of a `{struct}` is set to {' and '.join(map(str, sorted(values)))} by the program "
                      f"({sym.where(where)}: `{' '.join(where.text.split())}`): which the launch sees is not known")
    return (values.pop(), where) if values else None


def _passed_constants(sym: _Sym, e, depth: int) -> set | None:
    """The constants expression `e` of a host function holds over the program's live calls of that function
    (a parameter followed to the arguments of each call); None when one of them is not a constant."""
    from porter.analysis.launch import fold_int
    v = fold_int(e.model, e)
    if isinstance(v, int) and not isinstance(v, bool):
        return {v}
    b = _bare(e)
    if depth > 4 or b.kind != "DECL_REF_EXPR" or b.ref is None or b.ref.kind != "PARM_DECL":
        return None
    fn = b.model.function_of(b)
    if fn is None or fn.node is not b.ref.parent or b.ref.spelling not in [q.name for q in fn.params]:
        return None
    from porter.analysis.affine import analysis
    if id(b.ref) in analysis(b.model).assigned:
        return None                     # the parameter is changed in the function
    k = [q.name for q in fn.params].index(b.ref.spelling)
    pat = re.compile(r"(?<![\w.>:])" + re.escape(fn.name) + r"\s*\(")
    models = list(_program_models(sym, pat))
    if sym.hosts is not None and b.model not in models:
        models.append(b.model)
    calls = [c for m in models for c in m.of_kind("CALL_EXPR")
             if c.spelling == fn.name and len(c.args()) == len(fn.params) and
             (m.function_of(c) is None or m.function_of(c).name != fn.name)]
    called = lambda name: name == "main" or any(    # noqa: E731
        c.spelling == name for m in models + list(_program_models(sym, re.compile(re.escape(name) + r"\s*\(")))
        for c in m.of_kind("CALL_EXPR"))
    live = [c for c in calls if c.model.function_of(c) is not None and called(c.model.function_of(c).name)]
    if not live:
        return None
    out = set()
    for c in live:
        got = _passed_constants(sym, c.args()[k], depth + 1)
        if not got:
            return None
        out |= got
    return out


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
    if i is None and _bare(index).kind == "DECL_REF_EXPR":
        i = sym.consts.get(id(_bare(index).ref))     # the counter of a loop being unrolled (_unrolled)
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


def _loop_start(decl, use=None):
    """The initial value of a `for` loop's counter declared in its init (`for (int t = 0; ...)`), or, at a `use`
    inside the loop, assigned there (ert's `uint64_t t; ... for (t = 1; t <= ntrials; t = t * 2)`); None
    otherwise. Taking the run-time fallback (1000) for it indexed past the end of buffers sized by the loop's bound
    (d2q9-bgk's `Partial_Sum[... + tt * ...]`)."""
    stmt = decl.parent
    if use is not None and (stmt is None or stmt.kind != "DECL_STMT" or stmt.parent is None or
                            stmt.parent.kind != "FOR_STMT"):
        loop = use.parent
        while loop is not None and loop.kind != "FOR_STMT":
            loop = loop.parent
        first = _bare(loop.children[0]) if loop is not None and loop.children else None
        if first is not None and first.kind == "BINARY_OPERATOR" and first.op == "=" and \
                len(first.children) == 2 and _bare(first.children[0]).kind == "DECL_REF_EXPR" and \
                _bare(first.children[0]).ref is decl:
            return first.children[1]
        return None
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


def _callee(call) -> str:
    """The function a call names; in a template, a dependent call's (ert's `gpuKernel<T>(n, t, d_buf, ...)` in
    `launchKernel<T>`: clang leaves its spelling empty)."""
    if call.spelling or not call.children:
        return call.spelling
    return next((c.spelling for c in call.children[0].walk() if c.kind == "OVERLOADED_DECL_REF"), "")


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
    if dtype is None:                   # ert's `sizeof(T)` of run<half2>: the struct's size
        t = named_type(sym.model, _subst(name, {**sym.env, **sym.types}))
        return t.get_size() if t is not None and t.get_size() > 0 else None
    return _BYTES.get(dtype)


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
            id(n.ref) not in sym.names and id(n.ref) not in sym.consts:     # not _bind_cases's value
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
    except Unknown:
        raise
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


# ---------------------------------------------------------------------------------------------------------------
# the value a host variable has when the launch runs (a variable written after its declaration)

_INPUT_CALLS = re.compile(r"\b(atoi|atol|atoll|atof|strto[a-z]*|std::sto[a-z]+|sto[ifdlu]l*|getenv|argv)\b")
_BRANCHES = ("IF_STMT", "FOR_STMT", "WHILE_STMT", "DO_STMT", "SWITCH_STMT", "CXX_FOR_RANGE_STMT")
_MEMCPY = ("cudaMemcpy", "cudaMemcpyAsync", "hipMemcpy", "hipMemcpyAsync", "cudaMemcpyFromSymbol")


def _host_writes(decl) -> list:
    """(kind, node) of every write to the local `decl` after its declaration, in source order: `=` (a plain
    assignment), `op` (compound assignment, ++, --), `device` (`cudaMemcpy(&v, ...)`: read back from the
    device), `address` (`&v` given to a call), `read` (`in >> v`)."""
    fn = decl.enclosing("FUNCTION_DECL", "FUNCTION_TEMPLATE", "CXX_METHOD")
    out = []
    for m in (fn.walk() if fn is not None else ()):
        k = m.kind
        if k in ("BINARY_OPERATOR", "COMPOUND_ASSIGNMENT_OPERATOR") and len(m.children) == 2:
            lhs, rhs = m.children[0].strip, m.children[1].strip
            if k == "BINARY_OPERATOR" and m.op == ">>" and getattr(rhs, "ref", None) is decl and \
                    rhs.kind == "DECL_REF_EXPR" and _extraction(m):
                out.append(("read", m))         # inversek2j's `coordinate_in_file >> data_size`
            elif lhs.kind == "DECL_REF_EXPR" and lhs.ref is decl and (k != "BINARY_OPERATOR" or m.op == "="):
                out.append(("=" if k == "BINARY_OPERATOR" else "op", m))
        elif k == "UNARY_OPERATOR" and m.children and m.children[0].strip.kind == "DECL_REF_EXPR" and \
                m.children[0].strip.ref is decl:
            if m.op in ("++", "--", "post++", "post--"):
                out.append(("op", m))
            elif m.op == "&":
                call = m.parent
                while call is not None and call.kind in _WRAPPERS:
                    call = call.parent
                first = call is not None and call.kind == "CALL_EXPR" and call.args() and \
                    _bare(call.args()[0]) is m
                out.append(("device" if first and call.spelling in _MEMCPY else "address", m))
        elif k == "CALL_EXPR" and m.spelling == "operator>>" and any(
                _bare(a).kind == "DECL_REF_EXPR" and _bare(a).ref is decl for a in m.args()[1:]):
            out.append(("read", m))
    return out


def _read_back(sym: _Sym, decl, writes=None):
    """What no assignment stands for, whatever reaches the use: ("device", None, message) for a local read back
    from the device (`cudaMemcpy(&v, ...)`: a value a kernel computes), ("runtime", None, None) for one read from
    a stream (`in >> v`: inversek2j's `data_size = 0` is not its size); None otherwise. Checked before
    _reaching, which does not see either write."""
    writes = _host_writes(decl) if writes is None else writes
    dev = next((w for k, w in writes if k == "device"), None)
    if dev is not None:
        call = dev.parent
        while call is not None and call.kind != "CALL_EXPR":
            call = call.parent
        return ("device", None, f"`{decl.spelling}` is read back from the device (`{call.spelling}` at "
                                f"{sym.where(dev)}): a value an earlier kernel computes, not a size the source "
                                "gives")
    if any(k == "read" for k, _ in writes):
        return ("runtime", None, None)
    return None


def _first_launch_note(sym: _Sym, decl, use, value) -> None:
    """The note for a local that _reaching gives its initialiser although it is written after the launch (the
    first launch's value taken)."""
    if value is None or decl.kind != "VAR_DECL" or value is not _initialiser(decl):
        return
    writes = _host_writes(decl)
    point = _launch_point(sym, decl)
    if use is not None and point is not None and decl.enclosing(*_FUNCTIONS) is use.enclosing(*_FUNCTIONS) and \
            use.start < point.start:
        point = use
    after = [w for _, w in writes if point is not None and w.start >= point.start]
    if writes and len(after) == len(writes):
        note = f"`{decl.spelling}` is changed after the launch ({sym.where(after[0])}): its value at the first " \
               "launch taken"
        if note not in sym.notes:
            sym.notes.append(note)


def _extraction(m) -> bool:
    """`in >> v` (and `in >> a >> v`) as a statement: a stream read, not a shift (whose value would be used);
    clang may not know the stream's type (the shim's headers), so the statement decides."""
    top = m
    while top.parent is not None and top.parent.kind == "BINARY_OPERATOR" and top.parent.op == ">>" and \
            top.parent.children and top.parent.children[0] is top:
        top = top.parent
    return top.parent is not None and top.parent.kind == "COMPOUND_STMT" or \
        re.search(r"stream", m.children[0].type or "") is not None


def _launch_point(sym: _Sym, decl):
    """The node in `decl`'s function where the launch happens: the launch itself, or the call of the host
    function that makes it (tridiagonal's main calls `pcr_small_systems(...)`); None when not found."""
    if sym.site is None:
        return None
    fn = decl.enclosing("FUNCTION_DECL", "FUNCTION_TEMPLATE", "CXX_METHOD")
    if fn is None:
        return None
    site_fn = sym.model.function_of(sym.site.node)
    if site_fn is not None and site_fn.node is fn:
        return sym.site.node
    names = {site_fn.name} if site_fn is not None else set()
    for _ in range(3):                  # main -> run(...) -> pcr_small_systems(...) -> the launch
        call = next((c for c in fn.walk() if c.kind == "CALL_EXPR" and c.spelling in names), None)
        if call is not None:
            return call
        callers = [sym.model.function_of(c) for c in sym.model.of_kind("CALL_EXPR") if c.spelling in names]
        names = {f.name for f in callers if f is not None}
    return None


def _case_label(body, node):
    """The value expression of the `case` label nearest before `node` in the switch's `body` (`case 2: case 3:
    launch` or a fall-through from `case 2`: 3, a value the launch runs with); None under `default:`, or with
    a `break` / `return` between the label and the statement holding `node`."""
    top = next((a for a in [node, *node.ancestors()] if a.parent is body), None)
    if top is None:
        return None
    kids = body.children
    i = next(j for j, c in enumerate(kids) if c is top)
    while i >= 0 and kids[i].kind not in ("CASE_STMT", "DEFAULT_STMT"):
        if kids[i].kind in ("BREAK_STMT", "RETURN_STMT", "CONTINUE_STMT"):
            return None
        i -= 1                          # statements after a label are its siblings in the body
    label = kids[i] if i >= 0 else None
    while label is not None and label.kind in ("CASE_STMT", "DEFAULT_STMT") and label.children and \
            label.children[-1].kind in ("CASE_STMT", "DEFAULT_STMT"):
        label = label.children[-1]      # `case 2: case 3:` nests: the innermost is nearest
    if label is None or label.kind != "CASE_STMT" or len(label.children) != 2 or \
            label.children[1].kind in ("BREAK_STMT", "RETURN_STMT", "CONTINUE_STMT") and label is not top:
        return None                     # `case 3: break;` then the launch: not run under case 3
    return label.children[0]


def _bind_cases(sym: _Sym) -> None:
    """The value a variable has at the launch when the launch runs only under `case C:` of `switch (v)` or in
    the then-branch of `if (v == C)`: C (moe-sum's `switch (topk) { case 3: k<float, 3><<<...>>>` whose buffers
    are sized by `topk`, the counter of its caller's loop: not that loop's first value). A parameter `v` of a
    host function binds the caller's variable it receives too (caller_arg's call)."""
    from porter.analysis.launch import fold_int
    if sym.site is None:
        return
    node = sym.site.node
    for a in node.ancestors():
        if a.kind in _FUNCTIONS:
            break
        var = value = None
        if a.kind == "SWITCH_STMT" and len(a.children) == 2 and a.children[1].kind == "COMPOUND_STMT":
            var, value = _bare(a.children[0]), _case_label(a.children[1], node)
        elif a.kind == "IF_STMT" and len(a.children) >= 2 and _inside(a.children[1], node):
            c = a.children[0].strip
            if c.kind == "BINARY_OPERATOR" and c.op == "==" and len(c.children) == 2:
                x, y = (_bare(k) for k in c.children)
                var, value = (x, y) if x.kind == "DECL_REF_EXPR" else (y, x)
        if var is None or value is None or var.kind != "DECL_REF_EXPR" or var.ref is None:
            continue
        v = fold_int(value.model, value, sym.env)
        decl = var.ref
        if v is None or isinstance(v, bool) or id(decl) in sym.consts:
            continue
        bound = []
        for _ in range(4):              # the parameter, the caller's variable it receives, ...
            if decl is None or decl.kind not in ("VAR_DECL", "PARM_DECL") or id(decl) in sym.consts:
                break
            sym.consts[id(decl)] = v
            arg = sym.caller_arg(decl) if decl.kind == "PARM_DECL" else None
            arg = _bare(arg) if arg is not None else None
            decl = arg.ref if arg is not None and arg.kind == "DECL_REF_EXPR" else None
            if decl is not None:
                bound.append(f"`{decl.spelling}` passed for it at {sym.where(arg)}")
        what = "`case` label" if a.kind == "SWITCH_STMT" else "`if`"
        sym.notes.append(f"`{var.spelling}` is {v} at the launch (its {what} at {sym.where(value)})" +
                         (f", and so is {', '.join(bound)}" if bound else ""))


def _conditions(node, point, fn_node) -> list:
    """The if / loop statements around `node` that do not also hold `point` (the writes the launch may not see)."""
    out = []
    for a in node.ancestors():
        if a is fn_node:
            break
        if a.kind in _BRANCHES and (point is None or not a.start <= point.start < a.end):
            out.append(a)
    return out


def _clamp(w, decl):
    """"min" / "max" for `if (v > X) v = X;` / `if (v < X) v = X;` (ga's `end_position` capped at the searchable
    length): the IF_STMT holds nothing else; None otherwise."""
    stmt = w.parent
    while stmt is not None and stmt.kind == "COMPOUND_STMT" and len(stmt.children) == 1:
        stmt = stmt.parent
    if stmt is None or stmt.kind != "IF_STMT" or len(stmt.children) != 2:
        return None
    cond = stmt.children[0].strip
    if cond.kind != "BINARY_OPERATOR" or cond.op not in ("<", "<=", ">", ">=") or len(cond.children) != 2:
        return None
    a, b = (c.strip for c in cond.children)
    x = " ".join(w.children[1].text.split())
    if a.kind == "DECL_REF_EXPR" and a.ref is decl and " ".join(b.text.split()) == x:
        return "min" if cond.op in (">", ">=") else "max"
    if b.kind == "DECL_REF_EXPR" and b.ref is decl and " ".join(a.text.split()) == x:
        return "min" if cond.op in ("<", "<=") else "max"
    return None


def _at_launch(sym: _Sym, decl, at=None):
    """What the local `decl`, written after its declaration, holds when the launch runs: None when nothing
    writes it (its initialiser does), else (kind, payload, note):
    ("node", expression node, note): the initialiser when every write comes after the launch (ga's
    `current_position = 0`, advanced after each launch: the first launch's value), the last plain assignment
    before it (cfd's `nelr = block_length * (...)`, tridiagonal's `szLocalWorkSize = system_size`), or the
    initialiser kept when a write under a condition reads the command line (metropolis's `int L = 32` with
    `-l`: the program's default);
    ("text", size expression, note): the initialiser capped by `if (v > X) v = X` (min(init, X)) or made by a
    loop of constant trip count (tensorAccessor's `numel *= sizes[i]` over i < 2);
    ("runtime", None, None): decided at run time (read from a stream or through a pointer);
    ("device", None, message): read back from the device (`cudaMemcpy(&v, ...)`): a value a kernel computes."""
    writes = _host_writes(decl)
    if not writes:
        return None
    where = lambda n: sym.where(n)   # noqa: E731
    back = _read_back(sym, decl, writes)
    if back is not None:
        return back
    point = _launch_point(sym, decl)
    fn_kinds = ("FUNCTION_DECL", "FUNCTION_TEMPLATE", "CXX_METHOD")
    if at is not None and decl.enclosing(*fn_kinds) is at.enclosing(*fn_kinds) and \
            (point is None or at.start < point.start):
        point = at                      # read before the launch: cbsfil's `dim3 b(blocks)`, then `blocks = ...`
    fn = decl.enclosing("FUNCTION_DECL", "FUNCTION_TEMPLATE", "CXX_METHOD")
    init = _initialiser(decl)
    before = [(k, w) for k, w in writes if point is None or w.start < point.start]
    if not before and init is not None:
        # a loop around the launch that writes it again without testing it (metropolis's `insert_temps(...,
        # &ar, ...)` after `kernel_reset<<<...>>>(dE, ar, 0)`): the first turn still launches with the
        # initialiser, a launch the program makes; 1000 of its own sized no buffer (dE has R + atrials * ains)
        again = " (and on each later turn of the loop around it)" if point is not None and \
            _advanced_by_loop(decl, point, writes) is False else ""
        return ("node", init, f"`{decl.spelling}` is changed after the launch ({where(writes[0][1])}){again}: "
                              "its value at the first launch taken")
    value, text, note = init, None, None
    loops: dict = {}
    for k, w in before:
        conds = _conditions(w, point, fn)
        if k == "op" and conds and conds[0].kind == "FOR_STMT":
            loops.setdefault(id(conds[0]), (conds[0], []))[1].append(w)
            continue
        if k != "=" or _refers_to(w.children[1], decl):
            return ("runtime", None, None)
        if not conds:
            value, text = w.children[1], None
            continue
        clamp = _clamp(w, decl) if len(conds) == 1 and conds[0].kind == "IF_STMT" else None
        if clamp is not None and (value is not None or text is not None):
            try:
                text = f"{clamp}({text if text is not None else _tidy(sym.expr(value))}, " \
                       f"{_tidy(sym.expr(w.children[1]))})"
            except Unknown:
                raise
            except Underivable:
                return ("runtime", None, None)
            continue
        if value is not None and text is None and _INPUT_CALLS.search(w.children[1].text or ""):
            note = f"`{decl.spelling}` may be set from the command line ({where(w)}): its default " \
                   f"`{' '.join(value.text.split())}` taken"
            continue
        return ("runtime", None, None)
    for loop, ws in loops.values():
        unrolled = _unrolled(sym, decl, loop, ws, value, text)
        if unrolled is None:
            return ("runtime", None, None)
        value, text = None, unrolled
    if text is not None:
        return ("text", text, None)
    if value is None:
        return ("runtime", None, None)
    return ("node", value, note)


def _advanced_by_loop(decl, point, writes):
    """For a local written only after `point`: None when no loop around the point writes it again, True when
    each such loop tests it in its condition (ga's `while (current_position < max)`, advanced after the launch:
    the loop's counter, its first value a value the program launches with, as _loop_start takes), False when a
    loop around the point writes it again without testing it (the next turn reads another value)."""
    fn = decl.enclosing(*_FUNCTIONS)
    loops = [a for a in point.ancestors() if a.kind in _LOOPS and fn is not None and _inside(fn, a) and
             any(_inside(a, w) for _, w in writes)]
    if not loops:
        return None
    for lp in loops:
        cond = lp.children[1] if lp.kind == "FOR_STMT" and len(lp.children) == 4 else \
            lp.children[0] if lp.kind == "WHILE_STMT" and lp.children else \
            lp.children[-1] if lp.kind == "DO_STMT" and lp.children else None
        if cond is None or not _refers_to(cond, decl):
            return False
    return True


def _initialiser(decl):
    exprs = [c for c in decl.children if not c.kind.endswith("_ATTR") and c.kind not in ("TYPE_REF",
                                                                                         "NAMESPACE_REF")]
    return exprs[-1] if exprs else None


def _refers_to(node, decl) -> bool:
    return any(n.kind == "DECL_REF_EXPR" and n.ref is decl for n in node.walk())


def _unrolled(sym: _Sym, decl, loop, writes, value, text) -> str | None:
    """`v OP= E(i)` in `for (int i = A; i < B; i++)` with A and B constants (at most 8 trips) and the loop body
    that one statement: the size expression `((v OP E(A)) OP E(A+1)) ...`; None otherwise."""
    from porter.analysis.launch import fold_int
    if len(writes) != 1 or writes[0].kind != "COMPOUND_ASSIGNMENT_OPERATOR" or len(loop.children) != 4:
        return None
    w = writes[0]
    op = {"*=": "*", "+=": "+"}.get(w.op)
    init, cond, inc, body = loop.children
    stmts = body.children if body.kind == "COMPOUND_STMT" else [body]
    if op is None or len(stmts) != 1 or stmts[0] is not w or init.kind != "DECL_STMT" or not init.children:
        return None
    i = init.children[0]
    start = fold_int(sym.model, _initialiser(i), sym.env) if _initialiser(i) is not None else None
    c = cond.strip
    if start is None or c.kind != "BINARY_OPERATOR" or c.op not in ("<", "<=") or len(c.children) != 2 or \
            getattr(c.children[0].strip, "ref", None) is not i or inc.kind != "UNARY_OPERATOR" or \
            inc.op not in ("++", "post++"):
        return None
    stop = fold_int(sym.model, c.children[1], sym.env)
    if stop is None:
        return None
    stop += c.op == "<="
    if not 0 <= stop - start <= 8:
        return None
    try:
        acc = text if text is not None else (sym.expr(value) if value is not None else None)
        if acc is None:
            return None
        for k in range(start, stop):
            sym.consts[id(i)] = k
            try:
                acc = f"({acc} {op} {sym.expr(w.children[1])})"
            finally:
                sym.consts.pop(id(i), None)
    except Unknown:
        raise
    except Underivable:
        return None
    return acc


# ---------------------------------------------------------------------------------------------------------------
# a launch the derived sizes do not reach

# an `if` is not looked at: ss picks StringSearchNaive for one pattern length and another kernel for the others,
# and the kernel is still one to verify at any length
_COND_LOOPS = ("WHILE_STMT", "FOR_STMT")


def _unreached(sym: _Sym, grid: str, block: str, sizes: dict) -> list[tuple[str, str]]:
    """(what, message) when the derived sizes do not make the launch the program makes: the condition of a loop
    the launch sits in (`while (current_position < max_searchable_length)`) false at those sizes, or an empty
    grid or block (ga's `length` is 0 when the two run-time sizes its bound subtracts are both 1000). The sizes
    the program needs then are not known: a spec says them."""
    from porter.verify.notation import eval_int, parse_expr, parse_launch
    if sym.site is None:
        return []
    shown = lambda: ", ".join(f"{k}={v}" for k, v in sizes.items()) or "none"   # noqa: E731
    line = sym.model.source.position(sym.site.node.start)[0]
    saved = (dict(sym.names), dict(sym.sizes), list(sym.notes))
    try:
        for a in sym.site.node.ancestors():
            if a.kind == "LAMBDA_EXPR":
                break
            if a.kind not in _COND_LOOPS or not a.children:
                continue
            cond = a.children[0] if a.kind != "FOR_STMT" else (a.children[1] if len(a.children) == 4 else None)
            c = cond.strip if cond is not None else None
            if c is None or c.kind != "BINARY_OPERATOR" or len(c.children) != 2 or \
                    c.op not in ("<", "<=", ">", ">=", "==", "!=") or not c.spelled_here:
                continue
            try:
                left, right = (sym.expr(x) for x in c.children)
                lv, rv = (parse_expr(t).eval(sizes) for t in (left, right))
            except Exception:           # not a condition over sizes (a flag, a pointer, a loop counter)
                continue
            if not {"<": lv < rv, "<=": lv <= rv, ">": lv > rv, ">=": lv >= rv, "==": lv == rv,
                    "!=": lv != rv}[c.op]:
                return [("launch", f"the launch at line {line} runs only while `{' '.join(c.text.split())}`, "
                                   f"false at the derived sizes ({_tidy(left)} = {lv}, {_tidy(right)} = {rv}; "
                                   f"sizes {shown()}): the sizes it needs are not derived")]
    finally:
        sym.names, sym.sizes, sym.notes = saved
    for what, text in (("grid", grid), ("block", block)):
        try:
            dims = [eval_int(e, sizes, what) for e in parse_launch(text)]
        except Exception:
            continue
        if min(dims) < 1:
            return [(what, f"the {what} `{text}` of the launch at line {line} is empty at the derived sizes "
                           f"({shown()}): the sizes it needs are not derived")]
    return []


def _lost_write(sym: _Sym, decl) -> str | None:
    """A local with no value in the tree that the source assigns in a statement clang could not read (cfd's
    `nelr = block_length * (...)` after `file >> nel` with `std::ifstream` unknown to the headers at hand: the
    statement is dropped, and 1000 of its own broke the rounding to the block the program does): the note
    that says so, or None."""
    model = getattr(decl, "model", sym.model)   # the file the declaration is in (its parse errors)
    if decl.kind != "VAR_DECL" or not getattr(model, "errors", None):
        return None
    fn = decl.enclosing("FUNCTION_DECL", "FUNCTION_TEMPLATE", "CXX_METHOD")
    if fn is None:
        return None
    text = model.source.slice(decl.start, fn.end)
    m = re.search(rf"(?<![\w.>])\b{re.escape(decl.spelling)}\s*(=(?!=)|[-+*/%|&^]=|\+\+|--)", text)
    if m is None:                       # hogbom's `const int startx = std::max(0, rx - px);` without std::max
        return None
    line = model.source.position(decl.start + m.start())[0]
    first, last = model.source.position(fn.start)[0], model.source.position(fn.end)[0]
    errors = [e for e in model.errors if first <= getattr(e, "line", 0) <= last]
    why = next((e.message for e in errors if e.line == line), errors[0].message if errors else None)
    return f"`{decl.spelling}` is assigned at line {line} in a statement the parser could not read" + \
        (f" ({why})" if why else "") + ": its value is not known"


def _computed(sym: _Sym, decl, init, depth: int = 0) -> str | None:
    """Why the local `decl` has no value a guess may stand for: its initialiser (not a command-line read) calls
    a function of the program with integer host variables among the arguments (hogbom's `rx =
    idxToPos(peakPos, residualWidth).x`: a peak position in a residualWidth-wide image); None otherwise (1000
    of its own is taken then)."""
    if depth > 4 or _INPUT_CALLS.search(init.text or ""):
        return None
    e = _bare(init)
    base = _bare(e.children[0]) if e.kind == "ARRAY_SUBSCRIPT_EXPR" and len(e.children) == 2 else None
    if base is not None and base.kind == "DECL_REF_EXPR" and "*" in (base.type or "") and \
            re.search(r"int|long|short|size_t|unsigned", e.type or ""):
        # streamcluster's `pgain(feasible[x], ...)`: a point the program's data picks, which the kernel indexes
        # with (`coord[i * num + x]`): a value below num, not a size of its own
        return f"`{decl.spelling}` is `{' '.join(init.text.split())}` ({sym.where(init)}), an element of the " \
               f"program's data `{base.spelling}`: not a size the source gives"
    own = {f.name for f in sym.model.functions if f.body is not None and not f.is_kernel}
    for call in init.walk():
        ref = call.ref if call.kind == "DECL_REF_EXPR" else None
        if ref is not None and ref.kind == "VAR_DECL" and ref is not decl and sym.definition(ref) is not None:
            why = _computed(sym, ref, sym.definition(ref), depth + 1)   # `startx = std::max(0, rx - px)`
            if why:
                return why
        if call.kind != "CALL_EXPR" or call.spelling not in own:
            continue
        names = sorted({n.spelling for a in call.args() if _INTEGRAL.search(a.type or "") and "*" not in a.type
                        for n in a.walk() if n.kind == "DECL_REF_EXPR" and n.ref is not None and
                        n.ref.kind in ("VAR_DECL", "PARM_DECL")})   # values, not `&state` (metropolis's seed)
        if names:
            line = sym.model.source.position(decl.start)[0]
            return f"`{decl.spelling}` = `{' '.join(init.text.split())}` (line {line}) is computed by " \
                   f"`{call.spelling}` from {', '.join(f'`{n}`' for n in names)}: not a size the source gives"
    return None
