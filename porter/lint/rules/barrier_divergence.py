"""A block barrier (`__syncthreads()`) that not every thread of the block reaches.

## What it does
Flags `__syncthreads()`, `__syncthreads_count/and/or()` and cooperative-groups block barriers (`block.sync()`
on a `thread_block`, `grid.sync()`) that are
- inside an `if`, `switch`, loop, `?:` or `&&`/`||` operand whose condition can differ between the threads of a
  block: it depends on `threadIdx`, a lane or warp id, a shuffle, vote or atomic result, or a value loaded at a
  thread-dependent address (directly or through locals, also locals assigned under such a condition); or
- after a `return` taken under such a condition (`if (tid >= n) return; ... __syncthreads();`), or in a loop
  after a `break` / `continue` taken under such a condition.
A call of a device function of the same file that executes a block barrier is flagged at the call in the same
situations. The message names the condition and its line.

Conditions on `blockIdx`, `blockDim`, `gridDim`, kernel arguments and constants are the same for every thread
of the block and are not flagged; neither are `__syncthreads_or/and/count` results and `__shared__` variables
(one value per block), nor barriers in loops with such bounds (`for (int k = 0; k < K; k += TILE)`,
`for (int s = blockDim.x / 2; s > 0; s >>= 1)`).

## Why is this bad?
CUDA allows `__syncthreads()` in conditional code only when the condition evaluates identically across the
whole block; anything else is undefined behaviour. Recent NVIDIA GPUs count exited threads as arrived, so an
early `return` before a barrier often seems to work there. On AMD GPUs the same code deadlocks or lets the
barrier release early (the waves that left never arrive, or the barrier is counted per wavefront, not per
thread): pytorch/FBGEMM#5831 and #5857 hung on ROCm exactly this way. In Vulkan and OpenCL a `barrier()` in
non-uniform control flow is undefined as well (GLSL: "only in uniform control flow").

## Example
```cuda
__global__ void k(const float *in, float *out, int n) {
  __shared__ float s[256];
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;            // the tail block's last threads leave ...
  s[threadIdx.x] = in[i];
  __syncthreads();               // ... and never arrive here
  out[i] = s[255 - threadIdx.x];
}
```

## Use instead
```cuda
__global__ void k(const float *in, float *out, int n) {
  __shared__ float s[256];
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  s[threadIdx.x] = i < n ? in[i] : 0.0f;   // predicate the work, not the barrier
  __syncthreads();
  if (i < n) out[i] = s[255 - threadIdx.x];
}
```

## Fix safety
Safe fix for the common form, an `if (cond) return;` among the top-level statements of a kernel whose later
block barriers are all top-level statements too: the return becomes a flag (`cuport_live = false`) and each
stretch of statements between the barriers runs under `if (cuport_live) { ... }`, so the threads that returned
only arrive at the barriers. That is what NVIDIA GPUs do with exited threads, so the kernel computes the same
there, and it no longer hangs on AMD GPUs or breaks in Vulkan and OpenCL (the translators apply it). Not offered
when a stretch declares a variable a later stretch uses, or when a barrier is nested: no fix then, the work has
to be predicated by hand.

## References
- pytorch/FBGEMM#5831, pytorch/FBGEMM#5857 (early return before `__syncthreads()` deadlocks on ROCm),
  pytorch/pytorch#136007, tile-ai/tilelang#1026.
- GPUVerify (Betts, Chong, Donaldson, Qadeer, Thomson: "GPUVerify: a verifier for GPU kernels", OOPSLA 2012):
  barrier divergence, the barrier under a thread-dependent branch or loop.
- CUDA C++ Programming Guide, `__syncthreads()`: "allowed in conditional code but only if the conditional
  evaluates identically across the entire thread block".
"""
import re

from porter.diagnostics import Applicability, Edit, Fix
from porter.frontend.model import BARRIERS
from porter.analysis.syntax import for_parts
from porter.lint.helpers import call_target, function_at, variable_writes

CODE = "CP701"
_FUNCS = ("FUNCTION_DECL", "FUNCTION_TEMPLATE", "CXX_METHOD", "LAMBDA_EXPR")
_LOOPS = ("FOR_STMT", "WHILE_STMT", "DO_STMT", "CXX_FOR_RANGE_STMT")
# results that differ between the threads of a block
_VARYING_CALLS = ("__shfl", "__ballot", "__activemask", "__match", "__lane", "__any", "__all", "__reduce_",
                  "atomic")
