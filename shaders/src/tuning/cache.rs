//! The tuner's cache: the configuration chosen per (kernel, variant, shape bucket) on one device
//! and driver, and the small versioned text file it is kept in beside the pipeline cache.
//!
//! The file, version 1 (every line ends with `\n`; `#` lines are comments):
//!
//! ```text
//! vkprism-tuning 1
//! device 000010de 00002330 8c2a8000
//! # NVIDIA H100 80GB HBM3 (class nvidia-hopper) ...
//! gemm fp16p_lm_cm 4096 4096 4096 nn 1 32 8 32 4 4 4
//! end 00000001 5f0c1e2a9b3d4c7e
//! ```
//!
//! The device line holds the vendor id, device id and driver version (hex) the entries were
//! measured on. An entry is: kernel, variant, M, N and K rounded up to powers of two, the
//! transposes of A and B (`n` / `t`), whether 16-byte loads were on, then the choice: workgroup
//! x and y, `BK`, `cm_wfm`, `cm_wfn`, `cm_warps_n`. The last line counts the entries and holds
//! the FNV-1a hash of every byte before it, so a truncated or damaged file is caught.

use super::table::{GemmKernel, GemmProblem};
use crate::GemmConfig;
use std::collections::BTreeMap;
use std::fmt;
use std::path::Path;
use vkprism::{Context, VariantKey};
use vkprism_core::store::{fnv1a, write_atomically};

/// The file format's version: a file with another is refused ([`CacheError::Version`]).
pub const FORMAT_VERSION: u32 = 1;

/// A larger file is refused without being parsed ([`CacheError::TooLarge`]): a tuned problem
/// takes about 50 bytes.
pub const MAX_FILE_BYTES: u64 = 1 << 20;

const MAGIC: &str = "vkprism-tuning";

/// The device and driver a cache's measurements hold for: a file made on another is refused
/// ([`CacheError::ForeignDevice`]), as a new driver may run the candidates at other speeds.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct CacheDevice {
    /// `vendorID`.
    pub vendor_id: u32,
    /// `deviceID`.
    pub device_id: u32,
    /// `driverVersion` (as the vendor encodes it).
    pub driver_version: u32,
}

impl CacheDevice {
    /// `ctx`'s device and driver.
    pub fn of(ctx: &Context) -> CacheDevice {
        let id = ctx.identity();
        CacheDevice {
            vendor_id: id.vendor_id,
            device_id: id.device_id,
            driver_version: id.driver_version,
        }
    }
}

impl fmt::Display for CacheDevice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "vendor {:#06x}, device {:#06x}, driver version {:#x}",
            self.vendor_id, self.device_id, self.driver_version
        )
    }
}

/// What a cached choice is for (the device is the cache's): kernel, variant, the problem's
/// shape bucket (M, N and K rounded up to powers of two), transposes and 16-byte loads.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TuneKey {
    /// Which kernel.
    pub kernel: GemmKernel,
    /// The variant's name (`fp16p_lm_cm`, ...).
    pub variant: String,
    /// M rounded up to a power of two.
    pub m: u64,
    /// N rounded up to a power of two.
    pub n: u64,
    /// K rounded up to a power of two.
    pub k: u64,
    /// A stored K×M.
    pub transpose_a: bool,
    /// B stored N×K.
    pub transpose_b: bool,
    /// The configuration loads 16 bytes at a time ([`GemmConfig::wide_loads`]).
    pub wide_loads: bool,
}

impl TuneKey {
    /// The key of `problem` in `variant` (its name), with or without 16-byte loads.
    pub fn new(problem: &GemmProblem, variant: &str, wide_loads: bool) -> TuneKey {
        TuneKey {
            kernel: problem.kernel,
            variant: variant.to_string(),
            m: bucket(problem.m),
            n: bucket(problem.n),
            k: bucket(problem.k),
            transpose_a: problem.transpose_a,
            transpose_b: problem.transpose_b,
            wide_loads,
        }
    }
}

/// `x` rounded up to a power of two (1 for 0).
pub fn bucket(x: usize) -> u64 {
    (x.max(1) as u64).next_power_of_two()
}

/// The part of a [`GemmConfig`] a cache keeps: what was chosen. The rest follows from the
/// variant, the device and the problem ([`Tuned::config`]), so a cached choice can't turn on
/// 16-byte loads for rows that don't allow them.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Tuned {
    /// [`GemmConfig::local`].
    pub local: [u32; 2],
    /// [`GemmConfig::bk`].
    pub bk: i32,
    /// [`GemmConfig::cm_tiles`].
    pub cm_tiles: [u32; 3],
}

