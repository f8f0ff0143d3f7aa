"""`atomicAdd((half2 *)&out[m], v)` into a buffer of halves (lut-gemm's `_nqmv`, issue 14 item 7): neither target
has a 16-bit atomic add, and OpenCL stores a half2 as two halves (no half2 pointer there).

CUDA reads and writes the pair at a 4-byte aligned address (a misaligned half2 access is an error) and guarantees
the add atomic for each half separately. When the pair's half offset m is provably even (pointers._multiple_req:
a counter through induction.py, a kernel parameter through a launch contract in the manifest), the pair is the
32-bit word m / 2 of the buffer, and a compare-and-swap loop on that word adds both halves at once (atomic for the
pair, more than CUDA promises): GLSL on a `uint` view of the binding (unpackFloat2x16 / packFloat2x16, the sum in
f16vec2 as every half2 add there), OpenCL on a `volatile __global uint *` at the pair's address (vload_half2 /
vstore_half2_rte on the word's bytes; the sum in floats rounded to half per lane, the `__hadd2` row). The first
read of the word is atomic too (an atomic or with 0: a plain load would race with other groups' compare-and-swap,
which Oclgrind reports). The loop returns the pair it replaced, as CUDA's atomicAdd does. An offset not provably even stays refused (CP907) at the
cast, as before; so does every other half2 atomic."""
from __future__ import annotations

from porter.translate.kernel import halfprec
from porter.translate.kernel.target import E
from porter.translate.kernel.typeinfo import CASTS, NON_EXPR


def _kids(n):
    return [c for c in n.children if c.kind not in NON_EXPR]


def site(em, base, n, args):
    """(the cast, the half pointer it casts, its root, half offset E or None) for `atomicAdd((half2 *)p, v)` with p
    a pointer into a global buffer of halves; None for every other atomic."""
    if base != "atomicAdd" or len(args) != 2:
        return None
    s = args[0]
    while s.kind in ("PAREN_EXPR", "UNEXPOSED_EXPR") and len(_kids(s)) == 1:
        s = _kids(s)[0]
    if s.kind not in CASTS or not _kids(s):
        return None
    t = em.ty(s)
    if t.kind != "pointer" or t.elem.unqualified() != halfprec.H2:
        return None
    inner = _kids(s)[-1]
    it = em.ty(inner)
    if it.kind != "pointer" or it.elem.unqualified() != halfprec.F16:
        return None
    root, off = em.ptr(inner)
    if root.kind != "buffer" or root.space != "global" or root.elem.unqualified() != halfprec.F16 or \
            root.name not in em.buffers:
        return None
    return s, inner, root, off


def _even(em, cast, inner, off) -> None:
    """Refuses the cast unless the pair's half offset is provably even (recording any launch contract)."""
    if off is None or (isinstance(off.lit, int) and off.lit % 2 == 0):
        return
    before = dict(em.contracts)
    em.__dict__["_param_contracts"] = True          # OpenCL too: the manifest carries the contract
    try:
        ok = not isinstance(off.lit, int) and em._aligned(inner, 2)
    finally:
        em.__dict__["_param_contracts"] = False
    if ok and em.t.native_pointers:                  # GLSL notes every contract where the kernel ends
        for pname, (k, node) in em.contracts.items():
            if before.get(pname, (None,))[0] != k:
                em.note("CP907", node, f"translated for `{pname}` a multiple of {k} only (a half2 atomic's pair is "
                        "then one 32-bit word): the manifest's \"requires\" makes the host refuse other values")
    if not ok:
        em.fail(cast, f"the cast `{cast.text}` in `atomicAdd` (its offset into the half buffer is not provably "
                      "even: the pair is not provably one 32-bit word, which a compare-and-swap loop would update)")


def _prepare(em, t, base, n, args):
    """(root buffer, offset, the added value, the pair's `__hadd2` of f and v) of a half2 atomicAdd both targets
    translate, or None when the site is not one (site)."""
    got = site(em, base, n, args)
    if got is None:
        return None
    cast, inner, root, off = got
    _even(em, cast, inner, off)
    v = em.conv(em.x(args[1]), halfprec.H2)
    em.access(root, "rw")
    add = halfprec.row_call(em, t, "__hadd2", n, [E("f", halfprec.H2), E("v", halfprec.H2)]).text
    return inner, root, off, v, add


def glsl(em, t, base, n, args) -> E | None:
    got = _prepare(em, t, base, n, args)
    if got is None:
        return None
    _inner, root, off, v, add = got
    info = em.buffers[root.name]
    if info.get("alias_bits") not in (None, 32):
        em.fail(n, f"`atomicAdd` on the half buffer `{info['cuda_name']}` also updated as 64-bit words")
    info["alias_bits"] = 32
    tn = t.type_name(halfprec.H2, em)
    hname = f"cuport_atomicAdd_h2_{root.name}"
    em.helper(hname, f"{tn} {hname}(int w, {tn} v)\n{{\n    /* halves 2w and 2w + 1: one 32-bit word */\n"
                     f"    uint old = atomicOr({root.name}_u32[w], 0u);\n    for (;;) {{\n        {tn} f = unpackFloat2x16(old);\n"
                     f"        uint prev = atomicCompSwap({root.name}_u32[w], old, packFloat2x16({add}));\n"
                     "        if (prev == old) return f;\n        old = prev;\n    }\n}")
    if off is None:
        w = "0"
    else:
        two = E(t.literal(2, off.ct, em), off.ct, lit=2)
        w = em.index(em.binary_value("/", off, two, None), n).text    # exact: off is even
    return E(f"{hname}({w}, {v.text})", halfprec.H2)


def opencl(em, t, base, n, args) -> E | None:
    got = _prepare(em, t, base, n, args)
    if got is None:
        return None
    inner, _root, _off, v, add = got
    p = t.native(em, inner)
    hname = "cuport_atomicAdd_h2_global"
    em.helper(hname, f"float2 {hname}(volatile __global uint* p, float2 v)\n{{\n"
                     "    /* the half2 at p: one 32-bit word, its halves read and written through the half format */\n"
                     "    uint old = atomic_or(p, 0u);\n    for (;;) {\n        uint w = old;\n"
                     "        float2 f = vload_half2(0, (__private const half *)&w);\n"
                     f"        vstore_half2_rte({add}, 0, (__private half *)&w);\n"
                     "        uint prev = atomic_cmpxchg(p, old, w);\n        if (prev == old) return f;\n"
                     "        old = prev;\n    }\n}")
    return E(f"{hname}((volatile __global uint*)({p.text}), {v.text})", halfprec.H2)
