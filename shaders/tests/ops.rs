//! The operation layer (`Ops`): each GEMM-shaped operation in every tensor format the device
//! runs, against the f64 CPU reference on random non-zero data, outputs poisoned first; the
//! split-K path through `*_with` and a split configuration chosen by hand; and the checks,
//! which record nothing.

use vkprism::{CommandList, LoadOptions, Tensor, TensorFormat};
use vkprism_shaders::{
    conv2d_nhwc, gemm, reference, Activation, Conv2d, Conv2dShape, Gemm, GemmConfig, OpError, Ops,
};
use vkprism_testkit::{
    assert_clean, assert_close_scaled as check, ctx, expected_in, poisoned, quantize, random_i8,
    random_in as random, tolerance,
};

const FORMATS: [TensorFormat; 3] = [TensorFormat::F32, TensorFormat::F16, TensorFormat::Bf16];

/// The tolerance of the variant `ops` runs on `format`: that of a variant storing it.
fn tolerance_of(format: TensorFormat) -> f32 {
    let name = match format {
        TensorFormat::F16 => "fp16s",
        TensorFormat::Bf16 => "bf16s",
        _ => "fp32",
    };
    tolerance(&vkprism::VariantKey::parse(name).unwrap())
}

/// Runs `o` on an M×N×K problem through `Ops::gemm` in format `f`; `None` where the device runs
/// no variant on `f`.
fn gemm_case(
    ops: &Ops,
    f: TensorFormat,
    (m, n, k): (usize, usize, usize),
    o: reference::Gemm,
) -> Option<()> {
    let ctx = ops.context();
    let a = random(m * k, 11, 0.1, 1.0);
    let b = random(k * n, 12, 0.1, 1.0);
    let bias = random(n, 13, 0.1, 1.0);
    let a_shape = if o.transpose_a { [k, m] } else { [m, k] };
    let b_shape = if o.transpose_b { [n, k] } else { [k, n] };
    let at = Tensor::from_f32(ctx, &a_shape, f, &a).unwrap();
    let bt = Tensor::from_f32(ctx, &b_shape, f, &b).unwrap();
    let biast = Tensor::from_f32(ctx, &[n], f, &bias).unwrap();
    let ct = poisoned(ctx, &[m, n], f);
    let activation = match o.activation {
        1 => Activation::Relu,
        2 => Activation::LeakyRelu(o.slope),
        3 => Activation::Sigmoid,
        _ => Activation::None,
    };
    let op = Gemm::new()
        .with_transpose_a(o.transpose_a)
        .with_transpose_b(o.transpose_b)
        .with_alpha(o.alpha)
        .with_activation(activation);
    match ops.run(|l| ops.gemm(l, &at, &bt, Some(&biast), &ct, &op)) {
        Err(OpError::FormatUnsupported { .. }) => {
            println!("gemm: the device runs no variant on {f:?}");
            return None;
        }
        r => r.unwrap(),
    }
    let q = |x: &[f32]| quantize(x, f);
    let (want, scale) = reference::gemm_with(o, m, n, k, &q(&a), &q(&b), Some(&q(&bias)));
    let (want, scale) = expected_in(&want, &scale, f);
    let what = format!("gemm {f:?} {m}x{n}x{k} {o:?}");
    check(
        &ct.download_f32().unwrap(),
        &want,
        &scale,
        tolerance_of(f),
        &what,
    );
    Some(())
}

