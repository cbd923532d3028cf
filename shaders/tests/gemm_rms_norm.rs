//! `gemm_split_reduce_rms` (a split GEMM's second pass that also writes C's rows
//! RMS-normalized) in every variant against a CPU reference, partial sums random and outputs
//! poisoned, and `Ops::gemm_rms_norm` against the GEMM and the norm computed on the CPU — on
//! the fused path where the device splits the GEMM on `gemm_cm2`, on the GEMM and
//! `Ops::rms_norm` elsewhere (lavapipe in CI) — with the validation layer on; bad operands
//! refused.

use vkprism::{CommandList, Context, LoadOptions, Tensor, TensorFormat};
use vkprism_shaders::{
    gemm_split_reduce_rms, split_reduce_rms_grid, Activation, Cm2Tiles, Gemm, OpError, Ops,
    CM2_MIN_PRODUCT,
};
use vkprism_testkit::{
    assert_clean, assert_close_scaled, ctx, device_lacks_cooperative_matrix2, poisoned, quantize,
    random_in, refused, tolerance,
};

/// `x`'s rows of `n` divided by the root of their mean square plus `eps`, in f64.
fn rms_rows(x: &[f32], n: usize, eps: f32) -> Vec<f32> {
    x.chunks(n)
        .flat_map(|row| {
            let mean = row.iter().map(|v| (*v as f64).powi(2)).sum::<f64>() / n as f64;
            let r = 1.0 / (mean + eps as f64).sqrt();
            row.iter().map(move |v| (*v as f64 * r) as f32)
        })
        .collect()
}

/// One case of the kernel: `splits` shares of an `m`×`n` result, with a bias and C's value
/// before (`beta`) or without, and ReLU or no activation.
#[derive(Copy, Clone, Debug)]
struct ReduceCase {
    m: usize,
    n: usize,
    splits: usize,
    bias: bool,
    beta: f32,
    relu: bool,
}

fn run_reduce(ctx: &Context, name: &str, c: ReduceCase, seed: u64) {
    let k = ctx
        .load_with::<gemm_split_reduce_rms::Kernel>(&LoadOptions::variant_named(name).unwrap())
        .unwrap();
    let f = k.format_of("c_blob").unwrap();
    let (m, n) = (c.m, c.n);
    let partial = random_in(c.splits * m * n, seed, -1.0, 1.0);
    let bias = quantize(&random_in(n, seed + 1, -0.5, 0.5), f);
    let before = quantize(&random_in(m * n, seed + 2, -2.0, 2.0), f);
    let partial_t = Tensor::from_f32(ctx, &[c.splits, m, n], TensorFormat::F32, &partial).unwrap();
    let bias_t = Tensor::from_f32(ctx, &[n], f, &bias).unwrap();
    let c_t = match c.beta != 0.0 {
        true => Tensor::from_f32(ctx, &[m, n], f, &before).unwrap(),
        false => poisoned(ctx, &[m, n], f),
    };
    let h_t = poisoned(ctx, &[m, n], f);
    let (alpha, eps) = (0.75, 1e-5);
    let spec = gemm_split_reduce_rms::SpecConstants {
        splits: c.splits as i32,
        bias_term: c.bias as i32,
        activation: if c.relu { 1 } else { 0 },
        beta_term: (c.beta != 0.0) as i32,
    };
    let pipe = k.pipeline(&spec, None).unwrap();
    let bindings = gemm_split_reduce_rms::BufferBindings {
        partial_blob: &partial_t,
        bias_blob: &bias_t,
        c_blob: &c_t,
        h_blob: &h_t,
    };
    let push = gemm_split_reduce_rms::PushConstants {
        M: m as i32,
        N: n as i32,
        alpha,
        slope: 0.0,
        beta: c.beta,
        eps,
    };
    ctx.run(|l| l.dispatch(&pipe, &bindings, &push, split_reduce_rms_grid(m)))
        .unwrap();

    let want_c: Vec<f32> = (0..m * n)
        .map(|i| {
            let sum: f32 = (0..c.splits).map(|z| partial[z * m * n + i]).sum();
            let b = if c.bias { bias[i % n] } else { 0.0 };
            let v = alpha * sum + c.beta * before[i] + b;
            if c.relu {
                v.max(0.0)
            } else {
                v
            }
        })
        .collect();
    let want_c = quantize(&want_c, f);
    let tol = tolerance(&k.variant().key);
    let what = format!("gemm_split_reduce_rms {name} {c:?}");
    let ones = vec![1.0; m * n];
    assert_close_scaled(&c_t.download_f32().unwrap(), &want_c, &ones, tol, &what);
    // h from C as stored (what a norm reading C sees).
    let want_h = quantize(&rms_rows(&want_c, n, eps), f);
    let got_h = h_t.download_f32().unwrap();
    assert_close_scaled(&got_h, &want_h, &ones, tol, &format!("{what}: h"));
}

