"""The instantiations of a template kernel to emit (launch sites, explicit instantiations, -D NAME=VALUE for
template parameters, default template arguments), including template kernels launched from templated host functions (HeCBench's atomicPerf: `template <typename T> void
run(...) { k<T><<<g, b>>>(...); }` called as `run<double>(...)`, `run<int>(...)`). clang leaves such a launch
dependent (no kernel name, no arguments in the model), so the kernel would never be instantiated: the launch's
text names the kernel and its template arguments in terms of the host template's parameters, and the host
template's explicit instantiations (`run<double>(` anywhere in the file) give their values."""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from porter.analysis.launch import const_int
from porter.frontend.lexer import split_top_level
from porter.frontend.model import template_arguments
from porter.translate import class_launches

_LAUNCH = re.compile(r"^\s*(?:::)?(\w+)\s*(<(?P<targs>.*)>)?\s*<<<", re.S)


def launch_kernel_text(model, ls, name: str | None = None) -> tuple[str, list] | None:
    """(kernel name, [template argument texts]) of a launch from its source text, or None. A launch written
    inside a macro's argument (`DISPATCH(v, N, [&] { k<T, N><<<g, b>>>(...); })`) spans the whole macro
    call: the one launch of `name` in it."""
    text = _strip_comments(model.source.slice(ls.node.start, ls.node.end))   # `k <A, B> // args` newline `<<<`
    head = text[:text.find("<<<") + 3] if "<<<" in text else ""
    m = _LAUNCH.match(head)
    if not m and name:
        pat = re.compile(r"(?<![\w.>:])" + re.escape(name) + r"\s*(<(?P<targs>[^;{}]*?)>)?\s*<<<")
        found = list(pat.finditer(text))
        if not found and not text.strip() and ls.function is not None and ls.function.node is not None:
            # clang gave the copy no extent of its own: the host function's one launch of `name`
            found = list(pat.finditer(_strip_comments(ls.function.node.text)))
        m = found[0] if len(found) == 1 else None
        if m is not None:
            targs = m.group("targs")
            return name, ([a.strip() for a in split_top_level(targs)] if targs else [])
    if not m:
        return None
    targs = m.group("targs")
    return m.group(1), ([a.strip() for a in split_top_level(targs)] if targs else [])


_INTS = {"INT", "UINT", "LONG", "ULONG", "LONGLONG", "ULONGLONG", "SHORT", "USHORT", "CHAR_S", "SCHAR", "UCHAR",
         "CHAR_U", "BOOL"}


def local_constants(model, node, stop) -> dict:
    """{name: value} of the constants visible at `node` inside host function `stop`: `constexpr int N = 8;`
    (a const integer with a constant initialiser) and `using acc_t = float;` declared before it in an
    enclosing block (macro-expanded dispatch blocks included: each copy of a launch sees its own); the
    innermost declaration wins."""
    env: dict = {}
    child, anc = node, node.parent
    while anc is not None and child is not stop:
        for c in anc.children:
            if c is child:
                break
            decls = c.children if c.kind == "DECL_STMT" else ()
            for d in decls:
                if d.spelling in env or not d.spelling:
                    continue
                try:
                    if d.kind == "VAR_DECL" and d._cursor.type.is_const_qualified() and d.children:
                        v = const_int(model, d.children[-1])
                        if v is not None:
                            env[d.spelling] = v
                        elif d.children[-1].text.strip() and d._cursor.type.get_canonical().kind.name in _INTS:
                            # `const uint32_t bs = ((K + 32) / 32) * 32;` over the host template's parameters:
                            # its text, evaluated once they are substituted (never if anything stays unknown)
                            env[d.spelling] = "(" + d.children[-1].text.strip() + ")"
                    elif d.kind in ("TYPE_ALIAS_DECL", "TYPEDEF_DECL"):
                        t = d._cursor.underlying_typedef_type.spelling
                        if t and "type-parameter" not in t:
                            env[d.spelling] = t
                except Exception:
                    continue
        child, anc = anc, anc.parent
    return env


