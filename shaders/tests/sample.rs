//! Draws from each row's softmax at a temperature ([`sample`], [`sample_parts`],
//! [`Ops::sample`]): every variant the device runs against the same draw made on the CPU
//! (the argmax of x / T plus the same Gumbel noise, `reference::gumbel_values`), outputs
//! poisoned; the draws' frequencies against softmax(x / T); the parts path of long rows; and
//! the operation's checks.

use vkprism::{Context, LoadOptions, Tensor, TensorFormat};
use vkprism_shaders::{reference, sample, sample_top, Draw, OpError, Ops, ReduceShape};
use vkprism_testkit::{assert_clean, ctx, quantize, random_in, refused};

/// Seeds the draws are checked under: one in the low word only, one in both.
const SEEDS: [u64; 2] = [1, (5 << 32) | 0x8000_0001];

fn seed_tensor(ctx: &Context, seed: u64) -> Tensor {
    Tensor::from_u32(ctx, &[2], &[seed as u32, (seed >> 32) as u32]).unwrap()
}

/// Whether `got` (row r's draw) is the row's argmax of `values` `[rows, n]`, within `tol` of
/// the largest (the GPU's fp32 logarithm and product against the f64 reference: a near tie
/// may go either way).
fn assert_draws(got: &[i32], values: &[f64], n: usize, tol: f64, what: &str) {
    for (r, &g) in got.iter().enumerate() {
        let row = &values[r * n..(r + 1) * n];
        assert!((0..n as i32).contains(&g), "{what}: row {r} drew {g}");
        let best = row.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
        let v = row[g as usize];
        assert!(
            v >= best - tol * (1.0 + best.abs()),
            "{what}: row {r} drew {g} ({v}) where the largest is {best}"
        );
    }
}

/// Rows of 1000, 32000 (on 1024 invocations), 7 and 33 values, each kernel variant.
#[test]
fn sample_every_variant() {
    let ctx = ctx();
    assert_eq!(sample::VARIANT_NAMES.len(), 8);
    for name in sample::VARIANT_NAMES {
        let k = ctx
            .load_with::<sample::Kernel>(&LoadOptions::variant_named(name).unwrap())
            .unwrap();
        let f = k.format_of("x_blob").unwrap();
        for (i, &(rows, n, local)) in [(3, 1000, 256), (2, 32000, 1024), (5, 7, 8), (40, 33, 64)]
            .iter()
            .enumerate()
        {
            let x = random_in(rows * n, 50 + i as u64, -4.0, 4.0);
            let xt = Tensor::from_f32(&ctx, &[rows, n], f, &x).unwrap();
            let s = ReduceShape::of(&[rows, n], 1);
            let spec = sample::SpecConstants {
                op: 0,
                per_invocation: 0,
            };
            let pipe = k.pipeline(&spec, Some([local, 1, 1])).unwrap();
            let temperature = 0.7;
            let mut draws = Vec::new();
            for seed in SEEDS {
                let st = seed_tensor(&ctx, seed);
                let ot = Tensor::from_i32(&ctx, &[rows], &vec![-7; rows]).unwrap();
                let push = sample::PushConstants {
                    outer: rows as i32,
                    axis: n as i32,
                    inner: 1,
                    inv_temperature: 1.0 / temperature,
                };
                let b = sample::BufferBindings {
                    x_blob: &xt,
                    out_blob: &ot,
                    seed_blob: &st,
                };
                ctx.run(|l| l.dispatch(&pipe, &b, &push, s.grid([local, 1, 1])))
                    .unwrap();
                let got = ot.download_i32().unwrap();
                let values = reference::gumbel_values(&quantize(&x, f), temperature, seed);
                let what = format!("{name} [{rows}, {n}] seed {seed:#x}");
                assert_draws(&got, &values, n, 1e-5, &what);
                draws.push(got);
            }
            if n >= 1000 {
                assert_ne!(
                    draws[0], draws[1],
                    "{name} [{rows}, {n}]: other seed, other draws"
                );
            }
        }
    }
    assert_clean(&ctx);
}

