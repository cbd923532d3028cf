//! Every kernel of the library in every variant, on the real driver (lavapipe in CI) with the
//! validation layer on, against the CPU reference on random non-zero data, outputs poisoned.

use vkprism::{LoadOptions, Tensor};
use vkprism_shaders::{
    activation, binary_op, conv2d, conv2d_dw_nhwc, conv2d_nhwc, elementwise_grid, gemm, gemm_image,
    gemm_image_grid, gemm_int8, reference, Conv2dDwShape, Conv2dShape, GemmConfig,
};
use vkprism_testkit::{
    assert_clean, assert_close_scaled as check, ctx, load_unless_device_lacks_matrices, quantize,
    random_i8, random_in as random, tolerance,
};

#[test]
fn activations() {
    let ctx = ctx();
    let n = 4 * 513;
    let x = random(n, 1, 0.05, 5.0);
    for name in activation::VARIANT_NAMES {
        let k = ctx
            .load_with::<activation::Kernel>(&LoadOptions::variant_named(name).unwrap())
            .unwrap();
        let key = k.variant().key;
        let f = k.format_of("x_blob").unwrap();
        let xt = Tensor::from_f32(&ctx, &[n], f, &x).unwrap();
        // One invocation per vec4, half as many (elementwise_grid, an odd count of 513), and
        // 64: each invocation loops over vec4s a grid apart, two at a time.
        let grids = [[(n / 4) as u32, 1, 1], elementwise_grid(n / 4), [64, 1, 1]];
        for (op, grid) in (0..5).flat_map(|op| grids.map(|g| (op, g))) {
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
                    grid,
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
                &format!("{name} op {op} grid {grid:?}"),
            );
        }
    }
    assert_clean(&ctx);
}

#[test]
fn binary_ops() {
    let ctx = ctx();
    let n = 4 * 701;
    let a = random(n, 2, 0.1, 4.0);
    let b = random(n, 3, 0.5, 4.0);
    for name in binary_op::VARIANT_NAMES {
        let k = ctx
            .load_with::<binary_op::Kernel>(&LoadOptions::variant_named(name).unwrap())
            .unwrap();
        let key = k.variant().key;
        let f = k.format_of("a_blob").unwrap();
        let (at, bt) = (
            Tensor::from_f32(&ctx, &[n], f, &a).unwrap(),
            Tensor::from_f32(&ctx, &[n], f, &b).unwrap(),
        );
        // One invocation per vec4, half as many (an odd count: the last loop's second vec4 past
        // the end), and 64 looping over the rest.
        let grids = [[(n / 4) as u32, 1, 1], elementwise_grid(n / 4), [64, 1, 1]];
        for (op, grid) in (0..6).flat_map(|op| grids.map(|g| (op, g))) {
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
                    grid,
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
                &format!("{name} op {op} grid {grid:?}"),
            );
        }
    }
    assert_clean(&ctx);
}

/// One GEMM problem: shape, options, workgroup and step depth.
struct GemmCase {
    m: usize,
    n: usize,
    k: usize,
    o: reference::Gemm,
    bias: bool,
    local: [u32; 2],
    bk: i32,
    /// Cooperative-matrix variants: subgroups per workgroup, step depth (rounded up to 16 by the
    /// kernel) and `cm_tiles`; `vec8` follows from the shape.
    cm: (u32, i32, [u32; 3]),
}

impl GemmCase {
    fn config(&self, ctx: &vkprism::Context, coopmat: bool) -> GemmConfig {
        let subgroup_size = ctx.features().limits.subgroup_size;
        let (warps, cm_bk, cm_tiles) = self.cm;
        GemmConfig {
            local: if coopmat {
                [subgroup_size, warps]
            } else {
                self.local
            },
            bk: if coopmat { cm_bk } else { self.bk },
            coopmat,
            subgroup_size,
            cm_tiles,
            wide_loads: coopmat && [self.m, self.n, self.k].iter().all(|d| d.is_multiple_of(8)),
            split_k: 1,
        }
    }
}

