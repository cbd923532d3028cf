//! Rotary position embedding ([`rope`]) in every variant, both pair styles, against the f64
//! reference on random non-zero data, outputs poisoned; odd head counts and sequence lengths,
//! decode offsets (small and large), in place; and [`Ops::rope`] with its checks. [`rope_qkv`]
//! (a fused projection rotated into a KV cache) in every variant, positions from a push constant
//! or a buffer, and [`Ops::rope_qkv`]'s checks.

use vkprism::{Context, LoadOptions, Tensor, TensorFormat, VariantKey};
use vkprism_shaders::reference::LLAMA3_EVERY_BAND;
use vkprism_shaders::{
    reference, rope, rope_qkv, rope_qkv4, OpError, Ops, Rope, RopeFrequencies, RopeQkvShape,
    RopeScaling, RopeShape, RopeStyle,
};
use vkprism_testkit::{
    assert_clean, assert_close_scaled, ctx, expected_in, poisoned, quantize, random_in, refused,
    tolerance,
};

/// The variant's tolerance widened by fp32's angle error, which grows with the position: the
/// angle `pos · inv_freq` is rounded to fp32 (as Hugging Face rounds it) after inv_freq's own
/// few-ulp error from exp2.
fn rope_tolerance(key: &VariantKey, max_pos: usize) -> f32 {
    tolerance(key) + max_pos as f32 * 5e-7
}

#[allow(clippy::too_many_arguments)]
fn run_case(
    ctx: &Context,
    name: &str,
    s: RopeShape,
    offset: usize,
    freqs: RopeFrequencies,
    interleaved: bool,
    in_place: bool,
    seed: u64,
    grid: Option<[u32; 3]>,
) {
    let k = ctx
        .load_with::<rope::Kernel>(&LoadOptions::variant_named(name).unwrap())
        .unwrap();
    let key = k.variant().key;
    let f = k.format_of("x_blob").unwrap();
    let shape = [s.batch * s.seq, s.heads, s.dim];
    let x = random_in(shape.iter().product(), seed, 0.1, 2.0);
    let xt = Tensor::from_f32(ctx, &shape, f, &x).unwrap();
    let yt = poisoned(ctx, &shape, f);
    let out = if in_place { &xt } else { &yt };
    let spec = rope::SpecConstants {
        interleaved: interleaved as i32,
    };
    let pipe = k.pipeline(&spec, Some(s.local_size())).unwrap();
    ctx.run(|l| {
        l.dispatch(
            &pipe,
            &rope::BufferBindings {
                x_blob: &xt,
                y_blob: out,
            },
            &s.push(offset as i32, &freqs),
            grid.unwrap_or(s.grid()),
        )
    })
    .unwrap();
    let (want, scale) = reference::rope(
        s.seq,
        s.heads,
        s.dim,
        offset,
        &freqs,
        interleaved,
        &quantize(&x, f),
    );
    let (want, scale) = expected_in(&want, &scale, f);
    assert_close_scaled(
        &out.download_f32().unwrap(),
        &want,
        &scale,
        rope_tolerance(&key, offset + s.seq),
        &format!("{name} {s:?} offset {offset} {freqs:?} interleaved {interleaved}"),
    );
}

const fn shape(batch: usize, seq: usize, heads: usize, dim: usize) -> RopeShape {
    RopeShape {
        batch,
        seq,
        heads,
        dim,
    }
}

#[test]
fn rope_every_variant() {
    let ctx = ctx();
    assert_eq!(rope::VARIANT_NAMES, ["fp32", "fp16s", "fp16sa", "bf16s"]);
    let shapes = [
        shape(1, 7, 3, 2),
        shape(2, 5, 3, 6),
        shape(1, 33, 4, 64),
        shape(3, 9, 5, 128),
        shape(1, 1, 32, 128),
    ];
    for name in rope::VARIANT_NAMES {
        for (i, s) in shapes.iter().enumerate() {
            for interleaved in [false, true] {
                let seed = 2 * i as u64 + interleaved as u64;
                let plain = RopeFrequencies::new(10000.0);
                run_case(&ctx, name, *s, 0, plain, interleaved, false, seed, None);
                let llama3 = RopeFrequencies::new(500000.0);
                run_case(
                    &ctx,
                    name,
                    *s,
                    17,
                    llama3,
                    interleaved,
                    true,
                    seed + 20,
                    None,
                );
                // Scaled: every band, and far enough that a wrong band shows.
                let scaled = plain.with_scaling(LLAMA3_EVERY_BAND);
                run_case(
                    &ctx,
                    name,
                    *s,
                    300,
                    scaled,
                    interleaved,
                    false,
                    seed + 40,
                    None,
                );
                let linear = plain.with_scaling(RopeScaling::Linear { factor: 4.0 });
                run_case(
                    &ctx,
                    name,
                    *s,
                    90,
                    linear,
                    interleaved,
                    true,
                    seed + 60,
                    None,
                );
            }
        }
    }
    assert_clean(&ctx);
}

