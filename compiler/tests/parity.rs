//! The keys vulkano-shaders users expect (issue 8): `define`, `include` search paths,
//! `vulkan_version`, precompiled `bytes`, several kernels in one invocation. Errors here; the
//! kernels' results on a device are in the facade's `tests/parity.rs`.

use quote::quote;
use std::path::{Path, PathBuf};
use vkprism_compiler::{
    compile_kernel, expand, variant_glsl, Ctxt, KernelModel, KernelOptions, Source, VulkanVersion,
};
use vkprism_core::VariantKey;

/// A fresh scratch directory of this test's own.
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("vkprism-parity-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn compile(
    dir: &Path,
    text: &str,
    options: KernelOptions,
    variants: &[&str],
) -> Result<(KernelModel, Vec<String>), Vec<String>> {
    let cx = Ctxt::new();
    let requested = Some(
        variants
            .iter()
            .map(|v| (v.to_string(), proc_macro2::Span::call_site()))
            .collect(),
    );
    let built = Source::from_text_with(&cx, text, "k.comp", dir, options).and_then(|s| {
        let m = compile_kernel(&cx, &s, requested)?;
        let glsl = m
            .variants
            .iter()
            .map(|v| variant_glsl(&s, &v.key))
            .collect();
        Some((m, glsl))
    });
    match cx.check() {
        Ok(()) => Ok(built.expect("no errors, so a model")),
        Err(e) => Err(e.into_iter().map(|e| e.to_string()).collect()),
    }
}

const BODY: &str = "layout (binding = 0) buffer b { float d[]; };\nvoid main() { d[0] = VALUE; }\n";
/// A body with the float and cooperative-matrix axes, for `_cm` variants (external glslang).
const CM_BODY: &str = "#if NCNN_cooperative_matrix\n#endif\nlayout (binding = 0) buffer b { sfp d[]; };\nvoid main() { buffer_st1(d, 0, afp(VALUE)); }\n";

#[test]
fn angle_includes_search_the_include_dirs_and_quoted_ones_fall_back_to_them() {
    let dir = scratch("search");
    let (first, second) = (dir.join("first"), dir.join("second"));
    std::fs::create_dir_all(&first).unwrap();
    std::fs::create_dir_all(&second).unwrap();
    // `<value.glsl>` is in both: the first directory wins. `"other.glsl"` is not beside the
    // kernel: the search dirs have it.
    std::fs::write(first.join("value.glsl"), "#include \"other.glsl\"\n").unwrap();
    std::fs::write(
        second.join("value.glsl"),
        "#error the second directory was searched first\n",
    )
    .unwrap();
    std::fs::write(second.join("other.glsl"), "#define VALUE 7.0\n").unwrap();
    let options = KernelOptions {
        include_dirs: vec![first, second],
        ..KernelOptions::default()
    };
    let text = format!("#version 450\n#include <value.glsl>\n{BODY}");
    compile(&dir, &text, options.clone(), &["fp32"]).expect("compiles");
    // The cooperative-matrix variants go through the external glslang: the same files.
    let text = format!("#version 450\n#include <value.glsl>\n{CM_BODY}");
    let (model, _) = compile(&dir, &text, options, &["fp32_nocm", "fp16s_cm"]).expect("compiles");
    assert_eq!(model.variants.len(), 2);
}

#[test]
fn an_angle_include_found_nowhere_names_the_dirs_searched() {
    let dir = scratch("nowhere");
    let options = KernelOptions {
        include_dirs: vec![dir.clone()],
        ..KernelOptions::default()
    };
    let text = format!("#version 450\n#include <missing.glsl>\n{BODY}");
    let errs = compile(&dir, &text, options, &["fp32"]).expect_err("must fail");
    assert_eq!(errs.len(), 1, "{errs:?}");
    assert!(
        errs[0]
            .contains("k.comp:2: #include <missing.glsl>: not found in the `include` directories")
            && errs[0].contains(&dir.display().to_string()),
        "{errs:?}"
    );
}

#[test]
fn an_angle_include_cycle_is_found_through_the_search_dirs() {
    let dir = scratch("cycle");
    std::fs::write(dir.join("a.glsl"), "#include <b.glsl>\n").unwrap();
    std::fs::write(dir.join("b.glsl"), "#include <a.glsl>\n").unwrap();
    let options = KernelOptions {
        include_dirs: vec![dir.clone()],
        ..KernelOptions::default()
    };
    let text = format!("#version 450\n#include <a.glsl>\n{BODY}");
    let errs = compile(&dir, &text, options, &["fp32"]).expect_err("must fail");
    assert!(errs.iter().any(|e| e.contains("makes a cycle")), "{errs:?}");
}

