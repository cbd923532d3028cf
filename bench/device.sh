#!/usr/bin/env bash
# Runs on the NVIDIA device machine (see BENCHMARKS.md): the release binaries built here and
# carried in .devbin/, Debian's Vulkan loader in .gl/, the validation layer in .vl/.
# Prints the device report, the test suites on the real driver with validation on, and the
# benchmarks beside their PyTorch references from the same run.
set -uo pipefail
for f in .gl/*.deb; do dpkg -x "$f" /; done; ldconfig
icd=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
[ -f "$icd" ] && export VK_DRIVER_FILES=$icd __EGL_VENDOR_LIBRARY_FILENAMES=/usr/local/nvidia/share/glvnd/egl_vendor.d/10_nvidia.json
mkdir -p /tmp/vl && dpkg -x .vl/*.deb /tmp/vl
export VK_LAYER_PATH=/tmp/vl/usr/share/vulkan/explicit_layer.d LD_LIBRARY_PATH=/tmp/vl/usr/lib/x86_64-linux-gnu
out=${OUT:-/tmp/out}; mkdir -p "$out"
echo "== hello"; .devbin/hello 2>&1 | tee "$out/hello.txt"
echo "== tests (validation on)"; VKPRISM_VALIDATION=1 .devbin/kernels 2>&1 | tail -14 | tee "$out/tests.txt"
VKPRISM_VALIDATION=1 .devbin/runtime 2>&1 | tail -20 | tee -a "$out/tests.txt"
VKPRISM_VALIDATION=1 .devbin/every_variant 2>&1 | tail -8 | tee -a "$out/tests.txt"
echo "== dispatch"; { .devbin/bench_dispatch; python3 bench/torch_dispatch.py; } 2>&1 | tee "$out/dispatch.txt"
echo "== elementwise"; { .devbin/bench_elementwise 1024; python3 bench/torch_ref.py 1024; } 2>&1 | tee "$out/elementwise.txt"
