"""Cooperative groups and CUB collectives for the GLSL and OpenCL kernel translators (issue 14).

They are lowered on the CUDA text, before the portability fixes, to the CUDA the translators already handle, so
the warp-size machinery (lane and warp ids, per-warp arrays, CP104 refusals) applies to them unchanged:
- a thread block is the CUDA block: `thread_rank()` is the linear thread index, `sync()` is `__syncthreads()`;
- a `thread_block_tile<32>` is a warp, that is a subgroup here: `thread_rank()` is `rank % warpSize`,
  `meta_group_rank()` `rank / warpSize`, `size()` `warpSize`, `sync()` `__syncwarp()`, `shfl*` / `any` /
  `all` / `ballot` the full-mask `__*_sync` intrinsics and `cg::reduce` with `plus` / `less` / `greater` /
  `bit_*` the `__reduce_*_sync` ones (exact at any subgroup size, like the warp code written with warpSize);
- a coalesced group is the ballot taken once where `coalesced_threads()` runs, kept in a variable beside it
  (`unsigned int cuport_ballot_g = __activemask();`); its rank, size and `shfl(v, k)` read that mask
  (`__cuport_coalesced_*(cuport_ballot_g, ...)`): a ballot at each use would see only the threads active there;
- `cub::BlockReduce<T, N>(storage).Sum(v)` / `.Reduce(v, cub::Sum|Max|Min | a recognisable functor)` (and
  the `num_valid` overloads) become `__cuport_block_reduce_OP(v, N[, num_valid])`: a shared-memory tree,
  exact at any subgroup size; `cub::WarpReduce<T>` (32 logical lanes) the `__reduce_*_sync` intrinsics.
- `cg::reduce(tile32, v, op)` with the user's `op` (a `__device__` function, a stateless functor) and
  `cub::BlockAdjacentDifference` Subtract{Left,Right}[PartialTile] are written as CUDA helpers (CUDA's butterfly,
  CUB's shared edge items; `_user_reduce`, `_adjacent`): a function inserted before the function that uses them,
  a `__shared__` array at the top of its body, each on one line.
CUB defines the result in thread 0 (lane 0) only: every thread gets it here. The TempStorage variables, group
variables and their initialisers are dropped once every use of them has been lowered.

What cannot be right at every subgroup size (tiles other than 32 threads, grid-wide barriers, a cg::reduce with
a lambda or a functor with state, a CUB reduction with an operation cuport does not recognise) is left as written and
refused by the emitter (CP907) at its line: `refusals` maps their ranges into the lowered text."""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from porter.analysis.coop_groups import group_kind, group_object
from porter.source import SourceFile

_HINT = re.compile(rb"cooperative_groups|\bcub::|namespace\s+cub\b")
FULL = "0xffffffff"
LIN = "(threadIdx.x + threadIdx.y * blockDim.x + threadIdx.z * blockDim.x * blockDim.y)"
SIZE = "(blockDim.x * blockDim.y * blockDim.z)"
WS = "((unsigned int)warpSize)"
_TILE_CALLS = {"thread_rank": f"({LIN} % {WS})", "meta_group_rank": f"({LIN} / {WS})",
               "size": WS, "num_threads": WS, "meta_group_size": f"(({SIZE} + {WS} - 1) / {WS})",
               "sync": "__syncwarp()"}
_BLOCK_CALLS = {"thread_rank": LIN, "size": SIZE, "num_threads": SIZE, "sync": "__syncthreads()",
                "group_index": "blockIdx", "thread_index": "threadIdx", "group_dim": "blockDim",
                "dim_threads": "blockDim"}
_TILE_SYNC_OPS = {"shfl": "__shfl_sync", "shfl_down": "__shfl_down_sync", "shfl_up": "__shfl_up_sync",
                  "shfl_xor": "__shfl_xor_sync", "any": "__any_sync", "all": "__all_sync", "ballot": "__ballot_sync"}
_CG_OPS = {"plus": "add", "less": "min", "greater": "max", "bit_and": "and", "bit_or": "or", "bit_xor": "xor"}
_CUB_OPS = {"Sum": "add", "Max": "max", "Min": "min"}
_CUB_TYPE = re.compile(r"(?:cub::)?(BlockReduce|WarpReduce|BlockAdjacentDifference|BlockScan|WarpScan|BlockLoad|"
                       r"BlockStore|BlockRadixSort|BlockExchange|BlockHistogram|BlockDiscontinuity|\w+)\s*<(.*)>")


@dataclass
class Lowered:
    source: SourceFile
    refusals: list = field(default_factory=list)     # (start, end, message) in the lowered text
    count: int = 0                                   # constructs lowered


def lower(source: SourceFile, parse_options) -> Lowered:
    """The text with the cooperative-groups and CUB constructs of device code lowered (see the module doc)."""
    if not _HINT.search(source.data):
        return Lowered(source)
    from porter.frontend.build import build_model
    model = build_model(source, parse_options)
    low = _Lowering(model)
    for f in model.functions:
        if f.is_device_code and f.body is not None:
            low.fn = f
            low.visit(f.body)
    low.drop_declarations()
    low.insert_helpers()
    if not low.edits and not low.refused:
        return Lowered(source)
    data = source.data
    out, pos, shift = [], 0, []
    for s, e, text in sorted(low.edits):
        out.append(data[pos:s])
        new = text.encode()
        # keep the line structure: diagnostics on later lines stay on their lines
        new += b"\n" * (data[s:e].count(b"\n") - new.count(b"\n"))
        shift.append((s, e, len(new) - (e - s)))
        out.append(new)
        pos = e
    out.append(data[pos:])
    text = b"".join(out).decode("utf-8", "surrogateescape")

    def moved(off):
        return off + sum(d for s, e, d in shift if e <= off)
    refusals = [(moved(s), moved(e), msg) for s, e, msg in low.refused]
    return Lowered(SourceFile(source.path, text), refusals, len(low.edits))


