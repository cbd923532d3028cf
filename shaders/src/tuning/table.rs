//! The tile table: [`DeviceClass`] (a vendor / architecture, from the ids the device reports),
//! and per class the default [`GemmConfig`] of a problem and the candidates [`GemmTuner`] times.
//!
//! [`GemmTuner`]: super::GemmTuner

use super::Tuned;
use crate::config::PLAIN_CM_TILES;
use crate::{Conv2dShape, GemmConfig};
use std::fmt;
use vkprism::{Context, DeviceLimits, DeviceType, FloatMode, VariantKey};

/// Which GEMM-shaped kernel a configuration is for: they share the tiles, not the constraints
/// (int8 steps are twice as deep, its plain path has no shared memory).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum GemmKernel {
    /// [`crate::gemm`].
    Gemm,
    /// [`crate::gemm_int8`].
    GemmInt8,
    /// [`crate::conv2d_nhwc`] (its implicit GEMM).
    Conv2dNhwc,
}

impl GemmKernel {
    /// Every kernel, in the order of the cache file.
    pub const ALL: [GemmKernel; 3] = [
        GemmKernel::Gemm,
        GemmKernel::GemmInt8,
        GemmKernel::Conv2dNhwc,
    ];

    /// The kernel's module name (`gemm`, `gemm_int8`, `conv2d_nhwc`).
    pub fn name(self) -> &'static str {
        match self {
            GemmKernel::Gemm => "gemm",
            GemmKernel::GemmInt8 => "gemm_int8",
            GemmKernel::Conv2dNhwc => "conv2d_nhwc",
        }
    }
}

/// One problem of a GEMM-shaped kernel, as the table and the tuner see it: the (implicit)
/// GEMM's M, N and K, the transposes, and whether every stored row is a multiple of one 16-byte
/// load (what [`GemmConfig::wide_loads`] may use).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct GemmProblem {
    /// Which kernel.
    pub kernel: GemmKernel,
    /// Rows of C.
    pub m: usize,
    /// Columns of C.
    pub n: usize,
    /// The reduction.
    pub k: usize,
    /// A is stored K×M ([`crate::gemm`] only).
    pub transpose_a: bool,
    /// B is stored N×K ([`crate::gemm`] only).
    pub transpose_b: bool,
    /// Every stored row is a multiple of one 16-byte load (8 halves; 16 int8 for
    /// [`crate::gemm_int8`]).
    pub aligned: bool,
}

/// Whether every stored row of an M×N×K product is a multiple of 8 elements (16 bytes of
/// halves): A's (K long, M where A is stored K×M, `transposes.0`), B's (N long, K where B is
/// stored N×K, `transposes.1`) and C's (N).
pub(crate) fn stored_rows_of_eight(
    (m, n, k): (usize, usize, usize),
    (transpose_a, transpose_b): (bool, bool),
) -> bool {
    let a_row = if transpose_a { m } else { k };
    let b_row = if transpose_b { k } else { n };
    [a_row, b_row, n].iter().all(|r| r.is_multiple_of(8))
}

impl GemmProblem {
    /// An M×N×K [`crate::gemm`], aligned where every stored row is a multiple of 8 halves: A's
    /// (K long, M where A is stored K×M), B's (N long, K where B is stored N×K) and C's (N).
    pub fn gemm(m: usize, n: usize, k: usize, transpose_a: bool, transpose_b: bool) -> Self {
        GemmProblem {
            kernel: GemmKernel::Gemm,
            m,
            n,
            k,
            transpose_a,
            transpose_b,
            aligned: stored_rows_of_eight((m, n, k), (transpose_a, transpose_b)),
        }
    }

    /// An M×N×K [`crate::gemm_int8`] (aligned where K and N are multiples of 16).
    pub fn gemm_int8(m: usize, n: usize, k: usize) -> Self {
        GemmProblem {
            kernel: GemmKernel::GemmInt8,
            m,
            n,
            k,
            transpose_a: false,
            transpose_b: false,
            aligned: k.is_multiple_of(16) && n.is_multiple_of(16),
        }
    }

