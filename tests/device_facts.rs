//! Device facts a kernel tests in `#if` (integer dot products, subgroup operations, other
//! features, vendor and driver ids) are variant axes: every variant runs and computes the same
//! result by its own path, and the runtime picks the one compiled for the device's facts. A
//! kernel that requires an extension outside any `#if` records what it needs, and the runtime
//! picks it only where the device has it.

use vkprism::{FactChoice, Feature, IdChoice, LoadOptions, Tensor, TensorFormat, VariantKey};
use vkprism_testkit::*;

vkprism::compute_shader! {
    /// c[i] = dot(a[i], b[i]) over four packed int8 lanes (a dot-product instruction, or
    /// shifts), plus the sum of its workgroup's 64 values of c (subgroup arithmetic, or shared
    /// memory); w[i] says which paths the variant compiled.
    pub mod facts,
    src: r#"
#version 450
#if ncnn_VK_KHR_shader_integer_dot_product && ncnn_shaderIntegerDotProduct
#extension GL_EXT_integer_dot_product : require
#endif
#if ncnn_subgroup_basic && ncnn_subgroup_arithmetic
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#endif
layout (local_size_x = 64) in;
layout (binding = 0) readonly buffer a_blob { int a_data[]; };
layout (binding = 1) readonly buffer b_blob { int b_data[]; };
layout (binding = 2) writeonly buffer c_blob { int c_data[]; };
layout (binding = 3) writeonly buffer s_blob { int s_data[]; };
layout (binding = 4) writeonly buffer w_blob { int w_data[]; };
layout (push_constant) uniform parameter { int n; } p;
shared int partial[64];
void main() {
    const int i = int(gl_GlobalInvocationID.x);
    const int l = int(gl_LocalInvocationID.x);
    int which = 0;
    int c = 0;
    if (i < p.n) {
#if ncnn_VK_KHR_shader_integer_dot_product && ncnn_shaderIntegerDotProduct
        c = dotPacked4x8EXT(a_data[i], b_data[i]);
        which |= 1;
#else
        for (int k = 0; k < 4; k++) {
            c += bitfieldExtract(a_data[i], 8 * k, 8) * bitfieldExtract(b_data[i], 8 * k, 8);
        }
#endif
        c_data[i] = c;
    }
#if ncnn_subgroup_basic && ncnn_subgroup_arithmetic
    const int s = subgroupAdd(c);
    if (subgroupElect()) {
        partial[gl_SubgroupID] = s;
    }
    barrier();
    const int parts = int(gl_NumSubgroups);
    which |= 2;
#else
    partial[l] = c;
    barrier();
    const int parts = 64;
#endif
    if (l == 0) {
        int sum = 0;
        for (int k = 0; k < parts; k++) {
            sum += partial[k];
        }
        s_data[gl_WorkGroupID.x] = sum;
    }
#if ncnn_shaderInt64
    which |= 4;
#endif
#if ncnn_vendorID == 4318
    which |= 8;
#endif
#if ncnn_driverID == 13
    which |= 16;
#endif
    if (i < p.n) {
        w_data[i] = which;
    }
}
"#,
}

/// The paths a variant compiled, as the kernel's `which` encodes them.
fn paths(f: &FactChoice) -> i32 {
    i32::from(f.dot == Some(true))
        | i32::from(f.subgroup == Some(true)) << 1
        | i32::from(f.features == Some(true)) << 2
        | i32::from(f.vendor == Some(IdChoice::Is(4318))) << 3
        | i32::from(f.driver == Some(IdChoice::Is(13))) << 4
}

