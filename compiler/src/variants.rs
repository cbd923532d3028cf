//! Phase 4, variants: the variants a kernel gets (only the axes it uses) and the user's narrowing.

use crate::ctxt::Ctxt;
use crate::scan::Axes;
use proc_macro2::Span;
use vkprism_core::{FactChoice, FloatMode, Int16Mode, Int8Mode, MemoryKind, VariantKey};

/// Every variant of a kernel with these axes and device-fact choices (`tested.rs`), in a fixed
/// order.
pub fn enumerate(axes: &Axes, choices: &[FactChoice]) -> Vec<VariantKey> {
    let floats: &[FloatMode] = if axes.float {
        &FloatMode::ALL
    } else {
        &[FloatMode::Fp32]
    };
    let int8s: Vec<Option<Int8Mode>> = if axes.int8 {
        Int8Mode::ALL.iter().copied().map(Some).collect()
    } else {
        vec![None]
    };
    let int16s: Vec<Option<Int16Mode>> = if axes.int16 {
        Int16Mode::ALL.iter().copied().map(Some).collect()
    } else {
        vec![None]
    };
    let mut memories = Vec::new();
    if axes.buffer {
        memories.push(MemoryKind::Buffer);
    }
    if axes.image {
        memories.push(MemoryKind::Image);
    }
    let lms: &[Option<bool>] = if axes.local_memory {
        &[Some(true), Some(false)]
    } else {
        &[None]
    };
    let mut out = Vec::new();
    for &memory in &memories {
        for &float in floats {
            // Images hold fp32 or fp16 texels; there is no bf16 image format.
            if memory == MemoryKind::Image && float.is_bf16() {
                continue;
            }
            // A packed variant of a kernel whose storage can't pack would be its fp32 variant
            // under a 16-bit name.
            if memory == MemoryKind::Buffer && axes.no_packed_storage && float.is_packed() {
                continue;
            }
            for &int8 in &int8s {
                for &int16 in &int16s {
                    for &local_memory in lms {
                        for coopmat in coopmat_values(axes, float, int8, memory) {
                            out.extend(choices.iter().map(|&facts| VariantKey {
                                float,
                                memory,
                                int8,
                                int16,
                                local_memory,
                                coopmat,
                                facts,
                            }));
                        }
                    }
                }
            }
        }
    }
    out
}

/// The most variants a kernel compiles unless `variants: [...]` names them: each costs build time
/// and binary size.
pub const MAX_VARIANTS: usize = 128;

/// The error for a kernel whose axes multiply past [`MAX_VARIANTS`], naming them.
fn too_many(axes: &Axes, choices: &[FactChoice], count: usize) -> String {
    let mut named = Vec::new();
    for (on, name) in [
        (axes.float, "float (×7)"),
        (axes.int8, "int8 (×3)"),
        (axes.int16, "int16 (×3)"),
        (axes.buffer && axes.image, "buffer and image"),
        (axes.local_memory, "local memory (×2)"),
        (axes.coopmat, "cooperative matrix (×2)"),
    ] {
        if on {
            named.push(name.to_string());
        }
    }
    if choices.len() > 1 {
        let first = choices[0].name_parts();
        named.push(format!(
            "device facts tested in `#if` (×{}: {})",
            choices.len(),
            first.trim_start_matches('_').replace('_', ", ")
        ));
    }
    format!(
        "this kernel would compile {count} variants, more than {MAX_VARIANTS}: its axes are {}; name the ones to build with `variants: [...]`",
        named.join(", ")
    )
}

/// The cooperative-matrix axis for one precision: on and off for fp16 and bf16 buffer variants
/// (matrices of `cmfp`: fp16, or bfloat16 through `bfloat16.rs`) and for fp32 buffer variants
/// with int8 arithmetic (int8 matrices, `int8_t` in registers); off only for the other fp32
/// variants (no device multiplies fp32 matrices, and converting to fp16 would silently lower the
/// precision the variant is named for) and for images.
fn coopmat_values(
    axes: &Axes,
    float: FloatMode,
    int8: Option<Int8Mode>,
    memory: MemoryKind,
) -> Vec<Option<bool>> {
    let int8_matrices = float == FloatMode::Fp32 && int8 == Some(Int8Mode::Int8a);
    let matrices =
        (float.is_fp16() || float.is_bf16() || int8_matrices) && memory == MemoryKind::Buffer;
    match (axes.coopmat, axes.coopmat_only, matrices) {
        (false, _, _) => vec![None],
        (true, true, true) => vec![Some(true)],
        (true, true, false) => vec![],
        (true, false, true) => vec![Some(true), Some(false)],
        (true, false, false) => vec![Some(false)],
    }
}

