//! Kernels compiled by `compute_shader!`, run in every variant on the real driver with the
//! validation layer on, against a CPU reference on random non-zero data, outputs poisoned first.

use vkprism::{
    CommandList, Context, FloatMode, Image, LoadOptions, MemoryKind, Tensor, TensorFormat,
};
use vkprism_testkit::*;

vkprism::compute_shader! {
    /// y = x * scale + bias, four elements per invocation, n from psc.
    pub mod axpb,
    src: r#"
#version 450
layout (constant_id = 0) const int n = 0;
layout (binding = 0) readonly buffer x_blob { sfpvec4 x_data[]; };
layout (binding = 1) writeonly buffer y_blob { sfpvec4 y_data[]; };
layout (push_constant) uniform parameter { int n; float scale; float bias; } p;
void main() {
    const int i = int(gl_GlobalInvocationID.x);
    if (i >= psc(n)) return;
    afpvec4 v = buffer_ld4(x_data, i);
    buffer_st4(y_data, i, v * afp(p.scale) + afp(p.bias));
}
"#,
}

vkprism::compute_shader! {
    /// Scalar and 8-wide storage, pack/unpack copies, shared memory: out[i] = 2 * in[i] via
    /// every path, summed.
    pub mod mixed,
    src: r#"
#version 450
layout (local_size_x = 64) in;
layout (binding = 0) readonly buffer a_blob { sfp a[]; };
layout (binding = 1) readonly buffer b_blob { sfpvec8 b[]; };
layout (binding = 2) writeonly buffer c_blob { sfpvec4 c[]; };
layout (binding = 3) writeonly buffer d_blob { sfp d[]; };
layout (push_constant) uniform parameter { int n8; } p;
shared lfp tmp[64];
void main() {
    const int i = int(gl_GlobalInvocationID.x);
    const int l = int(gl_LocalInvocationID.x);
    tmp[l] = sfp2lfp(a[min(i, p.n8 * 8 - 1)]);
    barrier();
    if (i >= p.n8) return;
    // c[2i], c[2i+1] = 8-wide b[i] * 2 (ld8 / st via two ld4-sized halves)
    afpvec8 v = buffer_ld8(b, i);
    buffer_st4(c, i * 2, v[0] * afp(2));
    buffer_st4(c, i * 2 + 1, v[1] * afp(2));
    // d[8i..8i+8] = a[8i..8i+8] + the shared copy of a[i] - a[i] (exercises lfp paths)
    afp s = lfp2afp(tmp[l]) - buffer_ld1(a, i);
    for (int k = 0; k < 8; k++) {
        buffer_st1(d, i * 8 + k, buffer_ld1(a, i * 8 + k) + s);
    }
}
"#,
}

fn run_axpb(
    ctx: &Context,
    variant: &str,
    x: &[f32],
) -> Result<(Vec<f32>, vkprism::VariantKey), vkprism::Error> {
    let k = ctx.load_with::<axpb::Kernel>(&LoadOptions::variant_named(variant).unwrap())?;
    let key = k.variant().key;
    let fmt = k.format_of("x_blob")?;
    let n = x.len();
    let xt = Tensor::from_f32(ctx, &[n], fmt, x)?;
    let yt = Tensor::from_f32(ctx, &[n], fmt, &vec![f32::NAN; n])?;
    let pipe = k.pipeline(&axpb::SpecConstants::default(), None)?;
    let mut list = CommandList::new(ctx)?;
    list.dispatch(
        &pipe,
        &axpb::BufferBindings {
            x_blob: &xt,
            y_blob: &yt,
        },
        &axpb::PushConstants {
            n: (n / 4) as i32,
            scale: 1.5,
            bias: -0.25,
        },
        [(n / 4) as u32, 1, 1],
    )?;
    list.submit_and_wait()?;
    Ok((yt.download_f32()?, key))
}

#[test]
fn axpb_every_variant_matches_cpu() {
    let ctx = ctx();
    let n = 4 * 1000;
    let x = random(n, 1);
    let mut ran = Vec::new();
    for name in axpb::VARIANT_NAMES {
        let (y, key) = run_axpb(&ctx, name, &x).unwrap_or_else(|e| panic!("{name}: {e}"));
        let fmt = key.float.storage_format();
        let want: Vec<f32> = quantize(&x, fmt).iter().map(|v| v * 1.5 - 0.25).collect();
        assert_close(&y, &want, tolerance(&key), name);
        ran.push(*name);
    }
    // lavapipe runs every variant of this kernel (no bf16 type needed: bf16s is 16-bit storage).
    assert_eq!(ran.len(), 7);
    assert_clean(&ctx);
}

#[test]
fn mixed_functions_every_variant_match_cpu() {
    let ctx = ctx();
    let n8 = 200;
    let a = random(n8 * 8, 2);
    let b = random(n8 * 8, 3);
    for name in mixed::VARIANT_NAMES {
        let k = ctx
            .load_with::<mixed::Kernel>(&LoadOptions::variant_named(name).unwrap())
            .unwrap();
        let key = k.variant().key;
        let f = |name: &str| k.format_of(name).unwrap();
        let at = Tensor::from_f32(&ctx, &[n8 * 8], f("a_blob"), &a).unwrap();
        let bt = Tensor::from_f32(&ctx, &[n8 * 8], f("b_blob"), &b).unwrap();
        let ct = Tensor::from_f32(&ctx, &[n8 * 8], f("c_blob"), &vec![f32::NAN; n8 * 8]).unwrap();
        let dt = Tensor::from_f32(&ctx, &[n8 * 8], f("d_blob"), &vec![f32::NAN; n8 * 8]).unwrap();
        let pipe = k.pipeline(&Default::default(), None).unwrap();
        ctx.run(|l| {
            l.dispatch(
                &pipe,
                &mixed::BufferBindings {
                    a_blob: &at,
                    b_blob: &bt,
                    c_blob: &ct,
                    d_blob: &dt,
                },
                &mixed::PushConstants { n8: n8 as i32 },
                [n8 as u32, 1, 1],
            )
        })
        .unwrap();
        let tol = tolerance(&key);
        let bq = quantize(&b, f("b_blob"));
        assert_close(
            &ct.download_f32().unwrap(),
            &bq.iter().map(|v| v * 2.0).collect::<Vec<_>>(),
            tol,
            &format!("{name} c"),
        );
        let aq = quantize(&a, f("a_blob"));
        assert_close(&dt.download_f32().unwrap(), &aq, tol, &format!("{name} d"));
    }
    assert_clean(&ctx);
}

