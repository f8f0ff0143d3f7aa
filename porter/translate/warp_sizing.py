"""Per-warp storage and warp counts for targets whose warps are not 32 lanes (GLSL subgroups, OpenCL).

The portability fixes make lane and warp ids follow the real subgroup size; what the source still sizes for
warps of 32 must follow too, or the kernel is refused (CP104, at the array or loop):
- a shared array dimension indexed by a warp id (`part[warp]`, `bins[warp * BINS + b]`) gets enough slots for
  the smallest subgroup the target allows (`ceil(block / min_subgroup)` warps);
- a warp count written for 32 lanes (`w < 8`, `w < BLOCK / 32`, `lane < WARPS`) that bounds a loop or a guard
  over those slots becomes the real count `(blockDim.x + warpSize - 1) / warpSize`;
- a single-subgroup stage that reads one slot per lane (`v = lane < NW ? part[lane] : 0; v = warp_sum(v)`)
  first folds the slots beyond the subgroup into each lane's value (strided loop) when the combining operation
  is a recognisable sum / min / max; anything else that reads or writes the slots is refused;
- a one-warp inclusive scan of the warp totals (`if (warp == 0) { v = part[lane]; shfl_up scan; part[lane] = v; }`,
  marchingCubes) runs over chunks of subgroup-size totals with a carry (chunk_block), and a one-warp min / max
  tree over them (`v = part[lane]; shfl_down tree from NW / 2`) reads `part[lane % nwarps]` and folds the rest;
- a second run of slots at CUDA's warp count (`part[warp + NW]`) starts after the narrowest subgroup's count.
The emitter calls plan() once per kernel, resized() for each shared array, count() in x(), and fold_lines()
after each statement."""
from __future__ import annotations

import re
from dataclasses import dataclass, field, replace

from porter.analysis.syntax import for_parts
from porter.lint.helpers import array_subscripts, function_by_call, int_value, warp_index_kind
from porter.translate.kernel.ctype import BOOL, I32

# smallest warp a target may run: Vulkan subgroups on the devices we know (lavapipe, Mali, Adreno) go down to
# 4; OpenCL without sub-groups runs one-lane warps, and cl_khr_subgroups promises nothing better than 1
MIN_WARP = {"glsl": 4, "opencl": 1}
MAX_WARP = 128                       # widest Vulkan / OpenCL subgroup: lane-indexed arrays need this many slots
MAX_BLOCK = 1024                     # CUDA's largest block, when the launch is not known
_COMBINE = {"+=": "+", "|=": "|", "&=": "&", "^=": "^"}
_MINMAX = {"fmaxf": "max", "fmax": "max", "max": "max", "fminf": "min", "fmin": "min", "min": "min"}


@dataclass
class Fold:
    var: object          # the VAR_DECL that receives the lane's slot
    array: object        # the per-warp array's declaration
    lane: object         # the lane id node the slot was read with
    op: str              # + | & ^ max min
    first: object = None  # thread id node when the read is guarded by `tid < NW` (first subgroup only)
    block: object = None  # the compound statement of the read (folds of one block reduce together)


@dataclass
class Chunk:
    """`if (warp == 0) { T v = part[lane]; for (c = 1; c < NW; c *= 2) {shfl_up scan of v}; part[lane] = v; }`:
    an inclusive scan of the warp totals by one warp, which holds them all only while there are no more warps
    than lanes. The target runs it over chunks of subgroup-size totals with a carry (see chunk_block)."""
    block: object                 # the compound statement
    reads: list                   # (VAR_DECL v, array decl, subscript node, lane index node)
    loop: object                  # the scan loop
    writes: list                  # (statement, array decl, subscript node, lane index node)
    base: str = ""                # the chunk loop variable, set while emitting


@dataclass
class Plan:
    min_warp: int
    block: int
    arrays: dict = field(default_factory=dict)    # id(decl) -> {dim: new size}
    counts: dict = field(default_factory=dict)    # id(node) -> node: a 32-lane warp count to replace
    folds: dict = field(default_factory=dict)     # id(statement) -> Fold
    report: list = field(default_factory=list)    # manifest entries
    handled: list = field(default_factory=list)   # declarations of the per-warp arrays sized here
    taken: list = field(default_factory=list)     # counts replaced and lane reads folded (their CP104 rows)
    extern_slots: dict = field(default_factory=dict)  # id(decl) -> elements a dynamic per-warp array needs
    guards: dict = field(default_factory=dict)    # id(`tid < NW` node) -> (tid node, lane node)
    chunks: dict = field(default_factory=dict)    # id(compound) -> Chunk: a one-warp scan of the warp totals
    chunk_accs: dict = field(default_factory=dict)  # id(subscript) -> Chunk: its reads and writes `part[lane]`
    subst: dict = field(default_factory=dict)     # id(node) -> ("lane", Chunk) | ("ws",) | ("slot", int) | ...
    mm_folds: dict = field(default_factory=dict)  # id(last read statement) -> [(var, array, offset, op)]
    busy: bool = False


def _strip(n):
    n = n.strip
    while n.kind in ("PAREN_EXPR", "UNEXPOSED_EXPR") and n.children:
        n = n.children[-1].strip
    return n


def _split(an, idx):
    """(slot, stride, rest) when `idx` is `slot`, `slot * K`, `K * slot` (rest None) or one of those `+ rest`;
    else (idx, 1, None)."""
    n = _strip(idx)
    if n.kind == "BINARY_OPERATOR" and n.op == "+" and len(n.children) == 2:
        for a, b in (n.children, n.children[::-1]):
            s, k = _scaled(a)
            if k is not None and _is_slot(an, s):
                return s, k, b
    s, k = _scaled(n)
    return (s, k, None) if k is not None else (n, 1, None)


def _decompose(an, idx):
    """(slot, stride) of `idx` as _split reads it."""
    return _split(an, idx)[:2]


def _scaled(n):
    n = _strip(n)
    if n.kind == "BINARY_OPERATOR" and n.op == "*" and len(n.children) == 2:
        a, b = n.children
        if int_value(b) is not None and int_value(a) is None:
            return _strip(a), int_value(b)
        if int_value(a) is not None and int_value(b) is None:
            return _strip(b), int_value(a)
        return n, None
    return n, 1


def _is_slot(an, s):
    k = warp_index_kind(an, s)
    return (k is not None and k[0] == "warp") or s.kind == "DECL_REF_EXPR"


def _uses_warp_size(an, n, depth=0) -> bool:
    """`n` is computed from warpSize (through single-assignment locals too)."""
    for c in n.walk():
        if c.is_warp_size():
            return True
        if c.kind == "DECL_REF_EXPR" and c.ref is not None and depth < 4:
            d = an.definition(c.ref)
            if d is not None and _uses_warp_size(an, d, depth + 1):
                return True
    return False


