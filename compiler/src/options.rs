//! What an invocation sets beside the kernel text and applies to every variant: `define`,
//! `include`, `vulkan_version`. Checked by `ast`, carried by `source::Meta` into the compile
//! threads.

use std::path::PathBuf;

/// The Vulkan version a kernel is compiled for (`vulkan_version: "1.2"`): glslang's target
/// environment, the SPIR-V version, and the API version the runtime requires of a device.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub enum VulkanVersion {
    /// Vulkan 1.1, SPIR-V 1.3 (the default).
    #[default]
    V1_1,
    /// Vulkan 1.2, SPIR-V 1.5.
    V1_2,
    /// Vulkan 1.3, SPIR-V 1.6.
    V1_3,
}

impl VulkanVersion {
    /// Every version, in order.
    pub const ALL: [VulkanVersion; 3] = [
        VulkanVersion::V1_1,
        VulkanVersion::V1_2,
        VulkanVersion::V1_3,
    ];

    /// The version written `"1.1"`, `"1.2"` or `"1.3"`.
    pub fn parse(text: &str) -> Option<VulkanVersion> {
        Self::ALL.into_iter().find(|v| v.name() == text)
    }

    /// `"1.1"`, `"1.2"` or `"1.3"`.
    pub fn name(self) -> &'static str {
        match self {
            VulkanVersion::V1_1 => "1.1",
            VulkanVersion::V1_2 => "1.2",
            VulkanVersion::V1_3 => "1.3",
        }
    }

    /// The Vulkan API version number (`VK_MAKE_API_VERSION(0, 1, minor, 0)`).
    pub fn api_version(self) -> u32 {
        vkprism_core::api_version(1, self.minor())
    }

    fn minor(self) -> u32 {
        match self {
            VulkanVersion::V1_1 => 1,
            VulkanVersion::V1_2 => 2,
            VulkanVersion::V1_3 => 3,
        }
    }
}

/// The invocation's settings for every variant of one kernel.
#[derive(Clone, Debug, Default)]
pub struct KernelOptions {
    /// `define`: `(name, value)` in order, each a `#define` after the preamble (names checked
    /// by `ast`, one entry per name).
    pub defines: Vec<(String, String)>,
    /// `include`: the directories `#include <…>` searches, in order (and `#include "…"` after
    /// the including file's directory), absolute.
    pub include_dirs: Vec<PathBuf>,
    /// `vulkan_version`.
    pub vulkan_version: VulkanVersion,
}

impl KernelOptions {
    /// The `#define` lines of `defines`, each ending in a newline.
    pub fn define_lines(&self) -> String {
        self.defines
            .iter()
            .map(|(name, value)| format!("#define {name} {value}\n"))
            .collect()
    }
}

/// Prefixes of the names vkprism defines in every variant (its switches, extended types and
/// functions) and of names GLSL reserves: a `define` starting with one would change or break
/// the preamble's meaning.
pub const RESERVED_DEFINE_PREFIXES: &[&str] = &[
    "NCNN_",
    "ncnn_",
    "GL_",
    "__",
    "sfp",
    "afp",
    "lfp",
    "cmfp",
    "sint8",
    "aint8",
    "lint8",
    "sint16",
    "aint16",
    "lint16",
    "buffer_",
    "i8buffer_",
    "i16buffer_",
    "image1d_",
    "image2d_",
    "image3d_",
    "imfmt",
    "unfp",
    "psc",
];

/// Why `name` can't be a `define` name (not an identifier, or a reserved prefix), if it can't.
pub fn define_name_error(name: &str) -> Option<String> {
    let is_ident = name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if !is_ident {
        return Some(format!("define `{name}`: a macro name is an identifier (letters, digits, `_`, not starting with a digit)"));
    }
    RESERVED_DEFINE_PREFIXES
        .iter()
        .find(|p| name.starts_with(**p) || (**p == "__" && name.contains("__")))
        .map(|p| format!("define `{name}`: names starting with `{p}` are reserved (vkprism's switches, extended types and functions, or GLSL's own); pick another name"))
}

/// Why `value` can't be the value of define `name` (more than one line), if it can't.
pub fn define_value_error(name: &str, value: &str) -> Option<String> {
    value
        .contains(['\n', '\r', '\0'])
        .then(|| format!("define `{name}`: the value must be one line (no newline or NUL)"))
}
