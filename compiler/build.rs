//! Links shaderc's dependencies from the system's static libraries.
//!
//! Debian's `libshaderc_combined.a` holds shaderc alone: glslang and SPIRV-Tools come from
//! `glslang-dev` and `spirv-tools` as separate static archives, and `libshaderc.so` lacks the
//! dependency entries. shaderc-sys links `shaderc_combined` (feature `prefer-static-linking`); we
//! add the rest here as non-bundled static libraries (`-bundle`: handed to the final link
//! instead of being copied into this crate's rlib), in dependency order. With the `shaderc-from-source` feature
//! shaderc-sys builds everything itself and this script does nothing.

fn main() {
    println!("cargo:rerun-if-env-changed=SHADERC_LIB_DIR");
    println!("cargo:rerun-if-changed=build.rs");
    if std::env::var_os("CARGO_FEATURE_SHADERC_FROM_SOURCE").is_some() {
        return;
    }
    let dir = std::env::var("SHADERC_LIB_DIR")
        .unwrap_or_else(|_| "/usr/lib/x86_64-linux-gnu".to_string());
    println!("cargo:rustc-link-search=native={dir}");
    let libs = [
        "glslang",
        "MachineIndependent",
        "GenericCodeGen",
        "OSDependent",
        "OGLCompiler",
        "SPIRV",
        "SPIRV-Tools-opt",
        "SPIRV-Tools",
        "glslang-default-resource-limits",
    ];
    for lib in libs {
        println!("cargo:rustc-link-lib=static:-bundle={lib}");
    }
    println!("cargo:rustc-link-lib=dylib=stdc++");
}