def _count_32(e, size: int, block: int) -> bool:
    """`e` is a warp count for 32-lane warps: `N / 32`, `N >> 5`, or a constant equal to the slots or the
    launch's warp count."""
    n = _strip(e)
    if n.kind == "BINARY_OPERATOR" and len(n.children) == 2 and int_value(n.children[0]) is not None:
        r = int_value(n.children[1])
        if (n.op == "/" and r == 32) or (n.op == ">>" and r == 5):
            return True
    v = int_value(e)
    return v is not None and v in (size, -(-block // 32))


def _is_lane(an, n) -> bool:
    k = warp_index_kind(an, n)
    return k is not None and k[0] == "lane"


def _is_thread_x(an, n) -> bool:
    p = an.poly(n)
    return p is not None and p.terms == {("threadIdx.x",): 1} and not getattr(p, "const", 0)


def _same(an, a, b) -> bool:
    a, b = _strip(a), _strip(b)
    if a.kind == "DECL_REF_EXPR" and b.kind == "DECL_REF_EXPR":
        return a.ref is not None and a.ref is b.ref
    return " ".join(a.text.split()) == " ".join(b.text.split())


def _bound(an, cond, slot):
    """C when `cond` (or one of its && conjuncts) is `slot < C` / `C > slot`."""
    n = _strip(cond)
    if n.kind == "BINARY_OPERATOR" and n.op == "&&" and len(n.children) == 2:
        return _bound(an, n.children[0], slot) or _bound(an, n.children[1], slot)
    if n.kind == "BINARY_OPERATOR" and len(n.children) == 2:
        a, b = n.children
        if n.op == "<" and _same(an, a, slot):
            return b
        if n.op == ">" and _same(an, b, slot):
            return a
    return None


def _guard(an, sub, slot, stop):
    """The bound C of the innermost `?:` or `if` around `sub` that tests `slot < C`, with the statement that
    holds it; (None, None) when there is none."""
    cur, p = sub, sub.parent
    while p is not None and p is not stop:
        if p.kind == "CONDITIONAL_OPERATOR" and len(p.children) == 3 and cur is p.children[1]:
            c = _bound(an, p.children[0], slot)
            if c is not None:
                return c, p
        if p.kind == "IF_STMT" and len(p.children) >= 2 and cur is p.children[1]:
            c = _bound(an, p.children[0], slot)
            if c is not None:
                return c, p
        cur, p = p, p.parent
    return None, None


def _loop_of(var_decl, sub, stop):
    """The FOR_STMT around `sub` whose induction variable is `var_decl`, as (loop, init, cond)."""
    p = sub.parent
    while p is not None and p is not stop:
        if p.kind == "FOR_STMT":
            init, cond, _inc, _body = for_parts(p)
            if init is not None and any(c.kind == "VAR_DECL" and c is var_decl for c in init.walk()):
                return p, init, cond
        p = p.parent
    return None, None, None


def _init_value(var_decl):
    exprs = [c for c in var_decl.children if not c.kind.endswith("_ATTR") and c.kind != "TYPE_REF"]
    return int_value(exprs[-1]) if exprs else None


def _block_threads(em) -> int:
    blk = em.launch.block if em.launch is not None else None
    if blk and all(isinstance(v, int) for v in blk):
        return blk[0] * blk[1] * blk[2]
    return MAX_BLOCK


def _min_warp(em) -> int | None:
    name = em.t.name
    if name == "opencl":
        return 1
    return MIN_WARP.get(name)


def _shared_within(model, starts) -> list:
    """The shared arrays declared at file scope or inside one of the [a, b) ranges, in model.shared order: one
    index per model (by declaration offset) rather than a scan of the file's arrays per kernel."""
    import bisect
    idx = model.__dict__.get("_shared_by_start")
    if idx is None or idx[0] != len(model.shared):
        order = sorted(range(len(model.shared)), key=lambda i: model.shared[i].node.start)
        idx = model._shared_by_start = (len(model.shared), order, [model.shared[i].node.start for i in order],
                                        [i for i, s in enumerate(model.shared) if s.function is None])
    _, order, keys, file_scope = idx
    picked = set(file_scope)
    for a, b in starts:
        picked.update(order[bisect.bisect_left(keys, a):bisect.bisect_left(keys, b)])
    return [model.shared[i] for i in sorted(picked)]


def plan(em) -> Plan | None:
    """What to resize, replace and fold in this kernel; refuses (CP104) what it cannot size."""
    mw = _min_warp(em)
    if mw is None:
        return None
    an, model = em.an, em.model
    fns = em._reachable(em.fn)
    starts = [(f.node.start, f.node.end) for f in fns.values()]
    pl = Plan(mw, _block_threads(em))
    for s in _shared_within(model, starts):
        if s.extern:
            _extern_per_warp(em, pl, s, starts)
            continue
        dims = [d for d in em.decl_type(s.node).dims] if em.decl_type(s.node).kind == "array" else []
        if not dims or any(not isinstance(d, int) for d in dims):
            continue
        subs = [(acc, idx) for acc, idx in array_subscripts(model, s.node)
                if any(a <= acc.start < b for a, b in starts)]
        for d, size in enumerate(dims):
            parts = [(acc, idx[d], _decompose(an, idx[d])) for acc, idx in subs if len(idx) > d]
            warp = [p for p in parts if (lambda k: k is not None and k[0] == "warp")(warp_index_kind(an, p[2][0]))]
            if warp:
                _per_warp(em, pl, s, d, size, parts, warp[0][2][1])
            elif size == 32 and mw > 1 and any(_is_lane(an, p[1]) for p in parts):
                # one slot per lane (`s[lane]`): a subgroup may have up to MAX_WARP lanes
                pl.arrays.setdefault(id(s.node), {})[d] = MAX_WARP
                pl.handled.append(s.node)
                pl.report.append({"array": s.name, "dimension": d, "cuda_size": size, "size": MAX_WARP,
                                  "indexed_by": "lane id", "max_subgroup_size": MAX_WARP})
        _through_pointer(em, s, starts)
    _global_warp_ids(em, fns)
    if (pl.arrays or pl.extern_slots) and em.t.name == "glsl":
        em.min_subgroup = max(em.min_subgroup or 0, mw)
    return pl


def _global_warp_ids(em, fns):
    """`blockIdx.x * WARPS + threadIdx.x / warpSize` with WARPS a constant: a global warp id that counts the
    warps of 32 lanes a block has (bmf's `WARPSPERBLOCK` of a `WARPSPERBLOCK * 32` block). With narrower
    subgroups a block has more warps and the ids of neighbouring blocks overlap (rows done twice, others never):
    refused (CP104) at the expression. `blockIdx.x * (blockDim.x / warpSize) + ...` is not a constant count."""
    an, model = em.an, em.model
    for f in fns.values():
        if f.body is None:
            continue
        for n in model.kind_in(f.body, "BINARY_OPERATOR"):
            if n.op != "+" or len(n.children) != 2:
                continue
            for a, b in (n.children, n.children[::-1]):
                k = warp_index_kind(an, _strip(a))
                if k is None or k[0] != "warp":
                    continue
                x, count = _scaled(b)
                if count is None or count == 1 or int_value(x) is not None or \
                        not re.search(r"\bblockIdx\b", x.text):
                    continue
                em.fail(n, f"the warp id `{_short(n, 70)}` counts {count} warps of 32 lanes per block; subgroups "
                           f"here can be as narrow as {_min_warp(em)} lane(s), so a block has more warps and the "
                           "ids of neighbouring blocks overlap: count them with `blockDim.x / warpSize`",
                        code="CP104")


def _through_pointer(em, s, starts):
    """A shared array handed to a device function whose pointer parameter is indexed by a warp id there
    (`blockReduceSum(v, part)` writing `part[threadIdx.x / warpSize]`): per-warp storage that the resizing
    and the slot-loop rewriting above, which follow the array's own name, never see; with subgroups
    narrower than 32 lanes its writes run past it. Refused (CP104) at the call."""
    an, model = em.an, em.model
    for ref in model.refs_to(s.node):
        if not any(a <= ref.start < b for a, b in starts):
            continue
        cur, p = ref, ref.parent
        while p is not None and p.kind in ("PAREN_EXPR", "UNEXPOSED_EXPR"):
            cur, p = p, p.parent
        if p is None or p.kind != "CALL_EXPR":
            continue
        args = p.args()
        pos = next((i for i, a in enumerate(args) if a is cur), None)
        callee = function_by_call(model, p)
        if pos is None or callee is None or callee.body is None or pos >= len(callee.params):
            continue
        param = callee.params[pos]
        for acc, idx in array_subscripts(model, param.node):
            k = warp_index_kind(an, _decompose(an, idx[0])[0])
            if k is not None and k[0] == "warp":
                _refuse(em, p, s, f"`{callee.name}` indexes it through its parameter `{param.name}` by a warp id "
                                  f"(`{_short(acc)}`), where its slots cannot be followed")


def _extern_per_warp(em, pl, s, starts):
    """`extern __shared__ T part[]` indexed by a warp id: the launch sized it for warps of 32 lanes (host code
    such as `threads / 32 * sizeof(T)`); the target gets at least one slot per narrowest subgroup (GLSL sizes
    the shared array, OpenCL declares a __local array of its own), and the loops over it are checked as for a
    static per-warp array."""
    an = em.an
    subs = [(acc, idx) for acc, idx in array_subscripts(em.model, s.node)
            if any(a <= acc.start < b for a, b in starts) and idx]
    parts = [(acc, idx[0], _decompose(an, idx[0])) for acc, idx in subs]
    warp = [p for p in parts if (lambda k: k is not None and k[0] == "warp")(warp_index_kind(an, p[2][0]))]
    if not warp:
        return
    stride = warp[0][2][1]
    _per_warp(em, pl, s, 0, stride * -(-pl.block // 32), parts, stride)
    pl.arrays.pop(id(s.node), None)
    pl.report = [r for r in pl.report if r.get("array") != s.name]
    need = pl.extern_slots[id(s.node)] = stride * -(-pl.block // pl.min_warp)
    pl.report.append({"array": s.name, "dimension": 0, "cuda_size": "launch", "min_size": need,
                      "indexed_by": "warp id", "min_subgroup_size": pl.min_warp, "max_block_threads": pl.block})


def extern_slots(em, decl):
    """Elements a dynamic per-warp shared array needs on this target (None: not per-warp)."""
    pl = getattr(em, "warp_plan", None)
    return pl.extern_slots.get(id(decl)) if pl is not None else None


def _refuse(em, node, s, why, fold=False):
    fix = ("sum the slots with a strided loop (`for (w = lane; w < nwarps; w += warpSize)`) before the subgroup "
           "reduction" if fold else "index it with `/ warpSize` and bound every loop over its slots by "
           "`blockDim.x / warpSize`")
    em.fail(node, f"per-warp shared array `{s.name}` is sized for warps of 32 lanes and {why}; subgroups here "
                  f"can be as narrow as {_min_warp(em)} lane(s), so cuport cannot re-size it: {fix}", code="CP104")


def _per_warp(em, pl, s, d, size, parts, stride):
    an = em.an
    fold_reads = []
    chunked = False
    for acc, ix, (slot, k) in parts:
        if id(acc) not in pl.chunk_accs and _is_lane(an, slot) and stride == 1 and int_value(ix) is None:
            _plan_chunk(em, pl, acc)
            if id(acc) not in pl.chunk_accs:
                _plan_minmax(em, pl, acc)
        if id(acc) in pl.chunk_accs and isinstance(pl.chunk_accs[id(acc)], Chunk):
            chunked = True
    consts, packed = [], []
    for acc, ix, (slot, k) in parts:
        if id(acc) in pl.chunk_accs:
            continue
        if chunked and int_value(ix) is not None and _scratch(pl, parts, acc, int_value(ix)):
            consts.append(ix)      # `sums[31]`: a scratch slot, moved past our warp slots below
            continue
        if _warp_minus(an, acc, slot):
            continue
        if k != stride and int_value(ix) is None:
            _refuse(em, acc, s, f"`{_short(acc)}` strides it by {k}, the warp id by {stride}")
        if int_value(ix) is not None:
            if int_value(ix) >= stride:
                _refuse(em, acc, s, f"`{_short(acc)}` names the slot of one warp by number")
            continue
        kind = warp_index_kind(an, slot)
        rest = _split(an, ix)[2] if stride == 1 else None
        if rest is not None:
            # `part[wid + NW]`: a second run of slots after CUDA's warp count (min and max packed in one
            # array): with more warps it must start after all of them
            c = _strip(rest)
            dfn = an.definition(c.ref) if c.kind == "DECL_REF_EXPR" and c.ref is not None else None
            if kind is None or kind[0] != "warp" or not (_count_32(rest, -(-pl.block // 32), pl.block) or
                                                         (dfn is not None and _count_32(dfn, 0, pl.block))):
                _refuse(em, acc, s, f"`{_short(acc)}` offsets the slot by `{_short(rest)}`, which cuport does not "
                                    f"re-size for more warps (a second run of slots after the warp count)")
            packed.append(rest)
            continue
        if kind is not None and kind[0] == "warp":
            continue
        ref = slot.ref if slot.kind == "DECL_REF_EXPR" else None
        loop, init, cond = _loop_of(ref, acc, em.fn.node) if ref is not None else (None, None, None)
        if loop is not None:
            c = _bound(an, cond, slot) if cond is not None else None
            if c is not None and _uses_warp_size(an, c):
                continue      # `for (w = lane; w < nwarps; w += warpSize)`: already the real count
            if c is None or _init_value(ref) != 0:
                _refuse(em, loop, s, f"the loop over its slots `{_short(loop, 60, True)}` is not "
                                     f"`for ({slot.text} = 0; {slot.text} < COUNT; ...)`")
            _count(em, pl, s, c, size // stride, loop)
            continue
        c, holder = _guard(an, acc, slot, em.fn.node)
        if c is None and _is_lane(an, slot):
            tg = _thread_guard(em, pl, s, acc, slot)
            if tg is not None:
                fold_reads.append((acc, slot, tg))
                continue
        if c is None:
            _refuse(em, acc, s, f"`{_short(acc)}` reads a slot by `{slot.text}` with no bound on the number of "
                                f"warps")
        _count(em, pl, s, c, size // stride, holder)
        if _is_lane(an, slot):
            fold_reads.append((acc, slot, None))
        elif not _is_thread_x(an, slot):
            _refuse(em, acc, s, f"`{_short(acc)}` indexes it by `{slot.text}`, neither a warp, lane nor "
                                f"thread id")
    pl.handled.append(s.node)
    warps = -(-pl.block // pl.min_warp)
    new = max(size, stride * warps)
    packed += [r for acc, _ix, _d in parts for r in [pl.chunk_accs.get(id(acc))]
               if isinstance(r, tuple) and r[0] == "minmax" and r[1] is not None for r in [r[1]]]
    if packed:
        for r in packed:
            for m in _chain(r):
                pl.subst[id(m)] = ("slot", warps)
        new = max(new, 2 * warps)
        if 2 * warps > size and size < 2 * -(-pl.block // 32):
            _refuse(em, packed[0], s, f"it holds {size} slots, fewer than two runs of the block's warps")
    if chunked:
        # the chunks of one scan reach the next multiple of the subgroup size; scratch slots come after
        slots = max(-(-(-(-pl.block // w)) // w) * w for w in _sizes(pl.min_warp))
        low = min([int_value(ix) for ix in consts] + [-(-pl.block // 32)])
        new = max(new, slots + size - low)
        for ix in consts:
            pl.subst[id(ix)] = ("slot", slots + int_value(ix) - low)
    if new != size:
        pl.arrays.setdefault(id(s.node), {})[d] = new
        pl.report.append({"array": s.name, "dimension": d, "cuda_size": size, "size": new,
                          "indexed_by": "warp id", "min_subgroup_size": pl.min_warp,
                          "max_block_threads": pl.block, **({"second_stage": "chunked scan"} if chunked else {})})
    if fold_reads and warps > pl.min_warp:
        for acc, slot, first in fold_reads:
            _plan_fold(em, pl, s, acc, slot, stride, first)
    pl.taken.extend(acc for acc, _slot, _first in fold_reads)     # folded, or no more warps than lanes


def _scratch(pl, parts, acc, c) -> bool:
    """Slot `c` named by number is scratch, not a warp's: past CUDA's warp slots, or (`sums[31]` with 32
    warps) first reached by a plain store after the chunked scan, outside any loop, so no read sees a warp's
    total there."""
    if c >= -(-pl.block // 32):
        return True
    same = sorted((a for a, ix, _d in parts if int_value(ix) == c), key=lambda a: a.start)
    first = same[0]
    ends = [ch.block.end for ch in pl.chunks.values()]
    if not ends or first.start < max(ends):
        return False
    cur, p = first, first.parent
    while p is not None and p.kind in ("PAREN_EXPR", "UNEXPOSED_EXPR"):
        cur, p = p, p.parent
    if p is None or p.kind != "BINARY_OPERATOR" or p.op != "=" or cur is not p.children[0]:
        return False
    while p is not None and p.kind not in ("FUNCTION_DECL", "FUNCTION_TEMPLATE"):
        if p.kind in ("FOR_STMT", "WHILE_STMT", "DO_STMT"):
            return False
        p = p.parent
    return True


def _sizes(mw):
    """The subgroup sizes a target may run, from its narrowest up to MAX_WARP (powers of two)."""
    w = mw
    while w <= MAX_WARP:
        yield w
        w *= 2


def _warp_minus(an, acc, slot) -> bool:
    """`part[w - 1]` with w a warp id, under `if (w != 0)` / `if (w > 0)`: a slot of an existing warp."""
    n = _strip(slot)
    if n.kind != "BINARY_OPERATOR" or n.op != "-" or len(n.children) != 2 or int_value(n.children[1]) != 1:
        return False
    w = _strip(n.children[0])
    k = warp_index_kind(an, w)
    if k is None or k[0] != "warp":
        return False
    cur, p = acc, acc.parent
    while p is not None and p.kind not in ("FUNCTION_DECL", "FUNCTION_TEMPLATE"):
        if p.kind == "IF_STMT" and len(p.children) >= 2 and cur is p.children[1]:
            c = _strip(p.children[0])
            if c.kind == "BINARY_OPERATOR" and len(c.children) == 2 and _same(an, c.children[0], w) and \
                    ((c.op in ("!=", ">") and int_value(c.children[1]) == 0) or
                     (c.op == ">=" and int_value(c.children[1]) == 1)):
                return True
        cur, p = p, p.parent
    return False


def _is_warp0(an, cond) -> bool:
    c = _strip(cond)
    if c.kind != "BINARY_OPERATOR" or c.op != "==" or len(c.children) != 2:
        return False
    for a, b in (c.children, c.children[::-1]):
        k = warp_index_kind(an, _strip(a))
        if k is not None and k[0] == "warp" and int_value(b) == 0:
            return True
    return False


def _lane_subscript(an, n):
    """(array decl, subscript, index) when `n` is `part[lane]` for a shared array."""
    n = _strip(n)
    if n.kind != "ARRAY_SUBSCRIPT_EXPR" or len(n.children) != 2:
        return None
    a = _strip(n.children[0])
    if a.kind != "DECL_REF_EXPR" or a.ref is None or not _is_lane(an, n.children[1]):
        return None
    return a.ref, n, n.children[1]


def _plan_chunk(em, pl, acc):
    """Recognise the one-warp scan of the warp totals around the lane read `acc` (see Chunk); record it, or
    leave `acc` to the refusals."""
    an = em.an
    stmt, var = _assigned(acc)
    if stmt is None or stmt.kind != "DECL_STMT" or _strip(_init_of(var)) is not _strip(acc):
        return
    block = stmt.parent
    ifs = block.parent
    if ifs is None or ifs.kind != "IF_STMT" or len(ifs.children) != 2 or ifs.children[1] is not block or \
            not _is_warp0(an, ifs.children[0]) or id(block) in pl.chunks:
        return
    reads, loop, writes = [], None, []
    for st in block.children:
        if loop is None and st.kind == "DECL_STMT":
            ds = [c for c in st.children if c.kind == "VAR_DECL"]
            hit = [_lane_subscript(an, _init_of(d)) if _init_of(d) is not None else None for d in ds]
            if not ds or None in hit:
                return
            reads += [(d, h[0], h[1], h[2]) for d, h in zip(ds, hit)]
        elif loop is None and _unwrap_stmt(st).kind == "FOR_STMT" and reads:
            loop = _unwrap_stmt(st)     # `#pragma unroll` wraps it
        elif loop is not None and st.kind == "BINARY_OPERATOR" and st.op == "=":
            h = _lane_subscript(an, st.children[0])
            r = _strip(st.children[1])
            v = next((x for x in reads if r.kind == "DECL_REF_EXPR" and r.ref is x[0]), None)
            if h is None or v is None or h[0] is not v[1]:
                return
            writes.append((st, h[0], h[1], h[2]))
        else:
            return
    if loop is None or len(writes) != len(reads):
        return
    if any(em.decl_type(r[0]).unqualified().kind != "scalar" or em.decl_type(r[0]).unqualified().bits != 32
           for r in reads):
        return
    count = _scan_count(em, pl, loop, [r[0] for r in reads])
    if count is None:
        return
    ch = Chunk(block, reads, loop, writes)
    pl.chunks[id(block)] = ch
    pl.subst[id(count)] = ("ws",)
    for _v, _a, sub, ix in reads + [w for w in writes]:
        pl.chunk_accs[id(sub)] = ch
        for n in _chain(ix):
            pl.subst[id(n)] = ("lane", ch)
        pl.taken.append(sub)
    _last_lane_writers(em, pl, [r[1] for r in reads])


def _chain(n):
    """`n` and the nodes under it down to its stripped form (an emitter may be handed any of them)."""
    out = [n]
    while n.kind in ("PAREN_EXPR", "UNEXPOSED_EXPR") and n.children:
        n = n.children[-1]
        out.append(n)
    return out


def _last_lane_writers(em, pl, arrays):
    """`if (lane == 31) part[warp] = v;`: the warp's total sits in the last lane of a subgroup's scan, so
    31 becomes the subgroup size - 1 (only for the arrays of a chunked scan, whose writers are these)."""
    an = em.an
    for f in em._reachable(em.fn).values():
        if f.body is None:
            continue
        for n in f.body.walk():
            if n.kind != "IF_STMT" or len(n.children) < 2:
                continue
            c = _strip(n.children[0])
            if c.kind != "BINARY_OPERATOR" or c.op != "==" or len(c.children) != 2:
                continue
            a, b = c.children
            if not (_is_lane(an, a) and int_value(b) == 31):
                continue
            writes = [x for x in n.children[1].walk() if x.kind == "ARRAY_SUBSCRIPT_EXPR" and
                      _strip(x.children[0]).kind == "DECL_REF_EXPR" and _strip(x.children[0]).ref in arrays]
            if writes:
                for m in _chain(b):
                    pl.subst[id(m)] = ("last",)


def _unwrap_stmt(st):
    kids = [c for c in st.children if not c.kind.endswith("_ATTR")] if st.kind == "UNEXPOSED_STMT" else None
    return kids[0] if kids is not None and len(kids) == 1 else st


def _plan_minmax(em, pl, acc):
    """`if (warp == 0) { a = part[lane]; b = part[lane + NW]; for (c = NW / 2; c > 0; c /= 2) { t = shfl_down(a, c);
    if (t < a) a = t; ... } ... }` (marchingCubes computeMinMaxLv1): a min / max tree over the warp totals by one
    warp, which holds them all only while there are no more warps than lanes. Min and max may see a total twice,
    so the target reads `part[lane % nwarps]` (every lane a real total), folds the slots lane + k * subgroup size
    in, and runs the tree over the whole subgroup. Only lane 0's result is exact: the vars must not be read
    elsewhere after the tree (lane 0 only) or after the `if`. Records it, or leaves `acc` to the refusals."""
    an = em.an
    st, var = _assigned(acc)
    if st is None:
        return
    block = st.parent
    ifs = block.parent
    if ifs is None or ifs.kind != "IF_STMT" or len(ifs.children) != 2 or ifs.children[1] is not block or \
            not _is_warp0(an, ifs.children[0]):
        return
    reads, loop = [], None
    kids = block.children
    i = 0
    while i < len(kids):
        k = kids[i]
        r = _minmax_read(em, pl, k)
        if r is None:
            break
        reads.append(r)
        i += 1
    if not reads or i >= len(kids) or _unwrap_stmt(kids[i]).kind != "FOR_STMT":
        return
    loop = _unwrap_stmt(kids[i])
    if len({id(r[0]) for r in reads}) != len(reads) or any(r[0] is None for r in reads):
        return
    ops = _tree_ops(em, pl, loop, [r[0] for r in reads])
    if ops is None:
        return
    # after the tree only lane 0 is exact: later uses under `if (lane == 0)` in this block, none past the `if`
    for v, *_ in reads:
        for ref in em.model.refs_to(v):
            if ref.start < loop.end:
                continue
            if ref.start >= ifs.end or not _under_lane0(an, ref, block):
                return
    p = ifs.parent
    while p is not None and p.kind not in ("FUNCTION_DECL", "FUNCTION_TEMPLATE"):
        if p.kind in ("FOR_STMT", "WHILE_STMT", "DO_STMT"):
            return              # a later iteration could read the vars of other lanes
        p = p.parent
    for v, arr, sub, lane, off, stmt in reads:
        pl.chunk_accs[id(sub)] = ("minmax", off)
        for n in _chain(lane):
            pl.subst[id(n)] = ("lane_mod",)
        pl.taken.append(sub)
    pl.mm_folds[id(reads[-1][5])] = (reads[0][3], [(v, arr, off, ops[id(v)]) for v, arr, sub, _l, off, _s in reads])


def _minmax_read(em, pl, st):
    """(var, array, subscript, lane node, offset node or None, statement) for `v = part[lane];` /
    `v = part[lane + NW];` with v a local, part a shared 1-D array."""
    an = em.an
    if st.kind == "BINARY_OPERATOR" and st.op == "=":
        lhs = _strip(st.children[0])
        var = lhs.ref if lhs.kind == "DECL_REF_EXPR" and lhs.ref is not None and _local(lhs.ref) else None
        rhs = _strip(st.children[1])
    elif st.kind == "DECL_STMT" and len([c for c in st.children if c.kind == "VAR_DECL"]) == 1:
        var = next(c for c in st.children if c.kind == "VAR_DECL")
        rhs = _strip(_init_of(var)) if _init_of(var) is not None else None
    else:
        return None
    if var is None or rhs is None or rhs.kind != "ARRAY_SUBSCRIPT_EXPR" or len(rhs.children) != 2:
        return None
    a = _strip(rhs.children[0])
    if a.kind != "DECL_REF_EXPR" or a.ref is None or not any(x.node is a.ref for x in em.model.shared):
        return None
    ix = _strip(rhs.children[1])
    if _is_lane(an, ix):
        return var, a.ref, rhs, ix, None, st
    if ix.kind == "BINARY_OPERATOR" and ix.op == "+" and len(ix.children) == 2:
        for l, o in (ix.children, ix.children[::-1]):
            c = _strip(o)
            dfn = an.definition(c.ref) if c.kind == "DECL_REF_EXPR" and c.ref is not None else None
            if _is_lane(an, l) and (_count_32(o, -(-pl.block // 32), pl.block) or
                                    (dfn is not None and _count_32(dfn, 0, pl.block))):
                return var, a.ref, rhs, _strip(l), o, st
    return None


def _tree_ops(em, pl, loop, vars_):
    """{id(var): 'min' | 'max'} when `loop` is `for (c = C / 2; c > 0; c /= 2)` (C a count of 32-lane warps, or
    already from warpSize) whose body only takes `t = __shfl_down(v, c)` / `__shfl_xor` and keeps
    `if (t < v) v = t;` (min) or `if (t > v) v = t;` (max) per var; the count becomes the subgroup size."""
    an = em.an
    init, cond, inc, body = for_parts(loop)
    if init is None or cond is None or inc is None or body is None:
        return None
    iv = next((c for c in init.walk() if c.kind == "VAR_DECL"), None)
    if iv is None or _init_of(iv) is None:
        return None
    start = _strip(_init_of(iv))
    if _uses_warp_size(an, start):
        count = None
    elif start.kind == "BINARY_OPERATOR" and start.op == "/" and int_value(start.children[1]) == 2:
        count = start.children[0]
        cs = _strip(count)
        dfn = an.definition(cs.ref) if cs.kind == "DECL_REF_EXPR" and cs.ref is not None else None
        if not (_count_32(count, -(-pl.block // 32), pl.block) or (dfn is not None and _count_32(dfn, 0, pl.block))):
            return None
    else:
        return None
    c = _strip(cond)
    if not (c.kind == "BINARY_OPERATOR" and c.op == ">" and _refers(c.children[0], iv) and
            int_value(c.children[1]) == 0):
        return None
    i = _strip(inc)
    if not ((i.kind == "COMPOUND_ASSIGNMENT_OPERATOR" and i.op in ("/=", ">>=") and _refers(i.children[0], iv) and
             int_value(i.children[1]) == {"/=": 2, ">>=": 1}[i.op])):
        return None
    shfl_of = {}            # id(local) -> var it holds a shuffled copy of
    for n in body.walk():
        if n.kind == "CALL_EXPR" and n.callee.startswith("__shfl"):
            args = n.children[2:] if n.callee.endswith("_sync") else n.children[1:]
            if not (n.callee.startswith("__shfl_down") or n.callee.startswith("__shfl_xor")) or len(args) < 2 or \
                    not _refers(args[1], iv) or (len(args) > 2 and not args[2].is_warp_size()):
                return None
            src = next((v for v in vars_ if _refers(args[0], v)), None)
            cur, p = _up(n)
            if src is None or p is None:
                return None
            if p.kind == "VAR_DECL":
                shfl_of[id(p)] = src
            elif p.kind == "BINARY_OPERATOR" and p.op == "=" and cur is p.children[1] and \
                    _strip(p.children[0]).kind == "DECL_REF_EXPR":
                shfl_of[id(_strip(p.children[0]).ref)] = src
            else:
                return None
    ops = {}
    for n in body.walk():
        if n.kind in ("BINARY_OPERATOR", "COMPOUND_ASSIGNMENT_OPERATOR", "UNARY_OPERATOR") and \
                n.op in ("=", "+=", "-=", "*=", "/=", "|=", "&=", "^=", "<<=", ">>=", "++", "--"):
            tgt = _strip(n.children[0])
            v = next((x for x in vars_ if tgt.kind == "DECL_REF_EXPR" and tgt.ref is x), None)
            if v is None:
                if tgt.kind == "DECL_REF_EXPR" and id(tgt.ref) in shfl_of and n.op == "=":
                    continue            # `t0 = __shfl_down_sync(...)`
                return None
            r = _strip(n.children[1]) if n.op == "=" else None
            if r is None or r.kind != "DECL_REF_EXPR" or shfl_of.get(id(r.ref)) is not v:
                return None
            ifs = n.parent
            while ifs is not None and ifs.kind in ("COMPOUND_STMT",) and len(ifs.children) == 1:
                ifs = ifs.parent
            if ifs is None or ifs.kind != "IF_STMT" or len(ifs.children) != 2:
                return None
            ic = _strip(ifs.children[0])
            if ic.kind != "BINARY_OPERATOR" or ic.op not in ("<", ">"):
                return None
            a, b = ic.children
            if _refers(a, r.ref) and _refers(b, v):
                op = "min" if ic.op == "<" else "max"
            elif _refers(a, v) and _refers(b, r.ref):
                op = "max" if ic.op == "<" else "min"
            else:
                return None
            if ops.setdefault(id(v), op) != op:
                return None
    if set(ops) != {id(v) for v in vars_}:
        return None
    if count is not None:
        for m in _chain(count):
            pl.subst[id(m)] = ("ws",)
    return ops


def _under_lane0(an, n, stop) -> bool:
    cur, p = n, n.parent
    while p is not None and p is not stop:
        if p.kind == "IF_STMT" and len(p.children) >= 2 and cur is p.children[1]:
            c = _strip(p.children[0])
            if c.kind == "BINARY_OPERATOR" and c.op == "==" and len(c.children) == 2 and \
                    any(_is_lane(an, x) and int_value(y) == 0 for x, y in (c.children, c.children[::-1])):
                return True
        cur, p = p, p.parent
    return False


def _init_of(var):
    exprs = [c for c in var.children if not c.kind.endswith("_ATTR") and c.kind not in ("TYPE_REF", "NAMESPACE_REF")]
    return exprs[-1] if exprs else None


def _scan_count(em, pl, loop, vars_):
    """The count node C of `for (c = 1; c < C; c *= 2) { t = __shfl_up(v, c); if (lane >= c) v += t; }` when the
    loop is an inclusive sum scan of every var in `vars_` (each var changed only by `v += shfl_up(v, c)` under
    `lane >= c`, directly or through a local of the loop); None otherwise."""
    an = em.an
    init, cond, inc, body = for_parts(loop)
    if init is None or cond is None or inc is None or body is None:
        return None
    iv = next((c for c in init.walk() if c.kind == "VAR_DECL"), None)
    if iv is None or _init_value(iv) != 1:
        return None
    c = _strip(cond)
    if c.kind != "BINARY_OPERATOR" or c.op != "<" or not _refers(c.children[0], iv):
        return None
    count = c.children[1]
    cs = _strip(count)
    d = an.definition(cs.ref) if cs.kind == "DECL_REF_EXPR" and cs.ref is not None else None
    if not (_uses_warp_size(an, count) or _count_32(count, 32, pl.block) or
            (d is not None and _count_32(d, 32, pl.block))):
        return None
    i = _strip(inc)
    if not (i.kind == "COMPOUND_ASSIGNMENT_OPERATOR" and i.op == "*=" and int_value(i.children[1]) == 2
            and _refers(i.children[0], iv)):
        return None
    shfl_of = {}       # id(local decl) -> the var its value is shuffled from
    for n in body.walk():
        if n.kind == "CALL_EXPR" and n.callee.startswith("__shfl"):
            args = n.children[2:] if n.callee.endswith("_sync") else n.children[1:]
            if not n.callee.startswith("__shfl_up") or len(args) < 2 or not _refers(args[1], iv) or \
                    (len(args) > 2 and not args[2].is_warp_size()):
                return None
        if n.kind == "VAR_DECL" and n is not iv:
            ini = _init_of(n)
            sc = _strip(ini) if ini is not None else None
            if sc is not None and sc.kind == "CALL_EXPR" and sc.callee.startswith("__shfl_up"):
                src = sc.children[2] if sc.callee.endswith("_sync") else sc.children[1]
                v = next((x for x in vars_ if _refers(src, x)), None)
                if v is None:
                    return None
                shfl_of[id(n)] = v
    for n in body.walk():
        if n.kind in ("BINARY_OPERATOR", "COMPOUND_ASSIGNMENT_OPERATOR", "UNARY_OPERATOR") and \
                n.op in ("=", "+=", "-=", "*=", "/=", "|=", "&=", "^=", "<<=", ">>=", "++", "--"):
            tgt = _strip(n.children[0])
            v = next((x for x in vars_ if tgt.kind == "DECL_REF_EXPR" and tgt.ref is x), None)
            if v is None:
                if tgt.kind == "DECL_REF_EXPR" and tgt.ref is not None and tgt.ref.start >= body.start:
                    continue            # a local of the loop
                return None
            r = _strip(n.children[1]) if len(n.children) > 1 else None
            ok = n.op == "+=" and r is not None and r.kind == "DECL_REF_EXPR" and shfl_of.get(id(r.ref)) is v
            if not ok or not _under_lane_ge(an, n, iv, body):
                return None
    if any(not any(id(d) in shfl_of and shfl_of[id(d)] is v for d in (x for x in body.walk()
                                                                     if x.kind == "VAR_DECL")) for v in vars_):
        return None
    return count


def _under_lane_ge(an, n, iv, stop) -> bool:
    cur, p = n, n.parent
    while p is not None and p is not stop:
        if p.kind == "IF_STMT" and len(p.children) == 2 and cur is p.children[1]:
            c = _strip(p.children[0])
            if c.kind == "BINARY_OPERATOR" and c.op == ">=" and _is_lane(an, c.children[0]) and \
                    _refers(c.children[1], iv):
                return True
        cur, p = p, p.parent
    return False


def _count(em, pl, s, c, slots, where):
    if _uses_warp_size(em.an, c):
        return            # already the real count
    if not _count_32(c, slots, pl.block):
        _refuse(em, c, s, f"`{_short(where, 60, True)}` bounds its slots by `{c.text}`, which cuport does not "
                          f"recognise as a count of 32-lane warps")
    pl.counts[id(c)] = c
    pl.taken.append(c)


def _plan_fold(em, pl, s, acc, lane, stride, first=None):
    """`v = cond ? part[lane] : id;` (or `T v = ...`) followed by a sum / min / max reduction of v."""
    an = em.an
    if stride != 1 or len(em.decl_type(s.node).dims) != 1:
        _refuse(em, acc, s, f"one subgroup reads `{_short(acc)}` for every warp, and with more warps than lanes "
                            f"the slots can only be folded in for a one-dimensional array", fold=True)
    stmt, var = _assigned(acc)
    if stmt is None:
        _refuse(em, acc, s, f"one subgroup reads `{_short(acc)}` for every warp, but with more warps than lanes "
                            f"cuport folds the extra slots only into `v = lane < COUNT ? {s.name}[lane] : init;`",
                fold=True)
    others = [f for f in pl.folds.values() if f.array is not s.node and f.block is stmt.parent]
    op = _reduction_op(em, stmt, var)
    if op is None or others:
        what = (f"it is reduced together with `{others[0].array.spelling}` (a combined reduction)" if others
                else f"the reduction of `{var.spelling}` after it is not a recognisable sum, min or max")
        _refuse(em, stmt, s, f"one subgroup reads `{_short(acc)}` for every warp: with more warps than lanes the "
                             f"extra slots must be folded in first, and {what}", fold=True)
    pl.folds[id(stmt)] = Fold(var, s.node, lane, op, first, stmt.parent)


def _local(decl) -> bool:
    """A local variable, or a by-value parameter (`T blockReduceSum(T val)` reassigns its parameter)."""
    return decl.kind == "VAR_DECL" or (decl.kind == "PARM_DECL" and "&" not in decl.type)


def _lane_dividend(an, n, depth=0):
    """`t` of a lane id `t % W` / `t & (W - 1)` (through single-assignment locals)."""
    n = _strip(n)
    if n.kind == "DECL_REF_EXPR" and n.ref is not None and depth < 4:
        d = an.definition(n.ref)
        return _lane_dividend(an, d, depth + 1) if d is not None else None
    if n.kind == "BINARY_OPERATOR" and n.op in ("%", "&") and len(n.children) == 2:
        return _strip(n.children[0])
    return None


def _number(n):
    n = _strip(n)
    v = int_value(n)
    if v is None and n.kind == "FLOATING_LITERAL":
        try:
            v = float(n.text.rstrip("fFlL"))
        except ValueError:
            return None
    return v


def _block_warps_32(an, c) -> bool:
    """`c` is the block's count of 32-lane warps: `blockDim.x / 32.f`, `(blockDim.x * blockDim.y * blockDim.z)
    / 32`, `N >> 5` with N at most 1024: never more than 32, so `tid < c` holds in warp 0 only."""
    n = _strip(c)
    if n.kind != "BINARY_OPERATOR" or len(n.children) != 2:
        return False
    a, b = n.children
    if not ((n.op == "/" and _number(b) == 32) or (n.op == ">>" and int_value(b) == 5)):
        return False
    p = an.poly(a)
    if p is None or len(p.terms) != 1:
        return False
    (key, coef), = p.terms.items()
    if key == ():
        return 0 <= coef <= MAX_BLOCK
    return coef == 1 and len(set(key)) == len(key) and all(k.startswith("blockDim.") for k in key)


def _is_thread0(an, cond) -> bool:
    """`cond` (or one of its && conjuncts) is `tid == 0` for a thread id with only non-negative threadIdx terms."""
    n = _strip(cond)
    if n.kind == "BINARY_OPERATOR" and n.op == "&&" and len(n.children) == 2:
        return _is_thread0(an, n.children[0]) or _is_thread0(an, n.children[1])
    if n.kind != "BINARY_OPERATOR" or n.op != "==" or len(n.children) != 2:
        return False
    for a, b in (n.children, n.children[::-1]):
        if int_value(b) == 0:
            p = an.poly(a)
            if p is not None and p.terms and all(len(k) == 1 and k[0].startswith("threadIdx.") and v > 0
                                                 for k, v in p.terms.items()):
                return True
    return False


def _under_thread0(an, n) -> bool:
    cur, p = n, n.parent
    while p is not None and p.kind not in ("FUNCTION_DECL", "FUNCTION_TEMPLATE"):
        if p.kind == "IF_STMT" and len(p.children) >= 2 and cur is p.children[1] and _is_thread0(an, p.children[0]):
            return True
        cur, p = p, p.parent
    return False


def _up(n):
    p = n.parent
    while p is not None and p.kind in ("PAREN_EXPR", "UNEXPOSED_EXPR", "CSTYLE_CAST_EXPR"):
        n, p = p, p.parent
    return n, p


def _into_self(n, var) -> bool:
    """`n` (a use of var) is on either side of an assignment to var (`v = f(v)`, `v += shfl(v, o)`)."""
    p = n.parent
    while p is not None and p.kind not in ("COMPOUND_STMT", "FUNCTION_DECL", "FUNCTION_TEMPLATE"):
        if p.kind in ("BINARY_OPERATOR", "COMPOUND_ASSIGNMENT_OPERATOR") and p.op in ("=", "+=", "-=", "*=", "|=",
                                                                                      "&=", "^="):
            return _refers(p.children[0], var)
        p = p.parent
    return False


def _escape(em, stmt, var):
    """The first use of the value `stmt` gives `var` that may reach a thread other than thread 0 (or None): every
    use must be a step of its reduction, sit under `if (tid == 0)`, or be a `return` whose callers keep the
    result in a local used only under `if (tid == 0)`."""
    an = em.an
    fn = stmt.parent
    while fn is not None and fn.kind not in ("FUNCTION_DECL", "FUNCTION_TEMPLATE"):
        if fn.kind in ("FOR_STMT", "WHILE_STMT", "DO_STMT"):
            return fn               # a later iteration could use it before the statement
        fn = fn.parent
    block = stmt.parent
    for st in block.children[block.children.index(stmt) + 1:]:
        for n in st.walk():
            if n.kind != "DECL_REF_EXPR" or n.ref is not var or _into_self(n, var) or _under_thread0(an, n):
                continue
            _c, p = _up(n)
            if p is None or p.kind != "RETURN_STMT" or fn is None or fn is em.fn.node:
                return n
            bad = _callers_escape(em, fn)
            if bad is not None:
                return bad
    return None


def _callers_escape(em, fn_node):
    an = em.an
    for f in em._reachable(em.fn).values():
        if f.body is None:
            continue
        for call in f.body.walk():
            if call.kind != "CALL_EXPR":
                continue
            callee = em._callee_fn(call)
            if callee is None or callee.node.start != fn_node.start:
                continue
            c, p = _up(call)
            if p is not None and p.kind == "VAR_DECL":
                x, skip = p, None
            elif p is not None and p.kind == "BINARY_OPERATOR" and p.op == "=" and c is p.children[1] and \
                    _strip(p.children[0]).kind == "DECL_REF_EXPR":
                x, skip = _strip(p.children[0]).ref, _strip(p.children[0])
            else:
                return call
            if x is None or x.kind != "VAR_DECL":
                return call
            q = call.parent
            while q is not None and q.kind not in ("FUNCTION_DECL", "FUNCTION_TEMPLATE"):
                if q.kind in ("FOR_STMT", "WHILE_STMT", "DO_STMT"):
                    return call         # a later iteration could read it before the call
                q = q.parent
            for r in em.model.refs_to(x):
                # uses up to the call (`sum = block_reduce(sum)`) read the value before the reduction
                if r is not skip and r.start >= call.end and not _under_thread0(an, r):
                    return r
    return None


def _thread_guard(em, pl, s, acc, lane):
    """`t < C ? part[lane] : init` with lane = t % warpSize and C the block's count of 32-lane warps: in CUDA
    only warp 0 passes (C <= 32), where t is the lane. The target reads the slots in its first subgroup only
    (`t < warpSize && t < nwarps`, folding the slots beyond its lanes) and reduces them there, which is exact for
    thread 0: so the reduced value must reach thread 0 only, or the kernel is refused (CP104). Returns t, or None
    when the read has no such guard."""
    an = em.an
    t = _lane_dividend(an, lane)
    if t is None:
        return None
    cur, p = _up(acc)
    if p is None or p.kind != "CONDITIONAL_OPERATOR" or len(p.children) != 3 or cur is not p.children[1]:
        return None
    cond = _strip(p.children[0])
    if cond.kind != "BINARY_OPERATOR" or cond.op != "<" or len(cond.children) != 2 or \
            not _same(an, cond.children[0], t):
        return None
    if not _block_warps_32(an, cond.children[1]):
        return None           # refused as a read with no bound on the warp count
    stmt, var = _assigned(acc)
    if stmt is None:
        _refuse(em, acc, s, f"the first warp reads `{_short(acc)}` under `{_short(cond)}`, and cuport re-sizes "
                            f"that only in `v = {_short(cond)} ? {s.name}[lane] : init;`", fold=True)
    bad = _escape(em, stmt, var)
    if bad is not None:
        row = em.model.source.position(bad.start)[0]
        _refuse(em, acc, s, f"the first warp reduces `{_short(acc)}` under `{_short(cond)}`, which on narrower "
                            f"subgroups stays exact for thread 0 only, and the result `{var.spelling}` reaches "
                            f"other threads (`{_short(bad)}`, line {row})")
    pl.guards[id(cond)] = (t, lane)
    pl.counts[id(cond)] = cond
    return t


def _assigned(acc):
    """(statement, VAR_DECL) when `acc` is the whole right-hand side, or the true branch of a `?:` that is."""
    cur, p = acc, acc.parent
    while p is not None and p.kind in ("PAREN_EXPR", "UNEXPOSED_EXPR"):
        cur, p = p, p.parent
    if p is not None and p.kind == "CONDITIONAL_OPERATOR" and len(p.children) == 3 and cur is p.children[1]:
        cur, p = p, p.parent
        while p is not None and p.kind in ("PAREN_EXPR", "UNEXPOSED_EXPR"):
            cur, p = p, p.parent
    if p is None:
        return None, None
    if p.kind == "BINARY_OPERATOR" and p.op == "=" and cur is p.children[1]:
        lhs = _strip(p.children[0])
        if lhs.kind == "DECL_REF_EXPR" and lhs.ref is not None and _local(lhs.ref) and \
                p.parent is not None and p.parent.kind == "COMPOUND_STMT":
            return p, lhs.ref
    if p.kind == "VAR_DECL" and p.parent is not None and p.parent.kind == "DECL_STMT" and \
            len(p.parent.children) == 1 and p.parent.parent is not None and \
            p.parent.parent.kind == "COMPOUND_STMT":
        return p.parent, p
    return None, None


def _reduction_op(em, stmt, var):
    """The operation the statements after `stmt` in its block reduce `var` with (directly or through a device
    function `var = f(var)`), when every combining step of it agrees."""
    block = stmt.parent
    after = block.children[block.children.index(stmt) + 1:]
    for st in after:
        for n in st.walk():
            if n.kind == "CALL_EXPR" and any(_refers(a, var) for a in n.children[1:]):
                p = n.parent
                while p is not None and p.kind in ("PAREN_EXPR", "UNEXPOSED_EXPR"):
                    p = p.parent
                if p is None or p.kind != "BINARY_OPERATOR" or p.op != "=" or not _refers(p.children[0], var):
                    continue
                f = function_by_call(em.model, n)
                if f is None or f.body is None:
                    continue
                params = [c for c in f.node.children if c.kind == "PARM_DECL"]
                if len(params) != 1 or "&" in params[0].type:
                    continue
                op = _steps_op(f.body, params[0])
                if op is not None:
                    return op
        op = _steps_op(st, var)
        if op is not None:
            return op
    return None


def _refers(n, decl) -> bool:
    s = _strip(n)
    return s.kind == "DECL_REF_EXPR" and s.ref is decl


def _steps_op(body, var):
    """The one operation of the shuffle steps `v OP= shfl(v, ..)` / `v = max(v, shfl(..))` in `body`."""
    ops = set()
    for n in body.walk():
        if not any(c.kind == "CALL_EXPR" and c.callee.startswith("__shfl") for c in n.walk()):
            continue
        if n.kind == "COMPOUND_ASSIGNMENT_OPERATOR" and _refers(n.children[0], var) and n.op in _COMBINE:
            ops.add(_COMBINE[n.op])
        elif n.kind == "CALL_EXPR" and not n.callee and len(n.children) == 3 and _refers(n.children[0], var) \
                and n.children[1].text.strip() in _COMBINE:
            # `val += shfl(val, m)` on a template type T: (val, operator+=, shfl) until instantiation
            ops.add(_COMBINE[n.children[1].text.strip()])
        elif n.kind == "BINARY_OPERATOR" and n.op == "=" and _refers(n.children[0], var):
            r = _strip(n.children[1])
            if r.kind == "CALL_EXPR" and r.callee in _MINMAX and any(_refers(a, var) for a in r.children[1:]):
                ops.add(_MINMAX[r.callee])
            else:
                return None
    return ops.pop() if len(ops) == 1 else None


def _short(n, limit=50, head=False):
    t = " ".join(n.text.split())
    if head and "{" in t:
        t = t.split("{")[0].strip()
    return t if len(t) <= limit else t[:limit - 3] + "..."


# ---------------------------------------------------------------------- emitter hooks

def handled_rows(emitters) -> set:
    """Source rows of the per-warp arrays the emitters sized (their CP104 findings are taken care of)."""
    rows = set()
    for em in emitters:
        pl = getattr(em, "warp_plan", None)
        for decl in (pl.handled + pl.taken if pl is not None else ()):
            rows.add(em.model.source.position(decl.start)[0])
    return rows


def resized(em, decl, info) -> None:
    """Give a per-warp shared array the slots `plan` decided."""
    pl = getattr(em, "warp_plan", None)
    new = pl.arrays.get(id(decl)) if pl is not None else None
    if not new or info.get("extern") or not info.get("dims"):
        return
    dims = tuple(new.get(i, v) for i, v in enumerate(info["dims"]))
    info["dims"] = dims
    info["cuda_type"] = info["type"]        # the CUDA size, for the limit check's explanation
    info["type"] = replace(info["type"], dims=dims)
    info["min_warp"] = pl.min_warp


def count(em, n):
    """The real warp count of the block, as an int expression of the target, for a node `plan` marked."""
    from porter.translate.kernel.target import E
    pl = getattr(em, "warp_plan", None)
    if pl is not None and id(n) in pl.subst and not pl.busy:
        return _substitute(em, pl, n)
    if pl is None or id(n) not in pl.counts:
        return None
    if id(n) in pl.guards:
        # `t < C` for 32-lane warps: the first subgroup's lanes, up to the real count
        t, lane = pl.guards[id(n)]
        ln = em.conv(em.x(lane), I32)
        return E(f"({_first_subgroup(em, t, lane)} && {ln.paren(5)} < {_total_warps(em)})", BOOL)
    bd = em.conv(em.t.thread_builtin("blockDim", "x", em), I32)
    ws = em.conv(em.t.warp_size(em), I32)
    return E(f"(({bd.text} + {ws.text} - 1) / {ws.paren(5)})", I32)


def _substitute(em, pl, n):
    from porter.translate.kernel.target import E
    what = pl.subst[id(n)]
    if what[0] == "ws":          # the scan of one chunk spans the subgroup
        return em.conv(em.t.warp_size(em), I32)
    if what[0] == "slot":
        return E(str(what[1]), I32)
    if what[0] == "lane_mod":     # every lane reads a real total (min / max may see one twice)
        pl.busy = True
        try:
            lane = em.conv(em.x(n), I32)
        finally:
            pl.busy = False
        return E(f"({lane.paren(5)} % {_total_warps(em)})", I32)
    if what[0] == "last":
        from porter.translate.kernel.ctype import U32
        return E(f"({em.conv(em.t.warp_size(em), U32).text} - 1u)", U32)
    pl.busy = True
    try:
        lane = em.conv(em.x(n), I32)
    finally:
        pl.busy = False
    return E(f"({what[1].base} + {lane.paren(5)})", I32)


def chunk_block(em, compound) -> bool:
    """Emit the body of a one-warp scan of the warp totals (Chunk) as a loop over chunks of subgroup-size
    totals: each chunk is scanned as the source scans its one warp (up to the subgroup size), then gets the
    running total of the chunks before it (the last lane's value, carried). Lanes past the last warp scan
    padding slots; an inclusive scan never lets them reach a lower lane. False when `compound` is not one."""
    pl = getattr(em, "warp_plan", None)
    ch = pl.chunks.get(id(compound)) if pl is not None else None
    if ch is None:
        return False
    ws = em.conv(em.t.warp_size(em), I32)
    ch.base = em.tmp("chunk")
    carries = []
    for v, _a, _sub, _ix in ch.reads:
        t = em.decl_type(v)
        c = em.tmp("carry")
        carries.append((v, c, t))
        em.emit(f"{em.t.type_name(t, em)} {c} = {em.conv(_zero(), t).text};")
    em.emit(f"// more warps than subgroup lanes: the warp totals are scanned in chunks of the subgroup size (cuport)")
    em.emit(f"for (int {ch.base} = 0; {ch.base} < {_total_warps(em)}; {ch.base} += {ws.paren(15)}) {{")
    em.indent += 1
    for st in compound.children:
        if st is ch.writes[0][0]:
            for v, c, _t in carries:
                em.emit(f"{em.name_of(v)} += {c};")
        em.line_mark(st)
        em.stmt(st)
    for v, c, t in carries:
        em.emit(f"{c} = {em.t.last_lane(em, em.name_of(v), t)};")
    em.indent -= 1
    em.emit("}")
    return True


def _zero():
    from porter.translate.kernel.target import E
    return E("0", I32)


def _lane_text(em, lane, depth=0) -> str:
    """The lane id as emitted where it is computed (`t % warpSize`, through the locals that hold it)."""
    n = _strip(lane)
    if n.kind == "DECL_REF_EXPR" and n.ref is not None and depth < 4:
        d = em.an.definition(n.ref)
        if d is not None:
            return _lane_text(em, d, depth + 1)
    return em.conv(em.x(n), I32).text


def _first_subgroup(em, t, lane) -> str:
    """The test for the first subgroup, in the terms the lane id was emitted in: the subgroup id when the lane
    is the target's lane builtin, else `t < warpSize` for the lane `t % warpSize`."""
    own = em.t.lane_id(em, I32)
    if own is not None and em.conv(own, I32).text == _lane_text(em, lane):
        return f"{em.conv(em.t.warp_id(em, I32), I32).paren(5)} == 0"
    tt = em.conv(em.x(t), I32)
    return f"{tt.paren(5)} < {em.conv(em.t.warp_size(em), I32).paren(5)}"


def _total_warps(em) -> str:
    """The real warp count of the whole (up to 3-D) block."""
    ws = em.conv(em.t.warp_size(em), I32)
    dims = [em.conv(em.t.thread_builtin("blockDim", a, em), I32) for a in "xyz"]
    return f"(({' * '.join(d.paren(5) for d in dims)} + {ws.text} - 1) / {ws.paren(5)})"


def fold_lines(em, stmt) -> list[str]:
    """After `v = lane < NW ? part[lane] : init;`: fold the slots lane + warpSize, lane + 2 * warpSize, ...
    into v, so one subgroup narrower than the warp count still combines every warp's value."""
    pl = getattr(em, "warp_plan", None)
    if pl is not None and id(stmt) in pl.mm_folds:
        return _minmax_fold_lines(em, pl, *pl.mm_folds[id(stmt)])
    f = pl.folds.get(id(stmt)) if pl is not None else None
    if f is None:
        return []
    w = em.tmp("w")
    v = em.name_of(f.var)
    part = em.name_of(f.array)
    lane = em.conv(em.x(f.lane), I32)
    ws = em.conv(em.t.warp_size(em), I32)
    bd = em.conv(em.t.thread_builtin("blockDim", "x", em), I32)
    nw = f"(({bd.text} + {ws.text} - 1) / {ws.paren(5)})"
    elem = em.decl_type(f.var)
    if f.op in ("max", "min"):
        fn = f.op if em.t.name == "glsl" or not elem.is_float else "f" + f.op
        step = f"{v} = {fn}({v}, {part}[{w}]);"
    else:
        step = f"{v} {f.op}= {part}[{w}];"
    cond = f"{w} < {nw}"
    if f.first is not None:       # only the first subgroup reads the slots (`tid < NW ? part[lane] : init`)
        cond = f"{_first_subgroup(em, f.first, f.lane)} && {w} < {_total_warps(em)}"
    return [f"// more warps than subgroup lanes: lane l first folds in slots l + k * subgroup size (cuport)",
            f"for (int {w} = {lane.paren(5)} + {ws.paren(5)}; {cond}; {w} += {ws.paren(15)}) {{",
            f"    {step}", "}"]


def _minmax_fold_lines(em, pl, lane_node, reads) -> list[str]:
    """After the reads of a one-warp min / max tree: fold the slots lane + k * subgroup size into each var, with
    the comparison the tree uses (`if (s < v) v = s;`)."""
    w = em.tmp("w")
    ws = em.conv(em.t.warp_size(em), I32)
    pl.busy = True          # the lane itself, not the `lane % nwarps` its reads get
    try:
        lane = em.conv(em.x(lane_node), I32)
    finally:
        pl.busy = False
    body = []
    for v, arr, off, op in reads:
        slot = f"{w} + {pl.subst[id(off)][1]}" if off is not None else w
        cmp = "<" if op == "min" else ">"
        body.append(f"    if ({em.name_of(arr)}[{slot}] {cmp} {em.name_of(v)}) {{ {em.name_of(v)} = "
                    f"{em.name_of(arr)}[{slot}]; }}")
    return ["// more warps than subgroup lanes: lane l first folds in slots l + k * subgroup size (cuport)",
            f"for (int {w} = {lane.paren(5)} + {ws.paren(5)}; {w} < {_total_warps(em)}; {w} += {ws.paren(15)}) {{",
            *body, "}"]


# ---------------------------------------------------------------------- HIP (wave64)

HIP_WAVE = 64                        # widest AMD wavefront


@dataclass
class HipSizing:
    edits: list = field(default_factory=list)      # (start, end, text, array name): `[32]` -> `[64]`
    refused: list = field(default_factory=list)    # (node, message): a lane-indexed array cuport cannot resize
    sized_rows: set = field(default_factory=set)   # declaration rows whose CP104 finding HIP takes care of
    edit_rows: set = field(default_factory=set)    # declaration rows resized

    def edits_at(self, row) -> bool:
        return row in self.edit_rows


def hip_plan(model) -> HipSizing:
    """What HIP must resize on wave64 (edit-based translation of the fixed CUDA text):
    - a shared dimension of 32 indexed by a lane id (`s[lane]`, `s[threadIdx.x % warpSize]`): lanes 32..63 of a
      wave64 index past it, so it becomes 64 (bigger is safe); one written by a macro is refused (CP104);
    - a per-warp dimension (`[N / 32]`, `[8]`) indexed only by warp ids computed with warpSize is left as is:
      wave64 has fewer warps, and the loops over its slots are CP104 findings of their own (at the bound)."""
    from porter.analysis.affine import analysis
    from porter.analysis.syntax import array_dim_exprs
    from porter.lint.helpers import spelled
    out = HipSizing()
    an = None
    for s in model.shared:
        if s.extern or (s.function is not None and not s.function.is_device_code):
            continue
        dims = array_dim_exprs(s.node)
        typed = [int(v) for v in re.findall(r"\[(\d+)\]", s.node.type or "")]
        if not dims and not typed:
            continue
        if len(dims) != len(typed):
            dims = [None] * len(typed)       # a declaration a macro writes: its dimensions have no text here
        an = an or analysis(model)
        subs = array_subscripts(model, s.node)
        row = model.source.position(s.node.start)[0]
        sized, bad = False, False
        for d, e in enumerate(dims):
            kinds = [warp_index_kind(an, idx[d]) for _acc, idx in subs if len(idx) > d]
            size = int_value(e) if e is not None else typed[d]
            if size == 32 and any(k is not None and k[0] == "lane" for k in kinds):
                if e is not None and spelled(e) and e.text.strip():
                    out.edits.append((e.start, e.end, str(HIP_WAVE), s.name))
                    out.edit_rows.add(row)
                    # a lane id still computed with 32 (`% 32` left unfixed) stays a finding
                    sized = True
                    bad = bad or any(k is not None and int_value(k[1]) is not None for k in kinds)
                else:
                    bad = True
                    macro = next((m for ms, _me, m in model.macro_uses if s.node.start <= ms < s.node.end), "?")
                    out.refused.append((s.node, f"shared array `{s.name}` has one slot per lane (its 32 written by "
                                                f"macro `{macro}`): lanes 32..63 of a 64-lane wavefront index "
                                                f"past its end and cuport cannot resize a dimension a macro "
                                                f"writes; size it for {HIP_WAVE} lanes"))
                continue
            warp = [k for k in kinds if k is not None and k[0] == "warp"]
            if warp:
                # `t / warpSize`: fewer warps on wave64, the slots suffice; `t / 32` is still a finding
                if all(int_value(k[1]) is None for k in warp):
                    sized = True
                else:
                    bad = True
        if sized and not bad:
            out.sized_rows.add(row)
    return out
