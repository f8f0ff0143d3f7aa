"""Keep the device side of a CUDA/HIP file so NVRTC can compile it without the host program.

A brace-matching scan over top-level declarations (comments and literals masked): kernels, device
functions, __constant__/__device__ variables, types, constants and preprocessor lines stay; host
functions (main, launch wrappers), prototypes and #includes become blank lines, so line numbers in
compiler messages still match the original file. The frontend can replace this later.
"""
from __future__ import annotations

import re

_WORDS = ("__global__", "__device__", "__constant__", "__shared__", "__managed__", "__launch_bounds__")
DEVICE_WORDS = re.compile(r"\b(" + "|".join(_WORDS) + r")\b")
TYPE_START = re.compile(r"^\s*(template\s*<.*?>\s*)?(typedef|using|struct|class|union|enum)\b", re.S)
CONSTEXPR = re.compile(r"^\s*(static\s+|inline\s+)*constexpr\b")
LINKAGE = re.compile(r'^\s*((inline\s+)?namespace(\s+[\w:]+)?|extern\s+"C(\+\+)?")\s*$')


def mask(text: str) -> str:
    """The text with comments, string and char literals replaced by spaces (newlines kept)."""
    out = list(text)
    i, n = 0, len(text)

    def blank(a: int, b: int) -> None:
        for k in range(a, b):
            if out[k] != "\n":
                out[k] = " "

    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            blank(i, j)
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            blank(i, j)
            i = j
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            blank(i + 1, min(j, n))     # keep the quotes so `extern "C"` stays recognisable
            i = j + 1
        else:
            i += 1
    return "".join(out)


def _blank_lines(chunk: str) -> str:
    return "\n" * chunk.count("\n")


def _directive_end(m: str, i: int) -> int:
    while True:
        j = m.find("\n", i)
        if j < 0:
            return len(m)
        if m[j - 1] != "\\":
            return j
        i = j + 1


def _match_brace(m: str, i: int) -> int:
    """Index just past the '}' that closes the '{' at i."""
    depth = 0
    for j in range(i, len(m)):
        if m[j] == "{":
            depth += 1
        elif m[j] == "}":
            depth -= 1
            if depth == 0:
                return j + 1
    return len(m)


def device_words(text: str):
    """DEVICE_WORDS plus the object-like macros the file defines as one of them (kalman's `#define DI __device__`,
    ecdh's `#define ESS __host__ __device__`): a function declared with the macro is device code too."""
    names = {m.group(1) for m in re.finditer(r"^[ \t]*#[ \t]*define[ \t]+(\w+)[ \t]+[^\n(]*?" + DEVICE_WORDS.pattern,
                                             text, re.M)}
    if not names:
        return DEVICE_WORDS
    return re.compile(r"\b(" + "|".join(_WORDS + tuple(sorted(names))) + r")\b")


def _keep(header: str, has_body: bool, words=DEVICE_WORDS) -> bool:
    if words.search(header):
        return True
    if TYPE_START.match(header):
        return True
    if has_body:
        return False            # a host function
    if CONSTEXPR.match(header):
        return True             # `constexpr unsigned n(128);`: a constant (a prototype would be harmless too)
    # A declaration: keep constants and variables, drop host function prototypes.
    depth = 0
    for c in header:
        if c == "(":
            if depth == 0 and "=" not in header.split("(")[0]:
                return False    # `void launch(float*);`
            depth += 1
    return True


# CUDA toolkit headers NVRTC compiles given the toolkit's include directories (cuda.toolkit_options()): kept by
# device_code(keep_includes=True); every other #include is host code or the project's (inlined before)
TOOLKIT_INCLUDE = re.compile(r'\s*#\s*include\s*[<"](cuda_fp16\.h|cuda_bf16\.h|cuda_fp8\.h|mma\.h|'
                             r'cuda_pipeline\.h|cooperative_groups(\.h|/[\w/.]+)|cub/[\w/.]+|cuda/[\w/.]+)[>"]')


