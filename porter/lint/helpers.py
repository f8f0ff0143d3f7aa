"""Small queries several rules share. Rules stay one-per-file; what they have in common lives here."""
from __future__ import annotations

from porter.diagnostics import Edit
from porter.frontend.model import Node

# lower number binds tighter; only what we need to decide on parentheses
_PREC = {"*": 3, "/": 3, "%": 3, "+": 4, "-": 4, "<<": 5, ">>": 5, "<": 6, ">": 6, "<=": 6, ">=": 6, "==": 7,
         "!=": 7, "&": 8, "^": 9, "|": 10, "&&": 11, "||": 12, "=": 14}


def precedence(node: Node) -> int:
    if node.kind == "BINARY_OPERATOR":
        return _PREC.get(node.op, 14)
    if node.kind in ("CONDITIONAL_OPERATOR", "COMPOUND_ASSIGNMENT_OPERATOR"):
        return 13
    return 0


def operand_text(node: Node, op: str) -> str:
    """Source of `node` ready to be the left operand of `op`, parenthesised when needed."""
    t = node.text
    if precedence(node) > _PREC.get(op, 0) or (precedence(node) == _PREC.get(op, 0) and node.kind != "BINARY_OPERATOR"):
        return f"({t})"
    return t


def int_value(node: Node | None):
    if node is None:
        return None
    v = node.value
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def spelled(node: Node) -> bool:
    """Node written in the file itself, or the whole expansion of one object-like macro use: safe to replace by
    an edit. Every node inside an expansion has the use's range, so only the outermost one (no parent with the
    same range) is the use: `threadIdx.x % WARP` inside `#define LANE (threadIdx.x % WARP)` is not `LANE`."""
    m = node.model.macro_at(node.start, node.end)
    if m is None:
        return True
    if node.text != m:            # a function-like use, or a node of a macro argument
        return False
    p = node.parent
    return p is None or p.start != node.start or p.end != node.end


def seen_text(node: Node) -> str:
    """What a rule read at the node's range, for Edit.seen: its text when spelled, else a description of the
    expansion that no file text equals (the fix engine then refuses the edit)."""
    return node.text if spelled(node) else f"\0code inside the expansion of macro {node.macro}"


def in_device_code(node: Node) -> bool:
    f = node.model.function_of(node)
    return f is not None and f.is_device_code


def replace_binary(node: Node, new_op: str, rhs_text: str) -> Edit | None:
    """Rewrite `lhs OP rhs` as `lhs NEW_OP rhs_text`, keeping lhs text; None when not editable."""
    lhs = node.children[0]
    if not spelled(node) or not spelled(lhs):
        return None
    return Edit(node.start, node.end, f"{operand_text(lhs, new_op)} {new_op} {rhs_text}", node.text)


def is_shift_count(node: Node) -> bool:
    """The value is used as the right operand of a shift: a bit position, not a lane."""
    child, p = node, node.parent
    while p is not None and p.kind in ("PAREN_EXPR", "CSTYLE_CAST_EXPR", "UNEXPOSED_EXPR"):
        child, p = p, p.parent
    return p is not None and p.kind == "BINARY_OPERATOR" and p.op in ("<<", ">>") and len(p.children) == 2 and \
        p.children[1] is child


# --- warp-size family (CP10x): shuffles, lane / warp ids, array subscripts, warp-aware functions ---

SHUFFLES = {"__shfl_sync", "__shfl_up_sync", "__shfl_down_sync", "__shfl_xor_sync", "__shfl", "__shfl_up",
            "__shfl_down", "__shfl_xor"}


def shuffle_operands(call: Node):
    """(lane-or-offset argument, explicit width argument or None) of a warp shuffle call, else None."""
    if call.kind != "CALL_EXPR" or call.callee not in SHUFFLES:
        return None
    args = call.args()
    i = 2 if call.callee.endswith("_sync") else 1
    if len(args) <= i:
        return None
    return args[i], (args[i + 1] if len(args) > i + 1 else None)