#[test]
fn gemm_split_reduce_rms_every_variant() {
    let ctx = ctx();
    let case = |m, n, splits, bias, beta, relu| ReduceCase {
        m,
        n,
        splits,
        bias,
        beta,
        relu,
    };
    let cases = [
        // A residual added in place, a bias; rows of 6 quads.
        case(5, 24, 3, true, 1.0, false),
        // Rows longer than the workgroup's 256 quads, ReLU, C not read (poisoned).
        case(3, 1032, 2, false, 0.0, true),
        // One row, one share.
        case(1, 8, 1, true, 0.5, false),
    ];
    for name in gemm_split_reduce_rms::VARIANT_NAMES {
        for (i, c) in cases.into_iter().enumerate() {
            run_reduce(&ctx, name, c, 30 + 10 * i as u64);
        }
    }
    assert_clean(&ctx);
}

/// C = A · Bᵀ + C's value before, then its rows RMS-normalized, in f64.
fn gemm_residual_rms(
    (m, n, k): (usize, usize, usize),
    a: &[f32],
    b: &[f32],
    before: &[f32],
    eps: f32,
    f: TensorFormat,
) -> (Vec<f32>, Vec<f32>) {
    let c: Vec<f32> = (0..m * n)
        .map(|i| {
            let (r, col) = (i / n, i % n);
            let dot: f64 = (0..k)
                .map(|j| a[r * k + j] as f64 * b[col * k + j] as f64)
                .sum();
            (dot + before[i] as f64) as f32
        })
        .collect();
    let c = quantize(&c, f);
    let h = quantize(&rms_rows(&c, n, eps), f);
    (c, h)
}

/// `Ops::gemm_rms_norm` on (m, n, k), B stored N×K, the residual added, in `f`.
fn ops_case(
    ctx: &Context,
    ops: &Ops,
    f: TensorFormat,
    (m, n, k): (usize, usize, usize),
    seed: u64,
) {
    let q = |x: Vec<f32>| quantize(&x, f);
    let a = q(random_in(m * k, seed, -1.0, 1.0));
    let b = q(random_in(n * k, seed + 1, -1.0, 1.0));
    let before = q(random_in(m * n, seed + 2, -4.0, 4.0));
    let (at, bt) = (
        Tensor::from_f32(ctx, &[m, k], f, &a).unwrap(),
        Tensor::from_f32(ctx, &[n, k], f, &b).unwrap(),
    );
    let ct = Tensor::from_f32(ctx, &[m, n], f, &before).unwrap();
    let ht = poisoned(ctx, &[m, n], f);
    let op = Gemm::new().with_transpose_b(true).with_beta(1.0);
    let eps = 1e-5;
    let mut list = CommandList::new(ctx).unwrap();
    ops.gemm_rms_norm(&mut list, &at, &bt, None, &ct, &op, &ht, eps)
        .unwrap();
    list.submit_and_wait().unwrap();
    let (want_c, want_h) = gemm_residual_rms((m, n, k), &a, &b, &before, eps, f);
    // The GEMM's error grows with what it sums: |a|·|b| over k, plus the residual.
    let scale = vec![(k as f32).sqrt() + 4.0; m * n];
    let tol = if f == TensorFormat::F32 { 1e-5 } else { 4e-3 };
    let what = format!("gemm_rms_norm {f:?} {m}x{n}x{k}");
    assert_close_scaled(&ct.download_f32().unwrap(), &want_c, &scale, tol, &what);
    let ones = vec![1.0; m * n];
    let got_h = ht.download_f32().unwrap();
    assert_close_scaled(&got_h, &want_h, &ones, 4.0 * tol, &format!("{what}: h"));
}

