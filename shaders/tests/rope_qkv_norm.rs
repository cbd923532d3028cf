//! [`rope_qkv_norm`] and [`rope_qkv_norm4`] (a fused projection's query and key heads
//! RMS-normalized with their weights, then rotated and placed as `rope_qkv` places them:
//! Qwen3's `q_norm` / `k_norm`; one or four pairs an invocation) in every variant against an
//! f64 reference on random non-zero data, outputs poisoned: heads of 3 to 128 pairs
//! (workgroups of one head to eight, of 63 invocations too), both pair styles, a scaled
//! rotation, positions from a push constant or a buffer, a grid too small for every head; and
//! [`Ops::rope_qkv_normed`] with its checks.

use vkprism::{Context, LoadOptions, Tensor, TensorFormat};
use vkprism_shaders::reference::LLAMA3_EVERY_BAND;
use vkprism_shaders::{
    reference, rope_qkv, rope_qkv_norm, rope_qkv_norm4, HeadNorm, OpError, Ops, Rope,
    RopeFrequencies, RopeQkvShape, RopeScaling, RopeStyle,
};
use vkprism_testkit::{
    assert_clean, assert_close_scaled, ctx, expected_in, poisoned, quantize, random_in, refused,
    tolerance,
};

const EPS: f32 = 1e-6;

/// One case: a step of `tokens` at position `start` (read from the buffer where `in_buffer`),
/// `hq` / `hkv` heads of `dim`, a cache of `rows`; `groups` workgroups where given (fewer than
/// the heads: the grid-stride loop).
#[derive(Copy, Clone, Debug)]
struct Case {
    tokens: usize,
    hq: usize,
    hkv: usize,
    dim: usize,
    rows: usize,
    start: usize,
    in_buffer: bool,
    interleaved: bool,
    scaling: RopeScaling,
    groups: Option<usize>,
}

impl Case {
    fn shape(&self) -> RopeQkvShape {
        RopeQkvShape {
            tokens: self.tokens,
            hq: self.hq,
            hkv: self.hkv,
            dim: self.dim,
            rows: self.rows,
        }
    }
}

/// The heads `heads` (`[tokens, heads, dim]`, the values as stored) each divided by the root of
/// its mean square plus `EPS` and scaled by `w`, in f64.
fn head_normed(x: &[f32], dim: usize, w: &[f32]) -> Vec<f32> {
    let mut out = Vec::with_capacity(x.len());
    for head in x.chunks(dim) {
        let squares: f64 = head.iter().map(|v| (*v as f64).powi(2)).sum();
        let inv = 1.0 / (squares / dim as f64 + EPS as f64).sqrt();
        out.extend(
            head.iter()
                .zip(w)
                .map(|(v, g)| (*v as f64 * inv * *g as f64) as f32),
        );
    }
    out
}

