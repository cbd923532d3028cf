//! Shared by the runtime's integration tests: a validated context on the real driver (lavapipe
//! here and in CI), hand-written kernels in the shape `compute_shader!` generates (SPIR-V from
//! `tests/shaders/*.comp`, rebuilt by `tests/shaders/build.sh`), data and comparison helpers.
#![allow(dead_code)]

use vkprism_runtime::{Context, ContextOptions, FloatMode, TensorFormat, VariantKey};

/// A context with the Khronos validation layer on. Fails loudly (never skips) without Vulkan.
pub fn ctx() -> Context {
    ctx_with(ContextOptions::default())
}

pub fn ctx_with(opts: ContextOptions) -> Context {
    let ctx = Context::with_options(ContextOptions {
        validation: Some(true),
        ..opts
    })
    .unwrap_or_else(|e| {
        panic!(
            "a Vulkan device with the validation layer is required (Debian: mesa-vulkan-drivers \
             vulkan-validationlayers): {e}"
        )
    });
    assert!(ctx.validation_enabled());
    ctx
}

/// Fails the test if the validation layer said anything.
pub fn assert_clean(ctx: &Context) {
    if let Err(e) = ctx.check_validation() {
        panic!("{e}");
    }
}

/// `n` pseudo-random values in ±[0.1, 4], never zero (a fixed LCG: no dependency on rand's
/// version for reproducibility).
pub fn random(n: usize, seed: u64) -> Vec<f32> {
    let mut s = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    (0..n)
        .map(|_| {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let u = (s >> 40) as f32 / (1u64 << 24) as f32;
            let m = 0.1 + 3.9 * u;
            if (s >> 20) & 1 == 0 {
                m
            } else {
                -m
            }
        })
        .collect()
}

/// `x` rounded to what `format` stores.
pub fn quantize(x: &[f32], format: TensorFormat) -> Vec<f32> {
    match format {
        TensorFormat::F16 => x.iter().map(|v| half::f16::from_f32(*v).to_f32()).collect(),
        TensorFormat::Bf16 => x
            .iter()
            .map(|v| half::bf16::from_f32(*v).to_f32())
            .collect(),
        _ => x.to_vec(),
    }
}

/// Relative tolerance per variant precision.
pub fn tolerance(key: &VariantKey) -> f32 {
    match key.float {
        FloatMode::Fp32 => 1e-6,
        FloatMode::Fp16p | FloatMode::Fp16s => 1e-3,
        FloatMode::Fp16pa | FloatMode::Fp16sa => 4e-3,
        FloatMode::Bf16p | FloatMode::Bf16s => 8e-3,
    }
}

pub fn assert_close(got: &[f32], want: &[f32], tol: f32, what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        let err = (g - w).abs() / w.abs().max(1.0);
        assert!(
            err <= tol && g.is_finite(),
            "{what}: element {i}: got {g}, want {w} (rel err {err:.2e} > {tol:.0e})"
        );
    }
}

const fn local(default: u32, spec_id: u32) -> vkprism_runtime::__private::LocalSizeDim {
    vkprism_runtime::__private::LocalSizeDim {
        default,
        spec_id: Some(spec_id),
    }
}

/// `y = x * a + b + c` with push constants `a, b, n` and specialization constant `c` (id 0), in
/// every float variant and two image variants: what `compute_shader!` would generate for it.
pub mod scale {
    use vkprism_runtime::__private::*;

    pub struct Kernel;

    #[repr(C)]
    #[derive(Copy, Clone, Debug, Default)]
    pub struct PushConstants {
        pub a: f32,
        pub b: f32,
        pub n: u32,
    }
    unsafe impl bytemuck::Zeroable for PushConstants {}
    unsafe impl bytemuck::Pod for PushConstants {}

    #[derive(Copy, Clone, Debug, Default)]
    pub struct SpecConstants {
        pub c: f32,
    }
    impl vkprism_runtime::__private::SpecConstants for SpecConstants {
        fn entries(&self) -> Vec<(u32, u32)> {
            vec![(0, self.c.to_bits())]
        }
    }

