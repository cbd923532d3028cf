//! Attention ([`attention`], [`attention4`], [`attention_grouped`], [`attention_decode`],
//! [`attention_combine`], [`attention_cm`], [`attention_cm2`]) in every variant the
//! device runs, against the f64 reference on random non-zero data, outputs poisoned: prompts and
//! decode, causal or not, grouped-query heads, batches, head dimensions that are not multiples
//! of 4 (row kernel) or of the cooperative-matrix block, keys split over workgroups; and the
//! operation layer's choice and checks; [`Ops::attention_at`] replayed at positions read from a
//! buffer.

use vkprism::{CommandList, Context, LoadOptions, Tensor, TensorFormat, VariantKey};
use vkprism_shaders::{
    attention, attention4, attention_cm, attention_cm2, attention_combine, attention_decode,
    attention_grouped, reference, Attention, AttentionShape, CmSplit, OpError, Ops,
};
use vkprism_testkit::{
    assert_clean, assert_close_scaled, ctx, expected_in, load_unless_device_lacks_matrices,
    poisoned, quantize, random_in, refused, tolerance,
};

/// Random q, k, v for `s` in `format`, as uploaded and as the GPU sees them.
struct Operands {
    q: Tensor,
    k: Tensor,
    v: Tensor,
    qv: Vec<f32>,
    kv: Vec<f32>,
    vv: Vec<f32>,
}

fn operands(ctx: &Context, s: &AttentionShape, f: TensorFormat, seed: u64) -> Operands {
    let qs = [s.batch, s.sq, s.hq, s.d];
    let ks = [s.batch, s.skv, s.hkv, s.d];
    let qv = random_in(qs.iter().product(), seed, 0.1, 1.0);
    let kv = random_in(ks.iter().product(), seed + 1, 0.1, 1.0);
    // Values of both signs: outputs near 0 as well as far from it.
    let vv: Vec<f32> = random_in(ks.iter().product(), seed + 2, 0.1, 2.0)
        .iter()
        .enumerate()
        .map(|(i, x)| if i % 3 == 0 { -x } else { *x })
        .collect();
    Operands {
        q: Tensor::from_f32(ctx, &qs, f, &qv).unwrap(),
        k: Tensor::from_f32(ctx, &ks, f, &kv).unwrap(),
        v: Tensor::from_f32(ctx, &ks, f, &vv).unwrap(),
        qv: quantize(&qv, f),
        kv: quantize(&kv, f),
        vv: quantize(&vv, f),
    }
}

fn check(got: &Tensor, s: &AttentionShape, x: &Operands, causal: bool, tol: f32, what: &str) {
    let scale = 1.0 / (s.d as f32).sqrt();
    let (want, err) = reference::attention(s, scale, causal, &x.qv, &x.kv, &x.vv);
    let (want, err) = expected_in(&want, &err, got.format());
    assert_close_scaled(&got.download_f32().unwrap(), &want, &err, tol, what);
}