def host_template_instances(model, fn, kernel_params, envs: list | None = None) -> list[dict]:
    """[{kernel template parameter: value}] for the dependent launches of `fn` inside templated host
    functions, one per explicit instantiation of the host function found in the file. `envs`, when given,
    receives (host function, launch site, {host template parameter: value}) beside each (verify's derivation
    reads the launch's sizes with them)."""
    out = []
    text = None
    for ls in model.launches:
        host = ls.function
        if host is None or not host.is_template or ls.kernel not in ("", fn.name):
            continue
        parsed = launch_kernel_text(model, ls, fn.name)
        if parsed is None or parsed[0] != fn.name:
            continue
        local = local_constants(model, ls.node, host.node)
        hparams = [p[0] for p in template_params(host.node)]
        if not hparams:
            continue
        kargs = parsed[1]
        deduce = not kargs and kernel_params     # `k<<<g, b>>>(d_a, n)`: deduced from the arguments' types
        if not deduce and not _defaults_complete(kernel_params, len(kargs)):
            continue
        if text is None:
            text = _program_text(model)
        for env in _host_envs(model, host, text):
            if deduce:
                # the argument types with this call's host arguments in (`const IdxT` -> `const int`), so
                # arguments spelled with the host's parameters and concrete ones agree
                try:
                    types = [_substitute(a.type, env) for a in ls.args]
                except Exception:
                    continue
                kargs = _deduce_from_types(fn, [t for t in types], [p[0] for p in kernel_params if p[0]])
                if kargs is None:
                    continue
            args = _bound_args(model, fn, kernel_params, kargs, local, env)
            if args is not None and not any(kind == "type" and str(v) in hparams for (_n, kind, _d), v in
                                            zip(kernel_params, args.values())):
                out.append(args)
                if envs is not None:
                    envs.append((host, ls, env))
    return out


def class_template_instances(model, fn, kernel_params) -> list[tuple[dict, tuple]]:
    """[({kernel template parameter: value}, (launch site, {class template parameter: value}))] for the
    launches of `fn` inside the member functions of a class template (class_launches.py), one per instantiation
    of the class found in the program: the launch's template arguments as written, else deduced from its
    arguments' types with the class's parameters substituted."""
    out = []
    text = None
    for ls in model.launches:
        host = ls.function
        if host is None or ls.kernel not in ("", fn.name):
            continue
        cls = class_launches.class_template_of(host)
        if cls is None:
            continue
        parsed = launch_kernel_text(model, ls, fn.name)
        if parsed is None or parsed[0] != fn.name:
            continue
        cparams = [p[0] for p in class_launches.class_params(cls)]
        kargs = parsed[1]
        deduce = not kargs and kernel_params
        if not deduce and not _defaults_complete(kernel_params, len(kargs)):
            continue
        if text is None:
            text = _program_text(model)
        local = local_constants(model, ls.node, host.node)
        try:
            types = [class_launches.arg_type(a._cursor, cparams) for a in ls.args] if deduce else []
        except Exception:               # a cursor of a released or partial tree: no instance from it
            continue
        envs = class_launches.class_instantiations(model, cls, text, lambda t: _value_of(model, t),
                                                   lambda t: canonical_type(model, fn, t))
        for env in envs:
            if deduce:
                kargs = _deduce_from_types(fn, [_substitute(t, env) for t in types],
                                           [p[0] for p in kernel_params if p[0]])
                if kargs is None:
                    continue
            args = _bound_args(model, fn, kernel_params, kargs, local, env)
            if args is not None and \
                    not any(re.search(r"\b%s\b" % re.escape(c), str(v)) for c in cparams for v in args.values()):
                out.append((args, (ls, env)))
    return out


def _bound_args(model, fn, kernel_params, kargs, local: dict, env: dict) -> dict | None:
    """{template parameter: value} of one launch's template arguments under the caller's bindings (`local`, then
    the host template's `env`), defaults filled; None when one of them has no value."""
    args = {}
    for (name, kind, _d), a in zip(kernel_params, kargs):
        a = _substitute(_substitute(a, local), env)
        args[name] = a if kind == "type" else (a if isinstance(a, int) else _value_of(model, a))
    args = _fill_defaults(model, fn, kernel_params, args)
    return args if args is not None and all(v is not None for v in args.values()) else None


