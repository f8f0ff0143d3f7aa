"""Spec-less verify: a verify Case derived from a kernel's signature and its launch site in the host code.

What is read from the source (the file with the project headers it includes inlined, as the translators read it;
derive_units.py):
- parameters (derive_types.py): pointers become arrays (`const T*` in; written only: out; written and read:
  inout; derive_body.py), scalars of float, double, 32/64-bit integers and bool become scalars; buffers of half,
  char, short and of structs made of one scalar type are flat buffers of that type; buffers of other structs
  and structs / vectors by value (float3, NoiseParams) are spec structs with clang's layout (random fields);
  a union, a pointer member or a bit-field is a problem;
- the first launch site `k<<<grid, block, shmem>>>(args)` (derive_sizes.py): grid, block and dynamic shared
  memory become expressions of size names, each pointer argument's length comes from its `cudaMalloc(&p, bytes)`
  (bytes / sizeof(element); or a host helper's that returns the pointer or is given its address; a pointer passed
  from an offset, `p + k` / `&p[k]`, is the allocation less the offset), an input the host zeroes with cudaMemset
  before the launch starts as zeros; a host wrapper's parameters come from its call, in this file or the one other
  file of the program that calls it; a local assigned after its declaration is read where the assignment reaches
  the launch on every path (derive_values._reaching);
- size names: kernel integer parameters that receive a host variable directly, and host variables initialised
  with constants (`const int n = 1 << 20`); a variable read at run time (`atoi(argv[1])`, an array's or a
  container's element the program fills) gets 1000 (256 in a block), with a note; a size the program gives that
  only sizes buffers (not the launch, nor a kernel argument) is written into their shapes, since the kernel's
  extents do not follow it (_fixed_extents). Without any launch site in its file, the one sibling file that
  launches the kernel gives it; without any, a kernel with exactly one integer parameter is assumed 1-D (grid
  ceil(n / 256), block 256, every array of n elements), with a note.
- a template kernel gives one case per instance the program launches (translate/templates.py's instances).
- a template kernel instantiated by the file that includes its file derives through that file (sampling).
One buffer variable given to two pointer parameters is one array bound to both (Case.alias), unless one is
`__restrict__` and the buffer is written (undefined in CUDA) or they point to it at different offsets.
What cannot be derived (such aliasing, a buffer allocated out of sight, memory indexed with values
read from the kernel's inputs, a template never launched) is a Problem: spec-less verify refuses the kernel and
points to `cuport verify --init`, whose skeleton marks it TODO with a placeholder that loads and runs.
"""
from __future__ import annotations

import re
import textwrap
from dataclasses import dataclass, field
from pathlib import Path

# the layers under this file: types -> sizes (host expressions) -> body (what the kernel does); units (files)
from porter.verify.derive_body import _communicates, _pointer_use, claimed_stores, index_uses
from porter.verify.derive_sizes import (HEURISTIC_BLOCK, HEURISTIC_SIZE, Underivable, Unknown, _allocation,
                                        _at_launch, _bare, _bind_cases, _computed, _dims_text, _elements, _expressible,
                                        _first_launch_note, _grid_text, _has_var_refs, _loop_start, _lost_write,
                                        _mark_inline, _offset_buffer, _past_offset, _read_back, _run_time_value, _Sym,
                                        _through_wrappers, _tidy, _unreached, _wrapper_block, _zeroed)
from porter.verify.derive_types import (_BYTES, _canon, _dtype, _flat_pointee, _flat_record, _subst, named_type,
                                        resolved_arg)
from porter.verify.derive_units import _Hosts, _remapped, _remapped_line, _unit_model, program_flags

DIFF_TOL = {"f32": (1e-4, 1e-5), "f64": (1e-10, 1e-12),   # translations against each other (sum order differs)
            "f16": (1e-2, 1e-3)}                           # half: one rounding of 2^-11 apart


@dataclass
class Problem:
    what: str                  # parameter name, or "grid" / "block" / "template" / "launch"
    message: str


@dataclass
class PDesc:
    name: str
    dtype: str
    shape: str | None = None   # arrays: element count expression
    direction: str = ""        # arrays: in / out / inout
    default: str | None = None  # scalars: expression, None when the size of the same name gives it
    init: tuple | None = None  # (Init kind, args) for arrays

    def text(self) -> str:
        if self.shape is not None:
            return f"{self.name}: {self.dtype}[{self.shape}] {self.direction}"
        return f"{self.name}: {self.dtype}" + (f" = {self.default}" if self.default is not None else "")


@dataclass
class Derived:
    path: str
    kernel: str
    line: int
    params: list[PDesc] = field(default_factory=list)
    grid: str = "1"
    block: str = "1"
    shared: str = "0"
    sizes: dict = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    defined_in: str | None = None   # the header defining a kernel derived with the file that includes it
    structs: dict = field(default_factory=dict)   # spec structs the signature names {name: fields}
    unordered: list = field(default_factory=list)  # outputs written at positions claimed by atomics (multisets)
    alias: dict = field(default_factory=dict)     # {parameter: parameter}: one buffer given to both (Case.alias)
    asserts: bool = False      # a device assert the translations check: its outcome is observable (asserts.py)

    @property
    def signature(self) -> str:
        return ", ".join(p.text() for p in self.params)

    def tol_dtypes(self) -> list[str]:
        """The dtypes compared with a tolerance: the parameters' and their structs' fields'."""
        codes = {p.dtype for p in self.params} | {t for text in self.structs.values()
                                                   for t in re.findall(r":\s*(\w+)", text)}
        return sorted(c for c in codes if c in DIFF_TOL)

    def _flags(self) -> dict:
        """The program's Makefile -I / -D (derive_units.program_flags): the translation reads the file as the
        derivation did."""
        dirs, defines = program_flags(self.path)
        return {**({"include_dirs": dirs} if dirs else {}), **({"defines": defines} if defines else {})}

    def as_dict(self, portability_fixes: bool = False) -> dict:
        """The JSON a worker rebuilds the Case from (case_from_dict)."""
        return {"path": str(Path(self.path).resolve()), "kernel": self.kernel, "signature": self.signature,
                "grid": self.grid, "block": self.block, "shared_mem": self.shared, "sizes": [self.sizes],
                "init": {p.name: list(p.init) for p in self.params if p.init},
                "tol": {t: DIFF_TOL[t] for t in self.tol_dtypes()}, "structs": dict(self.structs),
                **({"alias": dict(self.alias)} if self.alias else {}),
                "translate": {**({} if portability_fixes else {"portability_fixes": False}), **self._flags()},
                **({"unordered": list(self.unordered)} if self.unordered else {}),
                **({"asserts": True} if self.asserts else {})}