#[test]
fn defines_follow_the_preamble_and_reach_every_variant() {
    let dir = scratch("define");
    let options = KernelOptions {
        defines: vec![
            ("VALUE".into(), "3.0".into()),
            ("FLAG".into(), String::new()),
        ],
        ..KernelOptions::default()
    };
    let text = format!("#version 450\n#ifndef FLAG\n#error FLAG is not defined\n#endif\n{BODY}");
    let (_, glsl) = compile(&dir, &text, options, &["fp32"]).expect("compiles");
    let g = &glsl[0];
    let (switches, value, kernel) = (
        g.find("#define NCNN_fp16_storage").unwrap(),
        g.find("#define VALUE 3.0\n#define FLAG \n")
            .expect("the defines, in order"),
        g.find("#ifndef FLAG").unwrap(),
    );
    assert!(switches < value && value < kernel, "{g}");
}

#[test]
fn the_vulkan_version_sets_the_spirv_version() {
    let dir = scratch("version");
    for (version, word) in [
        (VulkanVersion::V1_1, 0x0001_0300),
        (VulkanVersion::V1_2, 0x0001_0500),
        (VulkanVersion::V1_3, 0x0001_0600),
    ] {
        let options = KernelOptions {
            defines: vec![("VALUE".into(), "1.0".into())],
            vulkan_version: version,
            ..KernelOptions::default()
        };
        let text = format!("#version 450\n{CM_BODY}");
        let (model, _) =
            compile(&dir, &text, options, &["fp32_nocm", "fp16s_cm"]).expect("compiles");
        for v in &model.variants {
            assert_eq!(v.spirv[1], word, "{version:?} {}", v.key);
        }
        assert_eq!(model.vulkan_version, version);
        // SPIR-V 1.6 declares a specializable workgroup size with `LocalSizeId`: still read.
        let x = model.local_size[0];
        assert_eq!((x.default, x.spec_id), (64, Some(233)), "{version:?}");
        assert_eq!(model.local_size[2].spec_id, Some(235), "{version:?}");
    }
}

/// The compile errors of an expansion that must fail.
fn expand_errors(tokens: proc_macro2::TokenStream) -> String {
    let out = expand(tokens).to_string();
    assert!(out.contains("compile_error"), "{out}");
    out
}

#[test]
fn bad_defines_are_errors_at_their_names() {
    let out = expand_errors(quote! {
        pub mod k,
        src: "#version 450\nvoid main() {}\n",
        define: [("NCNN_fp16_storage", "1"), ("sfpvec4", ""), ("2x", ""), ("A", "1\n2"), ("B", ""), ("B", ""), ("a__b", "")],
    });
    for needle in [
        "define `NCNN_fp16_storage`: names starting with `NCNN_` are reserved",
        "define `sfpvec4`: names starting with `sfp` are reserved",
        "define `2x`: a macro name is an identifier",
        "define `A`: the value must be one line",
        "define `B` is given twice",
        "define `a__b`: names starting with `__` are reserved",
    ] {
        assert!(out.contains(needle), "{needle}: {out}");
    }
}

#[test]
fn bad_keys_of_the_parity_family_are_errors() {
    let out = expand_errors(quote! {
        pub mod k,
        src: "#version 450\nvoid main() {}\n",
        include: ["no/such/dir"],
        vulkan_version: "1.4",
    });
    assert!(
        out.contains("include directory") && out.contains("is not a directory"),
        "{out}"
    );
    assert!(
        out.contains(
            "`vulkan_version` is \\\"1.1\\\", \\\"1.2\\\" or \\\"1.3\\\", not \\\"1.4\\\""
        ),
        "{out}"
    );
}

