"""The final-warp stage of a block reduction, `if (tid < 32) { ...; for (o = 16; o > 0; o /= 2) v += shfl_down(v, o); }`
(HeCBench graphExecution reduceFinal, CUDA samples' reduce kernels), lowered to shared memory and work-group barriers.

The 32 threads of the stage are one CUDA warp; a subgroup may be narrower (lavapipe 4..16, OpenCL's one-lane
warps) or wider, so the shuffles cannot stay subgroup shuffles. Each shuffle step becomes a phase over a shared
array of 32 slots: every thread of the stage stores the shuffled value at its lane, a barrier, each reads the slot
of its source lane (its own slot when that lane is past the 32, as CUDA returns the caller's value), a barrier.
That is CUDA's value in every one of the 32 lanes, at any subgroup size. The offsets are CUDA's (warpSize and a
tile's size are 32 in the stage): the loop is unrolled with them.

Recognised only where it is exact: the guard is `L < 32` with L the linear thread index, the stage runs at
uniform control flow in the kernel, its loop steps a constant offset, the shuffles are `__shfl_down[_sync]` /
`__shfl_xor[_sync]` over all 32 lanes of a scalar, and nothing in the stage writes shared memory, calls a function
(other than side-effect-free math) or leaves it early. Anything else is left to the CP104 refusal."""
from __future__ import annotations

from porter.translate.kernel import ctype as ct
from porter.translate.kernel.ctype import I32
from porter.translate.kernel.target import PREC_UNARY, E

WARP = 32
_SHUFFLES = {"__shfl_down_sync": ("down", True), "__shfl_xor_sync": ("xor", True),
             "__shfl_down": ("down", False), "__shfl_xor": ("xor", False)}
_LINEAR = {("threadIdx.x",): 1, ("blockDim.x", "threadIdx.y"): 1, ("blockDim.x", "blockDim.y", "threadIdx.z"): 1}
_MAX_STEPS = 64


def _bare(n):
    n = n.strip
    while n.kind in ("PAREN_EXPR", "UNEXPOSED_EXPR", "CSTYLE_CAST_EXPR", "CXX_FUNCTIONAL_CAST_EXPR",
                     "CXX_STATIC_CAST_EXPR") and n.children:
        n = n.children[-1].strip
    return n


def _value(n, env, ws=True):
    """The integer value of n in CUDA's 32-lane warp (warpSize = 32 unless not ws), env giving variables; None
    if unknown."""
    n = _bare(n)
    if n.is_warp_size():
        return WARP if ws else None
    if n.kind == "INTEGER_LITERAL":
        return n.value if isinstance(n.value, int) else None
    if n.kind == "DECL_REF_EXPR":
        if n.ref is not None and id(n.ref) in env:
            return env[id(n.ref)]
        return n.value if isinstance(n.value, int) and n.ref_kind in ("VAR_DECL", "ENUM_CONSTANT_DECL") and \
            n.ref is not None and "const" in (n.ref.type or "") else None
    if n.kind == "BINARY_OPERATOR" and len(n.children) == 2:
        a, b = _value(n.children[0], env, ws), _value(n.children[1], env, ws)
        if a is None or b is None:
            return None
        ops = {"+": lambda: a + b, "-": lambda: a - b, "*": lambda: a * b, "/": lambda: int(a / b) if b else None,
               ">>": lambda: a >> b if b >= 0 else None, "<<": lambda: a << b if 0 <= b < 64 else None,
               "<": lambda: int(a < b), "<=": lambda: int(a <= b), ">": lambda: int(a > b),
               ">=": lambda: int(a >= b), "!=": lambda: int(a != b), "&": lambda: a & b, "|": lambda: a | b}
        f = ops.get(n.op)
        return f() if f is not None else None
    return None


