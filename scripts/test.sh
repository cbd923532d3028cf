#!/usr/bin/env bash
# The whole test suite, on whatever Vulkan device exists (lavapipe when there is no GPU), with the
# Khronos validation layer on: any validation message fails the test that caused it.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/spirv-tools.sh
export VKPRISM_VALIDATION=1
log=$(mktemp)
trap 'rm -f "$log"' EXIT
set +e
cargo test --workspace --locked 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
set -e
# One closing line for the whole run (cargo's last line is a doc-test summary of one crate).
awk '/^test result:/ { for (i = 1; i <= NF; i++) { if ($i ~ /^passed/) p += $(i-1); if ($i ~ /^failed/) f += $(i-1) } }
     END { printf "vkprism: %d passed, %d failed\n", p, f }' "$log"
exit "$status"