vkprism::compute_shader! {
    /// Image and buffer variants of y = 2x on a 3D grid of vec4.
    pub mod double,
    src: r#"
#version 450
#if NCNN_image_shader
layout (binding = 0) uniform unfp sampler3D bottom_blob;
layout (binding = 1, imfmtc4) writeonly uniform unfp image3D top_blob;
#else
layout (binding = 0) readonly buffer bottom_blob { sfpvec4 bottom_blob_data[]; };
layout (binding = 1) writeonly buffer top_blob { sfpvec4 top_blob_data[]; };
#endif
layout (push_constant) uniform parameter { int w; int h; int c; } p;
layout (local_size_x = 4, local_size_y = 4, local_size_z = 4) in;
void main() {
    ivec3 g = ivec3(gl_GlobalInvocationID);
    if (g.x >= p.w || g.y >= p.h || g.z >= p.c) return;
#if NCNN_image_shader
    image3d_st4(top_blob, g, image3d_ld4(bottom_blob, g) * afp(2));
#else
    int i = (g.z * p.h + g.y) * p.w + g.x;
    buffer_st4(top_blob_data, i, buffer_ld4(bottom_blob_data, i) * afp(2));
#endif
}
"#,
}

#[test]
fn image_and_buffer_variants_match_cpu() {
    let ctx = ctx();
    let (w, h, c) = (7usize, 5usize, 3usize);
    let x = random(w * h * c * 4, 4);
    assert_eq!(double::VARIANTS.len(), 12);
    for name in double::VARIANT_NAMES {
        let k = ctx
            .load_with::<double::Kernel>(&LoadOptions::variant_named(name).unwrap())
            .unwrap();
        let key = k.variant().key;
        let fmt = k.format_of("bottom_blob").unwrap();
        let pipe = k.pipeline(&Default::default(), None).unwrap();
        let push = double::PushConstants {
            w: w as i32,
            h: h as i32,
            c: c as i32,
        };
        let global = [w as u32, h as u32, c as u32];
        let got = if key.memory == MemoryKind::Image {
            let a = Image::new(&ctx, 3, global, 4, fmt).unwrap();
            let b = Image::new(&ctx, 3, global, 4, fmt).unwrap();
            a.upload_f32(&x).unwrap();
            b.upload_f32(&vec![f32::NAN; x.len()]).unwrap();
            ctx.run(|l| {
                l.dispatch(
                    &pipe,
                    &double::ImageBindings {
                        bottom_blob: &a,
                        top_blob: &b,
                    },
                    &push,
                    global,
                )
            })
            .unwrap();
            b.download_f32().unwrap()
        } else {
            let a = Tensor::from_f32(&ctx, &[c, h, w * 4], fmt, &x).unwrap();
            let b = Tensor::from_f32(&ctx, &[c, h, w * 4], fmt, &vec![f32::NAN; x.len()]).unwrap();
            ctx.run(|l| {
                l.dispatch(
                    &pipe,
                    &double::BufferBindings {
                        bottom_blob: &a,
                        top_blob: &b,
                    },
                    &push,
                    global,
                )
            })
            .unwrap();
            b.download_f32().unwrap()
        };
        let want: Vec<f32> = quantize(&x, fmt).iter().map(|v| v * 2.0).collect();
        assert_close(&got, &want, tolerance(&key), name);
    }
    assert_clean(&ctx);
}

vkprism::compute_shader! {
    /// y = float(q) * scale, int8 in every int8 mode, with and without shared memory.
    pub mod dequant,
    src: r#"
#version 450
layout (local_size_x = 64) in;
layout (binding = 0) readonly buffer q_blob { sint8vec4 q_data[]; };
layout (binding = 1) writeonly buffer y_blob { sfpvec4 y_data[]; };
layout (push_constant) uniform parameter { int n; float scale; } p;
#if NCNN_shader_local_memory
shared ivec4 tile[64];
#endif
void main() {
    int i = int(gl_GlobalInvocationID.x);
    aint8vec4 q = i8buffer_ld4(q_data, min(i, p.n - 1));
#if NCNN_shader_local_memory
    tile[gl_LocalInvocationID.x] = ivec4(q);
    barrier();
    q = aint8vec4(tile[gl_LocalInvocationID.x]);
#endif
    if (i >= p.n) return;
    buffer_st4(y_data, i, afpvec4(vec4(q) * p.scale));
}
"#,
}

