#!/usr/bin/env bash
# Installs the system packages vkprism needs, when missing: the Vulkan loader and headers,
# lavapipe (Mesa's CPU Vulkan driver, used when there is no GPU), the Khronos validation layer and
# vulkaninfo. The GLSL compiler (glslang) is built from source by cargo, inside the macro.
set -euo pipefail
pkgs=(libvulkan-dev mesa-vulkan-drivers vulkan-validationlayers vulkan-tools)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}" >&2
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
