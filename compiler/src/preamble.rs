//! Phase 5, expand: the extended-GLSL definitions of one variant, inserted after the kernel's
//! `#version` line. Everything is a macro or a plain declaration, so it also works with buffers
//! (an unsized array can't be a function parameter in GLSL, which is why ncnn's helpers are
//! macros too).
//!
//! Deviations from the contract's tables, each on purpose:
//! - `sfp` is `float` in the packed modes (fp16p, fp16pa, bf16p): a single half can't be stored
//!   into a shared `uint` without racing the neighbour's write. A kernel whose storage is only
//!   scalar therefore gets no packed variants (`variants.rs`): they would store fp32.
//! - `lfpvec4` is `f16vec4` in fp16sa (the contract says `uint64_t`, which would also demand
//!   `shaderInt64`); `f16vec4` in shared memory needs only `shaderFloat16`, which fp16sa needs
//!   anyway.
//! - bf16s stores bf16 bits in `uint16_t` (16-bit storage) rather than `bfloat16_t`: arithmetic
//!   is fp32 in both cases, so the bytes in memory and the results are the same, and
//!   `bfloat16_t` storage would demand `shaderBFloat16Type`, which few devices have.
//!   Conversions round to nearest even. Only the `_cm` variants' matrices (`cmfp`) are
//!   `bfloat16_t`.

use std::collections::BTreeSet;
use std::fmt::Write;
use vkprism_core::{DeviceFact, FloatMode, Int16Mode, Int8Mode, MemoryKind, VariantKey};

/// ncnn's `NCNN_…` switches for `key`, in the order they are defined.
fn ncnn_flags(key: &VariantKey) -> [(&'static str, bool); 15] {
    let f = key.float;
    let coopmat = key.coopmat == Some(true);
    [
        ("NCNN_cooperative_matrix", coopmat),
        ("ncnn_VK_KHR_cooperative_matrix", coopmat),
        // `VK_KHR_cooperative_matrix` supersedes the NV extension on every device that has both,
        // so kernels that offer both take the KHR path (the `_cm` axis).
        ("ncnn_VK_NV_cooperative_matrix", false),
        (
            "NCNN_fp16_packed",
            matches!(f, FloatMode::Fp16p | FloatMode::Fp16pa),
        ),
        (
            "NCNN_fp16_storage",
            matches!(f, FloatMode::Fp16s | FloatMode::Fp16sa),
        ),
        ("NCNN_fp16_arithmetic", f.is_fp16_arithmetic()),
        ("NCNN_bf16_packed", f == FloatMode::Bf16p),
        ("NCNN_bf16_storage", f == FloatMode::Bf16s),
        ("NCNN_int8_packed", key.int8 == Some(Int8Mode::Int8p)),
        (
            "NCNN_int8_storage",
            matches!(key.int8, Some(Int8Mode::Int8s | Int8Mode::Int8a)),
        ),
        ("NCNN_int8_arithmetic", key.int8 == Some(Int8Mode::Int8a)),
        ("NCNN_int16_packed", key.int16 == Some(Int16Mode::Int16p)),
        (
            "NCNN_int16_storage",
            matches!(key.int16, Some(Int16Mode::Int16s | Int16Mode::Int16a)),
        ),
        ("NCNN_image_shader", key.memory == MemoryKind::Image),
        ("NCNN_shader_local_memory", key.local_memory == Some(true)),
    ]
}

/// ncnn's switches for options vkprism has no variants for (fp16 / int8 uniform buffers): 0 in
/// every variant, so a kernel takes its path without them.
const UNUSED_SWITCHES: [&str; 2] = ["NCNN_fp16_uniform", "NCNN_int8_uniform"];

/// Every `NCNN_*` switch the preamble defines (to 1 or 0) in every variant: any other `NCNN_*`
/// name would silently be 0 in `#if`.
pub fn switch_names() -> Vec<&'static str> {
    let mut names: Vec<&str> = ncnn_flags(&VariantKey::parse("fp32").expect("fp32 is a variant"))
        .iter()
        .map(|(n, _)| *n)
        .filter(|n| n.starts_with("NCNN_"))
        .collect();
    names.push("NCNN_moltenvk");
    names.extend(UNUSED_SWITCHES);
    names
}

/// The `#define`s of every switch (`NCNN_*`, and the `ncnn_*` facts known per variant) for
/// `key`: all the preprocessor needs to pick the branches a variant compiles.
pub fn switches(key: &VariantKey) -> String {
    let mut s = String::with_capacity(512);
    for (name, on) in ncnn_flags(key) {
        let _ = writeln!(s, "#define {name} {}", u8::from(on));
    }
    s.push_str("#define NCNN_moltenvk 0\n#define ncnn_glsl_version 1\n");
    for name in UNUSED_SWITCHES {
        let _ = writeln!(s, "#define {name} 0");
    }
    s
}

/// The device facts (`ncnn_subgroupSize`, ...) among `idents` that the kernel doesn't `#define`
/// itself (`own`), declared as `int` specialization constants with their reserved ids: the
/// runtime sets each from the device when it creates a pipeline. The defaults are never used.
pub fn device_fact_constants(idents: &[(String, u32)], own: &BTreeSet<String>) -> String {
    let mut s = String::new();
    for fact in DeviceFact::ALL {
        let name = fact.glsl_name();
        if own.contains(name) || !idents.iter().any(|(id, _)| id == name) {
            continue;
        }
        // A subgroup size of 0 would divide by zero where a constant expression divides by it.
        let default = if fact == DeviceFact::SubgroupSize {
            32
        } else {
            0
        };
        let id = fact.spec_id();
        let _ = writeln!(
            s,
            "layout (constant_id = {id}) const int {name} = {default};"
        );
    }
    s
}

