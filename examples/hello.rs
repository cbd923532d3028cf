//! The main job: compile a kernel with `compute_shader!` (at build time), open whatever Vulkan
//! device exists (lavapipe when there is no GPU), print the device report and the variant the
//! runtime picks and why, run the kernel, check it against the CPU, and time a replayed list.
//!
//!     scripts/setup.sh && cargo run --release --example hello

use std::time::Instant;
use vkprism::{CommandList, Context, Tensor};

vkprism::compute_shader! {
    /// y = x * scale + bias (the seed's "load sfpvec4, add, store", with parameters).
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

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let ctx = Context::new()?;
    println!("{}\n", ctx.report());

    let kernel = ctx.load::<axpb::Kernel>()?;
    println!(
        "kernel axpb: {} variants compiled at build time: {}",
        axpb::VARIANTS.len(),
        axpb::VARIANT_NAMES.join(", ")
    );
    println!("picked: {}\n", kernel.selection());

    let n = 1 << 20;
    let x: Vec<f32> = (0..n)
        .map(|i| ((i % 1000) as f32 - 499.5) / 100.0)
        .collect();
    let format = kernel.format_of("x_blob")?;
    let xt = Tensor::from_f32(&ctx, &[n], format, &x)?;
    let yt = Tensor::new(&ctx, &[n], format)?;
    let pipeline = kernel.pipeline(&axpb::SpecConstants::default(), Some([256, 1, 1]))?;
    let push = axpb::PushConstants {
        n: (n / 4) as i32,
        scale: 2.0,
        bias: 1.0,
    };
    let mut list = CommandList::new(&ctx)?;
    list.dispatch(
        &pipeline,
        &axpb::BufferBindings {
            x_blob: &xt,
            y_blob: &yt,
        },
        &push,
        [(n / 4) as u32, 1, 1],
    )?;
    list.submit_and_wait()?;

    let y = yt.download_f32()?;
    let worst = x
        .iter()
        .zip(&y)
        .map(|(x, y)| ((x * 2.0 + 1.0) - y).abs() / (x * 2.0 + 1.0).abs().max(1.0))
        .fold(0f32, f32::max);
    println!("y = 2x + 1 on {n} elements ({format:?} storage): worst relative error {worst:.2e}");
    if worst > 1e-2 {
        return Err(format!("result differs from the CPU: {worst}").into());
    }

    let runs = 20;
    let t = Instant::now();
    for _ in 0..runs {
        list.submit_and_wait()?;
    }
    let per = t.elapsed() / runs;
    let bytes = (n * format.size() * 2) as f64;
    println!(
        "replayed {runs} times: {per:?} per run (submit + wait), {:.2} GB/s",
        bytes / per.as_secs_f64() / 1e9
    );
    Ok(())
}