def _host_envs(model, host, text: str, depth: int = 0) -> list[dict]:
    """[{host template parameter: value}], one per call of templated host function `host`: explicit calls in
    the text (`run<double>(`), calls clang resolved (deduced arguments), and explicit calls inside another
    templated host function (`run<T>(` in `outer<T>`) through that function's own calls, 3 levels deep."""
    hparams = [p[0] for p in template_params(host.node)]
    # a call `run<double>(`, or the address of a specialization `run<32 * 2>,` (a table of function pointers):
    # either instantiates it
    pat = re.compile(r"\b" + re.escape(host.name) + r"\s*<([^;{}()]*?)>\s*(?:\(|(?=[,});]))")
    envs: list[dict] = []

    def add(env):
        if env not in envs:
            envs.append(env)

    for m in pat.finditer(text):
        if host.node.start <= m.start() < host.node.end:
            continue                         # the definition itself, or a recursive call
        hargs = [a.strip() for a in split_top_level(m.group(1))]
        if len(hargs) != len(hparams):
            continue
        caller = next((f for f in model.functions if f.is_template and f is not host and f.node is not None
                       and f.node.start <= m.start() < f.node.end), None)
        cparams = [p[0] for p in template_params(caller.node)] if caller is not None else []
        if cparams and depth < 3 and any(re.search(r"\b%s\b" % re.escape(c), a) for c in cparams for a in hargs):
            for cenv in _host_envs(model, caller, text, depth + 1):
                add(dict(zip(hparams, [_substitute(a, cenv) for a in hargs])))
        else:
            add(dict(zip(hparams, hargs)))
    for hargs, caller in _host_calls(model, host):   # `run(d_a, n)`: deduced arguments; `run<T, ENUM>(...)`
        if len(hargs) != len(hparams):
            continue
        cparams = [p[0] for p in template_params(caller.node)] if caller.is_template else []
        if cparams and any(re.search(r"\b%s\b" % re.escape(c), str(a)) for c in cparams for a in hargs):
            if depth < 3:
                for cenv in _host_envs(model, caller, text, depth + 1):
                    add(dict(zip(hparams, [_substitute(a, cenv) for a in hargs])))
        else:
            add(dict(zip(hparams, hargs)))
    return envs


_QUALS = re.compile(r"\b(?:const|volatile|__restrict__|__restrict|restrict|struct|class|typename)\b")


def _norm_type(t: str) -> list[str]:
    return re.findall(r"\w+|::|\S", _QUALS.sub(" ", t))


def _deduce(pattern: str, actual: str, names: list[str], env: dict) -> bool:
    """Match a parameter type spelled with template parameters (`const T *`) against an argument's type
    (`const scalar_t *`, `float *`), qualifiers ignored, binding `names` in env; False on a mismatch."""
    pt, at = _norm_type(pattern), _norm_type(actual)
    if not any(t in names for t in pt):
        return True
    # the tokens around the one parameter must match exactly; the parameter takes what is between them
    idx = [i for i, t in enumerate(pt) if t in names]
    if len(idx) != 1:
        return False
    i = idx[0]
    before, after = pt[:i], pt[i + 1:]
    if at[:len(before)] != before or (after and at[len(at) - len(after):] != after) or len(at) <= len(pt) - 1:
        return False
    val = " ".join(at[len(before):len(at) - len(after)])
    if env.get(pt[i], val) != val:
        return False
    env[pt[i]] = val
    return True


def _substitute(a, env: dict):
    if a in env:
        return env[a]
    if isinstance(a, str) and env:          # `scalar_t *`-like spellings deduced above
        return re.sub(r"\b\w+\b", lambda m: str(env.get(m.group(0), m.group(0))), a)
    return a