#[test]
fn int8_every_variant_matches_cpu() {
    use rand::{Rng, SeedableRng};
    let ctx = ctx();
    let n4 = 300;
    let mut rng = rand::rngs::StdRng::seed_from_u64(5);
    let q: Vec<i8> = (0..n4 * 4)
        .map(|_| loop {
            let v: i8 = rng.gen();
            if v != 0 {
                break v;
            }
        })
        .collect();
    assert_eq!(dequant::VARIANTS.len(), 42);
    let mut ran = 0;
    for name in dequant::VARIANT_NAMES {
        let k = ctx
            .load_with::<dequant::Kernel>(&LoadOptions::variant_named(name).unwrap())
            .unwrap();
        let key = k.variant().key;
        assert_eq!(k.format_of("q_blob").unwrap(), TensorFormat::I8);
        let fmt = k.format_of("y_blob").unwrap();
        let qt = Tensor::from_i8(&ctx, &[n4 * 4], &q).unwrap();
        let yt = Tensor::from_f32(&ctx, &[n4 * 4], fmt, &vec![f32::NAN; n4 * 4]).unwrap();
        let pipe = k.pipeline(&Default::default(), None).unwrap();
        ctx.run(|l| {
            l.dispatch(
                &pipe,
                &dequant::BufferBindings {
                    q_blob: &qt,
                    y_blob: &yt,
                },
                &dequant::PushConstants {
                    n: n4 as i32,
                    scale: 0.125,
                },
                [n4 as u32, 1, 1],
            )
        })
        .unwrap();
        let want: Vec<f32> = q.iter().map(|v| *v as f32 * 0.125).collect();
        let tol = if key.float == FloatMode::Fp32 {
            1e-6
        } else {
            tolerance(&key)
        };
        assert_close(
            &yt.download_f32().unwrap(),
            &quantize(&want, fmt),
            tol,
            name,
        );
        ran += 1;
    }
    assert_eq!(ran, 42);
    assert_clean(&ctx);
}

vkprism::compute_shader! {
    /// Grid-stride loop: four vec4 per invocation, stride read from gl_WorkGroupSize.
    pub mod grid_stride,
    src: r#"
#version 450
layout (binding = 0) readonly buffer x_blob { sfpvec4 x_data[]; };
layout (binding = 1) writeonly buffer y_blob { sfpvec4 y_data[]; };
layout (push_constant) uniform parameter { int n; } p;
void main() {
    const int stride = int(gl_NumWorkGroups.x * gl_WorkGroupSize.x);
    for (int k = 0; k < 4; k++) {
        const int i = int(gl_GlobalInvocationID.x) + k * stride;
        if (i >= p.n) return;
        buffer_st4(y_data, i, buffer_ld4(x_data, i) * afp(2) + afp(1));
    }
}
"#,
}

#[test]
fn gl_workgroup_size_is_the_specialized_size() {
    // Regression: the workgroup-size ids used to be declared after the kernel's text, and
    // glslang folded gl_WorkGroupSize in main() to the unspecialized default (1).
    let ctx = ctx();
    let n = 4 * 4096;
    let x = random(n, 12);
    for name in grid_stride::VARIANT_NAMES {
        let k = ctx
            .load_with::<grid_stride::Kernel>(&LoadOptions::variant_named(name).unwrap())
            .unwrap();
        let key = k.variant().key;
        let fmt = k.format_of("x_blob").unwrap();
        for local in [32u32, 64, 256] {
            let xt = Tensor::from_f32(&ctx, &[n], fmt, &x).unwrap();
            let yt = Tensor::from_f32(&ctx, &[n], fmt, &vec![f32::NAN; n]).unwrap();
            let pipe = k
                .pipeline(&Default::default(), Some([local, 1, 1]))
                .unwrap();
            let threads = ((n / 4) as u32).div_ceil(4).div_ceil(local) * local;
            ctx.run(|l| {
                l.dispatch(
                    &pipe,
                    &grid_stride::BufferBindings {
                        x_blob: &xt,
                        y_blob: &yt,
                    },
                    &grid_stride::PushConstants { n: (n / 4) as i32 },
                    [threads, 1, 1],
                )
            })
            .unwrap();
            let want: Vec<f32> = quantize(&x, fmt).iter().map(|v| v * 2.0 + 1.0).collect();
            assert_close(
                &yt.download_f32().unwrap(),
                &want,
                tolerance(&key),
                &format!("{name} workgroup {local}"),
            );
        }
    }
    assert_clean(&ctx);
}

vkprism::compute_shader! {
    /// Image-only kernel: 8-wide loads and stores (two texels along x), an 8-wide copy, and
    /// one-channel images.
    pub mod image_wide,
    src: r#"
#version 450
layout (binding = 0) uniform unfp sampler2D a;
layout (binding = 1, imfmtc4) writeonly uniform unfp image2D b;
layout (binding = 2, imfmtc4) writeonly uniform unfp image2D c;
layout (binding = 3) uniform unfp sampler2D s;
layout (binding = 4, imfmtc1) writeonly uniform unfp image2D o;
layout (push_constant) uniform parameter { int w; int h; } p;
layout (local_size_x = 8, local_size_y = 8) in;
void main() {
    ivec2 g = ivec2(gl_GlobalInvocationID.xy);
    if (g.x >= p.w || g.y >= p.h) return;
    afpvec8 v = image2d_ld8(a, g);
    v[0] = v[0] * afp(2);
    v[1] = v[1] * afp(3);
    image2d_st8(b, g, v);
    image2d_cp8(c, g, a, g);
    image2d_st1(o, g, image2d_ld1(s, g) + afp(1));
}
"#,
}

