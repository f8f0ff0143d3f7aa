"""Barriers: which functions synchronise the block, where they are called, and per-function facts."""
from __future__ import annotations

from porter.frontend.model import BARRIERS, FileModel, Function, Node
from porter.record import Record

_BLOCK_BARRIERS = BARRIERS | {"__syncwarp", "__barrier_sync", "barrier", "sync", "__builtin_amdgcn_s_barrier"}


# --- barriers -----------------------------------------------------------------------------------------------------

class Facts(Record):
    """What one walk of a function body finds (walking Python nodes is cheaper than asking libclang where
    every node of a kind starts)."""
    calls: list                                        # CALL_EXPR nodes
    fors: list                                         # FOR_STMT nodes
    writes: dict                                       # id(decl) -> assignment / increment nodes
    refs: dict                                         # spelling -> DECL_REF_EXPR nodes
    dims: int                                          # thread dimensions used: 1 (x), 2 (y), 3 (z)
    jumps: list                                        # return / break / continue statements
    barriers: list | None                              # barrier calls (filled by barrier_calls)
    barrier_starts: list | None

    def __init__(self, calls=None, fors=None, writes=None, refs=None, dims=1, jumps=None, barriers=None,
                 barrier_starts=None):
        self.calls = [] if calls is None else calls
        self.fors = [] if fors is None else fors
        self.writes = {} if writes is None else writes
        self.refs = {} if refs is None else refs
        self.dims = dims
        self.jumps = [] if jumps is None else jumps
        self.barriers = barriers
        self.barrier_starts = barrier_starts


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


def warp_sync_width(node: Node) -> int | None:
    """Width of the group a warp-level sync orders: 32 for `__syncwarp()`, N for `tile.sync()` / `cg::sync(tile)`
    on a thread_block_tile<N>, 32 for a coalesced or run-time group; None for a block barrier or another call.
    A warp-level sync orders the threads of one group only, never two warps of the block."""
    name = node.spelling
    if name == "__syncwarp":
        return 32
    if name != "sync" or node.kind != "CALL_EXPR":
        return None
    from porter.analysis.coop_groups import group_kind, group_object
    obj = group_object(node)
    if obj is None:
        args = node.args()
        obj = args[0] if args else None
    g = group_kind(obj) if obj is not None else None
    if g is None:
        return None
    kind, n = g
    if kind == "tile":
        return n
    return 32 if kind in ("coalesced_group", "thread_group") else None


def barrier_functions(model: FileModel, block_only: bool = False) -> set:
    """Names of the file's functions that reach a block barrier (directly or through calls); with `block_only`,
    warp-level syncs (warp_sync_width) do not count."""
    key = "_block_barrier_functions" if block_only else "_barrier_functions"
    cached = getattr(model, key, None)
    if cached is not None:
        return cached
    fkinds = ("FUNCTION_DECL", "FUNCTION_TEMPLATE", "CXX_METHOD")
    calls = [(n, n.spelling) for n in model.of_kind("CALL_EXPR")]
    if block_only:
        calls = [(n, name) for n, name in calls if name not in _BLOCK_BARRIERS or warp_sync_width(n) is None]
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
    setattr(model, key, out)
    return out


def is_barrier_call(node: Node, bfuncs: set) -> bool:
    return node.kind == "CALL_EXPR" and (node.spelling in _BLOCK_BARRIERS or node.spelling in bfuncs)


def barrier_calls(fn: Function, bfuncs: set, block_only: bool = False) -> list:
    """Barrier calls in `fn`; with `block_only` (and `bfuncs` from barrier_functions(model, True)), only those
    that order the whole block."""
    f = facts(fn)
    if f.barriers is None:
        f.barriers = [n for n in f.calls if is_barrier_call(n, bfuncs)]
        f.barrier_starts = [n.start for n in f.barriers]
    if block_only:
        return [n for n in f.barriers if n.spelling in bfuncs or
                (n.spelling in _BLOCK_BARRIERS and warp_sync_width(n) is None)]
    return f.barriers


def warp_sync_widths(fn: Function, bfuncs: set, block_bfuncs: set) -> list:
    """Widths of the warp-level syncs `fn` calls (directly, or 32 through a function that reaches only those)."""
    out = []
    for n in barrier_calls(fn, bfuncs):
        w = warp_sync_width(n)
        if w is not None:
            out.append(w)
        elif n.spelling in bfuncs and n.spelling not in block_bfuncs and n.spelling not in _BLOCK_BARRIERS:
            out.append(32)
    return out


def contains_barrier(node: Node, bfuncs: set, fn: Function | None = None) -> bool:
    if fn is not None:
        barrier_calls(fn, bfuncs)
        a, b = node.start, node.end
        return any(a <= x < b for x in facts(fn).barrier_starts)
    return any(is_barrier_call(n, bfuncs) for n in node.walk())