def _host_calls(model, host) -> list[tuple[list, object]]:
    """[(template arguments, calling Function)] of the calls to templated host function `host` that clang sees
    in the file's other functions (their bodies are not walked into the model: their cursors are): resolved
    calls give type spellings and ints; a dependent call inside another template (`run(d_a, n)` with `T *d_a`)
    gives the arguments deduced from its argument types, spelled with the caller's parameters."""
    out = []
    name = re.compile(r"\b" + re.escape(host.name) + r"\b")
    hnames = [p[0] for p in template_params(host.node)]
    for f in model.functions:
        if f is host or f.node is None:
            continue
        try:
            if not name.search(f.node.text):
                continue
            for c in f.node._cursor.walk_preorder():
                if c.kind.name != "CALL_EXPR":
                    continue
                kids = list(c.get_children())
                callee = kids[0] if kids else None
                if callee is not None and callee.kind.name == "DECL_REF_EXPR" and not callee.spelling:
                    callee = next(callee.get_children(), None)      # `f(x)` in a template: DeclRef(Overloaded)
                dependent = not c.spelling and callee is not None and \
                    callee.kind.name == "OVERLOADED_DECL_REF" and callee.spelling == host.name
                if c.spelling != host.name and not dependent:
                    continue
                args = _deduce_from_types(host, [a.type.spelling for a in kids[1:]], hnames) if dependent \
                    else _cursor_template_args(c.referenced)
                if args is not None and (args, f) not in out:
                    out.append((args, f))
        except Exception:               # a cursor of a released or partial tree: no instance from it
            continue
    return out


def _cursor_template_args(ref) -> list | None:
    n = ref.get_num_template_arguments() if ref is not None else -1
    if n is None or n <= 0:
        return None
    args = []
    for i in range(n):
        k = ref.get_template_argument_kind(i).name
        if k == "TYPE":
            args.append(ref.get_template_argument_type(i).get_canonical().spelling)
        elif k == "INTEGRAL":
            args.append(int(ref.get_template_argument_value(i)))
        else:
            return None
    return args


def _deduce_from_types(fn, arg_types: list[str], names: list[str]) -> list | None:
    """Template arguments of `fn` deduced from its call's argument types (all type parameters), or None."""
    ptypes = [p.type for p in fn.params]
    if not ptypes and fn.node is not None:       # a host function kept shallow: its parameters from clang
        ptypes = [c.type.spelling for c in fn.node._cursor.get_children() if c.kind.name == "PARM_DECL"]
    if len(arg_types) != len(ptypes):
        return None
    env: dict = {}
    for pt, t in zip(ptypes, arg_types):
        if t == "<dependent type>":
            continue        # an expression clang leaves dependent: the others must bind every name (below)
        if not t or not _deduce(pt, t, names, env):
            return None
    return [env[n] for n in names] if all(n in env for n in names) else None



# --- template instantiations of a kernel ---

@dataclass
class Instance:
    args: dict = field(default_factory=dict)     # param name -> type spelling (str) or int
    order: list = field(default_factory=list)    # param names in declaration order
    origin: str = ""                             # launch | explicit | define | default
    node: object = None                          # launch node (for template_arguments) when from a launch
    host: tuple | None = None                    # (launch site, {host template parameter: value}) when from
    #                                              a launch inside a templated host function

    @property
    def label(self) -> str:
        # an unnamed (SFINAE) parameter does not name the instance
        return ", ".join(str(self.args[p]) for p in self.order if p)


def template_params(fn_node) -> list[tuple[str, str, object]]:
    """[(name, 'type' | 'value', default node or None)] of a FUNCTION_TEMPLATE node."""
    out = []
    for c in fn_node.children:
        if c.kind == "TEMPLATE_TYPE_PARAMETER":
            d = [x for x in c.children if x.kind == "TYPE_REF"]
            out.append((c.spelling, "type", d[-1] if d else None))
        elif c.kind == "TEMPLATE_NON_TYPE_PARAMETER":
            d = [x for x in c.children if x.kind not in ("TYPE_REF", "NAMESPACE_REF")]
            out.append((c.spelling, "value", d[-1] if d else None))
    if not out and not fn_node.children and getattr(fn_node, "_cursor", None) is not None:
        # a host function kept shallow (name only): its parameters from clang, without defaults
        kinds = {"TEMPLATE_TYPE_PARAMETER": "type", "TEMPLATE_NON_TYPE_PARAMETER": "value"}
        out = [(c.spelling, kinds[c.kind.name], None) for c in fn_node._cursor.get_children()
               if c.kind.name in kinds]
    return out


_ENABLE_IF = re.compile(r"^\s*typename\s+(?:std::)?enable_if\s*<(?P<cond>.*),\s*int\s*>::type\s*=\s*0\s*$|"
                        r"^\s*(?:std::)?enable_if_t\s*<(?P<cond2>.*?)(?:,\s*int\s*)?>\s*\*?\s*=\s*(?:0|nullptr)\s*$",
                        re.S)