/// The `#extension` lines, macros and helper declarations for `key`.
pub fn preamble(key: &VariantKey) -> String {
    let mut s = String::with_capacity(8192);
    let f = key.float;
    // Extensions first: they must precede anything but preprocessor lines.
    if f.is_storage16() {
        s.push_str("#extension GL_EXT_shader_16bit_storage : require\n");
    }
    if f.is_fp16_arithmetic() {
        s.push_str("#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require\n");
    }
    match key.int8 {
        Some(Int8Mode::Int8s) => s.push_str("#extension GL_EXT_shader_8bit_storage : require\n"),
        Some(Int8Mode::Int8a) => s.push_str(
            "#extension GL_EXT_shader_8bit_storage : require\n\
             #extension GL_EXT_shader_explicit_arithmetic_types_int8 : require\n",
        ),
        _ => {}
    }
    match key.int16 {
        Some(Int16Mode::Int16s) => {
            if !f.is_storage16() {
                s.push_str("#extension GL_EXT_shader_16bit_storage : require\n");
            }
            // `int16_t` shared memory (`lint16`); the module declares `Int16` only where used.
            s.push_str("#extension GL_EXT_shader_explicit_arithmetic_types_int16 : enable\n");
        }
        Some(Int16Mode::Int16a) => {
            if !f.is_storage16() {
                s.push_str("#extension GL_EXT_shader_16bit_storage : require\n");
            }
            s.push_str("#extension GL_EXT_shader_explicit_arithmetic_types_int16 : require\n");
        }
        _ => {}
    }
    if key.coopmat == Some(true) {
        s.push_str(
            "#extension GL_KHR_cooperative_matrix : require\n\
             #extension GL_KHR_memory_scope_semantics : require\n",
        );
        if f.is_bf16() {
            s.push_str("#extension GL_EXT_bfloat16 : require\n");
            if f.is_storage16() {
                // bf16s stores `uint16_t` bits: loading a `bfloat16_t` matrix from such a buffer
                // takes the int16 type beyond storage (the module then declares `Int16`, and the
                // variant requires `shaderInt16`, only where a kernel does it).
                s.push_str("#extension GL_EXT_shader_explicit_arithmetic_types_int16 : enable\n");
            }
        } else if !f.is_fp16_arithmetic() {
            // fp16 matrices need the float16_t type even where arithmetic is fp32.
            s.push_str("#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require\n");
        }
    }
    s.push_str(&switches(key));
    s.push_str("#define psc(x) (x == 0 ? p.x : x)\n");
    if key.coopmat == Some(true) {
        // The component type of the variant's 16-bit matrix operands.
        s.push_str(if f.is_bf16() {
            "#define cmfp bfloat16_t\n"
        } else {
            "#define cmfp float16_t\n"
        });
    }
    // Defined for every kernel: harmless where unused, and a kernel without a float axis
    // (fp32 only) can still use the vocabulary.
    s.push_str(COMMON_HELPERS);
    s.push_str(INT16_HELPERS);
    s.push_str(float_types(f));
    s.push_str(&local_and_matrix_defs(f));
    s.push_str(BUFFER_FUNCTIONS);
    if key.memory == MemoryKind::Image {
        s.push_str(image_defs(f));
    }
    if let Some(i) = key.int8 {
        s.push_str(&int8_defs(i));
    }
    if let Some(i) = key.int16 {
        s.push_str(int16_defs(i));
    }
    s
}