def case_from_dict(d: dict):
    """A differential Case (reference=None) from Derived.as_dict()."""
    from porter.verify.spec import Case, Init, Tol
    path = Path(d["path"])
    case = Case(source=path.name, kernel=d["kernel"], signature=d["signature"], grid=d["grid"], block=d["block"],
                reference=None, sizes=[dict(s) for s in d["sizes"]], shared_mem=d.get("shared_mem", 0),
                init={k: Init(v[0], tuple(v[1])) for k, v in d.get("init", {}).items()},
                tol={k: Tol(*v) for k, v in d.get("tol", {}).items()}, translate=dict(d.get("translate", {})),
                structs=dict(d.get("structs", {})), unordered=tuple(d.get("unordered", ())),
                alias=dict(d.get("alias", {})))
    case.spec_path, case.index, case.derived = str(path), 0, d
    return case


# ---------------------------------------------------------------------------------------------------------------
# one kernel

MAX_INSTANCES = 4                # instantiations of one template kernel derived (the first ones found)


def derive_kernels(model, fn, hosts=None) -> list[Derived]:
    """A Derived for a kernel; for a template kernel, one per instantiation the program launches (the launch
    it comes from gives its sizes), or one with a "template" problem when none is found."""
    if not fn.is_template:
        return [derive_kernel(model, fn, hosts=hosts)]
    from porter.translate.templates import instances
    try:
        found = [i for i in instances(model, fn) if i.origin in ("launch", "host template")]
    except Exception:                   # the instance search met a tree it does not know: no instance
        found = []
    if not found:
        d = derive_kernel(model, fn, hosts=hosts)
        d.problems.insert(0, Problem("template", f"`{fn.name}` is a template launched with no template arguments "
                                                 "found: they are needed (Case(kernel=\"name<args>\"))"))
        return [d]
    return [derive_kernel(model, fn, i, hosts=hosts) for i in found[:MAX_INSTANCES]]


def derive_kernel(model, fn, inst=None, host=None, hosts=None) -> Derived:
    """One kernel (one instance `inst` of a template kernel, translate/templates.py's Instance). `host`: the
    model of another file of the program whose launch of the kernel gives the sizes (the kernel's own file has
    none); the kernel's body is still read from `model`. `hosts` (derive_units._Hosts): the program's other
    files, where a host wrapper of this file is called from (its buffers, its sizes)."""
    from porter.analysis.launch import site_kernel
    name = f"{fn.name}<{inst.label}>" if inst is not None else fn.name
    d = Derived(model.path, name, _line(model, fn.node))
    kmodel, model = model, host or model
    from porter.translate.kernel.asserts import kernel_asserts
    d.asserts = kernel_asserts(kmodel, fn)
    # an error in a header the Makefile's -I brings in has no offset in this file
    broken = [e for e in getattr(kmodel, "errors", []) if e.offset is not None and
              fn.node.start <= e.offset < fn.node.end and
              (not e.file or Path(e.file).name == Path(kmodel.path).name)]
    if broken:                          # `fp *x` with fp's typedef out of sight is read as int: nothing to trust
        e = broken[0]
        d.problems.append(Problem("parse", f"clang could not parse the kernel (line {e.line}: {e.message}): its "
                                           "parameter types are not known"))
    sites = [s for s in model.launches if site_kernel(s) == fn.name and s.block is not None]
    if host is not None and sites:
        d.notes.append(f"launched in {Path(host.path).name}: its launch at line {_line(host, sites[0].node)} "
                       "gives the sizes")
    env = {}
    if inst is not None and inst.node is not None:
        sites = [s for s in sites if s.node is inst.node] or sites
    elif inst is None:                  # a launch in a templated host function is read with no parameters bound
        sites.sort(key=lambda s: s.function is not None and s.function.is_template)
    elif inst.host is not None:
        # the host template's arguments as written (`run<64>(`): integers as ints, types as their spelling
        sites = [inst.host[0]]
        env = {k: int(v) if isinstance(v, str) and re.fullmatch(r"-?\d+", v.strip()) else v
               for k, v in inst.host[1].items()}
    site = sites[0] if sites else None
    sym = _Sym(model, site, fn, env)
    sym.hosts = hosts
    if inst is not None:                # quicksort's `uint`: its scalar type
        sym.types = {k: resolved_arg(kmodel, v) for k, v in inst.args.items()}
    args = list(site.args) if site is not None else []
    if site is not None and len(args) != len(fn.params):
        d.problems.append(Problem("launch", f"the launch at line {_line(model, site.node)} passes {len(args)} "
                                            f"arguments for {len(fn.params)} parameters (default arguments?)"))
        args = []
    if site is not None:
        _from_site(model, fn, site, args, sym, d)
        if len(sites) > 1:
            d.notes.append(f"{len(sites)} launch sites: the one at line {_line(model, site.node)} is used")
    else:
        _without_site(fn, sym, d)
    seen_buffers: dict[int, str] = {}
    elementwise = not _communicates(kmodel, fn) if fn.body is not None else False
    for i, p in enumerate(fn.params):
        a = args[i] if i < len(args) else None
        if p.is_pointer:
            d.params.append(_array(model, fn, sym, d, p, a, seen_buffers, elementwise))
        else:
            d.params.append(_scalar(sym, d, p, a))
    _bind_aliases(d)
    if fn.body is not None:
        _index_ranges(kmodel, fn, sym, d, args)
        _unordered(kmodel, fn, d)
    d.sizes = dict(sym.sizes)
    d.problems = list({(p.what, p.message): p for p in d.problems}.values())   # one cause met twice: said once
    if not d.problems:
        d.problems += [Problem(w, m) for w, m in _unreached(sym, d.grid, d.block, d.sizes)]
    d.notes += sym.notes
    _fixed_extents(d)
    return d