#[test]
fn gemm_every_format() {
    let ctx = ctx();
    let ops = Ops::new(&ctx);
    let leaky = reference::Gemm {
        alpha: 0.5,
        activation: 2,
        slope: 0.1,
        ..Default::default()
    };
    let transposed = reference::Gemm {
        transpose_a: true,
        transpose_b: true,
        alpha: 1.0,
        activation: 1,
        slope: 0.0,
    };
    let mut ran = 0;
    for f in FORMATS {
        // Edges in M, N and K (none a multiple of the tile), then both operands transposed.
        ran += gemm_case(&ops, f, (33, 44, 52), leaky).is_some() as usize;
        gemm_case(&ops, f, (40, 136, 48), transposed);
        // M not a multiple of 8 with every stored row one (16-byte loads in the matrix
        // variants), B stored K×N and N×K; then A stored K×M, its rows M = 36 long (no
        // 16-byte loads).
        for (m, ta, tb) in [(37, false, false), (37, false, true), (36, true, false)] {
            let o = reference::Gemm {
                transpose_a: ta,
                transpose_b: tb,
                ..leaky
            };
            gemm_case(&ops, f, (m, 136, 200), o);
        }
        gemm_case(
            &ops,
            f,
            (1, 4, 4),
            reference::Gemm {
                alpha: 1.0,
                ..Default::default()
            },
        );
    }
    assert!(ran >= 1, "no format ran");
    assert_clean(&ctx);
}

/// `gemm_with` a configuration split three ways: the split pass and the reduce pass the layer
/// records, against the one-pass reference.
#[test]
fn gemm_split_through_the_layer() {
    let ctx = ctx();
    let ops = Ops::new(&ctx);
    let (m, n, k) = (70, 72, 104);
    let kernel = ctx
        .load_with::<gemm::Kernel>(&LoadOptions::variant_named("fp32_lm_nocm").unwrap())
        .unwrap();
    let key = kernel.variant().key;
    let cfg = GemmConfig {
        split_k: 3,
        ..GemmConfig::for_gemm(&key, ctx.features().limits.subgroup_size, m, n, k)
    };
    let f = TensorFormat::F32;
    let (a, b, bias) = (
        random(m * k, 1, 0.1, 1.0),
        random(k * n, 2, 0.1, 1.0),
        random(n, 3, 0.1, 1.0),
    );
    let at = Tensor::from_f32(&ctx, &[m, k], f, &a).unwrap();
    let bt = Tensor::from_f32(&ctx, &[k, n], f, &b).unwrap();
    let biast = Tensor::from_f32(&ctx, &[n], f, &bias).unwrap();
    let ct = poisoned(&ctx, &[m, n], f);
    let op = Gemm::new()
        .with_alpha(0.5)
        .with_activation(Activation::LeakyRelu(0.1));
    let mut list = CommandList::new(&ctx).unwrap();
    ops.gemm_with(&mut list, &kernel, &cfg, &at, &bt, Some(&biast), &ct, &op)
        .unwrap();
    assert_eq!(list.len(), 2, "the split pass and the reduce pass");
    list.submit_and_wait().unwrap();
    let o = reference::Gemm {
        alpha: 0.5,
        activation: 2,
        slope: 0.1,
        ..Default::default()
    };
    let (want, scale) = reference::gemm_with(o, m, n, k, &a, &b, Some(&bias));
    let (want, scale) = expected_in(&want, &scale, f);
    check(
        &ct.download_f32().unwrap(),
        &want,
        &scale,
        tolerance(&key),
        "gemm split 3",
    );
    assert_clean(&ctx);
}

/// A strided 3×3 convolution of odd sizes, the convolution tests' shape.
const SMALL_CONV: Conv2dShape = Conv2dShape {
    batch: 2,
    h: 7,
    w: 6,
    c: 8,
    outc: 12,
    kh: 3,
    kw: 3,
    stride: 2,
    pad: 1,
};

/// `fp32_lm_nocm`'s convolution kernel and a configuration of `s` split three ways along K.
fn split_three_ways(
    ctx: &vkprism::Context,
    s: &Conv2dShape,
) -> (
    std::sync::Arc<vkprism::LoadedKernel<conv2d_nhwc::Kernel>>,
    GemmConfig,
) {
    let kernel = ctx
        .load_with::<conv2d_nhwc::Kernel>(&LoadOptions::variant_named("fp32_lm_nocm").unwrap())
        .unwrap();
    let cfg = GemmConfig {
        split_k: 3,
        ..GemmConfig::for_conv(
            &kernel.variant().key,
            ctx.features().limits.subgroup_size,
            s,
        )
    };
    (kernel, cfg)
}