/// Runs the row kernel in variant `name` ([`attention4`] with `quads`) with `splits` shares
/// per row (and, where there are several, the combine pass, or with `combine_last` the last
/// share of each row merging it: the share counters must be zero again after).
fn run_rows(
    ctx: &Context,
    name: &str,
    s: AttentionShape,
    causal: bool,
    (splits, combine_last): (usize, bool),
    quads: bool,
    seed: u64,
) {
    let load = LoadOptions::variant_named(name).unwrap();
    let k = ctx.load_with::<attention::Kernel>(&load).unwrap();
    let k4 = ctx.load_with::<attention4::Kernel>(&load).unwrap();
    let f = k.format_of("q_blob").unwrap();
    assert_eq!(k4.format_of("k_blob").unwrap(), f);
    let x = operands(ctx, &s, f, seed);
    let o = poisoned(ctx, &[s.batch, s.sq, s.hq, s.d], f);
    let part = poisoned(ctx, &s.part_shape(splits), TensorFormat::F32);
    // Causal cases take part of the offset from the position buffer (a replayed decode step's
    // way), the rest from the push constant.
    let spec = attention::SpecConstants {
        causal: causal as i32,
        split: (splits > 1) as i32,
        position_in_buffer: causal as i32,
        combine_last: combine_last as i32,
    };
    let counts = Tensor::from_i32(ctx, &[s.rows()], &vec![0; s.rows()]).unwrap();
    const FROM_BUFFER: i32 = 5;
    let pos = Tensor::new(ctx, &[1], TensorFormat::I32).unwrap();
    ctx.run(|l| l.upload_bytes(&pos, &FROM_BUFFER.to_le_bytes()))
        .unwrap();
    let local = Some([64, 1, 1]);
    let (pipe, pipe4) = (
        k.pipeline(&spec, local).unwrap(),
        k4.pipeline(&spec, local).unwrap(),
    );
    let combine = ctx
        .load_with::<attention_combine::Kernel>(&LoadOptions::variant(k.variant().key))
        .unwrap();
    let cpipe = combine.pipeline(&Default::default(), local).unwrap();
    let scale = 1.0 / (s.d as f32).sqrt();
    let offset = if causal {
        s.causal_offset() - FROM_BUFFER
    } else {
        0
    };
    let push = s.push(scale, offset, splits);
    ctx.run(|l| {
        if quads {
            let b = attention4::BufferBindings {
                q_blob: &x.q,
                k_blob: &x.k,
                v_blob: &x.v,
                o_blob: &o,
                part_blob: &part,
                pos_blob: &pos,
                count_blob: &counts,
            };
            l.dispatch(&pipe4, &b, &push, s.grid(splits))?;
        } else {
            let b = attention::BufferBindings {
                q_blob: &x.q,
                k_blob: &x.k,
                v_blob: &x.v,
                o_blob: &o,
                part_blob: &part,
                pos_blob: &pos,
                count_blob: &counts,
            };
            l.dispatch(&pipe, &b, &push, s.grid(splits))?;
        }
        if splits > 1 && !combine_last {
            let b = attention_combine::BufferBindings {
                part_blob: &part,
                o_blob: &o,
            };
            l.dispatch(&cpipe, &b, &s.combine_push(splits), s.combine_grid())?;
        }
        Ok(())
    })
    .unwrap();
    let what = format!(
        "{name} {s:?} causal {causal} splits {splits} (last merges: {combine_last}) quads {quads}"
    );
    check(&o, &s, &x, causal, tolerance(&k.variant().key), &what);
    let left = counts.download_i32().unwrap();
    assert!(left.iter().all(|c| *c == 0), "{what}: counts left {left:?}");
}

fn shape(batch: usize, sq: usize, skv: usize, hq: usize, hkv: usize, d: usize) -> AttentionShape {
    AttentionShape {
        batch,
        sq,
        skv,
        hq,
        hkv,
        d,
    }
}

#[test]
fn attention_rows_every_variant() {
    let ctx = ctx();
    assert_eq!(
        attention::VARIANT_NAMES,
        [
            "fp32_nosg",
            "fp32_sg",
            "fp16s_nosg",
            "fp16s_sg",
            "fp16sa_nosg",
            "fp16sa_sg",
            "bf16s_nosg",
            "bf16s_sg"
        ]
    );
    let cases = [
        // A prompt: grouped-query heads, a head dimension not a multiple of 4.
        (shape(1, 5, 5, 4, 2, 23), 1),
        // More keys than a workgroup, more queries than keys (causal rows that see none).
        (shape(2, 9, 70, 3, 1, 16), 1),
        (shape(1, 6, 4, 2, 2, 8), 1),
        // Decode: one query against a cache, the keys split over workgroups.
        (shape(1, 1, 300, 8, 2, 64), 5),
        (shape(2, 1, 130, 4, 4, 130), 3),
        // A head dimension over 128 (three outputs per invocation), split with empty shares.
        (shape(1, 3, 65, 2, 1, 250), 4),
        (shape(1, 2, 90, 2, 1, 256), 2),
        (shape(1, 4, 9, 2, 2, 4), 1),
    ];
    for name in attention::VARIANT_NAMES {
        for (i, (s, splits)) in cases.iter().enumerate() {
            for causal in [false, true] {
                // Rows of quads also through the scalar path.
                for quads in [false, s.quads()] {
                    for last in [false, *splits > 1] {
                        let seed = 10 * i as u64;
                        run_rows(&ctx, name, *s, causal, (*splits, last), quads, seed);
                    }
                }
            }
        }
        // More shares than the merge keeps weights of (1024): shares 1024 to 1031 hold keys,
        // the last 8 none; merged by the combine pass and by the last share.
        for last in [false, true] {
            let s = shape(1, 1, 66000, 2, 1, 8);
            run_rows(&ctx, name, s, true, (1040, last), true, 90);
        }
    }
    assert_clean(&ctx);
}

#[test]
fn attention_rows_over_the_grid_limit() {
    let ctx = ctx();
    // 35,200 rows: z slices of the per-row grid.
    run_rows(
        &ctx,
        "fp32_sg",
        shape(1, 1100, 3, 32, 8, 4),
        true,
        (1, false),
        true,
        7,
    );
    assert_clean(&ctx);
}

