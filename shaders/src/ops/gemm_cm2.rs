//! [`Ops::gemm`] on workgroup-scope cooperative matrices ([`gemm_cm2`]): when it is taken and
//! how it is recorded.

use super::check::kernel_takes;
use super::gemm::{check_gemm, Epilogue, GemmDims};
use super::{pipeline, recorded, OpError, Ops};
use crate::{gemm_cm2, gemm_cm2_split, Cm2Tiles, Gemm};
use std::sync::Arc;
use vkprism::{CommandList, LoadedKernel, Tensor, TensorFormat};

/// The fewest multiply-adds (M·N·K over the batch) [`Ops::gemm`] records on [`gemm_cm2`]: the
/// measured wins are from the decoder's prompt projections (2.1 · 10⁹ and up) and 1024³ up;
/// ResNet-50's 1×1 convolutions as GEMMs (4 · 10⁸ and below) ran slower on it than on the
/// convolution kernel (BENCHMARKS.md), so smaller products keep [`gemm`](crate::gemm).
pub const CM2_MIN_PRODUCT: usize = 1 << 29;

impl Ops {
    /// [`gemm_cm2`] for the checked problem `d`, where it computes it and the device runs it:
    /// F16 or Bf16 operands, every stored row of A, B and C a multiple of 8 elements, at least
    /// [`CM2_MIN_PRODUCT`] multiply-adds.
    pub(super) fn gemm_cm2_kernel(
        &self,
        d: &GemmDims,
        a: &Tensor,
        b: &Tensor,
    ) -> Option<Arc<LoadedKernel<gemm_cm2::Kernel>>> {
        let large = d.m * d.n * d.k * d.batch >= CM2_MIN_PRODUCT;
        let matrices = matches!(d.format, TensorFormat::F16 | TensorFormat::Bf16);
        if !matrices || !rows_of_eight(d, a, b) || !large {
            return None;
        }
        // A device without VK_NV_cooperative_matrix2 refuses every variant: the KHR kernel.
        self.kernel_for::<gemm_cm2::Kernel>("gemm", "a_blob", d.format, true)
            .ok()
    }

    /// [`gemm_cm2`] and its tiles for the checked problem `d` (`op`'s), where it computes it,
    /// the device offers tiles for it and not every load of theirs clamps
    /// ([`Cm2Tiles::clamps_every_load`]): the first of [`Cm2Tiles::candidates`] the device
    /// lists, with no split for a batch of products.
    pub(super) fn gemm_cm2_plan(
        &self,
        d: &GemmDims,
        (a, b): (&Tensor, &Tensor),
        op: &Gemm,
    ) -> Option<(Arc<LoadedKernel<gemm_cm2::Kernel>>, Cm2Tiles)> {
        let kernel = self.gemm_cm2_kernel(d, a, b)?;
        let features = self.context().features();
        let mnk = (d.m, d.n, d.k);
        let tiles = Cm2Tiles::for_device(features, operands(d.format), mnk)?;
        if tiles.clamps_every_load(mnk, (op.transpose_a, op.transpose_b)) {
            return None;
        }
        let split_k = if d.batch == 1 { tiles.split_k } else { 1 };
        Some((kernel, Cm2Tiles { split_k, ..tiles }))
    }

