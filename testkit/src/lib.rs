//! Test helpers shared by the runtime's tests (`runtime/tests/`), the facade's (`tests/`) and
//! the kernel library's (`shaders/tests/`): a context with the validation layer on, random
//! non-zero data, precision-aware comparison.

use rand::{Rng, SeedableRng};
use std::sync::Arc;
use vkprism_runtime::{
    Context, ContextOptions, Feature, FloatMode, Kernel, LoadOptions, LoadedKernel, PipelineError,
    ScalarKind, SelectFailure, TensorFormat, VariantKey,
};

/// A context with the Khronos validation layer on. Fails (never skips) without Vulkan.
pub fn ctx() -> Context {
    ctx_with(ContextOptions::default())
}

/// As [`ctx`], with these options (validation forced on).
pub fn ctx_with(opts: ContextOptions) -> Context {
    let ctx = Context::with_options(opts.with_validation(true)).unwrap_or_else(|e| {
        panic!(
            "a Vulkan device with the validation layer is required (scripts/setup.sh installs \
             lavapipe and the layer): {e}"
        )
    });
    assert!(ctx.validation_enabled());
    ctx
}

/// Whether a test may leave out cooperative-matrix variant `name` on `ctx`'s device: it is a
/// `_cm` variant and the device has no cooperative matrices at all, or (for a `bf16` one) no
/// bfloat16 matrices (`shaderBFloat16CooperativeMatrix` and a bf16 shape). Every other variant
/// must load and run.
pub fn device_lacks_matrices_for(ctx: &Context, name: &str) -> bool {
    let f = ctx.features();
    let bf16_matrices = f.supports(Feature::ShaderBFloat16CooperativeMatrix)
        && f.cooperative_matrices
            .iter()
            .any(|s| s.a == ScalarKind::Bf16);
    let coopmat = VariantKey::parse(name).is_ok_and(|k| k.coopmat == Some(true));
    coopmat
        && (!f.supports(Feature::CooperativeMatrix) || (name.starts_with("bf16") && !bf16_matrices))
}

/// The `VK_NV_cooperative_matrix2` features a kernel on workgroup-scope matrices with
/// tensor-addressed loads needs.
pub const COOPERATIVE_MATRIX2_NEEDS: [Feature; 4] = [
    Feature::CooperativeMatrixWorkgroupScope,
    Feature::CooperativeMatrixFlexibleDimensions,
    Feature::CooperativeMatrixPerElementOperations,
    Feature::CooperativeMatrixTensorAddressing,
];

/// Whether `ctx`'s device lacks cooperative matrices or one of
/// [`COOPERATIVE_MATRIX2_NEEDS`].
pub fn device_lacks_cooperative_matrix2(ctx: &Context) -> bool {
    let f = ctx.features();
    !f.supports(Feature::CooperativeMatrix)
        || COOPERATIVE_MATRIX2_NEEDS.iter().any(|n| !f.supports(*n))
}

/// Loads variant `name` of kernel `K`; `None` only where [`device_lacks_matrices_for`] lets a
/// test leave it out, after checking that the error says the device lacks them, or where the
/// refusal names a `VK_NV_cooperative_matrix2` feature the device lacks (a kernel on
/// workgroup-scope matrices). Any other variant must load (a failure panics, naming it).
pub fn load_unless_device_lacks_matrices<K: Kernel>(
    ctx: &Context,
    name: &str,
) -> Option<Arc<LoadedKernel<K>>> {
    let load = LoadOptions::variant_named(name).unwrap_or_else(|e| panic!("{e}"));
    match ctx.load_with::<K>(&load) {
        Ok(k) => Some(k),
        Err(PipelineError::Select(e))
            if e.kind == SelectFailure::DeviceLacks && device_lacks_matrices_for(ctx, name) =>
        {
            let s = e.to_string();
            assert!(
                s.contains("cooperativeMatrix")
                    || s.contains("shaderBFloat16CooperativeMatrix")
                    || s.contains("Bf16*Bf16"),
                "{name}: {e}"
            );
            eprintln!("{name}: left out, the device lacks its matrices");
            None
        }
        Err(PipelineError::Select(e))
            if e.kind == SelectFailure::DeviceLacks && lacks_a_named_matrix2_feature(ctx, &e) =>
        {
            eprintln!("{name}: left out, the device lacks VK_NV_cooperative_matrix2's {e}");
            None
        }
        Err(e) => panic!("{name}: {e}"),
    }
}

/// Whether refusal `e` names a feature of `VK_NV_cooperative_matrix2` that `ctx`'s device lacks
/// (a variant on workgroup-scope matrices needs some of them, by what its module uses).
fn lacks_a_named_matrix2_feature(ctx: &Context, e: &impl std::fmt::Display) -> bool {
    let s = e.to_string();
    let f = ctx.features();
    Feature::COOPERATIVE_MATRIX2
        .iter()
        .any(|n| !f.supports(*n) && s.contains(n.vulkan_name()))
}

/// Fails the test if the validation layer said anything.
pub fn assert_clean(ctx: &Context) {
    let m = ctx.take_validation_messages();
    assert!(m.is_empty(), "validation layer messages:\n{}", m.join("\n"));
}

