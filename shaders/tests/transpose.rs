//! Permute and transpose: the strided copy ([`strided_copy`]) and the tiled transpose
//! ([`transpose_tiled`]) in every variant, bit-exact against the reference on odd shapes with
//! outputs poisoned, element counts past 65,535 workgroups, and [`Ops::permute`] /
//! [`Ops::transpose`] with their checks.

mod movement_util;

use movement_util::{assert_bits, input, ones, output, FORMATS};
use vkprism::{Context, LoadOptions, Tensor, TensorFormat};
use vkprism_shaders::{
    contiguous_strides, reference, strided_copy, transpose_grid, transpose_tiled, CopyShape,
    OpError, Ops, MOVE_LOCAL,
};
use vkprism_testkit::{assert_clean, ctx, refused};

/// The copy that permutes x of `shape` by `perm` into a contiguous y.
fn permute_copy(shape: &[usize], perm: &[usize]) -> CopyShape {
    let strides = contiguous_strides(shape);
    let out: Vec<usize> = perm.iter().map(|&p| shape[p]).collect();
    CopyShape {
        dst_stride: contiguous_strides(&out),
        dims: out,
        src_stride: perm.iter().map(|&p| strides[p]).collect(),
        src_off: 0,
        dst_off: 0,
    }
}

/// Runs `perm` of `shape` through variant `name` of the strided copy with workgroup `local`.
fn strided_case(ctx: &Context, name: &str, shape: &[usize], perm: &[usize], local: [u32; 3]) {
    let k = ctx
        .load_with::<strided_copy::Kernel>(&LoadOptions::variant_named(name).unwrap())
        .unwrap();
    let f = k.format_of("x_blob").unwrap();
    // Flat tensors: the kernel takes up to 6 dimensions, tensors hold up to 4.
    let n = shape.iter().product::<usize>();
    let (x, xt) = input(ctx, &[n], f, shape.iter().sum::<usize>() as u64);
    let (want, _) = reference::permute(&x, shape, perm);
    let yt = output(ctx, &[n], f);
    let copy = permute_copy(shape, perm).collapsed();
    let pipe = k
        .pipeline(&strided_copy::SpecConstants {}, Some(local))
        .unwrap();
    let bindings = strided_copy::BufferBindings {
        x_blob: &xt,
        y_blob: &yt,
    };
    ctx.run(|l| l.dispatch(&pipe, &bindings, &copy.push(), copy.grid(local)))
        .unwrap();
    let what = format!("{name} {shape:?} perm {perm:?} local {local:?}");
    assert_bits(&yt.download_f32().unwrap(), &want, &what);
}

#[test]
fn strided_copy_permutes_in_every_variant() {
    let ctx = ctx();
    assert_eq!(strided_copy::VARIANT_NAMES, ["fp32", "fp16s", "bf16s"]);
    let cases: &[(&[usize], &[usize])] = &[
        (&[3, 5, 7], &[2, 0, 1]),
        (&[2, 3, 5, 7, 3, 2], &[5, 3, 1, 0, 2, 4]),
        (&[1, 9, 1, 13], &[3, 1, 0, 2]),
        (&[6, 7, 11, 3], &[0, 2, 1, 3]),
        (&[257], &[0]),
        (&[13, 1, 17], &[1, 2, 0]),
    ];
    for name in strided_copy::VARIANT_NAMES {
        for (shape, perm) in cases {
            strided_case(&ctx, name, shape, perm, MOVE_LOCAL);
            strided_case(&ctx, name, shape, perm, [7, 1, 1]);
        }
    }
    assert_clean(&ctx);
}