def _fixed_extents(d: Derived) -> None:
    """A size the program gives (a constant, a command-line default) that only sizes buffers and dynamic shared
    memory: neither the launch, a scalar argument nor an index range scales with it, so the kernel's extents do
    not follow it (ldpc's `int memorySize_dt_gpu = MCW * CW * ROW * BLK_COL * sizeof(float)` under a `(BLK_ROW,
    MCW)` grid, indexed with macros): a smaller value makes buffers the kernel reads past, as a macro in its place
    would not. Its value is written into the shapes, a size no longer (cap_sizes cannot halve it). A size that
    is a guess (`--sizes n=N` in its note) stays one."""
    from porter.verify.notation import parse_expr
    used = " ".join([d.grid, d.block] + [p.default or "" for p in d.params if p.shape is None] +
                    [str(a) for p in d.params if p.init for a in p.init[1]])
    scalars = {p.name for p in d.params if p.shape is None and p.default is None}
    fixed = {k: v for k, v in d.sizes.items() if k not in scalars and not re.search(rf"\b{re.escape(k)}\b", used)
             and not any(f"--sizes {k}=N" in n for n in d.notes)}
    if not fixed:
        return
    pattern = re.compile(r"\b(" + "|".join(map(re.escape, fixed)) + r")\b")
    for p in d.params:
        if p.shape is not None and pattern.search(p.shape):
            shape = pattern.sub(lambda m: str(fixed[m.group(1)]), p.shape)
            try:                        # `8847360 // 4`: the element count
                shape = str(parse_expr(shape).eval({}))
            except Exception:           # noqa: BLE001 -- a shape notation does not fold: kept as written
                pass
            p.shape = shape
    if pattern.search(d.shared):        # dynamic shared memory the kernel indexes as its block does
        d.shared = _tidy(pattern.sub(lambda m: str(fixed[m.group(1)]), d.shared))
    for k in fixed:
        del d.sizes[k]
    d.notes.append(f"{', '.join(f'`{k}` = {v}' for k, v in fixed.items())} only "
                   f"size{'s' if len(fixed) > 1 else ''} buffers or shared memory (not the launch, nor a kernel "
                   "argument): the kernel's extents do not follow, so the program's value is kept")


INDEX_GUESS = 2                  # values 0 and 1 for indices whose bound nothing says


def _index_ranges(kmodel, fn, sym: _Sym, d: Derived, args: list) -> None:
    """Inputs whose values index memory (`logits[ids[t]]`, `X[row * D + label]`, `bins[in[i] % 16]`) are drawn
    from a range that keeps the indices in bounds: the host's own `h[i] = rand() % E`, else the bound the kernel's
    indexing implies (the extent indexed, the row length), else >= 0 for `v % n`, else 0 and 1. The ranges are
    assumptions about the program's data: `--sanitize` (Oclgrind) checks them."""
    by_id = {id(p.node): (i, p) for i, p in enumerate(fn.params) if p.is_pointer}
    uses = index_uses(fn, set(by_id))
    if not uses:
        return
    descs = {p.name: p for p in d.params}
    bounds: dict[int, list] = {}
    for u in uses:
        for src in u.sources:
            bounds.setdefault(src, []).append(_index_bound(kmodel, fn, descs, u))
    for src, found in bounds.items():
        i, p = by_id[src]
        desc = descs.get(p.name)
        if desc is None or desc.direction == "out":
            continue                    # written before it is read: not an input
        host = _host_range(sym, args[i]) if i < len(args) else None
        known = sorted({b for b in found if b not in (None, "nonneg")} - ({host[0]} if host else set()))
        shown = next(u.text for u in uses if src in u.sources)
        if host is not None:
            expr, why = (f"min({host[0]}, {', '.join(known)})" if known else host[0]), f"the host's `{host[1]}`"
        elif known:
            expr, why = (f"min({', '.join(known)})" if len(known) > 1 else known[0]), f"`{shown}` stays in bounds"
        elif all(b == "nonneg" for b in found):
            desc.init = ("uniform", (0.0, 1.0) if desc.dtype[0] == "f" else (0, 100))
            d.notes.append(f"'{p.name}' indexes memory (`{shown}`): non-negative values (checked with --sanitize)")
            continue
        else:
            expr, why = str(INDEX_GUESS), "nothing says its bound: 0 and 1 assumed"
        desc.init = ("below", (expr,))
        d.notes.append(f"'{p.name}' indexes memory (`{shown}`): values in [0, {expr}), {why} (checked with "
                       "--sanitize)")


def _unordered(kmodel, fn, d: Derived) -> None:
    """Outputs written at positions claimed by atomics (`dst[atomicAdd(&n, 1)] = v`): which thread gets which
    position is the scheduler's choice, so two correct runs order the elements differently; they are compared as
    multisets (spec.Case.unordered). A buffer of vectors read as a flat buffer stays compared position by position:
    sorting its scalars would pull its elements apart."""
    descs = {p.name: p for p in d.params}
    for store in claimed_stores(kmodel, fn):
        name = store.param.spelling
        desc = descs.get(name)
        if desc is None or desc.shape is None or desc.direction not in ("out", "inout") or name in d.unordered:
            continue
        p = next((q for q in fn.params if q.node is store.param), None)
        if p is not None and _flat_pointee(p) is not None and _dtype(p.pointee) is None:
            d.notes.append(f"'{name}' is written at positions claimed by an atomic (`{store.text}`) but is a flat "
                           "buffer of vectors: compared position by position")
            continue
        d.unordered.append(name)
        d.notes.append(f"'{name}' is written at positions claimed by an atomic (`{store.text}`): their order "
                       "depends on scheduling, so it is compared as a multiset")


