//! The GEMV kernels' fused epilogue (gemv.glsl: input RMS norm, activation, gate/up pairs,
//! accumulation into y, a fused projection rotated into a KV cache) in every variant of
//! [`gemv`], [`gemv_scalar`], [`gemv_int8`] and [`gemv_int8_scalar`], against an f64 reference
//! on random non-zero data, outputs poisoned where they are not read; and [`Ops::gemv_with`] /
//! [`Ops::gemv_int8_with`] / [`Ops::gemv_rope_qkv`] with their checks.

use vkprism::{Context, LoadOptions, Tensor, TensorFormat};
use vkprism_shaders::reference::LLAMA3_EVERY_BAND;
use vkprism_shaders::{
    gemv, gemv_int8, gemv_int8_scalar, gemv_scalar, Activation, Gemv, GemvShape, OpError, Ops,
    Rope, RopeFrequencies, RopeScaling, RopeStyle, GEMV_MANY_ROWS,
};
use vkprism_testkit::{
    assert_clean, assert_close_scaled, ctx, expected_in, poisoned, quantize, random_i8, random_in,
    refused, tolerance,
};

/// One fused case: the product's shape and what is fused.
#[derive(Copy, Clone, Debug)]
struct Fused {
    batch: usize,
    /// Rows of W (2 per output where gated).
    n: usize,
    k: usize,
    bias: bool,
    rms: bool,
    /// The kernels' activation code: 0 none, 3 sigmoid, 5 SiLU.
    activation: i32,
    gated: bool,
    accumulate: bool,
}

const EPS: f32 = 1e-5;

/// The cases: a SwiGLU MLP's fused pass (norm, SiLU gate, residual), a residual projection with
/// an activation, a normed projection with a bias over a batch of 8; N not a multiple of the 4
/// rows of a workgroup.
fn cases(k_wide: usize) -> [Fused; 3] {
    [
        Fused {
            batch: 3,
            n: 2 * 37,
            k: k_wide,
            bias: false,
            rms: true,
            activation: 5,
            gated: true,
            accumulate: true,
        },
        Fused {
            batch: 1,
            n: 13,
            k: k_wide,
            bias: false,
            rms: false,
            activation: 3,
            gated: false,
            accumulate: true,
        },
        Fused {
            batch: 8,
            n: 22,
            k: k_wide,
            bias: true,
            rms: true,
            activation: 0,
            gated: false,
            accumulate: false,
        },
    ]
}

impl Fused {
    /// The product the `rope_qkv` epilogue rotates: one token, its input RMS-normalized, nothing
    /// else fused.
    fn rope_projection(n: usize, k: usize) -> Fused {
        Fused {
            batch: 1,
            n,
            k,
            bias: false,
            rms: true,
            activation: 0,
            gated: false,
            accumulate: false,
        }
    }

    fn outputs(&self) -> usize {
        if self.gated {
            self.n / 2
        } else {
            self.n
        }
    }

    fn spec_push(&self) -> (gemv::SpecConstants, gemv::PushConstants) {
        let s = GemvShape {
            batch: self.batch,
            n: self.n,
            k: self.k,
        };
        let spec = gemv::SpecConstants {
            activation: self.activation,
            gated: self.gated as i32,
            accumulate: self.accumulate as i32,
            rms_input: self.rms as i32,
            ..s.spec(self.bias)
        };
        let push = gemv::PushConstants {
            eps: EPS,
            ..s.push()
        };
        (spec, push)
    }
}

fn act(code: i32, v: f64) -> f64 {
    match code {
        0 => v,
        3 => 1.0 / (1.0 + (-v).exp()),
        5 => v / (1.0 + (-v).exp()),
        _ => unreachable!("the cases use no activation {code}"),
    }
}