/// Types and the storage <-> arithmetic conversions `S2A*` / `A2S*`, plus the storage-scalar
/// vec4 used by the pack/unpack copies (`SV4`, `SV4_UNPK`, `SV4_PK`).
fn float_types(f: FloatMode) -> &'static str {
    match f {
        FloatMode::Fp32 => {
            r#"
#define sfp float
#define sfpvec2 vec2
#define sfpvec4 vec4
#define sfpvec8 mat2x4
#define afp float
#define afpvec2 vec2
#define afpvec4 vec4
#define afpvec8 mat2x4
#define lfp float
#define lfpvec4 vec4
#define S2A1(sv) (sv)
#define S2A2(sv) (sv)
#define S2A4(sv) (sv)
#define S2A8(sv) (sv)
#define A2S1(v) (v)
#define A2S2(v) (v)
#define A2S4(v) (v)
#define A2S8(v) (v)
#define SV4 vec4
#define SV4_UNPK(sv) (sv)
#define SV4_PK(a,b,c,d) vec4(a,b,c,d)
#define sfp2lfp(v) (v)
#define sfp2lfpvec4(v) (v)
#define lfp2afp(v) (v)
#define lfp2afpvec4(v) (v)
"#
        }
        FloatMode::Fp16p => {
            r#"
#define sfp float
#define sfpvec2 uint
#define sfpvec4 uvec2
#define sfpvec8 uvec4
#define afp float
#define afpvec2 vec2
#define afpvec4 vec4
#define afpvec8 mat2x4
#define lfp float
#define lfpvec4 uvec2
#define S2A1(sv) (sv)
#define S2A2(sv) unpackHalf2x16(sv)
#define S2A4(sv) vec4(unpackHalf2x16((sv).x), unpackHalf2x16((sv).y))
#define S2A8(sv) mat2x4(vec4(unpackHalf2x16((sv).r), unpackHalf2x16((sv).g)), vec4(unpackHalf2x16((sv).b), unpackHalf2x16((sv).a)))
#define A2S1(v) (v)
#define A2S2(v) packHalf2x16(v)
#define A2S4(v) uvec2(packHalf2x16((v).rg), packHalf2x16((v).ba))
#define A2S8(v) uvec4(packHalf2x16((v)[0].rg), packHalf2x16((v)[0].ba), packHalf2x16((v)[1].rg), packHalf2x16((v)[1].ba))
#define SV4 vec4
#define SV4_UNPK(sv) S2A4(sv)
#define SV4_PK(a,b,c,d) uvec2(packHalf2x16(vec2(a,b)), packHalf2x16(vec2(c,d)))
#define sfp2lfp(v) (v)
#define sfp2lfpvec4(v) (v)
#define lfp2afp(v) (v)
#define lfp2afpvec4(v) S2A4(v)
"#
        }
        FloatMode::Fp16pa => {
            r#"
#define sfp float
#define sfpvec2 uint
#define sfpvec4 uvec2
#define sfpvec8 uvec4
#define afp float16_t
#define afpvec2 f16vec2
#define afpvec4 f16vec4
#define afpvec8 f16mat2x4
#define lfp float
#define lfpvec4 uvec2
#define S2A1(sv) float16_t(sv)
#define S2A2(sv) unpackFloat2x16(sv)
#define S2A4(sv) f16vec4(unpackFloat2x16((sv).x), unpackFloat2x16((sv).y))
#define S2A8(sv) f16mat2x4(f16vec4(unpackFloat2x16((sv).r), unpackFloat2x16((sv).g)), f16vec4(unpackFloat2x16((sv).b), unpackFloat2x16((sv).a)))
#define A2S1(v) float(v)
#define A2S2(v) packFloat2x16(v)
#define A2S4(v) uvec2(packFloat2x16((v).rg), packFloat2x16((v).ba))
#define A2S8(v) uvec4(packFloat2x16((v)[0].rg), packFloat2x16((v)[0].ba), packFloat2x16((v)[1].rg), packFloat2x16((v)[1].ba))
#define SV4 vec4
#define SV4_UNPK(sv) vec4(unpackHalf2x16((sv).x), unpackHalf2x16((sv).y))
#define SV4_PK(a,b,c,d) uvec2(packHalf2x16(vec2(a,b)), packHalf2x16(vec2(c,d)))
#define sfp2lfp(v) (v)
#define sfp2lfpvec4(v) (v)
#define lfp2afp(v) float16_t(v)
#define lfp2afpvec4(v) S2A4(v)
"#
        }
        FloatMode::Fp16s => {
            r#"
struct vkprism_sfpvec8 { f16vec4 abcd; f16vec4 efgh; };
#define sfp float16_t
#define sfpvec2 f16vec2
#define sfpvec4 f16vec4
#define sfpvec8 vkprism_sfpvec8
#define afp float
#define afpvec2 vec2
#define afpvec4 vec4
#define afpvec8 mat2x4
#define lfp float
#define lfpvec4 uvec2
#define S2A1(sv) float(sv)
#define S2A2(sv) vec2(sv)
#define S2A4(sv) vec4(sv)
#define S2A8(sv) mat2x4(vec4((sv).abcd), vec4((sv).efgh))
#define A2S1(v) float16_t(v)
#define A2S2(v) f16vec2(v)
#define A2S4(v) f16vec4(v)
#define VKP_ST8(buf,i,v) {buf[i].abcd = f16vec4((v)[0]); buf[i].efgh = f16vec4((v)[1]);}
#define VKP_CP8(buf,i,sbuf,si) {buf[i].abcd = sbuf[si].abcd; buf[i].efgh = sbuf[si].efgh;}
#define SV4 vec4
#define SV4_UNPK(sv) vec4(sv)
#define SV1_ST(v) float16_t(v)
#define SV4_PK(a,b,c,d) f16vec4(vec4(float(a), float(b), float(c), float(d)))
#define sfp2lfp(v) float(v)
#define sfp2lfpvec4(v) uvec2(packHalf2x16(vec4(v).xy), packHalf2x16(vec4(v).zw))
#define lfp2afp(v) (v)
#define lfp2afpvec4(v) vec4(unpackHalf2x16((v).x), unpackHalf2x16((v).y))
"#
        }
        FloatMode::Fp16sa => {
            r#"
#define sfp float16_t
#define sfpvec2 f16vec2
#define sfpvec4 f16vec4
#define sfpvec8 f16mat2x4
#define afp float16_t
#define afpvec2 f16vec2
#define afpvec4 f16vec4
#define afpvec8 f16mat2x4
#define lfp float
#define lfpvec4 f16vec4
#define S2A1(sv) (sv)
#define S2A2(sv) (sv)
#define S2A4(sv) (sv)
#define S2A8(sv) (sv)
#define A2S1(v) (v)
#define A2S2(v) (v)
#define A2S4(v) (v)
#define A2S8(v) (v)
#define SV4 f16vec4
#define SV4_UNPK(sv) (sv)
#define SV4_PK(a,b,c,d) f16vec4(a,b,c,d)
#define sfp2lfp(v) float(v)
#define sfp2lfpvec4(v) (v)
#define lfp2afp(v) float16_t(v)
#define lfp2afpvec4(v) (v)
"#
        }
        FloatMode::Bf16p => {
            r#"
#define sfp float
#define sfpvec2 uint
#define sfpvec4 uvec2
#define sfpvec8 uvec4
#define afp float
#define afpvec2 vec2
#define afpvec4 vec4
#define afpvec8 mat2x4
#define lfp float
#define lfpvec4 uvec2
#define S2A1(sv) (sv)
#define S2A2(sv) vkprism_bf16_unpack2(sv)
#define S2A4(sv) vec4(vkprism_bf16_unpack2((sv).x), vkprism_bf16_unpack2((sv).y))
#define S2A8(sv) mat2x4(S2A4((sv).rg), S2A4((sv).ba))
#define A2S1(v) (v)
#define A2S2(v) vkprism_bf16_pack2(v)
#define A2S4(v) uvec2(vkprism_bf16_pack2((v).rg), vkprism_bf16_pack2((v).ba))
#define A2S8(v) uvec4(A2S4((v)[0]), A2S4((v)[1]))
#define SV4 vec4
#define SV4_UNPK(sv) S2A4(sv)
#define SV4_PK(a,b,c,d) A2S4(vec4(a,b,c,d))
#define sfp2lfp(v) (v)
#define sfp2lfpvec4(v) (v)
#define lfp2afp(v) (v)
#define lfp2afpvec4(v) S2A4(v)
"#
        }
        FloatMode::Bf16s => {
            r#"
struct vkprism_sfpvec8 { u16vec4 abcd; u16vec4 efgh; };
#define sfp uint16_t
#define sfpvec2 u16vec2
#define sfpvec4 u16vec4
#define sfpvec8 vkprism_sfpvec8
#define afp float
#define afpvec2 vec2
#define afpvec4 vec4
#define afpvec8 mat2x4
#define lfp float
#define lfpvec4 vec4
#define S2A1(sv) uintBitsToFloat(uint(sv) << 16)
#define S2A2(sv) uintBitsToFloat(uvec2(sv) << 16)
#define S2A4(sv) uintBitsToFloat(uvec4(sv) << 16)
#define S2A8(sv) mat2x4(S2A4((sv).abcd), S2A4((sv).efgh))
#define A2S1(v) uint16_t(vkprism_bf16_bits(v))
#define A2S2(v) u16vec2(vkprism_bf16_bits4(vec4(v, 0.0, 0.0)).xy)
#define A2S4(v) u16vec4(vkprism_bf16_bits4(v))
#define VKP_ST8(buf,i,v) {buf[i].abcd = A2S4((v)[0]); buf[i].efgh = A2S4((v)[1]);}
#define VKP_CP8(buf,i,sbuf,si) {buf[i].abcd = sbuf[si].abcd; buf[i].efgh = sbuf[si].efgh;}
#define SV4 uvec4
#define SV4_UNPK(sv) uvec4(sv)
#define SV1_ST(v) uint16_t(v)
#define SV4_PK(a,b,c,d) u16vec4(uvec4(uint(a), uint(b), uint(c), uint(d)))
#define sfp2lfp(v) S2A1(v)
#define sfp2lfpvec4(v) S2A4(v)
#define lfp2afp(v) (v)
#define lfp2afpvec4(v) (v)
"#
        }
    }
}