impl Tuned {
    /// The choice `cfg` made.
    pub fn of(cfg: &GemmConfig) -> Tuned {
        Tuned {
            local: cfg.local,
            bk: cfg.bk,
            cm_tiles: cfg.cm_tiles,
        }
    }

    /// The configuration of this choice in `variant`, on a device with subgroups of
    /// `subgroup_size`, for a problem whose rows do (`aligned`) or don't allow 16-byte loads:
    /// the one place a [`GemmConfig`] is made from a choice (the table's, the tuner's, a cached
    /// one), so they all follow the same rules.
    pub fn config(&self, variant: &VariantKey, subgroup_size: u32, aligned: bool) -> GemmConfig {
        let coopmat = variant.coopmat == Some(true);
        GemmConfig {
            local: self.local,
            bk: self.bk,
            coopmat,
            subgroup_size,
            cm_tiles: self.cm_tiles,
            wide_loads: coopmat && aligned,
            split_k: 1,
        }
    }
}

/// Why a cache file was not used. Loading never panics, whatever the file holds.
#[derive(Debug)]
pub enum CacheError {
    /// Reading or writing the file failed (a missing file is no error: an empty cache).
    Io(std::io::Error),
    /// The file is over [`MAX_FILE_BYTES`].
    TooLarge {
        /// Its size.
        bytes: u64,
    },
    /// The file ends before its last line (`end`, the count and the hash): cut short.
    Truncated,
    /// The file is not a tuning cache, or was changed or damaged: the line (1-based; 0 for the
    /// whole file) and what is wrong with it.
    Corrupt {
        /// The line.
        line: usize,
        /// What is wrong.
        reason: String,
    },
    /// The file is a tuning cache of another format version.
    Version {
        /// The version it says.
        found: String,
    },
    /// The file was measured on another device or driver.
    ForeignDevice {
        /// The file's.
        file: CacheDevice,
        /// This context's.
        this: CacheDevice,
    },
}

impl fmt::Display for CacheError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CacheError::Io(e) => write!(f, "tuning cache file: {e}"),
            CacheError::TooLarge { bytes } => write!(
                f,
                "tuning cache file: {bytes} bytes, over the {MAX_FILE_BYTES} a cache may hold"
            ),
            CacheError::Truncated => write!(f, "tuning cache file: truncated (no complete last line)"),
            CacheError::Corrupt { line, reason } => {
                write!(f, "tuning cache file: line {line}: {reason}")
            }
            CacheError::Version { found } => write!(
                f,
                "tuning cache file: format version {found}, this vkprism reads version {FORMAT_VERSION}"
            ),
            CacheError::ForeignDevice { file, this } => write!(
                f,
                "tuning cache file: measured on {file}, this is {this}"
            ),
        }
    }
}

impl std::error::Error for CacheError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            CacheError::Io(e) => Some(e),
            _ => None,
        }
    }
}

impl From<std::io::Error> for CacheError {
    fn from(e: std::io::Error) -> Self {
        CacheError::Io(e)
    }
}

/// The choices measured on one device and driver, by [`TuneKey`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TuningCache {
    device: CacheDevice,
    entries: BTreeMap<TuneKey, Tuned>,
}

impl TuningCache {
    /// An empty cache for `device`.
    pub fn new(device: CacheDevice) -> TuningCache {
        TuningCache {
            device,
            entries: BTreeMap::new(),
        }
    }

    /// The device and driver its entries were measured on.
    pub fn device(&self) -> CacheDevice {
        self.device
    }

    /// The number of entries.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The choice recorded for `key`.
    pub fn get(&self, key: &TuneKey) -> Option<Tuned> {
        self.entries.get(key).copied()
    }

    /// Records `tuned` for `key` (replacing what was there).
    pub fn insert(&mut self, key: TuneKey, tuned: Tuned) {
        self.entries.insert(key, tuned);
    }

    /// Every entry, in the file's order.
    pub fn entries(&self) -> impl Iterator<Item = (&TuneKey, &Tuned)> {
        self.entries.iter()
    }

