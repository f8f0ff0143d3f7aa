"""Shared-memory accesses of one function under one block shape, enumerated thread by thread (exact index
ranges for CP703, exact collisions for CP702); what cannot be enumerated is recorded, so rules say "possible"."""
from __future__ import annotations

from porter.frontend.model import FileModel, Function, Node
from porter.analysis.barriers import facts
from porter.analysis.code import Code, Opaque, _join
from porter.analysis.syntax import for_parts
from porter.analysis.thread_code import GLOBALS, _CAP_ITER, _CAP_POINTS, _CAP_UNBOUNDED, Compiler, _compiled
from porter.record import Record


# --- enumeration ---------------------------------------------------------------------------------------------------

class Space(Record):
    """What one access evaluates to over a shape: per value code the (min, max) and witnesses, or a map
    value -> [first thread, a second thread or None] per scenario (iteration indices of barrier loops)."""
    ok: bool
    reason: str
    capped: bool                      # a bounded loop ran past the iteration cap: ranges are lower bounds
    unbounded: bool                   # a loop bounded by a kernel argument was tried for a few iterations only
    lo: list
    hi: list
    wlo: list
    whi: list
    maps: dict
    scen_loops: tuple                 # Loop indices whose iteration index keys `maps`
    threads: frozenset
    count: int
    warps: set                                  # warps (linear id // 32) of the threads that ran the access

    def __init__(self, ok, reason="", capped=False, unbounded=False, lo=None, hi=None, wlo=None, whi=None, maps=None,
                 scen_loops=(), threads=frozenset(), count=0, warps=None):
        self.ok = ok
        self.reason = reason
        self.capped = capped
        self.unbounded = unbounded
        self.lo = [] if lo is None else lo
        self.hi = [] if hi is None else hi
        self.wlo = [] if wlo is None else wlo
        self.whi = [] if whi is None else whi
        self.maps = {} if maps is None else maps
        self.scen_loops = scen_loops
        self.threads = threads
        self.count = count
        self.warps = set() if warps is None else warps


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
        self.acc = acc                      # porter.analysis.shared_access.SharedAccess (or ScalarAccess)
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
    from porter.analysis.shared_access import shared_memory
    comp = Compiler(model, analysis, fn, block, bindings, blockdim_known)
    out = [AccessInfo(comp, acc) for acc in shared_memory(model, analysis).accesses_of(fn)]
    out.extend(AccessInfo(comp, acc) for acc in scalar_accesses(model, fn))
    out.sort(key=lambda i: i.node.start)
    cache[key] = (comp, out)
    return comp, out


class ScalarAccess(Record):
    """A use of a scalar `__shared__` variable (`__shared__ int flag; flag = 1;`), shaped like a SharedAccess."""
    array: object
    node: Node
    function: Function
    subs: list
    direct: bool
    base_offset: object
    sub_polys: list

    def __init__(self, array, node, function, subs=None, direct=True, base_offset=None, sub_polys=None):
        self.array = array
        self.node = node
        self.function = function
        self.subs = [] if subs is None else subs
        self.direct = direct
        self.base_offset = base_offset
        self.sub_polys = [] if sub_polys is None else sub_polys

    @property
    def elem_size(self):
        return self.array.elem_size

    @property
    def full(self) -> bool:
        return True

    def offset(self, dims=None):
        from porter.analysis.affine import Poly
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
    from porter.analysis.shared_access import element_strides
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


def always_enters(comp: Compiler, loop_node: Node) -> bool:
    """A uniform `for` loop whose condition holds for its initial value in every iteration of the loops
    around it (`for (j = k >> 1; j > 0; ...)` inside `for (k = 2; ...)`)."""
    import re
    lp = _loop_of_stmt(comp, loop_node) if loop_node.kind == "FOR_STMT" else None
    if lp is None or lp.error is not None or lp.cond is None or lp.cond.unknowns or lp.init.unknowns or \
            lp.thread_dependent():
        return False
    src = re.sub(rf"\b{lp.var}\b", f"({lp.init.src})", lp.cond.src)
    probe = Code(f"_sel({src}, 1, 0)", frozenset(), (lp.cond.loops | lp.init.loops) - {lp.idx})
    sp = enumerate_access(comp, [probe], [], "range")
    return sp.ok and not sp.capped and not sp.unbounded and sp.count > 0 and sp.lo[0] == 1
