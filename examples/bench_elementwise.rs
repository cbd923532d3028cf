//! Memory-bound throughput: y = 2x + 1 over vec4s in each storage precision, timed with GPU
//! timestamps (median of 30 after 20 warm-up runs), reported as bytes read + written per second,
//! best of workgroups 128/256/512/1024. Three forms of the kernel: one vec4 per invocation as
//! glslang emits it (`axpb`), the same through spirv-opt (`axpb_opt`), and four vec4 per
//! invocation, grid-strided (`axpb_x4`). Prints `vkprism <kernel>_<variant>_tbps <value>`;
//! bench/torch_ref.py prints PyTorch's.
//!
//!     cargo run --release --example bench_elementwise -- [MiB of fp32 input, default 1024]

use vkprism::{CommandList, Context, Tensor};

vkprism::compute_shader! {
    /// y = x * scale + bias, one vec4 per invocation.
    pub mod axpb,
    path: "kernels/axpb.comp",
}

vkprism::compute_shader! {
    /// The same, shipped through spirv-opt's performance passes.
    pub mod axpb_opt,
    path: "kernels/axpb.comp",
    optimize: true,
}

vkprism::compute_shader! {
    /// Four vec4 per invocation, strided by the grid size (coalesced).
    pub mod axpb_x4,
    src: r#"
#version 450
layout (binding = 0) readonly buffer x_blob { sfpvec4 x_data[]; };
layout (binding = 1) writeonly buffer y_blob { sfpvec4 y_data[]; };
layout (push_constant) uniform parameter { int n; float scale; float bias; } p;
void main() {
    const int stride = int(gl_NumWorkGroups.x * gl_WorkGroupSize.x);
    for (int k = 0; k < 4; k++) {
        const int i = int(gl_GlobalInvocationID.x) + k * stride;
        if (i >= p.n) return;
        afpvec4 v = buffer_ld4(x_data, i);
        buffer_st4(y_data, i, v * afp(p.scale) + afp(p.bias));
    }
}
"#,
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mib: usize = std::env::args()
        .nth(1)
        .map(|a| a.parse())
        .transpose()?
        .unwrap_or(1024);
    let ctx = Context::new()?;
    println!("# device: {}", ctx.device_name());
    let n = mib << 18; // floats
    let n4 = n / 4;
    let x: Vec<f32> = (0..n)
        .map(|i| ((i % 2001) as f32 - 1000.0) / 256.0 + 0.001)
        .collect();
    macro_rules! bench {
        ($m:ident, $per_invocation:expr) => {
            for variant in ["fp32", "fp16s", "fp16p", "fp16sa"] {
                let name = format!("{}_{variant}", stringify!($m));
                let k = match ctx.load_variant::<$m::Kernel>(variant) {
                    Ok(k) => k,
                    Err(e) => {
                        println!("# {name}: {e}");
                        continue;
                    }
                };
                let fmt = k.variant().bindings[0].format;
                let xt = Tensor::from_f32(&ctx, &[n], fmt, &x)?;
                let yt = Tensor::new(&ctx, &[n], fmt)?;
                let push = $m::PushConstants {
                    n: n4 as i32,
                    scale: 2.0,
                    bias: 1.0,
                };
                let mut best = (0.0f64, 0u32);
                for local in [128u32, 256, 512, 1024] {
                    let pipe = k.pipeline(&Default::default(), Some([local, 1, 1]))?;
                    let mut list = CommandList::with_total_timing(&ctx)?;
                    // Round the grid to whole workgroups so the stride covers every element.
                    let groups = (n4 as u32).div_ceil($per_invocation).div_ceil(local);
                    list.dispatch(
                        &pipe,
                        &$m::BufferBindings {
                            x_blob: &xt,
                            y_blob: &yt,
                        },
                        &push,
                        [groups * local, 1, 1],
                    )?;
                    list.submit_and_wait()?;
                    // Check before timing.
                    let y = yt.download_f32()?;
                    for i in (0..n).step_by(n / 997 + 1).chain([n - 1]) {
                        let want = x[i] * 2.0 + 1.0;
                        assert!(
                            (y[i] - want).abs() <= 2e-2 * want.abs().max(1.0),
                            "{name}: y[{i}] = {} want {want}",
                            y[i]
                        );
                    }
                    for _ in 0..20 {
                        list.submit_and_wait()?;
                    }
                    let mut t = Vec::new();
                    for _ in 0..30 {
                        list.submit_and_wait()?;
                        t.push(list.total_time()?.as_secs_f64());
                    }
                    t.sort_by(f64::total_cmp);
                    let tbps = (2 * n * fmt.size()) as f64 / t[15] / 1e12;
                    println!("# {name} workgroup {local}: {tbps:.3} TB/s");
                    if tbps > best.0 {
                        best = (tbps, local);
                    }
                }
                println!("vkprism {name}_tbps {:.3} (workgroup {})", best.0, best.1);
            }
        };
    }
    bench!(axpb, 1);
    bench!(axpb_opt, 1);
    bench!(axpb_x4, 4);
    Ok(())
}