/// Runs the grouped kernel in variant `name` with `splits` shares per workgroup's rows (and
/// the combine pass where there are several).
fn run_grouped(
    ctx: &Context,
    name: &str,
    s: AttentionShape,
    causal: bool,
    splits: usize,
    seed: u64,
) {
    let load = LoadOptions::variant_named(name).unwrap();
    let k = ctx.load_with::<attention_grouped::Kernel>(&load).unwrap();
    let f = k.format_of("q_blob").unwrap();
    let x = operands(ctx, &s, f, seed);
    let o = poisoned(ctx, &[s.batch, s.sq, s.hq, s.d], f);
    let part = poisoned(ctx, &s.part_shape(splits), TensorFormat::F32);
    let spec = attention_grouped::SpecConstants {
        causal: causal as i32,
        split: (splits > 1) as i32,
        position_in_buffer: causal as i32,
        D: s.d as i32,
    };
    const FROM_BUFFER: i32 = 3;
    let pos = Tensor::new(ctx, &[1], TensorFormat::I32).unwrap();
    ctx.run(|l| l.upload_bytes(&pos, &FROM_BUFFER.to_le_bytes()))
        .unwrap();
    let pipe = k.pipeline(&spec, Some([256, 1, 1])).unwrap();
    let combine = ctx
        .load_with::<attention_combine::Kernel>(&LoadOptions::variant(k.variant().key))
        .unwrap();
    let cpipe = combine
        .pipeline(&Default::default(), Some([64, 1, 1]))
        .unwrap();
    let scale = 1.0 / (s.d as f32).sqrt();
    let offset = if causal {
        s.causal_offset() - FROM_BUFFER
    } else {
        0
    };
    ctx.run(|l| {
        let b = attention_grouped::BufferBindings {
            q_blob: &x.q,
            k_blob: &x.k,
            v_blob: &x.v,
            o_blob: &o,
            part_blob: &part,
            pos_blob: &pos,
        };
        l.dispatch(
            &pipe,
            &b,
            &s.push(scale, offset, splits),
            s.grouped_grid(splits),
        )?;
        if splits > 1 {
            let b = attention_combine::BufferBindings {
                part_blob: &part,
                o_blob: &o,
            };
            l.dispatch(&cpipe, &b, &s.combine_push(splits), s.combine_grid())?;
        }
        Ok(())
    })
    .unwrap();
    let what = format!("grouped {name} {s:?} causal {causal} splits {splits}");
    check(&o, &s, &x, causal, tolerance(&k.variant().key), &what);
}

#[test]
fn attention_grouped_every_variant() {
    let ctx = ctx();
    assert_eq!(attention_grouped::VARIANT_NAMES, attention::VARIANT_NAMES);
    // In every variant: decode with eight query heads a key/value head (a workgroup's whole
    // set), several chunks of keys in one share, then split with empty shares; twelve query
    // heads a key/value head (a set of 8 and one of 4).
    let every = [
        (shape(1, 1, 600, 16, 2, 64), 1),
        (shape(1, 1, 600, 16, 2, 64), 4),
        (shape(1, 1, 300, 24, 2, 32), 2),
    ];
    // In one variant with subgroups and one without (each a pipeline per head dimension, which
    // a CPU driver compiles slowly): one query head a key/value head, three (fewer than a vec4
    // holds); batches and several query rows (causal rows see different keys), a head
    // dimension whose quads don't divide the workgroup; the largest one; the smallest.
    let edges = [
        (shape(1, 1, 70, 2, 2, 16), 1),
        (shape(1, 1, 90, 3, 1, 8), 1),
        (shape(2, 3, 270, 4, 1, 80), 2),
        (shape(1, 2, 257, 2, 1, 256), 1),
        (shape(1, 1, 40, 4, 4, 4), 1),
    ];
    for name in attention_grouped::VARIANT_NAMES {
        let edge_cases: &[_] = if matches!(*name, "fp16sa_sg" | "fp32_nosg") {
            &edges
        } else {
            &[]
        };
        for (i, (s, splits)) in every.iter().chain(edge_cases).enumerate() {
            for causal in [false, true] {
                run_grouped(&ctx, name, *s, causal, *splits, 500 + 10 * i as u64);
            }
        }
    }
    assert_clean(&ctx);
}

