//! Phase 1, parse: the macro's input as written ([`Input`]), then with its keys validated
//! ([`Invocation`]: one [`KernelSpec`], or several under `shaders`).
//!
//! ```text
//! compute_shader! {
//!     /// docs
//!     pub mod add_one,                // visibility and module name of the generated bindings
//!     src: r#"#version 450 ..."#,    // inline extended GLSL, or
//!     path: "kernels/add_one.comp",   // a file relative to the invoking Rust file, or
//!     bytes: "kernels/add_one.spv",   // precompiled SPIR-V (one variant)
//!     variants: [fp32, fp16sa],       // optional: narrow the variant list
//!     define: [("N", "4"), ("FAST", "")], // optional: macros for every variant
//!     include: ["shaders/common"],    // optional: `#include <…>` search paths
//!     vulkan_version: "1.2",          // optional: target environment (default "1.1")
//!     dump: "target/vkprism-dump",    // optional: write GLSL, SPIR-V text and Rust there
//!     crate: ::vkprism,               // optional: path of the vkprism facade
//! }
//! ```
//!
//! or, several kernels in one invocation, each its own module inside `mod NAME`:
//!
//! ```text
//! compute_shader! {
//!     pub mod kernels,
//!     define: [("N", "4")],           // global keys: define, include, vulkan_version,
//!     shaders: {                      // dump, crate
//!         add: { src: "...", define: [("N", "8")] },  // per-kernel keys override
//!         mul: { path: "mul.comp" },
//!     },
//! }
//! ```

use crate::ctxt::Ctxt;
use proc_macro2::Span;
use syn::parse::{Parse, ParseStream};
use syn::{Attribute, Ident, LitStr, Path, Token, Visibility};

/// The macro's input as written.
pub struct Input {
    /// Attributes (docs) for the generated module.
    pub attrs: Vec<Attribute>,
    /// The generated module's visibility.
    pub vis: Visibility,
    /// The generated module's name, which is also the kernel's.
    pub name: Ident,
    /// The `key: value` entries, in order.
    pub entries: Vec<Entry>,
}

/// One `key: value` entry, before validation.
pub struct Entry {
    /// The key (`crate` included, though it is a keyword).
    pub key: Ident,
    /// Its value.
    pub value: Value,
}

/// A value of any shape a key takes; `KernelSpec` checks it has the shape its key wants.
pub enum Value {
    /// A string literal (`src`, `path`, `bytes`, `vulkan_version`, `dump`).
    Str(LitStr),
    /// `true` or `false`: no key takes one, but a value of this shape is parsed so that the key
    /// is what gets reported.
    Bool,
    /// `[a, b]` (`variants`), `["dir"]` (`include`), `[("N", "1")]` (`define`), with the span
    /// of the brackets.
    List(Vec<Item>, Span),
    /// `{ name: { key: value, ... }, ... }` (`shaders`).
    Map(Vec<KernelEntry>),
    /// A path (`crate`).
    Path(Path),
}

/// One item of a `[...]` list.
pub enum Item {
    /// A name (`variants`).
    Ident(Ident),
    /// `kernel::Type` (`share`).
    Path(Path),
    /// A string (`include`).
    Str(LitStr),
    /// `("NAME", "VALUE")` (`define`).
    Pair(LitStr, LitStr),
}

/// One kernel of `shaders: { ... }`.
pub struct KernelEntry {
    /// Attributes (docs) for its module.
    pub attrs: Vec<Attribute>,
    /// Its name (its module's name).
    pub name: Ident,
    /// Its own `key: value` entries.
    pub entries: Vec<Entry>,
}

impl Parse for Input {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        let attrs = input.call(Attribute::parse_outer)?;
        let vis: Visibility = input.parse()?;
        input.parse::<Token![mod]>().map_err(|e| {
            syn::Error::new(
                e.span(),
                "expected `mod <name>` (e.g. `pub mod add_one,`) first",
            )
        })?;
        let name: Ident = input.parse()?;
        let mut entries = Vec::new();
        while !input.is_empty() {
            input.parse::<Token![,]>()?;
            if input.is_empty() {
                break;
            }
            entries.push(input.parse()?);
        }
        Ok(Input {
            attrs,
            vis,
            name,
            entries,
        })
    }
}

