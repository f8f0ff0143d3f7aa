"""CUDA's 32-lane warps emulated in shared memory, for a kernel whose shuffles the target's own warps cannot run:
a shuffle of an explicit width (`__shfl_xor_sync(m, v, mask, 32)`, HeCBench logprob's warpReduceSum) needs
subgroups at least that wide (Vulkan's may be 4 lanes, lavapipe's are 4..16) and cannot run on OpenCL 1.2's
one-lane warps at all, nor can a shuffle that reaches a constant distance in a kernel that never reads warpSize.

Such a kernel runs with warps of 32 consecutive linear thread ids, as CUDA forms them, whatever the target's
subgroups: warpSize is 32, lane and warp ids are the source's arithmetic, per-warp arrays keep their 32-lane
sizes, and each shuffle is a helper over a shared array with one slot per thread of the block: every thread
stores its value, a work-group barrier, each reads the slot of its source lane (its own value where CUDA gives
the caller's own: out of the width's segment, past the block), a barrier. That is CUDA's value in every lane at
any subgroup size, at two barriers a shuffle.

The barriers must be reached by the whole work-group, so the kernel is taken only when every shuffle, and every
call of a device function that (transitively) shuffles, is at uniform control flow in its function (conditions
of blockIdx, kernel parameters, loads at uniform indices and constants; a device function's parameters count as
thread-dependent), no thread leaves such a function or the kernel early under thread-dependent control flow
(whole warps leaving the kernel early are predicated instead: warp32_exit.py), and
the kernel uses no other warp operation (ballot, vote, __syncwarp, cooperative groups, __activemask). Anything
else keeps the target's own warps (and their diagnostics)."""
from __future__ import annotations

import re

from porter.analysis.syntax import for_parts
from porter.translate.kernel import ctype as ct
from porter.translate.kernel import warp32_exit
from porter.translate.kernel.warp32_exit import _bare, _base, _int
from porter.translate.kernel.ctype import I32, U32
from porter.translate.kernel.target import E
from porter.translate.kernel.typeinfo import SIDE_EFFECT_FREE_CALLS

WARP = 32
MAX_BLOCK = 1024                 # CUDA's largest block: the slots when the launch's block is not known
SHUFFLES = {"__shfl_sync": ("idx", True), "__shfl_up_sync": ("up", True), "__shfl_down_sync": ("down", True),
            "__shfl_xor_sync": ("xor", True), "__shfl": ("idx", False), "__shfl_up": ("up", False),
            "__shfl_down": ("down", False), "__shfl_xor": ("xor", False)}
# other warp operations (and cooperative groups' methods): a kernel with one keeps the target's own warps
_WARP_OPS = ("__ballot", "__any", "__all", "__uni", "__activemask", "__syncwarp", "__match", "__reduce_", "__lane",
             "__cuport_", "__shfl")
_GROUP_METHODS = {"shfl", "shfl_up", "shfl_down", "shfl_xor", "ballot", "any", "all", "match_any", "match_all",
                  "thread_rank", "meta_group_rank", "sync", "tiled_partition", "coalesced_threads",
                  "this_thread_block", "num_threads", "size", "reduce", "inclusive_scan", "exclusive_scan"}
# the narrowest warp each target may run without emulation (warp_sizing.MIN_WARP)
_MIN_WARP = {"glsl": 4, "opencl": 1}
_MAX_DEPTH = 8


class Warp32:
    def __init__(self, block: int):
        self.block = block           # slots per array: the launch's threads per block (MAX_BLOCK if unknown)
        self.slots = {}              # type spelling -> shared array name
        self.exits = None            # warp32_exit.Exits: warp-uniform early returns, predicated


def _inside(node, root) -> bool:
    return root is not None and any(y is node for y in root.walk())


