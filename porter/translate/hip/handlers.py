"""The few HIP rewrites a rename table cannot express: they move, wrap or add arguments. Each handler gets the
call as token spans (so it also works inside macro bodies and in files clang could not fully parse) and returns
edits through the context; the callee's rename itself comes from the tables.

Conventions follow hipify-clang's output where it has one (HIP_SYMBOL, reinterpret_cast<const void*>,
hipLaunchKernelGGL with dim3(...) and HIP_KERNEL_NAME(...))."""
from __future__ import annotations

import bisect
import re
from dataclasses import dataclass

FULL_MASK_64 = "0xffffffffffffffff"

# warp intrinsics whose first argument is a lane mask (64-bit in HIP: a 32-bit mask trips HIP's static_assert
# and names only half of a wave64)
MASK_FIRST = ("__shfl_sync", "__shfl_up_sync", "__shfl_down_sync", "__shfl_xor_sync", "__ballot_sync",
              "__any_sync", "__all_sync", "__uni_sync", "__match_any_sync", "__match_all_sync", "__syncwarp",
              "__reduce_add_sync", "__reduce_min_sync", "__reduce_max_sync", "__reduce_and_sync",
              "__reduce_or_sync", "__reduce_xor_sync")

_INT_LITERAL = re.compile(r"^(0[xX][0-9a-fA-F']+|0[bB][01']+|[0-9][0-9']*)([uUlL]*)$")
_ALREADY_VOID = re.compile(r"^\(\s*(const\s+)?void\s*\*\s*\)|^reinterpret_cast\s*<|^static_cast\s*<\s*(const\s+)?void")


UNSUPPORTED = "CP907"          # unsupported-in-hip: a CUDA API with no HIP equivalent (left as is)
LAUNCH_KEPT = UNSUPPORTED        # a launch left in <<<...>>> form under --launch-syntax hip (a warning)
LIBRARY = UNSUPPORTED            # a ROCm library the translation needs (info; warning when it is not installed)


@dataclass
class Call:
    """`name ( args )` located on the token list: token indexes of the callee, the parentheses, and each
    argument's first and last token (comments around an argument are not part of it)."""
    name: str
    name_tok: int
    lparen: int
    rparen: int
    args: list[tuple[int, int]]


def split_args(tokens, lparen: int) -> tuple[int, list[tuple[int, int]]] | None:
    """Index of the matching `)` and the argument token ranges for the `(` at `lparen`; None if unbalanced."""
    depth = 0
    args: list[tuple[int, int]] = []
    first = last = None
    i = lparen + 1
    n = len(tokens)
    while i < n:
        t = tokens[i]
        s = t.spelling
        if t.kind == "PUNCTUATION":
            if s in ("(", "[", "{"):
                depth += 1
            elif s in (")", "]", "}"):
                if depth == 0:
                    if s != ")":
                        return None
                    if first is not None:
                        args.append((first, last))
                    return i, args
                depth -= 1
            elif s == "," and depth == 0:
                if first is not None:
                    args.append((first, last))
                first = last = None
                i += 1
                continue
            elif s == ";" and depth == 0:
                return None
        if t.kind != "COMMENT":
            if first is None:
                first = i
            last = i
        i += 1
    return None


class HandlerContext:
    """What a handler may look at and change. Implemented by the engine (porter.translate.hip)."""

    tokens: list
    source: object

    def arg_span(self, call: Call, i: int) -> tuple[int, int]:
        a, b = call.args[i]
        return self.tokens[a].start, self.tokens[b].end

    def arg_text(self, call: Call, i: int) -> str:
        s, e = self.arg_span(call, i)
        return self.source.slice(s, e)

    def arg_start(self, call: Call, i: int) -> int:
        return self.tokens[call.args[i][0]].start

    def arg_end(self, call: Call, i: int) -> int:
        return self.tokens[call.args[i][1]].end

    # provided by the engine
    def translated(self, first_tok: int, last_tok: int) -> str: ...
    def drop_renames(self, start: int, end: int) -> None: ...
    def hip_version_code(self) -> str: ...
    def edit(self, start: int, end: int, text: str) -> None: ...
    def rename(self, tok: int, text: str) -> None: ...
    def note(self, code: str, start: int, end: int, message: str) -> None: ...
    def call_node(self, call: Call): ...
    def need_helper(self, name: str) -> None: ...