/// Runs [`attention_decode`] in variant `name`, `kpi` keys an invocation, in workgroups of
/// `local`, with the causal position read from a buffer.
/// Runs [`attention_decode`] in variant `name` in workgroups of `local`, `kpi` keys an
/// invocation, the keys in `splits` shares (1: unsplit), against the CPU reference; a split
/// leaves its counters at zero.
fn run_decode(
    ctx: &Context,
    name: &str,
    s: AttentionShape,
    (local, kpi, splits): (u32, i32, usize),
    seed: u64,
) {
    let load = LoadOptions::variant_named(name).unwrap();
    let k = ctx.load_with::<attention_decode::Kernel>(&load).unwrap();
    let f = k.format_of("q_blob").unwrap();
    let x = operands(ctx, &s, f, seed);
    let o = poisoned(ctx, &[s.batch, s.sq, s.hq, s.d], f);
    let spec = attention_decode::SpecConstants {
        causal: 1,
        position_in_buffer: 1,
        D: s.d as i32,
        KPI: kpi,
        split: (splits > 1) as i32,
    };
    const FROM_BUFFER: i32 = 3;
    let pos = Tensor::new(ctx, &[1], TensorFormat::I32).unwrap();
    ctx.run(|l| l.upload_bytes(&pos, &FROM_BUFFER.to_le_bytes()))
        .unwrap();
    let pipe = k.pipeline(&spec, Some([local, 1, 1])).unwrap();
    let scale = 1.0 / (s.d as f32).sqrt();
    let part = poisoned(ctx, &s.part_shape(splits), TensorFormat::F32);
    let counts = Tensor::from_i32(ctx, &[s.rows()], &vec![0; s.rows()]).unwrap();
    ctx.run(|l| {
        let b = attention_decode::BufferBindings {
            q_blob: &x.q,
            k_blob: &x.k,
            v_blob: &x.v,
            o_blob: &o,
            pos_blob: &pos,
            part_blob: &part,
            count_blob: &counts,
        };
        let push = s.push(scale, s.causal_offset() - FROM_BUFFER, splits);
        l.dispatch(&pipe, &b, &push, s.decode_grid(local, splits))
    })
    .unwrap();
    let what = format!("decode {name} {s:?} local {local} kpi {kpi} splits {splits}");
    check(&o, &s, &x, true, tolerance(&k.variant().key), &what);
    let left = counts.download_i32().unwrap();
    assert!(
        left.iter().all(|c| *c == 0),
        "{what}: counters left {left:?}"
    );
}

#[test]
fn attention_decode_every_variant() {
    let ctx = ctx();
    assert_eq!(attention_decode::VARIANT_NAMES, attention::VARIANT_NAMES);
    // In every variant: a decoder's step (32 query heads over 4 key/value heads of 64) over
    // several chunks, the last one partly visible; one chunk, most of it past the keys.
    let every = [
        (shape(1, 1, 700, 8, 2, 64), (512, 4, 1)),
        (shape(1, 1, 37, 4, 4, 64), (256, 2, 1)),
        // Split: three shares of one chunk, the last partly visible; four, the last empty.
        (shape(1, 1, 700, 8, 2, 64), (512, 4, 3)),
        (shape(1, 1, 700, 8, 2, 64), (512, 4, 4)),
    ];
    // In one variant with subgroups and one without: head dimensions of 32 (R 4), 128 and 256
    // (more octets a row than some subgroups hold: the shared path there), 96 (R 12, not a
    // power of two, not dividing the workgroup: the shared path, idle invocations); batches
    // and several query rows (causal rows see different keys); one key an invocation.
    let edges = [
        (shape(1, 1, 300, 2, 1, 32), (512, 4, 1)),
        (shape(1, 1, 260, 2, 1, 128), (512, 4, 1)),
        (shape(1, 1, 90, 2, 2, 256), (1024, 4, 1)),
        (shape(2, 3, 200, 4, 2, 96), (512, 4, 1)),
        (shape(1, 1, 130, 2, 1, 64), (256, 1, 1)),
        // Split rows of several query rows and batches (causal rows see different keys), the
        // shared path's split (R 12).
        (shape(2, 3, 900, 4, 2, 64), (512, 4, 2)),
        (shape(1, 2, 1000, 2, 2, 96), (512, 4, 5)),
    ];
    for name in attention_decode::VARIANT_NAMES {
        let edge_cases: &[_] = if matches!(*name, "fp16sa_sg" | "fp32_nosg") {
            &edges
        } else {
            &[]
        };
        for (i, (s, run)) in every.iter().chain(edge_cases).enumerate() {
            run_decode(&ctx, name, *s, *run, 900 + 10 * i as u64);
        }
    }
    assert_clean(&ctx);
}

