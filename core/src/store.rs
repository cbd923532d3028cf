//! What vkprism's files on disk share: the runtime's pipeline cache (`Context::save_pipeline_cache`)
//! and the kernel library's tuning cache (`vkprism_shaders::tuning::TuningCache::save`) are both
//! checksummed with [`fnv1a`] and written with [`write_atomically`].

use std::io;
use std::path::{Path, PathBuf};

/// 64-bit FNV-1a of `bytes`: a checksum against damage (truncation, flipped bytes), not against
/// tampering.
pub fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ b as u64).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

/// Writes `contents` to `path` atomically: into a temporary file beside it
/// ([`temporary_path`]), then renamed over `path`, so a reader sees the old file or the new
/// one, never a part. On failure the temporary file is removed and `path` is left as it was.
pub fn write_atomically(path: &Path, contents: &[u8]) -> io::Result<()> {
    let tmp = temporary_path(path);
    let written = std::fs::write(&tmp, contents).and_then(|()| std::fs::rename(&tmp, path));
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written
}

/// `<file name>.tmp-<process id>` beside `path`: two processes writing the same file at once
/// don't write into one temporary file.
pub fn temporary_path(path: &Path) -> PathBuf {
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(format!(".tmp-{}", std::process::id()));
    path.with_file_name(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checksum_is_fnv1a() {
        assert_eq!(fnv1a(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a(b"a"), 0xaf63_dc4c_8601_ec8c);
    }

    #[test]
    fn temporary_name_has_the_process_id() {
        let tmp = temporary_path(Path::new("/some/dir/pipelines.bin"));
        assert_eq!(
            tmp,
            Path::new(&format!(
                "/some/dir/pipelines.bin.tmp-{}",
                std::process::id()
            ))
        );
    }

    #[test]
    fn writes_replace_and_failures_leave_nothing_behind() {
        let dir = std::env::temp_dir().join(format!("vkprism-store-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("f.bin");
        write_atomically(&path, b"one").unwrap();
        write_atomically(&path, b"two").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"two");
        assert!(!temporary_path(&path).exists());
        // A directory in the way: the rename fails, the temporary file goes.
        let blocked = dir.join("blocked");
        std::fs::create_dir_all(blocked.join("inside")).unwrap();
        assert!(write_atomically(&blocked, b"x").is_err());
        assert!(!temporary_path(&blocked).exists());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
