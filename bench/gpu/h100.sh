#!/usr/bin/env bash
# The GPU half of `cuport verify`, run on a lent NVIDIA H100 (no package registry there): CUDA originals and
# HIP translations through CuPy/NVRTC, GLSL translations on the NVIDIA Vulkan driver (subgroup 32).
# Needs a folder .gpu/ carried along with: debs/ (libvulkan1, libglvnd0, libgl*, libegl1 from Debian),
# whl/ (cp312 wheels: libclang lark jinja2 markupsafe vulkan cffi pycparser), bin/ (glslangValidator, spirv-val).
# Results land in $OUT (the device tool's output folder) or out/gpu.
set -u
. "$(dirname "$0")/kit.sh"
{ nvidia-smi -L; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv; } > "$O/device.txt" 2>&1
python3 -m pytest -q -p no:cacheprovider tests/test_verify_gpu.py > "$O/pytest-gpu.txt" 2>&1
echo "pytest gpu: $(tail -1 "$O/pytest-gpu.txt")"
python3 -m porter verify examples --targets cuda,hip-nvidia,vulkan --timeout 120 > "$O/verify.txt" 2>&1
echo "verify: $(tail -1 "$O/verify.txt")"
python3 -m porter verify examples/sgemm examples/transpose examples/warp_reduce examples/saxpy examples/matmul_tiled \
  --targets cuda,hip-nvidia,vulkan --bench --repeat 30 --timeout 300 > "$O/bench.txt" 2>&1
echo "bench: $(tail -1 "$O/bench.txt")"
python3 -m porter verify examples/sgemm examples/transpose examples/warp_reduce examples/saxpy examples/matmul_tiled \
  --targets cuda,hip-nvidia,vulkan --bench --repeat 30 --timeout 300 --output-format json > "$O/bench.json" 2>/dev/null
exit 0