impl Parse for Entry {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        let key: Ident = if input.peek(Token![crate]) {
            let k: Token![crate] = input.parse()?;
            Ident::new("crate", k.span)
        } else {
            input.parse()?
        };
        input.parse::<Token![:]>()?;
        let value = if input.peek(LitStr) {
            Value::Str(input.parse()?)
        } else if input.peek(syn::LitBool) {
            input.parse::<syn::LitBool>()?;
            Value::Bool
        } else if input.peek(syn::token::Bracket) {
            let content;
            let bracket = syn::bracketed!(content in input);
            let items = content.parse_terminated(Item::parse, Token![,])?;
            Value::List(items.into_iter().collect(), bracket.span.join())
        } else if input.peek(syn::token::Brace) {
            let content;
            syn::braced!(content in input);
            let kernels = content.parse_terminated(KernelEntry::parse, Token![,])?;
            Value::Map(kernels.into_iter().collect())
        } else {
            Value::Path(input.parse()?)
        };
        Ok(Entry { key, value })
    }
}

impl Item {
    /// Where the item is, for errors about it.
    pub fn span(&self) -> Span {
        match self {
            Item::Ident(i) => i.span(),
            Item::Path(p) => syn::spanned::Spanned::span(p),
            Item::Str(s) => s.span(),
            Item::Pair(n, _) => n.span(),
        }
    }
}

impl Parse for Item {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        if input.peek(LitStr) {
            Ok(Item::Str(input.parse()?))
        } else if input.peek(syn::token::Paren) {
            let content;
            let paren = syn::parenthesized!(content in input);
            let pair_error = || {
                syn::Error::new(
                    paren.span.join(),
                    "a define is a pair of strings: `(\"NAME\", \"VALUE\")` (`\"\"` for no value)",
                )
            };
            let name: LitStr = content.parse().map_err(|_| pair_error())?;
            content.parse::<Token![,]>().map_err(|_| pair_error())?;
            let value: LitStr = content.parse().map_err(|_| pair_error())?;
            let _ = content.parse::<Option<Token![,]>>()?;
            if !content.is_empty() {
                return Err(pair_error());
            }
            Ok(Item::Pair(name, value))
        } else {
            let path: Path = input.parse()?;
            match path.get_ident() {
                Some(ident) => Ok(Item::Ident(ident.clone())),
                None => Ok(Item::Path(path)),
            }
        }
    }
}

impl Parse for KernelEntry {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        let attrs = input.call(Attribute::parse_outer)?;
        let name: Ident = input.parse()?;
        input.parse::<Token![:]>()?;
        let content;
        syn::braced!(content in input);
        let entries = content.parse_terminated(Entry::parse, Token![,])?;
        Ok(KernelEntry {
            attrs,
            name,
            entries: entries.into_iter().collect(),
        })
    }
}

/// The source of the kernel.
#[derive(Clone)]
pub enum SourceSpec {
    /// `src: "..."`: the text itself.
    Inline(LitStr),
    /// `path: "..."`: a file relative to the invoking Rust file.
    File(LitStr),
    /// `bytes: "..."`: precompiled SPIR-V, a file relative to the invoking Rust file.
    Bytes(LitStr),
}

impl SourceSpec {
    /// The literal, whichever key gave it.
    pub fn lit(&self) -> &LitStr {
        match self {
            SourceSpec::Inline(l) | SourceSpec::File(l) | SourceSpec::Bytes(l) => l,
        }
    }
}

/// The input with every key checked. Errors go to `cx`; what could not be
/// understood is left at its default so later phases can still run and report their own errors.
pub struct KernelSpec {
    /// Attributes (docs) for the generated module.
    pub attrs: Vec<Attribute>,
    /// The generated module's visibility.
    pub vis: Visibility,
    /// The generated module's name, which is also the kernel's.
    pub name: Ident,
    /// The kernel's text or file; `None` after an error.
    pub source: Option<SourceSpec>,
    /// The user's list of variants, or `None` for all of them.
    pub variants: Option<Vec<Ident>>,
    /// Path of the vkprism facade (`::vkprism` unless `crate:` says otherwise).
    pub krate: Path,
    /// `define`, `include`, `vulkan_version`.
    pub options: crate::options::KernelOptions,
    /// Where to write the variants' GLSL, SPIR-V text and the generated Rust (`dump`, else
    /// `VKPRISM_DUMP`), absolute, with the span to report a write failure at.
    pub dump: Option<(std::path::PathBuf, Span)>,
    /// How many modules deep the kernel's module is below the invocation (1 under `shaders`):
    /// a relative `crate` path takes that many more `super::`.
    pub nesting: usize,
    /// `share`: the generated types this kernel takes from another kernel of the invocation.
    pub shares: Vec<crate::share::ShareSpec>,
}

