//! Pooling, channels-last (the layout of [`Ops::conv2d`]): [`Ops::max_pool2d`] and
//! [`Ops::avg_pool2d`] over windows ([`Pool2d`]), [`Ops::global_avg_pool`] over every pixel.

use super::check::{float_format, not_aliased, same_format, shape_is};
use super::{pipeline, recorded, OpError, Ops};
use crate::{global_avg_pool, global_avg_pool4, pool2d, pool2d4, GlobalPoolShape, Pool2dShape};
use vkprism::{CommandList, Tensor};

/// A pooling window: what [`Ops::max_pool2d`] and [`Ops::avg_pool2d`] slide. Output sizes are
/// rounded down (PyTorch's `ceil_mode=False`); average pooling divides by the window's size,
/// padding included (PyTorch's default `count_include_pad=True`). Built with [`Pool2d::new`]
/// and the `with_*` setters.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Pool2d {
    /// Window (kh, kw).
    pub kernel: (usize, usize),
    /// Stride (sh, sw).
    pub stride: (usize, usize),
    /// Zero padding (ph, pw) on each side, at most half the window (as PyTorch).
    pub padding: (usize, usize),
}

impl Pool2d {
    /// A window of kh × kw with stride equal to it (PyTorch's default) and no padding.
    pub fn new(kh: usize, kw: usize) -> Pool2d {
        Pool2d {
            kernel: (kh, kw),
            stride: (kh, kw),
            padding: (0, 0),
        }
    }
    /// This window with stride (sh, sw).
    pub fn with_stride(mut self, sh: usize, sw: usize) -> Pool2d {
        self.stride = (sh, sw);
        self
    }
    /// This window with zero padding (ph, pw).
    pub fn with_padding(mut self, ph: usize, pw: usize) -> Pool2d {
        self.padding = (ph, pw);
        self
    }
}

impl Ops {
    /// Records max pooling of `x` `[batch, h, w, c]` into `y` `[batch, outh, outw, c]` in
    /// `list` (padding never the maximum); one float format; `y` not `x`. Nothing is recorded
    /// when a check fails.
    pub fn max_pool2d(
        &self,
        list: &mut CommandList,
        x: &Tensor,
        y: &Tensor,
        op: &Pool2d,
    ) -> Result<(), OpError> {
        self.pool2d("max_pool2d", list, x, y, op, 0)
    }

    /// Records average pooling of `x` `[batch, h, w, c]` into `y` `[batch, outh, outw, c]` in
    /// `list`: each window's sum divided by kh · kw (the padding counted as zeros); one float
    /// format; `y` not `x`. Nothing is recorded when a check fails.
    pub fn avg_pool2d(
        &self,
        list: &mut CommandList,
        x: &Tensor,
        y: &Tensor,
        op: &Pool2d,
    ) -> Result<(), OpError> {
        self.pool2d("avg_pool2d", list, x, y, op, 1)
    }

    /// Records the mean over the pixels of `x` `[batch, h, w, c]` per image and channel into
    /// `y` `[batch, c]` or `[batch, 1, 1, c]` in `list` (four channels per invocation where c
    /// is a multiple of 4); one float format; `y` not `x`. Nothing is recorded when a check
    /// fails.
    pub fn global_avg_pool(
        &self,
        list: &mut CommandList,
        x: &Tensor,
        y: &Tensor,
    ) -> Result<(), OpError> {
        const OP: &str = "global_avg_pool";
        let [batch, h, w, c] = nhwc(OP, x)?;
        if y.shape() != [batch, 1, 1, c] {
            shape_is(OP, "y", y, &[batch, c], "[batch, c] (or [batch, 1, 1, c])")?;
        }
        let format = float_format(OP, "x", x)?;
        same_format(OP, "y", Some(y), format)?;
        not_aliased(OP, y, "y", &[("x", Some(x))])?;
        if batch > 65535 {
            return Err(OpError::Unsupported {
                op: OP,
                why: format!("{batch} images: at most 65,535 (one workgroup each along z)"),
            });
        }
        let s = GlobalPoolShape {
            batch,
            hw: h * w,
            c,
        };
        let local = s.local_size();
        if s.vec4() {
            let kernel =
                self.kernel_for::<global_avg_pool4::Kernel>(OP, "x_blob", format, false)?;
            let pipe = pipeline(OP, &kernel, &Default::default(), Some(local))?;
            let b = global_avg_pool4::BufferBindings {
                x_blob: x,
                y_blob: y,
            };
            recorded(
                OP,
                list.dispatch(&pipe, &b, &s.push(true), s.grid(local, true)),
            )
        } else {
            let kernel = self.kernel_for::<global_avg_pool::Kernel>(OP, "x_blob", format, false)?;
            let pipe = pipeline(OP, &kernel, &Default::default(), Some(local))?;
            let b = global_avg_pool::BufferBindings {
                x_blob: x,
                y_blob: y,
            };
            recorded(
                OP,
                list.dispatch(&pipe, &b, &s.push(false), s.grid(local, false)),
            )
        }
    }