/// Decoding far into a sequence: one token at positions in the thousands, where the angle's
/// range reduction matters.
#[test]
fn rope_at_large_positions() {
    let ctx = ctx();
    for name in rope::VARIANT_NAMES {
        for (offset, interleaved, scaling) in [
            (4095, false, RopeScaling::None),
            (30000, true, RopeScaling::None),
            (131071, false, RopeScaling::None),
            (131071, true, LLAMA3_EVERY_BAND),
        ] {
            run_case(
                &ctx,
                name,
                shape(2, 1, 8, 128),
                offset,
                RopeFrequencies::new(10000.0).with_scaling(scaling),
                interleaved,
                false,
                40,
                None,
            );
        }
    }
    assert_clean(&ctx);
}

/// A grid smaller than the pairs (as past 65,535 workgroups): invocations take several.
#[test]
fn rope_grid_stride_covers_every_pair() {
    let ctx = ctx();
    for name in rope::VARIANT_NAMES {
        let s = shape(2, 13, 7, 66);
        run_case(
            &ctx,
            name,
            s,
            3,
            RopeFrequencies::new(10000.0),
            true,
            false,
            50,
            Some([3 * 256, 1, 1]),
        );
        run_case(
            &ctx,
            name,
            s,
            3,
            RopeFrequencies::new(10000.0).with_scaling(LLAMA3_EVERY_BAND),
            false,
            true,
            51,
            Some([256, 1, 1]),
        );
    }
    assert_clean(&ctx);
}

#[test]
fn rope_ops_every_format_and_rank() {
    let ctx = ctx();
    let ops = Ops::new(&ctx);
    for f in [TensorFormat::F32, TensorFormat::F16, TensorFormat::Bf16] {
        let tol = match f {
            TensorFormat::F32 => 1e-4,
            TensorFormat::F16 => 1e-2,
            _ => 1e-2,
        };
        for (dims, style, offset, scaling) in [
            (vec![5, 3, 8], RopeStyle::Half, 0, RopeScaling::None),
            (
                vec![2, 3, 4, 10],
                RopeStyle::Interleaved,
                9,
                RopeScaling::None,
            ),
            (vec![1, 7, 64], RopeStyle::Half, 100, RopeScaling::None),
            (vec![2, 5, 3, 8], RopeStyle::Half, 200, LLAMA3_EVERY_BAND),
        ] {
            let n: usize = dims.iter().product();
            let x = random_in(n, 60, 0.1, 2.0);
            let xt = Tensor::from_f32(&ctx, &dims, f, &x).unwrap();
            let yt = poisoned(&ctx, &dims, f);
            let op = Rope::new()
                .with_style(style)
                .with_position_offset(offset)
                .with_theta_base(10000.0)
                .with_scaling(scaling);
            let (seq, heads, dim) = (
                dims[dims.len() - 3],
                dims[dims.len() - 2],
                dims[dims.len() - 1],
            );
            let (want, scale) = reference::rope(
                seq,
                heads,
                dim,
                offset,
                &op.frequencies(),
                style == RopeStyle::Interleaved,
                &quantize(&x, f),
            );
            let (want, scale) = expected_in(&want, &scale, f);
            for out in [&yt, &xt] {
                match ops.run(|l| ops.rope(l, &xt, out, &op)) {
                    Err(OpError::FormatUnsupported { .. }) => {
                        println!("rope: the device runs no variant on {f:?}");
                        break;
                    }
                    r => r.unwrap(),
                }
                assert_close_scaled(
                    &out.download_f32().unwrap(),
                    &want,
                    &scale,
                    tol,
                    &format!("rope {f:?} {dims:?} {style:?} offset {offset} {scaling:?}"),
                );
            }
        }
    }
    assert_clean(&ctx);
}

