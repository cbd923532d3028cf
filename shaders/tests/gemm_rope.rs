//! `Ops::gemm_rope_qkv` (a prompt's fused query/key/value projection rotated and placed into q
//! and the KV cache) against the product computed in f64, rounded to the format and rotated in
//! f64: on `gemm_cm2_rope` where the device has workgroup-scope matrices (one dispatch,
//! checked), on `Ops::gemm` and `Ops::rope_qkv` elsewhere (lavapipe in CI) and for what the
//! fused pass does not take; random non-zero data, outputs and cache poisoned, the rows outside
//! the step's positions checked untouched; the validation layer on. Bad operands refused.

use vkprism::{CommandList, Context, Tensor, TensorFormat};
use vkprism_shaders::reference::LLAMA3_EVERY_BAND;
use vkprism_shaders::{reference, OpError, Ops, Rope, RopeScaling, RopeStyle, CM2_MIN_PRODUCT};
use vkprism_testkit::{
    assert_clean, assert_close_scaled, ctx, device_lacks_cooperative_matrix2, poisoned, quantize,
    random_in, refused,
};

/// One case: `tokens` at positions `offset ..` over an x of depth `k`, `hq` / `hkv` heads of
/// `dim`, a cache of `rows`, the pairs' `style`, the frequencies' `scaling`, a `bias` added to
/// the projection or not.
#[derive(Copy, Clone, Debug)]
struct Case {
    tokens: usize,
    k: usize,
    hq: usize,
    hkv: usize,
    dim: usize,
    rows: usize,
    offset: usize,
    style: RopeStyle,
    scaling: RopeScaling,
    bias: bool,
}

impl Case {
    fn width(&self) -> usize {
        (self.hq + 2 * self.hkv) * self.dim
    }
}

/// x · wᵀ (+ bias) in f64, rounded to `f`: the projection as the GEMM stores it.
fn projection(c: &Case, x: &[f32], w: &[f32], bias: Option<&[f32]>, f: TensorFormat) -> Vec<f32> {
    let (n, k) = (c.width(), c.k);
    let out: Vec<f32> = (0..c.tokens * n)
        .map(|i| {
            let (r, col) = (i / n, i % n);
            let dot: f64 = (0..k)
                .map(|j| x[r * k + j] as f64 * w[col * k + j] as f64)
                .sum();
            (dot + bias.map_or(0.0, |b| b[col] as f64)) as f32
        })
        .collect();
    quantize(&out, f)
}

/// Each token's `take` values from column `from` of the projection.
fn columns(c: &Case, qkv: &[f32], from: usize, take: usize) -> Vec<f32> {
    qkv.chunks(c.width())
        .flat_map(|row| row[from..from + take].to_vec())
        .collect()
}

