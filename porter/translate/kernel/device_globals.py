"""File-scope `__device__` variables and host-set `__constant__` data (issue 14 item 3) as buffers: one variable
of the whole device becomes a storage buffer (GLSL binding, OpenCL `__global` kernel parameter after the CUDA
ones) that the host creates once per program, initialises from the manifest and binds in every kernel that
lists it, so values written by one launch are seen by the next (a work-list counter). A scalar is a buffer of
one element. Device functions in OpenCL get the buffer as an extra parameter (calls.py)."""
from __future__ import annotations

import re

from porter.translate.kernel import ctype as ct
from porter.translate.kernel.pointers import Root
from porter.translate.kernel.typeinfo import element


def _attr(decl, kind: str) -> bool:
    return any(c.kind == kind for c in decl.children)


def _set_by_host(em, decl) -> bool:
    """`cudaMemcpyToSymbol(name, ...)` anywhere in the file: the initialiser is not the value kernels see."""
    pat = re.compile(r"cudaMemcpyToSymbol(?:Async)?\s*\(\s*(?:HIP_SYMBOL\s*\(\s*)?" + re.escape(decl.spelling) + r"\b")
    return bool(pat.search(em.model.source.text))


def is_device_global(em, decl) -> bool:
    """A file-scope variable of the device that is no compile-time constant: `__device__` (not const with an
    initialiser), or `__constant__` without an initialiser or written by the host."""
    if decl is None or decl.kind != "VAR_DECL" or em.model.function_of(decl) is not None:
        return False
    device, constant = _attr(decl, "CUDADEVICE_ATTR"), _attr(decl, "CUDACONSTANT_ATTR")
    if not (device or constant):
        return False
    t = em.decl_type(decl)
    const = t.const or (t.kind == "array" and t.elem.const)
    folds = (const or constant) and em.init_of(decl) is not None
    return not folds or _set_by_host(em, decl)


def _initial(em, decl, t, count):
    """The initial values (a list of count numbers), zero without an initialiser (static storage). Vectors and
    structs: None in the manifest, every byte zero."""
    init = em.init_of(decl)
    if init is None:
        return [0] * count
    items = [c for c in init.children] if init.kind == "INIT_LIST_EXPR" else [init]
    if t.kind == "array" and init.kind != "INIT_LIST_EXPR" or len(items) > count:
        em.fail(init, f"the initialiser of the device variable `{decl.spelling}`")
    vals = []
    for c in items:
        v = c.value
        if not isinstance(v, (int, float)):
            em.fail(c, f"the initialiser `{c.text}` of the device variable `{decl.spelling}` (not a constant)")
        vals.append(int(v) if isinstance(v, bool) else v)
    return vals + [0] * (count - len(vals))


def use(em, decl, node) -> str:
    """The buffer standing for the device variable `decl` in this kernel (registered on first use)."""
    found = em.device_globals.get(id(decl))
    if found is not None:
        _note_use(em, found)
        return found["name"]
    t = em.decl_type(decl)
    if t.kind == "array":
        if len(t.dims) != 1 or t.dims[0] is None:
            em.fail(node, f"the multi-dimensional or unsized device array `{decl.spelling}`")
        elem, count = element(t), t.dims[0]
    else:
        elem, count = t, 1
    elem = elem.unqualified()
    if elem.kind not in ("scalar", "vector", "struct") or (elem.kind == "scalar" and elem.is_bool) or \
            (elem.kind == "vector" and elem.n == 3):
        em.fail(node, f"the device variable `{decl.spelling}` of `{ct.spell(t)}` (cuport makes buffers of "
                      "numbers, 2- or 4-vectors and structs only)")
    if elem.kind == "struct":
        em.use_struct(elem.name, node)      # the target checks its layout with the other buffers'
    constant = _attr(decl, "CUDACONSTANT_ATTR")
    name = em.fresh(em.t.ident(decl.spelling))
    root = Root(name, "buffer", elem, "global", decl)
    info = {"name": name, "cuda_name": decl.spelling, "elem": elem, "const": constant, "restrict": False,
            "root": root, "node": decl, "count": count, "array": t.kind == "array",
            "init": _initial(em, decl, t, count) if elem.kind == "scalar" else None,
            "host_sets": _set_by_host(em, decl)}
    if elem.kind != "scalar" and em.init_of(decl) is not None and not info["host_sets"]:
        em.fail(node, f"the initialiser of the device variable `{decl.spelling}` of `{ct.spell(t)}`")
    em.device_globals[id(decl)] = info
    em.buffers[name] = info
    _note_use(em, info)
    return name


def _note_use(em, info):
    """Device functions that touch the variable take it as a parameter where the target needs one."""
    fr = em.frame
    if fr is not None and not fr.is_kernel and info["name"] not in fr.globals:
        fr.globals.append(info["name"])


def manifest_entry(info, structs, binding=None, index=None) -> dict:
    from porter.translate.kernel.manifest import type_name
    e = {"name": info["cuda_name"], "type": type_name(info["elem"]), "count": info["count"],
         "array": info["array"], "init": info["init"], "constant": info["const"], "host_sets": info["host_sets"],
         "bytes": (ct.c_size(info["elem"], structs) or 0) * info["count"]}
    if binding is not None:
        e["binding"] = binding
    if index is not None:
        e["index"] = index
    return e


def in_order(em) -> None:
    """The variables' buffers after the kernel's own, in declaration order (bindings / parameter indices)."""
    dev = sorted(em.device_globals.values(), key=lambda info: info["node"].start)
    for info in dev:
        em.buffers.pop(info["name"])
    for info in dev:
        em.buffers[info["name"]] = info
    em.device_globals = {id(info["node"]): info for info in dev}