def _offsets(em, loop):
    """(loop variable, [its values]) of `for (int o = K; cond; step)` with constant K, cond and step; else None."""
    kids = loop.children
    if len(kids) != 4 or kids[0].kind != "DECL_STMT" or len(kids[0].children) != 1:
        return None
    var = kids[0].children[0]
    init, cond, inc = em.init_of(var), kids[1], kids[2]
    if var.kind != "VAR_DECL" or init is None or em.decl_type(var).kind != "scalar":
        return None
    env = {id(var): _value(init, {})}
    if env[id(var)] is None:
        return None
    vals = []
    while True:
        c = _value(cond, env)
        if c is None:
            return None
        if not c:
            return var, vals
        vals.append(env[id(var)])
        if len(vals) > _MAX_STEPS:
            return None
        s = _bare(inc)
        if s.kind == "COMPOUND_ASSIGNMENT_OPERATOR" and _refers_to(s.children[0], var):
            op = s.op[:-1]
            fake = _value(s.children[1], env)
            if fake is None:
                return None
            cur = env[id(var)]
            nxt = {"/": lambda: int(cur / fake) if fake else None, ">>": lambda: cur >> fake if fake >= 0 else None,
                   "*": lambda: cur * fake, "<<": lambda: cur << fake if 0 <= fake < 64 else None,
                   "+": lambda: cur + fake, "-": lambda: cur - fake}.get(op, lambda: None)()
        elif s.kind == "BINARY_OPERATOR" and s.op == "=" and _refers_to(s.children[0], var):
            nxt = _value(s.children[1], env)
        elif s.kind == "UNARY_OPERATOR" and s.op in ("++", "post++", "--", "post--") and _refers_to(s.children[0], var):
            nxt = env[id(var)] + (1 if "++" in s.op else -1)
        else:
            return None
        if nxt is None:
            return None
        env[id(var)] = nxt


def _refers_to(n, decl) -> bool:
    n = _bare(n)
    return n.kind == "DECL_REF_EXPR" and n.ref is decl


def _local_scalar(em, n) -> bool:
    n = _bare(n)
    if n.kind != "DECL_REF_EXPR" or n.ref is None or n.ref.kind not in ("VAR_DECL", "PARM_DECL"):
        return False
    d = n.ref
    if any(c.kind in ("CUDASHARED_ATTR", "CUDACONSTANT_ATTR", "CUDADEVICE_ATTR") for c in d.children):
        return False
    return em.model.function_of(d) is not None and em.decl_type(d).kind == "scalar"


def _linear_guard(em, cond):
    """L of the guard `L < 32` (`L <= 31`, `32 > L`) when L is the linear thread index; else None."""
    n = _bare(cond)
    if n.kind != "BINARY_OPERATOR" or len(n.children) != 2:
        return None
    a, b = n.children
    # a literal 32 (`tid < warpSize` is the first subgroup: translated as written, exact already)
    if (n.op == "<" and _value(b, {}, False) == WARP) or (n.op == "<=" and _value(b, {}, False) == WARP - 1):
        lin = a
    elif (n.op == ">" and _value(a, {}, False) == WARP) or (n.op == ">=" and _value(a, {}, False) == WARP - 1):
        lin = b
    else:
        return None
    p = em.an.poly(lin)
    if p is None:
        return None
    terms = {tuple(sorted(k)): v for k, v in p.terms.items()}
    blk = em.launch.block if em.launch is not None else None
    one_d = bool(blk) and blk[1] == 1 and blk[2] == 1
    if terms == _LINEAR or (terms == {("threadIdx.x",): 1} and one_d):
        return lin
    return None


class _Stage:
    def __init__(self):
        self.pre, self.post, self.decls = [], [], []
        self.loop = None
        self.shuffles = {}          # id(statement) -> [(call node, kind, value node, delta node)]


def _statements(body):
    out = []
    for s in (body.children if body.kind == "COMPOUND_STMT" else [body]):
        if s.kind == "COMPOUND_STMT":
            return None           # a nested block's locals would leave their scope when split into phases
        if s.kind != "NULL_STMT":
            out.append(s)
    return out


def _shuffle(em, call):
    """(kind, value node, delta node) of a 32-lane shuffle call; None when it is not one cuport lowers here."""
    name = em.callee_name(call)
    if name not in _SHUFFLES:
        return None
    kind, masked = _SHUFFLES[name]
    args = em.call_args(call)
    if len(args) not in ((3, 4) if masked else (2, 3)):
        return None
    if masked:
        m = _bare(args[0])
        mv = _value(m, {})
        if not ((mv is not None and mv & 0xFFFFFFFF == 0xFFFFFFFF) or
                (m.kind == "CALL_EXPR" and em.callee_name(m) == "__activemask")):
            return None
        args = args[1:]
    if len(args) == 3 and _value(args[2], {}) != WARP:
        return None
    return kind, args[0], args[1]


