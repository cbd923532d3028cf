#!/usr/bin/env bash
# Runs on the NVIDIA machine's 16 cores (device tool, carrying .devtools from
# bench/prepare.sh): the compiler's mutation run as SHARDS parallel shards of SECS each, stopping
# at INPUTS inputs in all, figures summed (scripts/fuzz.sh; issue 9 asks for >= 100,000 inputs).
#   bash bench/device-fuzz.sh [SHARDS [SECS [INPUTS]]]
set -uo pipefail
. bench/unpack.sh
export VKPRISM_MUTATION_BIN=$PWD/.devbin/fuzz/mutation
out=${OUT:-/tmp/out}; mkdir -p "$out"
export VKPRISM_MUTATION_FAILURES=$out/failures
nproc
scripts/fuzz.sh run "${1:-16}" "${2:-500}" "${3:-104000}" 2>&1 | tee "$out/fuzz.txt"