fn run_gemm_case(ctx: &vkprism::Context, case: &GemmCase, seed: u64) {
    let GemmCase { m, n, k: kk, o, .. } = *case;
    let a = random(m * kk, seed, 0.1, 1.0);
    let b = random(kk * n, seed + 1, 0.1, 1.0);
    let bias = random(n, seed + 2, 0.1, 1.0);
    let a_shape = if o.transpose_a { [kk, m] } else { [m, kk] };
    let b_shape = if o.transpose_b { [n, kk] } else { [kk, n] };
    for name in gemm::VARIANT_NAMES {
        let Some(k) = load_unless_device_lacks_matrices::<gemm::Kernel>(ctx, name) else {
            continue;
        };
        let key = k.variant().key;
        let f = k.format_of("a_blob").unwrap();
        let at = Tensor::from_f32(ctx, &a_shape, f, &a).unwrap();
        let bt = Tensor::from_f32(ctx, &b_shape, f, &b).unwrap();
        let biast = Tensor::from_f32(ctx, &[n], f, &bias).unwrap();
        let ct = Tensor::from_f32(ctx, &[m, n], f, &vec![f32::NAN; m * n]).unwrap();
        let cfg = case.config(ctx, key.coopmat == Some(true));
        let spec = cfg.spec(gemm::SpecConstants {
            transpose_a: o.transpose_a as i32,
            transpose_b: o.transpose_b as i32,
            bias_term: case.bias as i32,
            activation: o.activation,
            ..Default::default()
        });
        let pipe = k.pipeline(&spec, Some(cfg.local_size())).unwrap();
        ctx.run(|l| {
            l.dispatch(
                &pipe,
                &gemm::BufferBindings {
                    a_blob: &at,
                    b_blob: &bt,
                    bias_blob: &biast,
                    c_blob: &ct,
                },
                &gemm::PushConstants {
                    M: m as i32,
                    N: n as i32,
                    K: kk as i32,
                    alpha: o.alpha,
                    slope: o.slope,
                    ..Default::default()
                },
                cfg.grid(m, n),
            )
        })
        .unwrap();
        let q = |x: &[f32]| quantize(x, f);
        let bias_q = q(&bias);
        let (want, scale) = reference::gemm_with(
            o,
            m,
            n,
            kk,
            &q(&a),
            &q(&b),
            case.bias.then_some(&bias_q[..]),
        );
        // The result is stored in the variant's precision: its rounding is relative to |C|.
        let scale: Vec<f32> = scale
            .iter()
            .zip(&want)
            .map(|(s, w)| s.max(w.abs()))
            .collect();
        check(
            &ct.download_f32().unwrap(),
            &q(&want),
            &scale,
            tolerance(&key),
            &format!("{name} {m}x{n}x{kk} {o:?} bias {}", case.bias),
        );
    }
}

#[test]
fn gemm_every_variant() {
    let ctx = ctx();
    assert_eq!(
        gemm::VARIANTS.len(),
        20,
        "7 precisions × local memory on/off, and fp16 and bf16 × local memory × cooperative matrices"
    );
    let plain = reference::Gemm {
        alpha: 1.0,
        ..Default::default()
    };
    let cases = [
        // Not multiples of the 128×128 tile nor of the 16-deep step: every edge. (With
        // cooperative matrices A and B are read as 16-byte octets, so each holds a multiple of
        // 8 elements; rows of 4 are read as straddling octets.)
        GemmCase {
            m: 66,
            n: 36,
            k: 44,
            o: plain,
            bias: false,
            local: [16, 16],
            bk: 16,
            cm: (4, 16, [4, 4, 2]),
        },
        // Two tiles across N, both operands transposed, bias, relu and alpha; with cooperative
        // matrices 16-byte loads (every size a multiple of 8), 8 subgroups of 64×32.
        GemmCase {
            m: 40,
            n: 136,
            k: 48,
            o: reference::Gemm {
                transpose_a: true,
                transpose_b: true,
                alpha: 0.5,
                activation: 1,
                slope: 0.0,
            },
            bias: true,
            // The small-grid workgroup of GemmConfig::for_gemm.
            local: [8, 8],
            bk: 16,
            cm: (8, 64, [4, 2, 4]),
        },
        // A smaller workgroup (64×32 tiles), an 8-deep step, one transpose, leaky relu.
        GemmCase {
            m: 70,
            n: 72,
            k: 52,
            o: reference::Gemm {
                transpose_b: true,
                alpha: 1.0,
                activation: 2,
                slope: 0.1,
                ..Default::default()
            },
            bias: true,
            local: [4, 8],
            bk: 8,
            cm: (4, 8, [2, 4, 2]),
        },
        // Multiples of 8 but not of the tile, no transposes: the 16-byte loads' edges.
        GemmCase {
            m: 72,
            n: 136,
            k: 56,
            o: plain,
            bias: false,
            local: [16, 16],
            bk: 16,
            cm: (4, 32, [4, 4, 2]),
        },
        // The table's tiles for a long K: 128×256 tiles of 8 subgroups and a 48-deep step, over
        // a K that is not a multiple of it and edges in M and N; A transposed, bias, sigmoid.
        GemmCase {
            m: 136,
            n: 264,
            k: 104,
            o: reference::Gemm {
                transpose_a: true,
                alpha: 0.25,
                activation: 3,
                ..Default::default()
            },
            bias: true,
            local: [16, 16],
            bk: 16,
            cm: (8, 48, [4, 4, 4]),
        },
    ];
    for (i, case) in cases.iter().enumerate() {
        run_gemm_case(&ctx, case, 4 + 10 * i as u64);
    }
    assert_clean(&ctx);
}

