//! `vkprismc`: the `compute_shader!` compiler as a command, for build scripts and inspection.
//!
//!     vkprismc KERNEL.comp [--variants fp32,fp16s] [--optimize] [--out DIR]
//!
//! Compiles every variant of an extended-GLSL kernel, prints the reflected interface (variants
//! with their required features, bindings with per-variant element types and tensor formats,
//! push constants, specialization constants, workgroup size), and with `--out` writes one
//! `<kernel>.<variant>.spv` per variant. Errors go to stderr, all of them, exit status 1.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use vkprism_compiler::{compile_kernel, optimize, Ctxt, KernelModel, Source};

struct Args {
    file: PathBuf,
    variants: Option<Vec<String>>,
    optimize: bool,
    out: Option<PathBuf>,
}

fn parse_args() -> Result<Args, String> {
    let mut it = std::env::args().skip(1);
    let (mut file, mut variants, mut opt, mut out) = (None, None, false, None);
    while let Some(a) = it.next() {
        match a.as_str() {
            "--variants" => {
                variants = Some(
                    it.next()
                        .ok_or("--variants needs a list")?
                        .split(',')
                        .map(str::to_string)
                        .collect(),
                )
            }
            "--optimize" => opt = true,
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
        optimize: opt,
        out,
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
                "usage: vkprismc KERNEL.comp [--variants fp32,fp16s] [--optimize] [--out DIR]"
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
    let model = match compile(&args, &text) {
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
        if let Err(e) = write_spirv(out, &stem, &model) {
            eprintln!("vkprismc: {e}");
            return ExitCode::FAILURE;
        }
        println!("wrote {} files to {}", model.variants.len(), out.display());
    }
    ExitCode::SUCCESS
}

/// The kernel in `text` compiled as `args` say, or every error.
fn compile(args: &Args, text: &str) -> Result<KernelModel, syn::Error> {
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
    let model = Source::from_text(&cx, text, &name, &dir).and_then(|src| {
        let m = compile_kernel(&cx, &src, requested)?;
        if args.optimize {
            optimize(&cx, &src, m)
        } else {
            Some(m)
        }
    });
    cx.check()?;
    Ok(model.expect("a phase that fails records an error"))
}

fn print_variants(stem: &str, model: &KernelModel) {
    println!("kernel {stem}: {} variants", model.variants.len());
    for v in &model.variants {
        println!(
            "  {:<20} {:>6} words  needs {}",
            v.key.name(),
            v.spirv.len(),
            v.key.requires()
        );
    }
}

/// Each memory kind's bindings, with the element type and tensor format of each variant.
fn print_bindings(model: &KernelModel) {
    for (memory, bindings) in &model.interfaces {
        println!("{} bindings:", memory.name());
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
            println!(
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
        println!(
            "push constants `{}` ({} bytes): {}",
            p.instance,
            p.size,
            m.join(", ")
        );
    }
    for s in &model.spec {
        println!(
            "specialization constant {} `{}`: {:?} default bits {:#x}",
            s.id, s.name, s.scalar, s.default_bits
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
    println!("workgroup size: {}", ls.join(" × "));
}

/// One `<stem>.<variant>.spv` per variant in `out`.
fn write_spirv(out: &Path, stem: &str, model: &KernelModel) -> Result<(), String> {
    std::fs::create_dir_all(out).map_err(|e| format!("{}: {e}", out.display()))?;
    for v in &model.variants {
        let path = out.join(format!("{stem}.{}.spv", v.key.name()));
        let bytes: Vec<u8> = v.spirv.iter().flat_map(|w| w.to_le_bytes()).collect();
        std::fs::write(&path, bytes).map_err(|e| format!("{}: {e}", path.display()))?;
    }
    Ok(())
}
