"""Lanes exchange data through shared memory with no `__syncwarp()` between the write and the read.

## What it does
Within the straight-line code of one function, finds a write of shared memory at `s[f(lane)]` followed by a read
of the same array at `s[g(lane)]` where g differs from f (compared as polynomials of the indices: `s[lane]`
then `s[lane + 1]`, `s[31 - lane]`, `s[tid ^ 1]`), with no `__syncwarp()` or `__syncthreads()` on the way. The
read may be inside an `if` or loop that follows the write; writes inside a branch still count as pending after
it. Only exchanges between nearby lanes are reported (a constant distance of at most 32 elements, or a
distance that only depends on the lane index); reads of a fixed element (`s[0]`) and distances involving the
block size are block-wide exchanges, left to CP702. Tree-reduction steps are CP301's.

## Why is this bad?
Code written for pre-Volta GPUs assumed the 32 lanes of a warp execute each statement together, so a value
stored by one lane is visible to its neighbour on the next line. Independent thread scheduling (Volta and later)
and AMD's compiler give no such guarantee: the read may return the old value. On a 64-lane wavefront the
partner may also be a lane the 32-lane code never expected to share a wavefront with.

## Example
```cuda
buf[lane] = v;
float right = buf[lane + 1];
```

## Use instead
```cuda
buf[lane] = v;
__syncwarp();
float right = buf[lane + 1];        // or: __shfl_down_sync(~0ull, v, 1)
```

## Fix safety
Unsafe, and only sometimes offered: `__syncwarp();` is inserted before the reading statement when both indices
vary only through a lane index (so the partner is in the same warp) and the code is reached by whole warps. When
the partner may be in another warp (`s[threadIdx.x + 1]`), `__syncthreads()` is needed and no fix is offered.

## References
- kokkos/kokkos#9511, ORNL/HeCBench#91, GPUMD#36 (warp-synchronous shared-memory code without `__syncwarp`).
"""
from porter.analysis.shared_access import shared_memory
from porter.lint.context import fix, insert
from porter.analysis.syntax import for_parts
from porter.lint.helpers import contains_barrier, is_lane_id, reduction_step, warp_index_kind

CODE = "CP302"
_LOOPS = ("FOR_STMT", "WHILE_STMT", "DO_STMT")
_NESTING = ("IF_STMT", "SWITCH_STMT", "COMPOUND_STMT", "CASE_STMT", "DEFAULT_STMT") + _LOOPS


