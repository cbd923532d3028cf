#!/usr/bin/env bash
# Runs on the NVIDIA machine (device tool, carrying .devtools .gl .vl from bench/prepare.sh): the
# whole networks end to end. The networks' test suites and the decoder's fused kernels' suites on
# the real driver with the validation layer on; each network against PyTorch on the same random
# weights (bench/llama_ref.py and bench/resnet_ref.py, the examples' --expect); then their
# benchmarks beside PyTorch eager and CUDA graphs (bench/device.sh with `cases`, default
# decoder,resnet50).
#   bash bench/device-networks.sh [cases] [skip-tests]
set -uo pipefail
. bench/unpack.sh
. bench/env.sh
out=${OUT:-/tmp/out}; mkdir -p "$out"
cases=${1:-decoder,resnet50}
if [ "${2:-}" != "skip-tests" ]; then
  for t in vkprism-shaders.gemv vkprism-shaders.gemv_fused vkprism-shaders.glu vkprism-shaders.rope vkprism-shaders.rope_qkv_norm \
           vkprism-shaders.attention vkprism-shaders.split_k vkprism-shaders.ops \
           vkprism-runtime.pipelining vkprism-runtime.device_tensor vkprism-models.llama vkprism-models.session vkprism-models.resnet; do
    VKPRISM_VALIDATION=1 ".devbin/$t" 2>&1 | grep -E -A3 "^test |test result|panicked" | tee -a "$out/tests.txt"
  done
fi
{
  python3 bench/llama_ref.py /tmp/llama-ref
  .devbin/llama --config tinyllama --weights /tmp/llama-ref/model.safetensors --format f16 \
    --expect /tmp/llama-ref/expect.safetensors
  rm -rf /tmp/llama-ref
  python3 bench/resnet_ref.py /tmp/resnet-ref --batch 8
  .devbin/resnet50 --weights /tmp/resnet-ref/model.safetensors --expect /tmp/resnet-ref/expect.safetensors \
    --format f16 --batch 8
} 2>&1 | tee "$out/fidelity.txt"
OUT=$out bash bench/device.sh "$cases" skip-tests
