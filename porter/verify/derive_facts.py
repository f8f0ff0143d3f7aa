"""What the program fixes about a size (derive_sizes.py): the values it refuses (`if (dim > 32) return 1;`),
the constant every write of a struct's field stores, its own helpers that divide or round up (a one-line
`ceil_div`, the OpenCL SDK's shrRoundUp, a `ceil(a, b)` macro), and why a variable has no value a run-time guess
may stand for (a statement the parser could not read, a value the program's functions compute). `sym` is the
expression writer (derive_expr._Sym)."""
from __future__ import annotations

import math
import re

from porter.verify.derive_host import Unknown, _BRANCHES, _FUNCTIONS, _INPUT_CALLS, _INTEGRAL, _bare


_EXITS = ("exit", "abort", "_exit", "quick_exit")


def _exits(stmt) -> bool:
    """A statement that leaves the program or the function: `return`, `exit(1)`, `throw`, or a block ending so."""
    while stmt is not None and stmt.kind == "COMPOUND_STMT" and stmt.children:
        stmt = stmt.children[-1]
    if stmt is None:
        return False
    if stmt.kind in ("RETURN_STMT", "CXX_THROW_EXPR"):
        return True
    b = _bare(stmt)
    return b.kind == "CALL_EXPR" and b.spelling in _EXITS


def _refusals(decl) -> list:
    """(op, constant, if statement) for each `if (v OP C) return / exit` (or `C OP v`, joined by `||`) that runs
    unconditionally in a function of `decl`'s file and refuses values of `decl` (tissue's `if (dim > 32) { ...
    return 1; }`); `%` for `if (v % C)` / `if (v % C != 0)`."""
    from porter.analysis.launch import fold_int
    model = decl.model
    scope = decl.enclosing(*_FUNCTIONS)
    ifs = [n for n in (scope.walk() if scope is not None else model.of_kind("IF_STMT")) if n.kind == "IF_STMT"]
    flip = {">": "<", ">=": "<=", "<": ">", "<=": ">="}
    out = []
    for s in ifs:
        if len(s.children) != 2 or not _exits(s.children[1]) or any(
                a.kind in _BRANCHES or a.kind == "CASE_STMT" for a in s.ancestors()
                if a.kind not in _FUNCTIONS and a.enclosing(*_FUNCTIONS) is not None):
            continue                    # under a branch or in a loop: not every run passes it
        todo = [s.children[0].strip]
        while todo:
            c = _bare(todo.pop())
            if c.kind != "BINARY_OPERATOR" or len(c.children) != 2:
                continue
            if c.op == "||":
                todo += c.children
                continue
            a, b = (_bare(k) for k in c.children)
            if c.op == "!=" and a.kind == "BINARY_OPERATOR" and a.op == "%" and fold_int(model, b) == 0:
                c, a, b = a, *(_bare(k) for k in a.children)
            if c.op == "%" and a.kind == "DECL_REF_EXPR" and a.ref is decl:
                k = fold_int(model, b)
                if isinstance(k, int) and k > 1:
                    out.append(("%", k, s))
                continue
            op = c.op
            if b.kind == "DECL_REF_EXPR" and b.ref is decl and op in flip:
                a, b, op = b, a, flip[op]
            if op in flip and a.kind == "DECL_REF_EXPR" and a.ref is decl:
                k = fold_int(model, b)
                if isinstance(k, int) and not isinstance(k, bool):
                    out.append((op, k, s))
    return out


