"""libclang translation unit -> FileModel. The only place (with parse.py) that walks libclang cursors."""
from __future__ import annotations

import ctypes

from porter.frontend import parse as _parse
from porter.frontend.model import (MAX_NESTING, FileModel, Function, LaunchSite, Node, Param, SharedArray,
                                   _TRANSPARENT)

_FUNC_KINDS = {"FUNCTION_DECL", "FUNCTION_TEMPLATE", "CXX_METHOD", "CONSTRUCTOR", "DESTRUCTOR"}
_REF_KINDS = {"DECL_REF_EXPR", "MEMBER_REF_EXPR", "CALL_EXPR", "TYPE_REF", "TEMPLATE_REF"}
_DECL_KINDS = {"VAR_DECL", "PARM_DECL", "FUNCTION_DECL", "FUNCTION_TEMPLATE", "FIELD_DECL",
               "ENUM_CONSTANT_DECL", "CXX_METHOD", "TEMPLATE_NON_TYPE_PARAMETER"}


class _Locator:
    """Expansion-location offsets with a cheap same-file test (pointer compare on CXFile)."""

    def __init__(self, tu, path, size=None):
        import clang.cindex as ci
        self.ci = ci
        self.lib = ci.conf.lib
        f = self.lib.clang_getFile(tu, path.encode())
        self.main = ctypes.cast(f, ctypes.c_void_p).value if f else None
        fast = _locator_functions()
        self._extent, self._start, self._end, self._loc, for_offset = fast
        self._f = ctypes.c_void_p()
        self._u = ctypes.c_uint()
        self._off = ctypes.c_uint()
        self._args = (ctypes.byref(self._f), ctypes.byref(self._u), ctypes.byref(self._u), ctypes.byref(self._off))
        # A location written in the main file itself (not in a macro expansion) is encoded as the encoding of
        # the file's offset 0 plus the offset, below 2**31 (macro locations have that bit set); the main file
        # spans offsets 0..size. Such locations need no libclang call; every other one takes the full path.
        self._base = None
        self._size = size
        if f and size is not None:
            try:
                loc0 = for_offset(tu, f, 0)
                if loc0.int_data and loc0.int_data < _MACRO_BIT and self._slow_offset(loc0, True) == 0:
                    self._base = loc0.int_data
            except Exception:
                self._base = None

    def _slow_offset(self, loc, check_file):
        f, u1, u2, off = self._args
        self._loc(loc, f, u1, u2, off)
        if check_file:
            fv = self._f.value
            if fv is None or fv != self.main:
                return None
        return self._off.value

    def span(self, cursor):
        ext = self._extent(cursor)
        base = self._base
        if base is not None:
            b = ext.begin_int_data - base
            if 0 <= b <= self._size and ext.begin_int_data < _MACRO_BIT:
                e = ext.end_int_data - base
                if 0 <= e <= self._size and ext.end_int_data < _MACRO_BIT:
                    return b, e
                return b, self._slow_offset(self._end(ext), False)
        f, u1, u2, off = self._args
        self._loc(self._start(ext), f, u1, u2, off)
        fv = self._f.value
        if fv is None or fv != self.main:
            return None
        start = self._off.value
        self._loc(self._end(ext), f, u1, u2, off)
        return start, self._off.value


_MACRO_BIT = 1 << 31
_LOCATOR_FUNCS = None


def _locator_functions():
    """clang_getCursorExtent, clang_getRangeStart/End and clang_getInstantiationLocation as plain ctypes
    functions (the file comes back as a c_void_p: no cast per call)."""
    global _LOCATOR_FUNCS
    if _LOCATOR_FUNCS is None:
        import clang.cindex as ci
        raw = ctypes.CDLL(ci.conf.lib._name)

        def fn(name, argtypes, restype):
            f = getattr(raw, name)
            f.argtypes = argtypes
            f.restype = restype
            return f
        _LOCATOR_FUNCS = (
            fn("clang_getCursorExtent", [ci.Cursor], ci.SourceRange),
            fn("clang_getRangeStart", [ci.SourceRange], ci.SourceLocation),
            fn("clang_getRangeEnd", [ci.SourceRange], ci.SourceLocation),
            fn("clang_getInstantiationLocation", [ci.SourceLocation, ctypes.POINTER(ctypes.c_void_p),
                                                  ctypes.POINTER(ctypes.c_uint), ctypes.POINTER(ctypes.c_uint),
                                                  ctypes.POINTER(ctypes.c_uint)], None),
            fn("clang_getLocationForOffset", [ci.TranslationUnit, ci.c_object_p, ctypes.c_uint], ci.SourceLocation))
    return _LOCATOR_FUNCS


