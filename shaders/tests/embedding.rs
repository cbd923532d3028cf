//! [`Ops::embedding`] (and the [`embedding`] kernel in every variant): rows gathered by id,
//! bit-exact, out-of-range ids giving rows of zeros, outputs poisoned, odd sizes, the grid
//! capped at 65,535 workgroups; and the checks.

mod movement_util;

use movement_util::{assert_bits, input, ones, output, FORMATS};
use vkprism::{LoadOptions, Tensor, TensorFormat};
use vkprism_shaders::{embedding, flat_grid, reference, OpError, Ops};
use vkprism_testkit::{assert_clean, ctx, refused};

/// Ids into a table of `vocab` rows, with ids past either end every 5th.
fn ids(n: usize, vocab: usize) -> Vec<i32> {
    let bad = [-1, vocab as i32, i32::MAX, i32::MIN, vocab as i32 + 7];
    (0..n)
        .map(|i| {
            if i % 5 == 3 {
                bad[i / 5 % bad.len()]
            } else {
                ((i * 7919) % vocab) as i32
            }
        })
        .collect()
}

#[test]
fn embedding_every_format() {
    let ctx = ctx();
    let ops = Ops::new(&ctx);
    assert_eq!(embedding::VARIANT_NAMES, ["fp32", "fp16s", "bf16s"]);
    for format in FORMATS {
        for (vocab, dim, n) in [(37, 13, 29), (1, 1, 7), (1000, 65, 300), (5, 3, 1)] {
            let (table, tt) = input(&ctx, &[vocab, dim], format, (vocab + dim) as u64);
            let id = ids(n, vocab);
            let it = Tensor::from_i32(&ctx, &[n], &id).unwrap();
            let yt = output(&ctx, &[n, dim], format);
            ops.run(|l| ops.embedding(l, &tt, &it, &yt)).unwrap();
            let want = reference::embedding(&table, dim, &id);
            let what = format!("embedding {format:?} vocab {vocab} dim {dim} n {n}");
            assert_bits(&yt.download_f32().unwrap(), &want, &what);
        }
    }
    assert_clean(&ctx);
}

/// 1,200,000 outputs with 16 invocations per workgroup: the grid capped at 65,535 workgroups.
#[test]
fn embedding_kernel_past_the_workgroup_limit() {
    let ctx = ctx();
    let (vocab, dim, n) = (50, 24, 50_000);
    let local = [16, 1, 1];
    assert_eq!(flat_grid(n * dim, local), [65535 * 16, 1, 1]);
    let k = ctx
        .load_with::<embedding::Kernel>(&LoadOptions::variant_named("fp32").unwrap())
        .unwrap();
    let (table, tt) = input(&ctx, &[vocab, dim], TensorFormat::F32, 3);
    let id = ids(n, vocab);
    let it = Tensor::from_i32(&ctx, &[n], &id).unwrap();
    let yt = output(&ctx, &[n, dim], TensorFormat::F32);
    let pipe = k
        .pipeline(&embedding::SpecConstants {}, Some(local))
        .unwrap();
    let push = embedding::PushConstants {
        total: (n * dim) as i32,
        dim: dim as i32,
        vocab: vocab as i32,
    };
    let bindings = embedding::BufferBindings {
        table_blob: &tt,
        ids_blob: &it,
        y_blob: &yt,
    };
    ctx.run(|l| l.dispatch(&pipe, &bindings, &push, flat_grid(n * dim, local)))
        .unwrap();
    let want = reference::embedding(&table, dim, &id);
    assert_bits(&yt.download_f32().unwrap(), &want, "embedding, capped grid");
    assert_clean(&ctx);
}

#[test]
fn embedding_errors_record_nothing() {
    let ctx = ctx();
    let ops = Ops::new(&ctx);
    let f32t = |shape: &[usize]| ones(&ctx, shape, TensorFormat::F32);
    let table = f32t(&[4, 4]);
    let id = Tensor::from_i32(&ctx, &[4], &[0, 1, 2, 3]).unwrap();
    let y = f32t(&[4, 4]);
    let e = refused(ops.context(), |l| ops.embedding(l, &f32t(&[16]), &id, &y));
    assert!(
        matches!(
            e,
            OpError::Shape {
                op: "embedding",
                operand: "table",
                ..
            }
        ),
        "{e}"
    );
    let e = refused(ops.context(), |l| ops.embedding(l, &table, &f32t(&[4]), &y));
    assert!(matches!(e, OpError::Format { operand: "ids", .. }), "{e}");
    let id2 = Tensor::from_i32(&ctx, &[2, 2], &[0, 1, 2, 3]).unwrap();
    let e = refused(ops.context(), |l| ops.embedding(l, &table, &id2, &y));
    assert!(matches!(e, OpError::Shape { operand: "ids", .. }), "{e}");
    let e = refused(ops.context(), |l| {
        ops.embedding(l, &table, &id, &f32t(&[4, 5]))
    });
    assert!(matches!(e, OpError::Shape { operand: "y", .. }), "{e}");
    let e = refused(ops.context(), |l| {
        ops.embedding(l, &table, &id, &ones(&ctx, &[4, 4], TensorFormat::F16))
    });
    assert!(matches!(e, OpError::Format { operand: "y", .. }), "{e}");
    let ints = Tensor::from_i32(&ctx, &[4, 4], &[0; 16]).unwrap();
    let e = refused(ops.context(), |l| ops.embedding(l, &ints, &id, &y));
    assert!(
        matches!(
            e,
            OpError::Format {
                operand: "table",
                ..
            }
        ),
        "{e}"
    );
    let e = refused(ops.context(), |l| ops.embedding(l, &table, &id, &table));
    assert!(
        matches!(
            e,
            OpError::Aliased {
                output: "y",
                other: "table",
                ..
            }
        ),
        "{e}"
    );
    assert_clean(&ctx);
}