/// The fused result and its error scale, in f64: `w` row-major `[n, k]` (already as the kernel
/// reads it, int8 values as floats), `row_scale` (int8) multiplying each row's sum, `bias`
/// added, `y0` the values accumulated into.
fn reference(
    c: &Fused,
    w: &[f32],
    x: &[f32],
    row_scale: Option<&[f32]>,
    bias: Option<&[f32]>,
    y0: &[f32],
) -> (Vec<f32>, Vec<f32>) {
    let (mut want, mut scale) = (Vec::new(), Vec::new());
    for b in 0..c.batch {
        let xb = &x[b * c.k..][..c.k];
        let r = if c.rms {
            let mean = xb.iter().map(|v| (*v as f64).powi(2)).sum::<f64>() / c.k as f64;
            1.0 / (mean + EPS as f64).sqrt()
        } else {
            1.0
        };
        // Row n's value before the activation, and its sum of magnitudes.
        let row = |n: usize| -> (f64, f64) {
            let wr = &w[n * c.k..][..c.k];
            let s: f64 = wr.iter().zip(xb).map(|(a, v)| *a as f64 * *v as f64).sum();
            let m: f64 = wr
                .iter()
                .zip(xb)
                .map(|(a, v)| (*a as f64 * *v as f64).abs())
                .sum();
            let rs = row_scale.map_or(1.0, |s| s[n] as f64);
            let add = bias.map_or(0.0, |bv| bv[n] as f64);
            (s * r * rs + add, m * r * rs.abs() + add.abs())
        };
        for o in 0..c.outputs() {
            let at = b * c.outputs() + o;
            let acc = if c.accumulate { y0[at] as f64 } else { 0.0 };
            let (v, m) = if c.gated {
                let ((g, gm), (u, um)) = (row(2 * o), row(2 * o + 1));
                (act(c.activation, g) * u, (gm + 1.0) * (um + 1.0))
            } else {
                let (v, m) = row(o);
                (act(c.activation, v), m + 1.0)
            };
            want.push((v + acc) as f32);
            scale.push((m + acc.abs()) as f32);
        }
    }
    (want, scale)
}

/// y's starting values: random where accumulated into, NaN (the poison) otherwise.
fn start_values(ctx: &Context, c: &Fused, f: TensorFormat, seed: u64) -> (Tensor, Vec<f32>) {
    let shape = [c.batch, c.outputs()];
    if !c.accumulate {
        return (poisoned(ctx, &shape, f), vec![0.0; c.batch * c.outputs()]);
    }
    let y0 = quantize(&random_in(c.batch * c.outputs(), seed, 0.1, 2.0), f);
    (Tensor::from_f32(ctx, &shape, f, &y0).unwrap(), y0)
}

/// Runs fused case `$c` of float kernel module `$m` in variant `$name`.
macro_rules! float_fused {
    ($m:ident, $ctx:expr, $name:expr, $c:expr, $seed:expr) => {{
        let (ctx, name, c, seed): (&Context, &str, Fused, u64) = ($ctx, $name, $c, $seed);
        let k = ctx
            .load_with::<$m::Kernel>(&LoadOptions::variant_named(name).unwrap())
            .unwrap();
        let f = k.format_of("w_blob").unwrap();
        let w = quantize(&random_in(c.n * c.k, seed, 0.1, 1.0), f);
        let x = quantize(&random_in(c.batch * c.k, seed + 1, 0.1, 2.0), f);
        let bias = quantize(&random_in(c.n, seed + 2, 0.1, 2.0), f);
        let wt = Tensor::from_f32(ctx, &[c.n, c.k], f, &w).unwrap();
        let xt = Tensor::from_f32(ctx, &[c.batch, c.k], f, &x).unwrap();
        let bt = Tensor::from_f32(ctx, &[c.n], f, &bias).unwrap();
        let (yt, y0) = start_values(ctx, &c, f, seed + 3);
        let s = GemvShape {
            batch: c.batch,
            n: c.n,
            k: c.k,
        };
        let chunk = if stringify!($m).ends_with("scalar") {
            1
        } else {
            GemvShape::chunk(f.size())
        };
        let local = s.local_size(chunk);
        let (spec, push) = c.spec_push();
        let pipe = k.pipeline(&spec, Some(local)).unwrap();
        // The rotation's position, unread without it.
        let unread = Tensor::from_i32(ctx, &[1], &[0]).unwrap();
        let b = $m::BufferBindings {
            w_blob: &wt,
            x_blob: &xt,
            bias_blob: &bt,
            y_blob: &yt,
            k_blob: &yt,
            v_blob: &yt,
            pos_blob: &unread,
        };
        ctx.run(|l| l.dispatch(&pipe, &b, &push, s.grid(local)))
            .unwrap();
        let bias_ref = c.bias.then_some(&bias[..]);
        let (want, scale) = reference(&c, &w, &x, None, bias_ref, &y0);
        let (want, scale) = expected_in(&want, &scale, f);
        assert_close_scaled(
            &yt.download_f32().unwrap(),
            &want,
            &scale,
            tolerance(&k.variant().key),
            &format!("{} {name} {c:?}", stringify!($m)),
        );
    }};
}

