//! Every kernel of the library in every variant, on the real driver (lavapipe in CI) with the
//! validation layer on, against the CPU reference on random non-zero data, outputs poisoned.

use vkprism::Tensor;
use vkprism_shaders::{activation, binary_op, conv2d, gemm, reference};
use vkprism_testkit::{
    assert_clean, assert_close_scaled as check, ctx, quantize, random_in as random, tolerance,
};

#[test]
fn activations() {
    let ctx = ctx();
    let n = 4 * 513;
    let x = random(n, 1, 0.05, 5.0);
    for name in activation::VARIANT_NAMES {
        let k = ctx.load_variant::<activation::Kernel>(name).unwrap();
        let key = k.variant().key;
        let f = k.variant().bindings[0].format;
        let xt = Tensor::from_f32(&ctx, &[n], f, &x).unwrap();
        for op in 0..5 {
            let yt = Tensor::from_f32(&ctx, &[n], f, &vec![f32::NAN; n]).unwrap();
            // Specialized: n baked in for op 0, read from the push constant otherwise (psc).
            let spec = activation::SpecConstants {
                op,
                n: if op == 0 { (n / 4) as i32 } else { 0 },
            };
            let pipe = k.pipeline(&spec, None).unwrap();
            ctx.run(|l| {
                l.dispatch(
                    &pipe,
                    &activation::BufferBindings {
                        x_blob: &xt,
                        y_blob: &yt,
                    },
                    &activation::PushConstants {
                        n: (n / 4) as i32,
                        alpha: 0.1,
                    },
                    [(n / 4) as u32, 1, 1],
                )
            })
            .unwrap();
            let want = quantize(&reference::activation(op, 0.1, &quantize(&x, f)), f);
            let ones = vec![1.0; n];
            check(
                &yt.download_f32().unwrap(),
                &want,
                &ones,
                tolerance(&key),
                &format!("{name} op {op}"),
            );
        }
    }
    assert_clean(&ctx);
}

#[test]
fn binary_ops() {
    let ctx = ctx();
    let n = 4 * 700;
    let a = random(n, 2, 0.1, 4.0);
    let b = random(n, 3, 0.5, 4.0);
    for name in binary_op::VARIANT_NAMES {
        let k = ctx.load_variant::<binary_op::Kernel>(name).unwrap();
        let key = k.variant().key;
        let f = k.variant().bindings[0].format;
        let (at, bt) = (
            Tensor::from_f32(&ctx, &[n], f, &a).unwrap(),
            Tensor::from_f32(&ctx, &[n], f, &b).unwrap(),
        );
        for op in 0..6 {
            let ot = Tensor::from_f32(&ctx, &[n], f, &vec![f32::NAN; n]).unwrap();
            let pipe = k
                .pipeline(&binary_op::SpecConstants { op }, Some([128, 1, 1]))
                .unwrap();
            ctx.run(|l| {
                l.dispatch(
                    &pipe,
                    &binary_op::BufferBindings {
                        a_blob: &at,
                        b_blob: &bt,
                        out_blob: &ot,
                    },
                    &binary_op::PushConstants { n: (n / 4) as i32 },
                    [(n / 4) as u32, 1, 1],
                )
            })
            .unwrap();
            let want = reference::binary_op(op, &quantize(&a, f), &quantize(&b, f));
            let scale: Vec<f32> = want.iter().map(|v| v.abs()).collect();
            check(
                &ot.download_f32().unwrap(),
                &want,
                &scale,
                tolerance(&key),
                &format!("{name} op {op}"),
            );
        }
    }
    assert_clean(&ctx);
}