/// One image-GEMM problem: shape, options (no transposes), bias, workgroup.
struct ImageGemmCase {
    m: usize,
    n: usize,
    k: usize,
    o: reference::Gemm,
    bias: bool,
    local: [u32; 2],
}

fn run_gemm_image_case(ctx: &vkprism::Context, case: &ImageGemmCase, seed: u64) {
    let ImageGemmCase { m, n, k: kk, o, .. } = *case;
    let a = random(m * kk, seed, 0.1, 1.0);
    let b = random(kk * n, seed + 1, 0.1, 1.0);
    let bias = random(n, seed + 2, 0.1, 1.0);
    for name in gemm_image::VARIANT_NAMES {
        let k = ctx
            .load_with::<gemm_image::Kernel>(&LoadOptions::variant_named(name).unwrap())
            .unwrap();
        let key = k.variant().key;
        // The buffers' element format and the image's texel format (the same precision).
        let f = k.format_of("a_blob").unwrap();
        let texel = k.format_of("b_tex").unwrap();
        // Every fp16 variant really moves halves: packed or 16-bit buffers and rgba16f texels.
        let want_format = if key.float.is_fp16() {
            vkprism::TensorFormat::F16
        } else {
            vkprism::TensorFormat::F32
        };
        assert_eq!((f, texel), (want_format, want_format), "{name}");
        let at = Tensor::from_f32(ctx, &[m, kk], f, &a).unwrap();
        // Row-major K×N is exactly the image's texel order: x (4 columns a texel) fastest.
        let bt = vkprism::Image::new(ctx, 2, [(n / 4) as u32, kk as u32, 1], 4, texel).unwrap();
        bt.upload_f32(&b).unwrap();
        let biast = Tensor::from_f32(ctx, &[n], f, &bias).unwrap();
        let ct = Tensor::from_f32(ctx, &[m, n], f, &vec![f32::NAN; m * n]).unwrap();
        let spec = gemm_image::SpecConstants {
            bias_term: case.bias as i32,
            activation: o.activation,
        };
        let local = [case.local[0], case.local[1], 1];
        let pipe = k.pipeline(&spec, Some(local)).unwrap();
        ctx.run(|l| {
            l.dispatch(
                &pipe,
                &gemm_image::ImageBindings {
                    a_blob: &at,
                    b_tex: &bt,
                    bias_blob: &biast,
                    c_blob: &ct,
                },
                &gemm_image::PushConstants {
                    M: m as i32,
                    N: n as i32,
                    K: kk as i32,
                    alpha: o.alpha,
                    slope: o.slope,
                },
                gemm_image_grid(m, n),
            )
        })
        .unwrap();
        let (qa, qb, qbias) = (quantize(&a, f), quantize(&b, texel), quantize(&bias, f));
        let (want, scale) =
            reference::gemm_with(o, m, n, kk, &qa, &qb, case.bias.then_some(&qbias[..]));
        // The result is stored in the variant's precision: its rounding is relative to |C|.
        let scale: Vec<f32> = scale
            .iter()
            .zip(&want)
            .map(|(s, w)| s.max(w.abs()))
            .collect();
        check(
            &ct.download_f32().unwrap(),
            &quantize(&want, f),
            &scale,
            tolerance(&key),
            &format!("{name} {m}x{n}x{kk} {o:?} bias {}", case.bias),
        );
    }
}

