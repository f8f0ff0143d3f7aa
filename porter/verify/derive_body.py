"""What a kernel body does with its parameters (derive.py): pointers read / written, memory indexed with
loaded values, threads that communicate or loop (no special input values then)."""
from __future__ import annotations

import re
from dataclasses import dataclass

from porter.verify.derive_host import _bare


_COMM = re.compile(r"^(__shfl|__syncthreads|__syncwarp|atomic|__ballot|__any|__all|__reduce|__match|__activemask)")
_CASTS = ("CSTYLE_CAST_EXPR", "CXX_REINTERPRET_CAST_EXPR", "CXX_STATIC_CAST_EXPR", "CXX_CONST_CAST_EXPR")


def _pointer_use(fn, decl) -> tuple[bool, bool]:
    """(written, read) through pointer parameter `decl`; a use that is not clearly one or the other is both."""
    written = read = False
    for n in fn.body.walk():
        if n.kind != "DECL_REF_EXPR" or n.ref is not decl:
            continue
        child, p = n, n.parent
        while p is not None and (p.kind in ("PAREN_EXPR", "UNEXPOSED_EXPR", "ARRAY_SUBSCRIPT_EXPR",
                                            "MEMBER_REF_EXPR") or (p.kind == "UNARY_OPERATOR" and p.op == "*") or
                                 p.kind in _CASTS and "*" in (p.type or "")):   # cbsfil's `(uchar*)image + y`
            if p.kind == "ARRAY_SUBSCRIPT_EXPR" and p.children and p.children[0] is not child:
                break
            child, p = p, p.parent
        if p is None:
            continue
        if p.kind == "BINARY_OPERATOR" and p.op == "=" and p.children and p.children[0] is child:
            written = True
        elif p.kind == "COMPOUND_ASSIGNMENT_OPERATOR" and p.children and p.children[0] is child:
            written = read = True
        elif p.kind == "UNARY_OPERATOR" and p.op in ("++", "--", "post++", "post--", "&"):
            written = read = True
        elif p.kind == "CALL_EXPR" or (p.kind == "BINARY_OPERATOR" and p.op in ("+", "-") and
                                       (child is n or "*" in (child.type or ""))):
            written = read = True                   # atomics, device functions, pointer arithmetic
        elif p.kind == "VAR_DECL" and ("*" in (p.type or "") or "&" in (p.type or "")):
            written = read = True                   # an alias
        else:
            read = True
    return written, read


@dataclass
class IndexUse:
    """`base[index]` whose index is computed from values loaded through the pointer parameters `sources`."""
    text: str
    sources: set                 # id(PARM_DECL) of the pointers whose values reach the index
    form: str                    # "whole": the index is a loaded value; "plus": loaded + offset; "nonneg": the
    base: object = None          #   loaded value only needs to be >= 0 (`in[i] % BINS`); "unknown"
    factor: object = None        # "plus": a factor of the offset (`row * D + label`: D bounds label)


