"""cuport verify spec for the tiled transposes (same result; the padded tile avoids bank conflicts)."""
from porter.verify.spec import Case

COMMON = dict(
    # odata is width x height (rows x columns), idata height x width, both row-major.
    signature="odata: f32[width, height] out, idata: f32[height, width] in, width: i32, height: i32",
    grid="(ceil(width / 32), ceil(height / 32))",
    block="(32, 8)",
    reference=lambda idata: {"odata": idata.T},
    sizes=[{"width": 64, "height": 64}, {"width": 100, "height": 37}, {"width": 1024, "height": 768}],
    bytes="8 * width * height",
    bench_sizes={"width": 32768, "height": 16384},
)

KERNELS = [
    Case(source="transpose_naive_tile.cu", kernel="transpose_naive_tile", **COMMON),
    Case(source="transpose_padded.cu", kernel="transpose_padded", **COMMON),
]