def _checked(em, st, stage, in_loop) -> bool:
    """Whether statement st may run as a phase: no shared-memory writes, calls, early exits; shuffles only in
    the loop, as operands of a statement (registered in stage.shuffles)."""
    from porter.translate.kernel.typeinfo import SIDE_EFFECT_FREE_CALLS
    calls, sizes = [], []
    for x in st.walk():
        k = x.kind
        if x.is_warp_size():
            sizes.append(x)
        if k in ("RETURN_STMT", "BREAK_STMT", "CONTINUE_STMT", "GOTO_STMT", "LABEL_STMT", "SWITCH_STMT",
                 "CXX_THROW_EXPR", "DO_STMT", "WHILE_STMT", "FOR_STMT"):
            return False
        if k == "DECL_STMT" and x is not st:
            return False
        if k == "VAR_DECL" and ("volatile" in (x.type or "") or "*" in (x.type or "") or "&" in (x.type or "")):
            return False
        if k == "CALL_EXPR":
            sh = _shuffle(em, x) if in_loop else None
            if sh is not None:
                calls.append((x, *sh))
                continue
            if not SIDE_EFFECT_FREE_CALLS.match(em.callee_name(x) or ""):
                return False
        if (k == "BINARY_OPERATOR" and x.op == "=") or k == "COMPOUND_ASSIGNMENT_OPERATOR" or \
                (k == "UNARY_OPERATOR" and x.op in ("++", "--", "post++", "post--")):
            target = _bare(x.children[0])
            if not _local_scalar(em, target):
                base = target
                while base.kind in ("ARRAY_SUBSCRIPT_EXPR",) or (base.kind == "UNARY_OPERATOR" and base.op == "*"):
                    base = _bare(base.children[0])
                # global memory through a kernel parameter; shared memory never (the lanes would race)
                if not (base.kind == "DECL_REF_EXPR" and base.ref is not None and base.ref.kind == "PARM_DECL"):
                    return False
    # warpSize is 32 in the stage: only a shuffle's width may say so (elsewhere it would be the subgroup's)
    widths = [(c.start, c.end) for c, _k, v, d in calls]
    inner = [(y.start, y.end) for _c, _k, v, d in calls for y in (v, d)]
    for w in sizes:
        if not any(a <= w.start < b for a, b in widths) or any(a <= w.start < b for a, b in inner):
            return False
    for call, _kind, value, delta in calls:
        if any(c[0] is not call and any(y is c[0] for y in call.walk()) for c in calls):
            return False            # a shuffle of a shuffle
        if not em._pure(value) or not em._pure(delta) or em.ty(value).unqualified().kind != "scalar":
            return False
    if calls:
        stage.shuffles[id(st)] = calls
    return True


def _stage(em, n):
    """The recognised stage of IF_STMT n, or None."""
    if len(n.children) != 2 or not em.frame.is_kernel:
        return None
    stmts = _statements(n.children[1])
    if not stmts:
        return None
    loops = [s for s in stmts if s.kind == "FOR_STMT"]
    if len(loops) != 1:
        return None
    st = _Stage()
    st.loop = loops[0]
    i = stmts.index(st.loop)
    st.pre, st.post = stmts[:i], stmts[i + 1:]
    for s in st.pre + st.post:
        if not _checked(em, s, st, False):
            return None
    body = _statements(st.loop.children[-1])
    if body is None or not body:
        return None
    for s in body:
        if not _checked(em, s, st, True):
            return None
    if not st.shuffles or any(id(s) in st.shuffles for s in st.pre + st.post):
        return None
    st.body = body
    for s in stmts + body:
        if s.kind == "DECL_STMT":
            if any(d.kind != "VAR_DECL" or em.decl_type(d).kind != "scalar" for d in s.children):
                return None
            st.decls += list(s.children)
    return st