#[test]
fn malformed_precompiled_modules_are_errors_naming_the_file() {
    let dir = scratch("bytes");
    let cases: [(&str, Vec<u8>, &str); 4] = [
        (
            "odd.spv",
            vec![1, 2, 3],
            "not a whole number of 32-bit words",
        ),
        ("magic.spv", vec![0; 40], "not the magic number"),
        (
            "version.spv",
            [0x0723_0203u32, 0x0002_0000, 0, 1, 0]
                .iter()
                .flat_map(|w| w.to_le_bytes())
                .collect(),
            "SPIR-V version 2.0",
        ),
        (
            "empty.spv",
            [0x0723_0203u32, 0x0001_0300, 0, 1, 0]
                .iter()
                .flat_map(|w| w.to_le_bytes())
                .collect(),
            "no compute entry point named `main`",
        ),
    ];
    for (name, bytes, needle) in cases {
        let path = dir.join(name);
        std::fs::write(&path, bytes).unwrap();
        let p = path.display().to_string();
        let out = expand_errors(quote!(pub mod k, bytes: #p));
        assert!(
            out.contains(needle) && out.contains(name),
            "{needle}: {out}"
        );
    }
    let p = dir.join("absent.spv").display().to_string();
    assert!(expand_errors(quote!(pub mod k, bytes: #p)).contains("cannot read it"));
}

#[test]
fn a_precompiled_module_is_reflected_like_a_compiled_one() {
    let dir = scratch("bytes-ok");
    let text =
        format!("#version 450\nlayout (push_constant) uniform parameter {{ int n; }} p;\n{BODY}");
    let options = KernelOptions {
        defines: vec![("VALUE".into(), "1.0".into())],
        vulkan_version: VulkanVersion::V1_2,
        ..KernelOptions::default()
    };
    let (model, _) = compile(&dir, &text, options, &["fp32"]).expect("compiles");
    let path = dir.join("k.spv");
    let bytes: Vec<u8> = model.variants[0]
        .spirv
        .iter()
        .flat_map(|w| w.to_le_bytes())
        .collect();
    std::fs::write(&path, bytes).unwrap();
    let p = path.display().to_string();
    let out = expand(quote!(pub mod k, bytes: #p)).to_string();
    assert!(!out.contains("compile_error"), "{out}");
    // The reflected interface, the version the SPIR-V needs (1.5: Vulkan 1.2), the dependency.
    assert!(out.contains("pub struct PushConstants"), "{out}");
    assert!(out.contains("pub b : & 'a"), "{out}");
    assert!(
        out.contains(&format!(
            "vulkan_version : {}u32",
            vkprism_core::api_version(1, 2)
        )),
        "{out}"
    );
    assert!(out.contains("include_bytes"), "{out}");
    let key = VariantKey::parse("fp16s").unwrap();
    let out = expand(quote!(pub mod k, bytes: #p, variants: [fp16s])).to_string();
    assert!(out.contains("FloatMode :: Fp16s"), "{key}: {out}");
    let out = expand_errors(quote!(pub mod k, bytes: #p, variants: [fp32, fp16s]));
    assert!(out.contains("is one variant"), "{out}");
    let out = expand_errors(quote!(pub mod k, bytes: #p, define: [("A", "1")], include: ["x"]));
    assert!(
        out.contains("`define` does not apply to a precompiled module")
            && out.contains("`include` does not apply"),
        "{out}"
    );
}

#[test]
fn kernels_under_shaders_are_modules_sharing_nothing() {
    let out = expand(quote! {
        pub mod kernels,
        define: [("VALUE", "1.0"), ("OTHER", "2.0")],
        shaders: {
            /// The first.
            first: { src: "#version 450\nlayout (binding = 0) buffer b { float d[]; };\nvoid main() { d[0] = VALUE; }\n" },
            second: {
                src: "#version 450\nlayout (binding = 0) buffer c { float d[]; };\nlayout (push_constant) uniform parameter { int n; } p;\nvoid main() { d[0] = VALUE + OTHER; }\n",
                define: [("VALUE", "5.0")],
            },
        },
    })
    .to_string();
    assert!(!out.contains("compile_error"), "{out}");
    assert!(
        out.contains("pub mod kernels")
            && out.contains("pub mod first")
            && out.contains("pub mod second")
    );
    // Each module has its own items: `b` in one, `c` and push constants in the other.
    let (first, second) = out.split_at(out.find("pub mod second").unwrap());
    assert!(
        first.contains("pub b :") && !first.contains("pub c :"),
        "{first}"
    );
    assert!(
        second.contains("pub c :") && second.contains("pub n : i32"),
        "{second}"
    );
    assert!(
        first.contains("super :: super :: vkprism") || first.contains(":: vkprism :: __private"),
        "{first}"
    );
}

#[test]
fn two_kernels_of_one_name_are_an_error_naming_both_lines() {
    let out = expand_errors(quote! {
        pub mod kernels,
        shaders: {
            twice: { src: "#version 450\nvoid main() {}\n" },
            twice: { src: "#version 450\nvoid main() {}\n" },
        },
    });
    assert!(out.contains("two kernels are named `twice`"), "{out}");
}

#[test]
fn keys_in_the_wrong_place_under_shaders_say_where_they_go() {
    let out = expand_errors(quote! {
        pub mod kernels,
        src: "#version 450\nvoid main() {}\n",
        shaders: {
            k: { src: "#version 450\nvoid main() {}\n", crate: ::vkprism },
        },
    });
    assert!(out.contains("`src` belongs to one kernel"), "{out}");
    assert!(
        out.contains("`crate` is set once for the whole invocation"),
        "{out}"
    );
}

#[test]
fn a_relative_crate_path_reaches_out_of_the_nested_modules() {
    let out = expand(quote! {
        pub mod kernels,
        crate: vkp,
        shaders: { k: { src: "#version 450\nvoid main() {}\n" } },
    })
    .to_string();
    assert!(!out.contains("compile_error"), "{out}");
    // `vkp` is named where the macro is invoked: two modules up from inside `kernels::k`.
    assert!(out.contains("super :: super :: vkp :: __private_"), "{out}");
}