    pub struct BufferBindings<'a> {
        pub x: &'a Tensor,
        pub y: &'a Tensor,
    }
    impl<'a> Bindings<'a> for BufferBindings<'a> {
        type Kernel = Kernel;
        const MEMORY: MemoryKind = MemoryKind::Buffer;
        fn resources(&self) -> impl IntoIterator<Item = (u32, Resource<'a>)> {
            [(0, Resource::Buffer(self.x)), (1, Resource::Buffer(self.y))]
        }
    }

    pub struct ImageBindings<'a> {
        pub x: &'a Image,
        pub y: &'a Image,
    }
    impl<'a> Bindings<'a> for ImageBindings<'a> {
        type Kernel = Kernel;
        const MEMORY: MemoryKind = MemoryKind::Image;
        fn resources(&self) -> impl IntoIterator<Item = (u32, Resource<'a>)> {
            [(0, Resource::Image(self.x)), (1, Resource::Image(self.y))]
        }
    }

    const fn buf(
        binding: u32,
        name: &'static str,
        access: Access,
        scalar: ScalarKind,
        stride: u32,
        format: TensorFormat,
    ) -> BindingInfo {
        BindingInfo {
            set: 0,
            binding,
            name,
            kind: BindingKind::StorageBuffer,
            access,
            element: ElementType {
                scalar,
                components: 1,
                stride,
            },
            format,
            dims: 0,
        }
    }

    const fn xy(scalar: ScalarKind, stride: u32, format: TensorFormat) -> [BindingInfo; 2] {
        [
            buf(0, "X", Access::ReadOnly, scalar, stride, format),
            buf(1, "Y", Access::WriteOnly, scalar, stride, format),
        ]
    }

    const fn img(format: TensorFormat) -> [BindingInfo; 2] {
        let e = ElementType {
            scalar: ScalarKind::F32,
            components: 4,
            stride: 0,
        };
        [
            BindingInfo {
                set: 0,
                binding: 0,
                name: "x",
                kind: BindingKind::SampledImage,
                access: Access::ReadOnly,
                element: e,
                format,
                dims: 1,
            },
            BindingInfo {
                set: 0,
                binding: 1,
                name: "y",
                kind: BindingKind::StorageImage,
                access: Access::WriteOnly,
                element: e,
                format,
                dims: 1,
            },
        ]
    }

    const fn variant(
        float: FloatMode,
        memory: MemoryKind,
        spirv: &'static [u32],
        bindings: &'static [BindingInfo],
    ) -> VariantInfo {
        let key = VariantKey {
            float,
            memory,
            int8: None,
            local_memory: None,
            coopmat: None,
        };
        VariantInfo {
            key,
            requires: key.requires(),
            spirv,
            bindings,
            cooperative_matrices: &[],
        }
    }

    use MemoryKind::{Buffer, Image as Img};
    use ScalarKind::{F16, F32, U16, U32};
    pub static VARIANTS: [VariantInfo; 9] = [
        variant(
            FloatMode::Fp32,
            Buffer,
            vkprism_runtime::include_spirv!("../shaders/scale_fp32.spv"),
            &xy(F32, 4, TensorFormat::F32),
        ),
        variant(
            FloatMode::Fp16p,
            Buffer,
            vkprism_runtime::include_spirv!("../shaders/scale_fp16p.spv"),
            &xy(U32, 4, TensorFormat::F16),
        ),
        variant(
            FloatMode::Fp16pa,
            Buffer,
            vkprism_runtime::include_spirv!("../shaders/scale_fp16pa.spv"),
            &xy(U32, 4, TensorFormat::F16),
        ),
        variant(
            FloatMode::Fp16s,
            Buffer,
            vkprism_runtime::include_spirv!("../shaders/scale_fp16s.spv"),
            &xy(F16, 2, TensorFormat::F16),
        ),
        variant(
            FloatMode::Fp16sa,
            Buffer,
            vkprism_runtime::include_spirv!("../shaders/scale_fp16sa.spv"),
            &xy(F16, 2, TensorFormat::F16),
        ),
        variant(
            FloatMode::Bf16p,
            Buffer,
            vkprism_runtime::include_spirv!("../shaders/scale_bf16p.spv"),
            &xy(U32, 4, TensorFormat::Bf16),
        ),
        variant(
            FloatMode::Bf16s,
            Buffer,
            vkprism_runtime::include_spirv!("../shaders/scale_bf16s.spv"),
            &xy(U16, 2, TensorFormat::Bf16),
        ),
        variant(
            FloatMode::Fp32,
            Img,
            vkprism_runtime::include_spirv!("../shaders/scale_fp32_image.spv"),
            &img(TensorFormat::F32),
        ),
        variant(
            FloatMode::Fp16s,
            Img,
            vkprism_runtime::include_spirv!("../shaders/scale_fp16s_image.spv"),
            &img(TensorFormat::F16),
        ),
    ];

    pub static INFO: KernelInfo = KernelInfo {
        name: "scale",
        variants: &VARIANTS,
        push_constants: Some(PushConstantInfo { size: 12 }),
        spec_constants: &[SpecConstantInfo {
            id: 0,
            name: "c",
            scalar: ScalarKind::F32,
            default_bits: 0,
        }],
        local_size: [
            super::local(64, 233),
            super::local(1, 234),
            super::local(1, 235),
        ],
    };

    impl vkprism_runtime::__private::Kernel for Kernel {
        const INFO: &'static KernelInfo = &INFO;
        type PushConstants = PushConstants;
        type SpecConstants = SpecConstants;
    }

    /// Invocations a variant needs for `n` elements (packed variants do two per invocation).
    pub fn global(key: &VariantKey, n: u32) -> u32 {
        if key.float.is_packed() {
            n / 2
        } else {
            n
        }
    }
}