/// The operation layer's kernel for a decode step, in each float format, at a position read
/// from the causal offset: [`attention_decode`] where the head dimension is whole octets (past
/// 5 chunks of its keys split in shares, the last merging: one dispatch), with grouped-query
/// heads up to 64 chunks and then the grouped kernel; the row kernel otherwise.
#[test]
fn attention_ops_decode_takes_the_kernel_for_the_cache() {
    let ctx = ctx();
    let ops = Ops::new(&ctx);
    for f in [TensorFormat::F32, TensorFormat::F16, TensorFormat::Bf16] {
        for (i, (s, kernel)) in [
            (shape(1, 1, 2000, 8, 2, 64), "attention_decode"),
            (shape(1, 2, 2000, 8, 2, 64), "attention_decode"),
            // Past 64 chunks of 256 keys, the grouped kernel and its combine pass; up to them
            // the decode kernel split (17 chunks); without grouped heads, the decode kernel at
            // any length (17 chunks of 128 keys of 128).
            (shape(1, 1, 16_500, 8, 2, 64), "attention_grouped"),
            (shape(1, 1, 4200, 8, 2, 64), "attention_decode"),
            (shape(1, 1, 2100, 2, 2, 128), "attention_decode"),
            // Two query heads a key/value head over a long cache.
            (shape(1, 1, 2000, 4, 2, 64), "attention_decode"),
            // Short caches: one chunk of 256 keys, six (the most), and a head dimension that is
            // no multiple of 8.
            (shape(1, 1, 200, 8, 2, 64), "attention_decode"),
            (shape(1, 1, 1536, 8, 2, 64), "attention_decode"),
            (shape(1, 1, 500, 8, 2, 12), "attention4"),
        ]
        .iter()
        .enumerate()
        {
            let x = operands(&ctx, s, f, 700 + i as u64);
            let o = poisoned(&ctx, &[s.batch, s.sq, s.hq, s.d], f);
            let op = Attention::new().with_causal(true);
            let mut list = CommandList::new(&ctx).unwrap();
            ops.attention(&mut list, &x.q, &x.k, &x.v, &o, &op).unwrap();
            let names = list.dispatch_names().to_vec();
            assert_eq!(names[0], *kernel, "{s:?}: {names:?}");
            // attention_decode splits a long cache's keys and merges them in the same dispatch.
            if *kernel == "attention_decode" {
                assert_eq!(names.len(), 1, "{s:?}: {names:?}");
            }
            list.submit_and_wait().unwrap();
            let tol = if f == TensorFormat::F32 { 1e-5 } else { 2e-2 };
            check(&o, s, &x, true, tol, &format!("ops {f:?} {s:?}"));
        }
    }
    assert_clean(&ctx);
}

/// Runs the cooperative-matrix kernel in variant `name` (where the device has matrices), each
/// block's keys whole, then in shares of 32 and of 64 keys (the last share of each block
/// merging it: the counters must be zero again after, the partial results start poisoned).
fn run_cm(ctx: &Context, name: &str, s: AttentionShape, causal: bool, seed: u64) -> bool {
    let Some(k) = load_unless_device_lacks_matrices::<attention_cm::Kernel>(ctx, name) else {
        return false;
    };
    let f = k.format_of("q_blob").unwrap();
    assert_eq!(f, TensorFormat::F16);
    let x = operands(ctx, &s, f, seed);
    let subgroup = ctx.features().limits.subgroup_size;
    let spec = attention_cm::SpecConstants {
        causal: causal as i32,
        D: s.d as i32,
        subgroup_size: subgroup as i32,
    };
    let threads = if s.d <= 128 { 256 } else { 128 };
    let pipe = k.pipeline(&spec, Some([threads, 1, 1])).unwrap();
    let scale = 1.0 / (s.d as f32).sqrt();
    let offset = if causal { s.causal_offset() } else { 0 };
    let rows = 16 * (threads / subgroup) as usize;
    let blocks = s.cm_blocks(rows);
    let counts = Tensor::from_i32(ctx, &[blocks], &vec![0; blocks]).unwrap();
    for keys in [s.skv, 32, 64] {
        let shares = s.cm_key_shares(rows, causal, offset, keys);
        let part = poisoned(ctx, &s.cm_part_shape(rows, shares), TensorFormat::F32);
        let o = poisoned(ctx, &[s.batch, s.sq, s.hq, s.d], f);
        let qkvo = [&x.q, &x.k, &x.v, &o];
        let split = CmSplit {
            shares,
            part: &part,
            counts: &counts,
        };
        ctx.run(|l| s.record_cm(l, &pipe, qkvo, (scale, offset), (threads, rows), &split))
            .unwrap();
        let what = format!("{name} {s:?} causal {causal} {shares:?}");
        check_matrices(&o, &s, &x, causal, &k.variant().key, &what);
        assert!(
            counts.download_i32().unwrap().iter().all(|&c| c == 0),
            "{what}: counters left non-zero"
        );
    }
    true
}

