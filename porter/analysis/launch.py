"""Launch shapes: the block shape each kernel runs with, and the thread-index ranges that follow from it.

Sources, most explicit first:
1. `[tool.cuport.launch]` in the configuration: `kernel = { block = [16, 16] }`;
2. an annotation comment `// cuport: launch block=(16, 16)` inside the kernel or just before it (or naming the
   kernel anywhere: `// cuport: launch sgemm block=16x16`), parsed with `launch.lark`;
3. the launch sites of this translation unit: `k<<<grid, block>>>` where the block folds to constants through
   `dim3` locals, macros, `constexpr`, template arguments of the kernel and of a templated host wrapper called
   with constants (`run<128>(...)`), and one level of a `dim3` parameter passed by a caller;
4. `__launch_bounds__(T)`: not a shape, only "at most T threads";
5. nothing: any shape of up to 1024 threads.
Shapes from 1-3 are exact; rules assert only for exact shapes and say "possible" otherwise."""
from __future__ import annotations

import re

from porter.frontend.lexer import split_top_level
from porter.analysis.annotations import annotation_for
from porter.frontend.model import FileModel, Function, Node
from porter.record import FrozenRecord, Record

MAX_THREADS = 1024                    # CUDA / HIP / Vulkan-on-NVIDIA limit of threads per block


class Shape(FrozenRecord):
    """A block shape and where it came from."""
    dims: tuple | None                # (x, y, z) when known
    source: str                       # 'launch site' | 'launch_bounds' | 'config' | 'annotation' | 'unknown'
    exact: bool
    max_threads: int                  # upper bound on x*y*z (launch bounds), the block size when exact
    line: int | None                  # line of the launch site / annotation / attribute
    text: str                         # how the block was written there (`block`, `dim3(32, 8)`, ...)
    bindings: tuple                   # ((template parameter, value), ...) of the kernel at that launch
    dynamic_shared: int | None         # bytes of dynamic shared memory when known (third launch argument)
    node: Node | None
    alternatives: tuple                                                  # other shapes of the same kernel

    _uncompared = ('node', 'alternatives')

    def __init__(self, dims, source, exact, max_threads=MAX_THREADS, line=None, text="", bindings=(),
                 dynamic_shared=None, node=None, alternatives=()):
        _set = object.__setattr__
        _set(self, 'dims', dims)
        _set(self, 'source', source)
        _set(self, 'exact', exact)
        _set(self, 'max_threads', max_threads)
        _set(self, 'line', line)
        _set(self, 'text', text)
        _set(self, 'bindings', bindings)
        _set(self, 'dynamic_shared', dynamic_shared)
        _set(self, 'node', node)
        _set(self, 'alternatives', alternatives)

    @property
    def threads(self) -> int | None:
        return self.dims[0] * self.dims[1] * self.dims[2] if self.dims else None

    @property
    def env(self) -> dict:
        return dict(self.bindings)

    def label(self) -> str:
        """`(16, 16)` (trailing 1s dropped)."""
        if not self.dims:
            return f"(up to {self.max_threads} threads)"
        d = list(self.dims)
        while len(d) > 1 and d[-1] == 1:
            d.pop()
        return "(" + ", ".join(str(x) for x in d) + ")"

    def origin(self) -> str:
        at = f" at line {self.line}" if self.line else ""
        return {"launch site": f"from the launch site{at}",
                "config": "from [tool.cuport.launch]",
                "annotation": f"from the annotation{at}",
                "launch_bounds": f"`__launch_bounds__({self.max_threads})`{at}",
                "unknown": "no launch site, annotation or configuration gives the shape"}[self.source]

    def describe(self) -> str:
        """`the launch block (16, 16) (from the launch site at line 107)`."""
        if self.exact and self.dims:
            binds = f" with {', '.join(f'{k} = {v}' for k, v in self.bindings)}" if self.bindings else ""
            return f"the launch block {self.label()}{binds} ({self.origin()})"
        if self.source == "launch_bounds":
            return f"a block of up to {self.max_threads} threads ({self.origin()})"
        return f"an unknown block shape (any shape up to {self.max_threads} threads)"

    def ranges(self) -> dict:
        """Inclusive ranges of threadIdx.x/y/z: exact for a known shape, else what the limits allow."""
        if self.dims:
            return {f"threadIdx.{c}": (0, d - 1) for c, d in zip("xyz", self.dims)}
        m = self.max_threads
        return {"threadIdx.x": (0, m - 1), "threadIdx.y": (0, m - 1), "threadIdx.z": (0, min(m, 64) - 1)}