def _index_bound(kmodel, fn, descs: dict, u) -> str | None:
    """The exclusive bound an index use puts on the loaded value, in the spec's names; "nonneg"; or None."""
    from porter.analysis.launch import fold_int
    if u.form == "nonneg":
        return "nonneg"
    if u.form == "whole" and u.base is not None and u.base.kind == "DECL_REF_EXPR" and u.base.ref is not None:
        q = next((q for q in fn.params if q.node is u.base.ref), None)
        if q is not None and q.is_pointer and q.name in descs:
            return descs[q.name].shape  # `logits[ids[t]]`: below the extent of logits
        m = re.search(r"\[(\d+)\]\s*$", u.base.ref.type or "")
        return m.group(1) if m else None   # a fixed array: `__shared__ int s[256]`, a __constant__ table
    if u.form == "plus":
        for f in u.factor or []:        # `row * D + label`: the factor that is a size parameter, else a constant
            if f.kind == "DECL_REF_EXPR" and any(q.node is f.ref and not q.is_pointer for q in fn.params):
                return f.spelling
        for f in u.factor or []:
            v = fold_int(kmodel, f)
            if isinstance(v, int) and v > 0:
                return str(v)
    return None


_MEMCPY = ("cudaMemcpy", "cudaMemcpyAsync", "hipMemcpy", "hipMemcpyAsync")
_RAND = ("rand", "random", "lrand48", "rand_r")


def _host_range(sym: _Sym, arg) -> tuple[str, str] | None:
    """(E, text) when the host fills the buffer passed as `arg` from `h[i] = rand() % E` (copied in with
    cudaMemcpy): the program's own range of index values."""
    b = _through_wrappers(sym, _bare(arg)) if arg is not None else None
    if b is None or b.kind != "DECL_REF_EXPR" or b.ref is None:
        return None
    hosts = set()
    for call in sym.model.of_kind("CALL_EXPR"):
        if call.spelling in _MEMCPY and len(call.args()) >= 2:
            dst, src = _bare(call.args()[0]), _bare(call.args()[1])
            if dst.kind == "DECL_REF_EXPR" and dst.ref is b.ref:
                if src.kind in ("CALL_EXPR", "MEMBER_REF_EXPR"):    # `h.data()`
                    src = next((c for c in src.walk() if c.kind == "DECL_REF_EXPR"), src)
                if src.kind == "DECL_REF_EXPR" and src.ref is not None:
                    hosts.add(id(src.ref))
    if not hosts:
        return None
    for w in sym.model.of_kind("BINARY_OPERATOR"):
        if w.op != "=" or len(w.children) != 2:
            continue
        lhs, rhs = _bare(w.children[0]), _bare(w.children[1])
        if lhs.kind != "ARRAY_SUBSCRIPT_EXPR" or not lhs.children:
            continue
        base = _bare(lhs.children[0])
        if base.kind != "DECL_REF_EXPR" or base.ref is None or id(base.ref) not in hosts:
            continue
        if rhs.kind == "BINARY_OPERATOR" and rhs.op == "%" and len(rhs.children) == 2 and any(
                c.kind == "CALL_EXPR" and c.spelling in _RAND for c in rhs.children[0].walk()):
            try:
                return sym.expr(rhs.children[1]), " ".join(w.text.split())
            except Underivable:
                return None
    return None


def _is_int(p) -> bool:
    return not p.is_pointer and _dtype(_canon(p)) in ("i32", "u32", "i64", "u64")


def _from_site(model, fn, site, args, sym: _Sym, d: Derived) -> None:
    """Block, grid, dynamic shared memory and size names from the launch `k<<<grid, block, shmem>>>(args)`."""
    from porter.analysis.launch import fold_int, site_shapes
    sl = _line(model, site.node)
    _bind_cases(sym)                    # `case 3:` of `switch (topk)` around the launch: topk is 3 there
    shapes = site_shapes(model, site, fn)
    if sym.env:                         # the host template instantiation the kernel's instance comes from
        shapes = [s for s in shapes if all(s[1].get(k, v) == v for k, v in sym.env.items())]
    wrapped = _wrapper_block(model, sym, site.block)
    if wrapped:                         # the block the wrapper receives at the call the sizes come from
        d.block = _dims_text(wrapped)
        _mark_inline(sym, site.block)
    elif shapes and wrapped is None:
        d.block = _dims_text(shapes[0][0].dims)
        _mark_inline(sym, site.block)
    else:
        try:                            # decided at run time (argv, a wrapper's parameter): 256 assumed
            sym.fallback = HEURISTIC_BLOCK
            d.block = _grid_text(sym, site.block)
        except Underivable as e:
            d.problems.append(Problem("block", f"the block of the launch at line {sl} "
                                               f"(`{' '.join(site.block.text.split())}`) does not fold to "
                                               f"constants: {e}"))
        finally:
            sym.fallback = HEURISTIC_SIZE
    # an integer parameter that receives a host variable gives that variable's value a size name: its own
    for p, a in zip(fn.params, args):
        b = _bare(a)
        b = _through_wrappers(sym, b)
        if not _is_int(p) or b.kind != "DECL_REF_EXPR" or b.ref is None or id(b.ref) in sym.inline or \
                id(b.ref) in sym.consts:        # _bind_cases's value (_Sym.variable gives it)
            continue
        init, reach = (sym.caller_arg(b.ref), None) if b.ref.kind != "VAR_DECL" else (None, _read_back(sym, b.ref))
        if reach is not None and reach[0] == "device":
            d.problems.append(Problem(p.name, f"'{p.name}': {reach[2]}"))
            continue
        if b.ref.kind == "VAR_DECL" and reach is None:
            init = sym.definition(b.ref, b)     # the plain assignment reaching the launch ...
            if init is not None:
                _first_launch_note(sym, b.ref, b, init)
            else:                               # ... else a clamp, a loop product, the command-line default
                reach = _at_launch(sym, b.ref, b)
        if reach is not None and reach[0] == "text":
            continue                    # _Sym.variable gives its expression
        if reach is not None:
            init = reach[1]             # the value reaching the launch (None: decided at run time)
            if reach[2] and reach[2] not in sym.notes:
                sym.notes.append(reach[2])
        const = fold_int(init.model, init, sym.env) if init is not None else None
        if const is not None and not _has_var_refs(init):
            sym.size_name(b.ref, const, name=p.name)
        elif init is None and _loop_start(b.ref, b) is not None:
            continue                    # a loop counter: _Sym.variable gives its first value
        elif init is None and reach is None and _lost_write(sym, b.ref):
            sym.size_name(b.ref, HEURISTIC_SIZE, f"{{name}}: {_lost_write(sym, b.ref)}: {HEURISTIC_SIZE} assumed "
                                                 "(--sizes {name}=N)", p.name)
        else:
            try:
                known = init is not None and _expressible(sym, init)
                if init is not None and not known and _computed(sym, b.ref, init):
                    raise Unknown(_computed(sym, b.ref, init))
            except Unknown as e:        # no run-time guess stands for it
                d.problems.append(Problem(p.name, f"'{p.name}': {e}"))
                continue
            if not known:
                try:
                    value, words = _run_time_value(sym, b.ref, HEURISTIC_SIZE)
                except Unknown as e:    # --args names a file where the program reads a size
                    d.problems.append(Problem(p.name, f"'{p.name}': {e}"))
                    continue
                sym.size_name(b.ref, value, f"{{name}} is decided at run time ({sym.where(b.ref)}): {words} "
                                            "(--sizes {name}=N)", p.name)
    try:
        d.grid = _grid_text(sym, site.grid)
    except Underivable as e:
        d.problems.append(Problem("grid", f"grid of the launch at line {sl}: {e}"))
    if site.shmem is not None:
        try:
            d.shared = _tidy(sym.expr(site.shmem))
        except Underivable as e:
            d.problems.append(Problem("shared", f"dynamic shared memory at line {sl}: {e}"))


