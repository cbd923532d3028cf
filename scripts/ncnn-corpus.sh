#!/usr/bin/env bash
# Compiles every kernel of an ncnn shader directory (src/layer/vulkan/shader of a Tencent/ncnn
# checkout) in every variant with vkprismc, and prints how many compiled and, for each that
# did not, its first error. ncnn's kernels are test input: this reads them where they are.
#
#   scripts/ncnn-corpus.sh DIR [VKPRISMC]      (VKPRISMC defaults to target/release/vkprismc)
set -uo pipefail
dir=${1:?usage: ncnn-corpus.sh DIR [VKPRISMC]}
bin=${2:-$(dirname "$0")/../target/release/vkprismc}
ok=0; failed=0
for f in "$dir"/*.comp; do
  if err=$("$bin" "$f" --include "$dir" 2>&1 >/dev/null); then
    ok=$((ok + 1))
  else
    failed=$((failed + 1))
    printf 'FAIL %s: %s\n' "$(basename "$f")" "$(printf '%s' "$err" | head -n 1 | cut -c1-300)"
  fi
done
echo "ncnn corpus $dir: $ok / $((ok + failed)) compile in every variant"