/// softmax(x / T) of one row, in f64.
fn softmax(x: &[f32], temperature: f32) -> Vec<f64> {
    let m = x.iter().cloned().fold(f32::NEG_INFINITY, f32::max) as f64;
    let e: Vec<f64> = x
        .iter()
        .map(|&v| ((v as f64 - m) / temperature as f64).exp())
        .collect();
    let sum: f64 = e.iter().sum();
    e.iter().map(|v| v / sum).collect()
}

/// 40,000 rows of the same logits drawn in one call (each row's noise its own): every index's
/// count within 5 standard deviations of its probability's share, at two temperatures and
/// two seeds, in each format; -inf never drawn.
#[test]
fn sample_frequencies_follow_softmax() {
    let ctx = ctx();
    let ops = Ops::new(&ctx);
    let logits = [1.0, 0.5, -0.25, 2.0, f32::NEG_INFINITY, -1.5];
    let (rows, n) = (40_000, logits.len());
    let x: Vec<f32> = logits.iter().cycle().take(rows * n).cloned().collect();
    for format in [TensorFormat::F32, TensorFormat::F16, TensorFormat::Bf16] {
        let xt = Tensor::from_f32(&ctx, &[rows, n], format, &x).unwrap();
        for (temperature, seed) in [(0.8, SEEDS[0]), (3.0, SEEDS[1])] {
            let ot = Tensor::from_i32(&ctx, &[rows], &vec![-7; rows]).unwrap();
            let st = seed_tensor(&ctx, seed);
            ops.run(|l| ops.sample(l, &xt, &ot, &Draw::new(temperature), &st))
                .unwrap();
            let mut counts = vec![0usize; n];
            for t in ot.download_i32().unwrap() {
                counts[t as usize] += 1;
            }
            let p = softmax(&quantize(&logits, format), temperature);
            for (i, (&c, &p)) in counts.iter().zip(&p).enumerate() {
                let (mean, sd) = (rows as f64 * p, (rows as f64 * p * (1.0 - p)).sqrt());
                assert!(
                    (c as f64 - mean).abs() <= 5.0 * sd + 1.0,
                    "{format:?} T {temperature}: index {i} drawn {c} times, expected {mean:.0} ± {sd:.0}"
                );
            }
            assert_eq!(counts[4], 0, "-inf drawn");
        }
    }
    assert_clean(&ctx);
}

/// Long rows (Qwen's 151936 logits) go through the parts path: the same draw as the CPU's, in
/// each format; and a row whose only finite value is last draws it.
#[test]
fn sample_long_rows_in_parts() {
    let ctx = ctx();
    let ops = Ops::new(&ctx);
    let (rows, n) = (2, 151_936);
    let x = random_in(rows * n, 61, -3.0, 3.0);
    for format in [TensorFormat::F32, TensorFormat::F16, TensorFormat::Bf16] {
        let xt = Tensor::from_f32(&ctx, &[rows, n], format, &x).unwrap();
        for seed in SEEDS {
            let ot = Tensor::from_i32(&ctx, &[rows, 1], &[-7; 2]).unwrap();
            let st = seed_tensor(&ctx, seed);
            ops.run(|l| ops.sample(l, &xt, &ot, &Draw::new(1.3), &st))
                .unwrap();
            let values = reference::gumbel_values(&quantize(&x, format), 1.3, seed);
            let what = format!("{format:?} [{rows}, {n}] seed {seed:#x}");
            assert_draws(&ot.download_i32().unwrap(), &values, n, 1e-5, &what);
        }
    }
    let mut x = vec![f32::NEG_INFINITY; n];
    x[n - 1] = -50.0;
    let xt = Tensor::from_f32(&ctx, &[n], TensorFormat::F32, &x).unwrap();
    let ot = Tensor::from_i32(&ctx, &[1], &[-7]).unwrap();
    let st = seed_tensor(&ctx, 9);
    ops.run(|l| ops.sample(l, &xt, &ot, &Draw::new(0.5), &st))
        .unwrap();
    assert_eq!(ot.download_i32().unwrap(), [n as i32 - 1]);
    assert_clean(&ctx);
}