def _without_site(fn, sym: _Sym, d: Derived) -> None:
    """No launch in this file: 1-D over the one integer parameter, or a problem when there is not exactly one."""
    ints = [p for p in fn.params if _is_int(p)]
    for p in ints:
        sym.sizes[p.name] = HEURISTIC_SIZE
    n = ints[0].name if ints else "1"
    d.grid, d.block = f"cdiv({n}, 256)", "256"
    if len(ints) == 1:
        d.notes.append(f"no launch site: assumed 1-D, grid cdiv({n}, 256), block 256, every array of {n} "
                       f"elements, {n}={HEURISTIC_SIZE} (--sizes {n}=N)")
    else:
        text = sym.model.source.text
        m = re.search(r"(?<![\w.])" + re.escape(fn.name) + r"\s*(?:<[^;{}]*?>)?\s*<<<", text)
        where = ""
        if m is not None:               # recursiveGaussian's `#if USE_SIMPLE_FILTER` launch: the build leaves it out
            where = f" (its launch at line {text.count(chr(10), 0, m.start()) + 1} is in code the preprocessor " \
                    f"leaves out{_excluded_by(text, m.start())})"
        d.problems.append(Problem("launch", f"no launch site in this file{where}, and not exactly one integer "
                                            "parameter to take for the size: grid, block and sizes are needed"))


_DIRECTIVE = re.compile(r"^[ \t]*#[ \t]*(if|ifdef|ifndef|elif|else|endif)\b(.*)$", re.M)


def _excluded_by(text: str, offset: int) -> str:
    """`: `#if USE_SIMPLE_FILTER` at line 241, USE_SIMPLE_FILTER defined as `0` at line 17`: the conditional
    around `offset` that leaves it out and the definitions of the macros it tests (none: not defined); "" when no
    conditional is found around it."""
    stack = []                          # (directive text, line) of the open conditionals
    for m in _DIRECTIVE.finditer(text, 0, offset):
        kind, line = m.group(1), text.count("\n", 0, m.start()) + 1
        shown = " ".join(m.group(0).split())
        if kind in ("if", "ifdef", "ifndef"):
            stack.append((shown, line))
        elif kind in ("elif", "else") and stack:
            stack[-1] = (shown if kind == "elif" else f"{shown} (of {stack[-1][0]})", line)
        elif kind == "endif" and stack:
            stack.pop()
    if not stack:
        return ""
    shown, line = stack[-1]
    names = [n for n in dict.fromkeys(re.findall(r"\b[A-Za-z_]\w*\b", re.sub(r"^#\s*\w+", "", shown)))
             if n not in ("defined", "of", "if", "ifdef", "ifndef", "elif", "else")]
    said = []
    for n in names[:3]:
        defs = list(re.finditer(r"^[ \t]*#[ \t]*define[ \t]+" + re.escape(n) + r"\b[ \t]*(.*)$", text[:offset], re.M))
        if defs:
            value = " ".join(defs[-1].group(1).split()) or "(empty)"
            said.append(f"{n} defined as `{value}` at line {text.count(chr(10), 0, defs[-1].start()) + 1}")
        else:
            said.append(f"{n} not defined in the program's sources (a -D of the build would set it)")
    return f": `{shown}` at line {line}" + (", " + ", ".join(said) if said else "")


def _line(model, node) -> int:
    return model.source.position(node.start)[0]