/// Runs case `c` on variant `name` of [`rope_qkv_norm`] (of [`rope_qkv_norm4`] with `quads`)
/// and checks q, the cache rows written (keys normed and turned, values copied) and that no
/// other row changed.
fn run(ctx: &Context, name: &str, c: Case, quads: bool, seed: u64) {
    let load = LoadOptions::variant_named(name).unwrap();
    let k = ctx.load_with::<rope_qkv_norm::Kernel>(&load).unwrap();
    let f = k.format_of("qkv_blob").unwrap();
    let s = c.shape();
    let (qw, kw) = (c.hq * c.dim, c.hkv * c.dim);
    let qkv = quantize(&random_in(c.tokens * s.width(), seed, 0.1, 2.0), f);
    let q_norm = quantize(&random_in(c.dim, seed + 1, 0.5, 1.5), f);
    let k_norm = quantize(&random_in(c.dim, seed + 2, 0.5, 1.5), f);
    let up = |shape: &[usize], v: &[f32]| Tensor::from_f32(ctx, shape, f, v).unwrap();
    let qkv_t = up(&[c.tokens, s.width()], &qkv);
    let (qn_t, kn_t) = (up(&[c.dim], &q_norm), up(&[c.dim], &k_norm));
    let q_t = poisoned(ctx, &[c.tokens, c.hq, c.dim], f);
    let kc = poisoned(ctx, &[c.rows, c.hkv, c.dim], f);
    let vc = poisoned(ctx, &[c.rows, c.hkv, c.dim], f);
    let pos = Tensor::from_i32(ctx, &[1], &[c.start as i32]).unwrap();
    let spec = rope_qkv::SpecConstants {
        interleaved: c.interleaved as i32,
        position_in_buffer: c.in_buffer as i32,
    };
    let freqs = RopeFrequencies::new(10000.0).with_scaling(c.scaling);
    let offset = if c.in_buffer { 0 } else { c.start };
    let push = s.norm_push(offset as i32, &freqs, EPS);
    let (grid, local) = s.heads_grid(quads);
    let grid = c.groups.map_or(grid, |g| [g as u32 * local[0], 1, 1]);
    if quads {
        let k4 = ctx.load_with::<rope_qkv_norm4::Kernel>(&load).unwrap();
        let pipe = k4.pipeline(&spec, Some(local)).unwrap();
        let b = rope_qkv_norm4::BufferBindings {
            qkv_blob: &qkv_t,
            q_blob: &q_t,
            k_blob: &kc,
            v_blob: &vc,
            pos_blob: &pos,
            q_norm_blob: &qn_t,
            k_norm_blob: &kn_t,
        };
        ctx.run(|l| l.dispatch(&pipe, &b, &push, grid)).unwrap();
    } else {
        let pipe = k.pipeline(&spec, Some(local)).unwrap();
        let b = rope_qkv_norm::BufferBindings {
            qkv_blob: &qkv_t,
            q_blob: &q_t,
            k_blob: &kc,
            v_blob: &vc,
            pos_blob: &pos,
            q_norm_blob: &qn_t,
            k_norm_blob: &kn_t,
        };
        ctx.run(|l| l.dispatch(&pipe, &b, &push, grid)).unwrap();
    }

    let mut parts = [Vec::new(), Vec::new(), Vec::new()];
    for row in qkv.chunks(s.width()) {
        parts[0].extend_from_slice(&row[..qw]);
        parts[1].extend_from_slice(&row[qw..qw + kw]);
        parts[2].extend_from_slice(&row[qw + kw..]);
    }
    let turned = |x: &[f32], heads, w: &[f32]| {
        let normed = head_normed(x, c.dim, w);
        let (y, scale) = reference::rope(
            c.tokens,
            heads,
            c.dim,
            c.start,
            &freqs,
            c.interleaved,
            &normed,
        );
        expected_in(&y, &scale, f)
    };
    let tol = tolerance(&k.variant().key) + (c.start + c.tokens) as f32 * 5e-7;
    let what = format!("rope_qkv_norm{} {name} {c:?}", if quads { "4" } else { "" });
    let (want, scale) = turned(&parts[0], c.hq, &q_norm);
    assert_close_scaled(&q_t.download_f32().unwrap(), &want, &scale, tol, &what);
    let (kw_want, ks) = turned(&parts[1], c.hkv, &k_norm);
    let (got_k, got_v) = (kc.download_f32().unwrap(), vc.download_f32().unwrap());
    for r in 0..c.rows {
        let (gk, gv) = (&got_k[r * kw..][..kw], &got_v[r * kw..][..kw]);
        if (c.start..c.start + c.tokens).contains(&r) {
            let t = (r - c.start) * kw;
            let w = format!("{what}: cache row {r}");
            assert_close_scaled(gk, &kw_want[t..][..kw], &ks[t..][..kw], tol, &w);
            assert_eq!(gv, &parts[2][t..][..kw], "{w}: values copied");
        } else {
            let untouched = gk.iter().chain(gv).all(|x| x.is_nan());
            assert!(untouched, "{what}: cache row {r} was written");
        }
    }
}

#[test]
fn rope_qkv_norm_every_variant() {
    let ctx = ctx();
    let case = |tokens, hq, hkv, dim, rows, start| Case {
        tokens,
        hq,
        hkv,
        dim,
        rows,
        start,
        in_buffer: false,
        interleaved: false,
        scaling: RopeScaling::None,
        groups: None,
    };
    let cases = [
        // A prompt at the cache's start, heads of 4 pairs; Qwen3's heads of 64 pairs, a decode
        // step; heads of 3 pairs (no whole subgroup); a step whose last positions pass the
        // cache (read from the buffer below: none of theirs is written).
        case(5, 4, 2, 8, 9, 0),
        case(1, 4, 2, 128, 40, 33),
        case(3, 3, 1, 6, 12, 7),
        case(4, 2, 1, 64, 10, 7),
        // Two workgroups for 36 heads (of 8 and 2 invocations: 4 and 32 heads a workgroup).
        Case {
            groups: Some(2),
            ..case(3, 8, 2, 16, 6, 1)
        },
    ];
    assert_eq!(rope_qkv_norm4::VARIANT_NAMES, rope_qkv_norm::VARIANT_NAMES);
    for name in rope_qkv_norm::VARIANT_NAMES {
        for (i, c) in cases.into_iter().enumerate() {
            for (in_buffer, interleaved, scaling) in [
                (false, false, RopeScaling::None),
                (true, true, RopeScaling::None),
                (true, false, LLAMA3_EVERY_BAND),
            ] {
                let c = Case {
                    in_buffer,
                    interleaved,
                    scaling,
                    ..c
                };
                // Only a position read on the GPU may run past the cache.
                if !in_buffer && c.start + c.tokens > c.rows {
                    continue;
                }
                run(&ctx, name, c, false, 400 + i as u64);
                // Four pairs an invocation where heads are whole quads of pairs.
                if c.dim.is_multiple_of(8) {
                    run(&ctx, name, c, true, 400 + i as u64);
                }
            }
        }
    }
    assert_clean(&ctx);
}

