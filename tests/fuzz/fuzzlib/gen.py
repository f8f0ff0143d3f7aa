"""Generators of CUDA expressions and kernels.

Every generator takes `r`, anything with `choice(seq)` and `randint(a, b)`: a `random.Random` (the mutation
fuzzer, seeded and reproducible) or a `Draw` adapter over hypothesis's `draw` (see `strategies`), so the same
code gives shrinkable hypothesis strategies and cheap seeded inputs.
"""
from __future__ import annotations

# Leaves the rules care about: thread ids, warp-size constants, masks, lane arithmetic.
THREAD = ["threadIdx.x", "threadIdx.y", "blockIdx.x", "blockDim.x", "blockDim.y", "gridDim.x", "tid", "lane",
          "warp", "i", "n"]
CONST = ["0", "1", "2", "5", "16", "31", "32", "33", "63", "64", "255", "1024", "0xffffffff", "0xffffffffu",
         "0xffffffffffffffffull", "1u", "-1", "3.5f", "1e30", "warpSize", "WARP", "(WARP - 1)"]
BINOP = ["+", "-", "*", "/", "%", "&", "|", "^", "<<", ">>", "<", "<=", "==", "!=", "&&", "||"]
UNOP = ["-", "!", "~", "(int)", "(unsigned)", "(float)"]
CALLS = ["__shfl_down_sync({m}, {a}, {b})", "__shfl_xor_sync({m}, {a}, {b})", "__shfl_sync({m}, {a}, {b})",
         "__ballot_sync({m}, {a})", "__popc({a})", "__any_sync({m}, {a})", "min({a}, {b})", "max({a}, {b})",
         "atomicAdd(&s[{a} & 63], {b})", "s[({a}) & 63]", "in[{a}]", "__activemask()", "__ffs({a})"]
MASKS = ["0xffffffff", "0xffffffffu", "__activemask()", "mask", "0x0000ffff", "(1u << lane)"]


def expr(r, depth: int = 3) -> str:
    """An int-ish CUDA expression of nesting depth at most `depth`."""
    if depth <= 0 or r.randint(0, 3) == 0:
        return r.choice(THREAD + CONST)
    kind = r.randint(0, 5)
    if kind <= 2:
        return f"({expr(r, depth - 1)} {r.choice(BINOP)} {expr(r, depth - 1)})"
    if kind == 3:
        return f"{r.choice(UNOP)}({expr(r, depth - 1)})"
    if kind == 4:
        return f"({expr(r, depth - 1)} ? {expr(r, depth - 1)} : {expr(r, depth - 1)})"
    return r.choice(CALLS).format(m=r.choice(MASKS), a=expr(r, depth - 1), b=expr(r, depth - 1))


def statement(r, depth: int = 2) -> str:
    kind = r.randint(0, 11 if depth > 0 else 6)
    e = lambda: expr(r, r.randint(0, 3))  # noqa: E731
    if kind == 0:
        return f"v += {e()};"
    if kind == 1:
        return f"s[{e()} & 63] = {e()};"
    if kind == 2:
        return "__syncthreads();"
    if kind == 3:
        return "__syncwarp();"
    if kind == 4:
        return f"out[{e()}] = v;"
    if kind == 5:
        return f"v = __shfl_down_sync({r.choice(MASKS)}, v, {r.choice(['16', '8', 'warpSize / 2', 'offset'])});"
    if kind == 6:
        return f"unsigned b = __ballot_sync({r.choice(MASKS)}, {e()}); v += __popc(b);"
    body = " ".join(statement(r, depth - 1) for _ in range(r.randint(1, 3)))
    if kind == 7:
        return f"if ({e()}) {{ {body} }}"
    if kind == 8:
        return f"if ({e()}) {{ {body} }} else {{ {statement(r, depth - 1)} }}"
    if kind == 9:
        start = r.choice(["16", "warpSize / 2", "WARP / 2", "blockDim.x / 2", "32"])
        return f"for (int offset = {start}; offset > 0; offset /= 2) {{ {body} }}"
    if kind == 10:
        return f"for (int k = 0; k < {r.choice(['n', '32', 'WARP', 'warpSize'])}; ++k) {{ {body} }}"
    return f"while ({e()}) {{ {body} break; }}"