#[test]
fn conv2d_every_format_and_split() {
    let ctx = ctx();
    let ops = Ops::new(&ctx);
    let s = SMALL_CONV;
    let input = random(s.batch * s.h * s.w * s.c, 21, 0.1, 1.0);
    let weight = random(s.kh * s.kw * s.c * s.outc, 22, 0.1, 1.0);
    let bias = random(s.outc, 23, 0.1, 1.0);
    let out_shape = [s.batch, s.outh(), s.outw(), s.outc];
    let op = Conv2d::new(s);
    let check_out = |out: &Tensor, f: TensorFormat, tol: f32, what: &str| {
        let q = |x: &[f32]| quantize(x, f);
        let (want, scale) = reference::conv2d_nhwc(s, &q(&input), &q(&weight), &q(&bias));
        let (want, scale) = expected_in(&want, &scale, f);
        check(&out.download_f32().unwrap(), &want, &scale, tol, what);
    };
    for f in FORMATS {
        let it = Tensor::from_f32(&ctx, &[s.batch, s.h, s.w, s.c], f, &input).unwrap();
        let wt = Tensor::from_f32(&ctx, &[s.kh, s.kw, s.c, s.outc], f, &weight).unwrap();
        let bt = Tensor::from_f32(&ctx, &[s.outc], f, &bias).unwrap();
        let ot = poisoned(&ctx, &out_shape, f);
        match ops.run(|l| ops.conv2d(l, &it, &wt, Some(&bt), &ot, &op)) {
            Err(OpError::FormatUnsupported { .. }) => continue,
            r => r.unwrap(),
        }
        check_out(&ot, f, tolerance_of(f), &format!("conv2d {f:?}"));
    }
    // Split three ways along K = 3 × 3 × 8.
    let f = TensorFormat::F32;
    let (kernel, cfg) = split_three_ways(&ctx, &s);
    let it = Tensor::from_f32(&ctx, &[s.batch, s.h, s.w, s.c], f, &input).unwrap();
    let wt = Tensor::from_f32(&ctx, &[s.kh, s.kw, s.c, s.outc], f, &weight).unwrap();
    let bt = Tensor::from_f32(&ctx, &[s.outc], f, &bias).unwrap();
    let ot = poisoned(&ctx, &out_shape, f);
    ops.run(|l| ops.conv2d_with(l, &kernel, &cfg, &it, &wt, Some(&bt), &ot, &op))
        .unwrap();
    check_out(&ot, f, tolerance_of(f), "conv2d split 3");
    assert_clean(&ctx);
}

/// A residual convolution's operands on the host: random input, weight, bias and shortcut
/// (|shortcut| up to `bound`) for shape `s`.
struct ResidualCase {
    s: Conv2dShape,
    input: Vec<f32>,
    weight: Vec<f32>,
    bias: Vec<f32>,
    shortcut: Vec<f32>,
    bound: f32,
}

impl ResidualCase {
    fn new(s: Conv2dShape, seed: u64, bound: f32) -> ResidualCase {
        let out: usize = [s.batch, s.outh(), s.outw(), s.outc].iter().product();
        ResidualCase {
            s,
            input: random(s.batch * s.h * s.w * s.c, seed, -1.0, 1.0),
            weight: random(s.kh * s.kw * s.c * s.outc, seed + 1, -1.0, 1.0),
            bias: random(s.outc, seed + 2, -1.0, 1.0),
            shortcut: random(out, seed + 3, -bound, bound),
            bound,
        }
    }

    /// Input, weight, bias, and the output holding the shortcut, in `f`.
    fn upload(&self, ctx: &vkprism::Context, f: TensorFormat) -> [Tensor; 4] {
        let s = self.s;
        let t = |shape: &[usize], v: &[f32]| Tensor::from_f32(ctx, shape, f, v).unwrap();
        [
            t(&[s.batch, s.h, s.w, s.c], &self.input),
            t(&[s.kh, s.kw, s.c, s.outc], &self.weight),
            t(&[s.outc], &self.bias),
            t(&[s.batch, s.outh(), s.outw(), s.outc], &self.shortcut),
        ]
    }