#[test]
fn rope_qkv_normed_places_as_the_kernel_and_refuses_bad_operands() {
    let ctx = ctx();
    let ops = Ops::new(&ctx);
    let f = TensorFormat::F32;
    let t = |shape: &[usize]| Tensor::new(&ctx, shape, f).unwrap();
    let up = |shape: &[usize], seed| {
        let n = shape.iter().product();
        Tensor::from_f32(&ctx, shape, f, &random_in(n, seed, 0.5, 1.5)).unwrap()
    };
    let (qkv, q, kc, vc) = (up(&[2, 64], 1), t(&[2, 4, 8]), t(&[6, 2, 8]), t(&[6, 2, 8]));
    let (qn, kn) = (up(&[8], 2), up(&[8], 3));
    let norm = HeadNorm {
        q_weight: &qn,
        k_weight: &kn,
        eps: EPS,
    };
    let op = Rope::new().with_style(RopeStyle::Interleaved);
    let run = |norm: HeadNorm<'_>, q: &Tensor, op: &Rope, pos| {
        refused(&ctx, |l| {
            ops.rope_qkv_normed(l, &qkv, norm, q, &kc, &vc, op, pos)
        })
    };
    // A weight of the wrong length.
    let short = t(&[7]);
    let e = run(
        HeadNorm {
            k_weight: &short,
            ..norm
        },
        &q,
        &op,
        None,
    );
    assert!(
        matches!(
            e,
            OpError::Shape {
                operand: "k_weight",
                ..
            }
        ),
        "{e}"
    );
    // A weight of another format.
    let half = Tensor::new(&ctx, &[8], TensorFormat::F16).unwrap();
    let e = run(
        HeadNorm {
            q_weight: &half,
            ..norm
        },
        &q,
        &op,
        None,
    );
    assert!(
        matches!(
            e,
            OpError::Format {
                operand: "q_weight",
                ..
            }
        ),
        "{e}"
    );
    // A weight that is an output.
    let e = run(
        HeadNorm {
            q_weight: &kc,
            ..norm
        },
        &q,
        &op,
        None,
    );
    assert!(
        matches!(e, OpError::Shape { .. } | OpError::Aliased { .. }),
        "{e}"
    );
    let q_flat = q.view(0, &[8]).unwrap();
    let e = run(
        HeadNorm {
            q_weight: &q_flat,
            ..norm
        },
        &q,
        &op,
        None,
    );
    assert!(matches!(e, OpError::Aliased { .. }), "{e}");
    // Positions known now that run past the cache.
    let e = run(norm, &q, &op.with_position_offset(5), None);
    assert!(
        matches!(e, OpError::Unsupported { op: "rope_qkv_normed", ref why } if why.contains("past")),
        "{e}"
    );
    // The context still works, and the operation computes the kernel's placement.
    let pos = Tensor::from_i32(&ctx, &[1], &[3]).unwrap();
    ops.run(|l| ops.rope_qkv_normed(l, &qkv, norm, &q, &kc, &vc, &op, Some(&pos)))
        .unwrap();
    let qkv_v = qkv.download_f32().unwrap();
    let q_heads: Vec<f32> = qkv_v
        .chunks(64)
        .flat_map(|row| row[..32].to_vec())
        .collect();
    let normed = head_normed(&q_heads, 8, &qn.download_f32().unwrap());
    let freqs = op.frequencies();
    let (want, scale) = reference::rope(2, 4, 8, 3, &freqs, true, &normed);
    let got = q.download_f32().unwrap();
    assert_close_scaled(&got, &want, &scale, 1e-5, "Ops::rope_qkv_normed");
    assert_clean(&ctx);
}