    /// Reads the cache at `path` for `device`: `Ok(None)` when there is no file, an error when
    /// it can't be read or is not a complete, undamaged version-1 cache of this device.
    pub fn load(path: &Path, device: CacheDevice) -> Result<Option<TuningCache>, CacheError> {
        let bytes = match std::fs::metadata(path) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(e.into()),
            Ok(m) if m.len() > MAX_FILE_BYTES => {
                return Err(CacheError::TooLarge { bytes: m.len() })
            }
            Ok(_) => match std::fs::read(path) {
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
                r => r?,
            },
        };
        TuningCache::parse(&bytes, device).map(Some)
    }

    /// Parses a cache file's bytes, for `device` (see [`TuningCache::load`]).
    pub fn parse(bytes: &[u8], device: CacheDevice) -> Result<TuningCache, CacheError> {
        if bytes.len() as u64 > MAX_FILE_BYTES {
            return Err(CacheError::TooLarge {
                bytes: bytes.len() as u64,
            });
        }
        let text = std::str::from_utf8(bytes).map_err(|e| CacheError::Corrupt {
            line: bytes[..e.valid_up_to()]
                .iter()
                .filter(|&&b| b == b'\n')
                .count()
                + 1,
            reason: "not text (invalid UTF-8)".into(),
        })?;
        let lines: Vec<&str> = text.split_inclusive('\n').collect();
        let Some(first) = lines.first() else {
            return Err(CacheError::Truncated);
        };
        check_header(first)?;
        let count = check_end(text, &lines)?;
        let file_device = lines
            .get(1)
            .filter(|_| lines.len() > 2)
            .and_then(|l| parse_device(l.trim_end_matches('\n')))
            .ok_or_else(|| CacheError::Corrupt {
                line: 2,
                reason: "expected `device <vendor> <device> <driver version>` (8 hex digits each)"
                    .into(),
            })?;
        if file_device != device {
            return Err(CacheError::ForeignDevice {
                file: file_device,
                this: device,
            });
        }
        let cache = parse_entries(device, &lines[2..lines.len() - 1])?;
        if count != cache.len() {
            return Err(CacheError::Corrupt {
                line: lines.len(),
                reason: format!("says {count} entries, the file holds {}", cache.len()),
            });
        }
        Ok(cache)
    }

    /// The file's text, with `comment` (the device's name, say; one line) under the header.
    pub fn to_text(&self, comment: &str) -> String {
        let d = self.device;
        let comment: String = comment
            .chars()
            .map(|c| if c.is_control() { ' ' } else { c })
            .collect();
        let mut s = format!(
            "{MAGIC} {FORMAT_VERSION}\ndevice {:08x} {:08x} {:08x}\n# {comment}\n\
             # kernel variant M N K (rounded up to powers of two) transposes 16-byte-loads -> \
             workgroup-x workgroup-y BK cm_wfm cm_wfn cm_warps_n\n",
            d.vendor_id, d.device_id, d.driver_version
        );
        for (k, t) in &self.entries {
            let tr = |t: bool| if t { 't' } else { 'n' };
            s.push_str(&format!(
                "{} {} {} {} {} {}{} {} {} {} {} {} {} {}\n",
                k.kernel.name(),
                k.variant,
                k.m,
                k.n,
                k.k,
                tr(k.transpose_a),
                tr(k.transpose_b),
                k.wide_loads as u8,
                t.local[0],
                t.local[1],
                t.bk,
                t.cm_tiles[0],
                t.cm_tiles[1],
                t.cm_tiles[2]
            ));
        }
        let hash = fnv1a(s.as_bytes());
        s.push_str(&format!("end {:08} {hash:016x}\n", self.len()));
        s
    }

    /// Writes the cache to `path` atomically (a temporary file beside it, then a rename), with
    /// `comment` under the header.
    pub fn save(&self, path: &Path, comment: &str) -> Result<(), CacheError> {
        Ok(write_atomically(path, self.to_text(comment).as_bytes())?)
    }
}

fn parse_device(line: &str) -> Option<CacheDevice> {
    let mut words = line.strip_prefix("device ")?.split(' ');
    let mut hex = || {
        words
            .next()
            .filter(|w| w.len() == 8)
            .and_then(|w| u32::from_str_radix(w, 16).ok())
    };
    let d = CacheDevice {
        vendor_id: hex()?,
        device_id: hex()?,
        driver_version: hex()?,
    };
    words.next().is_none().then_some(d)
}

/// Checks a cache file's first line, `vkprism-tuning <FORMAT_VERSION>`: another version, a
/// cut of that line, or anything else is its error.
fn check_header(first: &str) -> Result<(), CacheError> {
    let header = first.strip_suffix('\n').unwrap_or(first);
    match header.split_once(' ') {
        Some((MAGIC, version)) if version == FORMAT_VERSION.to_string() => Ok(()),
        Some((MAGIC, version)) if !version.is_empty() && first.ends_with('\n') => {
            Err(CacheError::Version {
                found: version.chars().take(32).collect(),
            })
        }
        _ if !first.ends_with('\n') && format!("{MAGIC} {FORMAT_VERSION}").starts_with(header) => {
            Err(CacheError::Truncated)
        }
        _ => Err(CacheError::Corrupt {
            line: 1,
            reason: format!("not a vkprism tuning cache (no `{MAGIC} {FORMAT_VERSION}` line)"),
        }),
    }
}