_VARYING_MEMBERS = {"thread_rank", "thread_index", "meta_group_rank", "shfl", "shfl_down", "shfl_up", "shfl_xor",
                    "ballot", "any", "all", "match_any", "match_all"}
_UNIFORM_CALLS = {"__syncthreads_count", "__syncthreads_and", "__syncthreads_or"}
_GROUP_DECL = re.compile(r"\b(thread_block|grid_group|multi_grid_group)\b|\bthis_(thread_block|grid)\s*\(")
_MEMBER_SYNC = re.compile(r"(?:\.|->)\s*sync\s*$")
_NOT_BLOCK = re.compile(r"tiled_partition|thread_block_tile|coalesced|\bthread_group\b")


def _block_barrier(call):
    """Text naming the barrier when `call` is a block (or grid) barrier, else None."""
    name = call.spelling
    if name in BARRIERS:
        return call.text if call.spelled_here else f"{name}()"
    ch = call.children
    if not ch or ch[0].kind != "MEMBER_REF_EXPR" or name not in ("sync", ""):
        return None
    if _MEMBER_SYNC.search(ch[0].text) is None:
        return None
    obj = ch[0].children[0].strip if ch[0].children else None
    if obj is None:
        return None
    if obj.kind == "CALL_EXPR" and obj.callee in ("this_thread_block", "this_grid", "this_multi_grid"):
        return f"{obj.callee}().sync()"
    if obj.kind == "DECL_REF_EXPR" and obj.ref is not None and obj.ref.kind in ("VAR_DECL", "PARM_DECL"):
        decl = obj.ref
        stmt = decl.parent if decl.parent is not None and decl.parent.kind == "DECL_STMT" else decl
        text = stmt.text
        if _GROUP_DECL.search(text) and not _NOT_BLOCK.search(text):
            return f"{obj.spelling}.sync()"
    return None


def _guards(node, stop, for_cond):
    """(condition, statement) of each conditional construct that controls whether `node` runs, innermost first,
    up to the enclosing function (or `stop`, exclusive)."""
    child = node
    for p in node.ancestors():
        if p is stop or p.kind in _FUNCS:
            return
        k = p.kind
        ch = p.children
        if k in ("IF_STMT", "SWITCH_STMT", "WHILE_STMT") and len(ch) >= 2 and ch[0] is not child:
            yield ch[0], p
        elif k == "DO_STMT" and len(ch) == 2 and ch[0] is child:
            yield ch[1], p
        elif k == "FOR_STMT" and ch and ch[-1] is child:
            cond = for_cond(p)
            if cond is not None:
                yield cond, p
        elif k == "CONDITIONAL_OPERATOR" and len(ch) == 3 and ch[0] is not child:
            yield ch[0], p
        elif k == "BINARY_OPERATOR" and len(ch) == 2 and ch[1] is child and p.op in ("&&", "||"):
            yield ch[0], p
        child = p