/// The fused path where the device splits the GEMM on `gemm_cm2` (a product of
/// `CM2_MIN_PRODUCT` over a K of 4096: 8 tiles, split in 4; and there the output projection's
/// narrow tiles split for the norm), the GEMM and the norm otherwise,
/// and a product too small for either (F32, rows of 12).
#[test]
fn ops_gemm_rms_norm_matches_the_gemm_then_the_norm() {
    let ctx = ctx();
    let ops = Ops::new(&ctx);
    let split = (256, 512, 4096);
    assert_eq!(split.0 * split.1 * split.2, CM2_MIN_PRODUCT);
    assert!(Cm2Tiles::for_problem(split.0, split.1, split.2).split_k > 1);
    if !device_lacks_cooperative_matrix2(&ctx) {
        eprintln!("the split on gemm_cm2: its second pass writes h");
        // A decoder's output projection at 512 tokens: narrow tiles made split ones
        // (`Cm2Tiles::with_row_pass`). Too slow for lavapipe, which has no gemm_cm2 anyway.
        let o = (512, 2048, 2048);
        let narrow = Cm2Tiles::for_problem(o.0, o.1, o.2);
        assert_eq!(narrow.with_row_pass((o.0, o.2)).split_k, 2);
        ops_case(&ctx, &ops, TensorFormat::F16, o, 17);
    }
    ops_case(&ctx, &ops, TensorFormat::F16, split, 5);
    ops_case(&ctx, &ops, TensorFormat::F32, (7, 12, 20), 9);
    ops_case(&ctx, &ops, TensorFormat::F16, (9, 16, 24), 13);
    assert_clean(&ctx);
}

#[test]
fn gemm_rms_norm_bad_operands_are_errors_and_record_nothing() {
    let ctx = ctx();
    let ops = Ops::new(&ctx);
    let t = |shape: &[usize], f| Tensor::new(&ctx, shape, f).unwrap();
    let f = TensorFormat::F32;
    let (a, b, c) = (t(&[4, 8], f), t(&[8, 8], f), t(&[4, 8], f));
    let op = Gemm::new()
        .with_transpose_b(true)
        .with_activation(Activation::None);
    let run = |h: &Tensor, c: &Tensor| {
        refused(&ctx, |l| {
            ops.gemm_rms_norm(l, &a, &b, None, c, &op, h, 1e-5)
        })
    };
    let e = run(&t(&[4, 4], f), &c);
    assert!(matches!(e, OpError::Shape { operand: "h", .. }), "{e}");
    let e = run(&t(&[4, 8], TensorFormat::F16), &c);
    assert!(matches!(e, OpError::Format { operand: "h", .. }), "{e}");
    let e = run(&c, &c);
    assert!(matches!(e, OpError::Aliased { output: "h", .. }), "{e}");
    // The GEMM's own checks first: C of the wrong shape.
    let e = run(&t(&[4, 8], f), &t(&[4, 9], f));
    assert!(matches!(e, OpError::Shape { .. }), "{e}");
    // The context stays usable.
    let h = t(&[4, 8], f);
    let mut list = CommandList::new(&ctx).unwrap();
    ops.gemm_rms_norm(&mut list, &a, &b, None, &c, &op, &h, 1e-5)
        .unwrap();
    list.submit_and_wait().unwrap();
    assert_clean(&ctx);
}
