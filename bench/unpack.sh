# Sourced on the NVIDIA machine by the device scripts: unpacks the binaries bench/prepare.sh
# packed into .devbin. Every call, not only where .devbin is missing: a warm machine keeps the
# last call's .devbin, which would shadow the newer binaries of the carried archive.
if [ -f .devtools/devbin.tar.xz ]; then
  rm -rf .devbin && tar xJf .devtools/devbin.tar.xz
fi
