"""A buffer of scalars S read and written as a struct made of S only (geglu's
`struct alignas(sizeof(scalar_t) * VEC_ELEMS) U { scalar_t data[VEC_ELEMS]; }` over a float buffer, issue 14
item 2).

Such a struct is k consecutive S (k = its S fields, arrays counted element by element) when no alignment pads
it: sizeof = k * sizeof(S). Both targets then read and write CUDA's bytes: OpenCL casts the pointer (the struct
is declared there without the alignment, a weaker demand than CUDA's), GLSL declares a typed view of the binding
(std430 lays a struct of S fields out with stride sizeof(S), so its size is k * sizeof(S) too) and converts the
element offset, which must be a provable multiple of k (pointers.view). An alignment that pads the struct, or
one cuport cannot evaluate, is refused at the cast: the struct's stride would not be the k elements it holds."""
from __future__ import annotations

import math
import re

from porter.translate.kernel import ctype as ct
from porter.translate.kernel.ctype import CType

# alignas(E), __align__(E), __attribute__((aligned(E))) in a struct's head
_ALIGN = re.compile(r"\b(?:alignas|__align__|aligned)\s*\(")


def _count(em, t: CType, s: CType, depth: int = 0) -> int | None:
    """How many S the type t is made of (scalars S, arrays of S, structs of those), else None."""
    if depth > 8:
        return None
    t = t.unqualified()
    if t.kind == "scalar":
        return 1 if t == s else None
    if t.kind == "array" and all(d is not None for d in t.dims):
        k = _count(em, t.elem, s, depth + 1)
        return None if k is None else k * math.prod(t.dims)
    if t.kind == "struct" and t.name in em.u.structs:
        if _alignment(em, t.name) is not None:
            return None         # a nested struct with its own alignment: its padding is not counted here
        ks = [_count(em, ft, s, depth + 1) for _f, ft in em.struct_fields(t.name)]
        return sum(ks) if ks and None not in ks else None
    return None


def _head(em, name: str) -> str:
    decl = em.u.struct_decls.get(name)
    text = getattr(decl, "text", "") or ""
    return text.split("{", 1)[0]


def _alignment(em, name: str):
    """The alignment the struct's head declares: None when none, 0 when it cannot be evaluated, else bytes."""
    head = _head(em, name)
    m = _ALIGN.search(head)
    if m is None:
        return None
    depth, i = 1, m.end()
    while i < len(head) and depth:
        depth += {"(": 1, ")": -1}.get(head[i], 0)
        i += 1
    expr = head[m.end():i - 1]

    def size_of(mm):
        t = em.parse_type(mm.group(1).strip())
        n = ct.c_size(t) if t.kind in ("scalar", "vector") else None
        return str(n) if n else mm.group(0)
    expr = re.sub(r"\bsizeof\s*\(([^()]*)\)", size_of, expr)
    subst = em.frame.subst if em.frame else em.kernel_subst
    v = ct._int_expr(expr, {k: v for k, v in subst.items() if isinstance(v, int)})
    return v or 0


def over_scalars(em, node, old: CType, new: CType) -> int | None:
    """k when `new` is a struct of k `old` scalars with no padding (the cast then reads and writes those k
    elements); None when it is no struct of `old` scalars (pointers.view refuses it as before). An alignment
    that pads it, or one not evaluated, is refused at `node`."""
    if new.kind != "struct" or old.kind != "scalar" or old.is_bool or new.name not in em.u.structs:
        return None
    k = None
    ks = [_count(em, ft, old) for _f, ft in em.struct_fields(new.name)]
    if ks and None not in ks:
        k = sum(ks)
    if not k:
        return None
    a = _alignment(em, new.name)
    size = k * ct.c_size(old)
    if a == 0:
        em.fail(node, f"a pointer cast `{node.text}` (reinterpreting memory as `{new.name}`, whose alignment "
                      "cuport cannot evaluate: its size, the stride of the view, is unknown)")
    if a is not None and size % a:
        em.fail(node, f"a pointer cast `{node.text}` (reinterpreting memory as `{new.name}`: its alignment {a} "
                      f"pads its {size} bytes of `{ct.spell(old)}`)")
    cursor = getattr(em.u.struct_decls.get(new.name), "_cursor", None)
    clang = cursor.type.get_size() if cursor is not None else -1       # < 0: dependent (a template's struct)
    if clang > 0 and clang != size:
        em.fail(node, f"a pointer cast `{node.text}` (reinterpreting memory as `{new.name}`: its {clang} bytes are "
                      f"not its {size} bytes of `{ct.spell(old)}`)")
    return k


def scalar_bits(em, t: CType, depth: int = 0) -> int | None:
    """GLSL: the width of the scalars a struct view is made of (8 / 16 bits need the storage extensions)."""
    t = t.unqualified()
    while t.kind == "array":
        t = t.elem
    if t.kind == "scalar":
        return t.bits
    if t.kind == "struct" and t.name in em.u.structs and depth < 8:
        for _f, ft in em.struct_fields(t.name):
            return scalar_bits(em, ft, depth + 1)
    return None
