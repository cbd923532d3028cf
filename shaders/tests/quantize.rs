//! Symmetric int8 quantization: [`quantize`], [`quantize_channels`], [`dequantize`],
//! [`dequantize_channels`] and [`dequantize_channels4`] in every variant (each float format, int8 packed and 8-bit
//! storage), and [`Ops::quantize`] / [`Ops::dequantize`] per tensor and per channel along each
//! axis in every format, against the f64 reference: quantized values exact (round half to
//! even) except where x / s lies within float rounding of a .5 boundary, dequantized values bit
//! for bit; outputs poisoned, odd lengths; and the checks.

mod movement_util;

use movement_util::{assert_bits, ones, output, FORMATS};
use vkprism::{Context, LoadOptions, Tensor, TensorFormat};
use vkprism_shaders::{
    dequantize, dequantize_channels, dequantize_channels4, flat_grid, quantize, quantize_channels,
    reference, OpError, Ops, QuantScale, MOVE_LOCAL,
};
use vkprism_testkit::{assert_clean, ctx, quantize as rounded, random_i8, random_in, refused};

const INT8_VARIANTS: [&str; 6] = [
    "fp32_int8p",
    "fp32_int8s",
    "fp16s_int8p",
    "fp16s_int8s",
    "bf16s_int8p",
    "bf16s_int8s",
];

/// `got` is the reference's quantization of `x` by `scales` (`inner` as
/// [`reference::quantize`] takes it): equal, or one apart where the quotient is within float
/// rounding of a .5 boundary (the GPU divides in fp32, the reference in f64).
fn assert_quantized(got: &[i8], x: &[f32], scales: &[f32], inner: usize, what: &str) {
    let want = reference::quantize(x, scales, inner);
    assert_eq!(got.len(), want.len(), "{what}: length");
    for i in 0..got.len() {
        let s = scales[(i / inner.max(1)) % scales.len()];
        let q = reference::quotient(x[i], s);
        let near_tie = ((q.abs().fract()) - 0.5).abs() <= 4.0 * f64::from(f32::EPSILON) * q.abs();
        let ok =
            got[i] == want[i] || (near_tie && (i16::from(got[i]) - i16::from(want[i])).abs() == 1);
        assert!(
            ok,
            "{what}: element {i}: got {}, want {} (x {} / s {s} = {q})",
            got[i], want[i], x[i]
        );
    }
}

/// One quantize or dequantize kernel variant `name` on `n` elements (a multiple of 4 for the
/// packed variants), one scale or `channels` per-channel scales with `inner` elements each.
fn variant_case(
    ctx: &Context,
    name: &str,
    dequant: bool,
    n: usize,
    channels: Option<(usize, usize)>,
) {
    let load = LoadOptions::variant_named(name).unwrap();
    let f = if name.starts_with("fp32") {
        TensorFormat::F32
    } else if name.starts_with("fp16") {
        TensorFormat::F16
    } else {
        TensorFormat::Bf16
    };
    let (axis, inner) = channels.unwrap_or((1, 1));
    let scales = match channels {
        Some(_) => random_in(axis, 7, 0.01, 0.05)
            .iter()
            .map(|s| s.abs())
            .collect(),
        None => vec![0.03],
    };
    let st = Tensor::from_f32(ctx, &[axis], TensorFormat::F32, &scales).unwrap();
    let push = quantize::PushConstants {
        n: n as i32,
        axis: axis as i32,
        inner: inner as i32,
        scale: scales[0],
    };
    let grid = flat_grid(n.div_ceil(4), MOVE_LOCAL);
    let what = format!("{name} dequant {dequant} n {n} channels {channels:?}");
    macro_rules! run {
        ($m:ident, $b:expr) => {{
            let k = ctx.load_with::<$m::Kernel>(&load).unwrap();
            let pipe = k.pipeline(&$m::SpecConstants {}, Some(MOVE_LOCAL)).unwrap();
            let push: $m::PushConstants = bytemuck::cast(push);
            ctx.run(|l| l.dispatch(&pipe, &$b, &push, grid)).unwrap();
        }};
    }
    if dequant {
        let q = random_i8(n, n as u64);
        let qt = Tensor::from_i8(ctx, &[n], &q).unwrap();
        let yt = output(ctx, &[n], f);
        match channels {
            None => run!(
                dequantize,
                dequantize::BufferBindings {
                    x_blob: &qt,
                    y_blob: &yt
                }
            ),
            Some(_) => run!(
                dequantize_channels,
                dequantize_channels::BufferBindings {
                    x_blob: &qt,
                    y_blob: &yt,
                    scale_blob: &st
                }
            ),
        }
        let want = rounded(&reference::dequantize(&q, &scales, inner), f);
        assert_bits(&yt.download_f32().unwrap(), &want, &what);
        // Quads sharing their channel: the wide kernel too.
        if channels.is_some() && n.is_multiple_of(4) && inner.is_multiple_of(4) {
            let yt = output(ctx, &[n], f);
            run!(
                dequantize_channels4,
                dequantize_channels4::BufferBindings {
                    x_blob: &qt,
                    y_blob: &yt,
                    scale_blob: &st
                }
            );
            assert_bits(&yt.download_f32().unwrap(), &want, &format!("{what} wide"));
        }
    } else {
        let x = rounded(&random_in(n, n as u64, 0.001, 4.0), f);
        let xt = Tensor::from_f32(ctx, &[n], f, &x).unwrap();
        let yt = Tensor::from_i8(ctx, &[n], &vec![i8::MIN; n]).unwrap();
        match channels {
            None => run!(
                quantize,
                quantize::BufferBindings {
                    x_blob: &xt,
                    y_blob: &yt
                }
            ),
            Some(_) => run!(
                quantize_channels,
                quantize_channels::BufferBindings {
                    x_blob: &xt,
                    y_blob: &yt,
                    scale_blob: &st
                }
            ),
        }
        assert_quantized(&yt.download_i8().unwrap(), &x, &scales, inner, &what);
    }
}