_IS_SAME = re.compile(r"^\s*(?P<neg>!\s*)?(?:std::)?is_same(?:<(?P<a>[^<>]*),(?P<b>[^<>]*)>::value|"
                      r"_v<(?P<a2>[^<>]*),(?P<b2>[^<>]*)>)\s*$")


def _defaults_complete(params, n: int) -> bool:
    """n explicit arguments and defaults for the rest (an unnamed SFINAE parameter has one)."""
    return n <= len(params) and all(d is not None for _n, _k, d in params[n:])


def _fill_defaults(model, fn, params, args: dict) -> dict | None:
    """args with the parameters a launch left to their defaults filled in; an unnamed
    `typename std::enable_if<std::is_same<T, X>::value, int>::type = 0` parameter (an overload chosen by
    type) is evaluated with the arguments: None when the condition is false (the launch calls another
    overload) or cannot be decided (no guess)."""
    out = dict(args)
    for name, kind, d in params:
        if name in out:
            continue
        if d is None:
            return None
        node = next((c for c in fn.node.children if c.kind == "TEMPLATE_NON_TYPE_PARAMETER" and
                     c.spelling == name and c.start <= d.start), None)
        m = _ENABLE_IF.match(node.text) if node is not None and not name else None
        if m is not None:
            holds = _is_same_holds(model, fn, m.group("cond") or m.group("cond2"), out)
            if not holds:
                return None
            out[name] = 0
        elif kind == "type":
            out[name] = d.spelling.replace("struct ", "")
        elif name:
            out[name] = const_int(model, d)
        else:
            return None
    return out


def _is_same_holds(model, fn, cond: str, args: dict):
    """True / False for `std::is_same<A, B>::value` (or `!...`, `is_same_v`) with args substituted and
    typedefs resolved (`half2` is `__half2`); None when it is another condition or a side is not known."""
    m = _IS_SAME.match(cond)
    if not m:
        return None
    a, b = (m.group("a") or m.group("a2")), (m.group("b") or m.group("b2"))
    a, b = (canonical_type(model, fn, _substitute(x.strip(), args)) for x in (a, b))
    if any(p and p in (a, b) for p in args if isinstance(p, str)) or not a or not b:
        return None
    return (a == b) != bool(m.group("neg"))


def canonical_type(model, fn, spelling) -> str:
    """A type spelling with the file's typedefs and aliases of plain names resolved through clang (what
    `std::is_same` compares), qualifiers normalised; ints stay ints."""
    if not isinstance(spelling, str):
        return spelling
    cache = getattr(model, "_cuport_typedefs", None)
    if cache is None:
        cache = {}
        try:
            tu = fn.node._cursor.translation_unit
            for c in tu.cursor.get_children():
                if c.kind.name in ("TYPEDEF_DECL", "TYPE_ALIAS_DECL") and c.spelling not in cache:
                    cache[c.spelling] = c.underlying_typedef_type.get_canonical().spelling
        except Exception:
            pass
        for k, v in _shim_typedefs().items():      # the shim's (int64_t...) come from a PCH clang does not list
            cache.setdefault(k, v)
        try:
            model._cuport_typedefs = cache
        except AttributeError:
            pass
    toks = _norm_type(spelling)
    toks = [t for tok in toks for t in (_norm_type(cache[tok]) if tok in cache else [tok])]
    return " ".join(toks)


_DEFINE = re.compile(r"^[ \t]*#[ \t]*define[ \t]+(\w+)\(([^)]*)\)((?:[^\n]*\\\n)*[^\n]*)", re.M)


