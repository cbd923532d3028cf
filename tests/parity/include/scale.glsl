// Found through the `include` search path of tests/parity.rs (`#include <scale.glsl>` and, not
// being beside the kernel, `#include "scale.glsl"` too). FACTOR and OFFSET come from `define`.
afp scale_of(afp v) { return v * afp(FACTOR) + afp(OFFSET); }
