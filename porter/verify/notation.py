"""The compact notation of verify specs, parsed with the LALR grammar in spec.lark:

    signature  "x: f32[n] in, y: f32[n] inout, a: f32 = 2.5, n: i32"
    launch     "ceil(n / 256)"  or  "(ceil(n / 16), ceil(m / 16))"
    expression "max(1e-5, 3e-7 * K)"
    record     "x: f32, y: f32, z: f32, type: i32"  (a struct: a NumPy structured dtype; fields laid out as C
               does, or at explicit offsets `v: f32 @ 1` with `; size = 5` for packed / aligned structs)

Parsed straight into small frozen dataclasses; errors carry the column and a caret line.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
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
    dtype: str                        # one of DTYPES, or the name of a struct (record)
    shape: tuple[Expr, ...] | None    # None for a scalar
    direction: str | None             # arrays only: in / out / inout
    default: Expr | None              # scalars only
    record: np.dtype | None = field(default=None, compare=False)   # a struct: its structured dtype

    @property
    def is_array(self) -> bool:
        return self.shape is not None

    @property
    def is_record(self) -> bool:
        return self.record is not None

    @property
    def np_dtype(self) -> np.dtype:
        return self.record if self.record is not None else np.dtype(DTYPES[self.dtype])


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
    return Lark(grammar, parser="lalr", start=["signature", "launch", "expr", "record"], propagate_positions=True)


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
             "AT": "'@'", "SEMICOLON": "';'",
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


_DTYPE_LIST = "f32 f64 f16 i32 u32 i64 u64 i16 u16 i8 u8 bool"


def parse_signature(text: str, structs: dict[str, "Record"] | None = None) -> Signature:
    """`structs`: the struct types the signature may name (parse_records)."""
    if not text.strip():                # a kernel without parameters (its device asserts are what it does)
        return Signature(())
    tree = _parse(text, "signature", "signature")
    structs = structs or {}
    params: list[Param] = []
    for node in tree.children:
        name_tok, dtype_tok, *rest = node.children
        if str(dtype_tok) not in DTYPES and str(dtype_tok) not in structs:
            raise SpecError(f"signature: unknown type '{dtype_tok}' (expected a dtype ({_DTYPE_LIST}) or a struct "
                            f"of the case's structs={{...}}: {', '.join(sorted(structs)) or 'none'})",
                            text, dtype_tok.column)
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
        record = structs[str(dtype_tok)].dtype if str(dtype_tok) in structs else None
        if record is not None and default is not None:
            raise SpecError(f"signature: struct '{name}' cannot have a default value (its fields are random; "
                            "init={...} sets them)", text, name_tok.column)
        params.append(Param(name, str(dtype_tok), shape, direction, default, record))
    return Signature(tuple(params))


# ---------------------------------------------------------------------------------------------
# Structs: NumPy structured dtypes with C's layout

@dataclass(frozen=True)
class Record:
    name: str
    dtype: np.dtype                   # names, formats, offsets, itemsize
    align: int                        # C's alignment (of a member of this type in another struct)


def _scalar_align(dt: np.dtype) -> int:
    return dt.itemsize


def parse_record(name: str, text: str, known: dict[str, Record] | None = None) -> Record:
    """A struct's fields, "x: f32, y: f32, z: f32, type: i32": each at the next offset aligned to its type (C's
    rule) unless `@ offset` gives it; the size rounds up to the largest alignment unless `; size = N` gives it."""
    known = known or {}
    tree = _parse(text, "record", f"struct {name}")
    names, formats, offsets, off, align, size, spans = [], [], [], 0, 1, None, []
    for node in tree.children:
        if getattr(node, "type", None) == "NUMBER":
            size = _int_token(node, text, f"struct {name}: size")
            continue
        fname_tok, type_tok, *rest = node.children
        fname, tname = str(fname_tok), str(type_tok)
        if tname in DTYPES:
            base, falign = np.dtype(DTYPES[tname]), np.dtype(DTYPES[tname]).itemsize
        elif tname in known:
            base, falign = known[tname].dtype, known[tname].align
        else:
            raise SpecError(f"struct {name}: unknown type '{tname}' (a dtype ({_DTYPE_LIST}) or a struct defined "
                            f"before it: {', '.join(sorted(known)) or 'none'})", text, type_tok.column)
        dims, at = (), None
        for part in rest:
            if part.data == "dims":
                dims = tuple(_int_token(k, text, f"struct {name}: '{fname}' dimension") for k in part.children)
            else:
                at = _int_token(part.children[0], text, f"struct {name}: '{fname}' offset")
        if fname in names:
            raise SpecError(f"struct {name}: field '{fname}' appears twice", text, fname_tok.column)
        off = at if at is not None else (off + falign - 1) // falign * falign
        nbytes = base.itemsize * math.prod(dims)
        for other, o, nb in spans:
            if off < o + nb and o < off + nbytes:
                raise SpecError(f"struct {name}: field '{fname}' (bytes {off}..{off + nbytes - 1}) overlaps "
                                f"'{other}' (bytes {o}..{o + nb - 1})", text, fname_tok.column)
        spans.append((fname, off, nbytes))
        names.append(fname)
        formats.append((base, dims) if dims else base)
        offsets.append(off)
        off += nbytes
        align = max(align, falign)
    off = max(o + nb for _f, o, nb in spans)
    natural = (off + align - 1) // align * align
    if size is not None and size < off:
        raise SpecError(f"struct {name}: size {size} is less than its fields' end ({off} bytes)")
    dt = np.dtype({"names": names, "formats": formats, "offsets": offsets,
                   "itemsize": size if size is not None else natural})
    return Record(name, dt, align)


def _int_token(tok, text: str, what: str) -> int:
    s = str(tok)
    if not re.fullmatch(r"0[xX][0-9a-fA-F]+|\d+", s):
        raise SpecError(f"{what}: '{s}' is not a non-negative integer", text, tok.column)
    return int(s, 16) if s.lower().startswith("0x") else int(s)


def parse_records(structs: dict[str, str]) -> dict[str, Record]:
    """Case(structs={"Atom": "x: f32, ...", ...}): in order, each may use the ones before it."""
    out: dict[str, Record] = {}
    for name, text in (structs or {}).items():
        if name in DTYPES or not re.fullmatch(r"[A-Za-z_]\w*", name):
            raise SpecError(f"struct name '{name}' must be an identifier other than a dtype")
        out[name] = parse_record(name, text, out)
    return out


def leaves(dt: np.dtype, prefix: str = ""):
    """(path, dtype, offset) of every scalar field of a structured dtype, nested structs and arrays walked into;
    an array field is one leaf of its element dtype (its elements compared together)."""
    for fname in dt.names:
        fdt, off = dt.fields[fname][:2]
        base = fdt.base
        if base.names:
            for path, leaf, o in leaves(base, f"{prefix}{fname}."):
                yield path, leaf, off + o
        else:
            yield f"{prefix}{fname}", base, off


def dtype_code(dt: np.dtype) -> str:
    """The notation's dtype name of a NumPy scalar dtype (f32, i32, ...)."""
    return next(k for k, v in DTYPES.items() if np.dtype(v) == dt)
