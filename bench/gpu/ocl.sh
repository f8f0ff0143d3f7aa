# Sourced after kit.sh on a lent NVIDIA GPU: OpenCL through NVIDIA's driver, so `--targets opencl` runs cuport's
# OpenCL translations on the GPU beside the CUDA original. Needs .gpu/whl_ocl/ carried: pyopencl (it bundles the
# ocl-icd loader) and its pure-Python dependencies, fetched here with
#   pip download pyopencl platformdirs pytools typing_extensions siphash24 --python-version 3.12 \
#       --platform manylinux2014_x86_64 --only-binary=:all: --no-deps -d .gpu/whl_ocl
# The driver's libnvidia-opencl.so.1 is mounted but has no ICD file naming it: one is written.
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site_ocl .gpu/whl_ocl/*.whl || return 1
export PYTHONPATH=$PYTHONPATH:/tmp/site_ocl
lib=$(ldconfig -p | grep -o '/[^ ]*libnvidia-opencl.so.1' | head -1)
mkdir -p /etc/OpenCL/vendors
[ -n "$lib" ] && [ ! -f /etc/OpenCL/vendors/nvidia.icd ] && echo "$lib" > /etc/OpenCL/vendors/nvidia.icd
echo "NVIDIA OpenCL: ${lib:-not found}" >> "$O/device.txt"