/// `y[i] = 2 * x[i]` from int8 to int32, in int8p / int8s / int8a: no specialization constants.
pub mod widen {
    use vkprism_runtime::__private::*;

    pub struct Kernel;

    #[repr(C)]
    #[derive(Copy, Clone, Debug, Default)]
    pub struct PushConstants {
        pub n: u32,
    }
    unsafe impl bytemuck::Zeroable for PushConstants {}
    unsafe impl bytemuck::Pod for PushConstants {}

    #[derive(Copy, Clone, Debug, Default)]
    pub struct SpecConstants {}
    impl vkprism_runtime::__private::SpecConstants for SpecConstants {
        fn entries(&self) -> Vec<(u32, u32)> {
            Vec::new()
        }
    }

    pub struct BufferBindings<'a> {
        pub x: &'a Tensor,
        pub y: &'a Tensor,
    }
    impl<'a> Bindings<'a> for BufferBindings<'a> {
        type Kernel = Kernel;
        const MEMORY: MemoryKind = MemoryKind::Buffer;
        fn resources(&self) -> impl IntoIterator<Item = (u32, Resource<'a>)> {
            [(0, Resource::Buffer(self.x)), (1, Resource::Buffer(self.y))]
        }
    }

    const fn bindings(x_scalar: ScalarKind, x_stride: u32) -> [BindingInfo; 2] {
        [
            BindingInfo {
                set: 0,
                binding: 0,
                name: "X",
                kind: BindingKind::StorageBuffer,
                access: Access::ReadOnly,
                element: ElementType {
                    scalar: x_scalar,
                    components: 1,
                    stride: x_stride,
                },
                format: TensorFormat::I8,
                dims: 0,
            },
            BindingInfo {
                set: 0,
                binding: 1,
                name: "Y",
                kind: BindingKind::StorageBuffer,
                access: Access::WriteOnly,
                element: ElementType {
                    scalar: ScalarKind::I32,
                    components: 1,
                    stride: 4,
                },
                format: TensorFormat::I32,
                dims: 0,
            },
        ]
    }

    const fn variant(
        int8: Int8Mode,
        spirv: &'static [u32],
        bindings: &'static [BindingInfo],
    ) -> VariantInfo {
        let key = VariantKey {
            float: FloatMode::Fp32,
            memory: MemoryKind::Buffer,
            int8: Some(int8),
            local_memory: None,
            coopmat: None,
        };
        VariantInfo {
            key,
            requires: key.requires(),
            spirv,
            bindings,
            cooperative_matrices: &[],
        }
    }

    pub static VARIANTS: [VariantInfo; 3] = [
        variant(
            Int8Mode::Int8p,
            vkprism_runtime::include_spirv!("../shaders/widen_int8p.spv"),
            &bindings(ScalarKind::U32, 4),
        ),
        variant(
            Int8Mode::Int8s,
            vkprism_runtime::include_spirv!("../shaders/widen_int8s.spv"),
            &bindings(ScalarKind::I8, 1),
        ),
        variant(
            Int8Mode::Int8a,
            vkprism_runtime::include_spirv!("../shaders/widen_int8a.spv"),
            &bindings(ScalarKind::I8, 1),
        ),
    ];

    pub static INFO: KernelInfo = KernelInfo {
        name: "widen",
        variants: &VARIANTS,
        push_constants: Some(PushConstantInfo { size: 4 }),
        spec_constants: &[],
        local_size: [
            super::local(32, 233),
            super::local(1, 234),
            super::local(1, 235),
        ],
    };

    impl vkprism_runtime::__private::Kernel for Kernel {
        const INFO: &'static KernelInfo = &INFO;
        type PushConstants = PushConstants;
        type SpecConstants = SpecConstants;
    }
}

