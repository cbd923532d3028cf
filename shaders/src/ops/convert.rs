//! The conversions: [`Ops::cast`] between the float formats (F32, F16, Bf16), and symmetric
//! int8 [`Ops::quantize`] / [`Ops::dequantize`] with a per-tensor or per-channel
//! [`QuantScale`].

use super::check::{float_format, nonempty, not_aliased, same_format, shape_is};
use super::movement::fits_i32;
use super::{pipeline, recorded, OpError, Ops};
use crate::{
    cast_from_f16, cast_from_f32, cast_to_f16, cast_to_f32, dequantize, dequantize_channels,
    dequantize_channels4, flat_grid, quantize, quantize_channels, MOVE_LOCAL,
};
use std::sync::Arc;
use vkprism::{Bindings, CommandList, Int8Mode, Kernel, LoadedKernel, Tensor, TensorFormat};

/// The scale of a symmetric int8 quantization: `q = clamp(round_half_even(x / s), -127, 127)`,
/// `x = q · s`.
#[derive(Copy, Clone, Debug)]
#[non_exhaustive]
pub enum QuantScale<'a> {
    /// One scale for every element.
    PerTensor(f32),
    /// One scale per index along dimension `axis` of the float tensor: `scales` is an F32
    /// tensor of that dimension's length (for a weight `[out, in]`, `axis` 0 scales each
    /// output channel).
    PerChannel {
        /// The scales, F32 `[x.shape()[axis]]`.
        scales: &'a Tensor,
        /// The dimension they run along.
        axis: usize,
    },
}

impl Ops {
    /// Records `y = x` converted into y's float format into `list`: F32, F16 and Bf16 in any
    /// pair, rounded to nearest even where y is narrower (exact where it is wider); y of x's
    /// shape, a tensor of its own. One format for both is a plain copy. Nothing is recorded
    /// when a check fails.
    pub fn cast(&self, list: &mut CommandList, x: &Tensor, y: &Tensor) -> Result<(), OpError> {
        const OP: &str = "cast";
        nonempty(OP, "x", x)?;
        shape_is(OP, "y", y, x.shape(), "x's shape")?;
        let from = float_format(OP, "x", x)?;
        let to = float_format(OP, "y", y)?;
        not_aliased(OP, y, "y", &[("x", Some(x))])?;
        fits_i32(OP, x)?;
        use TensorFormat::{Bf16, F16, F32};
        match (from, to) {
            (F16 | Bf16, F32) => self.cast_with::<cast_to_f32::Kernel>(list, x, y, "x_blob", from),
            (F32, F16 | Bf16) => self.cast_with::<cast_from_f32::Kernel>(list, x, y, "y_blob", to),
            (Bf16, F16) => self.cast_with::<cast_to_f16::Kernel>(list, x, y, "x_blob", Bf16),
            (F16, Bf16) => self.cast_with::<cast_from_f16::Kernel>(list, x, y, "y_blob", Bf16),
            _ => recorded(OP, list.copy(x, y)),
        }
    }

    /// One cast kernel `K` (each has bindings `x_blob`, `y_blob` and the push constant `n`),
    /// its variant chosen by the format of `binding`.
    fn cast_with<K: CastKernel>(
        &self,
        list: &mut CommandList,
        x: &Tensor,
        y: &Tensor,
        binding: &str,
        format: TensorFormat,
    ) -> Result<(), OpError> {
        const OP: &str = "cast";
        let kernel = self.kernel_for::<K>(OP, binding, format, false)?;
        K::record(&kernel, list, x, y)
    }

