"""What the host side of a CUDA file says about a kernel: its launch shape (block size, grid expressions,
dynamic shared bytes) and, for template kernels, the instantiations to emit (launch sites, explicit
instantiations, -D NAME=VALUE for template parameters, default template arguments)."""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from porter.frontend.lexer import split_top_level
from porter.analysis.affine import analysis
from porter.frontend.model import template_arguments

_DIM3_CTORS = ("CALL_EXPR", "CXX_FUNCTIONAL_CAST_EXPR", "CXX_TEMPORARY_OBJECT_EXPR", "UNEXPOSED_EXPR",
               "CXX_CONSTRUCT_EXPR", "INIT_LIST_EXPR")


@dataclass
class LaunchShape:
    block: list            # [x, y, z], None where unknown
    grid: list             # [text, text, text]: the CUDA grid expressions
    shmem: int | None      # dynamic shared bytes when constant
    shmem_text: str = "0"
    line: int = 0


def _int(model, node):
    if node is None:
        return None
    v = node.value
    if isinstance(v, int) and not isinstance(v, bool):
        return v
    p = analysis(model).poly(node)
    if p is not None and p.is_const() and p.constant.denominator == 1:
        return int(p.constant)
    return None


def _ctor_args(n):
    return [c for c in n.children if c.kind not in ("TYPE_REF", "NAMESPACE_REF", "TEMPLATE_REF")
            and not (c.kind == "DECL_REF_EXPR" and c.spelling == "dim3" and n.kind == "CALL_EXPR")]


def dim3_values(model, node, depth=0) -> list:
    """[x, y, z] of a dim3 / integer launch argument; None for components that are not constant."""
    unknown = [None, None, None]
    if node is None or depth > 8:
        return unknown
    n = node.strip
    v = _int(model, n)
    if v is not None:
        return [v, 1, 1]
    if n.kind in _DIM3_CTORS:
        args = _ctor_args(n)
        if len(args) == 1 and ("dim3" in args[0].type or "uint3" in args[0].type):
            return dim3_values(model, args[0], depth + 1)
        if n.kind == "UNEXPOSED_EXPR" and len(args) == 1:
            return dim3_values(model, args[0], depth + 1)
        vals = [_int(model, a) for a in args[:3]]
        return vals + [1] * (3 - len(vals))
    if n.kind == "DECL_REF_EXPR" and n.ref is not None and n.ref.kind == "VAR_DECL":
        decl = n.ref
        if _member_assigned(model, decl):
            return unknown
        init = [c for c in decl.children if c.kind not in ("TYPE_REF", "NAMESPACE_REF") and
                not c.kind.endswith("_ATTR")]
        if not init:
            return [1, 1, 1] if "dim3" in decl.type else unknown
        return dim3_values(model, init[-1], depth + 1)
    return unknown


def dim3_texts(model, node, depth=0) -> list:
    """Source text of each grid component ("1" for the defaulted ones)."""
    if node is None or depth > 8:
        return ["?", "1", "1"]
    n = node.strip
    if n.kind in _DIM3_CTORS:
        args = _ctor_args(n)
        if len(args) == 1 and ("dim3" in args[0].type or "uint3" in args[0].type):
            return dim3_texts(model, args[0], depth + 1)
        if n.kind == "UNEXPOSED_EXPR" and len(args) == 1:
            return dim3_texts(model, args[0], depth + 1)
        t = [a.text for a in args[:3]]
        return t + ["1"] * (3 - len(t))
    if n.kind == "DECL_REF_EXPR" and n.ref is not None and n.ref.kind == "VAR_DECL" and "dim3" in n.ref.type:
        init = [c for c in n.ref.children if c.kind not in ("TYPE_REF", "NAMESPACE_REF")]
        if init and not _member_assigned(model, n.ref):
            return dim3_texts(model, init[-1], depth + 1)
        return [f"{n.spelling}.x", f"{n.spelling}.y", f"{n.spelling}.z"]
    return [n.text, "1", "1"]


def _member_assigned(model, decl) -> bool:
    for m in model.of_kind("MEMBER_REF_EXPR"):
        base = m.children[0].strip if m.children else None
        if base is None or base.kind != "DECL_REF_EXPR" or base.ref is not decl:
            continue
        p = m.parent
        if p is not None and p.kind in ("BINARY_OPERATOR", "COMPOUND_ASSIGNMENT_OPERATOR") and p.children and \
                p.children[0] is m and (p.kind != "BINARY_OPERATOR" or p.op == "="):
            return True
    return False


def launch_shapes(model, kernel_name: str) -> list[LaunchShape]:
    out = []
    for ls in model.launches:
        if ls.kernel != kernel_name:
            continue
        shm = _int(model, ls.shmem) if ls.shmem is not None else 0
        out.append(LaunchShape(dim3_values(model, ls.block), dim3_texts(model, ls.grid), shm,
                               ls.shmem.text if ls.shmem is not None else "0",
                               model.source.position(ls.node.start)[0]))
    return out


# --- template instantiations ---
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
    from porter.translate.templates import host_template_instances
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
                args[name] = _int(model, d)
        if all(v is not None for v in args.values()):
            add(args, "define" if any(n in defines for n in names) else "default")
    return found
