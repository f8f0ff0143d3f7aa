"""Mutators: (random, seed bytes) -> new bytes. Each one models a kind of file a linter meets in the wild."""
from __future__ import annotations

from . import gen

MAX_HUGE = 300_000   # "huge" inputs stay below this many bytes: big enough for the super-linear, cheap for 2 cores


def byte_flips(r, data: bytes) -> bytes:
    b = bytearray(data or b"\n")
    for _ in range(r.randint(1, 8)):
        j = r.randint(0, len(b) - 1)
        b[j] = r.choice([b[j] ^ (1 << r.randint(0, 7)), r.randint(0, 255), ord(r.choice("{}()[];\"'\\/*#<>?:"))])
    return bytes(b)


def truncate(r, data: bytes) -> bytes:
    return data[:r.randint(0, len(data))]


def splice_lines(r, data: bytes) -> bytes:
    """Delete, duplicate or swap a run of lines (unbalanced braces, #if without #endif, repeated kernels)."""
    lines = data.splitlines(True)
    if len(lines) < 2:
        return data + data
    a = r.randint(0, len(lines) - 1)
    b = r.randint(a, min(len(lines), a + 12))
    op = r.randint(0, 2)
    if op == 0:
        del lines[a:b]
    elif op == 1:
        lines[b:b] = lines[a:b] * r.randint(1, 4)
    else:
        c = r.randint(0, len(lines) - 1)
        lines[a], lines[c] = lines[c], lines[a]
    return b"".join(lines)


def insert_token(r, data: bytes) -> bytes:
    tokens = [b"{", b"}", b"(", b")", b";", b"#if 0\n", b"#endif\n", b"#define warpSize 64\n", b"__syncthreads();",
              b"\\\n", b"??/", b"\x00", b"#include \"nope.h\"\n", b"template <int N>", b"<<<1, 32>>>", b"asm(\"\");",
              b"#pragma unroll\n", b"__shared__ float z[32];", b"& 31", b"% 32", b"/ 32", b">> 5", b"0xffffffff",
              b"__shfl_down_sync(0xffffffff, v, 16)", b"// cuport: ignore[CP102]", b"// noqa: CP999",
              b"// cuport: disable[CP401]", b"#line 1 \"x.cu\"\n", b"_Pragma(\"x\")", b"__launch_bounds__(64)",
              b"<< 0xffffffff", b">> 4000000000", b"* 0x7fffffffffffffff", b"/ 0", b"% 0", b"1e999", b"-2147483648"]
    j = r.randint(0, len(data))
    return data[:j] + r.choice(tokens) + data[j:]


def unterminated(r, data: bytes) -> bytes:
    """An opened literal or comment that never closes, at a random point or at the end."""
    opener = r.choice([b'"abc', b"'a", b"/* never closed", b'R"(raw', b'R"delim(', b'u8"', b"'\\", b'"\\'])
    j = r.choice([len(data), r.randint(0, len(data))])
    return data[:j] + opener + data[j:]


def deep_nesting(r, data: bytes) -> bytes:
    maker = r.choice([gen.nested_ifs, gen.nested_ternary, gen.nested_parens])
    return data + b"\n" + maker(r.choice([50, 200, 1000, 2000, 3000])).encode()


def long_lines(r, data: bytes) -> bytes:
    if r.randint(0, 1):
        return data + b"\n" + gen.long_line(r.choice([10_000, 100_000, 250_000])).encode()
    return data.replace(b"\n", b" ", r.randint(1, 10_000))   # join many lines into one (comments swallow code)


def macro_bomb(r, data: bytes) -> bytes:
    return data + b"\n" + gen.macro_bomb(r.choice([4, 8, 12, 14, 15, 16])).encode()


def long_sum(r, data: bytes) -> bytes:
    return data + b"\n" + gen.long_sum(r.choice([100, 1000, 4000, 8000])).encode()


def encoding(r, data: bytes) -> bytes:
    """Latin-1, UTF-16 (with and without BOM), UTF-8 BOM, CRLF, bare CR, NUL bytes, bad UTF-8."""
    text = data.decode("utf-8", "replace")
    op = r.randint(0, 8)
    if op == 0:
        return text.replace("//", "// caf\u00e9 \u00b5s ", 3).encode("latin-1", "replace")
    if op == 1:
        return text.encode(r.choice(["utf-16", "utf-16-le", "utf-16-be"]))
    if op == 2:
        return b"\xef\xbb\xbf" + data
    if op == 3:
        return data.replace(b"\r\n", b"\n").replace(b"\n", b"\r\n")
    if op == 4:
        return data.replace(b"\n", b"\r")
    if op == 5:
        j = r.randint(0, len(data))
        return data[:j] + r.choice([b"\xff\xfe", b"\xc3", b"\xed\xa0\x80", b"\xf4\x90\x80\x80"]) + data[j:]
    if op == 6:
        return data.replace(b"int ", "int \u00e9t\u00e9_".encode(), r.randint(1, 3))   # non-ASCII identifiers
    if op == 7:
        return data.replace(b"    ", b"\t", r.randint(1, 50))                       # tabs before columns
    return "\u00e9\u00e0\u4e2d\U0001f600 ".encode() + data.replace(b"\n", " \u00b5\n".encode(), 20)


def huge(r, data: bytes) -> bytes:
    if not data:
        return data
    reps = max(1, r.randint(MAX_HUGE // 4, MAX_HUGE) // len(data))
    # renaming per copy keeps the kernels distinct (duplicate definitions are a different, cheaper error)
    return b"\n".join(data.replace(b"__global__ void ", b"__global__ void c%d_" % j) for j in range(reps))


def generated(r, data: bytes) -> bytes:
    """A fresh program from the generators (the seed is ignored), sometimes appended to it."""
    prog = gen.program(r).encode()
    return data + b"\n" + prog if r.randint(0, 2) == 0 else prog


# weights: cheap local mutations most often, the expensive stress shapes rarely
MUTATORS = [
    (byte_flips, 6), (truncate, 3), (splice_lines, 5), (insert_token, 6), (unterminated, 3), (encoding, 5),
    (generated, 6), (deep_nesting, 1), (long_lines, 1), (macro_bomb, 1), (long_sum, 1), (huge, 1),
]
_EXPENSIVE = {deep_nesting, long_lines, macro_bomb, long_sum, huge}


def mutate(r, data: bytes) -> tuple[str, bytes]:
    """Apply one to three mutators (at most one expensive one); returns ('name+name', bytes)."""
    names = []
    expensive = False
    for _ in range(r.randint(1, 3)):
        pool = [(m, w) for m, w in MUTATORS if not (expensive and m in _EXPENSIVE)]
        m = _weighted(r, pool)
        expensive |= m in _EXPENSIVE
        data = m(r, data)
        names.append(m.__name__)
    return "+".join(names), data


def _weighted(r, pool):
    total = sum(w for _, w in pool)
    x = r.randint(1, total)
    for m, w in pool:
        x -= w
        if x <= 0:
            return m
    return pool[-1][0]