class _Lowering:
    def __init__(self, model):
        self.model = model
        self.edits: list = []          # (start, end, text), non-overlapping
        self.refused: list = []        # (start, end, message) in the original text
        self.handled: set = set()      # id(DECL_REF_EXPR) of group / TempStorage uses that were lowered
        self.decls: dict = {}          # id(decl) -> (decl, DECL_STMT) of group and TempStorage variables
        self.fn = None                 # the function being visited
        self.before: dict = {}         # offset -> CUDA helper functions to insert there (before a function)
        self.n_helpers = 0
        self.made: dict = {}           # (insertion offset, what) -> the helper or array made for it there

    def insert_helpers(self):
        """The helper functions and shared arrays the lowerings wrote, inserted on one line each place (the line
        structure stays: diagnostics on later lines keep their lines)."""
        for off, texts in self.before.items():
            self.edits.append((off, off, " ".join(texts) + " "))

    def helper_name(self, what: str) -> str:
        self.n_helpers += 1
        return f"cuport_{what}_{self.n_helpers}"

    def add_before_function(self, text: str):
        self.before.setdefault(self.fn.node.start, []).append(text)

    def add_to_body(self, text: str):
        self.before.setdefault(self.fn.body.start + 1, []).append(text)

    # ------------------------------------------------------------------ text
    def text(self, n) -> str:
        """The source of `n` with the edits already made inside it."""
        data = self.model.source.data
        inner = sorted(e for e in self.edits if n.start <= e[0] and e[1] <= n.end)
        out, pos = [], n.start
        for s, e, t in inner:
            out.append(data[pos:s].decode("utf-8", "surrogateescape"))
            out.append(t)
            pos = e
        out.append(data[pos:n.end].decode("utf-8", "surrogateescape"))
        return "".join(out)

    def replace(self, n, text: str):
        self.edits = [e for e in self.edits if not (n.start <= e[0] and e[1] <= n.end)]
        self.edits.append((n.start, n.end, text))

    def refuse(self, n, message: str):
        self.refused.append((n.start, n.end, message))

    # ------------------------------------------------------------------ walk
    def visit(self, n):
        for c in n.children:
            self.visit(c)
        if n.kind == "VAR_DECL":
            self._declaration(n)
        elif n.kind == "CALL_EXPR":
            try:
                self._call(n)
            except _Refuse as r:
                self.refuse(n, str(r))

    def _declaration(self, d):
        p = d.parent
        if p is None or p.kind != "DECL_STMT":
            return
        if group_kind(d) is not None or _cub_type(d) is not None and "TempStorage" in _canonical(d):
            self.decls[id(d)] = (d, p)

    def drop_declarations(self):
        """Remove the declarations of group and TempStorage variables whose every use was lowered."""
        stmts: dict = {}
        for d, stmt in self.decls.values():
            stmts.setdefault(id(stmt), (stmt, []))[1].append(d)
        # a group made from another (`tiled_partition<32>(block)`) that stays keeps that one too: to a fixed point
        kept = {k for k, (stmt, ds) in stmts.items()
                if len([c for c in stmt.children if c.kind == "VAR_DECL"]) != len(ds)}
        changed = True
        while changed:
            changed = False
            for k, (stmt, ds) in stmts.items():
                if k in kept:
                    continue
                for r in (r for d in ds for r in self.model.refs_to(d)):
                    inside_kept = any(stmts[j][0].start <= r.start < stmts[j][0].end for j in kept)
                    if id(r) not in self.handled or inside_kept:
                        kept.add(k)
                        changed = True
                        break
        for k, (stmt, ds) in stmts.items():
            if len([c for c in stmt.children if c.kind == "VAR_DECL"]) != len(ds):
                continue
            # a coalesced group is the ballot taken where it is made: kept in a variable beside it (the uses
            # lowered read that; a group kept for a use refused below stays declared, the code still compiles)
            masks = " ".join(f"unsigned int {_mask_name(d)} = __activemask();" for d in ds
                             if _made_by_coalesced_threads(d))
            if k not in kept:
                self.replace(stmt, masks)
            else:
                if masks:
                    self.replace(stmt, self.text(stmt) + " " + masks)
                for d in ds:
                    k = group_kind(d)
                    if k is not None and k[0] == "tile" and k[1] != 32:
                        continue        # refused at its tiled_partition already
                    bad = next((r for d2 in ds for r in self.model.refs_to(d2) if id(r) not in self.handled), None)
                    if bad is None:
                        break           # kept for a group made from it, which is refused or reported
                    if any(s <= bad.start < e for s, e, _m in self.refused):
                        break           # inside a construct refused already
                    why = " (a coalesced group is the ballot taken where it is made: cuport keeps it in the " \
                          "function that makes it)" if group_kind(d) == ("coalesced_group", None) else ""
                    self.refuse(bad, f"`{_short(bad.parent or bad)}` uses {_what(d)} in a way cuport does not "
                                     f"lower (only its member calls, `cg::sync` and `cg::reduce`){why}")
                    break

    # ------------------------------------------------------------------ calls
    def _call(self, n):
        name = n.spelling
        if not name and n.children and n.children[0].kind == "MEMBER_REF_EXPR":
            name = n.children[0].text.rsplit(".", 1)[-1].strip()     # a dependent call in a template
        obj = group_object(n)
        if obj is not None:
            g = group_kind(obj)
            if g is not None:
                return self._group_member(n, name, obj, g)
            cub = _cub_type(obj)
            if cub is not None:
                return self._cub_member(n, name, obj, cub)
            return None
        if name in ("this_thread_block", "tiled_partition", "this_grid", "coalesced_threads") and \
                group_kind(n) is not None:
            self._partition(n)
            return None
        args = n.args()
        if name == "sync" and len(args) == 1 and group_kind(args[0].strip) is not None:
            text = self._sync(n, group_kind(args[0].strip))
            self._use(args[0])
            self.replace(n, text)
        elif name == "reduce" and len(args) == 3 and group_kind(args[0].strip) is not None:
            g = group_kind(args[0].strip)
            if g != ("tile", 32):
                raise _Refuse(f"`cg::reduce` over {_kind_text(g)}: only tiles of 32 threads (a warp, a subgroup "
                              "here) are lowered")
            op = _CG_OPS.get(_op_name(args[2]))
            if op is None:
                text = self._user_reduce(args[1], args[2])
            else:
                text = f"__reduce_{op}_sync({FULL}, {self.text(args[1])})"
            self._use(args[0])
            self.replace(n, text)
        return None

    def _partition(self, n):
        g = group_kind(n)
        if n.spelling == "tiled_partition" and g[0] != "tile":
            raise _Refuse("a tile whose size is set at run time (`tiled_partition(g, n)`)")
        if g[0] == "tile" and g[1] != 32:
            raise _Refuse(f"a tile of {g[1]} threads: cuport lowers tiles of 32 threads (a warp: a subgroup "
                          f"here) only, a tile of {g[1]} is not right at every subgroup size (4 to 128)")
        for a in n.args():
            self._use(a)

    def _use(self, a):
        s = a.strip
        if s.kind == "DECL_REF_EXPR":
            self.handled.add(id(s))
        for c in a.walk():
            if c.kind == "DECL_REF_EXPR":
                self.handled.add(id(c))

    def _sync(self, n, g):
        kind = g[0]
        if kind == "thread_block":
            return "__syncthreads()"
        if g == ("tile", 32):
            return "__syncwarp()"
        if kind == "grid_group":
            raise _Refuse("a grid-wide barrier (`grid.sync()`, cooperative launch): Vulkan and OpenCL have no "
                          "barrier across work-groups; split the kernel at the barrier")
        raise _Refuse(f"`sync` of {_kind_text(g)}")

    def _group_member(self, n, name, obj, g):
        kind = g[0]
        args = [c for c in n.children[1:] if c.kind not in ("TYPE_REF", "NAMESPACE_REF")]
        if name == "sync":
            text = self._sync(n, g)
        elif kind == "thread_block" and name in _BLOCK_CALLS:
            text = _BLOCK_CALLS[name]
        elif g == ("tile", 32) and name in _TILE_CALLS:
            text = _TILE_CALLS[name]
        elif g == ("tile", 32) and name in _TILE_SYNC_OPS:
            text = f"{_TILE_SYNC_OPS[name]}({FULL}, {', '.join(self.text(a) for a in args)})"
        elif kind == "grid_group" and name in ("thread_rank", "size", "num_threads", "block_rank", "num_blocks"):
            blin = "(blockIdx.x + blockIdx.y * gridDim.x + blockIdx.z * gridDim.x * gridDim.y)"
            grid = "(gridDim.x * gridDim.y * gridDim.z)"
            text = {"thread_rank": f"((unsigned long long){blin} * {SIZE} + {LIN})",
                    "size": f"((unsigned long long){grid} * {SIZE})",
                    "num_threads": f"((unsigned long long){grid} * {SIZE})",
                    "block_rank": f"((unsigned long long){blin})", "num_blocks": f"((unsigned long long){grid})"}[name]
        elif kind == "coalesced_group" and name in ("thread_rank", "size", "num_threads"):
            m = self._coalesced_mask(obj)
            text = f"__cuport_coalesced_{'rank' if name == 'thread_rank' else 'size'}({m})"
        elif kind == "coalesced_group" and name == "shfl" and len(args) == 2:
            text = f"__cuport_coalesced_shfl({self._coalesced_mask(obj)}, {self.text(args[0])}, {self.text(args[1])})"
        elif kind == "tile" and g[1] != 32:
            return None         # refused where the tile is made
        else:
            raise _Refuse(f"`{name}` of {_kind_text(g)}")
        self._use(obj)
        self.replace(n, text)
        return None

    def _coalesced_mask(self, obj) -> str:
        """The variable that keeps the ballot of a coalesced group: the group's own local variable, made by
        `coalesced_threads()` (declared beside it: `unsigned int cuport_ballot_g = __activemask();`,
        drop_declarations)."""
        r = obj.strip
        while r.kind == "UNEXPOSED_EXPR" and len(r.children) == 1:
            r = r.children[0].strip
        d = r.ref if r.kind == "DECL_REF_EXPR" else None
        if d is None or id(d) not in self.decls or not _made_by_coalesced_threads(d):
            what = "a parameter" if d is not None and d.kind == "PARM_DECL" else f"`{_short(obj)}`"
            raise _Refuse(f"a coalesced group held in {what}: its members are the threads active where "
                          "`coalesced_threads()` runs, and cuport keeps that ballot only in the local variable "
                          "the group is made in")
        return _mask_name(d)

    def _cub_member(self, n, name, obj, cub):
        cls, targs = cub
        args = [c for c in n.children[1:] if c.kind not in ("TYPE_REF", "NAMESPACE_REF")]
        if cls == "BlockReduce" and name in ("Sum", "Reduce"):
            if args and "[" in (args[0].type or "") or (args and re.search(r"\(&\)|\[\d+\]", args[0].type or "")):
                raise _Refuse(f"`cub::BlockReduce::{name}` over an array of items per thread")
            op, rest = ("add", args[1:]) if name == "Sum" else (self._cub_op(args[1]) if len(args) > 1 else None,
                                                             args[2:])
            n_threads = 1
            for v in (targs[1:2] + targs[3:5]):
                try:
                    n_threads *= int(v.strip().rstrip("uU"))
                except ValueError:
                    raise _Refuse(f"`cub::BlockReduce` with a block size cuport cannot read (`{v.strip()}`)") from None
            extra = "".join(f", {self.text(a)}" for a in rest)
            text = f"__cuport_block_reduce_{op}({self.text(args[0])}, {n_threads}{extra})"
        elif cls == "WarpReduce" and name in ("Sum", "Reduce"):
            lanes = targs[1].strip() if len(targs) > 1 else "32"
            if lanes != "32":
                raise _Refuse(f"`cub::WarpReduce` over {lanes} logical lanes: cuport lowers 32-lane warp reductions "
                              "(a subgroup here) only")
            if (name == "Sum" and len(args) != 1) or (name == "Reduce" and len(args) != 2):
                raise _Refuse(f"`cub::WarpReduce::{name}` over part of the warp (`valid_items`)")
            op = "add" if name == "Sum" else self._cub_op(args[1])
            text = f"__reduce_{op}_sync({FULL}, {self.text(args[0])})"
        elif cls == "BlockAdjacentDifference" and name in _ADJ:
            text = self._adjacent(name, targs, args)
        else:
            raise _Refuse(f"`cub::{cls}::{name}`: cuport lowers cub::BlockReduce and cub::WarpReduce Sum / Reduce "
                          "and cub::BlockAdjacentDifference SubtractLeft / SubtractRight[PartialTile]")
        self._use(obj)
        self.replace(n, text)

    def _cub_op(self, a):
        name = _op_name(a)
        if name in _CUB_OPS:
            return _CUB_OPS[name]
        op = _functor_op(self.model, a)
        if op is None:
            raise _Refuse(f"a CUB reduction with the operation `{_short(a)}`: cuport lowers cub::Sum, cub::Max, "
                          "cub::Min and functors that return `a + b`, `a > b ? a : b` or `a < b ? a : b`")
        return op


    # ------------------------------------------------------------------ user operations
    def _user_reduce(self, v, op) -> str:
        """`cg::reduce(tile32, v, op)` with an operation of the user's: CUDA's own butterfly
        (cooperative_groups/details/coalesced_reduce.h: `for (mask = size / 2; mask > 0; mask >>= 1) out = op(out,
        shfl_xor(out, mask))`) over the warp, a subgroup here, in a helper written before the function; a struct
        value is shuffled field by field. The same combinations in the same order as CUDA at a subgroup of 32,
        so nothing is assumed of `op` beyond what CUDA assumes (every lane gets the full reduction when op is
        associative and commutative); on OpenCL's one-lane warps the loop runs no time and the value is its own
        reduction."""
        f = self._callable(op, "cg::reduce")
        t = _value_type(v)
        if "type-parameter" in t or t.startswith("("):
            raise _Refuse(f"`cg::reduce` of a value of the dependent type `{_short(v)}` with a user operation")
        fields = _scalar_fields(v)
        if fields is None:
            raise _Refuse(f"`cg::reduce` with a user operation of `{t}` values: cuport shuffles scalars and "
                          "structs of scalar fields")
        name = self.helper_name("tile_reduce")
        if fields:
            shfl = f"{t} cuport_o; " + " ".join(
                f"cuport_o.{x} = __shfl_xor_sync({FULL}, v.{x}, cuport_m);" for x in fields)
        else:
            shfl = f"{t} cuport_o = __shfl_xor_sync({FULL}, v, cuport_m);"
        self.add_before_function(
            f"__device__ {t} {name}({t} v) {{ for (int cuport_m = warpSize / 2; cuport_m > 0; cuport_m >>= 1) "
            f"{{ {shfl} v = {f}(v, cuport_o); }} return v; }}")
        return f"{name}({self.text(v)})"

    def _callable(self, op, what) -> str:
        """The CUDA callee for a user operation: a `__device__` function's name, or for a stateless functor
        (`Op()`, one operator(), no fields, no `this`) that operator() copied as a free function before the
        function being lowered. Lambdas and functors with state are refused."""
        nodes = list(op.walk())
        if any(x.kind == "LAMBDA_EXPR" for x in nodes) or "lambda" in _canonical(op.strip):
            raise _Refuse(f"`{what}` with a lambda (`{_short(op)}`): cuport lowers `__device__` functions and "
                          "stateless functors")
        refs = [x for x in nodes if x.kind in ("DECL_REF_EXPR", "OVERLOADED_DECL_REF")]
        if len(refs) == 1 and not any(x.kind == "CALL_EXPR" for x in nodes) and refs[0].ref is not None and \
                refs[0].ref.kind in ("FUNCTION_DECL", "FUNCTION_TEMPLATE"):
            return self.text(op)
        try:
            decl = op.strip._cursor.type.get_canonical().get_declaration()
        except Exception:
            decl = None
        if decl is None or decl.kind.name not in ("STRUCT_DECL", "CLASS_DECL"):
            raise _Refuse(f"`{what}` with the operation `{_short(op)}`: cuport lowers `__device__` functions "
                          "and stateless functors")
        members = list(decl.get_children())
        calls = [c for c in members if c.spelling == "operator()"]
        state = [c for c in members if c.kind.name in ("FIELD_DECL", "CXX_BASE_SPECIFIER")]
        if len(calls) != 1 or state or any(x.kind == "DECL_REF_EXPR" and x.ref is not None and
                                           x.ref.kind == "VAR_DECL" for x in nodes):
            raise _Refuse(f"`{what}` with the functor `{_short(op)}`: cuport lowers stateless functors with one "
                          "operator() (no fields, no base, made in place)")
        key = (self.fn.node.start, "op", decl.get_usr() or decl.hash)
        if key in self.made:
            return self.made[key]
        parent = decl.semantic_parent
        cub_op = _CUB_FUNCTORS.get(decl.spelling) if parent is not None and parent.spelling == "cub" else None
        if cub_op is not None:      # declared only (the shim): CUB's definition
            name = self.made[key] = self.helper_name("op")
            self.add_before_function(f"template <class T> __device__ T {name}(const T &a, const T &b) "
                                     f"{{ return {cub_op}; }}")
            return name
        toks = [t.spelling for t in calls[0].get_tokens()]
        if "{" not in toks:
            raise _Refuse(f"`{what}` with the functor `{_short(op)}`: its operator() is declared without a body "
                          "cuport can see")
        body_cursors = list(calls[0].walk_preorder())
        # `this` or an implicit member (a MEMBER_REF_EXPR without a base) would need the object
        if "#" in toks or "->" in toks or any(c.kind.name == "CXX_THIS_EXPR" or c.kind.name == "MEMBER_REF_EXPR"
                                              and not list(c.get_children()) for c in body_cursors):
            raise _Refuse(f"`{what}` with the functor `{_short(op)}`: its operator() uses the object or "
                          "cannot be copied as a free function")
        try:
            i = next(i for i in range(len(toks) - 2) if toks[i:i + 3] == ["operator", "(", ")"])
        except StopIteration:
            raise _Refuse(f"`{what}` with the functor `{_short(op)}`") from None
        name = self.made[key] = self.helper_name("op")
        depth, j = 0, i + 3
        for j in range(i + 3, len(toks)):
            depth += {"(": 1, ")": -1}.get(toks[j], 0)
            if depth == 0:
                break
        k = toks.index("{", j)
        quals = [t for t in toks[j + 1:k] if t not in ("const", "noexcept")]
        head = [t for t in toks[:i] if t not in ("static", "inline", "constexpr")]
        self.add_before_function(" ".join(head + [name] + toks[i + 3:j + 1] + quals + toks[k:]))
        return name

    def _adjacent(self, name, targs, args) -> str:
        """cub::BlockAdjacentDifference, as CUB writes it (cub/block/block_adjacent_difference.cuh): each thread's
        last (SubtractLeft) or first (SubtractRight) item in a shared array, a barrier, then the differences
        with the user's operation; ITEMS_PER_THREAD from the arrays' type, the block from the template
        arguments. A barrier before the store too, so a second call (a loop) cannot overwrite items a slower
        thread still reads (CUB leaves that barrier to the caller)."""
        nargs = len(args)
        if nargs not in _ADJ[name]:
            raise _Refuse(f"`cub::BlockAdjacentDifference::{name}` with {nargs} arguments")
        t = targs[0]
        if "type-parameter" in t:
            raise _Refuse(f"`cub::BlockAdjacentDifference` of a dependent item type (`{t}`)")
        for a in args[:2]:
            if a.strip.kind != "DECL_REF_EXPR":
                raise _Refuse(f"`cub::BlockAdjacentDifference::{name}` of `{_short(a)}`: cuport lowers arrays "
                              "named by a variable")
        m = [re.search(r"\[(\d+)\]$", _canonical(a.strip).strip()) for a in args[:2]]
        if not all(m) or m[0].group(1) != m[1].group(1):
            raise _Refuse(f"`cub::BlockAdjacentDifference::{name}` with items per thread cuport cannot read "
                          f"(`{_canonical(args[0].strip)}`)")
        items = int(m[0].group(1))
        dims = [d.strip() for d in (targs[1:4] + ["1", "1"])[:3]]
        if not all(re.fullmatch(r"\w+", d) for d in dims):
            raise _Refuse(f"`cub::BlockAdjacentDifference` with a block size cuport cannot read (`{targs}`)")
        threads = " * ".join(dims)
        f = self._callable(args[2], f"cub::BlockAdjacentDifference::{name}")
        inp, out = self.text(args[0]), self.text(args[1])
        key = (self.fn.body.start, "adjacent", t, threads)
        arr = self.made.get(key)
        if arr is None:     # one array per item type and block in a function: the barrier before the store
            arr = self.made[key] = self.helper_name("adjacent")     # makes reusing it safe
            self.add_to_body(f"__shared__ {t} {arr}[{threads}];")
        last, tid, it = items - 1, LIN, "cuport_item"
        extra = f"{t} cuport_x = {self.text(args[3])}; " if nargs == 4 and "Partial" not in name else \
            f"int cuport_valid = {self.text(args[3])}; " if nargs == 4 else ""
        pre = f"do {{ {extra}int cuport_t = {tid}; __syncthreads(); "
        if name.startswith("SubtractLeft"):
            pre += f"{arr}[cuport_t] = {inp}[{last}]; __syncthreads(); "
            step = f"{out}[{it}] = {f}({inp}[{it}], {inp}[{it} - 1]);"
            loop = f"for (int {it} = {last}; {it} > 0; {it}--) "
            first = f"{out}[0] = {f}({inp}[0], {arr}[cuport_t - 1]);"
            if name == "SubtractLeft":
                edge = f"{out}[0] = {f}({inp}[0], cuport_x);" if nargs == 4 else f"{out}[0] = {inp}[0];"
                body = f"{loop}{step} if (cuport_t == 0) {edge} else {first}"
            else:
                body = (f"if ((cuport_t + 1) * {items} <= cuport_valid) {{ {loop}{step} }} else {{ {loop}"
                        f"{{ if ((int)cuport_t * {items} + {it} < cuport_valid) {step} else {out}[{it}] = "
                        f"{inp}[{it}]; }} }} if (cuport_t == 0 || cuport_valid <= (int)cuport_t * {items}) "
                        f"{out}[0] = {inp}[0]; else {first}")
        else:
            pre += f"{arr}[cuport_t] = {inp}[0]; __syncthreads(); "
            step = f"{out}[{it}] = {f}({inp}[{it}], {inp}[{it} + 1]);"
            loop = f"for (int {it} = 0; {it} < {last}; {it}++) "
            lastd = f"{out}[{last}] = {f}({inp}[{last}], {arr}[cuport_t + 1]);"
            if name == "SubtractRight":
                succ = f"{out}[{last}] = {f}({inp}[{last}], cuport_x);" if nargs == 4 else \
                    f"{out}[{last}] = {inp}[{last}];"
                body = f"{loop}{step} if (cuport_t == ({threads}) - 1) {succ} else {lastd}"
            else:
                body = (f"if ((int)(cuport_t + 1) * {items} < cuport_valid) {{ {loop}{step} {lastd} }} else {{ "
                        f"for (int {it} = 0; {it} < {items}; {it}++) {{ if ((int)cuport_t * {items} + {it} < "
                        f"cuport_valid - 1) {step} else {out}[{it}] = {inp}[{it}]; }} }}")
        return pre + body + " } while (0)"