    /// Records the symmetric int8 quantization `y = clamp(round_half_even(x / s), -127, 127)`
    /// into `list` (the quotient in fp32): x in a float format, y I8 of x's shape, s from
    /// `scale`. Where the device stores int8 packed four to a word (no 8-bit storage), x must
    /// hold a multiple of 4 elements. Nothing is recorded when a check fails.
    pub fn quantize(
        &self,
        list: &mut CommandList,
        x: &Tensor,
        scale: QuantScale<'_>,
        y: &Tensor,
    ) -> Result<(), OpError> {
        const OP: &str = "quantize";
        let format = int8_pair(OP, x, y, ("x", "y"))?;
        not_aliased(OP, y, "y", &[("x", Some(x))])?;
        let view = scale_view(OP, x.shape(), &scale)?;
        let n = x.len();
        match scale {
            QuantScale::PerTensor(s) => {
                let k = self.int8_kernel::<quantize::Kernel>(OP, "x_blob", format, n)?;
                let push = view.push(n, s);
                let bindings = quantize::BufferBindings {
                    x_blob: x,
                    y_blob: y,
                };
                record_int8(OP, list, &k, &bindings, &push, n)
            }
            QuantScale::PerChannel { scales, .. } => {
                let k = self.int8_kernel::<quantize_channels::Kernel>(OP, "x_blob", format, n)?;
                let push = view.push(n, 0.0);
                let bindings = quantize_channels::BufferBindings {
                    x_blob: x,
                    y_blob: y,
                    scale_blob: scales,
                };
                record_int8(OP, list, &k, &bindings, &push, n)
            }
        }
    }

    /// Records `y = q · s` into `list` (the product in fp32, then rounded to y's format): x I8,
    /// y of x's shape in a float format, s from `scale` (along y's dimensions). Where the
    /// device stores int8 packed four to a word, x must hold a multiple of 4 elements. Nothing
    /// is recorded when a check fails.
    pub fn dequantize(
        &self,
        list: &mut CommandList,
        x: &Tensor,
        scale: QuantScale<'_>,
        y: &Tensor,
    ) -> Result<(), OpError> {
        const OP: &str = "dequantize";
        let format = int8_pair(OP, y, x, ("y", "x"))?;
        not_aliased(OP, y, "y", &[("x", Some(x))])?;
        let view = scale_view(OP, y.shape(), &scale)?;
        let n = x.len();
        match scale {
            QuantScale::PerTensor(s) => {
                let k = self.int8_kernel::<dequantize::Kernel>(OP, "y_blob", format, n)?;
                let push = view.push(n, s);
                let bindings = dequantize::BufferBindings {
                    x_blob: x,
                    y_blob: y,
                };
                record_int8(OP, list, &k, &bindings, &push, n)
            }
            // Quads that share a channel: read as words, written as quads.
            QuantScale::PerChannel { scales, .. }
                if n.is_multiple_of(4) && view.inner.is_multiple_of(4) =>
            {
                let k =
                    self.int8_kernel::<dequantize_channels4::Kernel>(OP, "y_blob", format, n)?;
                let push = view.push(n, 0.0);
                let bindings = dequantize_channels4::BufferBindings {
                    x_blob: x,
                    y_blob: y,
                    scale_blob: scales,
                };
                record_int8(OP, list, &k, &bindings, &push, n)
            }
            QuantScale::PerChannel { scales, .. } => {
                let k = self.int8_kernel::<dequantize_channels::Kernel>(OP, "y_blob", format, n)?;
                let push = view.push(n, 0.0);
                let bindings = dequantize_channels::BufferBindings {
                    x_blob: x,
                    y_blob: y,
                    scale_blob: scales,
                };
                record_int8(OP, list, &k, &bindings, &push, n)
            }
        }
    }

    /// An int8 kernel whose float binding `float_binding` stores `format`; refused where its
    /// int8 storage is packed and `n` is not a multiple of 4.
    fn int8_kernel<K: Kernel>(
        &self,
        op: &'static str,
        float_binding: &str,
        format: TensorFormat,
        n: usize,
    ) -> Result<Arc<LoadedKernel<K>>, OpError> {
        let kernel = self.kernel_for::<K>(op, float_binding, format, false)?;
        if kernel.variant().key.int8 == Some(Int8Mode::Int8p) && !n.is_multiple_of(4) {
            return Err(OpError::Unsupported {
                op,
                why: format!(
                    "{n} int8 elements on a device that packs int8 four to a word (no 8-bit storage): a multiple of 4 is needed"
                ),
            });
        }
        Ok(kernel)
    }
}