_CHILD_VISIT_CONTINUE, _CHILD_VISIT_RECURSE = 1, 2
_KIND_NAMES: dict[int, str] = {}      # cursor kind id -> CursorKind name (shared by all files)


def build_model(source, options=None) -> FileModel:
    """Parse and model a SourceFile. Parse errors are kept in model.errors; never raises for bad source."""
    import clang.cindex as ci
    tu, errors = _parse.parse(source.path, source.data, options)
    model = FileModel(source, tu, errors, options)
    loc = _Locator(tu, tu.spelling, len(source.data))
    model._locator = loc
    lib = ci.conf.lib
    kinds = _KIND_NAMES
    decls: dict[int, Node] = {}
    by_hash: dict[int, Node] = {}
    get_node = by_hash.get
    hash_cursor = lib.clang_hashCursor
    is_main = lib.clang_Location_isFromMainFile
    get_loc = lib.clang_getCursorLocation

    def kind_name(k):
        n = kinds[k] = ci.CursorKind.from_id(k).name
        return n

    flat = model.flat
    flat_append = flat.append
    by_kind = model.by_kind
    transparent = _TRANSPARENT
    decl_kinds = _DECL_KINDS | _FUNC_KINDS

    # One C-level recursive walk per top-level declaration of the file: a Python callback per node, no
    # per-parent child lists (the bindings' get_children() costs a visitor per node).
    # Nesting depth per node (by cursor hash): a subtree deeper than MAX_NESTING is not modelled (every walk
    # downstream, rules and emitters, may then recurse without hitting Python's recursion limit).
    depth: dict[int, int] = {}
    get_depth = depth.get
    too_deep: list = []

    def visit(cursor, parent, _data):
        ph = hash_cursor(parent)
        pnode = get_node(ph)
        if pnode is None:
            return 1  # CXChildVisit_Continue
        d = get_depth(ph, 0) + 1
        k = cursor._kind_id          # the struct field clang_getCursorKind returns
        kind = kinds.get(k) or kind_name(k)
        if kind in transparent:
            # implicit wrapper: keep it out of the tree, hang its children on the real parent
            h = hash_cursor(cursor)
            by_hash[h] = pnode
            depth[h] = d - 1
            return 2  # CXChildVisit_Recurse
        if d > MAX_NESTING:
            too_deep.append((pnode, loc.span(cursor)))
            return 1
        cursor._tu = tu  # ctypes already copied the struct; keep the TU alive for lazy lookups
        node = Node(kind, cursor, model, pnode)
        pnode.children.append(node)
        flat_append(node)
        lst = by_kind.get(kind)
        if lst is None:
            by_kind[kind] = [node]
        else:
            lst.append(node)
        h = hash_cursor(cursor)
        by_hash[h] = node
        depth[h] = d
        if kind in decl_kinds:
            decls[h] = node
        return 2

    callback = ci.callbacks["cursor_visit"](visit)
    for top in tu.cursor.get_children():
        if not is_main(get_loc(top)):
            continue
        k = top.kind.name
        if k in ("MACRO_DEFINITION", "MACRO_INSTANTIATION"):
            sp = loc.span(top)
            if sp is None:
                continue
            if k == "MACRO_DEFINITION":
                model.macro_defs[top.spelling] = sp
            else:
                model.macro_uses.append((sp[0], sp[1], top.spelling))
            continue
        if k == "INCLUSION_DIRECTIVE":
            continue
        root = Node(k, top, model, None)
        flat.append(root)
        by_kind.setdefault(k, []).append(root)
        h = hash_cursor(top)
        by_hash[h] = root
        if k in _DECL_KINDS or k in _FUNC_KINDS:
            decls[h] = root
        if k in _FUNC_KINDS and not _worth_walking(top, source, loc, options):
            model.shallow.append(root)
        else:
            lib.clang_visitChildren(top, callback, None)
            depth.clear()
        model.roots.append(root)
    model.macro_uses.sort()
    model._macro_starts = [m[0] for m in model.macro_uses]
    model.decls = decls
    if too_deep:
        _drop_too_deep(model, too_deep)
    _collect(model)
    return model


