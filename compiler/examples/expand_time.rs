//! Measures `compute_shader!`'s expansion time for a typical kernel with all its variants
//! (12: seven buffer precisions and five image ones), the way the macro runs it: parse, compile
//! every variant with shaderc in parallel, reflect, generate code.
//!
//!     cargo run -p vkprism-compiler --example expand_time            # as the macro runs (debug)
//!     cargo run -p vkprism-compiler --example expand_time --release
//!
//! Prints the median and range of 15 expansions after one warm-up.

use std::time::Instant;

const KERNEL: &str = r##"
pub mod binary_op,
src: r#"
#version 450
layout (constant_id = 0) const int op_type = 0;
layout (constant_id = 1) const int size = 0;
#if NCNN_image_shader
layout (binding = 0) uniform unfp sampler3D a_blob;
layout (binding = 1) uniform unfp sampler3D b_blob;
layout (binding = 2, imfmtc4) writeonly uniform unfp image3D top_blob;
#else
layout (binding = 0) readonly buffer a_blob { sfpvec4 a_blob_data[]; };
layout (binding = 1) readonly buffer b_blob { sfpvec4 b_blob_data[]; };
layout (binding = 2) writeonly buffer top_blob { sfpvec4 top_blob_data[]; };
#endif
layout (push_constant) uniform parameter { int w; int h; int c; int size; } p;
void main() {
    int gx = int(gl_GlobalInvocationID.x);
    int gy = int(gl_GlobalInvocationID.y);
    int gz = int(gl_GlobalInvocationID.z);
    if (gx >= p.w || gy >= p.h || gz >= p.c) return;
#if NCNN_image_shader
    afpvec4 a = image3d_ld4(a_blob, ivec3(gx, gy, gz));
    afpvec4 b = image3d_ld4(b_blob, ivec3(gx, gy, gz));
#else
    int gi = gz * psc(size) + gy * p.w + gx;
    afpvec4 a = buffer_ld4(a_blob_data, gi);
    afpvec4 b = buffer_ld4(b_blob_data, gi);
#endif
    afpvec4 r;
    if (op_type == 0) r = a + b;
    else if (op_type == 1) r = a - b;
    else if (op_type == 2) r = a * b;
    else r = max(a, b);
#if NCNN_image_shader
    image3d_st4(top_blob, ivec3(gx, gy, gz), r);
#else
    buffer_st4(top_blob_data, gi, r);
#endif
}
"#"##;

fn main() {
    let input: proc_macro2::TokenStream = KERNEL.parse().expect("kernel tokens");
    let run = || {
        let t = Instant::now();
        let out = vkprism_compiler::expand(input.clone());
        let dt = t.elapsed();
        let s = out.to_string();
        assert!(
            !s.contains("compile_error"),
            "kernel failed to compile: {s}"
        );
        (dt, s.matches("VariantInfo {").count())
    };
    let (_, variants) = run();
    let mut times: Vec<f64> = (0..15).map(|_| run().0.as_secs_f64() * 1e3).collect();
    times.sort_by(f64::total_cmp);
    let cores = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1);
    println!(
        "expand binary_op: {variants} variants, median {:.1} ms (min {:.1}, max {:.1}) over 15 runs, {cores} cores, {} build",
        times[7],
        times[0],
        times[14],
        if cfg!(debug_assertions) { "debug" } else { "release" }
    );
}
