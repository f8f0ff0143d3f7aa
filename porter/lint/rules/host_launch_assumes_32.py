"""Host launch math (threads, blocks, shared bytes) derived from a warp of 32 for a kernel with warp-level code.

## What it does
Follows the grid, block and dynamic-shared-memory arguments of `<<<...>>>` and `hipLaunchKernelGGL` launches in
host code, through `dim3` and single-assignment locals, and flags a 32 (literal or a named constant that folds
to 32) that encodes "one warp = 32 threads": `dim3 block(32, 8)`, `<<<g, 32>>>`, `rows * 32` threads,
`(n + 31) / 32` warps, `(threads / 32) * sizeof(float)` bytes, `<< 5` / `>> 5`.

It only fires when the launched kernel (or a device function it calls) is warp-level code: it uses a warp
intrinsic or computes lane / warp ids. A constant whose name says it is a warp size (`WARP_SIZE`, `kLanes`,
`WAVE`...) is flagged even when the kernel is not in the file. Tile math such as `dim3 block(TILE, TILE)` for a
tiled matrix multiply is not flagged.

## Why is this bad?
The device does not have to run 32-lane warps: AMD CDNA runs 64-lane wavefronts, Vulkan subgroups have 4..128
lanes. A launch that gives each row, item or warp slot exactly 32 threads then puts two rows in one wavefront,
launches half the warps the kernel expects, or allocates the wrong number of per-warp shared slots.

## Example
```cuda
dim3 block(32, 8);                         // threadIdx.x is the lane
row_softmax<<<(rows + 7) / 8, block>>>(x, rows);
```

## Use instead
```cuda
cudaDeviceProp prop;
cudaGetDeviceProperties(&prop, dev);       // hipGetDeviceProperties / hipDeviceProp_t on ROCm
dim3 block(prop.warpSize, 256 / prop.warpSize);
row_softmax<<<(rows + block.y - 1) / block.y, block>>>(x, rows);
```

## Fix safety
No fix: the warp size has to be queried at run time and threaded through the launch code.

## References
- ROCm/hip#1041 (`dim3(32, 2)` is one wave64), ggml-org/llama.cpp#3630, ORNL/HeCBench#180,
  ROCm/bitsandbytes#93, vllm-project/vllm#12789.
"""
import re

from porter.lint.helpers import header_kernel_is_warp_free, int_value, warp_evidence

CODE = "CP105"
_WARPISH = re.compile(r"warp|wave|lane|simd|subgroup", re.I)
_LAUNCH_CALLS = {"hipLaunchKernelGGL": (0, 1, 2, 3), "cudaLaunchKernel": (0, 1, 2, 4),
                 "hipLaunchKernel": (0, 1, 2, 4)}  # kernel, grid, block, shmem positions
_EXPR_UP = {"BINARY_OPERATOR", "PAREN_EXPR", "CSTYLE_CAST_EXPR", "CXX_STATIC_CAST_EXPR", "UNARY_OPERATOR",
            "CXX_FUNCTIONAL_CAST_EXPR", "UNEXPOSED_EXPR", "CONDITIONAL_OPERATOR"}


def _short(node, limit=60):
    t = " ".join(node.text.split())
    return t if len(t) <= limit else t[:limit - 3] + "..."


def _call_end(model, name_node):
    """Offset of the `)` closing the argument list that follows `name_node`."""
    depth = 0
    for t in model.tokens_in(name_node.end, min(len(model.source.data), name_node.end + 4096)):
        if t.spelling == "(":
            depth += 1
        elif t.spelling == ")":
            depth -= 1
            if depth == 0:
                return t.end
        elif depth == 0:
            return None
    return None


def _launches(model):
    """(kernel name, launch node, {'grid': node, 'block': node, 'shmem': node})."""
    for l in model.launches:
        yield l.kernel, l.node, {"grid": l.grid, "block": l.block, "shmem": l.shmem}
    # launch APIs without declarations in the shim: clang keeps the callee and arguments as siblings
    if b"Launch" not in model.source.data:
        return
    for o in model.of_kind("OVERLOADED_DECL_REF", "DECL_REF_EXPR"):
        pos = _LAUNCH_CALLS.get(o.spelling)
        if pos is None:
            continue
        n = o.parent if o.parent is not None and o.parent.kind == "DECL_REF_EXPR" and \
            (o.parent.start, o.parent.end) == (o.start, o.end) else o
        if n.parent is None:
            continue
        end = _call_end(model, n)
        if end is None:
            continue
        sib = n.parent.children
        i = next((j for j, c in enumerate(sib) if c is n), None)
        if i is None:
            continue
        args = [c for c in sib[i + 1:] if c.start < end and c.end <= end]
        if len(args) <= max(pos):
            continue
        k = args[pos[0]].strip
        while k.kind == "UNARY_OPERATOR" and k.children:
            k = k.children[0].strip
        yield k.spelling, n, {"grid": args[pos[1]], "block": args[pos[2]], "shmem": args[pos[3]]}


def _name_of(node):
    """The constant's name when `node` is a named constant (macro or variable/enum reference)."""
    m = node.model.macro_at(node.start, node.end)
    if m is not None and node.text == m:
        return m
    s = node.strip
    if s.kind == "DECL_REF_EXPR":
        return s.spelling
    return None


def _leaf(node):
    s = node.strip
    return s.kind in ("INTEGER_LITERAL", "DECL_REF_EXPR") or _name_of(node) is not None