#[test]
fn rope_bad_operands_are_errors_and_record_nothing() {
    let ctx = ctx();
    let ops = Ops::new(&ctx);
    let t = |shape: &[usize], f: TensorFormat| {
        let n = shape.iter().product();
        Tensor::from_f32(&ctx, shape, f, &vec![1.0; n]).unwrap()
    };
    let f32t = |shape: &[usize]| t(shape, TensorFormat::F32);
    let x = f32t(&[4, 2, 8]);
    let op = Rope::new();
    let e = refused(ops.context(), |l| {
        ops.rope(l, &f32t(&[4, 16]), &f32t(&[4, 16]), &op)
    });
    assert!(
        matches!(
            e,
            OpError::Shape {
                op: "rope",
                operand: "x",
                ..
            }
        ),
        "{e}"
    );
    let e = refused(ops.context(), |l| ops.rope(l, &x, &f32t(&[4, 16]), &op));
    assert!(matches!(e, OpError::Shape { operand: "y", .. }), "{e}");
    let e = refused(ops.context(), |l| {
        ops.rope(l, &x, &t(&[4, 2, 8], TensorFormat::F16), &op)
    });
    assert!(matches!(e, OpError::Format { operand: "y", .. }), "{e}");
    let xi = Tensor::from_i32(&ctx, &[4, 2, 8], &[1; 64]).unwrap();
    let e = refused(ops.context(), |l| ops.rope(l, &xi, &xi, &op));
    assert!(matches!(e, OpError::Format { operand: "x", .. }), "{e}");
    let odd = f32t(&[4, 2, 7]);
    let e = refused(ops.context(), |l| ops.rope(l, &odd, &odd, &op));
    assert!(matches!(e, OpError::Unsupported { op: "rope", .. }), "{e}");
    let e = refused(ops.context(), |l| {
        ops.rope(l, &x, &x, &op.with_theta_base(0.0))
    });
    assert!(matches!(e, OpError::Unsupported { .. }), "{e}");
    let bands_reversed = RopeScaling::Llama3 {
        factor: 8.0,
        low_freq_factor: 4.0,
        high_freq_factor: 1.0,
        original_max_positions: 8192,
    };
    for scaling in [RopeScaling::Linear { factor: 0.0 }, bands_reversed] {
        let e = refused(ops.context(), |l| {
            ops.rope(l, &x, &x, &op.with_scaling(scaling))
        });
        assert!(matches!(e, OpError::Unsupported { .. }), "{e}");
    }
    let far = op.with_position_offset(i32::MAX as usize);
    let e = refused(ops.context(), |l| ops.rope(l, &x, &x, &far));
    assert!(matches!(e, OpError::Unsupported { .. }), "{e}");
    assert_clean(&ctx);
}

/// One [`rope_qkv`] case: a step of `tokens` at position `offset + from_buffer` (the part from
/// the position buffer where `in_buffer`), `hq` / `hkv` heads of `dim`, a cache of `rows`.
#[derive(Copy, Clone, Debug)]
struct QkvCase {
    tokens: usize,
    hq: usize,
    hkv: usize,
    dim: usize,
    rows: usize,
    offset: usize,
    from_buffer: usize,
    in_buffer: bool,
    interleaved: bool,
    scaling: RopeScaling,
}

/// Splits a fused projection's rows into its query, key and value heads.
fn split_qkv(c: &QkvCase, qkv: &[f32]) -> [Vec<f32>; 3] {
    let width = (c.hq + 2 * c.hkv) * c.dim;
    let (qw, kw) = (c.hq * c.dim, c.hkv * c.dim);
    let mut parts = [Vec::new(), Vec::new(), Vec::new()];
    for row in qkv.chunks(width) {
        parts[0].extend_from_slice(&row[..qw]);
        parts[1].extend_from_slice(&row[qw..qw + kw]);
        parts[2].extend_from_slice(&row[qw + kw..]);
    }
    parts
}