    /// `out` is relu(conv + bias + shortcut) within `f`'s tolerance, with both zeros and
    /// positive values among it.
    fn check(&self, out: &Tensor, f: TensorFormat, what: &str) {
        let q = |x: &[f32]| quantize(x, f);
        let (sum, scale) =
            reference::conv2d_nhwc(self.s, &q(&self.input), &q(&self.weight), &q(&self.bias));
        let want: Vec<f32> = sum
            .iter()
            .zip(q(&self.shortcut))
            .map(|(v, r)| (v + r).max(0.0))
            .collect();
        let scale: Vec<f32> = scale.iter().map(|c| c + self.bound).collect();
        let (want, scale) = expected_in(&want, &scale, f);
        let got = out.download_f32().unwrap();
        assert!(got.contains(&0.0) && got.iter().any(|&v| v > 0.0), "{what}");
        check(&got, &want, &scale, tolerance_of(f), what);
    }
}

/// A residual convolution (`Conv2d::with_residual`) with ReLU: out, holding the shortcut, becomes
/// relu(conv + bias + shortcut) in every format and split three ways along K (the second pass
/// adds it there), against the CPU reference.
#[test]
fn conv2d_residual_every_format_and_split() {
    let ctx = ctx();
    let ops = Ops::new(&ctx);
    let case = ResidualCase::new(SMALL_CONV, 31, 4.0);
    let op = Conv2d::new(case.s)
        .with_residual(true)
        .with_activation(Activation::Relu);
    let run = |f: TensorFormat, cfg: Option<(&_, &GemmConfig)>| {
        let [it, wt, bt, ot] = case.upload(&ctx, f);
        let r = ops.run(|l| match cfg {
            Some((kernel, cfg)) => ops.conv2d_with(l, kernel, cfg, &it, &wt, Some(&bt), &ot, &op),
            None => ops.conv2d(l, &it, &wt, Some(&bt), &ot, &op),
        });
        r.map(|()| ot)
    };
    for f in FORMATS {
        match run(f, None) {
            Err(OpError::FormatUnsupported { .. }) => continue,
            r => case.check(&r.unwrap(), f, &format!("conv2d residual {f:?}")),
        }
    }
    let (kernel, cfg) = split_three_ways(&ctx, &case.s);
    let out = run(TensorFormat::F32, Some((&kernel, &cfg))).unwrap();
    case.check(&out, TensorFormat::F32, "conv2d residual split 3");
    assert_clean(&ctx);
}

/// A 1×1 stride-1 convolution with a residual and ReLU in every format, against the CPU: on a
/// variant without cooperative matrices it is recorded as the GEMM of its pixels (the
/// dispatch named `gemm`, or the split's), with them as the convolution.
#[test]
fn conv2d_pointwise_every_format() {
    let ctx = ctx();
    let ops = Ops::new(&ctx);
    let s = Conv2dShape {
        batch: 2,
        h: 5,
        w: 7,
        c: 12,
        outc: 8,
        kh: 1,
        kw: 1,
        stride: 1,
        pad: 0,
    };
    let case = ResidualCase::new(s, 41, 2.0);
    let op = Conv2d::new(s)
        .with_residual(true)
        .with_activation(Activation::Relu);
    for f in FORMATS {
        let [it, wt, bt, ot] = case.upload(&ctx, f);
        let mut list = CommandList::new(&ctx).unwrap();
        match ops.conv2d(&mut list, &it, &wt, Some(&bt), &ot, &op) {
            Err(OpError::FormatUnsupported { .. }) => continue,
            r => r.unwrap(),
        }
        let names = list.dispatch_names().to_vec();
        let coopmat = !ctx.features().cooperative_matrices.is_empty() && f != TensorFormat::F32;
        assert!(
            names
                .iter()
                .all(|n| n.starts_with(if coopmat { "conv2d" } else { "gemm" })),
            "{f:?}: {names:?}"
        );
        list.submit_and_wait().unwrap();
        case.check(&ot, f, &format!("pointwise {f:?}"));
    }
    assert_clean(&ctx);
}