/// A checked invocation: one kernel, or several under `shaders`.
pub enum Invocation {
    /// `mod NAME` is the kernel.
    One(KernelSpec),
    /// `mod NAME` holds one module per kernel of `shaders`.
    Many {
        /// Attributes (docs) for the outer module.
        attrs: Vec<Attribute>,
        /// Its visibility.
        vis: Visibility,
        /// Its name.
        name: Ident,
        /// Each kernel with the errors of its own keys.
        kernels: Vec<(Ctxt, KernelSpec)>,
    },
}

/// Every key, for "unknown key" messages.
const KEYS: &[&str] = &[
    "src",
    "path",
    "bytes",
    "variants",
    "define",
    "include",
    "vulkan_version",
    "dump",
    "crate",
    "shaders",
    "share",
];
/// The keys of one kernel inside `shaders`.
const KERNEL_KEYS: &[&str] = &[
    "src",
    "path",
    "bytes",
    "variants",
    "define",
    "include",
    "vulkan_version",
    "share",
];
/// The keys beside `shaders`, which apply to every kernel in it.
const GLOBAL_KEYS: &[&str] = &[
    "shaders",
    "variants",
    "define",
    "include",
    "vulkan_version",
    "dump",
    "crate",
];

/// Why `optimize` is not a key: the only optimizer (SPIRV-Tools') is C++ that would take every
/// build of vkprism many minutes to compile.
const RETIRED_OPTIMIZE: &str = "`optimize` is not a key: vkprism ships glslang's SPIR-V as it is \
    (as ncnn does; drivers optimize at pipeline creation), so remove it";

/// The environment variable naming a directory to dump every kernel's expansion into.
pub const DUMP_ENV: &str = "VKPRISM_DUMP";

/// The keys of one entry list, each checked for its shape; absent keys are `None`.
#[derive(Default)]
struct Keys {
    source: Option<SourceSpec>,
    /// A source key was given, valid or not (for the "missing source" error).
    source_given: bool,
    variants: Option<Vec<Ident>>,
    krate: Option<Path>,
    defines: Option<Vec<(String, String)>>,
    include_dirs: Option<Vec<std::path::PathBuf>>,
    vulkan_version: Option<crate::options::VulkanVersion>,
    dump: Option<(std::path::PathBuf, Span)>,
    shaders: Option<Vec<KernelEntry>>,
    shares: Vec<crate::share::ShareSpec>,
}

impl Invocation {
    /// Checks every key of `input`; errors outside any one kernel go to `cx`.
    pub fn from_input(cx: &Ctxt, input: Input) -> Invocation {
        let has_shaders = input.entries.iter().any(|e| e.key == "shaders");
        // `share` names another kernel of the invocation: only a kernel under `shaders` has one.
        let single: Vec<&str> = KEYS.iter().copied().filter(|k| *k != "share").collect();
        let allowed = if has_shaders {
            GLOBAL_KEYS
        } else {
            &single[..]
        };
        let mut keys = Keys::parse(cx, input.entries, allowed, Place::Top { has_shaders });
        let dump = keys.dump.take().or_else(|| env_dump(&input.name));
        let krate = keys
            .krate
            .take()
            .unwrap_or_else(|| syn::parse_quote!(::vkprism));
        let Some(kernels) = keys.shaders.take() else {
            let module = (input.attrs, input.vis, input.name);
            return Invocation::One(one_kernel(cx, module, keys, krate, dump));
        };
        if kernels.is_empty() {
            cx.error(
                input.name.span(),
                "`shaders` is empty: give at least one kernel, `name: { src: \"...\" }`",
            );
        }
        let mut names: Vec<Ident> = Vec::new();
        let mut specs = Vec::new();
        for kernel in kernels {
            if let Some(first) = names.iter().find(|n| **n == kernel.name) {
                cx.error(
                    kernel.name.span(),
                    format!(
                        "two kernels are named `{}` (lines {} and {}): each kernel is a module of its own, so their names must differ",
                        kernel.name,
                        first.span().start().line,
                        kernel.name.span().start().line
                    ),
                );
                continue;
            }
            names.push(kernel.name.clone());
            specs.push(listed_kernel(kernel, &keys, &krate, &dump));
        }
        Invocation::Many {
            attrs: input.attrs,
            vis: input.vis,
            name: input.name,
            kernels: specs,
        }
    }
}