#[test]
fn image_8_wide_and_one_channel_every_variant() {
    let ctx = ctx();
    let (w, h) = (9usize, 6usize);
    // a: 2w × h texels of 4 channels; texel (2x, y) and (2x+1, y) form one 8-wide value.
    let a = random(2 * w * h * 4, 13);
    let s = random(w * h, 14);
    assert_eq!(
        image_wide::VARIANT_NAMES,
        [
            "fp32_image",
            "fp16p_image",
            "fp16pa_image",
            "fp16s_image",
            "fp16sa_image"
        ]
    );
    for name in image_wide::VARIANT_NAMES {
        let k = ctx
            .load_with::<image_wide::Kernel>(&LoadOptions::variant_named(name).unwrap())
            .unwrap();
        let key = k.variant().key;
        let f = k.format_of("a").unwrap();
        let wide = [2 * w as u32, h as u32, 1];
        let narrow = [w as u32, h as u32, 1];
        let at = vkprism::Image::new(&ctx, 2, wide, 4, f).unwrap();
        at.upload_f32(&a).unwrap();
        let st = vkprism::Image::new(&ctx, 2, narrow, 1, f).unwrap();
        st.upload_f32(&s).unwrap();
        let poisoned = |extent: [u32; 3], ch: u32| {
            let im = vkprism::Image::new(&ctx, 2, extent, ch, f).unwrap();
            im.upload_f32(&vec![f32::NAN; im.len()]).unwrap();
            im
        };
        let (bt, ct, ot) = (poisoned(wide, 4), poisoned(wide, 4), poisoned(narrow, 1));
        let pipe = k.pipeline(&Default::default(), None).unwrap();
        ctx.run(|l| {
            l.dispatch(
                &pipe,
                &image_wide::ImageBindings {
                    a: &at,
                    b: &bt,
                    c: &ct,
                    s: &st,
                    o: &ot,
                },
                &image_wide::PushConstants {
                    w: w as i32,
                    h: h as i32,
                },
                narrow,
            )
        })
        .unwrap();
        let aq = quantize(&a, f);
        // Texel 2x gets ×2, texel 2x+1 gets ×3.
        let want_b: Vec<f32> = aq
            .iter()
            .enumerate()
            .map(|(i, v)| if (i / 4) % 2 == 0 { v * 2.0 } else { v * 3.0 })
            .collect();
        let tol = tolerance(&key);
        assert_close(
            &bt.download_f32().unwrap(),
            &want_b,
            tol,
            &format!("{name} st8"),
        );
        assert_close(
            &ct.download_f32().unwrap(),
            &aq,
            0.0,
            &format!("{name} cp8"),
        );
        let want_o: Vec<f32> = quantize(&s, f).iter().map(|v| v + 1.0).collect();
        assert_close(
            &ot.download_f32().unwrap(),
            &want_o,
            tol,
            &format!("{name} st1"),
        );
    }
    assert_clean(&ctx);
}

vkprism::compute_shader! {
    /// A workgroup sum in shared memory, written from computed values: `afp2lfpvec4` /
    /// `afp2lfp` (packed halves or bf16 in the packed modes), loaded with `buffer_sm4` /
    /// `buffer_sm1`, read back with `lfp2afpvec4` / `lfp2afp`.
    pub mod reduce,
    src: r#"
#version 450
layout (local_size_x = 64) in;
layout (binding = 0) readonly buffer x_blob { sfpvec4 x_data[]; };
layout (binding = 1) readonly buffer s_blob { sfp s_data[]; };
layout (binding = 2) writeonly buffer y_blob { sfpvec4 y_data[]; };
layout (binding = 3) writeonly buffer z_blob { sfp z_data[]; };
layout (push_constant) uniform parameter { int n; } p;
shared lfpvec4 tmp[64];
shared lfp tmp1[64];
void main() {
    const int i = int(gl_GlobalInvocationID.x);
    const int l = int(gl_LocalInvocationID.x);
    if (i < p.n) {
        tmp[l] = buffer_sm4(x_data, i);
        tmp1[l] = buffer_sm1(s_data, i);
    } else {
        tmp[l] = afp2lfpvec4(afpvec4(0));
        tmp1[l] = afp2lfp(afp(0));
    }
    barrier();
    for (int s = 32; s > 0; s >>= 1) {
        if (l < s) {
            afpvec4 a = lfp2afpvec4(tmp[l]) + lfp2afpvec4(tmp[l + s]);
            tmp[l] = afp2lfpvec4(a);
            tmp1[l] = afp2lfp(lfp2afp(tmp1[l]) + lfp2afp(tmp1[l + s]));
        }
        barrier();
    }
    if (l == 0) {
        buffer_st4(y_data, int(gl_WorkGroupID.x), lfp2afpvec4(tmp[0]));
        buffer_st1(z_data, int(gl_WorkGroupID.x), lfp2afp(tmp1[0]));
    }
}
"#,
}

#[test]
fn shared_memory_reduction_every_variant_matches_cpu() {
    let ctx = ctx();
    let n: usize = 64 * 5 + 17; // vec4s; the last group is partial
    let groups = n.div_ceil(64);
    let x = random_in(n * 4, 21, 0.1, 1.0);
    let s = random_in(n, 22, 0.1, 1.0);
    assert_eq!(reduce::VARIANTS.len(), 7);
    for name in reduce::VARIANT_NAMES {
        let k = ctx
            .load_with::<reduce::Kernel>(&LoadOptions::variant_named(name).unwrap())
            .unwrap();
        let key = k.variant().key;
        let f = |name: &str| k.format_of(name).unwrap();
        let xt = Tensor::from_f32(&ctx, &[n * 4], f("x_blob"), &x).unwrap();
        let st = Tensor::from_f32(&ctx, &[n], f("s_blob"), &s).unwrap();
        let yt = Tensor::from_f32(
            &ctx,
            &[groups * 4],
            f("y_blob"),
            &vec![f32::NAN; groups * 4],
        )
        .unwrap();
        let zt = Tensor::from_f32(&ctx, &[groups], f("z_blob"), &vec![f32::NAN; groups]).unwrap();
        let pipe = k.pipeline(&Default::default(), None).unwrap();
        ctx.run(|l| {
            l.dispatch(
                &pipe,
                &reduce::BufferBindings {
                    x_blob: &xt,
                    s_blob: &st,
                    y_blob: &yt,
                    z_blob: &zt,
                },
                &reduce::PushConstants { n: n as i32 },
                [n as u32, 1, 1],
            )
        })
        .unwrap();
        let (xq, sq) = (quantize(&x, f("x_blob")), quantize(&s, f("s_blob")));
        let (mut want_y, mut scale_y) = (vec![0f32; groups * 4], vec![0f32; groups * 4]);
        for (i, v) in xq.iter().enumerate() {
            want_y[(i / 4 / 64) * 4 + i % 4] += v;
            scale_y[(i / 4 / 64) * 4 + i % 4] += v.abs();
        }
        let (mut want_z, mut scale_z) = (vec![0f32; groups], vec![0f32; groups]);
        for (i, v) in sq.iter().enumerate() {
            want_z[i / 64] += v;
            scale_z[i / 64] += v.abs();
        }
        // Six levels of partial sums, each rounded to the shared type (fp16 / bf16 halves in the
        // packed modes), then the stored result: the error grows with the sum of magnitudes.
        let tol = tolerance(&key) * 2.0;
        let got = yt.download_f32().unwrap();
        assert_close_scaled(&got, &want_y, &scale_y, tol, &format!("{name} vec4"));
        let got = zt.download_f32().unwrap();
        assert_close_scaled(&got, &want_z, &scale_z, tol, &format!("{name} scalar"));
    }
    assert_clean(&ctx);
}