def warp_index_kind(an, node: Node | None, depth: int = 0):
    """('lane' | 'warp', divisor node) when `node` is a lane id (`t % W`, `t & (W - 1)`) or a warp id (`t / W`,
    `t >> 5`) of a thread-dependent `t`, W being 32 (literal or named) or warpSize; follows single-assignment
    locals. None otherwise."""
    if node is None or depth > 4:
        return None
    n = node.strip
    if n.kind == "DECL_REF_EXPR" and n.ref is not None:
        return warp_index_kind(an, an.definition(n.ref), depth + 1)
    if n.kind != "BINARY_OPERATOR" or len(n.children) != 2 or n.op not in ("%", "&", "/", ">>"):
        return None
    lhs, rhs = n.children
    if n.op == "&" and int_value(lhs) is not None and int_value(rhs) is None:
        lhs, rhs = rhs, lhs             # `(WARP_SIZE - 1) & tid` (HeCBench sptrsv)
    if int_value(lhs) is not None or not an.thread_dependent(lhs):
        return None
    r, v, op = rhs.strip, int_value(rhs), n.op
    ws = r.is_warp_size()
    ws_minus_1 = r.kind == "BINARY_OPERATOR" and r.op == "-" and len(r.children) == 2 and \
        r.children[0].is_warp_size() and int_value(r.children[1]) == 1
    if (op == "%" and (v == 32 or ws)) or (op == "&" and (v == 31 or ws_minus_1)):
        return "lane", rhs
    if (op == "/" and (v == 32 or ws)) or (op == ">>" and v == 5):
        return "warp", rhs
    return None


def array_subscripts(model, decl: Node):
    """Each subscript of the array variable `decl`: (outermost ARRAY_SUBSCRIPT_EXPR, indices outermost first).
    `x[i][j]` gives (node, [i, j])."""
    out = []
    for n in model.refs_to(decl):
        idx, cur = [], n
        p = cur.parent
        while p is not None and p.kind in ("PAREN_EXPR", "UNEXPOSED_EXPR"):
            cur, p = p, p.parent
        while p is not None and p.kind == "ARRAY_SUBSCRIPT_EXPR" and len(p.children) == 2 and p.children[0] is cur:
            idx.append(p.children[1])
            cur, p = p, p.parent
        if idx:
            out.append((cur, idx))
    return out


def function_by_call(model, call: Node):
    """The in-file Function a call resolves to (by declaration, else by a unique name: template calls)."""
    return call_target(model, call)


def warp_evidence(an, fn, depth: int = 2, _seen=None):
    """First node in `fn` (or an in-file function it calls) that shows warp-level code: a warp intrinsic or a
    lane / warp id computed from a thread index. None when there is none."""
    from porter.frontend.model import WARP_INTRINSICS
    if fn is None or fn.body is None:
        return None
    seen = _seen if _seen is not None else set()
    if id(fn) in seen:
        return None
    seen.add(id(fn))
    calls = []
    for n in fn.body.model.kinds_in(fn.body, "CALL_EXPR", "BINARY_OPERATOR"):
        if n.kind == "CALL_EXPR":
            if n.callee in WARP_INTRINSICS:
                return n
            calls.append(n)
        elif warp_index_kind(an, n) is not None:
            return n
    if depth > 0:
        for c in calls:
            e = warp_evidence(an, function_by_call(fn.node.model, c), depth - 1, seen)
            if e is not None:
                return e
    return None


# --- launch geometry (block shape of a kernel) ---

def launch_block(model, kernel: str, settings=None) -> tuple[int, int, int] | None:
    """The block shape of `kernel` when it is known exactly: config, `// cuport: launch` annotation, or the launch
    sites of this file when they all agree (porter.analysis.launch decides; this keeps the rules' simple form)."""
    from porter.analysis.launch import block_shapes
    shapes = block_shapes(model, kernel, settings)
    dims = {s.dims for s in shapes if s.exact and s.dims is not None and s.source != "launch_bounds"}
    if len(dims) != 1 or any(not s.exact for s in shapes):
        return None
    return tuple(int(x) for x in dims.pop())


