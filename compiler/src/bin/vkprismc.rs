//! `vkprismc`: the `compute_shader!` compiler as a command, for build scripts and inspection.
//!
//!     vkprismc KERNEL.comp [--variants fp32,fp16s] [--define NAME=VALUE]...
//!              [--include DIR]... [--vulkan-version 1.1|1.2|1.3] [--out DIR] [--emit spv,glsl,rust]
//!
//! `--define`, `--include` and `--vulkan-version` are the macro's `define`, `include` and
//! `vulkan_version` keys (include directories relative to the working directory).
//!
//! Compiles every variant of an extended-GLSL kernel, prints the reflected interface (variants
//! with their required features, bindings with per-variant element types and tensor formats,
//! push constants, specialization constants, workgroup size), and with `--out` writes, per
//! variant, `<kernel>.<variant>.spv` and with `--emit glsl` the full GLSL the compiler saw
//! (`<kernel>.<variant>.comp`: the preamble of extended-GLSL definitions included), with
//! `--emit rust` the module `compute_shader!` generates for it (`<kernel>.rs`). Errors go to
//! stderr, all of them, exit status 1; a closed stdout (`vkprismc … | head`) silences the report
//! quietly and the files are still written.
//! Install it with `cargo install --path compiler` from the repository (after
//! `scripts/setup.sh`, which installs the libraries it links).

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use vkprism_compiler::{
    compile_kernel, define_name_error, define_value_error, generated_rust, variant_glsl, Ctxt,
    KernelModel, KernelOptions, Source, VulkanVersion,
};

/// Set once stdout is found closed: the report stops, the files are still written.
static STDOUT_CLOSED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// `println!` that goes quiet when stdout is closed (`vkprismc … | head`), as command-line
/// tools do, instead of panicking; `--out` files are still written.
macro_rules! out {
    ($($t:tt)*) => {{
        use std::io::Write as _;
        use std::sync::atomic::Ordering;
        if !STDOUT_CLOSED.load(Ordering::Relaxed) {
            if let Err(e) = writeln!(std::io::stdout(), $($t)*) {
                if e.kind() != std::io::ErrorKind::BrokenPipe {
                    eprintln!("vkprismc: cannot write to stdout: {e}");
                    std::process::exit(1);
                }
                STDOUT_CLOSED.store(true, Ordering::Relaxed);
            }
        }
    }};
}

struct Args {
    file: PathBuf,
    variants: Option<Vec<String>>,
    out: Option<PathBuf>,
    /// Also write each variant's full GLSL (`--emit glsl`).
    emit_glsl: bool,
    /// Also write the generated Rust module (`--emit rust`).
    emit_rust: bool,
    /// `--define`, `--include`, `--vulkan-version`: the macro's `define`, `include`,
    /// `vulkan_version`.
    options: KernelOptions,
}

