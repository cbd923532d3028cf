#!/usr/bin/env bash
# The long mutation run over the compiler (issues 9 and 20: at least 100,000 inputs, 0 panics,
# 0 hangs, 0 inputs over 5 s, 0 errors without a file:line):
# compiler/tests/mutation.rs built in release, run as SHARDS processes in parallel, each on its
# own disjoint part of one deterministic input sequence, and their summary lines summed.
#
#   scripts/fuzz.sh build                      build the binary, copy it to
#                                              ${CARGO_TARGET_DIR:-target}/fuzz/mutation
#   scripts/fuzz.sh run [SHARDS [SECS [INPUTS]]]
#       SHARDS  parallel processes (default: the number of cores)
#       SECS    time box per shard (default 600)
#       INPUTS  stop once the shards ran this many inputs together (default: none)
#
# `run` builds first unless VKPRISM_MUTATION_BIN names a binary: the binary needs no repository,
# no cargo and no tool (its seed files are embedded, glslang is linked in). To run it on another
# machine, copy that binary and this script, and run
#   VKPRISM_MUTATION_BIN=path/to/mutation scripts/fuzz.sh run 16 600
# Failing inputs are written under VKPRISM_MUTATION_FAILURES (default <target>/fuzz/failures, or
# ./fuzz/failures where there is no target directory), the shards' logs in logs/ beside it.
# An input slower than VKPRISM_MUTATION_SLOW_SECS (default 5 in this release build) fails.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
target="${CARGO_TARGET_DIR:-$root/target}"

build() {
  cd "$root"
  local bin
  bin=$(cargo test --release --locked -p vkprism-compiler --test mutation --no-run \
          --message-format=json 2>/dev/null |
        python3 -c 'import json,sys
for l in sys.stdin:
    m = json.loads(l)
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["target"]["name"] == "mutation":
        print(m["executable"])')
  [ -n "$bin" ] || { echo "fuzz: the build failed (run the cargo command above to see why)" >&2; exit 1; }
  mkdir -p "$target/fuzz"
  cp "$bin" "$target/fuzz/mutation"
  echo "$target/fuzz/mutation"
}

run() {
  local shards=${1:-$(nproc)} secs=${2:-600} inputs=${3:-}
  local bin=${VKPRISM_MUTATION_BIN:-}
  [ -n "$bin" ] || bin=$(build)
  [ -x "$bin" ] || { echo "fuzz: $bin is not an executable" >&2; exit 1; }
  local out
  if [ -d "$target" ]; then out="$target/fuzz"; else out="$PWD/fuzz"; fi
  export VKPRISM_MUTATION_FAILURES=${VKPRISM_MUTATION_FAILURES:-$out/failures}
  mkdir -p "$out/logs"
  rm -f "$out"/logs/shard-*.log
  echo "fuzz: $shards shards of $bin, ${secs}s each${inputs:+, $inputs inputs in all}" >&2
  local per_shard=""
  [ -n "$inputs" ] && per_shard=$(( (inputs + shards - 1) / shards ))
  local pids=() start=$SECONDS
  for ((i = 0; i < shards; i++)); do
    env VKPRISM_MUTATION_SHARD="$i/$shards" VKPRISM_MUTATION_SECS="$secs" \
      ${per_shard:+VKPRISM_MUTATION_INPUTS=$per_shard} \
      "$bin" --exact hostile_kernels_never_panic_or_hang --nocapture \
      >"$out/logs/shard-$i.log" 2>&1 &
    pids+=($!)
  done
  local failed=0
  for pid in "${pids[@]}"; do wait "$pid" || failed=$((failed + 1)); done
  local wall=$((SECONDS - start))
  grep -h '^mutation:' "$out"/logs/shard-*.log || true
  grep -h '^mutation:' "$out"/logs/shard-*.log | awk -v shards="$shards" -v wall="$wall" -v failed="$failed" '
    { for (i = 2; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
      n++; inputs += v["inputs"]; compiled += v["compiled"]; rejected += v["rejected"]
      panics += v["panics"]; hangs += v["hangs"]; bad += v["bad_outputs"]
      slow += v["slow"]; unlocated += v["unlocated"]
      out_inputs += v["stdout_inputs"]; out_bytes += v["stdout_bytes"]
      if (v["slowest_s"] + 0 > slowest) { slowest = v["slowest_s"]; slowest_at = v["slowest_input"] }
      corpus = v["corpus"]; seeds = v["seeds"]; snippets = v["snippets"] }
    END {
      printf "fuzz: %d of %d shards reported, %d failed; %d inputs (%d compiled, %d rejected) in %d s, %.1f inputs/s (%.2f per shard); slowest input %s at %.2f s; %d panics, %d hangs, %d slow, %d unlocated, %d bad outputs, %d inputs wrote %d bytes to stdout; corpus %d (%d seed kernels + %d snippets)\n",
        n, shards, failed, inputs, compiled, rejected, wall, inputs / (wall > 0 ? wall : 1),
        inputs / (wall > 0 ? wall : 1) / shards, slowest_at, slowest, panics, hangs, slow, unlocated, bad,
        out_inputs, out_bytes, corpus, seeds, snippets
    }'
  if [ "$failed" -ne 0 ]; then
    echo "fuzz: $failed shards failed: see $out/logs and $VKPRISM_MUTATION_FAILURES" >&2
    exit 1
  fi
}

case "${1:-}" in
  build) build ;;
  run) shift; run "$@" ;;
  *) sed -n '2,21p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2 ;;
esac
