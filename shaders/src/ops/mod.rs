//! The operation layer: one call per operation. [`Ops`] belongs to one [`Context`]; it loads
//! each kernel once per tensor format and keeps it, chooses tiles through the one tile policy
//! ([`DeviceClass`]'s table, or a [`GemmTuner`] when given one), allocates the scratch an
//! operation needs, and checks shapes, formats and aliasing before recording anything.
//!
//! Each operation records into a [`CommandList`] (`ops.gemm(&mut list, ...)`), so a whole step
//! is one list replayed; [`Ops::run`] is the one-line eager form (record one list, submit, wait).
//!
//! - `gemm.rs`: [`Gemm`] (`C = act(alpha · op(A) · op(B) + bias)`, split along K where that
//!   fills the GPU better), the same product over int8 ([`Ops::gemm_int8`]) and the
//!   channels-last convolution ([`Ops::conv2d`]), all through one split-K path;
//! - `reduce.rs`: [`Ops::reduce`] along one axis ([`ReduceOp`]: sum, mean, max, min, argmax);
//!   `sample.rs`: [`Ops::sample`], an index drawn from each row's softmax as [`Draw`] says;
//! - `norm.rs`: [`Ops::softmax`] ([`Softmax`]: scaled, causal), [`Ops::layer_norm`],
//!   [`Ops::rms_norm`], [`Ops::group_norm`] (channels-last), each allowed in place;
//! - `elementwise.rs`: [`Ops::unary`] ([`UnaryOp`]) and [`Ops::binary`] ([`BinaryOp`], numpy
//!   broadcasting, [`broadcast_shape`]);
//! - `attention.rs`: [`Ops::attention`] ([`Attention`]: scaled, causal, grouped-query heads);
//! - `movement.rs`: [`Ops::permute`], [`Ops::transpose`], [`Ops::slice`], [`Ops::concat`],
//!   [`Ops::pad`], [`Ops::embedding`]; `convert.rs`: [`Ops::cast`], [`Ops::quantize`] and
//!   [`Ops::dequantize`] ([`QuantScale`]);
//! - `gemv.rs`: decode's matrix-vector products, [`Ops::gemv`] and [`Ops::gemv_int8`], and
//!   their `_with` forms fusing an input RMS norm, activation, gated pairs, residual ([`Gemv`]);
//! - `pool.rs`: [`Ops::max_pool2d`], [`Ops::avg_pool2d`] ([`Pool2d`]), [`Ops::global_avg_pool`];
//! - `depthwise.rs`: [`Ops::conv2d_depthwise`] ([`DepthwiseConv2d`]), channels-last;
//! - `rope.rs`: [`Ops::rope`] ([`Rope`]: rotary position embedding, decode's offset);
//! - `fold.rs`: [`fold_batch_norm`], batch norm folded into a convolution's weights (host side);
//! - `quant_gemm.rs`: [`Ops::gemm_int8_weights`], a float GEMM through int8 tensor cores
//!   (activations quantized per row as they come, int8 weights per column);
//! - `error.rs`: [`OpError`].

mod attention;
mod check;
mod convert;
mod depthwise;
mod elementwise;
mod error;
mod fold;
mod gemm;
mod gemm_cm2;
mod gemm_glu;
mod gemm_norm;
mod gemm_rope;
mod gemv;
mod movement;
mod norm;
mod pool;
mod quant_gemm;
mod reduce;
mod rope;
mod sample;

pub use attention::Attention;
pub use convert::QuantScale;
pub use depthwise::DepthwiseConv2d;
pub use elementwise::{broadcast_shape, BinaryOp, UnaryOp};
pub use error::OpError;
pub use fold::{fold_batch_norm, BatchNorm, ConvWeightLayout};
pub use gemm::{Activation, Conv2d, Gemm};
pub use gemm_cm2::CM2_MIN_PRODUCT;
pub use gemm_glu::{gemm_glu_constants, glu_narrow_from};
pub use gemv::Gemv;
pub use norm::Softmax;
pub use pool::Pool2d;
pub use reduce::ReduceOp;
pub use rope::{HeadNorm, Rope, RopeStyle};
pub use sample::Draw;

use crate::{DeviceClass, GemmTuner};
use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use vkprism::{
    CommandError, CommandList, Context, Kernel, LoadOptions, LoadedKernel, Options, TensorFormat,
    VariantKey,
};