class _Refuse(Exception):
    pass


# CUB's functors (declared without a body in the shim): their operation
_CUB_FUNCTORS = {"Difference": "a - b", "Sum": "a + b", "Max": "(a < b) ? b : a", "Min": "(b < a) ? b : a"}

# the forms of cub::BlockAdjacentDifference lowered: name -> arguments (the 4th: tile predecessor / successor
# item, or valid_items for the partial tiles)
_ADJ = {"SubtractLeft": (3, 4), "SubtractRight": (3, 4), "SubtractLeftPartialTile": (4,),
        "SubtractRightPartialTile": (4,)}


def _value_type(v) -> str:
    t = _canonical(v.strip)
    return re.sub(r"^(const\s+|volatile\s+|struct\s+)+", "", t).rstrip("& ").strip()


_SCALAR = re.compile(r"(const\s+)?((unsigned|signed)\s+)?(int|short|char|long|long long|float|double|bool|"
                     r"unsigned|__half|half)(\s+int)?")


def _scalar_fields(v):
    """[] for a scalar value, the field names of a struct of scalar fields, else None."""
    try:
        ty = v.strip._cursor.type.get_canonical()
    except Exception:
        return None
    if ty.kind.name not in ("RECORD", "ELABORATED"):
        return [] if _SCALAR.fullmatch(ty.spelling.strip()) else None
    decl = ty.get_declaration()
    names = []
    for c in decl.get_children():
        if c.kind.name == "CXX_BASE_SPECIFIER":
            return None
        if c.kind.name == "FIELD_DECL":
            if c.is_bitfield() or not _SCALAR.fullmatch(c.type.get_canonical().spelling.strip()):
                return None
            names.append(c.spelling)
    return names or None


