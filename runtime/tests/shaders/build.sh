#!/usr/bin/env bash
# Recompiles the runtime tests' GLSL to the SPIR-V files they include, with the glslang the macro
# links. The test `committed_spirv_is_fresh` checks that these files match what it makes now.
set -euo pipefail
cd "$(dirname "$0")/../../.."
cargo test -q -p vkprism-runtime --test env_and_spirv -- --ignored regenerate_committed_spirv
