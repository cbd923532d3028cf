//! The conversion kernels: casts between the float storage formats (`cast_to_f32`,
//! `cast_from_f32`, `cast_to_f16`, `cast_from_f16`: one side the variant's storage, the other
//! a fixed type, so the variant picks the other side's format) and symmetric int8
//! quantization ([`quantize`], [`dequantize`], per tensor, and [`quantize_channels`],
//! [`dequantize_channels`], per channel).

vkprism::compute_shader! {
    /// y (F32) = x, x in the variant's format: `fp16s` reads F16, `bf16s` reads Bf16. Push
    /// constant `n` (elements); grid: [`flat_grid`](crate::flat_grid) of `n.div_ceil(4)` (4
    /// elements an invocation).
    pub mod cast_to_f32,
    path: "cast.comp",
    define: [("TO", "1"), ("FIXED", "float")],
    variants: [fp16s, bf16s],
}

vkprism::compute_shader! {
    /// y = x (F32) rounded to nearest even into the variant's format: `fp16s` writes F16,
    /// `bf16s` writes Bf16. Push constant `n`; grid: [`flat_grid`](crate::flat_grid) of
    /// `n.div_ceil(4)`.
    pub mod cast_from_f32,
    path: "cast.comp",
    define: [("TO", "0"), ("FIXED", "float")],
    variants: [fp16s, bf16s],
}

vkprism::compute_shader! {
    /// y (F16) = x (Bf16), rounded to nearest even. Push constant `n`; grid:
    /// [`flat_grid`](crate::flat_grid) of `n.div_ceil(4)`. Variant `bf16s`.
    pub mod cast_to_f16,
    path: "cast.comp",
    define: [("TO", "1"), ("FIXED", "float16_t")],
    variants: [bf16s],
}

vkprism::compute_shader! {
    /// y (Bf16) = x (F16), rounded to nearest even. Push constant `n`; grid:
    /// [`flat_grid`](crate::flat_grid) of `n.div_ceil(4)`. Variant `bf16s`.
    pub mod cast_from_f16,
    path: "cast.comp",
    define: [("TO", "0"), ("FIXED", "float16_t")],
    variants: [bf16s],
}

vkprism::compute_shader! {
    /// The four int8 conversion kernels, one module each (re-exported at the crate's root):
    /// one source, one set of push constants (`quantize`'s, shared).
    pub mod quantize_kernels,
    variants: [fp32_int8p, fp32_int8s, fp16s_int8p, fp16s_int8s, bf16s_int8p, bf16s_int8s],
    shaders: {
        /// y (int8) = clamp(roundEven(x / scale), -127, 127), one scale (push constant
        /// `scale`); x in the variant's float format. Push constants `n`, `axis`, `inner`
        /// (unused), `scale`; each invocation owns 4 consecutive elements: grid
        /// [`flat_grid`](crate::flat_grid) of `n.div_ceil(4)`. `int8p` variants bind only a
        /// multiple of 4 elements. Variants: `fp32`, `fp16s`, `bf16s`, each `_int8p` and
        /// `_int8s`.
        quantize: {
            path: "quantize.comp",
            define: [("DEQUANT", "0"), ("CHANNELS", "0")],
        },
        /// As [`quantize`](crate::quantize) with one fp32 scale per channel (`scale_blob`):
        /// element i's channel is `(i / inner) % axis`.
        quantize_channels: {
            path: "quantize.comp",
            define: [("DEQUANT", "0"), ("CHANNELS", "1")],
            share: [quantize::PushConstants],
        },
        /// y = q · scale in the variant's float format (the product in fp32), q int8, one
        /// scale; [`quantize`](crate::quantize)'s push constants, grid and variants.
        dequantize: {
            path: "quantize.comp",
            define: [("DEQUANT", "1"), ("CHANNELS", "0")],
            share: [quantize::PushConstants],
        },
        /// As [`dequantize`](crate::dequantize) with one fp32 scale per channel, as
        /// [`quantize_channels`](crate::quantize_channels).
        dequantize_channels: {
            path: "quantize.comp",
            define: [("DEQUANT", "1"), ("CHANNELS", "1")],
            share: [quantize::PushConstants],
        },
        /// [`dequantize_channels`](crate::dequantize_channels) reading four int8 values as one
        /// word and writing them as one quad: `n` and `inner` multiples of 4 (a weight's rows
        /// of a multiple of 4 values, scaled per row), the same grid.
        dequantize_channels4: {
            path: "quantize.comp",
            define: [("DEQUANT", "1"), ("CHANNELS", "1"), ("WIDE", "1")],
            share: [quantize::PushConstants],
        },
    },
}

pub use quantize_kernels::{
    dequantize, dequantize_channels, dequantize_channels4, quantize, quantize_channels,
};