#[test]
fn gemm_int8_exact() {
    let ctx = ctx();
    let ops = Ops::new(&ctx);
    let (m, n, k) = (37, 20, 44);
    let (a, b) = (random_i8(m * k, 41), random_i8(k * n, 42));
    let at = Tensor::from_i8(&ctx, &[m, k], &a).unwrap();
    let bt = Tensor::from_i8(&ctx, &[k, n], &b).unwrap();
    let ct = Tensor::from_i32(&ctx, &[m, n], &vec![i32::MIN; m * n]).unwrap();
    ops.run(|l| ops.gemm_int8(l, &at, &bt, &ct)).unwrap();
    let got = ct.download_i32().unwrap();
    for i in 0..m {
        for j in 0..n {
            let want: i32 = (0..k)
                .map(|l| a[i * k + l] as i32 * b[l * n + j] as i32)
                .sum();
            assert_eq!(got[i * n + j], want, "C[{i}][{j}]");
        }
    }
    assert_clean(&ctx);
}

/// Each mistake is its own error, and the list stays as it was.
#[test]
fn gemm_mistakes_are_errors_and_record_nothing() {
    let ctx = ctx();
    let ops = Ops::new(&ctx);
    let f = TensorFormat::F32;
    let t = |shape: &[usize], f: TensorFormat| Tensor::new(&ctx, shape, f).unwrap();
    let (a, b, c) = (t(&[8, 12], f), t(&[12, 16], f), t(&[8, 16], f));
    let mut list = CommandList::new(&ctx).unwrap();
    let op = Gemm::new();
    let e = ops
        .gemm(&mut list, &a, &t(&[8, 16], f), None, &c, &op)
        .unwrap_err();
    assert!(matches!(e, OpError::Shape { operand: "b", .. }), "{e}");
    let e = ops
        .gemm(&mut list, &a, &b, None, &t(&[16, 8], f), &op)
        .unwrap_err();
    assert!(matches!(e, OpError::Shape { operand: "c", .. }), "{e}");
    let e = ops
        .gemm(&mut list, &a, &b, Some(&t(&[8], f)), &c, &op)
        .unwrap_err();
    assert!(
        matches!(
            e,
            OpError::Shape {
                operand: "bias",
                ..
            }
        ),
        "{e}"
    );
    let e = ops
        .gemm(&mut list, &t(&[96], f), &b, None, &c, &op)
        .unwrap_err();
    assert!(matches!(e, OpError::Shape { operand: "a", .. }), "{e}");
    let e = ops
        .gemm(
            &mut list,
            &a,
            &t(&[12, 16], TensorFormat::F16),
            None,
            &c,
            &op,
        )
        .unwrap_err();
    assert!(matches!(e, OpError::Format { operand: "b", .. }), "{e}");
    let e = ops
        .gemm(
            &mut list,
            &t(&[8, 12], TensorFormat::I32),
            &b,
            None,
            &c,
            &op,
        )
        .unwrap_err();
    assert!(matches!(e, OpError::Format { operand: "a", .. }), "{e}");
    let e = ops
        .gemm(&mut list, &a, &t(&[12, 6], f), None, &t(&[8, 6], f), &op)
        .unwrap_err();
    assert!(matches!(e, OpError::Unsupported { .. }), "{e}");
    let square = t(&[8, 8], f);
    let e = ops
        .gemm(&mut list, &square, &t(&[8, 8], f), None, &square, &op)
        .unwrap_err();
    assert!(matches!(e, OpError::Aliased { other: "a", .. }), "{e}");
    assert!(e.to_string().contains("`c` and `a` are one tensor"), "{e}");
    let s = Conv2dShape {
        batch: 1,
        h: 4,
        w: 4,
        c: 4,
        outc: 4,
        kh: 3,
        kw: 3,
        stride: 0,
        pad: 1,
    };
    let (x, w) = (t(&[1, 4, 4, 4], f), t(&[3, 3, 4, 4], f));
    let e = ops
        .conv2d(
            &mut list,
            &x,
            &w,
            None,
            &t(&[1, 4, 4, 4], f),
            &Conv2d::new(s),
        )
        .unwrap_err();
    assert!(matches!(e, OpError::Unsupported { .. }), "{e}");
    let e = ops
        .gemm_int8(
            &mut list,
            &t(&[4, 4], TensorFormat::I8),
            &t(&[4, 4], TensorFormat::I8),
            &t(&[4, 4], f),
        )
        .unwrap_err();
    assert!(matches!(e, OpError::Format { operand: "c", .. }), "{e}");
    assert_eq!(list.len(), 0, "nothing recorded");
    // The list is still usable.
    ops.gemm(&mut list, &a, &b, None, &c, &op).unwrap();
    list.submit_and_wait().unwrap();
    assert_clean(&ctx);
}