UNKNOWN = Shape(None, "unknown", False)


def thread_ranges(shape: Shape) -> dict:
    return shape.ranges()


# --- constant folding with template bindings ------------------------------------------------------------------

def _int(v):
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def fold_int(model: FileModel, node: Node | None, env: dict | None = None, depth: int = 0):
    """Integer value of an expression: libclang's folding first, then template parameters bound in `env`
    (name -> int), never-reassigned locals and + - * / % << >> over those."""
    if node is None or depth > 10:
        return None
    n = node.strip
    v = _int(n.value) if n.kind.endswith(("_EXPR", "_LITERAL", "OPERATOR")) else None
    if v is not None:
        return v
    k = n.kind
    if k == "DECL_REF_EXPR":
        if env and n.spelling in env and n.ref_kind in ("TEMPLATE_NON_TYPE_PARAMETER", "NON_TYPE_TEMPLATE_PARAMETER"):
            return env[n.spelling]
        if n.ref is not None and n.ref.kind == "VAR_DECL":
            from porter.analysis.affine import analysis
            d = analysis(model).definition(n.ref)
            return fold_int(model, d, env, depth + 1) if d is not None else None
        return None
    if k == "CALL_EXPR" and n.spelling == "dim3":       # implicit int -> dim3 conversion of a launch argument
        args = [a for a in n.args() if a.kind not in ("TYPE_REF", "NAMESPACE_REF")]
        return fold_int(model, args[0], env, depth + 1) if len(args) == 1 else None
    if k == "BINARY_OPERATOR" and len(n.children) == 2:
        a = fold_int(model, n.children[0], env, depth + 1)
        b = fold_int(model, n.children[1], env, depth + 1)
        if a is None or b is None:
            return None
        return _binop(n.op, a, b)
    if k == "UNARY_OPERATOR" and n.children and n.op in ("-", "+", "~"):
        a = fold_int(model, n.children[0], env, depth + 1)
        return None if a is None else {"-": -a, "+": a, "~": ~a}[n.op]
    return None


def _binop(op, a, b):
    try:
        if op == "/":
            return int(a / b) if b else None
        if op == "%":
            return a - b * int(a / b) if b else None
        return {"+": a + b, "-": a - b, "*": a * b, "<<": a << b, ">>": a >> b, "&": a & b, "|": a | b,
                "^": a ^ b}[op]
    except (KeyError, ValueError):
        return None


def fold_dim3(model: FileModel, node: Node | None, env: dict | None = None, depth: int = 0):
    """(x, y, z) of a launch-configuration expression: `256`, `dim3(32, 8)`, a never-modified `dim3 b(32, 8)` /
    `dim3 b = dim3(...)` / `dim3 b{...}` local, or anything `fold_int` folds; None otherwise."""
    if node is None or depth > 6:
        return None
    n = node.strip
    if n.kind == "CALL_EXPR" and n.spelling == "dim3":
        args = [a for a in n.args() if a.kind not in ("TYPE_REF", "NAMESPACE_REF")]
        if len(args) == 1 and "dim3" in (args[0].type or ""):
            return fold_dim3(model, args[0], env, depth + 1)
        vals = [fold_int(model, a, env) for a in args]
        if not vals or len(vals) > 3 or any(v is None or v <= 0 for v in vals):
            return None
        return tuple(vals + [1] * (3 - len(vals)))
    if n.kind == "DECL_REF_EXPR" and n.ref is not None and n.ref.kind == "VAR_DECL" and "dim3" in (n.type or ""):
        decl = n.ref
        if _members_written(decl):
            return None
        exprs = [c for c in decl.children if not c.kind.endswith("_ATTR") and c.kind not in ("TYPE_REF",
                                                                                               "NAMESPACE_REF")]
        return fold_dim3(model, exprs[-1], env, depth + 1) if exprs else None
    v = fold_int(model, n, env)
    return (v, 1, 1) if v is not None and v > 0 else None