/// Checks a cache file's last line, complete (`end <8 decimal digits> <16 hex digits>\n`),
/// against the hash of the text before it; returns the entry count it states.
fn check_end(text: &str, lines: &[&str]) -> Result<usize, CacheError> {
    let last = lines[lines.len() - 1];
    let end = last
        .strip_suffix('\n')
        .and_then(|l| l.strip_prefix("end "))
        .and_then(|l| l.split_once(' '))
        .filter(|(count, hash)| {
            count.len() == 8
                && hash.len() == 16
                && count.bytes().all(|b| b.is_ascii_digit())
                && hash.bytes().all(|b| b.is_ascii_hexdigit())
        });
    let Some((count, hash)) = end else {
        return Err(CacheError::Truncated);
    };
    let body = &text[..text.len() - last.len()];
    if u64::from_str_radix(hash, 16).ok() != Some(fnv1a(body.as_bytes())) {
        return Err(CacheError::Corrupt {
            line: lines.len(),
            reason: "the hash does not match the contents (changed or damaged)".into(),
        });
    }
    Ok(count.parse().unwrap_or(usize::MAX))
}

/// The entries of `lines` (a file's from its third line, `#` comments skipped), each problem
/// once, or the first bad line's error.
fn parse_entries(device: CacheDevice, lines: &[&str]) -> Result<TuningCache, CacheError> {
    let mut cache = TuningCache::new(device);
    for (i, line) in lines.iter().enumerate() {
        let corrupt = |reason| CacheError::Corrupt {
            line: i + 3,
            reason,
        };
        let line = line.trim_end_matches('\n');
        if line.starts_with('#') {
            continue;
        }
        let (key, tuned) = parse_entry(line).map_err(corrupt)?;
        if cache.entries.insert(key, tuned).is_some() {
            return Err(corrupt("a second entry for the same problem".into()));
        }
    }
    Ok(cache)
}

fn parse_entry(line: &str) -> Result<(TuneKey, Tuned), String> {
    let words: Vec<&str> = line.split(' ').collect();
    let [kernel, variant, m, n, k, transposes, wide, lx, ly, bk, wfm, wfn, warps_n] = words[..]
    else {
        return Err(format!("expected 13 fields, found {}", words.len()));
    };
    let kernel = GemmKernel::ALL
        .into_iter()
        .find(|g| g.name() == kernel)
        .ok_or_else(|| {
            format!(
                "unknown kernel `{}`",
                kernel.chars().take(40).collect::<String>()
            )
        })?;
    VariantKey::parse(variant).map_err(|e| e.to_string())?;
    let bucket = |w: &str| {
        w.parse::<u64>()
            .ok()
            .filter(|v| v.is_power_of_two() && *v <= 1 << 40)
            .ok_or_else(|| format!("`{w}` is not a shape bucket (a power of two)"))
    };
    let number = |w: &str, max: u32| {
        w.parse::<u32>()
            .ok()
            .filter(|v| (1..=max).contains(v))
            .ok_or_else(|| format!("`{w}` is not a number from 1 to {max}"))
    };
    let (transpose_a, transpose_b) = match transposes {
        "nn" => (false, false),
        "nt" => (false, true),
        "tn" => (true, false),
        "tt" => (true, true),
        _ => {
            return Err(format!(
                "transposes `{transposes}`: expected nn, nt, tn or tt"
            ))
        }
    };
    let wide_loads = match wide {
        "0" => false,
        "1" => true,
        _ => return Err(format!("16-byte loads `{wide}`: expected 0 or 1")),
    };
    let key = TuneKey {
        kernel,
        variant: variant.to_string(),
        m: bucket(m)?,
        n: bucket(n)?,
        k: bucket(k)?,
        transpose_a,
        transpose_b,
        wide_loads,
    };
    let tuned = Tuned {
        local: [number(lx, 4096)?, number(ly, 4096)?],
        bk: number(bk, 4096)? as i32,
        cm_tiles: [number(wfm, 64)?, number(wfn, 64)?, number(warps_n, 64)?],
    };
    Ok((key, tuned))
}

