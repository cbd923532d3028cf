//! The vulkano-shaders keys on the real driver (validation layer on): `define`, `include`
//! search paths, several kernels in one invocation, `vulkan_version`, precompiled `bytes`. Every
//! variant the device runs against a CPU reference on random non-zero data, outputs poisoned
//! first. The bad forms are trybuild cases (`tests/ui/parse`, `tests/ui/source`) and
//! `compiler/tests/parity.rs`.

use vkprism::{CommandList, Context, LoadOptions, Tensor};
use vkprism_testkit::*;

vkprism::compute_shader! {
    /// Kernels sharing defines and an include path, each its own module.
    pub mod parity,
    define: [("FACTOR", "3.0"), ("OFFSET", "1.0"), ("FLAG", "")],
    include: ["tests/parity/include"],
    shaders: {
        /// y = x * 3 + 1 through `#include <scale.glsl>` and the global defines.
        global: {
            src: r#"
#version 450
#ifndef FLAG
#error the global define FLAG did not reach the kernel
#endif
#include <scale.glsl>
layout (binding = 0) readonly buffer x_blob { sfp x_data[]; };
layout (binding = 1) writeonly buffer y_blob { sfp y_data[]; };
layout (push_constant) uniform parameter { int n; } p;
void main() {
    const int i = int(gl_GlobalInvocationID.x);
    if (i >= p.n) return;
    buffer_st1(y_data, i, scale_of(buffer_ld1(x_data, i)));
}
"#,
        },
        /// y = x * 5 + 1: its own FACTOR overrides the global one; `#include "…"` finds the
        /// file in the search path, not beside this file.
        own: {
            src: r#"
#version 450
#include "scale.glsl"
layout (binding = 0) readonly buffer x_blob { sfp x_data[]; };
layout (binding = 1) writeonly buffer y_blob { sfp y_data[]; };
layout (push_constant) uniform parameter { int n; } p;
void main() {
    const int i = int(gl_GlobalInvocationID.x);
    if (i >= p.n) return;
    buffer_st1(y_data, i, scale_of(buffer_ld1(x_data, i)));
}
"#,
            define: [("FACTOR", "5.0")],
        },
        /// y = x * 3 + 1 compiled for Vulkan 1.3 (SPIR-V 1.6).
        v13: {
            src: r#"
#version 450
#include <scale.glsl>
layout (binding = 0) readonly buffer x_blob { sfp x_data[]; };
layout (binding = 1) writeonly buffer y_blob { sfp y_data[]; };
layout (push_constant) uniform parameter { int n; } p;
void main() {
    const int i = int(gl_GlobalInvocationID.x);
    if (i >= p.n) return;
    buffer_st1(y_data, i, scale_of(buffer_ld1(x_data, i)));
}
"#,
            vulkan_version: "1.3",
        },
    },
}

vkprism::compute_shader! {
    /// y = a * x + y + b, precompiled by glslang (`tests/parity/saxpy.comp`).
    pub mod saxpy,
    bytes: "parity/saxpy.spv",
}

/// Runs `$k` (a module of `x_blob` → `y_blob`, push `n`) in every variant the device runs and
/// checks `y = x * factor + 1`.
macro_rules! check_every_variant {
    ($ctx:expr, $k:path, $factor:expr) => {{
        use $k as k;
        let ctx: &Context = $ctx;
        let runnable = ctx.runnable_variants::<k::Kernel>();
        assert!(!runnable.is_empty());
        let n = 1000;
        let x = random(n, 8);
        for v in runnable {
            let name = v.key.name();
            let kernel = ctx
                .load_with::<k::Kernel>(&LoadOptions::variant_named(&name).unwrap())
                .unwrap();
            let fmt = kernel.variant().binding("x_blob").unwrap().format;
            let xt = Tensor::from_f32(ctx, &[n], fmt, &x).unwrap();
            let yt = Tensor::from_f32(ctx, &[n], fmt, &vec![f32::NAN; n]).unwrap();
            let pipeline = kernel.pipeline(&k::SpecConstants::default(), None).unwrap();
            ctx.run(|list| {
                list.dispatch(
                    &pipeline,
                    &k::BufferBindings {
                        x_blob: &xt,
                        y_blob: &yt,
                    },
                    &k::PushConstants { n: n as i32 },
                    [n as u32, 1, 1],
                )
            })
            .unwrap();
            let want: Vec<f32> = quantize(&x, fmt)
                .iter()
                .map(|v| v * $factor + 1.0)
                .collect();
            let got = yt.download_f32().unwrap();
            assert_close(
                &got,
                &want,
                tolerance(&v.key),
                &format!("{} {name}", stringify!($k)),
            );
        }
        assert_clean(ctx);
    }};
}