#[test]
fn every_fact_variant_computes_the_same_and_the_devices_own_is_chosen() {
    let ctx = ctx();
    let n: usize = 64 * 5 + 17; // a partial last workgroup
    let groups = n.div_ceil(64);
    let a: Vec<i32> = random_i8(n * 4, 41)
        .chunks(4)
        .map(|c| i32::from_le_bytes([c[0] as u8, c[1] as u8, c[2] as u8, c[3] as u8]))
        .collect();
    let b: Vec<i32> = random_i8(n * 4, 42)
        .chunks(4)
        .map(|c| i32::from_le_bytes([c[0] as u8, c[1] as u8, c[2] as u8, c[3] as u8]))
        .collect();
    let lanes = |v: i32| v.to_le_bytes().map(|x| i32::from(x as i8));
    let want_c: Vec<i32> = a
        .iter()
        .zip(&b)
        .map(|(x, y)| lanes(*x).iter().zip(lanes(*y)).map(|(p, q)| p * q).sum())
        .collect();
    let want_s: Vec<i32> = want_c.chunks(64).map(|c| c.iter().sum()).collect();
    // dot, sg, feat ×2 each; vendor 4318 or other; driver 13 or other.
    assert_eq!(facts::VARIANTS.len(), 32);
    let tensor = |data: &[i32]| {
        let t = Tensor::new(&ctx, &[data.len()], TensorFormat::I32).unwrap();
        t.upload_i32(data).unwrap();
        t
    };
    let (at, bt) = (tensor(&a), tensor(&b));
    for name in facts::VARIANT_NAMES {
        let key = VariantKey::parse(name).unwrap();
        let k = match ctx.load_with::<facts::Kernel>(&LoadOptions::variant_named(name).unwrap()) {
            Ok(k) => k,
            // A `_dot` or `_sg` variant needs what its module declares; lavapipe and the H100
            // have both, so only a device without them may leave one out, saying why.
            Err(e) => {
                let why = e.to_string();
                assert!(
                    (key.facts.dot == Some(true)
                        && !ctx.features().supports(Feature::IntegerDotProduct))
                        || (key.facts.subgroup == Some(true)
                            && !ctx.features().supports(Feature::SubgroupArithmetic)),
                    "{name}: {why}"
                );
                continue;
            }
        };
        let (ct, st, wt) = (
            tensor(&vec![0x5555_5555; n]),
            tensor(&vec![0x5555_5555; groups]),
            tensor(&vec![0x5555_5555; n]),
        );
        let pipe = k.pipeline(&Default::default(), None).unwrap();
        ctx.run(|l| {
            l.dispatch(
                &pipe,
                &facts::BufferBindings {
                    a_blob: &at,
                    b_blob: &bt,
                    c_blob: &ct,
                    s_blob: &st,
                    w_blob: &wt,
                },
                &facts::PushConstants { n: n as i32 },
                [n as u32, 1, 1],
            )
        })
        .unwrap();
        assert_eq!(ct.download_i32().unwrap(), want_c, "{name} dot");
        assert_eq!(st.download_i32().unwrap(), want_s, "{name} workgroup sums");
        assert_eq!(
            wt.download_i32().unwrap(),
            vec![paths(&key.facts); n],
            "{name} compiled paths"
        );
    }
    // The default choice is the variant compiled for this device's facts.
    let f = ctx.features();
    let chosen = ctx.load::<facts::Kernel>().unwrap().variant().key.facts;
    let id = |actual: u32, compared: u32| {
        Some(if actual == compared {
            IdChoice::Is(compared)
        } else {
            IdChoice::Other
        })
    };
    assert_eq!(
        chosen,
        FactChoice {
            dot: Some(f.supports(Feature::IntegerDotProduct)),
            subgroup: Some(
                f.supports(Feature::SubgroupBasic) && f.supports(Feature::SubgroupArithmetic)
            ),
            features: Some(f.supports(Feature::ShaderInt64)),
            vendor: id(f.vendor_id, 4318),
            driver: id(f.driver_id, 13),
        },
        "vendor {:#x}, driver {}",
        f.vendor_id,
        f.driver_id
    );
    // The `_dot` modules declare the dot-product capability, which their variants require.
    for v in facts::VARIANTS {
        assert_eq!(
            v.requires().contains(Feature::IntegerDotProduct),
            v.key.facts.dot == Some(true),
            "{}",
            v.key
        );
        assert_eq!(
            v.requires().contains(Feature::SubgroupArithmetic),
            v.key.facts.subgroup == Some(true),
            "{}",
            v.key
        );
    }
    assert_clean(&ctx);
}