/// Runs fused case `$c` of int8 kernel module `$m` in variant `$name`.
macro_rules! int8_fused {
    ($m:ident, $ctx:expr, $name:expr, $c:expr, $seed:expr) => {{
        let (ctx, name, c, seed): (&Context, &str, Fused, u64) = ($ctx, $name, $c, $seed);
        let k = ctx
            .load_with::<$m::Kernel>(&LoadOptions::variant_named(name).unwrap())
            .unwrap();
        let f = k.format_of("x_blob").unwrap();
        let w = random_i8(c.n * c.k, seed);
        let scales = random_in(c.n, seed + 1, 1e-3, 2e-2);
        let x = quantize(&random_in(c.batch * c.k, seed + 2, 0.1, 2.0), f);
        let wt = Tensor::from_i8(ctx, &[c.n, c.k], &w).unwrap();
        let st = Tensor::from_f32(ctx, &[c.n], TensorFormat::F32, &scales).unwrap();
        let xt = Tensor::from_f32(ctx, &[c.batch, c.k], f, &x).unwrap();
        let bias = quantize(&random_in(c.n, seed + 4, -1.0, 1.0), f);
        let bt = Tensor::from_f32(ctx, &[c.n], f, &bias).unwrap();
        let (yt, y0) = start_values(ctx, &c, f, seed + 3);
        let s = GemvShape {
            batch: c.batch,
            n: c.n,
            k: c.k,
        };
        let chunk = if stringify!($m).ends_with("scalar") {
            1
        } else {
            16
        };
        let local = s.local_size(chunk);
        let (spec, push) = c.spec_push();
        let pipe = k.pipeline(&spec, Some(local)).unwrap();
        // The rotation's position, unread without it.
        let unread = Tensor::from_i32(ctx, &[1], &[0]).unwrap();
        let b = $m::BufferBindings {
            w_blob: &wt,
            x_blob: &xt,
            scale_blob: &st,
            y_blob: &yt,
            k_blob: &yt,
            v_blob: &yt,
            pos_blob: &unread,
            bias_blob: &bt,
        };
        ctx.run(|l| l.dispatch(&pipe, &b, &push, s.grid(local)))
            .unwrap();
        let wf: Vec<f32> = w.iter().map(|v| *v as f32).collect();
        let bias_ref = c.bias.then_some(&bias[..]);
        let (want, scale) = reference(&c, &wf, &x, Some(&scales), bias_ref, &y0);
        let (want, scale) = expected_in(&want, &scale, f);
        assert_close_scaled(
            &yt.download_f32().unwrap(),
            &want,
            &scale,
            tolerance(&k.variant().key),
            &format!("{} {name} {c:?}", stringify!($m)),
        );
    }};
}