def _program_text(model) -> str:
    """The file's text without comments, followed by the expansions of function-like macros that make explicit
    instantiations (`#define EXPORT(x) template uint64_t _compress<x>(...);` then `EXPORT(1) EXPORT(2)`,
    gerbil): the instantiations they write are the program's, so the text scans below see them. The
    expansions lie past the end of the source: inside no function."""
    cached = getattr(model, "_cuport_program_text", None)
    if cached is not None:
        return cached
    text = _strip_comments(model.source.text)
    extra = []
    for d in _DEFINE.finditer(text):
        name, params, body = d.group(1), [p.strip() for p in d.group(2).split(",")], d.group(3)
        body = body.replace("\\\n", " ")
        if not re.search(r"\btemplate\b", body) or not all(re.fullmatch(r"\w+", p) for p in params):
            continue
        for m in re.finditer(r"(?<![\w#])" + re.escape(name) + r"\s*\(([^()]*)\)", text):
            if d.start() <= m.start() < d.end() or len(extra) > 4096:
                continue
            args = [a.strip() for a in split_top_level(m.group(1))] if m.group(1).strip() else []
            if len(args) != len(params):
                continue
            env = dict(zip(params, args))
            extra.append(re.sub(r"\b\w+\b", lambda w: env.get(w.group(0), w.group(0)), body))
    out = text + ("\n" + "\n".join(extra) + "\n" if extra else "")
    try:
        model._cuport_program_text = out
    except AttributeError:
        pass
    return out


def _strip_comments(text: str) -> str:
    text = re.sub(r"/\*.*?\*/", lambda m: " " * len(m.group(0)), text, flags=re.S)
    return re.sub(r"//[^\n]*", lambda m: " " * len(m.group(0)), text)


def _value_of(model, text: str):
    t = text.strip()
    try:
        return int(t.rstrip("uUlL"), 0)
    except ValueError:
        pass
    if re.match(r"^\w+$", t):
        v = model.macro_value(t)
        if isinstance(v, int):
            return v
        return None
    return _int_expr(model, t)


def _int_expr(model, text: str):
    """An integer constant expression of literals and integer macros (`32 * 2`, `(N + 31) / 32`), with C's
    truncating division; None for anything else."""
    import ast
    names = {}

    def name(m):
        v = model.macro_value(m.group(0)) if model is not None else None
        if not isinstance(v, int):
            raise ValueError(m.group(0))
        names[m.group(0)] = v
        return str(v)
    try:
        t = re.sub(r"\b(0[xX][0-9a-fA-F]+|\d+)[uUlL]*\b", lambda m: str(int(m.group(1), 0)), text)
        t = re.sub(r"\b[A-Za-z_]\w*\b", name, t)
        if "//" in t or "**" in t:
            return None
        tree = ast.parse(t.replace("/", "//"), mode="eval")
    except (ValueError, SyntaxError):
        return None

    def ev(n):
        if isinstance(n, ast.Expression):
            return ev(n.body)
        if isinstance(n, ast.Constant) and type(n.value) is int:
            return n.value
        if isinstance(n, ast.UnaryOp) and isinstance(n.op, (ast.USub, ast.UAdd, ast.Invert)):
            v = ev(n.operand)
            return -v if isinstance(n.op, ast.USub) else (~v if isinstance(n.op, ast.Invert) else v)
        if isinstance(n, ast.BinOp):
            a, b = ev(n.left), ev(n.right)
            op = type(n.op)
            if op in (ast.FloorDiv, ast.Mod):
                if b == 0:
                    raise ValueError("division by zero")
                q = abs(a) // abs(b) * (1 if (a >= 0) == (b >= 0) else -1)     # C truncates toward zero
                return q if op is ast.FloorDiv else a - q * b
            ops = {ast.Add: lambda: a + b, ast.Sub: lambda: a - b, ast.Mult: lambda: a * b,
                   ast.LShift: lambda: a << b, ast.RShift: lambda: a >> b, ast.BitAnd: lambda: a & b,
                   ast.BitOr: lambda: a | b, ast.BitXor: lambda: a ^ b}
            if op in ops and (op not in (ast.LShift, ast.RShift) or 0 <= b < 64):
                return ops[op]()
        raise ValueError("not an integer constant expression")
    try:
        return ev(tree)
    except (ValueError, RecursionError):
        return None


_SHIM_TYPEDEFS: dict | None = None


def _shim_typedefs() -> dict:
    """{name: type} of the plain `typedef long long int64_t;` lines of cuport's CUDA shim."""
    global _SHIM_TYPEDEFS
    if _SHIM_TYPEDEFS is None:
        _SHIM_TYPEDEFS = {}
        try:
            from porter.frontend.parse import SHIM_HEADER
            with open(SHIM_HEADER, encoding="utf-8") as fh:      # a str path (parse.py keeps pathlib off the lint path)
                text = _strip_comments(fh.read())
        except (OSError, ImportError):
            return _SHIM_TYPEDEFS
        for m in re.finditer(r"\btypedef\s+((?:(?:unsigned|signed|long|short|int|char|float|double|bool)\s+)*"
                             r"(?:unsigned|signed|long|short|int|char|float|double|bool))\s+(\w+)\s*;", text):
            _SHIM_TYPEDEFS.setdefault(m.group(2), " ".join(m.group(1).split()))
    return _SHIM_TYPEDEFS


