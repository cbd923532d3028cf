//! The `compute_shader!` macro of [vkprism](https://docs.rs/vkprism): a thin proc-macro shell
//! over `vkprism-compiler`, which does all the work as a plain library (so it can be tested
//! without a proc macro). Depend on `vkprism`, which re-exports it, rather than on this crate.

use proc_macro::TokenStream;

/// Compiles a compute kernel written in ncnn's *extended GLSL* to SPIR-V for every precision
/// variant, at build time, and generates a module with the variant table and typed bindings.
///
/// ```
/// vkprism::compute_shader! {
///     /// y = x * scale + bias, four values per invocation.
///     pub mod axpb,
///     src: r#"
/// #version 450
/// layout (binding = 0) readonly buffer x_blob { sfpvec4 x_data[]; };
/// layout (binding = 1) writeonly buffer y_blob { sfpvec4 y_data[]; };
/// layout (push_constant) uniform parameter { int n; float scale; float bias; } p;
/// void main() {
///     const int i = int(gl_GlobalInvocationID.x);
///     if (i >= p.n) return;
///     afpvec4 v = buffer_ld4(x_data, i);
///     buffer_st4(y_data, i, v * afp(p.scale) + afp(p.bias));
/// }
/// "#,
/// }
///
/// fn main() -> Result<(), Box<dyn std::error::Error>> {
///     // Seven variants: the kernel uses the float axis only.
///     assert_eq!(
///         axpb::VARIANT_NAMES,
///         ["fp32", "fp16p", "fp16pa", "fp16s", "fp16sa", "bf16p", "bf16s"]
///     );
///     let ctx = vkprism::Context::new()?;
///     let kernel = ctx.load::<axpb::Kernel>()?; // the best variant this device runs
///     let format = kernel.variant().bindings[0].format; // F32, F16 or Bf16 storage
///     let n = 1000; // values; 250 vec4s
///     let x: Vec<f32> = (0..n).map(|i| i as f32 / 100.0).collect();
///     let xt = vkprism::Tensor::from_f32(&ctx, &[n], format, &x)?;
///     let yt = vkprism::Tensor::new(&ctx, &[n], format)?;
///     let pipeline = kernel.pipeline(&axpb::SpecConstants::default(), None)?; // 64×1×1
///     ctx.run(|list| {
///         list.dispatch(
///             &pipeline,
///             &axpb::BufferBindings { x_blob: &xt, y_blob: &yt },
///             &axpb::PushConstants { n: (n / 4) as i32, scale: 2.0, bias: 1.0 },
///             [(n / 4) as u32, 1, 1], // invocations, not workgroups
///         )
///     })?;
///     let y = yt.download_f32()?;
///     assert!((y[500] - 11.0).abs() < 0.02);
///     Ok(())
/// }
/// ```
///
/// # Keys
///
/// The input is `[attributes] [visibility] mod NAME` followed by `key: value` entries, separated
/// by commas (a trailing comma is fine). Attributes, doc comments included, go on the generated
/// module.
///
/// | key | value | default |
/// |---|---|---|
/// | `src` | the kernel as a string literal (raw strings are handiest) | one of `src`, `path` and `bytes` is required |
/// | `path` | a file holding the kernel, relative to the invoking Rust file (as with `include_str!`) | |
/// | `bytes` | a precompiled SPIR-V file, relative to the invoking Rust file (see below) | |
/// | `variants` | `[name, ...]`: compile only these variants | every variant of the kernel's axes |
/// | `define` | `[("NAME", "VALUE"), ("FLAG", "")]`: `#define NAME VALUE` in every variant, after the preamble, before the kernel | none |
/// | `include` | `["dir", ...]`: directories `#include <…>` searches, relative to the crate's root (`CARGO_MANIFEST_DIR`) | none |
/// | `vulkan_version` | `"1.1"`, `"1.2"` or `"1.3"`: glslang's target environment and SPIR-V version (1.3, 1.5, 1.6); the runtime refuses the kernel on a device with a lower Vulkan version | `"1.1"` |
/// | `dump` | a directory (relative to the crate's root) to write what the macro made: see [Seeing the expansion](#seeing-the-expansion) | `VKPRISM_DUMP`, else none |
/// | `shaders` | `{ name: { key: value, ... }, ... }`: several kernels in one invocation (see below) | |
/// | `share` | under `shaders`, in one kernel: `[other::SpecConstants, other::PushConstants]`, another kernel's types used as this one's (see below) | each kernel its own |
/// | `crate` | the path of the vkprism facade, for crates that rename or re-export it | `::vkprism` |
///
/// `src`, `path` and `bytes` exclude each other. A `define` name must be an identifier, given
/// once, and may not start with a prefix vkprism or GLSL reserves (`NCNN_`, `ncnn_`, `GL_`,
/// `sfp`, `afp`, `lfp`, `sint8`, `aint8`, `buffer_`, `image2d_`, `psc`, ..., or contain `__`);
/// its value is one line. The shipped SPIR-V is glslang's, unoptimized (as ncnn ships it; drivers
/// optimize at pipeline creation). A `path` file, and every file it or an
/// inline kernel includes, is a rebuild dependency: editing it rebuilds the crate.
///
/// # Variants and their names
///
/// A kernel gets only the axes it mentions; the text is scanned (comments skipped) for:
///
/// | axis | chosen by the kernel mentioning | values (name part) |
/// |---|---|---|
/// | float | `sfp…`, `afp…`, `lfp…`, `buffer_…`, `image1d_…`/`2d`/`3d`, `unfp`, `imfmt…`, `NCNN_fp16_…`, `NCNN_bf16_…` | `fp32`, `fp16p`, `fp16pa`, `fp16s`, `fp16sa`, `bf16p`, `bf16s` (only `fp32` without the axis; no `fp16p`, `fp16pa`, `bf16p` buffer variants where nothing packs storage: no `sfpvec2/4/8`, `sfpmat4`, `NCNN_fp16_packed`, `NCNN_bf16_packed`) |
/// | int8 | `sint8…`, `aint8…`, `i8buffer_…`, `NCNN_int8_…` | `_int8p`, `_int8s`, `_int8a` |
/// | int16 | `sint16…`, `aint16…`, `lint16…`, `i16buffer_…`, `NCNN_int16_…` | `_int16p`, `_int16s`, `_int16a` |
/// | memory | image functions or `imfmt…` (image variants only), or `NCNN_image_shader` (buffer and image variants, the kernel choosing with `#if NCNN_image_shader`) | (buffer), `_image` (fp32 and fp16 only: there is no bf16 image format) |
/// | local memory | `NCNN_shader_local_memory` | `_lm`, `_nolm` |
/// | cooperative matrix | `NCNN_cooperative_matrix` (or ncnn's `ncnn_VK_KHR_cooperative_matrix`) | `_cm` (fp16 and bf16 buffer variants, and fp32 buffer variants with int8 arithmetic), `_nocm` |
/// | integer dot product | `ncnn_VK_KHR_shader_integer_dot_product`, `ncnn_shaderIntegerDotProduct`, `ncnn_integerDotProduct…Accelerated` in `#if` | `_dot` (all tested facts 1), `_nodot` (all 0) |
/// | subgroup operations | `ncnn_subgroup_basic` … `_quad`, `ncnn_shaderSubgroupExtendedTypes` in `#if` | `_sg`, `_nosg` |
/// | other features | `ncnn_shaderInt16`, `ncnn_shaderInt64`, ... in `#if` | `_feat`, `_nofeat` |
/// | vendor, driver | `ncnn_vendorID == N`, `ncnn_driverID == N` in `#if` | `_vendorN` / `_driverN` per number, `_vendorother` / `_driverother` |
///
/// A name is `float[_int8][_int16][_image][_lm|_nolm][_cm|_nocm]` then the device facts' parts
/// in the table's order: `fp16sa`, `fp32_int8s`, `fp32_int16p`, `fp16s_image`, `fp16sa_lm_nocm`,
/// `fp32_int8a_dot_vendorother`. The runtime picks, among the variants the device can run, the
/// one compiled for its facts. More than 128 variants is an error naming the axes, unless
/// `variants` names the ones to build. A kernel that mentions none of these has the one variant
/// `fp32`. Each variant is compiled with the matching `NCNN_*` macros defined to 1 or 0
/// (`NCNN_fp16_packed`, `NCNN_fp16_storage`, `NCNN_fp16_arithmetic`, `NCNN_bf16_packed`,
/// `NCNN_bf16_storage`, `NCNN_int8_packed`, `NCNN_int8_storage`, `NCNN_int8_arithmetic`,
/// `NCNN_int16_packed`, `NCNN_int16_storage`, `NCNN_image_shader`, `NCNN_shader_local_memory`, `NCNN_cooperative_matrix`), the `#extension`
/// lines it needs, and the type and function definitions of the extended language.
///
/// `_cm` variants multiply fp16 or bf16 (`cmfp`: `float16_t` or `bfloat16_t`) or, with int8
/// arithmetic, int8 cooperative matrices (`VK_KHR_cooperative_matrix`). A kernel that tests
/// `ncnn_VK_NV_cooperative_matrix` gets `_cm` variants only (ncnn's kernels for matrices alone);
/// that macro is 0 in every variant. The
/// runtime picks a `_cm` variant only where the device offers every matrix shape it multiplies
/// (never on lavapipe), so load such kernels with the normal selection.
///
/// What a variant needs of the device (`requires()`) is what its name implies and what its SPIR-V
/// declares (`OpCapability`: subgroup operations, integer dot products, an extension the kernel
/// enables outside any `#if`).
///
/// At load time the runtime picks the best variant the device and `vkprism::Options` allow:
/// storage precision first (bf16s, bf16p, both off by default, then fp16s, fp16p, fp32), then
/// cooperative matrices, fp16 arithmetic, int8 (int8a, int8s, int8p), int16 (int16a, int16s,
/// int16p), images, local memory.
/// Image variants are off unless `Options::use_image_storage` is set.
/// `VARIANT_NAMES` lists what was compiled; a variant's `requires()` what it needs of the device.
///
/// # Generated items
///
/// For `pub mod name`, the module `name` holds:
///
/// - `Kernel`: a unit struct implementing `vkprism::Kernel`; load it with
///   `ctx.load::<name::Kernel>()` (best variant) or `ctx.load_with::<name::Kernel>(&options)`
///   (`LoadOptions::variant_named("fp16s")?` forces one).
/// - `INFO: KernelInfo`: the kernel's name, variants, push-constant size, specialization
///   constants and workgroup size, for the runtime.
/// - `VARIANTS: &[VariantInfo]`: per variant its `key` (a `VariantKey`; `requires()` gives the
///   device features it needs), its SPIR-V words, its `bindings` (each with the `format` a
///   `Tensor` bound there must have: `F32`, `F16`, `Bf16`, `I8`, `I16`, `I32`, `U32` or `Raw`),
///   whether it reads `gl_NumWorkGroups`, the cooperative-matrix shapes it multiplies, the
///   device facts it reads (`device_facts`) and the Vulkan version it was compiled for
///   (`vulkan_version`).
/// - `VARIANT_NAMES: &[&str]`: the variants' names, in the same order.
/// - `PushConstants`: the `layout (push_constant)` block as a `#[repr(C)]`, `bytemuck::Pod`
///   struct with one public field per member, named as in GLSL (`int` → `i32`, `uint` and `bool`
///   → `u32`, `float` → `f32`, `vecN` / `ivecN` → `[f32; N]` / `[i32; N]`, arrays → arrays),
///   hidden `_padN` fields where the SPIR-V layout has gaps, a `const fn new(...)` taking the
///   members in order, and `const` assertions that every offset and the size match the SPIR-V. Without a block it is an alias of
///   `vkprism::NoPushConstants`.
/// - `SpecConstants`: one public field per `layout (constant_id = N) const` (same types),
///   `Default` giving the GLSL defaults; passed to `LoadedKernel::pipeline`. The workgroup size is
///   not in it: it is the pipeline's `local_size` argument, and neither are the device facts
///   (`ncnn_subgroupSize`, `ncnn_vendorID`, ... on ids 236 to 250), which the runtime sets from
///   the device.
/// - `BufferBindings<'a>` (buffer variants) and/or `ImageBindings<'a>` (image variants): one
///   public field per descriptor, `&'a Tensor` for buffers, `&'a Image` for samplers and storage
///   images, named after the buffer's block name (`x_blob` above) or the image's variable name
///   (a Rust keyword becomes a raw identifier, a nameless binding `binding<N>`). Every variant of
///   one memory kind has the same descriptors (the macro checks), so one struct serves them all.
///   `CommandList::dispatch` takes the struct of the loaded variant's memory kind (an image
///   variant with `BufferBindings` is an error at dispatch).
///
/// # Workgroup size and dispatch
///
/// The workgroup size is always specializable: a kernel that declares no `local_size_x_id` gets
/// ids 233, 234, 235 (ncnn's) and, if it declares no `local_size_x` either, a default of
/// **64 × 1 × 1**. `kernel.pipeline(&spec, None)` uses the kernel's default; `Some([x, y, z])`
/// sets it per pipeline. `CommandList::dispatch` (and `Context::run`) take the grid in
/// **invocations**, not workgroups: `[n, 1, 1]` runs at least `n` invocations, rounded up to
/// whole workgroups, so kernels must return early past their bounds.
///
/// # `psc`
///
/// `psc(x)` is `(x == 0 ? p.x : x)`: a specialization constant `x` that falls back to the push
/// constant of the same name when left at 0, so one kernel serves both a specialized pipeline
/// (the value baked in) and a generic one. It needs the push-constant block's instance name to be
/// `p` (`uniform parameter { int n; } p;`); another name is a compile error saying so.
///
/// # Includes
///
/// `#include "file"` is resolved relative to the including file (the invoking Rust file's
/// directory for an inline `src`, the kernel file's directory for `path`), then in the `include`
/// directories in order; `#include <file>` searches the `include` directories only (without any,
/// it is an error saying so). Every variant, `_cm` ones included, resolves the same way. Includes
/// nest (up to 32 deep) and every file read is a rebuild dependency. Errors in an included file
/// name that file and line. A cycle is one error naming its chain, and input is bounded: regular
/// files only, 1 MiB of kernel text, 1 MiB per included file, 4 MiB in all, 256 files, 4096
/// inclusions with repeats counted.
///
/// Macro expansion is bounded too, before any preprocessor runs: the kernel's `#define`s (its
/// own, its includes' and the `define` key's) may expand to at most 1 MiB of text, all uses
/// together, with macro calls nested at most 200 deep. A kernel over that (`#define M2 (M1+M1)`
/// forty levels deep is 2^40 tokens from a kilobyte) is an error at the use that crosses it,
/// naming the macro. As a last line of defence, a kernel whose variants are not compiled within
/// `VKPRISM_COMPILE_DEADLINE_SECS` (default 60 s) is an error naming the variants left, and the
/// macro returns; the GLSL compiler can't be interrupted, so its thread finishes in the
/// background.
///
/// # Several kernels in one invocation
///
/// As with vulkano-shaders' `shaders: { ... }`, one invocation can hold several kernels; `mod
/// NAME` then holds one module per kernel, each exactly what a single invocation makes:
///
/// ```
/// vkprism::compute_shader! {
///     pub mod ops,
///     define: [("SCALE", "2.0")],          // global: every kernel
///     shaders: {
///         /// y = x * SCALE
///         scale: { src: "#version 450\nlayout (binding = 0) buffer b { float d[]; };\nvoid main() { d[0] *= SCALE; }" },
///         /// y = x * 3: its own SCALE wins
///         triple: {
///             src: "#version 450\nlayout (binding = 0) buffer b { float d[]; };\nvoid main() { d[0] *= SCALE; }",
///             define: [("SCALE", "3.0")],
///         },
///     },
/// }
///
/// assert_eq!(ops::scale::INFO.name, "scale");
/// assert_eq!(ops::triple::VARIANT_NAMES, ["fp32"]);
/// ```
///
/// Beside `shaders` go the keys that apply to every kernel: `variants` (for every kernel that
/// doesn't list its own), `define` (a kernel's own define of the same name replaces the global
/// one), `include` (a kernel's own directories are searched first), `vulkan_version` (a kernel's
/// own value wins), `dump` and `crate`. Inside a kernel go `src` / `path` / `bytes`, `variants`,
/// `define`, `include`, `vulkan_version` and `share`. Each kernel is compiled, reflected and
/// checked on its own, a failed one doesn't stop the others, and two kernels of one name are an
/// error naming both lines.
///
/// `share: [other::SpecConstants, other::PushConstants]` makes a kernel use another kernel's
/// generated type instead of its own (as vulkano-shaders' `shaders` shares identical structs):
/// its module re-exports `other`'s, so one value serves both, e.g. a kernel and its variant
/// compiled with another `define`. The layouts must be identical: the same constants with the
/// same ids, types and defaults, or the same push-constant members at the same offsets; a
/// difference is an error at the entry naming both kernels and the field (`` `b` can't use
/// `a::SpecConstants`: `depth` is declared in `b`, not in `a` ``). The named kernel must own the
/// type (not share it itself). Bindings structs are not shared: each names its kernel, which is
/// how a dispatch checks its bindings against its pipeline at compile time.
///
/// ```
/// vkprism::compute_shader! {
///     pub mod scale,
///     shaders: {
///         once: { src: "#version 450\nlayout (constant_id = 0) const int tile = 4;\nlayout (binding = 0) buffer b { float d[]; };\nlayout (push_constant) uniform parameter { float f; } p;\nvoid main() { d[tile] *= p.f; }" },
///         twice: {
///             src: "#version 450\nlayout (constant_id = 0) const int tile = 4;\nlayout (binding = 0) buffer b { float d[]; };\nlayout (push_constant) uniform parameter { float f; } p;\nvoid main() { d[tile] *= p.f * p.f; }",
///             share: [once::SpecConstants, once::PushConstants],
///         },
///     },
/// }
///
/// let spec: scale::once::SpecConstants = scale::twice::SpecConstants { tile: 8 };
/// assert_eq!(spec.tile, 8);
/// ```
///
/// # Precompiled SPIR-V
///
/// `bytes: "kernel.spv"` takes a compute module compiled elsewhere (entry point `main`) as one
/// variant, `fp32` unless `variants: [name]` names another (`fp32_image` by default when it binds
/// images). It goes through the same reflection and checks as compiled kernels, so it gets the same
/// `Kernel`, `INFO`, typed `BufferBindings` / `ImageBindings`, `PushConstants` and
/// `SpecConstants`; the workgroup size is specializable only where the module says so (e.g.
/// `local_size_x_id`). Its Vulkan version is the one its SPIR-V version needs (1.3 or lower:
/// 1.1; 1.4, 1.5: 1.2; 1.6: 1.3), or `vulkan_version` if that is higher. A file that is not
/// SPIR-V (length, magic number, version), has no compute `main`, or fails reflection is an error
/// at the literal naming the file. `define` and `include` do not apply to it (given
/// in its own keys, they are errors; given beside `shaders`, they apply to the other kernels).
///
/// # Vulkan version
///
/// `vulkan_version: "1.2"` compiles for Vulkan 1.2 (SPIR-V 1.5), `"1.3"` for Vulkan 1.3 (SPIR-V
/// 1.6). Each variant's `VariantInfo::vulkan_version` records it; selection passes over a variant
/// the device's Vulkan version is too low for, and forcing one fails with `SelectFailure::DeviceLacks`
/// and a message naming both versions ("compiled for Vulkan 1.3 (`vulkan_version`); the device
/// offers Vulkan 1.2"). SPIR-V 1.6 declares the specializable workgroup size with `LocalSizeId`;
/// the runtime enables `maintenance4`, which that needs, on every Vulkan 1.3 device.
///
/// # Errors
///
/// Every error is a Rust compile error at the place it concerns, all reported at once, with stub
/// items so that code using the kernel does not add a cascade of "not found" errors (a failed
/// kernel's `PushConstants` and `SpecConstants` keep the fields its text declares, so
/// `k::PushConstants { n: 4, .. }` still type-checks; a message about text vkprism writes before
/// the kernel, such as a `define` key's macro, is placed at the kernel's first line and quotes
/// that text):
///
/// - input: an unknown or duplicate key, a value of the wrong type, none or several of `src`,
///   `path` and `bytes`, an empty `variants` list, a bad `define` (see above), an `include`
///   that is not a directory, a `vulkan_version` other than 1.1 to 1.3, an empty `dump`, a key in
///   the wrong place around `shaders`, two kernels of one name, a `share` entry that is not
///   another kernel's `SpecConstants` or `PushConstants`, or whose layout differs;
/// - source: a `path` or `#include` file that can't be read or is over the bounds above, an
///   `#include <…>` found in no `include` directory, an include cycle, a NUL byte, a `#version`
///   that is not one for compute shaders (430 to 460, `310 es`, `320 es`), a `bytes` file that
///   is not a SPIR-V compute module;
/// - variants: a name in `variants` that is misspelled, not a variant of this kernel (the message
///   lists the kernel's variants), or listed twice;
/// - scan: an unknown extended function (`buffer_ld5`, with the nearest known names) or type
///   (`sfpvec3`), a constructor on a type that packs in the variant (`lfpvec4(v)`: use
///   `afp2lfpvec4(v)`), each checked per variant after the preprocessor (a branch a variant
///   doesn't compile doesn't count; the message names the variants that do); an `ncnn_*` device
///   fact vkprism doesn't have (`ncnn_robustBufferAccess`), or one it has tested in `#if`
///   (`#if ncnn_subgroupSize == 32`: the preprocessor can't see a specialization constant), an
///   `NCNN_*` switch it doesn't define (`NCNN_fp16_storge`), `psc(x)` without a block named `p`,
///   a member `p.x` or a specialization constant `x`;
/// - GLSL: glslang's messages, each naming the variants it occurs in and the line in the Rust
///   file (or kernel file), each variant's first message first, an unknown type in a
///   declaration named (glslang says only `syntax error`), e.g. `v + 123` in an fp16-arithmetic variant (write `v + afp(123)`:
///   GLSL has no implicit conversion to `float16_t`);
/// - model: variants that disagree on descriptors, push constants or specialization constants,
///   a descriptor set other than 0, or a specialization constant on an id reserved for a device
///   fact.
///
/// Code using the generated items wrongly (a missing binding field, a `Tensor` where an `Image`
/// goes, a push-constant member of the wrong type) fails to type-check as ordinary Rust.
///
/// # Seeing the expansion
///
/// `dump: "target/vkprism-dump"` (or `VKPRISM_DUMP=target/vkprism-dump` in the environment of
/// the build, for every kernel; the key wins) writes, relative to the crate's root:
///
/// - `<kernel>.<variant>.comp`: the full GLSL of each variant, as glslang saw it (the preamble of
///   extended-GLSL definitions, the `define`s, the workgroup-size layout, then the kernel);
/// - `<kernel>.<variant>.spvasm`: its SPIR-V disassembly (by `spirv-dis` where one is on `PATH`,
///   else rspirv's disassembler);
/// - `<kernel>.rs`: the Rust the invocation generated, pretty-printed.
///
/// Under `shaders` the names start with the invocation's module: `<mod>.<kernel>.<variant>.comp`
/// and `<mod>.rs`. A kernel that fails still writes its GLSL and its module of errors. A failure to
/// write is a compile error at the `dump` literal (at the module name for `VKPRISM_DUMP`). The
/// expansion reads `VKPRISM_DUMP` with `option_env!`, so cargo rebuilds the crate when the
/// variable changes: setting it dumps a crate that is already built.
///
/// The compiler also runs as a command, printing each variant's reflection and writing the same
/// files: `vkprismc kernel.comp [--variants fp32,fp16s] [--define NAME=VALUE]
/// [--include DIR] [--vulkan-version 1.2] [--out DIR] [--emit spv,glsl,rust]` (`.spv`, the full
/// GLSL, the generated module). Install it with `cargo install
/// --path compiler` from the repository, or run it in place with `cargo run -p vkprism-compiler
/// --bin vkprismc -- ...`.
#[proc_macro]
pub fn compute_shader(input: TokenStream) -> TokenStream {
    vkprism_compiler::expand(input.into()).into()
}