/// A `rope_qkv` case's heads: `hq` query and `hkv` key/value heads of `d`, a cache of `rows`,
/// the token at position `at`, the rotation's frequencies `freqs`.
struct RopeHeads {
    hq: usize,
    hkv: usize,
    d: usize,
    rows: usize,
    at: usize,
    freqs: RopeFrequencies,
}

impl RopeHeads {
    /// Checks q and the caches against the projection `y` (f64 reference, error scale
    /// `scale`): queries rotated into q, the key rotated and the value as it is in the caches'
    /// row `at`, every other row still poisoned.
    fn assert_placed(
        &self,
        what: &str,
        f: TensorFormat,
        tol: f32,
        (y, scale): (&[f32], &[f32]),
        [qt, kc, vc]: [&Tensor; 3],
    ) {
        let RopeHeads {
            hq,
            hkv,
            d,
            rows,
            at,
            freqs,
        } = *self;
        let rotate = |from: usize, heads: usize| {
            let part = &y[from * d..(from + heads) * d];
            let (r, e) = vkprism_shaders::reference::rope(1, heads, d, at, &freqs, true, part);
            let e: Vec<f32> = e
                .iter()
                .zip(&scale[from * d..])
                .map(|(a, b)| a.max(*b))
                .collect();
            expected_in(&r, &e, f)
        };
        let (want_q, scale_q) = rotate(0, hq);
        assert_close_scaled(&qt.download_f32().unwrap(), &want_q, &scale_q, tol, what);
        let (want_k, scale_k) = rotate(hq, hkv);
        let (want_v, scale_v) = expected_in(&y[(hq + hkv) * d..], &scale[(hq + hkv) * d..], f);
        let (got_k, got_v) = (kc.download_f32().unwrap(), vc.download_f32().unwrap());
        for r in 0..rows {
            let (gk, gv) = (
                &got_k[r * hkv * d..][..hkv * d],
                &got_v[r * hkv * d..][..hkv * d],
            );
            if r == at {
                assert_close_scaled(gk, &want_k, &scale_k, tol, &format!("{what}: key row"));
                assert_close_scaled(gv, &want_v, &scale_v, tol, &format!("{what}: value row"));
            } else {
                assert!(
                    gk.iter().chain(gv).all(|v| v.is_nan()),
                    "{what}: row {r} written"
                );
            }
        }
    }
}

