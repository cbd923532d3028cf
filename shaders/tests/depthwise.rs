//! The operation layer's depthwise convolution (`Ops::conv2d_depthwise`) in every tensor format
//! the device runs, against the f64 reference on random non-zero data, outputs poisoned: 3×3 at
//! stride 1 and 2 (cells of several pixels), 5×5 (one pixel a cell), with and without a bias,
//! with an activation; and its checks, which record nothing. Every variant of the kernel itself
//! is `every_variant`'s.

use vkprism::{Tensor, TensorFormat};
use vkprism_shaders::{reference, Activation, Conv2dDwShape, DepthwiseConv2d, OpError, Ops};
use vkprism_testkit::{
    assert_clean, assert_close_scaled, ctx, expected_in, poisoned, quantize, random_in, refused,
    tolerance,
};

const FORMATS: [TensorFormat; 3] = [TensorFormat::F32, TensorFormat::F16, TensorFormat::Bf16];

/// The tolerance of the variant `ops` runs on `format`: for F16 that of fp16 arithmetic, which
/// the operation layer takes where the device has it (the depthwise kernel sums in it).
fn tolerance_of(format: TensorFormat) -> f32 {
    let name = match format {
        TensorFormat::F16 => "fp16sa",
        TensorFormat::Bf16 => "bf16s",
        _ => "fp32",
    };
    tolerance(&vkprism::VariantKey::parse(name).unwrap())
}

const fn shape(h: usize, w: usize, c: usize, k: usize, stride: usize, pad: usize) -> Conv2dDwShape {
    Conv2dDwShape {
        batch: 2,
        h,
        w,
        c,
        kh: k,
        kw: k,
        stride,
        pad,
    }
}

/// `op` through `Ops::conv2d_depthwise` in every format, against the reference (ReLU applied
/// to it where `op` asks, the only activation used here); `with_bias` binds a bias.
fn depthwise_case(ops: &Ops, op: DepthwiseConv2d, with_bias: bool, seed: u64) {
    let ctx = ops.context();
    let s = op.shape;
    let input = random_in(s.batch * s.h * s.w * s.c, seed, -1.0, 1.0);
    let weight = random_in(s.kh * s.kw * s.c, seed + 1, -1.0, 1.0);
    let bias = random_in(s.c, seed + 2, -1.0, 1.0);
    let out_shape = [s.batch, s.outh(), s.outw(), s.c];
    for f in FORMATS {
        let t = |shape: &[usize], v: &[f32]| Tensor::from_f32(ctx, shape, f, v).unwrap();
        let it = t(&[s.batch, s.h, s.w, s.c], &input);
        let wt = t(&[s.kh, s.kw, s.c], &weight);
        let bt = t(&[s.c], &bias);
        let ot = poisoned(ctx, &out_shape, f);
        let b = with_bias.then_some(&bt);
        match ops.run(|l| ops.conv2d_depthwise(l, &it, &wt, b, &ot, &op)) {
            Err(OpError::FormatUnsupported { .. }) => continue,
            r => r.unwrap(),
        }
        let q = |x: &[f32]| quantize(x, f);
        let zero = vec![0.0; s.c];
        let b = if with_bias { q(&bias) } else { zero };
        let (sum, scale) = reference::conv2d_dw_nhwc(s, &q(&input), &q(&weight), &b);
        let want = match op.activation {
            Activation::Relu => sum.iter().map(|v| v.max(0.0)).collect(),
            _ => sum,
        };
        let (want, scale) = expected_in(&want, &scale, f);
        let got = ot.download_f32().unwrap();
        let what = format!("{f:?} {s:?} bias {with_bias} {:?}", op.activation);
        assert_close_scaled(&got, &want, &scale, tolerance_of(f), &what);
    }
}