    /// The checks and the dispatch of both window pools (`code`: the kernel's `op`).
    fn pool2d(
        &self,
        op: &'static str,
        list: &mut CommandList,
        x: &Tensor,
        y: &Tensor,
        window: &Pool2d,
        code: i32,
    ) -> Result<(), OpError> {
        let [batch, h, w, c] = nhwc(op, x)?;
        let s = Pool2dShape {
            batch,
            h,
            w,
            c,
            kernel: window.kernel,
            stride: window.stride,
            padding: window.padding,
        };
        check_window(op, &s)?;
        shape_is(op, "y", y, &s.out_shape(), "[batch, outh, outw, c]")?;
        let format = float_format(op, "x", x)?;
        same_format(op, "y", Some(y), format)?;
        not_aliased(op, y, "y", &[("x", Some(x))])?;
        let spec = pool2d::SpecConstants { op: code };
        let quads = s.vec4();
        let (push, grid) = (s.push_in(quads), s.grid_in(quads));
        if quads {
            let kernel = self.kernel_for::<pool2d4::Kernel>(op, "x_blob", format, false)?;
            let pipe = pipeline(op, &kernel, &spec, Some(s.local_size()))?;
            let b = pool2d4::BufferBindings {
                x_blob: x,
                y_blob: y,
            };
            return recorded(op, list.dispatch(&pipe, &b, &push, grid));
        }
        let kernel = self.kernel_for::<pool2d::Kernel>(op, "x_blob", format, false)?;
        let pipe = pipeline(op, &kernel, &spec, Some(s.local_size()))?;
        let b = pool2d::BufferBindings {
            x_blob: x,
            y_blob: y,
        };
        recorded(op, list.dispatch(&pipe, &b, &push, grid))
    }
}

/// x's `[batch, h, w, c]`.
fn nhwc(op: &'static str, x: &Tensor) -> Result<[usize; 4], OpError> {
    match *x.shape() {
        [b, h, w, c] => Ok([b, h, w, c]),
        _ => Err(OpError::Shape {
            op,
            operand: "x",
            got: x.shape().to_vec(),
            want: "[batch, h, w, c] (channels-last)".into(),
        }),
    }
}

/// A window of at least one pixel, strides of at least one, padding at most half the window
/// (as PyTorch: a window of padding alone would have no maximum), and a window that fits the
/// padded input.
fn check_window(op: &'static str, s: &Pool2dShape) -> Result<(), OpError> {
    let (kh, kw) = s.kernel;
    let (ph, pw) = s.padding;
    let why = if kh == 0 || kw == 0 || s.stride.0 == 0 || s.stride.1 == 0 {
        format!(
            "window {:?} and stride {:?} must be at least 1",
            s.kernel, s.stride
        )
    } else if 2 * ph > kh || 2 * pw > kw {
        format!(
            "padding {:?} is more than half the window {:?}",
            s.padding, s.kernel
        )
    } else if s.h + 2 * ph < kh || s.w + 2 * pw < kw {
        format!(
            "window {:?} is larger than the padded input {:?}",
            s.kernel,
            (s.h + 2 * ph, s.w + 2 * pw)
        )
    } else {
        return Ok(());
    };
    Err(OpError::Unsupported { op, why })
}
