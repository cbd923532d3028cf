//! Blurs and edge-detects a picture on the GPU through the *image* variants of two kernels
//! written with `compute_shader!`, writes the three pictures as PNGs, prints which variant ran,
//! and checks every pixel against a CPU reference (exit status 1 on a mismatch).
//!
//!     cargo run --example image_filter [-- OUT_DIR [WIDTH HEIGHT]]
//!
//! (default `target/image_filter`, 256 × 192). The picture is generated (discs, stripes, a
//! gradient), so nothing is downloaded or bundled.
//!
//! What it shows:
//! - image kernels: `sampler2D` inputs read with `image2d_ld4`, `image2D` outputs written with
//!   `image2d_st4`, texel formats from `imfmtc4` (`rgba32f` or `rgba16f` per variant);
//! - image variants are off by default: they are loaded with `use_image_storage: true`;
//! - [`vkprism::Image`]: created with the variant's texel format, uploaded and downloaded as
//!   `f32` (x fastest, then y; channels interleaved);
//! - two dispatches in one command list, the second sampling what the first stored (the list
//!   puts the barrier between them);
//! - `dispatch` takes *invocations* (here one per pixel), not workgroups.
//!
//! `tests/examples.rs` runs [`filter`] in every image variant the device can run.

use std::error::Error;
use std::path::{Path, PathBuf};
use vkprism::{
    CommandList, Context, FloatMode, Image, LoadOptions, Options, TensorFormat, VariantKey,
};
use vkprism_testkit::quantize_one;

vkprism::compute_shader! {
    /// 3×3 Gaussian blur (1 2 1 / 2 4 2 / 1 2 1, over 16), edges clamped: one invocation per
    /// pixel. The kernel is image-only (it uses image functions and no `NCNN_image_shader`
    /// guard), so its variants are `fp32_image`, `fp16p_image`, ... `fp16sa_image`.
    pub mod blur,
    src: r#"
#version 450
layout (local_size_x = 8, local_size_y = 8) in;
layout (binding = 0) uniform unfp sampler2D src;
layout (binding = 1, imfmtc4) writeonly uniform unfp image2D dst;
layout (push_constant) uniform parameter { int w; int h; } p;
void main() {
    const ivec2 g = ivec2(gl_GlobalInvocationID.xy);
    if (g.x >= p.w || g.y >= p.h) return;
    const ivec2 hi = ivec2(p.w - 1, p.h - 1);
    afpvec4 sum = afpvec4(0);
    for (int dy = -1; dy <= 1; dy++) {
        for (int dx = -1; dx <= 1; dx++) {
            const afp weight = afp((2 - abs(dx)) * (2 - abs(dy)));
            sum += weight * image2d_ld4(src, clamp(g + ivec2(dx, dy), ivec2(0), hi));
        }
    }
    image2d_st4(dst, g, sum / afp(16));
}
"#,
}

vkprism::compute_shader! {
    /// Sobel edge magnitude of the luminance, clamped to [0, 1], written as grey with alpha 1.
    /// Edges clamped; one invocation per pixel.
    pub mod edges,
    src: r#"
#version 450
layout (local_size_x = 8, local_size_y = 8) in;
layout (binding = 0) uniform unfp sampler2D src;
layout (binding = 1, imfmtc4) writeonly uniform unfp image2D dst;
layout (push_constant) uniform parameter { int w; int h; } p;
afp luma(ivec2 q) {
    const ivec2 hi = ivec2(p.w - 1, p.h - 1);
    const afpvec4 c = image2d_ld4(src, clamp(q, ivec2(0), hi));
    return dot(c, afpvec4(afp(0.25), afp(0.5), afp(0.25), afp(0)));
}
void main() {
    const ivec2 g = ivec2(gl_GlobalInvocationID.xy);
    if (g.x >= p.w || g.y >= p.h) return;
    afp l[9];
    for (int i = 0; i < 9; i++) l[i] = luma(g + ivec2(i % 3 - 1, i / 3 - 1));
    const afp gx = (l[2] + afp(2) * l[5] + l[8]) - (l[0] + afp(2) * l[3] + l[6]);
    const afp gy = (l[6] + afp(2) * l[7] + l[8]) - (l[0] + afp(2) * l[1] + l[2]);
    const afp m = clamp(sqrt(gx * gx + gy * gy), afp(0), afp(1));
    image2d_st4(dst, g, afpvec4(m, m, m, afp(1)));
}
"#,
}