#[test]
fn int8_kernels_in_every_variant() {
    let ctx = ctx();
    for names in [
        quantize::VARIANT_NAMES,
        quantize_channels::VARIANT_NAMES,
        dequantize::VARIANT_NAMES,
        dequantize_channels::VARIANT_NAMES,
        dequantize_channels4::VARIANT_NAMES,
    ] {
        assert_eq!(names, INT8_VARIANTS);
    }
    for name in INT8_VARIANTS {
        let packed = name.ends_with("int8p");
        for dequant in [false, true] {
            // Packed int8 binds whole words: a multiple of 4 elements.
            for n in [4, 1000, 4 * 3001, 301, 1] {
                if packed && n % 4 != 0 {
                    continue;
                }
                variant_case(&ctx, name, dequant, n, None);
                if n % 4 == 0 {
                    variant_case(&ctx, name, dequant, n, Some((n / 4, 4)));
                    if n.is_multiple_of(8) {
                        variant_case(&ctx, name, dequant, n, Some((n / 8, 8)));
                    }
                    variant_case(&ctx, name, dequant, n, Some((4, 1)));
                } else {
                    variant_case(&ctx, name, dequant, n, Some((n, 1)));
                }
            }
        }
    }
    assert_clean(&ctx);
}

/// Exact ties with a power-of-two scale (the quotients are exact): half to even.
#[test]
fn quantize_rounds_half_to_even_and_saturates() {
    let ctx = ctx();
    let ops = Ops::new(&ctx);
    let x = [
        0.125, 0.375, 0.625, -0.125, -0.375, -0.625, 31.875, 100.0, -100.0, 0.0,
    ];
    let want = [0, 2, 2, 0, -2, -2, 127, 127, -127, 0];
    let xt = Tensor::from_f32(&ctx, &[x.len()], TensorFormat::F32, &x).unwrap();
    let yt = Tensor::from_i8(&ctx, &[x.len()], &[i8::MIN; 10]).unwrap();
    ops.run(|l| ops.quantize(l, &xt, QuantScale::PerTensor(0.25), &yt))
        .unwrap();
    assert_eq!(yt.download_i8().unwrap(), want);
    assert_clean(&ctx);
}

#[test]
fn quantize_and_dequantize_ops_every_format_and_axis() {
    let ctx = ctx();
    let ops = Ops::new(&ctx);
    // [3, 5, 7]: no inner length a multiple of 4; [6, 3, 8]: axes 0 and 1 take the wide
    // dequantization.
    for shape in [[3, 5, 7], [6, 3, 8]] {
        quantize_round_trip_every_format_and_axis(&ctx, &ops, shape);
    }
    assert_clean(&ctx);
}