def wrap_arg(ctx: HandlerContext, call: Call, i: int, before: str, after: str) -> None:
    s, e = ctx.arg_span(call, i)
    ctx.edit(s, s, before)
    ctx.edit(e, e, after)


# --- the handlers ---------------------------------------------------------------------------------------------

def symbol_arg(index: int):
    """cudaMemcpyToSymbol(sym, ...) -> hipMemcpyToSymbol(HIP_SYMBOL(sym), ...) (hipify-clang's form)."""
    def handler(ctx: HandlerContext, call: Call) -> None:
        if index < len(call.args) and not ctx.arg_text(call, index).startswith("HIP_SYMBOL("):
            wrap_arg(ctx, call, index, "HIP_SYMBOL(", ")")
    handler.__doc__ = f"wrap argument {index} in HIP_SYMBOL(...)"
    return handler


def function_arg(index: int):
    """HIP takes `const void*` where CUDA's C++ API takes the kernel itself: cudaFuncSetAttribute(k, ...) ->
    hipFuncSetAttribute(reinterpret_cast<const void*>(k), ...). Arguments already cast are left alone."""
    def handler(ctx: HandlerContext, call: Call) -> None:
        if index < len(call.args) and not _ALREADY_VOID.match(ctx.arg_text(call, index)):
            wrap_arg(ctx, call, index, "reinterpret_cast<const void*>(", ")")
    handler.__doc__ = f"cast argument {index} to const void*"
    return handler


def malloc_host(ctx: HandlerContext, call: Call) -> None:
    """cudaMallocHost(p, n) -> hipHostMalloc(p, n, hipHostMallocDefault), hipify-clang's output: the flags make
    the call match HIP's C declaration `hipHostMalloc(void**, size_t, unsigned)` too, not only the C++ template
    overload whose flags default (hipMallocHost, the direct counterpart, is deprecated)."""
    ctx.rename(call.name_tok, "hipHostMalloc")
    if len(call.args) == 2:
        _, e = ctx.arg_span(call, 1)
        ctx.edit(e, e, ", hipHostMallocDefault")


_HOST_ALLOC_FLAGS = {"cudaHostAllocDefault": "hipHostMallocDefault", "cudaHostAllocPortable": "hipHostMallocPortable",
                     "cudaHostAllocMapped": "hipHostMallocMapped",
                     "cudaHostAllocWriteCombined": "hipHostMallocWriteCombined"}


def host_alloc(ctx: HandlerContext, call: Call) -> None:
    """cudaHostAlloc(p, n, flags): the flags are spelled hipHostMalloc* in HIP (there are no hipHostAlloc*
    flag names); the tables rename them, this keeps them right even where a table row is missing."""
    if len(call.args) >= 3:
        a, b = call.args[2]
        for i in range(a, b + 1):
            t = ctx.tokens[i]
            if t.kind == "IDENTIFIER" and t.spelling in _HOST_ALLOC_FLAGS:
                ctx.rename(i, _HOST_ALLOC_FLAGS[t.spelling])


def by_arg_count(count: int, hip_name: str, doc: str):
    """A CUDA call whose C++ overload (or newer signature) with `count` arguments is another HIP function."""
    def handler(ctx: HandlerContext, call: Call) -> None:
        if len(call.args) == count:
            ctx.rename(call.name_tok, hip_name)
    handler.__doc__ = doc
    return handler


