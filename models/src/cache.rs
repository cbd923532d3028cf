//! [`KvCache`]: each layer's keys and values of the positions seen so far.

use crate::{LlamaConfig, ModelError};
use vkprism::{Context, Tensor, TensorFormat};

/// Per layer, a key and a value tensor `[max_seq, kv_heads, head_dim]`: rows `0..position`
/// hold the sequence so far (attention reads them as a [`Tensor::view`] from row 0, which any
/// binding alignment allows); a step's placement of its Q/K/V projection (`Ops::gemm_rope_qkv`,
/// `Ops::rope_qkv` or the GEMV's) writes its new rows after them.
pub(crate) struct KvCache {
    keys: Vec<Tensor>,
    values: Vec<Tensor>,
    /// `[kv_heads, head_dim]`: one row.
    row: [usize; 2],
    max_seq: usize,
    position: usize,
}

impl KvCache {
    /// An empty cache for `cfg` in `format`.
    pub fn new(ctx: &Context, cfg: &LlamaConfig, format: TensorFormat) -> Result<Self, ModelError> {
        let row = [cfg.kv_heads, cfg.head_dim()];
        let shape = [cfg.max_seq, row[0], row[1]];
        let make = || Tensor::new(ctx, &shape, format);
        let keys = (0..cfg.layers).map(|_| make()).collect::<Result<_, _>>()?;
        let values = (0..cfg.layers).map(|_| make()).collect::<Result<_, _>>()?;
        Ok(KvCache {
            keys,
            values,
            row,
            max_seq: cfg.max_seq,
            position: 0,
        })
    }

    /// Positions held.
    pub fn position(&self) -> usize {
        self.position
    }

    /// Positions the cache can hold.
    pub fn max_seq(&self) -> usize {
        self.max_seq
    }

    /// Forgets every position (the tensors are overwritten as new ones come).
    pub fn clear(&mut self) {
        self.position = 0;
    }

    /// Keeps the first `position` positions (at most those held).
    pub fn truncate(&mut self, position: usize) -> Result<(), ModelError> {
        if position > self.position {
            return Err(ModelError::TruncatePast {
                position,
                held: self.position,
            });
        }
        self.position = position;
        Ok(())
    }

    /// Refuses `new` more positions where they don't fit.
    pub fn check_room(&self, new: usize) -> Result<(), ModelError> {
        if self.position + new > self.max_seq {
            return Err(ModelError::SequenceTooLong {
                cached: self.position,
                new,
                max_seq: self.max_seq,
            });
        }
        Ok(())
    }

    /// Layer `layer`'s whole key and value tensors (what a step's placement writes rows of).
    pub fn layer(&self, layer: usize) -> (&Tensor, &Tensor) {
        (&self.keys[layer], &self.values[layer])
    }

    /// Layer `layer`'s keys and values of the first `len` positions.
    pub fn rows(&self, layer: usize, len: usize) -> Result<(Tensor, Tensor), ModelError> {
        let shape = [len, self.row[0], self.row[1]];
        Ok((
            self.keys[layer].view(0, &shape)?,
            self.values[layer].view(0, &shape)?,
        ))
    }

    /// Marks `n` more positions as held (after the step that wrote them ran).
    pub fn advance(&mut self, n: usize) {
        self.position += n;
    }

    /// Bytes of GPU memory the cache takes.
    pub fn bytes(&self) -> u64 {
        self.keys
            .iter()
            .chain(&self.values)
            .map(|t| t.size_bytes())
            .sum()
    }
}