vkprism::compute_shader! {
    /// 4x4 matrices as ncnn's inner-product kernels use them: y = W x with W stored as
    /// `sfpmat4`, and 2 Wᵀ stored back through `afp2sfpmat4`.
    pub mod matvec,
    src: r#"
#version 450
layout (binding = 0) readonly buffer w_blob { sfpmat4 w_data[]; };
layout (binding = 1) readonly buffer x_blob { sfpvec4 x_data[]; };
layout (binding = 2) writeonly buffer y_blob { sfpvec4 y_data[]; };
layout (binding = 3) writeonly buffer t_blob { sfpmat4 t_data[]; };
layout (push_constant) uniform parameter { int n; } p;
void main() {
    const int i = int(gl_GlobalInvocationID.x);
    if (i >= p.n) return;
    afpmat4 k = sfp2afpmat4(w_data[i]);
    buffer_st4(y_data, i, k * buffer_ld4(x_data, i));
    t_data[i] = afp2sfpmat4(transpose(k) * afp(2));
}
"#,
}

#[test]
fn matrices_every_variant_match_cpu() {
    let ctx = ctx();
    let n = 300;
    let w = random(n * 16, 23);
    let x = random(n * 4, 24);
    assert_eq!(matvec::VARIANTS.len(), 7);
    for name in matvec::VARIANT_NAMES {
        let k = ctx
            .load_with::<matvec::Kernel>(&LoadOptions::variant_named(name).unwrap())
            .unwrap();
        let key = k.variant().key;
        let f = |name: &str| k.format_of(name).unwrap();
        // Every binding follows the precision: a matrix is 16 values of the storage format.
        assert_eq!(f("w_blob"), key.float.storage_format(), "{name}");
        assert_eq!(f("t_blob"), key.float.storage_format(), "{name}");
        let wt = Tensor::from_f32(&ctx, &[n * 16], f("w_blob"), &w).unwrap();
        let xt = Tensor::from_f32(&ctx, &[n * 4], f("x_blob"), &x).unwrap();
        let yt = Tensor::from_f32(&ctx, &[n * 4], f("y_blob"), &vec![f32::NAN; n * 4]).unwrap();
        let tt = Tensor::from_f32(&ctx, &[n * 16], f("t_blob"), &vec![f32::NAN; n * 16]).unwrap();
        let pipe = k.pipeline(&Default::default(), None).unwrap();
        ctx.run(|l| {
            l.dispatch(
                &pipe,
                &matvec::BufferBindings {
                    w_blob: &wt,
                    x_blob: &xt,
                    y_blob: &yt,
                    t_blob: &tt,
                },
                &matvec::PushConstants { n: n as i32 },
                [n as u32, 1, 1],
            )
        })
        .unwrap();
        let (wq, xq) = (quantize(&w, f("w_blob")), quantize(&x, f("x_blob")));
        // Column-major: element (row r, column c) of matrix i is wq[i*16 + c*4 + r].
        let (mut want_y, mut scale_y) = (vec![0f32; n * 4], vec![0f32; n * 4]);
        let mut want_t = vec![0f32; n * 16];
        for i in 0..n {
            for r in 0..4 {
                for c in 0..4 {
                    let m = wq[i * 16 + c * 4 + r];
                    want_y[i * 4 + r] += m * xq[i * 4 + c];
                    scale_y[i * 4 + r] += (m * xq[i * 4 + c]).abs();
                    want_t[i * 16 + r * 4 + c] = m * 2.0;
                }
            }
        }
        let tol = tolerance(&key);
        let got = yt.download_f32().unwrap();
        assert_close_scaled(&got, &want_y, &scale_y, tol, &format!("{name} W x"));
        let got = tt.download_f32().unwrap();
        assert_close(&got, &want_t, tol, &format!("{name} 2 Wt"));
    }
    assert_clean(&ctx);
}

