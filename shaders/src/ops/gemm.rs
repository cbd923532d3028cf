//! The GEMM-shaped operations: [`Ops::gemm`], [`Ops::gemm_int8`] and [`Ops::conv2d`]. Each checks
//! its operands, loads the variant for their format (with cooperative matrices where the
//! operands' sizes allow), chooses tiles through the one tile policy, and records one dispatch,
//! or, where the grid of tiles is too small to fill the GPU ([`GemmConfig::split_for`]), the
//! split-K pair: partial sums into scratch, then [`gemm_split_reduce`] (written here once).

use super::check::{
    conv_operands, float_format, kernel_fits, kernel_takes, matrix, not_aliased, rows_of_four,
    same_format, shape_is,
};
use super::{float_variant, pipeline, recorded, scratch, OpError, Ops};
use crate::tuning::GemmProblem;
use crate::{
    conv2d_nhwc, conv2d_nhwc_split, gemm, gemm_int8, gemm_split, gemm_split_reduce,
    gemm_split_reduce_rms, split_reduce_rms_grid, Conv2dShape, GemmConfig,
};
use std::sync::Arc;
use vkprism::{CommandList, LoadedKernel, Tensor, TensorFormat, VariantKey};

/// The function applied to each result of a GEMM or convolution (the kernels' `activation`).
#[derive(Copy, Clone, Debug, Default, PartialEq)]
#[non_exhaustive]
pub enum Activation {
    /// None.
    #[default]
    None,
    /// max(x, 0).
    Relu,
    /// x, or x · slope below 0.
    LeakyRelu(f32),
    /// 1 / (1 + e^-x).
    Sigmoid,
    /// GELU, erf form: x · Φ(x) = x/2 · (1 + erf(x/√2)).
    Gelu,
    /// SiLU (swish): x · sigmoid(x).
    Silu,
}

impl Activation {
    /// The kernels' `activation` constant and `slope` push constant.
    pub(super) fn code(self) -> (i32, f32) {
        match self {
            Activation::None => (0, 0.0),
            Activation::Relu => (1, 0.0),
            Activation::LeakyRelu(slope) => (2, slope),
            Activation::Sigmoid => (3, 0.0),
            Activation::Gelu => (4, 0.0),
            Activation::Silu => (5, 0.0),
        }
    }
}

/// `C = act(alpha · op(A) · op(B) + beta · C + bias)`, for one matrix or a batch: what
/// [`Ops::gemm`] computes. Built with
/// [`Gemm::new`] and the `with_*` setters.
#[derive(Copy, Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct Gemm {
    /// A is stored K×M (op(A) = Aᵀ).
    pub transpose_a: bool,
    /// B is stored N×K (op(B) = Bᵀ).
    pub transpose_b: bool,
    /// The product's scale.
    pub alpha: f32,
    /// C's scale where it is read back: `C = act(alpha · op(A) · op(B) + beta · C + bias)`
    /// (0: C is only written).
    pub beta: f32,
    /// The function applied last.
    pub activation: Activation,
}

impl Default for Gemm {
    fn default() -> Self {
        Gemm::new()
    }
}

impl Gemm {
    /// C = A · B.
    pub fn new() -> Gemm {
        Gemm {
            transpose_a: false,
            transpose_b: false,
            alpha: 1.0,
            beta: 0.0,
            activation: Activation::None,
        }
    }
    /// This product with A stored K×M (`on`).
    pub fn with_transpose_a(mut self, on: bool) -> Gemm {
        self.transpose_a = on;
        self
    }
    /// This product with B stored N×K (`on`).
    pub fn with_transpose_b(mut self, on: bool) -> Gemm {
        self.transpose_b = on;
        self
    }
    /// This product scaled by `alpha`.
    pub fn with_alpha(mut self, alpha: f32) -> Gemm {
        self.alpha = alpha;
        self
    }
    /// This product plus `beta` times C's previous contents.
    pub fn with_beta(mut self, beta: f32) -> Gemm {
        self.beta = beta;
        self
    }
    /// This product with `activation` applied last.
    pub fn with_activation(mut self, activation: Activation) -> Gemm {
        self.activation = activation;
        self
    }
}

