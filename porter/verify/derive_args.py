"""The program's own command-line arguments (`cuport verify --args "1000000 1000 11 1"`, argv[1..]) for the sizes
it reads from them: a host variable whose value is `atoi(argv[K])` (its initialiser, or the one write the program
makes to it: ert's global `gpu_blocks = atoi(argv[1])` in main; or a default the program replaces when `argc`
says the argument is there) takes argument K instead of the 1000 (256 in a block) assumed for a size decided at
run time. Without --args nothing here changes a derivation. The arguments are set around one derive_file call
(program_args); derive_host._run_time_value asks argv_value."""
from __future__ import annotations

import contextlib
import contextvars
import re

from porter.verify.derive_host import Unknown, _bare, _initialiser

_ARGS: contextvars.ContextVar = contextvars.ContextVar("cuport_program_args", default=None)
_CONVERSIONS = {"atoi", "atol", "atoll", "atof", "strtol", "strtoul", "strtoll", "strtoull", "strtod", "strtof",
                "stoi", "stol", "stoul", "stoll", "stoull", "stof", "stod"}


@contextlib.contextmanager
def program_args(args):
    """Within: argv[1..] is `args` (a sequence of strings; None: not given)."""
    token = _ARGS.set(tuple(args) if args is not None else None)
    try:
        yield
    finally:
        _ARGS.reset(token)


def given() -> tuple | None:
    return _ARGS.get()


def _is_argv(node) -> bool:
    """A reference to main's second parameter (argv, whatever its name)."""
    ref = getattr(node, "ref", None)
    if node.kind != "DECL_REF_EXPR" or ref is None or ref.kind != "PARM_DECL":
        return False
    fn = ref.parent
    if fn is None or fn.kind != "FUNCTION_DECL" or fn.spelling != "main":
        return False
    parms = [c for c in fn.children if c.kind == "PARM_DECL"]
    return len(parms) >= 2 and parms[1] is ref


def argv_read(node) -> int | None:
    """K when `node` is a number converted from `argv[K]` (`atoi(argv[1])`, `strtol(argv[2], NULL, 10)`,
    `std::stoi(argv[3])`, under casts), K a constant; None otherwise."""
    from porter.analysis.launch import fold_int
    b = _bare(node)
    if b is None or b.kind != "CALL_EXPR" or b.spelling not in _CONVERSIONS or not b.args():
        return None
    subs = [n for n in b.args()[0].walk() if n.kind == "ARRAY_SUBSCRIPT_EXPR" and len(n.children) == 2
            and _is_argv(_bare(n.children[0]))]
    if len(subs) != 1:
        return None
    k = fold_int(subs[0].model, subs[0].children[1])
    return k if isinstance(k, int) and not isinstance(k, bool) and k >= 1 else None


def _writes(decl):
    """The assignments to `decl` in the file it is declared in: [(op, node)]."""
    out = []
    for n in decl.model.of_kind("BINARY_OPERATOR", "COMPOUND_ASSIGNMENT_OPERATOR", "UNARY_OPERATOR"):
        if not n.children:
            continue
        t = _bare(n.children[0])
        if t is None or t.kind != "DECL_REF_EXPR" or t.ref is not decl:
            continue
        if n.kind == "BINARY_OPERATOR" and n.op != "=":
            continue
        if n.kind == "UNARY_OPERATOR" and n.op not in ("++", "--", "post++", "post--", "&"):
            continue
        out.append((n.op if n.kind != "BINARY_OPERATOR" else "=", n))
    return out


def _only_argc(write) -> bool:
    """Every condition the write sits under (up to its function) tests `argc` and reads no other variable: the
    program takes the argument whenever it is given (`if (argc > 1) n = atoi(argv[1]);`)."""
    for a in write.ancestors():
        if a.kind in ("FUNCTION_DECL", "FUNCTION_TEMPLATE", "CXX_METHOD"):
            return True
        if a.kind in ("FOR_STMT", "WHILE_STMT", "DO_STMT", "SWITCH_STMT", "CXX_FOR_RANGE_STMT",
                      "CONDITIONAL_OPERATOR"):
            return False
        if a.kind == "IF_STMT" and a.children:
            cond = a.children[0]
            refs = [n for n in cond.walk() if n.kind == "DECL_REF_EXPR" and n.ref is not None and
                    n.ref.kind in ("VAR_DECL", "PARM_DECL")]
            if not refs or any(n.spelling != "argc" for n in refs):
                return False
    return True


def _number(text: str) -> int | None:
    text = text.strip()
    if re.fullmatch(r"[+-]?\d+", text):
        return int(text)
    try:
        v = float(text)
    except ValueError:
        return None
    return int(v) if v == v and abs(v) != float("inf") else None


def argv_value(decl) -> tuple[int, int] | None:
    """(K, value) when --args is given and `decl` (a host variable) takes its value from `argv[K]`, K among the
    arguments given: its initialiser reads it and nothing writes it again, or one plain assignment reads it (the
    declaration's initialiser a constant default, or none) under conditions on `argc` alone. Unknown when
    argument K is not a number (a file name: `StoneRGB.ppm`)."""
    args = given()
    if args is None or decl is None or decl.kind != "VAR_DECL" or getattr(decl, "model", None) is None:
        return None
    from porter.analysis.launch import fold_int
    init = _initialiser(decl)
    writes = _writes(decl)
    k = argv_read(init) if init is not None else None
    if k is not None:
        if writes:
            return None
    else:
        if init is not None and fold_int(decl.model, init) is None:
            return None                 # a default the program computes: not the argument's alone
        if len(writes) != 1 or writes[0][0] != "=" or not _only_argc(writes[0][1]):
            return None
        k = argv_read(writes[0][1].children[1])
        if k is None:
            return None
    if k > len(args):
        return None
    v = _number(args[k - 1])
    if v is None:
        raise Unknown(f"`{decl.spelling}` is read from the program's argument {k}, `{args[k - 1]}` (--args), "
                      "which is not a number")
    return k, v
