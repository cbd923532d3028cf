# Sourced on the NVIDIA machine: unpacks the carried Vulkan loader (.gl) and validation layer
# (.vl) and points the loader at the NVIDIA driver and the layer. The loader goes into / (it
# replaces the system's), so only where the NVIDIA driver is: elsewhere this does nothing.
icd=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
if [ ! -f "$icd" ]; then echo "bench/env.sh: no NVIDIA driver here ($icd); nothing done" >&2; return 0 2>/dev/null || exit 0; fi
for f in .gl/*.deb; do dpkg -x "$f" /; done; ldconfig
export VK_DRIVER_FILES=$icd __EGL_VENDOR_LIBRARY_FILENAMES=/usr/local/nvidia/share/glvnd/egl_vendor.d/10_nvidia.json
mkdir -p /tmp/vl && for f in .vl/*.deb; do dpkg -x "$f" /tmp/vl; done
# The layer's manifest names its library without a path: the loader finds it on LD_LIBRARY_PATH.
export VK_LAYER_PATH=/tmp/vl/usr/share/vulkan/explicit_layer.d LD_LIBRARY_PATH=/tmp/vl/usr/lib/x86_64-linux-gnu
ldd /tmp/vl/usr/lib/x86_64-linux-gnu/libVkLayer_khronos_validation.so | grep "not found"
