#!/usr/bin/env bash
# bench/breadth.py --verify on a lent NVIDIA GPU: each derived case of the breadth sample's valid kernels runs as
# the CUDA original (NVRTC through CuPy) and as cuport's GLSL translation on the NVIDIA Vulkan driver (subgroup
# 32), compared with each other; the translations are the ones RESULTS.json records (--reuse: not translated
# again). Needs .gpu/ (kit.sh) and .gpu/hec/src (the HeCBench programs, extracted as docs/breadth.md says) carried.
# TARGETS (default cuda,vulkan) with opencl runs the OpenCL translations on NVIDIA's OpenCL driver too (ocl.sh).
# A case whose fixed sizes are over the CPU cap (linearprobing's 2^27-slot table) runs under 2^28 elements here.
# EXTRA (optional) is passed to breadth.py: `--verify-run-args` runs the kernels at their Makefile `run:` arguments
# only (no Oclgrind here to find the assumed sizes out of bounds: vadd's vectorized kernel).
# Usage: bash bench/gpu/breadth_gpu.sh LIST RESULTS.json NAME [TARGETS [EXTRA]]   (results in $OUT/NAME.{json,md,err})
set -u
. "$(dirname "$0")/kit.sh"
nvidia-smi -L > "$O/device.txt" 2>&1
T=${4:-cuda,vulkan}
case $T in *opencl*) . "$(dirname "$0")/ocl.sh" ;; esac
python3 bench/breadth.py .gpu/hec --list "$1" --reuse "$2" --verify --verify-targets "$T" \
  --verify-timeout 60 --verify-large-cap $((1 << 28)) ${5:-} --json "$O/$3.json" --markdown > "$O/$3.md" 2> "$O/$3.err"
echo "breadth $3: exit $?"
grep -A1 "^\*\*verify\*\*" "$O/$3.md" | head -1
exit 0
