//! The gated unit over interleaved pairs ([`glu`]) in every variant, each activation the
//! decoders use, against an f64 reference on random non-zero data, outputs poisoned, lengths
//! that fill no workgroup and a grid smaller than the outputs; [`Ops::glu`] and its checks.

use vkprism::{Context, LoadOptions, Tensor, TensorFormat};
use vkprism_shaders::{glu, Activation, OpError, Ops};
use vkprism_testkit::{
    assert_clean, assert_close_scaled, ctx, expected_in, poisoned, quantize, random_in, refused,
    tolerance,
};

/// act(gate) · up and its error scale, in f64.
fn reference(code: i32, x: &[f32]) -> (Vec<f32>, Vec<f32>) {
    x.chunks(2)
        .map(|p| {
            let (g, u) = (p[0] as f64, p[1] as f64);
            let a = match code {
                0 => g,
                1 => g.max(0.0),
                5 => g / (1.0 + (-g).exp()),
                _ => unreachable!("the cases use no activation {code}"),
            };
            ((a * u) as f32, ((g.abs() + 1.0) * u.abs()) as f32)
        })
        .unzip()
}

fn run_case(ctx: &Context, name: &str, outputs: usize, code: i32, grid: Option<u32>, seed: u64) {
    let k = ctx
        .load_with::<glu::Kernel>(&LoadOptions::variant_named(name).unwrap())
        .unwrap();
    let f = k.format_of("x_blob").unwrap();
    let x = quantize(&random_in(2 * outputs, seed, 0.1, 4.0), f);
    let xt = Tensor::from_f32(ctx, &[outputs, 2], f, &x).unwrap();
    let yt = poisoned(ctx, &[outputs], f);
    let spec = glu::SpecConstants { activation: code };
    let pipe = k.pipeline(&spec, Some([256, 1, 1])).unwrap();
    let b = glu::BufferBindings {
        x_blob: &xt,
        y_blob: &yt,
    };
    let push = glu::PushConstants {
        n: outputs as i32,
        slope: 0.0,
    };
    let invocations = grid.unwrap_or(outputs as u32);
    ctx.run(|l| l.dispatch(&pipe, &b, &push, [invocations, 1, 1]))
        .unwrap();
    let (want, scale) = reference(code, &x);
    let (want, scale) = expected_in(&want, &scale, f);
    assert_close_scaled(
        &yt.download_f32().unwrap(),
        &want,
        &scale,
        tolerance(&k.variant().key),
        &format!("glu {name} {outputs} outputs activation {code} grid {grid:?}"),
    );
}

#[test]
fn glu_every_variant() {
    let ctx = ctx();
    assert_eq!(glu::VARIANT_NAMES, ["fp32", "fp16s", "fp16sa", "bf16s"]);
    for name in glu::VARIANT_NAMES {
        for (i, (outputs, code, grid)) in [
            (1, 5, None),
            (300, 5, None),
            (1000, 1, Some(256)),
            (77, 0, None),
        ]
        .into_iter()
        .enumerate()
        {
            run_case(&ctx, name, outputs, code, grid, i as u64);
        }
    }
    assert_clean(&ctx);
}

#[test]
fn glu_ops_and_its_checks() {
    let ctx = ctx();
    let ops = Ops::new(&ctx);
    for f in [TensorFormat::F32, TensorFormat::F16, TensorFormat::Bf16] {
        let x = quantize(&random_in(3 * 2 * 40, 7, 0.1, 4.0), f);
        let xt = Tensor::from_f32(&ctx, &[3, 80], f, &x).unwrap();
        let yt = poisoned(&ctx, &[3, 40], f);
        ops.run(|l| ops.glu(l, &xt, &yt, Activation::Silu)).unwrap();
        let (want, scale) = reference(5, &x);
        let (want, scale) = expected_in(&want, &scale, f);
        let tol = if f == TensorFormat::F32 { 1e-5 } else { 1e-2 };
        let got = yt.download_f32().unwrap();
        assert_close_scaled(&got, &want, &scale, tol, &format!("Ops::glu {f:?}"));
    }
    let t = |shape: &[usize]| Tensor::new(&ctx, shape, TensorFormat::F32).unwrap();
    let e = refused(&ctx, |l| {
        ops.glu(l, &t(&[3, 5]), &t(&[3, 2]), Activation::Silu)
    });
    assert!(matches!(e, OpError::Shape { operand: "x", .. }), "{e}");
    let e = refused(&ctx, |l| {
        ops.glu(l, &t(&[3, 8]), &t(&[3, 8]), Activation::Silu)
    });
    assert!(matches!(e, OpError::Shape { operand: "y", .. }), "{e}");
    let x = t(&[4]);
    let e = refused(&ctx, |l| {
        ops.glu(l, &x, &x.view(0, &[2]).unwrap(), Activation::Silu)
    });
    assert!(matches!(e, OpError::Aliased { .. }), "{e}");
    assert_clean(&ctx);
}