class _Uniformity:
    """Whether a value can differ between the threads of one block (ctx.analysis.thread_dependent, refined for
    barriers: block-wide votes and `__shared__` variables are uniform, locals written under a thread-dependent
    condition and in-file functions returning thread-dependent values are not)."""

    def __init__(self, model):
        self.model = model
        self.shared = {id(s.node) for s in model.shared}
        self._var: dict = {}
        self._parm: dict = {}
        self._fn: dict = {}
        self._expr: dict = {}
        self._calls_by_name = None
        self._for: dict = {}

    def for_cond(self, loop):
        ch = loop.children
        if len(ch) == 4:
            return ch[1]
        if len(ch) <= 1:
            return None
        key = id(loop)
        if key not in self._for:
            self._for[key] = for_parts(loop)[1]
        return self._for[key]

    def varies(self, node) -> bool:
        key = id(node)
        r = self._expr.get(key)
        if r is None:
            self._expr[key] = False
            r = self._varies(node)
            self._expr[key] = r
        return r

    def _varies(self, node) -> bool:
        stack = [node]
        while stack:
            n = stack.pop()
            k = n.kind
            if k == "MEMBER_REF_EXPR":
                b = n.builtin()
                if b is not None:
                    if b[0] == "threadIdx":
                        return True
                    continue
            elif k == "CALL_EXPR":
                name = n.callee
                if name in _UNIFORM_CALLS:
                    continue
                if name.startswith(_VARYING_CALLS):
                    return True
                ch = n.children
                if ch and ch[0].kind == "MEMBER_REF_EXPR":
                    member = name or ch[0].text.rsplit(".", 1)[-1].rsplit(">", 1)[-1].strip()
                    if member in _VARYING_MEMBERS:
                        return True
                elif name and n.ref is not None and self._returns_varying(n):
                    return True
            elif k == "DECL_REF_EXPR":
                r = n.ref
                if r is not None:
                    if r.kind == "VAR_DECL" and self._var_varies(r):
                        return True
                    if r.kind == "PARM_DECL" and self._parm_varies(r):
                        return True
            stack.extend(n.children)
        return False

    def guarded(self, node, stop=None):
        """The innermost thread-dependent (condition, statement) controlling `node`, else None."""
        for cond, stmt in _guards(node, stop, self.for_cond):
            if self.varies(cond):
                return cond, stmt
        return None

    def _var_varies(self, decl) -> bool:
        key = id(decl)
        r = self._var.get(key)
        if r is not None:
            return r
        if key in self.shared or decl.enclosing(*_FUNCS) is None:
            self._var[key] = False      # one value for the block (or a file-scope variable)
            return False
        self._var[key] = False          # cycle guard: optimistic
        r = False
        exprs = [c for c in decl.children if not c.kind.endswith("_ATTR") and c.kind not in ("TYPE_REF",
                                                                                                "NAMESPACE_REF")]
        if exprs and self.varies(exprs[-1]):
            r = True
        else:
            for op, value in variable_writes(decl):
                if value is not None and self.varies(value):
                    r = True
                elif value is None and op.op == "&":
                    call = op.enclosing("CALL_EXPR")
                    r = call is not None and self.varies(call)
                if not r and self.guarded(op) is not None:
                    r = True      # assigned by some threads only
                if r:
                    break
        self._var[key] = r
        return r

    def _parm_varies(self, parm) -> bool:
        """A device-function parameter is thread dependent when a call in this file passes such a value."""
        key = id(parm)
        r = self._parm.get(key)
        if r is not None:
            return r
        self._parm[key] = False
        fn = parm.parent
        r = False
        if fn is not None and fn.kind in _FUNCS and not any(c.kind == "CUDAGLOBAL_ATTR" for c in fn.children):
            params = [c for c in fn.children if c.kind == "PARM_DECL"]
            i = next((j for j, c in enumerate(params) if c is parm), None)
            if i is not None:
                for call in self._calls_named(fn.spelling):
                    args = call.args()
                    g = call_target(self.model, call)
                    if i < len(args) and g is not None and g.node is fn and self.varies(args[i]):
                        r = True
                        break
        self._parm[key] = r
        return r

    def _calls_named(self, name):
        if self._calls_by_name is None:
            idx = {}
            names = {f.name for f in self.model.functions if f.body is not None}
            for c in self.model.of_kind("CALL_EXPR"):
                s = c.spelling
                if s in names:
                    idx.setdefault(s, []).append(c)
            self._calls_by_name = idx
        return self._calls_by_name.get(name, ())

    def _returns_varying(self, call) -> bool:
        f = call_target(self.model, call)
        if f is None or f.body is None:
            return False
        key = id(f.node)
        r = self._fn.get(key)
        if r is not None:
            return r
        self._fn[key] = False
        r = any(n.kind == "RETURN_STMT" and n.children and self.varies(n.children[0]) for n in f.body.walk())
        self._fn[key] = r
        return r