/// The operations of the kernel library on one context: kernels loaded once and kept, tiles
/// chosen per device. Cheap to share (`&Ops` records from any thread).
pub struct Ops {
    ctx: Context,
    class: DeviceClass,
    tuner: Option<Mutex<GemmTuner>>,
    /// Loaded kernels by (kernel type, what the variant was chosen for).
    kernels: Mutex<HashMap<(TypeId, Choice), Arc<dyn Any + Send + Sync>>>,
    /// An I32 tensor of one value, bound where a kernel declares a binding it does not read.
    unread_i32: std::sync::OnceLock<vkprism::Tensor>,
    /// The split attention rows' share counters, zero between dispatches.
    share_counts: std::sync::OnceLock<vkprism::Tensor>,
}

/// What a kernel's variant is chosen for: the tensor format its operands have, and whether
/// cooperative-matrix variants may be used; or one exact variant.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
enum Choice {
    Format {
        format: TensorFormat,
        matrices: bool,
    },
    Exact(VariantKey),
}

impl Ops {
    /// The operations on `ctx`, with tiles from the device class's table.
    pub fn new(ctx: &Context) -> Ops {
        Ops {
            ctx: ctx.clone(),
            class: DeviceClass::of(ctx),
            tuner: None,
            kernels: Mutex::new(HashMap::new()),
            unread_i32: std::sync::OnceLock::new(),
            share_counts: std::sync::OnceLock::new(),
        }
    }

    /// The operations on `ctx`, with GEMM-shaped tiles measured by `tuner` on first use (and
    /// cached where the tuner caches).
    pub fn with_tuner(ctx: &Context, tuner: GemmTuner) -> Ops {
        Ops {
            tuner: Some(Mutex::new(tuner)),
            ..Ops::new(ctx)
        }
    }

    /// The context the operations run on.
    pub fn context(&self) -> &Context {
        &self.ctx
    }

    /// The device's multiprocessors as the grid rules count them ([`crate::multiprocessors`]).
    pub(crate) fn multiprocessors(&self) -> usize {
        crate::multiprocessors(self.ctx.features())
    }

    /// An I32 tensor of one value for a binding the kernel declares but does not read in the
    /// configuration recorded (made once).
    pub(crate) fn unread_i32(&self, op: &'static str) -> Result<&vkprism::Tensor, OpError> {
        if let Some(t) = self.unread_i32.get() {
            return Ok(t);
        }
        let t = vkprism::Tensor::new(&self.ctx, &[1], TensorFormat::I32)
            .map_err(|source| OpError::Scratch { op, source })?;
        Ok(self.unread_i32.get_or_init(|| t))
    }