fn parse_args() -> Result<Args, String> {
    let mut it = std::env::args().skip(1);
    let (mut file, mut variants, mut out) = (None, None, None);
    let (mut emit_glsl, mut emit_rust) = (false, false);
    let mut options = KernelOptions::default();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--define" => {
                let d = it.next().ok_or("--define needs NAME=VALUE or NAME")?;
                let (name, value) = d.split_once('=').unwrap_or((&d, ""));
                if let Some(e) = define_name_error(name).or_else(|| define_value_error(name, value))
                {
                    return Err(e);
                }
                if options.defines.iter().any(|(n, _)| n == name) {
                    return Err(format!("define `{name}` is given twice"));
                }
                options.defines.push((name.to_string(), value.to_string()));
            }
            "--include" => {
                let dir = PathBuf::from(it.next().ok_or("--include needs a directory")?);
                if !dir.is_dir() {
                    return Err(format!("--include: `{}` is not a directory", dir.display()));
                }
                let dir = std::fs::canonicalize(&dir).unwrap_or(dir);
                options.include_dirs.push(dir);
            }
            "--vulkan-version" => {
                let v = it.next().ok_or("--vulkan-version needs 1.1, 1.2 or 1.3")?;
                options.vulkan_version = VulkanVersion::parse(&v)
                    .ok_or(format!("--vulkan-version is 1.1, 1.2 or 1.3, not `{v}`"))?;
            }
            "--variants" => {
                variants = Some(
                    it.next()
                        .ok_or("--variants needs a list")?
                        .split(',')
                        .map(str::to_string)
                        .collect(),
                )
            }
            "--optimize" => {
                return Err(
                    "--optimize is not an option: vkprism ships glslang's SPIR-V as it is \
                            (drivers optimize at pipeline creation)"
                        .into(),
                )
            }
            "--emit" => {
                for what in it
                    .next()
                    .ok_or("--emit needs a list: spv,glsl,rust")?
                    .split(',')
                {
                    match what {
                        "spv" => {}
                        "glsl" => emit_glsl = true,
                        "rust" => emit_rust = true,
                        w => return Err(format!("--emit: unknown kind `{w}` (spv, glsl, rust)")),
                    }
                }
            }
            "--out" => out = Some(PathBuf::from(it.next().ok_or("--out needs a directory")?)),
            "-h" | "--help" => return Err(String::new()),
            s if s.starts_with('-') => return Err(format!("unknown option `{s}`")),
            s if file.is_none() => file = Some(PathBuf::from(s)),
            s => return Err(format!("unexpected argument `{s}`")),
        }
    }
    Ok(Args {
        file: file.ok_or("give a kernel file")?,
        variants,
        out,
        emit_glsl,
        emit_rust,
        options,
    })
}

fn main() -> ExitCode {
    let args = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            if !e.is_empty() {
                eprintln!("vkprismc: {e}");
            }
            eprintln!(
                "usage: vkprismc KERNEL.comp [--variants fp32,fp16s] [--define NAME=VALUE]... [--include DIR]... [--vulkan-version 1.1|1.2|1.3] [--out DIR] [--emit spv,glsl,rust]"
            );
            return ExitCode::from(2);
        }
    };
    let text = match std::fs::read_to_string(&args.file) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("vkprismc: cannot read {}: {e}", args.file.display());
            return ExitCode::FAILURE;
        }
    };
    let (model, glsl) = match compile(&args, &text) {
        Ok(m) => m,
        Err(errors) => {
            for e in errors {
                eprintln!("error: {e}");
            }
            return ExitCode::FAILURE;
        }
    };
    let stem = args
        .file
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "kernel".into());
    print_variants(&stem, &model);
    print_bindings(&model);
    print_constants(&model);
    if let Some(out) = &args.out {
        let glsl = args.emit_glsl.then_some(&glsl[..]);
        let rust = args.emit_rust.then(|| generated_rust(&stem, &model));
        match write_files(out, &stem, &model, glsl, rust.as_deref()) {
            Ok(n) => out!("wrote {n} files to {}", out.display()),
            Err(e) => {
                eprintln!("vkprismc: {e}");
                return ExitCode::FAILURE;
            }
        }
    }
    ExitCode::SUCCESS
}

/// The kernel in `text` compiled as `args` say, with each variant's full GLSL, or every error.
fn compile(args: &Args, text: &str) -> Result<(KernelModel, Vec<String>), syn::Error> {
    let cx = Ctxt::new();
    let name = args.file.display().to_string();
    let dir = args
        .file
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_default();
    let requested = args.variants.as_ref().map(|v| {
        v.iter()
            .map(|n| (n.clone(), proc_macro2::Span::call_site()))
            .collect()
    });
    let compiled =
        Source::from_text_with(&cx, text, &name, &dir, args.options.clone()).and_then(|src| {
            let m = compile_kernel(&cx, &src, requested)?;
            let glsl = m
                .variants
                .iter()
                .map(|v| variant_glsl(&src, &v.key))
                .collect();
            Some((m, glsl))
        });
    cx.check()?;
    compiled.ok_or_else(|| {
        syn::Error::new(
            proc_macro2::Span::call_site(),
            "internal error: no phase said why the kernel failed",
        )
    })
}