def _array(model, fn, sym, d: Derived, p, arg, seen: dict, elementwise: bool) -> PDesc:
    pointee = p.pointee
    if "type-parameter" in (pointee or "") and sym.types:       # `const T *` of the instance: `const float`
        pointee = _subst(re.sub(r"\*\s*(__restrict__|__restrict|restrict|const)?\s*$", "", p.type), sym.types)
    dtype = _dtype(pointee)
    unit = None                         # (bytes, scalars) of a struct element read as a flat buffer
    if dtype is None:
        flat = _flat_pointee(p)
        if flat is None and sym.types and "type-parameter" in (p.pointee or ""):
            t = named_type(fn.node.model, pointee)      # ert's `T *A` of block_stride<half2>: 2 x f16 each
            flat = _flat_record(t) if t is not None else None
        if flat is not None:            # Float3, KeyValue: a buffer of structs of one scalar type, no padding
            dtype, count = flat
            unit = (count * _BYTES[dtype], count)
            shown = pointee.replace("__cuport_shim::", "")
            d.notes.append(f"'{p.name}' points to `{shown}`: {count} x {dtype} each, generated as a flat {dtype} "
                           "buffer")
    record = None
    if dtype is None:                   # Atom {float x, y, z; int type}: a spec struct with clang's layout
        dtype, record = _record(d, p, pointer=True, arg=arg)
    from porter.verify.derive_tmpl import is_instance, template_record
    if dtype is None and sym.types and "type-parameter" in (p.pointee or "") and is_instance(pointee):
        from porter.verify.notation import parse_records    # quicksort's block_record<T> of <uint>
        out = dict(d.structs)
        name = template_record(fn.node.model, pointee, out)
        if name in out:
            d.structs, dtype, record = out, name, parse_records(out)[name].dtype
            d.notes.append(f"'{p.name}' points to `{pointee.strip()}`: the template's fields with the instance's "
                           f"arguments, laid out as C does ({out[name]})")
        else:
            record = f"{record}; {name}"
    if dtype is None:
        d.problems.append(Problem(p.name, f"'{p.name}' points to `{pointee}`: {record}; only buffers of float, "
                                          "double, half, 8- to 64-bit integers and of structs of them (no unions, "
                                          "pointers or bit-fields inside) are generated"))
        dtype, record = "f32", None
    if p.const_pointee or fn.body is None:
        direction = "in" if p.const_pointee else "inout"
    else:
        written, read = _pointer_use(fn, p.node)
        direction = "inout" if written and read else "out" if written else "in"
    shape, zeroed = None, None
    first = next((q for q in fn.params if _is_int(q)), None)
    if sym.site is None:
        shape = first.name if first is not None else None
    elif arg is not None:
        b = _bare(arg)
        b = _through_wrappers(sym, b)
        table = _buffer_table(b)        # `mdlat[k]`: one buffer of a table, each cudaMalloc'd as `&mdlat[k]`
        offset = _offset_buffer(sym, b) if table is None else None     # `dE + k`, `&d_a[i]`
        if offset is None and table is None and b.kind == "DECL_REF_EXPR" and b.ref is not None and \
                b.ref.kind == "VAR_DECL" and _allocation(model, b.ref) is None:
            init = sym.definition(b.ref, b)     # allreduce's `float *segment_update = &(output[e - s])`
            offset = _offset_buffer(sym, _bare(init)) if init is not None else None
        if table is not None and _allocation(model, table.ref, element=True) is not None:
            key, size, shown = (id(table.ref), " ".join(b.text.split())), \
                _allocation(model, table.ref, element=True), " ".join(b.text.split())
        elif offset is not None:        # the same buffer as its base for the aliasing check
            key, size, shown = id(offset[0].ref), sym.allocation(offset[0].ref), offset[0].spelling
            zeroed = _zeroed(model, offset[0].ref, sym.site)
        elif b.kind == "DECL_REF_EXPR" and b.ref is not None and b.ref.kind in ("VAR_DECL", "PARM_DECL"):
            key, size, shown = id(b.ref), sym.allocation(b.ref), b.spelling
            zeroed = _zeroed(model, b.ref, sym.site)
        else:
            key = None
            d.problems.append(Problem(p.name, f"'{p.name}' receives `{' '.join(arg.text.split())}`, not a buffer "
                                              "variable: its size is not known"))
        # the pointer itself: one variable (a local holding `&p[k]` too) or one expression (`p + k`)
        ptr = id(b.ref) if b.kind == "DECL_REF_EXPR" and b.ref is not None else " ".join(b.text.split())
        if key is not None and key in seen:
            other = next(q for q in d.params if q.name == seen[key])
            why = _unaliasable(fn, p, seen[key], seen["ptr"][key] != ptr, direction, other.direction)
            if why is None:             # bitpermute's `bit_rev(d_inout, d_inout, n)`: one buffer bound to both
                d.alias[p.name] = seen[key]
                d.notes.append(f"'{p.name}' and '{seen[key]}' are the same buffer `{shown}`: one array bound to "
                               f"both (alias)")
                return PDesc(p.name, dtype, None, direction)    # shape and init: the array's (_bind_aliases)
            d.problems.append(Problem(p.name, f"'{p.name}' and '{seen[key]}' are the same buffer `{shown}` "
                                              f"({why})"))
        elif key is not None:
            seen.setdefault("ptr", {})[key] = ptr
            seen[key] = p.name
            elem = record.itemsize if record is not None else _BYTES[dtype]
            if size is None:
                d.problems.append(Problem(p.name, f"no cudaMalloc of `{shown}` in this file: the size of "
                                                  f"'{p.name}' is not known"))
            else:
                try:
                    shape = _elements(sym, size, elem, unit)
                    if offset is not None:
                        shape = _past_offset(sym, shape, *offset, pointee, unit)
                except Underivable as e:
                    at = f" (`{b.spelling}` points into `{shown}` at `{' '.join(offset[1].text.split())}`)" \
                        if offset is not None and b.kind == "DECL_REF_EXPR" else ""
                    d.problems.append(Problem(p.name, f"size of '{p.name}'{at}: {e}"))
    if shape is None:
        shape = first.name if first is not None else "1"
        if not any(pr.what == p.name for pr in d.problems):
            d.problems.append(Problem(p.name, f"the size of '{p.name}' is not known"))
    init = None
    if direction != "out" and zeroed:   # filter's `nres` counter, set to 0 before the launch: not random
        init = ("full", (0,))
        d.notes.append(f"'{p.name}' is set to 0 by `{zeroed}` before the launch: its input is zeros")
    elif direction != "out" and record is not None:
        init = None                     # a struct: each field by its dtype (spec.py's default)
    elif direction != "out":
        kind = "special" if elementwise and dtype in ("f32", "f64") else "uniform"
        init = (kind, (0.02,)) if kind == "special" else (kind, ((-1.0, 1.0) if dtype[0] == "f" else
                                                                 (0, 100) if dtype[0] == "u" else (-100, 100)))
    return PDesc(p.name, dtype, _tidy(shape), direction, init=init)


_RESTRICT = re.compile(r"\*\s*(const\s+)?(__restrict__|__restrict|restrict)\b")


def _unaliasable(fn, p, other: str, moved: bool, direction: str, other_direction: str) -> str | None:
    """Why parameters `p` and `other`, given the same buffer, cannot be one array bound to both (a spec alias);
    None when they can: one pointer (not two offsets into it), and no `__restrict__` one where it is written."""
    if moved:
        return "aliasing at different offsets: only one pointer can be bound to both"
    q = next(q for q in fn.params if q.name == other)
    restricted = [x.name for x in (q, p) if _RESTRICT.search(x.type or "")]
    if restricted and (direction != "in" or other_direction != "in"):
        return (f"aliasing: '{restricted[0]}' is `__restrict__` and the buffer is written, so CUDA's behaviour "
                "is undefined for this launch")
    return None


