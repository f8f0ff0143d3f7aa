"""The value a host variable holds where a launch reads it (derive_sizes.py): the plain assignment that
reaches the use on every path, a local array's element, a loop counter's first value, a variable written after
its declaration (changed after the launch, capped, set from the command line, read from a stream or back from
the device, made by a loop of constant trip count), and the value a `case` label or `if (v == C)` around the
launch fixes. `sym` is the expression writer (derive_expr._Sym)."""
from __future__ import annotations

import re

from porter.verify.derive_args import argv_value
from porter.verify.derive_host import (Underivable, Unknown, _BRANCHES, _FUNCTIONS, _INPUT_CALLS, _LOOPS, _WRAPPERS,
                                       _bare, _initialiser, _inside, _refers_to, _tidy)


def _array_element(sym, n):
    """The value of `a[i]` at this use: of a local array with a constant index, the plain assignment to `a[i]`
    that reaches the use on every path (qrg's `localWorkSize[0] = szWorkgroup;`, reassigned between two
    launches), else its initialiser list's element; None otherwise (an element assigned conditionally, with an
    index that does not fold, the array passed away)."""
    from porter.analysis.launch import fold_int
    if len(n.children) != 2:
        return None
    base, index = _bare(n.children[0]), n.children[1]
    i = fold_int(n.model, index, sym.env)
    if i is None and _bare(index).kind == "DECL_REF_EXPR":
        i = sym.consts.get(id(_bare(index).ref))     # the counter of a loop being unrolled (_unrolled)
    if base.kind != "DECL_REF_EXPR" or base.ref is None or base.ref.kind != "VAR_DECL" or i is None:
        return None
    return _reaching(base.ref, n, i)


def _writes(scope, decl, index=None) -> list:
    """(node, value) of each write to the local `decl` (its element `decl[index]` when index is an int) in the
    function `scope`: value is the right-hand side of a plain `=`, None for a write whose value is not known
    (`+=`, `++`, `&x` handed to a call, an element with an index that does not fold, the array itself used)."""
    from porter.analysis.launch import fold_int
    out = []
    for w in scope.walk():
        if w.kind == "DECL_REF_EXPR" and w.ref is decl and index is not None:
            p = w.parent
            while p is not None and p.kind in _WRAPPERS:
                p = p.parent
            if p is None or p.kind != "ARRAY_SUBSCRIPT_EXPR" or _bare(p.children[0]) is not _bare(w):
                out.append((w, None))   # the array decays to a pointer: any element may be written through it
            continue
        if not ((w.kind == "BINARY_OPERATOR" and w.op == "=" or w.kind == "COMPOUND_ASSIGNMENT_OPERATOR" or
                 w.kind == "UNARY_OPERATOR" and w.op in ("++", "--", "post++", "post--", "&")) and w.children):
            continue
        t = _bare(w.children[0])
        if index is not None:
            if t.kind != "ARRAY_SUBSCRIPT_EXPR" or len(t.children) != 2 or _bare(t.children[0]).kind != \
                    "DECL_REF_EXPR" or _bare(t.children[0]).ref is not decl:
                continue
            j = fold_int(t.model, t.children[1])
            if j is not None and j != index:
                continue
            plain = j is not None
        else:
            if t.kind != "DECL_REF_EXPR" or t.ref is not decl:
                continue
            plain = True
        value = w.children[1] if plain and w.kind == "BINARY_OPERATOR" and len(w.children) == 2 else None
        out.append((w, value))
    return out


def _reaching(decl, use, index=None):
    """The expression the local `decl` (`decl[index]`) holds at `use`: the last plain assignment before it when
    that assignment is a statement of a block the use is in (so every path to the use runs it) and no write in
    a loop around the use can come between; the declaration's initialiser when no write comes before. None
    for anything else (a write in a branch, a compound assignment, a global)."""
    scope = decl.enclosing(*_FUNCTIONS)
    if scope is None:
        return None
    writes = [(w, v) for w, v in _writes(scope, decl, index) if not _inside(w, use)]
    before = [x for x in writes if x[0].start < use.start]
    last = max(before, key=lambda x: x[0].start) if before else None
    loops = [a for a in use.ancestors() if a.kind in _LOOPS and _inside(scope, a)]
    for w, _ in writes:                 # written later in a loop around the use: the next turn reads that
        if w.start > use.start and any(_inside(lp, w) and (last is None or not _inside(lp, last[0]))
                                       for lp in loops):
            return None
    if last is None:
        if index is None:
            exprs = [c for c in decl.children if not c.kind.endswith("_ATTR") and
                     c.kind not in ("TYPE_REF", "NAMESPACE_REF")]
            return exprs[-1] if exprs else None
        init = next((c for c in decl.children if c.kind == "INIT_LIST_EXPR"), None)
        return init.children[index] if init is not None and 0 <= index < len(init.children) else None
    w, value = last
    block = w.parent
    while block is not None and block.kind in _WRAPPERS:
        block = block.parent
    if value is None or block is None or block.kind != "COMPOUND_STMT" or not _inside(block, use):
        return None
    return value