/// One batched case: `batch` products of M×N×K (B shared by all where `shared_b`), with `beta`
/// reading C back (C filled with random values first; poisoned where beta is 0, so a read of
/// it would show), a bias and a relu.
#[allow(clippy::too_many_arguments)]
fn gemm_batched_case(
    ops: &Ops,
    f: TensorFormat,
    batch: usize,
    (m, n, k): (usize, usize, usize),
    (ta, tb): (bool, bool),
    shared_b: bool,
    beta: f32,
    seed: u64,
) -> Option<()> {
    let ctx = ops.context();
    let nb = if shared_b { 1 } else { batch };
    let a = random(batch * m * k, seed, 0.1, 1.0);
    let b = random(nb * k * n, seed + 1, 0.1, 1.0);
    let c0 = random(batch * m * n, seed + 2, 0.1, 1.0);
    let bias = random(n, seed + 3, 0.1, 1.0);
    let a_mat = if ta { [k, m] } else { [m, k] };
    let b_mat = if tb { [n, k] } else { [k, n] };
    let at = Tensor::from_f32(ctx, &[batch, a_mat[0], a_mat[1]], f, &a).unwrap();
    let bt = if shared_b {
        Tensor::from_f32(ctx, &b_mat, f, &b).unwrap()
    } else {
        Tensor::from_f32(ctx, &[batch, b_mat[0], b_mat[1]], f, &b).unwrap()
    };
    let ct = if beta == 0.0 {
        poisoned(ctx, &[batch, m, n], f)
    } else {
        Tensor::from_f32(ctx, &[batch, m, n], f, &c0).unwrap()
    };
    let biast = Tensor::from_f32(ctx, &[n], f, &bias).unwrap();
    let op = Gemm::new()
        .with_transpose_a(ta)
        .with_transpose_b(tb)
        .with_alpha(0.75)
        .with_beta(beta)
        .with_activation(Activation::Relu);
    match ops.run(|l| ops.gemm(l, &at, &bt, Some(&biast), &ct, &op)) {
        Err(OpError::FormatUnsupported { .. }) => return None,
        r => r.unwrap(),
    }
    let q = |x: &[f32]| quantize(x, f);
    let (a, b, c0, bias) = (q(&a), q(&b), q(&c0), q(&bias));
    let o = reference::Gemm {
        transpose_a: ta,
        transpose_b: tb,
        alpha: 0.75,
        ..Default::default()
    };
    let (mut want, mut scale) = (Vec::new(), Vec::new());
    for z in 0..batch {
        let bz = if shared_b { 0 } else { z };
        let (p, s) = reference::gemm_with(
            o,
            m,
            n,
            k,
            &a[z * m * k..][..m * k],
            &b[bz * k * n..][..k * n],
            None,
        );
        for (i, (p, s)) in p.iter().zip(&s).enumerate() {
            let (c, bi) = (c0[z * m * n + i], bias[i % n]);
            want.push((p + beta * c + bi).max(0.0));
            scale.push(s + (beta * c).abs() + bi.abs());
        }
    }
    let (want, scale) = expected_in(&want, &scale, f);
    let what = format!(
        "batched gemm {f:?} {batch}x{m}x{n}x{k} t {ta}/{tb} shared b {shared_b} beta {beta}"
    );
    check(
        &ct.download_f32().unwrap(),
        &want,
        &scale,
        tolerance_of(f),
        &what,
    );
    Some(())
}

