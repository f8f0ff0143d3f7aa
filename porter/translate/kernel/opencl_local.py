"""`__shared__` memory of device functions in OpenCL C, which allows `__local` variables at kernel scope only.
Each shared array a device function declares (or refers to) is declared at the scope of every kernel that
reaches the function, and passed down as a `__local T*` parameter through each function on the way: one array
per declaration (per template instance), however many times or from wherever the function is called, as in
CUDA. The array is named after its function (`blockReduceMax_shared`): two functions' arrays of one name stay
two arrays, and the function's text is the same in every kernel of the file."""
from __future__ import annotations

import re



def declared(em, info):
    """A shared declaration met in a device function: name it after the function (kernel scope keeps names)."""
    if em.frame.is_kernel or info.get("node") is None:
        return
    d = info["node"]
    fn = em.model.function_of(d)
    if fn is None:          # a file-scope `__shared__` variable keeps its name
        return
    if info["type"].kind != "array" and not info["extern"]:
        em.fail(d, f"the `__shared__` scalar `{d.spelling}` in device function `{fn.name}` (OpenCL allows "
                   "__local variables at kernel scope only; cuport passes shared arrays down, not scalars: "
                   f"declare `{d.spelling}` as a one-element array)")
    base = em.t.ident(fn.name) + "_" + d.spelling
    sub = [v for k, v in info["key"][1]]
    if sub:
        base += "_" + "_".join(re.sub(r"\W+", "", v) for v in sub)
    name = base if base not in em.idents and base not in em.shared else em.fresh(base)
    em.idents.add(name)
    old = info["name"]
    if old != name:
        del em.shared[old]
        info["name"] = name
        em.shared[name] = info
    em.frame.names[id(d)] = name


def use(em, name):
    """The current device function uses the kernel-scope array `name` (it becomes a parameter)."""
    if not em.frame.is_kernel:
        if not hasattr(em.frame, "cl_locals"):
            em.frame.cl_locals = {}
        em.frame.cl_locals[name] = True


def call_args(em, key) -> list[str]:
    """The arrays a call of the specialisation `key` passes (and so the caller needs, if it is a function)."""
    names = em.cl_fn_locals.get(key, [])
    for n in names:
        use(em, n)
    return list(names)


def params(em) -> list[str]:
    """The `__local` parameters of the device function being finished: the shared arrays its body refers to,
    then those its callees need."""
    fr = em.frame
    by_key = {s.get("key"): s for s in em.shared.values()}
    names = {}
    for x in fr.fn.body.walk() if fr.fn.body is not None else ():
        d = x.ref if x.kind == "DECL_REF_EXPR" else (x if x.kind == "VAR_DECL" else None)
        if d is None or not any(c.kind == "CUDASHARED_ATTR" for c in d.children):
            continue
        info = by_key.get(em.shared_key(d))
        if info is not None:       # not emitted (a branch pruned at translation time): not needed
            names[info["name"]] = True
    for n in getattr(fr, "cl_locals", {}):
        names[n] = True
    key = em.stack[-1][1]
    em.cl_fn_locals[key] = list(names)
    return [param_decl(em, em.shared[n]) for n in names]


def param_decl(em, info) -> str:
    t = info["type"]
    elem = info["elem"]
    dims = info["dims"]
    if info["extern"] or t.kind != "array" or len(dims) <= 1:
        return f"__local {em.t.type_name(elem, em)}* {info['name']}"
    # `T s[A][B]` is passed as a pointer to its rows
    inner = "".join(f"[{d}]" for d in dims[1:])
    return f"__local {em.t.type_name(t.elem, em)} (*{info['name']}){inner}"
