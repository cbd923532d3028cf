//! The unary element-wise kernels: [`unary`] over vec4s and [`unary_scalar`] over single
//! elements (any length), one function (`unary_f.glsl`) chosen by the specialization constant
//! `op`, computed in fp32 in every variant ([`Ops::unary`](crate::Ops::unary) records them);
//! [`glu`], a gated unit over interleaved gate/up pairs ([`Ops::glu`](crate::Ops::glu)).

vkprism::compute_shader! {
    /// y = f(x) over vec4s, f chosen by `op` (constant 0): 0 relu, 1 leaky relu (slope `a`),
    /// 2 clip to [`a`, `b`], 3 sigmoid, 4 tanh, 5 GELU (erf form), 6 GELU (tanh form), 7 SiLU,
    /// 8 hardswish, 9 mish, 10 exp, 11 log, 12 sqrt, 13 rsqrt, 14 abs, 15 neg
    /// ([`UnaryOp`](crate::UnaryOp)'s codes); computed in fp32 in every variant (exp overflows
    /// fp16 for |x| > 11). Push constants: `n` (vec4s), `a`, `b`. Any grid covers all n (a grid
    /// apart, two per loop); `y` may be `x`.
    pub mod unary,
    path: "unary.comp",
}

vkprism::compute_shader! {
    /// As [`unary`] over single elements, for any length `n` (elements): each invocation takes
    /// 4 consecutive ones, a grid apart. No packed variants (a packed format has no single
    /// element): `fp32`, `fp16s`, `fp16sa`, `bf16s`.
    pub mod unary_scalar,
    path: "unary_scalar.comp",
}

vkprism::compute_shader! {
    /// `y[i] = act(x[2i]) · x[2i + 1]` for `i < n`: gate/up pairs side by side (a SwiGLU MLP's
    /// interleaved projection), the activation the GEMM epilogue's (constant `activation`,
    /// push constant `slope`), fp32 in every variant. Workgroups of 256; any grid covers all n.
    /// Variants `fp32`, `fp16s`, `fp16sa`, `bf16s`.
    pub mod glu,
    path: "glu.comp",
}