/// `out = act(alpha · conv(input, weight) + bias (+ out))` over a channels-last input: what
/// [`Ops::conv2d`] computes. Built with [`Conv2d::new`] and the `with_*` setters.
#[derive(Copy, Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct Conv2d {
    /// The input, kernel, stride and padding.
    pub shape: Conv2dShape,
    /// The convolution's scale.
    pub alpha: f32,
    /// The function applied last.
    pub activation: Activation,
    /// Whether out's value before is added ahead of the activation (a residual connection
    /// written over the tensor it adds).
    pub residual: bool,
}

impl Conv2d {
    /// The plain convolution of `shape`.
    pub fn new(shape: Conv2dShape) -> Conv2d {
        Conv2d {
            shape,
            alpha: 1.0,
            activation: Activation::None,
            residual: false,
        }
    }
    /// This convolution scaled by `alpha`.
    pub fn with_alpha(mut self, alpha: f32) -> Conv2d {
        self.alpha = alpha;
        self
    }
    /// This convolution with `activation` applied last.
    pub fn with_activation(mut self, activation: Activation) -> Conv2d {
        self.activation = activation;
        self
    }
    /// This convolution added to out's value before (`on`), ahead of the activation:
    /// `out = act(alpha · conv + bias + out)`, one pass where the sum and its activation took
    /// another (a residual block's last convolution, written over its shortcut).
    pub fn with_residual(mut self, on: bool) -> Conv2d {
        self.residual = on;
        self
    }
}

/// The second pass of a split, and the first pass's constants, shared by the GEMM and the
/// convolution.
pub(super) struct Epilogue<'a> {
    bias: Option<&'a Tensor>,
    alpha: f32,
    /// C's value before the product, times this, is added (0: not read).
    beta: f32,
    activation: Activation,
    /// Where set, the pass also writes C's rows RMS-normalized into this tensor, with this
    /// epsilon ([`gemm_split_reduce_rms`]).
    rms: Option<(&'a Tensor, f32)>,
}

