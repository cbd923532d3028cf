//! GELU (erf form) and SiLU in the GEMM and convolution epilogues (`activation.glsl`'s codes 4
//! and 5): `Ops::gemm_with` in every variant of `gemm` the device runs, one pass and split along
//! K (the second pass, `gemm_split_reduce`, applies the activation), `Ops::gemm` and
//! `Ops::conv2d` in each tensor format, against the f64 reference (an exact erf), outputs
//! poisoned first.

use vkprism::{LoadOptions, Tensor, TensorFormat};
use vkprism_shaders::{
    conv2d_nhwc, gemm, reference, Activation, Conv2d, Conv2dShape, Gemm, GemmConfig, OpError, Ops,
};
use vkprism_testkit::{
    assert_clean, assert_close_scaled as check, ctx, expected_in,
    load_unless_device_lacks_matrices, poisoned, quantize, random_in as random, tolerance,
};

const ACTIVATIONS: [(Activation, i32); 2] = [(Activation::Gelu, 4), (Activation::Silu, 5)];

#[test]
fn gemm_gelu_silu_epilogue() {
    let ctx = ctx();
    let ops = Ops::new(&ctx);
    // Edges in M and N; values of the product on both sides of 0, out to a few units.
    let (m, n, k) = (37, 44, 48);
    let a = random(m * k, 31, 0.1, 1.0);
    let b = random(k * n, 32, 0.1, 1.0);
    let bias = random(n, 33, 0.1, 2.0);
    let subgroup = ctx.features().limits.subgroup_size;
    let mut ran = 0;
    for name in gemm::VARIANT_NAMES {
        let Some(kernel) = load_unless_device_lacks_matrices::<gemm::Kernel>(&ctx, name) else {
            continue;
        };
        let key = kernel.variant().key;
        let f = kernel.format_of("a_blob").unwrap();
        let at = Tensor::from_f32(&ctx, &[m, k], f, &a).unwrap();
        let bt = Tensor::from_f32(&ctx, &[k, n], f, &b).unwrap();
        let biast = Tensor::from_f32(&ctx, &[n], f, &bias).unwrap();
        let q = |x: &[f32]| quantize(x, f);
        let one = GemmConfig::for_gemm(&key, subgroup, m, n, k);
        // The split (scratch in fp32, then the reduce pass) where the variant has no matrices.
        let split = GemmConfig { split_k: 3, ..one };
        let configs: &[(GemmConfig, &str)] = if key.coopmat == Some(true) {
            &[(one, "one pass")]
        } else {
            &[(one, "one pass"), (split, "split 3")]
        };
        for &(activation, code) in &ACTIVATIONS {
            for (cfg, how) in configs {
                let ct = poisoned(&ctx, &[m, n], f);
                let op = Gemm::new().with_alpha(0.5).with_activation(activation);
                ops.run(|l| ops.gemm_with(l, &kernel, cfg, &at, &bt, Some(&biast), &ct, &op))
                    .unwrap();
                let o = reference::Gemm {
                    alpha: 0.5,
                    activation: code,
                    ..Default::default()
                };
                let (want, scale) =
                    reference::gemm_with(o, m, n, k, &q(&a), &q(&b), Some(&q(&bias)));
                let (want, scale) = expected_in(&want, &scale, f);
                check(
                    &ct.download_f32().unwrap(),
                    &want,
                    &scale,
                    tolerance(&key),
                    &format!("gemm {name} {activation:?} {how}"),
                );
                ran += 1;
            }
        }
    }
    assert!(ran >= 4, "fp32 must run");
    // Through Ops::gemm in each format (the tile policy's choice).
    for f in [TensorFormat::F32, TensorFormat::F16, TensorFormat::Bf16] {
        let at = Tensor::from_f32(&ctx, &[m, k], f, &a).unwrap();
        let bt = Tensor::from_f32(&ctx, &[k, n], f, &b).unwrap();
        let q = |x: &[f32]| quantize(x, f);
        for &(activation, code) in &ACTIVATIONS {
            let ct = poisoned(&ctx, &[m, n], f);
            let op = Gemm::new().with_activation(activation);
            match ops.run(|l| ops.gemm(l, &at, &bt, None, &ct, &op)) {
                Err(OpError::FormatUnsupported { .. }) => continue,
                r => r.unwrap(),
            }
            let o = reference::Gemm {
                alpha: 1.0,
                activation: code,
                ..Default::default()
            };
            let (want, scale) = reference::gemm_with(o, m, n, k, &q(&a), &q(&b), None);
            let (want, scale) = expected_in(&want, &scale, f);
            let name = match f {
                TensorFormat::F16 => "fp16s",
                TensorFormat::Bf16 => "bf16s",
                _ => "fp32",
            };
            let tol = tolerance(&vkprism::VariantKey::parse(name).unwrap());
            let what = format!("Ops::gemm {f:?} {activation:?}");
            check(&ct.download_f32().unwrap(), &want, &scale, tol, &what);
        }
    }
    assert_clean(&ctx);
}