#[test]
fn gemm_image_every_variant() {
    let ctx = ctx();
    assert_eq!(
        gemm_image::VARIANT_NAMES,
        [
            "fp32_image",
            "fp16p_image",
            "fp16pa_image",
            "fp16s_image",
            "fp16sa_image"
        ],
        "image-only, every float mode with an image format (no bf16)"
    );
    // Images are off by default, so only a load that allows them picks a variant.
    let refused = ctx
        .load::<gemm_image::Kernel>()
        .err()
        .expect("images are off");
    assert!(
        refused
            .to_string()
            .contains("options exclude image storage"),
        "{refused}"
    );
    let images = vkprism::Options::default().with_image_storage(true);
    let chosen = ctx
        .load_with::<gemm_image::Kernel>(&LoadOptions::options(images))
        .unwrap();
    assert_eq!(chosen.variant().key.memory, vkprism::MemoryKind::Image);
    let plain = reference::Gemm {
        alpha: 1.0,
        ..Default::default()
    };
    let cases = [
        // Neither M nor N a multiple of the 8×8 micro-tile (N = 36: a last half tile of one
        // texel), nor of the 64×64 workgroup tile.
        ImageGemmCase {
            m: 67,
            n: 36,
            k: 44,
            o: plain,
            bias: false,
            local: [8, 8],
        },
        // Bias, alpha and relu; a long K (many steps), a grid of several workgroups.
        ImageGemmCase {
            m: 13,
            n: 148,
            k: 260,
            o: reference::Gemm {
                alpha: 0.5,
                activation: 1,
                ..Default::default()
            },
            bias: true,
            local: [8, 8],
        },
        // Another workgroup shape, leaky relu, M below one micro-tile.
        ImageGemmCase {
            m: 5,
            n: 72,
            k: 52,
            o: reference::Gemm {
                alpha: 1.0,
                activation: 2,
                slope: 0.1,
                ..Default::default()
            },
            bias: true,
            local: [4, 16],
        },
        // Sigmoid over a multiple of every tile.
        ImageGemmCase {
            m: 128,
            n: 64,
            k: 32,
            o: reference::Gemm {
                alpha: 0.25,
                activation: 3,
                ..Default::default()
            },
            bias: true,
            local: [8, 8],
        },
        // GELU (erf form) and SiLU, activation.glsl's codes 4 and 5.
        ImageGemmCase {
            m: 20,
            n: 40,
            k: 36,
            o: reference::Gemm {
                alpha: 0.5,
                activation: 4,
                ..Default::default()
            },
            bias: true,
            local: [8, 8],
        },
        ImageGemmCase {
            m: 20,
            n: 40,
            k: 36,
            o: reference::Gemm {
                alpha: 0.5,
                activation: 5,
                ..Default::default()
            },
            bias: true,
            local: [8, 8],
        },
    ];
    for (i, case) in cases.iter().enumerate() {
        run_gemm_image_case(&ctx, case, 90 + 10 * i as u64);
    }
    assert_clean(&ctx);
}

