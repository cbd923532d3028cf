#!/usr/bin/env bash
# Builds here what bench/device.sh runs on the NVIDIA machine, into folders git ignores:
#   .devbin/  release binaries (vkprism-bench, hello, the networks' examples llama and resnet50,
#             the test suites that run on a real driver, the stress test) and .devbin/fuzz/mutation (the compiler's mutation run)
#   .gl/      Debian's GL dispatch libraries and sid's Vulkan loader (the NVIDIA machine has none;
#             the loader must be as new as the layer, or the layer warns about every device)
#   .vl/      a Khronos validation layer new enough for VK_KHR_cooperative_matrix and
#             VK_KHR_shader_bfloat16 (Debian sid's, 1.4.363 when written; bookworm's 1.3.239
#             rejects the cooperative-matrix structures, trixie's 1.4.309 predates bfloat16). Both
#             need glibc 2.38, which the NVIDIA machine has and this one (bookworm) lacks: they
#             only run there.
# Then, with the device tool: run `bash bench/device.sh` carrying .devtools .gl .vl.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
cargo build --release --locked -p vkprism-bench --bins
cargo build --release --locked -p vkprism --example hello
cargo build --release --locked -p vkprism-models --example llama --example resnet50
tests=$(cargo test --release --locked --no-run -p vkprism --test kernels --test runtime --test examples --test device_facts \
          -p vkprism-shaders --test every_variant --test gemm_cm2 --test gemm_glu --test gemm_rms_norm --test gemm_rope --test split_k --test tuning --test stress --test ops --test ops_gemm_epilogue --test unary --test broadcast --test reduce --test softmax --test norm \
          --test attention --test depthwise --test transpose --test slice --test concat --test pad --test cast --test quantize \
          --test embedding --test gemv --test gemv_fused --test glu --test rope --test rope_qkv_norm --test pool --test batch_norm_fold --test gemm_int8_weights -p vkprism-runtime --test hardening --test pipelining --test device_tensor \
          -p vkprism-models --test llama --test hf_dir --test session --test resnet \
          --message-format=json 2>/dev/null |
        python3 -c 'import json,sys
for l in sys.stdin:
    m = json.loads(l)
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["profile"]["test"]:
        # Named by package too: `--test kernels` matches the facade'"'"'s and the runtime'"'"'s.
        package = m["package_id"].rsplit("#", 1)[-1].split("@")[0]
        print(package + "." + m["target"]["name"], m["executable"])')
rm -rf .devbin && mkdir -p .devbin
cp target/release/vkprism-bench target/release/examples/{hello,llama,resnet50} .devbin/
while read -r name exe; do cp "$exe" ".devbin/$name"; done <<<"$tests"
mkdir -p .devbin/fuzz && cp "$(scripts/fuzz.sh build)" .devbin/fuzz/mutation
# Stripped and packed: the device tool carries at most 64 MiB (bench/device.sh unpacks).
find .devbin -type f -perm -u+x -exec strip {} + 2>/dev/null || true
mkdir -p .devtools && tar cJf .devtools/devbin.tar.xz .devbin
amd64='-oAPT::Architecture=amd64 -oAPT::Architectures=amd64'
t=/tmp/vkprism-apt-sid
sid="$amd64 -oDir::State::Lists=$t/lists -oDir::Etc::SourceList=$t/sources.list -oDir::Etc::SourceParts=/nonexistent"
if [ "$(cat .vl/SUITE 2>/dev/null)" != sid ] || [ ! -d .gl ]; then
  rm -rf .gl .vl
  mkdir -p .gl .vl /tmp/vkprism-apt/lists/partial $t/lists/partial
  echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian sid main" >$t/sources.list
  apt-get $amd64 -oDir::State::Lists=/tmp/vkprism-apt/lists update -qq
  apt-get $sid update -qq
  (cd .gl && apt-get $amd64 -oDir::State::Lists=/tmp/vkprism-apt/lists download \
     libegl1 libglvnd0 libopengl0 libgl1 libglx0 libgles2 && apt-get $sid download libvulkan1)
  (cd .vl && apt-get $sid download vulkan-validationlayers)
  echo sid >.vl/SUITE
fi
ls -la .devbin .gl .vl
