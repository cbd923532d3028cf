//! `vkprismc`, the compiler as a command: the interface it reports, the files it writes, and
//! that a bad kernel fails with every error on stderr.

use std::process::Command;

fn vkprismc() -> Command {
    Command::new(env!("CARGO_BIN_EXE_vkprismc"))
}

/// A fresh directory `<tag><pid>` under the temp dir with the kernel file `name` in it.
fn kernel_file(tag: &str, name: &str, text: &str) -> (std::path::PathBuf, std::path::PathBuf) {
    let dir = std::env::temp_dir().join(format!("{tag}{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let kernel = dir.join(name);
    std::fs::write(&kernel, text).unwrap();
    (dir, kernel)
}

#[test]
fn compiles_reports_and_writes_every_variant() {
    let (dir, kernel) = kernel_file("vkprismc-", "scale.comp", "#version 450\nlayout (constant_id = 0) const int n = 0;\nlayout (binding = 0) buffer blob { sfpvec4 data[]; };\nlayout (push_constant) uniform parameter { int n; float s; } p;\nvoid main() {\n    int i = int(gl_GlobalInvocationID.x);\n    if (i >= psc(n)) return;\n    buffer_st4(data, i, buffer_ld4(data, i) * afp(p.s));\n}\n");
    let out = vkprismc()
        .arg(&kernel)
        .args(["--variants", "fp32,fp16s,bf16p", "--out"])
        .arg(dir.join("spv"))
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        text.contains("kernel scale: 3 variants for Vulkan 1.1"),
        "{text}"
    );
    assert!(
        text.contains("fp16s") && text.contains("needs storageBuffer16BitAccess"),
        "{text}"
    );
    assert!(
        text.contains("fp16s=F16x4/F16") && text.contains("bf16p=U32x2/Bf16"),
        "{text}"
    );
    assert!(
        text.contains("push constants `p` (8 bytes): n@0:I32x1, s@4:F32x1"),
        "{text}"
    );
    assert!(text.contains("specialization constant 0 `n`"), "{text}");
    assert!(
        text.contains("workgroup size: 64 (id 233) × 1 (id 234) × 1 (id 235)"),
        "{text}"
    );
    for v in ["fp32", "fp16s", "bf16p"] {
        let bytes = std::fs::read(dir.join("spv").join(format!("scale.{v}.spv"))).unwrap();
        assert_eq!(&bytes[..4], &0x0723_0203u32.to_le_bytes(), "{v}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn bad_kernel_fails_with_all_errors() {
    let (dir, kernel) = kernel_file("vkprismc-bad-", "bad.comp", "#version 450\nlayout (binding = 0) buffer blob { sfp d[]; };\nvoid main() { afp x = buffer_ld3(d, 0); afp y = buffer_ld5(d, 0); }\n");
    let out = vkprismc().arg(&kernel).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        err.contains("buffer_ld3") && err.contains("buffer_ld5") && err.contains("bad.comp:3"),
        "{err}"
    );
    let out = vkprismc().arg("--nope").output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn emit_glsl_writes_each_variant_with_its_preamble() {
    let (dir, kernel) = kernel_file("vkprismc-emit-", "copy.comp", "#version 450\nlayout (binding = 0) buffer blob { sfpvec4 data[]; };\nvoid main() { buffer_cp4(data, 0, data, 1); }\n");
    let out = vkprismc()
        .arg(&kernel)
        .args(["--variants", "fp32,fp16p", "--emit", "spv,glsl", "--out"])
        .arg(dir.join("out"))
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.contains("wrote 4 files"), "{text}");
    let glsl = std::fs::read_to_string(dir.join("out/copy.fp16p.comp")).unwrap();
    assert!(glsl.starts_with("#version 450"), "{glsl}");
    assert!(
        glsl.contains("#define NCNN_fp16_packed 1"),
        "the preamble is in it"
    );
    assert!(
        glsl.contains("buffer_cp4(data, 0, data, 1)"),
        "the kernel is in it"
    );
    assert!(dir.join("out/copy.fp32.spv").exists());
    let bad = vkprismc()
        .arg(&kernel)
        .args(["--emit", "asm"])
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("unknown kind `asm`"));
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn emit_rust_writes_the_generated_module() {
    let (dir, kernel) = kernel_file("vkprismc-rust-", "2-scale.comp", "#version 450\nlayout (binding = 0) buffer blob { sfpvec4 data[]; };\nlayout (push_constant) uniform parameter { int n; float s; } p;\nvoid main() { buffer_st4(data, 0, buffer_ld4(data, 1) * afp(p.s)); }\n");
    let out = vkprismc()
        .arg(&kernel)
        .args(["--variants", "fp32,fp16s", "--emit", "rust", "--out"])
        .arg(dir.join("out"))
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Two .spv and the module.
    assert!(text.contains("wrote 3 files"), "{text}");
    let rust = std::fs::read_to_string(dir.join("out/2-scale.rs")).unwrap();
    // The stem is made an identifier; the module is what the macro generates, pretty-printed.
    assert!(rust.starts_with("pub mod _2_scale {"), "{rust}");
    for item in [
        "pub struct Kernel;",
        "pub struct PushConstants {",
        "pub n: i32,",
        "pub s: f32,",
        "pub struct BufferBindings<'a> {",
        "pub static VARIANTS:",
        "pub const VARIANT_NAMES: &[&str] = &[\"fp32\", \"fp16s\"];",
    ] {
        assert!(rust.contains(item), "{item}: {rust}");
    }
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn defines_include_dirs_and_the_vulkan_version_are_the_macros_keys() {
    let (dir, kernel) = kernel_file("vkprismc-keys-", "k.comp", "#version 450\n#include <value.glsl>\nlayout (binding = 0) buffer b { float d[]; };\nvoid main() { d[0] = VALUE + OTHER; }\n");
    std::fs::create_dir_all(dir.join("inc")).unwrap();
    std::fs::write(dir.join("inc/value.glsl"), "#define OTHER 2.0\n").unwrap();
    let out = vkprismc()
        .arg(&kernel)
        .args(["--define", "VALUE=1.0", "--include"])
        .arg(dir.join("inc"))
        .args(["--vulkan-version", "1.3", "--emit", "spv,glsl", "--out"])
        .arg(dir.join("out"))
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.contains("1 variants for Vulkan 1.3"), "{text}");
    let glsl = std::fs::read_to_string(dir.join("out/k.fp32.comp")).unwrap();
    assert!(glsl.contains("#define VALUE 1.0\n"), "{glsl}");
    let spv = std::fs::read(dir.join("out/k.fp32.spv")).unwrap();
    assert_eq!(spv[4..8], 0x0001_0600u32.to_le_bytes(), "SPIR-V 1.6");
    for (args, message) in [
        (
            ["--define", "NCNN_x=1"],
            "names starting with `NCNN_` are reserved",
        ),
        (
            ["--vulkan-version", "2.0"],
            "--vulkan-version is 1.1, 1.2 or 1.3",
        ),
        (["--include", "/no/such/dir"], "is not a directory"),
    ] {
        let bad = vkprismc().arg(&kernel).args(args).output().unwrap();
        assert_eq!(bad.status.code(), Some(2));
        let err = String::from_utf8_lossy(&bad.stderr);
        assert!(err.contains(message), "{message}: {err}");
    }
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn a_closed_stdout_ends_the_report_quietly_and_the_files_are_still_written() {
    use std::process::Stdio;
    let (dir, kernel) = kernel_file("vkprismc-pipe-", "k.comp", "#version 450\nlayout (binding = 0) buffer blob { sfpvec4 data[]; };\nvoid main() { buffer_cp4(data, 0, data, 1); }\n");
    // `vkprismc … | head -c 0`: the reader is gone before anything is written.
    let mut child = vkprismc()
        .arg(&kernel)
        .args(["--variants", "fp32", "--emit", "spv,rust", "--out"])
        .arg(dir.join("out"))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(dir.join("out/k.fp32.spv").exists() && dir.join("out/k.rs").exists());
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn glslang_never_writes_to_stdout() {
    // glslang prints its 4,550-line built-in table to stdout for versions without compute
    // built-ins; vkprism refuses those versions before glslang sees them.
    let dir = std::env::temp_dir().join(format!("vkprismc-version-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for version in ["110", "140", "0", "-1", "abc", "999", "450 compatibility"] {
        let kernel = dir.join("old.comp");
        std::fs::write(&kernel, format!("#version {version}\nlayout (binding = 0) buffer b {{ float d[]; }};\nvoid main() {{ d[0] = 1.0; }}\n")).unwrap();
        let out = vkprismc().arg(&kernel).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success());
        assert!(
            out.stdout.is_empty(),
            "#version {version}: {} bytes on stdout",
            out.stdout.len()
        );
        assert!(
            err.contains("old.comp:1: `#version") && err.contains("is not a version"),
            "{err}"
        );
    }
}

#[test]
fn version_hidden_by_a_continued_comment_prints_no_builtin_table() {
    // `// …\` continues the comment onto the `#version` line: glslang sees no version, and
    // without the forced one it used a version with no compute built-ins and printed them all.
    let dir = std::env::temp_dir().join(format!("vkprismc-continued-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let kernel = dir.join("k.comp");
    std::fs::write(&kernel, "// a comment \\\n#version 450\nlayout (binding = 0) buffer b { float d[]; };\nvoid main() { d[0] = 1.0; }\n").unwrap();
    let out = vkprismc()
        .arg(&kernel)
        .args(["--variants", "fp32"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        !text.contains("imageAtomic") && text.lines().count() < 50,
        "{} lines on stdout",
        text.lines().count()
    );
}
