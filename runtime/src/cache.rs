//! The `VkPipelineCache` on disk: the driver's data, checked against this device's header, with
//! a trailer of vkprism's own (magic, driver version, length, checksum) so a damaged or foreign
//! file is rejected with a reason instead of being handed to the driver.

use crate::device::{merge_pipeline_cache, pipeline_cache_data, Shared};
use crate::pipeline::PipelineError;
use std::path::Path;
use vkprism_core::store::fnv1a;

const TRAILER_MAGIC: &[u8; 8] = b"VKPRISMC";
const TRAILER_LEN: usize = 32;
/// Bytes of `VkPipelineCacheHeaderVersionOne`.
const HEADER_LEN: usize = 32;

/// Merges the cache saved at `path` into the device's cache (see `Context::load_pipeline_cache`).
pub(crate) fn load(shared: &Shared, path: &Path) -> Result<(), PipelineError> {
    let file = std::fs::read(path)?;
    check_header(shared, &file)?;
    let data = check_trailer(shared, &file)?;
    shared.check_usable()?;
    // SAFETY: `data` passed the header and trailer checks above.
    unsafe { merge_pipeline_cache(shared, data) }?;
    Ok(())
}

/// Writes the device's cache to `path` (atomically: `vkprism_core::store::write_atomically`).
pub(crate) fn save(shared: &Shared, path: &Path) -> Result<(), PipelineError> {
    let data = pipeline_cache_data(shared)?;
    let mut file = data.clone();
    file.extend_from_slice(&trailer(shared, &data));
    vkprism_core::store::write_atomically(path, &file)?;
    Ok(())
}

/// What vkprism appends to the driver's cache data: a magic, the driver version (the Vulkan
/// header lacks it) and the data's length and FNV-1a hash, so a truncated or damaged file is
/// caught here rather than handed to the driver.
fn trailer(shared: &Shared, data: &[u8]) -> [u8; TRAILER_LEN] {
    let mut t = [0u8; TRAILER_LEN];
    t[..8].copy_from_slice(TRAILER_MAGIC);
    t[8..12].copy_from_slice(&1u32.to_le_bytes());
    t[12..16].copy_from_slice(&shared.properties.driver_version.to_le_bytes());
    t[16..24].copy_from_slice(&(data.len() as u64).to_le_bytes());
    t[24..32].copy_from_slice(&fnv1a(data).to_le_bytes());
    t
}

/// Checks the trailer written by [`save`] and returns the driver's data without it.
fn check_trailer<'d>(shared: &Shared, file: &'d [u8]) -> Result<&'d [u8], PipelineError> {
    let reject = |m: String| Err(PipelineError::CacheRejected(m));
    if file.len() < HEADER_LEN + TRAILER_LEN {
        return reject("truncated: no vkprism trailer after the driver's data".into());
    }
    let (data, t) = file.split_at(file.len() - TRAILER_LEN);
    let word = |i: usize| u32::from_le_bytes([t[i], t[i + 1], t[i + 2], t[i + 3]]);
    let dword = |i: usize| u64::from_le_bytes(t[i..i + 8].try_into().unwrap_or([0; 8]));
    if &t[..8] != TRAILER_MAGIC || word(8) != 1 {
        return reject(
            "not written by save_pipeline_cache, or truncated (no vkprism trailer)".into(),
        );
    }
    let driver = shared.properties.driver_version;
    if word(12) != driver {
        return reject(format!(
            "made by driver version {:#x}, this is {driver:#x}",
            word(12)
        ));
    }
    if dword(16) != data.len() as u64 {
        return reject(format!(
            "corrupted: {} bytes of data where the trailer says {}",
            data.len(),
            dword(16)
        ));
    }
    if dword(24) != fnv1a(data) {
        return reject("corrupted: the data's checksum does not match".into());
    }
    Ok(data)
}

/// The header Vulkan puts at the start of cache data (`VkPipelineCacheHeaderVersionOne`).
fn check_header(shared: &Shared, data: &[u8]) -> Result<(), PipelineError> {
    if data.len() < HEADER_LEN {
        return Err(PipelineError::CacheRejected(format!(
            "{} bytes is shorter than the 32-byte header",
            data.len()
        )));
    }
    let word = |i: usize| u32::from_le_bytes([data[i], data[i + 1], data[i + 2], data[i + 3]]);
    let (len, version, vendor, device) = (word(0), word(4), word(8), word(12));
    let p = &shared.properties;
    if len < 32 || version != 1 {
        return Err(PipelineError::CacheRejected(format!(
            "bad header (length {len}, version {version})"
        )));
    }
    if vendor != p.vendor_id || device != p.device_id {
        return Err(PipelineError::CacheRejected(format!(
            "made for vendor {vendor:#x} device {device:#x}, this is vendor {:#x} device {:#x}",
            p.vendor_id, p.device_id
        )));
    }
    if data[16..32] != p.pipeline_cache_uuid {
        return Err(PipelineError::CacheRejected(
            "made by another driver version (pipelineCacheUUID differs)".into(),
        ));
    }
    Ok(())
}
