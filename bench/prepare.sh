#!/usr/bin/env bash
# Builds here what bench/device.sh runs on the NVIDIA machine, into folders git ignores:
#   .devbin/  release binaries (vkprism-bench, hello, the test suites that run on a real driver)
#   .gl/      Debian's Vulkan loader (the NVIDIA machine has none)
#   .vl/      a Khronos validation layer new enough for VK_KHR_cooperative_matrix (Debian trixie's
#             1.4.309; bookworm's 1.3.239 rejects the cooperative-matrix structures)
# Then, with the device tool: run `bash bench/device.sh` carrying .devbin .gl .vl.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
cargo build --release --locked -p vkprism-bench -p vkprism --example hello
tests=$(cargo test --release --locked --no-run -p vkprism --test kernels --test runtime \
          -p vkprism-shaders --test every_variant --message-format=json 2>/dev/null |
        python3 -c 'import json,sys
for l in sys.stdin:
    m = json.loads(l)
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["profile"]["test"]:
        print(m["target"]["name"], m["executable"])')
rm -rf .devbin && mkdir -p .devbin
cp target/release/vkprism-bench target/release/examples/hello .devbin/
while read -r name exe; do cp "$exe" ".devbin/$name"; done <<<"$tests"
amd64='-oAPT::Architecture=amd64 -oAPT::Architectures=amd64'
if [ ! -d .gl ]; then
  mkdir -p .gl /tmp/vkprism-apt/lists/partial
  apt-get $amd64 -oDir::State::Lists=/tmp/vkprism-apt/lists update -qq
  (cd .gl && apt-get $amd64 -oDir::State::Lists=/tmp/vkprism-apt/lists download \
     libvulkan1 libegl1 libglvnd0 libopengl0 libgl1 libglx0 libgles2)
fi
if [ ! -d .vl ]; then
  t=/tmp/vkprism-apt-trixie; mkdir -p .vl $t/lists/partial
  echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian trixie main" >$t/sources.list
  o="$amd64 -oDir::State::Lists=$t/lists -oDir::Etc::SourceList=$t/sources.list -oDir::Etc::SourceParts=/nonexistent"
  apt-get $o update -qq
  (cd .vl && apt-get $o download vulkan-validationlayers)
fi
ls -la .devbin .gl .vl