#[cfg(test)]
mod tests {
    use super::*;

    const DEV: CacheDevice = CacheDevice {
        vendor_id: 0x10de,
        device_id: 0x2330,
        driver_version: 0x8c2a_8000,
    };

    fn sample() -> TuningCache {
        let mut c = TuningCache::new(DEV);
        let p = GemmProblem::gemm(4096, 4096, 4000, false, true);
        c.insert(
            TuneKey::new(&p, "fp16p_lm_cm", true),
            Tuned {
                local: [32, 8],
                bk: 32,
                cm_tiles: [4, 4, 4],
            },
        );
        let p = GemmProblem::gemm_int8(96, 80, 64);
        c.insert(
            TuneKey::new(&p, "fp32_int8s_nocm", false),
            Tuned {
                local: [8, 8],
                bk: 16,
                cm_tiles: [4, 4, 2],
            },
        );
        c
    }

    #[test]
    fn a_written_cache_reads_back_the_same() {
        let c = sample();
        let text = c.to_text("NVIDIA H100\nsecond line");
        assert_eq!(
            text.lines().filter(|l| l.starts_with('#')).count(),
            2,
            "{text}"
        );
        assert!(
            text.contains("gemm fp16p_lm_cm 4096 4096 4096 nt 1 32 8 32 4 4 4\n"),
            "{text}"
        );
        assert_eq!(TuningCache::parse(text.as_bytes(), DEV).unwrap(), c);
        let empty = TuningCache::new(DEV);
        assert_eq!(
            TuningCache::parse(empty.to_text("").as_bytes(), DEV).unwrap(),
            empty
        );
    }

    #[test]
    fn every_cut_of_a_file_is_refused_without_panicking() {
        let text = sample().to_text("x");
        for cut in 0..text.len() {
            let got = TuningCache::parse(&text.as_bytes()[..cut], DEV);
            assert!(
                matches!(got, Err(CacheError::Truncated)),
                "cut at {cut}: {got:?}"
            );
        }
    }

    #[test]
    fn every_changed_byte_is_refused_without_panicking() {
        let text = sample().to_text("x");
        for i in 0..text.len() {
            for b in [b'0', b'9', b' ', b'\n', 0xff] {
                let mut bytes = text.clone().into_bytes();
                if bytes[i] == b {
                    continue;
                }
                bytes[i] = b;
                assert!(TuningCache::parse(&bytes, DEV).is_err(), "byte {i} = {b}");
            }
        }
    }

    #[test]
    fn bad_entries_say_what_and_where() {
        let with = |entry: &str| {
            let mut s = format!("{MAGIC} 1\ndevice 000010de 00002330 8c2a8000\n{entry}\n");
            let h = fnv1a(s.as_bytes());
            s.push_str(&format!("end 00000001 {h:016x}\n"));
            s
        };
        let ok = "gemm fp32_lm_nocm 128 128 64 nn 0 8 8 16 4 4 2";
        assert_eq!(
            TuningCache::parse(with(ok).as_bytes(), DEV).unwrap().len(),
            1
        );
        for (bad, says) in [
            (
                "conv fp32_lm_nocm 128 128 64 nn 0 8 8 16 4 4 2",
                "unknown kernel",
            ),
            ("gemm fp99 128 128 64 nn 0 8 8 16 4 4 2", "fp99"),
            (
                "gemm fp32_lm_nocm 100 128 64 nn 0 8 8 16 4 4 2",
                "power of two",
            ),
            (
                "gemm fp32_lm_nocm 128 128 64 xx 0 8 8 16 4 4 2",
                "transposes",
            ),
            (
                "gemm fp32_lm_nocm 128 128 64 nn 2 8 8 16 4 4 2",
                "16-byte loads",
            ),
            (
                "gemm fp32_lm_nocm 128 128 64 nn 0 0 8 16 4 4 2",
                "from 1 to",
            ),
            ("gemm fp32_lm_nocm 128 128 64 nn 0 8 8 16 4 4", "13 fields"),
        ] {
            match TuningCache::parse(with(bad).as_bytes(), DEV) {
                Err(CacheError::Corrupt { line: 3, reason }) => {
                    assert!(reason.contains(says), "{bad}: {reason}")
                }
                other => panic!("{bad}: {other:?}"),
            }
        }
    }

    #[test]
    fn buckets_are_powers_of_two_at_or_above() {
        assert_eq!(
            [0, 1, 2, 3, 64, 65, 96].map(bucket),
            [1, 1, 2, 4, 64, 128, 128]
        );
    }
}