def _loop_start(decl, use=None):
    """The initial value of a `for` loop's counter declared in its init (`for (int t = 0; ...)`), or, at a `use`
    inside the loop, assigned there (ert's `uint64_t t; ... for (t = 1; t <= ntrials; t = t * 2)`); None
    otherwise. Taking the run-time fallback (1000) for it indexed past the end of buffers sized by the loop's bound
    (d2q9-bgk's `Partial_Sum[... + tt * ...]`)."""
    stmt = decl.parent
    if use is not None and (stmt is None or stmt.kind != "DECL_STMT" or stmt.parent is None or
                            stmt.parent.kind != "FOR_STMT"):
        loop = use.parent
        while loop is not None and loop.kind != "FOR_STMT":
            loop = loop.parent
        first = _bare(loop.children[0]) if loop is not None and loop.children else None
        if first is not None and first.kind == "BINARY_OPERATOR" and first.op == "=" and \
                len(first.children) == 2 and _bare(first.children[0]).kind == "DECL_REF_EXPR" and \
                _bare(first.children[0]).ref is decl:
            return first.children[1]
        return None
    if stmt is None or stmt.kind != "DECL_STMT" or stmt.parent is None or stmt.parent.kind != "FOR_STMT" or \
            not stmt.parent.children or stmt.parent.children[0] is not stmt:
        return None
    exprs = [c for c in decl.children if not c.kind.endswith("_ATTR") and c.kind not in ("TYPE_REF",
                                                                                         "NAMESPACE_REF")]
    return exprs[-1] if exprs else None


# ---------------------------------------------------------------------------------------------------------------
# the value a host variable has when the launch runs (a variable written after its declaration)

_MEMCPY = ("cudaMemcpy", "cudaMemcpyAsync", "hipMemcpy", "hipMemcpyAsync", "cudaMemcpyFromSymbol")


def _host_writes(decl) -> list:
    """(kind, node) of every write to the local `decl` after its declaration, in source order: `=` (a plain
    assignment), `op` (compound assignment, ++, --), `device` (`cudaMemcpy(&v, ...)`: read back from the
    device), `address` (`&v` given to a call), `read` (`in >> v`)."""
    fn = decl.enclosing("FUNCTION_DECL", "FUNCTION_TEMPLATE", "CXX_METHOD")
    out = []
    for m in (fn.walk() if fn is not None else ()):
        k = m.kind
        if k in ("BINARY_OPERATOR", "COMPOUND_ASSIGNMENT_OPERATOR") and len(m.children) == 2:
            lhs, rhs = m.children[0].strip, m.children[1].strip
            if k == "BINARY_OPERATOR" and m.op == ">>" and getattr(rhs, "ref", None) is decl and \
                    rhs.kind == "DECL_REF_EXPR" and _extraction(m):
                out.append(("read", m))         # inversek2j's `coordinate_in_file >> data_size`
            elif lhs.kind == "DECL_REF_EXPR" and lhs.ref is decl and (k != "BINARY_OPERATOR" or m.op == "="):
                out.append(("=" if k == "BINARY_OPERATOR" else "op", m))
        elif k == "UNARY_OPERATOR" and m.children and m.children[0].strip.kind == "DECL_REF_EXPR" and \
                m.children[0].strip.ref is decl:
            if m.op in ("++", "--", "post++", "post--"):
                out.append(("op", m))
            elif m.op == "&":
                call = m.parent
                while call is not None and call.kind in _WRAPPERS:
                    call = call.parent
                first = call is not None and call.kind == "CALL_EXPR" and call.args() and \
                    _bare(call.args()[0]) is m
                out.append(("device" if first and call.spelling in _MEMCPY else "address", m))
        elif k == "CALL_EXPR" and m.spelling == "operator>>" and any(
                _bare(a).kind == "DECL_REF_EXPR" and _bare(a).ref is decl for a in m.args()[1:]):
            out.append(("read", m))
    return out