/// Runs the `rope_qkv` epilogue of kernel module `$m` in variant `$name` over K = `$k`, the
/// frequencies scaled as `$scaling` says, a bias added before the rotation where `$bias`, and
/// checks q and the cache.
macro_rules! rope_case {
    ($m:ident, $ctx:expr, $name:expr, $k:expr, $in_buffer:expr, $scaling:expr, $bias:expr, $seed:expr) => {{
        let with_bias: bool = $bias;
        let (ctx, name, k, in_buffer, seed): (&Context, &str, usize, bool, u64) =
            ($ctx, $name, $k, $in_buffer, $seed);
        let freqs = RopeFrequencies::new(10000.0).with_scaling($scaling);
        let [log2_base, freq_factor, freq_low, freq_high] = freqs.pushed();
        let (hq, hkv, d, rows, offset, from_buffer) = (3, 1, 8, 12, 4, 5);
        let kernel = ctx
            .load_with::<$m::Kernel>(&LoadOptions::variant_named(name).unwrap())
            .unwrap();
        let f = kernel.format_of("w_blob").unwrap();
        let n = (hq + 2 * hkv) * d;
        let w = quantize(&random_in(n * k, seed, 0.1, 1.0), f);
        let x = quantize(&random_in(k, seed + 1, 0.1, 2.0), f);
        let wt = Tensor::from_f32(ctx, &[n, k], f, &w).unwrap();
        let xt = Tensor::from_f32(ctx, &[1, k], f, &x).unwrap();
        let bias = quantize(&random_in(n, seed + 2, -1.0, 1.0), f);
        let bt = Tensor::from_f32(ctx, &[n], f, &bias).unwrap();
        let qt = poisoned(ctx, &[1, hq, d], f);
        let (kc, vc) = (
            poisoned(ctx, &[rows, hkv, d], f),
            poisoned(ctx, &[rows, hkv, d], f),
        );
        let pos = Tensor::from_i32(ctx, &[1], &[from_buffer as i32]).unwrap();
        let s = GemvShape { batch: 1, n, k };
        let spec = gemv::SpecConstants {
            rms_input: 1,
            rope_qkv: if in_buffer { 2 } else { 1 },
            ..s.spec(with_bias)
        };
        let at = offset + if in_buffer { from_buffer } else { 0 };
        let push = gemv::PushConstants {
            eps: EPS,
            d: d as i32,
            hq: hq as i32,
            hkv: hkv as i32,
            rows: rows as i32,
            offset: offset as i32,
            log2_base,
            freq_factor,
            freq_low,
            freq_high,
            ..s.push()
        };
        let chunk = if stringify!($m).ends_with("scalar") {
            1
        } else {
            GemvShape::chunk(f.size())
        };
        let local = s.local_size(chunk);
        let pipe = kernel.pipeline(&spec, Some(local)).unwrap();
        let b = $m::BufferBindings {
            w_blob: &wt,
            x_blob: &xt,
            bias_blob: &bt,
            y_blob: &qt,
            k_blob: &kc,
            v_blob: &vc,
            pos_blob: &pos,
        };
        ctx.run(|l| l.dispatch(&pipe, &b, &push, s.grid(local)))
            .unwrap();
        let plain = Fused::rope_projection(n, k);
        let bias_ref = with_bias.then_some(&bias[..]);
        let (y, scale) = reference(&plain, &w, &x, None, bias_ref, &[]);
        let tol = tolerance(&kernel.variant().key) + at as f32 * 5e-7;
        let what = format!(
            "{} {name} rope_qkv in_buffer {in_buffer} {freqs:?} bias {with_bias}",
            stringify!($m)
        );
        let heads = RopeHeads {
            hq,
            hkv,
            d,
            rows,
            at,
            freqs,
        };
        heads.assert_placed(&what, f, tol, (&y, &scale), [&qt, &kc, &vc]);
    }};
}

#[test]
fn gemv_fused_every_variant() {
    let ctx = ctx();
    for name in gemv::VARIANT_NAMES {
        for (i, c) in cases(256).into_iter().enumerate() {
            float_fused!(gemv, &ctx, name, c, i as u64);
        }
    }
    for name in gemv_scalar::VARIANT_NAMES {
        for (i, c) in cases(203).into_iter().enumerate() {
            float_fused!(gemv_scalar, &ctx, name, c, 10 + i as u64);
        }
    }
    assert_clean(&ctx);
}

#[test]
fn gemv_int8_fused_every_variant() {
    let ctx = ctx();
    let no_bias = |c: Fused| Fused { bias: false, ..c };
    for name in gemv_int8::VARIANT_NAMES {
        for (i, c) in cases(272).into_iter().enumerate() {
            int8_fused!(gemv_int8, &ctx, name, no_bias(c), 20 + i as u64);
        }
    }
    for name in gemv_int8_scalar::VARIANT_NAMES {
        // N · K a multiple of 4 for the packed variants: K 204.
        for (i, c) in cases(204).into_iter().enumerate() {
            int8_fused!(gemv_int8_scalar, &ctx, name, no_bias(c), 30 + i as u64);
        }
    }
    assert_clean(&ctx);
}

