"""libclang C entry points the Python bindings of libclang 18 do not wrap (operator kinds, constant evaluation)."""
from __future__ import annotations

import ctypes

_ready = False
_lib = None

UNARY_OPS = {1: "post++", 2: "post--", 3: "++", 4: "--", 5: "&", 6: "*", 7: "+", 8: "-", 9: "~", 10: "!",
             11: "__real", 12: "__imag", 13: "__extension__", 14: "co_await"}


def _setup():
    global _ready, _lib
    import clang.cindex as ci
    lib = ci.conf.lib
    Cursor = ci.Cursor
    lib.clang_getCursorBinaryOperatorKind.argtypes = [Cursor]
    lib.clang_getCursorBinaryOperatorKind.restype = ctypes.c_int
    lib.clang_getBinaryOperatorKindSpelling.argtypes = [ctypes.c_int]
    lib.clang_getBinaryOperatorKindSpelling.restype = ci._CXString
    lib.clang_getCursorUnaryOperatorKind.argtypes = [Cursor]
    lib.clang_getCursorUnaryOperatorKind.restype = ctypes.c_int
    lib.clang_Cursor_Evaluate.argtypes = [Cursor]
    lib.clang_Cursor_Evaluate.restype = ctypes.c_void_p
    lib.clang_EvalResult_getKind.argtypes = [ctypes.c_void_p]
    lib.clang_EvalResult_getKind.restype = ctypes.c_int
    lib.clang_EvalResult_getAsLongLong.argtypes = [ctypes.c_void_p]
    lib.clang_EvalResult_getAsLongLong.restype = ctypes.c_longlong
    lib.clang_EvalResult_isUnsignedInt.argtypes = [ctypes.c_void_p]
    lib.clang_EvalResult_isUnsignedInt.restype = ctypes.c_uint
    lib.clang_EvalResult_getAsUnsigned.argtypes = [ctypes.c_void_p]
    lib.clang_EvalResult_getAsUnsigned.restype = ctypes.c_ulonglong
    lib.clang_EvalResult_getAsDouble.argtypes = [ctypes.c_void_p]
    lib.clang_EvalResult_getAsDouble.restype = ctypes.c_double
    lib.clang_EvalResult_dispose.argtypes = [ctypes.c_void_p]
    lib.clang_EvalResult_dispose.restype = None
    _lib = lib
    _ready = True


_BIN_SPELL: dict[int, str] = {}


def binary_op(cursor) -> str:
    if not _ready:
        _setup()
    k = _lib.clang_getCursorBinaryOperatorKind(cursor)
    s = _BIN_SPELL.get(k)
    if s is None:
        import clang.cindex as ci
        s = ci._CXString.from_result(_lib.clang_getBinaryOperatorKindSpelling(k))
        _BIN_SPELL[k] = s
    return s


def unary_op(cursor) -> str:
    if not _ready:
        _setup()
    return UNARY_OPS.get(_lib.clang_getCursorUnaryOperatorKind(cursor), "")


def evaluate(cursor):
    """Constant value of an expression (int or float), or None when clang cannot fold it."""
    if not _ready:
        _setup()
    res = _lib.clang_Cursor_Evaluate(cursor)
    if not res:
        return None
    try:
        kind = _lib.clang_EvalResult_getKind(res)
        if kind == 1:   # CXEval_Int
            if _lib.clang_EvalResult_isUnsignedInt(res):
                return int(_lib.clang_EvalResult_getAsUnsigned(res))
            return int(_lib.clang_EvalResult_getAsLongLong(res))
        if kind == 2:   # CXEval_Float
            return float(_lib.clang_EvalResult_getAsDouble(res))
        return None
    finally:
        _lib.clang_EvalResult_dispose(res)


# --- fast paths for what the model asks of every node (same results as the bindings, fewer Python layers) ---
# The bindings wrap each call in errcheck converters (Cursor.from_result compares with a fresh null cursor and
# scans its arguments for the TU; _CXString goes through two more wrappers and a __del__). These call the same
# C functions through plain ctypes function objects of the same library.

class _CXStringRaw(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("private_flags", ctypes.c_uint)]


_fast = None
_KIND_NAMES: dict[int, str] = {}


def _setup_fast():
    global _fast
    import clang.cindex as ci
    raw = ctypes.CDLL(ci.conf.lib._name)
    Cursor = ci.Cursor

    def fn(name, argtypes, restype):
        f = getattr(raw, name)
        f.argtypes = argtypes
        f.restype = restype
        return f

    _fast = {
        "spelling": fn("clang_getCursorSpelling", [Cursor], _CXStringRaw),
        "cstring": fn("clang_getCString", [_CXStringRaw], ctypes.c_char_p),
        "dispose": fn("clang_disposeString", [_CXStringRaw], None),
        "referenced": fn("clang_getCursorReferenced", [Cursor], Cursor),
        "is_null": fn("clang_Cursor_isNull", [Cursor], ctypes.c_int),
        "hash": fn("clang_hashCursor", [Cursor], ctypes.c_uint),
        "cursor_type": fn("clang_getCursorType", [Cursor], ci.Type),
        "type_spelling": fn("clang_getTypeSpelling", [ci.Type], _CXStringRaw),
        "kind_from_id": ci.CursorKind.from_id,
    }
    return _fast


def _string(cx) -> str | None:
    f = _fast
    try:
        v = f["cstring"](cx)
    finally:
        f["dispose"](cx)
    return v.decode("utf8") if v is not None else None


def cursor_spelling(cursor) -> str | None:
    """cursor.spelling (clang_getCursorSpelling)."""
    f = _fast or _setup_fast()
    return _string(f["spelling"](cursor))


def cursor_referenced(cursor):
    """(hash, kind name, spelling) of the entity `cursor` refers to, None when it refers to nothing: the same as
    `r = cursor.referenced; (r.hash, r.kind.name, r.spelling) if r is not None else None`."""
    f = _fast or _setup_fast()
    r = f["referenced"](cursor)
    if f["is_null"](r):
        return None
    k = r._kind_id
    name = _KIND_NAMES.get(k)
    if name is None:
        name = _KIND_NAMES[k] = f["kind_from_id"](k).name
    return f["hash"](r), name, _string(f["spelling"](r))


def type_spelling(cursor) -> str | None:
    """cursor.type.spelling."""
    f = _fast or _setup_fast()
    return _string(f["type_spelling"](f["cursor_type"](cursor)))