def lower(em, n) -> bool:
    """Emit IF_STMT n as the lowered final-warp stage when it is one (see the module doc); False otherwise."""
    if not em.t.lower_warp_sync or len(n.children) != 2:
        return False
    lin = _linear_guard(em, n.children[0])
    if lin is None:
        return False
    st = _stage(em, n)
    if st is None or not em.uniform_at(n):
        return False
    # the barriers are new: every thread of the work-group must reach them (no thread returned before)
    if any(not em.uniform_at(r) for r in em.model.kind_in(em.fn.body, "RETURN_STMT")):
        return False
    # nor left a loop around the stage on its own (break / continue under a thread-dependent branch)
    for a in n.ancestors():
        if a is em.fn.body:
            break
        if a.kind in ("FOR_STMT", "WHILE_STMT", "DO_STMT") and any(
                not em.uniform_at(b) for k in ("BREAK_STMT", "CONTINUE_STMT") for b in em.model.kind_in(a, k)):
            return False
    offs = _offsets(em, st.loop)
    if offs is None:
        return False
    var, values = offs
    if any(d is var for d in st.decls):
        return False
    em.emit("// final-warp stage (CP104): its shuffles lowered to shared memory and work-group barriers, exact "
            "for any subgroup size")
    em.emit("{")
    em.indent += 1
    on, lane = em.fresh("cuport_fw_on"), em.fresh("cuport_fw_lane")
    em.emit(f"bool {on} = {em.cond(n.children[0]).text};")
    em.emit(f"int {lane} = {em.conv(em.x(lin), I32).text};")
    for d in st.decls + [var]:
        t = em.decl_type(d).unqualified()
        name = em.fresh(em.t.ident(d.spelling))
        em.frame.names[id(d)] = name
        em.emit(f"{em.t.type_name(t, em)} {name};")
    vname = em.name_of(var)
    slots = {}

    def run(stmts):
        em.emit(f"if ({on}) {{")
        em.indent += 1
        for s in stmts:
            if s.kind == "DECL_STMT":
                for d in s.children:
                    init = em.init_of(d)
                    if init is not None:
                        v = em.conv(em.x(init), em.decl_type(d).unqualified(), implicit_ok=True)
                        em.emit(f"{em.name_of(d)} = {v.text};")
            else:
                em.stmt(s)
        em.indent -= 1
        em.emit("}")

    barrier = em.barrier(n)
    if st.pre:
        run(st.pre)
    for k in values:
        em.emit(f"{vname} = {em.conv(E(str(k), I32, lit=k), em.decl_type(var).unqualified()).text};")
        for s in st.body:
            calls = st.shuffles.get(id(s))
            if not calls:
                run([s])
                continue
            writes = []
            for j, (call, kind, value, delta) in enumerate(calls):
                t = em.ty(call).unqualified()
                key = (ct.spell(t), j)
                if key not in slots:
                    slots[key] = _scratch(em, t)
                arr = slots[key]
                writes.append(f"{arr}[{lane}] = {em.conv(em.x(value), t).text};")
                d = em.conv(em.x(delta), I32).paren(PREC_UNARY)
                src = f"({lane} + {d})" if kind == "down" else f"({lane} ^ {d})"
                em.hoisted[id(call)] = E(f"{arr}[{src} < {WARP} ? {src} : {lane}]", t)
            em.emit(f"if ({on}) {{")
            for w in writes:
                em.emit("    " + w)
            em.emit("}")
            for ln in barrier:
                em.emit(ln)
            run([s])
            for call, *_ in calls:
                em.hoisted.pop(id(call), None)
            for ln in barrier:
                em.emit(ln)
    if st.post:
        run(st.post)
    em.indent -= 1
    em.emit("}")
    em.lowered_spans.append((n.start, n.end))
    return True


def _scratch(em, t) -> str:
    """A fresh shared array of 32 slots of type t, declared with the kernel's shared memory."""
    name = em.fresh("cuport_fw_slots")
    em.shared[name] = {"name": name, "type": ct.array(t, (WARP,)), "elem": t, "extern": False, "node": None,
                       "dims": (WARP,), "key": ("final-warp", name)}
    return name