vkprism::compute_shader! {
    /// ncnn's current int8 and bf16 helpers: `float2int8vec4` / `float2int8`,
    /// `i8buffer_cp1to4` / `i8buffer_cp4to1` (reversing the four lanes), `i8buffer_sm4` (the
    /// raw packed `int`), `packInt4x8` / `unpackInt4x8`, `packBFloat2x16` / `unpackBFloat2x16`,
    /// and scalar `i8buffer_cp1`: each invocation copies one byte, so in int8p four invocations
    /// store into one word at once; `i8buffer_ld1` with a `uint` index (ncnn's packing kernels).
    pub mod int8_current,
    src: r#"
#version 450
layout (binding = 0) readonly buffer x_blob { sfpvec4 x_data[]; };
layout (binding = 1) readonly buffer q1_blob { sint8 q1_data[]; };
layout (binding = 2) readonly buffer q4_blob { sint8vec4 q4_data[]; };
layout (binding = 3) writeonly buffer a_blob { sint8vec4 a_data[]; };
layout (binding = 4) buffer b_blob { sint8 b_data[]; };
layout (binding = 5) writeonly buffer c_blob { sint8vec4 c_data[]; };
layout (binding = 6) writeonly buffer d_blob { int d_data[]; };
layout (binding = 7) writeonly buffer e_blob { ivec4 e_data[]; };
layout (binding = 8) writeonly buffer g_blob { uvec2 g_data[]; };
layout (binding = 9) buffer h_blob { sint8 h_data[]; };
layout (binding = 10) writeonly buffer u_blob { int u_data[]; };
layout (push_constant) uniform parameter { int n; float scale; } p;
void main() {
    const int i = int(gl_GlobalInvocationID.x);
    if (i >= p.n) return;
    const ivec4 rev = ivec4(4 * i + 3, 4 * i + 2, 4 * i + 1, 4 * i);
    i8buffer_cp1to4(a_data, i, q1_data, rev);
    i8buffer_cp4to1(b_data, rev, q4_data, i);
    vec4 v = vec4(buffer_ld4(x_data, i)) * p.scale;
    ivec4 q = float2int8vec4(v);
    i8buffer_st4(c_data, i, q);
    int raw = i8buffer_sm4(q4_data, i);
    d_data[i] = packInt4x8(unpackInt4x8(raw).wzyx);
    e_data[i] = ivec4(float2int8(v.x), float2int8(v.y), float2int8(v.z), float2int8(v.w)) - q;
    uvec2 bf = uvec2(packBFloat2x16(v.xy), packBFloat2x16(v.zw));
    g_data[i] = bf ^ uvec2(floatBitsToUint(unpackBFloat2x16(bf.x)).y, floatBitsToUint(unpackBFloat2x16(bf.y)).y) >> 16;
    for (int k = 0; k < 4; k++) {
        // Invocation i copies byte 4k + i % 4 of block i / 4: four invocations share each word.
        const int j = (i / 4) * 16 + 4 * k + i % 4;
        i8buffer_cp1(h_data, j, q1_data, j);
    }
    u_data[i] = i8buffer_ld1(q1_data, uint(4 * i + 1));
}
"#,
}

/// An int8 tensor: every int8 binding takes bytes (int8p packs four per word, scalar `sint8`
/// included).
fn int8_tensor(ctx: &Context, format: TensorFormat, data: &[i8]) -> Tensor {
    assert_eq!(format, TensorFormat::I8);
    Tensor::from_i8(ctx, &[data.len()], data).unwrap()
}

fn int8_values(t: &Tensor) -> Vec<i8> {
    t.download_i8().unwrap()
}

fn bf16_bits(v: f32) -> u32 {
    u32::from(half::bf16::from_f32(v).to_bits())
}

#[test]
fn int8_and_bf16_helpers_every_variant_match_cpu() {
    use rand::{Rng, SeedableRng};
    let ctx = ctx();
    let n = 256; // a multiple of 4: whole words of `h`
    let scale = 60.0f32; // x in ±[0.1, 4): products beyond ±127 saturate
    let x = random(n * 4, 25);
    let mut rng = rand::rngs::StdRng::seed_from_u64(26);
    let q1: Vec<i8> = (0..n * 4).map(|_| rng.gen()).collect();
    let q4: Vec<i8> = (0..n * 4).map(|_| rng.gen()).collect();
    assert_eq!(int8_current::VARIANTS.len(), 21);
    for name in int8_current::VARIANT_NAMES {
        let k = ctx
            .load_with::<int8_current::Kernel>(&LoadOptions::variant_named(name).unwrap())
            .unwrap();
        let f = |name: &str| k.format_of(name).unwrap();
        let fx = f("x_blob");
        let xt = Tensor::from_f32(&ctx, &[n * 4], fx, &x).unwrap();
        let q1t = int8_tensor(&ctx, f("q1_blob"), &q1);
        let q4t = int8_tensor(&ctx, f("q4_blob"), &q4);
        let poison = vec![0x55u8 as i8; n * 4];
        let (at, bt, ct) = (
            int8_tensor(&ctx, f("a_blob"), &poison),
            int8_tensor(&ctx, f("b_blob"), &poison),
            int8_tensor(&ctx, f("c_blob"), &poison),
        );
        let int_tensor = |len: usize| {
            let t = Tensor::new(&ctx, &[len], TensorFormat::I32).unwrap();
            t.upload_i32(&vec![0x5555_5555; len]).unwrap();
            t
        };
        let (dt, et, ut) = (int_tensor(n), int_tensor(n * 4), int_tensor(n));
        let gt = Tensor::new(&ctx, &[n * 2], TensorFormat::U32).unwrap();
        gt.upload_u32(&vec![0x5555_5555; n * 2]).unwrap();
        let ht = int8_tensor(&ctx, f("h_blob"), &poison);
        let pipe = k.pipeline(&Default::default(), None).unwrap();
        ctx.run(|l| {
            l.dispatch(
                &pipe,
                &int8_current::BufferBindings {
                    x_blob: &xt,
                    q1_blob: &q1t,
                    q4_blob: &q4t,
                    a_blob: &at,
                    b_blob: &bt,
                    c_blob: &ct,
                    d_blob: &dt,
                    e_blob: &et,
                    g_blob: &gt,
                    h_blob: &ht,
                    u_blob: &ut,
                },
                &int8_current::PushConstants { n: n as i32, scale },
                [n as u32, 1, 1],
            )
        })
        .unwrap();
        let reversed =
            |q: &[i8]| -> Vec<i8> { q.chunks(4).flat_map(|c| [c[3], c[2], c[1], c[0]]).collect() };
        assert_eq!(int8_values(&at), reversed(&q1), "{name} cp1to4");
        assert_eq!(int8_values(&bt), reversed(&q4), "{name} cp4to1");
        let v: Vec<f32> = quantize(&x, fx).iter().map(|v| v * scale).collect();
        // Half away from zero, saturated to [-127, 127].
        let want_c: Vec<i8> = v
            .iter()
            .map(|v| (v + 0.5f32.copysign(*v)).clamp(-127.0, 127.0) as i8)
            .collect();
        assert_eq!(int8_values(&ct), want_c, "{name} float2int8vec4");
        assert_eq!(
            et.download_i32().unwrap(),
            vec![0; n * 4],
            "{name} float2int8"
        );
        let want_d: Vec<i32> = reversed(&q4)
            .chunks(4)
            .map(|c| i32::from_le_bytes([c[0] as u8, c[1] as u8, c[2] as u8, c[3] as u8]))
            .collect();
        assert_eq!(dt.download_i32().unwrap(), want_d, "{name} i8buffer_sm4");
        // Each packed word XOR (its upper half unpacked and shifted down): the low half becomes
        // lo ^ hi, which the CPU computes from bf16 bits rounded to nearest even.
        let want_g: Vec<u32> = v
            .chunks(2)
            .map(|c| {
                let (lo, hi) = (bf16_bits(c[0]), bf16_bits(c[1]));
                (lo | (hi << 16)) ^ hi
            })
            .collect();
        assert_eq!(gt.download_u32().unwrap(), want_g, "{name} packBFloat2x16");
        assert_eq!(int8_values(&ht), q1, "{name} i8buffer_cp1");
        let want_u: Vec<i32> = q1.chunks(4).map(|c| i32::from(c[1])).collect();
        assert_eq!(
            ut.download_i32().unwrap(),
            want_u,
            "{name} i8buffer_ld1 (uint index)"
        );
    }
    assert_clean(&ctx);
}