def kernel(r, name: str = "k") -> str:
    """A whole kernel with shared memory and a host launch; not always valid CUDA (that is the point)."""
    shared = r.choice(["32", "64", "WARP", "256", "33 * 32", "1024"])
    prelude = r.choice(["#define WARP 32\n", "constexpr int WARP = 32;\n", "#define WARP warpSize\n",
                        "enum { WARP = 32 };\n"])
    body = "\n    ".join(statement(r) for _ in range(r.randint(1, 6)))
    block = r.choice(["128", "256", "dim3(32, 8)", "96", "WARP * 4", "1024"])
    return (f"{prelude}"
            f"__global__ void {name}(const float* in, float* out, int n, unsigned mask) {{\n"
            f"    __shared__ float s[{shared}];\n"
            f"    int tid = threadIdx.x; int lane = threadIdx.x & 31; int warp = threadIdx.x / 32;\n"
            f"    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
            f"    float v = i < n ? in[i] : 0.0f;\n"
            f"    {body}\n"
            f"    out[i] = v;\n"
            f"}}\n\n"
            f"void launch_{name}(const float* in, float* out, int n) {{\n"
            f"    {name}<<<(n + 255) / 256, {block}>>>(in, out, n, 0xffffffffu);\n"
            f"}}\n")


def program(r) -> str:
    """One to three kernels, sometimes with a device helper."""
    parts = [kernel(r, f"k{j}") for j in range(r.randint(1, 3))]
    if r.randint(0, 2) == 0:
        parts.insert(0, f"__device__ float helper(float x, int lane) {{ return x + {expr(r, 2)}; }}\n")
    return "\n".join(parts)


# --- structural stress: the shapes of issue 11 (depth, width, expansion) -------------------------------------

def nested_ifs(depth: int) -> str:
    body = "v += 1;"
    for j in range(depth):
        body = f"if (threadIdx.x > {j % 97}) {{ {body} }}"
    return f"__global__ void k(float* out) {{ float v = 0; {body} out[threadIdx.x] = v; }}\n"


def nested_ternary(depth: int) -> str:
    e = "0"
    for j in range(depth):
        e = f"(threadIdx.x == {j % 97} ? {j} : {e})"
    return f"__global__ void k(int* out) {{ out[threadIdx.x] = {e}; }}\n"


def nested_parens(depth: int) -> str:
    return f"__global__ void k(int* out) {{ out[threadIdx.x] = {'(' * depth}threadIdx.x & 31{')' * depth}; }}\n"


def long_sum(terms: int) -> str:
    e = " + ".join(f"in[{j % 64}]" for j in range(terms))
    return f"__global__ void k(const float* in, float* out) {{ out[threadIdx.x] = {e}; }}\n"


def macro_bomb(levels: int) -> str:
    """2**levels terms after expansion from `levels` lines of source."""
    lines = ["#define M0 (threadIdx.x & 31)"]
    lines += [f"#define M{j} (M{j - 1} + M{j - 1})" for j in range(1, levels + 1)]
    return "\n".join(lines) + f"\n__global__ void k(int* out) {{ out[threadIdx.x] = M{levels}; }}\n"


def long_line(width: int) -> str:
    return ("__global__ void k(int* out) { int lane = threadIdx.x & 31; out[lane] = "
            + " + ".join(["lane"] * (width // 7)) + "; }\n")


class Draw:
    """`random.Random`'s choice/randint over hypothesis's `draw`, so generators shrink under hypothesis."""

    def __init__(self, draw):
        self.draw = draw

    def choice(self, seq):
        from hypothesis import strategies as st
        return self.draw(st.sampled_from(list(seq)))

    def randint(self, a, b):
        from hypothesis import strategies as st
        return self.draw(st.integers(a, b))


def strategies():
    """(expressions, kernels, programs) as hypothesis strategies (hypothesis is imported only here)."""
    from hypothesis import strategies as st

    @st.composite
    def expressions(draw, depth=4):
        return expr(Draw(draw), depth)

    @st.composite
    def kernels(draw):
        return kernel(Draw(draw))

    @st.composite
    def programs(draw):
        return program(Draw(draw))

    return expressions(), kernels(), programs()