def _drop_too_deep(model: FileModel, too_deep) -> None:
    """Unmodel each function body (or top-level initializer) whose nesting passed MAX_NESTING: analysing a
    truncated tree would be wrong, so the whole body goes and model.too_deep says where (rules report CP000,
    emitters refuse). The function node itself, with its parameters and attributes, stays."""
    dropped: set[int] = set()
    for pnode, span in too_deep:
        child = pnode
        while child.parent is not None and child.parent.kind not in _FUNC_KINDS:
            child = child.parent
        owner = child.parent if child.parent is not None else child
        if id(child) in dropped or (owner is child and not child.children):
            continue
        victims = [child] if owner is not child else list(child.children)
        for v in victims:
            stack = [v]
            while stack:
                n = stack.pop()
                dropped.add(id(n))
                stack.extend(n.children)
        owner.children = [c for c in owner.children if id(c) not in dropped]
        at = span[0] if span is not None else owner.start
        model.too_deep.append((owner, at))
    model.flat[:] = [n for n in model.flat if id(n) not in dropped]
    for kind, lst in model.by_kind.items():
        lst[:] = [n for n in lst if id(n) not in dropped]
    model.decls = {h: n for h, n in model.decls.items() if id(n) not in dropped}


_HOST_INTEREST = (b"<<<", b"dim3", b"cudaFuncSetAttribute", b"hipLaunch", b"cudaLaunch", b"Launch")


def _worth_walking(cursor, source, loc, options) -> bool:
    """Host functions without launches are kept as shallow nodes (name only): rules look at device code and
    launch sites, and the host bodies of big programs are most of their nodes."""
    if options is not None and getattr(options, "full_model", False):
        return True
    sp = loc.span(cursor)
    if sp is None:
        return False
    text = source.data[sp[0]:sp[1]]
    if b"__global__" in text or b"__device__" in text or b"__host__" in text:
        return True
    if any(m in text for m in _device_macros(source)):     # `#define ESS __host__ __device__` ... `ESS void f()`
        return True
    head = text[:text.find(b"{")] if b"{" in text else text
    if b"__attribute__" in head or b"__launch_bounds__" in head:
        return True
    return any(m in text for m in _HOST_INTEREST)


def _device_macros(source) -> tuple:
    """Names of the file's macros that expand to CUDA function qualifiers (cached on the source)."""
    found = getattr(source, "_cuport_device_macros", None)
    if found is None:
        import re
        found = tuple(m.group(1) for m in re.finditer(
            rb"^[ \t]*#[ \t]*define[ \t]+(\w+)[ \t]+[^\n]*\b__(?:device|global|host)__", source.data, re.M))
        try:
            source._cuport_device_macros = found
        except AttributeError:
            pass
    return found


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
    for node in model.of_kind(*_FUNC_KINDS, "VAR_DECL"):
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
    for node in model.of_kind("CALL_EXPR"):
        if len(node.children) >= 2:
            cfg = node.children[1]
            if cfg.kind == "CALL_EXPR" and cfg.spelling in ("cudaConfigureCall", "__cudaPushCallConfiguration"):
                cargs = cfg.args()
                get = lambda i: cargs[i] if i < len(cargs) else None  # noqa: E731
                model.launches.append(LaunchSite(node.spelling, node, get(0), get(1), get(2), get(3),
                                                 node.children[2:], model.function_of(node)))