def _int_literal(text: str):
    m = _INT_LITERAL.match(text.strip())
    if not m:
        return None
    digits = m.group(1).replace("'", "")
    try:
        return int(digits, 0) if not (len(digits) > 1 and digits[0] == "0" and digits[1].isdigit()) \
            else int(digits, 8)
    except ValueError:
        return None


def _mask_value(ctx: HandlerContext, call: Call, text: str):
    """(value, is_64bit) of the mask argument, from clang when it has the call, else from the literal."""
    node = ctx.call_node(call)
    if node is not None:
        args = node.args()
        if args:
            a = args[0]
            v = a.value
            if isinstance(v, int) and not isinstance(v, bool):
                size = a.type_size()
                return v, size == 8
            size = a.type_size()
            return None, (size == 8 if size else None)
    t = text.replace(" ", "")
    lit = _int_literal(t)
    if lit is not None:
        suffix = _INT_LITERAL.match(t).group(2).lower()
        return lit, "ll" in suffix or lit > 0xffffffff
    if t in ("~0", "~0u", "~0U", "-1", "~0x0", "~0x0u"):
        return 0xffffffff, False
    if t in ("~0ull", "~0ULL", "~0llu", "~0LLU", "~0ll", "~0LL", "~0ul", "~0UL"):
        return 0xffffffffffffffff, True
    return None, None


def lane_mask(ctx: HandlerContext, call: Call) -> None:
    """*_sync intrinsics keep their names (HIP >= 6.2) but take 64-bit masks: a full 32-bit mask
    (0xffffffff, ~0u, FULL_MASK) becomes 0xffffffffffffffff so it names every lane of a wave64; other
    32-bit masks are widened so HIP's static_assert on the mask width holds."""
    name = ctx.tokens[call.name_tok].spelling
    ctx.need_helper(name)
    if not call.args:
        return
    text = ctx.arg_text(call, 0)
    if text.replace(" ", "") == "__activemask()":
        return                      # already a 64-bit mask in HIP
    value, wide = _mask_value(ctx, call, text)
    s, e = ctx.arg_span(call, 0)
    if value is not None:
        if value in (0xffffffff, -1) and not wide:
            ctx.edit(s, e, FULL_MASK_64)
        elif value == 0xffffffffffffffff or wide:
            return
        else:
            lit = _INT_LITERAL.match(text.strip())
            if lit:
                ctx.edit(s, e, lit.group(1) + "ull")
            else:
                ctx.edit(s, e, f"static_cast<unsigned long long>({text})")
            ctx.note("CP203", s, e, f"partial lane mask `{text}` covers lanes 0-31 only; on a wave64 lanes "
                                    f"32-63 do not take part")
        return
    if wide is False:
        ctx.edit(s, e, f"static_cast<unsigned long long>({text})")
        ctx.note("CP202", s, e, f"32-bit lane mask `{text}` widened; on a wave64 it names lanes 0-31 only: "
                                f"compute it as a 64-bit mask")


def plain_intrinsic(ctx: HandlerContext, call: Call) -> None:
    """Intrinsics HIP only has from 6.2 (__activemask): record the fallback helper."""
    ctx.need_helper(ctx.tokens[call.name_tok].spelling)