    /// A [`crate::conv2d_nhwc`] of `shape` (aligned where both channel counts are multiples of 8).
    pub fn conv2d_nhwc(shape: &Conv2dShape) -> Self {
        let (m, n, k) = shape.gemm_mnk();
        GemmProblem {
            kernel: GemmKernel::Conv2dNhwc,
            m,
            n,
            k,
            transpose_a: false,
            transpose_b: false,
            aligned: shape.c.is_multiple_of(8) && shape.outc.is_multiple_of(8),
        }
    }
}

/// What a [`DeviceClass`] is derived from: the ids and type the device reports
/// ([`vkprism::Context::identity`]) and its subgroup size. Build one by hand to ask the table
/// about a device you don't have.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeviceInfo {
    /// `vendorID` (a PCI vendor id, or a Khronos one such as Mesa's 0x10005).
    pub vendor_id: u32,
    /// `deviceID`.
    pub device_id: u32,
    /// The kind of device.
    pub device_type: DeviceType,
    /// `deviceName`.
    pub name: String,
    /// The subgroup size (`ctx.features().limits.subgroup_size`): a cooperative-matrix
    /// workgroup's x, whatever the class.
    pub subgroup_size: u32,
}

impl DeviceInfo {
    /// The facts of `ctx`'s device.
    pub fn of(ctx: &Context) -> DeviceInfo {
        let id = ctx.identity();
        DeviceInfo {
            vendor_id: id.vendor_id,
            device_id: id.device_id,
            device_type: id.device_type,
            name: id.name,
            subgroup_size: ctx.features().limits.subgroup_size,
        }
    }
}

/// A family of devices that gets one row of the tile table: the default workgroup, step depth
/// and cooperative-matrix tiles of a GEMM-shaped problem, and the alternatives
/// [`GemmTuner`](super::GemmTuner) times against them.
///
/// **Only the NVIDIA rows are measured** (on an H100, BENCHMARKS.md); every other row is a
/// reasoned default, written down from what each vendor documents about its GPUs, and not
/// measured on the hardware: tune ([`GemmTuner`](super::GemmTuner)) where speed matters.
///
/// Derived by [`DeviceClass::classify`], in this order: a device of type CPU is [`Cpu`]
/// whatever its vendor; otherwise the vendor id decides (NVIDIA splits on the device).
///
/// | class | from | plain path (8×8 outputs per invocation) | cooperative matrices | why |
/// |---|---|---|---|---|
/// | [`NvidiaHopper`] | 0x10de, device 0x23xx (GH100: H100, H200, H800, H20) or a name with H100 / H200 / H800 / GH200 | 16×16 workgroups (128×128 tiles), 8×8 (64×64) under 128 tiles (fp32) / 256 (16-bit); BK 16 | `coopmat_tiles`: 128×256 tiles of 8 subgroups, BK 32 (48 from K ≥ 2048); convolutions 96×256 of 12 subgroups (BK 48), 64×128 of 8 where N ≤ 128 or K ≤ 64; 64×64 / 64×128 / 128×128 (BK 64) for small grids, N ≤ 64 or long K; every choice within 48 KiB of shared memory | **measured** on the H100 |
/// | [`Nvidia`] | 0x10de, other devices | as Hopper | as Hopper | Hopper's figures, not measured on other generations |
/// | [`Amd`] | 0x1002, 0x1022 | 16×16 (256 invocations: 4 wave64), 8×8 (one wave64) under 128 tiles; BK 16 | 128×128 tiles of 4 subgroups (4×4 fragments each), 64×64 under 128 tiles; BK 32 | workgroups a multiple of 64 invocations (GCN / CDNA wave64, RDNA's wave64 mode); 64 KiB LDS |
/// | [`Intel`] | 0x8086 | 16×16, 8×8 under 64 tiles; BK 16 | as AMD, 64×64 under 64 tiles | integrated parts have few execution units: smaller grids already fill them |
/// | [`Mali`] | 0x13b5 | 8×8 (64×64 tiles) always; BK 8 | 64×64 tiles of 4 subgroups; BK 32 | shared memory is ordinary cached memory and registers are few (64 per thread at full occupancy): small workgroups, shallow steps |
/// | [`Adreno`] | 0x5143 | 8×8 (one wave64) always; BK 16 | 64×64 tiles of 4 subgroups; BK 32 | 32 KiB shared memory; waves of 64 |
/// | [`Apple`] | 0x106b (MoltenVK) | 16×16, 8×8 under 64 tiles; BK 16 | 64×64 / 128×128 under / over 64 tiles; BK 32 | 32-wide SIMD groups, 32 KiB threadgroup memory, 8 to 76 cores |
/// | [`Cpu`] | type CPU (lavapipe, SwiftShader) | 8×8 (64×64 tiles) always; BK 16 | 64×64 tiles | a workgroup is one thread's loop over SIMD lanes: small tiles stay in cache and give every core workgroups |
/// | [`Other`] | anything else | 8×8 always; BK 16 | 64×64 / 128×128 under / over 128 tiles; BK 32 | conservative: the plain path fits the limits every Vulkan device guarantees (128 invocations, 16 KiB shared memory) |
///
/// ("Tiles" counts the 128×128 tiles of C; the int8 GEMM's steps are twice as deep in elements,
/// as [`GemmConfig::for_gemm_int8`] says.) The candidates each class times are in
/// [`DeviceClass::candidates`]; `shaders/src/tuning/table.rs` holds the rows.
///
/// [`NvidiaHopper`]: DeviceClass::NvidiaHopper
/// [`Nvidia`]: DeviceClass::Nvidia
/// [`Amd`]: DeviceClass::Amd
/// [`Intel`]: DeviceClass::Intel
/// [`Mali`]: DeviceClass::Mali
/// [`Adreno`]: DeviceClass::Adreno
/// [`Apple`]: DeviceClass::Apple
/// [`Cpu`]: DeviceClass::Cpu
/// [`Other`]: DeviceClass::Other
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum DeviceClass {
    /// NVIDIA Hopper (GH100: H100, H200, H800, H20, GH200), where the figures were measured.
    NvidiaHopper,
    /// Any other NVIDIA GPU.
    Nvidia,
    /// AMD GPUs (GCN, CDNA, RDNA).
    Amd,
    /// Intel GPUs (integrated Xe, Arc).
    Intel,
    /// ARM Mali.
    Mali,
    /// Qualcomm Adreno.
    Adreno,
    /// Apple GPUs through MoltenVK.
    Apple,
    /// CPU implementations (device type CPU: lavapipe, SwiftShader).
    Cpu,
    /// Anything else.
    Other,
}