_ALLOCS = ("cudaMalloc", "cudaMallocManaged", "hipMalloc", "hipMallocManaged")


def _allocated_for(sym, decl, readback):
    """The cudaMalloc after the read-back `readback` of `decl`, in the same function and before the launch,
    whose byte count reads `decl` (nonzero's `cudaMalloc(&d_out, h_nzeros * in_ndims * 8)`, marchingCubes'
    `cudaMalloc(&minMaxLv2Device, countedBlockNumLv1 * voxelNumLv2 * 2 * sizeof(float))`): the program sizes
    its buffers by the count it reads, so the buffers follow whatever count the case takes, and the launch's
    other buffers are checked against it by Oclgrind. None otherwise: a read-back value that only positions
    (hogbom's peak) stays underivable."""
    if readback is None:
        return None
    fn_kinds = ("FUNCTION_DECL", "FUNCTION_TEMPLATE", "CXX_METHOD")
    fn = readback.enclosing(*fn_kinds)
    site = getattr(getattr(sym, "site", None), "node", None)
    end = site.start if site is not None and site.model is readback.model and \
        fn is not None and _inside(fn, site) else None
    if fn is None or end is None:
        return None
    for call in readback.model.of_kind("CALL_EXPR"):
        if call.spelling not in _ALLOCS or not _inside(fn, call) or not readback.end <= call.start < end:
            continue
        args = call.args()
        if len(args) >= 2 and _reads(args[1], decl):
            return call
    return None


def _reads(node, decl, depth: int = 0) -> bool:
    """Whether `node` reads `decl`, directly or through the initialisers of locals (nonzero's `d_out_size_bytes
    = d_out_size * sizeof(int64_t)` with `d_out_size = h_nzeros * in_ndims`)."""
    for n in node.walk():
        if n.kind != "DECL_REF_EXPR" or n.ref is None:
            continue
        if n.ref is decl:
            return True
        init = _initialiser(n.ref) if n.ref.kind == "VAR_DECL" and depth < 3 else None
        if init is not None and _reads(init, decl, depth + 1):
            return True
    return False


def _read_back(sym, decl, writes=None):
    """What no assignment stands for, whatever reaches the use: ("device", None, message) for a local read back
    from the device (`cudaMemcpy(&v, ...)`: a value a kernel computes), ("runtime", None, None) for one read from
    a stream (`in >> v`: inversek2j's `data_size = 0` is not its size); None otherwise. Checked before
    _reaching, which does not see either write."""
    writes = _host_writes(decl) if writes is None else writes
    dev = next((w for k, w in writes if k == "device"), None)
    if dev is not None:
        call = dev.parent
        while call is not None and call.kind != "CALL_EXPR":
            call = call.parent
        alloc = _allocated_for(sym, decl, call)
        if alloc is not None:           # a count the program allocates for: any count is a case of its own
            note = (f"`{decl.spelling}` is read back from the device (`{call.spelling}` at {sym.where(dev)}) and "
                    f"the program allocates for it (`{alloc.spelling}` at {sym.where(alloc)}): a count decided "
                    "at run time")
            if note not in sym.notes:
                sym.notes.append(note)
            return ("runtime", None, None)
        return ("device", None, f"`{decl.spelling}` is read back from the device (`{call.spelling}` at "
                                f"{sym.where(dev)}): a value an earlier kernel computes, not a size the source "
                                "gives")
    if any(k == "read" for k, _ in writes):
        return ("runtime", None, None)
    return None


def _first_launch_note(sym, decl, use, value) -> None:
    """The note for a local that _reaching gives its initialiser although it is written after the launch (the
    first launch's value taken)."""
    if value is None or decl.kind != "VAR_DECL" or value is not _initialiser(decl):
        return
    writes = _host_writes(decl)
    point = _launch_point(sym, decl)
    if use is not None and point is not None and decl.enclosing(*_FUNCTIONS) is use.enclosing(*_FUNCTIONS) and \
            use.start < point.start:
        point = use
    after = [w for _, w in writes if point is not None and w.start >= point.start]
    if writes and len(after) == len(writes):
        note = f"`{decl.spelling}` is changed after the launch ({sym.where(after[0])}): its value at the first " \
               "launch taken"
        if note not in sym.notes:
            sym.notes.append(note)