class _Exchange:
    def __init__(self, ctx, fn):
        self.ctx = ctx
        self.an = ctx.analysis
        self.sm = shared_memory(ctx.model, self.an)
        self.fn = fn
        self.acc = {id(a.node): a for a in self.sm.accesses_of(fn)}
        self._acc_pos = None        # (preorder positions, access nodes) of self.acc, sorted; False: no index
        self.lane_names: dict[str, bool] = {}
        self.varies: dict[str, bool] = {}
        self.reported: set[int] = set()

    # --- which accesses a statement makes ---
    def _access_nodes(self, node):
        """The access nodes inside `node`, in preorder (what a walk of `node` meets), without walking."""
        if not self.acc:
            return []
        model = self.ctx.model
        if self._acc_pos is None:
            self._acc_pos = False
            ok = model._preorder_ok
            if ok is None:
                ok = model._preorder()
            if ok:
                nodes = [a.node for a in self.acc.values()]
                if all(n._lo >= 0 for n in nodes):
                    nodes.sort(key=lambda n: n._lo)
                    self._acc_pos = ([n._lo for n in nodes], nodes)
        if self._acc_pos is False or node._lo < 0:
            return [n for n in node.walk() if id(n) in self.acc]
        import bisect
        pos, nodes = self._acc_pos
        return nodes[bisect.bisect_left(pos, node._lo):bisect.bisect_left(pos, node._hi)]

    def _accesses(self, node):
        reads, writes = [], []
        for n in self._access_nodes(node):
            a = self.acc[id(n)]
            child, p = n, n.parent
            while p is not None and p.kind in ("PAREN_EXPR", "UNEXPOSED_EXPR"):
                child, p = p, p.parent
            if p is not None and p.kind in ("BINARY_OPERATOR", "COMPOUND_ASSIGNMENT_OPERATOR") and \
                    p.children and p.children[0] is child and (p.kind != "BINARY_OPERATOR" or p.op == "="):
                writes.append(a)
                if p.kind == "COMPOUND_ASSIGNMENT_OPERATOR":
                    reads.append(a)
            elif p is not None and p.kind == "UNARY_OPERATOR" and p.op in ("++", "--", "post++", "post--"):
                writes.append(a)
                reads.append(a)
            else:
                reads.append(a)
        return reads, writes

    def _is_lane_var(self, name: str) -> bool:
        if name not in self.lane_names:
            self.lane_names[name] = any(n.spelling == name and is_lane_id(self.an, n)
                                        for n in self.ctx.model.kind_in(self.fn.body, "DECL_REF_EXPR"))
        return self.lane_names[name]

    def _thread_vars(self, poly):
        return {v for v in poly.variables() if v.startswith("threadIdx.") or self._is_lane_var(v)}

    # --- the exchange test ---
    def _partner(self, w, r):
        """(description, lane_local) when read r sees another lane's write w, else None."""
        if w.array is not r.array or w.node is r.node:
            return None
        fo, go = w.offset(), r.offset()
        if fo is None or go is None:
            return None
        if not self._thread_vars(fo) or not self._thread_vars(go):
            return None
        d = go - fo
        if not d.terms:
            return None
        lane_only = all(self._is_lane_var(v) or v == "warpSize" or not self._varies(v)
                        for v in fo.variables() | go.variables())
        if d.is_const():
            # the writer of s[g(t)] is the thread t' with f(t') = g(t): t' - t = D / (f's step per thread)
            step = next((fo.coeff(v) for v in sorted(self._thread_vars(fo)) if fo.coeff(v)), None)
            if not step or d.constant % step:
                return None
            k = int(d.constant / step)
            if not 0 < abs(k) <= 32:
                return None
            return f"the element of the thread {abs(k)} {'above' if k > 0 else 'below'}", lane_only
        if all(self._is_lane_var(v) or v == "warpSize" for v in d.variables()):
            return "an element of another lane of the warp", lane_only
        return None

    def _varies(self, var: str) -> bool:
        """A non-lane variable of an index that differs between threads (then the partner may be anywhere)."""
        if var not in self.varies:
            self.varies[var] = self._compute_varies(var)
        return self.varies[var]

    def _compute_varies(self, var: str) -> bool:
        if var.startswith("threadIdx."):
            return True
        if var.startswith(("blockIdx.", "blockDim.", "gridDim.")):
            return False
        if self.sm.lane_uniform(var, self.fn):
            return False
        # a warp id (`tid / 32`, `tid / warpSize`) is the same for the lanes of a warp
        return not any(n.kind == "DECL_REF_EXPR" and n.spelling == var and
                       (warp_index_kind(self.an, n) or ("", None))[0] == "warp" for n in self.fn.body.walk())

    def _check_reads(self, stmt, reads, pending):
        for r in reads:
            if id(r.node) in self.reported:
                continue
            go = r.offset()
            if go is not None and any(w.array is r.array and w.offset() == go for w in pending):
                continue        # the thread reads back what it wrote itself
            for w in reversed(pending):
                hit = self._partner(w, r)
                if hit is None:
                    continue
                self.reported.add(id(r.node))
                self._report(stmt, w, r, *hit)
                break

    def _report(self, stmt, w, r, partner, lane_local):
        ctx = self.ctx
        row = ctx.source.position(w.node.start)[0]
        msg = f"`{r.node.text}` reads {partner}, written through `{w.node.text}` at line {row} with no " \
              f"`__syncwarp()` or `__syncthreads()` in between: lanes are not in lockstep (Volta's independent " \
              f"scheduling, AMD), so it may read the old value"
        f = None
        if lane_local:
            f = self._fix(stmt)
        else:
            msg += "; the partner may be in another warp, which needs `__syncthreads()`"
        ctx.report(CODE, r.node, msg, fix=f)

    def _fix(self, stmt):
        if stmt.parent is None or stmt.parent.kind != "COMPOUND_STMT":
            return None
        if ctx_macro(stmt) or not _whole_warp_context(self.an, stmt):
            return None
        src = self.ctx.source
        line_start = src.data.rfind(b"\n", 0, stmt.start) + 1
        indent = src.data[line_start:stmt.start].decode("utf-8", "replace")
        text = f"__syncwarp();\n{indent}" if indent.strip() == "" else "__syncwarp(); "
        return fix("Insert `__syncwarp();` before the read", insert(stmt.start, text), unsafe=True)

    # --- straight-line walk ---
    def visit(self, stmt, pending):
        k = stmt.kind
        if k == "COMPOUND_STMT":
            for c in stmt.children:
                pending = self.visit(c, pending)
            return pending
        if k in ("IF_STMT", "SWITCH_STMT"):
            if not stmt.children:
                return pending
            cond, branches = stmt.children[0], stmt.children[1:]
            if contains_barrier(cond):
                return []
            reads, writes = self._accesses(cond)
            self._check_reads(stmt, reads, pending)
            pending = pending + writes
            out = list(pending)
            for b in branches:
                for a in self.visit(b, list(pending)):
                    if all(a is not x for x in out):
                        out.append(a)
            return out
        if k in _LOOPS:
            if not stmt.children:
                return pending
            body = stmt.children[-1] if k != "DO_STMT" else stmt.children[0]
            head = [c for c in stmt.children if c is not body]
            for h in head:
                if h.kind in ("DECL_STMT",) or not h.kind.endswith("_STMT"):
                    reads, writes = self._accesses(h)
                    self._check_reads(stmt, reads, pending)
                    pending = pending + writes
            after = self.visit(body, list(pending)) if body is not None else pending
            return pending + [a for a in after if all(a is not x for x in pending)]
        if k in ("CASE_STMT", "DEFAULT_STMT"):
            for c in stmt.children:
                if c.kind.endswith("_STMT") or c.kind.endswith("OPERATOR") or c.kind == "CALL_EXPR":
                    pending = self.visit(c, pending)
            return pending
        # a simple statement
        if contains_barrier(stmt):
            return []
        if _is_step(self.an, stmt):
            return pending + self._accesses(stmt)[1]
        reads, writes = self._accesses(stmt)
        self._check_reads(stmt, reads, pending)
        return pending + writes


