"""Cooperative groups in index arithmetic: `block.thread_rank()`, `tile.meta_group_rank()`, `tile.size()`...

A group object's kind comes from its canonical type (the stub cooperative_groups.h, or CUDA's own header with
--full-headers): thread_block, thread_block_tile<N> (any N), grid_group, coalesced_group, thread_group (a
tiled_partition whose size is set at run time). The rank and size calls of a block and of a static tile are
exact functions of the thread index; the others (a grid's rank, a coalesced group's rank, a run-time tile) are
opaque, with a reason that is not evidence of a race (shared_memory_race reports opaque indices only when they
are loaded or computed by an unknown call)."""
from __future__ import annotations

import re

_TILE = re.compile(r"thread_block_tile<\s*(\d+)")
RANK_CALLS = {"thread_rank", "meta_group_rank", "size", "num_threads", "meta_group_size", "group_index",
              "thread_index"}


def group_kind(node) -> tuple[str, int | None] | None:
    """(kind, tile size) of a cooperative-groups object expression, None when it is not one."""
    try:
        t = node._cursor.type.get_canonical().spelling
    except Exception:
        t = node.type or ""
    if "cooperative_groups::" not in t and not t.startswith(("thread_block", "grid_group", "coalesced_group")):
        return None
    m = _TILE.search(t)
    if m:
        return "tile", int(m.group(1))
    for kind in ("thread_block", "grid_group", "coalesced_group", "thread_group", "cluster_group"):
        if kind in t:
            return kind, None
    return None


def group_object(call):
    """The object of a member call `g.f()` (None for a free function)."""
    if not call.children or call.children[0].kind != "MEMBER_REF_EXPR":
        return None
    mem = call.children[0]
    return mem.children[0] if mem.children else None


def rank_code(comp, call):
    """A Code for a group's rank or size call under Compiler `comp`, or None when `call` is not one; raises the
    compiler's Opaque for ranks that are not functions of the thread index alone."""
    from porter.analysis.code import Opaque, _join
    name = call.spelling
    if name not in RANK_CALLS:
        return None
    obj = group_object(call)
    if obj is None:
        return None
    g = group_kind(obj)
    if g is None:
        return None
    kind, n = g
    if kind == "thread_block":
        if name == "thread_rank":
            return linear(comp)
        if name in ("size", "num_threads"):
            b = [comp._builtin("blockDim", c) for c in "xyz"]
            return _nonneg(_join(f"({b[0].src} * {b[1].src} * {b[2].src})", *b))
        raise Opaque(f"a thread block's `{name}`")
    if kind == "tile":
        if name == "thread_rank":
            lin = linear(comp)
            return _nonneg(_join(f"({lin.src} % {n})", lin))
        if name == "meta_group_rank":
            lin = linear(comp)
            return _nonneg(_join(f"({lin.src} // {n})", lin))
        if name in ("size", "num_threads"):
            from porter.analysis.code import Code
            return Code(str(n), nonneg=True)
        if name == "meta_group_size":
            b = [comp._builtin("blockDim", c) for c in "xyz"]
            return _nonneg(_join(f"(({b[0].src} * {b[1].src} * {b[2].src} + {n - 1}) // {n})", *b))
        raise Opaque(f"a tile's `{name}`")
    what = {"grid_group": "a grid's", "coalesced_group": "a coalesced group's", "cluster_group": "a cluster's",
            "thread_group": "a run-time tile's"}[kind]
    raise Opaque(f"{what} `{name}` (cooperative groups)")


def _nonneg(c):
    from porter.analysis.code import Code
    return Code(c.src, c.threads, c.loops, c.unknowns, True)


def linear(comp):
    """threadIdx.x + threadIdx.y * blockDim.x + threadIdx.z * blockDim.x * blockDim.y: a block's thread_rank."""
    from porter.analysis.code import _join
    # dimensions the enumerated block does not have (size 1: the launch's or the 1-D representative) drop out,
    # so a 1-D kernel's rank is plain threadIdx.x, known exactly
    dims = [i for i in range(3) if i == 0 or comp.block is None or comp.block[i] > 1]
    t = [comp._builtin("threadIdx", c) for c in "xyz"]
    b = [comp._builtin("blockDim", c) for c in "xy"]
    terms, parts = [t[0].src], [t[0]]
    if 1 in dims:
        terms.append(f"{t[1].src} * {b[0].src}")
        parts += [t[1], b[0]]
    if 2 in dims:
        terms.append(f"{t[2].src} * {b[0].src} * {b[1].src}")
        parts += [t[2], b[0], b[1]]
    r = _join(f"({' + '.join(terms)})", *parts)
    return _nonneg(r)