def _run_time_value(sym, decl, fallback: int) -> tuple[int, str]:
    """(value, words) for a size the program decides at run time: `fallback`, brought inside the values the
    program accepts (its refusals: `if (dim > 32) return 1;` makes 1000 into 32), and "N assumed, ..."."""
    if decl is None or decl.kind != "VAR_DECL":
        return fallback, f"{fallback} assumed"
    from porter.verify.derive_args import argv_value
    got = argv_value(decl)              # `cuport verify --args`: the program's own argument, not a guess
    if got is not None:
        return got[1], f"{got[1]}, the program's argument {got[0]} (--args)"
    lo, hi, mult, why = None, None, 1, []
    for op, k, s in _refusals(decl):
        if op == ">":
            hi = k if hi is None else min(hi, k)
        elif op == ">=":
            hi = k - 1 if hi is None else min(hi, k - 1)
        elif op == "<":
            lo = k if lo is None else max(lo, k)
        elif op == "<=":
            lo = k + 1 if lo is None else max(lo, k + 1)
        else:
            mult = mult * k // math.gcd(mult, k)
        why.append(sym.where(s))
    v = fallback
    if hi is not None and v > hi:
        v = hi
    if lo is not None and v < lo:
        v = lo
    if mult > 1:
        v = max(mult, v // mult * mult)
    if v == fallback or (hi is not None and v > hi) or (lo is not None and v < lo) or v <= 0:
        return fallback, f"{fallback} assumed"   # nothing refused it, or no value is left: the plain guess
    return v, f"{v} assumed, the program refusing {fallback} ({', '.join(dict.fromkeys(why))})"


def _struct_name(t: str) -> str:
    return re.sub(r"\b(const|volatile|struct|class)\b|[*&\s]", "", t or "")


def _program_models(sym, pat):
    """The kernel's host model and the program's other files whose text matches `pat`."""
    yield sym.model
    if sym.hosts is not None:
        from pathlib import Path
        yield from sym.hosts._mentioning(pat, skip=str(Path(sym.model.path).resolve()))


def _field_constant(sym, struct: str, field: str):
    """(value, where) when every write `x->field = E` / `x.field = E` to a `struct` the program makes stores one
    constant: E folds, or E is a parameter of a function every live call of which passes that constant, followed
    through the calls in the program's files (backprop's `newnet->hidden_n = n_hidden` in
    `bpnn_internal_create(n_in, n_hidden, n_out)`, called by `bpnn_create(layer_size, 16, 1)`); Unknown when the
    writes store different constants; None when no write is found, the field's address is taken, or a write's
    value is decided at run time (the field then is a run-time size)."""
    pat = re.compile(r"(?:->|\.)\s*" + re.escape(field) + r"\s*=[^=]")
    # `&p.field`, `std::ref(p.field)`: written through a reference too (minibude's command-line parser)
    away = re.compile(r"(?:&|\bref\s*\()\s*[\w\[\]().]*?(?:->|\.)\s*" + re.escape(field) + r"\b(?!\s*\()")
    if any(away.search(m.source.text) for m in _program_models(sym, away)):
        return None
    models = list(_program_models(sym, pat))
    values, where = set(), None
    for m in models:
        for n in m.of_kind("MEMBER_REF_EXPR"):
            p = n.parent
            if n.spelling != field or not n.children or _struct_name(n.children[0].type) != struct or \
                    p is None or p.kind != "BINARY_OPERATOR" or p.op != "=" or len(p.children) != 2 or \
                    _bare(p.children[0]) is not n:
                continue
            got = _passed_constants(sym, p.children[1], 0)
            if not got:
                return None
            values |= got
            where = where or p
    if len(values) > 1:
        raise Unknown(f"`{field}` of a `{struct}` is set to {' and '.join(map(str, sorted(values)))} by the program "
                      f"({sym.where(where)}: `{' '.join(where.text.split())}`): which the launch sees is not known")
    return (values.pop(), where) if values else None


def _passed_constants(sym, e, depth: int) -> set | None:
    """The constants expression `e` of a host function holds over the program's live calls of that function
    (a parameter followed to the arguments of each call); None when one of them is not a constant."""
    from porter.analysis.launch import fold_int
    v = fold_int(e.model, e)
    if isinstance(v, int) and not isinstance(v, bool):
        return {v}
    b = _bare(e)
    if depth > 4 or b.kind != "DECL_REF_EXPR" or b.ref is None or b.ref.kind != "PARM_DECL":
        return None
    fn = b.model.function_of(b)
    if fn is None or fn.node is not b.ref.parent or b.ref.spelling not in [q.name for q in fn.params]:
        return None
    from porter.analysis.affine import analysis
    if id(b.ref) in analysis(b.model).assigned:
        return None                     # the parameter is changed in the function
    k = [q.name for q in fn.params].index(b.ref.spelling)
    pat = re.compile(r"(?<![\w.>:])" + re.escape(fn.name) + r"\s*\(")
    models = list(_program_models(sym, pat))
    if sym.hosts is not None and b.model not in models:
        models.append(b.model)
    calls = [c for m in models for c in m.of_kind("CALL_EXPR")
             if c.spelling == fn.name and len(c.args()) == len(fn.params) and
             (m.function_of(c) is None or m.function_of(c).name != fn.name)]
    called = lambda name: name == "main" or any(    # noqa: E731
        c.spelling == name for m in models + list(_program_models(sym, re.compile(re.escape(name) + r"\s*\(")))
        for c in m.of_kind("CALL_EXPR"))
    live = [c for c in calls if c.model.function_of(c) is not None and called(c.model.function_of(c).name)]
    if not live:
        return None
    out = set()
    for c in live:
        got = _passed_constants(sym, c.args()[k], depth + 1)
        if not got:
            return None
        out |= got
    return out


def _one_return(model, call):
    """(Function, returned expression) of a called host function whose body is `return E;` alone, or None."""
    name = call.spelling
    fns = [f for f in model.functions if f.name == name and f.body is not None and not f.is_kernel]
    if len(fns) != 1 or len(fns[0].params) != len(call.args()):
        return None
    stmts = [c for c in fns[0].body.children]
    if len(stmts) != 1 or stmts[0].kind != "RETURN_STMT" or not stmts[0].children:
        return None
    return fns[0], stmts[0].children[-1]


def _round_up_fn(call, hosts=None):
    """(x, y) arguments of a call of a host function that rounds x up to a multiple of y, written
    `r = x % y; if (r == 0) return x; else return x + y - r;` (the OpenCL SDK's shrRoundUp, with its parameters
    in either order; its body in this file or, declared only, in the one other file of the program that defines
    it: tridiagonal's shrUtils.cu); None otherwise. Compared by declaration, not by name."""
    fns = [f for f in call.model.functions if f.name == call.spelling and f.body is not None and not f.is_kernel]
    if not fns and hosts is not None and call.spelling:
        fns = hosts.defining(call.spelling)
    if len(fns) != 1 or len(fns[0].params) != len(call.args()) or len(call.args()) != 2:
        return None
    fn, stmts = fns[0], fns[0].body.children

    def ref(node):
        b = _bare(node)
        return b.ref if b is not None and b.kind == "DECL_REF_EXPR" else None

    def returned(stmt):
        while stmt is not None and stmt.kind == "COMPOUND_STMT" and len(stmt.children) == 1:
            stmt = stmt.children[0]
        return _bare(stmt.children[-1]) if stmt is not None and stmt.kind == "RETURN_STMT" and stmt.children \
            else None
    if len(stmts) != 2 or stmts[0].kind != "DECL_STMT" or len(stmts[0].children) != 1 or stmts[1].kind != "IF_STMT" \
            or len(stmts[1].children) != 3:
        return None
    r = stmts[0].children[0]
    mod = _bare(r.children[-1]) if r.children else None
    if mod is None or mod.kind != "BINARY_OPERATOR" or mod.op != "%" or len(mod.children) != 2:
        return None
    x, y = ref(mod.children[0]), ref(mod.children[1])
    params = [p.node for p in fn.params]
    if x is None or y is None or x is y or x not in params or y not in params:
        return None
    cond, yes, no = stmts[1].children
    cond = _bare(cond)
    if cond.kind != "BINARY_OPERATOR" or cond.op != "==" or len(cond.children) != 2 or \
            {ref(cond.children[0]) is r, ref(cond.children[1]) is r} != {True, False} or \
            0 not in (_bare(cond.children[0]).value, _bare(cond.children[1]).value):
        return None
    yes, no = returned(yes), returned(no)
    if yes is None or ref(yes) is not x or no is None or no.kind != "BINARY_OPERATOR" or no.op != "-" or \
            len(no.children) != 2 or ref(no.children[1]) is not r:
        return None
    add = _bare(no.children[0])
    if add.kind != "BINARY_OPERATOR" or add.op != "+" or len(add.children) != 2 or \
            {ref(add.children[0]), ref(add.children[1])} != {x, y}:
        return None
    args = call.args()
    return args[params.index(x)], args[params.index(y)]


def _ceil_pattern(node):
    """(a, b) of `a % b == 0 ? a / b : a / b + 1`, or None. Compared by tree, not text: inside a macro every
    node's text is the macro's call."""
    def key(x):
        x = _bare(x)
        return (x.kind, x.spelling, getattr(x, "op", None) if x.kind.endswith("OPERATOR") else None,
                x.value if x.kind.endswith("_LITERAL") else None, tuple(key(c) for c in x.children))

    def div(x):
        x = _bare(x)
        return (key(x.children[0]), key(x.children[1])) if x.kind == "BINARY_OPERATOR" and x.op == "/" and \
            len(x.children) == 2 else None
    if len(node.children) != 3:
        return None
    cond, yes, no = (_bare(c) for c in node.children)
    if cond.kind != "BINARY_OPERATOR" or cond.op != "==" or len(cond.children) != 2:
        return None
    mod, zero = (_bare(c) for c in cond.children)
    if mod.kind != "BINARY_OPERATOR" or mod.op != "%" or zero.value != 0 or len(mod.children) != 2:
        return None
    ab = (key(mod.children[0]), key(mod.children[1]))
    if div(yes) != ab or no.kind != "BINARY_OPERATOR" or no.op != "+" or len(no.children) != 2:
        return None
    q, one = (_bare(c) for c in no.children)
    if div(q) != ab or one.value != 1:
        return None
    return mod.children[0], mod.children[1]


def _lost_write(sym, decl) -> str | None:
    """A local with no value in the tree that the source assigns in a statement clang could not read (cfd's
    `nelr = block_length * (...)` after `file >> nel` with `std::ifstream` unknown to the headers at hand: the
    statement is dropped, and 1000 of its own broke the rounding to the block the program does): the note
    that says so, or None."""
    model = getattr(decl, "model", sym.model)   # the file the declaration is in (its parse errors)
    if decl.kind != "VAR_DECL" or not getattr(model, "errors", None):
        return None
    fn = decl.enclosing("FUNCTION_DECL", "FUNCTION_TEMPLATE", "CXX_METHOD")
    if fn is None:
        return None
    text = model.source.slice(decl.start, fn.end)
    m = re.search(rf"(?<![\w.>])\b{re.escape(decl.spelling)}\s*(=(?!=)|[-+*/%|&^]=|\+\+|--)", text)
    if m is None:                       # hogbom's `const int startx = std::max(0, rx - px);` without std::max
        return None
    line = model.source.position(decl.start + m.start())[0]
    first, last = model.source.position(fn.start)[0], model.source.position(fn.end)[0]
    errors = [e for e in model.errors if first <= getattr(e, "line", 0) <= last]
    why = next((e.message for e in errors if e.line == line), errors[0].message if errors else None)
    return f"`{decl.spelling}` is assigned at line {line} in a statement the parser could not read" + \
        (f" ({why})" if why else "") + ": its value is not known"


def _computed(sym, decl, init, depth: int = 0) -> str | None:
    """Why the local `decl` has no value a guess may stand for: its initialiser (not a command-line read) calls
    a function of the program with integer host variables among the arguments (hogbom's `rx =
    idxToPos(peakPos, residualWidth).x`: a peak position in a residualWidth-wide image); None otherwise (1000
    of its own is taken then)."""
    if depth > 4 or _INPUT_CALLS.search(init.text or ""):
        return None
    e = _bare(init)
    base = _bare(e.children[0]) if e.kind == "ARRAY_SUBSCRIPT_EXPR" and len(e.children) == 2 else None
    if base is not None and base.kind == "DECL_REF_EXPR" and "*" in (base.type or "") and \
            re.search(r"int|long|short|size_t|unsigned", e.type or ""):
        # streamcluster's `pgain(feasible[x], ...)`: a point the program's data picks, which the kernel indexes
        # with (`coord[i * num + x]`): a value below num, not a size of its own
        return f"`{decl.spelling}` is `{' '.join(init.text.split())}` ({sym.where(init)}), an element of the " \
               f"program's data `{base.spelling}`: not a size the source gives"
    own = {f.name for f in sym.model.functions if f.body is not None and not f.is_kernel}
    for call in init.walk():
        ref = call.ref if call.kind == "DECL_REF_EXPR" else None
        if ref is not None and ref.kind == "VAR_DECL" and ref is not decl and sym.definition(ref) is not None:
            why = _computed(sym, ref, sym.definition(ref), depth + 1)   # `startx = std::max(0, rx - px)`
            if why:
                return why
        if call.kind != "CALL_EXPR" or call.spelling not in own:
            continue
        names = sorted({n.spelling for a in call.args() if _INTEGRAL.search(a.type or "") and "*" not in a.type
                        for n in a.walk() if n.kind == "DECL_REF_EXPR" and n.ref is not None and
                        n.ref.kind in ("VAR_DECL", "PARM_DECL")})   # values, not `&state` (metropolis's seed)
        if names:
            line = sym.model.source.position(decl.start)[0]
            return f"`{decl.spelling}` = `{' '.join(init.text.split())}` (line {line}) is computed by " \
                   f"`{call.spelling}` from {', '.join(f'`{n}`' for n in names)}: not a size the source gives"
    return None