#[test]
fn conv2d_depthwise_every_format() {
    let ctx = ctx();
    let ops = Ops::new(&ctx);
    // 3×3 stride 1 over 7 × 9 (cells of 4 × 2 past both edges), 12 channels, with bias and
    // ReLU; stride 2 over 9 × 11, 8 channels, no bias; 5×5 stride 1 over 6 × 5, 4 channels.
    let relu = DepthwiseConv2d::new(shape(7, 9, 12, 3, 1, 1)).with_activation(Activation::Relu);
    depthwise_case(&ops, relu, true, 41);
    depthwise_case(
        &ops,
        DepthwiseConv2d::new(shape(9, 11, 8, 3, 2, 1)),
        false,
        45,
    );
    depthwise_case(
        &ops,
        DepthwiseConv2d::new(shape(6, 5, 4, 5, 1, 2)),
        true,
        49,
    );
    assert_clean(&ctx);
}

#[test]
fn conv2d_depthwise_bad_operands_are_errors_and_record_nothing() {
    let ctx = ctx();
    let ops = Ops::new(&ctx);
    let t = |shape: &[usize], f: TensorFormat| {
        let n = shape.iter().product();
        Tensor::from_f32(&ctx, shape, f, &vec![1.0; n]).unwrap()
    };
    let f32t = |shape: &[usize]| t(shape, TensorFormat::F32);
    let s = shape(6, 6, 8, 3, 1, 1);
    let op = DepthwiseConv2d::new(s);
    let (x, w, y) = (f32t(&[2, 6, 6, 8]), f32t(&[3, 3, 8]), f32t(&[2, 6, 6, 8]));
    let operand = |e: &OpError| match e {
        OpError::Shape { operand, .. } | OpError::Format { operand, .. } => *operand,
        _ => "",
    };
    // A weight of a dense convolution's layout, an output of the wrong size, a bias of the
    // wrong length: shape errors naming the operand.
    let e = refused(&ctx, |l| {
        ops.conv2d_depthwise(l, &x, &f32t(&[3, 3, 8, 8]), None, &y, &op)
    });
    assert_eq!(operand(&e), "weight", "{e}");
    let e = refused(&ctx, |l| {
        ops.conv2d_depthwise(l, &x, &w, None, &f32t(&[2, 3, 3, 8]), &op)
    });
    assert_eq!(operand(&e), "out", "{e}");
    let e = refused(&ctx, |l| {
        ops.conv2d_depthwise(l, &x, &w, Some(&f32t(&[4])), &y, &op)
    });
    assert_eq!(operand(&e), "bias", "{e}");
    // A weight in another format.
    let e = refused(&ctx, |l| {
        ops.conv2d_depthwise(l, &x, &t(&[3, 3, 8], TensorFormat::F16), None, &y, &op)
    });
    assert!(
        matches!(
            e,
            OpError::Format {
                op: "conv2d_depthwise",
                operand: "weight",
                ..
            }
        ),
        "{e}"
    );
    // Channels not a multiple of 4, a zero stride, a kernel larger than the padded input.
    let six = shape(6, 6, 6, 3, 1, 1);
    let e = refused(&ctx, |l| {
        let (x6, w6, y6) = (f32t(&[2, 6, 6, 6]), f32t(&[3, 3, 6]), f32t(&[2, 6, 6, 6]));
        ops.conv2d_depthwise(l, &x6, &w6, None, &y6, &DepthwiseConv2d::new(six))
    });
    assert!(matches!(e, OpError::Unsupported { .. }), "{e}");
    for bad in [
        Conv2dDwShape { stride: 0, ..s },
        Conv2dDwShape { kh: 9, kw: 9, ..s },
    ] {
        let e = refused(&ctx, |l| {
            ops.conv2d_depthwise(l, &x, &w, None, &y, &DepthwiseConv2d::new(bad))
        });
        assert!(matches!(e, OpError::Unsupported { .. }), "{bad:?}: {e}");
    }
    // The output written over the input.
    let e = refused(&ctx, |l| ops.conv2d_depthwise(l, &x, &w, None, &x, &op));
    assert!(
        matches!(
            e,
            OpError::Aliased {
                output: "out",
                other: "input",
                ..
            }
        ),
        "{e}"
    );
    // The context still runs the operation after the refusals.
    ops.run(|l| ops.conv2d_depthwise(l, &x, &w, None, &y, &op))
        .unwrap();
    let got = y.download_f32().unwrap();
    // All ones: an interior pixel sums its 9 taps, a corner 4.
    assert_eq!((got[(6 + 1) * 8], got[0]), (9.0, 4.0));
    assert_clean(&ctx);
}
