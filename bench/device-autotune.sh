#!/usr/bin/env bash
# Runs on the NVIDIA machine (device tool, carrying .devtools .gl .vl from bench/prepare.sh): the
# GEMM and convolution benchmarks with GemmTuner's choices instead of the table's, twice: the
# first pass tunes (and writes the cache file), the second answers from the file. Writes
# $OUT/pass1.txt, $OUT/pass2.txt and the cache file $OUT/h100.tuning
# (benchmarks/results/h100-autotune.txt and h100.tuning come from this script).
set -uo pipefail
. bench/unpack.sh
. bench/env.sh >/dev/null
out=${OUT:-/tmp/out}; mkdir -p "$out"
export VKPRISM_BENCH_VARIANTS=${VKPRISM_BENCH_VARIANTS:-fp32_lm_nocm,fp16s_lm_nocm,fp16p_lm_cm,fp32_int8a_cm}
export VKPRISM_BENCH_TUNE_CACHE=/tmp/h100.tuning
rm -f "$VKPRISM_BENCH_TUNE_CACHE"
for pass in 1 2; do
  echo "== pass $pass"
  VKPRISM_BENCH_AUTOTUNE=1 .devbin/vkprism-bench --cases gemm,conv2d --json "/tmp/autotune$pass.json" \
    >"$out/pass$pass.txt" 2>&1
  grep -E "^gemm |^conv2d " "$out/pass$pass.txt"
done
cp "$VKPRISM_BENCH_TUNE_CACHE" "$out/h100.tuning"
