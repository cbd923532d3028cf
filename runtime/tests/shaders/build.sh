#!/usr/bin/env bash
# Recompiles the runtime tests' and bench's GLSL to the SPIR-V files they include. The test
# `committed_spirv_is_fresh` checks that these files match what glslangValidator makes now.
set -euo pipefail
cd "$(dirname "$0")"
for f in *.comp; do
    glslangValidator -V --target-env vulkan1.1 -o "${f%.comp}.spv" "$f" >/dev/null
    spirv-val --target-env vulkan1.1 "${f%.comp}.spv"
done
