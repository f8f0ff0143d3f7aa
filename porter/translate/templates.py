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
        if parsed is None or parsed[0] != fn.name or len(parsed[1]) != len(kernel_params):
            continue
        hparams = [p[0] for p in template_params(host.node)]
        if not hparams:
            continue
        if text is None:
            text = _strip_comments(model.source.text)
        pat = re.compile(r"\b" + re.escape(host.name) + r"\s*<([^;{}()]*?)>\s*\(")
        for m in pat.finditer(text):
            if host.node.start <= m.start() < host.node.end:
                continue                     # the definition itself, or a recursive call
            hargs = [a.strip() for a in split_top_level(m.group(1))]
            if len(hargs) != len(hparams):
                continue
            env = dict(zip(hparams, hargs))
            args = {}
            for (name, kind, _d), a in zip(kernel_params, parsed[1]):
                a = env.get(a, a)
                args[name] = a if kind == "type" else _value_of(model, a)
            if all(v is not None for v in args.values()) and \
                    not any(kind == "type" and str(v) in hparams for (_n, kind, _d), v in
                            zip(kernel_params, args.values())):
                out.append(args)
    return out


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
