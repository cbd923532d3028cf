//! The broadcasting binary kernels: [`binary_bcast4`] over vec4s (out's innermost dim a
//! multiple of 4 along which neither operand is broadcast) and [`binary_bcast`] over single
//! elements (any shapes), one function (`binary_f.glsl`) chosen by the specialization constant
//! `op`, computed in fp32 in every variant ([`Ops::binary`](crate::Ops::binary) records them).

vkprism::compute_shader! {
    /// The two broadcasting kernels, one module each (re-exported at the crate's root); the
    /// scalar one takes the vec4 one's constants types (one push-constant builder for both).
    pub mod broadcast_kernels,
    shaders: {
        /// out = a op b with numpy broadcasting over vec4s; `op` (constant 0): 0 add, 1 sub,
        /// 2 mul, 3 div, 4 max, 5 min, 6 pow ([`BinaryOp`](crate::BinaryOp)'s codes), in fp32;
        /// `contiguous` (constant 1): 1 where a, b and out have one shape. Otherwise out is
        /// `[d0, d1, d2, d3]` vec4s (d0 implied by `n`, d3 counting vec4s) and its element
        /// (c0, c1, c2, c3) reads a at `c · (a0, a1, a2, a3)` and b at `c · (b0, …, b3)`
        /// (strides in vec4s, 0 along a broadcast dim; neither may be broadcast along the
        /// innermost dim). Any grid covers all `n` (a grid apart); `out` may be an operand of
        /// its shape.
        binary_bcast4: { path: "binary_bcast4.comp" },
        /// As [`binary_bcast4`](crate::binary_bcast4) over single elements, any shapes (`d3`
        /// and the strides count elements, `n` out's elements). No packed variants (a packed
        /// format has no single element): `fp32`, `fp16s`, `fp16sa`, `bf16s`.
        binary_bcast: {
            path: "binary_bcast.comp",
            share: [binary_bcast4::SpecConstants, binary_bcast4::PushConstants],
        },
    },
}

pub use broadcast_kernels::{binary_bcast, binary_bcast4};