/// Helpers every variant gets (plain functions: glslang drops the ones a kernel doesn't call),
/// and ncnn's mode-independent names over them: `packBFloat2x16` / `unpackBFloat2x16` (bf16 bits
/// rounded to nearest even, where ncnn truncates), `packInt4x8` / `unpackInt4x8` (four int8 in an
/// `int`, element 0 in the low byte), `float2int8` / `float2int8vec4` (half away from zero,
/// saturated to [-127, 127]).
const COMMON_HELPERS: &str = r#"
uint vkprism_bf16_bits(float v) { uint u = floatBitsToUint(v); return (u + 0x7fffu + ((u >> 16) & 1u)) >> 16; }
uvec4 vkprism_bf16_bits4(vec4 v) { uvec4 u = floatBitsToUint(v); return (u + 0x7fffu + ((u >> 16) & 1u)) >> 16; }
uint vkprism_bf16_pack2(vec2 v) { return vkprism_bf16_bits(v.x) | (vkprism_bf16_bits(v.y) << 16); }
vec2 vkprism_bf16_unpack2(uint u) { return vec2(uintBitsToFloat(u << 16), uintBitsToFloat(u & 0xffff0000u)); }
uvec2 vkprism_bf16_pack4(vec4 v) { return uvec2(vkprism_bf16_pack2(v.xy), vkprism_bf16_pack2(v.zw)); }
vec4 vkprism_bf16_unpack4(uvec2 u) { return vec4(vkprism_bf16_unpack2(u.x), vkprism_bf16_unpack2(u.y)); }
uvec2 vkprism_half_pack4(vec4 v) { return uvec2(packHalf2x16(v.xy), packHalf2x16(v.zw)); }
vec4 vkprism_half_unpack4(uvec2 u) { return vec4(unpackHalf2x16(u.x), unpackHalf2x16(u.y)); }
int vkprism_pack_i4x8(ivec4 v) { uvec4 u = uvec4(v) & 255u; return int(u.x | (u.y << 8) | (u.z << 16) | (u.w << 24)); }
ivec4 vkprism_unpack_i4x8(int v) { return ivec4(bitfieldExtract(v, 0, 8), bitfieldExtract(v, 8, 8), bitfieldExtract(v, 16, 8), bitfieldExtract(v, 24, 8)); }
int vkprism_float2int8(float v) { return int(clamp(v + (v >= 0.0 ? 0.5 : -0.5), -127.0, 127.0)); }
ivec4 vkprism_float2int8vec4(vec4 v) { return ivec4(clamp(v + mix(vec4(-0.5), vec4(0.5), greaterThanEqual(v, vec4(0.0))), vec4(-127.0), vec4(127.0))); }
#define packBFloat2x16(v) vkprism_bf16_pack2(vec2(v))
#define unpackBFloat2x16(v) vkprism_bf16_unpack2(uint(v))
#define packInt4x8(v) vkprism_pack_i4x8(ivec4(v))
#define unpackInt4x8(v) vkprism_unpack_i4x8(int(v))
#define float2int8(v) vkprism_float2int8(float(v))
#define float2int8vec4(v) vkprism_float2int8vec4(vec4(v))
"#;

/// Two int16 in an `int`, element 0 in the low half (`packInt2x16` / `unpackInt2x16`), in
/// every variant: plain functions, which glslang drops where unused.
const INT16_HELPERS: &str = r#"
int vkprism_pack_i2x16(ivec2 v) { uvec2 u = uvec2(v) & 0xffffu; return int(u.x | (u.y << 16)); }
ivec2 vkprism_unpack_i2x16(int v) { return ivec2(bitfieldExtract(v, 0, 16), bitfieldExtract(v, 16, 16)); }
#define packInt2x16(v) vkprism_pack_i2x16(ivec2(v))
#define unpackInt2x16(v) vkprism_unpack_i2x16(int(v))
"#;

