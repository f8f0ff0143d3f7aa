"""Verify spec of the fixtures: hand-written translations stand in for porter.translate."""
import numpy as np

from porter.verify.spec import Case, Tol, uniform

SAXPY = dict(
    source="saxpy.cu",
    kernel="saxpy",
    signature="n: i32, a: f32 = 2.5, x: f32[n] in, y: f32[n] inout",
    grid="ceil(n / 256)",
    block="256",
    reference=lambda a, x, y: {"y": a * x + y},
    sizes=[{"n": 1000}, {"n": 4096}],
    bytes="12 * n",
    flops="2 * n",
)


def block_sums(x, n, block=256):
    padded = np.zeros(-(-n // block) * block)
    padded[:n] = x
    return padded.reshape(-1, block).sum(axis=1)


REDUCE = dict(
    source="warp_reduce.cu",
    kernel="warp_reduce",
    signature="in: f32[n] in, out: f32[ceil(n / 256)] out, n: i32",
    init={"in": uniform(0.0, 1.0)},
    grid="ceil(n / 256)",
    block="256",
    reference=lambda n, **a: {"out": block_sums(a["in"], n)},
    sizes=[{"n": 1000}],
    tol=Tol(1e-5, 1e-4),
    manifests={"vulkan": "reduce.comp.json"},
)

KERNELS = [
    Case(**SAXPY, translations={"vulkan": "saxpy.comp", "opencl": "saxpy.cl", "hip": "saxpy.hip"}),
    Case(**REDUCE, name="reduce_offset16", translations={"vulkan": "reduce_offset16.comp"}),
    Case(**REDUCE, name="reduce_subgroup_half", translations={"vulkan": "reduce_subgroup_half.comp"}),
    # The subgroup size as spec constant 4: set from the device, left unset (gl_SubgroupSize), or set wrong.
    Case(**{**REDUCE, "manifests": {"vulkan": "reduce_spec_sg.comp.json"}}, name="reduce_spec_sg",
         translations={"vulkan": "reduce_spec_sg.comp"}),
    Case(**{**REDUCE, "manifests": {"vulkan": "reduce_spec_unset.comp.json"}}, name="reduce_spec_unset",
         translations={"vulkan": "reduce_spec_sg.comp"}),
    Case(**{**REDUCE, "manifests": {"vulkan": "reduce_spec_32.comp.json"}}, name="reduce_spec_32",
         translations={"vulkan": "reduce_spec_sg.comp"}),
    # Odd n never finishes (see hang.comp): the even size after it must still run and pass.
    Case(**{**SAXPY, "sizes": [{"n": 1001}, {"n": 1000}],
            "grid": "(ceil(n / 256), 1 + (n % 2) * 65534, 1 + (n % 2) * 65534)"},
         name="saxpy_hang", translations={"vulkan": "hang.comp"}, manifests={"vulkan": "saxpy.comp.json"}),
    Case(**{**SAXPY, "sizes": [{"n": 1000}]}, name="saxpy_broken",
         translations={"vulkan": "broken.comp", "hip": "broken.hip"}, manifests={"vulkan": "saxpy.comp.json"}),
    Case(**SAXPY, name="saxpy_segv", translations={"opencl": "saxpy_segv.cl"}),
    # Expectation markers: the first fails as expected (xfail), the second passes although marked (XPASS).
    Case(**REDUCE, name="reduce_offset16_xfail", expect={"vulkan": "fail"},
         translations={"vulkan": "reduce_offset16.comp"}),
    Case(**SAXPY, name="saxpy_xpass", expect="fail", translations={"vulkan": "saxpy.comp"},
         manifests={"vulkan": "saxpy.comp.json"}),
]
