#!/usr/bin/env bash
# Installs the Debian packages the translate-validation and verify backends use, only when missing.
# Lint and translate work without any of them; verify skips a missing backend with a reason. chromium and
# chromium-driver: the headless browser tests/test_report_html.py loads the HTML report in (skipped without them).
set -u
pkgs=(glslang-tools spirv-tools mesa-vulkan-drivers libvulkan1 pocl-opencl-icd ocl-icd-libopencl1 oclgrind hipcc libamdhip64-dev rocm-device-libs git chromium chromium-driver)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
  echo "cuport: optional system packages missing (${missing[*]}); not root or no apt: verify backends will be skipped" >&2
  exit 0
fi
echo "cuport: installing system packages: ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >/dev/null 2>&1 || true
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null 2>&1 \
  || echo "cuport: apt-get install failed for some of: ${missing[*]} (verify backends needing them will be skipped)" >&2
exit 0