/// 1,260,771 elements with 16 invocations per workgroup: 78,799 workgroups' worth, so the grid
/// is capped at 65,535 and the kernel's loop covers the rest.
#[test]
fn strided_copy_past_the_workgroup_limit() {
    let ctx = ctx();
    let (shape, perm) = ([3, 419, 1003], [2, 0, 1]);
    let local = [16, 1, 1];
    let copy = permute_copy(&shape, &perm);
    assert!(copy.elements().div_ceil(16) > 65535);
    assert_eq!(copy.grid(local), [65535 * 16, 1, 1]);
    strided_case(&ctx, "fp32", &shape, &perm, local);
    strided_case(&ctx, "fp16s", &shape, &perm, local);
    assert_clean(&ctx);
}

/// Runs the tiled transpose of x `[batch, rows, cols]` in variant `name` with `local`.
fn tiled_case(ctx: &Context, name: &str, dims: [usize; 3], local: [u32; 3]) {
    let k = ctx
        .load_with::<transpose_tiled::Kernel>(&LoadOptions::variant_named(name).unwrap())
        .unwrap();
    let f = k.format_of("x_blob").unwrap();
    let [batch, rows, cols] = dims;
    let (x, xt) = input(ctx, &dims, f, (rows * 7 + cols) as u64);
    let (want, out) = reference::permute(&x, &dims, &[0, 2, 1]);
    let yt = output(ctx, &out, f);
    let pipe = k
        .pipeline(&transpose_tiled::SpecConstants {}, Some(local))
        .unwrap();
    let push = transpose_tiled::PushConstants {
        batch: batch as i32,
        rows: rows as i32,
        cols: cols as i32,
    };
    let bindings = transpose_tiled::BufferBindings {
        x_blob: &xt,
        y_blob: &yt,
    };
    let grid = transpose_grid(batch, rows, cols, local);
    ctx.run(|l| l.dispatch(&pipe, &bindings, &push, grid))
        .unwrap();
    let what = format!("{name} {dims:?} local {local:?}");
    assert_bits(&yt.download_f32().unwrap(), &want, &what);
}

#[test]
fn tiled_transpose_in_every_variant() {
    let ctx = ctx();
    assert_eq!(transpose_tiled::VARIANT_NAMES, ["fp32", "fp16s", "bf16s"]);
    for name in transpose_tiled::VARIANT_NAMES {
        for dims in [
            [3, 37, 45],
            [1, 1, 33],
            [2, 64, 64],
            [5, 33, 1],
            [1, 97, 130],
        ] {
            for local in [[32, 8, 1], [16, 16, 1], [7, 3, 1]] {
                tiled_case(&ctx, name, dims, local);
            }
        }
    }
    assert_clean(&ctx);
}

/// 70,000 batches of one tile each: z capped at 65,535 workgroups, the loop covers the rest.
#[test]
fn tiled_transpose_past_the_workgroup_limit() {
    let ctx = ctx();
    assert_eq!(transpose_grid(70000, 2, 3, [4, 1, 1]), [4, 1, 65535]);
    tiled_case(&ctx, "fp32", [70000, 2, 3], [4, 1, 1]);
    assert_clean(&ctx);
}

#[test]
fn permute_and_transpose_ops_every_format() {
    let ctx = ctx();
    let ops = Ops::new(&ctx);
    let cases: &[(&[usize], &[usize])] = &[
        // The tiled path (a swap of the last two merged dimensions) ...
        (&[3, 37, 45], &[0, 2, 1]),
        (&[2, 3, 5, 7], &[0, 1, 3, 2]),
        (&[6, 5, 7], &[1, 0, 2]), // merged: [6, 35] ...
        (&[45, 37], &[1, 0]),
        // ... and the strided copy.
        (&[2, 3, 5, 7], &[3, 1, 0, 2]),
        (&[4, 5, 6], &[2, 1, 0]),
    ];
    for format in FORMATS {
        for (i, (shape, perm)) in cases.iter().enumerate() {
            let (x, xt) = input(&ctx, shape, format, 100 + i as u64);
            let (want, out) = reference::permute(&x, shape, perm);
            let yt = output(&ctx, &out, format);
            ops.run(|l| ops.permute(l, &xt, perm, &yt)).unwrap();
            let what = format!("permute {format:?} {shape:?} {perm:?}");
            assert_bits(&yt.download_f32().unwrap(), &want, &what);
        }
        let shape = [3, 4, 33, 17];
        let (x, xt) = input(&ctx, &shape, format, 200);
        let (want, out) = reference::permute(&x, &shape, &[0, 1, 3, 2]);
        let yt = output(&ctx, &out, format);
        ops.run(|l| ops.transpose(l, &xt, &yt)).unwrap();
        assert_bits(
            &yt.download_f32().unwrap(),
            &want,
            &format!("transpose {format:?}"),
        );
    }
    assert_clean(&ctx);
}