vkprism::compute_shader! {
    /// ncnn's int16 vocabulary in each int16 mode (int16p: two per `int`; int16s: `int16_t`
    /// storage; int16a: `int16_t` arithmetic too): `i16buffer_ld1/ld2/ld4/st1/st2/st4/sm4`,
    /// `lint16vec4` shared memory with `lint162aint16vec4`, `packInt2x16` / `unpackInt2x16`.
    /// `f` takes one scalar store per invocation: neighbours share an `int` in int16p.
    pub mod int16_vocabulary,
    src: r#"
#version 450
layout (local_size_x = 64) in;
layout (binding = 0) readonly buffer a_blob { sint16 a_data[]; };
layout (binding = 1) readonly buffer b_blob { sint16vec4 b_data[]; };
layout (binding = 2) writeonly buffer c_blob { sint16vec4 c_data[]; };
layout (binding = 3) writeonly buffer d_blob { sint16 d_data[]; };
layout (binding = 4) writeonly buffer e_blob { int e_data[]; };
layout (binding = 5) buffer f_blob { sint16 f_data[]; };
layout (push_constant) uniform parameter { int n; } p;
shared lint16vec4 tmp[64];
void main() {
    const int i = int(gl_GlobalInvocationID.x);
    const int l = int(gl_LocalInvocationID.x);
    if (i >= p.n) return;
    // Each invocation reads back only its own slot: no barrier needed.
    tmp[l] = i16buffer_sm4(b_data, i);
    aint16vec4 v = lint162aint16vec4(tmp[l]);
    ivec2 lo = i16buffer_ld2(a_data, 4 * i);
    ivec2 hi = i16buffer_ld2(a_data, 4 * i + 2);
    i16buffer_st4(c_data, i, v + ivec4(lo, hi) + i16buffer_ld4(b_data, i));
    aint16 s = lint162aint16(lint16(i16buffer_ld1(a_data, 4 * i)));
    i16buffer_st2(d_data, 2 * i, ivec2(s, -s));
    int packed = packInt2x16(ivec2(s, v.w));
    e_data[i] = packed + unpackInt2x16(packed).y;
    i16buffer_st1(f_data, i, s * 3);
}
"#,
}

#[test]
fn int16_vocabulary_every_variant_matches_cpu() {
    use rand::{Rng, SeedableRng};
    let ctx = ctx();
    let n = 200;
    let mut rng = rand::rngs::StdRng::seed_from_u64(27);
    let mut values =
        |count: usize| -> Vec<i16> { (0..count).map(|_| (rng.gen::<i16>() / 4) | 1).collect() };
    let (a, b) = (values(n * 4), values(n * 4));
    assert_eq!(
        int16_vocabulary::VARIANT_NAMES,
        ["fp32_int16p", "fp32_int16s", "fp32_int16a"]
    );
    for name in int16_vocabulary::VARIANT_NAMES {
        let k = match ctx
            .load_with::<int16_vocabulary::Kernel>(&LoadOptions::variant_named(name).unwrap())
        {
            Ok(k) => k,
            Err(e) => {
                eprintln!("{name}: not on this device ({e})");
                continue;
            }
        };
        let formats: Vec<TensorFormat> = k.variant().bindings.iter().map(|b| b.format).collect();
        use TensorFormat::{I16, I32};
        assert_eq!(formats, [I16, I16, I16, I16, I32, I16], "{name}");
        let int16 = |data: &[i16]| {
            let t = Tensor::new(&ctx, &[data.len()], I16).unwrap();
            t.upload_i16(data).unwrap();
            t
        };
        let (at, bt) = (int16(&a), int16(&b));
        let (ct, dt, ft) = (
            int16(&vec![0x5555; n * 4]),
            int16(&vec![0x5555; n * 2]),
            int16(&vec![0x5555; n]),
        );
        let et = Tensor::new(&ctx, &[n], I32).unwrap();
        et.upload_i32(&vec![0x5555; n]).unwrap();
        let pipe = k.pipeline(&Default::default(), None).unwrap();
        ctx.run(|l| {
            l.dispatch(
                &pipe,
                &int16_vocabulary::BufferBindings {
                    a_blob: &at,
                    b_blob: &bt,
                    c_blob: &ct,
                    d_blob: &dt,
                    e_blob: &et,
                    f_blob: &ft,
                },
                &int16_vocabulary::PushConstants { n: n as i32 },
                [n as u32, 1, 1],
            )
        })
        .unwrap();
        let (a, b): (Vec<i32>, Vec<i32>) = (
            a.iter().map(|v| i32::from(*v)).collect(),
            b.iter().map(|v| i32::from(*v)).collect(),
        );
        let want_c: Vec<i16> = (0..n * 4).map(|j| (2 * b[j] + a[j]) as i16).collect();
        assert_eq!(ct.download_i16().unwrap(), want_c, "{name}: i16buffer_st4");
        let want_d: Vec<i16> = (0..n)
            .flat_map(|i| [a[4 * i] as i16, -a[4 * i] as i16])
            .collect();
        assert_eq!(dt.download_i16().unwrap(), want_d, "{name}: i16buffer_st2");
        let want_e: Vec<i32> = (0..n)
            .map(|i| {
                let (s, w) = (a[4 * i], b[4 * i + 3]);
                let packed = ((s as u32 & 0xffff) | ((w as u32 & 0xffff) << 16)) as i32;
                packed.wrapping_add(w)
            })
            .collect();
        assert_eq!(et.download_i32().unwrap(), want_e, "{name}: packInt2x16");
        let want_f: Vec<i16> = (0..n).map(|i| (3 * a[4 * i]) as i16).collect();
        assert_eq!(ft.download_i16().unwrap(), want_f, "{name}: i16buffer_st1");
    }
    assert_clean(&ctx);
}