/// PCI vendor ids the classes are keyed by.
const NVIDIA: u32 = 0x10de;
const AMD: [u32; 2] = [0x1002, 0x1022];
const INTEL: u32 = 0x8086;
const ARM: u32 = 0x13b5;
const QUALCOMM: u32 = 0x5143;
const APPLE: u32 = 0x106b;

impl DeviceClass {
    /// Every class, in the table's order.
    pub const ALL: [DeviceClass; 9] = [
        DeviceClass::NvidiaHopper,
        DeviceClass::Nvidia,
        DeviceClass::Amd,
        DeviceClass::Intel,
        DeviceClass::Mali,
        DeviceClass::Adreno,
        DeviceClass::Apple,
        DeviceClass::Cpu,
        DeviceClass::Other,
    ];

    /// The class of a device with these facts (the table above says how).
    pub fn classify(info: &DeviceInfo) -> DeviceClass {
        if info.device_type == DeviceType::Cpu {
            return DeviceClass::Cpu;
        }
        match info.vendor_id {
            NVIDIA if is_hopper(info) => DeviceClass::NvidiaHopper,
            NVIDIA => DeviceClass::Nvidia,
            v if AMD.contains(&v) => DeviceClass::Amd,
            INTEL => DeviceClass::Intel,
            ARM => DeviceClass::Mali,
            QUALCOMM => DeviceClass::Adreno,
            APPLE => DeviceClass::Apple,
            _ => DeviceClass::Other,
        }
    }

    /// The class of `ctx`'s device.
    pub fn of(ctx: &Context) -> DeviceClass {
        DeviceClass::classify(&DeviceInfo::of(ctx))
    }