impl<'a> Epilogue<'a> {
    /// What a GEMM's second pass applies: `op`'s alpha, beta and activation, and `bias`.
    pub(super) fn of_gemm(bias: Option<&'a Tensor>, op: &Gemm) -> Epilogue<'a> {
        Epilogue {
            bias,
            alpha: op.alpha,
            beta: op.beta,
            activation: op.activation,
            rms: None,
        }
    }

    /// The second pass's specialization constants for `splits` shares, and the activation's
    /// slope.
    fn reduce_constants(&self, splits: u32) -> (gemm_split_reduce::SpecConstants, f32) {
        let (activation, slope) = self.activation.code();
        let spec = gemm_split_reduce::SpecConstants {
            splits: splits as i32,
            bias_term: self.bias.is_some() as i32,
            activation,
            beta_term: (self.beta != 0.0) as i32,
        };
        (spec, slope)
    }

    /// This epilogue also writing C's rows RMS-normalized into `h` (`eps` in the root).
    pub(super) fn with_rms(self, h: &'a Tensor, eps: f32) -> Epilogue<'a> {
        Epilogue {
            rms: Some((h, eps)),
            ..self
        }
    }
}

impl Ops {
    /// Records `c = act(alpha · op(a) · op(b) + beta · c + bias)` into `list`: `a` M×K (K×M
    /// with `transpose_a`), `b` K×N (N×K with `transpose_b`), `c` M×N, `bias` N values added to
    /// each row, all of one format (F32, F16 or Bf16), every stored row a multiple of 4
    /// elements. A batch: `c` `[batch, M, N]` with `a` and `b` each `[batch, ...]` or one matrix
    /// every product shares (strided batched GEMM, one dispatch).
    ///
    /// F16 or Bf16 operands whose stored rows are multiples of 8, at least
    /// [`CM2_MIN_PRODUCT`](crate::CM2_MIN_PRODUCT) multiply-adds, go to
    /// [`gemm_cm2`](crate::gemm_cm2) where the device has `VK_NV_cooperative_matrix2`
    /// ([`Ops::gemm_cm2_with`], tiles: the first of [`Cm2Tiles::candidates`](crate::Cm2Tiles::candidates) the device offers,
    /// a single product split along K or on narrower tiles where that fills the GPU). Otherwise
    /// the variant of [`gemm`] is the best this device runs on that format (cooperative matrices where each matrix of A and B holds a
    /// multiple of 8 elements), the tiles the tile policy's (or the tuner's), a single product
    /// split along K where that fills the GPU better (its second pass adding `beta` · C).
    /// Nothing is recorded when a check fails.
    pub fn gemm(
        &self,
        list: &mut CommandList,
        a: &Tensor,
        b: &Tensor,
        bias: Option<&Tensor>,
        c: &Tensor,
        op: &Gemm,
    ) -> Result<(), OpError> {
        let d = check_gemm(a, b, bias, c, op)?;
        if let Some((kernel, tiles)) = self.gemm_cm2_plan(&d, (a, b), op) {
            return self.gemm_cm2_with(list, &kernel, &tiles, a, b, bias, c, op);
        }
        let matrices = (d.m * d.k).is_multiple_of(8) && (d.k * d.n).is_multiple_of(8);
        self.gemm_tiled(list, &d, matrices, (a, b, bias, c), op)
    }

    /// [`Ops::gemm`] on [`gemm`] (with cooperative matrices where `matrices` and the device has
    /// them), its operands checked as `d`: the tuner's or the table's tiles, a single product
    /// split along K where that fills the GPU better.
    fn gemm_tiled(
        &self,
        list: &mut CommandList,
        d: &GemmDims,
        matrices: bool,
        (a, b, bias, c): (&Tensor, &Tensor, Option<&Tensor>, &Tensor),
        op: &Gemm,
    ) -> Result<(), OpError> {
        let (m, n, k) = (d.m, d.n, d.k);
        let kernel = self.kernel_for::<gemm::Kernel>("gemm", "a_blob", d.format, matrices)?;
        let (ta, tb) = (op.transpose_a, op.transpose_b);
        let cfg = match self.tuner() {
            Some(mut t) => t.gemm(&kernel, m, n, k, ta, tb)?,
            None => self.default_config(&GemmProblem::gemm(m, n, k, ta, tb), &kernel.variant().key),
        };
        let cfg = if d.batch == 1 {
            cfg.split_for_sms((m, n, k), self.multiprocessors())
        } else {
            cfg
        };
        self.gemm_with(list, &kernel, &cfg, a, b, bias, c, op)
    }

    /// As [`Ops::gemm`] in `kernel`'s variant with the configuration `cfg` (a benchmark's or a
    /// tuner's choice): one dispatch, or the split-K pair where `cfg.split_k` > 1 (partial sums
    /// into scratch, then [`gemm_split_reduce`] in the same float mode, C read there for
    /// `beta`; one product only). The same checks, and `kernel`'s format must be the operands'.
    #[allow(clippy::too_many_arguments)]
    pub fn gemm_with(
        &self,
        list: &mut CommandList,
        kernel: &Arc<LoadedKernel<gemm::Kernel>>,
        cfg: &GemmConfig,
        a: &Tensor,
        b: &Tensor,
        bias: Option<&Tensor>,
        c: &Tensor,
        op: &Gemm,
    ) -> Result<(), OpError> {
        const OP: &str = "gemm";
        let d = check_gemm(a, b, bias, c, op)?;
        let (m, n) = (d.m, d.n);
        kernel_takes(OP, kernel.format_of("a_blob"), d.format)?;
        let spec = gemm::SpecConstants {
            transpose_a: op.transpose_a as i32,
            transpose_b: op.transpose_b as i32,
            ..Default::default()
        };
        let push = d.push(op);
        let key = kernel.variant().key;
        if cfg.split_k > 1 {
            if d.batch > 1 {
                return Err(OpError::Unsupported {
                    op: OP,
                    why: "split-K takes one product, not a batch".into(),
                });
            }
            let split = self.kernel_exact::<gemm_split::Kernel>(OP, key)?;
            let partial = self.partial(list, OP, cfg.split_k, (m, n), &[a, b])?;
            let bindings = gemm_split::BufferBindings {
                a_blob: a,
                b_blob: b,
                partial_blob: &partial,
            };
            let pipe = config_pipeline(OP, &split, &cfg.spec(spec), cfg)?;
            recorded(OP, list.dispatch(&pipe, &bindings, &push, cfg.grid(m, n)))?;
            let epilogue = Epilogue::of_gemm(bias, op);
            return self.split_reduce(list, OP, key, cfg.split_k, (m, n), &partial, c, &epilogue);
        }
        let (activation, slope) = op.activation.code();
        let spec = gemm::SpecConstants {
            bias_term: bias.is_some() as i32,
            activation,
            batched: (d.batch > 1) as i32,
            beta_term: (op.beta != 0.0) as i32,
            ..spec
        };
        let push = gemm::PushConstants { slope, ..push };
        let bindings = gemm::BufferBindings {
            a_blob: a,
            b_blob: b,
            // Unread without a bias (bias_term 0): any tensor of the format binds.
            bias_blob: bias.unwrap_or(a),
            c_blob: c,
        };
        let pipe = config_pipeline(OP, kernel, &cfg.spec(spec), cfg)?;
        let [x, y, _] = cfg.grid(m, n);
        recorded(
            OP,
            list.dispatch(&pipe, &bindings, &push, [x, y, d.batch as u32]),
        )
    }

    /// Records `c = a · b` over int8 with exact int32 results: `a` M×K and `b` K×N I8 tensors,
    /// `c` an M×N I32 tensor; K and N multiples of 4.
    pub fn gemm_int8(
        &self,
        list: &mut CommandList,
        a: &Tensor,
        b: &Tensor,
        c: &Tensor,
    ) -> Result<(), OpError> {
        const OP: &str = "gemm_int8";
        let [m, k] = matrix(OP, "a", a)?;
        let [_, n] = matrix(OP, "b", b)?;
        shape_is(OP, "b", b, &[k, n], "[K, N]")?;
        shape_is(OP, "c", c, &[m, n], "[M, N]")?;
        for (name, t, want) in [
            ("a", a, TensorFormat::I8),
            ("b", b, TensorFormat::I8),
            ("c", c, TensorFormat::I32),
        ] {
            same_format(OP, name, Some(t), want)?;
        }
        rows_of_four(OP, &[("a", k), ("b", n)])?;
        not_aliased(OP, c, "c", &[("a", Some(a)), ("b", Some(b))])?;
        // Cooperative-matrix variants read A and B in lines of 16 int8.
        let matrices = a.len().is_multiple_of(16) && b.len().is_multiple_of(16);
        let kernel =
            self.kernel_for::<gemm_int8::Kernel>(OP, "a_blob", TensorFormat::I8, matrices)?;
        let problem = GemmProblem::gemm_int8(m, n, k);
        let cfg = match self.tuner() {
            Some(mut t) => t.gemm_int8(&kernel, m, n, k)?,
            None => self.default_config(&problem, &kernel.variant().key),
        };
        let bindings = gemm_int8::BufferBindings {
            a_blob: a,
            b_blob: b,
            c_blob: c,
        };
        let push = gemm_int8::PushConstants {
            M: m as i32,
            N: n as i32,
            K: k as i32,
        };
        let pipe = config_pipeline(OP, &kernel, &cfg.spec(Default::default()), &cfg)?;
        recorded(OP, list.dispatch(&pipe, &bindings, &push, cfg.grid(m, n)))
    }

    /// Records the channels-last convolution `out = act(alpha · conv(input, weight) + bias)` of
    /// `op.shape` (`+ out`, its value before, with [`Conv2d::with_residual`]): `input`
    /// `[batch, h, w, c]`, `weight` `[kh, kw, c, outc]`, `bias` `[outc]`, `out` `[batch, outh,
    /// outw, outc]`, one float format, `c` and `outc` multiples of 4; an implicit GEMM with
    /// [`Ops::gemm`]'s choice of variant, tiles and split (a 1×1 stride-1 convolution without
    /// cooperative matrices: the GEMM of its pixels).
    pub fn conv2d(
        &self,
        list: &mut CommandList,
        input: &Tensor,
        weight: &Tensor,
        bias: Option<&Tensor>,
        out: &Tensor,
        op: &Conv2d,
    ) -> Result<(), OpError> {
        let format = check_conv(input, weight, bias, out, &op.shape)?;
        let matrices = input.len().is_multiple_of(8) && weight.len().is_multiple_of(8);
        let kernel =
            self.kernel_for::<conv2d_nhwc::Kernel>("conv2d", "in_blob", format, matrices)?;
        let s = &op.shape;
        let pointwise = s.kh == 1 && s.kw == 1 && s.stride == 1 && s.pad == 0;
        if pointwise && kernel.variant().key.coopmat != Some(true) {
            return self.conv2d_pointwise(list, input, weight, bias, out, op);
        }
        let cfg = match self.tuner() {
            Some(mut t) => t.conv2d_nhwc(&kernel, s)?,
            None => self.default_config(&GemmProblem::conv2d_nhwc(s), &kernel.variant().key),
        };
        let cfg = cfg.split_for_sms(s.gemm_mnk(), self.multiprocessors());
        self.conv2d_with(list, &kernel, &cfg, input, weight, bias, out, op)
    }

    /// The variant [`Ops::conv2d`] records for operands of `format` (element counts multiples
    /// of 8, as a network's are): cooperative matrices where the device has them for `format`.
    pub fn conv2d_variant(&self, format: TensorFormat) -> Result<VariantKey, OpError> {
        let kernel = self.kernel_for::<conv2d_nhwc::Kernel>("conv2d", "in_blob", format, true)?;
        Ok(kernel.variant().key)
    }

    /// A 1×1 stride-1 convolution without padding as the GEMM of its pixels (`[M, c]` by the
    /// weight `[c, outc]`), the residual as beta: without cooperative matrices the GEMM's
    /// direct loads beat the convolution's gathered ones (ResNet-50 in fp32: BENCHMARKS.md);
    /// with them the convolution's kernel was as fast.
    fn conv2d_pointwise(
        &self,
        list: &mut CommandList,
        input: &Tensor,
        weight: &Tensor,
        bias: Option<&Tensor>,
        out: &Tensor,
        op: &Conv2d,
    ) -> Result<(), OpError> {
        const OP: &str = "conv2d";
        let (m, n, k) = op.shape.gemm_mnk();
        let matrix = |t: &Tensor, shape: &[usize]| {
            t.view(0, shape)
                .map_err(|source| OpError::Scratch { op: OP, source })
        };
        let (a, b, c) = (
            matrix(input, &[m, k])?,
            matrix(weight, &[k, n])?,
            matrix(out, &[m, n])?,
        );
        let gemm = Gemm::new()
            .with_alpha(op.alpha)
            .with_activation(op.activation)
            .with_beta(if op.residual { 1.0 } else { 0.0 });
        let d = check_gemm(&a, &b, bias, &c, &gemm)?;
        self.gemm_tiled(list, &d, false, (&a, &b, bias, &c), &gemm)
    }

    /// As [`Ops::conv2d`] in `kernel`'s variant with the configuration `cfg`: one dispatch, or
    /// the split-K pair where `cfg.split_k` > 1.
    #[allow(clippy::too_many_arguments)]
    pub fn conv2d_with(
        &self,
        list: &mut CommandList,
        kernel: &Arc<LoadedKernel<conv2d_nhwc::Kernel>>,
        cfg: &GemmConfig,
        input: &Tensor,
        weight: &Tensor,
        bias: Option<&Tensor>,
        out: &Tensor,
        op: &Conv2d,
    ) -> Result<(), OpError> {
        const OP: &str = "conv2d";
        let s = &op.shape;
        let format = check_conv(input, weight, bias, out, s)?;
        kernel_takes(OP, kernel.format_of("in_blob"), format)?;
        let (m, n, _) = s.gemm_mnk();
        let key = kernel.variant().key;
        if cfg.split_k > 1 {
            let split = self.kernel_exact::<conv2d_nhwc_split::Kernel>(OP, key)?;
            let partial = self.partial(list, OP, cfg.split_k, (m, n), &[input, weight])?;
            let bindings = conv2d_nhwc_split::BufferBindings {
                in_blob: input,
                w_blob: weight,
                partial_blob: &partial,
            };
            let pipe = config_pipeline(OP, &split, &cfg.spec(Default::default()), cfg)?;
            let push = s.push(1.0, 0.0);
            recorded(OP, list.dispatch(&pipe, &bindings, &push, cfg.grid(m, n)))?;
            let epilogue = Epilogue {
                bias,
                alpha: op.alpha,
                beta: if op.residual { 1.0 } else { 0.0 },
                activation: op.activation,
                rms: None,
            };
            return self.split_reduce(list, OP, key, cfg.split_k, (m, n), &partial, out, &epilogue);
        }
        let (code, slope) = op.activation.code();
        let spec = gemm::SpecConstants {
            bias_term: bias.is_some() as i32,
            activation: code,
            beta_term: op.residual as i32,
            ..Default::default()
        };
        let bindings = conv2d_nhwc::BufferBindings {
            in_blob: input,
            w_blob: weight,
            bias_blob: bias.unwrap_or(input),
            out_blob: out,
        };
        let pipe = config_pipeline(OP, kernel, &cfg.spec(spec), cfg)?;
        let push = s.push(op.alpha, slope);
        recorded(OP, list.dispatch(&pipe, &bindings, &push, cfg.grid(m, n)))
    }

    /// The tile policy's configuration of `problem` in `variant` on this device.
    pub(super) fn default_config(&self, problem: &GemmProblem, variant: &VariantKey) -> GemmConfig {
        let subgroup = self.ctx.features().limits.subgroup_size;
        self.class.config(problem, variant, subgroup)
    }

    /// Scratch for the fp32 partial sums of a split in `splits` shares, `[splits, m, n]`, for
    /// a first pass that reads `reads` (the list keeps it alive while it exists).
    pub(super) fn partial(
        &self,
        list: &mut CommandList,
        op: &'static str,
        splits: u32,
        (m, n): (usize, usize),
        reads: &[&Tensor],
    ) -> Result<Tensor, OpError> {
        let shape = [splits as usize, m, n];
        scratch(list, &self.ctx, op, &shape, TensorFormat::F32, reads)
    }

    /// Records the second pass of a split in `splits` shares: `out = act(alpha · Σ partial +
    /// beta · out + bias)` in the first pass's float mode, and `out`'s rows RMS-normalized
    /// where `epilogue` asks for them; `partial` lent again after it.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn split_reduce(
        &self,
        list: &mut CommandList,
        op: &'static str,
        first: VariantKey,
        splits: u32,
        (m, n): (usize, usize),
        partial: &Tensor,
        out: &Tensor,
        epilogue: &Epilogue<'_>,
    ) -> Result<(), OpError> {
        // gemm_split_reduce has the float axis alone.
        let key = float_variant(first.float);
        let pass = (key, splits, (m, n));
        let result = match epilogue.rms {
            Some(rms) => self.split_reduce_rms(list, op, pass, [partial, out], rms, epilogue),
            None => self.split_reduce_plain(list, op, pass, [partial, out], epilogue),
        };
        list.release_scratch(partial);
        result
    }

    /// [`gemm_split_reduce`] in variant `key` over `splits` shares of an M×N result.
    fn split_reduce_plain(
        &self,
        list: &mut CommandList,
        op: &'static str,
        (key, splits, (m, n)): (VariantKey, u32, (usize, usize)),
        [partial, out]: [&Tensor; 2],
        epilogue: &Epilogue<'_>,
    ) -> Result<(), OpError> {
        let kernel = self.kernel_exact::<gemm_split_reduce::Kernel>(op, key)?;
        let (spec, slope) = epilogue.reduce_constants(splits);
        let pipe = pipeline(op, &kernel, &spec, None)?;
        let bindings = gemm_split_reduce::BufferBindings {
            partial_blob: partial,
            bias_blob: epilogue.bias.unwrap_or(out),
            c_blob: out,
        };
        let push = gemm_split_reduce::PushConstants {
            M: m as i32,
            N: n as i32,
            alpha: epilogue.alpha,
            slope,
            beta: epilogue.beta,
        };
        let grid = crate::config::split_reduce_grid(m, n);
        recorded(op, list.dispatch(&pipe, &bindings, &push, grid))
    }

    /// [`gemm_split_reduce_rms`] in variant `key`: the same pass, also writing C's rows
    /// RMS-normalized into `h` (`rms`: h and the epsilon).
    fn split_reduce_rms(
        &self,
        list: &mut CommandList,
        op: &'static str,
        (key, splits, (m, n)): (VariantKey, u32, (usize, usize)),
        [partial, out]: [&Tensor; 2],
        (h, eps): (&Tensor, f32),
        epilogue: &Epilogue<'_>,
    ) -> Result<(), OpError> {
        let kernel = self.kernel_exact::<gemm_split_reduce_rms::Kernel>(op, key)?;
        let (spec, slope) = epilogue.reduce_constants(splits);
        let pipe = pipeline(op, &kernel, &spec, None)?;
        let bindings = gemm_split_reduce_rms::BufferBindings {
            partial_blob: partial,
            bias_blob: epilogue.bias.unwrap_or(out),
            c_blob: out,
            h_blob: h,
        };
        let push = gemm_split_reduce_rms::PushConstants {
            M: m as i32,
            N: n as i32,
            alpha: epilogue.alpha,
            slope,
            beta: epilogue.beta,
            eps,
        };
        recorded(
            op,
            list.dispatch(&pipe, &bindings, &push, split_reduce_rms_grid(m)),
        )
    }
}

/// The GEMM's operands checked: (M, N, K) and their one float format.
/// A GEMM's sizes, batch and format, from its checked operands.
pub(super) struct GemmDims {
    pub(super) m: usize,
    pub(super) n: usize,
    pub(super) k: usize,
    /// Products (1: one).
    pub(super) batch: usize,
    /// Elements from one batch's A, B and C to the next (0 where every product shares it).
    pub(super) strides: [usize; 3],
    pub(super) format: TensorFormat,
}

impl GemmDims {
    /// The one-pass kernel's push constants (the activation's slope 0).
    fn push(&self, op: &Gemm) -> gemm::PushConstants {
        let [batch_a, batch_b, batch_c] = self.strides.map(|s| s as i32);
        gemm::PushConstants {
            M: self.m as i32,
            N: self.n as i32,
            K: self.k as i32,
            alpha: op.alpha,
            slope: 0.0,
            batch_a,
            batch_b,
            batch_c,
            beta: op.beta,
        }
    }
}

/// A matrix operand, or a batch of them: `(batch, [rows, columns])`, batch `None` for one.
fn batched_matrix(
    op: &'static str,
    operand: &'static str,
    t: &Tensor,
) -> Result<(Option<usize>, [usize; 2]), OpError> {
    match *t.shape() {
        [r, c] => Ok((None, [r, c])),
        [b, r, c] => Ok((Some(b), [r, c])),
        _ => Err(OpError::Shape {
            op,
            operand,
            got: t.shape().to_vec(),
            want: "a matrix [rows, columns] or a batch [batch, rows, columns]".into(),
        }),
    }
}

/// The GEMM's operands checked: sizes, batch and their one float format.
pub(super) fn check_gemm(
    a: &Tensor,
    b: &Tensor,
    bias: Option<&Tensor>,
    c: &Tensor,
    op: &Gemm,
) -> Result<GemmDims, OpError> {
    const OP: &str = "gemm";
    let (ta, tb) = (op.transpose_a, op.transpose_b);
    let (batch_a, [a0, a1]) = batched_matrix(OP, "a", a)?;
    let (m, k) = if ta { (a1, a0) } else { (a0, a1) };
    let (batch_b, [b0, b1]) = batched_matrix(OP, "b", b)?;
    let n = if tb { b0 } else { b1 };
    let batch = batch_a.or(batch_b).unwrap_or(1);
    let with_batch = |has: Option<usize>, dims: [usize; 2]| match has {
        Some(_) => vec![batch, dims[0], dims[1]],
        None => dims.to_vec(),
    };
    let want_b = with_batch(batch_b, if tb { [n, k] } else { [k, n] });
    shape_is(
        OP,
        "b",
        b,
        &want_b,
        if tb {
            "[batch?, N, K]"
        } else {
            "[batch?, K, N]"
        },
    )?;
    let want_a = with_batch(batch_a, [a0, a1]);
    shape_is(OP, "a", a, &want_a, "a's batch as b's")?;
    let want_c = with_batch(batch_a.or(batch_b), [m, n]);
    shape_is(OP, "c", c, &want_c, "[batch?, M, N]")?;
    if let Some(bias) = bias {
        shape_is(OP, "bias", bias, &[n], "[N]")?;
    }
    let format = float_format(OP, "a", a)?;
    for (name, t) in [("b", Some(b)), ("c", Some(c)), ("bias", bias)] {
        same_format(OP, name, t, format)?;
    }
    rows_of_four(OP, &[("a", a1), ("b", b1), ("c", n)])?;
    not_aliased(
        OP,
        c,
        "c",
        &[("a", Some(a)), ("b", Some(b)), ("bias", bias)],
    )?;
    let stride = |has: Option<usize>, size: usize| if has.is_some() { size } else { 0 };
    Ok(GemmDims {
        m,
        n,
        k,
        batch,
        strides: [stride(batch_a, m * k), stride(batch_b, k * n), m * n],
        format,
    })
}

/// The convolution's operands checked: their one float format.
fn check_conv(
    input: &Tensor,
    weight: &Tensor,
    bias: Option<&Tensor>,
    out: &Tensor,
    s: &Conv2dShape,
) -> Result<TensorFormat, OpError> {
    const OP: &str = "conv2d";
    kernel_fits(OP, s, (s.h, s.w), (s.kh, s.kw), s.stride, s.pad)?;
    shape_is(
        OP,
        "input",
        input,
        &[s.batch, s.h, s.w, s.c],
        "[batch, h, w, c]",
    )?;
    shape_is(
        OP,
        "weight",
        weight,
        &[s.kh, s.kw, s.c, s.outc],
        "[kh, kw, c, outc]",
    )?;
    let out_shape = [s.batch, s.outh(), s.outw(), s.outc];
    shape_is(OP, "out", out, &out_shape, "[batch, outh, outw, outc]")?;
    if let Some(bias) = bias {
        shape_is(OP, "bias", bias, &[s.outc], "[outc]")?;
    }
    conv_operands(
        OP,
        [input, weight, out],
        bias,
        &[("input", s.c), ("out", s.outc)],
    )
}

/// `kernel`'s pipeline for `spec` with `cfg`'s workgroup.
fn config_pipeline<K: vkprism::Kernel>(
    op: &'static str,
    kernel: &Arc<LoadedKernel<K>>,
    spec: &K::SpecConstants,
    cfg: &GemmConfig,
) -> Result<vkprism::Pipeline<K>, OpError> {
    pipeline(op, kernel, spec, Some(cfg.local_size()))
}