def plan(em) -> Warp32 | None:
    """A Warp32 when kernel em.fn runs with emulated 32-lane warps (see the module doc), else None."""
    t = em.t
    if t.name not in _MIN_WARP or (t.name == "opencl" and getattr(em, "cl_warp_size", None) != 1):
        return None
    fns = em._reachable(em.fn)
    shuffles, calls = [], {}
    for f in fns.values():
        if f.body is None:
            continue
        for x in em.model.kind_in(f.body, "CALL_EXPR"):
            callee = em._callee_fn(x)
            if callee is not None and callee.body is not None:
                calls.setdefault(id(f.node), []).append((x, callee))
                continue
            name = em.callee_name(x)
            if name in SHUFFLES:
                shuffles.append((f, x))
            elif name.startswith(_WARP_OPS) or name in _GROUP_METHODS:
                return None
    if not shuffles or not any(_needed(em, x) for _f, x in shuffles):
        return None
    # the functions whose calls run a shuffle
    sensitive = {id(f.node) for f, _x in shuffles}
    grew = True
    while grew:
        grew = False
        for f in fns.values():
            if id(f.node) not in sensitive and any(id(c.node) in sensitive for _x, c in calls.get(id(f.node), ())):
                sensitive.add(id(f.node))
                grew = True
    for f, x in shuffles:
        if not _full_mask(em, x) or not at_uniform(em, f, x):
            return None
    blk = em.launch.block if em.launch is not None else None
    known = blk if blk and len(blk) == 3 and all(isinstance(v, int) for v in blk) else None
    exits = None
    if not _exits_uniform(em, em.fn):
        exits = warp32_exit.plan(em, known, uniform, at_uniform, SHUFFLES)   # whole warps leaving: predicated
        if exits is None:
            return None
    for f in fns.values():
        if id(f.node) not in sensitive:
            continue
        for x, c in calls.get(id(f.node), ()):
            if id(c.node) in sensitive and not at_uniform(em, f, x):
                return None
        if f is not em.fn and not _exits_uniform(em, f):
            return None
    block = known[0] * known[1] * known[2] if known else MAX_BLOCK
    w = Warp32(min(block, MAX_BLOCK))
    w.exits = exits
    return w


def _needed(em, call) -> bool:
    """Whether the target's own warps cannot run this shuffle: a width other than warpSize wider than the
    narrowest warp (or not a constant), or (one-lane OpenCL warps) a constant reach in a kernel that never reads
    warpSize."""
    from porter.translate.kernel.shuffle_reach import reach, reads_warp_size
    name = em.callee_name(call)
    _kind, masked = SHUFFLES[name]
    args = em.call_args(call)[1:] if masked else em.call_args(call)
    least = _MIN_WARP[em.t.name]
    if len(args) > 2 and not args[2].is_warp_size():
        w = _int(args[2])
        if w is None or w > least:
            return True
    if least == 1 and len(args) > 1:
        c = reach(args[1])
        return isinstance(c, int) and c >= 1 and not reads_warp_size(em.model, em.fn)
    return False


def _full_mask(em, call) -> bool:
    name = em.callee_name(call)
    if not SHUFFLES[name][1]:
        return True
    args = em.call_args(call)
    v = _int(args[0]) if args else None
    return v is not None and v & 0xFFFFFFFF == 0xFFFFFFFF


def _exits_uniform(em, f) -> bool:
    """No thread leaves f (returns, breaks out of or continues a loop) under thread-dependent control flow, and
    f has no goto."""
    body = f.body
    if body is None:
        return True
    for k in ("GOTO_STMT", "INDIRECT_GOTO_STMT", "LABEL_STMT"):
        if em.model.kind_in(body, k):
            return False
    for k in ("RETURN_STMT", "BREAK_STMT", "CONTINUE_STMT"):
        for r in em.model.kind_in(body, k):
            if not at_uniform(em, f, r):
                return False
    return True


def at_uniform(em, f, node, depth: int = 0, seen=None) -> bool:
    """Whether `node` in function f is reached by every thread of the block that reaches f's body (or none)."""
    if depth > _MAX_DEPTH:
        return False
    for a in node.ancestors():
        if a is f.body:
            return True
        k = a.kind
        if k == "LAMBDA_EXPR":
            return False
        if k in ("IF_STMT", "SWITCH_STMT"):
            c = a.children[0] if a.children else None
            if c is not None and not _inside(node, c) and not uniform(em, f, c, depth + 1, seen):
                return False
        elif k == "WHILE_STMT":
            if not a.children or not uniform(em, f, a.children[0], depth + 1, seen):
                return False
        elif k == "DO_STMT":
            if not a.children or not uniform(em, f, a.children[-1], depth + 1, seen):
                return False
        elif k == "FOR_STMT":
            _init, cond, inc, _body = for_parts(a)
            if any(p is not None and not uniform(em, f, p, depth + 1, seen) for p in (cond, inc)):
                return False
        elif k == "CONDITIONAL_OPERATOR" and len(a.children) == 3:
            if not _inside(node, a.children[0]) and not uniform(em, f, a.children[0], depth + 1, seen):
                return False
        elif k == "BINARY_OPERATOR" and a.op in ("&&", "||") and len(a.children) == 2:
            if _inside(node, a.children[1]) and not uniform(em, f, a.children[0], depth + 1, seen):
                return False
    return False