    /// A short name (`nvidia-hopper`, `amd`, `cpu`, ...), as the cache file's comment writes it.
    pub fn name(self) -> &'static str {
        match self {
            DeviceClass::NvidiaHopper => "nvidia-hopper",
            DeviceClass::Nvidia => "nvidia",
            DeviceClass::Amd => "amd",
            DeviceClass::Intel => "intel",
            DeviceClass::Mali => "arm-mali",
            DeviceClass::Adreno => "qualcomm-adreno",
            DeviceClass::Apple => "apple",
            DeviceClass::Cpu => "cpu",
            DeviceClass::Other => "other",
        }
    }

    /// Whether this class's defaults were measured on such a device (only NVIDIA Hopper's).
    pub fn measured(self) -> bool {
        self == DeviceClass::NvidiaHopper
    }

    /// The default configuration of `problem` in `variant` on a device of this class with
    /// subgroups of `subgroup_size`. For both NVIDIA classes it is exactly
    /// [`GemmConfig::for_gemm`] / [`GemmConfig::for_gemm_int8`] / [`GemmConfig::for_conv`].
    pub fn config(
        self,
        problem: &GemmProblem,
        variant: &VariantKey,
        subgroup_size: u32,
    ) -> GemmConfig {
        let row = self.row();
        let coopmat = variant.coopmat == Some(true);
        let (m, n) = (problem.m, problem.n);
        let cfg = match row.rule {
            Rule::MeasuredH100 => GemmConfig::measured_choice(problem, variant, subgroup_size)
                .config(variant, subgroup_size, problem.aligned),
            Rule::Table(t) => {
                let tiles = m.div_ceil(128) * n.div_ceil(128);
                let plain = if tiles < t.small_grid[(variant.float != FloatMode::Fp32) as usize] {
                    Plain {
                        local: t.small,
                        bk: t.bk,
                    }
                } else {
                    Plain {
                        local: t.large,
                        bk: t.bk,
                    }
                };
                let cm = if tiles < t.cm_small_grid {
                    t.cm_small
                } else {
                    t.cm_large
                };
                build(problem, variant, subgroup_size, plain, cm)
            }
        };
        int8_steps(problem, cfg, coopmat)
    }

    /// The configurations [`GemmTuner`](super::GemmTuner) times for `problem` in `variant` on a
    /// device with `limits`: the default ([`DeviceClass::config`]) first, then the class's
    /// alternatives (other workgroups and step depths, or other cooperative-matrix tile sets),
    /// without duplicates (configurations the kernel runs the same way count once: the step
    /// depth of a path without shared memory, say), without those the device can't run
    /// (workgroup size, shared memory: [`fits`]), at most `max` of them.
    pub fn candidates(
        self,
        problem: &GemmProblem,
        variant: &VariantKey,
        limits: &DeviceLimits,
        max: usize,
    ) -> Vec<GemmConfig> {
        let subgroup = limits.subgroup_size;
        let coopmat = variant.coopmat == Some(true);
        let default = self.config(problem, variant, subgroup);
        let row = self.row();
        let mut all = vec![default];
        if coopmat {
            for &cm in row.cm_alternatives {
                let plain = Plain {
                    local: [16, 16],
                    bk: 16,
                };
                all.push(int8_steps(
                    problem,
                    build(problem, variant, subgroup, plain, cm),
                    true,
                ));
            }
        } else {
            for &plain in row.alternatives {
                let cm = Cm {
                    subgroups: 4,
                    tiles: [2, 2, 2],
                    bk: 32,
                };
                all.push(build(problem, variant, subgroup, plain, cm));
            }
        }
        let mut out: Vec<GemmConfig> = Vec::new();
        let mut seen = Vec::new();
        for cfg in all {
            let key = effective(&cfg, problem, variant);
            if seen.contains(&key) || fits(&cfg, problem, variant, limits).is_err() {
                continue;
            }
            seen.push(key);
            out.push(cfg);
            if out.len() >= max {
                break;
            }
        }
        out
    }

    fn row(self) -> &'static Row {
        match self {
            DeviceClass::NvidiaHopper | DeviceClass::Nvidia => &NVIDIA_ROW,
            DeviceClass::Amd => &AMD_ROW,
            DeviceClass::Intel => &INTEL_ROW,
            DeviceClass::Mali => &MALI_ROW,
            DeviceClass::Adreno => &ADRENO_ROW,
            DeviceClass::Apple => &APPLE_ROW,
            DeviceClass::Cpu => &CPU_ROW,
            DeviceClass::Other => &OTHER_ROW,
        }
    }
}

