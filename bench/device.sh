#!/usr/bin/env bash
# Runs on the NVIDIA machine (device tool, carrying .devtools .gl .vl from bench/prepare.sh):
# the device report, the test suites on the real driver with the validation layer on, then
# vkprism-bench and PyTorch's references in the same call, merged into $OUT/results.json with
# the generated table in $OUT/table.md.
#   bash bench/device.sh [cases, default gemm,conv2d,elementwise,transfer,ops,decoder,resnet50,dispatch] [skip-tests]
# The dispatch case runs last: run first, right after the test suites, vkprism's round trip read
# 48 µs in one run (13.5 alone on the same machine, and PyTorch's, measured after everything
# else, 13.7): the host's state after the tests, not the dispatch path.
set -uo pipefail
# The binaries travel packed: .devbin alone is over the device tool's carry limit.
. bench/unpack.sh
cases=${1:-gemm,conv2d,elementwise,transfer,ops,decoder,resnet50,dispatch}
. bench/env.sh
out=${OUT:-/tmp/out}; mkdir -p "$out"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv | tee "$out/gpu.txt"
.devbin/hello 2>&1 | tee "$out/hello.txt"
if [ "${2:-}" != "skip-tests" ]; then
  for t in .devbin/*; do
    case "$t" in */vkprism-bench|*/hello|*/llama|*/resnet50) continue ;; esac
    # The stress test runs STRESS_SECS (default 70) and prints its figures.
    [ -f "$t" ] && [ -x "$t" ] && VKPRISM_VALIDATION=1 VKPRISM_STRESS_SECS=${STRESS_SECS:-70} "$t" --nocapture 2>&1 |
      grep -E -A3 "^test |test result|panicked|^stress" | tee -a "$out/tests.txt"
  done
fi
# (At most 8 files come back from a device call: the two logs share one.)
.devbin/vkprism-bench --cases "$cases" --json "$out/vkprism.json" 2>&1 | tee "$out/run.txt"
# What bounds the cooperative-matrix GEMM's loop (printed into run.txt, not the JSON).
VKPRISM_BENCH_STATS=1 .devbin/vkprism-bench --cases bound 2>&1 | tee -a "$out/run.txt"
python3 bench/torch_ref.py --cases "$cases" --json "$out/torch.json" 2>&1 | tee -a "$out/run.txt"
python3 bench/merge.py "$out/vkprism.json" "$out/torch.json" "$out/results.json" > "$out/table.md"
cat "$out/table.md"
