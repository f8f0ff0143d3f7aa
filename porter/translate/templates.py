"""Template kernels launched from templated host functions (HeCBench's atomicPerf: `template <typename T> void
run(...) { k<T><<<g, b>>>(...); }` called as `run<double>(...)`, `run<int>(...)`). clang leaves such a launch
dependent (no kernel name, no arguments in the model), so the kernel would never be instantiated: the launch's
text names the kernel and its template arguments in terms of the host template's parameters, and the host
template's explicit instantiations (`run<double>(` anywhere in the file) give their values."""
from __future__ import annotations

import re

from porter.frontend.lexer import split_top_level

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
    from porter.translate.launch import _strip_comments, _value_of, template_params
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
