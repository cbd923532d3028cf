#version 450
#extension GL_EXT_control_flow_attributes : require
// Probe: each workgroup loads a contiguous slab of PER 16-byte words per invocation, every load
// issued before any is used; SHARE workgroups read the same slab.
layout (local_size_x = 512) in;
layout (constant_id = 0) const int PER = 16;
layout (constant_id = 1) const int SHARE = 8;
layout (binding = 0) readonly buffer src_blob { vec4 src_data[]; };
layout (binding = 1) buffer dst_blob { float dst_data[]; };
layout (push_constant) uniform parameter { int first; } p;
void main() {
    const uint size = gl_WorkGroupSize.x;
    const uint slab = gl_WorkGroupID.x / uint(SHARE);
    const uint base = uint(p.first) + slab * size * uint(PER);
    vec4 v[PER];
    [[unroll]] for (int i = 0; i < PER; i++) v[i] = src_data[base + gl_LocalInvocationID.x + uint(i) * size];
    uvec4 x = uvec4(0);
    [[unroll]] for (int i = 0; i < PER; i++) x ^= floatBitsToUint(v[i]);
    const uint r = x.x ^ x.y ^ x.z ^ x.w;
    if (r == 0x12345678u || gl_LocalInvocationID.x == 0u) dst_data[gl_WorkGroupID.x] = uintBitsToFloat(r);
}
