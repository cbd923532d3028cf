//! The int8 GEMM with float inputs and outputs: [`quantize_rows`] (dynamic per-row
//! quantization) and [`gemm_int8_dequant`] in every variant the device runs, against CPU
//! references on random non-zero data, outputs poisoned; [`Ops::gemm_int8_weights`] end to
//! end in every float format, within the rounding of the quantization; and its checks.

use vkprism::{Context, LoadOptions, Tensor, TensorFormat};
use vkprism_shaders::{
    gemm_int8_dequant, quantize_rows, quantize_rows_grid, GemmConfig, OpError, Ops,
};
use vkprism_testkit::{
    assert_clean, assert_close_scaled, ctx, load_unless_device_lacks_matrices, poisoned, quantize,
    random_i8, random_in,
};

/// Random values of both signs with magnitudes in [0.1, 2).
fn signed(n: usize, seed: u64) -> Vec<f32> {
    random_in(n, seed, 0.1, 2.0)
        .iter()
        .enumerate()
        .map(|(i, v)| if i % 3 == 1 { -v } else { *v })
        .collect()
}

/// The per-row scales and int8 values the kernel computes, in f32 as the kernel does.
fn quantize_rows_ref(x: &[f32], cols: usize) -> (Vec<f32>, Vec<i8>) {
    let mut scales = Vec::new();
    let mut q = Vec::new();
    for row in x.chunks(cols) {
        let big = row.iter().fold(0f32, |m, v| m.max(v.abs()));
        let s = if big > 0.0 { big / 127.0 } else { 1.0 };
        scales.push(s);
        q.extend(
            row.iter()
                .map(|v| (v / s).round_ties_even().clamp(-127.0, 127.0) as i8),
        );
    }
    (scales, q)
}

#[test]
fn quantize_rows_every_variant() {
    let ctx = ctx();
    for name in quantize_rows::VARIANT_NAMES {
        let k = ctx
            .load_with::<quantize_rows::Kernel>(&LoadOptions::variant_named(name).unwrap())
            .unwrap();
        let f = k.format_of("x_blob").unwrap();
        for (rows, cols) in [(3, 4), (7, 12), (5, 1000), (2, 4100), (40000, 8)] {
            let mut x = signed(rows * cols, (rows * cols) as u64);
            // A row of zeros: scale 1, all 0.
            x[..cols].fill(0.0);
            let x = quantize(&x, f);
            let xt = Tensor::from_f32(&ctx, &[rows, cols], f, &x).unwrap();
            let qt = Tensor::from_i8(&ctx, &[rows, cols], &vec![99; rows * cols]).unwrap();
            let st = poisoned(&ctx, &[rows], TensorFormat::F32);
            let local = [256, 1, 1];
            let pipe = k.pipeline(&Default::default(), Some(local)).unwrap();
            let b = quantize_rows::BufferBindings {
                x_blob: &xt,
                y_blob: &qt,
                scale_blob: &st,
            };
            let push = quantize_rows::PushConstants {
                rows: rows as i32,
                cols: cols as i32,
            };
            ctx.run(|l| l.dispatch(&pipe, &b, &push, quantize_rows_grid(256, rows)))
                .unwrap();
            let (want_s, want_q) = quantize_rows_ref(&x, cols);
            let what = format!("{name} {rows}x{cols}");
            let ones = vec![1.0; rows];
            assert_close_scaled(&st.download_f32().unwrap(), &want_s, &ones, 1e-7, &what);
            // The division may round differently from the CPU's: a value within a rounding of
            // a half step may land on either side; nothing else may differ.
            for (i, (g, w)) in qt.download_i8().unwrap().iter().zip(&want_q).enumerate() {
                let exact = x[i] / want_s[i / cols];
                let near_tie = (exact.abs().fract() - 0.5).abs() < 1e-4;
                assert!(
                    g == w || (near_tie && (*g as i32 - *w as i32).abs() == 1),
                    "{what}: element {i}: got {g}, want {w} (x / s = {exact})"
                );
            }
        }
    }
    assert_clean(&ctx);
}