vkprism::compute_shader! {
    /// A kernel for cooperative matrices alone: it requires the extension outside any `#if`
    /// (as ncnn's `*_khr_cm_*` kernels do), so it has no `_cm` axis and every variant needs
    /// cooperative matrices. d = a × b for one 16×16×16 fp16 tile, stored fp32.
    pub mod matrices_only,
    src: r#"
#version 450
#extension GL_KHR_memory_scope_semantics : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#extension GL_KHR_cooperative_matrix : require
layout (local_size_x = 32) in;
layout (binding = 0) readonly buffer a_blob { float16_t a_data[]; };
layout (binding = 1) readonly buffer b_blob { float16_t b_data[]; };
layout (binding = 2) writeonly buffer d_blob { float d_data[]; };
void main() {
    coopmat<float16_t, gl_ScopeSubgroup, 16, 16, gl_MatrixUseA> a;
    coopmat<float16_t, gl_ScopeSubgroup, 16, 16, gl_MatrixUseB> b;
    coopMatLoad(a, a_data, 0, 16, gl_CooperativeMatrixLayoutRowMajor);
    coopMatLoad(b, b_data, 0, 16, gl_CooperativeMatrixLayoutRowMajor);
    coopmat<float, gl_ScopeSubgroup, 16, 16, gl_MatrixUseAccumulator> d =
        coopmat<float, gl_ScopeSubgroup, 16, 16, gl_MatrixUseAccumulator>(0.0);
    d = coopMatMulAdd(a, b, d);
    coopMatStore(d, d_data, 0, 16, gl_CooperativeMatrixLayoutRowMajor);
}
"#,
}

#[test]
fn an_unconditional_extension_is_required_by_every_variant_and_run_only_where_offered() {
    assert_eq!(matrices_only::VARIANT_NAMES, ["fp32"]);
    let v = &matrices_only::VARIANTS[0];
    for f in [Feature::CooperativeMatrix, Feature::ShaderFloat16] {
        assert!(v.requires().contains(f), "{f}: {}", v.requires());
    }
    let ctx = ctx();
    if !ctx.features().supports(Feature::CooperativeMatrix) {
        let Err(e) = ctx.load::<matrices_only::Kernel>() else {
            panic!("loaded without cooperative matrices");
        };
        let e = e.to_string();
        assert!(e.contains("cooperativeMatrix"), "{e}");
        return;
    }
    let k = ctx.load::<matrices_only::Kernel>().unwrap();
    let a = quantize(&random(256, 43), TensorFormat::F16);
    let b = quantize(&random(256, 44), TensorFormat::F16);
    let at = Tensor::from_f32(&ctx, &[256], TensorFormat::F16, &a).unwrap();
    let bt = Tensor::from_f32(&ctx, &[256], TensorFormat::F16, &b).unwrap();
    let dt = Tensor::from_f32(&ctx, &[256], TensorFormat::F32, &[f32::NAN; 256]).unwrap();
    let pipe = k.pipeline(&Default::default(), None).unwrap();
    ctx.run(|l| {
        l.dispatch(
            &pipe,
            &matrices_only::BufferBindings {
                a_blob: &at,
                b_blob: &bt,
                d_blob: &dt,
            },
            &vkprism::NoPushConstants::default(),
            [32, 1, 1],
        )
    })
    .unwrap();
    let want: Vec<f32> = (0..256)
        .map(|ij| {
            (0..16)
                .map(|k| a[ij / 16 * 16 + k] * b[k * 16 + ij % 16])
                .sum()
        })
        .collect();
    assert_close(&dt.download_f32().unwrap(), &want, 1e-3, "16×16×16");
    assert_clean(&ctx);
}