def launches_of(model, kernel: str) -> list:
    """`[ls for ls in model.launches if ls.kernel == kernel]` (in order), from an index built once per model."""
    idx = getattr(model, "_launches_by_kernel", None)
    if idx is None or idx[0] != len(model.launches):
        by_name: dict = {}
        for ls in model.launches:
            by_name.setdefault(ls.kernel, []).append(ls)
        idx = model._launches_by_kernel = (len(model.launches), by_name)
    return idx[1].get(kernel, [])


def name_span(fn) -> tuple[int, int]:
    """Offsets of a function's name token (for reporting at `void kernel(`), else the declaration start."""
    for t in fn.node.model.tokens_between(fn.node.start, fn.body.start if fn.body is not None else fn.node.end):
        if t.kind == "IDENTIFIER" and t.spelling == fn.name:
            return t.start, t.end
    return fn.node.start, fn.node.start


# --- lane masks (CP20x) and warp-synchronous shared memory (CP30x) ---

# calls whose result is a lane mask: 32 bits in CUDA, 64 bits in HIP
MASK_SOURCES = {"__ballot_sync", "__ballot", "__activemask", "__match_any_sync", "__match_all_sync",
                "__lanemask_lt", "__lanemask_le", "__lanemask_gt", "__lanemask_ge", "__lanemask_eq"}
# 32-bit bit intrinsics and their 64-bit forms
BIT_INTRINSICS = {"__popc": "__popcll", "__ffs": "__ffsll", "__clz": "__clzll", "__brev": "__brevll"}
WARP_BARRIERS = {"__syncthreads", "__syncthreads_count", "__syncthreads_and", "__syncthreads_or", "__syncwarp"}
_LANE_NAME = r"(?i)^(lane|lane_?id|laneid|lane_?idx|lane_?index)$"
_PARENS = ("PAREN_EXPR", "UNEXPOSED_EXPR")


def sync_intrinsics() -> set[str]:
    """Warp intrinsics that take a lane mask as their first argument (`*_sync`, `__syncwarp`)."""
    from porter.frontend.model import WARP_INTRINSICS
    return {n for n in WARP_INTRINSICS if n.endswith("_sync")} | {"__syncwarp"}


def sync_mask(call: Node) -> Node | None:
    """The mask argument of a `*_sync` intrinsic call (None for `__syncwarp()` with its default mask)."""
    if call.kind != "CALL_EXPR" or call.callee not in sync_intrinsics():     # callee: dependent calls too
        return None
    args = call.args()
    return args[0] if args else None


def is_barrier_call(node: Node) -> bool:
    """`__syncthreads()`, `__syncwarp()` and friends, or a cooperative-groups `g.sync()`."""
    return node.kind == "CALL_EXPR" and (node.spelling in WARP_BARRIERS or
                                         (node.spelling == "sync" and bool(node.children) and
                                          (node.children[0].kind == "MEMBER_REF_EXPR" or _cg_sync(node))))


def _cg_sync(node: Node) -> bool:
    """`cg::sync(group)`: the free function of cooperative groups, its argument a group object."""
    from porter.analysis.coop_groups import group_kind
    args = node.args()
    return len(args) == 1 and group_kind(args[0].strip) is not None


def contains_barrier(node: Node) -> bool:
    return any(is_barrier_call(n) for n in node.model.kind_in(node, "CALL_EXPR"))


def use_parent(node: Node) -> tuple[Node, Node | None]:
    """(child, parent) skipping parentheses: the context a value is used in."""
    child, p = node, node.parent
    while p is not None and p.kind in _PARENS:
        child, p = p, p.parent
    return child, p


def is_unsigned_type(node: Node) -> bool:
    try:
        sp = node.canonical_type.spelling
    except Exception:
        return False
    return sp.startswith("unsigned") or sp == "bool"


def declared_auto(decl: Node) -> bool:
    """A variable declared with `auto` / `decltype(...)`: its type follows the initialiser."""
    import re
    text = decl.text
    m = re.search(r"\b" + re.escape(decl.spelling) + r"\b", text) if decl.spelling else None
    head = text[:m.start()] if m else text
    return re.search(r"\b(auto|decltype)\b", head) is not None