HANDLERS = {
    "cudaMemcpyToSymbol": symbol_arg(0),
    "cudaMemcpyToSymbolAsync": symbol_arg(0),
    "cudaMemcpyFromSymbol": symbol_arg(1),
    "cudaMemcpyFromSymbolAsync": symbol_arg(1),
    "cudaGetSymbolAddress": symbol_arg(1),
    "cudaGetSymbolSize": symbol_arg(1),
    # (pGraphNode, graph, pDependencies, numDependencies, symbol | dst, symbol, ...)
    "cudaGraphAddMemcpyNodeToSymbol": symbol_arg(4),
    "cudaGraphAddMemcpyNodeFromSymbol": symbol_arg(5),
    "cudaGraphMemcpyNodeSetParamsToSymbol": symbol_arg(1),
    "cudaGraphMemcpyNodeSetParamsFromSymbol": symbol_arg(2),
    "cudaGraphExecMemcpyNodeSetParamsToSymbol": symbol_arg(2),
    "cudaGraphExecMemcpyNodeSetParamsFromSymbol": symbol_arg(3),
    "cudaFuncSetAttribute": function_arg(0),
    "cudaFuncSetCacheConfig": function_arg(0),
    "cudaFuncSetSharedMemConfig": function_arg(0),
    "cudaFuncGetAttributes": function_arg(1),
    "cudaLaunchKernel": function_arg(0),
    "cudaLaunchCooperativeKernel": function_arg(0),
    # cuda_runtime.h's C++ overload cudaEventCreate(&e, flags)
    "cudaEventCreate": by_arg_count(2, "hipEventCreateWithFlags", "cudaEventCreate(&e, flags) -> "
                                    "hipEventCreateWithFlags (HIP has no two-argument hipEventCreate)"),
    # CUDA 12's cudaGraphInstantiate(&exec, graph, flags); hipGraphInstantiate keeps the 5-argument form
    "cudaGraphInstantiate": by_arg_count(3, "hipGraphInstantiateWithFlags", "cudaGraphInstantiate(&exec, graph, "
                                         "flags) (CUDA 12) -> hipGraphInstantiateWithFlags"),
    "cudaMallocHost": malloc_host,
    "cudaHostAlloc": host_alloc,
    "__activemask": plain_intrinsic,
    **{n: lane_mask for n in MASK_FIRST},
}


_NULL_ARG = re.compile(r"^\(?\s*(?:0|NULL|nullptr|0L|0UL)\s*\)?$")


def table_rewrites(rows):
    """The argument rewrites of rules/hip/arguments.csv (HIPIFY's FuncArgCasts) for one function: every position
    refers to the CUDA call's arguments; a moved or copied argument carries its renames."""
    def handler(ctx: HandlerContext, call: Call) -> None:
        apply_arg_rewrites(ctx, call, rows)
    handler.__doc__ = "; ".join(f"{r.action} argument {r.arg}" for r in rows)
    return handler


def _remove_span(ctx: HandlerContext, call: Call, first: int, last: int) -> tuple[int, int]:
    """Bytes to delete for arguments first..last with one of their commas."""
    n = len(call.args)
    if last + 1 < n:
        return ctx.arg_start(call, first), ctx.arg_start(call, last + 1)
    if first > 0:
        return ctx.arg_end(call, first - 1), ctx.arg_end(call, last)
    return ctx.arg_start(call, first), ctx.arg_end(call, last)


def _insert_at(ctx: HandlerContext, call: Call, pos: int, text: str) -> None:
    """`text` becomes argument `pos` (after the last one when pos is past the end)."""
    n = len(call.args)
    if pos < n:
        s = ctx.arg_start(call, pos)
        ctx.edit(s, s, text + ", ")
    elif n:
        e = ctx.arg_end(call, n - 1)
        ctx.edit(e, e, ", " + text)
    else:
        e = ctx.tokens[call.lparen].end
        ctx.edit(e, e, text)


