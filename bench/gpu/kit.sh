# Sourced by the bench/gpu scripts on a lent GPU: unpack the carried .gpu/ kit (Vulkan loader and libglvnd debs,
# cp312 wheels, glslangValidator; bench/gpu/h100.sh says how to build it) and point Python and Vulkan at it.
G=.gpu
for f in $G/debs/*.deb; do dpkg -x "$f" /; done
ldconfig
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site $G/whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD PATH=$PWD/$G/bin:$PATH PYTHONUNBUFFERED=1
icd=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
[ -f $icd ] && export VK_DRIVER_FILES=$icd
O=${OUT:-out/gpu}
mkdir -p "$O"