def is_lane_id(an, node: Node | None, depth: int = 0) -> bool:
    """A lane index: `t % 32`, `t & 31`, `t % warpSize` of a block-local thread index (no blockIdx: that is a
    bit position in a global bitmap), `__lane_id()`, or a variable / parameter named `lane`, `laneId`..."""
    if node is None or depth > 4:
        return False
    n = node.strip
    if n.kind == "CALL_EXPR" and n.spelling in ("__lane_id", "__laneid", "laneid", "lane_id"):
        return True
    if n.kind == "DECL_REF_EXPR" and n.ref is not None and n.ref.kind in ("VAR_DECL", "PARM_DECL"):
        if int_value(n) is not None:
            return False
        d = an.definition(n.ref) if n.ref.kind == "VAR_DECL" else None
        if d is not None and is_lane_id(an, d, depth + 1):
            return True
        import re
        return re.match(_LANE_NAME, n.spelling) is not None
    k = warp_index_kind(an, n)
    if k is None or k[0] != "lane":
        return False
    p = an.poly(n.children[0])
    return p is None or not p.depends_on("blockIdx")


def lane_mask_shift(an, node: Node) -> str | None:
    """The 32-bit lane-mask idioms: 'bit' for `1u << lane`, 'above' for `~0u << lane`, 'below' for
    `0xffffffffu >> (32 - lane)`; None for anything else (64-bit operands, non-lane shift counts)."""
    if node.kind != "BINARY_OPERATOR" or len(node.children) != 2 or node.op not in ("<<", ">>"):
        return None
    lhs, rhs = node.children
    v = int_value(lhs)
    if v is None or (lhs.type_size() or 4) > 4:
        return None
    full = v & 0xffffffff == 0xffffffff
    if node.op == "<<":
        if not is_lane_id(an, rhs):
            return None
        return "bit" if v == 1 else "above" if full else None
    r = rhs.strip
    if full and r.kind == "BINARY_OPERATOR" and r.op == "-" and len(r.children) == 2 and \
            (int_value(r.children[0]) == 32 or r.children[0].is_warp_size()) and is_lane_id(an, r.children[1]):
        return "below"
    return None


def is_bitmap_store(node: Node) -> bool:
    """`bits[w] |= 1u << lane`, `atomicOr(&bits[w], 1u << lane)`: a bit of a bitmap word, not a lane mask."""
    cur = node
    child, p = use_parent(cur)
    while p is not None and (p.kind == "UNARY_OPERATOR" and p.op == "~" or
                             p.kind == "BINARY_OPERATOR" and p.op == "-" and int_value(p.children[-1]) == 1):
        child, p = use_parent(p)
    if p is None:
        return False
    if p.kind in ("COMPOUND_ASSIGNMENT_OPERATOR", "BINARY_OPERATOR") and p.op in ("=", "|=", "&=", "^=") and \
            len(p.children) == 2 and p.children[1] is child:
        return p.children[0].strip.kind in ("ARRAY_SUBSCRIPT_EXPR", "MEMBER_REF_EXPR") or \
            (p.children[0].strip.kind == "UNARY_OPERATOR" and p.children[0].strip.op == "*")
    return p.kind == "CALL_EXPR" and p.spelling.startswith("atomic")


def _mask_cache(an) -> dict:
    c = getattr(an, "_lane_mask_cache", None)
    if c is None:
        c = an._lane_mask_cache = {}
    return c


def variable_writes(decl: Node):
    """(operator node, assigned expression or None) for each write to a variable after its declaration:
    `v = e`, `v op= e`, `++v`, `&v` (address taken: unknown writes)."""
    fn = decl.enclosing("FUNCTION_DECL", "FUNCTION_TEMPLATE", "CXX_METHOD")
    model = decl.model
    ok = model._preorder_ok
    if ok is None:
        ok = model._preorder()
    if fn is None:
        nodes = model.refs_to(decl)
    elif ok and fn._lo >= 0:
        # the references inside fn, in preorder: the order fn.walk() meets them
        lo, hi = fn._lo, fn._hi
        nodes = [n for n in model.refs_to(decl) if lo <= n._lo < hi]
    else:
        nodes = [n for n in fn.walk() if n.kind == "DECL_REF_EXPR" and n.ref is decl]
    for n in nodes:
        child, p = use_parent(n)
        if p is None:
            continue
        if p.kind in ("BINARY_OPERATOR", "COMPOUND_ASSIGNMENT_OPERATOR") and len(p.children) == 2 and \
                p.children[0] is child and (p.kind == "COMPOUND_ASSIGNMENT_OPERATOR" or p.op == "="):
            yield p, p.children[1]
        elif p.kind == "UNARY_OPERATOR" and p.op in ("++", "--", "post++", "post--", "&"):
            yield p, None