/// The variants to emit: all of them, or the user's list checked against them. Errors go to
/// `cx`; `None` when there was one (or the list was empty, which `ast` reports).
pub fn select(
    cx: &Ctxt,
    span: Span,
    axes: &Axes,
    choices: &[FactChoice],
    requested: Option<Vec<(String, Span)>>,
) -> Option<Vec<VariantKey>> {
    let all = enumerate(axes, choices);
    let Some(requested) = requested else {
        if all.len() > MAX_VARIANTS {
            cx.error(span, too_many(axes, choices, all.len()));
            return None;
        }
        return Some(all);
    };
    let valid = || all.iter().map(|k| k.name()).collect::<Vec<_>>().join(", ");
    let mut out = Vec::new();
    let mut ok = true;
    for (name, span) in requested {
        match VariantKey::parse(&name) {
            Ok(k) if all.contains(&k) => {
                if out.contains(&k) {
                    cx.error(span, format!("variant `{name}` is listed twice"));
                    ok = false;
                } else {
                    out.push(k);
                }
            }
            Ok(k) => {
                let why = if k.memory == MemoryKind::Buffer
                    && axes.no_packed_storage
                    && k.float.is_packed()
                {
                    " (fp16p, fp16pa and bf16p pack storage through `sfpvec2`/`sfpvec4`/`sfpvec8`/`sfpmat4` buffers; a scalar `sfp` is a `float` there, so for this kernel those variants would store fp32)"
                } else {
                    ""
                };
                cx.error(
                    span,
                    format!(
                        "this kernel has no variant `{name}`{why}; its variants are: {}",
                        valid()
                    ),
                );
                ok = false;
            }
            Err(_) => {
                cx.error(
                    span,
                    format!(
                        "unknown variant `{name}`; this kernel's variants are: {}",
                        valid()
                    ),
                );
                ok = false;
            }
        }
    }
    if !ok || out.is_empty() {
        return None;
    }
    out.sort();
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn enumerate_all(axes: &Axes) -> Vec<VariantKey> {
        enumerate(axes, &[FactChoice::NONE])
    }

    #[test]
    fn axes_decide_variants() {
        assert_eq!(
            enumerate_all(&Axes {
                buffer: true,
                ..Default::default()
            })
            .len(),
            1
        );
        assert_eq!(
            enumerate_all(&Axes {
                buffer: true,
                float: true,
                ..Default::default()
            })
            .len(),
            7
        );
        // 7 buffer + 5 image (no bf16 images).
        assert_eq!(
            enumerate_all(&Axes {
                buffer: true,
                image: true,
                float: true,
                ..Default::default()
            })
            .len(),
            12
        );
        let v = enumerate_all(&Axes {
            buffer: true,
            float: true,
            int8: true,
            local_memory: true,
            ..Default::default()
        });
        assert_eq!(v.len(), 7 * 3 * 2);
        let v = enumerate_all(&Axes {
            buffer: true,
            int16: true,
            ..Default::default()
        });
        assert_eq!(
            v.iter().map(|k| k.name()).collect::<Vec<_>>(),
            ["fp32_int16p", "fp32_int16s", "fp32_int16a"]
        );
        // fp16 and bf16 buffer variants with and without cooperative matrices, fp32 without.
        let v = enumerate_all(&Axes {
            buffer: true,
            float: true,
            coopmat: true,
            ..Default::default()
        });
        assert_eq!(v.len(), 6 * 2 + 1);
        assert!(v
            .iter()
            .all(|k| k.coopmat != Some(true) || k.float.is_fp16() || k.float.is_bf16()));
        assert!(v.iter().any(|k| k.name() == "bf16s_cm"));
        assert!(!v.iter().any(|k| k.name() == "fp32_cm"));
        // Matrices only (ncnn's `#elif ncnn_VK_NV_cooperative_matrix` idiom): `_cm` variants
        // alone, none where matrices can't be.
        let v = enumerate_all(&Axes {
            buffer: true,
            float: true,
            coopmat: true,
            coopmat_only: true,
            ..Default::default()
        });
        let names: Vec<String> = v.iter().map(|k| k.name()).collect();
        assert_eq!(
            names,
            [
                "fp16p_cm",
                "fp16pa_cm",
                "fp16s_cm",
                "fp16sa_cm",
                "bf16p_cm",
                "bf16s_cm"
            ]
        );
        // Device facts multiply every other axis.
        let dot = [true, false].map(|on| FactChoice {
            dot: Some(on),
            ..FactChoice::NONE
        });
        let v = enumerate(
            &Axes {
                buffer: true,
                int8: true,
                ..Default::default()
            },
            &dot,
        );
        assert_eq!(v.len(), 6);
        assert_eq!(v[0].name(), "fp32_int8p_dot");
        assert_eq!(v[1].name(), "fp32_int8p_nodot");
        // int8 arithmetic in fp32 variants gets the axis too (int8 matrices).
        let v = enumerate_all(&Axes {
            buffer: true,
            int8: true,
            coopmat: true,
            ..Default::default()
        });
        let names: Vec<String> = v.iter().map(|k| k.name()).collect();
        assert_eq!(
            names,
            [
                "fp32_int8p_nocm",
                "fp32_int8s_nocm",
                "fp32_int8a_cm",
                "fp32_int8a_nocm"
            ],
        );
        // Scalar-only storage: no packed buffer variants, which would store fp32.
        let v = enumerate_all(&Axes {
            buffer: true,
            float: true,
            no_packed_storage: true,
            ..Default::default()
        });
        assert_eq!(
            v.iter().map(|k| k.name()).collect::<Vec<_>>(),
            ["fp32", "fp16s", "fp16sa", "bf16s"]
        );
        let mut names: Vec<_> = v.iter().map(|k| k.name()).collect();
        names.dedup();
        assert_eq!(names.len(), v.len());
    }
}