/// `row_scale[m] · col_scale[n] · Σ a·b + bias[n]` in f64, and its error scale.
fn dequant_ref(
    (m, n, k): (usize, usize, usize),
    a: &[i8],
    b: &[i8],
    rs: &[f32],
    cs: &[f32],
    bias: &[f32],
) -> (Vec<f32>, Vec<f32>) {
    let mut out = Vec::new();
    let mut scale = Vec::new();
    for i in 0..m {
        for j in 0..n {
            let (mut s, mut t) = (0i64, 0i64);
            for l in 0..k {
                let p = a[i * k + l] as i64 * b[l * n + j] as i64;
                s += p;
                t += p.abs();
            }
            let f = rs[i] as f64 * cs[j] as f64;
            let v = s as f64 * f + bias[j] as f64;
            out.push(v as f32);
            // The int32 sum is exact; the dequantization rounds relative to the value.
            scale.push((t as f64 * f + bias[j].abs() as f64).max(v.abs()) as f32);
        }
    }
    (out, scale)
}

fn run_dequant(ctx: &Context, name: &str, (m, n, k): (usize, usize, usize), bias: bool) {
    let Some(kernel) = load_unless_device_lacks_matrices::<gemm_int8_dequant::Kernel>(ctx, name)
    else {
        return;
    };
    let key = kernel.variant().key;
    // Cooperative-matrix variants read A and B in lines of 16 int8 (a dispatch of another
    // size is refused: `PartialElement`).
    if key.coopmat == Some(true) && !((m * k).is_multiple_of(16) && (k * n).is_multiple_of(16)) {
        return;
    }
    let a = random_i8(m * k, 1);
    let b = random_i8(k * n, 2);
    let rs = random_in(m, 3, 0.001, 0.02);
    let cs = random_in(n, 4, 0.001, 0.02);
    let bias_v = if bias { signed(n, 5) } else { vec![0.0; n] };
    let at = Tensor::from_i8(ctx, &[m, k], &a).unwrap();
    let bt = Tensor::from_i8(ctx, &[k, n], &b).unwrap();
    let rst = Tensor::from_f32(ctx, &[m], TensorFormat::F32, &rs).unwrap();
    let cst = Tensor::from_f32(ctx, &[n], TensorFormat::F32, &cs).unwrap();
    let biast = Tensor::from_f32(ctx, &[n], TensorFormat::F32, &bias_v).unwrap();
    let ct = poisoned(ctx, &[m, n], TensorFormat::F32);
    let cfg = GemmConfig::for_gemm_int8(&key, ctx.features().limits.subgroup_size, m, n, k);
    let spec = cfg.spec(vkprism_shaders::gemm::SpecConstants {
        bias_term: bias as i32,
        ..Default::default()
    });
    let pipe = kernel.pipeline(&spec, Some(cfg.local_size())).unwrap();
    let bindings = gemm_int8_dequant::BufferBindings {
        a_blob: &at,
        b_blob: &bt,
        c_blob: &ct,
        row_scale_blob: &rst,
        col_scale_blob: &cst,
        bias_blob: &biast,
    };
    let push = gemm_int8_dequant::PushConstants {
        M: m as i32,
        N: n as i32,
        K: k as i32,
    };
    ctx.run(|l| l.dispatch(&pipe, &bindings, &push, cfg.grid(m, n)))
        .unwrap();
    let (want, scale) = dequant_ref((m, n, k), &a, &b, &rs, &cs, &bias_v);
    let what = format!("{name} {m}x{n}x{k} bias {bias}");
    assert_close_scaled(&ct.download_f32().unwrap(), &want, &scale, 1e-6, &what);
}

#[test]
fn gemm_int8_dequant_every_variant() {
    let ctx = ctx();
    assert_eq!(
        gemm_int8_dequant::VARIANT_NAMES,
        [
            "fp32_int8p_nocm",
            "fp32_int8s_nocm",
            "fp32_int8a_nocm",
            "fp32_int8a_cm"
        ]
    );
    for name in gemm_int8_dequant::VARIANT_NAMES {
        for (i, mnk) in [(5, 8, 12), (37, 20, 48), (64, 64, 64), (130, 36, 96)]
            .into_iter()
            .enumerate()
        {
            run_dequant(&ctx, name, mnk, i % 2 == 0);
        }
    }
    assert_clean(&ctx);
}

