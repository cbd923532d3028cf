//! [`Ops::gemm_glu`] (a SwiGLU MLP's gate/up projection and its gate) in each float format
//! against an f64 reference on random non-zero data, outputs poisoned: one pass on
//! [`gemm_cm2_glu`] where the device has workgroup-scope matrices (sizes crossing the tiles'
//! edges), the GEMM and [`glu`](vkprism_shaders::glu) elsewhere; and its checks.

use vkprism::{CommandList, Context, Tensor, TensorFormat};
use vkprism_shaders::{
    gemm_cm2_glu, glu_narrow_from, multiprocessors, Activation, OpError, Ops, MEASURED_SMS,
};
use vkprism_testkit::{
    assert_clean, assert_close_scaled, ctx, expected_in, poisoned, quantize, random_in, refused,
};

/// `silu(x·W[2j]ᵀ) · (x·W[2j + 1]ᵀ)` for x `[m, k]`, w `[2n, k]`, and each output's error
/// scale, in f64.
fn reference(x: &[f32], w: &[f32], (m, n, k): (usize, usize, usize)) -> (Vec<f32>, Vec<f32>) {
    let dot = |i: usize, r: usize| -> (f64, f64) {
        let (xr, wr) = (&x[i * k..(i + 1) * k], &w[r * k..(r + 1) * k]);
        let sum = xr.iter().zip(wr).map(|(a, b)| *a as f64 * *b as f64).sum();
        let abs = xr
            .iter()
            .zip(wr)
            .map(|(a, b)| (*a as f64 * *b as f64).abs())
            .sum();
        (sum, abs)
    };
    let mut want = Vec::with_capacity(m * n);
    let mut scale = Vec::with_capacity(m * n);
    for i in 0..m {
        for j in 0..n {
            let ((g, ga), (u, ua)) = (dot(i, 2 * j), dot(i, 2 * j + 1));
            let silu = g / (1.0 + (-g).exp());
            want.push((silu * u) as f32);
            scale.push(((ga + 1.0) * (ua + 1.0)) as f32);
        }
    }
    (want, scale)
}

/// Runs `Ops::gemm_glu` on an `m`×`n`×`k` problem in `f`; the kernels it recorded.
fn run(
    ctx: &Context,
    ops: &Ops,
    f: TensorFormat,
    (m, n, k): (usize, usize, usize),
) -> Vec<&'static str> {
    let x = quantize(&random_in(m * k, 1, 0.1, 1.0), f);
    let spread = 1.0 / (k as f32).sqrt();
    let w: Vec<f32> = random_in(2 * n * k, 2, 0.1, 1.0)
        .iter()
        .map(|v| v * spread)
        .collect();
    let w = quantize(&w, f);
    let xt = Tensor::from_f32(ctx, &[m, k], f, &x).unwrap();
    let wt = Tensor::from_f32(ctx, &[2 * n, k], f, &w).unwrap();
    let yt = poisoned(ctx, &[m, n], f);
    let mut list = CommandList::new(ctx).unwrap();
    ops.gemm_glu(&mut list, &xt, &wt, &yt, Activation::Silu)
        .unwrap();
    let names = list.dispatch_names().to_vec();
    list.submit_and_wait().unwrap();
    let (want, scale) = reference(&x, &w, (m, n, k));
    let (want, scale) = expected_in(&want, &scale, f);
    let tol = match f {
        TensorFormat::F32 => 1e-4,
        TensorFormat::F16 => 3e-3,
        _ => 2e-2,
    };
    let what = format!("gemm_glu {f:?} {m}x{n}x{k} on {names:?}");
    assert_close_scaled(&yt.download_f32().unwrap(), &want, &scale, tol, &what);
    names
}