/// NVIDIA's GH100 die (device ids 0x23xx) or a Hopper product name.
fn is_hopper(info: &DeviceInfo) -> bool {
    let name = info.name.to_ascii_uppercase();
    info.device_id & 0xff00 == 0x2300
        || ["H100", "H200", "H800", "GH200"]
            .iter()
            .any(|h| name.contains(h))
}

/// A plain-path choice: workgroup (8×8 outputs per invocation) and step depth.
#[derive(Copy, Clone, Debug)]
struct Plain {
    local: [u32; 2],
    bk: i32,
}

/// A cooperative-matrix choice: subgroups per workgroup, `cm_tiles` (fragments per subgroup
/// along M and N, subgroups along N) and step depth (in halves; doubled for int8).
#[derive(Copy, Clone, Debug)]
struct Cm {
    subgroups: u32,
    tiles: [u32; 3],
    bk: i32,
}

/// How a row chooses the default.
#[derive(Copy, Clone, Debug)]
enum Rule {
    /// `GemmConfig::choose` and `coopmat_tiles` in lib.rs: the H100 measurements.
    MeasuredH100,
    /// By grid size from the row's figures.
    Table(TableRule),
}

#[derive(Copy, Clone, Debug)]
struct TableRule {
    /// Workgroup for grids of at least `small_grid` 128×128 tiles ([fp32, 16-bit variants]).
    large: [u32; 2],
    /// Workgroup below that.
    small: [u32; 2],
    small_grid: [usize; 2],
    bk: i32,
    /// Cooperative-matrix tiles for grids of at least `cm_small_grid` tiles, and below.
    cm_large: Cm,
    cm_small: Cm,
    cm_small_grid: usize,
}

/// One class's row of the table.
#[derive(Debug)]
struct Row {
    rule: Rule,
    /// Plain-path alternatives the tuner times after the default.
    alternatives: &'static [Plain],
    /// Cooperative-matrix alternatives the tuner times after the default.
    cm_alternatives: &'static [Cm],
}

const fn plain(x: u32, y: u32, bk: i32) -> Plain {
    Plain { local: [x, y], bk }
}

const fn cm(subgroups: u32, wfm: u32, wfn: u32, warps_n: u32, bk: i32) -> Cm {
    Cm {
        subgroups,
        tiles: [wfm, wfn, warps_n],
        bk,
    }
}

/// 64×64 tiles of 4 subgroups (2×2 fragments each), and 128×128 ones (4×4 each).
const CM_64: Cm = cm(4, 2, 2, 2, 32);
const CM_128: Cm = cm(4, 4, 4, 2, 32);

/// The measured rule; its alternatives are the shapes `coopmat_tiles` chooses between (and
/// 128×128 of 4 subgroups), and the plain workgroups and steps compared on the H100.
static NVIDIA_ROW: Row = Row {
    rule: Rule::MeasuredH100,
    alternatives: &[
        plain(16, 16, 16),
        plain(8, 8, 16),
        plain(16, 16, 32),
        plain(16, 8, 16),
        plain(8, 16, 16),
        plain(8, 8, 32),
    ],
    cm_alternatives: &[
        cm(8, 4, 4, 4, 32),
        cm(8, 2, 2, 4, 32),
        cm(8, 4, 2, 4, 64),
        CM_64,
        CM_128,
    ],
};

static AMD_ROW: Row = Row {
    rule: Rule::Table(TableRule {
        large: [16, 16],
        small: [8, 8],
        small_grid: [128, 128],
        bk: 16,
        cm_large: CM_128,
        cm_small: CM_64,
        cm_small_grid: 128,
    }),
    // Every workgroup a multiple of 64 invocations.
    alternatives: &[
        plain(16, 16, 16),
        plain(8, 8, 16),
        plain(16, 16, 8),
        plain(16, 8, 16),
        plain(16, 16, 32),
    ],
    cm_alternatives: &[CM_128, CM_64, cm(4, 4, 2, 2, 32), cm(8, 4, 4, 4, 32)],
};