/// Refused, with nothing recorded: a temperature that is not finite and above 0 (or whose
/// inverse overflows), a seed that is not a U32 `[2]`, an output of the wrong shape or format,
/// an input that is not floats, a top_p outside (0, 1]. The context draws after them.
#[test]
fn sample_checks() {
    let ctx = ctx();
    let ops = Ops::new(&ctx);
    let x = Tensor::from_f32(
        &ctx,
        &[2, 10],
        TensorFormat::F32,
        &random_in(20, 3, -1.0, 1.0),
    )
    .unwrap();
    let out = Tensor::from_i32(&ctx, &[2], &[-7; 2]).unwrap();
    let seed = seed_tensor(&ctx, 4);
    for t in [0.0, -1.0, f32::NAN, f32::INFINITY, 1e-39] {
        let e = refused(&ctx, |l| ops.sample(l, &x, &out, &Draw::new(t), &seed));
        assert!(matches!(e, OpError::Unsupported { .. }), "{t}: {e}");
        assert!(e.to_string().contains("temperature"), "{e}");
    }
    let bad_seed = Tensor::from_u32(&ctx, &[3], &[1, 2, 3]).unwrap();
    let i32_seed = Tensor::from_i32(&ctx, &[2], &[1, 2]).unwrap();
    let f32_out = Tensor::from_f32(&ctx, &[2], TensorFormat::F32, &[0.0; 2]).unwrap();
    let long_out = Tensor::from_i32(&ctx, &[3], &[-7; 3]).unwrap();
    let ints = Tensor::from_i32(&ctx, &[2, 10], &[0; 20]).unwrap();
    let draw = Draw::new(1.0);
    let refuse = |x: &Tensor, out: &Tensor, seed: &Tensor| {
        refused(&ctx, |l| ops.sample(l, x, out, &draw, seed))
    };
    // (the error, the operand it names, whether its shape or its format)
    for (e, want) in [
        (refuse(&x, &out, &bad_seed), ("seed", "shape")),
        (refuse(&x, &out, &i32_seed), ("seed", "format")),
        (refuse(&x, &f32_out, &seed), ("out", "format")),
        (refuse(&x, &long_out, &seed), ("out", "shape")),
        (refuse(&ints, &out, &seed), ("x", "format")),
    ] {
        let got = match &e {
            OpError::Shape { operand, .. } => (*operand, "shape"),
            OpError::Format { operand, .. } => (*operand, "format"),
            _ => ("", "other"),
        };
        assert_eq!(got, want, "{e}");
    }
    for top_p in [0.0, -0.5, 1.5, f32::NAN] {
        let draw = Draw::new(1.0).with_top_p(top_p);
        let e = refused(&ctx, |l| ops.sample(l, &x, &out, &draw, &seed));
        assert!(matches!(e, OpError::Unsupported { .. }), "{top_p}: {e}");
        assert!(e.to_string().contains("top_p"), "{e}");
    }
    ops.run(|l| ops.sample(l, &x, &out, &Draw::new(1.0), &seed))
        .unwrap();
    assert!(out
        .download_i32()
        .unwrap()
        .iter()
        .all(|t| (0..10).contains(t)));
    assert_clean(&ctx);
}