def is_mask_value(an, node: Node | None, depth: int = 0) -> bool:
    """The value is a lane mask: a ballot / activemask / match result, a `1u << lane` lane mask, bitwise
    combinations of those, or a variable (or a parameter, through this file's call sites) holding one."""
    if node is None or depth > 10:
        return False
    n = node.strip
    k = n.kind
    if k == "CALL_EXPR":
        return n.spelling in MASK_SOURCES
    if k == "BINARY_OPERATOR" and len(n.children) == 2:
        op = n.op
        a, b = n.children
        if op in ("&", "|", "^"):
            return is_mask_value(an, a, depth + 1) or is_mask_value(an, b, depth + 1)
        if op in ("<<", ">>"):
            return lane_mask_shift(an, n) is not None or is_mask_value(an, a, depth + 1)
        if op == "-" and int_value(b) == 1:
            return is_mask_value(an, a, depth + 1)
        return False
    if k == "UNARY_OPERATOR" and n.op == "~" and n.children:
        return is_mask_value(an, n.children[0], depth + 1)
    if k == "CONDITIONAL_OPERATOR" and len(n.children) == 3:
        return is_mask_value(an, n.children[1], depth + 1) or is_mask_value(an, n.children[2], depth + 1)
    if k == "DECL_REF_EXPR" and n.ref is not None and n.ref.kind in ("VAR_DECL", "PARM_DECL"):
        return mask_variable(an, n.ref, depth + 1)
    return False


def mask_variable(an, decl: Node, depth: int = 0) -> bool:
    """A local or parameter that holds a lane mask (see is_mask_value)."""
    cache = _mask_cache(an)
    key = ("var", id(decl))
    if key in cache:
        return cache[key]
    cache[key] = False  # cycle guard
    r = False
    if decl.kind == "VAR_DECL":
        exprs = [c for c in decl.children if not c.kind.endswith("_ATTR") and c.kind not in ("TYPE_REF",
                                                                                                "NAMESPACE_REF")]
        if exprs and is_mask_value(an, exprs[-1], depth):
            r = True
        else:
            r = any(e is not None and is_mask_value(an, e, depth) for _, e in variable_writes(decl))
    elif decl.kind == "PARM_DECL":
        fn = decl.parent
        params = [c for c in fn.children if c.kind == "PARM_DECL"] if fn is not None else []
        i = next((j for j, c in enumerate(params) if c is decl), None)
        if i is not None:
            for call in decl.model.of_kind("CALL_EXPR"):
                if call.spelling != fn.spelling:
                    continue
                f = function_by_call(decl.model, call)
                args = call.args()
                if f is not None and f.node is fn and i < len(args) and is_mask_value(an, args[i], depth):
                    r = True
                    break
    cache[key] = r
    return r


def _nonnegative(node: Node) -> bool:
    v = int_value(node)
    return v >= 0 if v is not None else is_unsigned_type(node)