    /// As [`Ops::gemm`] on [`gemm_cm2`] with `tiles` (a benchmark's choice): one dispatch, or
    /// where `tiles.split_k` > 1 [`gemm_cm2_split`] then
    /// [`gemm_split_reduce`](crate::gemm_split_reduce) (one product only). The same checks,
    /// and besides: the kernel's format (F16 or Bf16), every stored row a multiple of 8,
    /// `tiles` offered by the device ([`Cm2Tiles::offered_by`]).
    #[allow(clippy::too_many_arguments)]
    pub fn gemm_cm2_with(
        &self,
        list: &mut CommandList,
        kernel: &Arc<LoadedKernel<gemm_cm2::Kernel>>,
        tiles: &Cm2Tiles,
        a: &Tensor,
        b: &Tensor,
        bias: Option<&Tensor>,
        c: &Tensor,
        op: &Gemm,
    ) -> Result<(), OpError> {
        const OP: &str = "gemm";
        let d = check_gemm(a, b, bias, c, op)?;
        kernel_takes(OP, kernel.format_of("a_blob"), d.format)?;
        if !tiles.offered_by(self.context().features(), operands(d.format)) {
            return Err(OpError::Unsupported {
                op: OP,
                why: format!(
                    "the device offers no workgroup-scope matrices for {tiles:?} \
                     (VkCooperativeMatrixFlexibleDimensionsPropertiesNV)"
                ),
            });
        }
        if !rows_of_eight(&d, a, b) {
            return Err(OpError::Unsupported {
                op: OP,
                why: "gemm_cm2 reads stored rows of multiples of 8 elements".into(),
            });
        }
        if tiles.split_k > 1 {
            let epilogue = Epilogue::of_gemm(bias, op);
            return self.gemm_cm2_split(list, kernel, tiles, &d, (a, b, c), op, &epilogue);
        }
        let (activation, slope) = op.activation.code();
        let spec = tiles.spec(
            (d.m, d.n, d.k),
            gemm_cm2::SpecConstants {
                transpose_a: op.transpose_a as i32,
                transpose_b: op.transpose_b as i32,
                bias_term: bias.is_some() as i32,
                activation,
                batched: (d.batch > 1) as i32,
                beta_term: (op.beta != 0.0) as i32,
                ..Default::default()
            },
        );
        let [batch_a, batch_b, batch_c] = d.strides.map(|s| s as i32);
        let push = gemm_cm2::PushConstants {
            M: d.m as i32,
            N: d.n as i32,
            K: d.k as i32,
            alpha: op.alpha,
            slope,
            batch_a,
            batch_b,
            batch_c,
            beta: op.beta,
        };
        let bindings = gemm_cm2::BufferBindings {
            a_blob: a,
            b_blob: b,
            // Unread without a bias (bias_term 0): any F16 tensor binds.
            bias_blob: bias.unwrap_or(a),
            c_blob: c,
        };
        let pipe = pipeline(OP, kernel, &spec, Some(tiles.local_size()))?;
        let grid = tiles.grid(d.m, d.n, d.batch);
        recorded(OP, list.dispatch(&pipe, &bindings, &push, grid))
    }

    /// The split pair: shares of K into fp32 partial sums, then their sum with `epilogue`
    /// (`op`'s, its bias, and where it says so C's rows normalized).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn gemm_cm2_split(
        &self,
        list: &mut CommandList,
        kernel: &Arc<LoadedKernel<gemm_cm2::Kernel>>,
        tiles: &Cm2Tiles,
        d: &GemmDims,
        (a, b, c): (&Tensor, &Tensor, &Tensor),
        op: &Gemm,
        epilogue: &Epilogue<'_>,
    ) -> Result<(), OpError> {
        const OP: &str = "gemm";
        if d.batch > 1 {
            return Err(OpError::Unsupported {
                op: OP,
                why: "split-K takes one product, not a batch".into(),
            });
        }
        let key = kernel.variant().key;
        let split = self.kernel_exact::<gemm_cm2_split::Kernel>(OP, key)?;
        let spec = tiles.spec(
            (d.m, d.n, d.k),
            gemm_cm2::SpecConstants {
                transpose_a: op.transpose_a as i32,
                transpose_b: op.transpose_b as i32,
                ..Default::default()
            },
        );
        let push = gemm_cm2::PushConstants {
            M: d.m as i32,
            N: d.n as i32,
            K: d.k as i32,
            ..Default::default()
        };
        let partial = self.partial(list, OP, tiles.split_k, (d.m, d.n), &[a, b])?;
        let bindings = gemm_cm2_split::BufferBindings {
            a_blob: a,
            b_blob: b,
            partial_blob: &partial,
        };
        let pipe = pipeline(OP, &split, &spec, Some(tiles.local_size()))?;
        let grid = tiles.grid(d.m, d.n, 1);
        recorded(OP, list.dispatch(&pipe, &bindings, &push, grid))?;
        self.split_reduce(
            list,
            OP,
            key,
            tiles.split_k,
            (d.m, d.n),
            &partial,
            c,
            epilogue,
        )
    }
}

/// Whether every stored row of A, B and C (N long) is a multiple of 8 elements: what
/// [`gemm_cm2`]'s 16-byte loads read.
fn rows_of_eight(d: &GemmDims, a: &Tensor, b: &Tensor) -> bool {
    let row = |t: &Tensor| t.shape().last().copied().unwrap_or(0);
    [row(a), row(b), d.n].iter().all(|r| r.is_multiple_of(8))
}

/// The component type of `format`'s matrices (F16 or Bf16 tensors).
pub(super) fn operands(format: TensorFormat) -> vkprism::ScalarKind {
    match format {
        TensorFormat::Bf16 => vkprism::ScalarKind::Bf16,
        _ => vkprism::ScalarKind::F16,
    }
}