/// ncnn's int16 vocabulary for int16 mode `i`, as ncnn's current compiler defines it.
/// - int16p: two values per `int` (`sint16vec4` is an `ivec2`); a scalar `sint16` buffer holds
///   two values per `int` too, and `i16buffer_st1` stores one half by an atomic compare-and-swap
///   loop (its neighbour may be stored by another invocation at the same time): the store reads
///   the word, so such a buffer must not be declared `writeonly`.
/// - int16s: `int16_t` / `i16vec4` storage and shared memory, `int` arithmetic. `int16_t` in
///   shared memory makes the module declare `Int16`, so such a variant requires `shaderInt16`
///   (reflected from its capabilities); one that keeps int16 in buffers only does not.
/// - int16a: `int16_t` storage, shared memory and arithmetic.
fn int16_defs(i: Int16Mode) -> &'static str {
    match i {
        Int16Mode::Int16p => {
            r#"
#define sint16 int
#define sint16vec4 ivec2
#define lint16 int
#define lint16vec4 ivec2
#define aint16 int
#define aint16vec4 ivec4
#define lint162aint16(v) int(v)
#define lint162aint16vec4(v) ivec4(unpackInt2x16((v).x), unpackInt2x16((v).y))
#define i16buffer_ld1(buf,i) (unpackInt2x16(buf[(i) / 2])[(i) % 2])
#define i16buffer_st1(buf,i,v) {uint _vkp_i = uint(i); uint _vkp_w = _vkp_i / 2u; int _vkp_s = int(v); int _vkp_old; int _vkp_new; do { _vkp_old = atomicOr(buf[_vkp_w], 0); ivec2 _vkp_h = unpackInt2x16(_vkp_old); _vkp_h[_vkp_i % 2u] = _vkp_s; _vkp_new = packInt2x16(_vkp_h); } while (atomicCompSwap(buf[_vkp_w], _vkp_old, _vkp_new) != _vkp_old);}
#define i16buffer_ld2(buf,i) ivec2(i16buffer_ld1(buf,i), i16buffer_ld1(buf,(i)+1))
#define i16buffer_st2(buf,i,v) {uint _vkp_i2 = uint(i); ivec2 _vkp_v2 = ivec2(v); if ((_vkp_i2 & 1u) == 0u) { buf[_vkp_i2 / 2u] = packInt2x16(_vkp_v2); } else { i16buffer_st1(buf, int(_vkp_i2), _vkp_v2.x); i16buffer_st1(buf, int(_vkp_i2) + 1, _vkp_v2.y); }}
#define i16buffer_ld4(buf,i) ivec4(unpackInt2x16(buf[i].x), unpackInt2x16(buf[i].y))
#define i16buffer_st4(buf,i,v) {ivec4 _vkp_v4 = ivec4(v); buf[i] = ivec2(packInt2x16(_vkp_v4.xy), packInt2x16(_vkp_v4.zw));}
#define i16buffer_sm4(buf,i) (buf[i])
"#
        }
        Int16Mode::Int16s => {
            r#"
#define sint16 int16_t
#define sint16vec4 i16vec4
#define lint16 int16_t
#define lint16vec4 i16vec4
#define aint16 int
#define aint16vec4 ivec4
#define lint162aint16(v) int(v)
#define lint162aint16vec4(v) ivec4(v)
#define i16buffer_ld1(buf,i) int(buf[i])
#define i16buffer_st1(buf,i,v) {buf[i] = int16_t(v);}
#define i16buffer_ld2(buf,i) ivec2(int(buf[i]), int(buf[(i)+1]))
#define i16buffer_st2(buf,i,v) {ivec2 _vkp_v2 = ivec2(v); buf[i] = int16_t(_vkp_v2.x); buf[(i)+1] = int16_t(_vkp_v2.y);}
#define i16buffer_ld4(buf,i) ivec4(buf[i])
#define i16buffer_st4(buf,i,v) {buf[i] = i16vec4(v);}
#define i16buffer_sm4(buf,i) (buf[i])
"#
        }
        Int16Mode::Int16a => {
            r#"
#define sint16 int16_t
#define sint16vec4 i16vec4
#define lint16 int16_t
#define lint16vec4 i16vec4
#define aint16 int16_t
#define aint16vec4 i16vec4
#define lint162aint16(v) (v)
#define lint162aint16vec4(v) (v)
#define i16buffer_ld1(buf,i) int(buf[i])
#define i16buffer_st1(buf,i,v) {buf[i] = int16_t(v);}
#define i16buffer_ld2(buf,i) ivec2(int(buf[i]), int(buf[(i)+1]))
#define i16buffer_st2(buf,i,v) {ivec2 _vkp_v2 = ivec2(v); buf[i] = int16_t(_vkp_v2.x); buf[(i)+1] = int16_t(_vkp_v2.y);}
#define i16buffer_ld4(buf,i) (buf[i])
#define i16buffer_st4(buf,i,v) {buf[i] = i16vec4(v);}
#define i16buffer_sm4(buf,i) (buf[i])
"#
        }
    }
}