/// Most values -inf (as a logits processor masks tokens), some +0 and -0 (the least and the
/// largest of a row's finite values on alternate rows).
fn masked_with_zeros(x: &mut [f32]) {
    for (i, v) in x.iter_mut().enumerate() {
        match i % 5 {
            0..=2 => *v = f32::NEG_INFINITY,
            3 if i % 2 == 0 => *v = if (i / 3000) % 2 == 0 { 0.0 } else { -0.0 },
            _ => {
                *v = if (i / 3000) % 2 == 0 {
                    v.abs()
                } else {
                    -v.abs()
                }
            }
        }
    }
}

/// `sample_top` in every variant against the CPU's cuts and draw: the drawn index is kept by
/// the cuts made with top_p + 1e-3 and is the largest noised value among those kept with
/// top_p - 1e-3 (the GPU's fp32 sums against f64). Rows held in registers and longer ones (past
/// 32 values an invocation), rows mostly -inf with zeros at either end, cuts alone and
/// together.
#[test]
fn sample_top_every_variant() {
    let ctx = ctx();
    assert_eq!(sample_top::VARIANT_NAMES.len(), 8);
    let cuts: [(usize, f32); 4] = [(5, 1.0), (0, 0.9), (50, 0.8), (2000, 0.5)];
    for name in sample_top::VARIANT_NAMES {
        let k = ctx
            .load_with::<sample_top::Kernel>(&LoadOptions::variant_named(name).unwrap())
            .unwrap();
        let f = k.format_of("x_blob").unwrap();
        for (c, &(rows, n, local)) in [
            (3, 1000, 256),
            (2, 70_000, 1024),
            (4, 7, 8),
            (2, 3000, 1024),
        ]
        .iter()
        .enumerate()
        {
            let mut x = random_in(rows * n, 70 + c as u64, -6.0, 6.0);
            if c == 3 {
                masked_with_zeros(&mut x);
            }
            let xq = quantize(&x, f);
            let xt = Tensor::from_f32(&ctx, &[rows, n], f, &x).unwrap();
            let s = ReduceShape::of(&[rows, n], 1);
            let pipe = k
                .pipeline(&Default::default(), Some([local, 1, 1]))
                .unwrap();
            let temperature = 0.8f32;
            let inv = 1.0 / temperature;
            for (i, &(top_k, top_p)) in cuts.iter().enumerate() {
                let seed = SEEDS[i % 2];
                let st = seed_tensor(&ctx, seed);
                let ot = Tensor::from_i32(&ctx, &[rows], &vec![-7; rows]).unwrap();
                let push = sample_top::PushConstants {
                    rows: rows as i32,
                    n: n as i32,
                    inv_temperature: inv,
                    top_k: top_k.min(n) as i32,
                    top_p,
                };
                let b = sample_top::BufferBindings {
                    x_blob: &xt,
                    out_blob: &ot,
                    seed_blob: &st,
                };
                ctx.run(|l| l.dispatch(&pipe, &b, &push, s.grid([local, 1, 1])))
                    .unwrap();
                let got = ot.download_i32().unwrap();
                let what = format!("{name} [{rows}, {n}] top_k {top_k} top_p {top_p}");
                for (r, &g) in got.iter().enumerate() {
                    let v: Vec<f32> = xq[r * n..(r + 1) * n].iter().map(|&x| x * inv).collect();
                    let wide = reference::draw_kept_from(&v, top_k, (top_p as f64 + 1e-3).min(1.0));
                    let narrow = reference::draw_kept_from(&v, top_k, top_p as f64 - 1e-3);
                    assert!((0..n as i32).contains(&g), "{what}: row {r} drew {g}");
                    assert!(v[g as usize] >= wide, "{what}: row {r} drew {g}, not kept");
                    let noised =
                        |j: usize| v[j] as f64 + reference::gumbel_noise((r * n + j) as u32, seed);
                    let best = (0..n)
                        .filter(|&j| v[j] >= narrow)
                        .map(noised)
                        .fold(f64::NEG_INFINITY, f64::max);
                    let drawn = noised(g as usize);
                    assert!(
                        drawn >= best - 1e-5 * (1.0 + best.abs()),
                        "{what}: row {r} drew {g} ({drawn}) where the largest kept is {best}"
                    );
                }
            }
        }
    }
    assert_clean(&ctx);
}