static INTEL_ROW: Row = Row {
    rule: Rule::Table(TableRule {
        large: [16, 16],
        small: [8, 8],
        small_grid: [64, 64],
        bk: 16,
        cm_large: CM_128,
        cm_small: CM_64,
        cm_small_grid: 64,
    }),
    alternatives: &[
        plain(16, 16, 16),
        plain(8, 8, 16),
        plain(16, 8, 16),
        plain(8, 8, 8),
        plain(16, 16, 32),
    ],
    cm_alternatives: &[CM_128, CM_64, cm(4, 4, 2, 2, 32)],
};

static MALI_ROW: Row = Row {
    rule: Rule::Table(TableRule {
        large: [8, 8],
        small: [8, 8],
        small_grid: [0, 0],
        bk: 8,
        cm_large: CM_64,
        cm_small: CM_64,
        cm_small_grid: 0,
    }),
    alternatives: &[
        plain(8, 8, 16),
        plain(8, 4, 8),
        plain(4, 8, 8),
        plain(16, 8, 8),
        plain(4, 4, 8),
    ],
    cm_alternatives: &[cm(4, 2, 2, 2, 16), cm(2, 2, 2, 1, 32)],
};

static ADRENO_ROW: Row = Row {
    rule: Rule::Table(TableRule {
        large: [8, 8],
        small: [8, 8],
        small_grid: [0, 0],
        bk: 16,
        cm_large: CM_64,
        cm_small: CM_64,
        cm_small_grid: 0,
    }),
    alternatives: &[
        plain(8, 8, 8),
        plain(16, 8, 16),
        plain(8, 16, 16),
        plain(16, 16, 8),
    ],
    cm_alternatives: &[CM_128, cm(4, 2, 2, 2, 16)],
};

static APPLE_ROW: Row = Row {
    rule: Rule::Table(TableRule {
        large: [16, 16],
        small: [8, 8],
        small_grid: [64, 64],
        bk: 16,
        cm_large: CM_128,
        cm_small: CM_64,
        cm_small_grid: 64,
    }),
    alternatives: &[
        plain(16, 16, 16),
        plain(8, 8, 16),
        plain(16, 8, 16),
        plain(8, 8, 8),
    ],
    cm_alternatives: &[CM_128, CM_64],
};

static CPU_ROW: Row = Row {
    rule: Rule::Table(TableRule {
        large: [8, 8],
        small: [8, 8],
        small_grid: [0, 0],
        bk: 16,
        cm_large: CM_64,
        cm_small: CM_64,
        cm_small_grid: 0,
    }),
    alternatives: &[
        plain(4, 8, 16),
        plain(8, 4, 16),
        plain(4, 4, 16),
        plain(16, 16, 16),
        plain(8, 8, 8),
    ],
    cm_alternatives: &[CM_128],
};

static OTHER_ROW: Row = Row {
    rule: Rule::Table(TableRule {
        large: [8, 8],
        small: [8, 8],
        small_grid: [0, 0],
        bk: 16,
        cm_large: CM_128,
        cm_small: CM_64,
        cm_small_grid: 128,
    }),
    alternatives: &[plain(16, 16, 16), plain(8, 8, 8), plain(16, 8, 16)],
    cm_alternatives: &[CM_128, CM_64],
};

/// A configuration of `problem` from a plain and a cooperative-matrix choice (the variant
/// decides which applies).
fn build(
    problem: &GemmProblem,
    variant: &VariantKey,
    subgroup_size: u32,
    plain: Plain,
    cm: Cm,
) -> GemmConfig {
    let choice = if variant.coopmat == Some(true) {
        Tuned {
            local: [subgroup_size, cm.subgroups],
            bk: cm.bk,
            cm_tiles: cm.tiles,
        }
    } else {
        Tuned {
            local: plain.local,
            bk: plain.bk,
            cm_tiles: PLAIN_CM_TILES,
        }
    };
    choice.config(variant, subgroup_size, problem.aligned)
}

/// The int8 GEMM's cooperative-matrix steps are twice as deep in elements (the same bytes).
fn int8_steps(problem: &GemmProblem, mut cfg: GemmConfig, coopmat: bool) -> GemmConfig {
    if problem.kernel == GemmKernel::GemmInt8 && coopmat {
        cfg.bk *= 2;
    }
    cfg
}