def _members_written(decl: Node) -> bool:
    """`block.x = 64` or `block = ...` after the declaration makes its initial value unreliable."""
    fn = decl.enclosing("FUNCTION_DECL", "FUNCTION_TEMPLATE", "CXX_METHOD")
    for m in (fn.walk() if fn is not None else ()):
        if m.kind in ("BINARY_OPERATOR", "COMPOUND_ASSIGNMENT_OPERATOR") and m.children and \
                (m.kind != "BINARY_OPERATOR" or m.op == "="):
            t = m.children[0].strip
            if t.kind == "MEMBER_REF_EXPR" and t.children and t.children[0].strip.ref is decl:
                return True
            if t.kind == "DECL_REF_EXPR" and t.ref is decl:
                return True
        elif m.kind == "CALL_EXPR" and m.spelling == "operator=" and m.children and m.children[0].strip.ref is decl:
            return True
    return False


_TOKEN = re.compile(r"\s*(0[xX][0-9a-fA-F]+|\d+|[A-Za-z_]\w*|<<|>>|[-+*/%()&|^~])[uUlL]*")


def fold_text(model: FileModel, text: str, env: dict | None = None, depth: int = 0):
    """Integer value of a constant expression written as text (attribute arguments are not in the AST):
    numbers, object-like macros, constexpr/const variables and enumerators of the file, bound template
    parameters, + - * / % << >> & | ^ ~ and parentheses."""
    if depth > 8:
        return None
    out, pos, text = [], 0, text.strip()
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None:
            return None
        tok = m.group(1)
        pos = m.end()
        if tok[0].isdigit():
            out.append(str(int(tok, 0)))
        elif tok[0].isalpha() or tok[0] == "_":
            v = _name_value(model, tok, env, depth)
            if v is None:
                return None
            out.append(f"({v})")
        elif tok == "/":
            out.append("//")
        else:
            out.append(tok)
    if not out:
        return None
    try:
        v = eval(" ".join(out), {"__builtins__": {}}, {})  # noqa: S307 - digits and operators only
    except Exception:
        return None
    return _int(v)


def _name_value(model, name, env, depth):
    if env and name in env:
        return env[name]
    if name in model.macro_defs:
        s, e = model.macro_defs[name]
        body = model.source.slice(s, e)
        m = re.match(r"\s*" + re.escape(name) + r"(\(?)(.*)$", body, re.S)
        if m is None or m.group(1):
            return None                       # function-like macro
        return fold_text(model, m.group(2).split("//")[0], env, depth + 1)
    for n in model.of_kind("VAR_DECL") + model.of_kind("ENUM_CONSTANT_DECL"):
        if n.spelling == name:
            if n.kind == "ENUM_CONSTANT_DECL":
                try:
                    return n._cursor.enum_value
                except Exception:
                    return None
            exprs = [c for c in n.children if not c.kind.endswith("_ATTR") and c.kind != "TYPE_REF"]
            if exprs and "const" in (n.type or ""):
                return fold_int(model, exprs[-1], env)
    return None


# --- launch bounds ----------------------------------------------------------------------------------------------

class LaunchBounds(FrozenRecord):
    """`__launch_bounds__` arguments."""
    max_threads: int | None
    min_blocks: int | None            # CUDA: min blocks per SM; HIP: min warps (waves) per EU
    args: tuple                       # argument texts
    start: int
    end: int
    line: int

    def __init__(self, max_threads, min_blocks, args, start, end, line):
        _set = object.__setattr__
        _set(self, 'max_threads', max_threads)
        _set(self, 'min_blocks', min_blocks)
        _set(self, 'args', args)
        _set(self, 'start', start)
        _set(self, 'end', end)
        _set(self, 'line', line)


def launch_bounds(model: FileModel, fn: Function, env: dict | None = None) -> LaunchBounds | None:
    """`__launch_bounds__(T[, minBlocks[, maxBlocksPerCluster]])` (or `__attribute__((launch_bounds(...)))`)."""
    for c in fn.node.children:
        if not c.kind.endswith("_ATTR") or c.kind in ("CUDAGLOBAL_ATTR", "CUDADEVICE_ATTR", "CUDAHOST_ATTR"):
            continue
        t = c.text
        m = re.match(r"\s*(?:__launch_bounds__|launch_bounds)\s*\((.*)\)\s*$", t, re.S)
        if m is None:
            continue
        args = tuple(a.strip() for a in split_top_level(m.group(1)))
        vals = [fold_text(model, a, env) for a in args]
        return LaunchBounds(vals[0] if vals else None, vals[1] if len(vals) > 1 else None, args, c.start, c.end,
                            model.source.position(c.start)[0])
    return None


# --- annotations ----------------------------------------------------------------------------------------------