def uniform(em, f, n, depth: int = 0, seen=None) -> bool:
    """Whether expression n of function f has one value in every thread of the block (conservative: a device
    function's parameters, its calls of user functions, and locals written under thread-dependent control flow
    or with thread-dependent values, or whose address is taken, count as thread-dependent)."""
    if depth > _MAX_DEPTH or em.an.thread_dependent(n):
        return False
    seen = set() if seen is None else seen
    kernel = em.fn
    for x in n.walk():
        k = x.kind
        if k == "CALL_EXPR":
            callee = em._callee_fn(x)
            if callee is not None and callee.body is not None:
                return False
            if callee is None and ((x.ref is not None and x.ref.kind == "CONSTRUCTOR") or
                                   (x.spelling and x.spelling in getattr(em.u, "struct_names", ()))):
                continue                  # an implicit or bodiless constructor: its arguments are walked
            name = em.callee_name(x)
            if name.startswith(("atomic", "__shfl", "__ballot", "__any", "__all")) or \
                    not (SIDE_EFFECT_FREE_CALLS.match(name or "") or name.startswith("__ldg")):
                return False
        elif k == "DECL_REF_EXPR":
            r = x.ref
            if r is None:
                continue
            if r.kind == "PARM_DECL":
                if em.model.function_of(r) is not kernel:
                    return False
                if id(r) not in seen:       # a kernel parameter the kernel writes is a local like any other
                    seen.add(id(r))
                    if id(r) in em.an.assigned and not _local_uniform(em, kernel, r, depth + 1, seen):
                        return False
            elif r.kind == "VAR_DECL":
                if id(r) in seen:
                    continue
                seen.add(id(r))
                g = em.model.function_of(r)
                if g is None or any(c.kind in ("CUDASHARED_ATTR", "CUDACONSTANT_ATTR", "CUDADEVICE_ATTR")
                                    for c in r.children):
                    continue              # a file-scope, shared or constant variable: one value in the block
                if not _local_uniform(em, g, r, depth + 1, seen):
                    return False
    return True


def _local_uniform(em, g, decl, depth, seen) -> bool:
    init = em.init_of(decl)
    if init is not None and not uniform(em, g, init, depth, seen):
        return False
    if g.body is None:
        return True
    for x in g.body.walk():
        k = x.kind
        if k in ("BINARY_OPERATOR", "COMPOUND_ASSIGNMENT_OPERATOR") and len(x.children) == 2 and \
                (k != "BINARY_OPERATOR" or x.op == "="):
            lhs = _base(x.children[0])
            if lhs is not None and lhs.kind == "DECL_REF_EXPR" and lhs.ref is decl:
                # the value, which element or member (`a[tid] = 1`), and whether every thread gets there
                if not uniform(em, g, x.children[1], depth, seen) or \
                        not uniform(em, g, x.children[0], depth, seen) or not at_uniform(em, g, x, depth, seen):
                    return False
        elif k == "UNARY_OPERATOR" and x.children:
            c = _base(x.children[0])
            if c is not None and c.kind == "DECL_REF_EXPR" and c.ref is decl:
                if x.op == "&":
                    return False                       # written through a pointer somewhere
                if x.op in ("++", "--", "post++", "post--") and (
                        not uniform(em, g, x.children[0], depth, seen) or not at_uniform(em, g, x, depth, seen)):
                    return False
        elif k == "CALL_EXPR":
            callee = em._callee_fn(x)
            if callee is not None and any(_base(a) is not None and _base(a).kind == "DECL_REF_EXPR" and
                                          _base(a).ref is decl for a in em.call_args(x)):
                return False                           # maybe a reference parameter
            oc = x.operator_call() if callee is None else None
            if oc is not None and oc[1] and _base(oc[1][0]) is not None and _base(oc[1][0]).kind == \
                    "DECL_REF_EXPR" and _base(oc[1][0]).ref is decl:
                return False                           # an operator on a template type (`s += v`): unknown
    return True
    for x in g.body.walk():
        k = x.kind
        if k in ("BINARY_OPERATOR", "COMPOUND_ASSIGNMENT_OPERATOR") and len(x.children) == 2 and \
                (k != "BINARY_OPERATOR" or x.op == "="):
            lhs = _bare(x.children[0])
            if lhs.kind == "DECL_REF_EXPR" and lhs.ref is decl:
                if not uniform(em, g, x.children[1], depth, seen) or not at_uniform(em, g, x, depth, seen):
                    return False
        elif k == "UNARY_OPERATOR" and x.children:
            c = _bare(x.children[0])
            if c.kind == "DECL_REF_EXPR" and c.ref is decl:
                if x.op == "&":
                    return False                       # written through a pointer somewhere
                if x.op in ("++", "--", "post++", "post--") and not at_uniform(em, g, x, depth, seen):
                    return False
        elif k == "CALL_EXPR":
            callee = em._callee_fn(x)
            if callee is not None and any(_bare(a).kind == "DECL_REF_EXPR" and _bare(a).ref is decl
                                          for a in em.call_args(x)):
                return False                           # maybe a reference parameter
    return True


