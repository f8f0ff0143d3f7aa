#!/usr/bin/env bash
# `cuport verify --bench` on a lent NVIDIA GPU: every example with a bench size x CUDA original, HIP-on-NVIDIA
# (NVRTC), GLSL-on-Vulkan (NVIDIA driver), cuBLAS beside the SGEMM; one run per target order given.
#   bash bench/gpu/perf.sh [test] [forward,reverse]    (results in $OUT or out/gpu: bench.json / .txt / .svg;
#   one set-up per case, timed in each order; progress lines on stderr)
# Needs .gpu/ carried along, as bench/gpu/h100.sh describes (debs/, whl/, bin/). hip_reduce is left out: it is one
# block of 256 threads by design, no size makes it run 1 ms.
set -u
. "$(dirname "$0")/kit.sh"
# EXAMPLES="examples/a examples/b" in the environment benches only those
EXAMPLES=${EXAMPLES:-"examples/sgemm examples/warp_reduce examples/transpose examples/saxpy examples/matmul_tiled
  examples/block_reduce_perwarp examples/bad_branch examples/warp_histogram examples/struct_refs
  examples/argmax_two_level"}
{ nvidia-smi -L; nvidia-smi -q -d CLOCK,PERFORMANCE | head -80; } > "$O/device.txt" 2>&1
if [ "${1:-}" = test ]; then     # the GPU tests of the bench first (tests/test_verify_bench_gpu.py)
  shift
  python3 -m pytest -q -p no:cacheprovider tests/test_verify_bench_gpu.py tests/test_verify_gpu.py > "$O/pytest-gpu.txt" 2>&1
  echo "pytest gpu: $(tail -1 "$O/pytest-gpu.txt")"
fi
ORDERS=${1:-forward,reverse}
start=$(date +%s)
# shellcheck disable=SC2086
python3 -m porter verify $EXAMPLES --targets cuda,hip-nvidia,vulkan --bench --repeat ${REPEAT:-30} \
  --bench-order "$ORDERS" --timeout 240 --bench-json "$O/bench.json" --bench-plot "$O/bench.svg" > "$O/bench.txt"
echo "bench $ORDERS: rc $? in $(( $(date +%s) - start )) s: $(tail -1 "$O/bench.txt")"
exit 0