def site_kernel(site) -> str:
    """Kernel name of a launch site (dependent calls inside templates have an empty spelling)."""
    if site.kernel:
        return site.kernel
    callee = site.node.children[0] if site.node.children else None
    if callee is not None:
        for c in callee.walk():
            if c.kind == "OVERLOADED_DECL_REF" or (c.kind == "DECL_REF_EXPR" and c.spelling):
                return c.spelling
    return ""


def _template_args(callee: Node | None) -> list[Node]:
    """Non-type template argument expressions of `k<128, float>` (type arguments do not show)."""
    if callee is None:
        return []
    return [c for c in callee.children if c.kind not in ("OVERLOADED_DECL_REF", "TYPE_REF", "TEMPLATE_REF",
                                                          "NAMESPACE_REF")]


def _nontype_params(fn: Function) -> list[str]:
    return [c.spelling for c in fn.node.children if c.kind in ("TEMPLATE_NON_TYPE_PARAMETER",
                                                               "NON_TYPE_TEMPLATE_PARAMETER")]


def _host_envs(model: FileModel, fn: Function | None, depth: int = 0) -> list[dict]:
    """Template bindings under which a host function runs: {} for a plain function, one dict per call with
    constant template arguments for a function template (`run<128>(...)`)."""
    if fn is None or not fn.is_template:
        return [{}]
    params = _nontype_params(fn)
    envs = []
    for call in model.of_kind("CALL_EXPR"):
        if call.spelling != fn.name or not call.children:
            continue
        targs = _template_args(call.children[0])
        if len(targs) != len(params) or not params:
            continue
        caller = model.function_of(call)
        for outer in (_host_envs(model, caller, depth + 1) if depth < 2 else [{}]):
            vals = [fold_int(model, a, outer) for a in targs]
            if all(v is not None for v in vals):
                envs.append(dict(zip(params, vals)))
    return envs or [{}]


def _param_values(model: FileModel, site_fn: Function, node: Node) -> list:
    """One level of `void launch(dim3 block) { k<<<g, block>>>(); }` called as `launch(dim3(16, 16))`."""
    n = node.strip
    if n.kind == "CALL_EXPR" and n.spelling == "dim3":
        args = [a for a in n.args() if a.kind not in ("TYPE_REF", "NAMESPACE_REF")]
        if len(args) == 1:
            n = args[0].strip
    if n.kind != "DECL_REF_EXPR" or n.ref is None or n.ref.kind != "PARM_DECL" or site_fn is None:
        return []
    names = [p.name for p in site_fn.params]
    if n.spelling not in names:
        return []
    i = names.index(n.spelling)
    out = []
    for call in model.of_kind("CALL_EXPR"):
        if call.spelling == site_fn.name and call is not node:
            args = call.args()
            if len(args) == len(names):
                out.append(args[i])
    return out


def _kernel_function(model: FileModel, name: str) -> Function | None:
    idx = model.__dict__.get("_kernels_by_name")      # one index per model: a scan per launch was quadratic
    if idx is None or idx[0] != len(model.functions):
        by_name: dict = {}
        for f in model.functions:
            if f.is_kernel:
                by_name.setdefault(f.name, []).append(f)
        idx = model._kernels_by_name = (len(model.functions), by_name)
    cands = idx[1].get(name, [])
    with_body = [f for f in cands if f.body is not None]
    return (with_body or cands or [None])[0]


def site_shapes(model: FileModel, site, kernel: Function | None = None) -> list[tuple[Shape, dict]]:
    """(Shape, host template bindings) for each way one launch site's block folds (a templated host wrapper
    called with several constants gives several); [] when it does not fold."""
    if site.block is None:
        return []
    kernel = kernel or _kernel_function(model, site_kernel(site))
    kparams = _nontype_params(kernel) if kernel is not None else []
    callee = site.node.children[0] if site.node.children else None
    line = model.source.position(site.block.start)[0]
    out = []
    for env in _host_envs(model, site.function):
        block = fold_dim3(model, site.block, env)
        cands = [block] if block is not None else [fold_dim3(model, a) for a in
                                                   _param_values(model, site.function, site.block)]
        targs = _template_args(callee)
        binds = ()
        if kparams and len(targs) == len(kparams):
            vals = [fold_int(model, a, env) for a in targs]
            binds = tuple((p, v) for p, v in zip(kparams, vals) if v is not None)
        dyn = fold_int(model, site.shmem, env) if site.shmem is not None else 0
        for b in cands:
            if b is None or b[0] * b[1] * b[2] <= 0:
                continue
            s = Shape(b, "launch site", True, b[0] * b[1] * b[2], line, " ".join(site.block.text.split()),
                      binds, dyn, site.node)
            if all(s != o for o, _ in out):
                out.append((s, env))
    return out


