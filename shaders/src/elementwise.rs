//! Element-wise kernels: [`activation`] (one function of one tensor) and [`binary_op`] (two
//! tensors of one shape).

vkprism::compute_shader! {
    /// y = f(x) over vec4s; `op` (constant 0): 0 relu, 1 leaky relu (slope `alpha`), 2 sigmoid,
    /// 3 tanh, 4 hardswish. `n` (constant 1, or the push constant) counts vec4s.
    ///
    /// Any grid covers all n: invocation g of G dispatched takes vec4s g, g + G, g + 2G, ...,
    /// two per loop (both loads in flight before either store). One invocation per vec4 is the
    /// simplest grid; half as many ([`elementwise_grid`]) keeps two loads in flight in each,
    /// which 8-byte quads (16-bit formats) need to reach the memory's bandwidth (BENCHMARKS.md,
    /// "Elementwise"). It reads `gl_NumWorkGroups`; a grid over `maxComputeWorkGroupCount`
    /// workgroups is refused: dispatch fewer invocations (any number covers all n).
    pub mod activation,
    src: r#"
#version 450
#extension GL_EXT_control_flow_attributes : require
layout (constant_id = 0) const int op = 0;
layout (constant_id = 1) const int n = 0;
// vec4s an invocation takes a loop, all loaded before any is stored (`elementwise_grid`), in an
// unrolled loop over an array: NVIDIA's driver streams that form in every format, the same loads
// written out one by one not in fp16s.
const int QUADS = 2;
layout (binding = 0) readonly buffer x_blob { sfpvec4 x_data[]; };
layout (binding = 1) writeonly buffer y_blob { sfpvec4 y_data[]; };
layout (push_constant) uniform parameter { int n; float alpha; } p;
afpvec4 f(afpvec4 v) {
    if (op == 0) {
        return max(v, afpvec4(0));
    } else if (op == 1) {
        return mix(v * afp(p.alpha), v, greaterThan(v, afpvec4(0)));
    } else if (op == 2) {
        // sigmoid in fp32: exp overflows fp16 for |x| > 11
        return afpvec4(1.0 / (1.0 + exp(-vec4(v))));
    } else if (op == 3) {
        return afpvec4(tanh(vec4(v)));
    }
    return v * clamp(v + afp(3), afpvec4(0), afpvec4(6)) / afp(6);
}
void main() {
    const int grid = int(gl_NumWorkGroups.x * gl_WorkGroupSize.x);
    for (int i = int(gl_GlobalInvocationID.x); i < psc(n); i += QUADS * grid) {
        afpvec4 v[QUADS];
        [[unroll]] for (int u = 0; u < QUADS; u++)
            if (i + u * grid < psc(n)) v[u] = buffer_ld4(x_data, i + u * grid);
        [[unroll]] for (int u = 0; u < QUADS; u++)
            if (i + u * grid < psc(n)) buffer_st4(y_data, i + u * grid, f(v[u]));
    }
}
"#,
}

/// The invocations [`activation`], [`binary_op`] and [`unary`](crate::unary) (each `QUADS`
/// = 2 vec4s an invocation a loop) are dispatched with for `n` vec4s: half of them, rounded up
/// (two in flight in each; any grid is correct).
pub fn elementwise_grid(n: usize) -> [u32; 3] {
    [n.div_ceil(2) as u32, 1, 1]
}

vkprism::compute_shader! {
    /// out = a op b over vec4s; `op` (constant 0): 0 add, 1 sub, 2 mul, 3 div, 4 max, 5 min.
    ///
    /// Any grid covers all n, as [`activation`]'s: two vec4s of each operand a loop, all four
    /// loads in flight before either store ([`elementwise_grid`]).
    pub mod binary_op,
    src: r#"
#version 450
#extension GL_EXT_control_flow_attributes : require
layout (constant_id = 0) const int op = 0;
// vec4s of each operand an invocation takes a loop, all loaded before any is stored.
const int QUADS = 2;
layout (binding = 0) readonly buffer a_blob { sfpvec4 a_data[]; };
layout (binding = 1) readonly buffer b_blob { sfpvec4 b_data[]; };
layout (binding = 2) writeonly buffer out_blob { sfpvec4 out_data[]; };
layout (push_constant) uniform parameter { int n; } p;
afpvec4 g(afpvec4 a, afpvec4 b) {
    if (op == 0) return a + b;
    else if (op == 1) return a - b;
    else if (op == 2) return a * b;
    else if (op == 3) return a / b;
    else if (op == 4) return max(a, b);
    return min(a, b);
}
void main() {
    const int grid = int(gl_NumWorkGroups.x * gl_WorkGroupSize.x);
    for (int i = int(gl_GlobalInvocationID.x); i < p.n; i += QUADS * grid) {
        afpvec4 a[QUADS];
        afpvec4 b[QUADS];
        [[unroll]] for (int u = 0; u < QUADS; u++)
            if (i + u * grid < p.n) {
                a[u] = buffer_ld4(a_data, i + u * grid);
                b[u] = buffer_ld4(b_data, i + u * grid);
            }
        [[unroll]] for (int u = 0; u < QUADS; u++)
            if (i + u * grid < p.n) buffer_st4(out_data, i + u * grid, g(a[u], b[u]));
    }
}
"#,
}