/// Runs `Ops::gemm_rope_qkv` on case `c` in `f` and checks q and the cache; returns the
/// list's dispatch names.
fn run_case(ctx: &Context, ops: &Ops, c: Case, f: TensorFormat, seed: u64) -> Vec<&'static str> {
    let x = quantize(&random_in(c.tokens * c.k, seed, -1.0, 1.0), f);
    let w = quantize(&random_in(c.width() * c.k, seed + 1, -1.0, 1.0), f);
    let bias = quantize(&random_in(c.width(), seed + 2, -1.0, 1.0), f);
    let xt = Tensor::from_f32(ctx, &[c.tokens, c.k], f, &x).unwrap();
    let wt = Tensor::from_f32(ctx, &[c.width(), c.k], f, &w).unwrap();
    let bt = Tensor::from_f32(ctx, &[c.width()], f, &bias).unwrap();
    let qt = poisoned(ctx, &[c.tokens, c.hq, c.dim], f);
    let kc = poisoned(ctx, &[c.rows, c.hkv, c.dim], f);
    let vc = poisoned(ctx, &[c.rows, c.hkv, c.dim], f);
    let rope = Rope::new()
        .with_style(c.style)
        .with_position_offset(c.offset)
        .with_scaling(c.scaling);
    let mut list = CommandList::new(ctx).unwrap();
    let with_bias = c.bias.then_some(&bt);
    ops.gemm_rope_qkv(&mut list, &xt, (&wt, with_bias), &qt, &kc, &vc, &rope)
        .unwrap();
    let names = list.dispatch_names().to_vec();
    list.submit_and_wait().unwrap();

    let qkv = projection(&c, &x, &w, c.bias.then_some(&bias[..]), f);
    let (qw, kw) = (c.hq * c.dim, c.hkv * c.dim);
    let interleaved = c.style == RopeStyle::Interleaved;
    let freqs = rope.frequencies();
    let turned = |v: &[f32], heads| {
        let (want, scale) =
            reference::rope(c.tokens, heads, c.dim, c.offset, &freqs, interleaved, v);
        (quantize(&want, f), scale)
    };
    // A projection value may round to the neighbouring one of the format (fp32 sums against
    // f64), then the turned value rounds again: about two units in the last place, plus the
    // angle's fp32 error, which grows with the position.
    let ulps = match f {
        TensorFormat::F32 => 1e-4,
        TensorFormat::Bf16 => 2.5e-2,
        _ => 4e-3,
    };
    let tol = ulps + (c.offset + c.tokens) as f32 * 5e-7;
    let what = format!("gemm_rope_qkv {f:?} {c:?}");
    let (want_q, q_scale) = turned(&columns(&c, &qkv, 0, qw), c.hq);
    let got_q = qt.download_f32().unwrap();
    assert_close_scaled(&got_q, &want_q, &q_scale, tol, &format!("{what}: q"));
    let (want_k, k_scale) = turned(&columns(&c, &qkv, qw, kw), c.hkv);
    let want_v = columns(&c, &qkv, qw + kw, kw);
    let (got_k, got_v) = (kc.download_f32().unwrap(), vc.download_f32().unwrap());
    for r in 0..c.rows {
        let (gk, gv) = (&got_k[r * kw..][..kw], &got_v[r * kw..][..kw]);
        if (c.offset..c.offset + c.tokens).contains(&r) {
            let t = (r - c.offset) * kw;
            let w = format!("{what}: cache row {r}");
            assert_close_scaled(gk, &want_k[t..][..kw], &k_scale[t..][..kw], tol, &w);
            let v_scale: Vec<f32> = want_v[t..][..kw].iter().map(|v| v.abs()).collect();
            assert_close_scaled(
                gv,
                &want_v[t..][..kw],
                &v_scale,
                tol,
                &format!("{w}: values"),
            );
        } else {
            let untouched = gk.iter().chain(gv).all(|v| v.is_nan());
            assert!(untouched, "{what}: cache row {r} was written");
        }
    }
    names
}

/// Where the device has workgroup-scope matrices, products past `CM2_MIN_PRODUCT` take the
/// fused pass in fp16 and bf16: a decoder's 512-token prompt (TinyLlama's heads) and a prompt of
/// 300 tokens (a short first row of tiles) with heads of 128 at a later position. Everywhere:
/// small problems, F32 and the half-and-half pairs on the two-pass path.
#[test]
fn gemm_rope_qkv_matches_the_gemm_then_the_rotation() {
    let ctx = ctx();
    let ops = Ops::new(&ctx);
    let case = |tokens, k, (hq, hkv, dim), rows, offset, style| Case {
        tokens,
        k,
        hq,
        hkv,
        dim,
        rows,
        offset,
        style,
        scaling: RopeScaling::None,
        bias: false,
    };
    let scaled = |c: Case| Case {
        scaling: LLAMA3_EVERY_BAND,
        ..c
    };
    let biased = |c: Case| Case { bias: true, ..c };
    let il = RopeStyle::Interleaved;
    if !device_lacks_cooperative_matrix2(&ctx) {
        let prompt = case(512, 2048, (32, 4, 64), 600, 0, il);
        let later = case(300, 1024, (16, 4, 128), 420, 77, il);
        for c in [prompt, later, scaled(later), biased(prompt)] {
            assert!(c.tokens * c.width() * c.k >= CM2_MIN_PRODUCT);
            for (i, f) in [TensorFormat::F16, TensorFormat::Bf16]
                .into_iter()
                .enumerate()
            {
                let names = run_case(&ctx, &ops, c, f, 3 + i as u64);
                assert_eq!(names, ["gemm_cm2_rope"], "{f:?} {c:?}");
            }
        }
    }
    let small = case(5, 24, (4, 2, 16), 12, 3, il);
    for (i, f) in [TensorFormat::F32, TensorFormat::F16]
        .into_iter()
        .enumerate()
    {
        for c in [small, scaled(small), biased(small)] {
            let names = run_case(&ctx, &ops, c, f, 11 + i as u64);
            assert!(names.contains(&"rope_qkv4"), "{f:?}: {names:?}");
        }
    }
    let half = case(7, 40, (3, 1, 8), 7, 0, RopeStyle::Half);
    let names = run_case(&ctx, &ops, half, TensorFormat::F16, 21);
    assert!(names.contains(&"rope_qkv4"), "{names:?}");
    assert_clean(&ctx);
}