/// [`check`] at a matrix kernel's tolerance: its variant's, twice over (the probabilities are
/// rounded to fp16 before they multiply V: a second rounding).
fn check_matrices(
    got: &Tensor,
    s: &AttentionShape,
    x: &Operands,
    causal: bool,
    variant: &VariantKey,
    what: &str,
) {
    check(got, s, x, causal, 2.0 * tolerance(variant) + 1e-3, what);
}

/// Prompts for the matrix kernels: rows and keys not multiples of the blocks, grouped-query
/// heads, batches, causal rows that see no key, head dimensions from 16 to 256.
fn matrix_cases() -> Vec<AttentionShape> {
    vec![
        shape(1, 64, 64, 2, 2, 64),
        shape(2, 70, 100, 4, 2, 128),
        shape(1, 17, 45, 3, 1, 16),
        // More queries than keys: causal rows that see none.
        shape(1, 40, 20, 2, 1, 32),
        shape(1, 33, 200, 2, 2, 256),
        // Several blocks a head, each seeing a different number of keys (split unevenly), a
        // causal offset.
        shape(1, 300, 300, 2, 1, 64),
        shape(2, 200, 330, 2, 2, 64),
        // More queries than keys over several blocks: a split block whose first rows see no
        // key in any share.
        shape(1, 300, 290, 2, 1, 64),
    ]
}

#[test]
fn attention_cm_every_variant() {
    let ctx = ctx();
    assert_eq!(attention_cm::VARIANT_NAMES, ["fp16s_cm", "fp16sa_cm"]);
    let cases = matrix_cases();
    for name in attention_cm::VARIANT_NAMES {
        for (i, s) in cases.iter().enumerate() {
            for causal in [false, true] {
                if !run_cm(&ctx, name, *s, causal, 100 + i as u64) {
                    break;
                }
            }
        }
    }
    assert_clean(&ctx);
}

/// Runs [`attention_cm2`] in variant `name` on `tiles` (rows, keys, threads) where the device
/// has its matrices and lists the tiles; false where it has no matrices.
fn run_cm2(
    ctx: &Context,
    name: &str,
    tiles: [u32; 3],
    s: AttentionShape,
    causal: bool,
    seed: u64,
) -> bool {
    let Some(k) = load_unless_device_lacks_matrices::<attention_cm2::Kernel>(ctx, name) else {
        return false;
    };
    let [rows, keys, threads] = tiles;
    if !s.cm2_offered(ctx.features(), tiles) {
        eprintln!(
            "{name}: {rows}x{keys} on {threads} at d {} not offered",
            s.d
        );
        return true;
    }
    let f = k.format_of("q_blob").unwrap();
    assert_eq!(f, TensorFormat::F16);
    let x = operands(ctx, &s, f, seed);
    let o = poisoned(ctx, &[s.batch, s.sq, s.hq, s.d], f);
    let spec = attention_cm2::SpecConstants {
        causal: causal as i32,
        D: s.d as i32,
        BR: rows as i32,
        BC: keys as i32,
    };
    let pipe = k.pipeline(&spec, Some([threads, 1, 1])).unwrap();
    let scale = 1.0 / (s.d as f32).sqrt();
    let offset = if causal { s.causal_offset() } else { 0 };
    let qkvo = [&x.q, &x.k, &x.v, &o];
    let blocks = (threads, rows as usize);
    ctx.run(|l| s.record_cm2(l, &pipe, qkvo, (scale, offset), blocks))
        .unwrap();
    let what = format!("{name} {tiles:?} {s:?} causal {causal}");
    check_matrices(&o, &s, &x, causal, &k.variant().key, &what);
    true
}

#[test]
fn attention_cm2_every_variant() {
    let ctx = ctx();
    assert_eq!(attention_cm2::VARIANT_NAMES, ["fp16s_cm", "fp16sa_cm"]);
    let mut cases = matrix_cases();
    // A prompt continuing a cache: the causal edge inside a step, several steps unmasked.
    cases.push(shape(1, 100, 300, 4, 1, 64));
    let tiles = [[64, 64, 128], [32, 32, 128], [128, 64, 256], [64, 32, 128]];
    for name in attention_cm2::VARIANT_NAMES {
        for (i, s) in cases.iter().enumerate() {
            for t in tiles {
                for causal in [false, true] {
                    if !run_cm2(&ctx, name, t, *s, causal, 300 + i as u64) {
                        return assert_clean(&ctx);
                    }
                }
            }
        }
    }
    assert_clean(&ctx);
}

