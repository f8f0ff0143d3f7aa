"""Host expressions as size expressions of the spec notation (derive.py): _Sym writes a host expression over
size names: constants, host variables as size names (1000 / 256 when the program decides them at run time, with
a note), dim3 members, a container's size, the device properties a grid reads, and the program's one-line host
functions inlined. Where a variable's value comes from is derive_values.py's question, what the program fixes
about it derive_facts.py's, a buffer's length derive_alloc.py's."""
from __future__ import annotations

import re

from porter.verify.derive_alloc import _allocation, _helper_allocation, _sizeof
from porter.verify.derive_facts import (_ceil_pattern, _computed, _field_constant, _lost_write, _one_return,
                                        _round_up_fn, _run_time_value, _struct_name)
from porter.verify.derive_host import (HEURISTIC_SIZE, Underivable, Unknown, _FLOATING, _INTEGRAL, _WRAPPERS, _bare,
                                       _has_var_refs, _tidy)
from porter.verify.derive_launch import _fold_decl, _member_writes
from porter.verify.derive_values import (_array_element, _at_launch, _first_launch_note, _loop_start, _reaching,
                                         _read_back)


_MATH = {"log2": "log2", "log2f": "log2", "sqrt": "sqrt", "sqrtf": "sqrt", "floor": "floor", "floorf": "floor",
         "min": "min", "max": "max", "abs": "abs"}     # host calls the notation has
DEVICE_PROPS = {"multiProcessorCount": 16}   # cudaDeviceProp fields read for a grid: a small device assumed


def _dependent_size_call(n) -> bool:
    """`blocks.size()` of a dependent container inside a macro's arguments (quicksort's
    `gpucheck(cudaMalloc(..., sizeof(block_record<T>) * blocks.size()))`): no spelling and no text, but the
    member's tokens read `blocks . size`."""
    c = n.children[0]
    if c.kind != "MEMBER_REF_EXPR" or c.spelling or (c.text or "").strip():
        return False
    try:
        toks = [t.spelling for t in c._cursor.get_tokens()]
    except Exception:                   # no clang tree behind the node
        return False
    return len(toks) == 3 and toks[1:] == [".", "size"]


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
                                                                 (re.search(r"\.\s*size$", n.children[0].text)
                                                                  or _dependent_size_call(n))):
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


def _callee(call) -> str:
    """The function a call names; in a template, a dependent call's (ert's `gpuKernel<T>(n, t, d_buf, ...)` in
    `launchKernel<T>`: clang leaves its spelling empty)."""
    if call.spelling or not call.children:
        return call.spelling
    return next((c.spelling for c in call.children[0].walk() if c.kind == "OVERLOADED_DECL_REF"), "")