/// Through the operation layer in each float format: within the rounding of the activations'
/// quantization (half a step of each row's scale, times the weights' magnitudes) of the float
/// product with the dequantized weights.
#[test]
fn gemm_int8_weights_every_format() {
    let ctx = ctx();
    let ops = Ops::new(&ctx);
    for f in [TensorFormat::F32, TensorFormat::F16, TensorFormat::Bf16] {
        for (m, n, k) in [(3, 8, 16), (33, 20, 64), (64, 128, 256)] {
            let x = quantize(&signed(m * k, 6), f);
            let w = random_i8(k * n, 7);
            let ws = random_in(n, 8, 0.001, 0.01);
            let bias = signed(n, 9);
            let xt = Tensor::from_f32(&ctx, &[m, k], f, &x).unwrap();
            let wt = Tensor::from_i8(&ctx, &[k, n], &w).unwrap();
            let wst = Tensor::from_f32(&ctx, &[n], TensorFormat::F32, &ws).unwrap();
            let bt = Tensor::from_f32(&ctx, &[n], TensorFormat::F32, &bias).unwrap();
            let yt = poisoned(&ctx, &[m, n], TensorFormat::F32);
            ops.run(|l| ops.gemm_int8_weights(l, &xt, &wt, &wst, Some(&bt), &yt))
                .unwrap();
            let got = yt.download_f32().unwrap();
            for i in 0..m {
                let row = &x[i * k..][..k];
                let step = row.iter().fold(0f32, |a, v| a.max(v.abs())) / 127.0;
                for j in 0..n {
                    let (mut want, mut mag) = (bias[j] as f64, 0f64);
                    for l in 0..k {
                        let wv = w[l * n + j] as f64 * ws[j] as f64;
                        want += row[l] as f64 * wv;
                        mag += wv.abs();
                    }
                    let bound = step as f64 / 2.0 * mag * 1.01 + 1e-5 * (1.0 + want.abs());
                    let g = got[i * n + j] as f64;
                    assert!(
                        (g - want).abs() <= bound,
                        "{f:?} {m}x{n}x{k} [{i}][{j}]: got {g}, want {want} (bound {bound})"
                    );
                }
            }
        }
    }
    assert_clean(&ctx);
}

#[test]
fn gemm_int8_weights_refuses_bad_operands() {
    let ctx = ctx();
    let ops = Ops::new(&ctx);
    let f32t = |s: &[usize]| poisoned(&ctx, s, TensorFormat::F32);
    let (x, y, ws) = (f32t(&[4, 8]), f32t(&[4, 12]), f32t(&[12]));
    let w = Tensor::from_i8(&ctx, &[8, 12], &[1; 96]).unwrap();
    let err = |x: &Tensor, w: &Tensor, ws: &Tensor, y: &Tensor| {
        ops.run(|l| ops.gemm_int8_weights(l, x, w, ws, None, y))
            .unwrap_err()
    };
    let e = err(&x, &w, &ws, &f32t(&[4, 8]));
    assert!(matches!(e, OpError::Shape { operand: "y", .. }), "{e}");
    let e = err(&x, &w, &f32t(&[8]), &y);
    assert!(
        matches!(
            e,
            OpError::Shape {
                operand: "w_scales",
                ..
            }
        ),
        "{e}"
    );
    let e = err(&x, &f32t(&[8, 12]), &ws, &y);
    assert!(matches!(e, OpError::Format { operand: "w", .. }), "{e}");
    let e = err(&x, &w, &ws, &poisoned(&ctx, &[4, 12], TensorFormat::F16));
    assert!(matches!(e, OpError::Format { operand: "y", .. }), "{e}");
    let x6 = f32t(&[4, 6]);
    let w6 = Tensor::from_i8(&ctx, &[6, 12], &[1; 72]).unwrap();
    assert!(matches!(
        err(&x6, &w6, &ws, &y),
        OpError::Unsupported { .. }
    ));
    // The context is still usable.
    ops.run(|l| ops.gemm_int8_weights(l, &x, &w, &ws, None, &y))
        .unwrap();
    assert_clean(&ctx);
}
