"""Verify specs: what to run, with which data, and what the answer must be.

A spec is a Python module `<example>/verify_spec.py` that defines `KERNELS = [Case(...), ...]`.
Signatures, shapes and launch shapes are written in a compact notation parsed by `spec.lark`:

    Case(
        source="saxpy.cu", kernel="saxpy",
        signature="n: i32, a: f32 = 2.5, x: f32[n] in, y: f32[n] inout",
        grid="ceil(n / 256)", block="256",
        reference=lambda a, x, y: {"y": a * x + y},
        sizes=[{"n": 1000}, {"n": 1 << 16}],
    )

Signature: `name: dtype[shape] direction` for arrays (dtype f32 f64 i32 u32 i64 u64; shape a list
of expressions of size names; direction in / out / inout, default inout), `name: dtype = expr` for
scalars (a scalar without a default takes the size of the same name). Parameters are listed in
CUDA order. Grid and block are one expression or a tuple of up to 3; numeric `defines` are names
too (`block="(TILE_SIZE, TILE_SIZE)"`). Inputs are random from `seed` unless `init` says otherwise
(uniform(lo, hi), full(v), arange(), special(), below("V") for indices in [0, V) of the sizes, chain() for the
links of a linked list);
`out` arrays start as NaN / max-int so unwritten elements fail. The reference gets the arguments
it names (copies) and returns {output: array}; tolerances may be expressions of the sizes.
`reference=None` compares the targets with each other instead (porter/verify/differential.py).
Structs: `structs={"Atom": "x: f32, y: f32, z: f32, type: i32"}` defines a type the signature may use like a dtype
(`atoms: Atom[n] in` a buffer of them, `p: Atom` one by value); fields are laid out as C does, or at explicit
offsets (`c: i8, v: f32 @ 1; size = 5` for a packed struct); they are NumPy structured dtypes. Each field of an
input is random by its dtype (init={"p": {"type": uniform(0, 3)}} sets fields), of an output poison; outputs are
compared field by field.
`alias={"d_out": "d_in"}` binds d_out to d_in's memory (an in-place run): both arguments are one ndarray, the
hosts bind one buffer to both, and the reference gets one array for both names.
`unordered=("dst",)` names outputs whose elements sit at positions claimed by atomics (stream compaction:
`dst[atomicAdd(&cnt, 1)] = v`), so their order depends on scheduling: they are compared as multisets, both arrays
flattened and sorted (a struct buffer by its fields, lexicographically, first field first) and then compared as
usual, with the usual tolerance. Everything else (the counter `cnt` included) is still compared position by position.
"""
from __future__ import annotations

import importlib.util
import inspect
import json
import math
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np

from porter.verify.notation import (DTYPES, Expr, Param, Signature, SpecError, dtype_code, eval_int,  # noqa: F401
                                    leaves, parse_expr, parse_launch, parse_records, parse_signature)

SPEC_FILENAME = "verify_spec.py"


# ---------------------------------------------------------------------------------------------
# Initial values