/// Runs one case of variant `name` of `rope_qkv` (of `rope_qkv4` with `quads`) and checks q,
/// the cache rows written, and that no other cache row changed (they stay poisoned).
fn run_qkv(ctx: &Context, name: &str, c: QkvCase, quads: bool, seed: u64) {
    let load = LoadOptions::variant_named(name).unwrap();
    let k = ctx.load_with::<rope_qkv::Kernel>(&load).unwrap();
    let f = k.format_of("qkv_blob").unwrap();
    let width = (c.hq + 2 * c.hkv) * c.dim;
    let qkv = quantize(&random_in(c.tokens * width, seed, 0.1, 2.0), f);
    let qkv_t = Tensor::from_f32(ctx, &[c.tokens, width], f, &qkv).unwrap();
    let q_t = poisoned(ctx, &[c.tokens, c.hq, c.dim], f);
    let kc = poisoned(ctx, &[c.rows, c.hkv, c.dim], f);
    let vc = poisoned(ctx, &[c.rows, c.hkv, c.dim], f);
    let pos = Tensor::from_i32(ctx, &[1], &[c.from_buffer as i32]).unwrap();
    let s = RopeQkvShape {
        tokens: c.tokens,
        hq: c.hq,
        hkv: c.hkv,
        dim: c.dim,
        rows: c.rows,
    };
    let spec = rope_qkv::SpecConstants {
        interleaved: c.interleaved as i32,
        position_in_buffer: c.in_buffer as i32,
    };
    let base = if c.in_buffer { 0 } else { c.from_buffer };
    let freqs = RopeFrequencies::new(10000.0).with_scaling(c.scaling);
    let push = s.push((c.offset + base) as i32, &freqs);
    if quads {
        let k4 = ctx.load_with::<rope_qkv4::Kernel>(&load).unwrap();
        let pipe = k4.pipeline(&spec, Some([256, 1, 1])).unwrap();
        let b = rope_qkv4::BufferBindings {
            qkv_blob: &qkv_t,
            q_blob: &q_t,
            k_blob: &kc,
            v_blob: &vc,
            pos_blob: &pos,
        };
        ctx.run(|l| l.dispatch(&pipe, &b, &push, s.quads_grid()))
            .unwrap();
    } else {
        let pipe = k.pipeline(&spec, Some([256, 1, 1])).unwrap();
        let b = rope_qkv::BufferBindings {
            qkv_blob: &qkv_t,
            q_blob: &q_t,
            k_blob: &kc,
            v_blob: &vc,
            pos_blob: &pos,
        };
        ctx.run(|l| l.dispatch(&pipe, &b, &push, s.grid())).unwrap();
    }

    let start = c.offset + c.from_buffer;
    let [qv, kv, vv] = split_qkv(&c, &qkv);
    let rope = |x: &[f32], heads| {
        let (w, s) = reference::rope(c.tokens, heads, c.dim, start, &freqs, c.interleaved, x);
        expected_in(&w, &s, f)
    };
    let tol = rope_tolerance(&k.variant().key, start + c.tokens);
    let what = format!("rope_qkv{} {name} {c:?}", if quads { "4" } else { "" });
    let (want, scale) = rope(&qv, c.hq);
    assert_close_scaled(&q_t.download_f32().unwrap(), &want, &scale, tol, &what);
    let row = c.hkv * c.dim;
    let (kw, ks) = rope(&kv, c.hkv);
    let (got_k, got_v) = (kc.download_f32().unwrap(), vc.download_f32().unwrap());
    for r in 0..c.rows {
        let (gk, gv) = (&got_k[r * row..][..row], &got_v[r * row..][..row]);
        if (start..start + c.tokens).contains(&r) {
            let t = (r - start) * row;
            let w = format!("{what}: cache row {r}");
            assert_close_scaled(gk, &kw[t..][..row], &ks[t..][..row], tol, &w);
            assert_eq!(gv, &vv[t..][..row], "{w}: values copied");
        } else {
            let untouched = gk.iter().chain(gv).all(|x| x.is_nan());
            assert!(untouched, "{what}: cache row {r} was written");
        }
    }
}