/// Arithmetic -> shared memory (`afp2lfp`, `afp2lfpvec4`), and the 4x4 matrices: `sfpmat4`
/// (storage: 16 values in column order, the same bytes as 16 `sfp` values of the mode in every
/// mode, bf16 included), `afpmat4`
/// (arithmetic) and their conversions `sfp2afpmat4`, `afp2sfpmat4`.
fn local_and_matrix_defs(f: FloatMode) -> String {
    // A struct holding 16-bit members can't be constructed, passed or returned without 16-bit
    // arithmetic, so every 16-bit mode but fp16sa stores the matrix as eight packed `uint`s: the
    // same bytes as 16 halves (or bf16 values) in column order.
    const HALF_PACKED: &str = r#"
struct vkprism_sfpmat4 { uvec4 c01; uvec4 c23; };
#define sfpmat4 vkprism_sfpmat4
mat4 vkprism_s2a_mat4(vkprism_sfpmat4 m) { return mat4(vkprism_half_unpack4(m.c01.xy), vkprism_half_unpack4(m.c01.zw), vkprism_half_unpack4(m.c23.xy), vkprism_half_unpack4(m.c23.zw)); }
vkprism_sfpmat4 vkprism_a2s_mat4(mat4 m) { return vkprism_sfpmat4(uvec4(vkprism_half_pack4(m[0]), vkprism_half_pack4(m[1])), uvec4(vkprism_half_pack4(m[2]), vkprism_half_pack4(m[3]))); }
#define afp2sfpmat4(v) vkprism_a2s_mat4(mat4(v))
"#;
    const BF16_PACKED: &str = r#"
struct vkprism_sfpmat4 { uvec4 c01; uvec4 c23; };
#define sfpmat4 vkprism_sfpmat4
#define afpmat4 mat4
mat4 vkprism_s2a_mat4(vkprism_sfpmat4 m) { return mat4(vkprism_bf16_unpack4(m.c01.xy), vkprism_bf16_unpack4(m.c01.zw), vkprism_bf16_unpack4(m.c23.xy), vkprism_bf16_unpack4(m.c23.zw)); }
vkprism_sfpmat4 vkprism_a2s_mat4(mat4 m) { return vkprism_sfpmat4(uvec4(vkprism_bf16_pack4(m[0]), vkprism_bf16_pack4(m[1])), uvec4(vkprism_bf16_pack4(m[2]), vkprism_bf16_pack4(m[3]))); }
#define sfp2afpmat4(v) vkprism_s2a_mat4(v)
#define afp2sfpmat4(v) vkprism_a2s_mat4(mat4(v))
"#;
    let (local, matrix) = match f {
        FloatMode::Fp32 => (
            "#define afp2lfp(v) (v)\n#define afp2lfpvec4(v) (v)\n",
            "#define sfpmat4 mat4\n#define afpmat4 mat4\n#define sfp2afpmat4(v) (v)\n#define afp2sfpmat4(v) (v)\n",
        ),
        FloatMode::Fp16p | FloatMode::Fp16s => (
            "#define afp2lfp(v) float(v)\n#define afp2lfpvec4(v) vkprism_half_pack4(vec4(v))\n",
            "#define afpmat4 mat4\n#define sfp2afpmat4(v) vkprism_s2a_mat4(v)\n",
        ),
        FloatMode::Fp16pa => (
            "#define afp2lfp(v) float(v)\n#define afp2lfpvec4(v) vkprism_half_pack4(vec4(v))\n",
            "#define afpmat4 f16mat4\n#define sfp2afpmat4(v) f16mat4(vkprism_s2a_mat4(v))\n",
        ),
        FloatMode::Fp16sa => (
            "#define afp2lfp(v) float(v)\n#define afp2lfpvec4(v) f16vec4(v)\n",
            "#define sfpmat4 f16mat4\n#define afpmat4 f16mat4\n#define sfp2afpmat4(v) (v)\n#define afp2sfpmat4(v) f16mat4(v)\n",
        ),
        FloatMode::Bf16p => (
            "#define afp2lfp(v) float(v)\n#define afp2lfpvec4(v) vkprism_bf16_pack4(vec4(v))\n",
            "",
        ),
        FloatMode::Bf16s => (
            "#define afp2lfp(v) float(v)\n#define afp2lfpvec4(v) vec4(v)\n",
            "",
        ),
    };
    let packed = match f {
        FloatMode::Fp16p | FloatMode::Fp16pa | FloatMode::Fp16s => HALF_PACKED,
        FloatMode::Bf16p | FloatMode::Bf16s => BF16_PACKED,
        FloatMode::Fp32 | FloatMode::Fp16sa => "",
    };
    [local, matrix, packed].concat()
}

/// Buffer functions, written once over the per-mode conversions.
const BUFFER_FUNCTIONS: &str = r#"
#ifndef SV1_ST
#define SV1_ST(v) (v)
#endif
#ifndef VKP_ST8
#define VKP_ST8(buf,i,v) {buf[i] = A2S8(v);}
#define VKP_CP8(buf,i,sbuf,si) {buf[i] = sbuf[si];}
#endif
#define buffer_sm1(buf,i) sfp2lfp(buf[i])
#define buffer_sm4(buf,i) sfp2lfpvec4(buf[i])
#define buffer_ld1(buf,i) S2A1(buf[i])
#define buffer_ld2(buf,i) S2A2(buf[i])
#define buffer_ld4(buf,i) S2A4(buf[i])
#define buffer_ld8(buf,i) S2A8(buf[i])
#define buffer_st1(buf,i,v) {buf[i] = A2S1(v);}
#define buffer_st2(buf,i,v) {buf[i] = A2S2(v);}
#define buffer_st4(buf,i,v) {buf[i] = A2S4(v);}
#define buffer_st8(buf,i,v) VKP_ST8(buf,i,v)
#define buffer_cp1(buf,i,sbuf,si) {buf[i] = sbuf[si];}
#define buffer_cp2(buf,i,sbuf,si) {buf[i] = sbuf[si];}
#define buffer_cp4(buf,i,sbuf,si) {buf[i] = sbuf[si];}
#define buffer_cp8(buf,i,sbuf,si) VKP_CP8(buf,i,sbuf,si)
#define buffer_cp1to4(buf,i,sbuf,si4) {buf[i] = SV4_PK(sbuf[(si4).r], sbuf[(si4).g], sbuf[(si4).b], sbuf[(si4).a]);}
#define buffer_cp1to8(buf,i,sbuf,si4,sii4) {buffer_st8(buf, i, afpvec8(afpvec4(buffer_ld1(sbuf,(si4).r), buffer_ld1(sbuf,(si4).g), buffer_ld1(sbuf,(si4).b), buffer_ld1(sbuf,(si4).a)), afpvec4(buffer_ld1(sbuf,(sii4).r), buffer_ld1(sbuf,(sii4).g), buffer_ld1(sbuf,(sii4).b), buffer_ld1(sbuf,(sii4).a))));}
#define buffer_cp4to8(buf,i,sbuf,si2) {buffer_st8(buf, i, afpvec8(buffer_ld4(sbuf,(si2).r), buffer_ld4(sbuf,(si2).g)));}
#define buffer_cp4to1(buf,i4,sbuf,si) {SV4 _vkp_v = SV4_UNPK(sbuf[si]); buf[(i4).r] = SV1_ST(_vkp_v.r); buf[(i4).g] = SV1_ST(_vkp_v.g); buf[(i4).b] = SV1_ST(_vkp_v.b); buf[(i4).a] = SV1_ST(_vkp_v.a);}
#define buffer_cp8to1(buf,i4,ii4,sbuf,si) {afpvec8 _vkp_v = buffer_ld8(sbuf,si); buffer_st1(buf,(i4).r,_vkp_v[0].r); buffer_st1(buf,(i4).g,_vkp_v[0].g); buffer_st1(buf,(i4).b,_vkp_v[0].b); buffer_st1(buf,(i4).a,_vkp_v[0].a); buffer_st1(buf,(ii4).r,_vkp_v[1].r); buffer_st1(buf,(ii4).g,_vkp_v[1].g); buffer_st1(buf,(ii4).b,_vkp_v[1].b); buffer_st1(buf,(ii4).a,_vkp_v[1].a);}
#define buffer_cp8to4(buf,i2,sbuf,si) {afpvec8 _vkp_v = buffer_ld8(sbuf,si); buffer_st4(buf,(i2).r,_vkp_v[0]); buffer_st4(buf,(i2).g,_vkp_v[1]);}
"#;