def _extraction(m) -> bool:
    """`in >> v` (and `in >> a >> v`) as a statement: a stream read, not a shift (whose value would be used);
    clang may not know the stream's type (the shim's headers), so the statement decides."""
    top = m
    while top.parent is not None and top.parent.kind == "BINARY_OPERATOR" and top.parent.op == ">>" and \
            top.parent.children and top.parent.children[0] is top:
        top = top.parent
    return top.parent is not None and top.parent.kind == "COMPOUND_STMT" or \
        re.search(r"stream", m.children[0].type or "") is not None


def _launch_point(sym, decl):
    """The node in `decl`'s function where the launch happens: the launch itself, or the call of the host
    function that makes it (tridiagonal's main calls `pcr_small_systems(...)`); None when not found."""
    if sym.site is None:
        return None
    fn = decl.enclosing("FUNCTION_DECL", "FUNCTION_TEMPLATE", "CXX_METHOD")
    if fn is None:
        return None
    site_fn = sym.model.function_of(sym.site.node)
    if site_fn is not None and site_fn.node is fn:
        return sym.site.node
    names = {site_fn.name} if site_fn is not None else set()
    for _ in range(3):                  # main -> run(...) -> pcr_small_systems(...) -> the launch
        call = next((c for c in fn.walk() if c.kind == "CALL_EXPR" and c.spelling in names), None)
        if call is not None:
            return call
        callers = [sym.model.function_of(c) for c in sym.model.of_kind("CALL_EXPR") if c.spelling in names]
        names = {f.name for f in callers if f is not None}
    return None


def _case_label(body, node):
    """The value expression of the `case` label nearest before `node` in the switch's `body` (`case 2: case 3:
    launch` or a fall-through from `case 2`: 3, a value the launch runs with); None under `default:`, or with
    a `break` / `return` between the label and the statement holding `node`."""
    top = next((a for a in [node, *node.ancestors()] if a.parent is body), None)
    if top is None:
        return None
    kids = body.children
    i = next(j for j, c in enumerate(kids) if c is top)
    while i >= 0 and kids[i].kind not in ("CASE_STMT", "DEFAULT_STMT"):
        if kids[i].kind in ("BREAK_STMT", "RETURN_STMT", "CONTINUE_STMT"):
            return None
        i -= 1                          # statements after a label are its siblings in the body
    label = kids[i] if i >= 0 else None
    while label is not None and label.kind in ("CASE_STMT", "DEFAULT_STMT") and label.children and \
            label.children[-1].kind in ("CASE_STMT", "DEFAULT_STMT"):
        label = label.children[-1]      # `case 2: case 3:` nests: the innermost is nearest
    if label is None or label.kind != "CASE_STMT" or len(label.children) != 2 or \
            label.children[1].kind in ("BREAK_STMT", "RETURN_STMT", "CONTINUE_STMT") and label is not top:
        return None                     # `case 3: break;` then the launch: not run under case 3
    return label.children[0]


def _bind_cases(sym) -> None:
    """The value a variable has at the launch when the launch runs only under `case C:` of `switch (v)` or in
    the then-branch of `if (v == C)`: C (moe-sum's `switch (topk) { case 3: k<float, 3><<<...>>>` whose buffers
    are sized by `topk`, the counter of its caller's loop: not that loop's first value). A parameter `v` of a
    host function binds the caller's variable it receives too (caller_arg's call)."""
    from porter.analysis.launch import fold_int
    if sym.site is None:
        return
    node = sym.site.node
    for a in node.ancestors():
        if a.kind in _FUNCTIONS:
            break
        var = value = None
        if a.kind == "SWITCH_STMT" and len(a.children) == 2 and a.children[1].kind == "COMPOUND_STMT":
            var, value = _bare(a.children[0]), _case_label(a.children[1], node)
        elif a.kind == "IF_STMT" and len(a.children) >= 2 and _inside(a.children[1], node):
            c = a.children[0].strip
            if c.kind == "BINARY_OPERATOR" and c.op == "==" and len(c.children) == 2:
                x, y = (_bare(k) for k in c.children)
                var, value = (x, y) if x.kind == "DECL_REF_EXPR" else (y, x)
        if var is None or value is None or var.kind != "DECL_REF_EXPR" or var.ref is None:
            continue
        v = fold_int(value.model, value, sym.env)
        decl = var.ref
        if v is None or isinstance(v, bool) or id(decl) in sym.consts:
            continue
        bound = []
        for _ in range(4):              # the parameter, the caller's variable it receives, ...
            if decl is None or decl.kind not in ("VAR_DECL", "PARM_DECL") or id(decl) in sym.consts:
                break
            sym.consts[id(decl)] = v
            arg = sym.caller_arg(decl) if decl.kind == "PARM_DECL" else None
            arg = _bare(arg) if arg is not None else None
            decl = arg.ref if arg is not None and arg.kind == "DECL_REF_EXPR" else None
            if decl is not None:
                bound.append(f"`{decl.spelling}` passed for it at {sym.where(arg)}")
        what = "`case` label" if a.kind == "SWITCH_STMT" else "`if`"
        sym.notes.append(f"`{var.spelling}` is {v} at the launch (its {what} at {sym.where(value)})" +
                         (f", and so is {', '.join(bound)}" if bound else ""))