def _scan(text: str, m: str, start: int, end: int, drop=frozenset(), keep_includes: bool = False,
          words=DEVICE_WORDS) -> str:
    """`drop`: 1-based lines whose top-level declaration goes too unless it is a device one (NVRTC's errors in
    host declarations kept as constants or types: device_code's `drop`)."""
    out: list[str] = []
    dropped_kernels = sorted(x for x in drop if isinstance(x, str))
    drop = frozenset(x for x in drop if not isinstance(x, str))

    def keep(header: str, has_body: bool, a: int, b: int) -> bool:
        if dropped_kernels and any(k.group(1) in dropped_kernels for k in kernel_headers(header)):
            return False        # another kernel NVRTC rejected (cuda.repaired): the case's kernel does not need it
        if drop and not words.search(header) and \
                any(text.count("\n", 0, a) + 1 <= ln <= text.count("\n", 0, b) + 1 for ln in drop):
            return False
        return _keep(header, has_body, words)
    i = start
    while i < end:
        if m[i].isspace():
            out.append(text[i])
            i += 1
            continue
        if m[i] == "#":
            j = _directive_end(m, i)
            line = text[i:j]
            out.append(line if keep_includes and TOOLKIT_INCLUDE.match(line) else
                       _blank_lines(line) if re.match(r"#\s*include\b", m[i:j]) else line)
            i = j
            continue
        if m[i] == "}":          # stray closer (unbalanced input): pass it on
            out.append(text[i])
            i += 1
            continue
        # One top-level declaration: up to ';' at depth 0, or a braced body.
        j = i
        while j < end and m[j] not in ";{" and not (m[j] == "#" and m[j - 1] == "\n"):
            j += 1
        if j >= end or m[j] == "#":
            out.append(text[i:j])
            i = j
            continue
        if m[j] == ";":
            chunk = text[i:j + 1]
            out.append(chunk if keep(m[i:j], False, i, j) else _blank_lines(chunk))
            i = j + 1
            continue
        header = m[i:j]
        close = _match_brace(m, j)
        if LINKAGE.match(header):
            out.append(text[i:j + 1])
            out.append(_scan(text, m, j + 1, close - 1, drop | frozenset(dropped_kernels), keep_includes, words))
            out.append(text[close - 1:close])
            i = close
            continue
        k = close
        # `struct S {...} s;` and `T x = {...};` end with a ';' after the brace (a function's
        # default arguments also hold '=', but never right before its body).
        if header.rstrip().endswith("=") or TYPE_START.match(header) or m[close:].lstrip().startswith(";"):
            k = m.find(";", close)
            k = end if k < 0 else k + 1
            out_chunk = text[i:k]
            out.append(out_chunk if keep(header, False, i, k) else _blank_lines(out_chunk))
        else:
            out_chunk = text[i:close]
            out.append(out_chunk if keep(header, True, i, close) else _blank_lines(out_chunk))
        i = k
    return "".join(out)


# `__launch_bounds__(...)` between `__global__` and the name (hadamard's `__global__
# __launch_bounds__(Ktraits::kNThreads) void k(`, rsmt's): skipped whole, its arguments may hold parentheses
_LAUNCH_BOUNDS = r"__launch_bounds__\s*\((?:[^()]|\([^()]*\))*\)"


def kernel_headers(text: str, name: str | None = None):
    """The one scanner of kernel headers: each `__global__ ... NAME(` (or `NAME<...>(`) in the text, in order, as
    a match whose group 1 is the kernel's name, start() the `__global__`, end() just past the `(` that opens the
    parameters; declarations included. `name`: that kernel's headers only. Callers mask the text first (mask(),
    or comments only) where a commented-out kernel must not count."""
    ident = re.escape(name) if name is not None else r"\w+"
    return re.finditer(r"__global__\b[^;{]*?(?:" + _LAUNCH_BOUNDS + r"[^;{]*?)?\b(?!__launch_bounds__\b)(" + ident +
                       r")\s*(?:<[^;{(]*>\s*)?\(", text)


def kernel_spans(text: str) -> list[tuple[str, int, int]]:
    """(name, first line, last line) of each `__global__` function defined in the text (1-based lines)."""
    m = mask(text)
    out = []
    for k in kernel_headers(m):
        body = m.find("{", k.end())
        semi = m.find(";", k.end())
        if body < 0 or 0 <= semi < body and m.count("(", k.end(), semi) <= m.count(")", k.end(), semi):
            continue                    # a declaration
        end = _match_brace(m, body)
        out.append((k.group(1), text.count("\n", 0, k.start()) + 1, text.count("\n", 0, end) + 1))
    return out


def device_code(text: str, drop=frozenset(), keep_includes: bool = False) -> str:
    """The device part of a CUDA or HIP source file, line numbers preserved; the top-level declarations covering
    a line in `drop` left out too, unless they are device code; kernels named in `drop` (strings) left out. `keep_includes`: the CUDA toolkit's device
    headers stay (cuda_fp16.h, cooperative_groups, CUB) for a compiler that has the toolkit's include path."""
    m = mask(text)
    return _scan(text, m, 0, len(text), frozenset(drop), keep_includes, device_words(m))