/// What one run of [`filter`] did.
pub struct Outcome {
    /// The variants that ran (blur, edges).
    pub variants: [VariantKey; 2],
    /// The texel format of the images.
    pub format: TensorFormat,
    /// The largest difference from the CPU reference, per output (blur, edges).
    pub worst: [f32; 2],
    /// The tolerance the outputs were checked against.
    pub tolerance: f32,
    /// The PNG files written (input, blurred, edges).
    pub pngs: [PathBuf; 3],
}

/// The options that allow image variants: everything [`Options::default`] allows, plus images.
pub fn image_options() -> Options {
    Options::default().with_image_storage(true)
}

/// A `w` × `h` RGBA picture in [0, 1]: a diagonal gradient, three discs and a band of stripes.
pub fn picture(w: usize, h: usize) -> Vec<f32> {
    let mut px = Vec::with_capacity(w * h * 4);
    let discs = [
        (0.30, 0.35, 0.22, [0.95, 0.25, 0.20]),
        (0.65, 0.40, 0.18, [0.20, 0.80, 0.35]),
        (0.50, 0.72, 0.16, [0.25, 0.35, 0.95]),
    ];
    for y in 0..h {
        for x in 0..w {
            let (u, v) = (x as f32 / w as f32, y as f32 / h as f32);
            let mut c = [0.15 + 0.5 * u, 0.15 + 0.4 * v, 0.35 + 0.3 * (1.0 - u), 1.0];
            for (cx, cy, r, rgb) in discs {
                let (dx, dy) = (u - cx, (v - cy) * h as f32 / w as f32);
                if dx * dx + dy * dy < r * r {
                    c[..3].copy_from_slice(&rgb);
                }
            }
            if v > 0.88 && (x / 6) % 2 == 0 {
                c[..3].copy_from_slice(&[1.0, 1.0, 1.0]);
            }
            px.extend_from_slice(&c);
        }
    }
    px
}

/// The CPU reference of [`blur`] (texels quantized to the image format, as uploaded).
pub fn blur_reference(format: TensorFormat, src: &[f32], w: usize, h: usize) -> Vec<f32> {
    let at = |x: isize, y: isize, c: usize| {
        let (x, y) = (x.clamp(0, w as isize - 1), y.clamp(0, h as isize - 1));
        quantize_one(src[(y as usize * w + x as usize) * 4 + c], format)
    };
    let mut out = vec![0.0; w * h * 4];
    for y in 0..h as isize {
        for x in 0..w as isize {
            for c in 0..4 {
                let mut sum = 0.0;
                for dy in -1..=1isize {
                    for dx in -1..=1isize {
                        let weight = ((2 - dx.abs()) * (2 - dy.abs())) as f32;
                        sum += weight * at(x + dx, y + dy, c);
                    }
                }
                out[(y as usize * w + x as usize) * 4 + c] = sum / 16.0;
            }
        }
    }
    out
}

