"""A cooperative-groups tile wider than 32 threads, or a 32-thread tile mixed with hardware-warp operations.

## What it does
Flags `tiled_partition<N>(g)`, `tiled_partition(g, N)` and `thread_block_tile<N>` whose size folds (through
`#define`, `constexpr`/`const` variables and enums) to
- N > 32: not a (sub-)warp tile on NVIDIA, and wider than the wavefront of some or all AMD GPUs;
- N == 32 in a function that also uses hardware-warp operations (`__shfl*_sync`, `__ballot_sync`,
  `__activemask`, `__syncwarp`, `__match_*`, `warpSize`): the code takes the tile for "the warp"; reported as
  possible.
The file is read token by token: `<cooperative_groups.h>` is not available to the parser.

## Why is this bad?
HIP's cooperative groups only partition tiles up to the wavefront size: 64 on CDNA (gfx9), 32 on RDNA, so a
`tiled_partition<64>` fails on RDNA and anything wider fails everywhere. CUDA itself supports tiles over 32 only
from compute capability 8.0 (or with `block_tile_memory`). Vulkan subgroups are 4 to 128 lanes, chosen by the
device, with no partitioning at all. A tile of 32 is a whole warp on NVIDIA, but half a wave64 on AMD CDNA: a
raw `__shfl_down_sync` or `__ballot_sync` next to it spans the whole wavefront (both tiles), so values from
the other tile get mixed in, and lane ids from `% warpSize` no longer match `tile.thread_rank()`.

## Example
```cuda
auto block = cooperative_groups::this_thread_block();
auto tile = cooperative_groups::tiled_partition<64>(block);
float s = cooperative_groups::reduce(tile, v, cooperative_groups::plus<float>());
```

## Use instead
```cuda
auto tile = cooperative_groups::tiled_partition<32>(block);   // <= the smallest wavefront you target
float s = cooperative_groups::reduce(tile, v, cooperative_groups::plus<float>());
// ... then combine the per-tile results through shared memory
```

## Fix safety
No fix: the tile size is part of the algorithm (how many partial results there are and how they are combined).

## References
- HIP documentation, "Cooperative groups" (tile sizes up to the wavefront size); CUDA C++ Programming Guide,
  "Thread Block Tile" (tiles over 32 need compute capability 8.0 or `block_tile_memory`).
- ROCm/hip#1041, cupy/cupy#9977 (code that assumes a warp of 32 lanes on a wave64).
"""
import re

from porter.lint.helpers import int_value

CODE = "CP903"
_NAMES = ("tiled_partition", "thread_block_tile")
_WARP_OPS = re.compile(rb"\b(__shfl\w*|__ballot\w*|__activemask|__syncwarp|__match_\w+|__any_sync|__all_sync|"
                       rb"__reduce_\w+_sync|warpSize)\b")
_EXPR = re.compile(r"^[0-9+\-*/%() <>]+$")
_INT = re.compile(r"^(0[xX][0-9a-fA-F]+|\d+)[uUlL]*$")


def _split_args(toks, i, open_, close):
    """Arguments (token lists) between toks[i] (== open_) and its matching `close`; (args, index of close)."""
    depth, args, cur = 0, [], []
    for j in range(i, len(toks)):
        s = toks[j].spelling
        if s == open_ or s in ("(", "[", "{"):
            depth += 1
            if depth == 1:
                continue
        elif s == close or s in (")", "]", "}") or (close == ">" and s == ">>"):
            depth -= 2 if s == ">>" and close == ">" else 1
            if depth <= 0:
                args.append(cur)
                return args, j
        elif s == "," and depth == 1:
            args.append(cur)
            cur = []
            continue
        cur.append(toks[j])
    return None, len(toks) - 1