def _role(node, arg_kind, block_x):
    """Why a 32-valued leaf is launch math about warps, or None."""
    p = node.parent
    child = node
    while p is not None and p.kind in ("PAREN_EXPR", "UNEXPOSED_EXPR", "CSTYLE_CAST_EXPR"):
        child, p = p, p.parent
    v = int_value(node)
    if p is not None and p.kind == "BINARY_OPERATOR" and len(p.children) == 2:
        if v == 32 and p.op == "*":
            return "threads = count * 32"
        if v == 32 and p.op == "/" and p.children[1] is child:
            return "a count of 32-thread warps"
        if v == 5 and p.op in ("<<", ">>") and p.children[1] is child:
            return "a shift by log2(32)"
    if v == 32 and arg_kind == "block" and block_x:
        return "a block row of exactly 32 threads"
    return None


def _ctor_args(call):
    return [a for a in call.args() if a.kind not in ("TYPE_REF", "TEMPLATE_REF", "NAMESPACE_REF")]


def _scan(an, expr, arg_kind, depth, out, seen, first_dim=True):
    """Collect (leaf, role) for 32s in a launch argument, following locals and dim3 definitions. `whole`: the
    node is the whole argument (or the x dimension of a dim3), so a bare 32 is a block row."""
    if expr is None or depth > 3:
        return

    def visit(n, whole):
        s = n.strip
        if int_value(n) in (32, 5) and _leaf(n):
            r = _role(n, arg_kind, first_dim and whole)
            if r is not None:
                out.append((n, r))
            return
        if s.kind == "DECL_REF_EXPR" and s.ref is not None and s.ref.kind == "VAR_DECL":
            if id(s.ref) in seen:
                return
            seen.add(id(s.ref))
            d = an.definition(s.ref)
            if d is not None and d.kind == "CALL_EXPR" and d.spelling == "dim3":
                for i, a in enumerate(_ctor_args(d)):
                    _scan(an, a, arg_kind, depth + 1, out, seen, first_dim=whole and i == 0)
            elif d is not None:
                _scan(an, d, arg_kind, depth + 1, out, seen, first_dim and whole)
            return
        if n.kind == "CALL_EXPR" and n.spelling == "dim3":
            for i, a in enumerate(_ctor_args(n)):
                visit(a, whole and i == 0)
            return
        through = n.kind in ("PAREN_EXPR", "UNEXPOSED_EXPR", "CSTYLE_CAST_EXPR", "CXX_STATIC_CAST_EXPR",
                             "CXX_FUNCTIONAL_CAST_EXPR")
        for c in n.children:
            visit(c, whole and through)

    try:
        visit(expr, True)
    finally:
        del visit       # the nested function refers to itself: break the cycle (frees the model at once)


def _context(node):
    """The statement-level text that shows the launch math: a declaration, a `<<<...>>>` or the expression."""
    c, p = node, node.parent
    while p is not None and (p.kind in _EXPR_UP or (p.kind == "CALL_EXPR" and p.spelling == "dim3")):
        c, p = p, p.parent
    if p is not None and p.kind == "VAR_DECL":
        return p
    if p is not None and p.kind == "CALL_EXPR" and p.spelling in ("cudaConfigureCall", "__cudaPushCallConfiguration"):
        return p if c.text == node.text else c
    return c


def check(ctx):
    model, an = ctx.model, ctx.analysis
    reported = set()
    evidence = {}
    for kernel, site, args in _launches(model):
        fn = model.function_of(site)
        if fn is None or fn.is_device_code:
            continue
        if kernel not in evidence:
            kf = next((f for f in model.functions if f.name == kernel and f.is_kernel and f.body is not None), None)
            evidence[kernel] = (warp_evidence(an, kf) if kf is not None else None, kf is not None)
        ev, visible = evidence[kernel]
        for arg_kind in ("block", "grid", "shmem"):
            found = []
            _scan(an, args[arg_kind], arg_kind, 0, found, set())
            for leaf, role in found:
                name = _name_of(leaf)
                warpish = name is not None and _WARPISH.search(name) is not None
                # a warp-size name is evidence only while the kernel is out of view: one in view with no
                # warp-level code (HeCBench snake: `warp_size * warps` threads) only gets a block size
                if ev is None and (not warpish or visible):
                    continue
                if ev is None:
                    if ("header", kernel) not in evidence:
                        evidence[("header", kernel)] = header_kernel_is_warp_free(site, kernel)
                    if evidence[("header", kernel)]:
                        continue
                key = (leaf.start, leaf.end)
                if key in reported:
                    continue
                reported.add(key)
                what = {"block": "block size", "grid": "grid size", "shmem": "dynamic shared memory size"}[arg_kind]
                because = (f"kernel `{kernel}` is warp-level code (`{_short(ev)}` on line "
                           f"{model.source.position(ev.start)[0]})" if ev is not None
                           else f"`{name}` names a warp size")
                ctx.report(CODE, leaf, f"host launch math `{_short(_context(leaf))}` sets the {what} of `{kernel}` "
                                       f"from a 32-lane warp ({role}) and {because}: on a 64-lane wavefront or "
                                       f"another subgroup size the launch no longer matches the kernel's warps; "
                                       f"query `warpSize` from `cudaGetDeviceProperties` / `hipDeviceProp_t` and "
                                       f"derive the launch from it", arg=arg_kind, role=role)
