//! A kernel library written with `compute_shader!`: every kernel is compiled for every variant
//! its axes allow and tested on every one against the CPU references in [`mod@reference`].
//!
//! - [`activation`]: relu, leaky relu, sigmoid, tanh, hardswish, chosen by a specialization
//!   constant (one pipeline per activation, no branch at run time);
//! - [`binary_op`]: element-wise add, sub, mul, div, max, min of two tensors;
//! - [`unary`], [`unary_scalar`]: relu, leaky relu, clip, sigmoid, tanh, GELU (erf and tanh
//!   forms), SiLU, hardswish, mish, exp, log, sqrt, rsqrt, abs, neg ([`UnaryOp`]);
//! - [`binary_bcast4`], [`binary_bcast`]: add, sub, mul, div, max, min, pow with numpy
//!   broadcasting ([`BinaryOp`]);
//! - [`gemm`]: C = act(alpha · op(A) · op(B) + bias), register-tiled, staged through shared memory
//!   where `NCNN_shader_local_memory` is on; [`gemm_split`] and [`gemm_split_reduce`] split it
//!   along K;
//! - [`gemm_int8`]: C = A · B over int8 with exact int32 results; [`gemm_int8_dequant`] the
//!   same product dequantized as stored, after [`quantize_rows`] (activations quantized per row);
//! - [`gemm_image`]: the same product with B read through the sampled-image (texture) path, for
//!   GPUs whose texture units have their own cache (Adreno, Mali);
//! - [`conv2d`]: direct 2D convolution with bias, stride and zero padding, CHW layout;
//! - [`conv2d_nhwc`]: 2D convolution as an implicit GEMM, channels-last, every GEMM variant
//!   ([`Conv2dShape`]); [`conv2d_nhwc_split`] splits it along K;
//! - [`conv2d_dw_nhwc`]: depthwise 2D convolution, channels-last ([`Conv2dDwShape`]);
//! - [`reduce`], [`argmax`]: sum, mean, max, min and argmax along one axis ([`ReduceShape`]);
//! - [`softmax`]: softmax along the last axis, scaled, optionally causal ([`SoftmaxShape`]);
//! - [`norm`]: layer norm, RMS norm and channels-last group norm ([`NormShape`]);
//! - [`attention`], [`attention_cm`], [`attention_cm2`]: scaled dot-product attention (flash: online softmax),
//!   causal, grouped-query heads, for a prompt or one token against a KV cache
//!   ([`AttentionShape`]);
//! - data movement and conversion: [`strided_copy`], [`pad_copy`], [`transpose_tiled`],
//!   [`embedding`], casts ([`cast_to_f32`], ...), int8 [`quantize`] / [`dequantize`];
//! - [`gemv`], [`gemv_int8`] (and scalar forms): decode's matrix-vector products ([`GemvShape`]);
//! - [`rope`]: rotary position embedding ([`RopeShape`]); [`rope_qkv`]: a fused projection rotated into a KV cache ([`RopeQkvShape`]);
//! - [`pool2d`] / [`pool2d4`], [`global_avg_pool`]: channels-last pooling ([`Pool2dShape`], [`GlobalPoolShape`]).
//!
//! [`Ops`] is the operation layer: one call per operation, recorded into a command list, with
//! kernels loaded once, tiles chosen, scratch allocated and operands checked ([`mod@ops`]).
//!
//! [`GemmConfig`] chooses the tiles of the GEMM-shaped kernels; [`tuning`] chooses them per
//! device: a table keyed by vendor / architecture ([`DeviceClass`]) and [`GemmTuner`], which
//! measures on first use and caches the choice beside the pipeline cache.
//!
//! Files: `ops/` (the operation layer), `elementwise.rs`, `rows.rs` (reductions, softmax,
//! norms), `unary_kernels.rs`, `broadcast.rs`, `gemm_family.rs` (the GEMM-shaped kernels, one
//! invocation sharing their `SpecConstants`), `cm2.rs` (the GEMM on workgroup-scope
//! matrices), `conv.rs`, `depthwise.rs`, `config.rs` ([`GemmConfig`]), `reference.rs`,
//! `tuning/`; the GLSL beside them.