#[test]
fn conv2d_gelu_silu_epilogue() {
    let ctx = ctx();
    let ops = Ops::new(&ctx);
    let s = Conv2dShape {
        batch: 1,
        h: 6,
        w: 5,
        c: 8,
        outc: 12,
        kh: 3,
        kw: 3,
        stride: 1,
        pad: 1,
    };
    let input = random(s.batch * s.h * s.w * s.c, 41, 0.1, 1.0);
    let weight = random(s.kh * s.kw * s.c * s.outc, 42, 0.1, 0.5);
    let bias = random(s.outc, 43, 0.1, 1.0);
    let out_shape = [s.batch, s.outh(), s.outw(), s.outc];
    let f64_act = |code: i32, v: f32| {
        let v = v as f64;
        (if code == 4 {
            reference::gelu(v)
        } else {
            v / (1.0 + (-v).exp())
        }) as f32
    };
    let split_kernel = ctx
        .load_with::<conv2d_nhwc::Kernel>(&LoadOptions::variant_named("fp32_lm_nocm").unwrap())
        .unwrap();
    let split_config = GemmConfig {
        split_k: 3,
        ..GemmConfig::for_conv(
            &split_kernel.variant().key,
            ctx.features().limits.subgroup_size,
            &s,
        )
    };
    for &(activation, code) in &ACTIVATIONS {
        let op = Conv2d::new(s).with_activation(activation);
        for (f, split) in [
            (TensorFormat::F32, false),
            (TensorFormat::F16, false),
            (TensorFormat::Bf16, false),
            (TensorFormat::F32, true),
        ] {
            let it = Tensor::from_f32(&ctx, &[s.batch, s.h, s.w, s.c], f, &input).unwrap();
            let wt = Tensor::from_f32(&ctx, &[s.kh, s.kw, s.c, s.outc], f, &weight).unwrap();
            let bt = Tensor::from_f32(&ctx, &[s.outc], f, &bias).unwrap();
            let ot = poisoned(&ctx, &out_shape, f);
            let r = if split {
                ops.run(|l| {
                    ops.conv2d_with(
                        l,
                        &split_kernel,
                        &split_config,
                        &it,
                        &wt,
                        Some(&bt),
                        &ot,
                        &op,
                    )
                })
            } else {
                ops.run(|l| ops.conv2d(l, &it, &wt, Some(&bt), &ot, &op))
            };
            match r {
                Err(OpError::FormatUnsupported { .. }) => continue,
                r => r.unwrap(),
            }
            let q = |x: &[f32]| quantize(x, f);
            let (sum, scale) = reference::conv2d_nhwc(s, &q(&input), &q(&weight), &q(&bias));
            let want: Vec<f32> = sum.iter().map(|&v| f64_act(code, v)).collect();
            let (want, scale) = expected_in(&want, &scale, f);
            let name = match f {
                TensorFormat::F16 => "fp16s",
                TensorFormat::Bf16 => "bf16s",
                _ => "fp32",
            };
            let tol = tolerance(&vkprism::VariantKey::parse(name).unwrap());
            let what = format!("conv2d {f:?} {activation:?} split {split}");
            check(&ot.download_f32().unwrap(), &want, &scale, tol, &what);
        }
    }
    assert_clean(&ctx);
}