def _made_by_coalesced_threads(d) -> bool:
    """`d` is a coalesced_group variable initialised by `cg::coalesced_threads()` (not a copy of another group)."""
    if d.kind != "VAR_DECL" or group_kind(d) != ("coalesced_group", None):
        return False
    calls = [c for c in d.walk() if c.kind == "CALL_EXPR" and c.spelling not in ("", "coalesced_group")]
    return len(calls) == 1 and calls[0].spelling == "coalesced_threads"


def _mask_name(d) -> str:
    return f"cuport_ballot_{d.spelling}"


def _canonical(n) -> str:
    try:
        return n._cursor.type.get_canonical().spelling
    except Exception:
        return n.type or ""


def _cub_type(n):
    """(class, template argument texts) of a cub:: collective object or TempStorage, else None. In a template
    the canonical type loses its namespace (`BlockReduce<type-parameter-0-0, 256, ...>`): the typedef or alias
    it was named through must then name cub::."""
    t = re.sub(r"^(const\s+)?(typename\s+)?", "", _canonical(n))
    m = _CUB_TYPE.match(t)
    if m is None:
        return None
    if not t.startswith("cub::") and not any(_names_cub(c) for c in [n._cursor] + [
            c for c in n._cursor.get_children() if c.kind.name == "TYPE_REF"]):
        return None
    from porter.frontend.lexer import split_top_level
    args = m.group(2)
    if ">::" in args:
        args = args[:args.rindex(">::")]
    return m.group(1), [a.strip() for a in split_top_level(args)]