def apply_arg_rewrites(ctx: HandlerContext, call: Call, rows) -> None:
    n = len(call.args)
    name = call.name
    for r in rows:
        if r.action == "wrap":
            if r.arg < n and not ctx.arg_text(call, r.arg).startswith(r.value + "(") \
                    and not (r.value.startswith("reinterpret_cast<const void*>")
                             and _ALREADY_VOID.match(ctx.arg_text(call, r.arg))):
                wrap_arg(ctx, call, r.arg, r.value + "(", ")")
        elif r.action == "add":
            value = ctx.hip_version_code() if r.value == "hip_version" else r.value
            _insert_at(ctx, call, min(r.arg, n), value)
        elif r.action == "replace":
            if r.arg < n:
                s, e = ctx.arg_span(call, r.arg)
                ctx.drop_renames(s, e)
                ctx.edit(s, e, r.value)
        elif r.action == "remove":
            if r.arg >= n:
                continue
            text = ctx.arg_text(call, r.arg)
            s, e = _remove_span(ctx, call, r.arg, r.arg)
            ctx.drop_renames(s, e)
            ctx.edit(s, e, "")
            if r.warning and not _NULL_ARG.match(text):
                a, b = ctx.arg_span(call, r.arg)
                ctx.note(UNSUPPORTED, a, b, f"argument {r.arg + 1} of `{name}` (`{text}`) has no HIP counterpart "
                                            f"and is dropped: the result may differ from CUDA's")
        elif r.action in ("move", "copy"):
            last = r.arg + (r.count if r.action == "move" else 1) - 1
            if last >= n:
                continue
            text = ctx.translated(call.args[r.arg][0], call.args[last][1])
            _insert_at(ctx, call, r.to, text)
            if r.action == "move":
                s, e = _remove_span(ctx, call, r.arg, last)
                ctx.drop_renames(s, e)
                ctx.edit(s, e, "")


# --- kernel launches ------------------------------------------------------------------------------------------

def _callee_start(tokens, lt: int) -> int | None:
    """Token index where the kernel expression before `<<<` (token `lt`) starts: `k`, `ns::k`, `k<T, 4>`."""
    i = lt - 1
    while i >= 0 and tokens[i].kind == "COMMENT":
        i -= 1
    if i < 0:
        return None
    if tokens[i].spelling == ">":            # template arguments: walk back to the matching `<`
        depth = 0
        while i >= 0:
            s = tokens[i].spelling
            if s == ">":
                depth += 1
            elif s == ">>":
                depth += 2
            elif s == "<":
                depth -= 1
                if depth == 0:
                    break
            elif s in (";", "{", "}"):
                return None
            i -= 1
        i -= 1
        if i < 0:
            return None
    if tokens[i].kind not in ("IDENTIFIER", "KEYWORD") and tokens[i].spelling != ")":
        return None
    if tokens[i].spelling == ")":            # (*kernel_ptr)<<<...>>>: a parenthesised expression
        depth = 0
        while i >= 0:
            s = tokens[i].spelling
            if s == ")":
                depth += 1
            elif s == "(":
                depth -= 1
                if depth == 0:
                    break
            i -= 1
        return i if i >= 0 else None
    while i >= 2 and tokens[i - 1].spelling == "::" and tokens[i - 2].kind == "IDENTIFIER":
        i -= 2
    if i >= 1 and tokens[i - 1].spelling == "::":        # ::kernel
        i -= 1
    return i


def _split_config(tokens, lt: int, gt: int) -> list[tuple[int, int]]:
    parts, depth, first, last = [], 0, None, None
    for i in range(lt + 1, gt):
        t = tokens[i]
        s = t.spelling
        if t.kind == "PUNCTUATION":
            if s in ("(", "[", "{"):
                depth += 1
            elif s in (")", "]", "}"):
                depth -= 1
            elif s == "," and depth == 0:
                if first is not None:
                    parts.append((first, last))
                first = last = None
                continue
        if t.kind != "COMMENT":
            if first is None:
                first = i
            last = i
    if first is not None:
        parts.append((first, last))
    return parts


@dataclass
class Launch:
    callee: tuple[int, int]        # token indexes (first, last)
    lt: int                        # `<<<`
    gt: int                        # `>>>`
    config: list[tuple[int, int]]
    lparen: int
    rparen: int
    args: list[tuple[int, int]]