/// The one kernel of an invocation without `shaders` (its module's attributes, visibility and
/// name), from its checked `keys`.
fn one_kernel(
    cx: &Ctxt,
    (attrs, vis, name): (Vec<Attribute>, Visibility, Ident),
    keys: Keys,
    krate: syn::Path,
    dump: Option<(std::path::PathBuf, Span)>,
) -> KernelSpec {
    keys.check_bytes(cx);
    if !keys.source_given {
        cx.error(
            name.span(),
            "missing kernel source: add `src: \"...\"`, `path: \"file.comp\"` or `bytes: \"file.spv\"`",
        );
    }
    KernelSpec {
        attrs,
        vis,
        name,
        source: keys.source,
        variants: keys.variants,
        krate,
        options: crate::options::KernelOptions {
            defines: keys.defines.unwrap_or_default(),
            include_dirs: keys.include_dirs.unwrap_or_default(),
            vulkan_version: keys.vulkan_version.unwrap_or_default(),
        },
        dump,
        nesting: 0,
        shares: Vec::new(),
    }
}

/// A kernel listed under `shaders`, its own keys checked into a context of its own, over the
/// invocation's `global` keys (variants, defines, include directories, Vulkan version).
fn listed_kernel(
    kernel: KernelEntry,
    global: &Keys,
    krate: &syn::Path,
    dump: &Option<(std::path::PathBuf, Span)>,
) -> (Ctxt, KernelSpec) {
    let kcx = Ctxt::new();
    let own = Keys::parse(&kcx, kernel.entries, KERNEL_KEYS, Place::Kernel);
    own.check_bytes(&kcx);
    if !own.source_given {
        kcx.error(
            kernel.name.span(),
            format!("missing source for kernel `{}`: add `src: \"...\"`, `path: \"file.comp\"` or `bytes: \"file.spv\"`", kernel.name),
        );
    }
    let spec = KernelSpec {
        attrs: kernel.attrs,
        vis: syn::parse_quote!(pub),
        name: kernel.name,
        source: own.source,
        variants: own.variants.or_else(|| global.variants.clone()),
        krate: krate.clone(),
        options: crate::options::KernelOptions {
            defines: merge_defines(global.defines.as_deref(), own.defines),
            include_dirs: own
                .include_dirs
                .into_iter()
                .flatten()
                .chain(global.include_dirs.iter().flatten().cloned())
                .collect(),
            vulkan_version: own
                .vulkan_version
                .or(global.vulkan_version)
                .unwrap_or_default(),
        },
        dump: dump.clone(),
        nesting: 1,
        shares: own.shares,
    };
    (kcx, spec)
}

/// The global defines, then the kernel's own: a kernel's define replaces a global one of the
/// same name.
fn merge_defines(
    global: Option<&[(String, String)]>,
    own: Option<Vec<(String, String)>>,
) -> Vec<(String, String)> {
    let own = own.unwrap_or_default();
    let mut merged: Vec<(String, String)> = global
        .unwrap_or_default()
        .iter()
        .filter(|(name, _)| !own.iter().any(|(n, _)| n == name))
        .cloned()
        .collect();
    merged.extend(own);
    merged
}

/// `VKPRISM_DUMP`, read when the macro expands, as a dump directory reported at `name`.
fn env_dump(name: &Ident) -> Option<(std::path::PathBuf, Span)> {
    let dir = std::env::var_os(DUMP_ENV).filter(|d| !d.is_empty())?;
    Some((manifest_dir().join(dir), name.span()))
}