#[test]
fn gemm_glu_every_format() {
    let ctx = ctx();
    let ops = Ops::new(&ctx);
    assert_eq!(
        gemm_cm2_glu::VARIANT_NAMES,
        ["fp16s_cm", "fp16sa_cm", "bf16s_cm"]
    );
    let workgroup_matrices = ctx.features().workgroup_matrices.iter().count() > 0;
    for f in [TensorFormat::F32, TensorFormat::F16, TensorFormat::Bf16] {
        // Below the fused kernel's smallest product: the GEMM and the gate.
        let names = run(&ctx, &ops, f, (40, 24, 72));
        assert!(names.contains(&"glu"), "{f:?}: {names:?}");
        // Rows that cross the tiles' edge, large enough for the fused kernel (its tiles shifted
        // off M's edge: the first row of them short); then outputs too, where its every load
        // would clamp, and fewer rows than its tiles: the GEMM (shifted) and the gate.
        let fused = ["gemm_cm2_glu"].as_slice();
        let apart = ["gemm_cm2", "glu"].as_slice();
        for (shape, want) in [
            ((200, 1024, 1344), fused),
            ((200, 1000, 1344), apart),
            ((100, 2048, 1344), apart),
        ] {
            let names = run(&ctx, &ops, f, shape);
            if workgroup_matrices && f == TensorFormat::F16 {
                assert_eq!(names, want, "{shape:?}");
            }
        }
        // A grid of wide tiles past one wave of the device's (4 rows of tiles, columns three
        // fifths of its SMs: 5056 outputs on the H100): it ends in narrow tiles. Large for a
        // CPU driver, so only where the fused kernel can take it.
        if workgroup_matrices && f != TensorFormat::F32 {
            let sms = multiprocessors(ctx.features());
            let n = 64 * (sms * 3 / 5);
            assert!(glu_narrow_from(512, n, sms).is_some());
            let names = run(&ctx, &ops, f, (512, n, 128));
            if f == TensorFormat::F16 {
                assert_eq!(names, ["gemm_cm2_glu"]);
            }
        }
    }
    assert_clean(&ctx);
}

/// Narrow tiles only where the wide ones' grid is more than one wave (two workgroups an SM:
/// 264 on the H100) and the grid with narrow tiles at most two.
#[test]
fn glu_narrow_tiles_end_a_grid_of_one_wave_and_some() {
    // 4 rows of tiles by 88 columns: 352 workgroups; 56 columns wide, 64 narrow: 480.
    assert_eq!(glu_narrow_from(512, 5632, MEASURED_SMS), Some(56));
    // 92 columns: 56 wide and 72 narrow, 512 workgroups; 96 columns would make 544, past two
    // waves (Llama 3.2 1B's 8192 outputs too).
    assert_eq!(glu_narrow_from(512, 5888, MEASURED_SMS), Some(56));
    assert_eq!(glu_narrow_from(512, 6144, MEASURED_SMS), None);
    assert_eq!(glu_narrow_from(512, 8192, MEASURED_SMS), None);
    assert_eq!(glu_narrow_from(384, 8192, MEASURED_SMS), None);
    // 256 workgroups, one wave; 704, two waves and more; 32.
    assert_eq!(glu_narrow_from(512, 4096, MEASURED_SMS), None);
    assert_eq!(glu_narrow_from(512, 11264, MEASURED_SMS), None);
    assert_eq!(glu_narrow_from(200, 1000, MEASURED_SMS), None);
    // 58 SMs, a wave of 116: 352 workgroups are past two; 128 end in narrow tiles.
    assert_eq!(glu_narrow_from(512, 5632, 58), None);
    assert_eq!(glu_narrow_from(512, 2048, 58), Some(24));
}

#[test]
fn gemm_glu_refuses_bad_operands() {
    let ctx = ctx();
    let ops = Ops::new(&ctx);
    let t = |shape: &[usize], f| poisoned(&ctx, shape, f);
    let f = TensorFormat::F16;
    let (x, w, y) = (t(&[4, 16], f), t(&[16, 16], f), t(&[4, 8], f));
    let glu = |x: &Tensor, w: &Tensor, y: &Tensor| {
        refused(&ctx, |l| ops.gemm_glu(l, x, w, y, Activation::Silu))
    };
    // An odd number of weight rows, a depth that differs, an output of the wrong width.
    for (w, operand) in [(t(&[15, 16], f), "w"), (t(&[16, 12], f), "w")] {
        let e = glu(&x, &w, &y);
        assert!(
            matches!(e, OpError::Shape { operand: o, .. } if o == operand),
            "{e}"
        );
    }
    let e = glu(&x, &w, &t(&[4, 16], f));
    assert!(matches!(e, OpError::Shape { operand: "y", .. }), "{e}");
    // Formats that differ; the output aliasing the input.
    let e = glu(&x, &t(&[16, 16], TensorFormat::F32), &y);
    assert!(matches!(e, OpError::Format { .. }), "{e}");
    let e = glu(&x, &w, &x.view(0, &[4, 8]).unwrap());
    assert!(matches!(e, OpError::Aliased { .. }), "{e}");
    // The context still runs the operation.
    run(&ctx, &ops, f, (8, 16, 32));
    assert_clean(&ctx);
}