# ------------------------------------------------------------------ emission
def warp_size() -> E:
    return E(str(WARP), I32, lit=WARP)


def shuffle(em, name, n, args) -> E:
    """The shuffle call n (`name`, argument nodes `args`) through the emulated warp's shared slots."""
    kind, masked = SHUFFLES[name]
    if masked:
        em.check_mask(n, args[0])
        args = args[1:]
    v = em.x(args[0])
    t = v.ct.unqualified()
    if t.kind == "scalar" and not t.is_float and not t.is_bool and t.bits < 32:
        v = em.conv(v, ct.promote(t))          # CUDA's shuffles take int
        t = v.ct.unqualified()
    if t.kind != "scalar" or t.is_bool or t.bits not in (32, 64):
        em.fail(n, f"a shuffle of `{t}` in emulated 32-lane warps (32- and 64-bit scalars only)")
    if len(args) > 2:
        wv = _int(args[2])
        if wv is not None and (wv <= 0 or wv & (wv - 1) or wv > WARP):
            em.fail(args[2], f"shuffle width {wv} (CUDA's is a power of two up to 32)")
        w = em.conv(em.x(args[2]), U32)
    else:
        w = E(f"{WARP}u", U32)
    s = em.conv(em.x(args[1]), U32)
    tn = em.t.type_name(t, em)
    arr = _slots(em, t, tn)
    opencl = em.t.name == "opencl"
    hname = f"cuport_w32_shfl_{kind}_{_tag(t)}"
    em.helper(hname, _helper_text(em, hname, kind, tn, arr))
    if opencl:
        from porter.translate.kernel import opencl_local
        opencl_local.use(em, arr)
        return E(f"{hname}({arr}, {v.text}, {s.text}, {w.text}, {em.warp32.block}u)", t)
    return E(f"{hname}({v.text}, {s.text}, {w.text}, {em.warp32.block}u)", t)


def _tag(t) -> str:
    return re.sub(r"\W+", "_", ct.spell(t)).strip("_")


def _slots(em, t, tn) -> str:
    """The shared array of one slot per thread for values of type t, declared with the kernel's shared memory."""
    key = ct.spell(t)
    name = em.warp32.slots.get(key)
    if name is None:
        name = em.fresh("cuport_w32_" + _tag(t))
        em.warp32.slots[key] = name
        n = em.warp32.block
        em.shared[name] = {"name": name, "type": ct.array(t, (n,)), "elem": t, "extern": False, "node": None,
                           "dims": (n,), "key": ("warp32", name)}
    return name


# CUDA's source lane (l: the caller's lane, s: the operand, w: the width) and whether it is in range (else the
# caller's own value), as in the subgroup helpers of glsl_builtins
_SRC = {"idx": "(l & ~(w - 1u)) + (s & (w - 1u))", "up": "l - s", "down": "l + s", "xor": "l ^ s"}
_OK = {"idx": "true", "up": "s < w && (l & (w - 1u)) >= s", "down": "s < w && (l & (w - 1u)) + s < w",
       "xor": "(l ^ s) < (l & ~(w - 1u)) + w"}


def _helper_text(em, hname, kind, tn, arr) -> str:
    if em.t.name == "opencl":
        head = f"{tn} {hname}(__local {tn}* slots, {tn} v, uint s, uint w, uint cap)"
        tid = ("(uint)(get_local_id(0) + get_local_size(0) * (get_local_id(1) + get_local_size(1) * "
               "get_local_id(2)))")
        size = "(uint)(get_local_size(0) * get_local_size(1) * get_local_size(2))"
        barrier = "barrier(CLK_LOCAL_MEM_FENCE);"
        slots = "slots"
    else:
        head = f"{tn} {hname}({tn} v, uint s, uint w, uint cap)"
        tid = "gl_LocalInvocationIndex"
        size = "(gl_WorkGroupSize.x * gl_WorkGroupSize.y * gl_WorkGroupSize.z)"
        barrier = "barrier();"
        slots = arr
    return (f"{head}\n{{\n"
            f"    // CUDA's warp: 32 consecutive linear thread ids; every thread of the block calls this\n"
            f"    uint t = {tid};\n"
            f"    uint n = min({size}, cap);  // the slots: the launch's block\n"
            f"    uint l = t & {WARP - 1}u;\n"
            f"    w = min(w, {WARP}u);\n"
            f"    bool ok = {_OK[kind]};\n"
            f"    uint src = (t & ~{WARP - 1}u) + (({_SRC[kind]}) & {WARP - 1}u);\n"
            f"    if (t < n) {slots}[t] = v;\n"
            f"    {barrier}\n"
            f"    {tn} r = (ok && src < n) ? {slots}[src] : v;\n"
            f"    {barrier}\n"
            f"    return r;\n}}")
