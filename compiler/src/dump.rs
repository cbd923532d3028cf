//! `dump: "dir"` and `VKPRISM_DUMP=<dir>`: what the macro made, written where a person can read
//! it: per variant the full GLSL the compiler saw (`<kernel>.<variant>.comp`, preamble and
//! defines included) and its SPIR-V disassembly (`<kernel>.<variant>.spvasm`), and the whole
//! invocation's generated Rust, pretty-printed (`<kernel>.rs`). Under `shaders`, file names
//! start with the invocation's module (`<mod>.<kernel>.<variant>.comp`, `<mod>.rs`). A kernel
//! that fails still dumps its GLSL and its module of errors. A write failure is a compile error
//! at the `dump` literal (at the module name for `VKPRISM_DUMP`), never a panic.

use crate::ast::KernelSpec;
use crate::model::KernelModel;
use crate::source::Source;
use proc_macro2::{Span, TokenStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// One kernel's files, named `<kernel>.<variant>.<ext>`, with their contents.
#[derive(Default)]
pub struct Kernel {
    files: Vec<(String, String)>,
}

impl Kernel {
    /// The files of kernel `name` (nothing unless the spec asks for a dump): GLSL of each
    /// variant the kernel compiled (or, when it failed, would have), SPIR-V text of each
    /// variant built.
    pub fn of(
        name: &str,
        spec: &KernelSpec,
        source: Option<&Source>,
        model: Option<&KernelModel>,
    ) -> Kernel {
        if spec.dump.is_none() {
            return Kernel::default();
        }
        let mut files = Vec::new();
        if let Some(src) = source {
            let keys = match model {
                Some(m) => m.variants.iter().map(|v| v.key).collect(),
                None => would_compile(spec, src),
            };
            for key in keys {
                files.push((format!("{name}.{key}.comp"), crate::variant_glsl(src, &key)));
            }
        }
        for v in model.iter().flat_map(|m| &m.variants) {
            files.push((format!("{name}.{}.spvasm", v.key), disassemble(&v.spirv)));
        }
        Kernel { files }
    }
}

/// The variants a kernel that failed would have compiled (errors here were reported already).
fn would_compile(spec: &KernelSpec, source: &Source) -> Vec<vkprism_core::VariantKey> {
    let axes = crate::scan::Axes::of(&crate::scan::identifiers(&source.all_text));
    let own = crate::scan::defined_names(&source.all_text);
    let choices = crate::tested::TestedFacts::of(&source.all_text, &own).choices();
    let requested = spec
        .variants
        .as_ref()
        .map(|v| v.iter().map(|i| (i.to_string(), i.span())).collect());
    let cx = crate::Ctxt::new();
    let keys = crate::variants::select(&cx, source.span, &axes, &choices, requested);
    let _reported_already = cx.check();
    keys.unwrap_or_default()
}

/// `tokens` (the invocation's expansion), after writing the dump when `dump` names a directory;
/// a write failure is added as a compile error. `prefix` is the invocation's module name;
/// `nested`: the kernels are modules of it (`shaders`), so their files carry it too.
pub fn finish(
    dump: Option<&(PathBuf, Span)>,
    prefix: &str,
    nested: bool,
    tokens: TokenStream,
    kernels: &[Kernel],
) -> TokenStream {
    // rustc records the variables `option_env!` reads as the crate's dependencies, so cargo
    // expands the macro again when `VKPRISM_DUMP` changes (a proc macro's own reads are not
    // tracked on stable Rust).
    let env = crate::ast::DUMP_ENV;
    let tokens = quote::quote! {
        #tokens
        const _: ::core::option::Option<&str> = ::core::option_env!(#env);
    };
    let Some((dir, span)) = dump else {
        return tokens;
    };
    match write(dir, prefix, nested, &tokens, kernels) {
        Ok(()) => tokens,
        Err(e) => {
            let error = syn::Error::new(*span, format!("dump: {e}")).to_compile_error();
            quote::quote!(#tokens #error)
        }
    }
}

fn write(
    dir: &Path,
    prefix: &str,
    nested: bool,
    tokens: &TokenStream,
    kernels: &[Kernel],
) -> Result<(), String> {
    std::fs::create_dir_all(dir)
        .map_err(|e| format!("cannot create the directory `{}`: {e}", dir.display()))?;
    let put = |name: &str, text: &str| {
        let path = dir.join(name);
        std::fs::write(&path, text).map_err(|e| format!("cannot write `{}`: {e}", path.display()))
    };
    for (name, text) in kernels.iter().flat_map(|k| &k.files) {
        if nested {
            put(&format!("{prefix}.{name}"), text)?;
        } else {
            put(name, text)?;
        }
    }
    put(&format!("{prefix}.rs"), &pretty(tokens))
}

/// The generated Rust, formatted by prettyplease (as written when it does not parse as a file,
/// which generated code always should).
pub fn pretty(tokens: &TokenStream) -> String {
    match syn::parse2::<syn::File>(tokens.clone()) {
        Ok(file) => prettyplease::unparse(&file),
        Err(_) => tokens.to_string(),
    }
}

/// SPIR-V as text: spirv-dis's (friendly names) when one runs, else rspirv's disassembler.
pub fn disassemble(words: &[u32]) -> String {
    spirv_dis(words).unwrap_or_else(|| match rspirv::dr::load_words(words) {
        Ok(module) => {
            use rspirv::binary::Disassemble;
            module.disassemble()
        }
        Err(e) => format!("; the SPIR-V could not be parsed: {e}\n"),
    })
}

/// spirv-dis on `PATH` (Debian's `spirv-tools`), when there is one.
fn spirv_dis(words: &[u32]) -> Option<String> {
    let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
    let mut child = Command::new("spirv-dis")
        .arg("-")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .ok()?;
    // The writer runs beside the reader: a large module fills the pipes both ways.
    let mut stdin = child.stdin.take()?;
    let writer = std::thread::spawn(move || {
        use std::io::Write;
        stdin.write_all(&bytes)
    });
    let out = child.wait_with_output().ok()?;
    let written = writer.join().ok()?.is_ok();
    (written && out.status.success())
        .then(|| String::from_utf8(out.stdout).ok())
        .flatten()
}