#[test]
fn gemm_int8_every_variant() {
    let ctx = ctx();
    assert_eq!(
        gemm_int8::VARIANT_NAMES,
        [
            "fp32_int8p_nocm",
            "fp32_int8s_nocm",
            "fp32_int8a_nocm",
            "fp32_int8a_cm"
        ]
    );
    let subgroup = ctx.features().limits.subgroup_size;
    // Edges of every tile; K not a multiple of the step; N not a multiple of 16 (lines read a
    // word at a time with cooperative matrices), then every row a multiple of 16 (one aligned
    // load per line). A and B hold multiples of 16 elements, as `_cm` variants need.
    for (i, (m, n, k)) in [(37, 36, 48), (40, 144, 96), (130, 20, 176)]
        .into_iter()
        .enumerate()
    {
        let a = random_i8(m * k, 70 + i as u64);
        let b = random_i8(k * n, 80 + i as u64);
        let mut want = vec![0i32; m * n];
        for (r, row) in want.chunks_mut(n).enumerate() {
            for (l, &x) in a[r * k..(r + 1) * k].iter().enumerate() {
                for (c, out) in row.iter_mut().enumerate() {
                    *out += x as i32 * b[l * n + c] as i32;
                }
            }
        }
        for name in gemm_int8::VARIANT_NAMES {
            let Some(kernel) = load_unless_device_lacks_matrices::<gemm_int8::Kernel>(&ctx, name)
            else {
                continue;
            };
            let key = kernel.variant().key;
            let cfg = GemmConfig::for_gemm_int8(&key, subgroup, m, n, k);
            let at = Tensor::from_i8(&ctx, &[m, k], &a).unwrap();
            let bt = Tensor::from_i8(&ctx, &[k, n], &b).unwrap();
            let ct = Tensor::new(&ctx, &[m, n], vkprism::TensorFormat::I32).unwrap();
            ct.upload_i32(&vec![i32::MIN; m * n]).unwrap();
            let pipe = kernel
                .pipeline(&cfg.spec(Default::default()), Some(cfg.local_size()))
                .unwrap();
            let push = gemm_int8::PushConstants {
                M: m as i32,
                N: n as i32,
                K: k as i32,
            };
            let bindings = gemm_int8::BufferBindings {
                a_blob: &at,
                b_blob: &bt,
                c_blob: &ct,
            };
            ctx.run(|l| l.dispatch(&pipe, &bindings, &push, cfg.grid(m, n)))
                .unwrap();
            assert_eq!(
                ct.download_i32().unwrap(),
                want,
                "{name} {m}x{n}x{k} {cfg:?}"
            );
        }
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
            let k = ctx
                .load_with::<conv2d::Kernel>(&LoadOptions::variant_named(name).unwrap())
                .unwrap();
            let key = k.variant().key;
            let f = k.format_of("in_blob").unwrap();
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

/// One channels-last convolution in every variant of `conv2d_nhwc` against the f64 reference,
/// with the table's configuration, or in cooperative-matrix variants `cm` (subgroups, step
/// depth, `cm_tiles`) where given.
fn run_conv_nhwc_case(
    ctx: &vkprism::Context,
    s: Conv2dShape,
    bias_term: bool,
    seed: u64,
    cm: Option<(u32, i32, [u32; 3])>,
) {
    let (oh, ow) = (s.outh(), s.outw());
    let input = random(s.batch * s.h * s.w * s.c, seed, 0.1, 1.0);
    let weight = random(s.kh * s.kw * s.c * s.outc, seed + 1, 0.1, 1.0);
    let bias = random(s.outc, seed + 2, 0.1, 1.0);
    let (m, n, _) = s.gemm_mnk();
    for name in conv2d_nhwc::VARIANT_NAMES {
        let Some(k) = load_unless_device_lacks_matrices::<conv2d_nhwc::Kernel>(ctx, name) else {
            continue;
        };
        let key = k.variant().key;
        let f = k.format_of("in_blob").unwrap();
        let it = Tensor::from_f32(ctx, &[s.batch, s.h, s.w, s.c], f, &input).unwrap();
        let wt = Tensor::from_f32(ctx, &[s.kh, s.kw, s.c, s.outc], f, &weight).unwrap();
        let bt = Tensor::from_f32(ctx, &[s.outc], f, &bias).unwrap();
        let len = s.batch * oh * ow * s.outc;
        let ot =
            Tensor::from_f32(ctx, &[s.batch, oh, ow, s.outc], f, &vec![f32::NAN; len]).unwrap();
        let mut cfg = GemmConfig::for_conv(&key, ctx.features().limits.subgroup_size, &s);
        if let (true, Some((subgroups, bk, cm_tiles))) = (cfg.coopmat, cm) {
            cfg = GemmConfig {
                local: [cfg.subgroup_size, subgroups],
                bk,
                cm_tiles,
                ..cfg
            };
        }
        let spec = cfg.spec(conv2d_nhwc::SpecConstants {
            bias_term: bias_term as i32,
            ..Default::default()
        });
        let pipe = k.pipeline(&spec, Some(cfg.local_size())).unwrap();
        let bindings = conv2d_nhwc::BufferBindings {
            in_blob: &it,
            w_blob: &wt,
            bias_blob: &bt,
            out_blob: &ot,
        };
        ctx.run(|l| l.dispatch(&pipe, &bindings, &s.push(1.0, 0.0), cfg.grid(m, n)))
            .unwrap();
        let q = |x: &[f32]| quantize(x, f);
        let zero = vec![0.0; s.outc];
        let used_bias = if bias_term { q(&bias) } else { zero };
        let (want, scale) = reference::conv2d_nhwc(s, &q(&input), &q(&weight), &used_bias);
        let scale: Vec<f32> = scale
            .iter()
            .zip(&want)
            .map(|(s, w)| s.max(w.abs()))
            .collect();
        check(
            &ot.download_f32().unwrap(),
            &q(&want),
            &scale,
            tolerance(&key),
            &format!("{name} {s:?}"),
        );
    }
}

#[test]
fn conv2d_nhwc_every_variant() {
    let ctx = ctx();
    assert_eq!(conv2d_nhwc::VARIANTS.len(), 20);
    let shape = |batch, h, w, c, outc, k, stride, pad| Conv2dShape {
        batch,
        h,
        w,
        c,
        outc,
        kh: k,
        kw: k,
        stride,
        pad,
    };
    // 3×3 same padding over two images; 5×5 strided; 1×1 (a plain GEMM of the pixels).
    run_conv_nhwc_case(&ctx, shape(2, 7, 6, 8, 12, 3, 1, 1), true, 31, None);
    run_conv_nhwc_case(&ctx, shape(1, 9, 10, 4, 8, 5, 2, 2), true, 41, None);
    run_conv_nhwc_case(&ctx, shape(1, 6, 5, 12, 4, 1, 1, 0), false, 51, None);
    // Channels in multiples of 8: whole octets per tap (`vec8`) with cooperative matrices.
    run_conv_nhwc_case(&ctx, shape(1, 6, 7, 16, 8, 3, 1, 1), true, 61, None);
    // The table's tiles for large convolutions: 96×256 tiles of 12 subgroups (3 along M),
    // 48-deep steps (K of 216 is 4.5 of them), edges in M and N; and the 64×256 tiles of 8
    // subgroups and 64-deep steps they replaced.
    for (cm, seed) in [((12, 48, [2, 4, 4]), 71), ((8, 64, [2, 4, 4]), 81)] {
        run_conv_nhwc_case(
            &ctx,
            shape(1, 13, 11, 24, 40, 3, 1, 1),
            true,
            seed,
            Some(cm),
        );
    }
    assert_clean(&ctx);
}

/// One depthwise convolution in every variant of `conv2d_dw_nhwc` against the f64 reference,
/// with bias and `activation` (the kernel's numbering; leaky relu's slope 0.1).
fn run_conv_dw_case(ctx: &vkprism::Context, s: Conv2dDwShape, activation: i32, seed: u64) {
    let input = random(s.batch * s.h * s.w * s.c, seed, 0.1, 1.0);
    let weight = random(s.kh * s.kw * s.c, seed + 1, 0.1, 1.0);
    let bias = random(s.c, seed + 2, 0.1, 1.0);
    let out_shape = [s.batch, s.outh(), s.outw(), s.c];
    let len = s.pixels() * s.c;
    for name in conv2d_dw_nhwc::VARIANT_NAMES {
        let k = ctx
            .load_with::<conv2d_dw_nhwc::Kernel>(&LoadOptions::variant_named(name).unwrap())
            .unwrap();
        let key = k.variant().key;
        let f = k.format_of("in_blob").unwrap();
        let it = Tensor::from_f32(ctx, &[s.batch, s.h, s.w, s.c], f, &input).unwrap();
        let wt = Tensor::from_f32(ctx, &[s.kh, s.kw, s.c], f, &weight).unwrap();
        let bt = Tensor::from_f32(ctx, &[s.c], f, &bias).unwrap();
        let ot = Tensor::from_f32(ctx, &out_shape, f, &vec![f32::NAN; len]).unwrap();
        let spec = s.spec(true, activation);
        let pipe = k.pipeline(&spec, Some(s.local_size())).unwrap();
        let bindings = conv2d_dw_nhwc::BufferBindings {
            in_blob: &it,
            w_blob: &wt,
            bias_blob: &bt,
            out_blob: &ot,
        };
        ctx.run(|l| l.dispatch(&pipe, &bindings, &s.push(0.1), s.grid()))
            .unwrap();
        let q = |x: &[f32]| quantize(x, f);
        let (sum, scale) = reference::conv2d_dw_nhwc(s, &q(&input), &q(&weight), &q(&bias));
        // The activation after the f64 sum (`reference::activation` numbers them otherwise);
        // none of them grows the error.
        let want = match activation {
            0 => sum,
            1 => reference::activation(0, 0.0, &sum),
            2 => reference::activation(1, 0.1, &sum),
            3 => reference::activation(2, 0.0, &sum),
            4 => sum
                .iter()
                .map(|&v| reference::gelu(v as f64) as f32)
                .collect(),
            _ => sum
                .iter()
                .map(|&v| (v as f64 / (1.0 + (-v as f64).exp())) as f32)
                .collect(),
        };
        let scale: Vec<f32> = scale
            .iter()
            .zip(&want)
            .map(|(s, w)| s.max(w.abs()))
            .collect();
        check(
            &ot.download_f32().unwrap(),
            &q(&want),
            &scale,
            tolerance(&key),
            &format!("{name} {s:?} activation {activation}"),
        );
    }
}

#[test]
fn conv2d_dw_nhwc_every_variant() {
    let ctx = ctx();
    assert_eq!(
        conv2d_dw_nhwc::VARIANT_NAMES,
        ["fp32", "fp16p", "fp16pa", "fp16s", "fp16sa", "bf16p", "bf16s"]
    );
    let shape = |batch, h, w, c, k, stride, pad| Conv2dDwShape {
        batch,
        h,
        w,
        c,
        kh: k,
        kw: k,
        stride,
        pad,
    };
    // 3×3 kernels take cells of 4 × 2 output pixels at stride 1, 2 × 2 at stride 2; the rest
    // one pixel.
    assert_eq!(shape(1, 8, 8, 4, 3, 1, 1).cell(), [4, 2]);
    assert_eq!(shape(1, 8, 8, 4, 3, 2, 1).cell(), [2, 2]);
    assert_eq!(shape(1, 8, 8, 4, 3, 3, 1).cell(), [1, 1]);
    assert_eq!(shape(1, 8, 8, 4, 5, 1, 2).cell(), [1, 1]);
    // 3×3 same padding over two images, 12 channels (3 quads on a workgroup of 4, the cells
    // not a multiple of its 32; 7 rows, so the last cell of a column 1 row high; each row 2
    // cells of 4 pixels and one of 1); 5×5 strided with odd sizes; 3×3 strided, 68 channels (17
    // quads on a workgroup of 16: the x edge), relu.
    run_conv_dw_case(&ctx, shape(2, 7, 9, 12, 3, 1, 1), 0, 91);
    run_conv_dw_case(&ctx, shape(1, 11, 10, 8, 5, 2, 2), 2, 95);
    run_conv_dw_case(&ctx, shape(1, 6, 5, 68, 3, 2, 1), 1, 99);
    // 3×3 at stride 2 over cells of 2 × 2: 6 output columns (3 cells a row), 5 rows (the last
    // cell 1 row high).
    run_conv_dw_case(&ctx, shape(1, 9, 11, 8, 3, 2, 1), 0, 101);
    // 3×3 at stride 3: one pixel a cell.
    run_conv_dw_case(&ctx, shape(1, 10, 8, 4, 3, 3, 0), 0, 102);
    // A 3×5 kernel without padding (taps indexed by kw, not kh), sigmoid.
    let wide = Conv2dDwShape {
        kw: 5,
        ..shape(1, 6, 9, 16, 3, 1, 0)
    };
    run_conv_dw_case(&ctx, wide, 3, 103);
    // GELU and SiLU (unary_math.glsl, as the GEMM's epilogue).
    run_conv_dw_case(&ctx, shape(1, 5, 7, 12, 3, 1, 1), 4, 107);
    run_conv_dw_case(&ctx, shape(1, 5, 7, 12, 3, 1, 1), 5, 111);
    assert_clean(&ctx);
}