def widening_keeps_value(node: Node, signed: bool = False, depth: int = 0) -> bool:
    """Would every use of `node` (a 32-bit value) read the same if its type became 64 bits wide (HIP masks)?
    True when the uses only mask it, shift it right, compare it, test it or convert it to another integer;
    false for `~`, `-`, `<<`, arithmetic that can overflow, `auto` copies and unknown calls. `signed`: the value
    is a signed int, so only its bits matter (no ordering comparisons, no `>>`, no conversion to 64 bits)."""
    if depth > 12:
        return False
    child, p = use_parent(node)
    if p is None:
        return False
    k = p.kind
    if k in ("CSTYLE_CAST_EXPR", "CXX_STATIC_CAST_EXPR", "CXX_FUNCTIONAL_CAST_EXPR"):
        return not signed or (p.type_size() or 8) <= 4
    if k == "BINARY_OPERATOR" and len(p.children) == 2:
        op, left = p.op, p.children[0] is child
        other = p.children[1] if left else p.children[0]
        if op in ("&&", "||"):
            return True
        if op in ("==", "!="):
            return int_value(other) == 0 if signed else _nonnegative(other)
        if op in ("<", ">", "<=", ">="):
            return not signed and _nonnegative(other)
        if op == "&":
            return widening_keeps_value(p, signed, depth + 1)
        if op in ("|", "^"):
            return _nonnegative(other) and widening_keeps_value(p, signed, depth + 1)
        if op == ">>":
            return not left or (not signed and widening_keeps_value(p, signed, depth + 1))
        if op == "<<":
            return not left
        if op == "=":
            return left or (p.children[0].type_size() or 8) <= 4 or not signed
        if op == "-" and left and int_value(other) == 1:
            # `m & (m - 1)` clears the lowest set bit; `(1u << lane) - 1` cannot wrap
            c2, g = use_parent(p)
            if g is not None and g.kind in ("BINARY_OPERATOR", "COMPOUND_ASSIGNMENT_OPERATOR") and \
                    g.op in ("&", "&=") and len(g.children) == 2:
                o2 = g.children[0] if g.children[1] is c2 else g.children[1]
                if o2.strip.text == child.strip.text:
                    return g.kind == "COMPOUND_ASSIGNMENT_OPERATOR" or widening_keeps_value(g, signed, depth + 1)
            s = child.strip
            if s.kind == "BINARY_OPERATOR" and s.op == "<<" and int_value(s.children[0]) == 1:
                return widening_keeps_value(p, signed, depth + 1)
            return False
        return False
    if k == "COMPOUND_ASSIGNMENT_OPERATOR" and len(p.children) == 2:
        if p.children[0] is child:
            return True      # a write to the variable: judged by the caller
        if p.op in ("<<=", ">>="):
            return True
        if p.op in ("&=", "|=", "^=", "+=", "-=", "*="):
            return not signed or (p.children[0].type_size() or 8) <= 4
        return False
    if k == "UNARY_OPERATOR":
        return p.op == "!"
    if k == "CONDITIONAL_OPERATOR" and len(p.children) == 3:
        if p.children[0] is child:
            return True
        other = p.children[2] if p.children[1] is child else p.children[1]
        return _nonnegative(other) and widening_keeps_value(p, signed, depth + 1)
    if k in ("IF_STMT", "WHILE_STMT", "SWITCH_STMT", "DO_STMT", "FOR_STMT"):
        return child.kind not in ("COMPOUND_STMT",) and not child.kind.endswith("_STMT")
    if k == "ARRAY_SUBSCRIPT_EXPR":
        return len(p.children) == 2 and p.children[1] is child
    if k == "VAR_DECL":
        if declared_auto(p) or "&" in p.type:
            return False
        return not signed or (p.type_size() or 8) <= 4
    if k == "RETURN_STMT":
        fn = p.enclosing("FUNCTION_DECL", "FUNCTION_TEMPLATE", "CXX_METHOD")
        size = fn.result_type_size() if fn is not None else None
        return size is not None and (not signed or size <= 4)
    if k == "CALL_EXPR":
        args = p.args()
        if not any(a is child for a in args):
            return False
        name = p.spelling
        if name in BIT_INTRINSICS or name in BIT_INTRINSICS.values() or name in sync_intrinsics() or \
                name in MASK_SOURCES:
            return True
        f = function_by_call(p.model, p)
        if f is None:
            return False
        i = next(j for j, a in enumerate(args) if a is child)
        if i >= len(f.params):
            return False
        prm = f.params[i]
        size = prm.node.type_size()
        if prm.is_pointer or "&" in prm.type or size is None:
            return False
        return not signed or size <= 4
    return False


_STEP_CALLS = {"max", "min", "fmaxf", "fminf", "fmax", "fmin", "__hadd", "__hmax", "__hmin"}