#[test]
fn the_copy_plan_merges_and_finds_transposes() {
    let c = permute_copy(&[6, 5, 7], &[1, 0, 2]);
    assert_eq!(
        c.as_transpose(),
        None,
        "the inner 7 stays contiguous: no plain transpose"
    );
    let c = permute_copy(&[2, 3, 5, 7], &[0, 1, 3, 2]);
    assert_eq!(c.as_transpose(), Some([6, 5, 7]));
    assert_eq!(c.collapsed().dims, vec![6, 7, 5]);
    let c = permute_copy(&[1, 9, 1, 13], &[3, 1, 0, 2]);
    assert_eq!(c.as_transpose(), Some([1, 9, 13]));
    let c = permute_copy(&[4, 5, 6], &[0, 1, 2]).collapsed();
    assert_eq!(
        (c.dims, c.src_stride, c.dst_stride),
        (vec![120], vec![1], vec![1])
    );
}

#[test]
fn permute_errors_record_nothing() {
    let ctx = ctx();
    let ops = Ops::new(&ctx);
    let f32t = |shape: &[usize]| ones(&ctx, shape, TensorFormat::F32);
    let x = f32t(&[2, 3, 4]);
    for perm in [&[0, 1][..], &[0, 1, 1], &[0, 1, 3], &[2, 1, 0, 3]] {
        let e = refused(ops.context(), |l| {
            ops.permute(l, &x, perm, &f32t(&[4, 3, 2]))
        });
        assert!(
            matches!(e, OpError::Unsupported { op: "permute", .. }),
            "{perm:?}: {e}"
        );
    }
    let e = refused(ops.context(), |l| {
        ops.permute(l, &x, &[2, 1, 0], &f32t(&[2, 3, 4]))
    });
    assert!(matches!(e, OpError::Shape { operand: "y", .. }), "{e}");
    let e = refused(ops.context(), |l| {
        ops.permute(
            l,
            &x,
            &[2, 1, 0],
            &ones(&ctx, &[4, 3, 2], TensorFormat::F16),
        )
    });
    assert!(matches!(e, OpError::Format { operand: "y", .. }), "{e}");
    let cube = f32t(&[3, 3, 3]);
    let e = refused(ops.context(), |l| ops.permute(l, &cube, &[2, 1, 0], &cube));
    assert!(
        matches!(
            e,
            OpError::Aliased {
                output: "y",
                other: "x",
                ..
            }
        ),
        "{e}"
    );
    let ints = Tensor::from_i32(&ctx, &[2, 2], &[1, 2, 3, 4]).unwrap();
    let e = refused(ops.context(), |l| ops.transpose(l, &ints, &f32t(&[2, 2])));
    assert!(matches!(e, OpError::Format { operand: "x", .. }), "{e}");
    let e = refused(ops.context(), |l| {
        ops.transpose(l, &f32t(&[5]), &f32t(&[5]))
    });
    assert!(
        matches!(
            e,
            OpError::Shape {
                op: "transpose",
                operand: "x",
                ..
            }
        ),
        "{e}"
    );
    let e = refused(ops.context(), |l| ops.transpose(l, &x, &f32t(&[2, 3, 4])));
    assert!(matches!(e, OpError::Shape { operand: "y", .. }), "{e}");
    assert_clean(&ctx);
}