/// `n` random values in ±[0.1, 4], never zero.
pub fn random(n: usize, seed: u64) -> Vec<f32> {
    random_in(n, seed, 0.1, 4.0)
}

/// `n` random values with magnitude in [lo, hi) (lo > 0: never zero) and random sign.
pub fn random_in(n: usize, seed: u64, lo: f32, hi: f32) -> Vec<f32> {
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    (0..n)
        .map(|_| {
            let m: f32 = rng.gen_range(lo..hi);
            if rng.gen_bool(0.5) {
                m
            } else {
                -m
            }
        })
        .collect()
}

/// `n` random int8 values in [-127, 127], none zero (the int8 GEMM's test and benchmark inputs).
pub fn random_i8(n: usize, seed: u64) -> Vec<i8> {
    random_in(n, seed, 1.0, 127.99)
        .iter()
        .map(|v| v.trunc() as i8)
        .collect()
}

/// `x` rounded to what `format` stores (what the GPU sees after upload).
pub fn quantize(x: &[f32], format: TensorFormat) -> Vec<f32> {
    x.iter().map(|v| quantize_one(*v, format)).collect()
}

/// An expected result as an output of `format` holds it (`want` rounded), with its error scale
/// widened to |want|: the output's own rounding, for `assert_close_scaled`.
pub fn expected_in(want: &[f32], scale: &[f32], format: TensorFormat) -> (Vec<f32>, Vec<f32>) {
    let scale = scale
        .iter()
        .zip(want)
        .map(|(s, w)| s.max(w.abs()))
        .collect();
    (quantize(want, format), scale)
}

/// A tensor of `shape` in `format` filled with NaN: an output a kernel must overwrite entirely.
pub fn poisoned(ctx: &Context, shape: &[usize], format: TensorFormat) -> vkprism_runtime::Tensor {
    let len = shape.iter().product();
    vkprism_runtime::Tensor::from_f32(ctx, shape, format, &vec![f32::NAN; len])
        .expect("a poisoned output tensor")
}

/// One value rounded to what `format` stores (fp16 and bf16 round; other formats keep it).
pub fn quantize_one(x: f32, format: TensorFormat) -> f32 {
    match format {
        TensorFormat::F16 => half::f16::from_f32(x).to_f32(),
        TensorFormat::Bf16 => half::bf16::from_f32(x).to_f32(),
        _ => x,
    }
}

/// Relative tolerance for a variant, one set for every test (the runtime's, the facade's and the
/// kernel library's used to drift apart: 1e-6 vs 1e-5 for fp32, 4e-3 vs 1e-2 for fp16
/// arithmetic). The looser values are kept because they are what the library's accumulating
/// kernels (GEMM, conv2d) were validated with on real GPUs, where fused multiply-adds and
/// reduction order differ from lavapipe:
/// - fp32 1e-5: about 80 ulps at 1, the error of sums of some hundred terms;
/// - fp16 / bf16 storage 1e-3 / 8e-3: one rounding of the stored value (10- and 7-bit
///   mantissas: half an ulp is 4.9e-4 and 3.9e-3), with margin;
/// - fp16 arithmetic 1e-2: every operation rounds to fp16 (ulp 9.8e-4 at 1), ten of them.
pub fn tolerance(key: &VariantKey) -> f32 {
    match key.float {
        FloatMode::Fp32 => 1e-5,
        FloatMode::Fp16pa | FloatMode::Fp16sa => 1e-2,
        FloatMode::Fp16p | FloatMode::Fp16s => 1e-3,
        FloatMode::Bf16p | FloatMode::Bf16s => 8e-3,
    }
}

/// Compares element-wise with relative tolerance (absolute near zero); NaN (the poison) fails.
pub fn assert_close(got: &[f32], want: &[f32], tol: f32, what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        let err = (g - w).abs() / w.abs().max(1.0);
        assert!(
            err <= tol && g.is_finite(),
            "{what}: element {i}: got {g}, want {w} (rel err {err:.2e} > {tol:.0e})"
        );
    }
}

/// Compares with error relative to `scale[i]` (at least 1): for results whose rounding error
/// grows with the magnitude of what was summed, not of the result (GEMM). NaN fails.
pub fn assert_close_scaled(got: &[f32], want: &[f32], scale: &[f32], tol: f32, what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    for i in 0..got.len() {
        let err = (got[i] - want[i]).abs() / scale[i].max(1.0);
        assert!(
            got[i].is_finite() && err <= tol,
            "{what}: element {i}: got {} want {} (err {err:.2e} > {tol:.0e})",
            got[i],
            want[i]
        );
    }
}

/// The error `record` returns where the call must be refused, after checking that it recorded
/// nothing (an operation checks everything before it records).
pub fn refused<E: std::fmt::Display + std::fmt::Debug>(
    ctx: &Context,
    record: impl FnOnce(&mut vkprism_runtime::CommandList) -> Result<(), E>,
) -> E {
    let mut list = vkprism_runtime::CommandList::new(ctx).expect("a command list");
    let e = record(&mut list).expect_err("the operation must be refused");
    assert!(list.is_empty(), "nothing recorded: {e}");
    e
}
