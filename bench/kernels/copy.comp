#version 450
// y = x. Invocation g of the G dispatched copies vec4s g, g + G, g + 2G, ..., two per loop with
// both loads in flight, as the library's `activation` does (the bench dispatches half as many
// invocations as vec4s). The values pass through afpvec4, which every storage format converts
// to and from exactly (16-bit storage has no 16-bit locals without arithmetic types).
layout (binding = 0) readonly buffer x_blob { sfpvec4 x_data[]; };
layout (binding = 1) writeonly buffer y_blob { sfpvec4 y_data[]; };
layout (push_constant) uniform parameter { int n; } p;
void main() {
    const int grid = int(gl_NumWorkGroups.x * gl_WorkGroupSize.x);
    for (int i = int(gl_GlobalInvocationID.x); i < p.n; i += 2 * grid) {
        const int j = i + grid;
        const afpvec4 v = buffer_ld4(x_data, i);
        afpvec4 w = v;
        if (j < p.n) w = buffer_ld4(x_data, j);
        buffer_st4(y_data, i, v);
        if (j < p.n) buffer_st4(y_data, j, w);
    }
}