/// The operation layer's fused forms: a SwiGLU MLP pass and a residual projection, each
/// format, against the same reference.
#[test]
fn gemv_with_every_format() {
    let ctx = ctx();
    let ops = Ops::new(&ctx);
    for f in [TensorFormat::F32, TensorFormat::F16, TensorFormat::Bf16] {
        let tol = match f {
            TensorFormat::F32 => 1e-5,
            TensorFormat::F16 => 1e-2,
            _ => 8e-3,
        };
        // And the MLP's fused pass over many rows (workgroups of 128).
        let many = Fused {
            batch: 1,
            n: GEMV_MANY_ROWS + 6,
            k: 2048,
            ..cases(512)[0]
        };
        let all = cases(512).into_iter().chain([many]);
        for (i, c) in all.filter(|c| !c.bias).enumerate() {
            let seed = 40 + i as u64;
            let w = quantize(&random_in(c.n * c.k, seed, 0.1, 1.0), f);
            let x = quantize(&random_in(c.batch * c.k, seed + 1, 0.1, 2.0), f);
            let wt = Tensor::from_f32(&ctx, &[c.n, c.k], f, &w).unwrap();
            let xt = Tensor::from_f32(&ctx, &[c.batch, c.k], f, &x).unwrap();
            let (yt, y0) = start_values(&ctx, &c, f, seed + 3);
            let activation = match c.activation {
                5 => Activation::Silu,
                3 => Activation::Sigmoid,
                _ => Activation::None,
            };
            let mut op = Gemv::new()
                .with_activation(activation)
                .with_gated(c.gated)
                .with_accumulate(c.accumulate);
            if c.rms {
                op = op.with_rms_input(EPS);
            }
            ops.run(|l| ops.gemv_with(l, &wt, &xt, None, &yt, &op))
                .unwrap();
            let (want, scale) = reference(&c, &w, &x, None, None, &y0);
            let (want, scale) = expected_in(&want, &scale, f);
            let what = format!("gemv_with {f:?} {c:?}");
            assert_close_scaled(&yt.download_f32().unwrap(), &want, &scale, tol, &what);
        }
    }
    assert_clean(&ctx);
}

#[test]
fn gemv_with_bad_operands_are_errors_and_record_nothing() {
    let ctx = ctx();
    let ops = Ops::new(&ctx);
    let f = TensorFormat::F32;
    let w = Tensor::new(&ctx, &[7, 16], f).unwrap();
    let x = Tensor::new(&ctx, &[16], f).unwrap();
    let gated = Gemv::new().with_gated(true);
    // Gate/up pairs need an even number of rows.
    let y = Tensor::new(&ctx, &[3], f).unwrap();
    let e = refused(&ctx, |l| ops.gemv_with(l, &w, &x, None, &y, &gated));
    assert!(
        matches!(e, OpError::Unsupported { op: "gemv", ref why } if why.contains("odd")),
        "{e}"
    );
    // A gated product writes N/2 columns.
    let w8 = Tensor::new(&ctx, &[8, 16], f).unwrap();
    let y8 = Tensor::new(&ctx, &[8], f).unwrap();
    let e = refused(&ctx, |l| ops.gemv_with(l, &w8, &x, None, &y8, &gated));
    assert!(
        matches!(
            e,
            OpError::Shape {
                op: "gemv",
                operand: "y",
                ..
            }
        ),
        "{e}"
    );
    // A negative epsilon for the input's norm.
    let e = refused(&ctx, |l| {
        ops.gemv_with(l, &w8, &x, None, &y, &Gemv::new().with_rms_input(-1.0))
    });
    assert!(matches!(e, OpError::Unsupported { .. }), "{e}");
    // Accumulating into x itself is aliasing.
    let sq = Tensor::new(&ctx, &[16, 16], f).unwrap();
    let acc = Gemv::new().with_accumulate(true);
    let e = refused(&ctx, |l| ops.gemv_with(l, &sq, &x, None, &x, &acc));
    assert!(matches!(e, OpError::Aliased { .. }), "{e}");
    // The context still works: a gated product of the right shape runs.
    let y4 = Tensor::new(&ctx, &[4], f).unwrap();
    ops.run(|l| ops.gemv_with(l, &w8, &x, None, &y4, &gated))
        .unwrap();
    assert_clean(&ctx);
}

