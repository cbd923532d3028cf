//! The host's side of large transfers: copies between the caller's memory and mapped memory,
//! split across threads. One core copies well under the bandwidth of host memory and of a
//! PCIe link, so a 64 MiB chunk read out of a readback buffer by one thread is what a staged
//! download waits on.

use std::thread;

/// Below this many bytes per thread, a thread costs more than it saves.
const MIN_BYTES_PER_THREAD: usize = 4 << 20;
/// The most threads one copy uses.
const MAX_THREADS: usize = 8;

/// The threads a pass over `bytes` bytes of host memory is worth: one per
/// [`MIN_BYTES_PER_THREAD`], at most the cores and [`MAX_THREADS`].
pub(crate) fn threads_for(bytes: usize) -> usize {
    if bytes < 2 * MIN_BYTES_PER_THREAD {
        return 1;
    }
    // Asked once: the answer reads the process's affinity and cgroup limits, which costs more
    // than converting a small input.
    static CORES: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    let cores = *CORES.get_or_init(|| thread::available_parallelism().map_or(1, |n| n.get()));
    (bytes / MIN_BYTES_PER_THREAD).clamp(1, cores.min(MAX_THREADS))
}

/// `dst.copy_from_slice(src)`, split into contiguous parts copied by scoped threads when the
/// copy is large and the machine has the cores; one thread otherwise.
///
/// # Panics
/// As `copy_from_slice`, when the lengths differ.
pub(crate) fn copy(dst: &mut [u8], src: &[u8]) {
    assert_eq!(dst.len(), src.len(), "host copy of unequal lengths");
    let threads = threads_for(dst.len());
    if threads == 1 {
        dst.copy_from_slice(src);
        return;
    }
    let part = dst.len().div_ceil(threads);
    thread::scope(|scope| {
        for (d, s) in dst.chunks_mut(part).zip(src.chunks(part)) {
            scope.spawn(move || d.copy_from_slice(s));
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn copies_every_byte_at_every_split() {
        for len in [
            0,
            1,
            MIN_BYTES_PER_THREAD - 1,
            3 * MIN_BYTES_PER_THREAD + 12_345,
        ] {
            let src: Vec<u8> = (0..len).map(|i| (i * 7 + i / 251) as u8).collect();
            let mut dst = vec![0xaa; len];
            copy(&mut dst, &src);
            assert!(dst == src, "length {len}");
        }
    }
}