def index_uses(fn, pointers: set) -> list[IndexUse]:
    """Every subscript of the kernel whose index depends on a value loaded through a pointer parameter
    (`bins[in[i] % 16]`, `logits[ids[t]]`), with the form of the dependence."""
    taint: dict[int, set] = {}          # id(local) -> the pointer parameters its value comes from
    direct: set[int] = set()            # locals that hold exactly one loaded value (`int nb = esm[i + j * n]`)

    def is_load(n):
        p = n.parent
        while p is not None and p.kind in ("PAREN_EXPR", "UNEXPOSED_EXPR"):
            p = p.parent
        return p is not None and (p.kind == "ARRAY_SUBSCRIPT_EXPR" or (p.kind == "UNARY_OPERATOR" and p.op == "*"))

    def sources(node) -> set:
        out: set = set()
        for n in node.walk():
            if n.kind == "DECL_REF_EXPR" and n.ref is not None:
                if id(n.ref) in taint:
                    out |= taint[id(n.ref)]
                elif id(n.ref) in pointers and is_load(n):
                    out.add(id(n.ref))
        return out

    def single_load(node) -> bool:
        """`p[i]`, `*p` or a direct local: one loaded value, not arithmetic on it."""
        b = _bare(node)
        if b is None:
            return False
        if b.kind == "DECL_REF_EXPR" and b.ref is not None:
            return id(b.ref) in direct
        if b.kind == "ARRAY_SUBSCRIPT_EXPR" and b.children:
            base = _bare(b.children[0])
            return base.kind == "DECL_REF_EXPR" and base.ref is not None and id(base.ref) in pointers
        return False

    local_vars = [v for v in fn.body.walk() if v.kind == "VAR_DECL"]
    # (target, value) of each assignment; a struct's `h = p[i]` is a call of its operator= (ldpc's h_element)
    writes = [(w.children[0], w.children[1]) for w in fn.body.walk() if len(w.children) == 2 and (
        (w.kind == "BINARY_OPERATOR" and w.op == "=") or w.kind == "COMPOUND_ASSIGNMENT_OPERATOR")]
    writes += [(w.children[0], w.children[-1]) for w in fn.body.walk()     # [lhs, operator=, rhs]
               if w.kind == "CALL_EXPR" and w.spelling == "operator=" and len(w.children) >= 2]
    written = {id(t.ref) for t, _ in ((_bare(t), v) for t, v in writes)
               if t is not None and t.kind == "DECL_REF_EXPR" and t.ref is not None}
    for v in local_vars:                # initialised with one load and never assigned again
        if v.children and id(v) not in written and "*" not in (v.type or "") and single_load(v.children[-1]):
            direct.add(id(v))
    # `for (i = 0; i < s; i++)` with `s` loaded: the loop counter's range is the loaded value's (ldpc's counts)
    bounds = [c for c in fn.body.walk() if c.kind == "BINARY_OPERATOR" and c.op in ("<", "<=", ">", ">=", "!=")
              and len(c.children) == 2 and c.parent is not None and c.parent.kind in ("FOR_STMT", "WHILE_STMT")]
    def spread(key: int, node) -> bool:
        """The pointers `node` loads from join local `key`'s; True when that added any."""
        add = sources(node) - taint.get(key, set())
        if add:
            taint.setdefault(key, set()).update(add)
        return bool(add)

    def local(node):
        v = _bare(node)
        return v.ref if v is not None and v.kind == "DECL_REF_EXPR" and v.ref is not None and \
            v.ref.kind == "VAR_DECL" else None

    changed = True
    while changed:                      # locals holding loaded values, to a fixed point
        changed = False
        for c in bounds:
            for var, limit in ((c.children[0], c.children[1]), (c.children[1], c.children[0])):
                if local(var) is not None and spread(id(local(var)), limit):
                    changed = True
        for v in local_vars:
            if v.children and "*" not in (v.type or "") and spread(id(v), v):
                changed = True
        for target, value in writes:
            if local(target) is not None and spread(id(local(target)), value):
                changed = True

    def form(idx):
        """(form, factor) of an index expression that depends on loaded values."""
        b = _bare(idx)
        if single_load(b):
            return "whole", None
        if b.kind == "BINARY_OPERATOR" and len(b.children) == 2:
            left, right = b.children
            if b.op in ("%", "&") and not sources(right):
                return "nonneg", None           # `v % BINS`, `v & 15`: in range for any v >= 0
            if b.op == "+":
                for mine, other in ((left, right), (right, left)):
                    if sources(other):
                        continue
                    f, _ = form(mine)
                    if f == "nonneg":
                        return "nonneg", None
                    if f == "whole":            # `row * D + label`: label < D keeps the row
                        o = _bare(other)
                        factors = [_bare(c) for c in o.children] if o.kind == "BINARY_OPERATOR" and \
                            o.op == "*" else []
                        return "plus", factors
        return "unknown", None

    out = []
    for n in fn.body.walk():
        if n.kind == "ARRAY_SUBSCRIPT_EXPR" and len(n.children) == 2:
            src = sources(n.children[1])
            if src:
                f, factor = form(n.children[1])
                out.append(IndexUse(" ".join(n.text.split()), src, f, _bare(n.children[0]), factor))
    return out


def _data_indexing(model, fn, pointers: set) -> str | None:
    """`bins[in[i] % 16]`: the text of the first index computed from a value loaded through a pointer."""
    uses = index_uses(fn, pointers)
    return uses[0].text if uses else None


def _communicates(model, fn, depth: int = 0) -> bool:
    """Threads exchange values (shuffles, barriers, atomics, shared memory) or loop, in the kernel or a device
    function it calls (cbsfil's recursive filter loops in ConvertToInterpolationCoefficients: inf and NaN inputs
    then end as inf in one target and NaN in another): no special values then."""
    if any(s.function is fn for s in model.shared):
        return True
    for n in fn.body.walk():
        if n.kind in ("FOR_STMT", "WHILE_STMT", "DO_STMT") or (n.kind == "CALL_EXPR" and _COMM.match(n.callee)):
            return True
        if n.kind == "CALL_EXPR" and n.spelling and depth < 4:
            callee = next((f for f in model.functions if f.name == n.spelling and f.body is not None and
                           f is not fn), None)
            if callee is not None and _communicates(model, callee, depth + 1):
                return True
    return False