def _names_cub(cursor) -> bool:
    try:
        d = cursor.type.get_declaration() if cursor.kind.name != "TYPE_REF" else cursor.referenced
        return d is not None and d.kind.name in ("TYPEDEF_DECL", "TYPE_ALIAS_DECL") and \
            d.underlying_typedef_type.spelling.lstrip(":").startswith("cub::")
    except Exception:
        return False


def _op_name(a) -> str:
    """`plus` of `cg::plus<float>()`, `Max` of `cub::Max()`: the unqualified class of a functor argument."""
    t = _canonical(a.strip)
    t = re.sub(r"^(const\s+)?(struct\s+)?", "", t)
    return re.sub(r"<.*$", "", t).split("::")[-1].strip()


def _functor_op(model, a):
    """add / max / min when the argument's class has one operator() whose body is `return a + b;`,
    `return a > b ? a : b;` or `return a < b ? a : b;` (either operand order); else None."""
    try:
        decl = a.strip._cursor.type.get_canonical().get_declaration()
    except Exception:
        return None
    bodies = []
    for c in decl.walk_preorder():
        if c.kind.name in ("CXX_METHOD", "FUNCTION_TEMPLATE") and c.spelling == "operator()":
            bodies.append(c)
    if len(bodies) != 1:
        return None
    params = [p.spelling for p in bodies[0].get_children() if p.kind.name == "PARM_DECL"]
    if len(params) != 2:
        return None
    ret = [c for c in bodies[0].walk_preorder() if c.kind.name == "RETURN_STMT"]
    if len(ret) != 1:
        return None
    toks = "".join(t.spelling for t in ret[0].get_tokens())
    x, y = params
    toks = toks.removeprefix("return").rstrip(";")
    toks = re.sub(r"\((\w+)\)", r"\1", toks)
    for a_, b_ in ((x, y), (y, x)):
        if toks in (f"{a_}+{b_}",):
            return "add"
        if toks in (f"{a_}>{b_}?{a_}:{b_}", f"{a_}<{b_}?{b_}:{a_}", f"{a_}>={b_}?{a_}:{b_}"):
            return "max"
        if toks in (f"{a_}<{b_}?{a_}:{b_}", f"{a_}>{b_}?{b_}:{a_}", f"{a_}<={b_}?{a_}:{b_}"):
            return "min"
    return None