def _subscript(node: Node):
    """(base declaration, index) of a one-level `p[i]`, else None."""
    n = node.strip
    if n.kind != "ARRAY_SUBSCRIPT_EXPR" or len(n.children) != 2:
        return None
    b = n.children[0].strip
    if b.kind != "DECL_REF_EXPR" or b.ref is None:
        return None
    return b.ref, n.children[1]


def reduction_step(an, expr: Node):
    """A tree-reduction step `s[i] += s[i + K]` (also `s[i] = s[i] + s[i + K]`, `s[i] = fmaxf(s[i], s[i + K])`):
    (written subscript, read subscript, K as a Poly) with i thread dependent and K != 0; else None."""
    e = expr.strip
    if e.kind == "COMPOUND_ASSIGNMENT_OPERATOR" and e.op in ("+=", "*=", "|=", "&=", "^=") and len(e.children) == 2:
        lhs, reads = e.children[0], [e.children[1]]
    elif e.kind == "BINARY_OPERATOR" and e.op == "=" and len(e.children) == 2:
        lhs, r = e.children[0], e.children[1].strip
        if r.kind == "BINARY_OPERATOR" and r.op in ("+", "*", "|", "&", "^") and len(r.children) == 2:
            reads = list(r.children)
        elif r.kind == "CALL_EXPR" and r.spelling in _STEP_CALLS and len(r.args()) == 2:
            reads = r.args()
        else:
            return None
    else:
        return None
    w = _subscript(lhs)
    if w is None:
        return None
    wp = an.poly(w[1])
    if wp is None or wp.is_const():
        return None
    others = []
    for rd in reads:
        s = _subscript(rd)
        if s is None or s[0] is not w[0]:
            return None
        rp = an.poly(s[1])
        if rp is None:
            return None
        others.append((rd.strip, rp - wp))
    if len(reads) == 2:
        # one operand is s[i] itself, the other the partner
        others = [o for o in others if o[1].terms]
        if len(others) != 1:
            return None
    rd, k = others[0]
    if not k.terms:
        return None
    return lhs.strip, rd, k


# --- constant-time function lookups (model.function_of / function_by_call scan every function per query) ---

def function_at(node: Node):
    """The Function whose declaration encloses `node` (same answer as model.function_of, through an index built
    once per model: files with thousands of functions stay linear)."""
    model = node.model
    idx = getattr(model, "_function_index", None)
    # keyed by the function count, not the index size: two Functions may share a node (the index is smaller)
    if idx is None or idx[0] != len(model.functions):
        idx = model._function_index = (len(model.functions), {id(f.node): f for f in model.functions})
    fn = node.enclosing("FUNCTION_DECL", "FUNCTION_TEMPLATE", "CXX_METHOD")
    return idx[1].get(id(fn)) if fn is not None else None


def call_target(model, call: Node):
    """function_by_call through an index built once per model."""
    idx = getattr(model, "_call_index", None)
    if idx is None or idx[0] != len(model.functions):
        by_node = {id(f.node): f for f in model.functions}
        by_name: dict = {}
        for f in model.functions:
            if f.body is not None:
                by_name.setdefault(f.name, []).append(f)
        idx = model._call_index = (len(model.functions), by_node, by_name)
    _, by_node, by_name = idx
    if call.ref is not None:
        f = by_node.get(id(call.ref))
        if f is not None:
            return f
    cands = by_name.get(call.callee, ())
    return cands[0] if len(cands) == 1 else None


# --- kernels defined outside the main file (a header next to it) ----------------------------------------------

_WARP_WORDS = ("warp", "lane", "shfl", "ballot", "__any", "__all", "__match", "__reduce", "__activemask",
               "tiled_partition", "thread_block_tile", "coalesced", "__popc", "__ffs", "cooperative_groups")
_LANE_MATH = {("%", "32"), ("&", "31"), ("/", "32"), (">>", "5"), ("&", "0x1f"), ("&", "0x1F"), ("%", "warpSize"),
              ("/", "warpSize")}