#[test]
fn gemm_batched_and_beta() {
    let ctx = ctx();
    let ops = Ops::new(&ctx);
    for f in FORMATS {
        // Matrices of a multiple of 8 elements (cooperative matrices where the device has
        // them) and not.
        for (i, mnk) in [(40, 24, 32), (37, 20, 28)].into_iter().enumerate() {
            for (j, (t, shared_b, beta)) in [
                ((false, false), false, 0.5),
                ((false, true), true, 0.0),
                ((true, false), false, -1.25),
                ((true, true), true, 1.0),
            ]
            .into_iter()
            .enumerate()
            {
                let seed = 300 + 10 * i as u64 + j as u64;
                // A stored K×M has rows of M: a multiple of 4.
                let mnk = if t.0 {
                    (mnk.0 / 4 * 4, mnk.1, mnk.2)
                } else {
                    mnk
                };
                gemm_batched_case(&ops, f, 3, mnk, t, shared_b, beta, seed);
            }
        }
        // One product with beta over a K long enough to split: C read back by the split's
        // second pass.
        gemm_batched_case(&ops, f, 1, (64, 64, 512), (false, false), false, 2.0, 400);
        gemm_batched_case(&ops, f, 1, (32, 48, 2048), (false, true), false, -0.5, 401);
    }
    assert_clean(&ctx);
}

/// A product with beta over a long K on a small grid takes the split path (the reduce pass
/// adds beta · C), as one without beta does.
#[test]
fn gemm_with_beta_splits_small_grids() {
    let ctx = ctx();
    let ops = Ops::new(&ctx);
    let f = TensorFormat::F32;
    let (a, b, c) = (
        poisoned(&ctx, &[32, 2048], f),
        poisoned(&ctx, &[48, 2048], f),
        poisoned(&ctx, &[32, 48], f),
    );
    let mut list = vkprism::CommandList::new(&ctx).unwrap();
    let op = Gemm::new().with_transpose_b(true).with_beta(1.0);
    ops.gemm(&mut list, &a, &b, None, &c, &op).unwrap();
    assert_eq!(list.dispatch_names(), ["gemm_split", "gemm_split_reduce"]);
    assert_clean(&ctx);
}

#[test]
fn gemm_batch_mismatches_are_errors() {
    let ctx = ctx();
    let ops = Ops::new(&ctx);
    let f = TensorFormat::F32;
    let t = |s: &[usize]| poisoned(&ctx, s, f);
    let op = Gemm::new();
    let err = |a: &Tensor, b: &Tensor, c: &Tensor| {
        ops.run(|l| ops.gemm(l, a, b, None, c, &op)).unwrap_err()
    };
    // Batches of 2 and 3.
    let e = err(&t(&[2, 8, 4]), &t(&[3, 4, 8]), &t(&[2, 8, 8]));
    assert!(matches!(e, OpError::Shape { operand: "b", .. }), "{e}");
    // A batched product into one matrix.
    let e = err(&t(&[2, 8, 4]), &t(&[4, 8]), &t(&[8, 8]));
    assert!(matches!(e, OpError::Shape { operand: "c", .. }), "{e}");
    let e = err(&t(&[2, 2, 8, 4]), &t(&[4, 8]), &t(&[8, 8]));
    assert!(matches!(e, OpError::Shape { operand: "a", .. }), "{e}");
    ops.run(|l| ops.gemm(l, &t(&[2, 8, 4]), &t(&[4, 8]), None, &t(&[2, 8, 8]), &op))
        .unwrap();
    assert_clean(&ctx);
}