/// The CPU reference of [`edges`].
pub fn edges_reference(format: TensorFormat, src: &[f32], w: usize, h: usize) -> Vec<f32> {
    let luma = |x: isize, y: isize| {
        let (x, y) = (x.clamp(0, w as isize - 1), y.clamp(0, h as isize - 1));
        let i = (y as usize * w + x as usize) * 4;
        let q = |c: usize| quantize_one(src[i + c], format);
        0.25 * q(0) + 0.5 * q(1) + 0.25 * q(2)
    };
    let mut out = Vec::with_capacity(w * h * 4);
    for y in 0..h as isize {
        for x in 0..w as isize {
            let l = |dx: isize, dy: isize| luma(x + dx, y + dy);
            let gx = (l(1, -1) + 2.0 * l(1, 0) + l(1, 1)) - (l(-1, -1) + 2.0 * l(-1, 0) + l(-1, 1));
            let gy = (l(-1, 1) + 2.0 * l(0, 1) + l(1, 1)) - (l(-1, -1) + 2.0 * l(0, -1) + l(1, -1));
            let m = (gx * gx + gy * gy).sqrt().clamp(0.0, 1.0);
            out.extend_from_slice(&[m, m, m, 1.0]);
        }
    }
    out
}

/// The largest absolute difference allowed for a variant, on values in [0, 1]: fp32 1e-5
/// (reordered sums of nine terms); fp16 storage 2e-3 (the stored result rounds to fp16: half an
/// ulp is 4.9e-4 below 1, and the edge kernel's input was rounded once already); fp16
/// arithmetic 2e-2 (every operation of the 3×3 sums and of the square root rounds to fp16; the
/// Sobel sums of eight lumas with weights up to 2 amplify those roundings).
pub fn tolerance(float: FloatMode) -> f32 {
    match float {
        FloatMode::Fp32 => 1e-5,
        f if f.is_fp16_arithmetic() => 2e-2,
        _ => 2e-3,
    }
}

fn worst_difference(got: &[f32], want: &[f32]) -> f32 {
    assert_eq!(got.len(), want.len());
    got.iter()
        .zip(want)
        // NaN (never written) counts as infinitely wrong.
        .map(|(g, w)| {
            if g.is_finite() {
                (g - w).abs()
            } else {
                f32::INFINITY
            }
        })
        .fold(0.0, f32::max)
}

/// Writes RGBA values in [0, 1] as an 8-bit RGBA PNG.
pub fn write_png(path: &Path, w: usize, h: usize, rgba: &[f32]) -> Result<(), Box<dyn Error>> {
    let file = std::io::BufWriter::new(std::fs::File::create(path)?);
    let mut encoder = png::Encoder::new(file, w as u32, h as u32);
    encoder.set_color(png::ColorType::Rgba);
    encoder.set_depth(png::BitDepth::Eight);
    let bytes: Vec<u8> = rgba
        .iter()
        .map(|v| (v.clamp(0.0, 1.0) * 255.0).round() as u8)
        .collect();
    encoder.write_header()?.write_image_data(&bytes)?;
    Ok(())
}