def header_kernel_is_warp_free(launch: Node, kernel: str, depth: int = 2) -> bool:
    """True when the launched kernel is defined in an included header (the model holds only the main file) and
    neither it nor the functions it calls (to `depth`) show anything warp-level in their tokens: no warp or lane
    name, no warp intrinsic, no `% 32`, `& 31`, `/ 32`, `>> 5`. Conservative: False when unsure."""
    try:
        ref = None
        for c in launch._cursor.walk_preorder():
            if c.kind.name in ("DECL_REF_EXPR", "OVERLOADED_DECL_REF") and c.spelling == kernel:
                ref = c.referenced
                break
        # a function (template) defined in a header; a function pointer (`auto k = kern<int>; k<<<...>>>`,
        # HeCBench moe-align) or a kernel only declared here is not in view: unsure
        if ref is None or ref.kind.name not in ("FUNCTION_DECL", "FUNCTION_TEMPLATE"):
            return False
        defn = ref.get_definition()
        if defn is None or defn.location.file is None or \
                defn.location.file.name == launch._cursor.translation_unit.spelling:
            return False
        return _warp_free(defn, depth, set())
    except Exception:              # a cursor the bindings cannot follow: unsure
        return False


def _header_tokens(defn) -> list[str]:
    """The tokens of a definition in another file, from that file's text (libclang tokenizes the main file only);
    comments are kept: a comment that mentions warps only makes the check more cautious."""
    import re
    ext = defn.extent
    try:
        with open(ext.start.file.name, "rb") as fh:
            text = fh.read()[ext.start.offset:ext.end.offset].decode("latin-1")
    except (OSError, AttributeError):
        return []
    return re.findall(r"[A-Za-z_]\w*|0[xX][0-9a-fA-F]+|\d+|>>=|<<=|>>|<<|[-+*/%&|^!=<>]=|&&|\|\||\S", text)


def _thread_names(toks) -> set:
    """Names assigned (plain `x = ...`, `x op= ...`, `T x = ...`) from threadIdx or from such names."""
    stmts, cur = [], []
    for t in toks:
        if t in (";", "{", "}"):
            stmts.append(cur)
            cur = []
        else:
            cur.append(t)
    stmts.append(cur)
    tainted: set = set()
    for _ in range(6):
        before = len(tainted)
        for st in stmts:
            i = next((j for j, t in enumerate(st) if t in ("=", "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=",
                                                             "<<=", ">>=")), None)
            if i is None or i == 0 or not (st[i - 1][0].isalpha() or st[i - 1][0] == "_"):
                continue
            rest = st[i + 1:]
            if "threadIdx" in rest or any(t in tainted for t in rest):
                tainted.add(st[i - 1])
        if len(tainted) == before:
            break
    return tainted


def _left_operand(toks, i) -> list:
    """Tokens of the operand left of the operator at toks[i]: a parenthesised group or a name (`threadIdx.x`)."""
    j = i - 1
    if j >= 0 and toks[j] == ")":
        depth = 0
        while j >= 0:
            depth += toks[j] == ")"
            depth -= toks[j] == "("
            if depth == 0:
                break
            j -= 1
        return toks[max(j, 0):i]
    k = j
    while k - 2 >= 0 and toks[k - 1] in (".", "->"):
        k -= 2
    return toks[max(k, 0):i]


def _warp_free(defn, depth, seen) -> bool:
    if defn is None or defn.location.file is None or defn.hash in seen:
        return defn is not None and defn.hash in seen
    seen.add(defn.hash)
    toks = _header_tokens(defn)
    if not toks:
        return False
    threads = None
    for i, t in enumerate(toks):
        low = t.lower()
        if any(w in low for w in _WARP_WORDS):
            return False
        if i + 1 < len(toks) and (t, toks[i + 1]) in _LANE_MATH:
            # `x % 32` is lane math when x comes from the thread index; bit positions in 32-bit words are not
            threads = _thread_names(toks) if threads is None else threads
            operand = _left_operand(toks, i)
            if "threadIdx" in operand or any(o in threads for o in operand):
                return False
    for c in defn.walk_preorder():
        if c.kind.name == "CALL_EXPR" and c.referenced is not None:
            callee = c.referenced.get_definition()
            if callee is None:
                continue           # a builtin or a declaration only (the shim's intrinsics: names checked above)
            if depth <= 0 or not _warp_free(callee, depth - 1, seen):
                return False
    return True