/// The operation layer in each float format: a prompt and a decode step, against the
/// reference.
#[test]
fn attention_ops() {
    let ctx = ctx();
    let ops = Ops::new(&ctx);
    for f in [TensorFormat::F32, TensorFormat::F16, TensorFormat::Bf16] {
        // A prompt, a decode step, and a chunk of a prompt after a cache (where the matrix
        // kernel splits its blocks' keys).
        let shapes = [
            shape(1, 80, 80, 4, 2, 64),
            shape(1, 1, 700, 4, 1, 128),
            shape(1, 40, 600, 4, 2, 64),
        ];
        for (i, s) in shapes.iter().enumerate() {
            let x = operands(&ctx, s, f, 200 + i as u64);
            let o = poisoned(&ctx, &[s.batch, s.sq, s.hq, s.d], f);
            let op = Attention::new().with_causal(true);
            ops.run(|l| ops.attention(l, &x.q, &x.k, &x.v, &o, &op))
                .unwrap();
            let tol = if f == TensorFormat::F32 { 1e-5 } else { 2e-2 };
            check(&o, s, &x, true, tol, &format!("ops {f:?} {s:?}"));
        }
    }
    assert_clean(&ctx);
}

/// [`AttentionShape::cm2_shared_bytes`] is what [`attention_cm2`] declares: the bytes the
/// runtime reads from each variant's module with the same constants (what it checks against
/// the device's limit before creating a pipeline).
#[test]
fn attention_cm2_shared_bytes_are_the_kernels() {
    use vkprism::{Kernel, SpecConstants};
    for variant in attention_cm2::Kernel::INFO.variants {
        for d in [64, 128, 256] {
            for keys in [32u32, 64, 128] {
                let spec = attention_cm2::SpecConstants {
                    causal: 1,
                    D: d as i32,
                    BR: 128,
                    BC: keys as i32,
                };
                let declared = vkprism::workgroup_bytes(variant.spirv, &spec.entries());
                let computed = shape(1, 100, 100, 4, 1, d).cm2_shared_bytes(128, keys);
                assert_eq!(
                    declared,
                    Some(u64::from(computed)),
                    "{} d {d} keys {keys}",
                    variant.key.name()
                );
            }
        }
    }
}

/// A long fp16 prompt through the operation layer: [`attention_cm2`] where the device has
/// workgroup-scope matrices, against the reference.
#[test]
fn attention_ops_takes_cm2_for_long_prompts() {
    let ctx = ctx();
    let ops = Ops::new(&ctx);
    let f = TensorFormat::F16;
    let s = shape(1, 1024, 1024, 2, 1, 64);
    let x = operands(&ctx, &s, f, 900);
    let o = poisoned(&ctx, &[s.batch, s.sq, s.hq, s.d], f);
    let op = Attention::new().with_causal(true);
    let mut list = CommandList::new(&ctx).unwrap();
    ops.attention(&mut list, &x.q, &x.k, &x.v, &o, &op).unwrap();
    let names = list.dispatch_names().to_vec();
    let workgroup_matrices = ctx.features().workgroup_matrices.iter().count() > 0;
    if workgroup_matrices {
        assert_eq!(names, ["attention_cm2"]);
    } else {
        assert!(!names.contains(&"attention_cm2"), "{names:?}");
    }
    list.submit_and_wait().unwrap();
    check(&o, &s, &x, true, 2e-2, &format!("ops {names:?} {s:?}"));
    assert_clean(&ctx);
}

#[test]
fn attention_ops_refuses_bad_operands() {
    let ctx = ctx();
    let ops = Ops::new(&ctx);
    let t = |shape: &[usize], f| poisoned(&ctx, shape, f);
    let f = TensorFormat::F32;
    let (q, k, v, o) = (
        t(&[4, 4, 8], f),
        t(&[6, 2, 8], f),
        t(&[6, 2, 8], f),
        t(&[4, 4, 8], f),
    );
    let op = Attention::new();
    let err = |q: &Tensor, k: &Tensor, v: &Tensor, o: &Tensor| {
        ops.run(|l| ops.attention(l, q, k, v, o, &op)).unwrap_err()
    };
    // Three key heads don't divide four query heads.
    let k3 = t(&[6, 3, 8], f);
    assert!(matches!(
        err(&q, &k3, &k3, &o),
        OpError::Shape { operand: "k", .. }
    ));
    // A head dimension that differs.
    let k9 = t(&[6, 2, 9], f);
    assert!(matches!(
        err(&q, &k9, &v, &o),
        OpError::Shape { operand: "k", .. }
    ));
    assert!(matches!(
        err(&q, &k, &k9, &o),
        OpError::Shape { operand: "v", .. }
    ));
    assert!(matches!(
        err(&q, &k, &v, &k),
        OpError::Shape { operand: "o", .. }
    ));
    assert!(matches!(
        err(&t(&[4, 32], f), &k, &v, &o),
        OpError::Shape { operand: "q", .. }
    ));
    let e = err(&q, &k, &v, &t(&[4, 4, 8], TensorFormat::F16));
    assert!(matches!(e, OpError::Format { operand: "o", .. }), "{e}");
    assert!(matches!(
        err(&q, &k, &v, &q),
        OpError::Aliased {
            output: "o",
            other: "q",
            ..
        }
    ));
    let big = |s: &[usize]| t(s, f);
    let e = err(
        &big(&[2, 1, 300]),
        &big(&[2, 1, 300]),
        &big(&[2, 1, 300]),
        &big(&[2, 1, 300]),
    );
    assert!(e.to_string().contains("head dimension 300"), "{e}");
    // The context is still usable.
    ops.run(|l| ops.attention(l, &q, &k, &v, &o, &op)).unwrap();
    assert_clean(&ctx);
}