@dataclass(frozen=True)
class Init:
    kind: str
    args: tuple = ()

    def __call__(self, rng: np.random.Generator, shape: tuple[int, ...], dtype: np.dtype,
                 env: dict | None = None) -> np.ndarray:
        dtype = np.dtype(dtype)
        if dtype.names:                 # a struct: each field by its dtype, padding bytes zero
            return _fields(self, rng, shape, dtype, env=env)
        if self.kind == "fields":       # a struct field's default: ints in a small range, as indices often are
            return (uniform(0, 9) if dtype.kind in "iu" else uniform(0, 1) if dtype.kind == "b"
                    else uniform(-1.0, 1.0))(rng, shape, dtype)
        is_float = dtype.kind == "f"
        if self.kind == "below":        # indices: [0, bound), the bound an expression of the sizes
            hi = eval_int(parse_expr(str(self.args[0])), env or {}, "below()")
            if hi < 1:
                raise SpecError(f"below({self.args[0]}): empty range for the sizes ({hi})")
            if is_float:
                return rng.uniform(0, hi, size=shape).astype(dtype)
            return rng.integers(0, hi, size=shape).astype(dtype)
        if self.kind == "uniform":
            lo, hi = self.args
            if is_float:
                return rng.uniform(lo, hi, size=shape).astype(dtype)
            return rng.integers(int(lo), int(hi), size=shape, endpoint=True).astype(dtype)
        if self.kind == "full":
            return np.full(shape, self.args[0], dtype=dtype)
        if self.kind == "arange":
            return (np.arange(math.prod(shape)) % (self.args[0] if self.args else 2**24)).astype(dtype).reshape(shape)
        if self.kind == "poison":
            # Unwritten output elements must not pass by accident.
            value = np.nan if is_float else np.iinfo(dtype).max
            return np.full(shape, value, dtype=dtype)
        if self.kind == "chain":
            return _chain(rng, shape, dtype, *self.args)
        if self.kind == "special":
            a = rng.uniform(-1, 1, size=shape).astype(dtype)
            if is_float:
                info = np.finfo(dtype)
                values = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, info.tiny / 2, -info.tiny / 2,
                                   info.max, -info.max, 1.0, -1.0], dtype=dtype)
            else:
                info = np.iinfo(dtype)
                values = np.array([0, 1, info.max, info.min, info.max // 2], dtype=dtype)
            flat = a.reshape(-1)
            picks = rng.random(flat.size) < self.args[0]
            flat[picks] = values[np.arange(int(picks.sum())) % len(values)]
            return a
        raise SpecError(f"unknown initializer {self.kind}")

    def __str__(self):
        return f"{self.kind}({', '.join(map(str, self.args))})"


def _fields(init, rng, shape, dtype: np.dtype, per_field: dict | None = None, env: dict | None = None) -> np.ndarray:
    """A structured array: every field (nested structs and array fields included) from `init`, or from
    per_field[name] where given; the bytes between fields stay zero."""
    out = np.zeros(shape, dtype)
    for name in dtype.names:
        fdt = dtype.fields[name][0]
        f_init = (per_field or {}).get(name, init)
        sub = f_init if isinstance(f_init, dict) else None
        if sub is not None:
            f_init = Init("fields")
        if fdt.base.names:
            out[name] = _fields(f_init, rng, shape + fdt.shape, fdt.base, sub, env)
        else:
            out[name] = f_init(rng, shape + fdt.shape, fdt.base, env)
    return out


def _chain(rng, shape, dtype: np.dtype, shift: int | None = None) -> np.ndarray:
    """A random singly linked list through all the elements, head at element 0: each holds its successor's index,
    the tail -1; with `shift`, (successor << shift) | rank, the rank 1 and the tail's 0, as list ranking packs
    them (wyllie's `list[i] = ((long)next[i] << 32) | rank[i]`). Random indices would make cycles: such a
    kernel follows its links until the tail, forever on a cycle."""
    n = math.prod(shape)
    if dtype.kind not in "iu" or n < 1:
        raise SpecError(f"chain(): the links are signed integers, not {dtype}")
    order = np.concatenate(([0], 1 + rng.permutation(n - 1))).astype(np.int64)
    nxt = np.empty(n, np.int64)
    nxt[order[:-1]] = order[1:]
    nxt[order[-1]] = -1
    if shift is not None:
        shift = int(shift)
        if not 0 < shift < dtype.itemsize * 8 or n > 1 << shift:
            raise SpecError(f"chain({shift}): the rank bits below the shift cannot hold a rank of {n} "
                            f"in a {dtype}")
        nxt = (nxt << shift) | (nxt != -1)
    return nxt.astype(dtype).reshape(shape)


def chain(shift: int | None = None) -> Init:
    """A random single linked list through the buffer from element 0 (_chain): successor indices, the tail -1."""
    return Init("chain", (shift,) if shift is not None else ())


def uniform(lo: float = -1.0, hi: float = 1.0) -> Init:
    """Random values in [lo, hi) (integers: [lo, hi]), from the case's seed."""
    return Init("uniform", (lo, hi))


def below(bound: str | int) -> Init:
    """Random integers in [0, bound) (floats: uniform), `bound` an expression of the sizes: index inputs."""
    return Init("below", (str(bound),))


def full(value: float) -> Init:
    return Init("full", (value,))


def zeros() -> Init:
    return full(0)


def ones() -> Init:
    return full(1)


def arange(modulo: int | None = None) -> Init:
    return Init("arange", (modulo,) if modulo else ())


def poison() -> Init:
    return Init("poison")


def special(fraction: float = 0.05) -> Init:
    """Mostly uniform(-1, 1), with a fraction of 0, -0, +-inf, NaN, denormals and +-max."""
    return Init("special", (fraction,))


def _as_init(value: Any) -> Init:
    if isinstance(value, Init):
        return value
    if isinstance(value, dict):         # a struct's fields: {"type": uniform(0, 3)}, the others by their dtype
        return FieldInits(tuple((k, v if isinstance(v, dict) else _as_init(v)) for k, v in value.items()))
    if isinstance(value, (int, float)):
        return full(value)
    raise SpecError(f"initializer must be uniform()/full()/zeros()/... or a number, not {value!r}")


# ---------------------------------------------------------------------------------------------
# Tolerances

@dataclass(frozen=True)
class Tol:
    """rtol / atol, numbers or expressions of the sizes (accumulated error grows with K: "3e-7 * K")."""
    rtol: float | str
    atol: float | str

    def resolve(self, env: dict[str, Any]) -> "Tol":
        def value(v):
            return float(parse_expr(v).eval(env)) if isinstance(v, str) else float(v)
        return Tol(value(self.rtol), value(self.atol))


DEFAULT_TOL = {
    "f32": Tol(1e-5, 1e-6), "f64": Tol(1e-12, 1e-14),
    "i32": Tol(0, 0), "u32": Tol(0, 0), "i64": Tol(0, 0), "u64": Tol(0, 0),
    "f16": Tol(0, 0), "u8": Tol(0, 0), "u16": Tol(0, 0), "i8": Tol(0, 0), "i16": Tol(0, 0),
    "bool": Tol(0, 0),
}


# ---------------------------------------------------------------------------------------------
# Cases

@dataclass
class Case:
    """One kernel (with one set of defines / template arguments) and how to check it."""

    kernel: str
    source: str
    signature: str
    grid: str | int
    block: str | int
    reference: Callable[..., Any]
    sizes: list[dict[str, int]]
    init: dict[str, Any] = field(default_factory=dict)
    tol: Tol | dict[str, Tol] | None = None       # one Tol, or per dtype ("f32") or per parameter name
    defines: dict[str, Any] = field(default_factory=dict)
    template_args: tuple[str, ...] = ()
    expect: str | dict[str, str] | None = None    # "fail", or {"cuda": "fail", "vulkan/sg8": "fail"}
    name: str | None = None                       # display id; default kernel[defines]
    bytes: str | None = None                      # bytes moved, expression of the sizes (for GB/s)
    flops: str | None = None                      # flops, expression of the sizes (for GFLOP/s)
    bench_sizes: dict[str, int] | None = None     # problem size used by --bench (default: last size)
    bench_baseline: str | None = None             # library call --bench times beside the kernel on CUDA GPUs:
    #                                               "C = A @ B" (cuBLAS through CuPy's matmul)
    shared_mem: str | int = 0                     # dynamic shared memory bytes, expression
    seed: int = 1234
    translations: dict[str, str] = field(default_factory=dict)  # target -> hand-written file
    manifests: dict[str, str] = field(default_factory=dict)     # target -> manifest json (default: file + .json)
    targets: tuple[str, ...] | None = None        # restrict to these targets
    translate: dict[str, Any] = field(default_factory=dict)  # options for cuport's translator, e.g.
    #                                               {"portability_fixes": False} to verify the code as written
    defines_applied: bool = False                 # set when the translator already resolved `defines`
    skip: dict[str, str] = field(default_factory=dict)          # target -> reason
    alias: dict[str, str] = field(default_factory=dict)  # {"d_out": "d_in"}: d_out is bound to d_in's memory
    #                                               (one ndarray for both: hosts bind one buffer, an in-place run)
    structs: dict[str, str] = field(default_factory=dict)   # {"Atom": "x: f32, y: f32, z: f32, type: i32"}
    unordered: tuple[str, ...] = ()               # outputs compared as multisets (positions claimed by atomics)
    notes: str = ""

    # filled by load_spec
    spec_path: str = ""
    index: int = 0

    def __post_init__(self):
        label = self.name or self.kernel
        try:
            self.records = parse_records(self.structs)
            self.sig = parse_signature(self.signature, self.records)
            self.grid_dims = parse_launch(self.grid)
            self.block_dims = parse_launch(self.block)
            self.shared_expr = parse_expr(str(self.shared_mem))
            self.bytes_expr = parse_expr(self.bytes) if self.bytes else None
            self.flops_expr = parse_expr(self.flops) if self.flops else None
        except SpecError as e:
            raise SpecError(f"{label}: {e}") from None
        if not self.sizes:
            raise SpecError(f"{label}: at least one problem size is needed")
        tols = [self.tol] if isinstance(self.tol, Tol) else list((self.tol or {}).values())
        try:
            for t in tols:
                for v in (t.rtol, t.atol):
                    if isinstance(v, str):
                        parse_expr(v)
        except SpecError as e:
            raise SpecError(f"{label}: tol: {e}") from None
        if self.reference is not None and not callable(self.reference):
            raise SpecError(f"{label}: reference must be a function (or None: compare the targets with each other)")
        self.init = {k: _as_init(v) for k, v in self.init.items()}
        names = {p.name for p in self.sig}
        for key in self.init:
            if key not in names:
                raise SpecError(f"{label}: init for unknown parameter '{key}'")
        arrays = {p.name: p for p in self.sig if p.is_array}
        for a, b in self.alias.items():
            if a not in arrays or b not in arrays or a == b:
                raise SpecError(f"{label}: alias {a!r} -> {b!r} must name two different array parameters")
            if b in self.alias:
                raise SpecError(f"{label}: alias {a!r} -> {b!r}: {b!r} is itself an alias (name the array it "
                                f"aliases, {self.alias[b]!r})")
            if arrays[a].dtype != arrays[b].dtype:
                raise SpecError(f"{label}: alias {a!r} -> {b!r}: {arrays[a].dtype} and {arrays[b].dtype} differ")
            if a in self.init:
                raise SpecError(f"{label}: init for {a!r}, which is bound to {b!r}'s memory (alias)")
        if isinstance(self.unordered, str):
            self.unordered = (self.unordered,)
        self.unordered = tuple(self.unordered)
        outputs = {p.name for p in self.sig.outputs if p.is_array}
        for u in self.unordered:
            if u not in outputs:
                raise SpecError(f"{label}: unordered {u!r} must name an out / inout array parameter")
        if isinstance(self.expect, str) and self.expect != "fail" or isinstance(self.expect, dict) and any(
                v != "fail" for v in self.expect.values()):
            raise SpecError(f"{label}: expect must be 'fail' or a dict {{target or 'target/variant': 'fail'}}")
        known = set(self.sizes[0]) | set(self.numeric_defines()) | {p.name for p in self.sig if not p.is_array}
        for p in self.sig:
            if not p.is_array and not p.is_record and p.default is None and p.name not in self.sizes[0]:
                raise SpecError(f"{label}: scalar '{p.name}' needs a default (= ...) or a size of that name")
            for e in (p.shape or ()) + ((p.default,) if p.default else ()):
                missing = e.names() - known
                if missing:
                    raise SpecError(f"{label}: '{p.name}' uses unknown name(s) {', '.join(sorted(missing))}")
        for what, dims in (("grid", self.grid_dims), ("block", self.block_dims)):
            for e in dims:
                missing = e.names() - known
                if missing:
                    raise SpecError(f"{label}: {what} uses unknown name(s) {', '.join(sorted(missing))}")

    # -- identity -------------------------------------------------------------------------------
    @property
    def id(self) -> str:
        if self.name:
            return self.name
        if self.defines:
            return f"{self.kernel}[{','.join(f'{k}={v}' for k, v in self.defines.items())}]"
        return self.kernel

    @property
    def name_expression(self) -> str:
        """How NVRTC should look the kernel up (template instantiations included)."""
        if self.template_args:
            return f"{self.kernel}<{', '.join(map(str, self.template_args))}>"
        return self.kernel

    @property
    def base_dir(self) -> Path:
        return Path(self.spec_path).parent

    @property
    def source_path(self) -> Path:
        return self.base_dir / self.source

    def translation_for(self, target: str, lang: str | None) -> tuple[Path, Path | None] | None:
        """A hand-written translation named in the spec (by verify target or by language)."""
        rel = self.translations.get(target) or (self.translations.get(lang) if lang else None)
        if rel is None:
            return None
        path = self.base_dir / rel
        manifest = self.manifests.get(target) or (self.manifests.get(lang) if lang else None)
        mpath = self.base_dir / manifest if manifest else path.with_name(path.name + ".json")
        return path, (mpath if mpath.exists() else None)

    def define_flags(self) -> list[str]:
        if self.defines_applied:  # the translation is already specialised: -D would redefine its constants
            return []
        return [f"-D{k}" if v is None else f"-D{k}={v}" for k, v in self.defines.items()]

    def numeric_defines(self) -> dict[str, int | float]:
        return {k: v for k, v in self.defines.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}

    def expect_for(self, target: str, variant: str | None = None) -> str | None:
        """'fail' where the case is known to fail; dict keys are a target or 'target/variant'."""
        if isinstance(self.expect, dict):
            return self.expect.get(f"{target}/{variant}") or self.expect.get(target)
        return self.expect

    # -- evaluation -----------------------------------------------------------------------------
    def env(self, sizes: dict[str, int]) -> dict[str, Any]:
        env: dict[str, Any] = {**self.numeric_defines(), **sizes}
        for p in self.sig:
            if not p.is_array and not p.is_record:
                env[p.name] = p.default.eval(env) if p.default is not None else sizes[p.name]
        return env

    def launch(self, sizes: dict[str, int]) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
        env = self.env(sizes)
        grid = [eval_int(e, env, "grid") for e in self.grid_dims] + [1, 1]
        block = [eval_int(e, env, "block") for e in self.block_dims] + [1, 1]
        if min(grid[:3]) < 1 or min(block[:3]) < 1:
            raise SpecError(f"{self.id}: empty launch grid={grid[:3]} block={block[:3]} for sizes {sizes}")
        return tuple(grid[:3]), tuple(block[:3])

    def shared_bytes(self, sizes: dict[str, int]) -> int:
        return eval_int(self.shared_expr, self.env(sizes), "shared_mem")

    def make_args(self, sizes: dict[str, int]) -> dict[str, Any]:
        """Every kernel argument in CUDA parameter order: arrays (ndarray) and scalars (numpy scalars)."""
        env = self.env(sizes)
        args: dict[str, Any] = {}
        size_key = json.dumps(sizes, sort_keys=True).encode()
        for p in self.sig:
            if p.is_record and not p.is_array:   # a struct by value: one structured scalar (np.void)
                rng = np.random.default_rng([self.seed, zlib.crc32(p.name.encode()), zlib.crc32(size_key)])
                args[p.name] = (self.init.get(p.name) or Init("fields"))(rng, (1,), p.np_dtype, env)[0]
                continue
            if not p.is_array:
                args[p.name] = _cast_scalar(env[p.name], p)
                continue
            shape = tuple(eval_int(e, env, f"shape of '{p.name}'") for e in p.shape)
            if min(shape, default=1) < 0:
                raise SpecError(f"{self.id}: negative shape {shape} for '{p.name}'")
            rng = np.random.default_rng([self.seed, zlib.crc32(p.name.encode()), zlib.crc32(size_key)])
            init = self.init.get(p.name) or _default_init(p)
            if p.name in self.alias:
                continue
            args[p.name] = np.ascontiguousarray(init(rng, shape, p.np_dtype, env))
        for a, b in self.alias.items():   # the same ndarray object: hosts bind one buffer to both parameters
            p = next(q for q in self.sig if q.name == a)
            shape = tuple(eval_int(e, env, f"shape of '{a}'") for e in p.shape)
            if shape != args[b].shape:
                raise SpecError(f"{self.id}: alias {a!r} -> {b!r}: shapes {shape} and {args[b].shape} differ")
            args[a] = args[b]
        return {p.name: args[p.name] for p in self.sig}     # CUDA parameter order

    def expected(self, args: dict[str, Any], sizes: dict[str, int]) -> dict[str, np.ndarray]:
        """Run the NumPy reference on copies of the arguments; returns every out/inout array."""
        outputs = self.sig.outputs
        if self.reference is None:
            raise SpecError(f"{self.id}: no reference (reference=None is checked across targets)")
        copies: dict[int, np.ndarray] = {}     # aliased parameters (one ndarray) stay one array for the reference
        pool = {**self.numeric_defines(), **sizes,
                **{k: (copies.setdefault(id(v), v.copy()) if isinstance(v, np.ndarray)
                       else v.copy() if isinstance(v, np.void) else v.item())     # a struct: its fields by name
                   for k, v in args.items()}}
        sig = inspect.signature(self.reference)
        if any(p.kind == p.VAR_KEYWORD for p in sig.parameters.values()):
            kwargs = pool
        else:
            missing = [n for n in sig.parameters if n not in pool and sig.parameters[n].default is inspect._empty]
            if missing:
                raise SpecError(f"{self.id}: reference wants unknown argument(s) {', '.join(missing)}")
            kwargs = {n: pool[n] for n in sig.parameters if n in pool}
        result = self.reference(**kwargs)
        if isinstance(result, dict):
            got = dict(result)
        elif isinstance(result, (tuple, list)):
            got = dict(zip((p.name for p in outputs), result))
        elif len(outputs) == 1:
            got = {outputs[0].name: result}
        else:
            raise SpecError(f"{self.id}: reference must return a dict of {', '.join(p.name for p in outputs)}")
        expected = {}
        for p in outputs:
            if p.name in got:
                expected[p.name] = np.asarray(got[p.name])
            elif p.direction == "inout":
                expected[p.name] = args[p.name]    # not returned: must come back unchanged
            else:
                raise SpecError(f"{self.id}: reference did not return output '{p.name}'")
        return expected

    def tolerance(self, param: Param, sizes: dict[str, int] | None = None, leaf: tuple | None = None) -> Tol:
        """leaf: (path, dtype) of a struct's field; its tolerance is tol["p.path"], tol["p"] or its dtype's."""
        code = dtype_code(leaf[1]) if leaf is not None else param.dtype
        tol = DEFAULT_TOL[code]
        if isinstance(self.tol, Tol) and (leaf[1] if leaf is not None else param.np_dtype).kind == "f":
            tol = self.tol
        elif isinstance(self.tol, dict):
            tol = (self.tol.get(f"{param.name}.{leaf[0]}") if leaf is not None else None) or \
                self.tol.get(param.name) or self.tol.get(code) or tol
        return tol.resolve(self.env(sizes or self.sizes[0]))

    def compare_output(self, param: Param, got, want, sizes: dict[str, int] | None = None):
        """compare.py's Comparison of one output; a struct's fields one by one (the first that differs, named
        `p.field`), each with its dtype's tolerance."""
        from porter.verify.compare import MULTISET, compare, compare_fields
        how = ""
        if param.name in self.unordered:
            got, want, how = self.as_multiset(param, got), self.as_multiset(param, want), MULTISET
        if param.is_record:
            return compare_fields(param.name, got, want, lambda path, dt: self.tolerance(param, sizes, (path, dt)),
                                  how=how)
        tol = self.tolerance(param, sizes)
        return compare(param.name, got, want, tol.rtol, tol.atol, how=how)

    def as_multiset(self, param: Param, values) -> np.ndarray:
        """An unordered output in canonical order: flattened and sorted (NaN last); a struct buffer by its fields,
        lexicographically (the first field first, an array field element by element). Other outputs as they are."""
        a = np.asarray(values)
        if param.name not in self.unordered:
            return a
        a = a.reshape(-1)
        if not a.dtype.names:
            return np.sort(a, kind="stable")
        keys = []
        for path, _dt, _off in leaves(a.dtype):
            col = a
            for part in path.split("."):
                col = col[part]
            keys += list(col.reshape(a.size, -1).T)
        return a[np.lexsort(keys[::-1])] if keys else a

    def metrics(self, sizes: dict[str, int]) -> dict[str, float]:
        env = self.env(sizes)
        out = {}
        if self.bytes_expr is not None:
            out["bytes"] = float(self.bytes_expr.eval(env))
        if self.flops_expr is not None:
            out["flops"] = float(self.flops_expr.eval(env))
        return out


class FieldInits(Init):
    """Per-field initial values of a struct (init={"p": {"type": uniform(0, 3)}}); the fields not named get their
    dtype's default."""
    fields: tuple = ()

    def __init__(self, fields: tuple):
        object.__setattr__(self, "kind", "fields")
        object.__setattr__(self, "args", ())
        object.__setattr__(self, "fields", fields)

    def __call__(self, rng, shape, dtype, env=None):
        dtype = np.dtype(dtype)
        if not dtype.names:
            raise SpecError("a per-field init ({field: ...}) for a parameter that is not a struct")
        unknown = [k for k, _ in self.fields if k not in dtype.names]
        if unknown:
            raise SpecError(f"init for unknown field(s) {', '.join(unknown)} (fields: {', '.join(dtype.names)})")
        return _fields(Init("fields"), rng, shape, dtype, dict(self.fields), env)

    def __str__(self):
        return "{" + ", ".join(f"{k!r}: {v}" for k, v in self.fields) + "}"


def _default_init(p: Param) -> Init:
    if p.direction == "out":
        return poison()
    if p.is_record:
        return Init("fields")
    if p.np_dtype.kind == "u":
        return uniform(0, 100)
    if p.np_dtype.kind == "i":
        return uniform(-100, 100)
    return uniform(-1.0, 1.0)


def _cast_scalar(value: Any, p: Param):
    dtype = p.np_dtype
    if dtype.kind in "iu":
        if isinstance(value, float) and not value.is_integer():
            raise SpecError(f"scalar '{p.name}' ({p.dtype}) = {value} is not an integer")
        info = np.iinfo(dtype)
        if not info.min <= int(value) <= info.max:
            raise SpecError(f"scalar '{p.name}' = {value} does not fit {p.dtype}")
        return dtype.type(int(value))
    return dtype.type(value)


# ---------------------------------------------------------------------------------------------
# Loading

def load_spec(path: str | Path) -> list[Case]:
    path = Path(path).resolve()
    module_name = f"cuport_spec_{zlib.crc32(str(path).encode()):08x}"
    loader_spec = importlib.util.spec_from_file_location(module_name, path)
    if loader_spec is None or loader_spec.loader is None:
        raise SpecError(f"{path}: cannot load")
    module = importlib.util.module_from_spec(loader_spec)
    try:
        loader_spec.loader.exec_module(module)
    except SpecError as e:
        raise SpecError(f"{path}: {e}") from None
    cases = getattr(module, "KERNELS", None)
    if not isinstance(cases, (list, tuple)) or not all(isinstance(c, Case) for c in cases):
        raise SpecError(f"{path}: must define KERNELS = [Case(...), ...]")
    ids = [c.id for c in cases]
    dupes = {i for i in ids if ids.count(i) > 1}
    if dupes:
        raise SpecError(f"{path}: duplicate case ids {', '.join(sorted(dupes))} (give them name=...)")
    for i, c in enumerate(cases):
        c.spec_path, c.index = str(path), i
    return list(cases)


def find_specs(paths: list[str | Path]) -> list[tuple[Path, list[Case]]]:
    """Spec files for command-line paths: a spec file, a directory (searched recursively), or a
    source file (the spec beside it, restricted to cases of that source)."""
    found: list[tuple[Path, list[Case]]] = []
    for raw in paths:
        p = Path(raw)
        if p.is_dir():
            for spec in sorted(p.rglob(SPEC_FILENAME)):
                found.append((spec, load_spec(spec)))
        elif p.name == SPEC_FILENAME or p.suffix == ".py":
            found.append((p, load_spec(p)))
        elif p.exists():
            spec = p.parent / SPEC_FILENAME
            if not spec.exists():
                raise SpecError(f"{p}: no {SPEC_FILENAME} beside it")
            cases = [c for c in load_spec(spec) if c.source_path.resolve() == p.resolve()]
            if not cases:
                raise SpecError(f"{p}: {spec} has no case for this file")
            found.append((spec, cases))
        else:
            raise SpecError(f"{p}: no such file or directory")
    return found