def find_launches(tokens) -> list[Launch]:
    out = []
    for i, t in enumerate(tokens):
        if t.kind != "PUNCTUATION" or t.spelling != "<<<":
            continue
        start = _callee_start(tokens, i)
        if start is None:
            continue
        j = i + 1
        depth = 0
        while j < len(tokens):
            s = tokens[j].spelling
            if s in ("(", "[", "{"):
                depth += 1
            elif s in (")", "]", "}"):
                depth -= 1
            elif s == ">>>" and depth == 0:
                break
            elif s == ";":
                j = len(tokens)
                break
            j += 1
        if j >= len(tokens):
            continue
        k = j + 1
        while k < len(tokens) and tokens[k].kind == "COMMENT":
            k += 1
        if k >= len(tokens) or tokens[k].spelling != "(":
            continue
        r = split_args(tokens, k)
        if r is None:
            continue
        callee_end = i - 1
        while tokens[callee_end].kind == "COMMENT":
            callee_end -= 1
        out.append(Launch((start, callee_end), i, j, _split_config(tokens, i, j), k, r[0], r[1]))
    return out


def hip_launch_edits(tokens, text_of, launch: Launch, template_kernel: bool = False
                     ) -> list[tuple[int, int, str]] | None:
    """`k<<<g, b, s, st>>>(args)` -> `hipLaunchKernelGGL(k, dim3(g), dim3(b), s, st, args)` as edits that only
    touch what lies between the kept pieces (callee, configuration and argument texts stay byte-for-byte, so
    renames inside them still apply). Template kernels get HIP_KERNEL_NAME(...) around the name; omitted shared
    memory and stream become 0 (hipify-clang's output). `template_kernel`: the callee names a template whose
    arguments the call deduces; HIP-Clang's hipLaunchKernelGGL expands to `k<<<...>>>(args)`, so they are
    deduced as before (HIP_KERNEL_NAME(k), as hipify-clang writes it)."""
    cfg = launch.config
    if len(cfg) < 2 or len(cfg) > 4:
        return None
    cs, ce = tokens[launch.callee[0]].start, tokens[launch.callee[1]].end
    callee = text_of(cs, ce)
    template = "<" in callee or template_kernel
    items: list = ["hipLaunchKernelGGL(" + ("HIP_KERNEL_NAME(" if template else ""), (cs, ce),
                   (")" if template else "") + ", "]
    for a, b in cfg[:2]:
        s, e = tokens[a].start, tokens[b].end
        wrap = not text_of(s, e).startswith("dim3(")
        items += ["dim3(" if wrap else "", (s, e), (")" if wrap else "") + ", "]
    for n in (2, 3):
        if n < len(cfg):
            a, b = cfg[n]
            items.append((tokens[a].start, tokens[b].end))
        else:
            items.append("0")
        items.append(", " if n == 2 else "")
    if launch.args:
        items.append(", ")
        items.append((tokens[launch.args[0][0]].start, tokens[launch.args[-1][1]].end))
    items.append(")")
    # turn the sequence into edits over the gaps between kept spans
    edits = []
    pos = cs
    pending = ""
    for it in items:
        if isinstance(it, str):
            pending += it
            continue
        s, e = it
        if pending or s != pos:
            edits.append((pos, s, pending))
        pending = ""
        pos = e
    edits.append((pos, tokens[launch.rparen].end, pending))
    return [(s, e, _keep_comments(tokens, text_of, s, e, t)) for s, e, t in edits]


def _keep_comments(tokens, text_of, start: int, end: int, text: str) -> str:
    """Comments inside a replaced gap are carried over after the new text (a `//` comment with its line
    break), so rewriting a launch never loses one."""
    if end <= start:
        return text
    lo = bisect.bisect_left([t.start for t in tokens], start)
    out = text
    for t in tokens[lo:]:
        if t.start >= end:
            break
        if t.kind != "COMMENT":
            continue
        out = (out.rstrip(" ") + " " if out and not out.endswith(("(", "\n")) else out) + t.spelling
        if t.spelling.startswith("//"):
            nxt = next((u.start for u in tokens[lo:] if u.start > t.start and u.kind != "COMMENT"), end)
            ws = text_of(t.end, min(nxt, end))
            out += ws if "\n" in ws else "\n"
    return out