/// [`quantize_and_dequantize_ops_every_format_and_axis`] on `shape`.
fn quantize_round_trip_every_format_and_axis(ctx: &Context, ops: &Ops, shape: [usize; 3]) {
    let ctx = ctx.clone();
    let n: usize = shape.iter().product();
    for format in FORMATS {
        let x = rounded(&random_in(n, 50, 0.001, 4.0), format);
        let xt = Tensor::from_f32(&ctx, &shape, format, &x).unwrap();
        let q = random_i8(n, 51);
        let qt = Tensor::from_i8(&ctx, &shape, &q).unwrap();
        for axis in [None, Some(0), Some(1), Some(2)] {
            let (scales, inner) = match axis {
                None => (vec![0.03], 1),
                Some(a) => (
                    random_in(shape[a], 52, 0.01, 0.05)
                        .iter()
                        .map(|s| s.abs())
                        .collect(),
                    shape[a + 1..].iter().product(),
                ),
            };
            let st = Tensor::from_f32(&ctx, &[scales.len()], TensorFormat::F32, &scales).unwrap();
            let scale = match axis {
                None => QuantScale::PerTensor(scales[0]),
                Some(axis) => QuantScale::PerChannel { scales: &st, axis },
            };
            let what = format!("{format:?} {shape:?} axis {axis:?}");
            let yq = Tensor::from_i8(&ctx, &shape, &vec![i8::MIN; n]).unwrap();
            ops.run(|l| ops.quantize(l, &xt, scale, &yq)).unwrap();
            assert_quantized(&yq.download_i8().unwrap(), &x, &scales, inner, &what);
            let yf = output(&ctx, &shape, format);
            ops.run(|l| ops.dequantize(l, &qt, scale, &yf)).unwrap();
            let want = rounded(&reference::dequantize(&q, &scales, inner), format);
            assert_bits(&yf.download_f32().unwrap(), &want, &what);
        }
    }
}

#[test]
fn int8_errors_record_nothing() {
    let ctx = ctx();
    let ops = Ops::new(&ctx);
    let x = ones(&ctx, &[4, 6], TensorFormat::F32);
    let q = Tensor::from_i8(&ctx, &[4, 6], &[1; 24]).unwrap();
    let one = QuantScale::PerTensor(0.5);
    let e = refused(ops.context(), |l| {
        ops.quantize(l, &x, one, &ones(&ctx, &[4, 6], TensorFormat::F32))
    });
    assert!(
        matches!(
            e,
            OpError::Format {
                op: "quantize",
                operand: "y",
                ..
            }
        ),
        "{e}"
    );
    let e = refused(ops.context(), |l| ops.quantize(l, &q, one, &q));
    assert!(matches!(e, OpError::Format { operand: "x", .. }), "{e}");
    let q2 = Tensor::from_i8(&ctx, &[6, 4], &[1; 24]).unwrap();
    let e = refused(ops.context(), |l| ops.quantize(l, &x, one, &q2));
    assert!(matches!(e, OpError::Shape { operand: "y", .. }), "{e}");
    let e = refused(ops.context(), |l| {
        ops.dequantize(l, &q, one, &ones(&ctx, &[6, 4], TensorFormat::F32))
    });
    assert!(
        matches!(
            e,
            OpError::Shape {
                op: "dequantize",
                operand: "x",
                ..
            }
        ),
        "{e}"
    );
    let e = refused(ops.context(), |l| ops.dequantize(l, &x, one, &x));
    assert!(matches!(e, OpError::Format { operand: "x", .. }), "{e}");
    // Per-channel: the axis, the scales' length and format.
    let s6 = ones(&ctx, &[6], TensorFormat::F32);
    let e = refused(ops.context(), |l| {
        ops.quantize(
            l,
            &x,
            QuantScale::PerChannel {
                scales: &s6,
                axis: 2,
            },
            &q,
        )
    });
    assert!(matches!(e, OpError::Unsupported { .. }), "{e}");
    let e = refused(ops.context(), |l| {
        ops.quantize(
            l,
            &x,
            QuantScale::PerChannel {
                scales: &s6,
                axis: 0,
            },
            &q,
        )
    });
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
    let h6 = ones(&ctx, &[6], TensorFormat::F16);
    let e = refused(ops.context(), |l| {
        ops.dequantize(
            l,
            &q,
            QuantScale::PerChannel {
                scales: &h6,
                axis: 1,
            },
            &x,
        )
    });
    assert!(
        matches!(
            e,
            OpError::Format {
                operand: "scales",
                ..
            }
        ),
        "{e}"
    );
    assert_clean(&ctx);
}
