"""Device `assert(cond)` (issue 14): CUDA stops the failing thread, prints "Assertion failed" and the host sees
cudaErrorAssert (a sticky error: the context is dead, no buffer can be read back). The translations keep the
check and make the failure observable instead of dropping it: a hidden buffer of two `uint`s,

    [0] the number of threads whose assert failed    [1] the source line of the first failure (0: none)

that the host creates zeroed, binds at the manifest's "assert" binding (GLSL) / argument index (OpenCL), and
reads after the dispatch: a nonzero [0] is CUDA's cudaErrorAssert, and the other buffers are then what CUDA
leaves undefined.

Where the failing thread goes: in the kernel's own body it returns (CUDA's thread stops there), unless the kernel
(or what it calls) synchronises threads or uses shared memory: a thread that left early would leave the others
waiting at a barrier it never reaches (CUDA halts the whole kernel instead, which neither target can), so there,
and in device functions (whose `return` would only leave the function), the failure is recorded and the thread
goes on, like a trap whose effects the host discards. Either way the host sees the failure.

The light-mode <assert.h> (frontend/shim/include/assert.h) expands `assert(e)` to
`((e) ? (void)0 : __cuport_assert_fail())`, nothing under NDEBUG (as CUDA's); glibc's `__assert_fail` (full
header mode) has the same shape."""
from __future__ import annotations

import re

from porter.translate.kernel.ctype import U32

FAIL_CALLS = ("__cuport_assert_fail", "__assert_fail", "__assertfail")
BUFFER = "cuport_assert"         # the manifest's name of the hidden buffer (and verify's output key)
WORDS = 2
# calls after which a thread that returned early would leave the others waiting (or a collective short a lane)
_COLLECTIVE = re.compile(r"^(?:__syncthreads\w*|__syncwarp|__shfl\w*|__ballot\w*|__any\w*|__all\w*|__activemask|"
                         r"__reduce_\w+|__match_\w+|__cuport_(?!assert_fail)\w+|sync|barrier\w*|__barrier\w*|"
                         r"grid_sync|this_grid|this_thread_block|tiled_partition|coalesced_threads)$")


def condition(em, n):
    """The asserted expression when statement `n` is an expanded `assert(e)`, else None."""
    s = n
    while s.kind in ("PAREN_EXPR", "UNEXPOSED_EXPR") and len(s.children) == 1:
        s = s.children[0]
    if s.kind != "CONDITIONAL_OPERATOR" or len(s.children) != 3:
        return None
    fail = s.children[2].strip
    while fail.kind == "UNEXPOSED_EXPR" and len(fail.children) == 1:
        fail = fail.children[0].strip
    if fail.kind != "CALL_EXPR" or em.callee_name(fail) not in FAIL_CALLS:
        return None
    cond = s.children[0]
    # glibc's `static_cast<bool>(e)`: the expression itself
    if cond.kind == "CXX_STATIC_CAST_EXPR" and "bool" in cond.type and cond.children:
        cond = cond.children[-1]
    return cond


def statement(em, n) -> bool:
    """Emit statement `n` when it is an `assert`: the check, the failure record and the thread's stop."""
    cond = condition(em, n)
    if cond is None:
        # `assert(e)` under NDEBUG is `((void)0)`: nothing to emit
        return n.strip.kind == "INTEGER_LITERAL" and n.macro == "assert"
    line = em.model.source.position(n.start)[0]
    name = _buffer(em)
    c = em.cond(cond)
    stops = em.frame.is_kernel and not _synchronises(em)
    em.emit(f"if (!({c.text})) {{")
    em.indent += 1
    for ln in em.t.assert_record(em, name, line):
        em.emit(ln)
    if stops:
        em.emit("return;     // CUDA stops the thread at a failed assert")
    else:
        why = "a return there would leave the function only" if not em.frame.is_kernel else \
            "this kernel synchronises threads or uses shared memory, and a thread that stopped could leave the " \
            "others waiting at a barrier (CUDA halts the whole kernel)"
        em.note("CP907", n, f"a failed assert is recorded for the host (manifest \"assert\") and the thread goes on "
                            f"({why}); the host must treat the other buffers as undefined then, as CUDA's",
                "info")
    em.indent -= 1
    em.emit("}")
    sites = em.assert_sites
    if line not in [s["line"] for s in sites]:
        sites.append({"line": line, "stops_thread": stops})
    return True