def _kind_text(g) -> str:
    kind, n = g
    return {"tile": f"a tile of {n} threads", "thread_block": "a thread block", "grid_group": "a grid group",
            "coalesced_group": "a coalesced group", "thread_group": "a run-time tile",
            "cluster_group": "a cluster"}.get(kind, kind)


def _what(d) -> str:
    g = group_kind(d)
    return f"the group `{d.spelling}` ({_kind_text(g)})" if g else f"the CUB storage `{d.spelling}`"


def _short(n, limit=60) -> str:
    t = " ".join(n.text.split())
    return t if len(t) <= limit else t[:limit - 3] + "..."


def check(em, fn) -> None:
    """Refuse (CP907) the constructs `lower` left in function `fn` of the kernel being emitted."""
    for s, e, msg in getattr(em.u, "coop_refusals", ()):
        if fn.node.start <= s < fn.node.end:
            from porter.translate.kernel.target import TranslationError
            raise TranslationError("CP907", (s, e), msg)


# ---------------------------------------------------------------------- the lowered builtins, per target

def call(em, name, n, args):
    """`__cuport_block_reduce_*` and `__cuport_coalesced_*` (what `lower` wrote) as an E, else None."""
    if name.startswith("__cuport_block_reduce_"):
        return _block_reduce(em, name[len("__cuport_block_reduce_"):], n, args)
    if name.startswith("__cuport_coalesced_"):
        return _coalesced(em, name[len("__cuport_coalesced_"):], n, args)
    return None