#[test]
fn gemm_rope_qkv_bad_operands_are_errors_and_record_nothing() {
    let ctx = ctx();
    let ops = Ops::new(&ctx);
    let f = TensorFormat::F16;
    let t = |shape: &[usize]| Tensor::new(&ctx, shape, f).unwrap();
    let (x, w, q) = (t(&[4, 16]), t(&[32, 16]), t(&[4, 2, 8]));
    let (kc, vc) = (t(&[6, 1, 8]), t(&[6, 1, 8]));
    let at = |offset| Rope::new().with_position_offset(offset);
    let run = |w: &Tensor, q: &Tensor, kc: &Tensor, rope: Rope| {
        refused(&ctx, |l| {
            ops.gemm_rope_qkv(l, &x, (w, None), q, kc, &vc, &rope)
        })
    };
    let e = run(&t(&[24, 16]), &q, &kc, at(0));
    assert!(matches!(e, OpError::Shape { operand: "w", .. }), "{e}");
    // q's head_dim against the cache's.
    let e = run(&w, &t(&[4, 2, 4]), &kc, at(0));
    assert!(
        matches!(
            e,
            OpError::Shape {
                operand: "k_cache",
                ..
            }
        ),
        "{e}"
    );
    let e = run(&w, &t(&[4, 8]), &kc, at(0));
    assert!(matches!(e, OpError::Shape { operand: "q", .. }), "{e}");
    // x's tokens against q's.
    let e = refused(&ctx, |l| {
        ops.gemm_rope_qkv(l, &t(&[3, 16]), (&w, None), &q, &kc, &vc, &at(0))
    });
    assert!(matches!(e, OpError::Shape { operand: "x", .. }), "{e}");
    let e = run(&w, &q, &t(&[6, 2, 8]), at(0));
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
    let e = run(&w, &q, &kc, at(3));
    let past =
        matches!(e, OpError::Unsupported { op: "gemm_rope_qkv", ref why } if why.contains("past"));
    assert!(past, "{e}");
    let e = run(&w, &q, &x, at(0));
    assert!(
        matches!(
            e,
            OpError::Shape {
                operand: "k_cache",
                ..
            }
        ),
        "{e}"
    );
    let e = refused(&ctx, |l| {
        ops.gemm_rope_qkv(l, &x, (&w, None), &q, &kc, &kc, &at(0))
    });
    assert!(matches!(e, OpError::Aliased { .. }), "{e}");
    // A bias of another length than w's rows.
    let e = refused(&ctx, |l| {
        ops.gemm_rope_qkv(l, &x, (&w, Some(&t(&[16]))), &q, &kc, &vc, &at(0))
    });
    assert!(
        matches!(
            e,
            OpError::Shape {
                operand: "bias",
                ..
            }
        ),
        "{e}"
    );
    // The context stays usable.
    let mut list = CommandList::new(&ctx).unwrap();
    ops.gemm_rope_qkv(&mut list, &x, (&w, None), &q, &kc, &vc, &at(2))
        .unwrap();
    list.submit_and_wait().unwrap();
    assert_clean(&ctx);
}