macro_rules! image_fns {
    () => {
        r#"
#define VKP_X2_1(p,k) ((p)*2+k)
#define VKP_X2_2(p,k) ivec2((p).x*2+k, (p).y)
#define VKP_X2_3(p,k) ivec3((p).x*2+k, (p).y, (p).z)
#define image1d_ld1(tex,p) afp(texelFetch(tex,p,0).r)
#define image2d_ld1(tex,p) afp(texelFetch(tex,p,0).r)
#define image3d_ld1(tex,p) afp(texelFetch(tex,p,0).r)
#define image1d_ld4(tex,p) VKP_AF4(texelFetch(tex,p,0))
#define image2d_ld4(tex,p) VKP_AF4(texelFetch(tex,p,0))
#define image3d_ld4(tex,p) VKP_AF4(texelFetch(tex,p,0))
#define image1d_ld8(tex,p) afpvec8(VKP_AF4(texelFetch(tex,VKP_X2_1(p,0),0)), VKP_AF4(texelFetch(tex,VKP_X2_1(p,1),0)))
#define image2d_ld8(tex,p) afpvec8(VKP_AF4(texelFetch(tex,VKP_X2_2(p,0),0)), VKP_AF4(texelFetch(tex,VKP_X2_2(p,1),0)))
#define image3d_ld8(tex,p) afpvec8(VKP_AF4(texelFetch(tex,VKP_X2_3(p,0),0)), VKP_AF4(texelFetch(tex,VKP_X2_3(p,1),0)))
#define image1d_st1(img,p,v) {imageStore(img,p,vec4(float(v)));}
#define image2d_st1(img,p,v) {imageStore(img,p,vec4(float(v)));}
#define image3d_st1(img,p,v) {imageStore(img,p,vec4(float(v)));}
#define image1d_st4(img,p,v) {imageStore(img,p,vec4(v));}
#define image2d_st4(img,p,v) {imageStore(img,p,vec4(v));}
#define image3d_st4(img,p,v) {imageStore(img,p,vec4(v));}
#define image1d_st8(img,p,v) {imageStore(img,VKP_X2_1(p,0),vec4((v)[0])); imageStore(img,VKP_X2_1(p,1),vec4((v)[1]));}
#define image2d_st8(img,p,v) {imageStore(img,VKP_X2_2(p,0),vec4((v)[0])); imageStore(img,VKP_X2_2(p,1),vec4((v)[1]));}
#define image3d_st8(img,p,v) {imageStore(img,VKP_X2_3(p,0),vec4((v)[0])); imageStore(img,VKP_X2_3(p,1),vec4((v)[1]));}
#define image1d_cp1(img,p,tex,sp) {imageStore(img,p,texelFetch(tex,sp,0));}
#define image2d_cp1(img,p,tex,sp) {imageStore(img,p,texelFetch(tex,sp,0));}
#define image3d_cp1(img,p,tex,sp) {imageStore(img,p,texelFetch(tex,sp,0));}
#define image1d_cp4(img,p,tex,sp) {imageStore(img,p,texelFetch(tex,sp,0));}
#define image2d_cp4(img,p,tex,sp) {imageStore(img,p,texelFetch(tex,sp,0));}
#define image3d_cp4(img,p,tex,sp) {imageStore(img,p,texelFetch(tex,sp,0));}
#define image1d_cp8(img,p,tex,sp) {imageStore(img,VKP_X2_1(p,0),texelFetch(tex,VKP_X2_1(sp,0),0)); imageStore(img,VKP_X2_1(p,1),texelFetch(tex,VKP_X2_1(sp,1),0));}
#define image2d_cp8(img,p,tex,sp) {imageStore(img,VKP_X2_2(p,0),texelFetch(tex,VKP_X2_2(sp,0),0)); imageStore(img,VKP_X2_2(p,1),texelFetch(tex,VKP_X2_2(sp,1),0));}
#define image3d_cp8(img,p,tex,sp) {imageStore(img,VKP_X2_3(p,0),texelFetch(tex,VKP_X2_3(sp,0),0)); imageStore(img,VKP_X2_3(p,1),texelFetch(tex,VKP_X2_3(sp,1),0));}
"#
    };
}