/// `x[i] += 1` on 64 floats in place, no push constants (`NoPushConstants`): chains of
/// dependent dispatches.
pub mod tiny {
    use vkprism_runtime::__private::*;

    pub struct Kernel;
    pub type PushConstants = NoPushConstants;

    #[derive(Copy, Clone, Debug, Default)]
    pub struct SpecConstants {}
    impl vkprism_runtime::__private::SpecConstants for SpecConstants {
        fn entries(&self) -> Vec<(u32, u32)> {
            Vec::new()
        }
    }

    pub struct BufferBindings<'a> {
        pub x: &'a Tensor,
    }
    impl<'a> Bindings<'a> for BufferBindings<'a> {
        type Kernel = Kernel;
        const MEMORY: MemoryKind = MemoryKind::Buffer;
        fn resources(&self) -> impl IntoIterator<Item = (u32, Resource<'a>)> {
            [(0, Resource::Buffer(self.x))]
        }
    }

    pub static VARIANTS: [VariantInfo; 1] = [VariantInfo {
        key: VariantKey::new(FloatMode::Fp32),
        requires: FeatureSet::EMPTY,
        spirv: vkprism_runtime::include_spirv!("../shaders/tiny.spv"),
        bindings: &[BindingInfo {
            set: 0,
            binding: 0,
            name: "X",
            kind: BindingKind::StorageBuffer,
            access: Access::ReadWrite,
            element: ElementType {
                scalar: ScalarKind::F32,
                components: 1,
                stride: 4,
            },
            format: TensorFormat::F32,
            dims: 0,
        }],
        cooperative_matrices: &[],
    }];

    pub static INFO: KernelInfo = KernelInfo {
        name: "tiny",
        variants: &VARIANTS,
        push_constants: None,
        spec_constants: &[],
        local_size: [
            super::local(64, 233),
            super::local(1, 234),
            super::local(1, 235),
        ],
    };

    impl vkprism_runtime::__private::Kernel for Kernel {
        const INFO: &'static KernelInfo = &INFO;
        type PushConstants = PushConstants;
        type SpecConstants = SpecConstants;
    }
}

/// `x[i] = gl_NumWorkGroups.x`: a kernel whose too-large dispatches can't be split.
pub mod groups {
    use vkprism_runtime::__private::*;

    pub struct Kernel;

    pub struct BufferBindings<'a> {
        pub x: &'a Tensor,
    }
    impl<'a> Bindings<'a> for BufferBindings<'a> {
        type Kernel = Kernel;
        const MEMORY: MemoryKind = MemoryKind::Buffer;
        fn resources(&self) -> impl IntoIterator<Item = (u32, Resource<'a>)> {
            [(0, Resource::Buffer(self.x))]
        }
    }

    pub static VARIANTS: [VariantInfo; 1] = [VariantInfo {
        key: VariantKey::new(FloatMode::Fp32),
        requires: FeatureSet::EMPTY,
        spirv: vkprism_runtime::include_spirv!("../shaders/groups.spv"),
        bindings: super::tiny::VARIANTS[0].bindings,
        cooperative_matrices: &[],
    }];

    pub static INFO: KernelInfo = KernelInfo {
        name: "groups",
        variants: &VARIANTS,
        ..super::tiny::INFO
    };

    impl vkprism_runtime::__private::Kernel for Kernel {
        const INFO: &'static KernelInfo = &INFO;
        type PushConstants = NoPushConstants;
        type SpecConstants = super::tiny::SpecConstants;
    }
}