_COMBINE = {"add": "{a} + {b}", "max": "({b} > {a}) ? {b} : {a}", "min": "({b} < {a}) ? {b} : {a}"}


def _block_reduce(em, op, n, args):
    """CUB's BlockReduce (every thread of the block calls it): the values in shared memory, a tree of pairwise
    combinations with a work-group barrier per level, the result read by every thread. No subgroup operation:
    exact at any subgroup size, and on OpenCL without sub-groups."""
    from porter.translate.kernel import ctype as ct
    from porter.translate.kernel.ctype import I32
    from porter.translate.kernel.target import E
    v = em.x(args[0])
    t = v.ct.unqualified()
    if t.kind != "scalar":
        em.fail(n, f"a CUB block reduction of `{ct.spell(t)}` (cuport reduces scalars)")
    if t.bits < 32 and not t.is_float:
        t = ct.promote(t)
        v = em.conv(v, t)
    threads = args[1].value
    if not isinstance(threads, int) or threads < 1 or threads > 1024:
        em.fail(args[1], f"a CUB block reduction over `{args[1].text}` threads")
    nv = em.conv(em.x(args[2]), I32).text if len(args) > 2 else str(threads)
    half = 1 << max(0, (threads - 1).bit_length() - 1)        # the largest power of two below the block
    tn = em.t.type_name(t, em)
    em.has_barrier = True
    bar = " ".join(em.t.block_barrier(em, False))
    comb = _COMBINE[op].format(a="s[t]", b="s[t + h]")
    hname = f"cuport_block_reduce_{op}_{tn}_{threads}"
    store = f"cuport_cub_{tn}_{threads}"
    if em.t.name == "glsl":
        em.shared.setdefault(store, {"name": store, "type": ct.array(t, (threads,)), "elem": t, "extern": False,
                                     "node": None, "dims": (threads,)})
        tid, head, call_extra = "gl_LocalInvocationIndex", f"{tn} {hname}({tn} v, int nv)", ""
        comb = comb.replace("s[", f"{store}[")
        s_ = store
    else:
        em.t.use_local(em, store)      # in a device function: declared by the kernel, passed down
        em.shared.setdefault(store, {"name": store, "type": ct.array(t, (threads,)), "elem": t, "extern": False,
                                     "node": None, "dims": (threads,)})
        tid = "(uint)(get_local_id(0) + get_local_size(0) * (get_local_id(1) + get_local_size(1) * get_local_id(2)))"
        head, call_extra, s_ = f"{tn} {hname}({tn} v, int nv, __local {tn}* s)", f", {store}", "s"
    em.helper(hname, f"""{head}
{{
    // cub::BlockReduce: every thread of the block calls it; a shared-memory tree, exact at any subgroup size
    uint t = {tid};
    int n = min(nv, {threads});
    {bar}  // an earlier call's readers are done with the slots
    if (t < {threads}u) {s_}[t] = v;
    {bar}
    for (uint h = {half}u; h > 0u; h >>= 1) {{
        if (t < h && (int)(t + h) < n) {s_}[t] = {comb};
        {bar}
    }}
    return {s_}[0];
}}""".replace("(int)(", "int(" if em.t.name == "glsl" else "(int)("))
    return E(f"{hname}({v.text}, {nv}{call_extra})", t)