def _canon_args(model, fn, args: dict) -> dict:
    return {k: canonical_type(model, fn, v) for k, v in args.items()}


# type arguments taken from another input's text: only builtin arithmetic types (a name there may mean
# something else here)
_PLAIN_TYPES = re.compile(r"^(?:(?:unsigned|signed)\s+)?(?:char|short|int|long|long\s+long|float|double|bool|"
                          r"unsigned|u?int(?:8|16|32|64)_t|size_t)$")


def _other_file_launches(fn, params, texts) -> list[dict]:
    """[{param: value}] for launches `k<float, 4><<<` of `fn` in other inputs' texts, with arguments that are
    builtin types and integer literal expressions only (never their file's template parameters or macros)."""
    out = []
    pat = re.compile(r"\b" + re.escape(fn.name) + r"\s*<([^;{}]*?)>\s*<<<")
    for text in texts:
        for m in pat.finditer(_strip_comments(text)):
            raw = [a.strip() for a in split_top_level(m.group(1))]
            if len(raw) > len(params):
                continue
            args = {}
            for (name, kind, _d), a in zip(params, raw):
                if kind == "type":
                    a = re.sub(r"\s+", " ", a)
                    args[name] = a if _PLAIN_TYPES.match(a) else None
                else:
                    args[name] = _int_expr(None, a)
            if all(v is not None for v in args.values()):
                out.append(args)
    return out


def instances(model, fn, defines: dict | None = None, other_texts=()) -> list[Instance]:
    """The instantiations of template kernel `fn` to emit, deduplicated, in a stable order."""
    params = template_params(fn.node)
    names = [p[0] for p in params]
    found: list[Instance] = []

    def add(args: dict, origin: str, node=None, host=None):
        if set(args) != set(names):
            return
        if any(a.args == args or _canon_args(model, fn, a.args) == _canon_args(model, fn, args) for a in found):
            return                  # `half2` and `__half2` are one instantiation
        found.append(Instance(args, names, origin, node, host))

    for ls in model.launches:
        if ls.kernel != fn.name:
            continue
        ta = template_arguments(ls.node)
        if ta and len(ta) == len(params):
            add({p[0]: v for p, (_k, v) in zip(params, ta)}, "launch", ls.node)
    envs: list = []
    for args, (_h, ls, env) in zip(host_template_instances(model, fn, params, envs), envs):
        add(args, "host template", host=(ls, env))               # launches inside templated host functions
    for args, host in class_template_instances(model, fn, params):
        add(args, "host template", host=host)                   # launches in a class template's methods
    for args in _other_file_launches(fn, params, other_texts):   # launches in another input of the run
        args = _fill_defaults(model, fn, params, args)
        if args is not None and all(v is not None for v in args.values()):
            add(args, "other input")
    text = _program_text(model)
    for m in re.finditer(r"\btemplate\s+(?!<)[^;{}]*?\b" + re.escape(fn.name) + r"\s*<([^;{}]*?)>\s*\(", text):
        raw = split_top_level(m.group(1))
        if len(raw) != len(params):
            continue
        args = {}
        for (name, kind, _d), a in zip(params, raw):
            args[name] = a if kind == "type" else _value_of(model, a)
        if all(v is not None for v in args.values()):
            add(args, "explicit")
    defines = defines or {}
    if names and all(n in defines or d is not None for n, _k, d in params):
        args = {}
        for name, kind, d in params:
            if name in defines:
                args[name] = defines[name] if kind == "type" else _value_of(model, str(defines[name]))
            elif kind == "type":
                args[name] = d.spelling.replace("struct ", "") if d is not None else None
            else:
                args[name] = const_int(model, d)
        if all(v is not None for v in args.values()):
            add(args, "define" if any(n in defines for n in names) else "default")
    return found
