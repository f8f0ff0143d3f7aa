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