def _coalesced(em, what, n, args):
    """A coalesced group from the ballot `lower` kept in a variable where the group was made (args[0]): in GLSL
    rank = the members below this lane, size = the members, shfl(v, k) reads the lane of the k-th member. A
    ballot at each use would see only the threads active there (`if (g.thread_rank() == 0) atomicAdd(ctr,
    g.size())` counted 1). On OpenCL's one-lane warps the group is the thread alone."""
    from porter.translate.kernel import ctype as ct
    from porter.translate.kernel.ctype import U32
    from porter.translate.kernel.target import E
    if em.t.name == "glsl":
        m = em.x(args[0])
        if m.tt != em.t.ballot_type:
            em.fail(n, "a coalesced group whose ballot is not kept in a variable")
        em.need("GL_KHR_shader_subgroup_ballot", subgroup="ballot")
        if what == "rank":
            return E(f"subgroupBallotExclusiveBitCount({m.text})", U32)
        if what == "size":
            return E(f"subgroupBallotBitCount({m.text})", U32)
        v = em.t.shuffle_operand(em, args[1])
        t = v.ct.unqualified()
        if t.kind != "scalar":
            em.fail(n, f"a coalesced group's `shfl` of `{ct.spell(t)}` (cuport shuffles scalars)")
        em.need("GL_KHR_shader_subgroup_shuffle", subgroup="shuffle")
        if args[2].value == 0:
            lane = f"subgroupBallotFindLSB({m.text})"       # the group's first member
        else:
            k = em.conv(em.x(args[2]), U32)
            em.helper("cuport_coalesced_lane", """uint cuport_coalesced_lane(uvec4 m, uint k)
{
    // the lane of the group's member of rank k (CUDA leaves k >= size undefined: the caller's own lane)
    for (uint l = 0u; l < gl_SubgroupSize; ++l) {
        if (subgroupBallotBitExtract(m, l)) {
            if (k == 0u) return l;
            k -= 1u;
        }
    }
    return gl_SubgroupInvocationID;
}""")
            lane = f"cuport_coalesced_lane({m.text}, {k.text})"
        return E(f"subgroupShuffle({v.text}, {lane})", t)
    if what == "shfl" and args[2].value != 0 and not _pure(em, args[2]):
        # the group is the thread alone: every rank CUDA defines (below the size, 1) is the thread's own
        em.fail(n, f"a coalesced group's `shfl` from rank `{args[2].text}` (with side effects) on one-lane warps")
    if em.t.lane_id(em) is not None:
        em.fail(n, "a coalesced group with cl_khr_subgroups (OpenCL 1.2 sub-group functions need every thread "
                   "of the sub-group; a coalesced group is the threads active in divergent code)")
    em.t._emulate(em, n)
    if what == "rank":
        return E("0u", U32)
    if what == "size":
        return E("1u", U32)
    v = em.x(args[1])
    return E(v.text, v.ct, v.prec, v.tt)


def _pure(em, n) -> bool:
    """No side effects in `n`, so it may be left unevaluated (a coalesced group's rank and size are pure)."""
    for x in n.walk():
        if x.kind == "CALL_EXPR" and not em.callee_name(x).startswith("__cuport_coalesced_") or \
                x.kind == "COMPOUND_ASSIGNMENT_OPERATOR" or x.kind == "BINARY_OPERATOR" and x.op == "=" or \
                x.kind == "UNARY_OPERATOR" and x.op in ("++", "--", "post++", "post--"):
            return False
    return True