/// A cast kernel: bindings `x_blob`, `y_blob`, push constant `n`.
trait CastKernel: Kernel + Sized {
    /// Records the cast of every element of `x` into `y` with `kernel`.
    fn record(
        kernel: &Arc<LoadedKernel<Self>>,
        list: &mut CommandList,
        x: &Tensor,
        y: &Tensor,
    ) -> Result<(), OpError>;
}

/// [`CastKernel`] for each cast module (their generated types differ only by name).
macro_rules! cast_kernel {
    ($($m:ident),*) => {$(
        impl CastKernel for $m::Kernel {
            fn record(
                kernel: &Arc<LoadedKernel<Self>>,
                list: &mut CommandList,
                x: &Tensor,
                y: &Tensor,
            ) -> Result<(), OpError> {
                let pipe = pipeline("cast", &kernel, &$m::SpecConstants {}, Some(MOVE_LOCAL))?;
                let bindings = $m::BufferBindings { x_blob: x, y_blob: y };
                let push = $m::PushConstants { n: x.len() as i32 };
                let grid = flat_grid(x.len().div_ceil(4), MOVE_LOCAL);
                recorded("cast", list.dispatch(&pipe, &bindings, &push, grid))
            }
        }
    )*};
}
cast_kernel!(cast_to_f32, cast_from_f32, cast_to_f16, cast_from_f16);

/// Records one int8 dispatch: 4 elements per invocation.
fn record_int8<'a, B: Bindings<'a>>(
    op: &'static str,
    list: &mut CommandList,
    kernel: &Arc<LoadedKernel<B::Kernel>>,
    bindings: &B,
    push: &<B::Kernel as Kernel>::PushConstants,
    n: usize,
) -> Result<(), OpError> {
    let pipe = pipeline(op, kernel, &Default::default(), Some(MOVE_LOCAL))?;
    recorded(
        op,
        list.dispatch(&pipe, bindings, push, flat_grid(n.div_ceil(4), MOVE_LOCAL)),
    )
}

/// The checks of an int8 conversion's float operand `f` and int8 operand `q` (`names`: theirs):
/// one shape, non-empty, below 2^31 elements, q I8, f in a float format (returned).
fn int8_pair(
    op: &'static str,
    f: &Tensor,
    q: &Tensor,
    names: (&'static str, &'static str),
) -> Result<TensorFormat, OpError> {
    nonempty(op, names.0, f)?;
    shape_is(op, names.1, q, f.shape(), &format!("{}'s shape", names.0))?;
    fits_i32(op, f)?;
    let format = float_format(op, names.0, f)?;
    if q.format() != TensorFormat::I8 {
        return Err(OpError::Format {
            op,
            operand: names.1,
            got: q.format(),
            want: "I8".into(),
        });
    }
    Ok(format)
}

/// The float tensor of `shape` viewed as `[outer, axis, inner]` for its scales.
struct ScaleView {
    axis: usize,
    inner: usize,
}

impl ScaleView {
    /// The push constants of the int8 kernels (every one has this block).
    fn push(&self, n: usize, scale: f32) -> quantize::PushConstants {
        quantize::PushConstants {
            n: n as i32,
            axis: self.axis as i32,
            inner: self.inner as i32,
            scale,
        }
    }
}

/// Checks `scale` against the float tensor's `shape`: a per-channel axis within it, its
/// scales F32 of that dimension's length.
fn scale_view(
    op: &'static str,
    shape: &[usize],
    scale: &QuantScale<'_>,
) -> Result<ScaleView, OpError> {
    let QuantScale::PerChannel { scales, axis } = *scale else {
        return Ok(ScaleView { axis: 1, inner: 1 });
    };
    if axis >= shape.len() {
        return Err(OpError::Unsupported {
            op,
            why: format!("per-channel axis {axis} of a tensor of shape {shape:?}"),
        });
    }
    shape_is(op, "scales", scales, &[shape[axis]], "[the axis's length]")?;
    same_format(op, "scales", Some(scales), TensorFormat::F32)?;
    Ok(ScaleView {
        axis: shape[axis],
        inner: shape[axis + 1..].iter().product(),
    })
}