def _site_shapes(model: FileModel, kernel: Function) -> tuple[list[Shape], bool]:
    """Shapes of the launch sites of `kernel`; the flag says whether every site folded."""
    shapes, all_known = [], True
    for site in _launches_of(model, kernel.name):
        if site.block is None:
            continue
        found = site_shapes(model, site, kernel)
        for s, _ in found:
            if s not in shapes:
                shapes.append(s)
        all_known = all_known and bool(found)
    return shapes, all_known


def _launches_of(model: FileModel, name: str) -> list:
    """The launch sites of kernel `name`, in model.launches order: one index per model rather than a scan of
    every launch per kernel (files with thousands of kernels and launches stay linear)."""
    idx = model.__dict__.get("_launches_by_site_kernel")
    if idx is None or idx[0] != len(model.launches):
        by: dict[str, list] = {}
        for site in model.launches:
            by.setdefault(site_kernel(site), []).append(site)
        idx = model._launches_by_site_kernel = (len(model.launches), by)
    return idx[1].get(name, [])


def block_shapes(model: FileModel, kernel, settings=None) -> list[Shape]:
    """Every known block shape of a kernel (several launch sites may differ); [UNKNOWN-like] when none."""
    fn = kernel if isinstance(kernel, Function) else _kernel_function(model, kernel)
    name = fn.name if fn is not None else str(kernel)
    cache = model.__dict__.setdefault("_block_shapes", {})
    key = (name, id(settings))
    if key in cache:
        return cache[key]
    cache[key] = out = _block_shapes(model, fn, name, settings)
    return out


def _block_shapes(model, fn, name, settings) -> list[Shape]:
    conf = (getattr(settings, "launch", None) or {}).get(name)
    if conf and conf.get("block"):
        b = tuple(int(x) for x in (list(conf["block"]) + [1, 1, 1])[:3])
        return [Shape(b, "config", True, b[0] * b[1] * b[2], None, "", (), conf.get("shared"))]
    if fn is None:
        return [UNKNOWN]
    ann = annotation_for(model, fn)
    if ann is not None:
        b = ann.block
        return [Shape(b, "annotation", True, b[0] * b[1] * b[2], ann.line, "", (), ann.shared)]
    shapes, _ = _site_shapes(model, fn)
    if shapes:
        return shapes
    lb = launch_bounds(model, fn)
    if lb is not None and lb.max_threads:
        return [Shape(None, "launch_bounds", False, min(lb.max_threads, MAX_THREADS), lb.line,
                      f"__launch_bounds__({', '.join(lb.args)})")]
    return [UNKNOWN]


def block_shape(model: FileModel, kernel, settings=None) -> Shape:
    """The block shape of a kernel (a Function or its name). With several different launch shapes the first
    is returned and the others are in `.alternatives`."""
    shapes = block_shapes(model, kernel, settings)
    if len(shapes) == 1:
        return shapes[0]
    first = shapes[0]
    return Shape(first.dims, first.source, first.exact, first.max_threads, first.line, first.text, first.bindings,
                 first.dynamic_shared, first.node, tuple(shapes[1:]))


def function_shapes(model: FileModel, fn: Function, settings=None) -> list[Shape]:
    """Shapes a function runs with: a kernel's own, or for a device function those of the kernels of this file
    that call it (directly or through other device functions)."""
    if fn.is_kernel:
        return block_shapes(model, fn, settings)
    cache = model.__dict__.setdefault("_function_shapes", {})
    key = (id(fn), id(settings))
    if key in cache:
        return cache[key]
    from porter.analysis.shared_access import callees
    out = []
    for k in model.kernels:
        if k.body is not None and any(g is fn for g in callees(model, k)[1:]):
            for s in block_shapes(model, k, settings):
                if s not in out:
                    out.append(s)
    if not out or any(not s.exact for s in out):
        out = [UNKNOWN] if not out else out
    cache[key] = out
    return out


# --- per launch site, per component (the translators' view) ---

_DIM3_CTORS = ("CALL_EXPR", "CXX_FUNCTIONAL_CAST_EXPR", "CXX_TEMPORARY_OBJECT_EXPR", "UNEXPOSED_EXPR",
               "CXX_CONSTRUCT_EXPR", "INIT_LIST_EXPR")