/// Blurs and edge-detects a generated `w` × `h` picture with the kernels loaded as `load` says
/// (use [`LoadOptions::options`] with [`image_options`] for the best image variant, or
/// [`LoadOptions::variant`] for one), writes `input.png`, `blurred.png` and `edges.png` into
/// `out_dir`, and checks both results against the CPU. A mismatch is an error.
pub fn filter(
    ctx: &Context,
    load: &LoadOptions,
    w: usize,
    h: usize,
    out_dir: &Path,
) -> Result<Outcome, Box<dyn Error>> {
    let blur_kernel = ctx.load_with::<blur::Kernel>(load)?;
    let edges_kernel = ctx.load_with::<edges::Kernel>(load)?;
    let format = blur_kernel.format_of("src")?;
    // Both kernels have the same variant list, so the same options pick the same precision; the
    // intermediate image is written by one and read by the other, so check.
    if edges_kernel.format_of("src")? != format {
        return Err("the two kernels picked different texel formats".into());
    }

    let extent = [w as u32, h as u32, 1];
    let input = picture(w, h);
    // 2D images of 4 channels, in the variant's texel format.
    let src = Image::new(ctx, 2, extent, 4, format)?;
    let blurred = Image::new(ctx, 2, extent, 4, format)?;
    let outline = Image::new(ctx, 2, extent, 4, format)?;
    src.upload_f32(&input)?;

    // A workgroup of 8×8 (the kernels' own `local_size`; `None` keeps it).
    let blur_pipe = blur_kernel.pipeline(&blur::SpecConstants::default(), None)?;
    let edges_pipe = edges_kernel.pipeline(&edges::SpecConstants::default(), None)?;
    let size = blur::PushConstants {
        w: w as i32,
        h: h as i32,
    };
    let mut list = CommandList::new(ctx)?;
    // One invocation per pixel: the grid is in invocations, rounded up to whole workgroups.
    list.dispatch(
        &blur_pipe,
        &blur::ImageBindings {
            src: &src,
            dst: &blurred,
        },
        &size,
        extent,
    )?;
    list.dispatch(
        &edges_pipe,
        &edges::ImageBindings {
            src: &blurred,
            dst: &outline,
        },
        &edges::PushConstants {
            w: w as i32,
            h: h as i32,
        },
        extent,
    )?;
    list.submit_and_wait()?;
    let got_blur = blurred.download_f32()?;
    let got_edges = outline.download_f32()?;

    std::fs::create_dir_all(out_dir)?;
    let pngs = [
        out_dir.join("input.png"),
        out_dir.join("blurred.png"),
        out_dir.join("edges.png"),
    ];
    write_png(&pngs[0], w, h, &input)?;
    write_png(&pngs[1], w, h, &got_blur)?;
    write_png(&pngs[2], w, h, &got_edges)?;

    // The edge reference starts from the GPU's blurred image, so each kernel is checked on its
    // own (an fp16 blur's rounding is not compounded into the edge check).
    let want_blur = blur_reference(format, &input, w, h);
    let want_edges = edges_reference(format, &got_blur, w, h);
    let variants = [blur_kernel.variant().key, edges_kernel.variant().key];
    let tolerance = tolerance(variants[0].float).max(tolerance(variants[1].float));
    let worst = [
        worst_difference(&got_blur, &want_blur),
        worst_difference(&got_edges, &want_edges),
    ];
    if worst.iter().any(|d| *d > tolerance) {
        return Err(format!(
            "{} / {}: the GPU result differs from the CPU: worst difference {:.2e} (blur), {:.2e} \
             (edges), tolerance {tolerance:.0e}",
            variants[0], variants[1], worst[0], worst[1]
        )
        .into());
    }
    Ok(Outcome {
        variants,
        format,
        worst,
        tolerance,
        pngs,
    })
}

#[allow(dead_code)] // `tests/examples.rs` includes this file for `filter` alone.
fn main() -> Result<(), Box<dyn Error>> {
    let mut args = std::env::args().skip(1);
    let out_dir = PathBuf::from(args.next().unwrap_or_else(|| "target/image_filter".into()));
    let mut number = |default: usize| -> Result<usize, Box<dyn Error>> {
        Ok(args
            .next()
            .map(|a| a.parse())
            .transpose()?
            .unwrap_or(default))
    };
    let (w, h) = (number(256)?, number(192)?);

    let ctx = Context::new()?;
    println!("device: {}", ctx.device_name());
    println!(
        "kernel blur: variants {}\nkernel edges: variants {}",
        blur::VARIANT_NAMES.join(", "),
        edges::VARIANT_NAMES.join(", ")
    );
    let outcome = filter(&ctx, &LoadOptions::options(image_options()), w, h, &out_dir)?;
    // With VKPRISM_VALIDATION=1, anything the validation layer said is an error too.
    ctx.check_validation()?;
    println!(
        "ran blur as {} and edges as {} on {w}×{h} {:?} images",
        outcome.variants[0], outcome.variants[1], outcome.format
    );
    println!(
        "matches the CPU: worst difference {:.2e} (blur), {:.2e} (edges), tolerance {:.0e}",
        outcome.worst[0], outcome.worst[1], outcome.tolerance
    );
    for p in &outcome.pngs {
        println!("wrote {}", p.display());
    }
    Ok(())
}
