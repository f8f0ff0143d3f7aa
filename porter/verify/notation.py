"""The compact notation of verify specs, parsed with the LALR grammar in spec.lark:

    signature  "x: f32[n] in, y: f32[n] inout, a: f32 = 2.5, n: i32"
    launch     "ceil(n / 256)"  or  "(ceil(n / 16), ceil(m / 16))"
    expression "max(1e-5, 3e-7 * K)"

Parsed straight into small frozen dataclasses; errors carry the column and a caret line.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable

import numpy as np

DTYPES = {
    "f32": np.float32, "f64": np.float64, "i32": np.int32,
    "u32": np.uint32, "i64": np.int64, "u64": np.uint64,
    "f16": np.float16, "u8": np.uint8, "u16": np.uint16,      # half and fp8 kernels (halfprec)
    "i8": np.int8, "i16": np.int16,                           # char / short buffers (ldpc's counts)
    "bool": np.bool_,                                         # bool scalars (the translations pass a uint)
}


class SpecError(ValueError):
    """A spec that cannot be used; the message points at the offending text when there is one."""

    def __init__(self, message: str, text: str | None = None, column: int | None = None):
        if text is not None and column is not None:
            message = f"{message} at column {column}\n  {text}\n  {' ' * (column - 1)}^"
        super().__init__(message)
        self.column = column


# ---------------------------------------------------------------------------------------------
# Expressions over size names

FUNCTIONS: dict[str, Callable[..., Any]] = {
    "ceil": math.ceil,
    "floor": math.floor,
    "trunc": math.trunc,                              # C's float -> integer conversion
    "min": min,
    "max": max,
    "abs": abs,
    "cdiv": lambda a, b: -(-a // b),                 # ceil division on integers
    "round_up": lambda a, b: -(-a // b) * b,         # a rounded up to a multiple of b
    "sqrt": math.sqrt,
    "log2": math.log2,
}


@dataclass(frozen=True)
class Expr:
    def eval(self, env: dict[str, Any]) -> Any:
        raise NotImplementedError

    def names(self) -> set[str]:
        return set()


@dataclass(frozen=True)
class Num(Expr):
    value: int | float

    def eval(self, env):
        return self.value

    def __str__(self):
        return repr(self.value)


@dataclass(frozen=True)
class Var(Expr):
    name: str
    column: int = 0

    def eval(self, env):
        try:
            return env[self.name]
        except KeyError:
            raise SpecError(f"unknown name '{self.name}' (known: {', '.join(sorted(env)) or 'none'})") from None

    def names(self):
        return {self.name}

    def __str__(self):
        return self.name


_BINOPS: dict[str, Callable[[Any, Any], Any]] = {
    "+": lambda a, b: a + b, "-": lambda a, b: a - b, "*": lambda a, b: a * b,
    "/": lambda a, b: a / b, "//": lambda a, b: a // b, "%": lambda a, b: a % b,
    "**": lambda a, b: a ** b,
}


@dataclass(frozen=True)
class BinOp(Expr):
    op: str
    left: Expr
    right: Expr

    def eval(self, env):
        try:
            return _BINOPS[self.op](self.left.eval(env), self.right.eval(env))
        except ZeroDivisionError:
            raise SpecError(f"division by zero in '{self}'") from None

    def names(self):
        return self.left.names() | self.right.names()

    def __str__(self):
        return f"({self.left} {self.op} {self.right})"


@dataclass(frozen=True)
class Neg(Expr):
    operand: Expr

    def eval(self, env):
        return -self.operand.eval(env)

    def names(self):
        return self.operand.names()

    def __str__(self):
        return f"-{self.operand}"


@dataclass(frozen=True)
class Call(Expr):
    fn: str
    args: tuple[Expr, ...]

    def eval(self, env):
        return FUNCTIONS[self.fn](*(a.eval(env) for a in self.args))

    def names(self):
        return set().union(*(a.names() for a in self.args)) if self.args else set()

    def __str__(self):
        return f"{self.fn}({', '.join(map(str, self.args))})"


def eval_int(expr: Expr, env: dict[str, Any], what: str) -> int:
    value = expr.eval(env)
    if isinstance(value, float):
        if not value.is_integer():
            raise SpecError(f"{what} '{expr}' is {value}, not an integer (use ceil(), floor() or //)")
        value = int(value)
    return int(value)


# ---------------------------------------------------------------------------------------------
# Signatures

@dataclass(frozen=True)
class Param:
    name: str
    dtype: str                        # one of DTYPES
    shape: tuple[Expr, ...] | None    # None for a scalar
    direction: str | None             # arrays only: in / out / inout
    default: Expr | None              # scalars only

    @property
    def is_array(self) -> bool:
        return self.shape is not None

    @property
    def np_dtype(self) -> np.dtype:
        return np.dtype(DTYPES[self.dtype])


@dataclass(frozen=True)
class Signature:
    params: tuple[Param, ...]

    def __iter__(self):
        return iter(self.params)

    def __getitem__(self, name: str) -> Param:
        for p in self.params:
            if p.name == name:
                return p
        raise KeyError(name)

    @property
    def outputs(self) -> list[Param]:
        return [p for p in self.params if p.is_array and p.direction in ("out", "inout")]


@lru_cache(maxsize=1)
def _parser():
    from lark import Lark  # lazy: only specs need lark
    grammar = (Path(__file__).with_name("spec.lark")).read_text()
    return Lark(grammar, parser="lalr", start=["signature", "launch", "expr"], propagate_positions=True)


def _to_ast(tree, text: str = "") -> Any:
    from lark import Token, Tree
    if isinstance(tree, Token):
        return tree
    kind = tree.data
    kids = tree.children
    if kind == "number":
        text = str(kids[0])
        value = int(text, 16) if text.lower().startswith("0x") else (float(text) if any(c in text for c in ".eE") else int(text))
        return Num(value)
    if kind == "var":
        return Var(str(kids[0]), kids[0].column)
    if kind == "call":
        name = kids[0]
        if str(name) not in FUNCTIONS:
            raise SpecError(f"unknown function '{name}' (known: {', '.join(sorted(FUNCTIONS))})",
                            text or None, name.column)
        args = tuple(_to_ast(k, text) for k in kids[1:] if k is not None)
        return Call(str(name), args)
    ops = {"add": "+", "sub": "-", "mul": "*", "truediv": "/", "floordiv": "//", "mod": "%", "pow": "**"}
    if kind in ops:
        return BinOp(ops[kind], _to_ast(kids[0], text), _to_ast(kids[1], text))
    if kind == "neg":
        return Neg(_to_ast(kids[0], text))
    if isinstance(tree, Tree) and len(kids) == 1:   # unary plus, parentheses
        return _to_ast(kids[0], text)
    raise SpecError(f"internal: unexpected node {kind}")


def _parse(text: str, start: str, what: str):
    from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, UnexpectedToken
    try:
        return _parser().parse(text, start=start)
    except UnexpectedEOF as e:
        raise SpecError(f"{what}: unexpected end of text", text, len(text) + 1) from None
    except UnexpectedToken as e:
        if e.token.type == "$END":
            raise SpecError(f"{what}: unexpected end of text", text, len(text) + 1) from None
        expected = ", ".join(sorted(_pretty(t) for t in e.expected))
        raise SpecError(f"{what}: unexpected '{e.token}' (expected {expected})", text, e.column) from None
    except UnexpectedCharacters as e:
        raise SpecError(f"{what}: unexpected character '{text[e.pos_in_stream]}'", text, e.column) from None
    except UnexpectedInput as e:  # pragma: no cover - other lark errors
        raise SpecError(f"{what}: {e}", text, getattr(e, "column", None)) from None


def _pretty(terminal: str) -> str:
    names = {"COMMA": "','", "COLON": "':'", "EQUAL": "'='", "LSQB": "'['", "RSQB": "']'", "LPAR": "'('",
             "RPAR": "')'", "NAME": "a name", "NUMBER": "a number",
             "DTYPE": "a dtype (f32 f64 f16 i32 u32 i64 u64 i16 u16 i8 u8 bool)",
             "DIRECTION": "in/out/inout", "PLUS": "'+'", "MINUS": "'-'", "STAR": "'*'", "SLASH": "'/'"}
    return names.get(terminal, terminal)


def parse_expr(text: str) -> Expr:
    return _to_ast(_parse(text, "expr", "expression"), text)


def parse_launch(text: str | int) -> tuple[Expr, ...]:
    """A grid or block shape: one expression or a parenthesised tuple of 2 or 3."""
    text = str(text)
    tree = _parse(text, "launch", "launch shape")
    dims = tuple(_to_ast(k, text) for k in tree.children)
    if len(dims) > 3:
        raise SpecError(f"launch shape: {len(dims)} dimensions, at most 3", text, 1)
    return dims


def parse_signature(text: str) -> Signature:
    tree = _parse(text, "signature", "signature")
    params: list[Param] = []
    for node in tree.children:
        name_tok, dtype_tok, *rest = node.children
        shape = direction = default = None
        for part in rest:
            if getattr(part, "type", None) == "DIRECTION":
                direction = str(part)
            elif part.data == "shape":
                shape = tuple(_to_ast(k, text) for k in part.children)
            elif part.data == "default":
                default = _to_ast(part.children[0], text)
        name = str(name_tok)
        if any(p.name == name for p in params):
            raise SpecError(f"signature: parameter '{name}' appears twice", text, name_tok.column)
        if shape is None and direction is not None:
            raise SpecError(f"signature: scalar '{name}' cannot have a direction ({direction})", text, name_tok.column)
        if shape is not None and default is not None:
            raise SpecError(f"signature: array '{name}' cannot have a default value", text, name_tok.column)
        if shape is not None and direction is None:
            direction = "inout"      # unknown intent: check it like an output
        params.append(Param(name, str(dtype_tok), shape, direction, default))
    return Signature(tuple(params))