mod attention_kernels;
mod broadcast;
mod cm2;
mod config;
mod conv;
mod convert_kernels;
mod depthwise;
mod elementwise;
mod gemm_family;
mod gemv_family;
mod movement;
pub mod ops;
mod pool;
mod quant_gemm;
pub mod reference;
mod reference_attention;
mod reference_layers;
mod reference_movement;
mod rotary;
mod rows;
pub mod tuning;
mod unary_kernels;

pub use attention_kernels::{
    attention, attention4, attention_cm, attention_cm2, attention_combine, attention_decode,
    attention_grouped, AttentionShape, CmSplit, KeyShares,
};
pub use broadcast::{binary_bcast, binary_bcast4};
pub use cm2::{
    cm2_kernels, gemm_cm2, gemm_cm2_glu, gemm_cm2_rope, gemm_cm2_split, multiprocessors, Cm2Tiles,
    GEMM_CM2_THREADS, MEASURED_SMS,
};
pub use config::{
    split_reduce_rms_grid, GemmConfig, MAX_SPLIT, MIN_WIDE_TILES, PLAIN_MAX_SPLIT,
    PLAIN_SPLIT_WORKGROUPS, SMALL_CM_SPLIT_WORKGROUPS, SPLIT_K_WORKGROUPS,
    SPLIT_REDUCE_RMS_MAX_ROWS,
};
pub use conv::{conv2d, Conv2dShape};
pub use convert_kernels::{
    cast_from_f16, cast_from_f32, cast_to_f16, cast_to_f32, dequantize, dequantize_channels,
    dequantize_channels4, quantize, quantize_channels,
};
pub use depthwise::{conv2d_dw_nhwc, Conv2dDwShape};
pub use elementwise::{activation, binary_op, elementwise_grid};
pub use gemm_family::{
    conv2d_nhwc, conv2d_nhwc_split, gemm, gemm_image, gemm_image_grid, gemm_int8,
    gemm_int8_dequant, gemm_kernels, gemm_split, gemm_split_reduce, gemm_split_reduce_rms,
    split_reduce_kernels, GEMM_IMAGE_MICRO_TILE,
};
pub use gemv_family::{
    gemv, gemv_int8, gemv_int8_scalar, gemv_scalar, GemvShape, GEMV_MANY_ROWS, GEMV_MAX_BATCH,
    GEMV_ROWS,
};
pub use movement::{
    contiguous_strides, embedding, flat_grid, pad_copy, strided_copy, transpose_grid,
    transpose_tiled, CopyShape, PadShape, MAX_RANK, MOVE_LOCAL,
};
pub use ops::{
    broadcast_shape, Activation, Attention, BinaryOp, Conv2d, DepthwiseConv2d, Gemm, Gemv, OpError,
    Ops, ReduceOp, Softmax, UnaryOp,
};
pub use ops::{
    fold_batch_norm, BatchNorm, ConvWeightLayout, Draw, HeadNorm, Pool2d, Rope, RopeStyle,
};
pub use ops::{gemm_glu_constants, glu_narrow_from, options_for, QuantScale, CM2_MIN_PRODUCT};
pub use pool::{global_avg_pool, global_avg_pool4, pool2d, pool2d4, GlobalPoolShape, Pool2dShape};
pub use quant_gemm::{quantize_rows, quantize_rows_grid};
pub use rotary::{
    rope, rope_qkv, rope_qkv4, rope_qkv_kernels, rope_qkv_norm, rope_qkv_norm4, RopeFrequencies,
    RopeQkvShape, RopeScaling, RopeShape,
};
pub use rows::{
    argmax, argmax_parts, norm, norm4, reduce, sample, sample_parts, sample_top, softmax, softmax4,
    ArgmaxParts, NormShape, ReduceShape, SoftmaxShape,
};
pub use tuning::{DeviceClass, GemmKernel, GemmTuner};
pub use unary_kernels::{glu, unary, unary_scalar};