def _conditions(node, point, fn_node) -> list:
    """The if / loop statements around `node` that do not also hold `point` (the writes the launch may not see)."""
    out = []
    for a in node.ancestors():
        if a is fn_node:
            break
        if a.kind in _BRANCHES and (point is None or not a.start <= point.start < a.end):
            out.append(a)
    return out


def _clamp(w, decl):
    """"min" / "max" for `if (v > X) v = X;` / `if (v < X) v = X;` (ga's `end_position` capped at the searchable
    length): the IF_STMT holds nothing else; None otherwise."""
    stmt = w.parent
    while stmt is not None and stmt.kind == "COMPOUND_STMT" and len(stmt.children) == 1:
        stmt = stmt.parent
    if stmt is None or stmt.kind != "IF_STMT" or len(stmt.children) != 2:
        return None
    cond = stmt.children[0].strip
    if cond.kind != "BINARY_OPERATOR" or cond.op not in ("<", "<=", ">", ">=") or len(cond.children) != 2:
        return None
    a, b = (c.strip for c in cond.children)
    x = " ".join(w.children[1].text.split())
    if a.kind == "DECL_REF_EXPR" and a.ref is decl and " ".join(b.text.split()) == x:
        return "min" if cond.op in (">", ">=") else "max"
    if b.kind == "DECL_REF_EXPR" and b.ref is decl and " ".join(a.text.split()) == x:
        return "min" if cond.op in ("<", "<=") else "max"
    return None


def _at_launch(sym, decl, at=None):
    """What the local `decl`, written after its declaration, holds when the launch runs: None when nothing
    writes it (its initialiser does), else (kind, payload, note):
    ("node", expression node, note): the initialiser when every write comes after the launch (ga's
    `current_position = 0`, advanced after each launch: the first launch's value), the last plain assignment
    before it (cfd's `nelr = block_length * (...)`, tridiagonal's `szLocalWorkSize = system_size`), or the
    initialiser kept when a write under a condition reads the command line (metropolis's `int L = 32` with
    `-l`: the program's default);
    ("text", size expression, note): the initialiser capped by `if (v > X) v = X` (min(init, X)) or made by a
    loop of constant trip count (tensorAccessor's `numel *= sizes[i]` over i < 2);
    ("runtime", None, None): decided at run time (read from a stream or through a pointer);
    ("device", None, message): read back from the device (`cudaMemcpy(&v, ...)`): a value a kernel computes."""
    writes = _host_writes(decl)
    if not writes:
        return None
    where = lambda n: sym.where(n)   # noqa: E731
    back = _read_back(sym, decl, writes)
    if back is not None:
        return back
    point = _launch_point(sym, decl)
    fn_kinds = ("FUNCTION_DECL", "FUNCTION_TEMPLATE", "CXX_METHOD")
    if at is not None and decl.enclosing(*fn_kinds) is at.enclosing(*fn_kinds) and \
            (point is None or at.start < point.start):
        point = at                      # read before the launch: cbsfil's `dim3 b(blocks)`, then `blocks = ...`
    fn = decl.enclosing("FUNCTION_DECL", "FUNCTION_TEMPLATE", "CXX_METHOD")
    init = _initialiser(decl)
    before = [(k, w) for k, w in writes if point is None or w.start < point.start]
    if not before and init is not None:
        # a loop around the launch that writes it again without testing it (metropolis's `insert_temps(...,
        # &ar, ...)` after `kernel_reset<<<...>>>(dE, ar, 0)`): the first turn still launches with the
        # initialiser, a launch the program makes; 1000 of its own sized no buffer (dE has R + atrials * ains)
        again = " (and on each later turn of the loop around it)" if point is not None and \
            _advanced_by_loop(decl, point, writes) is False else ""
        return ("node", init, f"`{decl.spelling}` is changed after the launch ({where(writes[0][1])}){again}: "
                              "its value at the first launch taken")
    value, text, note = init, None, None
    loops: dict = {}
    for k, w in before:
        conds = _conditions(w, point, fn)
        if k == "op" and conds and conds[0].kind == "FOR_STMT":
            loops.setdefault(id(conds[0]), (conds[0], []))[1].append(w)
            continue
        if k != "=" or _refers_to(w.children[1], decl):
            return ("runtime", None, None)
        if not conds:
            value, text = w.children[1], None
            continue
        clamp = _clamp(w, decl) if len(conds) == 1 and conds[0].kind == "IF_STMT" else None
        if clamp is not None and (value is not None or text is not None):
            try:
                text = f"{clamp}({text if text is not None else _tidy(sym.expr(value))}, " \
                       f"{_tidy(sym.expr(w.children[1]))})"
            except Unknown:
                raise
            except Underivable:
                return ("runtime", None, None)
            continue
        if value is not None and text is None and _INPUT_CALLS.search(w.children[1].text or ""):
            try:
                given = argv_value(decl) is not None
            except Unknown:             # not a number: _run_time_value says so where a problem is recorded
                given = True
            if given:
                return ("runtime", None, None)  # --args gives that argument: _run_time_value takes it
            note = f"`{decl.spelling}` may be set from the command line ({where(w)}): its default " \
                   f"`{' '.join(value.text.split())}` taken"
            continue
        return ("runtime", None, None)
    for loop, ws in loops.values():
        unrolled = _unrolled(sym, decl, loop, ws, value, text)
        if unrolled is None:
            return ("runtime", None, None)
        value, text = None, unrolled
    if text is not None:
        return ("text", text, None)
    if value is None:
        return ("runtime", None, None)
    return ("node", value, note)