class _Folder:
    """Folds a token list to an integer through literals, `#define`s, constant variables and enums."""

    def __init__(self, model):
        self.model = model
        self.consts = None

    def _lookup(self, name, depth):
        m = self.model
        if name in m.macro_defs:
            s, e = m.macro_defs[name]
            body = m.source.data[s:e].decode("utf-8", "replace")
            body = body[len(name):] if body.startswith(name) else body
            if body.startswith("("):
                return None           # a function-like macro
            from porter.frontend.lexer import tokenize
            return self.fold([t for t in tokenize(body.encode()) if t.kind != "COMMENT"], depth + 1)
        if self.consts is None:
            self.consts = {}
            for n in m.of_kind("VAR_DECL") + m.of_kind("ENUM_CONSTANT_DECL"):
                if n.kind == "ENUM_CONSTANT_DECL" or "const" in n.type:
                    self.consts.setdefault(n.spelling, n)
        n = self.consts.get(name)
        if n is None:
            return None
        if n.kind == "ENUM_CONSTANT_DECL":
            try:
                return n._cursor.enum_value
            except Exception:
                return None
        exprs = [c for c in n.children if not c.kind.endswith("_ATTR") and c.kind not in ("TYPE_REF",)]
        return int_value(exprs[-1]) if exprs else None

    def fold(self, toks, depth=0):
        if depth > 8 or not toks:
            return None
        parts = []
        for t in toks:
            s = t.spelling
            if t.kind == "IDENTIFIER":
                v = self._lookup(s, depth)
                if v is None:
                    return None
                parts.append(f"({v})")
            elif t.kind == "LITERAL":
                m = _INT.match(s)
                if m is None:
                    return None
                parts.append(str(int(m.group(1), 0)))
            elif s == "::":
                return None
            else:
                parts.append(s)
        expr = " ".join(parts)
        if not _EXPR.match(expr):
            return None
        try:
            v = eval(expr.replace("/", "//"), {"__builtins__": {}}, {})  # noqa: S307 - digits and operators only
        except Exception:
            return None
        return v if isinstance(v, int) else None


def _sizes(toks, folder):
    """(token index, spelled text span (start, end), N) of each tile size that folds."""
    for i, t in enumerate(toks):
        if t.kind != "IDENTIFIER" or t.spelling not in _NAMES or i + 1 >= len(toks):
            continue
        nxt = toks[i + 1].spelling
        if nxt == "<":
            args, end = _split_args(toks, i + 1, "<", ">")
            idx = 0
        elif nxt == "(" and t.spelling == "tiled_partition":
            args, end = _split_args(toks, i + 1, "(", ")")
            idx = 1
        else:
            continue
        if not args or len(args) <= idx:
            continue
        n = folder.fold(args[idx])
        if n is not None:
            yield i, (t.start, toks[end].end), n


def check(ctx):
    data = ctx.source.data
    if b"tiled_partition" not in data and b"thread_block_tile" not in data:
        return
    model = ctx.model
    toks = model.tokens
    folder = _Folder(model)
    funcs = [(f.node.start, f.node.end, f) for f in model.functions if f.body is not None]
    rows, mixed = set(), set()
    for i, (start, end), n in _sizes(toks, folder):
        row = ctx.source.position(start)[0]
        if row in rows:
            continue
        text = data[start:end].decode("utf-8", "replace")
        if n > 32:
            rows.add(row)
            where = f"no AMD GPU has {n}-lane wavefronts" if n > 64 else \
                "64 works on AMD CDNA (wave64), not on RDNA (wave32)"
            ctx.report(CODE, (start, end), f"`{text}`: a cooperative-groups tile of {n} threads; HIP partitions "
                                           f"tiles only up to the wavefront size ({where}), CUDA needs compute "
                                           f"capability 8.0 for tiles over 32, and Vulkan subgroups (4..128 lanes) "
                                           f"cannot be partitioned at all; use tiles of at most 32 and combine "
                                           f"their results through shared memory")
        elif n == 32:
            fn = next((f for lo, hi, f in funcs if lo <= start < hi), None)
            if fn is None or id(fn) in mixed:
                continue
            m = _WARP_OPS.search(data, fn.node.start, fn.node.end)
            if m is None:
                continue
            mixed.add(id(fn))
            rows.add(row)
            op = m.group(1).decode()
            ctx.report(CODE, (start, end), f"possible: `{text}` is a whole warp on NVIDIA but half a 64-lane "
                                           f"wavefront on AMD CDNA, and `{fn.name}` also uses the hardware warp "
                                           f"(`{op}` at line {ctx.source.position(m.start(1))[0]}), which then "
                                           f"spans both tiles of the wavefront; use the tile's own operations "
                                           f"(`tile.shfl_down`, `tile.ballot`, `tile.thread_rank()`) throughout")
