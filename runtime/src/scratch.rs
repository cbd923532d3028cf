//! A scratch arena: one buffer handing out views for temporaries, bump-allocated and reset by
//! the caller.

use crate::tensor::TensorError;
use crate::{Context, Tensor};
use vkprism_core::TensorFormat;

/// One buffer that hands out tensors (views of it, [`ScratchArena::alloc`]) for temporaries:
/// no allocation per temporary, and a network's intermediates in one place.
///
/// Allocations are bumped one after another, each at an offset aligned for binding
/// (`minStorageBufferOffsetAlignment`, at least 4 bytes so they can be filled), until
/// [`ScratchArena::reset`] starts again at the front; memory is never freed one allocation at a
/// time. After a reset, new allocations alias old ones: reset between steps whose temporaries
/// don't outlive them, e.g. per recorded list (lists run one after another, each after the
/// previous one's work, so two lists reusing the same scratch memory don't race; within a list,
/// hazards are tracked per buffer, so every use of the arena after a write to it gets a
/// barrier). The views keep the buffer alive, and so do lists that bind them.
pub struct ScratchArena {
    base: Tensor,
    next: u64,
    alignment: u64,
}

impl ScratchArena {
    /// An arena of `bytes` bytes (rounded up to 4).
    pub fn new(ctx: &Context, bytes: u64) -> Result<ScratchArena, TensorError> {
        let len = bytes
            .checked_next_multiple_of(4)
            .and_then(|b| usize::try_from(b).ok())
            .ok_or(TensorError::BadShape(vec![usize::MAX]))?;
        let base = Tensor::new(ctx, &[len], TensorFormat::Raw)?;
        let alignment = base.binding_alignment().max(4);
        Ok(ScratchArena {
            base,
            next: 0,
            alignment,
        })
    }

    /// A tensor of `shape` and `format` in the arena (uninitialized: whatever an earlier use
    /// left), or [`TensorError::ScratchFull`].
    pub fn alloc(&mut self, shape: &[usize], format: TensorFormat) -> Result<Tensor, TensorError> {
        let start = self.next.div_ceil(self.alignment) * self.alignment;
        let capacity = self.capacity();
        let view = self
            .base
            .view_bytes(start.min(capacity), shape, format)
            .map_err(|e| match e {
                TensorError::ViewOutOfBounds { len, .. } => TensorError::ScratchFull {
                    requested: (start - self.next) + len as u64,
                    available: capacity - self.next,
                    capacity,
                },
                e => e,
            })?;
        self.next = start + view.size_bytes();
        Ok(view)
    }

    /// Starts again at the front: later allocations reuse the memory of earlier ones.
    pub fn reset(&mut self) {
        self.next = 0;
    }

    /// Bytes handed out since the last reset (alignment padding included).
    pub fn used(&self) -> u64 {
        self.next
    }

    /// The arena's size in bytes.
    pub fn capacity(&self) -> u64 {
        self.base.size_bytes()
    }
}

impl std::fmt::Debug for ScratchArena {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ScratchArena")
            .field("used", &self.next)
            .field("capacity", &self.capacity())
            .finish()
    }
}