class LaunchShape(Record):
    """A launch site's block and grid."""
    block: list            # [x, y, z], None where unknown
    grid: list             # [text, text, text]: the CUDA grid expressions
    shmem: int | None      # dynamic shared bytes when constant
    shmem_text: str
    line: int

    def __init__(self, block, grid, shmem, shmem_text="0", line=0):
        self.block = block
        self.grid = grid
        self.shmem = shmem
        self.shmem_text = shmem_text
        self.line = line


def const_int(model, node):
    """An integer constant: what fold_int folds (the rules' view of the same expression: libclang's value,
    never-reassigned locals, arithmetic over them), else a constant affine form (macros, constexpr locals)."""
    if node is None:
        return None
    v = fold_int(model, node)
    if v is not None:
        return v
    from porter.analysis.affine import analysis
    p = analysis(model).poly(node)
    if p is not None and p.is_const() and p.constant.denominator == 1:
        return int(p.constant)
    return None


def _ctor_args(n):
    return [c for c in n.children if c.kind not in ("TYPE_REF", "NAMESPACE_REF", "TEMPLATE_REF")
            and not (c.kind == "DECL_REF_EXPR" and c.spelling == "dim3" and n.kind == "CALL_EXPR")]


def dim3_values(model, node, depth=0) -> list:
    """[x, y, z] of a dim3 / integer launch argument; None for components that are not constant."""
    unknown = [None, None, None]
    if node is None or depth > 8:
        return unknown
    n = node.strip
    v = const_int(model, n)
    if v is not None:
        return [v, 1, 1]
    if n.kind in _DIM3_CTORS:
        args = _ctor_args(n)
        if len(args) == 1 and ("dim3" in args[0].type or "uint3" in args[0].type):
            return dim3_values(model, args[0], depth + 1)
        if n.kind == "UNEXPOSED_EXPR" and len(args) == 1:
            return dim3_values(model, args[0], depth + 1)
        vals = [const_int(model, a) for a in args[:3]]
        return vals + [1] * (3 - len(vals))
    if n.kind == "DECL_REF_EXPR" and n.ref is not None and n.ref.kind == "VAR_DECL":
        decl = n.ref
        if _members_written(decl):
            return unknown
        init = [c for c in decl.children if c.kind not in ("TYPE_REF", "NAMESPACE_REF") and
                not c.kind.endswith("_ATTR")]
        if not init:
            return [1, 1, 1] if "dim3" in decl.type else unknown
        return dim3_values(model, init[-1], depth + 1)
    return unknown


def dim3_texts(model, node, depth=0) -> list:
    """Source text of each grid component ("1" for the defaulted ones)."""
    if node is None or depth > 8:
        return ["?", "1", "1"]
    n = node.strip
    if n.kind in _DIM3_CTORS:
        args = _ctor_args(n)
        if len(args) == 1 and ("dim3" in args[0].type or "uint3" in args[0].type):
            return dim3_texts(model, args[0], depth + 1)
        if n.kind == "UNEXPOSED_EXPR" and len(args) == 1:
            return dim3_texts(model, args[0], depth + 1)
        t = [a.text for a in args[:3]]
        return t + ["1"] * (3 - len(t))
    if n.kind == "DECL_REF_EXPR" and n.ref is not None and n.ref.kind == "VAR_DECL" and "dim3" in n.ref.type:
        init = [c for c in n.ref.children if c.kind not in ("TYPE_REF", "NAMESPACE_REF")]
        if init and not _members_written(n.ref):
            return dim3_texts(model, init[-1], depth + 1)
        return [f"{n.spelling}.x", f"{n.spelling}.y", f"{n.spelling}.z"]
    return [n.text, "1", "1"]


def launch_shapes(model, kernel_name: str) -> list[LaunchShape]:
    """The shape of each launch site of `kernel_name`, per component (None where not constant), for the
    translators' manifests and limits; block_shapes() above is the exact-or-nothing view the rules use."""
    out = []
    for ls in model.launches:
        if ls.kernel != kernel_name:
            continue
        shm = const_int(model, ls.shmem) if ls.shmem is not None else 0
        out.append(LaunchShape(dim3_values(model, ls.block), dim3_texts(model, ls.grid), shm,
                               ls.shmem.text if ls.shmem is not None else "0",
                               model.source.position(ls.node.start)[0]))
    return out