/// The directory relative `include` and `dump` paths resolve against.
fn manifest_dir() -> std::path::PathBuf {
    std::env::var_os("CARGO_MANIFEST_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| std::path::PathBuf::from("."))
}

/// Where an entry list is, for messages about keys that belong elsewhere.
#[derive(Clone, Copy)]
enum Place {
    /// The invocation's own entries.
    Top { has_shaders: bool },
    /// One kernel's entries inside `shaders`.
    Kernel,
}

impl Keys {
    /// Checks each entry's shape; `allowed` keys only.
    fn parse(cx: &Ctxt, entries: Vec<Entry>, allowed: &[&str], place: Place) -> Keys {
        let mut keys = Keys::default();
        let mut seen: Vec<String> = Vec::new();
        for Entry { key, value } in entries {
            let k = key.to_string();
            if seen.contains(&k) {
                cx.error(key.span(), format!("duplicate key `{k}`"));
                continue;
            }
            seen.push(k.clone());
            if !allowed.contains(&k.as_str()) {
                cx.error(key.span(), misplaced_key(&k, allowed, place));
                continue;
            }
            keys.set(cx, &key, value);
        }
        keys
    }

    /// Records one entry whose key is allowed here.
    fn set(&mut self, cx: &Ctxt, key: &Ident, value: Value) {
        let k = key.to_string();
        match (k.as_str(), value) {
            ("src", Value::Str(s)) => self.set_source(cx, SourceSpec::Inline(s), key),
            ("path", Value::Str(s)) => self.set_source(cx, SourceSpec::File(s), key),
            ("bytes", Value::Str(s)) => self.set_source(cx, SourceSpec::Bytes(s), key),
            ("variants", Value::List(items, span)) => self.variants = variant_list(cx, items, span),
            ("crate", Value::Path(p)) => self.krate = Some(p),
            ("define", Value::List(items, _)) => self.defines = Some(define_list(cx, items)),
            ("include", Value::List(items, _)) => self.include_dirs = Some(include_list(cx, items)),
            ("vulkan_version", Value::Str(s)) => {
                match crate::options::VulkanVersion::parse(&s.value()) {
                    Some(v) => self.vulkan_version = Some(v),
                    None => cx.error(
                        s.span(),
                        format!(
                            "`vulkan_version` is \"1.1\", \"1.2\" or \"1.3\", not \"{}\"",
                            s.value()
                        ),
                    ),
                }
            }
            ("dump", Value::Str(s)) => match s.value() {
                d if d.is_empty() => cx.error(
                    s.span(),
                    "`dump` is empty: name a directory, e.g. `dump: \"target/vkprism-dump\"`",
                ),
                d if d.contains('\0') => {
                    cx.error(s.span(), "`dump`: a directory name can't hold a NUL byte")
                }
                d => self.dump = Some((manifest_dir().join(d), s.span())),
            },
            ("shaders", Value::Map(kernels)) => self.shaders = Some(kernels),
            ("share", Value::List(items, _)) => self.shares = crate::share::share_list(cx, items),
            (k, _) => cx.error(key.span(), format!("`{k}` takes {}", key_shape(k))),
        }
        if matches!(k.as_str(), "src" | "path" | "bytes") {
            self.source_given = true;
        }
    }

    /// A precompiled module is not compiled: keys that change compilation are errors beside it.
    fn check_bytes(&self, cx: &Ctxt) {
        let Some(SourceSpec::Bytes(lit)) = &self.source else {
            return;
        };
        let given = [
            ("define", self.defines.is_some()),
            ("include", self.include_dirs.is_some()),
        ];
        for (key, _) in given.iter().filter(|(_, g)| *g) {
            cx.error(
                lit.span(),
                format!(
                    "`{key}` does not apply to a precompiled module (`bytes`): it is not compiled"
                ),
            );
        }
    }

    fn set_source(&mut self, cx: &Ctxt, new: SourceSpec, key: &Ident) {
        if self.source.is_some() {
            cx.error(
                key.span(),
                "give the kernel source once: `src`, `path` and `bytes` exclude each other",
            );
        } else {
            self.source = Some(new);
        }
    }
}

/// What a key's value looks like, for "takes ..." messages.
fn key_shape(key: &str) -> &'static str {
    match key {
        "src" | "path" | "bytes" => "a string literal",
        "variants" => "a list, e.g. `[fp32, fp16sa]`",
        "crate" => "a path, e.g. `::vkprism`",
        "define" => "a list of pairs, e.g. `[(\"N\", \"4\"), (\"FAST\", \"\")]`",
        "include" => "a list of directories, e.g. `[\"shaders/common\"]`",
        "vulkan_version" => "\"1.1\", \"1.2\" or \"1.3\"",
        "dump" => "a directory as a string literal, e.g. `\"target/vkprism-dump\"`",
        "share" => {
            "a list of another kernel's types, e.g. `[gemm::SpecConstants, gemm::PushConstants]`"
        }
        "shaders" => {
            "kernels in braces, e.g. `{ add: { src: \"...\" }, mul: { path: \"mul.comp\" } }`"
        }
        _ => "a value",
    }
}

