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
from dataclasses import dataclass, field
from pathlib import Path

from porter.frontend.lexer import split_top_level
from porter.frontend.model import FileModel, Function, Node

MAX_THREADS = 1024                    # CUDA / HIP / Vulkan-on-NVIDIA limit of threads per block
_ANNOTATION = re.compile(rb"cuport:\s*launch\b[^\n]*")


@dataclass(frozen=True)
class Shape:
    dims: tuple | None                # (x, y, z) when known
    source: str                       # 'launch site' | 'launch_bounds' | 'config' | 'annotation' | 'unknown'
    exact: bool
    max_threads: int = MAX_THREADS    # upper bound on x*y*z (launch bounds), the block size when exact
    line: int | None = None           # line of the launch site / annotation / attribute
    text: str = ""                    # how the block was written there (`block`, `dim3(32, 8)`, ...)
    bindings: tuple = ()              # ((template parameter, value), ...) of the kernel at that launch
    dynamic_shared: int | None = None  # bytes of dynamic shared memory when known (third launch argument)
    node: Node | None = field(default=None, compare=False, hash=False)
    alternatives: tuple = field(default=(), compare=False, hash=False)   # other shapes of the same kernel

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

@dataclass(frozen=True)
class LaunchBounds:
    max_threads: int | None
    min_blocks: int | None            # CUDA: min blocks per SM; HIP: min warps (waves) per EU
    args: tuple                       # argument texts
    start: int
    end: int
    line: int


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

@dataclass(frozen=True)
class Annotation:
    kernel: str | None
    block: tuple | None
    grid: tuple | None
    shared: int | None
    start: int
    end: int
    line: int
    error: str | None = None


_parser = None


def _lark():
    global _parser
    if _parser is None:
        from lark import Lark   # lazy: only files with an annotation pay for it
        _parser = Lark(Path(__file__).with_name("launch.lark").read_text(), parser="lalr",
                       propagate_positions=True)
    return _parser


def parse_annotation(text: str) -> dict:
    """`launch [kernel] block=(16,16) grid=... shared=N` -> {'kernel', 'block', 'grid', 'shared'}; raises
    ValueError with lark's message on a syntax error."""
    from lark.exceptions import LarkError, UnexpectedCharacters, UnexpectedEOF, UnexpectedToken
    text = text.strip()
    try:
        tree = _lark().parse(text)
    except UnexpectedEOF:
        raise ValueError(f"`{text}`: unexpected end of the annotation") from None
    except UnexpectedToken as exc:
        if exc.token.type == "$END":
            raise ValueError(f"`{text}`: unexpected end of the annotation") from None
        raise ValueError(f"`{text}`: unexpected `{exc.token}` at column {exc.column}; expected "
                         f"`launch [kernel] block=(x, y, z)`") from None
    except UnexpectedCharacters as exc:
        raise ValueError(f"`{text}`: unexpected `{text[exc.pos_in_stream]}` at column {exc.column}") from None
    except LarkError as exc:
        raise ValueError(str(exc).strip().splitlines()[0]) from None
    out = {"kernel": None, "block": None, "grid": None, "shared": None}
    for ch in tree.children:
        if ch is None:
            continue
        if not hasattr(ch, "data"):
            out["kernel"] = str(ch)
        elif ch.data in ("block", "grid"):
            toks = ch.children[0].children
            vals = [int(x) for t in toks for x in re.split(r"\s*[x*]\s*", str(t))]
            if not 1 <= len(vals) <= 3 or any(v <= 0 for v in vals):
                raise ValueError(f"{ch.data} needs 1 to 3 positive sizes")
            out[ch.data] = tuple(vals + [1] * (3 - len(vals)))
        elif ch.data == "shared":
            out["shared"] = int(ch.children[0])
        elif ch.data == "kernel":
            out["kernel"] = str(ch.children[0])
    return out


def annotations(model: FileModel) -> list[Annotation]:
    cached = getattr(model, "_launch_annotations", None)
    if cached is not None:
        return cached
    out = []
    data = model.source.data
    if b"cuport:" in data:
        for m in _ANNOTATION.finditer(data):
            line = model.source.position(m.start())[0]
            raw = data[m.start():m.end()].decode("utf-8", "replace")
            body = raw.split(":", 1)[1].split("*/")[0]
            try:
                p = parse_annotation(body)
            except ValueError as exc:
                out.append(Annotation(None, None, None, None, m.start(), m.end(), line, str(exc)))
                continue
            out.append(Annotation(p["kernel"], p["block"], p["grid"], p["shared"], m.start(), m.end(), line))
    model._launch_annotations = out
    return out


def _annotation_for(model: FileModel, fn: Function) -> Annotation | None:
    anns = [a for a in annotations(model) if a.error is None and a.block is not None]
    if not anns:
        return None
    for a in anns:
        if a.kernel is not None and a.kernel.split("::")[-1] == fn.name:
            return a
    prev_end = max([r.end for r in model.roots if r.end <= fn.node.start] or [0])
    for a in anns:
        if a.kernel is None and prev_end <= a.start < fn.node.end:
            return a
    return None


# --- launch sites ---------------------------------------------------------------------------------------------

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
    ann = _annotation_for(model, fn)
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
