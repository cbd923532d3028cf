//! Passes over a large row-major matrix on the host (a weight being laid out or quantized at
//! load) split into blocks of whole rows, each block on a scoped thread of its own: one core
//! takes a second or more over a model's weights where the machine has a dozen.

/// Below this many values a block, a thread costs more than it saves.
const MIN_VALUES_PER_BLOCK: usize = 1 << 20;

/// The cores this process may use, asked once: the answer costs a system call or a read of
/// the cgroup's files, and the passes ask for every weight.
fn cores() -> usize {
    static CORES: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *CORES.get_or_init(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}

/// `f(first_row, block)` over `out` (rows of `width` values) cut into contiguous blocks of
/// whole rows, on as many scoped threads as the cores and the matrix's size are worth (the
/// calling thread alone where one is).
pub(crate) fn for_row_blocks<T: Send>(
    out: &mut [T],
    width: usize,
    f: impl Fn(usize, &mut [T]) + Sync,
) {
    let rows = out.len() / width.max(1);
    let blocks = (out.len() / MIN_VALUES_PER_BLOCK).clamp(1, cores().min(rows.max(1)));
    if blocks == 1 {
        return f(0, out);
    }
    let rows_per_block = rows.div_ceil(blocks);
    std::thread::scope(|s| {
        for (b, block) in out.chunks_mut(rows_per_block * width).enumerate() {
            let f = &f;
            s.spawn(move || f(b * rows_per_block, block));
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_row_is_visited_once_with_its_index() {
        for (rows, width) in [(1, 1), (3, 5), (1 << 12, 1 << 9), (1000, 3000)] {
            let mut out = vec![u32::MAX; rows * width];
            for_row_blocks(&mut out, width, |first, block| {
                for (i, row) in block.chunks_mut(width).enumerate() {
                    row.iter_mut().for_each(|v| *v = (first + i) as u32);
                }
            });
            for (r, row) in out.chunks(width).enumerate() {
                assert!(
                    row.iter().all(|v| *v == r as u32),
                    "{rows}×{width}: row {r}"
                );
            }
        }
    }
}