/// The `rope_qkv` epilogue: one token's fused projection (3 query heads, 1 key/value head of 8,
/// K 64 or 61) normalized, its query pairs rotated into q and its key and value pairs placed in
/// the cache's row at the position (a push constant, or plus the position buffer's value), in
/// every variant of [`gemv`] and [`gemv_scalar`]; the cache's other rows stay poisoned.
#[test]
fn gemv_rope_qkv_every_variant() {
    let ctx = ctx();
    for name in gemv::VARIANT_NAMES {
        for (i, in_buffer) in [false, true].into_iter().enumerate() {
            let seed = 50 + i as u64;
            rope_case!(
                gemv,
                &ctx,
                name,
                64,
                in_buffer,
                RopeScaling::None,
                false,
                seed
            );
        }
        rope_case!(gemv, &ctx, name, 64, true, LLAMA3_EVERY_BAND, false, 52);
        rope_case!(gemv, &ctx, name, 64, true, RopeScaling::None, true, 53);
    }
    for name in gemv_scalar::VARIANT_NAMES {
        rope_case!(
            gemv_scalar,
            &ctx,
            name,
            61,
            true,
            RopeScaling::None,
            true,
            60
        );
        rope_case!(
            gemv_scalar,
            &ctx,
            name,
            61,
            false,
            LLAMA3_EVERY_BAND,
            false,
            61
        );
    }
    assert_clean(&ctx);
}

/// [`Ops::gemv_int8_rope_qkv`] in every float format the device runs: int8 weights with a
/// scale per row, K 64 (the wide kernel) and 61 (the scalar one), the position pushed and read
/// from a buffer, against the f64 reference.
#[test]
fn gemv_int8_rope_qkv_every_format() {
    let ctx = ctx();
    let ops = Ops::new(&ctx);
    let (hq, hkv, d, rows, offset, from_buffer) = (3, 1, 8, 12, 2, 7);
    let n = (hq + 2 * hkv) * d;
    for f in [TensorFormat::F32, TensorFormat::F16, TensorFormat::Bf16] {
        for (i, k) in [64, 61].into_iter().enumerate() {
            let seed = 90 + 10 * i as u64;
            let w = random_i8(n * k, seed);
            let scales = random_in(n, seed + 1, 1e-3, 2e-2);
            let x = quantize(&random_in(k, seed + 2, 0.1, 2.0), f);
            let wt = Tensor::from_i8(&ctx, &[n, k], &w).unwrap();
            let st = Tensor::from_f32(&ctx, &[n], TensorFormat::F32, &scales).unwrap();
            let xt = Tensor::from_f32(&ctx, &[1, k], f, &x).unwrap();
            let qt = poisoned(&ctx, &[1, hq, d], f);
            let (kc, vc) = (
                poisoned(&ctx, &[rows, hkv, d], f),
                poisoned(&ctx, &[rows, hkv, d], f),
            );
            let pos = Tensor::from_i32(&ctx, &[1], &[from_buffer as i32]).unwrap();
            // The scalar kernel's case with its frequencies scaled and a bias.
            let scaling = if k == 61 {
                LLAMA3_EVERY_BAND
            } else {
                RopeScaling::None
            };
            let bias = quantize(&random_in(n, seed + 3, -1.0, 1.0), f);
            let bt = Tensor::from_f32(&ctx, &[n], f, &bias).unwrap();
            let with_bias = (k == 61).then_some(&bt);
            let rope = Rope::new()
                .with_style(RopeStyle::Interleaved)
                .with_position_offset(offset)
                .with_scaling(scaling);
            let normed = Gemv::new().with_rms_input(EPS);
            let caches = [&kc, &vc];
            let run = ops.run(|l| {
                let at = Some(&pos);
                ops.gemv_int8_rope_qkv(
                    l,
                    (&wt, &st),
                    with_bias,
                    &xt,
                    &qt,
                    caches,
                    &normed,
                    &rope,
                    at,
                )
            });
            match run {
                Err(OpError::FormatUnsupported { .. }) => {
                    println!("gemv_int8_rope_qkv: the device runs no variant on {f:?}");
                    continue;
                }
                other => other.unwrap(),
            }
            let plain = Fused::rope_projection(n, k);
            let wf: Vec<f32> = w.iter().map(|v| *v as f32).collect();
            let bias_ref = with_bias.map(|_| &bias[..]);
            let (y, scale) = reference(&plain, &wf, &x, Some(&scales), bias_ref, &[]);
            let at = offset + from_buffer;
            let heads = RopeHeads {
                hq,
                hkv,
                d,
                rows,
                at,
                freqs: rope.frequencies(),
            };
            let tol = if f == TensorFormat::F32 { 1e-5 } else { 1e-2 } + at as f32 * 5e-7;
            let what = format!("gemv_int8_rope_qkv {f:?} K {k}");
            heads.assert_placed(&what, f, tol, (&y, &scale), [&qt, &kc, &vc]);
        }
    }
    assert_clean(&ctx);
}