#[test]
fn global_defines_and_angle_includes_reach_every_variant() {
    check_every_variant!(&ctx(), parity::global, 3.0);
}

#[test]
fn a_kernel_define_overrides_the_global_one_and_quoted_includes_fall_back_to_the_search_path() {
    check_every_variant!(&ctx(), parity::own, 5.0);
}

#[test]
fn kernels_of_one_invocation_are_separate_modules() {
    assert_eq!(parity::global::INFO.name, "global");
    assert_eq!(parity::own::INFO.name, "own");
    // The same text with different defines: different SPIR-V.
    assert_ne!(
        parity::global::VARIANTS[0].spirv,
        parity::own::VARIANTS[0].spirv
    );
}

#[test]
fn a_vulkan_1_3_kernel_runs_where_the_device_offers_1_3_and_names_both_versions_where_not() {
    let ctx = ctx();
    for v in parity::v13::VARIANTS {
        assert_eq!(v.vulkan_version, vkprism::api_version(1, 3));
        assert_eq!(v.spirv[1], 0x0001_0600, "SPIR-V 1.6");
    }
    if ctx.features().api_version >> 12 >= vkprism::api_version(1, 3) >> 12 {
        check_every_variant!(&ctx, parity::v13, 3.0);
    } else {
        let Err(e) = ctx.load::<parity::v13::Kernel>() else {
            panic!("a Vulkan 1.3 kernel loaded on an older device");
        };
        let e = e.to_string();
        assert!(e.contains("compiled for Vulkan 1.3"), "{e}");
    }
}

#[test]
fn a_precompiled_module_has_typed_bindings_push_and_spec_constants() {
    let ctx = ctx();
    assert_eq!(saxpy::VARIANT_NAMES, ["fp32"]);
    let kernel = ctx.load::<saxpy::Kernel>().unwrap();
    let n = 777;
    let (x, y) = (random(n, 1), random(n, 2));
    let xt = Tensor::from_f32(&ctx, &[n], vkprism::TensorFormat::F32, &x).unwrap();
    let yt = Tensor::from_f32(&ctx, &[n], vkprism::TensorFormat::F32, &y).unwrap();
    // The spec constant `a` reflected with its default (2.0), set to 0.5 here.
    assert_eq!(saxpy::SpecConstants::default().a, 2.0);
    let pipeline = kernel
        .pipeline(&saxpy::SpecConstants { a: 0.5 }, Some([64, 1, 1]))
        .unwrap();
    let mut list = CommandList::new(&ctx).unwrap();
    list.dispatch(
        &pipeline,
        &saxpy::BufferBindings {
            x_blob: &xt,
            y_blob: &yt,
        },
        &saxpy::PushConstants {
            n: n as i32,
            b: 0.25,
        },
        [n as u32, 1, 1],
    )
    .unwrap();
    list.submit_and_wait().unwrap();
    let want: Vec<f32> = x.iter().zip(&y).map(|(x, y)| 0.5 * x + y + 0.25).collect();
    assert_close(&yt.download_f32().unwrap(), &want, 1e-5, "saxpy");
    assert_clean(&ctx);
}