fn print_variants(stem: &str, model: &KernelModel) {
    out!(
        "kernel {stem}: {} variants for Vulkan {}",
        model.variants.len(),
        model.vulkan_version.name()
    );
    for v in &model.variants {
        out!(
            "  {:<20} {:>6} words  needs {}",
            v.key.name(),
            v.spirv.len(),
            v.key.requires().union(v.capabilities_require)
        );
    }
}

/// Each memory kind's bindings, with the element type and tensor format of each variant.
fn print_bindings(model: &KernelModel) {
    for (memory, bindings) in &model.interfaces {
        out!("{} bindings:", memory.name());
        for b in bindings {
            let per: Vec<String> = model
                .variants
                .iter()
                .filter(|v| v.key.memory == *memory)
                .filter_map(|v| {
                    v.bindings
                        .iter()
                        .find(|(x, _)| x.binding == b.binding)
                        .map(|(x, f)| {
                            format!(
                                "{}={:?}x{}/{:?}",
                                v.key.name(),
                                x.element.scalar,
                                x.element.components,
                                f
                            )
                        })
                })
                .collect();
            out!(
                "  {} {:<16} {:?} {:?}: {}",
                b.binding,
                b.name,
                b.kind,
                b.access,
                per.join(" ")
            );
        }
    }
}

/// Push constants, specialization constants and the workgroup size.
fn print_constants(model: &KernelModel) {
    if let Some(p) = &model.push {
        let m: Vec<String> = p
            .members
            .iter()
            .map(|m| format!("{}@{}:{:?}x{}", m.name, m.offset, m.scalar, m.components))
            .collect();
        out!(
            "push constants `{}` ({} bytes): {}",
            p.instance,
            p.size,
            m.join(", ")
        );
    }
    for s in &model.spec {
        out!(
            "specialization constant {} `{}`: {:?} default bits {:#x}",
            s.id,
            s.name,
            s.scalar,
            s.default_bits
        );
    }
    let ls: Vec<String> = model
        .local_size
        .iter()
        .map(|d| {
            format!(
                "{}{}",
                d.default,
                d.spec_id.map(|i| format!(" (id {i})")).unwrap_or_default()
            )
        })
        .collect();
    out!("workgroup size: {}", ls.join(" × "));
}

/// One `<stem>.<variant>.spv` per variant in `out`, and with `glsl` the variant's full GLSL as
/// `<stem>.<variant>.comp`, and `rust` as `<stem>.rs`; returns how many files it wrote.
fn write_files(
    out: &Path,
    stem: &str,
    model: &KernelModel,
    glsl: Option<&[String]>,
    rust: Option<&str>,
) -> Result<usize, String> {
    std::fs::create_dir_all(out).map_err(|e| format!("{}: {e}", out.display()))?;
    let write = |name: String, bytes: &[u8]| {
        let path = out.join(name);
        std::fs::write(&path, bytes).map_err(|e| format!("{}: {e}", path.display()))
    };
    let mut written = 0;
    for (i, v) in model.variants.iter().enumerate() {
        let words: Vec<u8> = v.spirv.iter().flat_map(|w| w.to_le_bytes()).collect();
        write(format!("{stem}.{}.spv", v.key.name()), &words)?;
        written += 1;
        if let Some(text) = glsl.and_then(|g| g.get(i)) {
            write(format!("{stem}.{}.comp", v.key.name()), text.as_bytes())?;
            written += 1;
        }
    }
    if let Some(rust) = rust {
        write(format!("{stem}.rs"), rust.as_bytes())?;
        written += 1;
    }
    Ok(written)
}
