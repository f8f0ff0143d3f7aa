"""libclang translation unit -> FileModel. The only place (with parse.py) that walks libclang cursors."""
from __future__ import annotations

import ctypes

from porter.frontend import parse as _parse
from porter.frontend.model import (BARRIERS, FileModel, Function, LaunchSite, Node, Param, SharedArray,
                                   _TRANSPARENT)

_FUNC_KINDS = {"FUNCTION_DECL", "FUNCTION_TEMPLATE", "CXX_METHOD", "CONSTRUCTOR", "DESTRUCTOR"}
_REF_KINDS = {"DECL_REF_EXPR", "MEMBER_REF_EXPR", "CALL_EXPR", "TYPE_REF", "TEMPLATE_REF"}
_DECL_KINDS = {"VAR_DECL", "PARM_DECL", "FUNCTION_DECL", "FUNCTION_TEMPLATE", "FIELD_DECL",
               "ENUM_CONSTANT_DECL", "CXX_METHOD", "TEMPLATE_NON_TYPE_PARAMETER"}


class _Locator:
    """Expansion-location offsets with a cheap same-file test (pointer compare on CXFile)."""

    def __init__(self, tu, path):
        import clang.cindex as ci
        self.ci = ci
        self.lib = ci.conf.lib
        f = self.lib.clang_getFile(tu, path.encode())
        self.main = ctypes.cast(f, ctypes.c_void_p).value if f else None
        self._f = ci.c_object_p()
        self._u = ctypes.c_uint()
        self._off = ctypes.c_uint()

    def span(self, cursor):
        lib = self.lib
        ext = lib.clang_getCursorExtent(cursor)
        s = lib.clang_getRangeStart(ext)
        lib.clang_getInstantiationLocation(s, ctypes.byref(self._f), ctypes.byref(self._u), ctypes.byref(self._u),
                                           ctypes.byref(self._off))
        fv = ctypes.cast(self._f, ctypes.c_void_p).value
        if fv is None or fv != self.main:
            return None
        start = self._off.value
        e = lib.clang_getRangeEnd(ext)
        lib.clang_getInstantiationLocation(e, ctypes.byref(self._f), ctypes.byref(self._u), ctypes.byref(self._u),
                                           ctypes.byref(self._off))
        return start, self._off.value


def build_model(source, options=None) -> FileModel:
    """Parse and model a SourceFile. Parse errors are kept in model.errors; never raises for bad source."""
    tu, errors = _parse.parse(source.path, source.data, options)
    model = FileModel(source, tu, errors, options)
    loc = _Locator(tu, tu.spelling)
    decl_nodes: dict[int, Node] = {}
    pending_refs: list[tuple[Node, object]] = []

    def convert(cursor, parent, span):
        kind = cursor.kind.name
        node = Node(kind, cursor.spelling, span[0], span[1], cursor, model)
        node.parent = parent
        if kind in _DECL_KINDS or kind in _FUNC_KINDS:
            decl_nodes[cursor.hash] = node
        if kind in ("DECL_REF_EXPR", "MEMBER_REF_EXPR", "CALL_EXPR"):
            pending_refs.append((node, cursor))
        kids = node.children
        for ch in cursor.get_children():
            sp = loc.span(ch)
            if sp is None:
                continue
            c = convert(ch, node, sp)
            # collapse implicit wrappers so rules see the real expression
            if c.kind in _TRANSPARENT and len(c.children) == 1:
                inner = c.children[0]
                inner.parent = node
                c = inner
            kids.append(c)
        return node

    for top in tu.cursor.get_children():
        sp = loc.span(top)
        if sp is None:
            continue
        k = top.kind.name
        if k == "MACRO_DEFINITION":
            model.macro_defs[top.spelling] = sp
            continue
        if k == "MACRO_INSTANTIATION":
            model.macro_uses.append((sp[0], sp[1], top.spelling))
            continue
        if k == "INCLUSION_DIRECTIVE":
            continue
        model.roots.append(convert(top, None, sp))
    model.macro_uses.sort()
    model._macro_starts = [m[0] for m in model.macro_uses]
    model.decls = decl_nodes

    for node, cursor in pending_refs:
        ref = cursor.referenced
        if ref is None:
            continue
        node.ref_kind = ref.kind.name
        node.ref_name = ref.spelling
        node.ref = decl_nodes.get(ref.hash)

    _collect(model)
    return model


def _function_kind(node: Node) -> str:
    attrs = {c.kind for c in node.children}
    if "CUDAGLOBAL_ATTR" in attrs:
        return "global"
    dev, host = "CUDADEVICE_ATTR" in attrs, "CUDAHOST_ATTR" in attrs
    if dev and host:
        return "host_device"
    return "device" if dev else "host"


def _param(node: Node) -> Param:
    t = node._cursor.type
    canon = t.get_canonical()
    is_ptr = canon.kind.name in ("POINTER", "INCOMPLETEARRAY", "CONSTANTARRAY")
    pointee = None
    const_pointee = False
    if is_ptr:
        pt = canon.get_pointee() if canon.kind.name == "POINTER" else canon.element_type
        pointee = pt.spelling
        const_pointee = pt.is_const_qualified()
    return Param(node.spelling, t.spelling, is_ptr, pointee, const_pointee, node)


def _array_dims(t) -> tuple[list, object]:
    dims = []
    while t.kind.name in ("CONSTANTARRAY", "INCOMPLETEARRAY", "DEPENDENTSIZEDARRAY", "VARIABLEARRAY"):
        dims.append(t.element_count if t.kind.name == "CONSTANTARRAY" else None)
        t = t.element_type
    return dims, t


def _collect(model: FileModel) -> None:
    funcs: dict[int, Function] = {}
    for node in model.all_nodes():
        k = node.kind
        if k in _FUNC_KINDS:
            body = next((c for c in node.children if c.kind == "COMPOUND_STMT"), None)
            params = [_param(c) for c in node.children if c.kind == "PARM_DECL"]
            lb = []
            fn = Function(node.spelling, node, _function_kind(node), params, body,
                          k == "FUNCTION_TEMPLATE", lb)
            model.functions.append(fn)
            funcs[id(node)] = fn
        elif k == "VAR_DECL" and any(c.kind == "CUDASHARED_ATTR" for c in node.children):
            t = node._cursor.type
            dims, elem = _array_dims(t.get_canonical())
            extern = node._cursor.storage_class.name == "EXTERN"
            size = elem.get_size()
            fnode = node.enclosing(*_FUNC_KINDS)
            model.shared.append(SharedArray(node.spelling, dims, elem.spelling, size if size > 0 else None,
                                            extern, node, None, elem.is_volatile_qualified()))
            model.shared[-1]._fnode = fnode
    for s in model.shared:
        s.function = funcs.get(id(s._fnode)) if s._fnode is not None else None
    for node in model.all_nodes():
        if node.kind == "CALL_EXPR" and len(node.children) >= 2:
            cfg = node.children[1]
            if cfg.kind == "CALL_EXPR" and cfg.spelling in ("cudaConfigureCall", "__cudaPushCallConfiguration"):
                cargs = cfg.args()
                get = lambda i: cargs[i] if i < len(cargs) else None  # noqa: E731
                model.launches.append(LaunchSite(node.spelling, node, get(0), get(1), get(2), get(3),
                                                 node.children[2:], model.function_of(node)))


def is_barrier(node: Node) -> bool:
    return node.kind == "CALL_EXPR" and node.spelling in BARRIERS
