//! [`MemoryReport`]: a session's device memory at its input shape, in figures.

/// The values' memory at one input shape, and the weights'.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct MemoryReport {
    /// Values of the graph (the input and each node's output).
    pub values: usize,
    /// Buffers they share.
    pub buffers: usize,
    /// Bytes of those buffers: the values' peak.
    pub planned_bytes: u64,
    /// Bytes every value would take in a buffer of its own.
    pub unplanned_bytes: u64,
    /// Bytes of the recorded pass's scratch (split passes' partial sums, shared between them).
    pub scratch_bytes: u64,
    /// Bytes of the weights on the device.
    pub weight_bytes: u64,
}

impl std::fmt::Display for MemoryReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mib = |b: u64| b as f64 / (1024.0 * 1024.0);
        write!(
            f,
            "activations: {} values in {} buffers, {:.2} MiB (unshared: {:.2} MiB), scratch {:.2} MiB; weights {:.2} MiB",
            self.values,
            self.buffers,
            mib(self.planned_bytes),
            mib(self.unplanned_bytes),
            mib(self.scratch_bytes),
            mib(self.weight_bytes)
        )
    }
}
