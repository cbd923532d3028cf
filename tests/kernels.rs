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
    let k = ctx.load_with::<axpb::Kernel>(&LoadOptions::variant(variant))?;
    let key = k.variant().key;
    let fmt = k.variant().bindings[0].format;
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
            .load_with::<mixed::Kernel>(&LoadOptions::variant(name))
            .unwrap();
        let key = k.variant().key;
        let f = |i: usize| k.variant().bindings[i].format;
        let at = Tensor::from_f32(&ctx, &[n8 * 8], f(0), &a).unwrap();
        let bt = Tensor::from_f32(&ctx, &[n8 * 8], f(1), &b).unwrap();
        let ct = Tensor::from_f32(&ctx, &[n8 * 8], f(2), &vec![f32::NAN; n8 * 8]).unwrap();
        let dt = Tensor::from_f32(&ctx, &[n8 * 8], f(3), &vec![f32::NAN; n8 * 8]).unwrap();
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
        let bq = quantize(&b, f(1));
        assert_close(
            &ct.download_f32().unwrap(),
            &bq.iter().map(|v| v * 2.0).collect::<Vec<_>>(),
            tol,
            &format!("{name} c"),
        );
        let aq = quantize(&a, f(0));
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
            .load_with::<double::Kernel>(&LoadOptions::variant(name))
            .unwrap();
        let key = k.variant().key;
        let fmt = k.variant().bindings[0].format;
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
            .load_with::<dequant::Kernel>(&LoadOptions::variant(name))
            .unwrap();
        let key = k.variant().key;
        assert_eq!(k.variant().bindings[0].format, TensorFormat::I8);
        let fmt = k.variant().bindings[1].format;
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
            .load_with::<grid_stride::Kernel>(&LoadOptions::variant(name))
            .unwrap();
        let key = k.variant().key;
        let fmt = k.variant().bindings[0].format;
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
            .load_with::<image_wide::Kernel>(&LoadOptions::variant(name))
            .unwrap();
        let key = k.variant().key;
        let f = k.variant().bindings[0].format;
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
    /// The benchmark's kernel file, shipped through spirv-opt.
    pub mod axpb_optimized,
    path: "../bench/kernels/axpb.comp",
    optimize: true,
}

#[test]
fn optimized_spirv_matches_cpu_in_every_variant() {
    let ctx = ctx();
    let n = 4 * 777;
    let x = random(n, 15);
    assert_eq!(axpb_optimized::VARIANTS.len(), 7);
    for name in axpb_optimized::VARIANT_NAMES {
        let k = ctx
            .load_with::<axpb_optimized::Kernel>(&LoadOptions::variant(name))
            .unwrap();
        let key = k.variant().key;
        // spirv-opt's output differs from what the reflection read, but it is still SPIR-V.
        assert_eq!(k.variant().spirv[0], 0x0723_0203);
        let fmt = k.variant().bindings[0].format;
        let xt = Tensor::from_f32(&ctx, &[n], fmt, &x).unwrap();
        let yt = Tensor::from_f32(&ctx, &[n], fmt, &vec![f32::NAN; n]).unwrap();
        let pipe = k.pipeline(&Default::default(), None).unwrap();
        let push = axpb_optimized::PushConstants {
            n: (n / 4) as i32,
            scale: -0.5,
            bias: 2.0,
        };
        ctx.run(|l| {
            l.dispatch(
                &pipe,
                &axpb_optimized::BufferBindings {
                    x_blob: &xt,
                    y_blob: &yt,
                },
                &push,
                [(n / 4) as u32, 1, 1],
            )
        })
        .unwrap();
        let want: Vec<f32> = quantize(&x, fmt).iter().map(|v| v * -0.5 + 2.0).collect();
        assert_close(&yt.download_f32().unwrap(), &want, tolerance(&key), name);
    }
    assert_clean(&ctx);
}