def _advanced_by_loop(decl, point, writes):
    """For a local written only after `point`: None when no loop around the point writes it again, True when
    each such loop tests it in its condition (ga's `while (current_position < max)`, advanced after the launch:
    the loop's counter, its first value a value the program launches with, as _loop_start takes), False when a
    loop around the point writes it again without testing it (the next turn reads another value)."""
    fn = decl.enclosing(*_FUNCTIONS)
    loops = [a for a in point.ancestors() if a.kind in _LOOPS and fn is not None and _inside(fn, a) and
             any(_inside(a, w) for _, w in writes)]
    if not loops:
        return None
    for lp in loops:
        cond = lp.children[1] if lp.kind == "FOR_STMT" and len(lp.children) == 4 else \
            lp.children[0] if lp.kind == "WHILE_STMT" and lp.children else \
            lp.children[-1] if lp.kind == "DO_STMT" and lp.children else None
        if cond is None or not _refers_to(cond, decl):
            return False
    return True


def _unrolled(sym, decl, loop, writes, value, text) -> str | None:
    """`v OP= E(i)` in `for (int i = A; i < B; i++)` with A and B constants (at most 8 trips) and the loop body
    that one statement: the size expression `((v OP E(A)) OP E(A+1)) ...`; None otherwise."""
    from porter.analysis.launch import fold_int
    if len(writes) != 1 or writes[0].kind != "COMPOUND_ASSIGNMENT_OPERATOR" or len(loop.children) != 4:
        return None
    w = writes[0]
    op = {"*=": "*", "+=": "+"}.get(w.op)
    init, cond, inc, body = loop.children
    stmts = body.children if body.kind == "COMPOUND_STMT" else [body]
    if op is None or len(stmts) != 1 or stmts[0] is not w or init.kind != "DECL_STMT" or not init.children:
        return None
    i = init.children[0]
    start = fold_int(sym.model, _initialiser(i), sym.env) if _initialiser(i) is not None else None
    c = cond.strip
    if start is None or c.kind != "BINARY_OPERATOR" or c.op not in ("<", "<=") or len(c.children) != 2 or \
            getattr(c.children[0].strip, "ref", None) is not i or inc.kind != "UNARY_OPERATOR" or \
            inc.op not in ("++", "post++"):
        return None
    stop = fold_int(sym.model, c.children[1], sym.env)
    if stop is None:
        return None
    stop += c.op == "<="
    if not 0 <= stop - start <= 8:
        return None
    try:
        acc = text if text is not None else (sym.expr(value) if value is not None else None)
        if acc is None:
            return None
        for k in range(start, stop):
            sym.consts[id(i)] = k
            try:
                acc = f"({acc} {op} {sym.expr(w.children[1])})"
            finally:
                sym.consts.pop(id(i), None)
    except Unknown:
        raise
    except Underivable:
        return None
    return acc
