//! SPIRV-Tools' validator for the compiler's tests: the `spirv-val` of SPIRV-Tools 2025.5 that
//! `scripts/test.sh` installs under `.tools/spirv-tools/` (Debian bookworm's predates
//! SPV_KHR_bfloat16). Building vkprism needs none of it.

use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};

/// The installed validator.
fn spirv_val() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../.tools/spirv-tools/spirv-val")
}

/// Validates `words` for `env` (`vulkan1.1`, `vulkan1.3`): `Err` holds spirv-val's message.
pub fn validate(words: &[u32], env: &str) -> Result<(), String> {
    // One file per call: tests run in parallel threads of one process.
    static CALLS: AtomicUsize = AtomicUsize::new(0);
    let call = CALLS.fetch_add(1, Ordering::Relaxed);
    let path = std::env::temp_dir().join(format!("vkprism-val-{}-{call}.spv", std::process::id()));
    let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
    std::fs::write(&path, bytes).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    let out = std::process::Command::new(spirv_val())
        .args(["--target-env", env])
        .arg(&path)
        .output();
    let _ = std::fs::remove_file(&path);
    let out = out.map_err(|e| {
        format!(
            "{} did not run ({e}): run scripts/test.sh, which installs it",
            spirv_val().display()
        )
    })?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ))
    }
}