/// [`Ops::attention_at`]: one recorded list replayed at several positions read from a buffer,
/// the keys those positions reach within a longer cache (rows past them random, never to be
/// read), each format, a decode step (one query) and three queries.
#[test]
fn attention_at_replays_at_positions_from_a_buffer() {
    let ctx = ctx();
    let ops = Ops::new(&ctx);
    // A short cache (one workgroup a row), and a long one whose keys the decode kernel splits
    // into shares (at the earlier positions the later shares see no key).
    for (rows, f) in [300, 2000]
        .into_iter()
        .flat_map(|r| [TensorFormat::F32, TensorFormat::F16, TensorFormat::Bf16].map(|f| (r, f)))
    {
        for (i, sq) in [1, 3].into_iter().enumerate() {
            let cache = shape(1, sq, rows, 4, 2, 64);
            let x = operands(&ctx, &cache, f, 300 + i as u64);
            let o = poisoned(&ctx, &[sq, 4, 64], f);
            let pos = Tensor::new(&ctx, &[1], TensorFormat::I32).unwrap();
            let q = x.q.view(0, &[sq, 4, 64]).unwrap();
            let (k, v) = (
                x.k.view(0, &[rows, 2, 64]).unwrap(),
                x.v.view(0, &[rows, 2, 64]).unwrap(),
            );
            let mut list = CommandList::new(&ctx).unwrap();
            let op = Attention::new().with_causal(true);
            ops.attention_at(&mut list, &q, &k, &v, &o, &op, &pos)
                .unwrap();
            for at in [0, 70, rows - sq] {
                ctx.run(|l| l.upload_bytes(&pos, &(at as i32).to_le_bytes()))
                    .unwrap();
                list.submit_and_wait().unwrap();
                // The same problem over the keys the queries reach: the queries are the last
                // sq of at + sq positions.
                let seen = shape(1, sq, at + sq, 4, 2, 64);
                let kv_len = (at + sq) * 2 * 64;
                let prefix = Operands {
                    q: x.q.clone(),
                    k: x.k.clone(),
                    v: x.v.clone(),
                    qv: x.qv.clone(),
                    kv: x.kv[..kv_len].to_vec(),
                    vv: x.vv[..kv_len].to_vec(),
                };
                let tol = if f == TensorFormat::F32 { 1e-5 } else { 2e-2 };
                check(
                    &o,
                    &seen,
                    &prefix,
                    true,
                    tol,
                    &format!("at {at} of {rows} {f:?} sq {sq}"),
                );
            }
        }
    }
    assert_clean(&ctx);
}

#[test]
fn attention_at_refuses_a_bad_position() {
    let ctx = ctx();
    let ops = Ops::new(&ctx);
    let f = TensorFormat::F32;
    let (q, k, o) = (
        poisoned(&ctx, &[1, 4, 8], f),
        poisoned(&ctx, &[6, 2, 8], f),
        poisoned(&ctx, &[1, 4, 8], f),
    );
    let op = Attention::new().with_causal(true);
    for (shape, format) in [(vec![2], TensorFormat::I32), (vec![1], TensorFormat::F32)] {
        let pos = Tensor::new(&ctx, &shape, format).unwrap();
        let e = refused(&ctx, |l| ops.attention_at(l, &q, &k, &k, &o, &op, &pos));
        assert!(
            matches!(
                e,
                OpError::Shape {
                    operand: "position",
                    ..
                } | OpError::Format {
                    operand: "position",
                    ..
                }
            ),
            "{e}"
        );
    }
    assert_clean(&ctx);
}