# atomics whose returned value is a counter's old value: a position claimed by this thread (stream compaction)
_CLAIM = re.compile(r"^atomic(Add|Sub|Inc|Dec)(_block|_system)?$")


@dataclass
class ClaimedStore:
    """`param[index] = value` with an index computed from an atomic's returned value (`dst[atomicAdd(&n, 1)] = v`,
    through locals, shared variables, `+=` and device functions that return one): where an element lands depends
    on the order in which threads reached the atomic."""
    param: object                # the PARM_DECL of the buffer written
    text: str


def _root(node):
    """The variable an assignment target belongs to: `s[31]`, `l_n`, `p.x` -> its declaration."""
    n = _bare(node)
    while n is not None and n.kind in ("ARRAY_SUBSCRIPT_EXPR", "MEMBER_REF_EXPR") and n.children:
        n = _bare(n.children[0])
    return n.ref if n is not None and n.kind == "DECL_REF_EXPR" else None


def _claiming(model, fn, depth: int = 0, seen: dict | None = None) -> tuple[set, object]:
    """(ids of the variables of `fn` holding a value computed from an atomic's result, test(node): does the value
    of `node` depend on one), the taint spread to a fixed point through assignments, declarations and `+=`; a call
    of a device function whose return value depends on one counts as an atomic (cooperative groups' atomicAggInc)."""
    seen = {} if seen is None else seen
    tainted: set[int] = set()

    def returns_claim(call) -> bool:
        name = call.callee
        if depth >= 4 or not name:
            return False
        if name not in seen:
            seen[name] = False          # recursion: not a claim
            callee = next((f for f in getattr(model, "functions", []) if f.name == name and f.body is not None
                           and f is not fn), None)
            if callee is not None:
                _, test = _claiming(model, callee, depth + 1, seen)
                seen[name] = any(test(r) for r in callee.body.walk() if r.kind == "RETURN_STMT")
        return seen[name]

    def test(node) -> bool:
        for n in node.walk():
            if n.kind == "DECL_REF_EXPR" and n.ref is not None and id(n.ref) in tainted:
                return True
            if n.kind == "CALL_EXPR" and (_CLAIM.match(n.callee) or returns_claim(n)):
                return True
        return False

    writes = [(w.children[0], w.children[1]) for w in fn.body.walk() if len(w.children) == 2 and (
        (w.kind == "BINARY_OPERATOR" and w.op == "=") or w.kind == "COMPOUND_ASSIGNMENT_OPERATOR")]
    writes += [(w.children[0], w.children[-1]) for w in fn.body.walk()     # a struct's [lhs, operator=, rhs]
               if w.kind == "CALL_EXPR" and w.spelling == "operator=" and len(w.children) >= 2]
    writes += [(v, v.children[-1]) for v in fn.body.walk() if v.kind == "VAR_DECL" and v.children]
    changed = True
    while changed:
        changed = False
        for target, value in writes:
            var = target if target.kind == "VAR_DECL" else _root(target)
            if var is None or var.kind == "PARM_DECL" and "*" in (var.type or ""):
                continue                # a store into a buffer: claimed_stores looks at those
            if id(var) not in tainted and test(value):
                tainted.add(id(var))
                changed = True
    return tainted, test


def claimed_stores(model, fn) -> list[ClaimedStore]:
    """Stores into pointer parameters at positions claimed by atomics. A store whose value depends on the claimed
    position too (`out[i] = in[i]` with `i` from a work queue's counter) keeps its meaning at each position and is
    not one; neither is a value written from an atomic (`out[i] = atomicAdd(...)`) or an atomic on the buffer."""
    if fn.body is None:
        return []
    params = {id(p.node): p.node for p in fn.params if p.is_pointer}
    _, test = _claiming(model, fn)
    out = []
    for w in fn.body.walk():
        if w.kind == "BINARY_OPERATOR" and w.op == "=" and len(w.children) == 2:
            target, value = w.children
        elif w.kind == "CALL_EXPR" and w.spelling == "operator=" and len(w.children) >= 2:
            target, value = w.children[0], w.children[-1]       # a struct's `out[pos] = s`
        else:
            continue
        t = _bare(target)
        while t is not None and t.kind == "MEMBER_REF_EXPR" and t.children:     # `out[pos].x = v`
            t = _bare(t.children[0])
        if t is None or t.kind != "ARRAY_SUBSCRIPT_EXPR" or len(t.children) != 2:
            continue
        base = _bare(t.children[0])
        if base is None or base.kind != "DECL_REF_EXPR" or base.ref is None or id(base.ref) not in params:
            continue
        if test(t.children[1]) and not test(value):
            out.append(ClaimedStore(base.ref, " ".join(w.text.split())))
    return out