#[test]
fn gemm_every_variant() {
    let ctx = ctx();
    // Not multiples of the 16×16 tile, to exercise the edges.
    let (m, n, kk) = (37, 45, 70);
    let a = random(m * kk, 4, 0.1, 1.0);
    let b = random(kk * n, 5, 0.1, 1.0);
    assert_eq!(
        gemm::VARIANTS.len(),
        14,
        "7 precisions × local memory on/off"
    );
    for name in gemm::VARIANT_NAMES {
        let k = ctx.load_variant::<gemm::Kernel>(name).unwrap();
        let key = k.variant().key;
        let f = k.variant().bindings[0].format;
        let at = Tensor::from_f32(&ctx, &[m, kk], f, &a).unwrap();
        let bt = Tensor::from_f32(&ctx, &[kk, n], f, &b).unwrap();
        let ct = Tensor::from_f32(&ctx, &[m, n], f, &vec![f32::NAN; m * n]).unwrap();
        let pipe = k.pipeline(&Default::default(), None).unwrap();
        ctx.run(|l| {
            l.dispatch(
                &pipe,
                &gemm::BufferBindings {
                    a_blob: &at,
                    b_blob: &bt,
                    c_blob: &ct,
                },
                &gemm::PushConstants {
                    M: m as i32,
                    N: n as i32,
                    K: kk as i32,
                },
                [n as u32, m as u32, 1],
            )
        })
        .unwrap();
        let (want, scale) = reference::gemm(m, n, kk, &quantize(&a, f), &quantize(&b, f));
        check(
            &ct.download_f32().unwrap(),
            &want,
            &scale,
            tolerance(&key),
            name,
        );
    }
    assert_clean(&ctx);
}

#[test]
fn conv2d_every_variant() {
    let ctx = ctx();
    for (shape, ksize) in [
        (
            reference::Conv2d {
                c: 3,
                h: 11,
                w: 13,
                outc: 5,
                k: 3,
                stride: 1,
                pad: 1,
            },
            3,
        ),
        (
            reference::Conv2d {
                c: 4,
                h: 9,
                w: 10,
                outc: 3,
                k: 5,
                stride: 2,
                pad: 2,
            },
            5,
        ),
    ] {
        let input = random(shape.c * shape.h * shape.w, 21, 0.1, 1.0);
        let weight = random(shape.outc * shape.c * shape.k * shape.k, 22, 0.1, 1.0);
        let bias = random(shape.outc, 23, 0.1, 1.0);
        let (oh, ow) = (shape.out_h(), shape.out_w());
        for name in conv2d::VARIANT_NAMES {
            let k = ctx.load_variant::<conv2d::Kernel>(name).unwrap();
            let key = k.variant().key;
            let f = k.variant().bindings[0].format;
            let it = Tensor::from_f32(&ctx, &[shape.c, shape.h, shape.w], f, &input).unwrap();
            let wt = Tensor::from_f32(&ctx, &[shape.outc, shape.c, shape.k, shape.k], f, &weight)
                .unwrap();
            let bt = Tensor::from_f32(&ctx, &[shape.outc], f, &bias).unwrap();
            let ot = Tensor::from_f32(
                &ctx,
                &[shape.outc, oh, ow],
                f,
                &vec![f32::NAN; shape.outc * oh * ow],
            )
            .unwrap();
            let pipe = k.pipeline(&conv2d::SpecConstants { ksize }, None).unwrap();
            let push = conv2d::PushConstants {
                c: shape.c as i32,
                h: shape.h as i32,
                w: shape.w as i32,
                outc: shape.outc as i32,
                outh: oh as i32,
                outw: ow as i32,
                stride: shape.stride as i32,
                pad: shape.pad as i32,
            };
            ctx.run(|l| {
                l.dispatch(
                    &pipe,
                    &conv2d::BufferBindings {
                        in_blob: &it,
                        w_blob: &wt,
                        b_blob: &bt,
                        out_blob: &ot,
                    },
                    &push,
                    [ow as u32, oh as u32, shape.outc as u32],
                )
            })
            .unwrap();
            let (want, scale) = reference::conv2d(
                shape,
                &quantize(&input, f),
                &quantize(&weight, f),
                &quantize(&bias, f),
            );
            check(
                &ot.download_f32().unwrap(),
                &want,
                &scale,
                tolerance(&key),
                &format!("{name} k{}", shape.k),
            );
        }
    }
    assert_clean(&ctx);
}