/// The cuts' frequencies over 40,000 rows of the same logits (probabilities 0.25, 0.1, 0.5,
/// 0.15 at temperature 1): top-k 2 and top-p 0.7 keep tokens 2 and 0 (2/3, 1/3), top-p 0.5
/// token 2 alone, top-k 3 then top-p 0.8 tokens 2 and 0 again; three tied logits under top-k 1
/// all kept, a third each.
#[test]
fn sample_cuts_keep_what_transformers_keeps() {
    let ctx = ctx();
    let ops = Ops::new(&ctx);
    let rows = 40_000;
    let probs = [0.25f64, 0.1, 0.5, 0.15];
    let logits: Vec<f32> = probs.iter().map(|p| p.ln() as f32).collect();
    let ties = [1.0f32, 1.0, 1.0, 0.0];
    let third = 1.0 / 3.0;
    let cases: [(&[f32], Draw, [f64; 4]); 5] = [
        (
            &logits,
            Draw::new(1.0).with_top_k(2),
            [third, 0.0, 2.0 * third, 0.0],
        ),
        (
            &logits,
            Draw::new(1.0).with_top_p(0.7),
            [third, 0.0, 2.0 * third, 0.0],
        ),
        (
            &logits,
            Draw::new(1.0).with_top_p(0.5),
            [0.0, 0.0, 1.0, 0.0],
        ),
        (
            &logits,
            Draw::new(1.0).with_top_k(3).with_top_p(0.8),
            [third, 0.0, 2.0 * third, 0.0],
        ),
        (
            &ties,
            Draw::new(1.0).with_top_k(1),
            [third, third, third, 0.0],
        ),
    ];
    for format in [TensorFormat::F32, TensorFormat::F16] {
        for (c, (row, draw, want)) in cases.iter().enumerate() {
            let x: Vec<f32> = row.iter().cycle().take(rows * 4).cloned().collect();
            let xt = Tensor::from_f32(&ctx, &[rows, 4], format, &x).unwrap();
            let ot = Tensor::from_i32(&ctx, &[rows], &vec![-7; rows]).unwrap();
            let st = seed_tensor(&ctx, SEEDS[c % 2]);
            ops.run(|l| ops.sample(l, &xt, &ot, draw, &st)).unwrap();
            let mut counts = [0usize; 4];
            for t in ot.download_i32().unwrap() {
                counts[t as usize] += 1;
            }
            for (i, (&c, &p)) in counts.iter().zip(want).enumerate() {
                let (mean, sd) = (rows as f64 * p, (rows as f64 * p * (1.0 - p)).sqrt());
                assert!(
                    (c as f64 - mean).abs() <= 5.0 * sd + 1.0,
                    "{format:?} {draw:?}: index {i} drawn {c} times, expected {mean:.0} ± {sd:.0}"
                );
            }
        }
    }
    assert_clean(&ctx);
}

/// `sample_top`'s shared memory grows with its workgroup (`Ops::sample` halves the workgroup
/// until it fits the device): in every variant at most 32 KiB on 1024 invocations and the
/// 16 KiB every Vulkan device has on 256.
#[test]
fn sample_top_shared_memory_fits() {
    let local = sample_top::INFO.local_size[0]
        .spec_id
        .expect("the workgroup's size is a specialization constant");
    for v in sample_top::INFO.variants {
        for (size, most) in [(1024, 32 << 10), (256, 16 << 10)] {
            let bytes = vkprism::workgroup_bytes(v.spirv, &[(local, size)]).expect("evaluated");
            assert!(bytes <= most, "{:?} on {size}: {bytes} bytes", v.key);
        }
    }
}