def _barrier_sites(model):
    """{id(function node): [(call node, barrier text, callee Function or None)]} for the device functions that
    execute a block barrier directly or through a call of an in-file function."""
    by_fn: dict = {}
    direct = []
    for c in model.of_kind("CALL_EXPR"):
        b = _block_barrier(c)
        if b is not None:
            direct.append((c, b))
    if not direct:
        return by_fn

    def function_of(n):
        f = function_at(n)
        return f if f is not None and f.is_device_code else None

    bfuncs = {}
    for c, b in direct:
        f = function_of(c)
        if f is not None:
            by_fn.setdefault(id(f.node), []).append((c, b, None))
            bfuncs.setdefault(id(f.node), (c, b))
    names = {f.name for f in model.functions if f.body is not None}
    calls = [c for c in model.of_kind("CALL_EXPR") if c.spelling in names]
    changed = True
    seen = set()
    while changed:
        changed = False
        for c in calls:
            if id(c) in seen:
                continue
            g = call_target(model, c)
            if g is None or id(g.node) not in bfuncs:
                continue
            seen.add(id(c))
            f = function_of(c)
            if f is None or f is g:
                continue
            by_fn.setdefault(id(f.node), []).append((c, bfuncs[id(g.node)][1], g))
            if id(f.node) not in bfuncs:
                bfuncs[id(f.node)] = bfuncs[id(g.node)]
                changed = True
    for v in by_fn.values():
        v.sort(key=lambda s: s[0].start)
    return by_fn


def _exits_by_function(model, keys):
    """{id(function node): [exit statements]} for the functions in `keys`."""
    out: dict = {}
    for kind in ("RETURN_STMT", "BREAK_STMT", "CONTINUE_STMT"):
        for e in model.of_kind(kind):
            f = function_at(e)
            if f is not None and id(f.node) in keys:
                out.setdefault(id(f.node), []).append(e)
    return out


def _exits(fn, stmts, uni):
    """Early exits taken by some threads only: (exit node, verb, thread-dependent condition, target loop of a
    `break` / `continue`, None for a `return`), in source order."""
    out = []
    for e in stmts:
        kind = e.kind
        if kind == "RETURN_STMT":
            target = None
        else:
            stops = _LOOPS + (("SWITCH_STMT",) if kind == "BREAK_STMT" else ())
            target = e.enclosing(*stops, *_FUNCS)
            if target is None or target.kind not in _LOOPS:
                continue       # `break` out of a switch, or outside any loop
        g = uni.guarded(e, stop=target)
        if g is None or (target is None and e.enclosing(*_FUNCS) is not fn.node):
            continue
        verb = {"RETURN_STMT": "return", "BREAK_STMT": "break", "CONTINUE_STMT": "continue"}[kind]
        out.append((e, verb, g[0], target))
    out.sort(key=lambda x: x[0].start)
    return out


def _exclusive(a, b) -> bool:
    """`a` and `b` sit in different branches of one `if` / `?:` (never both in one pass)."""
    anc = {}
    child = a
    for p in a.ancestors():
        anc[id(p)] = child
        child = p
    child = b
    for p in b.ancestors():
        ca = anc.get(id(p))
        if ca is not None:
            if p.kind in ("IF_STMT", "CONDITIONAL_OPERATOR") and ca is not child and p.children and \
                    ca is not p.children[0] and child is not p.children[0]:
                return True
            return False
        child = p
    return False


def _inside(node, region) -> bool:
    return region is not None and region.start <= node.start and node.end <= region.end and node is not region


def _skipped_by(site, exit_):
    e, verb, cond, target = exit_
    if verb == "return":
        if site.start >= e.end and not _exclusive(e, site):
            return True
        loop = e.enclosing(*_LOOPS, *_FUNCS)
        return loop is not None and loop.kind in _LOOPS and _inside(site, loop)
    if not _inside(site, target):
        return False
    if verb == "break":
        return True
    return site.start >= e.end and not _exclusive(e, site)