/// The message for a key that is unknown, or known but not allowed where it is.
fn misplaced_key(key: &str, allowed: &[&str], place: Place) -> String {
    match place {
        _ if key == "optimize" => RETIRED_OPTIMIZE.to_string(),
        _ if !KEYS.contains(&key) => {
            format!(
                "unknown key `{key}`; expected one of: {}",
                allowed.join(", ")
            )
        }
        Place::Kernel => format!(
            "`{key}` is set once for the whole invocation, beside `shaders`, not inside one kernel"
        ),
        Place::Top { has_shaders: true } => format!(
            "`{key}` belongs to one kernel: put it inside that kernel's braces in `shaders`"
        ),
        Place::Top { has_shaders: false } if key == "share" => {
            "`share` takes types from another kernel of one invocation: it goes inside a kernel of `shaders: { ... }`".to_string()
        }
        Place::Top { has_shaders: false } => {
            format!(
                "unknown key `{key}`; expected one of: {}",
                allowed.join(", ")
            )
        }
    }
}

fn variant_list(cx: &Ctxt, items: Vec<Item>, span: Span) -> Option<Vec<Ident>> {
    if items.is_empty() {
        cx.error(
            span,
            "`variants` is empty: list at least one variant or leave the key out",
        );
    }
    let mut names = Vec::new();
    for item in items {
        match item {
            Item::Ident(i) => names.push(i),
            Item::Str(s) => cx.error(
                s.span(),
                "`variants` lists names without quotes, e.g. `[fp32, fp16sa]`",
            ),
            Item::Pair(..) | Item::Path(_) => {
                cx.error(item.span(), "`variants` lists names, e.g. `[fp32, fp16sa]`")
            }
        }
    }
    Some(names)
}

/// `define: [("NAME", "VALUE"), ...]` checked: identifiers, not reserved, each once, values on
/// one line.
fn define_list(cx: &Ctxt, items: Vec<Item>) -> Vec<(String, String)> {
    let mut defines: Vec<(String, String)> = Vec::new();
    for item in items {
        let (name, value) = match item {
            Item::Pair(n, v) => (n, v),
            other => {
                cx.error(
                    other.span(),
                    "a define is a pair of strings: `(\"NAME\", \"VALUE\")` (`\"\"` for no value)",
                );
                continue;
            }
        };
        let n = name.value();
        if let Some(e) = crate::options::define_name_error(&n) {
            cx.error(name.span(), e);
        } else if defines.iter().any(|(d, _)| *d == n) {
            cx.error(name.span(), format!("define `{n}` is given twice"));
        } else if let Some(e) = crate::options::define_value_error(&n, &value.value()) {
            cx.error(value.span(), e);
        } else {
            defines.push((n, value.value()));
        }
    }
    defines
}

/// `include: ["dir", ...]` resolved against `CARGO_MANIFEST_DIR`; each must be a directory.
fn include_list(cx: &Ctxt, items: Vec<Item>) -> Vec<std::path::PathBuf> {
    let mut dirs = Vec::new();
    for item in items {
        let Item::Str(s) = item else {
            cx.error(
                item.span(),
                "`include` lists directories as strings, e.g. `[\"shaders/common\"]`",
            );
            continue;
        };
        let dir = manifest_dir().join(s.value());
        if dir.is_dir() {
            dirs.push(dir);
        } else {
            cx.error(
                s.span(),
                format!("include directory `{}` is not a directory (include paths are relative to the crate's root, CARGO_MANIFEST_DIR)", dir.display()),
            );
        }
    }
    dirs
}