def _buffer(em) -> str:
    """The hidden buffer's name in this kernel (registered on first use; device functions take it as they take
    a file-scope device variable's buffer: OpenCL passes it down)."""
    info = getattr(em, "assert_buffer", None)
    if info is None:
        name = em.fresh(BUFFER)
        info = {"name": name, "cuda_name": BUFFER, "elem": U32, "const": False, "restrict": False,
                "node": None, "assert": True}
        em.assert_buffer = info
        em.assert_sites = []
        em.buffers[name] = info
        em.roots_rw[("buffer", name)] = {"r", "w"}
    fr = em.frame
    if fr is not None and not fr.is_kernel and info["name"] not in fr.globals:
        fr.globals.append(info["name"])
    return info["name"]


def _synchronises(em) -> bool:
    """Whether the kernel or a function it calls uses a barrier, a warp collective or shared memory."""
    found = getattr(em, "_assert_sync", None)
    if found is None:
        found = em._assert_sync = _walk(em, em.fn.node, set())
    return found


def _walk(em, node, seen: set) -> bool:
    stack = [node]
    while stack:
        n = stack.pop()
        if n.kind == "VAR_DECL" and any(c.kind == "CUDASHARED_ATTR" for c in n.children):
            return True
        if n.kind in ("CALL_EXPR", "MEMBER_REF_EXPR"):
            name = (em.callee_name(n) if n.kind == "CALL_EXPR" else n.spelling) or ""
            if _COLLECTIVE.match(name):
                return True
            ref = n.ref if n.kind == "CALL_EXPR" else None
            if ref is not None and id(ref) not in seen and ref.kind in ("FUNCTION_DECL", "FUNCTION_TEMPLATE",
                                                                           "CXX_METHOD", "CONSTRUCTOR"):
                seen.add(id(ref))
                stack.append(ref)
        stack.extend(n.children)
    return False


def manifest_entry(em, binding=None, index=None) -> dict | None:
    """The manifest's "assert": where the hidden buffer goes and what its words mean."""
    info = getattr(em, "assert_buffer", None)
    if info is None:
        return None
    e = {"buffer": BUFFER, "type": "uint", "count": WORDS, "init": [0] * WORDS,
         "words": ["threads whose assert failed", "source line of the first failed assert (0: none)"],
         "sites": [dict(s) for s in em.assert_sites],
         "on_failure": "the launch failed as CUDA's cudaErrorAssert: the other buffers are undefined"}
    if binding is not None:
        e["binding"] = binding
    if index is not None:
        e["index"] = index
    return e


def remap(result, linemap) -> None:
    """Each assert site's line as the file it was written in (a kernel of an inlined header)."""
    for man in (result.manifests or {}).values():
        for s in ((man or {}).get("assert") or {}).get("sites", []):
            path, row = linemap.where(s["line"])
            s["file"], s["source_line"] = path, row


def kernel_asserts(model, fn) -> bool:
    """Whether kernel `fn` (or a function of this file it calls) holds an `assert` that NDEBUG left in: its failure
    is an outcome a host can observe (verify compares it)."""
    stack, seen = [fn.node], set()
    while stack:
        n = stack.pop()
        if n.kind == "CALL_EXPR":
            if n.spelling in FAIL_CALLS or (n.ref_name or "") in FAIL_CALLS:
                return True
            ref = n.ref
            if ref is not None and id(ref) not in seen:
                seen.add(id(ref))
                stack.append(ref)
        stack.extend(n.children)
    return False

