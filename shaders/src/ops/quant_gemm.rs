//! [`Ops::gemm_int8_weights`]: a float GEMM through int8 tensor cores. The activations are
//! quantized per row as they come ([`quantize_rows`]), multiplied by int8 weights quantized per
//! output column, and the int32 sums dequantized as they are stored ([`gemm_int8_dequant`]).

use super::check::{float_format, matrix, not_aliased, rows_of_four, same_format, shape_is};
use super::{pipeline, recorded, OpError, Ops};
use crate::tuning::GemmProblem;
use crate::{gemm_int8_dequant, quantize_rows, quantize_rows_grid};
use vkprism::{CommandList, Tensor, TensorFormat};

const OP: &str = "gemm_int8_weights";

impl Ops {
    /// Records `y = (x quantized per row) · w · w_scales + bias` into `list`: `x` `[M, K]` float
    /// (F32, F16 or Bf16), `w` `[K, N]` I8 with one F32 scale per column in `w_scales` `[N]`
    /// (`w[k][n] · w_scales[n]` is the weight), `bias` F32 `[N]`, `y` F32 `[M, N]`; K and N
    /// multiples of 4. Each row of x gets the scale `max |x| / 127` (dynamic quantization, in
    /// scratch), so the result is the float product up to that rounding. Nothing is recorded
    /// when a check fails.
    pub fn gemm_int8_weights(
        &self,
        list: &mut CommandList,
        x: &Tensor,
        w: &Tensor,
        w_scales: &Tensor,
        bias: Option<&Tensor>,
        y: &Tensor,
    ) -> Result<(), OpError> {
        let [m, k] = matrix(OP, "x", x)?;
        let [_, n] = matrix(OP, "w", w)?;
        shape_is(OP, "w", w, &[k, n], "[K, N]")?;
        shape_is(OP, "w_scales", w_scales, &[n], "[N]")?;
        shape_is(OP, "y", y, &[m, n], "[M, N]")?;
        if let Some(b) = bias {
            shape_is(OP, "bias", b, &[n], "[N]")?;
        }
        let format = float_format(OP, "x", x)?;
        same_format(OP, "w", Some(w), TensorFormat::I8)?;
        for (name, t) in [("w_scales", Some(w_scales)), ("bias", bias), ("y", Some(y))] {
            same_format(OP, name, t, TensorFormat::F32)?;
        }
        rows_of_four(OP, &[("x", k), ("w", n)])?;
        let inputs = [("x", Some(x)), ("w_scales", Some(w_scales)), ("bias", bias)];
        not_aliased(OP, y, "y", &inputs)?;
        let scratch = |shape: &[usize], f| {
            Tensor::new(&self.ctx, shape, f).map_err(|source| OpError::Scratch { op: OP, source })
        };
        let (xq, x_scales) = (
            scratch(&[m, k], TensorFormat::I8)?,
            scratch(&[m], TensorFormat::F32)?,
        );
        self.quantize_rows(list, x, format, &xq, &x_scales)?;
        self.dequant_product(list, (m, n, k), [&xq, w, &x_scales, w_scales, y], bias)
    }

    /// Records [`quantize_rows`] of `x` into `xq` and `scales`.
    fn quantize_rows(
        &self,
        list: &mut CommandList,
        x: &Tensor,
        format: TensorFormat,
        xq: &Tensor,
        scales: &Tensor,
    ) -> Result<(), OpError> {
        let [rows, cols] = [x.shape()[0], x.shape()[1]];
        let kernel = self.kernel_for::<quantize_rows::Kernel>(OP, "x_blob", format, false)?;
        let local = crate::rows::row_workgroup(cols);
        let pipe = pipeline(OP, &kernel, &Default::default(), Some(local))?;
        let bindings = quantize_rows::BufferBindings {
            x_blob: x,
            y_blob: xq,
            scale_blob: scales,
        };
        let push = quantize_rows::PushConstants {
            rows: rows as i32,
            cols: cols as i32,
        };
        let grid = quantize_rows_grid(local[0], rows);
        recorded(OP, list.dispatch(&pipe, &bindings, &push, grid))
    }

    /// Records [`gemm_int8_dequant`] of the quantized operands.
    fn dequant_product(
        &self,
        list: &mut CommandList,
        (m, n, k): (usize, usize, usize),
        [xq, w, x_scales, w_scales, y]: [&Tensor; 5],
        bias: Option<&Tensor>,
    ) -> Result<(), OpError> {
        // Cooperative-matrix variants read A and B in lines of 16 int8.
        let matrices = (m * k).is_multiple_of(16) && (k * n).is_multiple_of(16);
        let kernel =
            self.kernel_for::<gemm_int8_dequant::Kernel>(OP, "a_blob", TensorFormat::I8, matrices)?;
        let cfg = self.default_config(&GemmProblem::gemm_int8(m, n, k), &kernel.variant().key);
        let spec = cfg.spec(crate::gemm::SpecConstants {
            bias_term: bias.is_some() as i32,
            ..Default::default()
        });
        let pipe = pipeline(OP, &kernel, &spec, Some(cfg.local_size()))?;
        let bindings = gemm_int8_dequant::BufferBindings {
            a_blob: xq,
            b_blob: w,
            c_blob: y,
            row_scale_blob: x_scales,
            col_scale_blob: w_scales,
            // Unread without a bias (bias_term 0): any F32 tensor binds.
            bias_blob: bias.unwrap_or(w_scales),
        };
        let push = gemm_int8_dequant::PushConstants {
            M: m as i32,
            N: n as i32,
            K: k as i32,
        };
        recorded(OP, list.dispatch(&pipe, &bindings, &push, cfg.grid(m, n)))
    }
}