def _is_step(an, stmt) -> bool:
    e = stmt
    if stmt.kind == "IF_STMT" and len(stmt.children) == 2:
        e = stmt.children[1]
    if e.kind == "COMPOUND_STMT" and len(e.children) == 1:
        e = e.children[0]
    return e.kind in ("COMPOUND_ASSIGNMENT_OPERATOR", "BINARY_OPERATOR") and reduction_step(an, e) is not None


def ctx_macro(node) -> bool:
    return node.model.macro_at(node.start, node.end) is not None


def _whole_warp_context(an, node) -> bool:
    """Every thread-dependent condition around `node` keeps or drops whole warps (`tid < 32`, `warp == 0`)."""
    child = node
    for p in node.ancestors():
        if p.kind in ("FUNCTION_DECL", "FUNCTION_TEMPLATE", "CXX_METHOD"):
            return True
        cond = None
        if p.kind in ("IF_STMT", "WHILE_STMT", "SWITCH_STMT") and p.children and p.children[0] is not child:
            cond = p.children[0]
        elif p.kind == "FOR_STMT" and p.children and p.children[-1] is child:
            cond = for_parts(p)[1]
        elif p.kind == "DO_STMT":
            cond = p.children[-1]
        if cond is not None and an.thread_dependent(cond):
            n = cond.strip
            ok = False
            if n.kind == "BINARY_OPERATOR" and len(n.children) == 2:
                v = n.children[1].value
                if n.op == "<" and (n.children[1].is_warp_size() or isinstance(v, int) and v > 0 and v % 32 == 0):
                    ok = True
                elif n.op in ("==", "!="):
                    k = warp_index_kind(an, n.children[0]) or warp_index_kind(an, n.children[1])
                    ok = k is not None and k[0] == "warp"
            if not ok:
                return False
        child = p
    return True


def check(ctx):
    sm = shared_memory(ctx.model, ctx.analysis)
    if not sm.accesses:
        return
    for fn in ctx.model.functions:
        if not fn.is_device_code or fn.body is None:
            continue
        ex = _Exchange(ctx, fn)
        if ex.acc:
            ex.visit(fn.body, [])