#[test]
fn gemv_rope_qkv_bad_operands_are_errors_and_record_nothing() {
    let ctx = ctx();
    let ops = Ops::new(&ctx);
    let t = |shape: &[usize]| Tensor::new(&ctx, shape, TensorFormat::F32).unwrap();
    // 2 query heads and 1 key/value head of 4: 16 rows.
    let (w, x, q) = (t(&[16, 8]), t(&[1, 8]), t(&[1, 2, 4]));
    let (kc, vc) = (t(&[5, 1, 4]), t(&[5, 1, 4]));
    let rope = Rope::new().with_style(RopeStyle::Interleaved);
    let normed = Gemv::new().with_rms_input(EPS);
    let run = |w: &Tensor, x: &Tensor, op: &Gemv, rope: &Rope| {
        refused(&ctx, |l| {
            ops.gemv_rope_qkv(l, w, None, x, &q, [&kc, &vc], op, rope, None)
        })
    };
    let unsupported = |e: OpError| {
        matches!(
            e,
            OpError::Unsupported {
                op: "gemv_rope_qkv",
                ..
            }
        )
    };
    assert!(
        unsupported(run(&w, &t(&[2, 8]), &normed, &rope)),
        "two tokens"
    );
    assert!(
        unsupported(run(&w, &x, &normed, &Rope::new())),
        "pairs i, i + d/2"
    );
    assert!(
        unsupported(run(&w, &x, &normed.with_accumulate(true), &rope)),
        "accumulate"
    );
    let e = run(&t(&[12, 8]), &x, &normed, &rope);
    assert!(matches!(e, OpError::Shape { operand: "w", .. }), "{e}");
    // A bias of another length than w's rows.
    let e = refused(&ctx, |l| {
        let bias = Some(&x);
        ops.gemv_rope_qkv(l, &w, bias, &x, &q, [&kc, &vc], &normed, &rope, None)
    });
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
    // The int8 form: a float `w`, and scales of the wrong length.
    let int8 = |w: &Tensor, scales: &Tensor| {
        refused(&ctx, |l| {
            ops.gemv_int8_rope_qkv(
                l,
                (w, scales),
                None,
                &x,
                &q,
                [&kc, &vc],
                &normed,
                &rope,
                None,
            )
        })
    };
    let (w8, scales) = (
        Tensor::new(&ctx, &[16, 8], TensorFormat::I8).unwrap(),
        t(&[16]),
    );
    let e = int8(&w, &scales);
    assert!(matches!(e, OpError::Format { operand: "w", .. }), "{e}");
    let e = int8(&w8, &t(&[12]));
    assert!(
        matches!(
            e,
            OpError::Shape {
                operand: "scales",
                ..
            }
        ),
        "{e}"
    );
    // The context still works: the same call with the right operands runs.
    ops.run(|l| ops.gemv_rope_qkv(l, &w, None, &x, &q, [&kc, &vc], &normed, &rope, None))
        .unwrap();
    assert_clean(&ctx);
}
