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

_LAUNCH = re.compile(r"^\s*(?:::)?(\w+)\s*(<(?P<targs>.*)>)?\s*<<<", re.S)


def launch_kernel_text(model, ls) -> tuple[str, list] | None:
    """(kernel name, [template argument texts]) of a launch from its source text, or None."""
    text = model.source.slice(ls.node.start, ls.node.end)
    head = text[:text.find("<<<") + 3] if "<<<" in text else ""
    m = _LAUNCH.match(head)
    if not m:
        return None
    targs = m.group("targs")
    return m.group(1), ([a.strip() for a in split_top_level(targs)] if targs else [])


def host_template_instances(model, fn, kernel_params) -> list[dict]:
    """[{kernel template parameter: value}] for the dependent launches of `fn` inside templated host
    functions, one per explicit instantiation of the host function found in the file."""
    out = []
    text = None
    for ls in model.launches:
        host = ls.function
        if host is None or not host.is_template or ls.kernel not in ("", fn.name):
            continue
        parsed = launch_kernel_text(model, ls)
        if parsed is None or parsed[0] != fn.name:
            continue
        hparams = [p[0] for p in template_params(host.node)]
        if not hparams:
            continue
        kargs = parsed[1]
        if not kargs and kernel_params:          # `k<<<g, b>>>(d_a, n)`: deduced from the arguments' types
            kargs = _deduce_from_args(fn, ls.args, [p[0] for p in kernel_params])
            if kargs is None:
                continue
        if len(kargs) != len(kernel_params):
            continue
        if text is None:
            text = _strip_comments(model.source.text)
        for env in _host_envs(model, host, text):
            args = {}
            for (name, kind, _d), a in zip(kernel_params, kargs):
                a = _substitute(a, env)
                args[name] = a if kind == "type" else (a if isinstance(a, int) else _value_of(model, a))
            if all(v is not None for v in args.values()) and \
                    not any(kind == "type" and str(v) in hparams for (_n, kind, _d), v in
                            zip(kernel_params, args.values())):
                out.append(args)
    return out


def _host_envs(model, host, text: str, depth: int = 0) -> list[dict]:
    """[{host template parameter: value}], one per call of templated host function `host`: explicit calls in
    the text (`run<double>(`), calls clang resolved (deduced arguments), and explicit calls inside another
    templated host function (`run<T>(` in `outer<T>`) through that function's own calls, 3 levels deep."""
    hparams = [p[0] for p in template_params(host.node)]
    pat = re.compile(r"\b" + re.escape(host.name) + r"\s*<([^;{}()]*?)>\s*\(")
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


def _deduce_from_args(fn, arg_nodes, names: list[str]) -> list | None:
    """The kernel's template arguments deduced from a launch's argument types (all type parameters), or None."""
    try:
        return _deduce_from_types(fn, [a.type for a in arg_nodes], names)
    except Exception:
        return None


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

    @property
    def label(self) -> str:
        return ", ".join(str(self.args[p]) for p in self.order)


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


def instances(model, fn, defines: dict | None = None) -> list[Instance]:
    """The instantiations of template kernel `fn` to emit, deduplicated, in a stable order."""
    params = template_params(fn.node)
    names = [p[0] for p in params]
    found: list[Instance] = []

    def add(args: dict, origin: str, node=None):
        if set(args) != set(names):
            return
        if any(a.args == args for a in found):
            return
        found.append(Instance(args, names, origin, node))

    for ls in model.launches:
        if ls.kernel != fn.name:
            continue
        ta = template_arguments(ls.node)
        if ta and len(ta) == len(params):
            add({p[0]: v for p, (_k, v) in zip(params, ta)}, "launch", ls.node)
    for args in host_template_instances(model, fn, params):      # launches inside templated host functions
        add(args, "host template")
    text = _strip_comments(model.source.text)
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