/// What the kernel actually runs with: two configurations with the same key run the same code
/// (the step depth of a path without shared memory is unused; so are the tiles of a plain one).
pub(crate) fn effective(
    cfg: &GemmConfig,
    problem: &GemmProblem,
    variant: &VariantKey,
) -> ([u32; 2], i32, [u32; 3]) {
    if cfg.coopmat {
        let step = if problem.kernel == GemmKernel::GemmInt8 {
            32
        } else {
            16
        };
        (cfg.local, (cfg.bk + step - 1) / step * step, cfg.cm_tiles)
    } else if uses_shared_memory(problem, variant) {
        (cfg.local, cfg.bk, [0; 3])
    } else {
        (cfg.local, 0, [0; 3])
    }
}

/// Whether the plain path of `variant` stages through shared memory (the int8 GEMM's never
/// does).
fn uses_shared_memory(problem: &GemmProblem, variant: &VariantKey) -> bool {
    problem.kernel != GemmKernel::GemmInt8 && variant.local_memory == Some(true)
}

/// Bytes of shared memory `cfg` declares for `problem` in `variant`: the kernel's own SPIR-V
/// evaluated with `cfg`'s specialization constants and workgroup ([`vkprism::workgroup_bytes`],
/// what pipeline creation checks against the device's limit), so the figure follows the
/// kernels' declarations. `None` where the kernel has no such variant or its module can't be
/// evaluated.
pub fn shared_memory_bytes(
    cfg: &GemmConfig,
    problem: &GemmProblem,
    variant: &VariantKey,
) -> Option<u64> {
    let info = match problem.kernel {
        GemmKernel::Gemm => &crate::gemm::INFO,
        GemmKernel::GemmInt8 => &crate::gemm_int8::INFO,
        GemmKernel::Conv2dNhwc => &crate::conv2d_nhwc::INFO,
    };
    let module = info.variants.iter().find(|v| v.key == *variant)?;
    let spec = cfg.spec(crate::gemm::SpecConstants {
        transpose_a: problem.transpose_a as i32,
        transpose_b: problem.transpose_b as i32,
        ..Default::default()
    });
    let mut entries = vkprism::SpecConstants::entries(&spec);
    for (dim, size) in info.local_size.iter().zip(cfg.local_size()) {
        if let Some(id) = dim.spec_id {
            entries.push((id, size));
        }
    }
    vkprism::workgroup_bytes(module.spirv, &entries)
}

/// Why a configuration does not fit a device or problem ([`fits`]); `Display` says it in words.
#[non_exhaustive]
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Misfit {
    /// A workgroup with a zero dimension.
    EmptyWorkgroup,
    /// A workgroup over the device's `maxComputeWorkGroupSize` or
    /// `maxComputeWorkGroupInvocations`.
    WorkgroupTooLarge {
        /// The configuration's workgroup.
        local: [u32; 2],
        /// `maxComputeWorkGroupSize`.
        max_size: [u32; 3],
        /// `maxComputeWorkGroupInvocations`.
        max_invocations: u32,
    },
    /// Cooperative matrices on in only one of the variant and the configuration.
    MatrixMismatch,
    /// A step depth that is not a positive multiple of 4.
    StepDepth(i32),
    /// A cooperative-matrix workgroup whose x is not the subgroup size.
    NotSubgroupWide {
        /// The workgroup's x.
        x: u32,
        /// The configuration's subgroup size.
        subgroup_size: u32,
    },
    /// Subgroups that don't make the configuration's grid of fragments.
    SubgroupGrid {
        /// Subgroups per workgroup (the workgroup's y).
        subgroups: u32,
        /// Subgroups along N.
        warps_n: u32,
        /// Fragments per subgroup along M and N.
        fragments: [u32; 2],
    },
    /// 16-byte loads without cooperative matrices.
    WideLoadsWithoutMatrices,
    /// 16-byte loads on rows that are not multiples of 16 bytes.
    WideLoadsUnaligned,
    /// The kernel has no such variant, or its shared memory can't be evaluated from its SPIR-V.
    SharedMemoryUnknown,
    /// More shared memory than `maxComputeSharedMemorySize`.
    SharedMemory {
        /// Bytes the configuration declares.
        bytes: u64,
        /// `maxComputeSharedMemorySize`.
        limit: u32,
    },
}