/// Image formats, precision and image functions. An 8-wide value takes two texels along x.
fn image_defs(f: FloatMode) -> &'static str {
    if f.is_fp16() {
        if f.is_fp16_arithmetic() {
            concat!("#define imfmtc1 r16f\n#define imfmtc4 rgba16f\n#define imfmt1 r16f\n#define imfmt4 rgba16f\n#define unfp mediump\n",
                "#define VKP_AF4(x) f16vec4(x)\n", image_fns!())
        } else {
            concat!("#define imfmtc1 r16f\n#define imfmtc4 rgba16f\n#define imfmt1 r16f\n#define imfmt4 rgba16f\n#define unfp mediump\n",
                "#define VKP_AF4(x) vec4(x)\n", image_fns!())
        }
    } else {
        concat!("#define imfmtc1 r32f\n#define imfmtc4 rgba32f\n#define imfmt1 r32f\n#define imfmt4 rgba32f\n#define unfp highp\n",
            "#define VKP_AF4(x) vec4(x)\n", image_fns!())
    }
}

/// int8 types and functions: `sint8` / `sint8vec4` storage, `aint8` / `aint8vec4` arithmetic,
/// `i8buffer_ld1/ld4/st1/st4/cp1/cp4`. Packed mode keeps four int8 in a `uint` (element 0 in the
/// low byte, the same bytes as an `int8_t` array), and so does its scalar `sint8` buffer (an
/// `int` array, ncnn's current layout): `i8buffer_st1` stores one byte by an atomic
/// compare-and-swap loop (the other three may be stored by other invocations at the same time),
/// so it reads the word, and such a buffer must not be declared `writeonly`.
fn int8_defs(i: Int8Mode) -> String {
    let body = match i {
        Int8Mode::Int8p => {
            r#"
#define sint8 int
#define sint8vec4 uint
#define aint8 int
#define aint8vec4 ivec4
#define i8buffer_ld1(buf,i) bitfieldExtract(int(buf[(i) / 4]), int((i) % 4) * 8, 8)
#define i8buffer_ld4(buf,i) ivec4(bitfieldExtract(int(buf[i]),0,8), bitfieldExtract(int(buf[i]),8,8), bitfieldExtract(int(buf[i]),16,8), bitfieldExtract(int(buf[i]),24,8))
#define i8buffer_st1(buf,i,v) {uint _vkp_i = uint(i); uint _vkp_w = _vkp_i / 4u; int _vkp_old; int _vkp_new; do { _vkp_old = atomicOr(buf[_vkp_w], 0); _vkp_new = bitfieldInsert(_vkp_old, int(v), int(_vkp_i % 4u) * 8, 8); } while (atomicCompSwap(buf[_vkp_w], _vkp_old, _vkp_new) != _vkp_old);}
#define i8buffer_st4(buf,i,v) {ivec4 _vkp_q = ivec4(v) & 255; buf[i] = uint(_vkp_q.x | (_vkp_q.y << 8) | (_vkp_q.z << 16) | (_vkp_q.w << 24));}
#define i8buffer_cp1(buf,i,sbuf,si) {int _vkp_c = i8buffer_ld1(sbuf,si); i8buffer_st1(buf,i,_vkp_c);}
#define i8buffer_cp4(buf,i,sbuf,si) {buf[i] = sbuf[si];}
#define i8buffer_sm4(buf,i) int(buf[i])
"#
        }
        Int8Mode::Int8s => {
            r#"
#define sint8 int8_t
#define sint8vec4 i8vec4
#define aint8 int
#define aint8vec4 ivec4
#define i8buffer_ld1(buf,i) int(buf[i])
#define i8buffer_ld4(buf,i) ivec4(buf[i])
#define i8buffer_st1(buf,i,v) {buf[i] = int8_t(v);}
#define i8buffer_st4(buf,i,v) {buf[i] = i8vec4(v);}
#define i8buffer_cp1(buf,i,sbuf,si) {buf[i] = sbuf[si];}
#define i8buffer_cp4(buf,i,sbuf,si) {buf[i] = sbuf[si];}
#define i8buffer_sm4(buf,i) vkprism_pack_i4x8(ivec4(buf[i]))
"#
        }
        Int8Mode::Int8a => {
            r#"
#define sint8 int8_t
#define sint8vec4 i8vec4
#define aint8 int8_t
#define aint8vec4 i8vec4
#define i8buffer_ld1(buf,i) (buf[i])
#define i8buffer_ld4(buf,i) (buf[i])
#define i8buffer_st1(buf,i,v) {buf[i] = int8_t(v);}
#define i8buffer_st4(buf,i,v) {buf[i] = i8vec4(v);}
#define i8buffer_cp1(buf,i,sbuf,si) {buf[i] = sbuf[si];}
#define i8buffer_cp4(buf,i,sbuf,si) {buf[i] = sbuf[si];}
#define i8buffer_sm4(buf,i) vkprism_pack_i4x8(ivec4(buf[i]))
"#
        }
    };
    [
        body,
        r#"
#define i8buffer_cp1to4(buf,i,sbuf,si4) {i8buffer_st4(buf, i, ivec4(i8buffer_ld1(sbuf,(si4).r), i8buffer_ld1(sbuf,(si4).g), i8buffer_ld1(sbuf,(si4).b), i8buffer_ld1(sbuf,(si4).a)));}
#define i8buffer_cp4to1(buf,i4,sbuf,si) {ivec4 _vkp_q4 = ivec4(i8buffer_ld4(sbuf,si)); i8buffer_st1(buf,(i4).r,_vkp_q4.r); i8buffer_st1(buf,(i4).g,_vkp_q4.g); i8buffer_st1(buf,(i4).b,_vkp_q4.b); i8buffer_st1(buf,(i4).a,_vkp_q4.a);}
"#,
    ]
    .concat()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_switch_is_defined_in_every_variant() {
        for name in [
            "fp32",
            "fp16pa_int8s_image",
            "bf16s_int8a_lm_nocm",
            "fp16sa_cm",
        ] {
            let text = preamble(&VariantKey::parse(name).unwrap());
            for switch in switch_names() {
                assert!(
                    text.contains(&format!("#define {switch} ")),
                    "{name}: {switch}"
                );
            }
        }
        assert!(switch_names().contains(&"NCNN_fp16_storage"));
        assert!(switch_names().contains(&"NCNN_int16_storage"));
    }
}