def _predicate_fix(ctx, fn, exit_node, sites):
    """The safe fix of an early `if (cond) return;` at the top level of a kernel body whose later barriers are
    top-level statements: the threads that returned only arrive at the barriers (see Fix safety), else None."""
    iff = exit_node.parent
    if iff is not None and iff.kind == "COMPOUND_STMT" and len(iff.children) == 1:
        iff = iff.parent
    body = fn.body
    if fn.kind != "global" or iff is None or iff.kind != "IF_STMT" or len(iff.children) != 2 or \
            iff.parent is not body or exit_node.children:
        return None
    stmts = body.children
    i = next(k for k, c in enumerate(stmts) if c is iff)
    later = stmts[i + 1:]
    barrier_ids = {id(c) for c in later if c.kind == "CALL_EXPR" and _block_barrier(c) is not None}
    for call, _b, _callee in sites:     # every barrier after the exit is a top-level statement of its own
        if call.start > iff.end and id(call) not in barrier_ids:
            return None
    segments, cur = [], []
    for c in later:
        if id(c) in barrier_ids:
            segments.append((cur, c))
            cur = []
        else:
            cur.append(c)
    segments.append((cur, None))
    for k, (seg, _bar) in enumerate(segments):
        mine = {id(v) for st in seg if st.kind == "DECL_STMT" for v in st.children if v.kind == "VAR_DECL"}
        for rest, _b in segments[k + 1:]:
            for st in rest:
                if any(n.kind == "DECL_REF_EXPR" and id(n.ref) in mine for n in st.walk()):
                    return None         # a variable of this stretch lives on past a barrier
    text = ctx.source.text
    flag = "cuport_live"
    while re.search(rf"\b{flag}\b", text):
        flag += "_"
    edits = [Edit(iff.start, iff.start, f"bool {flag} = true; "),
             Edit(exit_node.start, exit_node.end, f"{flag} = false", seen=text[exit_node.start:exit_node.end])]
    for seg, bar in segments:
        if not seg:
            continue
        edits.append(Edit(seg[0].start, seg[0].start, f"if ({flag}) {{ "))
        close = bar.start if bar is not None else body.end - 1
        edits.append(Edit(close, close, "} "))
    return Fix(Applicability.SAFE, "the threads that return only arrive at the barriers: the return becomes "
                                    f"`{flag} = false` and the work between the barriers runs under `if ({flag})`",
               tuple(edits))


_WHAT = {"IF_STMT": "branch", "SWITCH_STMT": "switch", "CONDITIONAL_OPERATOR": "`?:`",
         "BINARY_OPERATOR": "short-circuit operand"}


def check(ctx):
    model = ctx.model
    sites = _barrier_sites(model)
    if not sites:
        return
    uni = _Uniformity(model)
    line = lambda n: ctx.source.position(n.start)[0]  # noqa: E731
    fns = {id(f.node): f for f in model.functions}
    by_exit = None
    fixed: set = set()
    for key, lst in sites.items():
        fn = fns.get(key)
        if fn is None or fn.body is None:
            continue
        exits = None
        for call, barrier, callee in lst:
            what = f"`{barrier}`" if callee is None else f"`{call.text}` (it executes `{barrier}` in " \
                                                         f"`{callee.name}`)"
            g = uni.guarded(call)
            if g is not None:
                cond, stmt = g
                kind = _WHAT.get(stmt.kind, "loop")
                tail = "threads leave the loop after different numbers of iterations" if kind == "loop" else \
                    "the threads that do not take it never arrive"
                ctx.report(CODE, call, f"{what} runs under the thread-dependent {kind} condition `{cond.text}` "
                                       f"(line {line(cond)}): {tail}; a block barrier must be reached by every "
                                       f"thread of the block: undefined behaviour in CUDA, a hang or an early "
                                       f"release on AMD GPUs and in Vulkan; predicate the work, not the barrier")
                continue
            if exits is None:
                if by_exit is None:
                    by_exit = _exits_by_function(model, set(sites))
                exits = _exits(fn, by_exit.get(key, ()), uni)
            hit = next((x for x in exits if _skipped_by(call, x)), None)
            if hit is not None:
                e, verb, cond, _ = hit
                fix = None
                if verb == "return" and id(e) not in fixed:
                    fixed.add(id(e))    # one fix per exit, on its first barrier
                    fix = _predicate_fix(ctx, fn, e, lst)
                tail = "recent NVIDIA GPUs count exited threads as arrived, AMD GPUs (ROCm) hang or release the " \
                       "barrier early" if verb == "return" else \
                    "those threads skip it while the others wait: undefined behaviour, a hang or an early release " \
                    "on AMD GPUs and in Vulkan"
                ctx.report(CODE, call, f"{what} is not reached by the threads that `{verb}` at line {line(e)} "
                                       f"under the thread-dependent condition `{cond.text}` (line {line(cond)}); "
                                       f"a block barrier must be reached by every thread of the block: {tail}",
                           fix=fix)