vkprism::compute_shader! {
    /// Writes the device facts it reads (specialization constants the runtime fills), one only
    /// in the fp16-storage variants, and doubles `a[0]` in a branch on the subgroup size.
    pub mod device_facts,
    src: r#"
#version 450
layout (local_size_x = 1) in;
layout (binding = 0) writeonly buffer o_blob { int o[]; };
layout (binding = 1) buffer a_blob { sfp a[]; };
void main() {
    o[0] = ncnn_subgroupSize;
#if NCNN_fp16_storage
    o[1] = ncnn_vendorID;
#else
    o[1] = -1;
#endif
    o[2] = ncnn_deviceID;
    o[3] = ncnn_driverID;
    o[4] = ncnn_storageBuffer16BitAccess;
    o[5] = ncnn_uniformAndStorageBuffer16BitAccess;
    o[6] = ncnn_shaderFloat16;
    o[7] = ncnn_storageBuffer8BitAccess;
    o[8] = ncnn_shaderInt8;
    o[9] = ncnn_shaderInt16;
    o[10] = ncnn_shaderInt64;
    o[11] = ncnn_shaderBFloat16Type;
    o[12] = ncnn_cooperativeMatrix;
    o[13] = ncnn_subgroupSizeControl;
    o[14] = ncnn_shaderIntegerDotProduct;
    if (ncnn_subgroupSize > 0 && ncnn_subgroupSize <= 128) {
        buffer_st1(a, 0, buffer_ld1(a, 0) * afp(2));
    }
}
"#,
}

#[test]
fn device_facts_are_the_devices_in_every_variant() {
    use vkprism::{DeviceFact, Feature, PipelineDesc};
    let ctx = ctx();
    let report = ctx.report();
    let features = report.features;
    let mut sizes = vec![None];
    if features.supports(Feature::SubgroupSizeControl) {
        sizes.push(Some(features.limits.min_subgroup_size));
        sizes.push(Some(features.limits.max_subgroup_size));
    }
    assert_eq!(
        device_facts::VARIANT_NAMES,
        ["fp32", "fp16s", "fp16sa", "bf16s"]
    );
    for name in device_facts::VARIANT_NAMES {
        let k = match ctx
            .load_with::<device_facts::Kernel>(&LoadOptions::variant_named(name).unwrap())
        {
            Ok(k) => k,
            Err(e) => {
                eprintln!("{name}: not on this device ({e})");
                continue;
            }
        };
        let variant = k.variant();
        let fp16_storage = variant.key.float.is_storage16() && variant.key.float.is_fp16();
        // Reflected per variant: the vendor is read only where the branch is compiled.
        assert_eq!(
            variant.device_facts.contains(&DeviceFact::VendorId),
            fp16_storage,
            "{name}"
        );
        assert_eq!(variant.device_facts.len(), 14 + usize::from(fp16_storage));
        for size in &sizes {
            let fmt = variant.format_of("a_blob").unwrap();
            let o = Tensor::new(&ctx, &[15], TensorFormat::I32).unwrap();
            o.upload_i32(&[0x5555; 15]).unwrap();
            let a = Tensor::from_f32(&ctx, &[1], fmt, &[1.5]).unwrap();
            let mut desc = PipelineDesc::new();
            desc.subgroup_size = *size;
            let pipe = k.pipeline_with(&Default::default(), &desc).unwrap();
            ctx.run(|l| {
                l.dispatch(
                    &pipe,
                    &device_facts::BufferBindings {
                        o_blob: &o,
                        a_blob: &a,
                    },
                    &Default::default(),
                    [1, 1, 1],
                )
            })
            .unwrap();
            let feature = |f: Feature| i32::from(features.supports(f));
            let want = [
                size.unwrap_or(features.limits.subgroup_size) as i32,
                if fp16_storage {
                    report.vendor_id as i32
                } else {
                    -1
                },
                report.device_id as i32,
                report.driver_id as i32,
                feature(Feature::StorageBuffer16BitAccess),
                feature(Feature::UniformAndStorageBuffer16BitAccess),
                feature(Feature::ShaderFloat16),
                feature(Feature::StorageBuffer8BitAccess),
                feature(Feature::ShaderInt8),
                feature(Feature::ShaderInt16),
                feature(Feature::ShaderInt64),
                feature(Feature::ShaderBFloat16Type),
                feature(Feature::CooperativeMatrix),
                feature(Feature::SubgroupSizeControl),
                feature(Feature::IntegerDotProduct),
            ];
            assert_eq!(o.download_i32().unwrap(), want, "{name} subgroup {size:?}");
            assert_eq!(
                a.download_f32().unwrap(),
                [3.0],
                "{name}: the expression use"
            );
        }
    }
    assert_clean(&ctx);
}