def _bind_aliases(d: Derived) -> None:
    """A parameter bound to another's buffer (d.alias) takes its shape; the buffer starts with the program's
    data (an input) when either name reads it, since the host filled it for the read."""
    descs = {q.name: q for q in d.params}
    for a, b in list(d.alias.items()):
        x, y = descs[a], descs[b]
        if x.dtype != y.dtype:
            del d.alias[a]
            d.problems.append(Problem(a, f"'{a}' and '{b}' are the same buffer read as {x.dtype} and {y.dtype} "
                                         "(aliasing through a cast): not generated"))
            x.shape = y.shape
            continue
        x.shape, x.init = y.shape, None
        if y.direction == "out" and x.direction != "out":     # read through `a`: the buffer is an input
            y.direction = "inout"
            y.init = ("uniform", (-1.0, 1.0) if y.dtype[0] == "f" else (0, 100) if y.dtype[0] == "u"
                      else (-100, 100))


def _record(d: Derived, p, pointer: bool, arg=None):
    """(struct name, its NumPy dtype) of a pointer's element (pointer=True) or a by-value parameter, its
    definitions added to d.structs; (None, why) when it is not a struct the spec can describe. A template
    kernel's `TensorDims<index_t>` is read from the launch argument's type (`TensorDims<int64_t>`)."""
    from porter.verify.derive_types import _clang_type, record_spec
    from porter.verify.notation import parse_records
    t = None
    for node in (p.node, _bare(arg) if arg is not None else None):
        try:
            t = _clang_type(node, pointer)
        except Exception:               # no clang type behind the node (a shallow tree)
            continue
        if t.kind.name == "RECORD" and t.get_size() > 0:
            break
    if t is None:
        return None, "its type is not known"
    out = dict(d.structs)
    name = record_spec(t, out)
    if name not in out:
        return None, name
    d.structs = out
    return name, parse_records(out)[name].dtype


def _buffer_table(b):
    """The DECL_REF_EXPR of the table in `t[k]` when `t` is a local array of / pointer to device pointers."""
    if b is None or b.kind != "ARRAY_SUBSCRIPT_EXPR" or not b.children:
        return None
    t = _bare(b.children[0])
    if t.kind == "DECL_REF_EXPR" and t.ref is not None and t.ref.kind == "VAR_DECL" and \
            re.search(r"\*\s*\*|\*\s*\[", t.ref.type or ""):
        return t
    return None


def _scalar(sym: _Sym, d: Derived, p, arg) -> PDesc:
    dtype = "bool" if re.sub(r"\bconst\b", "", _canon(p, sym)).strip() == "bool" else _dtype(_canon(p, sym))
    if dtype == "bool":                 # kalman's `intercept`, adjacent's `subtract_left`: the launch's value
        return _bool_scalar(sym, d, p, arg)
    if dtype not in ("f32", "f64", "i32", "u32", "i64", "u64"):
        name, why = _record(d, p, pointer=False, arg=arg)
        if name is not None:            # float3, NoiseParams by value: one struct, random fields
            d.notes.append(f"'{p.name}' is a `{p.type}` by value: its fields are random (init={{'{p.name}': "
                           "{field: ...}} sets them)")
            return PDesc(p.name, name)
        d.problems.append(Problem(p.name, f"'{p.name}' is a `{p.type}`: {why}; only float, double and 32/64-bit "
                                          "integer scalars and structs of scalars are generated"))
        return PDesc(p.name, "i32", default="0")
    if sym.site is None:
        if dtype[0] == "f":
            return PDesc(p.name, dtype, default="1.5")
        return PDesc(p.name, dtype) if p.name in sym.sizes else PDesc(p.name, dtype, default="1")
    b = _through_wrappers(sym, _bare(arg)) if arg is not None else None
    if b is not None and b.kind == "DECL_REF_EXPR" and id(b.ref) in sym.names and sym.names[id(b.ref)] == p.name:
        return PDesc(p.name, dtype)
    if arg is None:
        return PDesc(p.name, dtype, default="1")
    if dtype[0] == "f":
        v = b.value if b.kind.endswith(("_EXPR", "_LITERAL", "OPERATOR")) else None
        if v is None and b.kind == "DECL_REF_EXPR" and b.ref is not None and b.ref.kind == "VAR_DECL":
            init = sym.definition(b.ref, b)
            v = _bare(init).value if init is not None else None
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            return PDesc(p.name, dtype, default=format(float(v), ".7g"))
        d.notes.append(f"'{p.name}' = `{' '.join(arg.text.split())}` is not a constant: 1.5 assumed")
        return PDesc(p.name, dtype, default="1.5")
    try:
        text = _tidy(sym.expr(arg))
        if re.fullmatch(r"-?\d*\.\d*(e[-+]?\d+)?", text):
            text = str(int(float(text)))    # cobahh passes 0.001003 to a `const int`: C converts it to 0
        elif re.search(r"float|double", _bare(arg).type or "") and not text.startswith("trunc("):
            text = f"trunc({text})"         # a float expression converted as C does
        return PDesc(p.name, dtype, default=text)
    except Underivable as e:
        d.problems.append(Problem(p.name, f"'{p.name}': {e}"))
        return PDesc(p.name, dtype, default="1")


def _bool_scalar(sym: _Sym, d: Derived, p, arg) -> PDesc:
    """A bool parameter: the launch's constant (`true`, a const bool, an integer), else 1 with a note."""
    b = _through_wrappers(sym, _bare(arg)) if arg is not None else None
    if b is not None and b.kind == "DECL_REF_EXPR" and b.ref is not None and b.ref.kind == "VAR_DECL":
        init = sym.definition(b.ref, b)
        b = _bare(init) if init is not None else b
    v = b.value if b is not None and b.kind.endswith(("_EXPR", "_LITERAL", "OPERATOR")) else None
    if b is not None and b.kind == "CXX_BOOL_LITERAL_EXPR" and v is None:
        v = b.text.strip() == "true"
    if isinstance(v, (bool, int)):
        return PDesc(p.name, "bool", default=str(int(bool(v))))
    if arg is not None:
        d.notes.append(f"'{p.name}' = `{' '.join(arg.text.split())}` is not a constant: true assumed")
    return PDesc(p.name, "bool", default="1")


