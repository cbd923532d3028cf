//! `dump: "dir"` and `VKPRISM_DUMP`: the files a person reads to see what the macro made.

use quote::quote;
use std::path::PathBuf;
use vkprism_compiler::expand;

/// A fresh scratch directory of this test's own.
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("vkprism-dump-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

const KERNEL: &str = "#version 450
layout (binding = 0) buffer blob { sfpvec4 data[]; };
layout (push_constant) uniform parameter { int n; } p;
void main() {
    int i = int(gl_GlobalInvocationID.x);
    if (i >= p.n) return;
    buffer_st4(data, i, buffer_ld4(data, i) * afp(FACTOR));
}
";

fn read(dir: &std::path::Path, name: &str) -> String {
    std::fs::read_to_string(dir.join(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

#[test]
fn dump_writes_glsl_spirv_text_and_rust_per_variant() {
    let dir = scratch("key");
    let d = dir.display().to_string();
    let out = expand(quote! {
        pub mod scale,
        src: #KERNEL,
        variants: [fp32, fp16s],
        define: [("FACTOR", "3.0")],
        dump: #d,
    })
    .to_string();
    assert!(!out.contains("compile_error"), "{out}");
    for v in ["fp32", "fp16s"] {
        let glsl = read(&dir, &format!("scale.{v}.comp"));
        // The preamble (the variant's switches and types), the define after it, the kernel.
        let storage = if v == "fp16s" { 1 } else { 0 };
        assert!(
            glsl.contains(&format!("#define NCNN_fp16_storage {storage}")),
            "{glsl}"
        );
        let preamble_end = glsl.find("#define NCNN_fp16_storage").unwrap();
        let define = glsl.find("#define FACTOR 3.0").expect("the define");
        let kernel = glsl.find("void main()").unwrap();
        assert!(preamble_end < define && define < kernel, "{glsl}");
        let spvasm = read(&dir, &format!("scale.{v}.spvasm"));
        assert!(spvasm.contains("OpEntryPoint GLCompute"), "{spvasm}");
        assert!(spvasm.contains("OpDecorate"), "{spvasm}");
    }
    let fp16 = read(&dir, "scale.fp16s.spvasm");
    assert!(fp16.contains("OpTypeFloat 16"), "{fp16}");
    let rust = read(&dir, "scale.rs");
    assert!(rust.contains("pub mod scale {"), "{rust}");
    assert!(rust.contains("pub struct PushConstants"), "{rust}");
    assert!(rust.contains("pub struct BufferBindings<'a>"), "{rust}");
    // Pretty-printed: one item per line, not one token stream.
    assert!(rust.lines().count() > 50, "{rust}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_failed_kernel_dumps_its_glsl_and_its_module_of_errors() {
    let dir = scratch("failed");
    let d = dir.display().to_string();
    let out = expand(quote! {
        pub mod broken,
        src: "#version 450\nvoid main() { undeclared = 1; }\n",
        dump: #d,
    })
    .to_string();
    assert!(out.contains("undeclared"), "{out}");
    assert!(read(&dir, "broken.fp32.comp").contains("undeclared = 1;"));
    assert!(read(&dir, "broken.rs").contains("compile_error!"));
    assert!(!dir.join("broken.fp32.spvasm").exists());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_dump_that_cannot_be_written_is_a_compile_error_naming_the_path() {
    let dir = scratch("blocked");
    std::fs::create_dir_all(dir.parent().unwrap()).unwrap();
    // A file where the directory should be.
    std::fs::write(&dir, "not a directory").unwrap();
    let d = dir.join("inside").display().to_string();
    let out = expand(quote! {
        pub mod scale,
        src: "#version 450\nvoid main() {}\n",
        dump: #d,
    })
    .to_string();
    assert!(
        out.contains("compile_error") && out.contains("dump: cannot create the directory"),
        "{out}"
    );
    assert!(
        out.contains("pub mod scale"),
        "the module is still there: {out}"
    );
    let _ = std::fs::remove_file(&dir);
}

#[test]
fn vkprism_dump_in_the_environment_dumps_every_kernel() {
    // The only test here without a `dump` key: the others don't read the variable.
    let dir = scratch("env");
    std::env::set_var("VKPRISM_DUMP", &dir);
    let out = expand(quote! {
        pub mod kernels,
        shaders: {
            first: { src: "#version 450\nlayout (binding = 0) buffer b { float d[]; };\nvoid main() { d[0] = 1.0; }\n" },
            second: { src: "#version 450\nlayout (binding = 0) buffer b { float d[]; };\nvoid main() { d[0] = 2.0; }\n" },
        },
    })
    .to_string();
    std::env::remove_var("VKPRISM_DUMP");
    assert!(!out.contains("compile_error"), "{out}");
    assert!(read(&dir, "kernels.first.fp32.comp").contains("d[0] = 1.0;"));
    assert!(read(&dir, "kernels.second.fp32.comp").contains("d[0] = 2.0;"));
    assert!(read(&dir, "kernels.second.fp32.spvasm").contains("OpEntryPoint GLCompute"));
    let rust = read(&dir, "kernels.rs");
    assert!(
        rust.contains("pub mod kernels {")
            && rust.contains("pub mod first {")
            && rust.contains("pub mod second {"),
        "{rust}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