#[test]
fn rope_qkv_every_variant() {
    let ctx = ctx();
    assert_eq!(rope_qkv::VARIANT_NAMES, rope::VARIANT_NAMES);
    let case = |tokens, hq, hkv, dim, rows, offset, from_buffer| QkvCase {
        tokens,
        hq,
        hkv,
        dim,
        rows,
        offset,
        from_buffer,
        in_buffer: false,
        interleaved: false,
        scaling: RopeScaling::None,
    };
    let cases = [
        // A prompt at the cache's start; a decode step; a step that ends at the last row.
        case(5, 4, 2, 8, 9, 0, 0),
        case(1, 8, 2, 64, 40, 3, 30),
        case(3, 3, 1, 6, 12, 2, 7),
        // Heads of two quads of pairs: a prompt past the cache's start.
        case(7, 4, 2, 16, 12, 1, 0),
        // Positions past the cache's rows write no key or value.
        case(4, 2, 1, 4, 10, 1, 7),
    ];
    assert_eq!(rope_qkv4::VARIANT_NAMES, rope_qkv::VARIANT_NAMES);
    for name in rope_qkv::VARIANT_NAMES {
        for (i, c) in cases.into_iter().enumerate() {
            for (in_buffer, interleaved, scaling) in [
                (false, false, RopeScaling::None),
                (true, false, RopeScaling::None),
                (true, true, RopeScaling::None),
                (true, false, LLAMA3_EVERY_BAND),
            ] {
                let c = QkvCase {
                    in_buffer,
                    interleaved,
                    scaling,
                    ..c
                };
                // Only a position read on the GPU may run past the cache.
                if !in_buffer && c.offset + c.from_buffer + c.tokens > c.rows {
                    continue;
                }
                run_qkv(&ctx, name, c, false, 90 + i as u64);
                // Four pairs an invocation where heads are whole quads of pairs.
                if c.dim.is_multiple_of(8) {
                    run_qkv(&ctx, name, c, true, 90 + i as u64);
                }
            }
        }
    }
    assert_clean(&ctx);
}

#[test]
fn rope_qkv_bad_operands_are_errors_and_record_nothing() {
    let ctx = ctx();
    let ops = Ops::new(&ctx);
    let t = |shape: &[usize]| Tensor::new(&ctx, shape, TensorFormat::F32).unwrap();
    let (qkv, q, kc, vc) = (t(&[2, 64]), t(&[2, 4, 8]), t(&[6, 2, 8]), t(&[6, 2, 8]));
    let op = Rope::new();
    let run = |qkv: &Tensor, q: &Tensor, kc: &Tensor, vc: &Tensor, op: &Rope, pos| {
        refused(&ctx, |l| ops.rope_qkv(l, qkv, q, kc, vc, op, pos))
    };
    // A projection of the wrong width.
    let e = run(&t(&[2, 60]), &q, &kc, &vc, &op, None);
    assert!(matches!(e, OpError::Shape { operand: "qkv", .. }), "{e}");
    // Caches of different shapes.
    let e = run(&qkv, &q, &kc, &t(&[5, 2, 8]), &op, None);
    assert!(
        matches!(
            e,
            OpError::Shape {
                operand: "v_cache",
                ..
            }
        ),
        "{e}"
    );
    // Positions known now that run past the cache.
    let e = run(&qkv, &q, &kc, &vc, &op.with_position_offset(5), None);
    assert!(
        matches!(e, OpError::Unsupported { op: "rope_qkv", ref why } if why.contains("past")),
        "{e}"
    );
    // The same cache bound as keys and values.
    let e = run(&qkv, &q, &kc, &kc, &op, None);
    assert!(matches!(e, OpError::Aliased { .. }), "{e}");
    // A position buffer of the wrong format.
    let e = run(&qkv, &q, &kc, &vc, &op, Some(&t(&[1])));
    assert!(
        matches!(
            e,
            OpError::Format {
                operand: "position",
                ..
            }
        ),
        "{e}"
    );
    // The context still works.
    let pos = Tensor::from_i32(&ctx, &[1], &[4]).unwrap();
    ops.run(|l| ops.rope_qkv(l, &qkv, &q, &kc, &vc, &op, Some(&pos)))
        .unwrap();
    assert_clean(&ctx);
}