# ---------------------------------------------------------------------------------------------------------------
# a file

def derive_file(path: str, args=None) -> list[Derived]:
    """A Derived for each kernel with a body in the file (parse errors are left to the translators). `args`: the
    program's command-line arguments (argv[1..], `cuport verify --args`) for the sizes it reads from them
    (derive_args.py); None: such sizes are assumed."""
    from porter.verify.derive_args import program_args
    with program_args(args):
        return _derive_file(path)


def _derive_file(path: str) -> list[Derived]:
    from porter.analysis.launch import site_kernel
    model, lines = _unit_model(path)
    hosts = _Hosts(path)
    try:
        out = []
        for fn in model.kernels:
            if fn.body is None:
                continue
            host = None
            if not fn.is_template and not any(site_kernel(s) == fn.name for s in model.launches):
                host = hosts.launching(fn.name)
            unit = None
            if host is None and not fn.is_template and not any(site_kernel(s) == fn.name for s in model.launches):
                unit = hosts.through_includer(path, fn.name)
            if host is None and unit is None:
                ds = derive_kernels(model, fn, hosts)
                if fn.is_template and any(p.what == "template" for p in ds[0].problems):
                    ds = _through_includer(path, lines, model, fn, hosts) or ds
                out += [d if d.path != path else _remapped(d, lines) for d in ds]
                continue
            if unit is None:
                unit = hosts.unit(host, path, fn.name)
                unit = unit + (host.path,) if unit is not None else None
            if unit is not None:            # ss's main.cu includes kernels.cu after the typedefs it needs: the
                umodel, ufn, ulines, top = unit     # kernel is read, and translated, in that file's context
                d = _remapped(derive_kernel(umodel, ufn, hosts=hosts), ulines)
                d.path, d.line, d.defined_in = top, _remapped_line(lines, _line(model, fn.node)), None
                d.notes.insert(0, f"{Path(path).name} is included by {Path(top).name}: verified "
                                  f"through {Path(top).name}")
            else:
                d = _remapped(derive_kernel(model, fn, host=host), lines)
            out.append(d)
        return out
    finally:
        model.release()
        hosts.release()


def _through_includer(path, lines, model, fn, hosts) -> list[Derived] | None:
    """A template kernel whose instances are not in its own file (sampling's kernels.cu: its host template
    `kernel_dataset<float, int>` is called from main.cu, which includes kernels.cu): its instances read, and
    verified, through the one file of the program that includes it; None when that does not find them."""
    inc = hosts.including(path)
    unit = hosts.unit(inc, path, fn.name) if inc is not None else None
    if unit is None:
        return None
    umodel, ufn, ulines = unit
    ds = derive_kernels(umodel, ufn, hosts)
    if any(p.what == "template" for p in ds[0].problems):
        return None
    for d in ds:
        _remapped(d, ulines)
        d.path, d.line, d.defined_in = inc.path, _remapped_line(lines, _line(model, fn.node)), None
        d.notes.insert(0, f"{Path(path).name} is included by {Path(inc.path).name}, which instantiates it: "
                          f"verified through {Path(inc.path).name}")
    return ds


# ---------------------------------------------------------------------------------------------------------------
# `cuport verify --init`: the same, as an editable spec

_INIT_CODE = {"uniform": "uniform({}, {})", "special": "special({})", "full": "full({})", "below": 'below("{}")'}


def skeleton(derived: list[Derived], spec_dir: Path, portability_fixes: bool = False) -> str:
    """verify_spec.py text for these kernels: what was derived filled in, TODO where a placeholder stands."""
    files = sorted({str(Path(d.path).name) for d in derived})
    out = [f'"""cuport verify spec for {", ".join(files)}, written by `cuport verify --init`.',
           "",
           "Derived from the kernel signatures and launch sites; edit it. Lines marked TODO hold placeholders",
           "for what the source does not say. With reference=None the targets are compared with each other;",
           "a NumPy reference (a function of the arguments returning {output: array}) checks the right answer.",
           '"""',
           "from porter.verify.spec import Case, Tol, below, full, special, uniform  # noqa: F401",
           "", "KERNELS = ["]
    for d in derived:
        rel = Path(d.path).resolve().relative_to(spec_dir.resolve()) if _inside(d.path, spec_dir) else d.path
        out.append(f"    # {d.kernel} (line {d.line} of {Path(d.path).name})")
        out += [f"    # note: {n}" for n in d.notes]
        for p in d.problems:
            out += textwrap.wrap(p.message, 110, initial_indent="    # TODO: ", subsequent_indent="    #       ")
        inits = []
        for p in d.params:
            if not p.init:
                continue
            code = _INIT_CODE[p.init[0]].format(*p.init[1])
            inits.append(f'"{p.name}": {code}')
        tol = d.tol_dtypes()
        out += ["    Case(",
                f'        source="{rel}", kernel="{d.kernel}",',
                *([f"        structs={d.structs!r},"] if d.structs else []),
                *([f"        alias={d.alias!r},  # one buffer bound to both"] if d.alias else []),
                f'        signature="{d.signature}",',
                f'        grid="{d.grid}", block="{d.block}",']
        if d.shared != "0":
            out.append(f'        shared_mem="{d.shared}",')
        if inits:
            out.append(f"        init={{{', '.join(inits)}}},")
        if d.unordered:
            out.append(f"        unordered={tuple(d.unordered)!r},  # positions claimed by atomics: multisets")
        out.append(f"        sizes=[{d.sizes!r}],")
        if tol:
            out.append("        tol={" + ", ".join(f'"{t}": Tol({DIFF_TOL[t][0]}, {DIFF_TOL[t][1]})' for t in tol)
                       + "},  # for comparing targets; a reference may need tighter")
        if not portability_fixes:
            out.append('        translate={"portability_fixes": False},  # verify the source as written')
        if any(p.what == "template" for p in d.problems):
            out.append("        template_args=(),  # TODO: the template arguments")
        out += ["        reference=None,  # TODO (optional): lambda **args: {\"output\": numpy expression}",
                "    ),"]
    out += ["]", ""]
    return "\n".join(out)


def _inside(path: str, folder: Path) -> bool:
    try:
        Path(path).resolve().relative_to(folder.resolve())
        return True
    except ValueError:
        return False