    /// The position buffer where given, else the one a kernel binds unread where it reads
    /// none (without its `position_in_buffer`).
    pub(crate) fn position_or_unread<'a>(
        &'a self,
        op: &'static str,
        position: Option<&'a vkprism::Tensor>,
    ) -> Result<&'a vkprism::Tensor, OpError> {
        match position {
            Some(p) => Ok(p),
            None => self.unread_i32(op),
        }
    }

    /// The counters of split attention's shares ([`attention::COUNTED_ROWS`] I32 zeros): each
    /// row's workgroups count themselves done there and the last sets it back to 0, so they
    /// are zero again after every dispatch.
    pub(crate) fn share_counts(&self, op: &'static str) -> Result<&vkprism::Tensor, OpError> {
        if let Some(t) = self.share_counts.get() {
            return Ok(t);
        }
        let zeros = vec![0; attention::COUNTED_ROWS];
        let t = vkprism::Tensor::from_i32(&self.ctx, &[zeros.len()], &zeros)
            .map_err(|source| OpError::Scratch { op, source })?;
        Ok(self.share_counts.get_or_init(|| t))
    }

    /// Records what `record` records into one list, submits it and waits: the eager form of
    /// any operation (`ops.run(|l| ops.gemm(l, &a, &b, None, &c, &Gemm::new()))`).
    pub fn run(
        &self,
        record: impl FnOnce(&mut CommandList) -> Result<(), OpError>,
    ) -> Result<(), OpError> {
        let mut list = CommandList::new(&self.ctx).map_err(OpError::Command)?;
        record(&mut list)?;
        list.submit_and_wait().map_err(OpError::Command)
    }

    /// The tuner, where the operations have one.
    pub(crate) fn tuner(&self) -> Option<MutexGuard<'_, GemmTuner>> {
        let t = self.tuner.as_ref()?;
        Some(t.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// `K` in the best variant this device runs whose binding `binding` holds `format` (with
    /// or without cooperative matrices), loaded once per context.
    pub(crate) fn kernel_for<K: Kernel>(
        &self,
        op: &'static str,
        binding: &str,
        format: TensorFormat,
        matrices: bool,
    ) -> Result<Arc<LoadedKernel<K>>, OpError> {
        let choice = Choice::Format { format, matrices };
        self.cached::<K>(choice, || {
            let options = options_for(format).with_cooperative_matrix(matrices);
            let kernel = self
                .ctx
                .load_with::<K>(&LoadOptions::options(options))
                .map_err(|e| OpError::Load { op, source: e })?;
            let chosen = kernel
                .format_of(binding)
                .map_err(|e| OpError::Load { op, source: e })?;
            if chosen != format {
                return Err(OpError::FormatUnsupported {
                    op,
                    format,
                    variant: kernel.variant().key,
                });
            }
            Ok(kernel)
        })
    }

    /// `K` in exactly `variant` (a second pass that must match the first's), loaded once.
    pub(crate) fn kernel_exact<K: Kernel>(
        &self,
        op: &'static str,
        variant: VariantKey,
    ) -> Result<Arc<LoadedKernel<K>>, OpError> {
        self.cached::<K>(Choice::Exact(variant), || {
            self.ctx
                .load_with::<K>(&LoadOptions::variant(variant))
                .map_err(|e| OpError::Load { op, source: e })
        })
    }

    fn cached<K: Kernel>(
        &self,
        choice: Choice,
        load: impl FnOnce() -> Result<Arc<LoadedKernel<K>>, OpError>,
    ) -> Result<Arc<LoadedKernel<K>>, OpError> {
        let key = (TypeId::of::<K>(), choice);
        let mut kernels = self.kernels.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(k) = kernels.get(&key) {
            if let Ok(k) = k.clone().downcast::<LoadedKernel<K>>() {
                return Ok(k);
            }
        }
        let kernel = load()?;
        kernels.insert(key, kernel.clone());
        Ok(kernel)
    }
}

/// Load options that make the best variant for tensors of `format` one that stores `format`:
/// fp16 variants for F16, bf16 for Bf16, fp32 for F32 (the integer formats have their own axes).
/// The operation layer loads every kernel so (with or without cooperative matrices), so a
/// probe that loads a kernel with them times the variant the layer runs.
pub fn options_for(format: TensorFormat) -> Options {
    let fp16 = format == TensorFormat::F16;
    let bf16 = format == TensorFormat::Bf16;
    Options::default()
        .with_fp16_packed(fp16)
        .with_fp16_storage(fp16)
        .with_fp16_arithmetic(fp16)
        .with_bf16_packed(bf16)
        .with_bf16_storage(bf16)
}

/// Scratch of `shape` and `format` lent by `list` ([`CommandList::scratch`]; give it back with
/// [`CommandList::release_scratch`] once its passes are recorded), its error the operation's.
pub(crate) fn scratch(
    list: &mut CommandList,
    ctx: &Context,
    op: &'static str,
    shape: &[usize],
    format: TensorFormat,
    reads: &[&vkprism::Tensor],
) -> Result<vkprism::Tensor, OpError> {
    list.scratch(ctx, shape, format, reads)
        .map_err(|e| match e {
            CommandError::Tensor(source) => OpError::Scratch { op, source },
            source => OpError::Record { op, source },
        })
}

/// The variant of float mode `float` of a kernel whose only axis is the float one (a second
/// pass that runs in its first pass's float mode).
pub(crate) fn float_variant(float: vkprism::FloatMode) -> VariantKey {
    VariantKey::parse(float.name()).expect("every float mode's name is a variant name")
}

/// `kernel`'s pipeline for `spec` in workgroups of `local` (`None`: the kernel's own), its
/// error the operation's.
pub(crate) fn pipeline<K: Kernel>(
    op: &'static str,
    kernel: &Arc<LoadedKernel<K>>,
    spec: &K::SpecConstants,
    local: Option<[u32; 3]>,
) -> Result<vkprism::Pipeline<K>, OpError> {
    kernel
        .pipeline(spec, local)
        .map_err(|source| OpError::Load { op, source })
}

/// Records one dispatch, mapping its error to the operation's.
pub(crate) fn recorded(op: &'static str, r: Result<(), CommandError>) -> Result<(), OpError> {
    r.map_err(|source| OpError::Record { op, source })
}