impl fmt::Display for Misfit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Misfit::EmptyWorkgroup => f.write_str("an empty workgroup"),
            Misfit::WorkgroupTooLarge {
                local: [x, y],
                max_size,
                max_invocations,
            } => write!(
                f,
                "workgroup {x}×{y} over the device's {max_size:?} / {max_invocations} invocations"
            ),
            Misfit::MatrixMismatch => f.write_str(
                "cooperative matrices on in one of the variant and the configuration only",
            ),
            Misfit::StepDepth(bk) => write!(f, "step depth {bk} is not a positive multiple of 4"),
            Misfit::NotSubgroupWide { x, subgroup_size } => {
                write!(f, "workgroup x {x} is not the subgroup size {subgroup_size}")
            }
            Misfit::SubgroupGrid {
                subgroups,
                warps_n,
                fragments: [wfm, wfn],
            } => write!(
                f,
                "{subgroups} subgroups don't make a grid of {warps_n} along N with {wfm}×{wfn} fragments"
            ),
            Misfit::WideLoadsWithoutMatrices => {
                f.write_str("16-byte loads without cooperative matrices")
            }
            Misfit::WideLoadsUnaligned => {
                f.write_str("16-byte loads on rows that are not multiples of one")
            }
            Misfit::SharedMemoryUnknown => f.write_str(
                "no variant of the kernel whose shared memory can be evaluated from its SPIR-V",
            ),
            Misfit::SharedMemory { bytes, limit } => write!(
                f,
                "{bytes} bytes of shared memory, over the device's {limit}"
            ),
        }
    }
}

/// Whether a device with `limits` runs `cfg` for `problem` in `variant`: the workgroup within
/// its sizes, the subgroups of a cooperative-matrix workgroup in a whole grid, the shared
/// memory within `maxComputeSharedMemorySize`, a step depth the kernel takes. `Err` says what
/// does not fit.
pub fn fits(
    cfg: &GemmConfig,
    problem: &GemmProblem,
    variant: &VariantKey,
    limits: &DeviceLimits,
) -> Result<(), Misfit> {
    let [x, y] = cfg.local;
    if x == 0 || y == 0 {
        return Err(Misfit::EmptyWorkgroup);
    }
    if x > limits.max_compute_work_group_size[0]
        || y > limits.max_compute_work_group_size[1]
        || x as u64 * y as u64 > limits.max_compute_work_group_invocations as u64
    {
        return Err(Misfit::WorkgroupTooLarge {
            local: cfg.local,
            max_size: limits.max_compute_work_group_size,
            max_invocations: limits.max_compute_work_group_invocations,
        });
    }
    if cfg.coopmat != (variant.coopmat == Some(true)) {
        return Err(Misfit::MatrixMismatch);
    }
    if cfg.bk <= 0 || cfg.bk % 4 != 0 {
        return Err(Misfit::StepDepth(cfg.bk));
    }
    if cfg.coopmat {
        let [wfm, wfn, warps_n] = cfg.cm_tiles;
        if cfg.subgroup_size == 0 || x != cfg.subgroup_size {
            return Err(Misfit::NotSubgroupWide {
                x,
                subgroup_size: cfg.subgroup_size,
            });
        }
        if wfm == 0 || wfn == 0 || warps_n == 0 || y % warps_n != 0 {
            return Err(Misfit::SubgroupGrid {
                subgroups: y,
                warps_n,
                fragments: [wfm, wfn],
            });
        }
    } else if cfg.wide_loads {
        return Err(Misfit::WideLoadsWithoutMatrices);
    }
    if cfg.wide_loads && !problem.aligned {
        return Err(Misfit::WideLoadsUnaligned);
    }
    let Some(shared) = shared_memory_bytes(cfg, problem, variant) else {
        return Err(Misfit::SharedMemoryUnknown);
    };
    if shared > limits.max_compute_shared_memory_size as u64 {
        return Err(Misfit::SharedMemory {
            bytes: shared,
            limit: limits.max_compute_shared_memory_size,
        });
    }
    Ok(())
}
