#!/usr/bin/env bash
# The whole test suite, on whatever Vulkan device exists (lavapipe when there is no GPU), with the
# Khronos validation layer on: any validation message fails the test that caused it.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
export VKPRISM_VALIDATION=1
# lavapipe ignores this; it keeps the validation layer's own output out of stdout.
export VK_LOADER_DEBUG=${VK_LOADER_DEBUG:-}
cargo test --workspace --locked 2>&1
